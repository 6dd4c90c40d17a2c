//! Swapping `LinesCodec` out of a `FramedRead` over a child's stdout.
//!
//! `cargo run -p drainpipe-framer --features tokio-util --example tokio_lines`
//!
//! The child prints a message, a log line, a 32 MiB line and another message.
//! With `LinesCodec::new_with_max_length` the long line is an `Err`, after
//! which `FramedRead` yields `None` and the loop below would end, leaving the
//! child blocked on a pipe nobody reads. With `FramerCodec` the long line is
//! one `Oversize` item (and one `Discarded` when it ends) and the loop goes on.

use drainpipe_framer::Config;
use drainpipe_framer::codec::{FramerCodec, FramerEvent};
use tokio::process::Command;
use tokio_stream::StreamExt;
use tokio_util::codec::FramedRead;

const SCRIPT: &str = r#"
printf '{"jsonrpc":"2.0","id":1,"result":{"ok":true}}\n'
printf 'server started\n'
printf '{"jsonrpc":"2.0","id":2,"result":"'
head -c 33554432 /dev/zero | tr '\0' x
printf '"}\n{"jsonrpc":"2.0","id":3,"result":{"ok":true}}\n'
"#;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let mut child = Command::new("sh")
        .args(["-c", SCRIPT])
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().expect("stdout is piped");

    // Before: FramedRead::new(stdout, LinesCodec::new_with_max_length(1 << 20))
    let codec = FramerCodec::new(Config::default().with_max_frame_bytes(1 << 20));
    let mut framed = FramedRead::new(stdout, codec);

    while let Some(event) = framed.next().await {
        match event? {
            FramerEvent::Frame(message) => {
                let id = message.envelope.id().map(|id| id.to_string());
                println!("message {id:?}: {} bytes", message.bytes.len());
            }
            FramerEvent::NotProtocol { line, .. } => {
                println!("log line on stdout: {}", String::from_utf8_lossy(&line));
            }
            FramerEvent::Oversize { envelope, .. } => {
                let id = envelope.id().map(|id| id.to_string());
                println!("over the limit: fail request {id:?} now");
            }
            FramerEvent::Discarded { len, .. } => println!("dropped {len} bytes, reading on"),
            other => println!("{other:?}"),
        }
    }
    println!(
        "read buffer capacity at the end: {} bytes",
        framed.read_buffer().capacity()
    );
    child.wait().await?;
    Ok(())
}
