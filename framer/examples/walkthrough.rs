//! Frames a stream with every hazard the framer exists for and prints what it
//! reports: `cargo run -p drainpipe-framer --example walkthrough`.

use drainpipe_framer::{Config, Event, Framer, Id};

fn main() {
    let big = "x".repeat(200);
    let stream = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{}}}}\n\
         Server started on port 3000\n\
         {{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"text\":\"{big}\"}}}}\n\
         {{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":\"unterminated\n\
         {{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{{\"text\":\"caf\u{e9} \u{1F680}\"}}}}\r\n\
         {{\"jsonrpc\":\"2.0\",\"id\":5,\"res"
    );
    let id = |id: Option<Id<'_>>| id.map_or("none".to_string(), |id| id.to_string());
    let mut framer = Framer::new(Config::default().with_max_frame_bytes(128));
    let mut report = |event: Event<'_>| match event {
        Event::Frame(f) => println!(
            "frame        @{:<4} {} bytes, id {}",
            f.offset,
            f.bytes.len(),
            id(f.envelope.id)
        ),
        Event::Oversize {
            offset, envelope, ..
        } => {
            println!(
                "oversize     @{offset:<4} fail request {} now",
                id(envelope.id)
            )
        }
        Event::Malformed {
            offset,
            error,
            envelope,
        } => {
            println!(
                "malformed    @{offset:<4} {error}, request {}",
                id(envelope.id)
            )
        }
        Event::Discarded { offset, len, .. } => {
            println!("discarded    @{offset:<4} {len} bytes dropped")
        }
        Event::NotProtocol { offset, line } => {
            println!(
                "not protocol @{offset:<4} {:?}",
                String::from_utf8_lossy(line)
            )
        }
        Event::Truncated {
            offset,
            len,
            envelope,
        } => {
            println!(
                "truncated    @{offset:<4} {len} bytes, request {}",
                id(envelope.id)
            )
        }
        other => println!("{other:?}"),
    };
    // Seven-byte chunks: every message spans chunks, some split inside a code point.
    for chunk in stream.as_bytes().chunks(7) {
        framer.push(chunk, &mut report);
    }
    framer.finish(&mut report);
    println!("{:#?}", framer.stats());
}
