//! Host-side clipping: a complete response that is over an agent's budget
//! becomes a smaller valid response for the same id, with the same
//! truncation contract as [`ResultBuilder`].

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::ops::Range;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::{Map, Value};

use super::config::{BudgetError, Continuation, ResultConfig};
use super::result::{ResultBuilder, response_frame};
use super::wire::{escaped_len, value_wire_len};

/// Why a frame could not be clipped. One cause per variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClipError {
    /// The frame is not valid JSON; `at` is the byte offset where parsing
    /// failed (or where the failing value starts).
    Malformed {
        /// Byte offset in the frame.
        at: usize,
    },
    /// The frame is valid JSON but not an object.
    NotAnObject,
    /// The frame has a `method`: it is a request or a notification.
    NotAResponse,
    /// The frame is an error response: nothing to clip; pass it on (error
    /// responses are small unless the peer misbehaves, which the transport
    /// limit catches).
    ErrorResponse,
    /// The frame has neither `result`, `error` nor `method`.
    MissingResult,
    /// The response has no `id` to answer.
    MissingId,
    /// `id`, `result`, `error` or `jsonrpc` appears twice, so which one a
    /// peer would use is ambiguous.
    DuplicateMember,
    /// `result` is not a `tools/call` result: not an object, or `content`
    /// is not an array, or `structuredContent` is not an object.
    NotAToolResult,
    /// The budget cannot hold even an empty truncated response for this id;
    /// it needs at least `minimum` bytes.
    BudgetTooSmall {
        /// The smallest workable budget in bytes on the wire.
        minimum: usize,
    },
}

impl fmt::Display for ClipError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClipError::Malformed { at } => write!(f, "the frame is not valid JSON (at byte {at})"),
            ClipError::NotAnObject => f.write_str("the frame is not a JSON object"),
            ClipError::NotAResponse => {
                f.write_str("the frame is a request or notification, not a response")
            }
            ClipError::ErrorResponse => {
                f.write_str("the frame is an error response, which is never clipped")
            }
            ClipError::MissingResult => f.write_str("the frame has no result"),
            ClipError::MissingId => f.write_str("the response has no id"),
            ClipError::DuplicateMember => {
                f.write_str("the frame repeats id, result, error or jsonrpc")
            }
            ClipError::NotAToolResult => f.write_str("the result is not a tools/call result"),
            ClipError::BudgetTooSmall { minimum } => {
                write!(
                    f,
                    "the budget cannot hold a truncated response; at least {minimum} bytes are needed"
                )
            }
        }
    }
}

impl core::error::Error for ClipError {}

/// Clips a complete `tools/call` response frame (one JSON object, as
/// [`Frame::bytes`](crate::Frame::bytes) gives it) to at most
/// `budget_bytes` bytes on the wire. The budget protects the agent's context
/// and counts the whole output frame (without a newline).
///
/// A frame within the budget is checked and returned unchanged. Otherwise
/// the `result` is rebuilt with a [`ResultBuilder`]:
///
/// - content blocks in order, then the items of `structuredContent`'s largest
///   array member, each kept while it fits; the first text that does not
///   fit is cut at a character boundary and the rest is left out;
/// - the other members of `structuredContent` are kept whole (if they alone
///   exceed the budget, the error is [`ClipError::BudgetTooSmall`]);
/// - the text copy of `structuredContent` is regenerated from what was kept;
/// - the summary, `truncated`, `nextCursor` and `totalEstimate` follow the
///   builder's contract. A server's own `nextCursor` is replaced by
///   `continuation`'s (the server's would skip what was clipped); a
///   server's `totalEstimate` is kept unless `continuation` has one.
///
/// The output is `{"jsonrpc":…,"id":…,"result":…}` with `jsonrpc` and `id`
/// copied byte for byte. Result members other than `content`,
/// `structuredContent` and `isError` (e.g. `_meta`) and frame members other
/// than `jsonrpc`, `id` and `result` are not carried over.
///
/// The `result` is parsed with `serde_json`, so the nesting limit of a
/// clipped frame is `serde_json`'s (128 levels); the framer's
/// [`Config::with_max_depth`](crate::Config::with_max_depth) should be at
/// most that.
///
/// ```
/// use drainpipe_framer::budget::{Continuation, clip_response};
///
/// let text = "log line\n".repeat(10_000);
/// let frame = serde_json::to_vec(&serde_json::json!({
///     "jsonrpc": "2.0", "id": 41,
///     "result": {"content": [{"type": "text", "text": text}], "isError": false}
/// }))?;
/// let clipped = clip_response(&frame, 2048, &Continuation::none())?;
/// assert!(clipped.len() <= 2048);
/// let value: serde_json::Value = serde_json::from_slice(&clipped)?;
/// assert_eq!(value["id"], 41);
/// assert_eq!(value["result"]["structuredContent"]["truncated"], true);
/// assert!(value["result"]["content"][1]["text"].as_str().unwrap().starts_with("log line\n"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn clip_response(
    frame: &[u8],
    budget_bytes: usize,
    continuation: &Continuation,
) -> Result<Vec<u8>, ClipError> {
    let over_budget = frame.len() > budget_bytes;
    let envelope = scan_envelope(frame, over_budget)?;
    if !over_budget {
        return Ok(frame.to_vec());
    }
    let jsonrpc = envelope.jsonrpc.map(|span| &frame[span]);
    let id = &frame[envelope.id];
    let overhead = response_frame(jsonrpc, id, b"").len();
    let Some(Value::Object(result)) = envelope.result else {
        return Err(ClipError::NotAToolResult);
    };
    let plan = Plan::of(&result)?;
    let mut builder = match ResultBuilder::with_config(
        plan.config(budget_bytes.saturating_sub(overhead), continuation),
    ) {
        Ok(builder) => builder,
        Err(BudgetError::BudgetTooSmall { minimum, .. }) => {
            return Err(ClipError::BudgetTooSmall {
                minimum: minimum + overhead,
            });
        }
        Err(_) => return Err(ClipError::NotAToolResult),
    };
    for (index, block) in plan.content.iter().enumerate() {
        if Some(index) == plan.mirror {
            continue;
        }
        let pushed = match text_of_plain_text_block(block) {
            Some(text) => builder.push_text(text),
            None => builder.push_block(block),
        };
        if !pushed.keep_going() {
            break;
        }
    }
    if !builder.is_full() {
        for item in plan.items {
            if !builder.push_item(item).keep_going() {
                break;
            }
        }
    }
    let mut continuation = continuation.clone();
    continuation.total_estimate = continuation.total_estimate.or(plan.server_total);
    let result = builder
        .finish(continuation)
        .map_err(|_| ClipError::NotAToolResult)?;
    Ok(response_frame(jsonrpc, id, result.as_bytes()))
}

/// How a parsed result maps onto a [`ResultBuilder`].
struct Plan<'a> {
    content: &'a [Value],
    /// The content block that repeats `structuredContent` as text; the
    /// builder writes its own.
    mirror: Option<usize>,
    items_key: Option<&'a str>,
    items: &'a [Value],
    fields: Vec<(&'a str, &'a Value)>,
    is_error: bool,
    server_total: Option<u64>,
}

impl<'a> Plan<'a> {
    fn of(result: &'a Map<String, Value>) -> Result<Plan<'a>, ClipError> {
        let content = match result.get("content") {
            None => &[][..],
            Some(Value::Array(blocks)) => blocks.as_slice(),
            Some(_) => return Err(ClipError::NotAToolResult),
        };
        let structured = match result.get("structuredContent") {
            None => None,
            Some(Value::Object(members)) => Some(members),
            Some(_) => return Err(ClipError::NotAToolResult),
        };
        let mut plan = Plan {
            content,
            mirror: None,
            items_key: None,
            items: &[],
            fields: Vec::new(),
            is_error: result
                .get("isError")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            server_total: None,
        };
        let Some(structured) = structured else {
            return Ok(plan);
        };
        plan.mirror = content
            .iter()
            .position(|block| is_mirror_of(block, structured));
        plan.server_total = structured.get("totalEstimate").and_then(Value::as_u64);
        let largest_array = structured
            .iter()
            .filter_map(|(key, value)| {
                value
                    .as_array()
                    .map(|items| (key, items, value_wire_len(value)))
            })
            .max_by_key(|(_, _, len)| *len);
        if let Some((key, items, _)) = largest_array {
            plan.items_key = Some(key.as_str());
            plan.items = items.as_slice();
        }
        for (key, value) in structured {
            let reserved = ["truncated", "nextCursor", "totalEstimate"].contains(&key.as_str());
            if !reserved && Some(key.as_str()) != plan.items_key {
                plan.fields.push((key.as_str(), value));
            }
        }
        Ok(plan)
    }

    fn config(&self, result_budget: usize, continuation: &Continuation) -> ResultConfig {
        let cursor_len = continuation.next_cursor.as_deref().map_or(0, escaped_len);
        let mut config = ResultConfig::new(result_budget)
            .with_is_error(self.is_error)
            .with_max_cursor_bytes(cursor_len)
            .with_noun(if self.items_key.is_some() {
                "items"
            } else {
                "content blocks"
            });
        if let Some(key) = self.items_key {
            config = config.with_items_key(key);
        }
        for (key, value) in &self.fields {
            config = config.with_field(key, value);
        }
        config
    }
}

/// The text of `{"type":"text","text":…}` with no other members; a block
/// with annotations is kept whole or not at all rather than rebuilt.
fn text_of_plain_text_block(block: &Value) -> Option<&str> {
    let block = block.as_object()?;
    if block.len() != 2 || block.get("type")?.as_str()? != "text" {
        return None;
    }
    block.get("text")?.as_str()
}

fn is_mirror_of(block: &Value, structured: &Map<String, Value>) -> bool {
    let Some(text) = text_of_plain_text_block(block) else {
        return false;
    };
    if !text.trim_start().starts_with('{') {
        return false;
    }
    serde_json::from_str::<Map<String, Value>>(text).is_ok_and(|parsed| &parsed == structured)
}

/// The top-level members of a response that clipping needs.
struct Envelope {
    jsonrpc: Option<Range<usize>>,
    id: Range<usize>,
    /// Parsed only when the frame must be clipped.
    result: Option<Value>,
}

fn skip_whitespace(frame: &[u8], mut pos: usize) -> usize {
    while matches!(frame.get(pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        pos += 1;
    }
    pos
}

/// Parses one JSON value starting at `pos`; returns it and where it ends.
fn value_at<T: DeserializeOwned>(frame: &[u8], pos: usize) -> Result<(T, usize), ClipError> {
    let mut values = serde_json::Deserializer::from_slice(&frame[pos..]).into_iter::<T>();
    match values.next() {
        Some(Ok(value)) => Ok((value, pos + values.byte_offset())),
        Some(Err(error)) if error.line() == 1 => Err(ClipError::Malformed {
            at: pos + error.column().saturating_sub(1),
        }),
        _ => Err(ClipError::Malformed { at: pos }),
    }
}

/// Walks the top-level object member by member, recording raw spans, so
/// `id` and `jsonrpc` can be echoed byte for byte (a parsed number would
/// not survive as written).
fn scan_envelope(frame: &[u8], parse_result: bool) -> Result<Envelope, ClipError> {
    let mut pos = skip_whitespace(frame, 0);
    match frame.get(pos) {
        Some(b'{') => pos += 1,
        Some(_) => {
            // Valid JSON of another kind, or not JSON at all.
            value_at::<IgnoredAny>(frame, pos)?;
            return Err(ClipError::NotAnObject);
        }
        None => return Err(ClipError::Malformed { at: pos }),
    }
    let (mut jsonrpc, mut id, mut result, mut result_parsed) = (None, None, None, None);
    let (mut has_error, mut has_method) = (false, false);
    pos = skip_whitespace(frame, pos);
    if frame.get(pos) == Some(&b'}') {
        pos += 1;
    } else {
        loop {
            if frame.get(pos) != Some(&b'"') {
                return Err(ClipError::Malformed { at: pos });
            }
            let (key, end) = value_at::<String>(frame, pos)?;
            pos = skip_whitespace(frame, end);
            if frame.get(pos) != Some(&b':') {
                return Err(ClipError::Malformed { at: pos });
            }
            pos = skip_whitespace(frame, pos + 1);
            let start = pos;
            let end = if key == "result" && parse_result {
                let (value, end) = value_at::<Value>(frame, pos)?;
                result_parsed = Some(value);
                end
            } else {
                value_at::<IgnoredAny>(frame, pos)?.1
            };
            let slot = match key.as_str() {
                "jsonrpc" => Some(&mut jsonrpc),
                "id" => Some(&mut id),
                "result" => Some(&mut result),
                "error" if has_error => return Err(ClipError::DuplicateMember),
                "error" => {
                    has_error = true;
                    None
                }
                "method" => {
                    has_method = true;
                    None
                }
                _ => None,
            };
            if let Some(slot) = slot
                && slot.replace(start..end).is_some()
            {
                return Err(ClipError::DuplicateMember);
            }
            pos = skip_whitespace(frame, end);
            match frame.get(pos) {
                Some(b',') => pos = skip_whitespace(frame, pos + 1),
                Some(b'}') => {
                    pos += 1;
                    break;
                }
                _ => return Err(ClipError::Malformed { at: pos }),
            }
        }
    }
    pos = skip_whitespace(frame, pos);
    if pos != frame.len() {
        return Err(ClipError::Malformed { at: pos });
    }
    if has_method {
        return Err(ClipError::NotAResponse);
    }
    if result.is_none() {
        return Err(if has_error {
            ClipError::ErrorResponse
        } else {
            ClipError::MissingResult
        });
    }
    if has_error {
        // Both `result` and `error`: JSON-RPC forbids it, and clipping would
        // hide the error.
        return Err(ClipError::ErrorResponse);
    }
    let id = id.ok_or(ClipError::MissingId)?;
    Ok(Envelope {
        jsonrpc,
        id,
        result: result_parsed,
    })
}
