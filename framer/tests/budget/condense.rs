//! The streaming condenser: table cases at the edges, and a property over
//! generated `tools/call` responses, budgets and chunkings, checked by the
//! shared oracle (`testing::condense`).

use drainpipe_framer::budget::{
    Clip, CondenseError, Condensed, Condenser, Ladder, MAX_LINKS, MIN_CONDENSE_BUDGET,
    MIN_LINKED_BUDGET, SpillKind,
};
use drainpipe_framer::testing;
use drainpipe_framer::testing::Rng;
use drainpipe_framer::testing::condense::{
    SpilledRaw, check_condensed, check_ladder, check_spilled, condense_linked, condense_split,
    text, tool_response,
};
use serde_json::{Value, json};

fn condense(line: &[u8], budget: usize) -> Condensed {
    let outcome = condense_split(line, budget, &[]).expect("condenses");
    check_condensed(line, budget, &outcome).unwrap_or_else(|e| panic!("{e}"));
    outcome
}

fn frame(outcome: &Condensed) -> Value {
    match outcome {
        Condensed::Cut { frame, .. } => serde_json::from_slice(frame).expect("JSON"),
        other => panic!("expected a cut, got {other:?}"),
    }
}

#[test]
fn a_result_that_fits_is_unchanged() {
    let line = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#;
    assert_eq!(condense(line, MIN_CONDENSE_BUDGET), Condensed::Unchanged);
}

#[test]
fn the_filesystem_server_shape_keeps_a_prefix_and_its_mirror() {
    let mut rng = Rng::new(1);
    let t = text(&mut rng, 300_000);
    let line = json!({"result": {"content": [{"type": "text", "text": t}], "structuredContent": {"content": t}}, "jsonrpc": "2.0", "id": 7}).to_string();
    let budget = 64 << 10;
    let value = frame(&condense(line.as_bytes(), budget));
    let kept = value["result"]["content"][0]["text"].as_str().unwrap();
    assert!(kept.len() > 20_000, "kept {} bytes", kept.len());
    assert_eq!(value["result"]["structuredContent"]["content"], kept);
    assert_eq!(value["id"], 7);
    let marker = &value["result"]["_meta"]["io.drainpipe/truncated"];
    assert_eq!(
        marker["cut"],
        json!(["/content/0/text", "/structuredContent/content"])
    );
    assert_eq!(
        value["result"]["content"].as_array().unwrap().len(),
        2,
        "the notice"
    );
}

#[test]
fn protocol_members_and_unknown_members_are_kept() {
    let t = "y".repeat(100_000);
    let line = json!({"jsonrpc": "2.0", "id": "a", "result": {"resultType": "complete", "_meta": {"k": "v"}, "future": {"x": [1, 2]}, "content": [{"type": "text", "text": t}]}}).to_string();
    let value = frame(&condense(line.as_bytes(), 16 << 10));
    assert_eq!(value["result"]["resultType"], "complete");
    assert_eq!(value["result"]["_meta"]["k"], "v");
    assert_eq!(value["result"]["future"], json!({"x": [1, 2]}));
}

#[test]
fn binary_that_does_not_fit_becomes_a_text_block() {
    let data = "QUJD".repeat(50_000);
    let line = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"data": data, "mimeType": "image/png", "type": "image"}, {"type": "text", "text": "after"}]}}).to_string();
    let value = frame(&condense(line.as_bytes(), 16 << 10));
    let block = &value["result"]["content"][0];
    assert_eq!(block["type"], "text");
    let said = block["text"].as_str().unwrap();
    assert!(
        said.contains("image") && said.contains("image/png") && said.contains("200000"),
        "{said}"
    );
    assert_eq!(value["result"]["content"][1]["text"], "after");
}

#[test]
fn escapes_and_characters_are_never_split() {
    for budget in MIN_CONDENSE_BUDGET..MIN_CONDENSE_BUDGET + 64 {
        let t = "é\"😀\\\u{1}\n".repeat(2_000);
        let line =
            json!({"id": 1, "result": {"content": [{"type": "text", "text": t}]}}).to_string();
        for lengths in [&[][..], &[1], &[7]] {
            let outcome = condense_split(line.as_bytes(), budget, lengths).unwrap();
            check_condensed(line.as_bytes(), budget, &outcome).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn what_cannot_be_cut_is_an_error_not_an_overrun() {
    let keys: serde_json::Map<String, Value> =
        (0..5_000).map(|i| (format!("key{i}"), json!(i))).collect();
    let line = json!({"id": 1, "result": {"content": [], "structuredContent": keys}}).to_string();
    let error = condense_split(line.as_bytes(), MIN_CONDENSE_BUDGET, &[]).unwrap_err();
    assert!(error.contains("cannot be cut"), "{error}");
    assert_eq!(
        Condenser::new(100).unwrap_err(),
        CondenseError::BudgetTooSmall { budget: 100 }
    );
}

#[test]
fn property_condensed_results_are_valid_bounded_and_honest() {
    bolero::check!()
        .with_type::<(u64, u16, u64)>()
        .for_each(|&(seed, budget, split)| {
            let mut rng = Rng::new(seed);
            let line = tool_response(&mut rng);
            let budget = MIN_CONDENSE_BUDGET + usize::from(budget) * 4;
            let mut split_rng = Rng::new(split);
            let lengths: Vec<usize> = (0..8).map(|_| 1 + split_rng.below(5_000)).collect();
            match condense_split(&line, budget, &lengths) {
                Ok(outcome) => {
                    if let Err(e) = check_condensed(&line, budget, &outcome) {
                        panic!("seed {seed}, budget {budget}: {e}");
                    }
                    // Chunking does not change the result.
                    assert_eq!(condense_split(&line, budget, &[]).unwrap(), outcome);
                }
                Err(e) => assert!(e.contains("cannot be cut"), "seed {seed}: {e}"),
            }
        });
}

#[test]
fn property_budgets_in_characters_and_tokens_take_the_largest_rung_that_fits() {
    bolero::check!()
        .with_type::<(u64, u16, u64, bool, bool)>()
        .for_each(|&(seed, amount, split, tokens, linked)| {
            let mut rng = Rng::new(seed);
            let line = tool_response(&mut rng);
            let amount = MIN_LINKED_BUDGET + usize::from(amount) * 2;
            let clip = if tokens {
                Clip::tokens(amount)
            } else {
                Clip::chars(amount)
            };
            let mut split_rng = Rng::new(split);
            let lengths: Vec<usize> = (0..8).map(|_| 1 + split_rng.below(5_000)).collect();
            if let Err(e) = check_ladder(&line, clip, &lengths, linked)
                && !e.contains("cannot be cut")
            {
                panic!("seed {seed}, {clip}: {e}");
            }
        });
}

#[test]
fn a_budget_in_characters_keeps_more_bytes_of_wide_text() {
    // 3 bytes a character: the rung of 3 (or 4) bytes a character is taken.
    let text = "日本語のテキスト".repeat(20_000);
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#
    );
    let clip = Clip::chars(20_000);
    check_ladder(line.as_bytes(), clip, &[4096], true).unwrap();
    let mut ladder = Ladder::new(&clip.rungs()).unwrap();
    ladder.feed(line.as_bytes()).unwrap();
    let fits = |frame: &[u8]| testing::condense::measure(clip, frame).unwrap() <= 20_000;
    let (outcome, budget) = ladder.finish_rung(&mut |f, _| fits(f)).unwrap();
    assert!(budget >= 40_000, "took the rung of {budget} bytes");
    let value = frame(&outcome);
    let kept = value["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        kept.chars().count() > 10_000,
        "{} characters kept",
        kept.chars().count()
    );
}

/// Condenses with links, checking the output and the spilled values.
fn linked(line: &[u8], budget: usize, lengths: &[usize]) -> (Value, Vec<SpilledRaw>) {
    let (outcome, spilled) = condense_linked(line, budget, lengths).expect("condenses");
    check_condensed(line, budget, &outcome).unwrap_or_else(|e| panic!("{e}"));
    check_spilled(line, &spilled).unwrap_or_else(|e| panic!("{e}"));
    (frame(&outcome), spilled)
}

#[test]
fn a_cut_text_is_reported_whole_and_linked_after_the_notice() {
    let mut rng = Rng::new(5);
    let t = text(&mut rng, 200_000);
    let line = json!({"result": {"content": [{"type": "text", "text": t}], "structuredContent": {"content": t}}, "jsonrpc": "2.0", "id": 7}).to_string();
    for lengths in [&[][..], &[1], &[7, 4093], &[65_536]] {
        let (value, spilled) = linked(line.as_bytes(), 64 << 10, lengths);
        // The text and its mirror, each in full.
        assert_eq!(spilled.len(), 2, "{lengths:?}");
        assert_eq!(spilled[0].spilled.pointer, "/content/0/text");
        assert_eq!(spilled[1].spilled.pointer, "/structuredContent/content");
        assert_eq!(spilled[0].spilled.mime, "text/plain");
        let content = value["result"]["content"].as_array().unwrap();
        assert_eq!(content.len(), 4, "text, notice, two links");
        assert_eq!(content[2]["type"], "resource_link");
        assert_eq!(content[2]["uri"], "test://v/0");
        assert_eq!(content[2]["name"], "content/0/text");
        assert_eq!(content[2]["size"], spilled[0].raw.len());
        assert!(
            content[1]["text"]
                .as_str()
                .unwrap()
                .contains("read it with test://")
        );
    }
}

#[test]
fn a_mirror_kept_whole_then_shrunk_is_reported_whole() {
    // The mirror comes first and fits; the text after it is cut, and the
    // mirror shrunk to the same prefix: both are reported in full.
    let t = "m".repeat(20_000);
    let line = json!({"result": {"structuredContent": {"content": t}, "content": [{"type": "text", "text": t}]}, "jsonrpc": "2.0", "id": 1}).to_string();
    let (value, spilled) = linked(line.as_bytes(), 30 << 10, &[1000]);
    let pointers: Vec<&str> = spilled.iter().map(|s| s.spilled.pointer.as_str()).collect();
    assert!(
        pointers.contains(&"/structuredContent/content"),
        "{pointers:?}"
    );
    assert!(pointers.contains(&"/content/0/text"), "{pointers:?}");
    assert_eq!(
        value["result"]["structuredContent"]["content"],
        value["result"]["content"][0]["text"]
    );
}

#[test]
fn a_left_out_binary_value_is_reported_with_its_media_type() {
    let data = "QUJD".repeat(50_000);
    // `mimeType` after `data`: known only when the block closes.
    let line = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "image", "data": data, "mimeType": "image/png"}]}}).to_string();
    let (value, spilled) = linked(line.as_bytes(), 16 << 10, &[333]);
    assert_eq!(spilled.len(), 1);
    assert_eq!(spilled[0].spilled.kind, SpillKind::Binary);
    assert_eq!(spilled[0].spilled.mime, "image/png");
    assert_eq!(spilled[0].raw, data.as_bytes());
    let link = &value["result"]["content"][2];
    assert_eq!(link["mimeType"], "image/png");
    assert_eq!(link["name"], "content/0/data");
}

#[test]
fn at_most_max_links_values_are_reported() {
    let blocks: Vec<Value> = (0..20)
        .map(|i| json!({"type": "text", "text": format!("{i}").repeat(3_000)}))
        .collect();
    let line = json!({"jsonrpc": "2.0", "id": 3, "result": {"content": blocks}}).to_string();
    let (value, spilled) = linked(line.as_bytes(), MIN_LINKED_BUDGET + 8_000, &[]);
    assert!(spilled.len() <= MAX_LINKS);
    let links = value["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "resource_link")
        .count();
    assert_eq!(links, spilled.len());
}

#[test]
fn a_cut_array_reports_its_rest_one_element_a_line() {
    // A search result: many small matches in `structuredContent`, and
    // each as a block in `content`. Neither array fits.
    let matches: Vec<Value> = (0..3_000)
        .map(|i| json!({"path": format!("src/file{i}.rs"), "line": i, "text": "needle\there"}))
        .collect();
    let blocks: Vec<Value> = (0..3_000)
        .map(|i| json!({"type": "text", "text": format!("src/file{i}.rs:{i}: needle")}))
        .collect();
    let line = json!({"jsonrpc": "2.0", "id": 4, "result": {"content": blocks, "structuredContent": {"matches": matches}}}).to_string();
    for lengths in [&[][..], &[1], &[7, 4093], &[65_536]] {
        let (value, spilled) = linked(line.as_bytes(), 32 << 10, lengths);
        let rests: Vec<&SpilledRaw> = spilled
            .iter()
            .filter(|s| matches!(s.spilled.kind, SpillKind::Elements { .. }))
            .collect();
        assert_eq!(rests.len(), 2, "{lengths:?}");
        for (rest, pointer, whole) in [
            (rests[0], "/content", &blocks),
            (rests[1], "/structuredContent/matches", &matches),
        ] {
            assert_eq!(rest.spilled.pointer, pointer);
            assert_eq!(rest.spilled.mime, "application/json");
            let SpillKind::Elements { first } = rest.spilled.kind else {
                unreachable!()
            };
            let first = first as usize;
            // Kept and spilled, together, are every element once.
            let kept = value["result"]
                .pointer(pointer)
                .unwrap()
                .as_array()
                .unwrap();
            assert!(first < whole.len(), "{first}");
            assert_eq!(kept[..first], whole[..first]);
            let lines = rest.raw.split(|&b| b == b'\n').count();
            assert_eq!(lines, whole.len() - first + 2, "one element a line");
        }
        let links: Vec<&Value> = value["result"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "resource_link")
            .collect();
        assert_eq!(links.len(), 2);
        let SpillKind::Elements { first } = rests[1].spilled.kind else {
            unreachable!()
        };
        assert_eq!(
            links[1]["name"],
            format!("structuredContent/matches from item {first}")
        );
        let notice = value["result"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["text"].as_str())
            .find(|t| t.starts_with("[drainpipe]"))
            .unwrap();
        assert!(
            notice.contains("of an array, the items left out"),
            "{notice}"
        );
    }
}

#[test]
fn links_need_their_room() {
    assert_eq!(
        Condenser::new(MIN_CONDENSE_BUDGET)
            .and_then(Condenser::with_links)
            .unwrap_err(),
        CondenseError::BudgetTooSmall {
            budget: MIN_CONDENSE_BUDGET
        }
    );
}

#[test]
fn property_linked_results_are_valid_bounded_honest_and_complete() {
    bolero::check!()
        .with_type::<(u64, u16, u64)>()
        .for_each(|&(seed, budget, split)| {
            let mut rng = Rng::new(seed);
            let line = tool_response(&mut rng);
            let budget = MIN_LINKED_BUDGET + usize::from(budget) * 4;
            let mut split_rng = Rng::new(split);
            let lengths: Vec<usize> = (0..8).map(|_| 1 + split_rng.below(5_000)).collect();
            match condense_linked(&line, budget, &lengths) {
                Ok((outcome, spilled)) => {
                    if let Err(e) = check_condensed(&line, budget, &outcome)
                        .and_then(|()| check_spilled(&line, &spilled))
                    {
                        panic!("seed {seed}, budget {budget}: {e}");
                    }
                }
                Err(e) => assert!(e.contains("cannot be cut"), "seed {seed}: {e}"),
            }
        });
}

#[test]
fn a_text_inside_a_replaced_block_is_no_longer_mirrored() {
    // The text is kept in a block whose binary value then does not fit:
    // the block is replaced, and a later string equal to the text must not
    // be matched against what is no longer in the output.
    let t = "a".repeat(20_000);
    let data = "QUJD".repeat(100_000);
    let line = json!({"result": {"content": [{"type": "text", "text": t, "data": data}], "structuredContent": {"t": t}}, "jsonrpc": "2.0", "id": 1}).to_string();
    for lengths in [&[][..], &[4096], &[1]] {
        let outcome = condense_split(line.as_bytes(), 64 << 10, lengths).expect("condenses");
        check_condensed(line.as_bytes(), 64 << 10, &outcome).unwrap_or_else(|e| panic!("{e}"));
        let (outcome, spilled) =
            condense_linked(line.as_bytes(), 64 << 10, lengths).expect("condenses");
        check_condensed(line.as_bytes(), 64 << 10, &outcome).unwrap_or_else(|e| panic!("{e}"));
        check_spilled(line.as_bytes(), &spilled).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn a_media_type_longer_than_kept_is_not_reported() {
    let xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
    let long = format!("application/x-{}", "y".repeat(200));
    let data = "QUJD".repeat(50_000);
    for (mime, expected) in [(xlsx, xlsx), (long.as_str(), "application/octet-stream")] {
        let line = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "resource", "resource": {"uri": "file:///x", "blob": data, "mimeType": mime}}]}}).to_string();
        let (_, spilled) = linked(line.as_bytes(), 16 << 10, &[100]);
        assert_eq!(spilled[0].spilled.mime, expected);
    }
}

/// The shapes of issue 31 whose cut results must fill the budget: each a
/// name and a `tools/call` response line larger than every budget tried.
fn spending_shapes() -> Vec<(&'static str, String)> {
    const MIB: usize = 1 << 20;
    let mut rng = Rng::new(31);
    let plain = |n: usize| "x".repeat(n);
    let one = plain(MIB);
    let mut shapes = vec![(
        "one text",
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": one}]}}),
    )];
    // The filesystem server writes `structuredContent.content`, the Python
    // SDK `structuredContent.result`; both after `content`, `id` last.
    shapes.push((
        "text and mirror",
        json!({"result": {"content": [{"type": "text", "text": one}], "structuredContent": {"content": one}}, "jsonrpc": "2.0", "id": 2}),
    ));
    shapes.push((
        "python sdk",
        json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": one}], "structuredContent": {"result": one}, "isError": false}}),
    ));
    let (a, b, c) = (plain(MIB / 2), "y".repeat(MIB / 2), "z".repeat(MIB / 2));
    shapes.push((
        "three texts",
        json!({"jsonrpc": "2.0", "id": 4, "result": {"content": [{"type": "text", "text": a}, {"type": "text", "text": b}, {"type": "text", "text": c}]}}),
    ));
    shapes.push((
        "two mirrored",
        json!({"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": a}, {"type": "text", "text": b}], "structuredContent": {"first": a, "second": b}}}),
    ));
    let (m, n) = (text(&mut rng, 800_000), text(&mut rng, 600_000));
    shapes.push((
        "escapes",
        json!({"jsonrpc": "2.0", "id": 6, "result": {"content": [{"type": "text", "text": m}, {"type": "resource", "resource": {"uri": "file:///n", "text": n}}], "structuredContent": {"result": m}}}),
    ));
    shapes
        .into_iter()
        .map(|(name, value)| (name, value.to_string()))
        .collect()
}

#[test]
fn a_cut_result_spends_at_least_nine_tenths_of_the_budget() {
    let mut rng = Rng::new(7);
    let pieces: Vec<usize> = (0..64).map(|_| 1 + rng.below(9_000)).collect();
    let mut failures = Vec::new();
    for (name, line) in spending_shapes() {
        for budget in [64 << 10, 256 << 10, 1 << 20] {
            assert!(line.len() > budget, "{name} fits {budget}");
            for links in [false, true] {
                for lengths in [&[][..], &pieces[..]] {
                    let (outcome, spilled) = if links {
                        condense_linked(line.as_bytes(), budget, lengths).expect("condenses")
                    } else {
                        (
                            condense_split(line.as_bytes(), budget, lengths).expect("condenses"),
                            Vec::new(),
                        )
                    };
                    let Condensed::Cut { frame, .. } = &outcome else {
                        panic!("{name}: unchanged");
                    };
                    // The bytes kept of each value cut, for the record.
                    let value = self::frame(&outcome);
                    let kept: Vec<(&str, usize)> =
                        value["result"]["_meta"]["io.drainpipe/truncated"]["cut"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .filter_map(|p| {
                                let p = p.as_str()?;
                                Some((p, value["result"].pointer(p)?.as_str()?.len()))
                            })
                            .collect();
                    eprintln!(
                        "{name:>16} budget {budget:>7} links {links:>5} pieces {:>3}: {:>7} bytes ({:.1}%), kept {kept:?}",
                        lengths.len(),
                        frame.len(),
                        frame.len() as f64 * 100.0 / budget as f64
                    );
                    if let Err(e) = check_condensed(line.as_bytes(), budget, &outcome)
                        .and_then(|()| check_spilled(line.as_bytes(), &spilled))
                    {
                        failures.push(format!("{name}, budget {budget}, links {links}: {e:.300}"));
                    }
                    if frame.len() < budget / 10 * 9 {
                        failures.push(format!(
                            "{name}, budget {budget}, links {links}: {} bytes",
                            frame.len()
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn an_image_after_a_cut_text_takes_room_from_it() {
    // The text takes all the room first; the image after it is kept whole
    // by cutting the text shorter (the texts keep half the budget in all).
    let t = "t".repeat(1 << 20);
    let data = "QUJD".repeat(20_000);
    let line = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": t}, {"type": "image", "data": data, "mimeType": "image/png"}]}}).to_string();
    let budget = 256 << 10;
    for lengths in [&[][..], &[1000], &[7, 4093]] {
        let outcome = condense_split(line.as_bytes(), budget, lengths).expect("condenses");
        check_condensed(line.as_bytes(), budget, &outcome).unwrap_or_else(|e| panic!("{e}"));
        let value = frame(&outcome);
        assert_eq!(value["result"]["content"][1]["data"], data.as_str());
        let kept = value["result"]["content"][0]["text"].as_str().unwrap();
        assert!(kept.len() > budget / 2, "kept {}", kept.len());
    }
    // An image that cannot fit even so is left out: the text keeps half.
    let data = "QUJD".repeat(50_000);
    let line = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": t}, {"type": "image", "data": data, "mimeType": "image/png"}]}}).to_string();
    let value = frame(&condense(line.as_bytes(), budget));
    assert!(
        value["result"]["content"][1]["text"]
            .as_str()
            .unwrap()
            .contains("left out")
    );
    let kept = value["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        kept.len() >= budget / 2 - (budget / 64),
        "kept {}",
        kept.len()
    );
}

#[test]
fn small_blocks_after_a_cut_text_leave_it_an_eighth() {
    let t = "t".repeat(1 << 20);
    let mut blocks = vec![json!({"type": "text", "text": t})];
    blocks.extend((0..20_000).map(|i| json!({"type": "text", "text": format!("line {i}")})));
    let line = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": blocks}}).to_string();
    let budget = 256 << 10;
    for lengths in [&[][..], &[333]] {
        let outcome = condense_split(line.as_bytes(), budget, lengths).expect("condenses");
        check_condensed(line.as_bytes(), budget, &outcome).unwrap_or_else(|e| panic!("{e}"));
        let value = frame(&outcome);
        let content = value["result"]["content"].as_array().unwrap();
        let kept = content[0]["text"].as_str().unwrap();
        // Small blocks took room until the text held an eighth; then the
        // array was cut.
        assert!(
            kept.len() >= budget / 8 - budget / 64,
            "kept {}",
            kept.len()
        );
        assert!(kept.len() < budget / 4, "kept {}", kept.len());
        assert!(content.len() > 1_000, "{} blocks", content.len());
        assert!(content.len() < 20_001);
    }
}

#[test]
fn a_text_share_still_caps_a_text() {
    let t = "t".repeat(1 << 20);
    let line =
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": t}]}})
            .to_string();
    let budget = 256 << 10;
    let mut condenser = Condenser::new(budget).unwrap().with_text_share(128);
    condenser.feed(line.as_bytes()).unwrap();
    let outcome = condenser.finish().unwrap();
    let value = frame(&outcome);
    let kept = value["result"]["content"][0]["text"].as_str().unwrap();
    assert!(kept.len() <= budget / 2, "kept {}", kept.len());
    assert!(kept.len() > budget / 2 - 2048, "kept {}", kept.len());
}

#[test]
fn slots_written_before_a_shrink_move_with_the_output() {
    // `_meta` (the marker's slot) closes before the mirror that shrinks the
    // text; a long id after `result` (which cannot be cut) shrinks the
    // texts again once every slot is written; a block is replaced after
    // a shrink moved it.
    let mut rng = Rng::new(9);
    let t = text(&mut rng, 200_000);
    let t = serde_json::to_string(&t).unwrap();
    let id = "i".repeat(3_000);
    let data = "QUJD".repeat(100_000);
    let block = format!(r#"{{"type":"text","text":{t}}}"#);
    let lines = [
        format!(
            r#"{{"result":{{"content":[{block}],"_meta":{{"k":1}},"structuredContent":{{"content":{t}}}}},"jsonrpc":"2.0","id":"{id}"}}"#
        ),
        format!(r#"{{"result":{{"content":[{block},{block}]}},"id":"{id}"}}"#),
        // The second block's text shrinks the first while the block is
        // open; then its binary value does not fit and it is replaced.
        format!(
            r#"{{"result":{{"content":[{block},{{"type":"text","text":{t},"data":"{data}"}}]}},"id":"{id}"}}"#
        ),
        format!(
            r#"{{"result":{{"structuredContent":{{"content":{t}}},"content":[{block}],"_meta":{{}}}},"jsonrpc":"2.0","id":"{id}"}}"#
        ),
    ];
    for line in &lines {
        for budget in [MIN_LINKED_BUDGET + 4_000, 64 << 10] {
            for lengths in [&[][..], &[1], &[777, 5]] {
                let outcome = condense_split(line.as_bytes(), budget, lengths).expect("condenses");
                check_condensed(line.as_bytes(), budget, &outcome)
                    .unwrap_or_else(|e| panic!("{e:.500}"));
                assert_eq!(frame(&outcome)["id"], id.as_str());
                let (outcome, spilled) =
                    condense_linked(line.as_bytes(), budget, lengths).expect("condenses");
                check_condensed(line.as_bytes(), budget, &outcome)
                    .unwrap_or_else(|e| panic!("{e:.500}"));
                check_spilled(line.as_bytes(), &spilled).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}

#[test]
fn an_escaped_surrogate_pair_is_never_split() {
    // Python's `json.dumps` (ensure_ascii) writes an emoji as two escapes.
    let t = r"ab\ud83d\ude00\u00e9".repeat(20_000);
    let lines = [
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{t}"}}]}}}}"#
        ),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{t}"}}],"structuredContent":{{"result":"{t}"}}}}}}"#
        ),
    ];
    for line in &lines {
        for budget in (MIN_CONDENSE_BUDGET..MIN_CONDENSE_BUDGET + 24).chain(65_536..65_560) {
            for lengths in [&[][..], &[7]] {
                let outcome = condense_split(line.as_bytes(), budget, lengths).expect("condenses");
                check_condensed(line.as_bytes(), budget, &outcome)
                    .unwrap_or_else(|e| panic!("budget {budget}: {e:.200}"));
            }
        }
    }
}
