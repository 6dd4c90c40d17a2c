//! The fields of one line, as the WHATWG HTML server-sent events rules read
//! them: `name: value`, a line without a colon is a name with an empty
//! value, one space after the colon is dropped, a line starting with `:` is
//! a comment. Values stream through; nothing of a line is buffered here but
//! the few bytes of its name.

/// A field the event stream format defines, or any other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Field {
    Data,
    Event,
    Id,
    Retry,
    /// Any other name: ignored, as the rules say.
    Other,
}

/// Where a line's parts go.
pub(super) trait FieldSink {
    /// The line starts with `:`: a comment, whose text is not kept.
    fn comment(&mut self);
    /// The value of `field` starts (after the colon and the space dropped,
    /// or at the end of a line without a colon).
    fn value_start(&mut self, field: Field);
    /// The next piece of the value of `field`.
    fn value(&mut self, field: Field, piece: &[u8]);
    /// The line with `field` ended.
    fn value_end(&mut self, field: Field);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// No byte of the line yet.
    LineStart,
    /// Reading the name, up to the colon.
    Name,
    /// A comment: skipping to the line end.
    Comment,
    /// Just after the colon: a space here is dropped.
    ValueStart,
    /// In the value.
    Value,
}

/// The longest name that means something (`retry`, `event`).
const NAME_BYTES: usize = 5;

/// Reads the fields of a line handed over in pieces split anywhere.
#[derive(Clone, Copy, Debug)]
pub(super) struct FieldReader {
    state: State,
    /// The name's first bytes; a longer name is `Other` whatever it holds.
    name: [u8; NAME_BYTES],
    /// Bytes of the name so far, counted up to `NAME_BYTES + 1` only.
    name_len: usize,
    field: Field,
}

impl FieldReader {
    pub(super) fn new() -> Self {
        FieldReader {
            state: State::LineStart,
            name: [0; NAME_BYTES],
            name_len: 0,
            field: Field::Other,
        }
    }

    /// Whether the line so far is empty: at its end, a blank line.
    pub(super) fn at_line_start(&self) -> bool {
        self.state == State::LineStart
    }

    /// The next piece of the line's content.
    pub(super) fn feed(&mut self, mut piece: &[u8], sink: &mut impl FieldSink) {
        while !piece.is_empty() {
            match self.state {
                State::LineStart if piece[0] == b':' => {
                    self.state = State::Comment;
                    sink.comment();
                    return;
                }
                State::LineStart | State::Name => {
                    self.state = State::Name;
                    let colon = memchr::memchr(b':', piece);
                    let name = &piece[..colon.unwrap_or(piece.len())];
                    self.add_name(name);
                    let Some(colon) = colon else { return };
                    self.field = self.named();
                    self.state = State::ValueStart;
                    sink.value_start(self.field);
                    piece = &piece[colon + 1..];
                }
                State::Comment => return,
                State::ValueStart => {
                    self.state = State::Value;
                    if piece[0] == b' ' {
                        piece = &piece[1..];
                    }
                }
                State::Value => {
                    sink.value(self.field, piece);
                    return;
                }
            }
        }
    }

    /// The line ended: a blank line says nothing here (the caller asked
    /// [`FieldReader::at_line_start`] first); a line without a colon is its
    /// name with an empty value.
    pub(super) fn end(&mut self, sink: &mut impl FieldSink) {
        match self.state {
            State::LineStart | State::Comment => {}
            State::Name => {
                let field = self.named();
                sink.value_start(field);
                sink.value_end(field);
            }
            State::ValueStart | State::Value => sink.value_end(self.field),
        }
        *self = FieldReader::new();
    }

    fn add_name(&mut self, bytes: &[u8]) {
        let at = self.name_len.min(NAME_BYTES);
        let copied = bytes.len().min(NAME_BYTES - at);
        self.name[at..at + copied].copy_from_slice(&bytes[..copied]);
        self.name_len = (self.name_len + bytes.len()).min(NAME_BYTES + 1);
    }

    fn named(&self) -> Field {
        match self.name.get(..self.name_len) {
            Some(b"data") => Field::Data,
            Some(b"event") => Field::Event,
            Some(b"id") => Field::Id,
            Some(b"retry") => Field::Retry,
            _ => Field::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::String;
    use alloc::vec::Vec;

    /// What the sink saw, as text: `#` a comment, `name=value;` a field.
    #[derive(Default)]
    struct Trace(String);

    impl FieldSink for Trace {
        fn comment(&mut self) {
            self.0.push('#');
        }
        fn value_start(&mut self, field: Field) {
            self.0.push_str(&format!("{field:?}="));
        }
        fn value(&mut self, _: Field, piece: &[u8]) {
            self.0.push_str(core::str::from_utf8(piece).unwrap());
        }
        fn value_end(&mut self, _: Field) {
            self.0.push(';');
        }
    }

    #[test]
    fn fields_in_any_pieces() {
        let table: &[(&str, &str)] = &[
            ("data: x", "Data=x;"),
            ("data:x", "Data=x;"),
            ("data:  x", "Data= x;"),
            ("data", "Data=;"),
            ("data:", "Data=;"),
            ("data: ", "Data=;"),
            ("id:1:2", "Id=1:2;"),
            ("event:message", "Event=message;"),
            ("retry: 10", "Retry=10;"),
            (": keep-alive", "#"),
            (":", "#"),
            ("dat: x", "Other=x;"),
            ("datas: x", "Other=x;"),
            ("retrys", "Other=;"),
            (" data: x", "Other=x;"),
            ("Data: x", "Other=x;"),
            ("x", "Other=;"),
        ];
        for (line, want) in table {
            for cut in 0..=line.len() {
                for second in cut..=line.len() {
                    let mut reader = FieldReader::new();
                    let mut trace = Trace::default();
                    let pieces: Vec<&[u8]> = [
                        &line.as_bytes()[..cut],
                        &line.as_bytes()[cut..second],
                        &line.as_bytes()[second..],
                    ]
                    .into_iter()
                    .filter(|p| !p.is_empty())
                    .collect();
                    for piece in pieces {
                        reader.feed(piece, &mut trace);
                    }
                    assert!(!reader.at_line_start());
                    reader.end(&mut trace);
                    assert_eq!(trace.0, *want, "{line:?} cut at {cut}, {second}");
                    assert!(reader.at_line_start());
                }
            }
        }
    }
}
