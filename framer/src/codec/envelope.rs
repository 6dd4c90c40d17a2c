//! An owned [`Envelope`] that costs no allocation for the usual sizes, so a
//! decoded message can carry its routing fields across tasks cheaply.

use alloc::boxed::Box;
use core::fmt;

use crate::{Envelope, Id, MessageKind};

/// Field bytes kept inline: room for `2.0`, a uuid-sized id and a method
/// such as `notifications/resources/list_changed`.
const INLINE_BYTES: usize = 80;

/// Where one recorded field lies in [`MessageEnvelope`]'s storage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Span {
    start: u16,
    end: u16,
}

/// How the id was written, so it can be echoed back byte for byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdShape {
    Number(Span),
    String(Span),
    Null,
}

#[derive(Clone, PartialEq, Eq)]
enum Storage {
    Inline([u8; INLINE_BYTES]),
    Heap(Box<[u8]>),
}

/// The JSON-RPC routing fields of a decoded message, owned.
///
/// The same fields as the borrowed [`Envelope`] (see there for what each
/// means); [`MessageEnvelope::as_envelope`] gives that view back. Fields
/// totalling up to 80 bytes are stored inline, without allocating; each field
/// is at most [`Envelope::MAX_FIELD_BYTES`] long.
#[derive(Clone, PartialEq, Eq)]
pub struct MessageEnvelope {
    storage: Storage,
    jsonrpc: Option<Span>,
    id: Option<IdShape>,
    method: Option<Span>,
    has_result: bool,
    has_error: bool,
}

impl Default for MessageEnvelope {
    fn default() -> Self {
        MessageEnvelope {
            storage: Storage::Inline([0; INLINE_BYTES]),
            jsonrpc: None,
            id: None,
            method: None,
            has_result: false,
            has_error: false,
        }
    }
}

impl MessageEnvelope {
    /// Copies the fields out of a borrowed envelope.
    pub fn from_envelope(envelope: &Envelope<'_>) -> Self {
        let id_bytes: &[u8] = match envelope.id {
            Some(Id::Number(raw) | Id::String(raw)) => raw,
            _ => &[],
        };
        let parts = [
            envelope.jsonrpc.unwrap_or_default(),
            id_bytes,
            envelope.method.unwrap_or_default(),
        ];
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let mut storage = if total <= INLINE_BYTES {
            Storage::Inline([0; INLINE_BYTES])
        } else {
            Storage::Heap(alloc::vec![0; total].into_boxed_slice())
        };
        let buf: &mut [u8] = match &mut storage {
            Storage::Inline(bytes) => bytes,
            Storage::Heap(bytes) => bytes,
        };
        let mut at = 0usize;
        let mut put = |part: &[u8]| {
            buf[at..at + part.len()].copy_from_slice(part);
            // Fields are capped at `Envelope::MAX_FIELD_BYTES`, so three of
            // them always fit in u16 offsets.
            let span = Span {
                start: at as u16,
                end: (at + part.len()) as u16,
            };
            at += part.len();
            span
        };
        let [jsonrpc, id, method] = parts;
        let jsonrpc = envelope.jsonrpc.map(|_| put(jsonrpc));
        let id = envelope.id.map(|shape| match shape {
            Id::Number(_) => IdShape::Number(put(id)),
            Id::String(_) => IdShape::String(put(id)),
            Id::Null => IdShape::Null,
        });
        let method = envelope.method.map(|_| put(method));
        MessageEnvelope {
            storage,
            jsonrpc,
            id,
            method,
            has_result: envelope.has_result,
            has_error: envelope.has_error,
        }
    }

    fn bytes(&self, span: Span) -> &[u8] {
        let all: &[u8] = match &self.storage {
            Storage::Inline(bytes) => bytes,
            Storage::Heap(bytes) => bytes,
        };
        &all[usize::from(span.start)..usize::from(span.end)]
    }

    /// The borrowed view, with the framer's accessors.
    pub fn as_envelope(&self) -> Envelope<'_> {
        Envelope {
            jsonrpc: self.jsonrpc.map(|s| self.bytes(s)),
            id: self.id(),
            method: self.method(),
            has_result: self.has_result,
            has_error: self.has_error,
        }
    }

    /// The `id` member, as written.
    pub fn id(&self) -> Option<Id<'_>> {
        self.id.map(|shape| match shape {
            IdShape::Number(s) => Id::Number(self.bytes(s)),
            IdShape::String(s) => Id::String(self.bytes(s)),
            IdShape::Null => Id::Null,
        })
    }

    /// The `method` member's string contents as written (escapes not decoded).
    pub fn method(&self) -> Option<&[u8]> {
        self.method.map(|s| self.bytes(s))
    }

    /// What kind of JSON-RPC message this looks like.
    pub fn kind(&self) -> MessageKind {
        self.as_envelope().kind()
    }
}

impl From<Envelope<'_>> for MessageEnvelope {
    fn from(envelope: Envelope<'_>) -> Self {
        MessageEnvelope::from_envelope(&envelope)
    }
}

impl fmt::Debug for MessageEnvelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.as_envelope(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_inline_and_on_the_heap() {
        let long = [b'm'; 200];
        for (jsonrpc, id, method) in [
            (
                Some(&b"2.0"[..]),
                Some(Id::Number(b"17")),
                Some(&b"tools/call"[..]),
            ),
            (None, Some(Id::String(b"a\\\"b")), None),
            (Some(b"2.0"), Some(Id::Null), Some(&long[..])),
            (None, None, None),
        ] {
            let envelope = Envelope {
                jsonrpc,
                id,
                method,
                has_result: true,
                has_error: false,
            };
            let owned = MessageEnvelope::from(envelope);
            assert_eq!(owned.as_envelope(), envelope);
            assert_eq!(owned.kind(), envelope.kind());
        }
    }
}
