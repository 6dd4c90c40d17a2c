//! The result builder: edges, honesty of the summary, and the properties.

use super::*;
/// Every invariant of a finished result, given what was pushed.
fn check_result(entries: &[Entry], budget: usize, bytes: &[u8], truncated: bool, kept: usize) {
    // Within budget, valid JSON, and exactly as long as serde_json writes it.
    assert!(bytes.len() <= budget, "{} > {budget}", bytes.len());
    let value: Value = serde_json::from_slice(bytes).expect("the result parses");
    assert_eq!(
        wire(&value),
        bytes.len(),
        "not serialised as serde_json would"
    );

    let full = full_result(entries, &[], false);
    if wire(&full) <= budget {
        // Fits: untouched, no marker.
        assert!(!truncated, "a result that fits was truncated");
        assert_eq!(value, full);
        assert_eq!(kept, entries.len());
        return;
    }
    // Something was left out, and the result says so.
    assert!(truncated, "over budget but not marked truncated");
    let structured = &value["structuredContent"];
    assert_eq!(structured["truncated"], true);
    let content = value["content"].as_array().unwrap();
    let summary = content[0]["text"].as_str().unwrap();
    assert!(summary.starts_with("Returned "), "{summary}");
    let mirror = content.last().unwrap()["text"].as_str().unwrap();
    assert_eq!(
        &serde_json::from_str::<Value>(mirror).unwrap(),
        structured,
        "the text copy differs"
    );

    // The kept entries are a prefix of the pushed ones; only the last may be
    // a cut text, cut at a character boundary.
    assert!(kept <= entries.len());
    let mut blocks = content[1..content.len() - 1].iter();
    let mut items = structured["items"]
        .as_array()
        .map(|a| a.iter())
        .into_iter()
        .flatten();
    for (index, entry) in entries[..kept].iter().enumerate() {
        let last = index + 1 == kept;
        match entry {
            Entry::Text(text) => {
                let shown = blocks.next().expect("a kept text block")["text"]
                    .as_str()
                    .unwrap();
                if last {
                    assert!(text.starts_with(shown), "not a prefix");
                    assert!(
                        shown == text || !shown.is_empty(),
                        "an empty cut text was kept"
                    );
                } else {
                    assert_eq!(shown, text);
                }
            }
            Entry::Block(block) => assert_eq!(blocks.next(), Some(block)),
            Entry::Item(item) => assert_eq!(items.next(), Some(item)),
        }
    }
    assert_eq!(blocks.next(), None, "more blocks than kept entries");
    assert_eq!(items.next(), None, "more items than kept entries");
}

/// Runs entries through a builder the way a producer would: stop when told.
fn build(
    entries: &[Entry],
    budget: usize,
    continuation: Continuation,
) -> Result<(Vec<u8>, bool, usize), BudgetError> {
    let mut builder = ResultBuilder::new(budget)?;
    for entry in entries {
        if !push(&mut builder, entry).keep_going() {
            break;
        }
    }
    let kept = builder.kept();
    let done = builder.finish(continuation)?;
    assert_eq!(done.kept(), kept);
    let truncated = done.is_truncated();
    Ok((done.into_bytes(), truncated, kept))
}

fn minimum_budget() -> usize {
    match ResultBuilder::new(0) {
        Err(BudgetError::BudgetTooSmall { minimum, .. }) => minimum,
        other => panic!("{other:?}"),
    }
}

#[test]
fn budget_below_at_and_above_the_edge() {
    let texts = [
        "plain text".to_owned(),
        "say \"hi\" to C:\\dir".to_owned(),
        (0u8..0x20).map(char::from).collect::<String>(),
        "emoji 😀🚀 and 4-byte 𝄞 \u{10FFFF}".to_owned(),
        "x".repeat(5000),
        "é".repeat(3000),
    ];
    for text in &texts {
        let filler = Entry::Text("filler ".repeat(150));
        let entries = [
            filler,
            Entry::Text(text.clone()),
            Entry::Item(json!({"q": text, "n": 1})),
        ];
        let full = wire(&full_result(&entries, &[], false));
        for budget in [full - 1, full, full + 1] {
            let (bytes, truncated, kept) =
                build(&entries, budget, Continuation::cursor("c")).unwrap();
            check_result(&entries, budget, &bytes, truncated, kept);
            assert_eq!(
                truncated,
                budget < full,
                "{text:?} at {budget} (full {full})"
            );
            if budget >= full {
                assert_eq!(bytes.len(), full);
            }
        }
    }
}

#[test]
fn a_text_too_large_alone_is_cut_and_longer_budgets_keep_more() {
    let text = "日本語 \"quoted\" \\ \u{0} 😀 ".repeat(200);
    let entries = [Entry::Text(text.clone())];
    let mut previous = 0;
    for budget in (minimum_budget()..minimum_budget() + 600).step_by(7) {
        let (bytes, truncated, kept) = build(&entries, budget, Continuation::none()).unwrap();
        check_result(&entries, budget, &bytes, truncated, kept);
        let value: Value = serde_json::from_slice(&bytes).unwrap();
        let shown = if kept == 1 {
            value["content"][1]["text"].as_str().unwrap().len()
        } else {
            0
        };
        assert!(shown >= previous, "a larger budget kept less");
        previous = shown;
    }
    assert!(previous > 300, "the cut keeps most of the room: {previous}");
}

#[test]
fn the_summary_is_honest_about_totals() {
    let hits: Vec<Value> = (0..500)
        .map(|i| json!({"path": "src/auth.ts", "line": i}))
        .collect();
    let config = ResultConfig::new(2000).with_noun("matching records");
    let run = |continuation: Continuation| {
        let mut builder = ResultBuilder::with_config(config.clone()).unwrap();
        for hit in &hits {
            if !builder.push_item(hit).keep_going() {
                break;
            }
        }
        builder.finish(continuation).unwrap().to_value().unwrap()
    };
    let known = run(Continuation::cursor("eyJvZmZzZXQiOjUwfQ").with_total(4382));
    let kept = known["structuredContent"]["items"]
        .as_array()
        .unwrap()
        .len();
    assert!(kept > 10);
    assert_eq!(
        known["content"][0]["text"],
        format!(
            "Returned {kept} of 4,382 matching records. Use cursor \"eyJvZmZzZXQiOjUwfQ\" to continue, or narrow the query."
        )
    );
    assert_eq!(known["structuredContent"]["totalEstimate"], 4382);
    assert_eq!(
        known["structuredContent"]["nextCursor"],
        "eyJvZmZzZXQiOjUwfQ"
    );

    let unknown = run(Continuation::none());
    let text = unknown["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        text,
        format!(
            "Returned {kept} matching records; more were left out. Narrow the query to see what was left out."
        )
    );
    assert!(
        unknown["structuredContent"].get("totalEstimate").is_none(),
        "never invent a total"
    );
    assert!(unknown["structuredContent"].get("nextCursor").is_none());
}

#[test]
fn fields_are_kept_and_keys_may_not_collide() {
    let config = ResultConfig::new(1200)
        .with_field("query", &json!("token \"env\""))
        .with_items_key("hits");
    let mut builder = ResultBuilder::with_config(config).unwrap();
    for i in 0..100 {
        if !builder.push_item(&json!({"line": i})).keep_going() {
            break;
        }
    }
    let value = builder
        .finish(Continuation::cursor("next"))
        .unwrap()
        .to_value()
        .unwrap();
    assert_eq!(value["structuredContent"]["query"], "token \"env\"");
    assert!(value["structuredContent"]["hits"].as_array().unwrap().len() > 3);
    assert!(wire(&value) <= 1200);

    for key in ["hits", "truncated", "nextCursor", "totalEstimate"] {
        let config = ResultConfig::new(600)
            .with_items_key("hits")
            .with_field(key, &json!(1));
        assert_eq!(
            ResultBuilder::with_config(config).unwrap_err(),
            BudgetError::DuplicateKey
        );
    }
}

#[test]
fn budget_and_cursor_limits_are_errors_not_overruns() {
    let minimum = minimum_budget();
    assert!(matches!(
        ResultBuilder::new(minimum - 1),
        Err(BudgetError::BudgetTooSmall { .. })
    ));
    let mut builder = ResultBuilder::new(minimum).unwrap();
    assert_eq!(builder.push_text(&"x".repeat(1000)), Pushed::LeftOut);
    let done = builder
        .finish(Continuation::cursor(&"\"".repeat(32)).with_total(u64::MAX))
        .unwrap();
    assert!(done.as_bytes().len() <= minimum);

    let mut builder =
        ResultBuilder::with_config(ResultConfig::new(4096).with_max_cursor_bytes(8)).unwrap();
    builder.leave_out_rest();
    let error = builder
        .finish(Continuation::cursor("123456789"))
        .unwrap_err();
    assert_eq!(
        error,
        BudgetError::CursorTooLong {
            escaped_len: 9,
            max: 8
        }
    );
}

#[test]
fn provisional_entries_make_room_for_the_notice() {
    // Two texts fit exactly; a third does not. The second was provisional
    // and is cut to leave room for the notice.
    let entries = [
        Entry::Text("a".repeat(400)),
        Entry::Text("b".repeat(1000)),
        Entry::Text("c".repeat(10)),
    ];
    let budget = wire(&full_result(&entries[..2], &[], false));
    let mut builder = ResultBuilder::new(budget).unwrap();
    assert_eq!(push(&mut builder, &entries[0]), Pushed::Kept);
    assert_eq!(push(&mut builder, &entries[1]), Pushed::Provisional);
    assert_eq!(push(&mut builder, &entries[2]), Pushed::LeftOut);
    let kept = builder.kept();
    let done = builder.finish(Continuation::none()).unwrap();
    check_result(&entries, budget, done.as_bytes(), done.is_truncated(), kept);
    assert_eq!(kept, 2);
}

#[test]
fn a_producer_that_stops_on_its_own_still_reports_truncation() {
    let mut builder = ResultBuilder::new(4096).unwrap();
    for i in 0..3 {
        assert_eq!(builder.push_item(&json!({"row": i})), Pushed::Kept);
    }
    builder.leave_out_rest();
    assert!(builder.is_full());
    assert_eq!(builder.push_item(&json!({"row": 3})), Pushed::LeftOut);
    let done = builder.finish(Continuation::cursor("row:3")).unwrap();
    assert!(done.is_truncated());
    assert_eq!(done.kept_items(), 3);
    let value = done.to_value().unwrap();
    assert_eq!(
        value["structuredContent"]["items"],
        json!([{"row": 0}, {"row": 1}, {"row": 2}])
    );
    assert_eq!(
        value["content"][0]["text"],
        "Returned 3 items; more were left out. Use cursor \"row:3\" to continue, or narrow the query."
    );
    // Singular, when it applies.
    let mut builder =
        ResultBuilder::with_config(ResultConfig::new(4096).with_noun("matching records")).unwrap();
    let _ = builder.push_item(&json!(1));
    builder.leave_out_rest();
    let value = builder
        .finish(Continuation::none())
        .unwrap()
        .to_value()
        .unwrap();
    assert_eq!(
        value["content"][0]["text"],
        "Returned 1 matching record; more were left out. Narrow the query to see what was left out."
    );
}

#[test]
fn push_serialize_takes_any_serialisable_item() {
    #[derive(serde::Serialize)]
    struct Hit<'a> {
        path: &'a str,
        line: u32,
    }
    let mut builder = ResultBuilder::new(4096).unwrap();
    assert_eq!(
        builder
            .push_serialize(&Hit {
                path: "src/a.rs",
                line: 7
            })
            .unwrap(),
        Pushed::Kept
    );
    // serde_json refuses maps with non-string keys; nothing is added.
    let bad: std::collections::BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
    assert!(builder.push_serialize(&bad).is_err());
    assert_eq!(builder.kept(), 1);
    let value = builder
        .finish(Continuation::none())
        .unwrap()
        .to_value()
        .unwrap();
    assert_eq!(
        value["structuredContent"],
        json!({"items": [{"path": "src/a.rs", "line": 7}]})
    );
    assert_eq!(
        value["content"][0]["text"],
        "{\"items\":[{\"path\":\"src/a.rs\",\"line\":7}]}"
    );
}

#[test]
fn response_frame_wraps_the_result() {
    let mut builder = ResultBuilder::new(1000).unwrap();
    let _ = builder.push_text("hello");
    let done = builder.finish(Continuation::none()).unwrap();
    let frame = done.response_frame(drainpipe_framer::Id::String(b"req-1"));
    let value: Value = serde_json::from_slice(&frame).unwrap();
    assert_eq!(
        value,
        json!({"jsonrpc": "2.0", "id": "req-1", "result": done.to_value().unwrap()})
    );
}

#[test]
fn property_results_fit_parse_and_keep_a_prefix() {
    let seen = [AtomicUsize::new(0), AtomicUsize::new(0)];
    bolero::check!()
        .with_type::<(u16, Vec<(u8, Vec<u8>, u32)>, Option<(Vec<u8>, Option<u64>)>)>()
        .for_each(|(budget, spec, continuation)| {
            let entries = entries_from(spec);
            let budget = minimum_budget() + usize::from(*budget) % 3000;
            let continuation = match continuation {
                None => Continuation::none(),
                Some((cursor, total)) => {
                    let cursor = longest_prefix_within(
                        &text_from(cursor),
                        ResultConfig::DEFAULT_MAX_CURSOR_BYTES,
                    )
                    .to_owned();
                    let c = Continuation::cursor(&cursor);
                    match total {
                        Some(total) => c.with_total(*total),
                        None => c,
                    }
                }
            };
            let (bytes, truncated, kept) = build(&entries, budget, continuation).unwrap();
            check_result(&entries, budget, &bytes, truncated, kept);
            seen[usize::from(truncated)].fetch_add(1, Ordering::Relaxed);
        });
    assert_both_outcomes("results", &seen);
}

#[test]
fn property_producer_that_ignores_the_signal_still_gets_a_prefix() {
    bolero::check!()
        .with_type::<(u16, Vec<(u8, Vec<u8>, u32)>)>()
        .for_each(|(budget, spec)| {
            let entries = entries_from(spec);
            let budget = minimum_budget() + usize::from(*budget) % 2000;
            let mut builder = ResultBuilder::new(budget).unwrap();
            let mut refused = false;
            for entry in &entries {
                let pushed = push(&mut builder, entry);
                assert!(
                    !refused || pushed == Pushed::LeftOut,
                    "accepted after a refusal"
                );
                refused |= !pushed.keep_going();
            }
            let kept = builder.kept();
            let done = builder.finish(Continuation::cursor("k")).unwrap();
            check_result(&entries, budget, done.as_bytes(), done.is_truncated(), kept);
        });
}
