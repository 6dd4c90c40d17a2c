//! Writes the components and the native framer's answers on the parity
//! corpus, for the JavaScript tests (Node and the browser) to check the same
//! component against:
//!
//! `cargo run -p drainpipe-host --example export_vectors -- <dir>` writes
//! `<dir>/framer.wasm`, `<dir>/drainpipe.wasm` (framer and budget) and
//! `<dir>/vectors.json`; with `--bench-data` also
//! the benchmark workloads `<dir>/large.bin` and `<dir>/small.bin` (the
//! same bytes `cargo bench -p drainpipe-bench --bench component` uses).
//!
//! Bytes are base64 in the JSON; offsets and counters are plain numbers
//! (every corpus stream is far below 2^53 bytes).

use std::path::PathBuf;

use drainpipe_framer::owned::{OwnedEnvelope, OwnedEvent, OwnedId};
use drainpipe_framer::testing::{Rng, workload};
use drainpipe_framer::{Config, Framer, Stats};
use drainpipe_host::component::{COMPONENT_WASM, FULL_COMPONENT_WASM};
use serde_json::{Value, json};

fn main() {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: export_vectors <dir>"),
    );
    std::fs::create_dir_all(&dir).expect("create the output dir");
    std::fs::write(dir.join("framer.wasm"), COMPONENT_WASM).expect("write framer.wasm");
    std::fs::write(dir.join("drainpipe.wasm"), FULL_COMPONENT_WASM).expect("write drainpipe.wasm");
    if std::env::args().any(|a| a == "--bench-data") {
        std::fs::write(dir.join("large.bin"), workload::large(4, 8 << 20, 1))
            .expect("write large.bin");
        std::fs::write(dir.join("small.bin"), workload::small(1_000_000, 2))
            .expect("write small.bin");
    }

    let mut streams: Vec<Vec<u8>> = Vec::new();
    let mut cases = Vec::new();
    let configs = [
        Config::default().with_max_frame_bytes(64),
        Config::default(),
        Config::default()
            .with_max_frame_bytes(64)
            .with_json_validation(false),
        Config::default().with_max_depth(16),
    ];
    for (i, stream) in workload::adversarial().into_iter().enumerate() {
        let mut rng = Rng::new(i as u64);
        let random: Vec<usize> = (0..32).map(|_| 1 + rng.below(97)).collect();
        for config in configs {
            for lengths in [
                vec![1],
                vec![3],
                vec![64],
                random.clone(),
                vec![stream.len()],
            ] {
                cases.push(case(
                    &format!("adversarial #{i}"),
                    streams.len(),
                    &stream,
                    config,
                    &lengths,
                ));
            }
        }
        streams.push(stream);
    }
    let small = workload::small(2_000, 7);
    for lengths in [vec![65536], vec![777], vec![1, 13, 200, 5]] {
        cases.push(case(
            "small",
            streams.len(),
            &small,
            Config::default(),
            &lengths,
        ));
    }
    let strict = Config::default()
        .with_max_frame_bytes(200)
        .with_max_depth(3);
    cases.push(case(
        "small, strict limits",
        streams.len(),
        &small,
        strict,
        &[4096],
    ));
    streams.push(small);
    let large = workload::large(2, 256 * 1024, 11);
    for lengths in [vec![65536], vec![4093]] {
        let config = Config::default().with_max_frame_bytes(1 << 20);
        cases.push(case("large", streams.len(), &large, config, &lengths));
    }
    cases.push(case(
        "large, tight limit",
        streams.len(),
        &large,
        Config::default().with_max_frame_bytes(200_000),
        &[65536],
    ));
    streams.push(large);

    let vectors = json!({
        "generatedBy": "cargo run -p drainpipe-host --example export_vectors",
        "streams": streams.iter().map(|s| b64(s)).collect::<Vec<_>>(),
        "cases": cases,
    });
    let path = dir.join("vectors.json");
    std::fs::write(&path, serde_json::to_vec(&vectors).expect("serialise"))
        .expect("write vectors.json");
    println!(
        "wrote {} cases to {} and the component to {}",
        vectors["cases"].as_array().map_or(0, Vec::len),
        path.display(),
        dir.join("framer.wasm").display()
    );
}

fn case(
    name: &str,
    stream_index: usize,
    stream: &[u8],
    config: Config,
    lengths: &[usize],
) -> Value {
    let mut framer = Framer::new(config);
    let mut events = Vec::new();
    let mut rest = stream;
    let mut step = 0;
    while !rest.is_empty() {
        let len = lengths[step % lengths.len()].clamp(1, rest.len());
        step += 1;
        let (chunk, tail) = rest.split_at(len);
        framer.push(chunk, |e| events.push(OwnedEvent::from(e)));
        rest = tail;
    }
    framer.finish(|e| events.push(OwnedEvent::from(e)));
    json!({
        "name": name,
        "stream": stream_index,
        "limits": {
            "maxFrameBytes": config.max_frame_bytes(),
            "maxDepth": config.max_depth(),
            "validateJson": config.json_validation(),
        },
        "chunks": lengths,
        "events": events.iter().map(event).collect::<Vec<_>>(),
        "stats": stats(framer.stats()),
    })
}

fn envelope(e: &OwnedEnvelope) -> Value {
    json!({
        "jsonrpc": e.jsonrpc.as_deref().map(b64),
        "id": e.id.as_ref().map(|id| match id {
            OwnedId::Number(raw) => json!({ "tag": "number", "raw": b64(raw) }),
            OwnedId::String(raw) => json!({ "tag": "string", "raw": b64(raw) }),
            OwnedId::Null => json!({ "tag": "null" }),
        }),
        "method": e.method.as_deref().map(b64),
        "hasResult": e.has_result,
        "hasError": e.has_error,
    })
}

fn event(e: &OwnedEvent) -> Value {
    match e {
        OwnedEvent::Frame {
            offset,
            bytes,
            envelope: env,
        } => {
            json!({ "tag": "frame", "offset": offset, "bytes": b64(bytes), "envelope": envelope(env) })
        }
        OwnedEvent::Oversize {
            offset,
            looks_like_json,
            envelope: env,
        } => {
            json!({ "tag": "oversize", "offset": offset, "looksLikeJson": looks_like_json, "envelope": envelope(env) })
        }
        OwnedEvent::Malformed {
            offset,
            error,
            envelope: env,
        } => json!({
            "tag": "malformed",
            "offset": offset,
            "error": { "kind": error.kind.wit_name(), "at": error.at },
            "envelope": envelope(env),
        }),
        OwnedEvent::Discarded {
            offset,
            len,
            at_eof,
            envelope: env,
            well_formed,
        } => json!({
            "tag": "discarded",
            "offset": offset,
            "len": len,
            "atEof": at_eof,
            "envelope": envelope(env),
            "wellFormed": well_formed,
        }),
        OwnedEvent::NotProtocol { offset, line } => {
            json!({ "tag": "not-protocol", "offset": offset, "line": b64(line) })
        }
        OwnedEvent::Truncated {
            offset,
            len,
            envelope: env,
        } => {
            json!({ "tag": "truncated", "offset": offset, "len": len, "envelope": envelope(env) })
        }
    }
}

fn stats(s: &Stats) -> Value {
    json!({
        "bytesIn": s.bytes_in,
        "frames": s.frames,
        "largestFrame": s.largest_frame,
        "oversize": s.oversize,
        "oversizeBytesDropped": s.oversize_bytes_dropped,
        "malformed": s.malformed,
        "malformedBytesDropped": s.malformed_bytes_dropped,
        "notProtocol": s.not_protocol,
        "blankLines": s.blank_lines,
        "truncated": s.truncated,
        "bufferedHighWater": s.buffered_high_water,
    })
}

fn b64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= group.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
