//! The shape of a result on the wire: its exact length from running
//! tallies (so every push is checked without rendering), and the rendering
//! that must agree with it byte for byte.

use alloc::format;
use alloc::vec::Vec;

use super::notice::{Notice, NoticeLen};
use super::result::{Entry, ResultBuilder, Tally};
use super::wire::{Wire, push_embedded_json, push_escaped, push_string, string_wire};

const RESULT_OPEN: &[u8] = b"{\"content\":[";
const RESULT_IS_ERROR: &[u8] = b"],\"isError\":";
const RESULT_STRUCTURED: &[u8] = b",\"structuredContent\":";
const TEXT_BLOCK_OPEN: &[u8] = b"{\"type\":\"text\",\"text\":\"";
const TEXT_BLOCK_CLOSE: &[u8] = b"\"}";
pub(super) const TEXT_BLOCK_OVERHEAD: usize = TEXT_BLOCK_OPEN.len() + TEXT_BLOCK_CLOSE.len();
pub(super) const KEY_TRUNCATED: &str = "truncated";
pub(super) const KEY_NEXT_CURSOR: &str = "nextCursor";
pub(super) const KEY_TOTAL_ESTIMATE: &str = "totalEstimate";

impl ResultBuilder {
    /// `structuredContent`'s size, or `None` if it has no members.
    pub(super) fn structured_wire(
        &self,
        tally: &Tally,
        items_used: bool,
        notice: Option<&NoticeLen>,
    ) -> Option<Wire> {
        let mut members = self.config.fields.len();
        let mut wire = self.fields_wire;
        if items_used {
            members += 1;
            // `"key":[` … `]` with a comma between items.
            wire += self.items_key_wire
                + Wire::plain(3 + tally.items.saturating_sub(1))
                + tally.items_wire;
        }
        if let Some(notice) = notice {
            members += 1;
            wire += string_wire(KEY_TRUNCATED) + Wire::plain(":true".len());
            if let Some(cursor) = notice.cursor {
                members += 1;
                wire += string_wire(KEY_NEXT_CURSOR) + Wire::plain(1) + cursor;
            }
            if let Some(digits) = notice.total_digits {
                members += 1;
                wire += string_wire(KEY_TOTAL_ESTIMATE) + Wire::plain(1 + digits);
            }
        }
        (members > 0).then(|| wire + Wire::plain(2 + members - 1))
    }

    /// The exact length of the rendered result; [`Self::render`] checks it
    /// agrees.
    pub(super) fn layout(
        &self,
        tally: &Tally,
        items_used: bool,
        notice: Option<&NoticeLen>,
    ) -> usize {
        let structured = self.structured_wire(tally, items_used, notice);
        let mut blocks = tally.blocks;
        let mut len = tally.blocks_len;
        if let Some(notice) = notice {
            blocks += 1;
            len += TEXT_BLOCK_OVERHEAD + notice.summary_escaped;
        }
        if let Some(structured) = structured {
            blocks += 1;
            len += TEXT_BLOCK_OVERHEAD
                + structured.embedded()
                + RESULT_STRUCTURED.len()
                + structured.len;
        }
        let is_error = if self.config.is_error {
            "true".len()
        } else {
            "false".len()
        };
        len + blocks.saturating_sub(1) + RESULT_OPEN.len() + RESULT_IS_ERROR.len() + is_error + 1
    }

    pub(super) fn render(&self, notice: Option<&Notice<'_>>) -> Vec<u8> {
        let notice_len = notice.map(Notice::len);
        let expected = self.layout(&self.all_tally, self.items_used, notice_len.as_ref());
        let structured = self.render_structured(notice);
        let mut out = Vec::with_capacity(expected);
        out.extend_from_slice(RESULT_OPEN);
        let mut first = true;
        let mut separate = |out: &mut Vec<u8>| {
            if !core::mem::replace(&mut first, false) {
                out.push(b',');
            }
        };
        if let Some(notice) = notice {
            separate(&mut out);
            push_text_block(&mut out, &notice.summary);
        }
        for entry in &self.entries {
            match entry {
                Entry::Text(text, _) => {
                    separate(&mut out);
                    push_text_block(&mut out, text);
                }
                Entry::Block(json) => {
                    separate(&mut out);
                    out.extend_from_slice(json);
                }
                Entry::Item(..) => {}
            }
        }
        if let Some(structured) = &structured {
            separate(&mut out);
            out.extend_from_slice(TEXT_BLOCK_OPEN);
            push_embedded_json(&mut out, structured);
            out.extend_from_slice(TEXT_BLOCK_CLOSE);
        }
        out.extend_from_slice(RESULT_IS_ERROR);
        out.extend_from_slice(if self.config.is_error {
            b"true"
        } else {
            b"false"
        });
        if let Some(structured) = &structured {
            out.extend_from_slice(RESULT_STRUCTURED);
            out.extend_from_slice(structured);
        }
        out.push(b'}');
        debug_assert_eq!(out.len(), expected, "layout and render disagree");
        out
    }

    fn render_structured(&self, notice: Option<&Notice<'_>>) -> Option<Vec<u8>> {
        if self.config.fields.is_empty() && !self.items_used && notice.is_none() {
            return None;
        }
        let notice_len = notice.map(Notice::len);
        let expected = self.structured_wire(&self.all_tally, self.items_used, notice_len.as_ref());
        let mut out = Vec::with_capacity(expected.map_or(0, |wire| wire.len));
        out.push(b'{');
        let mut first = true;
        let mut member = |out: &mut Vec<u8>, key: &str| {
            if !core::mem::replace(&mut first, false) {
                out.push(b',');
            }
            push_string(out, key);
            out.push(b':');
        };
        for field in &self.config.fields {
            member(&mut out, &field.key);
            out.extend_from_slice(&field.json);
        }
        if self.items_used {
            member(&mut out, &self.config.items_key);
            out.push(b'[');
            let mut first_item = true;
            for entry in &self.entries {
                if let Entry::Item(json, _) = entry {
                    if !core::mem::replace(&mut first_item, false) {
                        out.push(b',');
                    }
                    out.extend_from_slice(json);
                }
            }
            out.push(b']');
        }
        if let Some(notice) = notice {
            member(&mut out, KEY_TRUNCATED);
            out.extend_from_slice(b"true");
            if let Some(cursor) = notice.cursor {
                member(&mut out, KEY_NEXT_CURSOR);
                push_string(&mut out, cursor);
            }
            if let Some(total) = notice.total {
                member(&mut out, KEY_TOTAL_ESTIMATE);
                out.extend_from_slice(format!("{total}").as_bytes());
            }
        }
        out.push(b'}');
        Some(out)
    }
}

fn push_text_block(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(TEXT_BLOCK_OPEN);
    push_escaped(out, text);
    out.extend_from_slice(TEXT_BLOCK_CLOSE);
}
