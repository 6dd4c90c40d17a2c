//! The event-stream framer: lines into fields, fields into events, a byte
//! limit per event checked before any of its data is parsed, and recovery
//! at the event's blank line.

use alloc::vec::Vec;

use super::config::SseConfig;
use super::data::{DataCheck, Verdict};
use super::event::{SseEvent, SseMessage};
use super::fields::{Field, FieldReader, FieldSink};
use super::ids::Ids;
use super::lines::{LineSink, LineSplitter};
use super::stats::SseStats;

/// An incremental push parser for `text/event-stream` bodies (the WHATWG
/// HTML server-sent events format, as MCP's Streamable HTTP transport
/// sends it), with the line framer's limit and JSON checks per event.
///
/// Push chunks of any size, split anywhere; receive [`SseEvent`]s. It holds
/// at most [`SseConfig::max_event_bytes`] of an event's data, type and ids
/// (of an event past the limit only its ids: at most twice that), plus the
/// last event id (at most that again).
///
/// ```
/// use drainpipe_framer::sse::{SseConfig, SseEvent, SseFramer};
/// use drainpipe_framer::Id;
///
/// let mut framer = SseFramer::new(SseConfig::default());
/// let body = b"event: message\r\nid: 7\r\ndata: {\"result\":{},\"jsonrpc\":\"2.0\",\"id\":1}\r\n\r\n: ping\r\n\r\n";
/// let mut seen = Vec::new();
/// for chunk in body.chunks(7) {
///     framer.push(chunk, |event| match event {
///         SseEvent::Message(message) => {
///             assert_eq!(message.envelope.id, Some(Id::Number(b"1")));
///             seen.push(format!("answer, resume after {:?}", message.last_event_id));
///         }
///         SseEvent::Comment { .. } => seen.push("alive".to_string()),
///         other => seen.push(format!("{other:?}")),
///     });
/// }
/// framer.finish(|event| seen.push(format!("{event:?}")));
/// assert_eq!(seen, ["answer, resume after [55]", "alive"]);
/// assert_eq!(framer.last_event_id(), b"7");
/// ```
#[derive(Debug)]
pub struct SseFramer {
    lines: LineSplitter,
    fields: FieldReader,
    event: Assembly,
}

/// The event being assembled, and the stream's last event id.
#[derive(Debug)]
struct Assembly {
    max_event_bytes: u64,
    /// Stream offset of the current event's first line; `None` between
    /// events (no line since the last blank line).
    start: Option<u64>,
    /// Bytes of the event's lines so far, without line ends: what the
    /// limit counts.
    len: u64,
    /// Stream offset of the current line's first byte (for comments).
    line_start: u64,
    /// The event passed the limit: following it to its blank line, keeping
    /// only its ids and the envelope's copies. This is the recovery state:
    /// the stream is resynchronised at the blank line without ever
    /// buffering the event.
    discarding: bool,
    /// The `data` values joined with `\n` (empty while discarding).
    data: Vec<u8>,
    /// Whether the event had a `data` line: an event without one is not
    /// dispatched, while `data` alone dispatches empty data.
    has_data: bool,
    event_type: Vec<u8>,
    check: DataCheck,
    /// The event's id, the last event id and `retry` (an id no longer than
    /// the limit).
    ids: Ids,
    stats: SseStats,
}

impl SseFramer {
    /// A framer for one stream, with the given limits.
    pub fn new(config: SseConfig) -> Self {
        SseFramer {
            lines: LineSplitter::new(),
            fields: FieldReader::new(),
            event: Assembly {
                max_event_bytes: config.max_event_bytes() as u64,
                start: None,
                len: 0,
                line_start: 0,
                discarding: false,
                data: Vec::new(),
                has_data: false,
                event_type: Vec::new(),
                check: DataCheck::new(config.max_depth()),
                ids: Ids::new(config.max_event_bytes() as u64),
                stats: SseStats::default(),
            },
        }
    }

    /// Feeds the stream's next bytes; `on_event` is called for each event
    /// they complete, in stream order.
    pub fn push<F: FnMut(SseEvent<'_>)>(&mut self, chunk: &[u8], mut on_event: F) {
        let mut step = Step {
            fields: &mut self.fields,
            event: &mut self.event,
            emit: &mut on_event,
        };
        self.lines.push(chunk, &mut step);
        self.event.stats.bytes_in += chunk.len() as u64;
        self.event.note_buffered();
    }

    /// Ends the stream. An event cut off before its blank line is dropped,
    /// as the rules say, and reported ([`SseEvent::Truncated`], or
    /// [`SseEvent::Discarded`] with `at_eof` for one past the limit); a
    /// partial last line is not read at all.
    ///
    /// The framer is then ready for the next stream (a reconnection):
    /// offsets start again at 0, a BOM may start it, and
    /// [`SseFramer::last_event_id`] is kept.
    pub fn finish<F: FnMut(SseEvent<'_>)>(&mut self, mut on_event: F) {
        let mut step = Step {
            fields: &mut self.fields,
            event: &mut self.event,
            emit: &mut on_event,
        };
        self.lines.finish(&mut step);
        let event = &mut self.event;
        if let Some(offset) = event.start {
            if event.discarding {
                event.stats.oversize_bytes_dropped += event.len;
                on_event(SseEvent::Discarded {
                    offset,
                    len: event.len,
                    at_eof: true,
                    last_event_id: event.ids.last(),
                    envelope: event.check.kept_envelope(),
                    well_formed: false,
                });
            } else {
                event.stats.truncated += 1;
                on_event(SseEvent::Truncated {
                    offset,
                    len: event.len,
                    envelope: event.check.envelope(&event.data),
                });
            }
        }
        event.clear();
        self.lines = LineSplitter::new();
        self.fields = FieldReader::new();
    }

    /// What the framer has seen so far.
    pub fn stats(&self) -> &SseStats {
        &self.event.stats
    }

    /// The last event id: what to send as `Last-Event-ID` to resume the
    /// stream. Set by an event's `id` at its blank line, whether or not the
    /// event had data; empty until then.
    pub fn last_event_id(&self) -> &[u8] {
        self.event.ids.last()
    }

    /// Stream offset of the next byte: the bytes pushed since the stream
    /// began.
    pub fn position(&self) -> u64 {
        self.lines.position()
    }

    /// Bytes held for the event being read: its data, type and ids. At most
    /// [`SseConfig::max_event_bytes`], or twice that past the limit (an
    /// event id and an id line being read); the last event id is apart.
    pub fn buffered(&self) -> usize {
        self.event.buffered()
    }
}

impl Assembly {
    /// See [`SseFramer::buffered`].
    fn buffered(&self) -> usize {
        self.data.len() + self.event_type.len() + self.ids.held()
    }

    /// Records what is held now in the high-water mark: called where the
    /// buffers are fullest (an event's end, the limit) and after each push.
    fn note_buffered(&mut self) {
        let held = self.buffered() as u64;
        self.stats.buffered_high_water = self.stats.buffered_high_water.max(held);
    }

    /// Forgets the event being read (not the last event id).
    fn clear(&mut self) {
        self.start = None;
        self.len = 0;
        self.discarding = false;
        self.data.clear();
        self.has_data = false;
        self.event_type.clear();
        self.check.reset();
        self.ids.clear_event();
    }

    /// The last event id as it stands mid-event.
    fn current_id(&self) -> &[u8] {
        self.ids.current()
    }
}

/// One push: the framer's parts and the caller's callback, borrowed apart.
struct Step<'s, F> {
    fields: &'s mut FieldReader,
    event: &'s mut Assembly,
    emit: &'s mut F,
}

impl<F: FnMut(SseEvent<'_>)> Step<'_, F> {
    fn fields(&mut self, piece: &[u8]) {
        let mut sink = Fields {
            event: &mut *self.event,
            emit: &mut *self.emit,
        };
        self.fields.feed(piece, &mut sink);
    }

    /// A blank line: the event ends. Its id becomes the last event id; it
    /// is dispatched if it had data.
    fn dispatch(&mut self) {
        let event = &mut *self.event;
        let Some(offset) = event.start else { return };
        event.note_buffered();
        event.ids.commit();
        if event.discarding {
            let well_formed = event.check.verdict() == Verdict::Message;
            event.stats.oversize_bytes_dropped += event.len;
            (self.emit)(SseEvent::Discarded {
                offset,
                len: event.len,
                at_eof: false,
                last_event_id: event.ids.last(),
                envelope: event.check.kept_envelope(),
                well_formed,
            });
        } else if event.has_data {
            let verdict = event.check.verdict();
            let stats = &mut event.stats;
            stats.largest_event = stats.largest_event.max(event.len);
            match verdict {
                Verdict::Message => stats.messages += 1,
                Verdict::Malformed(_) => stats.malformed += 1,
                Verdict::NotJson => stats.not_json += 1,
            }
            let message = SseMessage {
                offset,
                len: event.len,
                event_type: &event.event_type,
                data: &event.data,
                last_event_id: event.ids.last(),
                envelope: event.check.envelope(&event.data),
            };
            (self.emit)(match verdict {
                Verdict::Message => SseEvent::Message(message),
                Verdict::Malformed(error) => SseEvent::Malformed { message, error },
                Verdict::NotJson => SseEvent::NotJson(message),
            });
        }
        event.clear();
    }
}

impl<F: FnMut(SseEvent<'_>)> LineSink for Step<'_, F> {
    fn content(&mut self, piece: &[u8], offset: u64) {
        if self.fields.at_line_start() {
            self.event.line_start = offset;
        }
        if self.event.start.is_none() {
            self.event.start = Some(offset);
        }
        let room = self.event.max_event_bytes.saturating_sub(self.event.len);
        if !self.event.discarding && piece.len() as u64 > room {
            // The limit falls in this piece: what comes before it is read
            // as usual, the rest only followed.
            let (head, tail) = piece.split_at(room as usize);
            self.event.len += head.len() as u64;
            self.fields(head);
            self.begin_discarding();
            self.event.len += tail.len() as u64;
            self.fields(tail);
            return;
        }
        self.event.len += piece.len() as u64;
        self.fields(piece);
    }

    fn line_end(&mut self) {
        if self.fields.at_line_start() {
            self.dispatch();
            return;
        }
        let mut sink = Fields {
            event: &mut *self.event,
            emit: &mut *self.emit,
        };
        self.fields.end(&mut sink);
    }
}

impl<F: FnMut(SseEvent<'_>)> Step<'_, F> {
    /// The event passed the limit: report it, keep what names it, drop the
    /// rest.
    fn begin_discarding(&mut self) {
        let event = &mut *self.event;
        event.note_buffered();
        event.discarding = true;
        event.stats.oversize += 1;
        event.check.retain_all(&event.data);
        let offset = event.start.unwrap_or(event.line_start);
        (self.emit)(SseEvent::Oversize {
            offset,
            last_event_id: event.current_id(),
            envelope: event.check.envelope(&event.data),
        });
        event.data = Vec::new();
        event.event_type = Vec::new();
    }
}

/// The field sink of one push.
struct Fields<'s, F> {
    event: &'s mut Assembly,
    emit: &'s mut F,
}

impl<F: FnMut(SseEvent<'_>)> FieldSink for Fields<'_, F> {
    fn comment(&mut self) {
        self.event.stats.comments += 1;
        (self.emit)(SseEvent::Comment {
            offset: self.event.line_start,
        });
    }

    fn value_start(&mut self, field: Field) {
        let event = &mut *self.event;
        match field {
            Field::Data => {
                if event.has_data {
                    if !event.discarding {
                        event.data.push(b'\n');
                    }
                    event.check.feed(b"\n", event.discarding);
                }
                event.has_data = true;
            }
            Field::Event => event.event_type.clear(),
            other => event.ids.start(other),
        }
    }

    fn value(&mut self, field: Field, piece: &[u8]) {
        let event = &mut *self.event;
        match field {
            Field::Data => {
                if !event.discarding {
                    event.data.extend_from_slice(piece);
                }
                event.check.feed(piece, event.discarding);
            }
            Field::Event if !event.discarding => event.event_type.extend_from_slice(piece),
            Field::Event => {}
            other => event.ids.value(other, piece),
        }
    }

    fn value_end(&mut self, field: Field) {
        if let Some(millis) = self.event.ids.end(field) {
            (self.emit)(SseEvent::Retry { millis });
        }
    }
}
