//! One method over one workload, once: the unit that `scripts/instructions.sh`
//! runs under callgrind to count instructions, which stay repeatable on a
//! noisy machine where wall time does not.
//!
//! `instructions <large|small> <none|frame_utf8|strict_json|serde_json|lines_codec|strict_json_read|serde_json_read>`
//! (`none` only generates the data and writes it to a file: subtract it
//! from the others.)
//!
//! The `_read` methods take the data from that file, as a host takes a
//! server's output from a pipe: `strict_json_read` reads it into the
//! framer's own buffer ([`InPlaceFramer`]) 64 KiB at a time, and
//! `serde_json_read` reads it whole into one buffer and parses the lines
//! where they lie. Neither copies the data in user space before framing
//! or parsing it (the kernel's copy in `read` is not counted); the others
//! take it from memory.

use bytes::BytesMut;
use drainpipe_framer::testing::workload;
use std::io::Read;

use drainpipe_framer::{Config, Event, Framer, InPlaceFramer};
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
    let file = std::env::temp_dir().join(format!("drainpipe-instructions-{}", std::process::id()));
    std::fs::write(&file, &data).expect("write the data file");
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
        "strict_json_read" => {
            let mut framer =
                InPlaceFramer::new(Config::default().with_max_frame_bytes(limit), 64 << 10);
            let mut input = std::fs::File::open(&file).expect("open the data file");
            loop {
                let n = input.read(framer.spare()).expect("read the data file");
                if n == 0 {
                    break;
                }
                framer.filled(n, |e| frames += usize::from(matches!(e, Event::Frame(_))));
            }
        }
        "serde_json_read" => {
            let data = std::fs::read(&file).expect("read the data file");
            let mut start = 0;
            for end in memchr::memchr_iter(b'\n', &data) {
                frames += usize::from(
                    serde_json::from_slice::<serde::de::IgnoredAny>(&data[start..end]).is_ok(),
                );
                start = end + 1;
            }
        }
        other => panic!("unknown method {other:?}"),
    }
    std::fs::remove_file(&file).expect("remove the data file");
    println!("{which} {method}: {frames} frames of {} bytes", data.len());
}
