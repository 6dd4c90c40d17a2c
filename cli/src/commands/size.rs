//! Sizes as people write them: `4MiB`, `512KiB`, `1GB`, `65536`; and
//! content budgets: a size, `50000chars` or `25000tokens`.

use drainpipe_framer::budget::{Clip, Keep, MIN_CONDENSE_BUDGET, Unit};

/// Parses a content budget (`--clip`): a size in bytes, or a count of
/// characters or tokens (`50000chars`, `25000tokens`; `_` and the singular
/// allowed), at least the condenser's smallest budget in its unit.
pub(crate) fn parse_clip(text: &str) -> Result<Clip, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '_'))
        .unwrap_or(trimmed.len());
    let (number, word) = trimmed.split_at(split);
    let unit = match word.trim().to_ascii_lowercase().as_str() {
        "chars" | "char" | "characters" => Some(Unit::Chars),
        "tokens" | "token" => Some(Unit::Tokens),
        _ => None,
    };
    let clip = match unit {
        Some(unit) => {
            let amount: usize = number
                .replace('_', "")
                .parse()
                .map_err(|_| format!("`{text}` is not a count (try 50000chars or 25000tokens)"))?;
            Clip {
                amount,
                unit,
                keep: Keep::default(),
            }
        }
        None => Clip::bytes(parse_size(text)?),
    };
    if clip.unit == Unit::Tokens && !cfg!(feature = "tokens") {
        return Err(
            "this drainpipe was built without its `tokens` feature: no budget in tokens".into(),
        );
    }
    if clip.amount < MIN_CONDENSE_BUDGET {
        return Err(format!(
            "{clip} is below the smallest content budget, {MIN_CONDENSE_BUDGET} {}",
            clip.unit.suffix()
        ));
    }
    Ok(clip)
}

/// Parses a size in bytes: a number (decimals allowed with a unit) and an
/// optional unit, case-insensitive. `KiB`, `MiB`, `GiB`, `TiB` and the short
/// `K`, `M`, `G`, `T` are powers of 1024; `KB`, `MB`, `GB`, `TB` are powers
/// of 1000; `B` or nothing is bytes.
pub(crate) fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: String = number.chars().filter(|&c| c != '_').collect();
    if number.is_empty() {
        return Err(format!(
            "`{text}` is not a size (try 4MiB, 512KiB, 1GB or 65536)"
        ));
    }
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => {
            return Err(format!(
                "unknown size unit `{other}` in `{text}` (use B, KiB, MiB, GiB, KB, MB or GB)"
            ));
        }
    };
    let bytes = if let Some((whole, fraction)) = number.split_once('.') {
        if multiplier == 1 {
            return Err(format!("`{text}`: a byte count has no fraction"));
        }
        let whole: u64 = whole
            .parse()
            .map_err(|_| format!("`{text}` is not a size"))?;
        let digits = fraction.len().min(9) as u32;
        let fraction: u64 = if fraction.is_empty() {
            0
        } else {
            fraction[..digits as usize]
                .parse()
                .map_err(|_| format!("`{text}` is not a size"))?
        };
        let scale = 10u64.pow(digits);
        whole
            .checked_mul(multiplier)
            .and_then(|w| {
                (u128::from(fraction) * u128::from(multiplier) / u128::from(scale))
                    .try_into()
                    .ok()
                    .and_then(|f: u64| w.checked_add(f))
            })
            .ok_or_else(|| format!("`{text}` is too large"))?
    } else {
        number
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(multiplier))
            .ok_or_else(|| format!("`{text}` is not a size or is too large"))?
    };
    usize::try_from(bytes).map_err(|_| format!("`{text}` is too large for this machine"))
}

/// A size for people: `8 MiB`, `512 KiB`, `1.5 GiB`, `300 B`.
pub(crate) fn human(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (unit, size) in UNITS {
        if bytes >= size {
            let value = bytes as f64 / size as f64;
            return if bytes.is_multiple_of(size) {
                format!("{} {unit}", bytes / size)
            } else if value >= 100.0 {
                format!("{value:.0} {unit}")
            } else {
                format!("{value:.1} {unit}")
            };
        }
    }
    format!("{bytes} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_parse_in_their_units() {
        assert_eq!(parse_clip("256KiB"), Ok(Clip::bytes(256 << 10)));
        assert_eq!(parse_clip("50000chars"), Ok(Clip::chars(50_000)));
        assert_eq!(parse_clip("25_000 tokens"), Ok(Clip::tokens(25_000)));
        assert_eq!(parse_clip("8000char"), Ok(Clip::chars(8_000)));
        for bad in ["100chars", "1KiB", "chars", "1.5tokens", "10 words"] {
            assert!(parse_clip(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_parse_as_written() {
        let cases: &[(&str, usize)] = &[
            ("65536", 65536),
            ("0", 0),
            ("4MiB", 4 << 20),
            ("4mib", 4 << 20),
            ("512KiB", 512 << 10),
            ("512 KiB", 512 << 10),
            ("1GB", 1_000_000_000),
            ("1G", 1 << 30),
            ("16k", 16 << 10),
            ("100B", 100),
            ("1.5MiB", 3 << 19),
            ("1_000", 1000),
        ];
        for (text, bytes) in cases {
            assert_eq!(parse_size(text), Ok(*bytes), "{text}");
        }
    }

    #[test]
    fn nonsense_is_refused_with_a_hint() {
        for text in ["", "MiB", "4 parsecs", "1.5", "99999999999999999999", "-1"] {
            assert!(parse_size(text).is_err(), "{text}");
        }
        assert!(parse_size("4XB").unwrap_err().contains("unknown size unit"));
    }

    #[test]
    fn sizes_print_for_people() {
        assert_eq!(human(8 << 20), "8 MiB");
        assert_eq!(human(300), "300 B");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human((8 << 20) + 1), "8.0 MiB");
    }
}
