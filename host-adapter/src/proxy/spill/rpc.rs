//! The MCP side of spilling: the requests the proxy answers itself
//! (`resources/read` of its own URIs, the `drainpipe_read` tool, and every
//! resource method when it is the proxy that announced resources), and the
//! insertions into what the server announces (`drainpipe_read` in
//! `tools/list`, the `resources` capability), spliced into the server's
//! bytes.

use regex::bytes::RegexBuilder;
use serde_json::{Map, Value, json};

use super::read::{Lookup, parse_uri, shown, value_uri};
use super::{SpillStore, URI_PREFIX};
use drainpipe_framer::budget::SpillKind;
use drainpipe_framer::splice::{Span, Splice};

/// The tool's name.
pub(crate) const READ_TOOL: &str = "drainpipe_read";
/// The `_meta` key of the next page's URI.
pub(crate) const NEXT_KEY: &str = "io.drainpipe/next";
/// The `_meta` key of the range a read covered.
pub(crate) const RANGE_KEY: &str = "io.drainpipe/range";
/// "Resource not found" in the 2025 revisions; 2026-07-28 uses invalid
/// params.
const RESOURCE_NOT_FOUND: i64 = -32002;
const INVALID_PARAMS: i64 = -32602;
const METHOD_NOT_FOUND: i64 = -32601;
/// Bytes of a response kept for all but the text: the envelope, the URIs
/// (at most ~120 bytes each), `_meta`, a notice.
const OVERHEAD: usize = 2048;
/// The longest pattern taken, and the memory its compiled form may use.
const MAX_PATTERN: usize = 1024;
const PATTERN_MEMORY: usize = 4 << 20;

/// A request the proxy answers itself.
#[derive(Debug)]
pub(crate) enum Own {
    /// `resources/read` of a `drainpipe:` URI, or of any URI when the
    /// proxy announced the resources.
    ReadResource { uri: String, modern: bool },
    /// `tools/call` of `drainpipe_read`.
    ReadTool { arguments: Value, modern: bool },
    /// `resources/list` when the proxy announced the resources: the values
    /// it keeps now, a page at a time.
    ListResources {
        cursor: Option<String>,
        modern: bool,
    },
    /// `resources/templates/list` when the proxy announced the resources:
    /// it has none.
    ListTemplates { modern: bool },
    /// `resources/subscribe` or `resources/unsubscribe` when the proxy
    /// announced the resources: not offered (the capability it adds does
    /// not say `subscribe`, and a kept value never changes).
    Subscribe { modern: bool },
}

/// Whether the request `frame` (`method`) is one the proxy answers itself.
/// `server_tool`: the server has its own `drainpipe_read`;
/// `resources_added`: the server announced no resources and the proxy did,
/// so every resource method is the proxy's (none reaches a server that did
/// not announce it). Everything else goes to the server as it is.
pub(crate) fn own_request(
    method: &[u8],
    frame: &[u8],
    server_tool: bool,
    resources_added: bool,
) -> Option<Own> {
    // Looked for as written: a JSON writer may escape the URI's slashes.
    let wanted: &[u8] = match method {
        b"resources/read"
        | b"resources/list"
        | b"resources/templates/list"
        | b"resources/subscribe"
        | b"resources/unsubscribe"
            if resources_added =>
        {
            b""
        }
        b"resources/read" => b"drainpipe:",
        b"tools/call" if !server_tool => READ_TOOL.as_bytes(),
        _ => return None,
    };
    memchr::memmem::find(frame, wanted)?;
    let message: Value = serde_json::from_slice(frame).ok()?;
    let params = message.get("params");
    // 2026-07-28: the request carries the protocol envelope; the answer
    // then carries `resultType`.
    let modern = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
        .is_some();
    let text = |key: &str| params.and_then(|p| p.get(key)).and_then(Value::as_str);
    match method {
        b"resources/read" => {
            let uri = text("uri").unwrap_or_default();
            (resources_added || uri.starts_with(URI_PREFIX)).then(|| Own::ReadResource {
                uri: uri.to_string(),
                modern,
            })
        }
        b"resources/list" => Some(Own::ListResources {
            cursor: text("cursor").map(str::to_string),
            modern,
        }),
        b"resources/templates/list" => Some(Own::ListTemplates { modern }),
        b"resources/subscribe" | b"resources/unsubscribe" => Some(Own::Subscribe { modern }),
        _ => (text("name")? == READ_TOOL).then(|| Own::ReadTool {
            arguments: params
                .and_then(|p| p.get("arguments"))
                .cloned()
                .unwrap_or(Value::Null),
            modern,
        }),
    }
}

/// The response line (with its newline) to `own`, request `id` (its JSON
/// token), within `budget` bytes. Reads files: call off the reactor.
pub(crate) fn answer(store: &SpillStore, own: Own, id: &[u8], budget: usize) -> Vec<u8> {
    let max_wire = budget.saturating_sub(OVERHEAD).max(1024);
    let (outcome, modern, cacheable) = match own {
        Own::ReadResource { uri, modern } => (read_resource(store, &uri, max_wire), modern, true),
        Own::ReadTool { arguments, modern } => {
            (Ok(read_tool(store, &arguments, max_wire)), modern, false)
        }
        Own::ListResources { cursor, modern } => (
            list_resources(store, cursor.as_deref(), max_wire),
            modern,
            true,
        ),
        Own::ListTemplates { modern } => (Ok(json!({"resourceTemplates": []})), modern, true),
        Own::Subscribe { modern } => (
            Err((
                METHOD_NOT_FOUND,
                "resource subscriptions are not offered: drainpipe announced the resources only to serve the values it keeps, and a kept value never changes".into(),
                json!({}),
            )),
            modern,
            false,
        ),
    };

    let mut line = Vec::with_capacity(1024);
    line.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    line.extend_from_slice(id);
    match outcome {
        Ok(mut result) => {
            if modern && let Some(object) = result.as_object_mut() {
                object.insert("resultType".into(), json!("complete"));
                // 2026-07-28 requires caching advice on cacheable results
                // (`resources/read`): a page is for this session only, and
                // its value may be evicted, so nobody keeps it.
                if cacheable {
                    object.insert("ttlMs".into(), json!(0));
                    object.insert("cacheScope".into(), json!("private"));
                }
            }
            line.extend_from_slice(b",\"result\":");
            let _ = serde_json::to_writer(&mut line, &result);
        }
        Err((code, message, data)) => {
            // 2026-07-28 answers a missing resource with invalid params;
            // the 2025 revisions with their own code.
            let code = if modern && code == RESOURCE_NOT_FOUND {
                INVALID_PARAMS
            } else {
                code
            };
            line.extend_from_slice(b",\"error\":");
            let error = json!({"code": code, "message": message, "data": data});
            let _ = serde_json::to_writer(&mut line, &error);
        }
    }
    line.extend_from_slice(b"}\n");
    line
}

/// An error answer: its code, message and `data`.
type Failure = (i64, String, Value);

/// Values listed on one `resources/list` page, at most.
const LIST_PAGE: usize = 100;

/// `resources/list`: the values kept now, oldest first, a page at a time
/// (within `max_wire` bytes and [`LIST_PAGE`] values). The cursor names
/// the last value of the page before, so a value evicted in between moves
/// no other one onto another page.
fn list_resources(
    store: &SpillStore,
    cursor: Option<&str>,
    max_wire: usize,
) -> Result<Value, Failure> {
    let after = match cursor {
        None => None,
        Some(cursor) => Some(parse_cursor(cursor).ok_or_else(|| {
            (
                INVALID_PARAMS,
                format!("{}: not a cursor of this proxy", shown(cursor, MAX_ECHO)),
                json!({"cursor": shown(cursor, MAX_ECHO)}),
            )
        })?),
    };
    let mut resources = Vec::new();
    let mut used = 64;
    let mut last: Option<(u64, String)> = None;
    let mut more = false;
    for listed in store.listing() {
        if after
            .as_ref()
            .is_some_and(|(file, name)| (listed.file, &listed.name) <= (*file, name))
        {
            continue;
        }
        let resource = json!({
            "uri": value_uri(&listed.name, None),
            "name": format!("drainpipe result {}", listed.name),
            "mimeType": listed.mime,
            "size": listed.size,
        });
        let len = resource.to_string().len() + 1;
        if resources.len() == LIST_PAGE || used + len > max_wire {
            more = true;
            break;
        }
        used += len;
        resources.push(resource);
        last = Some((listed.file, listed.name));
    }
    let next = last
        .filter(|_| more)
        .map(|(file, name)| format!("{file}:{name}"));
    let mut result = json!({ "resources": resources });
    if let Some(next) = next {
        result["nextCursor"] = json!(next);
    }
    Ok(result)
}

/// The cursor `<file>:<name>` of a `resources/list` page.
fn parse_cursor(cursor: &str) -> Option<(u64, String)> {
    let (file, name) = cursor.split_once(':')?;
    (name.len() <= 64).then(|| Some((file.parse().ok()?, name.to_string())))?
}

/// `resources/read`: one page, and the next page's URI.
fn read_resource(store: &SpillStore, uri: &str, max_wire: usize) -> Result<Value, Failure> {
    let echoed = shown(uri, MAX_ECHO);
    let not_found = |why: &str| {
        (
            RESOURCE_NOT_FOUND,
            format!("{echoed}: {why}"),
            json!({"uri": echoed}),
        )
    };
    let Some((name, offset)) = parse_uri(uri) else {
        return Err(not_found("not a drainpipe result URI"));
    };
    let mut value = match store.lookup(name) {
        Lookup::Found(value) => value,
        Lookup::Evicted => return Err(not_found(EVICTED)),
        Lookup::Unknown => return Err(not_found(UNKNOWN)),
    };
    // Answered with the URI as this proxy writes it: bounded, whatever
    // spelling the host used.
    let uri = value_uri(name, offset);
    let uri = uri.as_str();
    let offset = offset.unwrap_or(0);
    let io = |e: std::io::Error| {
        (
            -32603,
            format!("{uri}: reading it failed: {e}"),
            json!({"uri": uri}),
        )
    };
    let (content, next) = match value.kind {
        SpillKind::Binary => {
            let (blob, at, len) = value.blob(offset, value.size, max_wire).map_err(io)?;
            (
                json!({"uri": uri, "mimeType": value.mime, "blob": blob}),
                at + len,
            )
        }
        _ => {
            let text = value.text(offset, value.size, max_wire).map_err(io)?;
            (
                json!({"uri": uri, "mimeType": value.mime, "text": text.text}),
                text.offset + text.len,
            )
        }
    };
    let mut result = json!({"contents": [content]});
    let mut meta = Map::new();
    if next < value.size && next > offset.min(value.size) {
        meta.insert(
            NEXT_KEY.into(),
            json!(format!("{URI_PREFIX}{name}?offset={next}")),
        );
    }
    meta.insert(RANGE_KEY.into(), json!({"offset": offset.min(value.size), "length": next.saturating_sub(offset.min(value.size)), "size": value.size}));
    result["_meta"] = Value::Object(meta);
    Ok(result)
}

/// The most of a peer's URI echoed in an answer.
const MAX_ECHO: usize = 200;
const EVICTED: &str =
    "this value was evicted to keep the spill store within its quota (drainpipe proxy --spill-max)";
const UNKNOWN: &str =
    "no such value in this proxy (values live as long as the proxy that cut them)";

/// `drainpipe_read`: a byte range, or the lines matching a pattern. Errors
/// are tool errors, so the agent sees them.
fn read_tool(store: &SpillStore, arguments: &Value, max_wire: usize) -> Value {
    let tool_error =
        |text: String| json!({"content": [{"type": "text", "text": text}], "isError": true});
    let Some(uri) = arguments.get("uri").and_then(Value::as_str) else {
        return tool_error(
            "drainpipe_read needs `uri`: the uri of a resource_link in a cut result".into(),
        );
    };
    let number = |key: &str| -> Result<Option<u64>, String> {
        match arguments.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| format!("`{key}` must be a whole number of bytes, 0 or more")),
        }
    };
    let (offset, length) = match (number("offset"), number("length")) {
        (Ok(offset), Ok(length)) => (offset, length),
        (Err(e), _) | (_, Err(e)) => return tool_error(e),
    };
    let pattern = match arguments.get("pattern") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) => Some(p.as_str()),
        Some(_) => return tool_error("`pattern` must be a string (a regular expression)".into()),
    };
    let Some((name, page)) = parse_uri(uri) else {
        return tool_error(format!(
            "{}: not a drainpipe result URI (drainpipe://result/...)",
            shown(uri, MAX_ECHO)
        ));
    };
    let uri = value_uri(name, None);
    let uri = uri.as_str();

    let mut value = match store.lookup(name) {
        Lookup::Found(value) => value,
        Lookup::Evicted => return tool_error(format!("{uri}: {EVICTED}")),
        Lookup::Unknown => return tool_error(format!("{uri}: {UNKNOWN}")),
    };
    let offset = offset.or(page).unwrap_or(0);
    let end = match length {
        Some(length) => offset.saturating_add(length),
        None => value.size,
    };
    let io = |e: std::io::Error| tool_error(format!("{uri}: reading it failed: {e}"));
    if let Some(pattern) = pattern {
        if value.kind == SpillKind::Binary {
            return tool_error(format!(
                "{uri}: a pattern searches text; this value is binary ({})",
                value.mime
            ));
        }
        if pattern.len() > MAX_PATTERN {
            return tool_error(format!("the pattern is longer than {MAX_PATTERN} bytes"));
        }
        let regex = match RegexBuilder::new(pattern)
            .size_limit(PATTERN_MEMORY)
            .dfa_size_limit(PATTERN_MEMORY)
            .build()
        {
            Ok(regex) => regex,
            Err(e) => {
                return tool_error(format!(
                    "the pattern is not a regular expression this tool takes: {e}"
                ));
            }
        };
        let (lines, found, more) = match value.search(&regex, offset, end, max_wire) {
            Ok(found) => found,
            Err(e) => return io(e),
        };
        let mut text = lines;
        if found == 0 {
            text.push_str(&format!(
                "[drainpipe] no line matches between bytes {offset} and {}\n",
                end.min(value.size)
            ));
        }
        if let Some(after) = more {
            text.push_str(&format!(
                "[drainpipe] more matches after byte {after}: call again with offset {after}\n"
            ));
        }
        return json!({
            "content": [{"type": "text", "text": text}],
            "_meta": {RANGE_KEY: {"offset": offset, "matches": found, "size": value.size, "next": more}},
        });
    }
    if value.kind == SpillKind::Binary {
        let (blob, at, len) = match value.blob(offset, end, max_wire) {
            Ok(read) => read,
            Err(e) => return io(e),
        };
        return json!({
            "content": [{"type": "resource", "resource": {"uri": uri, "mimeType": value.mime, "blob": blob}}],
            "_meta": {RANGE_KEY: {"offset": at, "length": len, "size": value.size}},
        });
    }
    let text = match value.text(offset, end, max_wire) {
        Ok(text) => text,
        Err(e) => return io(e),
    };
    let wanted_end = end.min(value.size);
    let mut content = vec![json!({"type": "text", "text": text.text})];
    let reached = text.offset + text.len;
    if reached < wanted_end && reached + 4 <= wanted_end {
        content.push(json!({"type": "text", "text": format!(
            "[drainpipe] range shortened to {} bytes to fit the budget; continue at offset {reached} (the value has {} bytes)",
            text.len, value.size
        )}));
    }
    json!({
        "content": content,
        "_meta": {RANGE_KEY: {"offset": text.offset, "length": text.len, "size": value.size}},
    })
}

/// The tool the proxy adds to `tools/list`, as it goes on the wire: its
/// members in the order a host shows them (`name` first, the arguments in
/// the order they are best given).
pub(crate) const READ_TOOL_DEFINITION: &str = concat!(
    r#"{"name":"drainpipe_read","title":"Read the rest of a cut result","#,
    r#""description":"Reads the full value of something drainpipe cut from a tool result to fit the context budget: pass the uri of its resource_link (drainpipe://result/...). Without pattern: the text from byte offset (default 0), at most length bytes (default: as much as fits). With pattern (a regular expression): the matching lines, each with its byte offset.","#,
    r#""inputSchema":{"type":"object","properties":{"#,
    r#""uri":{"type":"string","description":"The uri of a resource_link in a cut result."},"#,
    r#""offset":{"type":"integer","minimum":0,"description":"Byte offset in the UTF-8 text to start at (moved back to a character start)."},"#,
    r#""length":{"type":"integer","minimum":1,"description":"Bytes to read, or to search with pattern."},"#,
    r#""pattern":{"type":"string","description":"A regular expression (Rust regex syntax): return the matching lines with their byte offsets."}"#,
    r#"},"required":["uri"]},"#,
    r#""annotations":{"readOnlyHint":true,"idempotentHint":true,"openWorldHint":false}}"#
);

/// What adding the tool to a `tools/list` response came to.
#[derive(Debug)]
pub(crate) enum ToolsList {
    /// The new response line (without a newline): the server's bytes with
    /// the tool appended to `tools`.
    Added(Vec<u8>),
    /// The server has a tool of that name: left alone.
    ServerHasOne,
    /// Not the last page, or not a list result: forwarded as it is.
    Unchanged,
}

/// Adds `drainpipe_read` to a `tools/list` response on its last page, by
/// splicing: every byte the server wrote stays as it was (its member
/// order, number spellings, escapes, whitespace, duplicates, its id).
pub(crate) fn add_read_tool(frame: &[u8]) -> ToolsList {
    let Some(result) = result_of(frame) else {
        return ToolsList::Unchanged;
    };
    let last_page = result
        .member(frame, "nextCursor")
        .is_none_or(|cursor| cursor.is_null(frame));
    let Some(tools) = result
        .member(frame, "tools")
        .filter(|tools| tools.is_array(frame))
    else {
        return ToolsList::Unchanged;
    };
    if tools.elements(frame).any(|tool| {
        tool.member(frame, "name")
            .is_some_and(|name| name.is(frame, READ_TOOL))
    }) {
        // On any page: the server's own tool of that name wins.
        return ToolsList::ServerHasOne;
    }
    if !last_page {
        return ToolsList::Unchanged;
    }
    let mut splice = Splice::new();
    splice.append_element(frame, tools, READ_TOOL_DEFINITION.as_bytes());
    ToolsList::Added(splice.apply(frame))
}

/// What the server's `initialize` or `server/discover` result says.
#[derive(Debug, Default)]
pub(crate) struct Handshake {
    /// The server's line with `"resources":{}` spliced into its
    /// capabilities, if it announced no resources: the proxy then serves
    /// the resource methods itself ([`own_request`]).
    pub(crate) line: Option<Vec<u8>>,
    /// The protocol revision it settled on (`initialize`), if it says.
    pub(crate) protocol: Option<String>,
}

/// Reads a handshake result and splices `"resources":{}` into its
/// capabilities (`"capabilities":{"resources":{}}` into the result if it
/// has none) when it announces no resources.
pub(crate) fn handshake(frame: &[u8]) -> Handshake {
    let result = result_of(frame);
    let protocol = result
        .and_then(|r| r.member(frame, "protocolVersion"))
        .and_then(|v| v.string(frame))
        .map(|v| v.into_owned());
    let line = result.and_then(|result| {
        let mut splice = Splice::new();
        match result.member(frame, "capabilities") {
            None => splice.append_member(frame, result, "capabilities", br#"{"resources":{}}"#),
            Some(capabilities) if capabilities.is_object(frame) => {
                if capabilities.member(frame, "resources").is_some() {
                    return None;
                }
                splice.append_member(frame, capabilities, "resources", b"{}");
            }
            Some(_) => return None,
        }
        Some(splice.apply(frame))
    });
    Handshake { line, protocol }
}

/// Whether a protocol revision has `resource_link` (2025-06-18 and later;
/// revisions are dates, so their text sorts in order).
pub(crate) fn has_resource_links(revision: &str) -> bool {
    revision >= "2025-06-18"
}

/// The `result` of a response, if it is an object (the last `result`
/// member, as `JSON.parse` reads duplicates).
fn result_of(frame: &[u8]) -> Option<Span> {
    Span::whole(frame)?
        .member(frame, "result")
        .filter(|result| result.is_object(frame))
}

#[cfg(test)]
mod tests;
