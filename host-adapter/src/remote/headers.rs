//! The HTTP headers revision 2026-07-28 asks a client to put on each POST
//! beside its message (SEP-2243), so that gateways and load balancers can
//! route and authorize a request without parsing its body:
//!
//! - `Mcp-Method`: the message's method;
//! - `Mcp-Name`: the tool or prompt name (`tools/call`, `prompts/get`) or
//!   the resource URI (`resources/read`);
//! - `MCP-Protocol-Version`: the revision the message's own
//!   `_meta["io.modelcontextprotocol/protocolVersion"]` names (a
//!   2026-07-28 client puts it on every request; there is no initialize
//!   to learn it from);
//! - `Mcp-Param-{Name}`: each argument of a `tools/call` whose property the
//!   tool's input schema marks with `"x-mcp-header": "Name"`, learnt from
//!   the server's `tools/list` answers.
//!
//! Values that are not plain printable ASCII, or start or end with white
//! space, go as `=?base64?{UTF-8 in base64}?=`. A tool whose `x-mcp-header`
//! marks are invalid (empty, not a header token, repeated, or on a property
//! that is not a string, integer or boolean: a float has no single text
//! form a server could compare) is refused: a call to
//! it is answered with an error and never sent, since its headers cannot
//! be written as the server expects.
//!
//! Older servers ignore these headers. The host's message is never changed.

use std::collections::HashMap;

use base64::Engine;
use hyper::HeaderMap;
use hyper::header::{HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::Value;

const METHOD: HeaderName = HeaderName::from_static("mcp-method");
const NAME: HeaderName = HeaderName::from_static("mcp-name");
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// The most of a `tools/list` answer read for `x-mcp-header` marks: far
/// over any real list of tools, bounding what a server can make the proxy
/// hold for it. Tools past it get no `Mcp-Param` headers.
pub(crate) const MAX_TOOLS_LIST_BYTES: usize = 4 << 20;

/// What the server's tools declare as headers, by tool name.
#[derive(Default)]
pub(crate) struct ToolHeaders {
    tools: HashMap<String, Declared>,
}

/// One tool's marks.
enum Declared {
    /// Argument name → header name (`Mcp-Param-{Name}`).
    Valid(Vec<(String, HeaderName)>),
    /// Why the tool is refused.
    Invalid(String),
}

impl ToolHeaders {
    /// Learns the marks of every tool in a `tools/list` answer (a whole
    /// JSON-RPC response); pages add to what earlier pages taught.
    pub(crate) fn learn(&mut self, answer: &[u8]) {
        #[derive(Deserialize)]
        struct Answer {
            result: Option<Listed>,
        }
        #[derive(Deserialize)]
        struct Listed {
            #[serde(default)]
            tools: Vec<Tool>,
        }
        #[derive(Deserialize)]
        struct Tool {
            name: String,
            #[serde(rename = "inputSchema")]
            input_schema: Option<Value>,
        }
        let Ok(Answer {
            result: Some(listed),
        }) = serde_json::from_slice::<Answer>(answer)
        else {
            return;
        };
        for tool in listed.tools {
            match declared(tool.input_schema.as_ref()) {
                Ok(marks) if marks.is_empty() => {
                    self.tools.remove(&tool.name);
                }
                Ok(marks) => {
                    self.tools.insert(tool.name, Declared::Valid(marks));
                }
                Err(why) => {
                    self.tools.insert(tool.name, Declared::Invalid(why));
                }
            }
        }
    }
}

/// The marks in one input schema's top-level properties.
fn declared(schema: Option<&Value>) -> Result<Vec<(String, HeaderName)>, String> {
    let Some(properties) = schema
        .and_then(|schema| schema.get("properties"))
        .and_then(Value::as_object)
    else {
        return Ok(Vec::new());
    };
    let mut marks: Vec<(String, HeaderName)> = Vec::new();
    for (argument, property) in properties {
        let Some(mark) = property.get("x-mcp-header") else {
            continue;
        };
        let Some(name) = mark.as_str().filter(|name| !name.is_empty()) else {
            return Err(format!(
                "its argument {argument:?} has an empty or non-string x-mcp-header"
            ));
        };
        if !name.bytes().all(is_token_byte) {
            return Err(format!(
                "its argument {argument:?} names header {name:?}, which is not an HTTP header token"
            ));
        }
        let primitive = match property.get("type") {
            Some(Value::String(kind)) => {
                matches!(kind.as_str(), "string" | "integer" | "boolean")
            }
            // No type said: the value decides at the call.
            None => true,
            _ => false,
        };
        if !primitive {
            return Err(format!(
                "its argument {argument:?} is not a string, integer or boolean, and only those can be headers"
            ));
        }
        let header = HeaderName::from_bytes(format!("mcp-param-{name}").as_bytes())
            .map_err(|_| format!("its argument {argument:?} names an impossible header"))?;
        if marks.iter().any(|(_, seen)| *seen == header) {
            return Err(format!("two arguments name header {name:?}"));
        }
        marks.push((argument.clone(), header));
    }
    Ok(marks)
}

/// RFC 9110 §5.6.2 `tchar`.
fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// The fields of a message the headers come from. Everything else (a
/// call's arguments, which may be megabytes) is skipped, not built.
#[derive(Deserialize)]
struct Message {
    method: Option<String>,
    params: Option<Params>,
}

#[derive(Deserialize)]
struct Params {
    name: Option<String>,
    uri: Option<String>,
    #[serde(rename = "_meta")]
    meta: Option<Meta>,
}

#[derive(Deserialize)]
struct Meta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Option<Value>,
}

/// A call's arguments, read only for a tool with marks.
#[derive(Deserialize)]
struct Call {
    params: CallParams,
}

#[derive(Deserialize)]
struct CallParams {
    #[serde(default)]
    arguments: serde_json::Map<String, Value>,
}

/// Adds the headers for a message the host sent to `headers`. `Err`: the
/// message calls a refused tool, and why.
pub(crate) fn add(
    bytes: &[u8],
    tools: &ToolHeaders,
    headers: &mut HeaderMap,
) -> Result<(), String> {
    let Ok(Message {
        method: Some(method),
        params,
    }) = serde_json::from_slice::<Message>(bytes)
    else {
        return Ok(());
    };
    if let Some(value) = encode(&method) {
        headers.insert(METHOD, value);
    }
    let Some(params) = params else {
        return Ok(());
    };
    if let Some(version) = params
        .meta
        .as_ref()
        .and_then(|meta| meta.protocol_version.as_ref())
        .and_then(Value::as_str)
        .and_then(|version| HeaderValue::from_str(version).ok())
    {
        headers.insert(PROTOCOL_VERSION, version);
    }
    let name = match method.as_str() {
        "tools/call" | "prompts/get" => params.name.as_deref(),
        "resources/read" => params.uri.as_deref(),
        _ => None,
    };
    if let Some(value) = name.and_then(encode) {
        headers.insert(NAME, value);
    }
    if method != "tools/call" {
        return Ok(());
    }
    let tool = params.name.as_deref().unwrap_or_default();
    match tools.tools.get(tool) {
        None => Ok(()),
        Some(Declared::Invalid(why)) => Err(format!(
            "the server's tool {tool:?} is refused: {why} (SEP-2243)"
        )),
        Some(Declared::Valid(marks)) => {
            let arguments = serde_json::from_slice::<Call>(bytes)
                .map(|call| call.params.arguments)
                .unwrap_or_default();
            for (argument, header) in marks {
                let text = match arguments.get(argument) {
                    None | Some(Value::Null) => continue,
                    Some(Value::String(text)) => text.clone(),
                    Some(Value::Bool(flag)) => flag.to_string(),
                    Some(Value::Number(number)) => number.to_string(),
                    Some(_) => continue,
                };
                if let Some(value) = encode(&text) {
                    headers.insert(header.clone(), value);
                }
            }
            Ok(())
        }
    }
}

/// A header value for `text`: as it is when it is printable ASCII without
/// white space at either end, else `=?base64?…?=` (SEP-2243).
fn encode(text: &str) -> Option<HeaderValue> {
    let plain = text.bytes().all(|b| (0x20..0x7f).contains(&b)) && text.trim() == text;
    if plain {
        HeaderValue::from_str(text).ok()
    } else {
        let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
        HeaderValue::from_str(&format!("=?base64?{encoded}?=")).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers_for(message: &str, tools: &ToolHeaders) -> Vec<(String, String)> {
        let mut headers = HeaderMap::new();
        add(message.as_bytes(), tools, &mut headers).unwrap();
        let mut pairs: Vec<_> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        pairs.sort();
        pairs
    }

    fn pair(name: &str, value: &str) -> (String, String) {
        (name.to_string(), value.to_string())
    }

    #[test]
    fn standard_headers_come_from_the_message() {
        let tools = ToolHeaders::default();
        assert_eq!(
            headers_for(
                r#"{"method":"tools/call","params":{"name":"my-tool","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}},"jsonrpc":"2.0","id":1}"#,
                &tools
            ),
            [
                pair("mcp-method", "tools/call"),
                pair("mcp-name", "my-tool"),
                pair("mcp-protocol-version", "2026-07-28"),
            ]
        );
        assert_eq!(
            headers_for(
                r#"{"jsonrpc":"2.0","id":"a","method":"resources/read","params":{"uri":"file:///a%20b.txt"}}"#,
                &tools
            ),
            [
                pair("mcp-method", "resources/read"),
                pair("mcp-name", "file:///a%20b.txt"),
            ]
        );
        assert_eq!(
            headers_for(
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                &tools
            ),
            [pair("mcp-method", "notifications/initialized")]
        );
        // A response has no method: nothing.
        assert!(headers_for(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, &tools).is_empty());
    }

    #[test]
    fn marked_arguments_are_mirrored_and_encoded() {
        let mut tools = ToolHeaders::default();
        tools.learn(
            br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{
                "region":{"type":"string","x-mcp-header":"Region"},
                "priority":{"type":"integer","x-mcp-header":"Priority"},
                "verbose":{"type":"boolean","x-mcp-header":"Verbose"},
                "greeting":{"type":"string","x-mcp-header":"Greeting"},
                "padded":{"type":"string","x-mcp-header":"Padded"},
                "gone":{"type":"string","x-mcp-header":"Gone"},
                "plain":{"type":"number"}}}}]}}"#,
        );
        assert_eq!(
            headers_for(
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{"region":"us-west1","priority":42,"verbose":false,"greeting":"Hello, 世界","padded":" x ","gone":null,"plain":3.5}}}"#,
                &tools
            ),
            [
                pair("mcp-method", "tools/call"),
                pair("mcp-name", "t"),
                pair("mcp-param-greeting", "=?base64?SGVsbG8sIOS4lueVjA==?="),
                pair("mcp-param-padded", "=?base64?IHgg?="),
                pair("mcp-param-priority", "42"),
                pair("mcp-param-region", "us-west1"),
                pair("mcp-param-verbose", "false"),
            ]
        );
    }

    #[test]
    fn tools_with_invalid_marks_are_refused() {
        let invalid = [
            r#"{"a":{"type":"string","x-mcp-header":""}}"#,
            r#"{"a":{"type":"object","x-mcp-header":"A"}}"#,
            r#"{"a":{"type":"array","x-mcp-header":"A"}}"#,
            r#"{"a":{"type":"null","x-mcp-header":"A"}}"#,
            r#"{"a":{"type":"number","x-mcp-header":"A"}}"#,
            r#"{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}"#,
            r#"{"a":{"type":"string","x-mcp-header":"Has Space"}}"#,
            r#"{"a":{"type":"string","x-mcp-header":"Has:Colon"}}"#,
            r#"{"a":{"type":"string","x-mcp-header":"Ünï"}}"#,
            r#"{"a":{"type":"string","x-mcp-header":"Ctl\u0001"}}"#,
        ];
        for properties in invalid {
            let mut tools = ToolHeaders::default();
            let list = format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{{"name":"bad","inputSchema":{{"type":"object","properties":{properties}}}}},{{"name":"good","inputSchema":{{"type":"object"}}}}]}}}}"#
            );
            tools.learn(list.as_bytes());
            let mut headers = HeaderMap::new();
            let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bad","arguments":{"a":"x"}}}"#;
            assert!(
                add(call.as_bytes(), &tools, &mut headers).is_err(),
                "{properties}"
            );
            let good = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"good","arguments":{}}}"#;
            assert!(
                add(good.as_bytes(), &tools, &mut headers).is_ok(),
                "{properties}"
            );
        }
    }
}
