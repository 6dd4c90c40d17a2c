//! The JSON-RPC lines drainpipe writes itself (answers to requests it
//! refuses, fails or serves), and their error codes: one table for the
//! session and the proxy.

use drainpipe_framer::owned::OwnedId;

/// JSON-RPC error code the session answers a server request with when it
/// has no room to dispatch it (implementation-defined server-error range).
pub(crate) const HOST_BUSY: i64 = -32000;
/// JSON-RPC error code for a message over the transport limit
/// (implementation-defined server-error range).
pub const TOO_LARGE: i64 = -32001;
/// JSON-RPC error code for a server that ended without answering.
pub const SERVER_GONE: i64 = -32002;
/// JSON-RPC error code for a result over the content budget that could not be
/// clipped.
pub const OVER_BUDGET: i64 = -32003;
/// JSON-RPC error code for a request the proxy cannot take now (too many of
/// its kind waiting); the host may try again.
pub const SERVER_BUSY: i64 = -32004;
/// JSON-RPC's own code for an unparseable message.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's own code for a message that is not a valid request (here: a
/// batch).
pub const INVALID_REQUEST: i64 = -32600;

/// `{"jsonrpc":"2.0","id":<id>,"error":{"code":…,"message":…}}` and a newline;
/// `id` is the raw JSON token, echoed byte for byte.
pub(crate) fn error_line(id: &[u8], code: i64, message: &str) -> Vec<u8> {
    answer_line(id, Err((code, message.to_string())))
}

/// An answer to the request `id` (its raw JSON token, echoed byte for
/// byte): `{"jsonrpc":"2.0","id":<id>,"result":…}` or `…,"error":{…}}`, and
/// a newline.
pub(crate) fn answer_line(id: &[u8], answer: Result<serde_json::Value, (i64, String)>) -> Vec<u8> {
    let mut line = b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec();
    line.extend_from_slice(id);
    let body = match answer {
        Ok(result) => serde_json::json!({ "result": result }),
        Err((code, message)) => {
            serde_json::json!({ "error": { "code": code, "message": message } })
        }
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
        assert!(line.ends_with(b"}\n"));
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
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32000,\"message\":\"busy\"}}\n"
        );
    }
}
