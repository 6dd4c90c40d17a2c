//! The `id` and `retry` fields as the rules read them, for the framer and
//! the relay alike: an id is committed at the event's blank line and then
//! persists; an id containing NUL (or longer than the bound given) is
//! ignored; `retry` counts only if all its bytes are ASCII digits.

use alloc::vec::Vec;

use super::fields::Field;

/// The ids of a stream and the `retry` being read.
#[derive(Debug)]
pub(super) struct Ids {
    /// Ids longer than this are ignored: an id is sent back whole on every
    /// reconnection.
    max_id_bytes: u64,
    /// The id the current event set (valid when `event_id_set`), committed
    /// as the last event id at its blank line. Why apart from `last`: an
    /// event cut off by the end of the stream must not move the id a
    /// reconnection resumes from.
    event_id: Vec<u8>,
    event_id_set: bool,
    /// The `id` line being read, and whether it still counts.
    id_line: Vec<u8>,
    id_line_ok: bool,
    /// The `retry` line being read: its value while all its bytes are
    /// digits, `None` after any other byte.
    retry: Option<u64>,
    retry_digits: bool,
    /// The last event id, as the rules' "last event ID string".
    last: Vec<u8>,
}

impl Ids {
    pub(super) fn new(max_id_bytes: u64) -> Ids {
        Ids {
            max_id_bytes,
            event_id: Vec::new(),
            event_id_set: false,
            id_line: Vec::new(),
            id_line_ok: false,
            retry: None,
            retry_digits: false,
            last: Vec::new(),
        }
    }

    /// A line with `field` starts.
    pub(super) fn start(&mut self, field: Field) {
        match field {
            Field::Id => {
                self.id_line.clear();
                self.id_line_ok = true;
            }
            Field::Retry => {
                self.retry = Some(0);
                self.retry_digits = false;
            }
            _ => {}
        }
    }

    /// The next piece of `field`'s value.
    pub(super) fn value(&mut self, field: Field, piece: &[u8]) {
        match field {
            Field::Id if self.id_line_ok => {
                let too_long = (self.id_line.len() + piece.len()) as u64 > self.max_id_bytes;
                if too_long || memchr::memchr(0, piece).is_some() {
                    self.id_line_ok = false;
                    self.id_line = Vec::new();
                } else {
                    self.id_line.extend_from_slice(piece);
                }
            }
            Field::Retry => {
                for &b in piece {
                    self.retry = match (self.retry, b) {
                        (Some(value), b'0'..=b'9') => {
                            Some(value.saturating_mul(10).saturating_add(u64::from(b - b'0')))
                        }
                        _ => None,
                    };
                }
                self.retry_digits = true;
            }
            _ => {}
        }
    }

    /// The line with `field` ended; a valid `retry`'s milliseconds.
    pub(super) fn end(&mut self, field: Field) -> Option<u64> {
        match field {
            Field::Id if self.id_line_ok => {
                core::mem::swap(&mut self.event_id, &mut self.id_line);
                self.id_line.clear();
                self.event_id_set = true;
            }
            Field::Id => self.id_line.clear(),
            Field::Retry if self.retry_digits => return self.retry,
            _ => {}
        }
        None
    }

    /// The event's blank line: the id it set becomes the last event id.
    pub(super) fn commit(&mut self) {
        if self.event_id_set {
            core::mem::swap(&mut self.last, &mut self.event_id);
        }
    }

    /// Forgets what the current event set (not the last event id).
    pub(super) fn clear_event(&mut self) {
        self.event_id.clear();
        self.event_id_set = false;
        self.id_line.clear();
    }

    /// The last event id.
    pub(super) fn last(&self) -> &[u8] {
        &self.last
    }

    /// The last event id as it stands mid-event.
    pub(super) fn current(&self) -> &[u8] {
        if self.event_id_set {
            &self.event_id
        } else {
            &self.last
        }
    }

    /// Bytes held for the current event's ids.
    pub(super) fn held(&self) -> usize {
        self.event_id.len() + self.id_line.len()
    }
}
