//! The proxy's edits to what a server announces are insertions into the
//! server's bytes and nothing else: for any valid answer (generated with
//! member orders, big integers, exponents, escapes, duplicate members,
//! whitespace and nesting), the output is the input with exactly the
//! documented insertion, byte for byte.

use drainpipe_framer::testing::inserted;
use serde_json::Value;

use super::*;

/// A source of choices, from the fuzzer's bytes (0 once they run out, so
/// every input ends in a small document).
struct Choices<'a>(&'a [u8]);

impl Choices<'_> {
    fn next(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
        from[usize::from(self.next()) % from.len()]
    }
}

const SPACES: &[&str] = &["", "", " ", "\n  ", "\t", "\r\n"];
const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1.50",
    "1e2",
    "1E+2",
    "-2.5e-3",
    "123456789012345678901234567890",
    "18446744073709551616",
    "7",
];
const STRINGS: &[&str] = &[
    r#""""#,
    r#""plain""#,
    r#""caf\u00e9""#,
    r#""a\/b""#,
    r#""q\"uote\\""#,
    r#""línea «ünï» 😀""#,
    r#""\ud83d\ude00""#,
    r#""[{\"not\":\"nested\"}]""#,
];
const KEYS: &[&str] = &[
    r#""type""#,
    r#""description""#,
    r#""path""#,
    r#""tail""#,
    r#""head""#,
    r#""pr\u006fperties""#,
    r#""x\"y""#,
    r#""resources""#,
    r#""tools""#,
];

/// A JSON value of at most `depth` levels, written with the choices'
/// spellings and whitespace.
fn value(c: &mut Choices<'_>, depth: u8, out: &mut String) {
    let kind = if depth == 0 {
        c.next() % 4
    } else {
        c.next() % 6
    };
    match kind {
        0 => out.push_str(c.pick(NUMBERS)),
        1 => out.push_str(c.pick(STRINGS)),
        2 => out.push_str(c.pick(&["true", "false", "null"])),
        3 => out.push_str(c.pick(&["{}", "[]", "{ }", "[\n]"])),
        4 => {
            let members: Vec<(String, String)> = (0..c.next() % 4)
                .map(|_| {
                    let mut v = String::new();
                    value(c, depth - 1, &mut v);
                    (c.pick(KEYS).to_string(), v)
                })
                .collect();
            object(c, &members, out);
        }
        _ => {
            let elements: Vec<String> = (0..c.next() % 4)
                .map(|_| {
                    let mut v = String::new();
                    value(c, depth - 1, &mut v);
                    v
                })
                .collect();
            array(c, &elements, out);
        }
    }
}

fn object(c: &mut Choices<'_>, members: &[(String, String)], out: &mut String) {
    out.push('{');
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(c.pick(SPACES));
        out.push_str(key);
        out.push_str(c.pick(SPACES));
        out.push(':');
        out.push_str(c.pick(SPACES));
        out.push_str(value);
        out.push_str(c.pick(SPACES));
    }
    out.push('}');
}

fn array(c: &mut Choices<'_>, elements: &[String], out: &mut String) {
    out.push('[');
    for (i, element) in elements.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(c.pick(SPACES));
        out.push_str(element);
        out.push_str(c.pick(SPACES));
    }
    out.push(']');
}

/// Members in the choices' order, some of them twice (the first copy with
/// another value), plus a few of no meaning here.
fn members_shuffled(c: &mut Choices<'_>, mut members: Vec<(String, String)>) -> String {
    for _ in 0..c.next() % 3 {
        let mut v = String::new();
        value(c, 2, &mut v);
        members.push((c.pick(KEYS).to_string(), v));
    }
    let len = members.len();
    for i in 0..len {
        let j = usize::from(c.next()) % len;
        members.swap(i, j);
    }
    if c.next().is_multiple_of(4)
        && let Some((key, _)) = members.first().cloned()
    {
        let mut v = String::new();
        value(c, 1, &mut v);
        members.insert(0, (key, v));
    }
    let mut out = String::new();
    object(c, &members, &mut out);
    out
}

/// A response line around `result`.
fn response(c: &mut Choices<'_>, result: String) -> String {
    let id = c.pick(&["1", "\"a\\u0062\"", "1E2", "123456789012345678901234567890"]);
    let members = vec![
        ("\"jsonrpc\"".to_string(), "\"2.0\"".to_string()),
        ("\"id\"".to_string(), id.to_string()),
        ("\"result\"".to_string(), result),
    ];
    let mut order = members.clone();
    order.rotate_left(usize::from(c.next()) % 3);
    let mut out = String::new();
    object(c, &order, &mut out);
    out
}

fn tools_list(c: &mut Choices<'_>) -> String {
    let tools: Vec<String> = (0..c.next() % 4)
        .map(|_| {
            let name = c.pick(&[
                "\"read_text_file\"",
                "\"git_diff\"",
                "\"drainpipe_read\"",
                "\"drain\\u0070ipe_read\"",
                "\"t\\/1\"",
            ]);
            let mut schema = String::new();
            value(c, 3, &mut schema);
            members_shuffled(
                c,
                vec![
                    ("\"name\"".into(), name.into()),
                    ("\"inputSchema\"".into(), schema),
                ],
            )
        })
        .collect();
    let mut list = String::new();
    array(c, &tools, &mut list);
    let mut members = vec![("\"tools\"".to_string(), list)];
    match c.next() % 3 {
        0 => members.push(("\"nextCursor\"".into(), "null".into())),
        1 => members.push(("\"nextCursor\"".into(), "\"page 2\"".into())),
        _ => {}
    }
    let result = members_shuffled(c, members);
    response(c, result)
}

fn handshake_answer(c: &mut Choices<'_>) -> String {
    let mut members = vec![
        (
            "\"protocolVersion\"".to_string(),
            "\"2025-06-18\"".to_string(),
        ),
        (
            "\"serverInfo\"".to_string(),
            r#"{"name":"s","version":"1.0"}"#.to_string(),
        ),
    ];
    match c.next() % 4 {
        0 => {}
        1 => members.push(("\"capabilities\"".into(), "[]".into())),
        _ => {
            let mut capabilities = Vec::new();
            for _ in 0..c.next() % 4 {
                let key = c.pick(&[
                    "\"tools\"",
                    "\"logging\"",
                    "\"resources\"",
                    "\"re\\u0073ources\"",
                    "\"prompts\"",
                ]);
                let mut v = String::new();
                value(c, 2, &mut v);
                capabilities.push((key.to_string(), v));
            }
            let mut caps = String::new();
            object(c, &capabilities, &mut caps);
            members.push(("\"capabilities\"".into(), caps));
        }
    }
    let result = members_shuffled(c, members);
    response(c, result)
}

fn check_tools_list(line: &[u8]) {
    let parsed: Value = serde_json::from_slice(line).expect("generated JSON parses");
    let result = &parsed["result"];
    let shown = String::from_utf8_lossy(line);
    // A duplicate `tools` member of another type is the one a host reads.
    let Some(tools) = result["tools"].as_array() else {
        assert!(
            matches!(add_read_tool(line), ToolsList::Unchanged),
            "{shown}"
        );
        return;
    };
    let has_ours = tools.iter().any(|t| t["name"] == READ_TOOL);
    let last_page = result.get("nextCursor").is_none_or(Value::is_null);
    match add_read_tool(line) {
        ToolsList::Added(edited) => {
            assert!(!has_ours && last_page, "{shown}");
            let run =
                inserted(line, &edited).unwrap_or_else(|| panic!("not one insertion: {shown}"));
            let definition = READ_TOOL_DEFINITION.as_bytes();
            assert!(
                run == definition
                    || (run.len() == definition.len() + 1
                        && &run[1..] == definition
                        && run[0] == b','),
                "{shown}"
            );
            let now: Value = serde_json::from_slice(&edited).expect("the edited line parses");
            let now_tools = now["result"]["tools"].as_array().expect("tools");
            assert_eq!(now_tools.len(), tools.len() + 1, "{shown}");
            assert_eq!(now_tools.last().unwrap()["name"], READ_TOOL, "{shown}");
        }
        ToolsList::ServerHasOne => assert!(has_ours, "{shown}"),
        ToolsList::Unchanged => assert!(!last_page && !has_ours, "{shown}"),
    }
}

fn check_handshake(line: &[u8]) {
    let parsed: Value = serde_json::from_slice(line).expect("generated JSON parses");
    let result = &parsed["result"];
    let wanted = match result.get("capabilities") {
        None => Some(&br#""capabilities":{"resources":{}}"#[..]),
        Some(Value::Object(capabilities)) if !capabilities.contains_key("resources") => {
            Some(&br#""resources":{}"#[..])
        }
        _ => None,
    };
    let said = handshake(line);
    assert_eq!(said.protocol.as_deref(), Some("2025-06-18"));
    let shown = String::from_utf8_lossy(line);
    match (said.line, wanted) {
        (None, None) => {}
        (Some(edited), Some(wanted)) => {
            let run =
                inserted(line, &edited).unwrap_or_else(|| panic!("not one insertion: {shown}"));
            assert!(
                run == wanted
                    || (run.len() == wanted.len() + 1 && run[0] == b',' && &run[1..] == wanted),
                "{shown}"
            );
            let now: Value = serde_json::from_slice(&edited).expect("the edited line parses");
            assert_eq!(
                now["result"]["capabilities"]["resources"],
                serde_json::json!({})
            );
        }
        (got, wanted) => panic!(
            "edited: {}, wanted: {}: {shown}",
            got.is_some(),
            wanted.is_some()
        ),
    }
}

#[test]
fn property_tools_list_gains_the_tool_and_nothing_else() {
    bolero::check!().for_each(|bytes: &[u8]| {
        let line = tools_list(&mut Choices(bytes));
        check_tools_list(line.as_bytes());
    });
}

#[test]
fn property_handshake_gains_the_capability_and_nothing_else() {
    bolero::check!().for_each(|bytes: &[u8]| {
        let line = handshake_answer(&mut Choices(bytes));
        check_handshake(line.as_bytes());
    });
}

/// The cases the issue names, as the servers wrote them.
#[test]
fn what_the_servers_wrote_is_kept() {
    let filesystem = br#"{"result":{"tools":[{"name":"read_text_file","inputSchema":{"type":"object","properties":{"path":{"type":"string"},"tail":{"type":"number"},"head":{"type":"number"}},"required":["path"]}}]},"jsonrpc":"2.0","id":2}"#;
    let ToolsList::Added(edited) = add_read_tool(filesystem) else {
        panic!("not added");
    };
    let expected = String::from_utf8_lossy(filesystem).replace(
        r#""required":["path"]}}]"#,
        &format!(r#""required":["path"]}}}},{READ_TOOL_DEFINITION}]"#),
    );
    assert_eq!(String::from_utf8_lossy(&edited), expected);

    let python = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"capabilities\":{\"experimental\":{},\"tools\":{\"listChanged\":false}},\"n\":123456789012345678901234567890,\"e\":1e2,\"f\":1.50,\"s\":\"\\u00e9\\/\",\"d\":1,\"d\":2,\"protocolVersion\":\"2025-06-18\"}}";
    let said = handshake(python);
    let edited = said.line.expect("added");
    let text = String::from_utf8(edited).unwrap();
    assert_eq!(
        text,
        String::from_utf8_lossy(python).replace(
            "\"listChanged\":false}}",
            "\"listChanged\":false},\"resources\":{}}"
        )
    );
    assert_eq!(said.protocol.as_deref(), Some("2025-06-18"));
}

#[test]
fn the_tool_definition_is_one_valid_tool() {
    let tool: Value = serde_json::from_str(READ_TOOL_DEFINITION).expect("valid JSON");
    assert_eq!(tool["name"], READ_TOOL);
    let properties: Vec<&String> = tool["inputSchema"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(properties.len(), 4);
    assert!(READ_TOOL_DEFINITION.starts_with(r#"{"name":"drainpipe_read""#));
}
