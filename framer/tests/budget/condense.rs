//! The streaming condenser: table cases at the edges, and a property over
//! generated `tools/call` responses, budgets and chunkings, checked by the
//! shared oracle (`testing::condense`).

use drainpipe_framer::budget::{CondenseError, Condensed, Condenser, MIN_CONDENSE_BUDGET};
use drainpipe_framer::testing::Rng;
use drainpipe_framer::testing::condense::{check_condensed, condense_split, text, tool_response};
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
