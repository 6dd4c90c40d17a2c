//! Generated `tools/call` responses, written straight as JSON text.
//!
//! A fuzz input generates one response and the checks parse it once; the
//! generator itself builds no tree. Built as `serde_json::Value`s and
//! serialised, a response of a few kilobytes cost about a thousand
//! allocations, the largest share of an input's allocations, each of them
//! dear under AddressSanitizer (fuzz/README.md, "Where an input's time goes
//! under ASan"). Written here it costs a handful. Strings are escaped as
//! serde_json escapes them; the members come in one of three orders (see
//! [`tool_response_scaled`]), one of them serde_json's sorted order.

use alloc::string::String;
use alloc::vec::Vec;
use core::ops::Range;

use crate::testing::Rng;

/// Characters that exercise every escape and UTF-8 width.
const CHARS: &[char] = &[
    'a', 'b', 'c', ' ', 'x', 'y', 'z', '\n', '"', '\\', '/', '\t', '\u{1}', 'é', '€', '日', '😀',
];

/// A text of about `len` characters.
pub fn text(rng: &mut Rng, len: usize) -> String {
    let mut text = String::with_capacity(len);
    text_into(rng, len, &mut text);
    text
}

/// [`text`], into `text` (emptied first).
fn text_into(rng: &mut Rng, len: usize, text: &mut String) {
    text.clear();
    for _ in 0..len {
        let c = if rng.below(4) == 0 {
            CHARS[rng.below(CHARS.len())]
        } else {
            'x'
        };
        text.push(c);
    }
}

/// Appends `s` as the inside of a JSON string, escaped as serde_json
/// escapes it: the two-letter escapes for `\b \t \n \f \r " \\`, `\u00xx`
/// (lowercase) for the other control characters, everything else as is.
fn escape(out: &mut Vec<u8>, s: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut plain = 0;
    for (at, &b) in s.iter().enumerate() {
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            b'\n' => b'n',
            b'\t' => b't',
            b'\r' => b'r',
            0x08 => b'b',
            0x0C => b'f',
            0..=0x1F => 0,
            _ => continue,
        };
        out.extend_from_slice(&s[plain..at]);
        plain = at + 1;
        if short == 0 {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xF)]);
        } else {
            out.push(b'\\');
            out.push(short);
        }
    }
    out.extend_from_slice(&s[plain..]);
}

/// `n`'s decimal digits, right-aligned, and where they start.
fn digits(n: usize) -> ([u8; 20], usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            return (digits, at);
        }
    }
}

/// Appends `n` in decimal.
fn number(out: &mut Vec<u8>, n: usize) {
    let (digits, at) = digits(n);
    out.extend_from_slice(&digits[at..]);
}

/// Appends a comma unless `first`, and clears it.
fn comma(out: &mut Vec<u8>, first: &mut bool) {
    if !core::mem::take(first) {
        out.push(b',');
    }
}

/// Buffers reused across a response: the text being generated and a
/// pretty-printed item.
#[derive(Default)]
struct Scratch {
    text: String,
    pretty: Vec<u8>,
}

/// A `tools/call` response: text, image and resource blocks, a mirror of
/// the first text in `structuredContent` (as the official SDKs write it)
/// or other structured data, `_meta`, `resultType`, with `id` first (after
/// `jsonrpc`, or the envelope sorted: `id`, `jsonrpc`, `result`) or last.
/// Sizes range from tiny to a few hundred kilobytes.
pub fn tool_response(rng: &mut Rng) -> Vec<u8> {
    tool_response_scaled(rng, 1)
}

/// [`tool_response`] with every size and count divided by `scale`: small
/// responses (a few kilobytes at a scale of 200) for a fuzzer to run
/// thousands of a second.
///
/// The members of the result and of each block come in one of three
/// orders: sorted (as serde_json writes a map: `type` last, `content`
/// before `structuredContent`), as a TypeScript tool adds them (`type`
/// first, `content` first), or that order reversed (`structuredContent`
/// before the text it mirrors).
pub fn tool_response_scaled(rng: &mut Rng, scale: usize) -> Vec<u8> {
    generate(rng, scale, false)
}

/// [`tool_response`] with its members always sorted, `type` last in each
/// block (as serde_json writes a map): the responses the regression tests
/// named by a seed were found with, before the order was drawn too.
pub fn tool_response_sorted(rng: &mut Rng) -> Vec<u8> {
    generate(rng, 1, true)
}

/// [`tool_response_scaled`], its members sorted if `sorted`.
fn generate(rng: &mut Rng, scale: usize, sorted: bool) -> Vec<u8> {
    let scale = scale.max(1);
    let big = |rng: &mut Rng| match rng.below(4) {
        0 => rng.below(40),
        1 => rng.below(2_000 / scale + 1),
        2 => rng.below(40_000 / scale + 1),
        _ => rng.below(200_000 / scale + 1),
    };
    let mut scratch = Scratch::default();
    let mut content = Vec::with_capacity((64 << 10) / scale);
    content.push(b'[');
    let mut first = true;
    // Where each block lies in `content`.
    let mut blocks: Vec<Range<usize>> = Vec::new();
    // Where the first text block's text lies in `content`, escaped.
    let mut first_text: Option<Range<usize>> = None;
    for _ in 0..rng.below(5) {
        comma(&mut content, &mut first);
        let start = content.len();
        match rng.below(5) {
            0 => {
                content.extend_from_slice(br#"{"data":""#);
                base64(&mut content, big(rng));
                content.extend_from_slice(br#"","mimeType":"image/png","type":"image"}"#);
            }
            1 => {
                content.extend_from_slice(br#"{"resource":{"blob":""#);
                base64(&mut content, big(rng));
                content.extend_from_slice(
                    br#"","mimeType":"application/octet-stream","uri":"file:///a"},"type":"resource"}"#,
                );
            }
            2 => {
                let len = big(rng);
                text_into(rng, len, &mut scratch.text);
                content.extend_from_slice(br#"{"resource":{"text":""#);
                escape(&mut content, scratch.text.as_bytes());
                content.extend_from_slice(br#"","uri":"file:///t"},"type":"resource"}"#);
            }
            _ => {
                let len = big(rng);
                text_into(rng, len, &mut scratch.text);
                content.extend_from_slice(br#"{"text":""#);
                let start = content.len();
                escape(&mut content, scratch.text.as_bytes());
                first_text.get_or_insert(start..content.len());
                content.extend_from_slice(br#"","type":"text"}"#);
            }
        }
        blocks.push(start..content.len());
    }
    if rng.below(5) == 0 {
        // Many small blocks: an array cut to a prefix.
        for i in 0..rng.below(3_000 / scale + 1) {
            comma(&mut content, &mut first);
            let start = content.len();
            content.extend_from_slice(br#"{"text":"line "#);
            number(&mut content, i);
            content.extend_from_slice(br#"","type":"text"}"#);
            blocks.push(start..content.len());
        }
    }
    let mut listed = None;
    if rng.below(4) == 0 {
        // A list as the Python SDK writes it: a block per item (its JSON,
        // pretty-printed) and the list again in `structuredContent`.
        let mut list = Vec::new();
        list.extend_from_slice(br#"{"result":["#);
        let mut first_hit = true;
        python_list(rng, scale, &mut scratch, |n, text, pretty| {
            comma(&mut list, &mut first_hit);
            hit(&mut list, n, text);
            comma(&mut content, &mut first);
            let start = content.len();
            content.extend_from_slice(br#"{"text":""#);
            pretty_hit(pretty, n, text);
            escape(&mut content, pretty);
            content.extend_from_slice(br#"","type":"text"}"#);
            blocks.push(start..content.len());
        });
        list.extend_from_slice(b"]}");
        first_text = None;
        listed = Some(list);
    }
    content.push(b']');
    let mut structured = Vec::new();
    let some = match (rng.below(4), first_text) {
        (0, Some(t)) => {
            structured.extend_from_slice(br#"{"content":""#);
            structured.extend_from_slice(&content[t]);
            structured.extend_from_slice(br#""}"#);
            true
        }
        (1, Some(t)) => {
            structured.extend_from_slice(br#"{"n":3,"result":""#);
            structured.extend_from_slice(&content[t]);
            structured.extend_from_slice(br#""}"#);
            true
        }
        (2, _) => {
            structured.extend_from_slice(br#"{"items":["#);
            let mut first_item = true;
            for i in 0..rng.below(500 / scale + 1) {
                comma(&mut structured, &mut first_item);
                structured.extend_from_slice(br#"{"i":"#);
                number(&mut structured, i);
                structured.extend_from_slice(br#","s":""#);
                text_into(rng, 20, &mut scratch.text);
                escape(&mut structured, scratch.text.as_bytes());
                structured.extend_from_slice(br#""}"#);
            }
            structured.extend_from_slice(br#"],"ok":true}"#);
            true
        }
        // Nested arrays: groups of hits (a few kilobytes each: under
        // `Keep::Ends` a window of whole last groups may leave about one
        // group's bytes unspent), and a dict of hits.
        (3, _) => {
            nested(rng, scale, &mut scratch, &mut structured);
            true
        }
        _ => false,
    };
    let structured = match listed {
        Some(list) => Some(list),
        None => some.then_some(structured),
    };
    let meta = rng.below(3) == 0;
    let result_type = rng.below(2) == 0;
    let is_error = rng.below(4) == 0;
    // The order of the members, as the servers people use write them:
    // sorted (as serde_json's map writes them, `type` last in each block),
    // in the order a TypeScript tool adds them (`type` first, `content`
    // first), or that order reversed (`structuredContent` before the text
    // it mirrors).
    // (Drawn either way: the draws after it are the same.)
    let drawn = rng.below(3);
    let order = if sorted { 0 } else { drawn };
    let id_first = rng.below(2) == 0;
    let id = rng.below(100);
    // With `id` first, one in three envelopes is sorted too, as a server
    // that builds its response as a `serde_json::Value` writes it (`id`,
    // `jsonrpc`, `result`); the others as the SDKs' response types write
    // theirs. (Drawn from `id`: the draws after it are the same.)
    let id_sorted = id_first && !sorted && id.is_multiple_of(3);
    let mut line =
        Vec::with_capacity(content.len() + structured.as_ref().map_or(0, Vec::len) + 160);
    if id_sorted {
        line.extend_from_slice(br#"{"id":"#);
        number(&mut line, id);
        line.extend_from_slice(br#","jsonrpc":"2.0","result":"#);
    } else if id_first {
        line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        number(&mut line, id);
        line.extend_from_slice(br#","result":"#);
    } else {
        line.extend_from_slice(br#"{"result":"#);
    }
    let content = if order == 0 {
        content
    } else {
        type_first(&content, &blocks)
    };
    let mut members: Vec<(&[u8], &[u8])> = Vec::with_capacity(5);
    if meta {
        members.push((b"_meta", br#"{"progressToken":5,"x/y":"z"}"#));
    }
    members.push((b"content", &content));
    if is_error {
        members.push((b"isError", b"false"));
    }
    if result_type {
        members.push((b"resultType", br#""complete""#));
    }
    if let Some(structured) = &structured {
        members.push((b"structuredContent", structured));
    }
    if order != 0 {
        // Added: content, structuredContent, _meta, resultType, isError.
        let rank = |key: &[u8]| match key {
            b"content" => 0,
            b"structuredContent" => 1,
            b"_meta" => 2,
            b"resultType" => 3,
            _ => 4,
        };
        members.sort_by_key(|&(key, _)| rank(key));
        if order == 2 {
            members.reverse();
        }
    }
    line.push(b'{');
    let mut first_member = true;
    for (key, value) in members {
        comma(&mut line, &mut first_member);
        line.push(b'"');
        line.extend_from_slice(key);
        line.extend_from_slice(b"\":");
        line.extend_from_slice(value);
    }
    line.push(b'}');
    if id_first {
        line.push(b'}');
    } else {
        line.extend_from_slice(br#","jsonrpc":"2.0","id":"r-"#);
        number(&mut line, id);
        line.extend_from_slice(br#""}"#);
    }
    line
}

/// `content` (a JSON array of the blocks at `blocks`, each one's `type`
/// its last member) with each block's `type` moved first.
fn type_first(content: &[u8], blocks: &[Range<usize>]) -> Vec<u8> {
    const TYPE: &[u8] = br#","type":""#;
    let mut out = Vec::with_capacity(content.len());
    out.push(b'[');
    let mut first = true;
    for block in blocks {
        let block = &content[block.clone()];
        // (A quote inside a string is escaped: the last unescaped
        // `,"type":"` is the member's.)
        let at = block
            .windows(TYPE.len())
            .rposition(|w| w == TYPE)
            .expect("every block ends with its type");
        comma(&mut out, &mut first);
        out.push(b'{');
        out.extend_from_slice(&block[at + 1..block.len() - 1]);
        out.push(b',');
        out.extend_from_slice(&block[1..at]);
        out.push(b'}');
    }
    out.push(b']');
    out
}

/// Appends the base64 of `len / 4 + 1` times "ABC".
fn base64(out: &mut Vec<u8>, len: usize) {
    for _ in 0..len / 4 + 1 {
        out.extend_from_slice(b"QUJD");
    }
}

/// Search hits as a Python SDK tool returns a `list` of models: small
/// objects, a few hundred bytes at most, sometimes thousands of them
/// (counts divided by `scale`). Hands each one's number, text and a buffer
/// for its pretty form to `each`.
fn python_list(
    rng: &mut Rng,
    scale: usize,
    scratch: &mut Scratch,
    mut each: impl FnMut(usize, &str, &mut Vec<u8>),
) {
    let count = match rng.below(3) {
        0 => rng.below(20),
        1 => rng.below(400 / scale + 1),
        _ => rng.below(5_000 / scale + 1),
    };
    for n in 0..count {
        let len = if rng.below(8) == 0 {
            rng.below(600)
        } else {
            rng.below(30)
        };
        text_into(rng, len, &mut scratch.text);
        each(n, &scratch.text, &mut scratch.pretty);
    }
}

/// Appends hit `n` as compact JSON.
fn hit(out: &mut Vec<u8>, n: usize, text: &str) {
    out.extend_from_slice(br#"{"line":"#);
    number(out, n);
    out.extend_from_slice(br#","path":"src/file-"#);
    number(out, n);
    out.extend_from_slice(br#".rs","text":""#);
    escape(out, text.as_bytes());
    out.extend_from_slice(br#""}"#);
}

/// Hit `n` as serde_json pretty-prints it (indented by two), in `out`
/// (emptied first).
fn pretty_hit(out: &mut Vec<u8>, n: usize, text: &str) {
    out.clear();
    out.extend_from_slice(b"{\n  \"line\": ");
    number(out, n);
    out.extend_from_slice(b",\n  \"path\": \"src/file-");
    number(out, n);
    out.extend_from_slice(b".rs\",\n  \"text\": \"");
    escape(out, text.as_bytes());
    out.extend_from_slice(b"\"\n}");
}

/// `{"byName": {"hit-0": ..., ...}, "groups": [{"hits": [...], "name":
/// "group 0"}, ...]}`: the groups generated first, the names sorted as
/// strings (`hit-10` before `hit-2`).
fn nested(rng: &mut Rng, scale: usize, scratch: &mut Scratch, out: &mut Vec<u8>) {
    let mut groups = Vec::new();
    let mut first_group = true;
    for g in 0..rng.below(40) {
        comma(&mut groups, &mut first_group);
        groups.extend_from_slice(br#"{"hits":["#);
        let mut first_hit = true;
        python_list(rng, scale * 100, scratch, |n, text, _| {
            comma(&mut groups, &mut first_hit);
            hit(&mut groups, n, text);
        });
        groups.extend_from_slice(br#"],"name":"group "#);
        number(&mut groups, g);
        groups.extend_from_slice(br#""}"#);
    }
    let mut hits = Vec::new();
    let mut at: Vec<Range<usize>> = Vec::new();
    python_list(rng, scale, scratch, |n, text, _| {
        let start = hits.len();
        hit(&mut hits, n, text);
        at.push(start..hits.len());
    });
    let mut names: Vec<usize> = (0..at.len()).collect();
    names.sort_unstable_by_key(|&n| decimal(n));
    out.extend_from_slice(br#"{"byName":{"#);
    let mut first_name = true;
    for n in names {
        comma(out, &mut first_name);
        out.extend_from_slice(br#""hit-"#);
        number(out, n);
        out.extend_from_slice(br#"":"#);
        out.extend_from_slice(&hits[at[n].clone()]);
    }
    out.extend_from_slice(br#"},"groups":["#);
    out.extend_from_slice(&groups);
    out.extend_from_slice(b"]}");
}

/// `n`'s decimal digits left-aligned, for comparing numbers as strings:
/// the zeros after them sort a prefix first (`1` before `10`).
fn decimal(n: usize) -> [u8; 20] {
    let (digits, at) = digits(n);
    let mut left = [0u8; 20];
    left[..digits.len() - at].copy_from_slice(&digits[at..]);
    left
}
