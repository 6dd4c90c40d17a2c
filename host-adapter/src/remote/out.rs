//! The server's side of the proxy, written as lines: every answer body and
//! server stream of a remote session becomes newline-delimited JSON-RPC
//! for the proxy's server reader, exactly as a child's stdout would.
//!
//! Many bodies are read at once (one per request in flight, plus the
//! server's own stream) and their messages must not interleave. A message
//! is held back until it is whole, up to [`HOLD_BYTES`]; a longer one takes
//! the line for itself and streams through it, so a 100 MB answer costs a
//! chunk of memory here, not 100 MB, and the proxy's line framer applies
//! the transport limit and `--clip` to it as to a child's line. While one
//! streams, other messages wait; a body that stalls inside one is ended by
//! the idle timeout.
//!
//! Each body is read by a [`BodyLines`]: SSE through the core's
//! [`SseRelay`] (events' data, joins between `data` lines written as a
//! space, JSON's own whitespace), a JSON answer as it is, its line ends
//! made spaces. Both report the JSON-RPC envelope of every whole message
//! they passed on, the id written last included, so the caller knows which
//! requests a body answered.

use std::sync::Arc;

use drainpipe_framer::owned::OwnedEnvelope;
use drainpipe_framer::sse::{MAX_EVENT_ID_BYTES, RelayEvent, SseRelay};
use drainpipe_framer::{Config, Event, Framer};
use tokio::io::{AsyncWriteExt, DuplexStream};
use tokio::sync::{Mutex, OwnedMutexGuard};

/// A message shorter than this is written only when whole, so messages
/// from different bodies never interleave; a longer one is streamed while
/// it holds the line. Bounds memory per body being read.
pub(crate) const HOLD_BYTES: usize = 64 << 10;

/// The most of an event's data kept for the caller to read itself (the
/// `endpoint` of the older transport, the initialize answer's protocol
/// version).
pub(crate) const CAPTURE_BYTES: usize = 64 << 10;

/// The line stream the proxy reads as the server's output.
#[derive(Clone)]
pub(crate) struct Lines {
    writer: Arc<Mutex<DuplexStream>>,
}

impl Lines {
    pub(crate) fn new(writer: DuplexStream) -> Lines {
        Lines {
            writer: Arc::new(Mutex::new(writer)),
        }
    }

    /// Ends the stream: the proxy's reader sees the end of the server's
    /// output.
    pub(crate) async fn close(&self) {
        let _ = self.writer.lock().await.shutdown().await;
    }
}

/// How a body's content is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyKind {
    /// `text/event-stream`.
    Events,
    /// `application/json`: one message (or a batch).
    Json,
}

/// A whole message passed on, or an event kept.
#[derive(Debug)]
pub(crate) enum Passed {
    /// A message passed on, with its envelope; `valid` if it was one valid
    /// JSON value (only then is its request answered for sure).
    Message {
        envelope: OwnedEnvelope,
        valid: bool,
    },
    /// A message passed the limit given to [`BodyLines::limit`]: its line
    /// was ended there (the proxy's framer rejects it) and the rest of it
    /// is not passed on.
    Oversize,
    /// The data of an event of the type asked for in
    /// [`BodyLines::capture_type`] (at most [`CAPTURE_BYTES`]).
    Captured(Vec<u8>),
}

/// Reads one body into [`Lines`].
pub(crate) struct BodyLines {
    lines: Lines,
    kind: BodyKind,
    relay: SseRelay,
    /// JSON answers: the validator, run as a line framer with no room so
    /// that it keeps nothing and reports the envelope of the whole line.
    json: Framer,
    json_len: u64,
    /// Where the JSON body's top-level values end.
    json_scan: JsonScan,
    /// Bytes of whole messages ready, then of the message being read.
    pending: Vec<u8>,
    /// How much of `pending` is whole messages.
    whole: usize,
    /// The line, while a long message streams through it.
    held: Option<OwnedMutexGuard<DuplexStream>>,
    /// Whether anything of the current message was written (to end its
    /// line if the body stops inside it).
    streaming: bool,
    /// The current event is not `message`: its data is not passed on.
    skipping: bool,
    /// An event type whose data is kept for the caller instead.
    capture_type: Option<&'static [u8]>,
    capturing: bool,
    /// Keep the first [`CAPTURE_BYTES`] of each message's data as well.
    pub(crate) capture_messages: bool,
    /// How much of a captured message is kept; [`CAPTURE_BYTES`] unless
    /// the caller needs more (a `tools/list` answer's schemas).
    pub(crate) capture_bytes: usize,
    captured: Vec<u8>,
    passed: Vec<Passed>,
    /// The longest message passed on whole, when the proxy does not
    /// condense: past it the message's line is ended and the rest skipped.
    limit: Option<u64>,
    /// Bytes of the current message passed on.
    message_len: u64,
    /// The current message passed the limit.
    over: bool,
    /// The server's `retry`, in milliseconds.
    pub(crate) retry_ms: Option<u64>,
    /// Bytes read.
    pub(crate) bytes: u64,
}

impl BodyLines {
    pub(crate) fn new(lines: Lines, kind: BodyKind, max_depth: u32) -> BodyLines {
        BodyLines {
            lines,
            kind,
            relay: SseRelay::new(max_depth, MAX_EVENT_ID_BYTES),
            json: Framer::new(
                Config::default()
                    .with_max_frame_bytes(0)
                    .with_max_depth(max_depth),
            ),
            json_len: 0,
            json_scan: JsonScan::default(),
            pending: Vec::new(),
            whole: 0,
            held: None,
            streaming: false,
            skipping: false,
            capture_type: None,
            capturing: false,
            capture_messages: false,
            capture_bytes: CAPTURE_BYTES,
            captured: Vec::new(),
            passed: Vec::new(),
            limit: None,
            message_len: 0,
            over: false,
            retry_ms: None,
            bytes: 0,
        }
    }

    /// Events of type `kind` are kept for the caller ([`Passed::Captured`]),
    /// not passed on.
    pub(crate) fn capture_type(mut self, kind: &'static [u8]) -> BodyLines {
        self.capture_type = Some(kind);
        self
    }

    /// Messages longer than `limit` bytes are cut at `limit + 1` bytes and
    /// reported ([`Passed::Oversize`]) instead of passed on whole: what
    /// the proxy would reject anyway is not carried to it, and whoever
    /// waits behind it is not held up.
    pub(crate) fn limit(mut self, limit: Option<usize>) -> BodyLines {
        self.limit = limit.map(|limit| limit as u64);
        self
    }

    /// The stream's last event id (SSE): what a reconnection resumes from.
    pub(crate) fn last_event_id(&self) -> &[u8] {
        self.relay.last_event_id()
    }

    /// A new stream for the same events (a reconnection), the last event id
    /// kept.
    pub(crate) fn reconnected(&mut self) {
        self.relay.finish(|_| {});
    }

    /// Reads the next chunk; returns what it completed.
    pub(crate) async fn push(&mut self, chunk: &[u8]) -> Vec<Passed> {
        self.bytes += chunk.len() as u64;
        match self.kind {
            BodyKind::Events => self.push_events(chunk),
            BodyKind::Json => self.push_json_body(chunk),
        }
        self.flush(false).await;
        std::mem::take(&mut self.passed)
    }

    /// The body ended (or broke, or stalled): a message it was inside is
    /// dropped, its line ended if part of it was written. Returns what the
    /// end completed and whether the body stopped inside a message.
    pub(crate) async fn end(&mut self) -> (Vec<Passed>, bool) {
        let mut inside = false;
        match self.kind {
            BodyKind::Events => {
                inside = self.relay.in_event();
                let mut ended = Vec::new();
                self.relay.finish(|event| {
                    if let RelayEvent::End(end) = event {
                        ended.push(end.has_data);
                    }
                });
                // An event cut off is dropped, as the rules say.
                self.pending.truncate(self.whole);
            }
            BodyKind::Json => {
                if self.json_len > 0 && !self.over {
                    self.push_json(b"", true);
                    if self.passed.is_empty() {
                        inside = true;
                    }
                }
            }
        }
        self.flush(true).await;
        (std::mem::take(&mut self.passed), inside)
    }

    fn push_events(&mut self, chunk: &[u8]) {
        let BodyLines {
            relay,
            pending,
            whole,
            skipping,
            capture_type,
            capturing,
            capture_messages,
            capture_bytes,
            captured,
            passed,
            retry_ms,
            limit,
            message_len,
            over,
            ..
        } = self;
        relay.push(chunk, |event| match event {
            RelayEvent::Type(kind) => {
                *capturing = capture_type.is_some_and(|wanted| wanted == kind);
                *skipping = !(kind.is_empty() || kind == b"message");
            }
            RelayEvent::Data(_) | RelayEvent::DataBreak => {
                // A break between `data` lines is `\n` in the data kept,
                // a space in the line passed on (JSON's whitespace either way).
                let (kept, passed_on) = match event {
                    RelayEvent::Data(piece) => (piece, piece),
                    _ => (&b"\n"[..], &b" "[..]),
                };
                if *capturing || *capture_messages && !*skipping {
                    let room = capture_bytes.saturating_sub(captured.len());
                    captured.extend_from_slice(&kept[..kept.len().min(room)]);
                }
                if !*skipping {
                    pass(
                        Passing {
                            limit: *limit,
                            message_len,
                            over,
                            pending,
                            whole,
                            passed,
                        },
                        passed_on,
                    );
                }
            }
            RelayEvent::End(end) => {
                if *capturing {
                    passed.push(Passed::Captured(std::mem::take(captured)));
                } else if *over {
                    // Its line was ended at the limit.
                } else if !*skipping && end.has_data && !end.event_type_cut {
                    pending.push(b'\n');
                    *whole = pending.len();
                    if *capture_messages {
                        passed.push(Passed::Captured(std::mem::take(captured)));
                    }
                    passed.push(Passed::Message {
                        envelope: end.envelope.into(),
                        valid: end.invalid.is_none(),
                    });
                } else {
                    pending.truncate(*whole);
                }
                captured.clear();
                *skipping = false;
                *capturing = false;
                *over = false;
                *message_len = 0;
            }
            RelayEvent::Retry { millis } => *retry_ms = Some(millis),
            _ => {}
        });
    }

    /// A piece of a JSON body. A body may hold more than one message, one
    /// per line (a server streaming a stateless request's progress before
    /// its answer does): a line end outside any value ends a message; one
    /// inside a value is whitespace.
    fn push_json_body(&mut self, chunk: &[u8]) {
        let mut rest = chunk;
        while !rest.is_empty() {
            match self.json_scan.boundary(rest) {
                Some(at) => {
                    self.push_json(&rest[..at], false);
                    if self.json_len > 0 && !self.over {
                        self.push_json(b"", true);
                    }
                    rest = &rest[at + 1..];
                }
                None => {
                    self.push_json(rest, false);
                    break;
                }
            }
        }
    }

    /// `chunk` of the current message, or (`ended`) its end.
    fn push_json(&mut self, chunk: &[u8], ended: bool) {
        if self.over || (chunk.is_empty() && !ended) {
            return;
        }
        let start = self.pending.len();
        if ended {
            self.pending.push(b'\n');
        } else {
            self.pending.extend_from_slice(chunk);
        }
        // JSON's own line ends are whitespace: one line for the proxy.
        if !ended {
            for b in &mut self.pending[start..] {
                if *b == b'\n' || *b == b'\r' {
                    *b = b' ';
                }
            }
            self.json_len += chunk.len() as u64;
        }
        let passed = &mut self.passed;
        let capture = self.capture_messages;
        let captured = &mut self.captured;
        if capture {
            let room = self.capture_bytes.saturating_sub(captured.len());
            captured.extend_from_slice(
                &self.pending[start..][..(self.pending.len() - start).min(room)],
            );
        }
        self.json.push(
            if ended { b"\n" } else { &self.pending[start..] },
            |event| {
                if let Event::Discarded {
                    envelope,
                    at_eof: false,
                    well_formed,
                    ..
                } = event
                {
                    if capture {
                        passed.push(Passed::Captured(std::mem::take(captured)));
                    }
                    passed.push(Passed::Message {
                        envelope: envelope.into(),
                        valid: well_formed,
                    });
                }
            },
        );
        if let Some(limit) = self.limit
            && self.json_len > limit
        {
            // Cut one byte past the limit and ended: the proxy's framer
            // rejects the line; the rest is not read.
            let cut = self.pending.len() - (self.json_len - limit - 1) as usize;
            self.pending.truncate(cut);
            self.pending.push(b'\n');
            self.whole = self.pending.len();
            self.over = true;
            self.passed.push(Passed::Oversize);
            return;
        }
        if ended {
            self.whole = self.pending.len();
            self.json_len = 0;
        }
    }

    /// Writes what can be written: whole messages at once; a message past
    /// [`HOLD_BYTES`] streamed while holding the line; at the `end`, a
    /// line left open is ended.
    async fn flush(&mut self, end: bool) {
        let long = self.pending.len() - self.whole >= HOLD_BYTES;
        if self.pending.is_empty() && !(end && self.streaming) {
            return;
        }
        if self.held.is_none() && (self.whole > 0 || long || (end && self.streaming)) {
            self.held = Some(self.lines.writer.clone().lock_owned().await);
        }
        let Some(writer) = self.held.as_mut() else {
            return;
        };
        let upto = if long || self.streaming {
            self.pending.len()
        } else {
            self.whole
        };
        let broken = writer.write_all(&self.pending[..upto]).await.is_err();
        self.streaming = upto > self.whole && !broken;
        if self.streaming && end {
            // The body stopped inside a message: end its line, which the
            // proxy then finds incomplete.
            let _ = writer.write_all(b"\n").await;
            self.streaming = false;
        }
        self.pending.drain(..upto);
        self.whole = 0;
        if !self.streaming {
            self.held = None;
        }
    }
}

/// What passing a piece of data on touches.
struct Passing<'a> {
    limit: Option<u64>,
    message_len: &'a mut u64,
    over: &'a mut bool,
    pending: &'a mut Vec<u8>,
    whole: &'a mut usize,
    passed: &'a mut Vec<Passed>,
}

/// Passes `piece` of a message on, up to the limit; past it, ends the
/// message's line one byte over the limit and reports it.
fn pass(to: Passing<'_>, piece: &[u8]) {
    if *to.over {
        return;
    }
    let room = to
        .limit
        .map_or(u64::MAX, |limit| limit + 1 - *to.message_len);
    if (piece.len() as u64) < room {
        *to.message_len += piece.len() as u64;
        to.pending.extend_from_slice(piece);
    } else {
        to.pending.extend_from_slice(&piece[..room as usize]);
        to.pending.push(b'\n');
        *to.whole = to.pending.len();
        *to.over = true;
        to.passed.push(Passed::Oversize);
    }
}

/// Just enough of a JSON lexer to find the line ends between top-level
/// values: the nesting depth, and whether the bytes are inside a string.
#[derive(Default)]
struct JsonScan {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// Something other than whitespace since the last boundary.
    started: bool,
}

impl JsonScan {
    /// The index of the first line end in `bytes` that follows a whole
    /// top-level value; the state is advanced up to it (or through all
    /// of `bytes` when there is none).
    fn boundary(&mut self, bytes: &[u8]) -> Option<usize> {
        for (i, &b) in bytes.iter().enumerate() {
            if self.in_string {
                match (self.escaped, b) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => {
                    self.in_string = true;
                    self.started = true;
                }
                b'{' | b'[' => {
                    self.depth += 1;
                    self.started = true;
                }
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                b'\n' if self.depth == 0 && self.started => {
                    self.started = false;
                    return Some(i);
                }
                b' ' | b'\t' | b'\r' | b'\n' => {}
                _ => self.started = true,
            }
        }
        None
    }
}

#[cfg(test)]
mod json_scan_tests {
    use super::JsonScan;

    #[test]
    fn line_ends_between_values_are_boundaries_and_others_are_not() {
        let mut scan = JsonScan::default();
        let body = b"{\"a\": \"x\\\"\n}\"\n}\n{\"b\": [1,\n2]}\n";
        let mut cuts = Vec::new();
        let mut at = 0;
        while let Some(i) = scan.boundary(&body[at..]) {
            cuts.push(at + i);
            at += i + 1;
        }
        let first = body.windows(3).position(|w| w == b"}\n{").unwrap() + 1;
        assert_eq!(cuts, vec![first, body.len() - 1]);
        // Split anywhere, the same boundaries.
        for split in 1..body.len() {
            let mut scan = JsonScan::default();
            let mut found = Vec::new();
            for (offset, part) in [(0, &body[..split]), (split, &body[split..])] {
                let mut at = 0;
                while let Some(i) = scan.boundary(&part[at..]) {
                    found.push(offset + at + i);
                    at += i + 1;
                }
            }
            assert_eq!(found, cuts, "split at {split}");
        }
    }

    #[test]
    fn leading_blank_lines_are_no_boundary() {
        let mut scan = JsonScan::default();
        assert_eq!(scan.boundary(b"\n\n  \n"), None);
        assert_eq!(scan.boundary(b"{}\n"), Some(2));
    }
}
