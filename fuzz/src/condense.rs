//! The streaming condenser on generated `tools/call` responses, any budget
//! (in bytes, characters or tokens) and any chunking, checked by
//! `drainpipe_framer::testing::condense`'s oracle.

use arbitrary::Arbitrary;
use drainpipe_framer::budget::{Clip, Keep, MIN_CONDENSE_BUDGET, MIN_LINKED_BUDGET};
use drainpipe_framer::testing::Rng;
use drainpipe_framer::testing::condense::{
    check_condensed, check_ladder_keeping, check_nothing_lost, check_spilled,
    condense_linked_keeping, condense_split_keeping, tool_response_scaled,
};

/// One fuzz input: the response generator's seed, the budget above the
/// minimum (in 16-byte steps), the lengths the line is fed in, and the
/// budget's unit (by its remainder of 4: bytes twice, characters, tokens;
/// characters and tokens with links when the seed is odd), and what a cut
/// text keeps (by the unit's quotient by 4, remainder of 3: its beginning,
/// its end, both). In bytes, an odd seed condenses with links, checked to
/// lose nothing. `large`: one input in 256 is a full-size response (up
/// to megabytes); the others are small (a few kilobytes, a budget within
/// the response's size), so that the fuzzer runs thousands a second.
#[derive(Arbitrary, Debug)]
pub struct CondenseInput {
    seed: u64,
    budget: u16,
    lengths: Vec<u16>,
    unit: u8,
    large: u8,
}

/// Condensed output is valid JSON within the budget, equal to the original
/// but for the documented edits, and the same under any chunking; what
/// cannot be cut is an error, never an overrun. With links, nothing is
/// lost: every value cut is in the result or read whole through a link.
pub fn check_condense(input: &CondenseInput) {
    // (Not 0: an input that runs out of bytes reads 0.)
    let large = input.large == 1;
    let line = tool_response_scaled(&mut Rng::new(input.seed), if large { 1 } else { 200 });
    let budget = if large {
        MIN_CONDENSE_BUDGET + usize::from(input.budget) * 16
    } else {
        // Within the response's size, where it is cut.
        MIN_CONDENSE_BUDGET + usize::from(input.budget) * line.len() / 65_536
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
        let amount = if large {
            MIN_LINKED_BUDGET + usize::from(input.budget) * 4
        } else {
            MIN_LINKED_BUDGET + usize::from(input.budget) * line.len() / 65_536
        };
        let clip = match input.unit % 4 {
            2 => Clip::chars(amount),
            _ => Clip::tokens(amount),
        };
        if let Err(e) = check_ladder_keeping(&line, clip, &lengths, input.seed % 2 == 1, keep) {
            assert!(
                e.contains("cannot be cut"),
                "seed {}, {clip}, keep {keep}: {e}",
                input.seed
            );
        }
        return;
    }
    if input.seed % 2 == 1 {
        let linked = budget + (MIN_LINKED_BUDGET - MIN_CONDENSE_BUDGET);
        match condense_linked_keeping(&line, linked, &lengths, keep) {
            Ok((outcome, spilled)) => {
                if let Err(e) = check_condensed(&line, linked, &outcome)
                    .and_then(|()| check_spilled(&line, &spilled))
                    .and_then(|()| check_nothing_lost(&line, &outcome, &spilled))
                {
                    panic!("seed {}, linked budget {linked}, keep {keep}: {e}", input.seed);
                }
            }
            Err(e) => assert!(e.contains("cannot be cut"), "seed {}: {e}", input.seed),
        }
        return;
    }
    match condense_split_keeping(&line, budget, &lengths, keep) {
        Ok(outcome) => {
            if let Err(e) = check_condensed(&line, budget, &outcome) {
                panic!("seed {}, budget {budget}, keep {keep}: {e}", input.seed);
            }
            assert_eq!(
                condense_split_keeping(&line, budget, &[], keep).expect("whole"),
                outcome,
                "chunking changed the result"
            );
        }
        Err(e) => assert!(e.contains("cannot be cut"), "seed {}: {e}", input.seed),
    }
}
