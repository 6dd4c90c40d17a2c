//! One method over one workload, once: the unit that `scripts/instructions.sh`
//! runs under callgrind to count instructions, which stay repeatable on a
//! noisy machine where wall time does not.
//!
//! `instructions <large|small> <none|frame_utf8|strict_json|serde_json|lines_codec>`
//! (`none` only generates the data: subtract it from the others.)

use bytes::BytesMut;
use drainpipe_framer::testing::workload;
use drainpipe_framer::{Config, Event, Framer};
use tokio_util::codec::{Decoder, LinesCodec};

fn main() {
    let mut args = std::env::args().skip(1);
    let (which, method) = (
        args.next().unwrap_or_default(),
        args.next().unwrap_or_default(),
    );
    let data = match which.as_str() {
        "large" => workload::large(1, 2 << 20, 1),
        "small" => workload::small(20_000, 2),
        other => panic!("unknown workload {other:?}: large or small"),
    };
    let limit = 16 << 20;
    let mut frames = 0usize;
    let mut framer_run = |config: Config| {
        let mut framer = Framer::new(config);
        for chunk in data.chunks(64 << 10) {
            framer.push(chunk, |e| {
                frames += usize::from(matches!(e, Event::Frame(_)))
            });
        }
    };
    match method.as_str() {
        "none" => {}
        "frame_utf8" => framer_run(
            Config::default()
                .with_max_frame_bytes(limit)
                .with_json_validation(false),
        ),
        "strict_json" => framer_run(Config::default().with_max_frame_bytes(limit)),
        "serde_json" => {
            let mut start = 0;
            for end in memchr::memchr_iter(b'\n', &data) {
                frames += usize::from(
                    serde_json::from_slice::<serde::de::IgnoredAny>(&data[start..end]).is_ok(),
                );
                start = end + 1;
            }
        }
        "lines_codec" => {
            let mut codec = LinesCodec::new_with_max_length(limit);
            let mut buf = BytesMut::new();
            for chunk in data.chunks(64 << 10) {
                buf.extend_from_slice(chunk);
                while let Ok(Some(_)) = codec.decode(&mut buf) {
                    frames += 1;
                }
            }
        }
        other => panic!("unknown method {other:?}"),
    }
    println!("{which} {method}: {frames} frames of {} bytes", data.len());
}
