//! One stored copy of a list mirrored in `content` and `structuredContent`.
//!
//! The official Python SDK answers a tool that returns a list twice: a text
//! block per item in `content` (the item's JSON, pretty-printed with an
//! indent of two) and the items themselves in `structuredContent.result`.
//! Cut, both rests were kept: twice the disk for the same items, two links
//! paging through them in two shapes.
//!
//! When every line of the `content` rest is exactly the text block of the
//! item on the same line of the `structuredContent` rest (checked byte for
//! byte when the link is made), only the items are kept, and the `content`
//! link reads them rendered as text blocks: the bytes it gives are those
//! the server wrote. Any difference (another indent or escaping, a block
//! with annotations, a text that is not its item) keeps both copies.
//!
//! The rendering is the pretty form every JSON library writes with an
//! indent of two (`,` then a newline, `": "` between a key and its value,
//! `{}` and `[]` when empty), of the item as written: numbers and strings
//! are copied, never re-serialised.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::path::Path;

/// A text block as a server writes it: around the text (a JSON string),
/// `type` first (the TypeScript SDK, most serialisers) or last (the Python
/// SDK). The one a rest uses is read off its first block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    TypeFirst,
    TextFirst,
}

impl Block {
    const SHAPES: [(Block, &'static [u8], &'static [u8]); 2] = [
        (Block::TypeFirst, br#"{"type":"text","text":"#, b"}"),
        (Block::TextFirst, br#"{"text":"#, br#","type":"text"}"#),
    ];

    /// The shape of the block on `line`, if it is a bare text block.
    fn of(line: &[u8]) -> Option<Block> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b",").unwrap_or(line);
        Block::SHAPES
            .iter()
            .find(|(_, head, tail)| line.starts_with(head) && line.ends_with(tail))
            .map(|&(block, _, _)| block)
    }

    fn head_tail(self) -> (&'static [u8], &'static [u8]) {
        let (_, head, tail) = Block::SHAPES[self as usize];
        (head, tail)
    }
}

/// Every how many lines a place in both files is remembered: reading the
/// rendered rest from an offset renders at most this many lines before it.
/// Keeps the index of a million-item list at a few thousand entries.
const MARK_EVERY: u64 = 256;

/// The `content` rest as a view of the items' file.
#[derive(Debug)]
pub(crate) struct Mirror {
    /// Bytes of the rendered rest (the `content` rest's size).
    len: u64,
    /// For every `MARK_EVERY`-th line after the `[` line: its offset in the
    /// rendered rest and in the items' file.
    marks: Vec<(u64, u64)>,
    block: Block,
}

/// The first line of every rest.
const OPEN: &[u8] = b"[\n";

impl Mirror {
    /// The view, when `content` (the `content` rest's file) is, line by
    /// line, `items` (the `structuredContent.result` rest's file) from its
    /// item `skip` on (the `content` array was cut that many items later)
    /// rendered as text blocks; `None` when any byte differs.
    pub(crate) fn check(content: &Path, items: &Path, skip: u64) -> io::Result<Option<Mirror>> {
        let mut content = BufReader::with_capacity(256 << 10, File::open(content)?);
        let mut items = BufReader::with_capacity(256 << 10, File::open(items)?);
        let (mut shown, mut item, mut rendered) = (Vec::new(), Vec::new(), Vec::new());
        content.read_until(b'\n', &mut shown)?;
        items.read_until(b'\n', &mut item)?;
        if shown != OPEN || item != OPEN {
            return Ok(None);
        }
        let (mut len, mut at) = (OPEN.len() as u64, OPEN.len() as u64);
        for _ in 0..skip {
            item.clear();
            match items.read_until(b'\n', &mut item)? {
                0 => return Ok(None),
                n => at += n as u64,
            }
        }
        let (mut marks, mut block, mut line) = (Vec::new(), None, 0u64);
        loop {
            shown.clear();
            item.clear();
            let a = content.read_until(b'\n', &mut shown)?;
            let b = items.read_until(b'\n', &mut item)?;
            if a == 0 || b == 0 {
                return Ok(match block {
                    Some(block) if a == b => Some(Mirror { len, marks, block }),
                    _ => None,
                });
            }
            if line % MARK_EVERY == 0 {
                marks.push((len, at));
            }
            let Some(shape) = block.or_else(|| Block::of(&shown)) else {
                return Ok(None);
            };
            block = Some(shape);
            rendered.clear();
            render_line(&item, shape, &mut rendered);
            if rendered != shown {
                return Ok(None);
            }
            len += a as u64;
            at += b as u64;
            line += 1;
        }
    }

    /// The rendered rest's size.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// At most `len` bytes of the rendered rest from `offset`, rendered
    /// from `items` (the items' file).
    pub(crate) fn read_at(&self, items: &mut File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(len.min(1 << 20));
        if offset >= self.len || len == 0 {
            return Ok(out);
        }
        if let Some(open) = OPEN.get(offset as usize..) {
            out.extend_from_slice(&open[..open.len().min(len)]);
        }
        let from = offset + out.len() as u64;
        let mark = self.marks.partition_point(|&(at, _)| at <= from);
        let Some(&(mut rendered_at, item_at)) = mark.checked_sub(1).and_then(|m| self.marks.get(m))
        else {
            return Ok(out);
        };
        items.seek(SeekFrom::Start(item_at))?;
        let mut lines = BufReader::with_capacity(64 << 10, items);
        let (mut item, mut rendered) = (Vec::new(), Vec::new());
        while out.len() < len {
            item.clear();
            if lines.read_until(b'\n', &mut item)? == 0 {
                break;
            }
            rendered.clear();
            render_line(&item, self.block, &mut rendered);
            let end = rendered_at + rendered.len() as u64;
            let want = offset + out.len() as u64;
            if end > want {
                let skip = (want - rendered_at) as usize;
                let take = (rendered.len() - skip).min(len - out.len());
                out.extend_from_slice(&rendered[skip..skip + take]);
            }
            rendered_at = end;
        }
        Ok(out)
    }
}

/// One line of the items' rest as the `content` rest writes it: `[` and
/// `]` as they are, an item as its text block, with its `,` and newline.
fn render_line(line: &[u8], block: Block, out: &mut Vec<u8>) {
    let (line, newline) = match line.strip_suffix(b"\n") {
        Some(line) => (line, true),
        None => (line, false),
    };
    let (item, comma) = match line.strip_suffix(b",") {
        Some(item) => (item, true),
        None => (line, false),
    };
    let (head, tail) = block.head_tail();
    if matches!(item, b"[" | b"]") {
        out.extend_from_slice(item);
    } else {
        out.extend_from_slice(head);
        if item.first() == Some(&b'"') {
            // A string item's block holds the string itself, escaped as
            // written.
            out.extend_from_slice(item);
        } else {
            out.push(b'"');
            let mut pretty = Vec::with_capacity(item.len() * 2);
            pretty_print(item, &mut pretty);
            escape(&pretty, out);
            out.push(b'"');
        }
        out.extend_from_slice(tail);
    }
    if comma {
        out.push(b',');
    }
    if newline {
        out.push(b'\n');
    }
}

/// `value` (valid JSON) pretty-printed with an indent of two, its strings
/// and numbers copied as written.
fn pretty_print(value: &[u8], out: &mut Vec<u8>) {
    let newline = |out: &mut Vec<u8>, depth: usize| {
        out.push(b'\n');
        out.resize(out.len() + 2 * depth, b' ');
    };
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&b) = value.get(i) {
        match b {
            b'"' => {
                let mut j = i + 1;
                while let Some(&c) = value.get(j) {
                    match c {
                        b'\\' => j += 2,
                        b'"' => break,
                        _ => j += 1,
                    }
                }
                let end = (j + 1).min(value.len());
                out.extend_from_slice(&value[i..end]);
                i = end;
                continue;
            }
            b'{' | b'[' => {
                let close = if b == b'{' { b'}' } else { b']' };
                let next = value[i + 1..]
                    .iter()
                    .position(|c| !c.is_ascii_whitespace())
                    .map(|k| i + 1 + k);
                out.push(b);
                if next.is_some_and(|k| value[k] == close) {
                    out.push(close);
                    i = next.unwrap_or(i) + 1;
                    continue;
                }
                depth += 1;
                newline(out, depth);
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(out, depth);
                out.push(b);
            }
            b',' => {
                out.push(b',');
                newline(out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            b' ' | b'\t' | b'\n' | b'\r' => {}
            _ => out.push(b),
        }
        i += 1;
    }
}

/// `text` as the contents of a JSON string, escaped as JSON serialisers
/// write it: the two-character escapes where JSON has one, `\u00xx`
/// (lowercase) for the other control bytes, every other byte as it is.
fn escape(text: &[u8], out: &mut Vec<u8>) {
    for &b in text {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b if b < 0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 15)]);
            }
            b => out.push(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// What a Python SDK tool returning a list writes, rest by rest: each
    /// item's text block (`json.dumps(item, indent=2)`, which serde_json's
    /// pretty printer writes alike) and the items.
    fn rests(items: &[Value]) -> (Vec<u8>, Vec<u8>) {
        rests_shaped(items, Block::TypeFirst)
    }

    fn rests_shaped(items: &[Value], block: Block) -> (Vec<u8>, Vec<u8>) {
        let join = |lines: Vec<String>| format!("[\n{}\n]", lines.join(",\n")).into_bytes();
        let blocks = items
            .iter()
            .map(|item| {
                let text = match item {
                    Value::String(s) => s.clone(),
                    item => serde_json::to_string_pretty(item).expect("pretty"),
                };
                let text = serde_json::to_string(&text).expect("a string");
                match block {
                    Block::TypeFirst => format!(r#"{{"type":"text","text":{text}}}"#),
                    Block::TextFirst => format!(r#"{{"text":{text},"type":"text"}}"#),
                }
            })
            .collect();
        let items = items.iter().map(Value::to_string).collect();
        (join(blocks), join(items))
    }

    /// The two rests written to files in a directory of their own,
    /// removed when dropped (a failing test too leaves nothing behind).
    struct Files {
        dir: std::path::PathBuf,
        content: std::path::PathBuf,
        items: std::path::PathBuf,
    }

    impl Drop for Files {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn files(name: &str, content: &[u8], items: &[u8]) -> Files {
        let dir =
            std::env::temp_dir().join(format!("drainpipe-mirror-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let files = Files {
            content: dir.join("content"),
            items: dir.join("items"),
            dir,
        };
        std::fs::write(&files.content, content).expect("write");
        std::fs::write(&files.items, items).expect("write");
        files
    }

    /// Items of every shape (nested, empty containers, escapes, control
    /// bytes, multibyte text, numbers as written, strings) over more lines
    /// than one mark covers: the view is found, its size is the content
    /// rest's, and every range read from it is that rest's bytes.
    #[test]
    fn a_mirrored_rest_reads_back_byte_for_byte_from_the_items() {
        let mut items = Vec::new();
        for n in 0..700 {
            items.push(json!({
                "path": format!("src/file-{n}.rs"),
                "line": n,
                "text": format!("item-{n}: «ünïcødé» \"q\"\t\\ \u{1} {n}"),
                "tags": [],
                "more": {},
                "nested": {"a": [1, 2.5, -3e-7, true, null, {"b": []}]},
            }));
            if n % 100 == 0 {
                items.push(json!(format!("a plain string {n} \"with\" escapes\n")));
                items.push(json!(n));
                items.push(json!([]));
            }
        }
        for block in [Block::TypeFirst, Block::TextFirst] {
            let (content, stored) = rests_shaped(&items, block);
            let f = files("whole", &content, &stored);
            let end = content.len() as u64;
            read_back(
                &f,
                &content,
                0,
                &[(0, 1), (1, 100), (12_345, 70_000), (end - 3, 10)],
            );
        }
    }

    /// The view of `f` from item `skip` is found, is `content`'s size,
    /// reads back whole and at each of `ranges` as `content`, and gives
    /// nothing past its end.
    fn read_back(f: &Files, content: &[u8], skip: u64, ranges: &[(u64, usize)]) {
        let mirror = Mirror::check(&f.content, &f.items, skip)
            .expect("read")
            .expect("a mirror");
        assert_eq!(mirror.len(), content.len() as u64);
        let mut file = File::open(&f.items).expect("open");
        assert_eq!(
            mirror.read_at(&mut file, 0, usize::MAX).expect("read"),
            content
        );
        for &(offset, len) in ranges {
            let got = mirror.read_at(&mut file, offset, len).expect("read");
            let from = offset as usize;
            let to = (from + len).min(content.len());
            assert_eq!(got, &content[from..to], "{offset} {len}");
        }
        let end = content.len() as u64;
        assert!(mirror.read_at(&mut file, end, 10).expect("read").is_empty());
    }

    /// The blocks cut later than the items (the items keep their last
    /// ones, so their rest starts sooner): the view starts that many items
    /// into the items' file; one item too many or too few to skip, or the
    /// blocks cut sooner, is no view.
    #[test]
    fn blocks_cut_later_than_the_items_read_from_further_in() {
        let items: Vec<Value> = (0..1_000)
            .map(|n| json!({"line": n, "text": format!("«{n}»")}))
            .collect();
        let (_, stored) = rests(&items[3..]);
        let (content, _) = rests(&items[420..]);
        let f = files("later", &content, &stored);
        let end = content.len() as u64;
        let ranges: Vec<(u64, usize)> = [0, 1, 2, 3, 5_000, end - 1]
            .into_iter()
            .map(|offset| (offset, 3_000))
            .collect();
        read_back(&f, &content, 417, &ranges);
        for skip in [416, 418, 0, 997] {
            assert!(
                Mirror::check(&f.content, &f.items, skip)
                    .expect("read")
                    .is_none(),
                "skip {skip}"
            );
        }
    }

    /// One byte off anywhere, a block with more than its text, another
    /// indent, one item more on either side: no view (both are kept).
    #[test]
    fn anything_but_an_exact_mirror_is_not_one() {
        let items: Vec<Value> = (0..10).map(|n| json!({"n": n, "s": "x"})).collect();
        let (content, stored) = rests(&items);
        let mut cases = Vec::new();
        let mut flipped = content.clone();
        let at = flipped.len() / 2;
        flipped[at] ^= 1;
        cases.push(flipped);
        cases.push(
            String::from_utf8(content.clone())
                .expect("utf-8")
                .replacen(r#""text":"#, r#""annotations":{},"text":"#, 1)
                .into_bytes(),
        );
        cases.push(
            String::from_utf8(content.clone())
                .expect("utf-8")
                .replace(r#"\n  "#, r#"\n    "#)
                .into_bytes(),
        );
        let (fewer, _) = rests(&items[..9]);
        cases.push(fewer);
        for (k, case) in cases.iter().enumerate() {
            let f = files(&format!("off-{k}"), case, &stored);
            assert!(
                Mirror::check(&f.content, &f.items, 0)
                    .expect("read")
                    .is_none(),
                "case {k}"
            );
        }
        let (_, more) = rests(&items[..9]);
        let f = files("more", &content, &more);
        assert!(
            Mirror::check(&f.content, &f.items, 0)
                .expect("read")
                .is_none()
        );
    }
}
