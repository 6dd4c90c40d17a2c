//! Unit tests of the helpers that are not public. The condenser itself is
//! tested through its public API in `framer/tests/budget/condense.rs`,
//! against the shared oracle (`testing::condense`).

use super::cut::{unit_boundary, units_within};
use alloc::string::String;
use alloc::vec::Vec;

/// The boundary found from a unit start near the limit is the one found
/// by reading every unit from the start, for strings of escapes (pairs,
/// lone halves, escaped backslashes before `u`), characters of every
/// width and plain bytes, at every limit.
#[test]
fn a_boundary_found_near_the_limit_is_the_one_read_from_the_start() {
    const TOKENS: &[&str] = &[
        "a",
        "x",
        "u",
        "d83d",
        "é",
        "€",
        "😀",
        r"\n",
        r"\\",
        r#"\""#,
        r"\u00e9",
        r"\ud83d\ude00",
        r"\ud83d",
        r"\ude00",
        r"\\ud83d",
        r"\\\ud83d\ude00",
        r"\u0041",
    ];
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    for _ in 0..2_000 {
        let mut s = Vec::new();
        for _ in 0..next(24) {
            s.extend_from_slice(TOKENS[next(TOKENS.len())].as_bytes());
        }
        // Whole, and cut anywhere (as a text written up to a byte limit
        // is, inside a character too).
        for end in 0..=s.len() {
            let s = &s[..end];
            for limit in 0..=s.len() + 2 {
                assert_eq!(
                    unit_boundary(s, limit),
                    units_within(s, 0, limit),
                    "{:?} at {limit}",
                    String::from_utf8_lossy(s)
                );
            }
        }
    }
}
