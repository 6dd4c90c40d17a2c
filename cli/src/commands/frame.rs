//! `drainpipe frame`: the framer on stdin, as a filter or as an event log.

use std::io::{self, Read, Write};

use clap::Args;
use drainpipe_framer::{Config, Envelope, Event, Framer, Id, Stats};
use serde_json::{Value, json};

use super::size::parse_size;
use super::{EXIT_ENVIRONMENT, EXIT_OK};

/// Frame a byte stream from stdin and report every event.
///
/// Frames stdin as MCP's stdio transport would. By default valid messages go to stdout (one per line) and
/// everything else is reported on stderr; with `--json-events`, stdout gets
/// one JSON object per event instead, then the stats. Memory stays within
/// the transport limit plus one read buffer, whatever the input.
#[derive(Debug, Args)]
#[command(after_help = super::EXIT_CODES)]
pub(crate) struct FrameArgs {
    /// The transport limit: the longest message kept, in bytes on the wire
    /// (e.g. 4MiB, 512KiB, 1GB). Longer lines are reported and skipped.
    #[arg(long, value_name = "SIZE", default_value = "4MiB", value_parser = parse_size)]
    max_frame: usize,
    /// The deepest nesting of objects and arrays accepted in a message.
    #[arg(long, value_name = "N", default_value_t = Config::DEFAULT_MAX_DEPTH)]
    max_depth: u32,
    /// Write one JSON line per event (frame, oversize, malformed,
    /// not-protocol, discarded, truncated) and a final stats line to stdout,
    /// instead of the valid messages themselves.
    #[arg(long)]
    json_events: bool,
    /// Bytes read from stdin per read call.
    #[arg(long, value_name = "SIZE", default_value = "64KiB", value_parser = parse_size)]
    read_chunk: usize,
}

/// Runs `drainpipe frame`; returns the exit code.
pub(crate) fn run(args: FrameArgs) -> i32 {
    let config = Config::default()
        .with_max_frame_bytes(args.max_frame)
        .with_max_depth(args.max_depth);
    match frame_stream(io::stdin().lock(), io::stdout().lock(), config, &args) {
        Ok(()) => EXIT_OK,
        // A reader that went away (`drainpipe frame | head`) ends the run.
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(error) => {
            eprintln!("drainpipe frame: {error}");
            EXIT_ENVIRONMENT
        }
    }
}

fn frame_stream(
    mut input: impl Read,
    output: impl Write,
    config: Config,
    args: &FrameArgs,
) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(64 << 10, output);
    let mut framer = Framer::new(config);
    let mut chunk = vec![0u8; args.read_chunk.max(1)];
    let limit = config.max_frame_bytes();
    // The framer calls back without a way to return errors: the first one is
    // kept and ends the run after the chunk.
    let mut failed: Option<io::Error> = None;
    loop {
        let n = match input.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        framer.push(&chunk[..n], |event| {
            emit(event, &mut out, &mut failed, args, limit)
        });
        if let Some(error) = failed.take() {
            return Err(error);
        }
    }
    framer.finish(|event| emit(event, &mut out, &mut failed, args, limit));
    if let Some(error) = failed.take() {
        return Err(error);
    }
    let stats = stats_json(framer.stats());
    if args.json_events {
        let mut line = serde_json::to_vec(&stats).expect("JSON");
        line.push(b'\n');
        out.write_all(&line)?;
    } else {
        eprintln!("drainpipe frame: {stats}");
    }
    out.flush()
}

/// Writes one event; a write error is kept in `failed` and stops further output.
fn emit(
    event: Event<'_>,
    out: &mut impl Write,
    failed: &mut Option<io::Error>,
    args: &FrameArgs,
    limit: usize,
) {
    if failed.is_some() {
        return;
    }
    let written = if args.json_events {
        let mut line = serde_json::to_vec(&event_json(&event, limit)).expect("JSON");
        line.push(b'\n');
        out.write_all(&line)
    } else {
        match event {
            Event::Frame(frame) => out
                .write_all(frame.bytes)
                .and_then(|()| out.write_all(b"\n")),
            other => {
                eprintln!("drainpipe frame: {}", event_json(&other, limit));
                Ok(())
            }
        }
    };
    if let Err(error) = written {
        *failed = Some(error);
    }
}

fn event_json(event: &Event<'_>, limit: usize) -> Value {
    match event {
        Event::Frame(frame) => {
            let mut value =
                json!({"event": "frame", "offset": frame.offset, "len": frame.bytes.len()});
            add_envelope(&mut value, &frame.envelope);
            value
        }
        Event::Oversize {
            offset,
            looks_like_json,
            envelope,
        } => {
            let mut value = json!({"event": "oversize", "offset": offset, "limit": limit,
                                   "looks_like_json": looks_like_json});
            add_envelope(&mut value, envelope);
            value
        }
        Event::Malformed {
            offset,
            error,
            envelope,
        } => {
            let mut value = json!({"event": "malformed", "offset": offset,
                                   "error": error.kind.to_string(), "at": error.at});
            add_envelope(&mut value, envelope);
            value
        }
        Event::Discarded {
            offset,
            len,
            at_eof,
            envelope,
            well_formed,
        } => {
            let mut value = json!({"event": "discarded", "offset": offset, "len": len,
                                   "at_eof": at_eof, "well_formed": well_formed});
            add_envelope(&mut value, envelope);
            value
        }
        Event::NotProtocol { offset, line } => {
            let preview = &line[..line.len().min(200)];
            json!({"event": "not-protocol", "offset": offset, "len": line.len(),
                   "preview": String::from_utf8_lossy(preview)})
        }
        Event::Truncated {
            offset,
            len,
            envelope,
        } => {
            let mut value = json!({"event": "truncated", "offset": offset, "len": len});
            add_envelope(&mut value, envelope);
            value
        }
        _ => json!({"event": "unknown"}),
    }
}

/// Adds the peeked routing fields that were seen.
fn add_envelope(value: &mut Value, envelope: &Envelope<'_>) {
    let object = value.as_object_mut().expect("an object");
    if let Some(id) = envelope.id {
        object.insert("id".into(), id_value(id));
    }
    if let Some(method) = envelope.method {
        object.insert("method".into(), String::from_utf8_lossy(method).into());
    }
    let kind = match envelope.kind() {
        drainpipe_framer::MessageKind::Request => "request",
        drainpipe_framer::MessageKind::Notification => "notification",
        drainpipe_framer::MessageKind::Response => "response",
        _ => "unknown",
    };
    object.insert("kind".into(), kind.into());
}

/// The id as the JSON value it was written as (its token was validated).
fn id_value(id: Id<'_>) -> Value {
    serde_json::from_slice(&id.to_json()).unwrap_or_else(|_| Value::String(id.to_string()))
}

fn stats_json(stats: &Stats) -> Value {
    json!({
        "event": "stats",
        "bytes_in": stats.bytes_in,
        "frames": stats.frames,
        "largest_frame": stats.largest_frame,
        "oversize": stats.oversize,
        "oversize_bytes_dropped": stats.oversize_bytes_dropped,
        "malformed": stats.malformed,
        "malformed_bytes_dropped": stats.malformed_bytes_dropped,
        "not_protocol": stats.not_protocol,
        "blank_lines": stats.blank_lines,
        "truncated": stats.truncated,
        "buffered_high_water": stats.buffered_high_water,
    })
}
