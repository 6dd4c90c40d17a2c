//! `drainpipe frame` as a process: adversarial input in, one event per line
//! out, memory bounded by the limit whatever the input.

mod cli_support;

use std::io::{Read, Write};
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use cli_support::*;
use serde_json::{Value, json};

/// The events of one run, without the final stats line.
fn events(lines: &[Value]) -> Vec<Value> {
    lines[..lines.len() - 1].to_vec()
}

#[test]
fn every_kind_of_line_becomes_its_event() {
    let too_long = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"{}\"}}",
        "x".repeat(200)
    );
    let input = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
        "",
        &too_long,
        r#"{"jsonrpc":"2.0","id":"a","result":[oops]}"#,
        "Server started on port 3000",
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"t":"é😀\"q\""}}"#,
        r#"{"jsonrpc":"2.0","id":9,"result":{"cut":"#,
    ]
    .join("\n");
    let done = run(
        &mut drainpipe(&["frame", "--max-frame", "100", "--json-events"]),
        input.as_bytes(),
        20,
    );
    assert_eq!(done.code(), 0, "{}", done.stderr);
    let lines = json_lines(&done.stdout);
    let table: Vec<Value> = events(&lines)
        .iter()
        .map(|e| {
            json!([
                e["event"],
                e["offset"],
                e.get("len").cloned().unwrap_or(Value::Null),
                e.get("id").cloned().unwrap_or(Value::Null)
            ])
        })
        .collect();
    let len: Vec<usize> = input.split('\n').map(str::len).collect();
    let offsets: Vec<u64> = {
        let mut at = 0;
        input
            .split('\n')
            .map(|line| {
                let start = at;
                at += line.len() as u64 + 1;
                start
            })
            .collect()
    };
    assert_eq!(
        table,
        vec![
            json!(["frame", offsets[0], len[0], 1]),
            json!(["oversize", offsets[2], null, 7]),
            // The whole line's envelope: the id is known at the end too.
            json!(["discarded", offsets[2], too_long.len(), 7]),
            json!(["malformed", offsets[3], null, "a"]),
            json!(["discarded", offsets[3], len[3], "a"]),
            json!(["not-protocol", offsets[4], len[4], null]),
            json!(["frame", offsets[5], len[5], null]),
            json!(["truncated", offsets[6], len[6], 9]),
        ]
    );
    assert_eq!(lines[0]["method"], "tools/call");
    assert_eq!(lines[0]["kind"], "request");
    assert_eq!(lines[1]["limit"], 100);
    assert_eq!(lines[5]["preview"], "Server started on port 3000");
    let stats = lines.last().unwrap();
    assert_eq!(stats["event"], "stats");
    assert_eq!(stats["frames"], 2);
    assert_eq!(stats["oversize"], 1);
    assert_eq!(stats["malformed"], 1);
    assert_eq!(stats["not_protocol"], 1);
    assert_eq!(stats["blank_lines"], 1);
    assert_eq!(stats["truncated"], 1);
    assert_eq!(stats["bytes_in"], input.len());
}

#[test]
fn without_json_events_only_valid_messages_reach_stdout() {
    let input = b"{\"id\":1,\"result\":{}}\r\nnot protocol\n{\"id\":2,\"result\":[}\n\n{\"id\":3,\"result\":\"\xe2\x82\xac\"}\n";
    let done = run(&mut drainpipe(&["frame"]), input, 20);
    assert_eq!(done.code(), 0);
    assert_eq!(
        done.stdout,
        "{\"id\":1,\"result\":{}}\n{\"id\":3,\"result\":\"\u{20ac}\"}\n"
    );
    assert!(done.stderr.contains("not-protocol"), "{}", done.stderr);
    assert!(done.stderr.contains("malformed"), "{}", done.stderr);
    assert!(done.stderr.contains("\"frames\":2"), "{}", done.stderr);
}

#[test]
fn bad_sizes_are_usage_errors() {
    let done = run(
        &mut drainpipe(&["frame", "--max-frame", "4 parsecs"]),
        b"",
        20,
    );
    assert_eq!(done.code(), 2);
    assert!(done.stderr.contains("unknown size unit"), "{}", done.stderr);
}

/// A line with no newline, far larger than the limit: reported once, read to
/// the end, and the process's memory stays near the limit. 1 GiB by default;
/// set `DRAINPIPE_FRAME_TEST_BYTES` (e.g. 5GiB as a byte count) for more.
#[test]
fn a_huge_line_without_newline_stays_bounded_in_memory() {
    let total: u64 = std::env::var("DRAINPIPE_FRAME_TEST_BYTES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1 << 30);
    let limit = 4u64 << 20;
    let started = Instant::now();
    let mut child = drainpipe(&["frame", "--json-events", "--max-frame", "4MiB"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let mut stdout = child.stdout.take().unwrap();
    let reader = thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).unwrap();
        text
    });
    let mut stdin = child.stdin.take().unwrap();
    let head = b"{\"jsonrpc\":\"2.0\",\"id\":77,\"result\":{\"text\":\"";
    stdin.write_all(head).unwrap();
    let block = vec![b'x'; 1 << 20];
    let mut left = total - head.len() as u64;
    while left > 0 {
        let n = left.min(block.len() as u64) as usize;
        stdin.write_all(&block[..n]).unwrap();
        left -= n as u64;
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "writing {total} bytes took over 300 s"
        );
    }
    // Everything was consumed (the pipe is small): the peak so far is the
    // peak of the whole line.
    let peak = peak_rss(pid);
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "frame did not exit after end of input"
        );
        thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success());
    let lines = json_lines(&reader.join().unwrap());
    assert_eq!(lines[0]["event"], "oversize");
    assert_eq!(lines[0]["id"], 77);
    assert_eq!(
        lines[1],
        json!({"event": "discarded", "offset": 0, "len": total, "at_eof": true,
               "id": 77, "kind": "response", "well_formed": true})
    );
    assert_eq!(lines[2]["bytes_in"], total);
    assert!(
        peak < limit + (32 << 20),
        "peak RSS {peak} bytes for a {total}-byte line; limit {limit}"
    );
    eprintln!(
        "frame: {total}-byte line without newline in {:?}, peak RSS {} KiB",
        started.elapsed(),
        peak >> 10
    );
}
