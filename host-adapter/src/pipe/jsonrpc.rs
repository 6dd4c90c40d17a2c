//! The JSON-RPC lines drainpipe writes itself (answers to requests it
//! refuses, fails or serves), and their error codes: one table for the
//! session and the proxy.

use drainpipe_framer::owned::OwnedId;

// drainpipe's own codes. JSON-RPC 2.0 reserves -32768 to -32000; MCP names
// -32002 (resource not found) and -32042, revision 2026-07-28 keeps -32020
// to -32099 for the specification's own codes and calls -32000 to -32019 a
// legacy range that new errors must not use; the TypeScript SDK names
// -32000 (`ConnectionClosed`) and -32001 (`RequestTimeout`). Outside that
// whole range a code means one thing: drainpipe's own codes are -31000 to
// -31004 (what they were, plus 1000), and every error drainpipe writes with
// one of them carries `data.drainpipe.reason` (see `reason`). The README's
// code table lists them with what a host sees.

/// The session answers a server's request with this when it has no room to
/// dispatch it.
pub(crate) const HOST_BUSY: i64 = -31000;
/// A message over the transport limit: the request it answered (or the
/// request itself) failed, nothing of it was parsed.
pub const TOO_LARGE: i64 = -31001;
/// The server ended, or its output ended inside the answer, without
/// answering.
pub const SERVER_GONE: i64 = -31002;
/// A result over the content budget that could not be condensed into it.
pub const OVER_BUDGET: i64 = -31003;
/// A request the proxy cannot take now (too many of its kind waiting); the
/// host may try again.
pub const SERVER_BUSY: i64 = -31004;
/// An answer its client did not read in time: `serve` queued as much for
/// that client's stream as it may hold, and the answer was dropped.
pub const UNREAD: i64 = -31005;
/// JSON-RPC's own code for an unparseable message.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's own code for a message that is not a valid request (here: a
/// batch).
pub const INVALID_REQUEST: i64 = -32600;

/// `data.drainpipe.reason` of one of drainpipe's own codes: a stable word
/// a host can branch on (`None` for JSON-RPC's codes, which carry no data
/// from drainpipe).
pub fn reason(code: i64) -> Option<&'static str> {
    Some(match code {
        HOST_BUSY => "host-busy",
        TOO_LARGE => "too-large",
        SERVER_GONE => "server-gone",
        OVER_BUDGET => "over-budget",
        SERVER_BUSY => "busy",
        UNREAD => "unread",
        _ => return None,
    })
}

/// The error object `{"code":…,"message":…}`, with
/// `"data":{"drainpipe":{"reason":…,<sizes>}}` when `code` is drainpipe's
/// own. `sizes` are numbers in bytes (`limitBytes`, `originalBytes`).
pub(crate) fn error_object(code: i64, message: &str, sizes: &[(&str, u64)]) -> serde_json::Value {
    let mut error = serde_json::json!({ "code": code, "message": message });
    if let Some(reason) = reason(code) {
        let mut detail = serde_json::Map::new();
        detail.insert("reason".into(), reason.into());
        for (name, size) in sizes {
            detail.insert((*name).into(), (*size).into());
        }
        error["data"] = serde_json::json!({ "drainpipe": detail });
    }
    error
}

/// `{"jsonrpc":"2.0","id":<id>,"error":{"code":…,"message":…}}` and a newline;
/// `id` is the raw JSON token, echoed byte for byte.
pub(crate) fn error_line(id: &[u8], code: i64, message: &str) -> Vec<u8> {
    sized_error_line(id, code, message, &[])
}

/// [`error_line`] with the sizes that explain it in `data.drainpipe`.
pub(crate) fn sized_error_line(
    id: &[u8],
    code: i64,
    message: &str,
    sizes: &[(&str, u64)],
) -> Vec<u8> {
    let mut line = b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec();
    line.extend_from_slice(id);
    line.extend_from_slice(b",\"error\":");
    let error = error_object(code, message, sizes);
    serde_json::to_writer(&mut line, &error).expect("a JSON value serialises");
    line.extend_from_slice(b"}\n");
    line
}

/// An answer to the request `id` (its raw JSON token, echoed byte for
/// byte): `{"jsonrpc":"2.0","id":<id>,"result":…}` or `…,"error":{…}}`, and
/// a newline.
pub(crate) fn answer_line(id: &[u8], answer: Result<serde_json::Value, (i64, String)>) -> Vec<u8> {
    let mut line = b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec();
    line.extend_from_slice(id);
    let body = match answer {
        Ok(result) => serde_json::json!({ "result": result }),
        Err((code, message)) => serde_json::json!({ "error": error_object(code, &message, &[]) }),
    };
    let body = serde_json::to_vec(&body).expect("a JSON value serialises");
    // `body` is `{"result":…}` / `{"error":…}`: splice its members after the id.
    line.push(b',');
    line.extend_from_slice(&body[1..]);
    line.push(b'\n');
    line
}

/// [`answer_line`] for a parsed id.
pub(crate) fn response_line(
    id: &OwnedId,
    answer: Result<serde_json::Value, (i64, String)>,
) -> Vec<u8> {
    answer_line(&id.as_id().to_json(), answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_lines_echo_the_id_and_parse() {
        let line = error_line(b"\"a\\\"b\"", TOO_LARGE, "too \"large\"");
        let value: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(value["id"], "a\"b");
        assert_eq!(value["error"]["code"], TOO_LARGE);
        assert_eq!(value["error"]["message"], "too \"large\"");
        assert_eq!(value["error"]["data"]["drainpipe"]["reason"], "too-large");
        assert!(line.ends_with(b"}\n"));
        let line = sized_error_line(b"1", OVER_BUDGET, "m", &[("limitBytes", 9)]);
        let value: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            value["error"]["data"],
            serde_json::json!({"drainpipe": {"reason": "over-budget", "limitBytes": 9}})
        );
        let line = error_line(b"1", PARSE_ERROR, "m");
        let value: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert!(value["error"].get("data").is_none());
    }

    /// Named codes of JSON-RPC 2.0, of MCP (every revision, 2026-07-28's
    /// reserved ranges included) and of the official SDKs.
    #[test]
    fn our_codes_collide_with_no_named_code() {
        let ours = [HOST_BUSY, TOO_LARGE, SERVER_GONE, OVER_BUDGET, SERVER_BUSY];
        for (i, code) in ours.iter().enumerate() {
            // JSON-RPC's reserved range covers every code named by JSON-RPC,
            // MCP and the SDKs (-32700 to -32600, -32099 to -32000).
            assert!(!(-32768..=-32000).contains(code), "{code}");
            assert!(reason(*code).is_some(), "{code} has no reason");
            assert!(!ours[i + 1..].contains(code), "{code} twice");
        }
    }

    #[test]
    fn answers_carry_a_result_or_an_error() {
        let id = OwnedId::Number(b"7".to_vec());
        let line = response_line(&id, Ok(serde_json::json!({"ok": true})));
        assert_eq!(
            line,
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}\n"
        );
        let line = response_line(&id, Err((HOST_BUSY, "busy".into())));
        assert_eq!(
            line,
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-31000,\"data\":{\"drainpipe\":{\"reason\":\"host-busy\"}},\"message\":\"busy\"}}\n"
        );
    }
}
