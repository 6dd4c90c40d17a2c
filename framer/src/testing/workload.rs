//! Deterministic workloads, shared by benchmarks, tests and fuzz seeds.
//!
//! - *large*: a few multi-megabyte `tools/call` responses whose text has
//!   quotes, backslashes, escaped newlines and about a quarter multibyte
//!   UTF-8, the shape of the result that blocks a pipe;
//! - *small*: many JSON-RPC messages of 120–310 bytes, the shape of ordinary
//!   traffic (requests, progress notifications, small results).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use serde_json::json;

use super::Rng;

/// Words the text generator draws from: ASCII, Latin accents, CJK, emoji, and
/// the characters JSON must escape.
const WORDS: &[&str] = &[
    "the",
    "result",
    "of",
    "search",
    "src/auth.ts",
    "token",
    "environment",
    "line",
    "match",
    "\"quoted\"",
    "C:\\path\\to\\file",
    "tab\there",
    "newline\n",
    "função",
    "ação",
    "résumé",
    "naïve",
    "日本語",
    "テキスト",
    "数据",
    "😀",
    "🚀",
    "Ω≈ç√",
    "Straße",
    "{\"nested\": [1, 2]}",
];

/// A text of about `bytes` bytes (as UTF-8, before JSON escaping).
pub fn text(rng: &mut Rng, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 16);
    while s.len() < bytes {
        s.push_str(WORDS[rng.below(WORDS.len())]);
        s.push(' ');
    }
    s
}

/// One newline-terminated `tools/call` response carrying `text` as a text
/// block, serialised by `serde_json` (so escaping is exactly a serialiser's).
pub fn text_response(id: u64, text: &str) -> Vec<u8> {
    let mut line = serde_json::to_vec(&json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": { "content": [{ "type": "text", "text": text }], "isError": false }
    }))
    .expect("serialising a Value cannot fail");
    line.push(b'\n');
    line
}

/// The *large* workload: `count` responses of about `bytes` each.
pub fn large(count: usize, bytes: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(count * (bytes + bytes / 8));
    for id in 0..count {
        let t = text(&mut rng, bytes - bytes / 10);
        out.extend_from_slice(&text_response(id as u64, &t));
    }
    out
}

/// The *small* workload: `count` messages of 120–310 bytes, mixed requests,
/// notifications and responses.
pub fn small(count: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(count * 220);
    for id in 0..count as u64 {
        let filler_len = 20 + rng.below(130);
        let filler = text(&mut rng, filler_len);
        let message = match rng.below(3) {
            0 => json!({
                "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "search", "arguments": { "query": filler, "limit": rng.below(100) } }
            }),
            1 => json!({
                "jsonrpc": "2.0", "method": "notifications/progress",
                "params": { "progressToken": format!("tok-{id}"), "progress": rng.below(1000), "message": filler }
            }),
            _ => json!({
                "jsonrpc": "2.0", "id": id,
                "result": { "content": [{ "type": "text", "text": filler }], "isError": false }
            }),
        };
        out.extend_from_slice(
            &serde_json::to_vec(&message).expect("serialising a Value cannot fail"),
        );
        out.push(b'\n');
    }
    out
}

/// Hand-made streams that have broken framers before: the seed corpus of the
/// fuzz targets and the inputs of the parity tests.
pub fn adversarial() -> Vec<Vec<u8>> {
    let big = |n: usize| "x".repeat(n);
    let mut streams: Vec<Vec<u8>> = [
        &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"[..],
        b"{\"id\":1}\r\n{\"id\":2}\r\n",
        b"\n\n  \r\n\t\n",
        b"Server started on port 3000\n{\"id\":1,\"result\":1}\n",
        b"{\"id\":1,\"result\":\"unterminated\n{\"id\":2,\"result\":2}\n",
        b"{\"id\":1,\"result\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\"}\n",
        b"{\"id\":1,\"result\":\"bad \xc3\x28 utf8\"}\n",
        b"{\"id\":1,\"result\":\"\\u00e9\\\"\\\\\\/\\b\\f\\n\\r\\t\"}\n",
        b"[{\"id\":1}]\n\"str\"\n42\ntrue\n",
        b"{\"a\":1}{\"b\":2}\n{\"a\":01}\n{\"a\":1.}\n{\"a\":-}\n",
        b"{\"id\":\"a\\\"b\",\"method\":\"tools/call\"}\n",
        b"{\"id\":7,\"result\":{\"text\":\"no newline at eof\"}}",
        b"{\"id\":7,\"result\":{}}\r",
        b"\r\r\r\n",
        b"{\"id\":1,\"result\":\"\x01\"}\n",
    ]
    .iter()
    .map(|s| s.to_vec())
    .collect();
    // Around the limits used by the tests (64 bytes): at, one over, repeated.
    for n in [40usize, 41, 42, 43, 100, 1000] {
        let line = format!(
            "{{\"id\":9,\"result\":\"{}\"}}\n{{\"id\":10,\"result\":0}}\n",
            big(n)
        );
        streams.push(line.into_bytes());
    }
    streams.push(format!("{0}\n{0}\n{{\"id\":3}}\n", big(200)).into_bytes());
    streams.push(format!("{{\"id\":4,\"result\":\"{}", big(500)).into_bytes());
    let mut deep = Vec::from(&b"{\"a\":"[..]);
    deep.extend(core::iter::repeat_n(b'[', 200));
    deep.extend(core::iter::repeat_n(b']', 200));
    deep.extend_from_slice(b"}\n");
    streams.push(deep);
    streams
}
