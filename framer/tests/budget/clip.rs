//! Host-side clipping: errors, byte-exact ids, and the properties.

use super::*;

#[test]
fn clip_errors_are_specific() {
    let cases: &[(&[u8], ClipError)] = &[
        (b"{\"id\":1,\"result\":", ClipError::Malformed { at: 17 }),
        (
            b"{\"id\":1,\"result\":{}} x",
            ClipError::Malformed { at: 21 },
        ),
        (b"not json", ClipError::Malformed { at: 1 }),
        (b"[{\"id\":1}]", ClipError::NotAnObject),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}",
            ClipError::NotAResponse,
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-1,\"message\":\"no\"}}",
            ClipError::ErrorResponse,
        ),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1}", ClipError::MissingResult),
        (b"{\"jsonrpc\":\"2.0\",\"result\":{}}", ClipError::MissingId),
        (
            b"{\"id\":1,\"id\":2,\"result\":{}}",
            ClipError::DuplicateMember,
        ),
        (
            b"{\"id\":1,\"result\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]}",
            ClipError::NotAToolResult,
        ),
        (
            b"{\"id\":1,\"result\":{\"content\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}}",
            ClipError::NotAToolResult,
        ),
    ];
    for (frame, expected) in cases {
        assert_eq!(
            clip_response(frame, 40, &Continuation::none()),
            Err(*expected),
            "{}",
            String::from_utf8_lossy(frame)
        );
    }
    let frame = workload::text_response(7, &"x".repeat(5000));
    let frame = frame.strip_suffix(b"\n").unwrap();
    assert!(
        matches!(clip_response(frame, 100, &Continuation::none()), Err(ClipError::BudgetTooSmall { minimum }) if minimum > 100)
    );
}

#[test]
fn clip_keeps_the_id_byte_for_byte() {
    let text = "t\"e\\x\u{1}t 😀 ".repeat(400);
    for id in [
        "1.50",
        "-0",
        "1e3",
        "123456789012345678901234567890",
        "\"a\\\"b\\u0041\"",
        "null",
    ] {
        let frame = format!(
            "{{\"jsonrpc\":\"2.0\", \"id\" : {id} ,\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":{}}}],\"isError\":true}}}}",
            serde_json::to_string(&text).unwrap()
        );
        let clipped = clip_response(frame.as_bytes(), 1500, &Continuation::cursor("p2")).unwrap();
        assert!(clipped.len() <= 1500);
        let prefix = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":");
        assert!(
            clipped.starts_with(prefix.as_bytes()),
            "{}",
            String::from_utf8_lossy(&clipped[..60])
        );
        let value: Value = serde_json::from_slice(&clipped).unwrap();
        assert_eq!(value["result"]["structuredContent"]["nextCursor"], "p2");
        assert_eq!(
            value["result"]["isError"], true,
            "an error result stays one"
        );
        let shown = value["result"]["content"][1]["text"].as_str().unwrap();
        assert!(text.starts_with(shown) && shown.len() > 500);
    }
}

#[test]
fn clip_rebuilds_structured_content_and_its_text_copy() {
    let items: Vec<Value> = (0..300)
        .map(|i| json!({"path": format!("src/{i}.rs"), "line": i}))
        .collect();
    let structured = json!({"query": "token", "matches": items, "totalEstimate": 300});
    let frame = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": 3,
        "result": {
            "content": [{"type": "text", "text": serde_json::to_string(&structured).unwrap()}],
            "structuredContent": structured, "isError": false
        }
    }))
    .unwrap();
    let clipped = clip_response(&frame, 3000, &Continuation::cursor("after")).unwrap();
    assert!(clipped.len() <= 3000);
    let value: Value = serde_json::from_slice(&clipped).unwrap();
    let result = &value["result"];
    let structured = &result["structuredContent"];
    assert_eq!(structured["query"], "token");
    assert_eq!(structured["truncated"], true);
    assert_eq!(
        structured["totalEstimate"], 300,
        "the server's total is kept"
    );
    let kept = structured["matches"].as_array().unwrap();
    assert!(kept.len() > 10 && kept[..] == items[..kept.len()]);
    let content = result["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "summary and one text copy: {content:?}");
    assert_eq!(
        &serde_json::from_str::<Value>(content[1]["text"].as_str().unwrap()).unwrap(),
        structured
    );
    assert!(
        content[0]["text"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Returned {} of 300 items.", kept.len()))
    );
}

#[test]
fn property_clip_fits_parses_and_answers_the_same_id() {
    let seen = [AtomicUsize::new(0), AtomicUsize::new(0)];
    bolero::check!()
        .with_type::<(u16, Vec<u8>, u64, u16, Vec<(u8, Vec<u8>, u32)>)>()
        .for_each(|(budget, text, id, extra, spec)| {
            let text = text_from(text).repeat(usize::from(*extra) % 8 + 1);
            let entries = entries_from(spec);
            let mut result = full_result(&entries, &[], false);
            result["content"]
                .as_array_mut()
                .unwrap()
                .insert(0, json!({"type": "text", "text": text}));
            let frame =
                serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": result})).unwrap();
            let budget = usize::from(*budget);
            match clip_response(&frame, budget, &Continuation::cursor("next")) {
                Err(ClipError::BudgetTooSmall { minimum }) => assert!(budget < minimum),
                Err(other) => panic!("{other}"),
                Ok(clipped) => {
                    assert!(clipped.len() <= budget);
                    let value: Value =
                        serde_json::from_slice(&clipped).expect("the clipped frame parses");
                    assert!(
                        clipped
                            .starts_with(format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},").as_bytes())
                            || clipped == frame
                    );
                    let truncated = value["result"]["structuredContent"]["truncated"] == true;
                    assert_eq!(truncated, frame.len() > budget);
                    if frame.len() <= budget {
                        assert_eq!(clipped, frame, "a frame that fits is passed on unchanged");
                    } else {
                        // Truncated: summary, kept blocks, text copy. The
                        // long text comes first, so what is shown of it is a
                        // prefix.
                        let content = value["result"]["content"].as_array().unwrap();
                        if content.len() > 2 {
                            let shown = content[1]["text"].as_str().unwrap();
                            assert!(text.starts_with(shown), "not a prefix of the text");
                        }
                    }
                    seen[usize::from(truncated)].fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    assert_both_outcomes("clips", &seen);
}

#[test]
fn clip_an_eight_mebibyte_result_from_the_workload() {
    let text = workload::text(&mut Rng::new(3), 8 << 20);
    let frame = workload::text_response(99, &text);
    let frame = frame.strip_suffix(b"\n").unwrap();
    let clipped = clip_response(frame, 64 * 1024, &Continuation::none()).unwrap();
    assert!(
        clipped.len() <= 64 * 1024 && clipped.len() > 63 * 1024,
        "{}",
        clipped.len()
    );
    let value: Value = serde_json::from_slice(&clipped).unwrap();
    assert_eq!(value["id"], 99);
    let shown = value["result"]["content"][1]["text"].as_str().unwrap();
    assert!(text.starts_with(shown));
    let summary = value["result"]["content"][0]["text"].as_str().unwrap();
    let expected = format!(
        "Returned 1 content block; more were left out. The last text was cut after {} of {} bytes. Narrow the query to see what was left out.",
        group(shown.len()),
        group(text.len())
    );
    assert_eq!(summary, expected);
}
