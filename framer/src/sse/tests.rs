//! Table tests: input chunks → expected events. Every body is also run
//! whole, one byte at a time and cut at every pair of points; all must give
//! the table's events.

use alloc::vec;
use alloc::vec::Vec;

use super::{OwnedSseEvent, OwnedSseMessage, SseConfig, SseFramer};
use crate::owned::{OwnedEnvelope, OwnedId};
use crate::{JsonError, JsonErrorKind};

fn run(config: SseConfig, chunks: &[&[u8]], eof: bool) -> (Vec<OwnedSseEvent>, Vec<u8>) {
    let mut framer = SseFramer::new(config);
    let mut events = Vec::new();
    for chunk in chunks {
        framer.push(chunk, |event| events.push(event.into()));
        assert!(framer.buffered() <= 2 * config.max_event_bytes());
    }
    if eof {
        framer.finish(|event| events.push(event.into()));
    }
    (events, framer.last_event_id().to_vec())
}

/// The events of `body` under every chunking tried, which must agree.
fn events_of(config: SseConfig, body: &[u8], eof: bool) -> (Vec<OwnedSseEvent>, Vec<u8>) {
    let whole = run(config, &[body], eof);
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    assert_eq!(run(config, &bytes, eof), whole, "one byte at a time");
    for a in 0..=body.len() {
        for b in a..=body.len() {
            let cut = [&body[..a], &body[a..b], &body[b..]];
            assert_eq!(run(config, &cut, eof), whole, "cut at {a}, {b}");
        }
    }
    whole
}

fn message(
    offset: u64,
    len: u64,
    data: &[u8],
    id: &[u8],
    envelope: OwnedEnvelope,
) -> OwnedSseMessage {
    OwnedSseMessage {
        offset,
        len,
        event_type: Vec::new(),
        data: data.to_vec(),
        last_event_id: id.to_vec(),
        envelope,
    }
}

fn response(id: u8) -> OwnedEnvelope {
    OwnedEnvelope {
        jsonrpc: Some(b"2.0".to_vec()),
        id: Some(OwnedId::Number(vec![id])),
        has_result: true,
        ..OwnedEnvelope::default()
    }
}

fn not_json(offset: u64, len: u64, data: &[u8], id: &[u8]) -> OwnedSseEvent {
    OwnedSseEvent::NotJson(message(offset, len, data, id, OwnedEnvelope::default()))
}

const SMALL: SseConfig = SseConfig::new().with_max_event_bytes(40);

#[test]
fn events_as_the_rules_assemble_them() {
    let table: &[(&[u8], &[OwnedSseEvent], &[u8])] = &[
        // Data lines join with LF; one space after the colon is dropped.
        (
            b"data: a\ndata:b\ndata:  c\n\n",
            &[not_json(0, 21, b"a\nb\n c", b"")],
            b"",
        ),
        // A line without a colon is a name with an empty value.
        (b"data\n\n", &[not_json(0, 4, b"", b"")], b""),
        (b"data\ndata\n\n", &[not_json(0, 8, b"\n", b"")], b""),
        // No data, no dispatch; its id still becomes the last event id.
        (b"id: 7\n\n", &[], b"7"),
        (b"event: x\n\n", &[], b""),
        // The id persists; an id with NUL is ignored; an empty id clears it.
        (
            b"id: 1\ndata: a\n\ndata: b\n\nid: 2\0\ndata: c\n\nid\ndata: d\n\n",
            &[
                not_json(0, 12, b"a", b"1"),
                not_json(15, 7, b"b", b"1"),
                not_json(24, 13, b"c", b"1"),
                not_json(40, 9, b"d", b""),
            ],
            b"",
        ),
        // Event type, unknown fields, comments.
        (
            b": hi\nevent: note\nfoo: bar\ndata: x\n\n",
            &[
                OwnedSseEvent::Comment { offset: 0 },
                OwnedSseEvent::NotJson(OwnedSseMessage {
                    event_type: b"note".to_vec(),
                    ..message(0, 30, b"x", b"", OwnedEnvelope::default())
                }),
            ],
            b"",
        ),
        // Retry only of digits, at its line's end, dispatched or not.
        (
            b"retry: 3000\nretry: 1x\nretry:\nretry: 99999999999999999999999\n\n",
            &[
                OwnedSseEvent::Retry { millis: 3000 },
                OwnedSseEvent::Retry { millis: u64::MAX },
            ],
            b"",
        ),
        // CR, CRLF and LF mixed; blank lines between events say nothing.
        (
            b"data: a\r\rdata: b\r\n\r\n\n\ndata: c\n\r",
            &[
                not_json(0, 7, b"a", b""),
                not_json(9, 7, b"b", b""),
                not_json(22, 7, b"c", b""),
            ],
            b"",
        ),
        // A BOM at the start only; later it is content (a field name).
        (
            b"\xEF\xBB\xBFdata: a\n\n\xEF\xBB\xBFdata: b\n\n",
            &[not_json(3, 7, b"a", b"")],
            b"",
        ),
    ];
    for (body, want, last_id) in table {
        let (events, last) = events_of(SseConfig::default(), body, true);
        assert_eq!(events, *want, "{:?}", core::str::from_utf8(body));
        assert_eq!(last, *last_id, "{:?}", core::str::from_utf8(body));
    }
}

#[test]
fn json_data_is_validated_with_the_envelope() {
    let id_last = b"event: message\nid: s1\ndata: {\"result\":{},\"jsonrpc\":\"2.0\",\"id\":3}\n\n";
    let (events, _) = events_of(SseConfig::default(), id_last, true);
    let data = &b"{\"result\":{},\"jsonrpc\":\"2.0\",\"id\":3}"[..];
    assert_eq!(
        events,
        [OwnedSseEvent::Message(OwnedSseMessage {
            event_type: b"message".to_vec(),
            ..message(0, 62, data, b"s1", response(b'3'))
        })]
    );
    // Split over data lines: joined by LF, which is JSON whitespace.
    let split = b"data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":4,\"result\":1}\n\n";
    let (events, _) = events_of(SseConfig::default(), split, true);
    assert!(
        matches!(&events[..], [OwnedSseEvent::Message(m)] if m.envelope == response(b'4')),
        "{events:?}"
    );
    let malformed: &[(&[u8], JsonError)] = &[
        (
            b"data: {\"id\":5,\"result\":tru}\n\n",
            error(JsonErrorKind::InvalidLiteral, 20),
        ),
        (b"data: [1]\n\n", error(JsonErrorKind::TopLevelNotObject, 0)),
        (
            b"data: {\"a\":\"\xff\"}\n\n",
            error(JsonErrorKind::InvalidUtf8, 6),
        ),
        (
            b"data: {\"a\":\"\xc3\"}\n\n",
            error(JsonErrorKind::InvalidUtf8, 6),
        ),
        (
            b"data: {\"a\":\"\xc3\n\n",
            error(JsonErrorKind::InvalidUtf8, 6),
        ),
        (b"data: {\"a\":1\n\n", error(JsonErrorKind::Incomplete, 6)),
        (
            b"data: {}\ndata: {}\n\n",
            error(JsonErrorKind::TrailingCharacters, 3),
        ),
    ];
    for (body, want) in malformed {
        let (events, _) = events_of(SseConfig::default(), body, true);
        match &events[..] {
            [OwnedSseEvent::Malformed { error, .. }] => assert_eq!(error, want, "{body:?}"),
            other => panic!("{body:?}: {other:?}"),
        }
    }
    // The envelope recorded before the error is kept.
    let (events, _) = events_of(SseConfig::default(), b"data: {\"id\":5,\"x\":-}\n\n", true);
    match &events[..] {
        [OwnedSseEvent::Malformed { message, .. }] => {
            assert_eq!(message.envelope.id, Some(OwnedId::Number(b"5".to_vec())))
        }
        other => panic!("{other:?}"),
    }
}

fn error(kind: JsonErrorKind, at: u64) -> JsonError {
    JsonError { kind, at }
}

#[test]
fn an_oversize_event_is_followed_to_its_end_keeping_its_ids() {
    // The limit is 40 bytes of lines. `id` first: named at the limit.
    let id_first = b"id: e1\ndata: {\"id\":6,\"result\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}\n\ndata: {\"id\":7,\"result\":0}\n\n";
    let (events, last) = events_of(SMALL, id_first, true);
    let six = OwnedEnvelope {
        id: Some(OwnedId::Number(b"6".to_vec())),
        ..OwnedEnvelope::default()
    };
    assert_eq!(
        events,
        [
            OwnedSseEvent::Oversize {
                offset: 0,
                last_event_id: b"e1".to_vec(),
                envelope: OwnedEnvelope {
                    has_result: true,
                    ..six.clone()
                },
            },
            OwnedSseEvent::Discarded {
                offset: 0,
                len: 6 + 70,
                at_eof: false,
                last_event_id: b"e1".to_vec(),
                envelope: OwnedEnvelope {
                    has_result: true,
                    ..six
                },
                well_formed: true,
            },
            OwnedSseEvent::Message(message(
                79,
                25,
                b"{\"id\":7,\"result\":0}",
                b"e1",
                OwnedEnvelope {
                    id: Some(OwnedId::Number(b"7".to_vec())),
                    has_result: true,
                    ..OwnedEnvelope::default()
                }
            )),
        ]
    );
    assert_eq!(last, b"e1");
    // `id` last in the JSON and the event's `id` line after the data: both
    // are known only at the end, and reported by `Discarded`.
    let id_last =
        b"data: {\"result\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\",\"id\":8}\nid: e2\n\n";
    let (events, last) = events_of(SMALL, id_last, true);
    let eight = OwnedEnvelope {
        id: Some(OwnedId::Number(b"8".to_vec())),
        has_result: true,
        ..OwnedEnvelope::default()
    };
    assert_eq!(
        events,
        [
            OwnedSseEvent::Oversize {
                offset: 0,
                last_event_id: Vec::new(),
                envelope: OwnedEnvelope {
                    has_result: true,
                    ..OwnedEnvelope::default()
                },
            },
            OwnedSseEvent::Discarded {
                offset: 0,
                len: 65 + 6,
                at_eof: false,
                last_event_id: b"e2".to_vec(),
                envelope: eight,
                well_formed: true,
            },
        ]
    );
    assert_eq!(last, b"e2");
}

#[test]
fn comments_count_against_the_limit_and_still_report_liveness() {
    // 40 bytes exactly is within the limit.
    let at_limit = [&b": "[..], &[b'x'; 34], b"\ndata\n\n"].concat();
    let (events, _) = events_of(SMALL, &at_limit, true);
    assert_eq!(
        events,
        [
            OwnedSseEvent::Comment { offset: 0 },
            not_json(0, 40, b"", b"")
        ]
    );
    // The limit passed at a comment's first byte: the limit is reported
    // first; anywhere later, the comment is.
    let over = [&[b'x'; 40][..], b"\n: ping\n\n"].concat();
    let (events, _) = events_of(SMALL, &over, true);
    let oversize = OwnedSseEvent::Oversize {
        offset: 0,
        last_event_id: Vec::new(),
        envelope: OwnedEnvelope::default(),
    };
    let discarded = |len| OwnedSseEvent::Discarded {
        offset: 0,
        len,
        at_eof: false,
        last_event_id: Vec::new(),
        envelope: OwnedEnvelope::default(),
        well_formed: false,
    };
    assert_eq!(
        events,
        [
            oversize.clone(),
            OwnedSseEvent::Comment { offset: 41 },
            discarded(46)
        ]
    );
    let (events, _) = events_of(SMALL, &[&b":"[..], &[b'x'; 45], b"\n\n"].concat(), true);
    assert_eq!(
        events,
        [
            OwnedSseEvent::Comment { offset: 0 },
            oversize,
            discarded(46)
        ]
    );
}

#[test]
fn the_end_of_the_stream_drops_the_event_it_cuts() {
    let table: &[(&[u8], &[OwnedSseEvent], &[u8])] = &[
        (
            b"id: 1\ndata: {\"id\":1,",
            &[OwnedSseEvent::Truncated {
                offset: 0,
                len: 19,
                envelope: OwnedEnvelope {
                    id: Some(OwnedId::Number(b"1".to_vec())),
                    ..OwnedEnvelope::default()
                },
            }],
            b"",
        ),
        // A complete event line but no blank line: its id is not committed.
        (
            b"data: a\n\nid: 2\ndata: b\n",
            &[
                not_json(0, 7, b"a", b""),
                OwnedSseEvent::Truncated {
                    offset: 9,
                    len: 12,
                    envelope: OwnedEnvelope::default(),
                },
            ],
            b"",
        ),
        // A partial BOM is the first line's content.
        (
            b"\xEF\xBB",
            &[OwnedSseEvent::Truncated {
                offset: 0,
                len: 2,
                envelope: OwnedEnvelope::default(),
            }],
            b"",
        ),
        (b"data: a\n\n", &[not_json(0, 7, b"a", b"")], b""),
        (b"", &[], b""),
    ];
    for (body, want, last_id) in table {
        let (events, last) = events_of(SseConfig::default(), body, true);
        assert_eq!(events, *want, "{:?}", core::str::from_utf8(body));
        assert_eq!(last, *last_id);
    }
    let (events, _) = events_of(SMALL, &[&b"data: "[..], &[b'x'; 50]].concat(), true);
    assert!(matches!(
        &events[..],
        [
            OwnedSseEvent::Oversize { .. },
            OwnedSseEvent::Discarded {
                len: 56,
                at_eof: true,
                well_formed: false,
                ..
            }
        ]
    ));
}

#[test]
fn an_id_longer_than_the_limit_is_ignored() {
    let long_id = [&b"id: "[..], &[b'7'; 41], b"\ndata: x\n\n"].concat();
    let (events, last) = events_of(SMALL, &long_id, true);
    assert!(matches!(
        &events[..],
        [OwnedSseEvent::Oversize { .. }, OwnedSseEvent::Discarded { last_event_id, .. }]
            if last_event_id.is_empty()
    ));
    assert!(last.is_empty());
    let fits = [&b"id: "[..], &[b'7'; 40], b"\n\n"].concat();
    let (_, last) = events_of(SMALL, &fits, true);
    assert_eq!(last, [b'7'; 40]);
}

#[test]
fn the_counters_say_what_happened() {
    let body = [
        &b": ping\n\nid: 1\ndata: {\"id\":1,\"result\":0}\n\ndata: x\n\ndata: [\n\n"[..],
        b"data: ",
        &[b'x'; 100],
        b"\n\ndata: {",
    ]
    .concat();
    let mut framer = SseFramer::new(SMALL);
    for chunk in body.chunks(7) {
        framer.push(chunk, |_| {});
    }
    framer.finish(|_| {});
    let stats = framer.stats();
    assert_eq!(
        (
            stats.messages,
            stats.not_json,
            stats.malformed,
            stats.comments
        ),
        (1, 1, 1, 1)
    );
    assert_eq!((stats.oversize, stats.oversize_bytes_dropped), (1, 106));
    assert_eq!((stats.truncated, stats.largest_event), (1, 30));
    assert_eq!(stats.bytes_in, body.len() as u64);
    // The most held: the oversize event's data up to the limit.
    assert_eq!(stats.buffered_high_water, 34);
}

#[test]
fn finish_readies_the_framer_for_a_reconnection() {
    let mut framer = SseFramer::new(SseConfig::default());
    let mut events: Vec<OwnedSseEvent> = Vec::new();
    framer.push(b"id: 9\ndata: a\n\ndata: b", |e| events.push(e.into()));
    framer.finish(|e| events.push(e.into()));
    assert_eq!(framer.last_event_id(), b"9");
    assert_eq!(framer.position(), 0);
    framer.push(b"\xEF\xBB\xBFdata: c\n\n", |e| events.push(e.into()));
    assert_eq!(
        events,
        [
            not_json(0, 12, b"a", b"9"),
            OwnedSseEvent::Truncated {
                offset: 15,
                len: 7,
                envelope: OwnedEnvelope::default()
            },
            not_json(3, 7, b"c", b"9"),
        ]
    );
}
