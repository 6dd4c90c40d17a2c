//! Oracles over whole streams: chunking invariance and agreement with the
//! reference framer. The memory bound is asserted after every push by
//! [`run_split`].

use drainpipe_framer::Stats;
use drainpipe_framer::testing::{OwnedEvent, outcomes, reference_outcomes, run_split};

use crate::case::{Case, SplitMode, split_lengths};

/// Stats with the one counter that legitimately depends on chunking cleared:
/// a frame that lies inside one push is never copied, so how much was ever
/// buffered depends on where the chunks were cut.
pub fn chunking_independent(stats: Stats) -> Stats {
    let mut stats = stats;
    stats.buffered_high_water = 0;
    stats
}

/// The events and stats of pushing `case.stream` whole.
pub fn run_whole(case: &Case<'_>) -> (Vec<OwnedEvent>, Stats) {
    run_split(case.config, case.stream, &[], case.eof)
}

/// The `chunking` property: cutting the stream as the case says yields the
/// same events (full detail: offsets, error kinds and positions, envelopes)
/// and the same counters as pushing it whole.
pub fn check_chunking(case: &Case<'_>) {
    let (whole_events, whole_stats) = run_whole(case);
    // Whole against whole proves nothing: use the harshest cut instead.
    let mode = if case.split == SplitMode::Whole {
        SplitMode::OneByte
    } else {
        case.split
    };
    let lengths = split_lengths(case.stream, mode, case.split_seed);
    let (events, stats) = run_split(case.config, case.stream, &lengths, case.eof);
    assert_events_eq(&whole_events, &events, mode);
    assert_eq!(
        chunking_independent(whole_stats),
        chunking_independent(stats),
        "stats differ with {mode:?} cuts {lengths:?}"
    );
}

/// The `differential` property: the framer's outcomes under the case's
/// chunking equal the reference framer's on the whole stream.
pub fn check_differential(case: &Case<'_>) {
    let (events, _) = run_split(case.config, case.stream, &case.lengths(), case.eof);
    let expected = reference_outcomes(&case.config, case.stream, case.eof);
    let actual = outcomes(&events);
    if actual != expected {
        let first = actual
            .iter()
            .zip(&expected)
            .position(|(a, e)| a != e)
            .unwrap_or(actual.len().min(expected.len()));
        panic!(
            "framer disagrees with the reference ({:?})\nat outcome {first}\nframer:    {:?}\nreference: {:?}\nevents: {events:?}",
            case.config,
            actual.get(first),
            expected.get(first),
        );
    }
}

/// Panics with the first differing event, which is far easier to read than
/// two whole vectors.
pub fn assert_events_eq(whole: &[OwnedEvent], split: &[OwnedEvent], mode: SplitMode) {
    if whole == split {
        return;
    }
    let first = whole
        .iter()
        .zip(split)
        .position(|(a, b)| a != b)
        .unwrap_or(whole.len().min(split.len()));
    panic!(
        "events differ with {mode:?} cuts at event {first}\nwhole: {:?}\nsplit: {:?}",
        whole.get(first),
        split.get(first)
    );
}
