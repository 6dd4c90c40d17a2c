//! The committed seed corpus, generated: `cargo run --example seed_corpus`
//! (from `fuzz/`) rewrites every `seed-*` file under `corpus/` and leaves
//! files found by fuzzing (and `regression-*` files) alone.
//!
//! Stream seeds are `drainpipe_framer::testing::workload::adversarial()` plus
//! the hand-written cases below, each with a few headers (limit, validation,
//! cut). Seeds of the structured targets are sampled: random inputs are
//! decoded with `arbitrary` and kept when they cover a kind of line or
//! operation no earlier seed covered, so every variant starts in the corpus.

use std::collections::BTreeSet;

use arbitrary::{Arbitrary, Unstructured};
use drainpipe_framer::testing::{Rng, workload};

use crate::budget::{BudgetInput, Entry as BudgetEntry};
use crate::case::{SplitMode, encode_header};
use crate::ops::{Op, OpsInput, Piece};
use crate::oversize::{LinePlan, OversizeInput, Size};

/// Streams that are not in the shared adversarial set: cuts inside code
/// points and escapes, envelope corner cases, and bytes that past bugs
/// were found with.
pub fn extra_streams() -> Vec<Vec<u8>> {
    let mut deep_ok = b"{\"a\":".to_vec();
    deep_ok.extend([b'['; 127]);
    deep_ok.extend([b']'; 127]);
    deep_ok.extend_from_slice(b"}\n");
    let mut deep_over = b"{\"a\":".to_vec();
    deep_over.extend([b'['; 128]);
    deep_over.extend([b']'; 128]);
    deep_over.extend_from_slice(b"}\n");
    let long_id = format!("{{\"id\":{},\"result\":0}}\n", "9".repeat(300)).into_bytes();
    let mut streams: Vec<Vec<u8>> = [
        "{\"id\":1,\"result\":\"日本語😀 ação\"}\r\n{\"id\":2,\"result\":\"Ω\"}\r\n".as_bytes(),
        b"{}\r\r\n{}\r\n\r\n",
        b"{\"id\":1}\r{\"id\":2}\n",
        b"   \t{\"id\":1,\"result\":true}\n\t\n",
        b"{\"\\ud800\":1,\"id\":5,\"result\":0}\n",
        b"{\"\\u0069d\":3,\"\\u006Dethod\":\"ping\"}\n",
        b"{\"id\":1,\"id\":\"two\",\"result\":0}\n{\"id\":1,\"id\":{},\"result\":0}\n",
        b"{\"id\":-0.5e+10,\"result\":null}\n{\"id\":null,\"error\":{\"code\":-32700}}\n",
        b"{\"a\":\"\xe2\x82\x28\"}\n{\"id\":2,\"result\":0}\n",
        b"{\"a\":\"\xf0\x9f\x98\"}\n",
        b"{\"a\":\"\xed\xa0\x80\"}\n{\"a\":\"\xc0\xaf\"}\n",
        b"{\"a\":1e999999,\"b\":-0,\"c\":0.0E-0}\n",
        b"{\"a\":\"\\u00\"}\n{\"a\":\"\\q\"}\n",
        b"{\"a\":\"\x00\x1f\"}\n",
        b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}]\n",
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":4}}\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":\"abc\\\"def\",\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}\n",
        b"\xff\xfe not utf8 log line\n{\"id\":1,\"result\":0}\n",
        b"{\"id\":1,\"result\":\"a\"}   \n{\"id\":1,\"result\":\"a\"} x\n",
        b"",
        b"\n",
        b"{",
        b"\r",
    ]
    .iter()
    .map(|s| s.to_vec())
    .collect();
    streams.extend([deep_ok, deep_over, long_id]);
    streams
}

/// Every stream seed: the shared adversarial set and the extras.
pub fn streams() -> Vec<Vec<u8>> {
    let mut all = workload::adversarial();
    all.extend(extra_streams());
    all
}

/// Seeds of `chunking` and `differential`: each stream under three headers
/// (the limit the adversarial set was built around, the default limit cut one
/// byte at a time, and a tiny limit without validation).
pub fn stream_seeds() -> Vec<Vec<u8>> {
    let headers = [
        encode_header(Some(64), true, SplitMode::Boundaries, true),
        encode_header(None, true, SplitMode::OneByte, true),
        encode_header(Some(20), false, SplitMode::Tiny, false),
    ];
    let mut seeds = Vec::new();
    for stream in streams() {
        for header in headers {
            let mut seed = header.to_vec();
            seed.extend_from_slice(&stream);
            seeds.push(seed);
        }
    }
    seeds
}

/// Seeds of `json_validation`: every line of every stream, depth 128, cut in
/// the middle; and each line again at depth 2.
pub fn json_seeds() -> Vec<Vec<u8>> {
    let mut lines = BTreeSet::new();
    for stream in streams() {
        for line in stream.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            lines.insert(line.to_vec());
        }
    }
    let mut seeds = Vec::new();
    for line in lines {
        for header in [[128u8, 128u8], [2, 40]] {
            let mut seed = header.to_vec();
            seed.extend_from_slice(&line);
            seeds.push(seed);
        }
    }
    seeds
}

/// Random inputs decoded with `arbitrary`, kept when `features` reports a
/// feature no kept input had. Deterministic.
fn sample<T: for<'a> Arbitrary<'a>>(
    seed: u64,
    tries: usize,
    features: impl Fn(&T) -> Vec<String>,
) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    let mut seen = BTreeSet::new();
    let mut kept = Vec::new();
    for _ in 0..tries {
        let len = 8 + rng.below(120);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        let Ok(input) = T::arbitrary_take_rest(Unstructured::new(&bytes)) else {
            continue;
        };
        let new: Vec<String> = features(&input)
            .into_iter()
            .filter(|f| !seen.contains(f))
            .collect();
        if !new.is_empty() {
            seen.extend(new);
            kept.push(bytes);
        }
    }
    kept
}

/// Seeds of `oversize_recovery`: covering every line kind × size class.
pub fn oversize_seeds() -> Vec<Vec<u8>> {
    sample::<OversizeInput>(7, 20_000, |input| {
        let mut features: Vec<String> = input
            .lines
            .iter()
            .map(|line| {
                let (kind, size) = match line {
                    LinePlan::Message { size, .. } => ("message", size),
                    LinePlan::Log { size } => ("log", size),
                    LinePlan::Blank { size } => ("blank", size),
                    LinePlan::Broken { size, .. } => ("broken", size),
                };
                let size = match size {
                    Size::AtLimit => "at",
                    Size::OneUnder => "under1",
                    Size::OneOver => "over1",
                    Size::Under(_) => "under",
                    Size::Over(_) => "over",
                };
                format!("{kind}-{size}")
            })
            .collect();
        let oversize_lines = input
            .lines
            .iter()
            .filter(|l| {
                matches!(
                    l,
                    LinePlan::Message {
                        size: Size::Over(_) | Size::OneOver,
                        ..
                    }
                )
            })
            .count();
        if oversize_lines >= 2 {
            features.push(format!("repeated-oversize-{}", input.final_newline));
        }
        features
    })
}

/// Seeds of `operations`: covering every op and piece, and every op pair.
pub fn ops_seeds() -> Vec<Vec<u8>> {
    sample::<OpsInput>(11, 20_000, |input| {
        let name = |op: &Op| match op {
            Op::Push(_) => "push",
            Op::PushEmpty => "push-empty",
            Op::Finish => "finish",
            Op::Reset => "reset",
            Op::Stats => "stats",
        };
        let mut features: Vec<String> = input
            .ops
            .windows(2)
            .map(|w| format!("{}>{}", name(&w[0]), name(&w[1])))
            .collect();
        for op in &input.ops {
            if let Op::Push(pieces) = op {
                features.extend(pieces.iter().map(|p| {
                    let piece = match p {
                        Piece::Message { .. } => "message",
                        Piece::Open { .. } => "open",
                        Piece::Filler { .. } => "filler",
                        Piece::ToLimit { .. } => "to-limit",
                        Piece::Close => "close",
                        Piece::Newline => "newline",
                        Piece::Cr => "cr",
                        Piece::CrLf => "crlf",
                        Piece::Log => "log",
                        Piece::HalfCodePoint => "half",
                        Piece::OtherHalf => "other-half",
                        Piece::Raw(_) => "raw",
                    };
                    format!("piece-{piece}")
                }));
            }
        }
        features
    })
}

/// Seeds of `budget`: covering every entry kind, with and without cursor,
/// total and an early `leave_out_rest`, and budgets small and large.
pub fn budget_seeds() -> Vec<Vec<u8>> {
    sample::<BudgetInput>(13, 20_000, |input| {
        let mut features: Vec<String> = input
            .entries
            .iter()
            .map(|e| match e {
                BudgetEntry::Text { .. } => "text",
                BudgetEntry::Item { .. } => "item",
                BudgetEntry::Block { .. } => "block",
            })
            .map(|kind| format!("{kind}-{}", input.budget / 8192))
            .collect();
        features.push(format!(
            "cursor-{}-total-{}-leave-{}",
            input.cursor.is_some(),
            input.total.is_some(),
            input.leave_out_rest_after.is_some()
        ));
        features
    })
}

/// The seed corpus per target, as `(target, files)`.
pub fn all() -> Vec<(&'static str, Vec<Vec<u8>>)> {
    vec![
        ("chunking", stream_seeds()),
        ("differential", stream_seeds()),
        ("oversize_recovery", oversize_seeds()),
        ("json_validation", json_seeds()),
        ("operations", ops_seeds()),
        ("budget", budget_seeds()),
        ("component_parity", stream_seeds()),
        ("sse", crate::sse::seeds()),
    ]
}
