//! Owned copies of [`Event`]s and [`Envelope`]s, for hosts that hand
//! messages to other threads or tasks, and for comparing runs in tests.
//! Each variant and field means what its borrowed counterpart means.
#![allow(missing_docs)]

use alloc::vec::Vec;

use crate::{Envelope, Event, Id, JsonError};

/// An [`Id`] that owns its bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OwnedId {
    Number(Vec<u8>),
    String(Vec<u8>),
    Null,
}

/// An [`Envelope`] that owns its bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnedEnvelope {
    pub jsonrpc: Option<Vec<u8>>,
    pub id: Option<OwnedId>,
    pub method: Option<Vec<u8>>,
    pub has_result: bool,
    pub has_error: bool,
}

impl OwnedId {
    /// The borrowed form.
    pub fn as_id(&self) -> Id<'_> {
        match self {
            OwnedId::Number(raw) => Id::Number(raw),
            OwnedId::String(raw) => Id::String(raw),
            OwnedId::Null => Id::Null,
        }
    }

    /// See [`Id::canonical`]: the key to match ids by.
    pub fn canonical(&self) -> Vec<u8> {
        self.as_id().canonical()
    }
}

impl From<Id<'_>> for OwnedId {
    fn from(id: Id<'_>) -> Self {
        match id {
            Id::Number(n) => OwnedId::Number(n.to_vec()),
            Id::String(s) => OwnedId::String(s.to_vec()),
            Id::Null => OwnedId::Null,
        }
    }
}

impl OwnedEnvelope {
    /// The borrowed form.
    pub fn as_envelope(&self) -> Envelope<'_> {
        Envelope {
            jsonrpc: self.jsonrpc.as_deref(),
            id: self.id.as_ref().map(OwnedId::as_id),
            method: self.method.as_deref(),
            has_result: self.has_result,
            has_error: self.has_error,
        }
    }
}

impl From<Envelope<'_>> for OwnedEnvelope {
    fn from(e: Envelope<'_>) -> Self {
        OwnedEnvelope {
            jsonrpc: e.jsonrpc.map(<[u8]>::to_vec),
            id: e.id.map(OwnedId::from),
            method: e.method.map(<[u8]>::to_vec),
            has_result: e.has_result,
            has_error: e.has_error,
        }
    }
}

/// An [`Event`] that owns its bytes, for comparing runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnedEvent {
    Frame {
        offset: u64,
        bytes: Vec<u8>,
        envelope: OwnedEnvelope,
    },
    Oversize {
        offset: u64,
        looks_like_json: bool,
        envelope: OwnedEnvelope,
    },
    Malformed {
        offset: u64,
        error: JsonError,
        envelope: OwnedEnvelope,
    },
    Discarded {
        offset: u64,
        len: u64,
        at_eof: bool,
        envelope: OwnedEnvelope,
        well_formed: bool,
    },
    NotProtocol {
        offset: u64,
        line: Vec<u8>,
    },
    Truncated {
        offset: u64,
        len: u64,
        envelope: OwnedEnvelope,
    },
}

impl OwnedEvent {
    /// The borrowed form (a frame's `chunk_start` is `None`: it lies in no
    /// chunk).
    pub fn as_event(&self) -> Event<'_> {
        match self {
            OwnedEvent::Frame {
                offset,
                bytes,
                envelope,
            } => Event::Frame(crate::Frame {
                bytes,
                offset: *offset,
                chunk_start: None,
                envelope: envelope.as_envelope(),
            }),
            OwnedEvent::Oversize {
                offset,
                looks_like_json,
                envelope,
            } => Event::Oversize {
                offset: *offset,
                looks_like_json: *looks_like_json,
                envelope: envelope.as_envelope(),
            },
            OwnedEvent::Malformed {
                offset,
                error,
                envelope,
            } => Event::Malformed {
                offset: *offset,
                error: *error,
                envelope: envelope.as_envelope(),
            },
            OwnedEvent::Discarded {
                offset,
                len,
                at_eof,
                envelope,
                well_formed,
            } => Event::Discarded {
                offset: *offset,
                len: *len,
                at_eof: *at_eof,
                envelope: envelope.as_envelope(),
                well_formed: *well_formed,
            },
            OwnedEvent::NotProtocol { offset, line } => Event::NotProtocol {
                offset: *offset,
                line,
            },
            OwnedEvent::Truncated {
                offset,
                len,
                envelope,
            } => Event::Truncated {
                offset: *offset,
                len: *len,
                envelope: envelope.as_envelope(),
            },
        }
    }
}

impl From<Event<'_>> for OwnedEvent {
    fn from(event: Event<'_>) -> Self {
        match event {
            Event::Frame(f) => OwnedEvent::Frame {
                offset: f.offset,
                bytes: f.bytes.to_vec(),
                envelope: f.envelope.into(),
            },
            Event::Oversize {
                offset,
                looks_like_json,
                envelope,
            } => OwnedEvent::Oversize {
                offset,
                looks_like_json,
                envelope: envelope.into(),
            },
            Event::Malformed {
                offset,
                error,
                envelope,
            } => OwnedEvent::Malformed {
                offset,
                error,
                envelope: envelope.into(),
            },
            Event::Discarded {
                offset,
                len,
                at_eof,
                envelope,
                well_formed,
            } => OwnedEvent::Discarded {
                offset,
                len,
                at_eof,
                envelope: envelope.into(),
                well_formed,
            },
            Event::NotProtocol { offset, line } => OwnedEvent::NotProtocol {
                offset,
                line: line.to_vec(),
            },
            Event::Truncated {
                offset,
                len,
                envelope,
            } => OwnedEvent::Truncated {
                offset,
                len,
                envelope: envelope.into(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, Framer};

    /// Every kind of event survives the trip to owned and back.
    #[test]
    fn owned_events_borrow_back_to_themselves() {
        let config = Config::default().with_max_frame_bytes(64);
        let mut framer = Framer::new(config);
        let mut events = Vec::new();
        let input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"m\"}\n\
            {\"id\":7,\"result\":{\"text\":\"this line is longer than the limit of sixty-four bytes\"}}\n\
            {\"id\":8,\"result\":[}\n\
            not protocol\n\
            {\"id\":9,\"res";
        framer.push(input, |event| events.push(OwnedEvent::from(event)));
        framer.finish(|event| events.push(OwnedEvent::from(event)));
        let mut kinds = Vec::new();
        for kind in events.iter().map(core::mem::discriminant) {
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        assert_eq!(
            kinds.len(),
            6,
            "frame, oversize, discarded, malformed, stray, truncated: {events:?}"
        );
        for event in &events {
            assert_eq!(&OwnedEvent::from(event.as_event()), event);
        }
    }
}
