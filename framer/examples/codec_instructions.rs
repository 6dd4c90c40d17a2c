//! One pass of `FramedRead` + `LinesCodec` or `FramerCodec` over a generated
//! workload, for counting instructions on a noisy machine, where wall-clock
//! benches drift (see `benches/codec.rs` for those):
//!
//! ```text
//! cargo build --release -p drainpipe-framer --features tokio-util --example codec_instructions
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/codec_instructions lines small
//! ```
//!
//! Arguments: `lines` | `strict` | `utf8` | `none` (only generates the
//! workload, to subtract), then `small` (200k messages of
//! 120–310 bytes) | `large` (4 × 8 MiB). Reads are at most 64 KiB.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use drainpipe_framer::Config;
use drainpipe_framer::codec::{FramerCodec, FramerEvent};
use drainpipe_framer::testing::workload;
use tokio::io::{AsyncRead, ReadBuf};
use tokio_stream::StreamExt;
use tokio_util::codec::{FramedRead, LinesCodec};

struct Chunked<'a>(&'a [u8]);

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = self.0.len().min(buf.remaining()).min(64 << 10);
        buf.put_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Poll::Ready(Ok(()))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let data = match args.get(1).map(String::as_str) {
        Some("large") => workload::large(4, 8 << 20, 1),
        _ => workload::small(200_000, 2),
    };
    let limit = 16 << 20;
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let frames = rt.block_on(async {
        let mut frames = 0usize;
        match args.first().map(String::as_str) {
            Some("lines") => {
                let mut framed =
                    FramedRead::new(Chunked(&data), LinesCodec::new_with_max_length(limit));
                while let Some(line) = framed.next().await {
                    std::hint::black_box(line.expect("valid"));
                    frames += 1;
                }
            }
            Some(mode @ ("strict" | "utf8")) => {
                let config = Config::default()
                    .with_max_frame_bytes(limit)
                    .with_json_validation(mode == "strict");
                let mut framed = FramedRead::new(Chunked(&data), FramerCodec::new(config));
                while let Some(event) = framed.next().await {
                    if let FramerEvent::Frame(message) = event.expect("no IO error") {
                        std::hint::black_box(message);
                        frames += 1;
                    }
                }
            }
            // Generation only: subtract it from the others.
            Some("none") => {}
            _ => panic!("usage: codec_instructions lines|strict|utf8|none small|large"),
        }
        frames
    });
    println!("{frames} frames, {} bytes", data.len());
}
