//! The packed form of events (`drainpipe_framer::packed`, what the
//! component's `push-packed` returns). Every test that goes through
//! `testing::run_split` (the table, the properties, the corpus replay)
//! already checks that each push's events survive it unchanged; these pin
//! what that cannot: bytes inside the chunk are referenced rather than
//! copied, the caller's held line is all that crosses pushes, and a batch
//! from a broken producer is an error, never a panic.

use drainpipe_framer::packed::{EVENT_WORDS, HeldLine, PackedBatch, PackedError, decode};
use drainpipe_framer::testing::workload;
use drainpipe_framer::{Config, Event, Framer};

fn pack(framer: &mut Framer, chunk: &[u8]) -> PackedBatch {
    let mut batch = PackedBatch::default();
    framer.push_packed(chunk, &mut batch).unwrap();
    batch
}

#[test]
fn messages_inside_the_chunk_are_referenced_not_copied() {
    let stream = workload::small(2_000, 7);
    let mut framer = Framer::new(Config::default());
    let batch = pack(&mut framer, &stream);
    assert_eq!(batch.len(), 2_000);
    assert_eq!((batch.join, batch.keep), (0, 0));
    for event in decode(&batch.words, &stream, &[], &batch.carried) {
        let Event::Frame(frame) = event.unwrap() else {
            panic!("the small workload is all frames")
        };
        let start = frame.chunk_start.expect("in the chunk");
        assert!(std::ptr::eq(
            frame.bytes,
            &stream[start..start + frame.bytes.len()]
        ));
    }
}

#[test]
fn a_message_across_pushes_is_assembled_by_the_caller() {
    let message = b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"m\"}";
    let mut framer = Framer::new(Config::default());
    let mut held = HeldLine::default();
    let mut frames = Vec::new();
    let mut receive = |held: &mut HeldLine, chunk: &[u8], batch: &PackedBatch| {
        held.receive(
            chunk,
            &batch.words,
            &batch.carried,
            batch.join,
            batch.keep,
            |event| {
                let Event::Frame(frame) = event else {
                    panic!("{event:?}")
                };
                assert_eq!(frame.chunk_start, None);
                assert_eq!(frame.envelope.method, Some(&b"m"[..]));
                frames.push(frame.bytes.to_vec());
            },
        )
        .unwrap()
    };
    // The first pushes end inside the message: no events, and the caller
    // keeps every byte so far (a `\r` at the end included).
    let first = pack(&mut framer, &message[..10]);
    assert_eq!((first.len(), first.join, first.keep), (0, 0, 10));
    receive(&mut held, &message[..10], &first);
    let second = pack(&mut framer, &message[10..20]);
    assert_eq!((second.len(), second.join, second.keep), (0, 10, 20));
    receive(&mut held, &message[10..20], &second);
    assert_eq!(held.as_bytes(), &message[..20]);
    // The last push ends it and starts another line: the frame is read from
    // the held line; then only the new line's bytes are kept.
    let mut tail = message[20..].to_vec();
    tail.extend_from_slice(b"\r\n{\"id\"");
    let batch = pack(&mut framer, &tail);
    assert_eq!((batch.len(), batch.keep), (1, 5));
    assert_eq!(
        batch.join as usize,
        message.len() - 20 + 1,
        "up to the newline"
    );
    receive(&mut held, &tail, &batch);
    assert_eq!(frames, [message.to_vec()]);
    assert_eq!(held.as_bytes(), b"{\"id\"");
}

#[test]
fn held_numbers_out_of_range_are_errors() {
    let mut held = HeldLine::default();
    let err = held.receive(b"abc", &[], &[], 4, 0, |_| ()).unwrap_err();
    assert_eq!(err, PackedError::Held { join: 4, keep: 0 });
    let err = held.receive(b"abc", &[], &[], 0, 4, |_| ()).unwrap_err();
    assert_eq!(err, PackedError::Held { join: 0, keep: 4 });
    assert!(held.as_bytes().is_empty());
}

#[test]
fn broken_batches_are_errors() {
    let chunk = b"{\"id\":1}\n";
    let mut framer = Framer::new(Config::default());
    let batch = pack(&mut framer, chunk);
    let first = |words: &[u32], line: &[u8]| {
        decode(words, chunk, line, &[])
            .next()
            .map(|event| event.map(|_| ()))
    };

    assert_eq!(
        first(&batch.words[..EVENT_WORDS - 1], &[]),
        Some(Err(PackedError::Length {
            words: EVENT_WORDS - 1
        }))
    );
    let mut words = batch.words.clone();
    words[0] = 0x7;
    assert_eq!(
        first(&words, &[]),
        Some(Err(PackedError::Tag { index: 0, tag: 0x7 }))
    );
    // A frame with an error kind, with a bit of another kind (at-eof,
    // looks-like-json, well-formed), and an unknown high bit.
    for tag in [
        batch.words[0] | 3 << 4,
        batch.words[0] | 1 << 15,
        batch.words[0] | 1 << 14,
        batch.words[0] | 1 << 16,
        batch.words[0] | 1 << 20,
    ] {
        words[0] = tag;
        assert_eq!(
            first(&words, &[]),
            Some(Err(PackedError::Tag { index: 0, tag }))
        );
    }
    // Bytes past the end, and bytes across the chunk's end into the line.
    words = batch.words.clone();
    for (start, len) in [(0, 100), (5, 6), (u32::MAX, 2)] {
        words[3] = start;
        words[4] = len;
        assert_eq!(
            first(&words, b"xyz"),
            Some(Err(PackedError::Span { index: 0 }))
        );
    }
    // After the first error the iterator ends.
    let doubled = [words.clone(), words].concat();
    assert_eq!(decode(&doubled, chunk, &[], &[]).count(), 1);
}

#[test]
fn decoding_any_words_never_panics() {
    bolero::check!()
        .with_type::<(Vec<u32>, Vec<u8>, Vec<u8>, Vec<u8>)>()
        .for_each(|(words, chunk, line, carried)| {
            for event in decode(words, chunk, line, carried) {
                match event {
                    Ok(Event::Frame(frame)) => {
                        assert!(frame.bytes.len() <= chunk.len() + line.len())
                    }
                    Ok(Event::Discarded { envelope, .. }) => {
                        let id = envelope.id.map_or(0, |id| id.to_json().len());
                        assert!(id <= carried.len() + 4);
                    }
                    _ => {}
                }
            }
        });
}

#[test]
#[should_panic(expected = "one family of entry points per stream")]
fn a_callback_push_in_a_line_begun_packed_is_refused() {
    let mut framer = Framer::new(Config::default());
    framer
        .push_packed(b"{\"id\":", &mut PackedBatch::default())
        .unwrap();
    framer.push(b"1}\n", |_| ());
}

#[test]
fn a_message_in_many_packed_pushes_is_assembled_by_the_caller() {
    // A message of 1 MiB in 4 KiB pushes: the framer counts the line as
    // buffered (for its caller, who holds it) and the frame borrows the
    // caller's held line.
    let message = workload::large(1, 1 << 20, 3);
    let mut framer = Framer::new(Config::default().with_max_frame_bytes(2 << 20));
    let mut batch = PackedBatch::default();
    let mut held = HeldLine::default();
    let mut frames = 0;
    for chunk in message.chunks(4096) {
        framer.push_packed(chunk, &mut batch).unwrap();
        held.receive(
            chunk,
            &batch.words,
            &batch.carried,
            batch.join,
            batch.keep,
            |event| {
                let Event::Frame(frame) = event else {
                    panic!("{event:?}")
                };
                assert_eq!(frame.bytes, &message[..message.len() - 1]);
                frames += 1;
            },
        )
        .unwrap();
        assert_eq!(framer.buffered(), held.as_bytes().len());
    }
    assert_eq!(frames, 1);
    assert_eq!(framer.stats().largest_frame, message.len() as u64 - 1);
}
