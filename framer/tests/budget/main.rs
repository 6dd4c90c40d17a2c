//! The result budget, bounded capture, host-side condensing and string
//! decoding: table tests at the edges, and bolero properties for every
//! invariant of issue 3, checked against `serde_json` as the oracle for bytes
//! on the wire.

mod capture;
mod condense;
mod lists;
mod result;
mod shown;
mod unescape;
mod wire;

use drainpipe_framer::budget::{
    BudgetError, Capture, Continuation, Pushed, ResultBuilder, ResultConfig, escaped_len,
    longest_prefix_within, value_wire_len,
};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Characters chosen to hit every escaping rule: ASCII, `"`, `\`, every
/// control character, DEL, and 2-, 3- and 4-byte UTF-8.
fn alphabet() -> Vec<char> {
    let mut chars: Vec<char> = (0u8..0x20).map(char::from).collect();
    chars.extend([
        'a',
        'b',
        ' ',
        '"',
        '\\',
        '/',
        '\u{7f}',
        'é',
        'ß',
        '€',
        '日',
        '😀',
        '🚀',
        '\u{10FFFF}',
    ]);
    chars.extend(['x'; 16]); // mostly plain text, as in real output
    chars
}

/// A string drawn from [`alphabet`] by the fuzzer's bytes.
fn text_from(bytes: &[u8]) -> String {
    let alphabet = alphabet();
    bytes
        .iter()
        .map(|&b| alphabet[usize::from(b) % alphabet.len()])
        .collect()
}

fn wire(value: &Value) -> usize {
    serde_json::to_vec(value).unwrap().len()
}

/// One pushed entry, as the tests describe it.
#[derive(Clone, Debug)]
enum Entry {
    Text(String),
    Block(Value),
    Item(Value),
}

fn entries_from(spec: &[(u8, Vec<u8>, u32)]) -> Vec<Entry> {
    spec.iter()
        .map(|(kind, bytes, n)| match kind % 3 {
            0 => Entry::Text(text_from(bytes)),
            1 => Entry::Item(
                json!({"path": text_from(bytes), "line": n, "score": f64::from(*n % 1000) / 4.0}),
            ),
            _ => Entry::Block(
                json!({"type": "image", "mimeType": "image/png", "data": text_from(bytes)}),
            ),
        })
        .collect()
}

fn push(builder: &mut ResultBuilder, entry: &Entry) -> Pushed {
    match entry {
        Entry::Text(text) => builder.push_text(text),
        Entry::Block(block) => builder.push_block(block),
        Entry::Item(item) => builder.push_item(item),
    }
}

/// What a plain serialiser produces from all the entries: the untouched
/// result the builder must return when it fits.
fn full_result(entries: &[Entry], config_fields: &[(&str, Value)], is_error: bool) -> Value {
    let mut content: Vec<Value> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Text(text) => Some(json!({"type": "text", "text": text})),
            Entry::Block(block) => Some(block.clone()),
            Entry::Item(_) => None,
        })
        .collect();
    let items: Vec<Value> = entries
        .iter()
        .filter_map(|e| {
            if let Entry::Item(i) = e {
                Some(i.clone())
            } else {
                None
            }
        })
        .collect();
    let mut result = json!({"content": [], "isError": is_error});
    let mut structured = serde_json::Map::new();
    for (key, value) in config_fields {
        structured.insert((*key).to_owned(), value.clone());
    }
    if !items.is_empty() {
        structured.insert("items".to_owned(), Value::Array(items));
    }
    if !structured.is_empty() {
        let structured = Value::Object(structured);
        content.push(json!({"type": "text", "text": serde_json::to_string(&structured).unwrap()}));
        result["structuredContent"] = structured;
    }
    result["content"] = Value::Array(content);
    result
}

/// A property run that never (or always) truncated would prove little.
fn assert_both_outcomes(what: &str, seen: &[AtomicUsize; 2]) {
    let (whole, truncated) = (
        seen[0].load(Ordering::Relaxed),
        seen[1].load(Ordering::Relaxed),
    );
    eprintln!("{what}: {whole} whole, {truncated} truncated");
    assert!(
        whole > 0 && truncated > 0,
        "{what}: {whole} whole, {truncated} truncated"
    );
}
