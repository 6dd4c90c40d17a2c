//! Requests of the 2026-07-28 revision, which keeps no session: each
//! request carries its revision and the client's capabilities in `_meta`,
//! names its revision in the `MCP-Protocol-Version` header too, and learns
//! from the HTTP status how it was refused.
//!
//! The child sees only the message (stdio has no headers), so what the
//! revision makes the HTTP server's to check is checked here: the `_meta`
//! a request must carry (400, `-32602`), and the header agreeing with it
//! (400, `-32020`). The child's refusals get the status the revision
//! gives their code (`status_of`).

use hyper::StatusCode;
use hyper::header::HeaderMap;
use serde_json::Value;

use super::http::error_for;

/// The revision's `_meta` keys.
const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// The revisions that keep a session (`initialize`, `Mcp-Session-Id`).
const SESSION_REVISIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// `-32602`: the request lacks what the revision requires of it.
const INVALID_PARAMS: i64 = -32602;
/// `-32020`: the header and the request disagree.
const HEADER_MISMATCH: i64 = -32020;

/// Whether a POST with no session is of a revision that keeps none: its
/// header names one that is not a session revision, or a request carries
/// a revision in its `_meta`.
pub(crate) fn is_stateless(headers: &HeaderMap, messages: &[Value]) -> bool {
    let header = protocol_header(headers);
    header.is_some_and(|v| !SESSION_REVISIONS.contains(&v))
        || messages.iter().any(|m| version_of(m).is_some())
}

/// A request refused before it reaches the child.
pub(crate) struct Refusal {
    id: Option<Value>,
    code: i64,
    message: String,
}

impl Refusal {
    pub(crate) fn response(self) -> hyper::Response<super::http::Body> {
        error_for(
            StatusCode::BAD_REQUEST,
            self.code,
            &self.message,
            self.id.as_ref(),
        )
    }
}

/// Checks each request of a stateless POST: its `_meta` names its revision
/// and the client's capabilities, and the header names the same revision.
pub(crate) fn check(headers: &HeaderMap, messages: &[Value]) -> Result<(), Refusal> {
    let header = protocol_header(headers);
    for message in messages {
        let (Some(_), Some(id)) = (message.get("method"), message.get("id")) else {
            continue;
        };
        let refuse = |code, text: &str| Refusal {
            id: Some(id.clone()),
            code,
            message: text.to_string(),
        };
        let Some(meta) = message.pointer("/params/_meta").and_then(Value::as_object) else {
            return Err(refuse(
                INVALID_PARAMS,
                "Invalid params: the request has no _meta (the revision and the client's capabilities)",
            ));
        };
        let Some(version) = meta.get(VERSION_KEY).and_then(Value::as_str) else {
            return Err(refuse(
                INVALID_PARAMS,
                "Invalid params: _meta lacks io.modelcontextprotocol/protocolVersion",
            ));
        };
        if !meta.get(CAPABILITIES_KEY).is_some_and(Value::is_object) {
            return Err(refuse(
                INVALID_PARAMS,
                "Invalid params: _meta lacks io.modelcontextprotocol/clientCapabilities",
            ));
        }
        if header != Some(version) {
            return Err(refuse(
                HEADER_MISMATCH,
                "Header mismatch: MCP-Protocol-Version must name the revision of the request's _meta",
            ));
        }
    }
    Ok(())
}

/// The HTTP status the revision gives an answer that is one of these
/// refusals; `None` for anything else (200).
pub(crate) fn status_of(message: &[u8]) -> Option<StatusCode> {
    #[derive(serde::Deserialize)]
    struct Answer {
        error: Option<Code>,
        method: Option<serde::de::IgnoredAny>,
    }
    #[derive(serde::Deserialize)]
    struct Code {
        code: i64,
    }
    let answer: Answer = serde_json::from_slice(message).ok()?;
    if answer.method.is_some() {
        return None;
    }
    match answer.error?.code {
        // Parse error, invalid request, invalid params, header mismatch,
        // a capability the client lacks, an unsupported revision.
        -32700 | -32600 | -32602 | -32020 | -32021 | -32022 => Some(StatusCode::BAD_REQUEST),
        // Method not found, the removed ones (initialize, ping) among them.
        -32601 => Some(StatusCode::NOT_FOUND),
        _ => None,
    }
}

fn protocol_header(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

fn version_of(message: &Value) -> Option<&str> {
    message
        .pointer("/params/_meta")
        .and_then(|meta| meta.get(VERSION_KEY))
        .and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;
    use serde_json::json;

    fn header(version: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_str(version).unwrap(),
        );
        headers
    }

    fn request(meta: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta}})
    }

    fn meta(version: &str) -> Value {
        json!({VERSION_KEY: version, CAPABILITIES_KEY: {}})
    }

    #[test]
    fn which_posts_are_stateless() {
        assert!(is_stateless(&header("2026-07-28"), &[json!({})]));
        assert!(is_stateless(&header("v999.0.0"), &[json!({})]));
        assert!(!is_stateless(&header("2025-11-25"), &[json!({})]));
        assert!(!is_stateless(
            &HeaderMap::new(),
            &[json!({"method": "tools/list"})]
        ));
        assert!(is_stateless(
            &HeaderMap::new(),
            &[request(meta("2026-07-28"))]
        ));
    }

    #[test]
    fn what_a_stateless_request_must_carry() {
        let ok = check(&header("2026-07-28"), &[request(meta("2026-07-28"))]);
        assert!(ok.is_ok());
        let code = |headers: &HeaderMap, message: Value| {
            check(headers, &[message]).err().map(|r| (r.code, r.id))
        };
        let bare = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"});
        assert_eq!(
            code(&header("2026-07-28"), bare),
            Some((INVALID_PARAMS, Some(json!(7))))
        );
        let no_version = request(json!({CAPABILITIES_KEY: {}}));
        assert_eq!(
            code(&header("2026-07-28"), no_version).map(|c| c.0),
            Some(INVALID_PARAMS)
        );
        let no_caps = request(json!({VERSION_KEY: "2026-07-28"}));
        assert_eq!(
            code(&header("2026-07-28"), no_caps).map(|c| c.0),
            Some(INVALID_PARAMS)
        );
        let altered = request(meta("v999.0.0"));
        assert_eq!(
            code(&header("2026-07-28"), altered).map(|c| c.0),
            Some(HEADER_MISMATCH)
        );
        let absent = request(meta("2026-07-28"));
        assert_eq!(
            code(&HeaderMap::new(), absent).map(|c| c.0),
            Some(HEADER_MISMATCH)
        );
        let notification = json!({"jsonrpc": "2.0", "method": "notifications/cancelled"});
        assert!(check(&header("2026-07-28"), &[notification]).is_ok());
    }

    #[test]
    fn refusals_get_their_status() {
        let error =
            |code: i64| json!({"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "x"}});
        let status = |v: Value| status_of(v.to_string().as_bytes());
        assert_eq!(status(error(-32602)), Some(StatusCode::BAD_REQUEST));
        assert_eq!(status(error(-32022)), Some(StatusCode::BAD_REQUEST));
        assert_eq!(status(error(-32601)), Some(StatusCode::NOT_FOUND));
        assert_eq!(status(error(-32603)), None);
        assert_eq!(
            status(json!({"jsonrpc": "2.0", "id": 1, "result": {}})),
            None
        );
        assert_eq!(
            status(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}})),
            None
        );
    }
}
