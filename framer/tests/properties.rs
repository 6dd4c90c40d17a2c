//! Property tests (bolero; random inputs under plain `cargo test`, coverage
//! guided under `cargo bolero`): the framer against itself under any
//! chunking, and against the reference framer.

use drainpipe_framer::Config;
use drainpipe_framer::testing::{outcomes, reference_outcomes, run_split};

/// Pieces that streams are assembled from: JSON tokens, JSON-RPC keys,
/// newlines, carriage returns, multibyte and broken UTF-8, whole messages
/// and stray log lines. Random bytes alone almost never form valid JSON.
const PIECES: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b"\\",
    b":",
    b",",
    b" ",
    b"\t",
    b"\n",
    b"\r",
    b"\r\n",
    b"\"id\"",
    b"\"method\"",
    b"\"result\"",
    b"\"error\"",
    b"\"jsonrpc\"",
    b"\"2.0\"",
    b"\"tools/call\"",
    b"1",
    b"0",
    b"-",
    b"-0.5e+3",
    b"12",
    b".",
    b"e",
    b"true",
    b"false",
    b"null",
    b"tru",
    b"\\n",
    b"\\u00e9",
    b"\\ud83d\\ude00",
    b"\\x",
    b"\xc3\xa9",
    b"\xf0\x9f\x98\x80",
    b"\xf0\x9f",
    b"\xff",
    b"\x01",
    b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
    b"{\"id\":\"a\\\"b\",\"method\":\"x\"}\n",
    b"{\"id\":2,\"result\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}\n",
    b"Server started on port 3000\n",
    b"xxxxxxxxxxxxxxxx",
];

fn assemble(recipe: &[u8]) -> Vec<u8> {
    recipe
        .iter()
        .flat_map(|&i| PIECES[usize::from(i) % PIECES.len()].iter().copied())
        .collect()
}

fn config(selector: u8) -> Config {
    let max = [0, 1, 8, 16, 40, 64, 4096][usize::from(selector % 7)];
    Config::default()
        .with_max_frame_bytes(max)
        .with_max_depth(if selector & 0x10 != 0 { 2 } else { 128 })
        .with_json_validation(selector & 0x20 == 0)
}

fn lengths(raw: &[u8]) -> Vec<usize> {
    raw.iter().map(|&b| usize::from(b % 17)).collect()
}

#[test]
fn any_chunking_gives_the_same_events() {
    bolero::check!()
        .with_type::<(Vec<u8>, Vec<u8>, u8, bool)>()
        .for_each(|(recipe, splits, selector, eof)| {
            let stream = assemble(recipe);
            let config = config(*selector);
            // How much was buffered depends on the chunking; nothing else may.
            let run = |lengths: &[usize]| {
                let (events, mut stats) = run_split(config, &stream, lengths, *eof);
                stats.buffered_high_water = 0;
                (events, stats)
            };
            let whole = run(&[]);
            assert_eq!(run(&lengths(splits)), whole);
            assert_eq!(run(&[1]), whole);
        });
}

#[test]
fn agrees_with_the_reference_framer() {
    bolero::check!()
        .with_type::<(Vec<u8>, Vec<u8>, u8, bool)>()
        .for_each(|(recipe, splits, selector, eof)| {
            let stream = assemble(recipe);
            let config = config(*selector);
            let (events, stats) = run_split(config, &stream, &lengths(splits), *eof);
            assert_eq!(
                outcomes(&events),
                reference_outcomes(&config, &stream, *eof)
            );
            assert_eq!(stats.bytes_in, stream.len() as u64);
        });
}

#[test]
fn raw_bytes_agree_with_the_reference_framer() {
    bolero::check!()
        .with_type::<(Vec<u8>, Vec<u8>, u8)>()
        .for_each(|(stream, splits, selector)| {
            let config = config(*selector);
            let (events, _) = run_split(config, stream, &lengths(splits), true);
            assert_eq!(outcomes(&events), reference_outcomes(&config, stream, true));
        });
}

#[test]
fn single_lines_validate_like_serde_json() {
    bolero::check!().with_type::<Vec<u8>>().for_each(|recipe| {
        let mut line = assemble(recipe);
        line.retain(|&b| b != b'\n');
        line.push(b'\n');
        // serde_json refuses a 128th nested level; match it exactly.
        let config = Config::default().with_max_depth(127);
        let (events, _) = run_split(config, &line, &[], true);
        let framed = events
            .iter()
            .any(|e| matches!(e, drainpipe_framer::owned::OwnedEvent::Frame { .. }));
        let content = line.strip_suffix(b"\n").unwrap();
        let content = content.strip_suffix(b"\r").unwrap_or(content);
        let serde_ok = std::str::from_utf8(content).is_ok()
            && content.iter().find(|b| !b" \t\r".contains(b)) == Some(&b'{')
            && serde_json::from_slice::<serde::de::IgnoredAny>(content).is_ok();
        assert_eq!(framed, serde_ok, "{}", String::from_utf8_lossy(&line));
    });
}
