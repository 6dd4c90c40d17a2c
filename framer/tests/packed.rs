//! The packed form of events (`drainpipe_framer::packed`, what the
//! component's `push-packed` returns). Every test that goes through
//! `testing::run_split` (the table, the properties, the corpus replay)
//! already checks that each push's events survive it unchanged; these pin
//! what that cannot: bytes inside the chunk are referenced rather than
//! copied, and a batch from a broken producer is an error, never a panic.

use drainpipe_framer::packed::{EVENT_WORDS, PackedBatch, PackedError, decode};
use drainpipe_framer::testing::workload;
use drainpipe_framer::{Config, Event, Framer};

fn pack(framer: &mut Framer, chunk: &[u8]) -> PackedBatch {
    let mut batch = PackedBatch::default();
    framer.push(chunk, |event| batch.push_event(chunk, event).unwrap());
    batch
}

#[test]
fn messages_inside_the_chunk_are_referenced_not_copied() {
    let stream = workload::small(2_000, 7);
    let mut framer = Framer::new(Config::default());
    let batch = pack(&mut framer, &stream);
    assert_eq!(batch.len(), 2_000);
    assert!(
        batch.carried.is_empty(),
        "{} bytes were copied",
        batch.carried.len()
    );
    for event in decode(&batch.words, &stream, &batch.carried) {
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
fn a_message_assembled_across_pushes_is_carried_once() {
    let message = b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"m\"}";
    let mut framer = Framer::new(Config::default());
    let first = pack(&mut framer, &message[..10]);
    assert!(first.is_empty());
    let mut tail = message[10..].to_vec();
    tail.push(b'\n');
    let batch = pack(&mut framer, &tail);
    assert_eq!(batch.len(), 1);
    // The frame once, then its envelope fields (a few bytes each).
    assert!(batch.carried.starts_with(message));
    let events: Vec<_> = decode(&batch.words, &tail, &batch.carried)
        .collect::<Result<_, _>>()
        .unwrap();
    let Event::Frame(frame) = events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(frame.bytes, message);
    assert_eq!(frame.chunk_start, None);
    assert_eq!(frame.envelope.method, Some(&b"m"[..]));
}

#[test]
fn broken_batches_are_errors() {
    let chunk = b"{\"id\":1}\n";
    let mut framer = Framer::new(Config::default());
    let batch = pack(&mut framer, chunk);
    let first = |words: &[u32], carried: &[u8]| {
        decode(words, chunk, carried)
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
    // A frame with an error kind, and an unknown high bit.
    for tag in [batch.words[0] | 3 << 4, batch.words[0] | 1 << 20] {
        words[0] = tag;
        assert_eq!(
            first(&words, &[]),
            Some(Err(PackedError::Tag { index: 0, tag }))
        );
    }
    // Bytes past the end, and bytes across the chunk's end into carried.
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
    assert_eq!(decode(&doubled, chunk, &[]).count(), 1);
}

#[test]
fn decoding_any_words_never_panics() {
    bolero::check!()
        .with_type::<(Vec<u32>, Vec<u8>, Vec<u8>)>()
        .for_each(|(words, chunk, carried)| {
            for event in decode(words, chunk, carried) {
                if let Ok(Event::Frame(frame)) = event {
                    assert!(frame.bytes.len() <= chunk.len() + carried.len());
                }
            }
        });
}
