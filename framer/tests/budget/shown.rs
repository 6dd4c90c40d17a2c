//! `shown`: what a host shows the model of a response, read in one pass
//! without building the line's tree, equals what parsing the line into a
//! `serde_json::Value` and looking the parts up gives, on every line: the
//! generated responses, their condensed results, hand-written edges (keys
//! given twice, texts that are not strings, a `result` that is not an
//! object, bad numbers and strings in members nothing shows, depth) and
//! those lines with a token replaced anywhere.

use drainpipe_framer::budget::Condensed;
use drainpipe_framer::budget::shown;
use drainpipe_framer::testing::Rng;
use drainpipe_framer::testing::condense::{
    condense_split, python_hits_response, shown_by_value, tool_response_scaled,
};

fn agrees(frame: &[u8]) {
    assert_eq!(
        shown(frame),
        shown_by_value(frame),
        "{}",
        String::from_utf8_lossy(&frame[..frame.len().min(400)])
    );
}

#[test]
fn edges_read_as_a_value_reads_them() {
    let lines: &[&str] = &[
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}]}}"#,
        // A key given twice: the last counts.
        r#"{"id":1,"result":{"content":[{"type":"text","text":"a"}]},"result":{"content":[{"text":"b"}]}}"#,
        r#"{"id":1,"result":{"content":[{"text":"a"}]},"result":7}"#,
        r#"{"id":1,"result":{"content":[{"text":"a"}],"content":{"x":1}}}"#,
        r#"{"id":1,"result":{"content":[{"text":"a","text":"b"}]}}"#,
        r#"{"id":1,"result":{"content":[{"text":"a","text":2}]}}"#,
        r#"{"id":1,"result":{"content":[{"resource":{"text":"r"},"resource":{"uri":"u"}}]}}"#,
        r#"{"id":1,"result":{"structuredContent":{"b":1,"a":2,"b":3},"structuredContent":[1]}}"#,
        // A text that is not a string hides its resource's.
        r#"{"id":1,"result":{"content":[{"text":null,"resource":{"text":"r"}},{"resource":{"text":"s"}}]}}"#,
        r#"{"id":1,"result":{"content":[{"text":["x"]},{"text":{"t":"x"}},{"resource":"x"},{"resource":{"text":1}}]}}"#,
        r#"{"id":1,"result":{"content":["x",1,null,true,[],{}]}}"#,
        r#"{"id":1,"result":{"content":"text"}}"#,
        r#"{"id":1,"result":{"structuredContent":null}}"#,
        r#"{"id":1,"result":{"structuredContent":{"z":[1.5,-0.0,1e300,12345678901234567890,"\u00e9\/"],"a":{}}}}"#,
        // Compact JSON as `serde_json` writes a `Value`: keys sorted by
        // their bytes, the last of a key kept, at every depth; strings
        // escaped its way; numbers as it writes them.
        r#"{"id":1,"result":{"structuredContent":{"z":{"y":1,"b":[{"k":1,"a":{"d":0,"c":0}},{"k":2,"k":3}],"y":2},"":0,"é":1,"e":2,"\u0000":3}}}"#,
        r#"{"id":1,"result":{"structuredContent":["\u0001\u001f\u007f\b\f\n\r\t\"\\\/","é😀\ud83d\ude00",{"k\"ey":"v"}]}}"#,
        r#"{"id":1,"result":{"structuredContent":[0,-1,-0,1.0,1E2,1e-7,0.1,123456789012345678901234,-9223372036854775809,18446744073709551615,18446744073709551616,-9223372036854775808,5e-324,1.7976931348623157e308]}}"#,
        r#"{"id":1,"result":{"structuredContent":{"a":1,"b":{},"c":[],"d":[[]],"e":{"f":{}}}}}"#,
        r#"{"id":1,"result":{"structuredContent":"text"}}"#,
        r#"{"id":1,"result":{"structuredContent":{"a":{"x":1},"a":{"y":2}},"content":[]}}"#,
        // Escapes decode; an escaped key is the same key.
        r#"{"id":1,"result":{"content":[{"te\u0078t":"a\nb\u00e9\ud83d\ude00\/"}]}}"#,
        r#"{"id":1,"\u0072esult":{"content":[{"text":"a"}]}}"#,
        // Not a result that is an object, or not JSON at all.
        r#"{"id":1,"result":"x"}"#,
        r#"{"id":1,"result":[{"content":[]}]}"#,
        r#"{"id":1,"error":{"code":1,"message":"m"}}"#,
        r#"[{"result":{}}]"#,
        r#""result""#,
        "7",
        r#"{"id":1,"result":{}} x"#,
        r#"{"id":1,"result":{}"#,
        // Members nothing shows are still read: a bad number or string
        // there fails the line as it fails a `Value`.
        r#"{"id":1e999,"result":{"content":[{"text":"a"}]}}"#,
        r#"{"id":1,"result":{"content":[{"text":"a","x":-1e400}]}}"#,
        r#"{"id":"\ud800","result":{"content":[]}}"#,
        r#"{"id":"\x","result":{"content":[]}}"#,
        "{\"id\":\"\u{1}\",\"result\":{}}",
        r#"{"id":01,"result":{}}"#,
        r#"{"id":1,"result":{"content":[{"text":"a"},]}}"#,
    ];
    for line in lines {
        agrees(line.as_bytes());
    }
    assert_eq!(
        shown(lines[1].as_bytes()).expect("a result").texts,
        ["b"],
        "the last `result` counts"
    );
    // Invalid UTF-8 in a member nothing shows.
    agrees(b"{\"id\":\"\xff\",\"result\":{}}");
    // Depth: as deep as `serde_json` reads, and one deeper.
    for depth in [126, 127, 128, 200] {
        let line = format!(
            r#"{{"id":1,"result":{{"content":[{{"text":"a"}}],"x":{}1{}}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        agrees(line.as_bytes());
    }
}

#[test]
fn generated_responses_and_their_condensed_results_read_alike() {
    let (_, hits) = python_hits_response(300);
    agrees(hits.as_bytes());
    for seed in 0..300u64 {
        let line = tool_response_scaled(&mut Rng::new(seed), 100);
        agrees(&line);
        for budget in [4_000, 9_000, 30_000] {
            if let Ok(Condensed::Cut { frame, .. }) = condense_split(&line, budget, &[]) {
                agrees(&frame);
            }
        }
    }
}

/// Tokens put in place of a byte range of a generated line: keys twice,
/// values of another kind, bad numbers and escapes, cut structure.
const TOKENS: &[&str] = &[
    r#""text":"#,
    r#""text":1,"#,
    r#""resource":{"text":"r"},"#,
    r#""result":"#,
    r#""content":"#,
    r#""structuredContent":"#,
    "null",
    "[]",
    "{}",
    "1e999",
    "-0",
    r#""\ud800""#,
    r#""\u00e9""#,
    "\"",
    ",",
    "}",
    "]",
    "",
];

#[test]
fn lines_with_a_token_replaced_read_alike() {
    bolero::check!()
        .with_type::<(u64, u16, u8, u8)>()
        .for_each(|&(seed, at, len, token)| {
            let line = tool_response_scaled(&mut Rng::new(seed), 400);
            let at = usize::from(at) % line.len();
            let end = (at + usize::from(len % 16)).min(line.len());
            let token = TOKENS[usize::from(token) % TOKENS.len()];
            let mut edited = line[..at].to_vec();
            edited.extend_from_slice(token.as_bytes());
            edited.extend_from_slice(&line[end..]);
            agrees(&edited);
        });
}
