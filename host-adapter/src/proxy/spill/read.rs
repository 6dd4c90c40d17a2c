//! Reading spilled values back: pages for `resources/read`, byte ranges
//! and line searches for `drainpipe_read`, each within a number of bytes
//! on the wire (after JSON escaping).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use drainpipe_framer::budget::SpillKind;
use regex::bytes::Regex;

use super::{FileState, Linked, Mirror, SpillStore, URI_PREFIX};

/// A spilled value, opened for reading.
pub(crate) struct Value {
    file: File,
    pub(crate) kind: SpillKind,
    pub(crate) mime: String,
    pub(crate) size: u64,
    /// The `content` rest of a mirrored list: `file` holds its items.
    mirror: Option<Arc<Mirror>>,
}

/// What a URI names.
pub(crate) enum Lookup {
    Found(Value),
    /// It was spilled, then evicted to stay within the quota.
    Evicted,
    /// Not a value of this proxy (or not kept).
    Unknown,
}

/// A `drainpipe:` URI split into the value's name and the page offset.
/// The names this proxy gives are short (`<token>-<n>/<k>`) and offsets
/// are at most 20 digits: anything longer is not one of its URIs.
pub(crate) fn parse_uri(uri: &str) -> Option<(&str, Option<u64>)> {
    let rest = uri.strip_prefix(URI_PREFIX)?;
    let (name, query) = match rest.split_once('?') {
        Some((name, query)) => (name, Some(query)),
        None => (rest, None),
    };
    if name.len() > 64 {
        return None;
    }
    let offset = match query {
        None => None,
        Some(query) => {
            let digits = query.strip_prefix("offset=")?;
            if digits.len() > 20 {
                return None;
            }
            Some(digits.parse().ok()?)
        }
    };
    Some((name, offset))
}

/// The URI of value `name` at `offset`, as this proxy writes it.
pub(crate) fn value_uri(name: &str, offset: Option<u64>) -> String {
    match offset {
        Some(offset) => format!("{URI_PREFIX}{name}?offset={offset}"),
        None => format!("{URI_PREFIX}{name}"),
    }
}

/// At most `max` bytes of `text` (cut at a character), for echoing what a
/// peer sent inside an answer that must stay within a budget.
pub(crate) fn shown(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl SpillStore {
    /// Opens the value named `name` (`<n>/<k>`).
    pub(crate) fn lookup(&self, name: &str) -> Lookup {
        let state = self.shared.state();
        let Some(Linked { file, mime, mirror }) = state.links.get(name).cloned() else {
            return Lookup::Unknown;
        };
        let Some(entry) = state.files.get(&file) else {
            return Lookup::Unknown;
        };
        let (size, kind) = match entry.state {
            FileState::Complete { len } => (mirror.as_ref().map_or(len, |m| m.len()), entry.kind),
            FileState::Evicted => return Lookup::Evicted,
            _ => return Lookup::Unknown,
        };
        // Opened under the lock: eviction cannot remove it in between (an
        // open file stays readable after it is removed).
        match File::open(self.shared.path(file)) {
            Ok(file) => Lookup::Found(Value {
                file,
                kind,
                mime,
                size,
                mirror,
            }),
            Err(_) => Lookup::Evicted,
        }
    }
}

/// A value that can be read now, for `resources/list`.
pub(crate) struct Listed {
    /// The order values were kept in.
    pub(crate) file: u64,
    /// Its name in URIs (`<n>/<k>`).
    pub(crate) name: String,
    pub(crate) mime: String,
    /// Its decoded size.
    pub(crate) size: u64,
}

impl SpillStore {
    /// Every value that can be read now (complete, not evicted), in the
    /// order they were kept, then by name.
    pub(crate) fn listing(&self) -> Vec<Listed> {
        let state = self.shared.state();
        let mut listed: Vec<Listed> = state
            .links
            .iter()
            .filter_map(
                |(name, linked)| match state.files.get(&linked.file)?.state {
                    FileState::Complete { len } => Some(Listed {
                        file: linked.file,
                        name: name.clone(),
                        mime: linked.mime.clone(),
                        size: linked.mirror.as_ref().map_or(len, |m| m.len()),
                    }),
                    _ => None,
                },
            )
            .collect();
        listed.sort_by(|a, b| (a.file, &a.name).cmp(&(b.file, &b.name)));
        listed
    }
}

/// Bytes a character takes on the wire inside a JSON string.
fn wire_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// Text read from a value.
pub(crate) struct Text {
    pub(crate) text: String,
    /// Where it starts and how many bytes of the value it covers.
    pub(crate) offset: u64,
    pub(crate) len: u64,
}

impl Value {
    fn read_at(&mut self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        if let Some(mirror) = &self.mirror {
            return mirror.read_at(&mut self.file, offset, len);
        }
        self.file.seek(SeekFrom::Start(offset))?;
        let mut bytes = Vec::with_capacity(len);
        (&mut self.file).take(len as u64).read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// `offset`, moved back to the start of the character it falls in.
    fn char_start(&mut self, offset: u64) -> io::Result<u64> {
        let offset = offset.min(self.size);
        let from = offset.saturating_sub(3);
        let before = self.read_at(from, (offset - from) as usize + 1)?;
        let mut at = offset;
        let mut i = (offset - from) as usize;
        // Back over continuation bytes, at most three.
        while i > 0 && before.get(i).is_some_and(|b| b & 0xC0 == 0x80) {
            i -= 1;
            at -= 1;
        }
        Ok(at)
    }

    /// Text from `offset` (moved back to a character start) up to `end`
    /// (moved back likewise), as much as fits `max_wire` bytes escaped.
    /// Bytes that are not UTF-8 become U+FFFD.
    pub(crate) fn text(&mut self, offset: u64, end: u64, max_wire: usize) -> io::Result<Text> {
        let start = self.char_start(offset)?;
        let end = self.char_start(end.min(self.size))?.max(start);
        let want = ((end - start) as usize).min(max_wire);
        let bytes = self.read_at(start, want)?;
        let mut text = String::new();
        let mut wire = 0;
        let mut taken = 0;
        let mut rest = &bytes[..];
        'outer: while !rest.is_empty() {
            let (valid, skip) = match std::str::from_utf8(rest) {
                Ok(s) => (s, 0),
                Err(e) => {
                    let valid = std::str::from_utf8(&rest[..e.valid_up_to()]).unwrap_or_default();
                    (valid, e.error_len().unwrap_or(0))
                }
            };
            for c in valid.chars() {
                let w = wire_len(c);
                if wire + w > max_wire {
                    break 'outer;
                }
                wire += w;
                text.push(c);
                taken += c.len_utf8();
            }
            if skip == 0 {
                // The end, or a character cut by the read: stop before it.
                break;
            }
            if wire + 3 > max_wire {
                break;
            }
            wire += 3;
            text.push(char::REPLACEMENT_CHARACTER);
            taken += skip;
            rest = &rest[valid.len() + skip..];
        }
        Ok(Text {
            text,
            offset: start,
            len: taken as u64,
        })
    }

    /// Base64 of the bytes from `offset` to `end`, as much as fits
    /// `max_wire` bytes; the bytes it covers.
    pub(crate) fn blob(
        &mut self,
        offset: u64,
        end: u64,
        max_wire: usize,
    ) -> io::Result<(String, u64, u64)> {
        let offset = offset.min(self.size);
        let end = end.min(self.size).max(offset);
        let len = ((end - offset) as usize).min(max_wire / 4 * 3);
        let bytes = self.read_at(offset, len)?;
        Ok((STANDARD.encode(&bytes), offset, bytes.len() as u64))
    }

    /// The lines from `offset` to `end` that `pattern` matches, each as
    /// `<offset>: <line>`, as many as fit `max_wire` bytes; and where to
    /// go on if more may match. A line longer than `LONG_LINE` is matched
    /// in pieces of that length; a line shown is cut to `SHOWN_LINE`.
    pub(crate) fn search(
        &mut self,
        pattern: &Regex,
        offset: u64,
        end: u64,
        max_wire: usize,
    ) -> io::Result<(String, usize, Option<u64>)> {
        const LONG_LINE: usize = 1 << 20;
        const SHOWN_LINE: usize = 2000;
        let start = self.char_start(offset)?;
        let end = end.min(self.size).max(start);
        let mut out = String::new();
        let mut wire = 0;
        let mut found = 0;
        let mut line: Vec<u8> = Vec::new();
        let mut line_start = start;
        let mut at = start;
        // Adds a matching line's entry; false when it does not fit. The
        // first match always gets in, shortened to the room, so a search
        // always moves on.
        let check = |line: &[u8],
                     line_start: u64,
                     out: &mut String,
                     wire: &mut usize,
                     found: &mut usize|
         -> bool {
            let trimmed = line.strip_suffix(b"\r").unwrap_or(line);
            if !pattern.is_match(trimmed) {
                return true;
            }
            let mut shown_len = trimmed.len().min(SHOWN_LINE);
            while shown_len < trimmed.len() && trimmed[shown_len] & 0xC0 == 0x80 {
                shown_len -= 1;
            }
            let shown = String::from_utf8_lossy(&trimmed[..shown_len]);
            let entry = format!(
                "{line_start}: {shown}{}\n",
                if shown_len < trimmed.len() { "…" } else { "" }
            );
            let w: usize = entry.chars().map(wire_len).sum();
            if *wire + w <= max_wire {
                *wire += w;
                out.push_str(&entry);
                *found += 1;
                return true;
            }
            if *found > 0 {
                return false;
            }
            let mut entry = format!("{line_start}: ");
            // `…` and the escaped newline: 3 + 2 bytes on the wire.
            let mut w: usize = entry.chars().map(wire_len).sum::<usize>() + 5;
            for c in shown.chars() {
                if *wire + w + wire_len(c) > max_wire {
                    break;
                }
                w += wire_len(c);
                entry.push(c);
            }
            entry.push_str("…\n");
            *wire += w;
            out.push_str(&entry);
            *found += 1;
            true
        };
        while at < end {
            let block = self.read_at(at, (end - at).min(1 << 20) as usize)?;
            if block.is_empty() {
                break;
            }
            let mut rest = &block[..];
            while !rest.is_empty() {
                let (piece, newline) = match memchr::memchr(b'\n', rest) {
                    Some(i) => (&rest[..i], true),
                    None => (rest, false),
                };
                let room = LONG_LINE - line.len();
                let take = piece.len().min(room);
                line.extend_from_slice(&piece[..take]);
                let full = line.len() == LONG_LINE;
                let consumed = take + usize::from(newline && take == piece.len());
                rest = &rest[consumed..];
                at += consumed as u64;
                if newline && take == piece.len() || full {
                    if !check(&line, line_start, &mut out, &mut wire, &mut found) {
                        return Ok((out, found, Some(line_start)));
                    }
                    line.clear();
                    line_start = at;
                }
            }
        }
        if !line.is_empty() && !check(&line, line_start, &mut out, &mut wire, &mut found) {
            return Ok((out, found, Some(line_start)));
        }
        Ok((out, found, None))
    }
}
