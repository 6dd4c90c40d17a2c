//! Relaying an event stream as it arrives, event data out in pieces, nothing
//! of it kept: what a proxy needs to pass an answer of any size on.
//!
//! [`SseFramer`](super::SseFramer) keeps each event's data, up to its limit,
//! so that it can hand over a whole message. A proxy in front of a remote
//! server cannot: an answer of a hundred megabytes must be condensed as it
//! streams (`--clip`), and even when it is over the transport limit its
//! request must be named and failed. [`SseRelay`] reads the same lines and
//! fields by the same rules (the shared `lines` and `fields` readers) but
//! passes each `data` value on as it comes ([`RelayEvent::Data`], the
//! joins between `data` lines as [`RelayEvent::DataBreak`]), runs the data
//! through the same strict validator in the same pass, and at the blank
//! line reports what the event was ([`RelayEvent::End`]): its type, the
//! last event id to resume from, its length, the validator's verdict and
//! the JSON-RPC envelope of the whole data (the `id` written last, as the
//! TypeScript SDK writes it, included).
//!
//! Memory is the envelope's copies, the event type and the ids, each
//! bounded; never the data. The limit on a message's size is the
//! consumer's to apply to what it receives (the proxy hands the data to its
//! line framer, which applies the transport limit before any parse).

use alloc::vec::Vec;

use super::data::{DataCheck, Verdict};
use super::fields::{Field, FieldReader, FieldSink};
use super::ids::Ids;
use super::lines::{LineSink, LineSplitter};
use crate::event::{Envelope, JsonError};

/// Event types longer than this are not kept (an `event` field's value is
/// a short name such as `message` or `endpoint`); an event whose type was
/// longer reports [`RelayEvent::End`] with `event_type_cut`.
pub const MAX_EVENT_TYPE_BYTES: usize = 64;

/// The longest event id a proxy keeps, the bound to give
/// [`SseRelay::new`]: an id is sent back whole on every reconnection, so
/// it must stay small; a longer one is ignored, as one containing NUL is.
pub const MAX_EVENT_ID_BYTES: usize = 1024;

/// What the relay reports, in stream order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RelayEvent<'a> {
    /// The event's type, when its `event` line ended (servers write it
    /// before `data`; one written after the data is reported then, and in
    /// `End`).
    Type(&'a [u8]),
    /// The next piece of the current event's data. Never holds a line end.
    Data(&'a [u8]),
    /// A new `data` line of the same event: its value joins the previous
    /// one with `\n` (JSON text may take any whitespace there).
    DataBreak,
    /// The event's blank line.
    End(RelayEnd<'a>),
    /// A comment line (a keep-alive).
    Comment,
    /// A valid `retry` field, in milliseconds.
    Retry {
        /// The reconnection delay the server asks for.
        millis: u64,
    },
}

/// What an event was, reported at its blank line (or at the end of the
/// stream for one cut off, with `complete` false).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RelayEnd<'a> {
    /// The event had a `data` line: it is dispatched, as the rules say;
    /// one without is not (its id still counts).
    pub has_data: bool,
    /// The blank line came; false for an event cut off by the end of the
    /// stream, which the rules drop.
    pub complete: bool,
    /// The `event` field's value (empty: `message`).
    pub event_type: &'a [u8],
    /// The type was longer than [`MAX_EVENT_TYPE_BYTES`] and is not kept.
    pub event_type_cut: bool,
    /// The last event id after this event: what to resume from.
    pub last_event_id: &'a [u8],
    /// Bytes of the event's lines, without line ends.
    pub len: u64,
    /// `None`: the data is one valid JSON value. `Some(None)`: it is not
    /// JSON. `Some(Some(error))`: it starts like JSON and is not valid.
    pub invalid: Option<Option<JsonError>>,
    /// The JSON-RPC envelope of the whole data.
    pub envelope: Envelope<'a>,
}

/// A push parser of `text/event-stream` that relays each event's data in
/// pieces instead of keeping it; see the module documentation.
///
/// ```
/// use drainpipe_framer::sse::{MAX_EVENT_ID_BYTES, RelayEvent, SseRelay};
///
/// let mut relay = SseRelay::new(64, MAX_EVENT_ID_BYTES);
/// let mut out = Vec::new();
/// let mut ids = Vec::new();
/// for chunk in [&b"id: 7\nevent: message\ndata: {\"result\":{},"[..], b"\"id\":3}\n\n"] {
///     relay.push(chunk, |event| match event {
///         RelayEvent::Data(piece) => out.extend_from_slice(piece),
///         RelayEvent::End(end) => ids.push((end.envelope.id.map(|id| id.to_json()), end.last_event_id.to_vec())),
///         _ => {}
///     });
/// }
/// assert_eq!(out, br#"{"result":{},"id":3}"#);
/// assert_eq!(ids, [(Some(b"3".to_vec()), b"7".to_vec())]);
/// ```
#[derive(Debug)]
pub struct SseRelay {
    lines: LineSplitter,
    fields: FieldReader,
    event: Current,
}

#[derive(Debug)]
struct Current {
    /// Whether any line of the event was read since the last blank line.
    started: bool,
    len: u64,
    has_data: bool,
    event_type: Vec<u8>,
    event_type_cut: bool,
    check: DataCheck,
    ids: Ids,
}

impl SseRelay {
    /// A relay for one stream; `max_depth` bounds the validator's nesting,
    /// `max_id_bytes` the event ids kept ([`MAX_EVENT_ID_BYTES`]).
    pub fn new(max_depth: u32, max_id_bytes: usize) -> Self {
        SseRelay {
            lines: LineSplitter::new(),
            fields: FieldReader::new(),
            event: Current {
                started: false,
                len: 0,
                has_data: false,
                event_type: Vec::new(),
                event_type_cut: false,
                check: DataCheck::new(max_depth),
                ids: Ids::new(max_id_bytes as u64),
            },
        }
    }

    /// Feeds the stream's next bytes; `on_event` gets what they hold, in
    /// stream order.
    pub fn push<F: FnMut(RelayEvent<'_>)>(&mut self, chunk: &[u8], mut on_event: F) {
        let mut step = Step {
            fields: &mut self.fields,
            event: &mut self.event,
            emit: &mut on_event,
        };
        self.lines.push(chunk, &mut step);
    }

    /// Ends the stream: an event cut off before its blank line is reported
    /// with `complete: false` (the rules drop it; whoever relayed its data
    /// must end what it wrote). The relay is then ready for a reconnection,
    /// with the last event id kept.
    pub fn finish<F: FnMut(RelayEvent<'_>)>(&mut self, mut on_event: F) {
        let mut step = Step {
            fields: &mut self.fields,
            event: &mut self.event,
            emit: &mut on_event,
        };
        self.lines.finish(&mut step);
        if self.event.started {
            on_event(RelayEvent::End(self.event.end(false)));
        }
        self.event.clear();
        self.lines = LineSplitter::new();
        self.fields = FieldReader::new();
    }

    /// The last event id: what to send as `Last-Event-ID` to resume.
    pub fn last_event_id(&self) -> &[u8] {
        self.event.ids.last()
    }

    /// Whether an event has started and not ended: the stream stopped in
    /// the middle of one if it ends now.
    pub fn in_event(&self) -> bool {
        self.event.started
    }
}

fn invalid(verdict: Verdict) -> Option<Option<JsonError>> {
    match verdict {
        Verdict::Message => None,
        Verdict::NotJson => Some(None),
        Verdict::Malformed(error) => Some(Some(error)),
    }
}

impl Current {
    /// What the event was, at its blank line (`complete`) or cut off.
    fn end(&mut self, complete: bool) -> RelayEnd<'_> {
        let verdict = self.check.verdict();
        RelayEnd {
            has_data: self.has_data,
            complete,
            event_type: &self.event_type,
            event_type_cut: self.event_type_cut,
            last_event_id: self.ids.last(),
            len: self.len,
            invalid: invalid(verdict),
            envelope: self.check.kept_envelope(),
        }
    }

    fn clear(&mut self) {
        self.started = false;
        self.len = 0;
        self.has_data = false;
        self.event_type.clear();
        self.event_type_cut = false;
        self.check.reset();
        self.ids.clear_event();
    }
}

struct Step<'s, F> {
    fields: &'s mut FieldReader,
    event: &'s mut Current,
    emit: &'s mut F,
}

impl<F: FnMut(RelayEvent<'_>)> LineSink for Step<'_, F> {
    fn content(&mut self, piece: &[u8], _offset: u64) {
        self.event.started = true;
        self.event.len += piece.len() as u64;
        let mut sink = Fields {
            event: &mut *self.event,
            emit: &mut *self.emit,
        };
        self.fields.feed(piece, &mut sink);
    }

    fn line_end(&mut self) {
        if self.fields.at_line_start() {
            let event = &mut *self.event;
            if !event.started {
                return;
            }
            event.ids.commit();
            (self.emit)(RelayEvent::End(event.end(true)));
            event.clear();
            return;
        }
        let mut sink = Fields {
            event: &mut *self.event,
            emit: &mut *self.emit,
        };
        self.fields.end(&mut sink);
    }
}

struct Fields<'s, F> {
    event: &'s mut Current,
    emit: &'s mut F,
}

impl<F: FnMut(RelayEvent<'_>)> FieldSink for Fields<'_, F> {
    fn comment(&mut self) {
        (self.emit)(RelayEvent::Comment);
    }

    fn value_start(&mut self, field: Field) {
        let event = &mut *self.event;
        match field {
            Field::Data => {
                if event.has_data {
                    event.check.feed(b"\n", true);
                    (self.emit)(RelayEvent::DataBreak);
                }
                event.has_data = true;
            }
            Field::Event => {
                event.event_type.clear();
                event.event_type_cut = false;
            }
            other => event.ids.start(other),
        }
    }

    fn value(&mut self, field: Field, piece: &[u8]) {
        let event = &mut *self.event;
        match field {
            Field::Data => {
                // Fed in keeping mode: nothing of the data is held, only
                // the envelope's fields are copied as they pass.
                event.check.feed(piece, true);
                (self.emit)(RelayEvent::Data(piece));
            }
            Field::Event if !event.event_type_cut => {
                if event.event_type.len() + piece.len() > MAX_EVENT_TYPE_BYTES {
                    event.event_type.clear();
                    event.event_type_cut = true;
                } else {
                    event.event_type.extend_from_slice(piece);
                }
            }
            Field::Event => {}
            other => event.ids.value(other, piece),
        }
    }

    fn value_end(&mut self, field: Field) {
        let event = &mut *self.event;
        match field {
            Field::Event if !event.event_type_cut => {
                (self.emit)(RelayEvent::Type(&event.event_type));
            }
            other => {
                if let Some(millis) = event.ids.end(other) {
                    (self.emit)(RelayEvent::Retry { millis });
                }
            }
        }
    }
}
