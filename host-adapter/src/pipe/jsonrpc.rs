//! The few messages the proxy writes itself.

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
    let mut line = b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec();
    line.extend_from_slice(id);
    line.extend_from_slice(b",\"error\":");
    let error = serde_json::json!({ "code": code, "message": message });
    line.extend_from_slice(&serde_json::to_vec(&error).expect("a JSON value serialises"));
    line.extend_from_slice(b"}\n");
    line
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
}
