//! The result budget (`drainpipe_framer::budget`): byte counting, the result
//! builder, host-side condensing and bounded capture, each against an oracle
//! that does not share its code: `serde_json`'s own serialiser and parser,
//! and the plain byte stream the capture saw.
//!
//! The condensed response is also pushed through a framer whose transport
//! limit is the budget, which must deliver it as one frame for the same id
//! (and hold the memory bound while doing so).

use arbitrary::Arbitrary;
use drainpipe_framer::budget::{
    BudgetError, Capture, Condensed, Continuation, MIN_CONDENSE_BUDGET, MIN_LINKED_BUDGET, Pushed,
    ResultBuilder, escaped_len, longest_prefix_within, value_wire_len,
};
use drainpipe_framer::testing::condense::{
    check_condensed, check_nothing_lost, check_spilled, condense_linked, condense_split,
};
use drainpipe_framer::testing::{OwnedEvent, OwnedId, assert_memory_bound};
use drainpipe_framer::{Config, Framer};
use serde_json::{Value, json};

/// One entry a tool pushes.
#[derive(Arbitrary, Clone, Debug)]
pub enum Entry {
    /// A text block: `text` repeated `1 + repeat % 64` times.
    Text {
        /// The text (any Unicode, control characters included).
        text: String,
        /// How often it is repeated.
        repeat: u8,
    },
    /// A structured item `{"path": …, "line": …}`.
    Item {
        /// Its path.
        path: String,
        /// Its line.
        line: u32,
    },
    /// A non-text content block (a resource link).
    Block {
        /// Its URI.
        uri: String,
    },
}

impl Entry {
    fn text(&self) -> Option<String> {
        match self {
            Entry::Text { text, repeat } => Some(text.repeat(1 + usize::from(*repeat % 64))),
            _ => None,
        }
    }

    fn value(&self) -> Value {
        match self {
            Entry::Text { .. } => json!({"type": "text", "text": self.text()}),
            Entry::Item { path, line } => json!({"path": path, "line": line}),
            Entry::Block { uri } => json!({"type": "resource_link", "uri": uri, "name": "file"}),
        }
    }
}

/// One input of the `budget` target.
#[derive(Arbitrary, Clone, Debug)]
pub struct BudgetInput {
    /// The budget in bytes on the wire (also the capture budget).
    pub budget: u16,
    /// What the tool pushes, in order.
    pub entries: Vec<Entry>,
    /// The caller's cursor for continuing.
    pub cursor: Option<String>,
    /// The caller's total, if it knows it.
    pub total: Option<u32>,
    /// Call `leave_out_rest` after this many pushes.
    pub leave_out_rest_after: Option<u8>,
    /// Head share of the capture budget.
    pub capture_head: u16,
    /// The response id of the condensed frame.
    pub id: u32,
}

/// The `budget` property: every part of the budget module on one input.
pub fn check_budget(input: &BudgetInput) {
    check_wire(input);
    check_builder(input);
    check_condense(input);
    check_capture(input);
}

fn continuation(input: &BudgetInput) -> Continuation {
    let mut continuation = match &input.cursor {
        Some(cursor) => Continuation::cursor(cursor),
        None => Continuation::none(),
    };
    if let Some(total) = input.total {
        continuation = continuation.with_total(u64::from(total));
    }
    continuation
}

/// Byte counting agrees with `serde_json`'s serialiser.
fn check_wire(input: &BudgetInput) {
    for entry in &input.entries {
        let value = entry.value();
        assert_eq!(
            value_wire_len(&value),
            serde_json::to_vec(&value).unwrap().len(),
            "value_wire_len of {value}"
        );
        let Some(text) = entry.text() else { continue };
        let serialised = serde_json::to_string(&text).unwrap();
        assert_eq!(
            escaped_len(&text),
            serialised.len() - 2,
            "escaped_len of {text:?}"
        );
        let room = usize::from(input.budget) % (serialised.len() + 1);
        let prefix = longest_prefix_within(&text, room);
        assert!(text.starts_with(prefix));
        assert!(
            escaped_len(prefix) <= room,
            "prefix of {} escaped bytes for room {room}",
            escaped_len(prefix)
        );
        if let Some(next) = text[prefix.len()..].chars().next() {
            let longer = &text[..prefix.len() + next.len_utf8()];
            assert!(
                escaped_len(longer) > room,
                "prefix for room {room} could have kept {next:?}"
            );
        }
    }
}

/// The text blocks and items of a result value.
fn texts_and_items(result: &Value) -> (Vec<String>, Vec<Value>) {
    let texts = result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let items = result["structuredContent"]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    (texts, items)
}

/// The builder: within budget, valid JSON, `truncated` exactly when
/// something was left out, kept entries a prefix of the pushed ones.
fn check_builder(input: &BudgetInput) {
    let budget = usize::from(input.budget);
    let mut builder = match ResultBuilder::new(budget) {
        Ok(builder) => builder,
        Err(BudgetError::BudgetTooSmall { minimum, .. }) => {
            assert!(
                minimum > budget,
                "BudgetTooSmall with minimum {minimum} <= budget {budget}"
            );
            assert!(
                ResultBuilder::new(minimum).is_ok(),
                "the stated minimum {minimum} is refused too"
            );
            return;
        }
        Err(other) => panic!("ResultBuilder::new({budget}): {other:?}"),
    };
    let mut left_out = false;
    let mut pushed_texts = Vec::new();
    let mut pushed_items = Vec::new();
    for (n, entry) in input.entries.iter().enumerate() {
        if input.leave_out_rest_after == Some(n as u8) {
            builder.leave_out_rest();
            left_out = true;
        }
        let outcome = match entry {
            Entry::Text { .. } => {
                let text = entry.text().unwrap_or_default();
                pushed_texts.push(text.clone());
                builder.push_text(&text)
            }
            Entry::Item { .. } => {
                pushed_items.push(entry.value());
                builder.push_item(&entry.value())
            }
            Entry::Block { .. } => builder.push_block(&entry.value()),
        };
        if left_out {
            assert_eq!(
                outcome,
                Pushed::LeftOut,
                "a push after the builder was full was accepted"
            );
        }
        if !outcome.keep_going() {
            left_out = true;
            assert!(builder.is_full());
        }
        if let Pushed::Cut { kept_bytes } = outcome {
            assert!(kept_bytes > 0, "Cut with nothing kept");
        }
    }
    let result = match builder.finish(continuation(input)) {
        Ok(result) => result,
        Err(BudgetError::CursorTooLong { .. }) => return,
        Err(other) => panic!("finish: {other:?}"),
    };
    let bytes = result.as_bytes();
    assert!(
        bytes.len() <= budget,
        "result of {} bytes over the budget {budget}",
        bytes.len()
    );
    let value: Value = serde_json::from_slice(bytes).unwrap_or_else(|e| {
        panic!(
            "result is not JSON ({e}): {}",
            String::from_utf8_lossy(bytes)
        )
    });
    assert_eq!(
        result.is_truncated(),
        left_out,
        "truncated must be true exactly when something was left out"
    );
    let structured = &value["structuredContent"];
    if left_out {
        assert_eq!(
            structured["truncated"], true,
            "truncated result without the marker: {value}"
        );
        match &input.cursor {
            Some(cursor) => assert_eq!(structured["nextCursor"], Value::from(cursor.as_str())),
            None => assert!(structured.get("nextCursor").is_none()),
        }
        match input.total {
            Some(total) => assert_eq!(structured["totalEstimate"], total),
            None => assert!(
                structured.get("totalEstimate").is_none(),
                "totalEstimate invented: {value}"
            ),
        }
    } else {
        assert!(
            structured.get("truncated").is_none(),
            "untruncated result with a marker: {value}"
        );
    }
    // Kept items: a prefix of the pushed items, in order.
    let (texts, items) = texts_and_items(&value);
    assert!(
        items.len() <= pushed_items.len() && items[..] == pushed_items[..items.len()],
        "kept items are not a prefix"
    );
    assert_eq!(items.len(), result.kept_items());
    // Kept texts: the pushed texts in order, the last possibly cut; the
    // builder may add its summary and a text copy of structuredContent.
    let mut next = 0;
    let mut extra = 0;
    for text in &texts {
        match pushed_texts.get(next) {
            Some(pushed) if pushed == text => next += 1,
            Some(pushed) if !text.is_empty() && pushed.starts_with(text.as_str()) && left_out => {
                next += 1
            }
            _ => extra += 1,
        }
    }
    assert!(
        extra <= 2,
        "{extra} text blocks that were never pushed: {value}"
    );
    if !left_out {
        assert_eq!(
            next,
            pushed_texts.len(),
            "an untruncated result lost a text"
        );
    }
}

/// Host-side condensing of a well-formed tool response built from the
/// entries, and of anything else.
fn check_condense(input: &BudgetInput) {
    let budget = MIN_CONDENSE_BUDGET + usize::from(input.budget);
    // Any bytes: an error or a response within budget, never a panic.
    for entry in &input.entries {
        if let Entry::Text { text, .. } = entry {
            let _ = condense_split(text.as_bytes(), budget, &[7]);
        }
    }
    let content: Vec<Value> = input
        .entries
        .iter()
        .filter(|e| !matches!(e, Entry::Item { .. }))
        .map(Entry::value)
        .collect();
    let items: Vec<Value> = input
        .entries
        .iter()
        .filter(|e| matches!(e, Entry::Item { .. }))
        .map(Entry::value)
        .collect();
    let mut result = json!({"content": content, "isError": false});
    if !items.is_empty() {
        result["structuredContent"] = json!({"items": items});
    }
    let frame =
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": input.id, "result": result})).unwrap();
    let split = [usize::from(input.capture_head % 512) + 1];
    let outcome = match condense_split(&frame, budget, &split) {
        Ok(outcome) => outcome,
        Err(error) => {
            assert!(error.contains("cannot be cut"), "{error}");
            return;
        }
    };
    if let Err(error) = check_condensed(&frame, budget, &outcome) {
        panic!("{error}");
    }
    // With links: the same promises, and every value it reports for
    // spilling is the original at its pointer.
    let linked_budget = budget + (MIN_LINKED_BUDGET - MIN_CONDENSE_BUDGET);
    match condense_linked(&frame, linked_budget, &split) {
        Ok((linked, spilled)) => {
            if let Err(error) = check_condensed(&frame, linked_budget, &linked)
                .and_then(|()| check_spilled(&frame, &spilled))
                .and_then(|()| check_nothing_lost(&frame, &linked, &spilled))
            {
                panic!("linked: {error}");
            }
        }
        Err(error) => assert!(error.contains("cannot be cut"), "linked: {error}"),
    }
    let out = match outcome {
        Condensed::Cut { frame, .. } => frame,
        _ => frame,
    };
    // The transport path: a framer limited to the budget delivers it whole.
    let mut framer = Framer::new(Config::default().with_max_frame_bytes(budget));
    let mut events = Vec::new();
    let mut line = out.clone();
    line.push(b'\n');
    for chunk in line.chunks(usize::from(input.capture_head % 64) + 1) {
        framer.push(chunk, |e| events.push(OwnedEvent::from(e)));
        assert_memory_bound(&framer);
    }
    match &events[..] {
        [
            OwnedEvent::Frame {
                bytes, envelope, ..
            },
        ] => {
            assert_eq!(bytes, &out);
            assert_eq!(
                envelope.id,
                Some(OwnedId::Number(input.id.to_string().into_bytes()))
            );
        }
        other => {
            panic!("the condensed response is not one frame under a limit of {budget}: {other:?}")
        }
    }
}

/// Bounded capture against the plain stream it saw.
fn check_capture(input: &BudgetInput) {
    let budget = usize::from(input.budget);
    let mut capture = Capture::with_head(budget, usize::from(input.capture_head));
    let mut seen = Vec::new();
    for entry in &input.entries {
        let chunk = match entry {
            Entry::Text { .. } => entry.text().unwrap_or_default().into_bytes(),
            Entry::Item { path, line } => {
                // Raw bytes too: a line cut anywhere, inside a character.
                let bytes = path.as_bytes();
                bytes[..(*line as usize) % (bytes.len() + 1)].to_vec()
            }
            Entry::Block { uri } => uri.as_bytes().to_vec(),
        };
        capture.write(&chunk);
        seen.extend_from_slice(&chunk);
        check_capture_state(&capture, &seen, budget);
    }
    // Chunking does not matter: the whole stream at once gives the same view.
    let mut whole = Capture::with_head(budget, usize::from(input.capture_head));
    whole.write(&seen);
    assert_eq!(whole.head(), capture.head());
    assert_eq!(whole.tail(), capture.tail());
    assert_eq!(whole.report(), capture.report());
}

fn check_capture_state(capture: &Capture, seen: &[u8], budget: usize) {
    let report = capture.report();
    assert_eq!(report.seen, seen.len() as u64);
    assert_eq!(
        report.kept + report.dropped,
        report.seen,
        "kept + dropped != seen: {report:?}"
    );
    assert!(
        report.kept <= budget as u64,
        "kept {} over the budget {budget}",
        report.kept
    );
    assert_eq!(report.truncated, report.dropped > 0);
    assert_eq!(report.truncated, capture.truncated());
    let head = capture.head();
    let tail = capture.tail();
    assert!(seen.starts_with(head), "head is not a prefix of the stream");
    assert!(seen.ends_with(&tail), "tail is not a suffix of the stream");
    assert_eq!(
        (head.len() + tail.len()) as u64,
        report.kept,
        "kept != shown bytes"
    );
    if !report.truncated {
        assert_eq!(
            [head, &tail[..]].concat(),
            seen,
            "untruncated capture is not the whole stream"
        );
    }
    if core::str::from_utf8(seen).is_ok() {
        assert!(
            core::str::from_utf8(head).is_ok(),
            "head splits a character"
        );
        assert!(
            core::str::from_utf8(&tail).is_ok(),
            "tail splits a character"
        );
    }
}
