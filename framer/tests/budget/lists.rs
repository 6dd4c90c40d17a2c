//! Lists lose nothing: a result with thousands of small items, as the
//! official SDKs write them, condensed at the budgets `drainpipe install`
//! writes for the hosts. No item is cut into a fragment, the notice counts
//! the items, and every item left out is in the rest its array links to.

use drainpipe_framer::budget::{Condensed, Keep, SpillKind};
use drainpipe_framer::testing::condense::{
    SpilledRaw, check_condensed, check_nothing_lost, check_spilled, condense_linked_keeping,
    python_hits_response,
};
use serde_json::{Value, json};

fn condensed(line: &str, budget: usize, keep: Keep) -> (Value, Condensed, Vec<SpilledRaw>) {
    let (outcome, spilled) =
        condense_linked_keeping(line.as_bytes(), budget, &[4093, 7], keep).expect("condenses");
    check_condensed(line.as_bytes(), budget, &outcome).unwrap_or_else(|e| panic!("{e}"));
    check_spilled(line.as_bytes(), &spilled).unwrap_or_else(|e| panic!("{e}"));
    check_nothing_lost(line.as_bytes(), &outcome, &spilled).unwrap_or_else(|e| panic!("{e}"));
    let Condensed::Cut { frame, .. } = &outcome else {
        panic!("not cut")
    };
    (serde_json::from_slice(frame).unwrap(), outcome, spilled)
}

/// The rest reported for the array at `pointer`: its first item and items.
fn rest(spilled: &[SpilledRaw], pointer: &str) -> (usize, Vec<Value>) {
    let value = spilled
        .iter()
        .find(|s| s.spilled.pointer == pointer)
        .unwrap_or_else(|| panic!("no rest for {pointer}"));
    let SpillKind::Elements { first } = value.spilled.kind else {
        panic!("{pointer} is not an array's rest")
    };
    (first as usize, serde_json::from_slice(&value.raw).unwrap())
}

#[test]
fn a_python_list_keeps_whole_items_and_links_the_rest_of_both_copies() {
    let (hits, line) = python_hits_response(5_000);
    for budget in [8_000, 8 << 10, 10_000, 64 << 10] {
        for keep in [Keep::Head, Keep::Ends] {
            let (value, _, spilled) = condensed(&line, budget, keep);
            let content = value["result"]["content"].as_array().unwrap();
            let texts: Vec<&Value> = content
                .iter()
                .take_while(|b| !b["text"].as_str().unwrap_or("").starts_with("[drainpipe]"))
                .collect();
            // Whole items only: each kept block is its hit's whole JSON.
            assert!(!texts.is_empty(), "{budget}: no item kept");
            for (n, block) in texts.iter().enumerate() {
                let hit: Value = serde_json::from_str(block["text"].as_str().unwrap())
                    .unwrap_or_else(|e| panic!("{budget}: block {n} cut: {e}"));
                assert_eq!(hit, hits[n]);
            }
            // Both copies' rests, each linked once, hold every item left out.
            let (first, items) = rest(&spilled, "/content");
            assert_eq!(first, texts.len());
            assert_eq!(items.len(), 5_000 - first);
            let structured = value["result"]["structuredContent"]["result"]
                .as_array()
                .unwrap();
            let (from, items) = rest(&spilled, "/structuredContent/result");
            assert_eq!(items[..], hits[from..]);
            assert!(structured.len() >= from);
            assert_eq!(structured[..from], hits[..from]);
            let links = content
                .iter()
                .filter(|b| b["type"] == "resource_link")
                .count();
            assert_eq!(links, 2, "{budget}: one link per array");
            // The notice counts the items and says where the rest is.
            let notice = content[texts.len()]["text"].as_str().unwrap();
            let said = format!(
                "content: kept {first} of 5000 items, the rest from item {first} at test://v/"
            );
            assert!(notice.contains(&said), "{said}: {notice}");
            assert!(
                notice.contains(&format!(
                    "structuredContent/result: kept {} of 5000 items",
                    structured.len()
                )),
                "{notice}"
            );
        }
    }
}

#[test]
fn without_links_the_notice_counts_what_each_array_left_out() {
    let (_, line) = python_hits_response(5_000);
    let outcome = drainpipe_framer::testing::condense::condense_split(line.as_bytes(), 8_000, &[])
        .expect("condenses");
    check_condensed(line.as_bytes(), 8_000, &outcome).unwrap_or_else(|e| panic!("{e}"));
    let Condensed::Cut { frame, .. } = outcome else {
        panic!("not cut")
    };
    let value: Value = serde_json::from_slice(&frame).unwrap();
    let content = value["result"]["content"].as_array().unwrap();
    let kept = content.len() - 1;
    let notice = content[kept]["text"].as_str().unwrap();
    let said = format!(
        "content: kept {kept} of 5000 items ({} left out)",
        5_000 - kept
    );
    assert!(notice.contains(&said), "{said}: {notice}");
    assert!(
        notice.contains("structuredContent/result: kept "),
        "{notice}"
    );
}

#[test]
fn the_oracle_fails_when_an_arrays_link_is_dropped() {
    // The mutation the oracle must catch: the rest of an array not linked.
    let (_, line) = python_hits_response(5_000);
    let (_, outcome, spilled) = condensed(&line, 8 << 10, Keep::Head);
    for pointer in ["/content", "/structuredContent/result"] {
        let mut dropped = spilled.clone();
        let at = dropped
            .iter()
            .position(|s| s.spilled.pointer == pointer)
            .unwrap();
        // Its file lost: the link points at nothing readable.
        dropped[at].spilled.complete = false;
        let error = check_nothing_lost(line.as_bytes(), &outcome, &dropped).unwrap_err();
        assert!(error.contains("no link holds the rest"), "{error}");
        // Its rest starting one item late: the item between is lost.
        let mut late = spilled.clone();
        if let SpillKind::Elements { first } = &mut late[at].spilled.kind {
            *first += 1;
        }
        let items: Vec<Value> = serde_json::from_slice(&late[at].raw).unwrap();
        late[at].raw = serde_json::to_vec(&items[1..]).unwrap();
        assert!(check_nothing_lost(line.as_bytes(), &outcome, &late).is_err());
    }
}

#[test]
fn a_dict_result_keeps_whole_members_and_links_the_rest() {
    // A `dict` return: one text block (the object, pretty-printed) and the
    // object itself as structuredContent, 5,000 members.
    let map: serde_json::Map<String, Value> = (0..5_000)
        .map(|n| {
            (
                format!("hit-{n:04}"),
                json!({"path": format!("src/file-{n}.rs"), "line": n}),
            )
        })
        .collect();
    let text = serde_json::to_string_pretty(&map).unwrap();
    let line = json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"text": text, "type": "text"}], "isError": false, "structuredContent": map}}).to_string();
    for budget in [8_000, 10_000, 64 << 10] {
        let (value, _, spilled) = condensed(&line, budget, Keep::Ends);
        let text_link = spilled
            .iter()
            .find(|s| s.spilled.pointer == "/content/0/text")
            .expect("the text is linked");
        assert_eq!(text_link.spilled.kind, SpillKind::Text);
        let rest = spilled
            .iter()
            .find(|s| s.spilled.pointer == "/structuredContent")
            .expect("the object's rest is linked");
        let SpillKind::Members { first } = rest.spilled.kind else {
            panic!("{:?}", rest.spilled.kind)
        };
        let kept = value["result"]["structuredContent"].as_object().unwrap();
        assert_eq!(kept.len() as u64, first, "{budget}");
        let notice = value["result"]["content"][1]["text"].as_str().unwrap();
        let said = format!(
            "structuredContent: kept {first} of 5000 members, the rest from member {first} at test://v/"
        );
        assert!(notice.contains(&said), "{said}: {notice}");
    }
}
