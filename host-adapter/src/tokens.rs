//! Token counts by `o200k_base`, the vocabulary of OpenAI's current models
//! (feature `tokens`), for content budgets in tokens (`--clip 25000tokens`).
//!
//! The vocabulary is built into the binary as OpenAI publishes it: one
//! base64 token per line, gzip-compressed, 1.7 MB (`data/`). The counter
//! (`bpe_openai::Tokenizer`, a linear-time byte-pair counter) is built
//! from it once, at first use, on the thread that first asks, or ahead of
//! time with [`warm`]. `bpe_openai::o200k_base()` would carry the counter
//! prebuilt instead: 32 MB of tables in every binary, which is why the
//! packages used to ship without token budgets.
//!
//! The split pattern is `o200k_base`'s pretokenizer (letters with their
//! case runs and contractions, digits in threes, punctuation runs,
//! newlines, spaces), written as `bpe_openai` writes it: tiktoken's
//! negative look-ahead `\s+(?!\S)` as the look-ahead pattern `\s+\s`,
//! whose last character the pretokenizer gives back. The tests hold the
//! counts equal to `bpe_openai::o200k_base()`'s.

use std::io::Read;
use std::sync::LazyLock;

use base64::Engine;
use bpe_openai::Tokenizer;
use bpe_openai::byte_pair_encoding::BytePairEncoding;

/// `o200k_base.tiktoken`, gzip-compressed (the file the `bpe-openai` crate
/// builds its tables from; sha256 of the uncompressed file
/// 446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d).
static VOCABULARY: &[u8] = include_bytes!("../data/o200k_base.tiktoken.gz");

/// The factor of the counter's token hash: one under which no two tokens
/// of this vocabulary hash alike (the counter checks), as `bpe-openai`
/// builds its tables with.
const HASH_FACTOR: u64 = 17_846_336_922_010_275_747;

static O200K: LazyLock<Tokenizer> = LazyLock::new(build);

/// The `o200k_base` counter (built at the first call).
pub(crate) fn o200k() -> &'static Tokenizer {
    &O200K
}

/// Builds the counter on a thread of its own now, so that the first
/// budget in tokens does not wait for it.
pub fn warm() {
    // A thread that cannot start leaves the build to the first count.
    let _ = std::thread::Builder::new()
        .name("drainpipe-tokens".into())
        .spawn(|| {
            LazyLock::force(&O200K);
        });
}

fn build() -> Tokenizer {
    let mut text = String::new();
    flate2::read::GzDecoder::new(VOCABULARY)
        .read_to_string(&mut text)
        .expect("the vocabulary built in decompresses");
    let tokens = text.lines().filter(|line| !line.is_empty()).map(|line| {
        let token = line.split(' ').next().unwrap_or_default();
        base64::engine::general_purpose::STANDARD
            .decode(token)
            .expect("the vocabulary built in is base64")
    });
    let bpe = BytePairEncoding::from_dictionary(tokens, Some(HASH_FACTOR));
    let words = [
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+$",
    ]
    .join("|");
    Tokenizer::new_lookahead(
        bpe,
        &[(&words, false), (r"\s+\s", true), (r"\s+", false)],
        false,
    )
    .expect("the pattern compiles")
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    /// Every kind of text the pattern splits, counted as the prebuilt
    /// `o200k_base` counts it.
    #[test]
    fn counts_equal_the_prebuilt_tables() {
        let started = Instant::now();
        let ours = super::o200k();
        eprintln!("o200k_base built in {:?}", started.elapsed());
        let theirs = bpe_openai::o200k_base();
        let samples = [
            "",
            "hello world",
            "Hello, World! It's a test: don't, won't, they'll, I'M, we've, you'D.",
            "  leading and trailing spaces   ",
            "tabs\tand\nnewlines\r\n\r\n\n  \n",
            "numbers 1 12 123 1234 12345 3.14159 -42 1e10",
            "CamelCaseWords and SHOUTINGWords and mIxEd",
            "unicode: naïve café Straße Ωmega ünïcødé «quoted»",
            "日本語のテキストと中文文本 한국어 텍스트",
            "emoji 😀🎉👩‍👩‍👧 and symbols ∑∫√≠ ←→",
            "path/to/file.rs:10:5 https://example.com/a?b=c&d=e#f",
            "{\"json\": [1, 2, {\"nested\": true}], \"key\": null}",
            "fn main() {\n    println!(\"{}\", x + 1);\n}\n",
            "a  b   c    d     e      f\n\n\n",
            "mañana, ¿qué? ¡sí! l'été, it’s",
        ];
        for sample in samples {
            assert_eq!(
                ours.count(sample),
                theirs.count(sample),
                "the counts differ for {sample:?}"
            );
        }
        let long: String = samples.iter().cycle().take(2000).copied().collect();
        assert_eq!(ours.count(long.as_str()), theirs.count(long.as_str()));
    }
}
