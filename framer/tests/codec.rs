//! `FramerCodec` against the plain framer: same events under any chunking,
//! through real `FramedRead`s over an in-process duplex and an OS pipe; no
//! stall after bad input; a bounded read buffer under a huge line; messages
//! split off without copies; the encoder's refusals.
//!
//! `cargo test -p drainpipe-framer --features tokio-util --test codec`

use std::time::Duration;

use bytes::BytesMut;
use drainpipe_framer::codec::{EncodeError, FramerCodec, FramerEvent};
use drainpipe_framer::testing::{OwnedEvent, Rng, run_split, workload};
use drainpipe_framer::{Config, Id};
use futures_util::SinkExt;
use tokio::io::{AsyncRead, AsyncWriteExt};
use tokio_stream::StreamExt;
use tokio_util::codec::{Decoder, Encoder, FramedRead, FramedWrite, LinesCodec};

/// Every test that touches IO fails loudly instead of hanging.
const DEADLINE: Duration = Duration::from_secs(60);

/// Streams worth framing: the shared adversarial set plus random mixes of
/// messages, log lines, broken JSON, long lines and odd line endings.
fn streams() -> Vec<Vec<u8>> {
    const PIECES: &[&[u8]] = &[
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
        b"{\"id\":\"a\\\"b\",\"method\":\"x\"}\r\n",
        b"{\"id\":2,\"result\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}\n",
        b"Server started on port 3000\n",
        b"{\"id\":3,\"result\":[1,2,}\n",
        b"\xf0\x9f\x98\x80",
        b"\xff",
        b"   \n",
        b"\r",
        b"\n",
        b"xxxxxxxxxxxxxxxx",
        b"{\"id\":4,",
        b"\"method\":\"tools/call\"}",
    ];
    let mut out = workload::adversarial();
    let mut rng = Rng::new(9);
    for _ in 0..60 {
        let pieces = 1 + rng.below(40);
        out.push(
            (0..pieces)
                .flat_map(|_| PIECES[rng.below(PIECES.len())].iter().copied())
                .collect(),
        );
    }
    out.push(workload::small(300, 3));
    out
}

fn configs() -> [Config; 4] {
    [
        Config::default(),
        Config::default().with_max_frame_bytes(40),
        Config::default().with_max_frame_bytes(1),
        Config::default()
            .with_max_frame_bytes(64)
            .with_json_validation(false),
    ]
}

/// Feeds `stream` to the decoder the way `FramedRead` does (append a read,
/// decode until `None`; at the end `decode_eof` until `None`), and checks the
/// memory bound after every step.
fn decode_in_chunks(config: Config, stream: &[u8], rng: &mut Rng) -> Vec<OwnedEvent> {
    let mut codec = FramerCodec::new(config);
    let mut buf = BytesMut::new();
    let mut events = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(rng.below(rest.len().min(97)) + 1);
        rest = tail;
        buf.extend_from_slice(chunk);
        while let Some(event) = codec.decode(&mut buf).expect("decode never fails on data") {
            events.push(OwnedEvent::from(event));
        }
        // After `None` the buffer holds at most the line in progress (within
        // the limit), one undecided byte, and nothing else.
        assert!(
            buf.len() <= config.max_frame_bytes() + 1,
            "read buffer holds {} bytes, limit {}",
            buf.len(),
            config.max_frame_bytes()
        );
    }
    while let Some(event) = codec
        .decode_eof(&mut buf)
        .expect("decode_eof never fails on data")
    {
        events.push(OwnedEvent::from(event));
    }
    assert!(
        codec.decode_eof(&mut buf).unwrap().is_none(),
        "end of stream is reported once"
    );
    events
}

#[test]
fn decoder_matches_the_framer_under_random_chunkings() {
    let mut rng = Rng::new(1);
    for config in configs() {
        for stream in streams() {
            let (expected, _) = run_split(config, &stream, &[], true);
            for _ in 0..8 {
                let got = decode_in_chunks(config, &stream, &mut rng);
                assert_eq!(
                    got,
                    expected,
                    "config {config:?}, stream {:?}",
                    String::from_utf8_lossy(&stream)
                );
            }
        }
    }
}

async fn collect<R: AsyncRead + Unpin>(reader: R, config: Config) -> Vec<OwnedEvent> {
    let mut framed = FramedRead::new(reader, FramerCodec::new(config));
    let mut events = Vec::new();
    while let Some(event) = framed.next().await {
        events.push(OwnedEvent::from(event.expect("no IO error")));
    }
    events
}

/// Writes `stream` in random pieces with random pauses, so reads split it
/// at arbitrary points.
async fn write_in_pieces<W: tokio::io::AsyncWrite + Unpin>(
    mut writer: W,
    stream: Vec<u8>,
    seed: u64,
) {
    let mut rng = Rng::new(seed);
    let mut rest = &stream[..];
    while !rest.is_empty() {
        let (piece, tail) = rest.split_at(rng.below(rest.len().min(300)) + 1);
        writer.write_all(piece).await.expect("write");
        if rng.below(4) == 0 {
            tokio::task::yield_now().await;
        }
        rest = tail;
    }
    writer.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn framed_read_over_a_duplex_gives_the_framer_events() {
    tokio::time::timeout(DEADLINE, async {
        for (i, stream) in streams().into_iter().enumerate() {
            for config in configs() {
                let (expected, _) = run_split(config, &stream, &[], true);
                // A tiny duplex buffer forces short reads.
                let (writer, reader) = tokio::io::duplex(1 + i % 37);
                let write = tokio::spawn(write_in_pieces(writer, stream.clone(), i as u64));
                assert_eq!(collect(reader, config).await, expected, "stream {i}");
                write.await.expect("writer");
            }
        }
    })
    .await
    .expect("duplex test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn framed_read_over_an_os_pipe_gives_the_framer_events() {
    tokio::time::timeout(DEADLINE, async {
        for (i, stream) in streams().into_iter().enumerate().step_by(3) {
            let config = Config::default().with_max_frame_bytes(40);
            let (expected, _) = run_split(config, &stream, &[], true);
            let (writer, reader) = tokio::net::unix::pipe::pipe().expect("pipe");
            let write = tokio::spawn(write_in_pieces(writer, stream, i as u64));
            assert_eq!(collect(reader, config).await, expected, "stream {i}");
            write.await.expect("writer");
        }
    })
    .await
    .expect("pipe test timed out");
}

const BAD_THEN_GOOD: &[u8] =
    b"{\"id\":1,\"result\":\"far too long for the limit of forty bytes\"}\n\
{\"id\":2,\"result\":[1,}\n\
not json at all\n\
{\"id\":3,\"result\":{}}\n";

/// The failure this codec exists to avoid: with `LinesCodec` the first long
/// line ends the `while let` loop, and message 3 is never read.
#[tokio::test]
async fn lines_codec_stops_the_loop_after_an_error() {
    let mut framed = FramedRead::new(BAD_THEN_GOOD, LinesCodec::new_with_max_length(40));
    let mut items = Vec::new();
    while let Some(item) = framed.next().await {
        items.push(item.map_err(|e| e.to_string()));
    }
    assert_eq!(items.len(), 1, "{items:?}");
    assert!(items[0].is_err());
}

#[tokio::test]
async fn errors_then_more_frames_keep_the_loop_going() {
    let mut framed = FramedRead::new(
        BAD_THEN_GOOD,
        FramerCodec::new(Config::default().with_max_frame_bytes(40)),
    );
    let mut seen = Vec::new();
    while let Some(item) = framed.next().await {
        seen.push(match item.expect("only IO errors are errors") {
            FramerEvent::Frame(m) => format!("frame {}", m.envelope.id().unwrap()),
            FramerEvent::Oversize { envelope, .. } => {
                format!("oversize {}", envelope.id().unwrap())
            }
            FramerEvent::Malformed { envelope, .. } => {
                format!("malformed {}", envelope.id().unwrap())
            }
            FramerEvent::NotProtocol { line, .. } => {
                format!("log {}", String::from_utf8_lossy(&line))
            }
            FramerEvent::Discarded { .. } => "discarded".into(),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(
        seen,
        [
            "oversize 1",
            "discarded",
            "malformed 2",
            "discarded",
            "log not json at all",
            "frame 3"
        ]
    );
}

/// A 256 MiB line through a real pipe: the codec reports it, keeps the read
/// buffer near the limit instead of growing to the line, and reads on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_line_keeps_the_read_buffer_bounded() {
    const LIMIT: usize = 1 << 20;
    const HUGE: usize = 256 << 20;
    tokio::time::timeout(DEADLINE, async {
        let (mut writer, reader) = tokio::net::unix::pipe::pipe().expect("pipe");
        let write = tokio::spawn(async move {
            writer.write_all(b"{\"id\":5,\"result\":\"").await?;
            let block = vec![b'x'; 1 << 16];
            for _ in 0..HUGE / block.len() {
                writer.write_all(&block).await?;
            }
            writer.write_all(b"\"}\n{\"id\":6,\"result\":{}}\n").await?;
            writer.shutdown().await
        });
        let mut framed = FramedRead::new(reader, FramerCodec::new(Config::default().with_max_frame_bytes(LIMIT)));
        let mut events = Vec::new();
        let mut largest_buffer = 0;
        while let Some(event) = framed.next().await {
            largest_buffer = largest_buffer.max(framed.read_buffer().capacity());
            events.push(OwnedEvent::from(event.expect("no IO error")));
        }
        largest_buffer = largest_buffer.max(framed.read_buffer().capacity());
        write.await.expect("writer task").expect("writes");
        assert_eq!(events.len(), 3, "{:?}", &events[..events.len().min(4)]);
        assert!(matches!(&events[0], OwnedEvent::Oversize { envelope, .. } if envelope.id.is_some()));
        assert!(matches!(events[1], OwnedEvent::Discarded { len, at_eof: false, .. } if len as usize == HUGE + 20));
        assert!(matches!(&events[2], OwnedEvent::Frame { .. }));
        assert!(
            largest_buffer <= 2 * LIMIT,
            "read buffer grew to {largest_buffer} bytes for a {HUGE}-byte line (limit {LIMIT})"
        );
        assert_eq!(framed.decoder().stats().buffered_high_water, LIMIT as u64);
    })
    .await
    .expect("huge-line test timed out");
}

#[test]
fn messages_are_split_off_the_read_buffer_without_copying() {
    let stream = b"{\"id\":1,\"result\":{}}\n  {\"id\":2,\"result\":{}}\r\n";
    let mut buf = BytesMut::from(&stream[..]);
    let start = buf.as_ptr() as usize;
    let mut codec = FramerCodec::default();
    for (offset, id) in [(0usize, b"1"), (21, b"2")] {
        let message = codec
            .decode(&mut buf)
            .unwrap()
            .unwrap()
            .into_message()
            .expect("a message");
        assert_eq!(
            message.bytes.as_ptr() as usize,
            start + offset,
            "message {id:?} was copied"
        );
        assert_eq!(message.offset, offset as u64);
        assert_eq!(message.envelope.id(), Some(Id::Number(id)));
    }
    assert_eq!(codec.decode(&mut buf).unwrap(), None);
}

#[test]
fn a_line_spanning_reads_is_scanned_once() {
    // Byte by byte, a 1 MiB message costs one framer pass, not a rescan per
    // read: the framer's byte counter equals the stream length.
    let message = workload::text_response(1, &"y".repeat(1 << 20));
    let mut codec = FramerCodec::default();
    let mut buf = BytesMut::new();
    let mut frames = 0;
    for chunk in message.chunks(4096) {
        buf.extend_from_slice(chunk);
        while let Some(event) = codec.decode(&mut buf).unwrap() {
            frames += usize::from(event.into_message().is_some());
        }
    }
    assert_eq!(frames, 1);
    assert_eq!(codec.stats().bytes_in, message.len() as u64);
}

#[tokio::test]
async fn encoder_writes_lines_and_refuses_what_would_break_framing() {
    let (writer, reader) = tokio::io::duplex(1 << 16);
    let mut sink = FramedWrite::new(
        writer,
        FramerCodec::new(Config::default().with_max_frame_bytes(32)),
    );
    sink.send("{\"method\":\"ping\"}").await.expect("fits");
    let newline = sink.send("{\"a\":\n1}").await.unwrap_err();
    assert!(
        matches!(newline, EncodeError::ContainsNewline { at: 5 }),
        "{newline}"
    );
    let large = sink
        .send(format!("{{\"pad\":\"{}\"}}", "z".repeat(40)))
        .await
        .unwrap_err();
    assert!(
        matches!(
            large,
            EncodeError::TooLarge {
                len: 50,
                max_frame_bytes: 32
            }
        ),
        "{large}"
    );
    assert!(
        large
            .to_string()
            .contains("over the transport limit of 32 bytes")
    );
    drop(sink);
    let events = collect(reader, Config::default()).await;
    assert_eq!(events.len(), 1);
    assert!(
        matches!(&events[0], OwnedEvent::Frame { bytes, .. } if bytes == b"{\"method\":\"ping\"}")
    );
    let mut direct = BytesMut::new();
    FramerCodec::default()
        .encode(b"{}".to_vec(), &mut direct)
        .unwrap();
    assert_eq!(&direct[..], b"{}\n");
}
