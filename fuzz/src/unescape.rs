//! The streaming string decoder against `serde_json`, in pieces cut where
//! the input says, checked by `drainpipe_framer::testing::unescape`'s
//! oracle.

use arbitrary::Arbitrary;
use drainpipe_framer::testing::unescape::{check_raw, check_round_trip, escape_mixed, raw_from};

/// One fuzz input: the lengths the contents are fed in, a text with the
/// bits that pick which of its characters are written as `\u` escapes, and
/// bytes fed as raw contents.
#[derive(Arbitrary, Debug)]
pub struct UnescapeInput {
    lengths: Vec<u8>,
    forms: Vec<u8>,
    text: String,
    raw: Vec<u8>,
}

/// The text, escaped by `serde_json` and with `\u` escapes (surrogate
/// pairs above U+FFFF) where `forms` says, decodes back to itself in the
/// input's pieces. The raw bytes, as they are and as the escape fragments
/// they pick, decode without a panic to no more bytes than they are, the
/// same in pieces as whole, and to what `serde_json` reads from them
/// whenever it reads them.
pub fn check_unescape(input: &UnescapeInput) {
    let lengths: Vec<usize> = input.lengths.iter().map(|&n| usize::from(n)).collect();
    let quoted = serde_json::to_string(&input.text).expect("a string serialises");
    let mixed = escape_mixed(&input.text, &input.forms);
    assert_eq!(
        serde_json::from_str::<String>(&format!("\"{mixed}\"")).ok(),
        Some(input.text.clone()),
        "escape_mixed wrote {mixed:?}"
    );
    for raw in [&quoted[1..quoted.len() - 1], mixed.as_str()] {
        check_round_trip(&input.text, raw, &lengths).unwrap_or_else(|e| panic!("{e}"));
    }
    for raw in [input.raw.clone(), raw_from(&input.raw)] {
        check_raw(&raw, &lengths).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbitrary::Unstructured;

    /// The property on a few inputs, on stable: the target has no
    /// committed corpus for `tests/corpus.rs` to replay.
    #[test]
    fn the_property_holds_on_sample_inputs() {
        let samples: [&[u8]; 4] = [
            b"",
            b"\x03\x01\x02\x05\xff\x00\x08caf\xc3\xa9 \xf0\x9f\x98\x80/\"\\\n",
            b"\x01\x00\x02\x55\xaa\x04\\ud83d\\ude00\\uD800x\\u00e9\\n\x01\\",
            &[7; 64],
        ];
        for bytes in samples {
            let input = UnescapeInput::arbitrary_take_rest(Unstructured::new(bytes)).unwrap();
            check_unescape(&input);
        }
    }
}
