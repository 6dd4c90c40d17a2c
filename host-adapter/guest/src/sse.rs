//! Glue for the `sse` interface: the relay, implemented in
//! `drainpipe_framer::sse::SseRelay`.

use alloc::vec::Vec;
use core::cell::RefCell;

use drainpipe_framer::JsonError;
use drainpipe_framer::sse::{RelayEvent, SseRelay};

use crate::exports::drainpipe::framer::sse as wit;
use crate::{Batcher, Component};

impl wit::Guest for Component {
    type Relay = Relay;
}

/// The resource; one instance relays one stream at a time.
pub(crate) struct Relay(RefCell<SseRelay>);

impl wit::GuestRelay for Relay {
    fn new(max_depth: u32, max_id_bytes: u32) -> Self {
        Relay(RefCell::new(SseRelay::new(max_depth, max_id_bytes as usize)))
    }

    fn push(&self, chunk: Vec<u8>) -> wit::RelayBatch {
        let mut out = Out::new(&chunk);
        self.0.borrow_mut().push(&chunk, |event| out.add(event));
        out.done()
    }

    fn finish(&self) -> wit::RelayBatch {
        let mut out = Out::new(&[]);
        self.0.borrow_mut().finish(|event| out.add(event));
        out.done()
    }

    fn last_event_id(&self) -> Vec<u8> {
        self.0.borrow().last_event_id().to_vec()
    }

    fn in_event(&self) -> bool {
        self.0.borrow().in_event()
    }
}

/// One push's events: byte references through the framer's `Batcher`, so
/// data (always a range of the chunk) is never copied out.
struct Out<'c> {
    bytes: Batcher<'c>,
    events: Vec<wit::RelayEvent>,
}

impl<'c> Out<'c> {
    fn new(chunk: &'c [u8]) -> Self {
        Out {
            bytes: Batcher::new(chunk),
            events: Vec::new(),
        }
    }

    fn done(self) -> wit::RelayBatch {
        wit::RelayBatch {
            events: self.events,
            carried: self.bytes.carried,
        }
    }

    fn add(&mut self, event: RelayEvent<'_>) {
        let event = match event {
            RelayEvent::Type(name) => wit::RelayEvent::EventType(self.bytes.bytes(name)),
            RelayEvent::Data(piece) => match self.bytes.bytes(piece) {
                wit::BytesRef::Chunk(span) => wit::RelayEvent::Data(span),
                // The relay hands out data as ranges of the chunk it was
                // given; anything else is a bug in the core.
                wit::BytesRef::Carried(_) => panic!("relayed data outside the chunk"),
            },
            RelayEvent::DataBreak => wit::RelayEvent::DataBreak,
            RelayEvent::Comment => wit::RelayEvent::Comment,
            RelayEvent::Retry { millis } => wit::RelayEvent::Retry(millis),
            RelayEvent::End(end) => wit::RelayEvent::End(wit::RelayEnd {
                has_data: end.has_data,
                complete: end.complete,
                event_type: self.bytes.bytes(end.event_type),
                event_type_cut: end.event_type_cut,
                last_event_id: self.bytes.bytes(end.last_event_id),
                len: end.len,
                verdict: match end.invalid {
                    None => wit::DataVerdict::Message,
                    Some(None) => wit::DataVerdict::NotJson,
                    Some(Some(JsonError { kind, .. })) => {
                        wit::DataVerdict::Malformed(crate::error_kind(kind))
                    }
                },
                envelope: self.bytes.envelope(end.envelope),
            }),
            // A kind this glue does not know yet: nothing to hand out.
            _ => return,
        };
        self.events.push(event);
    }
}
