//! Property tests of the event-stream framer (bolero; random inputs under
//! plain `cargo test`, coverage guided under `cargo bolero`): the same
//! events under any chunking, the reference parser's events under any
//! chunking and any mix of CRLF, LF and CR line ends (the properties
//! themselves live in `testing::sse`, shared with the `sse` fuzz target).

use drainpipe_framer::sse::SseConfig;
use drainpipe_framer::testing::sse::{
    SseOutcome, check_bytes, check_lines, check_relay, join_lines, recipe_lines, reference_sse,
    run_sse, sse_config, sse_outcomes,
};

fn lengths(raw: &[u8]) -> Vec<usize> {
    raw.iter().map(|&b| usize::from(b % 17)).collect()
}

#[test]
fn every_split_and_line_end_gives_the_reference_events() {
    bolero::check!()
        .with_type::<(Vec<u8>, Vec<u8>, Vec<u8>, u8, bool)>()
        .for_each(|(recipe, ends, splits, selector, eof)| {
            let ended = *selector & 0x40 == 0;
            check_lines(
                sse_config(*selector),
                &recipe_lines(recipe),
                ends,
                ended,
                &lengths(splits),
                *eof,
            );
        });
}

#[test]
fn raw_bytes_give_the_reference_events() {
    bolero::check!()
        .with_type::<(Vec<u8>, Vec<u8>, u8, bool)>()
        .for_each(|(body, splits, selector, eof)| {
            check_bytes(sse_config(*selector), body, &lengths(splits), *eof);
        });
}

#[test]
fn an_oversize_event_costs_the_limit_and_the_next_one_is_read() {
    // A body far past the limit in one event, then a small answer: the
    // framer holds no more than the limit and reads the answer.
    let huge = [
        &b"id: 41\ndata: {\"result\":\""[..],
        &vec![b'x'; 1 << 20],
        b"\",\"jsonrpc\":\"2.0\",\"id\":2}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":0}\n\n",
    ]
    .concat();
    let config = SseConfig::default().with_max_event_bytes(4096);
    for split in [&[][..], &[1000], &[4093, 7]] {
        let outcomes = sse_outcomes(&run_sse(config, &huge, split, true));
        assert_eq!(outcomes, reference_sse(&config, &huge, true));
        assert!(
            matches!(
                &outcomes[..],
                [
                    SseOutcome::Oversize { .. },
                    SseOutcome::Discarded { envelope: Some(_), .. },
                    SseOutcome::Message(m),
                ] if m.last_event_id == b"41"
            ),
            "{outcomes:?}"
        );
    }
}

#[test]
fn the_relay_passes_on_what_the_framer_keeps() {
    bolero::check!()
        .with_type::<(Vec<u8>, Vec<u8>, Vec<u8>, bool, bool)>()
        .for_each(|(recipe, ends, splits, raw, eof)| {
            let body = if *raw {
                recipe.clone()
            } else {
                join_lines(&recipe_lines(recipe), ends, true)
            };
            check_relay(&body, &lengths(splits), *eof);
        });
}

#[test]
fn the_relay_passes_a_large_event_on_in_pieces() {
    // Data far larger than anything a framer would keep, split at every
    // kind of boundary: the pieces rebuild it and the id written last
    // names the request.
    let body = [
        &b"id: 9\r\nevent: message\r\ndata: {\"result\":\""[..],
        &vec![b'x'; 1 << 20],
        b"\",\r\ndata: \"jsonrpc\":\"2.0\",\"id\":2}\r\n\r\n: ping\n\n",
    ]
    .concat();
    for split in [&[][..], &[1], &[4093, 7], &[65536]] {
        check_relay(&body, split, true);
    }
}
