//! Budgets in the agent's units: bytes on the wire, characters, tokens.
//!
//! A host counts a tool result in its own unit before it hands it to the
//! model (see the README's host table): Claude Desktop in bytes, Gemini CLI
//! and Goose in characters (JavaScript's `String.length`, i.e. UTF-16 code
//! units), Claude Code and Codex in tokens. A [`Clip`] names the budget in
//! one of them; [`shown_size`] measures a result the way such a host does.
//!
//! What is measured is what the host shows the model: the decoded `text` of
//! every text block and embedded resource in `result.content` (the notice
//! block included), or `structuredContent` written as compact JSON when
//! that is longer (a host shows it when a result has no `content`). Counted
//! this way, no unit is ever more than a byte on the wire: a decoded
//! character takes at least one raw byte (an escape takes two to twelve, a
//! UTF-16 pair four), and every token of the tokenizers drainpipe names is
//! at least one byte. So a result within `n` bytes is within `n` characters
//! and `n` tokens; that is what makes [`Ladder`](super::Ladder)'s smallest
//! rung always acceptable.

use alloc::string::String;
use alloc::vec::Vec;

use super::Keep;

/// The unit a content budget counts in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Unit {
    /// Bytes of the response on the wire (the whole line).
    #[default]
    Bytes,
    /// UTF-16 code units of the texts shown (see the module docs), as
    /// JavaScript's `String.length` counts them.
    Chars,
    /// Tokens of the texts shown, by a tokenizer the caller names and
    /// supplies to [`shown_size`] (drainpipe's host uses `o200k_base`).
    Tokens,
}

impl Unit {
    /// The word a size in this unit is written with (`256KiB`, `50000chars`,
    /// `25000tokens`).
    pub fn suffix(self) -> &'static str {
        match self {
            Unit::Bytes => "bytes",
            Unit::Chars => "chars",
            Unit::Tokens => "tokens",
        }
    }
}

/// A content budget: an amount in a unit, and what a cut text keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Clip {
    /// How many units.
    pub amount: usize,
    /// Which unit.
    pub unit: Unit,
    /// What a cut text keeps: both ends unless told ([`Clip::keeping`]).
    pub keep: Keep,
}

/// The byte budgets tried for a budget in characters, as multiples of the
/// amount in eighths: 1, 1¼, 1½, 2, 3, 4 and 6 bytes a character. Six
/// covers text written as `\uXXXX` escapes (Python's `json.dumps` default);
/// each rung is at most 1½ times the one below, so about a third of the
/// room is left unused at worst.
const CHAR_RUNGS: [usize; 7] = [8, 10, 12, 16, 24, 32, 48];
/// The same for tokens: 1 to 6 bytes a token in steps of at most 1½ (prose
/// and code run 3 to 5 bytes a token in `o200k_base`).
const TOKEN_RUNGS: [usize; 8] = [8, 12, 16, 20, 24, 32, 40, 48];

impl Clip {
    /// This budget, each cut text keeping `keep`.
    pub fn keeping(mut self, keep: Keep) -> Self {
        self.keep = keep;
        self
    }

    /// A budget in bytes on the wire.
    pub fn bytes(amount: usize) -> Self {
        Clip {
            amount,
            unit: Unit::Bytes,
            keep: Keep::Ends,
        }
    }

    /// A budget in characters (UTF-16 code units).
    pub fn chars(amount: usize) -> Self {
        Clip {
            amount,
            unit: Unit::Chars,
            keep: Keep::Ends,
        }
    }

    /// A budget in tokens.
    pub fn tokens(amount: usize) -> Self {
        Clip {
            amount,
            unit: Unit::Tokens,
            keep: Keep::Ends,
        }
    }

    /// The byte budgets a [`Ladder`](super::Ladder) condenses into for this
    /// budget, smallest first; the smallest is the amount itself, which
    /// always fits (see the module docs). For bytes, just that one.
    pub fn rungs(&self) -> Vec<usize> {
        let eighths: &[usize] = match self.unit {
            Unit::Bytes => &[8],
            Unit::Chars => &CHAR_RUNGS,
            Unit::Tokens => &TOKEN_RUNGS,
        };
        let mut rungs: Vec<usize> = eighths
            .iter()
            .map(|&e| self.amount.saturating_mul(e) / 8)
            .collect();
        rungs.dedup();
        rungs
    }

    /// Whether a line of `bytes` bytes surely fits: it has at most as many
    /// units as bytes.
    pub fn surely_fits(&self, bytes: usize) -> bool {
        bytes <= self.amount
    }
}

impl core::fmt::Display for Clip {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} {}", self.amount, self.unit.suffix())
    }
}

/// UTF-16 code units of `text`: JavaScript's `String.length`.
pub fn utf16_len(text: &str) -> u64 {
    // Every character is one unit but those outside the BMP, which are
    // two; they are the ones written with four bytes in UTF-8.
    let four_byte = text.bytes().filter(|&b| b >= 0xF0).count();
    (text.chars().count() + four_byte) as u64
}

/// The size of what a host shows the model of the response `frame` (see
/// the module docs), each text measured by `count` (for characters,
/// [`utf16_len`]); `None` if `frame` is not a JSON object with a `result`.
pub fn shown_size(frame: &[u8], count: &mut dyn FnMut(&str) -> u64) -> Option<u64> {
    let mut texts = 0u64;
    let mut structured = 0u64;
    visit_shown(frame, &mut |shown, is_structured| match is_structured {
        false => texts += count(shown),
        true => structured = count(shown),
    })?;
    Some(texts.max(structured))
}

/// What a host shows the model of a response, for a caller that counts it
/// with its own tokenizer: the size is [`Shown::size`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shown {
    /// The decoded texts of `result.content`, in order.
    pub texts: Vec<String>,
    /// `result.structuredContent` as compact JSON, if present.
    pub structured: Option<String>,
}

impl Shown {
    /// The sum of the texts' counts or the structured content's, whichever
    /// is larger, as [`shown_size`] counts.
    pub fn size(&self, count: &mut dyn FnMut(&str) -> u64) -> u64 {
        let texts: u64 = self.texts.iter().map(|t| count(t)).sum();
        let structured = self.structured.as_deref().map_or(0, count);
        texts.max(structured)
    }
}

/// What a host shows the model of the response `frame`; `None` if it is
/// not a JSON object with a `result`.
pub fn shown(frame: &[u8]) -> Option<Shown> {
    let mut shown = Shown::default();
    visit_shown(frame, &mut |text, is_structured| match is_structured {
        false => shown.texts.push(text.into()),
        true => shown.structured = Some(text.into()),
    })?;
    Some(shown)
}

/// Hands each shown text of `frame` to `visit`, then the structured
/// content as compact JSON (with `true`). Read without building the
/// line's tree (`shown.rs`).
fn visit_shown(frame: &[u8], visit: &mut dyn FnMut(&str, bool)) -> Option<()> {
    let parts = super::shown::read_shown(frame)?;
    for text in &parts.texts {
        visit(text, false);
    }
    if let Some(json) = &parts.structured {
        visit(json, true);
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_parts_count_as_shown_size() {
        let frame = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\u00e9"},{"type":"resource","resource":{"uri":"x","text":"\ud83d\ude00"}}],"structuredContent":{"k":"v"}}}"#;
        let parts = shown(frame).unwrap();
        assert_eq!(parts.texts, ["aé", "😀"]);
        assert_eq!(parts.structured.as_deref(), Some(r#"{"k":"v"}"#));
        assert_eq!(parts.size(&mut utf16_len), 9);
        assert_eq!(shown_size(frame, &mut utf16_len), Some(9));
        let texts_only =
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"abc"}]}}"#;
        let mut bytes = |t: &str| t.len() as u64;
        assert_eq!(shown(texts_only).unwrap().size(&mut bytes), 3);
        assert_eq!(shown(b"[1]"), None);
    }

    #[test]
    fn utf16_counts_pairs_twice() {
        assert_eq!(utf16_len("aé中"), 3);
        assert_eq!(utf16_len("😀"), 2);
        assert_eq!(utf16_len(""), 0);
    }

    #[test]
    fn rungs_start_at_the_amount() {
        assert_eq!(Clip::bytes(9000).rungs(), [9000]);
        assert_eq!(
            Clip::chars(8000).rungs(),
            [8000, 10000, 12000, 16000, 24000, 32000, 48000]
        );
        assert_eq!(Clip::tokens(8000).rungs()[..3], [8000, 12000, 16000]);
    }

    #[test]
    fn the_shown_size_is_the_texts_or_the_structured_content() {
        let frame = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\u00e9"},{"type":"resource","resource":{"uri":"x","text":"\ud83d\ude00"}}]}}"#;
        assert_eq!(shown_size(frame, &mut utf16_len), Some(4));
        let frame = br#"{"id":1,"result":{"content":[],"structuredContent":{"k":"vv"}}}"#;
        assert_eq!(shown_size(frame, &mut utf16_len), Some(10));
        assert_eq!(shown_size(b"[1]", &mut utf16_len), None);
    }
}
