//! Owned copies of [`SseEvent`]s, for hosts that hand events to other
//! threads or tasks, and for comparing runs in tests. Each variant and
//! field means what its borrowed counterpart means.
#![allow(missing_docs)]

use alloc::vec::Vec;

use super::event::{SseEvent, SseMessage};
use crate::JsonError;
use crate::owned::OwnedEnvelope;

/// An [`SseMessage`] that owns its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedSseMessage {
    pub offset: u64,
    pub len: u64,
    pub event_type: Vec<u8>,
    pub data: Vec<u8>,
    pub last_event_id: Vec<u8>,
    pub envelope: OwnedEnvelope,
}

/// An [`SseEvent`] that owns its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OwnedSseEvent {
    Message(OwnedSseMessage),
    Malformed {
        message: OwnedSseMessage,
        error: JsonError,
    },
    NotJson(OwnedSseMessage),
    Comment {
        offset: u64,
    },
    Retry {
        millis: u64,
    },
    Oversize {
        offset: u64,
        last_event_id: Vec<u8>,
        envelope: OwnedEnvelope,
    },
    Discarded {
        offset: u64,
        len: u64,
        at_eof: bool,
        last_event_id: Vec<u8>,
        envelope: OwnedEnvelope,
        well_formed: bool,
    },
    Truncated {
        offset: u64,
        len: u64,
        envelope: OwnedEnvelope,
    },
}

impl From<SseMessage<'_>> for OwnedSseMessage {
    fn from(m: SseMessage<'_>) -> Self {
        OwnedSseMessage {
            offset: m.offset,
            len: m.len,
            event_type: m.event_type.to_vec(),
            data: m.data.to_vec(),
            last_event_id: m.last_event_id.to_vec(),
            envelope: m.envelope.into(),
        }
    }
}

impl From<SseEvent<'_>> for OwnedSseEvent {
    fn from(event: SseEvent<'_>) -> Self {
        match event {
            SseEvent::Message(m) => OwnedSseEvent::Message(m.into()),
            SseEvent::Malformed { message, error } => OwnedSseEvent::Malformed {
                message: message.into(),
                error,
            },
            SseEvent::NotJson(m) => OwnedSseEvent::NotJson(m.into()),
            SseEvent::Comment { offset } => OwnedSseEvent::Comment { offset },
            SseEvent::Retry { millis } => OwnedSseEvent::Retry { millis },
            SseEvent::Oversize {
                offset,
                last_event_id,
                envelope,
            } => OwnedSseEvent::Oversize {
                offset,
                last_event_id: last_event_id.to_vec(),
                envelope: envelope.into(),
            },
            SseEvent::Discarded {
                offset,
                len,
                at_eof,
                last_event_id,
                envelope,
                well_formed,
            } => OwnedSseEvent::Discarded {
                offset,
                len,
                at_eof,
                last_event_id: last_event_id.to_vec(),
                envelope: envelope.into(),
                well_formed,
            },
            SseEvent::Truncated {
                offset,
                len,
                envelope,
            } => OwnedSseEvent::Truncated {
                offset,
                len,
                envelope: envelope.into(),
            },
        }
    }
}
