//! The streaming condenser on generated `tools/call` responses, any budget
//! (in bytes, characters or tokens) and any chunking, checked by
//! `drainpipe_framer::testing::condense`'s oracle.

use arbitrary::Arbitrary;
use drainpipe_framer::budget::{Clip, Keep, MIN_CONDENSE_BUDGET, MIN_LINKED_BUDGET};
use drainpipe_framer::testing::Rng;
use drainpipe_framer::testing::condense::{
    LadderCheck, LargerRungs, check_condensed_parsed, check_linked_parsed, check_spilled_parsed,
    condense_linked_keeping, condense_split_keeping, measure, tool_response_scaled,
};
use drainpipe_framer::testing::lost::LinkedValue;
use serde_json::Value;

/// One fuzz input: the response generator's seed, the budget above the
/// minimum (in 16-byte steps), the lengths the line is fed in, and the
/// budget's unit (by its remainder of 4: bytes twice, characters, tokens;
/// characters and tokens with links when the seed is odd), and what a cut
/// text keeps (by the unit's quotient by 4, remainder of 3: its beginning,
/// its end, both), and which other larger rung a ladder's check condenses
/// again (by the unit's quotient by 12: [`LargerRungs::Two`]). In bytes,
/// an odd seed condenses with links, checked to lose nothing. `large`:
/// one input in 256 is a full-size response (up to megabytes; a quarter
/// of that for a ladder: [`LARGE_LADDER_SCALE`]); the others
/// are small (a few kilobytes, a budget below the response's size).
#[derive(Arbitrary, Debug)]
pub struct CondenseInput {
    seed: u64,
    budget: u16,
    lengths: Vec<u16>,
    unit: u8,
    large: u8,
}

impl CondenseInput {
    /// The kind of check it makes: 0 bytes, 1 bytes with links, 2
    /// characters, 3 tokens, 4 a large response (any of them).
    pub fn kind(&self) -> usize {
        if self.large == 1 {
            4
        } else if self.unit % 4 >= 2 {
            usize::from(self.unit % 4)
        } else {
            usize::from(self.seed % 2 == 1)
        }
    }

    /// The response it condenses.
    pub fn line(&self) -> Vec<u8> {
        let scale = match (self.large == 1, self.unit % 4 >= 2) {
            (true, false) => 1,
            (true, true) => LARGE_LADDER_SCALE,
            (false, _) => 200,
        };
        tool_response_scaled(&mut Rng::new(self.seed), scale)
    }
}

/// How much smaller a large response is for a ladder than for a byte
/// budget. A ladder condenses the line once per rung it may be cut by (up
/// to seven or eight) and its check condenses up to three rungs again: on
/// a full-size response (up to 1.5 MB) that took over 10 s under ASan on a
/// loaded machine, libFuzzer's timeout, where a quarter of the size stays
/// within a few.
const LARGE_LADDER_SCALE: usize = 4;

/// Condensed output is valid JSON within the budget, equal to the original
/// but for the documented edits, and the same under any chunking; what
/// cannot be cut is an error, never an overrun. With links, nothing is
/// lost: every value cut is in the result or read whole through a link.
///
/// A small response is cut: its budget lies between the smallest the
/// condenser takes and the response's size in the budget's unit (a
/// response no larger than that smallest budget is left unchanged). The
/// response is parsed once, for every check.
pub fn check_condense(input: &CondenseInput) {
    // (Not 0: an input that runs out of bytes reads 0.)
    let large = input.large == 1;
    let line = input.line();
    let before: Value = serde_json::from_slice(&line).expect("a generated response is JSON");
    // From `least` up to (not reaching) `size`, by the input's budget.
    let within = |least: usize, size: usize| {
        least + usize::from(input.budget) * size.saturating_sub(least) / 65_536
    };
    let budget = if large {
        MIN_CONDENSE_BUDGET + usize::from(input.budget) * 16
    } else {
        within(MIN_CONDENSE_BUDGET, line.len())
    };
    let lengths: Vec<usize> = input
        .lengths
        .iter()
        .map(|&n| usize::from(n).max(1))
        .collect();
    let keep = [Keep::Head, Keep::Tail, Keep::Ends][usize::from(input.unit / 4 % 3)];
    if input.unit % 4 >= 2 {
        // Characters or tokens: the ladder takes the largest rung that
        // fits, within the amount (see `check_ladder`).
        let unit = |amount| match input.unit % 4 {
            2 => Clip::chars(amount),
            _ => Clip::tokens(amount),
        };
        let amount = if large {
            MIN_LINKED_BUDGET + usize::from(input.budget) * 4
        } else {
            let size = measure(unit(0), &line).unwrap_or(0);
            within(
                MIN_LINKED_BUDGET,
                usize::try_from(size).unwrap_or(usize::MAX),
            )
        };
        let clip = unit(amount);
        let ladder = LadderCheck {
            clip,
            linked: input.seed % 2 == 1,
            keep,
            larger: LargerRungs::Two(usize::from(input.unit / 12)),
        };
        if let Err(e) = ladder.check(&line, &before, &lengths) {
            assert!(
                e.contains("cannot be cut"),
                "seed {}, {clip}, keep {keep}: {e}",
                input.seed
            );
        }
        return;
    }
    if input.seed % 2 == 1 {
        let linked = if large {
            budget + (MIN_LINKED_BUDGET - MIN_CONDENSE_BUDGET)
        } else {
            within(MIN_LINKED_BUDGET, line.len())
        };
        match condense_linked_keeping(&line, linked, &lengths, keep) {
            Ok((outcome, spilled)) => {
                // (The condensed frame parsed once for both checks.)
                let values: Vec<LinkedValue<'_>> = spilled
                    .iter()
                    .map(|s| (&s.spilled, s.raw.as_slice()))
                    .collect();
                if let Err(e) = check_linked_parsed(&line, &before, linked, &outcome, &values)
                    .and_then(|()| check_spilled_parsed(&line, &before, &spilled))
                {
                    panic!(
                        "seed {}, linked budget {linked}, keep {keep}: {e}",
                        input.seed
                    );
                }
            }
            Err(e) => assert!(e.contains("cannot be cut"), "seed {}: {e}", input.seed),
        }
        return;
    }
    match condense_split_keeping(&line, budget, &lengths, keep) {
        Ok(outcome) => {
            if let Err(e) = check_condensed_parsed(&line, &before, budget, &outcome) {
                panic!("seed {}, budget {budget}, keep {keep}: {e}", input.seed);
            }
            // (Without lengths, the line was fed whole.)
            if !lengths.is_empty() {
                assert_eq!(
                    condense_split_keeping(&line, budget, &[], keep).expect("whole"),
                    outcome,
                    "chunking changed the result"
                );
            }
        }
        Err(e) => assert!(e.contains("cannot be cut"), "seed {}: {e}", input.seed),
    }
}
