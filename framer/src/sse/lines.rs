//! Lines of an event stream: CRLF, LF and CR line ends at any chunk split,
//! and a UTF-8 BOM skipped at the very start of the stream only.

use memchr::memchr2;

/// The UTF-8 encoding of U+FEFF, which the stream may start with.
const BOM: &[u8; 3] = b"\xEF\xBB\xBF";

/// Where the lines go: content pieces in stream order, each line closed by
/// one `line_end`. A line's content never holds a `\r` or `\n`.
pub(super) trait LineSink {
    /// The next piece of the current line, starting at stream `offset`.
    fn content(&mut self, piece: &[u8], offset: u64);
    /// The current line ended (its line end is not content).
    fn line_end(&mut self);
}

/// Splits a byte stream into lines, whatever the chunking.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LineSplitter {
    /// Stream offset of the next byte pushed.
    pos: u64,
    /// Bytes of the BOM matched at the stream's start so far (0 to 3), or
    /// `None` once the start is behind us. Why it exists: a chunk may end
    /// inside the BOM, and bytes that only looked like its start are
    /// content after all, which is known only when the next byte comes.
    bom: Option<u8>,
    /// The last byte was a `\r`, which ended its line at once. Why it
    /// exists: a `\n` right after it, even at the start of the next chunk,
    /// is the same line end (CRLF), not a blank line.
    after_cr: bool,
}

impl LineSplitter {
    pub(super) fn new() -> Self {
        LineSplitter {
            pos: 0,
            bom: Some(0),
            after_cr: false,
        }
    }

    /// Stream offset of the next byte.
    pub(super) fn position(&self) -> u64 {
        self.pos
    }

    /// Splits `chunk`, the stream's next bytes, into `sink`.
    pub(super) fn push(&mut self, mut chunk: &[u8], sink: &mut impl LineSink) {
        if let Some(matched) = self.bom {
            chunk = self.skip_bom(matched, chunk, sink);
        }
        if self.after_cr && !chunk.is_empty() {
            self.after_cr = false;
            if chunk[0] == b'\n' {
                self.pos += 1;
                chunk = &chunk[1..];
            }
        }
        while !chunk.is_empty() {
            let Some(end) = memchr2(b'\r', b'\n', chunk) else {
                sink.content(chunk, self.pos);
                self.pos += chunk.len() as u64;
                return;
            };
            if end > 0 {
                sink.content(&chunk[..end], self.pos);
            }
            sink.line_end();
            let mut taken = end + 1;
            if chunk[end] == b'\r' {
                match chunk.get(taken) {
                    Some(b'\n') => taken += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.pos += taken as u64;
            chunk = &chunk[taken..];
        }
    }

    /// The stream ended: bytes that began a BOM but never finished it are
    /// content of the (unfinished) first line.
    pub(super) fn finish(&mut self, sink: &mut impl LineSink) {
        if let Some(matched) = self.bom.take()
            && matched > 0
        {
            sink.content(&BOM[..usize::from(matched)], 0);
        }
        self.after_cr = false;
    }

    /// Matches the stream's first bytes against the BOM; returns the rest of
    /// `chunk` once decided, or nothing while undecided.
    fn skip_bom<'c>(&mut self, matched: u8, chunk: &'c [u8], sink: &mut impl LineSink) -> &'c [u8] {
        let mut matched = usize::from(matched);
        let mut at = 0;
        while matched < BOM.len() {
            let Some(&b) = chunk.get(at) else {
                self.bom = Some(matched as u8);
                self.pos += at as u64;
                return &[];
            };
            if b != BOM[matched] {
                // Not a BOM: what matched so far is the first line's start.
                self.bom = None;
                self.pos += at as u64;
                if matched > 0 {
                    sink.content(&BOM[..matched], 0);
                }
                return &chunk[at..];
            }
            matched += 1;
            at += 1;
        }
        self.bom = None;
        self.pos += at as u64;
        &chunk[at..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    /// Lines as (offset of first byte, content), a `None` content for a
    /// line end.
    #[derive(Default)]
    struct Collect {
        lines: Vec<(u64, Vec<u8>)>,
        current: Option<(u64, Vec<u8>)>,
    }

    impl LineSink for Collect {
        fn content(&mut self, piece: &[u8], offset: u64) {
            let (start, bytes) = self.current.get_or_insert((offset, Vec::new()));
            assert_eq!(*start + bytes.len() as u64, offset, "pieces are contiguous");
            bytes.extend_from_slice(piece);
        }
        fn line_end(&mut self) {
            let line = self.current.take().unwrap_or((u64::MAX, Vec::new()));
            self.lines.push(line);
        }
    }

    /// Ended lines as (offset, content), the unfinished rest, the position.
    type Split = (Vec<(u64, Vec<u8>)>, Option<Vec<u8>>, u64);

    /// Chunks in, the lines expected, the unfinished rest expected.
    type Table<'a> = &'a [(&'a [&'a [u8]], &'a [(u64, &'a [u8])], Option<&'a [u8]>)];

    fn split(chunks: &[&[u8]]) -> Split {
        let mut splitter = LineSplitter::new();
        let mut sink = Collect::default();
        for chunk in chunks {
            splitter.push(chunk, &mut sink);
        }
        splitter.finish(&mut sink);
        let rest = sink.current.take().map(|(_, bytes)| bytes);
        (sink.lines, rest, splitter.position())
    }

    const BLANK: u64 = u64::MAX;

    #[test]
    fn line_ends_at_any_split() {
        let table: Table = &[
            (
                &[b"a\nb\rc\r\nd"],
                &[(0, b"a"), (2, b"b"), (4, b"c")],
                Some(b"d"),
            ),
            (&[b"a\r", b"\nb\n"], &[(0, b"a"), (3, b"b")], None),
            (
                &[b"a\r", b"", b"\n", b"\n"],
                &[(0, b"a"), (BLANK, b"")],
                None,
            ),
            (
                &[b"a\r\r\n\n"],
                &[(0, b"a"), (BLANK, b""), (BLANK, b"")],
                None,
            ),
            (&[b"\r", b"\r", b"\n"], &[(BLANK, b""), (BLANK, b"")], None),
            (
                &[b"\n\r\n\r"],
                &[(BLANK, b""), (BLANK, b""), (BLANK, b"")],
                None,
            ),
        ];
        for (chunks, lines, rest) in table {
            let (got, got_rest, _) = split(chunks);
            let want: Vec<(u64, Vec<u8>)> = lines.iter().map(|(o, l)| (*o, l.to_vec())).collect();
            assert_eq!(got, want, "{chunks:?}");
            assert_eq!(got_rest.as_deref(), *rest, "{chunks:?}");
        }
    }

    #[test]
    fn a_bom_is_skipped_at_the_start_only() {
        let table: Table = &[
            (&[b"\xEF\xBB\xBFa\n"], &[(3, b"a")], None),
            (&[b"\xEF", b"\xBB", b"\xBF", b"a\n"], &[(3, b"a")], None),
            (
                &[b"\xEF\xBB\xBF\xEF\xBB\xBF\n"],
                &[(3, b"\xEF\xBB\xBF")],
                None,
            ),
            (&[b"\xEF\xBB", b"x\n"], &[(0, b"\xEF\xBBx")], None),
            (&[b"\xEF", b"\n"], &[(0, b"\xEF")], None),
            (&[b"\xEF\xBB"], &[], Some(b"\xEF\xBB")),
            (
                &[b"a\n\xEF\xBB\xBF\n"],
                &[(0, b"a"), (2, b"\xEF\xBB\xBF")],
                None,
            ),
            (&[b"\xEF\xBB\xBF"], &[], None),
        ];
        for (chunks, lines, rest) in table {
            let (got, got_rest, position) = split(chunks);
            let want: Vec<(u64, Vec<u8>)> = lines.iter().map(|(o, l)| (*o, l.to_vec())).collect();
            assert_eq!(got, want, "{chunks:?}");
            assert_eq!(got_rest.as_deref(), *rest, "{chunks:?}");
            let total: usize = chunks.iter().map(|c| c.len()).sum();
            assert_eq!(position, total as u64, "{chunks:?}");
        }
    }
}
