//! Table tests: chunks in, events out.

use drainpipe_framer::owned::{OwnedEnvelope, OwnedEvent, OwnedId};
use drainpipe_framer::testing::{outcomes, reference_outcomes, run_split};
use drainpipe_framer::{Config, Event, Framer, JsonError, JsonErrorKind};

/// Pushes `chunks` in order, then finishes the stream.
fn run(config: Config, chunks: &[&[u8]]) -> Vec<OwnedEvent> {
    let mut framer = Framer::new(config);
    let mut events = Vec::new();
    for chunk in chunks {
        framer.push(chunk, |e| events.push(e.into()));
        assert!(framer.buffered() <= config.max_frame_bytes());
    }
    framer.finish(|e| events.push(e.into()));
    events
}

fn limit(n: usize) -> Config {
    Config::default().with_max_frame_bytes(n)
}

fn frame(offset: u64, bytes: &[u8]) -> OwnedEvent {
    let envelope = drainpipe_framer::testing::serde_envelope(bytes);
    OwnedEvent::Frame {
        offset,
        bytes: bytes.to_vec(),
        envelope,
    }
}

fn number_id(n: &str) -> OwnedEnvelope {
    OwnedEnvelope {
        id: Some(OwnedId::Number(n.as_bytes().to_vec())),
        ..Default::default()
    }
}

fn malformed(offset: u64, kind: JsonErrorKind, at: u64, envelope: OwnedEnvelope) -> OwnedEvent {
    OwnedEvent::Malformed {
        offset,
        error: JsonError { kind, at },
        envelope,
    }
}

/// An oversize line reported before any envelope field was seen.
fn oversize(offset: u64, looks_like_json: bool) -> OwnedEvent {
    OwnedEvent::Oversize {
        offset,
        looks_like_json,
        envelope: OwnedEnvelope::default(),
    }
}

/// A rejected line ended, with nothing recorded of its envelope.
fn discarded(offset: u64, len: u64) -> OwnedEvent {
    discarded_with(offset, len, OwnedEnvelope::default(), false)
}

/// A rejected line ended: its envelope over the whole line, and whether it
/// was a valid message but for its size.
fn discarded_with(offset: u64, len: u64, envelope: OwnedEnvelope, well_formed: bool) -> OwnedEvent {
    OwnedEvent::Discarded {
        offset,
        len,
        at_eof: false,
        envelope,
        well_formed,
    }
}

#[test]
fn frames_split_anywhere_are_identical() {
    let stream = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"text\":\"caf\u{e9} \u{1F600} \\\"q\\\"\"}}\r\n{\"id\":2,\"method\":\"ping\"}\n";
    let stream = stream.as_bytes();
    let whole = run(Config::default(), &[stream]);
    assert_eq!(whole.len(), 2);
    for cut in 0..=stream.len() {
        assert_eq!(
            run(Config::default(), &[&stream[..cut], &stream[cut..]]),
            whole,
            "cut at {cut}"
        );
    }
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(run(Config::default(), &bytes), whole, "one byte at a time");
}

#[test]
fn frames_inside_a_chunk_are_not_copied() {
    let mut framer = Framer::new(Config::default());
    let mut starts = Vec::new();
    framer.push(b"{\"a\":1}\n{\"b\":", |e| {
        if let Event::Frame(f) = e {
            starts.push(f.chunk_start)
        }
    });
    framer.push(b"2}\n{\"c\":3}\n", |e| {
        if let Event::Frame(f) = e {
            starts.push(f.chunk_start)
        }
    });
    assert_eq!(starts, [Some(0), None, Some(3)]);
}

/// A table row: name, configuration, chunks pushed, events expected.
type Case = (&'static str, Config, Vec<&'static [u8]>, Vec<OwnedEvent>);

#[test]
fn table() {
    use JsonErrorKind::*;
    let cases: Vec<Case> = vec![
        (
            "crlf stripped, split between \\r and \\n",
            Config::default(),
            vec![b"{\"id\":1}\r", b"\n"],
            vec![frame(0, b"{\"id\":1}")],
        ),
        (
            "blank lines skipped",
            Config::default(),
            vec![b"\n \r\n\t\n{}\n"],
            vec![frame(6, b"{}")],
        ),
        (
            "stray log line",
            Config::default(),
            vec![b"Server started on port 3000\r\n{}\n"],
            vec![
                OwnedEvent::NotProtocol {
                    offset: 0,
                    line: b"Server started on port 3000".to_vec(),
                },
                frame(29, b"{}"),
            ],
        ),
        (
            "unterminated string",
            Config::default(),
            vec![b"{\"id\":4,\"result\":\"abc\n{}\n"],
            vec![
                malformed(
                    0,
                    Incomplete,
                    21,
                    OwnedEnvelope {
                        has_result: true,
                        ..number_id("4")
                    },
                ),
                discarded_with(
                    0,
                    21,
                    OwnedEnvelope {
                        has_result: true,
                        ..number_id("4")
                    },
                    false,
                ),
                frame(22, b"{}"),
            ],
        ),
        (
            "control character in a string",
            Config::default(),
            vec![b"{\"a\":\"x\ty\"}\n"],
            vec![
                malformed(0, ControlInString, 7, OwnedEnvelope::default()),
                discarded(0, 11),
            ],
        ),
        (
            "trailing garbage",
            Config::default(),
            vec![b"{} {}\n"],
            vec![
                malformed(0, TrailingCharacters, 3, OwnedEnvelope::default()),
                discarded(0, 5),
            ],
        ),
        (
            "batch arrays are not messages",
            Config::default(),
            vec![b"[{\"id\":1}]\n"],
            vec![
                malformed(0, TopLevelNotObject, 0, OwnedEnvelope::default()),
                discarded(0, 10),
            ],
        ),
        (
            "invalid utf-8",
            Config::default(),
            vec![b"{\"a\":\"\xff\"}\n"],
            vec![
                malformed(0, InvalidUtf8, 6, OwnedEnvelope::default()),
                discarded(0, 9),
            ],
        ),
        (
            "utf-8 split inside a code point",
            Config::default(),
            vec![b"{\"a\":\"\xf0\x9f", b"\x98\x80\"}\n"],
            vec![frame(0, "{\"a\":\"\u{1F600}\"}".as_bytes())],
        ),
        (
            // Whole, the chunk is valid UTF-8 in one pass; the limit still
            // cuts the code point, and the validator must not see half of it
            // (it would call it an unexpected byte, as it does when whole).
            "the limit cuts a code point: oversize, as under any chunking",
            limit(10),
            vec!["{\"id\":10\u{1F600}\"}\n{}\n".as_bytes()],
            // The id ended at the first byte of the code point, before the
            // error: recorded; the line is not well formed.
            vec![
                oversize(0, true),
                discarded_with(0, 14, number_id("10"), false),
                frame(15, b"{}"),
            ],
        ),
        (
            "oversize then a valid line",
            limit(16),
            vec![b"{\"id\":5,\"result\":\"xxxxxxxx\"}\n{\"id\":6}\n"],
            vec![
                OwnedEvent::Oversize {
                    offset: 0,
                    looks_like_json: true,
                    // `"result"` ends exactly at the limit: seen, so recorded.
                    envelope: OwnedEnvelope {
                        has_result: true,
                        ..number_id("5")
                    },
                },
                discarded_with(
                    0,
                    28,
                    OwnedEnvelope {
                        has_result: true,
                        ..number_id("5")
                    },
                    true,
                ),
                frame(29, b"{\"id\":6}"),
            ],
        ),
        (
            "two oversize lines in a row",
            limit(8),
            vec![b"0123456789\n{\"id\":7,\"x\":1}\n{}\n"],
            vec![
                oversize(0, false),
                discarded(0, 10),
                OwnedEvent::Oversize {
                    offset: 11,
                    looks_like_json: true,
                    envelope: number_id("7"),
                },
                discarded_with(11, 14, number_id("7"), true),
                frame(26, b"{}"),
            ],
        ),
        (
            "exactly at the limit",
            limit(8),
            vec![b"{\"a\":12}\n"],
            vec![frame(0, b"{\"a\":12}")],
        ),
        (
            "exactly at the limit with crlf",
            limit(8),
            vec![b"{\"a\":12}\r", b"\n"],
            vec![frame(0, b"{\"a\":12}")],
        ),
        (
            "one over the limit",
            limit(8),
            vec![b"{\"a\":123}\n"],
            vec![
                oversize(0, true),
                discarded_with(0, 9, OwnedEnvelope::default(), true),
            ],
        ),
        (
            "a \\r inside the line counts",
            limit(8),
            vec![b"{\"a\":12}\r", b" \n"],
            vec![
                oversize(0, true),
                discarded_with(0, 10, OwnedEnvelope::default(), true),
            ],
        ),
        (
            "limit counts bytes, not characters",
            limit(12),
            vec!["{\"a\":\"ééé\"}\n{\"a\":\"éé\"}\n".as_bytes()],
            vec![
                oversize(0, true),
                discarded_with(0, 14, OwnedEnvelope::default(), true),
                frame(15, "{\"a\":\"éé\"}".as_bytes()),
            ],
        ),
        (
            "an error before the limit wins",
            limit(8),
            vec![b"{\"a\":tx, \"padding\"}\n"],
            vec![
                malformed(0, InvalidLiteral, 6, OwnedEnvelope::default()),
                discarded(0, 19),
            ],
        ),
        (
            "truncated at eof",
            Config::default(),
            vec![b"{\"id\":9,\"resu"],
            vec![OwnedEvent::Truncated {
                offset: 0,
                len: 13,
                envelope: number_id("9"),
            }],
        ),
        (
            "oversize at eof",
            limit(4),
            vec![b"{\"id\":1"],
            vec![
                oversize(0, true),
                OwnedEvent::Discarded {
                    offset: 0,
                    len: 7,
                    at_eof: true,
                    // The number never ended: not recorded.
                    envelope: OwnedEnvelope::default(),
                    well_formed: true,
                },
            ],
        ),
        (
            "whitespace at eof is not a message",
            Config::default(),
            vec![b"{}\n  "],
            vec![frame(0, b"{}")],
        ),
    ];
    let mut failures = Vec::new();
    for (name, config, chunks, expected) in cases {
        let got = run(config, &chunks);
        if got != expected {
            failures.push(format!(
                "{name}:\n  got      {got:?}\n  expected {expected:?}"
            ));
        }
        // The same stream pushed one byte at a time gives the same events.
        let stream: Vec<u8> = chunks.concat();
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        let got = run(config, &bytes);
        if got != expected {
            failures.push(format!(
                "{name}, one byte at a time:\n  got      {got:?}\n  expected {expected:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn stats_count_every_line() {
    let stream = b"{}\n\nlog\n{\"a\":\"xxxxxxxxxxxxxxxxxxxx\"}\n{bad}\n{\"a\":1}";
    let (_, stats) = run_split(limit(16), stream, &[3], true);
    assert_eq!(stats.bytes_in, stream.len() as u64);
    assert_eq!(stats.frames, 1);
    assert_eq!(stats.blank_lines, 1);
    assert_eq!(stats.not_protocol, 1);
    assert_eq!(stats.oversize, 1);
    assert_eq!(stats.oversize_bytes_dropped, 28);
    assert_eq!(stats.malformed, 1);
    assert_eq!(stats.malformed_bytes_dropped, 5);
    assert_eq!(stats.truncated, 1);
    assert_eq!(stats.largest_frame, 2);
    assert!(stats.buffered_high_water <= 16);
}

#[test]
fn memory_stays_under_the_limit_on_a_huge_line() {
    let mut framer = Framer::new(limit(1024));
    let chunk = vec![b'x'; 64 * 1024];
    let mut rejected = 0;
    for _ in 0..64 {
        framer.push(&chunk, |e| {
            assert!(matches!(e, Event::Oversize { .. }));
            rejected += 1;
        });
        assert_eq!(framer.buffered(), 0);
    }
    let mut after = Vec::new();
    framer.push(b"\n{}\n", |e| after.push(OwnedEvent::from(e)));
    assert_eq!(rejected, 1);
    assert_eq!(
        after,
        [
            discarded(0, 64 * 64 * 1024),
            frame(64 * 64 * 1024 + 1, b"{}")
        ]
    );
    assert!(framer.stats().buffered_high_water <= 1024);
}

#[test]
fn json_validation_off_frames_and_checks_utf8_only() {
    let config = Config::default().with_json_validation(false);
    let events = run(config, &[b"{not json}\n[1]\n{\"a\":\"\xff\"}\n"]);
    assert!(matches!(&events[0], OwnedEvent::Frame { bytes, .. } if bytes == b"{not json}"));
    assert!(matches!(&events[1], OwnedEvent::Frame { bytes, .. } if bytes == b"[1]"));
    assert!(
        matches!(&events[2], OwnedEvent::Malformed { error, .. } if error.kind == JsonErrorKind::InvalidUtf8)
    );
}

#[test]
fn reset_forgets_the_stream() {
    let mut framer = Framer::new(Config::default());
    framer.push(b"{\"partial\":", |_| panic!("no event yet"));
    framer.reset();
    let mut events = Vec::new();
    framer.push(b"{}\n", |e| events.push(OwnedEvent::from(e)));
    assert_eq!(events, [frame(0, b"{}")]);
    assert_eq!(framer.stats().bytes_in, 3);
}

#[test]
fn adversarial_streams_agree_with_the_reference() {
    for stream in drainpipe_framer::testing::workload::adversarial() {
        for config in [
            limit(64),
            Config::default(),
            limit(64).with_json_validation(false),
            limit(0),
        ] {
            let expected = reference_outcomes(&config, &stream, true);
            for lengths in [&[][..], &[1], &[2, 3], &[7], &[64]] {
                let (events, _) = run_split(config, &stream, lengths, true);
                assert_eq!(
                    outcomes(&events),
                    expected,
                    "{:?} split {lengths:?}",
                    String::from_utf8_lossy(&stream)
                );
            }
        }
    }
}

/// A line that starts a piece with `{` is read by the validator before its
/// newline is looked for: the events must not show it, whatever lies after
/// the object and wherever the pushes end.
#[test]
fn lines_read_before_their_newline_give_the_same_events() {
    let streams: [&[u8]; 15] = [
        b"{\"id\":1,\"result\":{}}\n{\"id\":2,\"result\":{}}\n",
        b"{\"id\":1}\r\n{\"id\":2} \t\r\n{\"id\":3}\r\r\n{\"id\":4}\n",
        // A newline inside the object: two lines, neither JSON on its own.
        b"{\"id\":1,\n\"result\":{}}\n{\"id\":2}\n",
        b"{\"id\":1,\r\n\"result\":2}\n",
        b"{\"a\":\n1}\n{\"b\":[\n]}\n{}\n",
        // Two objects on one line, and one after whitespace.
        b"{\"id\":1}{\"id\":2}\n{\"id\":3} {}\n{\"id\":4}\n",
        // Malformed, then valid: the first must not swallow the second.
        b"{\"id\":1,\"result\":tru}\n{\"id\":2}\n{\"id\":\"x\n\"}\n",
        b"{\"id\":1\n{\"id\":2}\n{\n}\n",
        // Blank lines and whitespace after the object, a last line at EOF.
        b"{\"id\":1}\n\n\n  {\"id\":2}   \n{\"id\":3}",
        b"{\"id\":1}\r",
        // Multibyte text, and invalid UTF-8 after a valid line.
        "{\"t\":\"ação 日本語 😀\",\"id\":7}\n{\"id\":8}\n".as_bytes(),
        b"{\"id\":1}\n{\"t\":\"\xc3\x28\"}\n{\"id\":2}\n",
        // Deeper than the limit, then fine.
        b"{\"a\":[[[[[[[[[[1]]]]]]]]]]}\n{\"id\":2}\n",
        // Exactly at the test limit of 24 bytes, one over, and a few under.
        b"{\"id\":1,\"result\":12345}\n{\"id\":1,\"result\":123456}\n{\"id\":1,\"result\":1}\r\n",
        // Cut by a limit of 7 right after its `\r`, which is not content.
        b"{\"a\":1\r\n{\"a\":[1\r\n",
    ];
    for stream in streams {
        for config in [
            Config::default(),
            limit(7),
            limit(24),
            limit(25),
            Config::default().with_max_depth(4),
        ] {
            let expected = reference_outcomes(&config, stream, true);
            let (whole, whole_stats) = run_split(config, stream, &[], true);
            assert_eq!(
                outcomes(&whole),
                expected,
                "{:?}",
                String::from_utf8_lossy(stream)
            );
            for lengths in [&[1][..], &[2], &[3, 5], &[7], &[11, 1]] {
                let (events, stats) = run_split(config, stream, lengths, true);
                let context = format!("{:?} split {lengths:?}", String::from_utf8_lossy(stream));
                // Every event, error positions and envelopes included.
                assert_eq!(events, whole, "{context}");
                assert_eq!(
                    (
                        stats.frames,
                        stats.malformed,
                        stats.oversize,
                        stats.largest_frame
                    ),
                    (
                        whole_stats.frames,
                        whole_stats.malformed,
                        whole_stats.oversize,
                        whole_stats.largest_frame
                    ),
                    "{context}"
                );
            }
        }
    }
}

/// Lines that each leave an object open are one valid continuation of the
/// first: reading each line before its newline would read on to the end of
/// the chunk from every one of them. After the first such line the push
/// takes the general path, so no byte is read more than twice.
#[test]
fn lines_read_before_their_newline_are_read_at_most_twice() {
    let line = format!("{{\"p\":\"{}\",\"a\":\n", "x".repeat(480));
    let stream = line.repeat(2048);
    let mut framer = Framer::new(Config::default());
    let mut malformed = 0;
    for chunk in stream.as_bytes().chunks(64 << 10) {
        framer.push(chunk, |e| {
            malformed += usize::from(matches!(e, Event::Malformed { .. }))
        });
    }
    assert_eq!(malformed, 2048);
    let fed = framer.validator_bytes();
    assert!(
        fed <= 2 * stream.len() as u64,
        "the validator read {fed} bytes of a {}-byte stream",
        stream.len()
    );
}

#[test]
fn keys_serde_cannot_make_a_string_of_do_not_hide_the_envelope() {
    // A lone surrogate escape is valid JSON grammar; `id` still routes.
    let line = br#"{"\ud800":1,"id":5,"result":0}"#;
    let events = run(Config::default(), &[line, b"\n"]);
    let expected_envelope = OwnedEnvelope {
        has_result: true,
        ..number_id("5")
    };
    assert_eq!(
        drainpipe_framer::testing::serde_envelope(line),
        expected_envelope
    );
    assert_eq!(events, [frame(0, line)]);
}

#[test]
fn escaped_top_level_keys_are_decoded_by_both_sides() {
    let line = br#"{"\u0069d":5,"m\u0065thod":"x"}"#;
    let envelope = drainpipe_framer::testing::serde_envelope(line);
    assert_eq!(envelope.id, Some(OwnedId::Number(b"5".to_vec())));
    assert_eq!(envelope.method, Some(b"x".to_vec()));
    assert_eq!(run(Config::default(), &[line, b"\n"]), [frame(0, line)]);
}

/// The envelope of a line rejected for its size is found wherever its
/// fields stand: `Event::Discarded` reports it over the whole line, under
/// every chunking and in the packed form (`run_split` checks that), while
/// the rejection itself reports what came before the limit.
#[test]
fn the_envelope_is_found_wherever_the_id_stands() {
    let env = |id: Option<OwnedId>, result: bool| OwnedEnvelope {
        id,
        has_result: result,
        ..Default::default()
    };
    let num = |n: &str| Some(OwnedId::Number(n.as_bytes().to_vec()));
    let string = |s: &str| Some(OwnedId::String(s.as_bytes().to_vec()));
    let big = "x".repeat(64);
    let long_id = "9".repeat(300);
    // (name, line, envelope at the rejection, envelope at the end, well formed)
    let cases: Vec<(&str, String, OwnedEnvelope, OwnedEnvelope, bool)> = vec![
        (
            "id first: known at the limit already",
            format!(r#"{{"id":7,"result":"{big}"}}"#),
            env(num("7"), true),
            env(num("7"), true),
            true,
        ),
        (
            "id last, as the TypeScript SDK writes it",
            format!(r#"{{"result":{{"text":"{big}"}},"jsonrpc":"2.0","id":7}}"#),
            env(None, true),
            OwnedEnvelope {
                jsonrpc: Some(b"2.0".to_vec()),
                ..env(num("7"), true)
            },
            true,
        ),
        (
            "nested objects with their own id members do not count",
            format!(r#"{{"result":{{"id":99,"content":[{{"id":98,"t":"{big}"}}]}},"id":7}}"#),
            env(None, true),
            env(num("7"), true),
            true,
        ),
        (
            "\"id\" inside a string value does not count",
            format!(r#"{{"result":"\"id\":5 {big}","id":"a\"b"}}"#),
            env(None, true),
            env(string(r#"a\"b"#), true),
            true,
        ),
        (
            "the key spelled with an escape",
            format!(r#"{{"result":"{big}","\u0069d":-1.5e3}}"#),
            env(None, true),
            env(num("-1.5e3"), true),
            true,
        ),
        (
            "a repeated top-level id: the last one wins",
            format!(r#"{{"id":1,"result":"{big}","id":2}}"#),
            env(num("1"), true),
            env(num("2"), true),
            true,
        ),
        (
            "an id longer than the peek records is not recorded",
            format!(r#"{{"result":"{big}","id":{long_id}}}"#),
            env(None, true),
            env(None, true),
            true,
        ),
        (
            "an error after the id: recorded, not well formed",
            format!(r#"{{"result":"{big}","id":3,"x":tru}}"#),
            env(None, true),
            env(num("3"), true),
            false,
        ),
        (
            "an error before the id: nothing after it is guessed",
            format!(r#"{{"result":{{"ok":tru,"t":"{big}"}},"jsonrpc":"2.0","id":9}}"#),
            env(None, true),
            env(None, true),
            false,
        ),
        (
            "a null id",
            format!(r#"{{"error":{{"message":"{big}"}},"id":null}}"#),
            OwnedEnvelope {
                has_error: true,
                ..Default::default()
            },
            OwnedEnvelope {
                has_error: true,
                id: Some(OwnedId::Null),
                ..Default::default()
            },
            true,
        ),
    ];
    let config = limit(40);
    for (name, line, at_limit, at_end, well_formed) in cases {
        let stream = format!("{line}\n{{\"id\":8,\"result\":1}}\n");
        let len = line.len() as u64;
        for lengths in [&[][..], &[1], &[2], &[3], &[7], &[39, 1, 64]] {
            let (events, _) = run_split(config, stream.as_bytes(), lengths, true);
            let rejection = match &events[0] {
                OwnedEvent::Oversize { envelope, .. } => envelope.clone(),
                OwnedEvent::Malformed { envelope, .. } => envelope.clone(),
                other => panic!("{name}: {other:?}"),
            };
            assert_eq!(rejection, at_limit, "{name}, chunks {lengths:?}");
            assert_eq!(
                events[1],
                discarded_with(0, len, at_end.clone(), well_formed),
                "{name}, chunks {lengths:?}"
            );
            assert_eq!(
                events[2],
                frame(len + 1, b"{\"id\":8,\"result\":1}"),
                "{name}"
            );
        }
    }
}

/// Ids equal in value have one canonical key, whatever their spelling;
/// different ids (a string and a number among them) have different keys.
#[test]
fn ids_are_compared_by_value() {
    use drainpipe_framer::Id;
    let key = |id: Id<'_>| id.canonical();
    let same: &[(Id<'_>, Id<'_>)] = &[
        (Id::String("é".as_bytes()), Id::String(br"\u00e9")),
        (Id::String(br"a/b"), Id::String(br"a\/b")),
        (Id::String(br#"q"q"#), Id::String(br#"q\"q"#)),
        (Id::String("😀".as_bytes()), Id::String(br"\ud83d\ude00")),
        (Id::Number(b"100"), Id::Number(b"1E2")),
        (Id::Number(b"100"), Id::Number(b"100.0")),
        (Id::Number(b"1.5"), Id::Number(b"15e-1")),
        (Id::Number(b"0"), Id::Number(b"-0.0e5")),
        (Id::Number(b"-7"), Id::Number(b"-7.000")),
    ];
    for (a, b) in same {
        assert_eq!(key(*a), key(*b), "{a} and {b}");
    }
    let different: &[(Id<'_>, Id<'_>)] = &[
        (Id::String(b"1"), Id::Number(b"1")),
        (Id::Number(b"1"), Id::Number(b"-1")),
        (Id::Number(b"10"), Id::Number(b"1")),
        (Id::Number(b"0.1"), Id::Number(b"1")),
        (Id::String(br"\ud83d"), Id::String(br"\ud83e")),
        (Id::Null, Id::String(b"null")),
        (Id::String(b"a"), Id::String(b"A")),
    ];
    for (a, b) in different {
        assert_ne!(key(*a), key(*b), "{a} and {b}");
    }
    // serde_json agrees on which string ids are equal.
    for (a, b) in [&same[0], &same[1], &same[3]] {
        let decode = |id: &Id<'_>| serde_json::from_slice::<String>(&id.to_json()).unwrap();
        assert_eq!(decode(a), decode(b));
    }
}
