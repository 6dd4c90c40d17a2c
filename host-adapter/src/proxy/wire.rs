//! The few messages the proxy writes itself, and the id of a rejected line
//! recovered from its end.

/// JSON-RPC error code for a message over the transport limit
/// (implementation-defined server-error range).
pub const TOO_LARGE: i64 = -32001;
/// JSON-RPC error code for a server that ended without answering.
pub const SERVER_GONE: i64 = -32002;
/// JSON-RPC error code for a result over the content budget that could not be
/// clipped.
pub const OVER_BUDGET: i64 = -32003;
/// JSON-RPC's own code for an unparseable message.
pub const PARSE_ERROR: i64 = -32700;

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

/// Bytes of a rejected line's end kept to look for an `id` written after the
/// transport limit (as serialisers that put `id` last do).
pub(crate) const TAIL_BYTES: usize = 256;

/// The id token of a line whose end is `tail`, if the line ends with a
/// top-level `"id":<number or string>}`. A heuristic: the caller only trusts
/// it when the token is a request it is waiting for.
pub(crate) fn id_at_end(tail: &[u8]) -> Option<&[u8]> {
    let tail = trim_end(tail);
    let body = tail.strip_suffix(b"}")?;
    let body = trim_end(body);
    let token_start = if body.ends_with(b"\"") {
        // A string id: find its opening quote (ids with escaped quotes are
        // not recovered).
        let inner = &body[..body.len() - 1];
        memchr::memrchr(b'"', inner)?
    } else {
        body.iter()
            .rposition(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))?
            + 1
    };
    let token = &body[token_start..];
    if token.is_empty() {
        return None;
    }
    let key = trim_end(&body[..token_start]).strip_suffix(b":")?;
    let key = trim_end(key).strip_suffix(b"\"id\"")?;
    // `\"id\"` would be text inside a string, not a key.
    if key.ends_with(b"\\") {
        return None;
    }
    matches!(trim_end(key).last(), Some(b',' | b'{')).then_some(token)
}

fn trim_end(bytes: &[u8]) -> &[u8] {
    let end = bytes
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\r'))
        .map_or(0, |at| at + 1);
    &bytes[..end]
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
    fn the_id_is_found_only_as_the_last_top_level_member() {
        let cases: &[(&[u8], Option<&[u8]>)] = &[
            (b"xxxxx\"}]},\"id\":41}", Some(b"41")),
            (b"xxxxx\"}]}, \"id\" : \"abc\" }\r", Some(b"\"abc\"")),
            (b"{\"id\":-7}", Some(b"-7")),
            (b"xxxxx\"}]}}", None),
            (b"xxx\"id\":5}}", None),
            (b"text \\\"id\\\":5}", None),
            (b"xxx\"uid\":5}", None),
            (b"xxx,\"id\":}", None),
            (b"", None),
        ];
        for (tail, expected) in cases {
            assert_eq!(
                id_at_end(tail),
                *expected,
                "{}",
                String::from_utf8_lossy(tail)
            );
        }
    }
}
