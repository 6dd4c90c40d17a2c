//! The result budget beside plain `serde_json`, on the same data in the same
//! run.
//!
//! `cargo bench -p drainpipe-framer --bench budget`
//!
//! - *search hits*: 50,000 `{path, line, summary}` items (summaries from
//!   `drainpipe_framer::testing::workload::text`, so with quotes, escapes and
//!   multibyte text). The peer is `serde_json::to_vec` of the full result
//!   (every item in `structuredContent`, its text copy in `content`). The
//!   builder runs twice: with a 64 KiB budget, stopping when told (how a tool
//!   uses it), and with no effective budget, taking every item (its overhead
//!   over the peer for the same output).
//! - *8 MiB text*: a `tools/call` response with one 8 MiB text block from
//!   `workload::text_response`. The peers are `serde_json::to_vec` of the
//!   full result and `serde_json::from_slice::<Value>` of the frame (what any
//!   host that looks inside a response pays); the `Condenser` condenses it
//!   to 64 KiB as a proxy does, fed in 64 KiB pieces.
//! - *two mirrored texts*: two 1 MiB texts, each mirrored in
//!   `structuredContent` (a 4 MiB frame), condensed to 256 KiB: the worst
//!   common case for taking room back, every text after the first shrinking
//!   the ones before it step by step. No peer; compare with the 8 MiB
//!   text's throughput.
//!
//! - *shown*: the Python SDK list of 5,000 hits, measured in characters as
//!   a host counts it: `shown_size` beside the same reading through a
//!   `serde_json::Value` (the peer); and a ladder of 25,000 characters over
//!   it, which condenses the line once per rung and measures the candidates
//!   with `shown_size`; and the same ladder over lists of 120 and 240
//!   hits (27 and 55 KB), where the rungs far above the line are not fed.
//!
//! Ratios: divide each figure by the `serde_json_to_vec_full` figure of its
//! group, from the same run.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use drainpipe_framer::budget::{
    Clip, Condensed, Condenser, Continuation, Ladder, ResultBuilder, shown_size, utf16_len,
};
use drainpipe_framer::testing::{Rng, workload};
use serde_json::{Value, json};

const HITS: usize = 50_000;
const BUDGET: usize = 64 * 1024;

fn search_hits() -> Vec<Value> {
    let mut rng = Rng::new(50_000);
    (0..HITS)
        .map(|i| {
            let summary_len = 40 + rng.below(80);
            json!({
                "path": format!("src/module_{}/file_{}.rs", rng.below(100), i % 997),
                "line": rng.below(5000),
                "summary": workload::text(&mut rng, summary_len),
            })
        })
        .collect()
}

/// The result a tool without a budget would send: every hit, and the
/// structured content repeated as text.
fn full_result(hits: &[Value]) -> Value {
    let structured = json!({ "items": hits });
    let copy = serde_json::to_string(&structured).expect("a Value serialises");
    json!({"content": [{"type": "text", "text": copy}], "isError": false, "structuredContent": structured})
}

fn budgeted(hits: &[Value], budget: usize) -> Vec<u8> {
    let mut builder = ResultBuilder::new(budget).expect("budget above the minimum");
    for hit in hits {
        if !builder.push_item(hit).keep_going() {
            break;
        }
    }
    let cursor = format!("offset:{}", builder.kept_items());
    let total = hits.len() as u64;
    builder
        .finish(Continuation::cursor(&cursor).with_total(total))
        .expect("cursor within bounds")
        .into_bytes()
}

fn search_hits_bench(c: &mut Criterion) {
    let hits = search_hits();
    let full = full_result(&hits);
    let full_len = serde_json::to_vec(&full).expect("a Value serialises").len();
    let everything = budgeted(&hits, usize::MAX / 2);
    assert_eq!(
        everything.len(),
        full_len,
        "unbounded builder output differs in size from serde_json"
    );
    let bounded = budgeted(&hits, BUDGET);
    eprintln!(
        "search hits: full result {full_len} bytes, budgeted {} bytes",
        bounded.len()
    );

    let mut group = c.benchmark_group("budget/search_hits_50k");
    group.throughput(Throughput::Bytes(full_len as u64));
    group.bench_function("serde_json_to_vec_full", |b| {
        b.iter(|| serde_json::to_vec(black_box(&full)).unwrap())
    });
    group.bench_function("builder_64KiB_stop_when_full", |b| {
        b.iter(|| budgeted(black_box(&hits), BUDGET))
    });
    group.bench_function("builder_unbounded_all_items", |b| {
        b.iter(|| budgeted(black_box(&hits), usize::MAX / 2))
    });
    group.finish();
}

fn condense_bench(c: &mut Criterion) {
    let text = workload::text(&mut Rng::new(8), 8 << 20);
    let mut frame = workload::text_response(1, &text);
    frame.pop(); // the newline: a framer hands frames over without it
    let response: Value = serde_json::from_slice(&frame).expect("the workload is valid JSON");
    let result = response["result"].clone();
    let full_len = serde_json::to_vec(&result)
        .expect("a Value serialises")
        .len();
    let condense = |frame: &[u8]| {
        let mut condenser = Condenser::new(BUDGET).expect("budget");
        for piece in frame.chunks(64 << 10) {
            condenser.feed(piece).expect("condenses");
        }
        match condenser.finish().expect("condenses") {
            Condensed::Cut { frame, .. } => frame,
            other => panic!("{other:?}"),
        }
    };
    eprintln!(
        "condense: frame {} bytes, result {full_len} bytes, condensed frame {} bytes",
        frame.len(),
        condense(&frame).len()
    );

    let mut group = c.benchmark_group("budget/condense_8MiB_text");
    group.throughput(Throughput::Bytes(frame.len() as u64));
    group.sample_size(20);
    group.bench_function("serde_json_to_vec_full", |b| {
        b.iter(|| serde_json::to_vec(black_box(&result)).unwrap())
    });
    group.bench_function("serde_json_from_slice_value", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&frame)).unwrap())
    });
    group.bench_function("condense_64KiB", |b| b.iter(|| condense(black_box(&frame))));
    group.finish();

    // Two 1 MiB texts, each mirrored in `structuredContent`, condensed to
    // 256 KiB: every text after the first takes room back from the ones
    // before it, a step of budget/64 at a time, each moving the output.
    let (first, second) = (
        workload::text(&mut Rng::new(9), 1 << 20),
        workload::text(&mut Rng::new(10), 1 << 20),
    );
    let shared = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 2, "result": {
        "content": [{"type": "text", "text": first}, {"type": "text", "text": second}],
        "structuredContent": {"first": first, "second": second},
    }}))
    .expect("a Value serialises");
    let condense_to = |frame: &[u8], budget: usize| {
        let mut condenser = Condenser::new(budget).expect("budget");
        for piece in frame.chunks(64 << 10) {
            condenser.feed(piece).expect("condenses");
        }
        match condenser.finish().expect("condenses") {
            Condensed::Cut { frame, .. } => frame,
            other => panic!("{other:?}"),
        }
    };
    eprintln!(
        "condense: two mirrored texts, frame {} bytes, condensed frame {} bytes",
        shared.len(),
        condense_to(&shared, 256 << 10).len()
    );
    let mut group = c.benchmark_group("budget/condense_two_mirrored_1MiB_texts");
    group.throughput(Throughput::Bytes(shared.len() as u64));
    group.sample_size(20);
    group.bench_function("condense_256KiB", |b| {
        b.iter(|| condense_to(black_box(&shared), 256 << 10))
    });
    group.finish();
}

/// A list as the Python SDK writes it: a text block per hit (its JSON,
/// pretty-printed) and the list again in `structuredContent.result`,
/// condensed with links (each item kept whole or in an array's rest) at
/// the budgets `install` writes for VS Code and a generous host, beside
/// parsing the frame with `serde_json`, which any host that looks inside a
/// response pays.
fn condense_list_bench(c: &mut Criterion) {
    let (_, line) = drainpipe_framer::testing::condense::python_hits_response(5_000);
    let frame = line.into_bytes();
    let condense = |frame: &[u8], budget: usize| {
        let mut condenser = Condenser::new(budget)
            .and_then(Condenser::with_links)
            .expect("budget");
        let mut spilled = 0usize;
        for piece in frame.chunks(64 << 10) {
            condenser
                .feed_spilling(piece, &mut |event| {
                    if let drainpipe_framer::budget::Spill::Raw { bytes, .. } = event {
                        spilled += bytes.len();
                    }
                })
                .expect("condenses");
        }
        (condenser.finish().expect("condenses"), spilled)
    };
    let mut group = c.benchmark_group("budget/condense_python_list_5000");
    group.throughput(Throughput::Bytes(frame.len() as u64));
    group.sample_size(20);
    group.bench_function("serde_json_from_slice_value", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&frame)).unwrap())
    });
    for budget in [8_000, 64 << 10] {
        group.bench_function(format!("condense_linked_{budget}"), |b| {
            b.iter(|| condense(black_box(&frame), budget))
        });
    }
    group.finish();
}

/// What a host shows of a response, measured in characters: by
/// `shown_size` (one pass, no tree) and the way a `Value` reads it (the
/// peer: parse the line, look the parts up, write `structuredContent` back
/// out); then a ladder in characters over the same list, which measures
/// each candidate rung with `shown_size`.
fn shown_bench(c: &mut Criterion) {
    let (_, line) = drainpipe_framer::testing::condense::python_hits_response(5_000);
    let frame = line.into_bytes();
    let by_value = |frame: &[u8]| {
        drainpipe_framer::testing::condense::shown_by_value(frame).map(|s| s.size(&mut utf16_len))
    };
    assert_eq!(shown_size(&frame, &mut utf16_len), by_value(&frame));
    let mut group = c.benchmark_group("budget/shown_python_list_5000");
    group.throughput(Throughput::Bytes(frame.len() as u64));
    group.sample_size(20);
    group.bench_function("serde_json_value_then_lookups", |b| {
        b.iter(|| by_value(black_box(&frame)))
    });
    group.bench_function("shown_size_chars", |b| {
        b.iter(|| shown_size(black_box(&frame), &mut utf16_len))
    });
    let clip = Clip::chars(25_000);
    group.bench_function("ladder_25000_chars", |b| {
        b.iter(|| ladder_chars(clip, black_box(&frame)))
    });
    group.finish();
    // Lines a few times the amount: the rungs far above the line wait
    // unfed (see `Ladder`), where a 1.3 MB line feeds them all.
    for hits in [120, 240] {
        let (_, line) = drainpipe_framer::testing::condense::python_hits_response(hits);
        let frame = line.into_bytes();
        let mut group = c.benchmark_group(format!("budget/ladder_python_list_{hits}"));
        group.throughput(Throughput::Bytes(frame.len() as u64));
        group.sample_size(20);
        group.bench_function("ladder_25000_chars", |b| {
            b.iter(|| ladder_chars(clip, black_box(&frame)))
        });
        group.finish();
    }
}

/// Condenses `frame` by a ladder for `clip` (in characters), in 64 KiB
/// pieces, measuring candidates as a host counts them.
fn ladder_chars(clip: Clip, frame: &[u8]) -> Condensed {
    let mut ladder = Ladder::for_clip(clip).expect("budget");
    for piece in frame.chunks(64 << 10) {
        ladder.feed(piece).expect("condenses");
    }
    ladder
        .finish(&mut |line, to_come| {
            shown_size(line, &mut utf16_len)
                .is_some_and(|n| n + to_come as u64 <= clip.amount as u64)
        })
        .expect("condenses")
}

criterion_group!(
    benches,
    search_hits_bench,
    condense_bench,
    condense_list_bench,
    shown_bench
);
criterion_main!(benches);
