//! The truncation notice: the plain-text summary for the model, and the
//! worst case of its size that a builder reserves room for.

use alloc::format;
use alloc::string::String;

use super::config::ResultConfig;
use super::wire::{Wire, escaped_len, string_wire};

/// Digits of `u64::MAX`, the longest `totalEstimate`.
pub(super) const MAX_TOTAL_DIGITS: usize = 20;

/// The sizes of a truncation notice.
#[derive(Clone, Copy, Debug)]
pub(super) struct NoticeLen {
    pub(super) summary_escaped: usize,
    pub(super) cursor: Option<Wire>,
    pub(super) total_digits: Option<usize>,
}

/// A rendered truncation notice.
pub(super) struct Notice<'a> {
    pub(super) summary: String,
    pub(super) cursor: Option<&'a str>,
    pub(super) total: Option<u64>,
}

impl Notice<'_> {
    pub(super) fn len(&self) -> NoticeLen {
        NoticeLen {
            summary_escaped: escaped_len(&self.summary),
            cursor: self.cursor.map(string_wire),
            total_digits: self.total.map(decimal_digits),
        }
    }
}

/// The longest notice this configuration allows: every count at the
/// most it can be, and a cursor of the longest escaped length whose every byte
/// is special (as `"` is: its escape `\"` doubles again in the text copy
/// of `structuredContent`, the worst growth any byte has).
pub(super) fn worst_notice(config: &ResultConfig) -> NoticeLen {
    let cursor = "a".repeat(config.max_cursor_bytes);
    // Every kept entry and every kept byte of a cut text costs at least
    // a byte of the budget, so neither count exceeds it.
    let budget = config.budget_bytes;
    // `u64`, not `usize`: the reserve must not depend on the platform's
    // word size, or the wasm component and native code would disagree.
    let cut = Some((budget as u64, u64::MAX));
    let mut summary_escaped = 0;
    for kept in [1, budget as u64] {
        for total in [None, Some(u64::MAX)] {
            for cursor in [None, Some(cursor.as_str())] {
                let text = summary(config, kept, total, cut, cursor);
                summary_escaped = summary_escaped.max(escaped_len(&text));
            }
        }
    }
    let cursor_len = config.max_cursor_bytes + 2;
    NoticeLen {
        summary_escaped,
        cursor: Some(Wire {
            len: cursor_len,
            specials: cursor_len,
        }),
        total_digits: Some(MAX_TOTAL_DIGITS),
    }
}

fn decimal_digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// `4382` as `4,382`: the form a reader parses at a glance.
pub(crate) fn grouped(n: u64) -> String {
    let digits = format!("{n}");
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The plain-text notice for the model: what it got, what it did not, and
/// how to get the rest. States a total only if the caller knows it.
pub(super) fn summary(
    config: &ResultConfig,
    kept: u64,
    total: Option<u64>,
    cut: Option<(u64, u64)>,
    cursor: Option<&str>,
) -> String {
    let mut text = match total {
        Some(total) => format!(
            "Returned {} of {} {}.",
            grouped(kept),
            grouped(total),
            config.noun
        ),
        None => {
            let noun = if kept == 1 {
                &config.singular_noun
            } else {
                &config.noun
            };
            format!("Returned {} {noun}; more were left out.", grouped(kept))
        }
    };
    if let Some((kept_bytes, of)) = cut {
        text.push_str(&format!(
            " The last text was cut after {} of {} bytes.",
            grouped(kept_bytes),
            grouped(of)
        ));
    }
    match cursor {
        Some(cursor) => text.push_str(&format!(
            " Use cursor \"{cursor}\" to continue, or narrow the query."
        )),
        None => text.push_str(" Narrow the query to see what was left out."),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(4382), "4,382");
        assert_eq!(grouped(1_000_000), "1,000,000");
        assert_eq!(decimal_digits(0), 1);
        assert_eq!(decimal_digits(u64::MAX), MAX_TOTAL_DIGITS);
    }
}
