//! The streaming string decoder: any text, escaped by `serde_json` or with
//! `\u` escapes and surrogate pairs, decodes back to itself in any pieces;
//! any bytes decode without a panic, within bounds, as `serde_json` reads
//! them (the shared oracle, `testing::unescape`).

use drainpipe_framer::testing::unescape::{check_raw, check_round_trip, escape_mixed, raw_from};

use super::text_from;

/// Piece lengths from the fuzzer's bytes: short, so that even a short
/// string is cut many times; 0 feeds an empty piece.
fn lengths(bytes: &[u8]) -> Vec<usize> {
    bytes.iter().map(|&b| usize::from(b % 32)).collect()
}

#[test]
fn property_escaped_text_decodes_to_itself_in_any_pieces() {
    bolero::check!()
        .with_type::<(String, Vec<u8>, Vec<u8>, Vec<u8>)>()
        .for_each(|(s, chars, forms, cuts)| {
            let text = format!("{s}{}", text_from(chars));
            let lengths = lengths(cuts);
            let quoted = serde_json::to_string(&text).unwrap();
            let escaped = &quoted[1..quoted.len() - 1];
            check_round_trip(&text, escaped, &lengths).unwrap_or_else(|e| panic!("{e}"));
            // With `\u` escapes (and surrogate pairs) where `forms` says.
            let mixed = escape_mixed(&text, forms);
            assert_eq!(
                serde_json::from_str::<String>(&format!("\"{mixed}\"")).unwrap(),
                text
            );
            check_round_trip(&text, &mixed, &lengths).unwrap_or_else(|e| panic!("{e}"));
        });
}

#[test]
fn property_any_bytes_decode_within_bounds_as_serde_json_reads_them() {
    bolero::check!()
        .with_type::<(Vec<u8>, Vec<u8>)>()
        .for_each(|(raw, cuts)| {
            let lengths = lengths(cuts);
            for raw in [raw.clone(), raw_from(raw)] {
                // No more bytes out than in: within the 3 × input + 4 bound.
                check_raw(&raw, &lengths).unwrap_or_else(|e| panic!("{e}"));
            }
        });
}
