//! An event's data through the line framer's checks: UTF-8 and the strict
//! JSON validator, fed as the data arrives, with the envelope peeked on the
//! way. Past the limit the data is still fed (none of it kept) and the
//! envelope's fields are copied as they pass, so a message whose `id` comes
//! last can still be named.

use crate::event::{Envelope, JsonError, JsonErrorKind};
use crate::json::Validator;
use crate::utf8::Utf8Stream;

/// What the data's first byte that is not whitespace says it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Nothing but whitespace so far.
    Undecided,
    /// Starts like JSON (`{`, `[` or `"`): checked as it arrives.
    Json,
    /// Anything else: not a protocol message, not checked.
    Text,
}

/// The verdict on a whole event's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// One valid message.
    Message,
    /// Starts like JSON, but is not a valid message.
    Malformed(JsonError),
    /// Does not start like JSON (or is empty).
    NotJson,
}

/// The checks on one event's data, fed in pieces.
#[derive(Debug)]
pub(super) struct DataCheck {
    kind: Kind,
    utf8: Utf8Stream,
    validator: Validator,
    /// Bytes of data fed so far (joining `\n`s included): the offset in the
    /// data of the next piece, which the validator's copies are made by.
    len: u64,
    /// Bytes confirmed as UTF-8 and handed to the validator: where a UTF-8
    /// error stands.
    confirmed: u64,
    /// The first error: once set, nothing more is checked.
    error: Option<JsonError>,
}

impl DataCheck {
    pub(super) fn new(max_depth: u32) -> Self {
        DataCheck {
            kind: Kind::Undecided,
            utf8: Utf8Stream::default(),
            validator: Validator::new(max_depth),
            len: 0,
            confirmed: 0,
            error: None,
        }
    }

    /// Prepares for the next event's data, keeping allocations.
    pub(super) fn reset(&mut self) {
        self.kind = Kind::Undecided;
        self.utf8 = Utf8Stream::default();
        self.validator.reset();
        self.len = 0;
        self.confirmed = 0;
        self.error = None;
    }

    /// Checks the next piece of the data. With `discarding` the piece is
    /// about to be lost: the envelope's fields in it are copied first.
    pub(super) fn feed(&mut self, piece: &[u8], discarding: bool) {
        let start = self.len;
        self.len += piece.len() as u64;
        if self.kind == Kind::Undecided {
            // `\r` never reaches here: it ends a line.
            if let Some(&b) = piece.iter().find(|&&b| !matches!(b, b' ' | b'\t' | b'\n')) {
                self.kind = match b {
                    b'{' | b'[' | b'"' => Kind::Json,
                    _ => Kind::Text,
                };
            }
        }
        if self.kind == Kind::Text {
            return;
        }
        if self.error.is_none() {
            let (validator, confirmed) = (&mut self.validator, &mut self.confirmed);
            let fed = self.utf8.feed(piece, |valid| {
                *confirmed += valid.len() as u64;
                validator.feed(valid)
            });
            self.error = match fed {
                Ok(Ok(())) => None,
                Ok(Err(())) => Some(JsonError {
                    kind: JsonErrorKind::InvalidUtf8,
                    at: self.confirmed,
                }),
                Err(error) => Some(error),
            };
        }
        if discarding {
            self.validator.retain(piece, start);
        }
    }

    /// The limit was crossed: `data` (every byte fed so far) is about to be
    /// dropped, so the envelope's fields in it are copied.
    pub(super) fn retain_all(&mut self, data: &[u8]) {
        if self.kind != Kind::Text {
            self.validator.retain(data, 0);
        }
    }

    /// The verdict on the data fed, which is all of it.
    pub(super) fn verdict(&mut self) -> Verdict {
        if self.kind != Kind::Json {
            return Verdict::NotJson;
        }
        if let Some(error) = self.error {
            return Verdict::Malformed(error);
        }
        if self.utf8.held() > 0 {
            // The data ended inside a code point.
            let error = JsonError {
                kind: JsonErrorKind::InvalidUtf8,
                at: self.confirmed,
            };
            self.error = Some(error);
            return Verdict::Malformed(error);
        }
        match self.validator.finish() {
            Ok(()) => Verdict::Message,
            Err(error) => {
                self.error = Some(error);
                Verdict::Malformed(error)
            }
        }
    }

    /// The envelope recorded so far, resolved against the data held (from
    /// its first byte).
    pub(super) fn envelope<'a>(&self, data: &'a [u8]) -> Envelope<'a> {
        match self.kind {
            Kind::Json => self.validator.envelope(data),
            _ => Envelope::default(),
        }
    }

    /// The envelope from the copies made while discarding.
    pub(super) fn kept_envelope(&self) -> Envelope<'_> {
        match self.kind {
            Kind::Json => self.validator.kept_envelope(),
            _ => Envelope::default(),
        }
    }
}
