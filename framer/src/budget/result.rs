//! The `tools/call` result builder: fills a byte budget entry by entry and,
//! if anything had to be left out, says so in words and in fields.

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use serde::Serialize;
use serde_json::Value;

use super::config::{BudgetError, Continuation, ResultConfig};
use super::layout::{KEY_NEXT_CURSOR, KEY_TOTAL_ESTIMATE, KEY_TRUNCATED, TEXT_BLOCK_OVERHEAD};
use super::notice::{Notice, summary, worst_notice};
use super::wire::{Wire, escaped_len, escaped_len_within, longest_prefix_within, string_wire};
use crate::Id;

/// What became of one pushed entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Pushed {
    /// The entry is in the result whatever comes next. Keep pushing.
    Kept,
    /// The entry fits, and stays in the result if nothing after it is left
    /// out; if something later is, it makes room for the truncation notice.
    /// Keep pushing; [`ResultBuilder::kept`] is final once the builder is
    /// [full](ResultBuilder::is_full).
    Provisional,
    /// The text did not fit whole; its first `kept_bytes` bytes (UTF-8, cut
    /// at a character boundary) are in the result. The builder is full:
    /// stop producing.
    Cut {
        /// Bytes of the text that were kept.
        kept_bytes: usize,
    },
    /// The entry is not in the result. The builder is full: stop producing.
    LeftOut,
}

impl Pushed {
    /// Whether the producer should go on (`Kept` or `Provisional`).
    pub fn keep_going(self) -> bool {
        matches!(self, Pushed::Kept | Pushed::Provisional)
    }
}

/// One pushed entry, already measured.
#[derive(Clone, Debug)]
pub(super) enum Entry {
    /// A text block's text and its escaped length.
    Text(String, usize),
    /// Another content block (image, resource...), serialised.
    Block(Vec<u8>),
    /// A structured item, serialised, and its measure.
    Item(Vec<u8>, Wire),
}

/// Running sizes of a set of entries: enough to compute the result's exact
/// length without rendering it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Tally {
    pub(super) blocks: usize,
    pub(super) blocks_len: usize,
    pub(super) items: usize,
    pub(super) items_wire: Wire,
}

impl Tally {
    pub(super) fn with(mut self, entry: &Entry) -> Tally {
        match entry {
            Entry::Text(_, escaped) => {
                self.blocks += 1;
                self.blocks_len += TEXT_BLOCK_OVERHEAD + escaped;
            }
            Entry::Block(json) => {
                self.blocks += 1;
                self.blocks_len += json.len();
            }
            Entry::Item(_, wire) => {
                self.items += 1;
                self.items_wire += *wire;
            }
        }
        self
    }
}

/// Builds one `tools/call` result within a byte budget.
///
/// Push entries in the order the agent should see them: text blocks
/// ([`push_text`](Self::push_text)), other content blocks
/// ([`push_block`](Self::push_block)) and structured items
/// ([`push_item`](Self::push_item)). Each entry is kept whole or, once one
/// does not fit, the builder is full: a text that does not fit is cut at a
/// character boundary to fill the room left, everything after it is left out,
/// and the kept entries are always a prefix of the pushed ones.
///
/// A result where nothing was left out is exactly what a plain serialiser
/// would produce from the entries, with no truncation marker:
///
/// ```json
/// {"content":[{"type":"text","text":"…"},…,{"type":"text","text":"<structuredContent as JSON>"}],
///  "isError":false,"structuredContent":{"items":[…]}}
/// ```
///
/// (`structuredContent` and its text copy appear only if an item was pushed
/// or a field configured.) If something was left out, the result starts with
/// a plain-text summary for the model and `structuredContent` gains
/// `"truncated":true`, then `nextCursor` and `totalEstimate` if the caller
/// supplied them. The budget counts all of it, both copies of the structured
/// content included.
///
/// # Example
///
/// ```
/// use drainpipe_framer::budget::{Continuation, ResultBuilder, ResultConfig};
/// use serde_json::json;
///
/// let config = ResultConfig::new(2048).with_noun("matching records");
/// let mut result = ResultBuilder::with_config(config)?;
/// let total = 4382;
/// for line in 0..total {
///     let hit = json!({"path": "src/auth.ts", "line": line, "summary": "reads token from environment"});
///     if !result.push_item(&hit).keep_going() {
///         break; // stop searching: the rest would not be sent anyway
///     }
/// }
/// let cursor = format!("offset:{}", result.kept_items());
/// let done = result.finish(Continuation::cursor(&cursor).with_total(total))?;
/// assert!(done.is_truncated() && done.as_bytes().len() <= 2048);
///
/// let value = done.to_value()?;
/// let kept = value["structuredContent"]["items"].as_array().unwrap().len();
/// assert_eq!(value["structuredContent"]["truncated"], true);
/// assert_eq!(value["structuredContent"]["totalEstimate"], 4382);
/// assert_eq!(
///     value["content"][0]["text"],
///     format!("Returned {kept} of 4,382 matching records. Use cursor \"offset:{kept}\" to continue, or narrow the query."),
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ResultBuilder {
    pub(super) config: ResultConfig,
    /// Bytes held back from the first entry on for the truncation notice,
    /// the worst case of every cursor and count the config allows: the
    /// notice is only known once something is left out, and by then the
    /// entries before it must already leave room for it.
    pub(super) reserve: usize,
    /// The configured fields' size, summed once: every push measures the
    /// whole result.
    pub(super) fields_wire: Wire,
    /// The items key, serialised, measured once.
    pub(super) items_key_wire: Wire,
    pub(super) entries: Vec<Entry>,
    /// `entries[..committed]` fit even with the notice. Entries after it are
    /// provisional: kept only if nothing is left out.
    pub(super) committed: usize,
    pub(super) committed_tally: Tally,
    pub(super) all_tally: Tally,
    /// An item is in the result (kept or provisional), so
    /// `structuredContent` carries the items key.
    pub(super) items_used: bool,
    /// An item was ever pushed, kept or not: the summary then counts items
    /// rather than blocks.
    pub(super) items_pushed: bool,
    /// Something was left out: every later push is refused.
    pub(super) full: bool,
    /// The last kept entry is a text cut to `(kept, of)` bytes.
    pub(super) cut: Option<(usize, usize)>,
}

impl ResultBuilder {
    /// A builder for a result of at most `budget_bytes` bytes on the wire,
    /// with the default [`ResultConfig`].
    pub fn new(budget_bytes: usize) -> Result<Self, BudgetError> {
        Self::with_config(ResultConfig::new(budget_bytes))
    }

    /// A builder for `config`. Fails if the budget cannot hold even an empty
    /// truncated result, or if field keys collide.
    pub fn with_config(config: ResultConfig) -> Result<Self, BudgetError> {
        let reserved = [
            config.items_key.as_str(),
            KEY_TRUNCATED,
            KEY_NEXT_CURSOR,
            KEY_TOTAL_ESTIMATE,
        ];
        for (i, field) in config.fields.iter().enumerate() {
            if reserved.contains(&field.key.as_str())
                || config.fields[..i].iter().any(|f| f.key == field.key)
            {
                return Err(BudgetError::DuplicateKey);
            }
        }
        let fields_wire = config
            .fields
            .iter()
            .fold(Wire::default(), |sum, f| sum + f.wire);
        let items_key_wire = string_wire(&config.items_key);
        let mut builder = ResultBuilder {
            config,
            reserve: 0,
            fields_wire,
            items_key_wire,
            entries: Vec::new(),
            committed: 0,
            committed_tally: Tally::default(),
            all_tally: Tally::default(),
            items_used: false,
            items_pushed: false,
            full: false,
            cut: None,
        };
        let budget = builder.config.budget_bytes;
        let mut minimum = builder.measure();
        if budget < minimum {
            // The notice's counts grow with the budget: find a budget that
            // holds its own notice (a few digits more at most).
            loop {
                builder.config.budget_bytes = minimum;
                let needed = builder.measure();
                if needed <= minimum {
                    return Err(BudgetError::BudgetTooSmall { budget, minimum });
                }
                minimum = needed;
            }
        }
        Ok(builder)
    }

    /// Sets the reserve for the configured budget and returns the smallest
    /// budget an empty truncated result needs.
    fn measure(&mut self) -> usize {
        let worst = worst_notice(&self.config);
        let one_block = Tally {
            blocks: 1,
            ..Tally::default()
        };
        let mut minimum = 0;
        self.reserve = 0;
        for items_used in [false, true] {
            // One block is the worst case: the notice then adds a block and
            // a comma, and the text copy of `structuredContent` another pair.
            let grows = self.layout(&one_block, items_used, Some(&worst))
                - self.layout(&one_block, items_used, None);
            self.reserve = self.reserve.max(grows);
            minimum = minimum.max(self.layout(&Tally::default(), items_used, Some(&worst)));
        }
        minimum
    }

    /// Adds a text block. A text that does not fit whole is cut at a
    /// character boundary (never inside an escape sequence) to fill the room
    /// left, and the builder becomes full.
    pub fn push_text(&mut self, text: &str) -> Pushed {
        if self.full {
            return Pushed::LeftOut;
        }
        // A text longer than the whole budget cannot fit: neither measure
        // nor copy more of it than the budget (an 8 MiB log costs 64 KiB).
        match escaped_len_within(text, self.config.budget_bytes) {
            Some(escaped) => self.admit(Entry::Text(text.to_owned(), escaped)),
            None => self.become_full(Some(text)),
        }
    }

    /// Adds a content block other than text (an image, an embedded
    /// resource...), kept whole or not at all.
    pub fn push_block(&mut self, block: &Value) -> Pushed {
        if self.full {
            return Pushed::LeftOut;
        }
        let json = serde_json::to_vec(block).expect("a serde_json::Value always serialises");
        self.admit(Entry::Block(json))
    }

    /// Adds a structured item to `structuredContent.items` (and so to its
    /// text copy), kept whole or not at all.
    pub fn push_item(&mut self, item: &Value) -> Pushed {
        self.push_serialize(item)
            .expect("a serde_json::Value always serialises")
    }

    /// Like [`push_item`](Self::push_item) for any serialisable item, without
    /// building a `Value` first. Fails only where `serde_json` would (e.g. a
    /// map with non-string keys); nothing is added then.
    pub fn push_serialize<T: Serialize + ?Sized>(
        &mut self,
        item: &T,
    ) -> Result<Pushed, serde_json::Error> {
        self.items_pushed = true;
        if self.full {
            return Ok(Pushed::LeftOut);
        }
        let json = serde_json::to_vec(item)?;
        let wire = Wire::of_json(&json);
        Ok(self.admit(Entry::Item(json, wire)))
    }

    /// Records that the caller left entries out on its own (e.g. it stopped
    /// at a row cap before the budget ran out), so the result must say it is
    /// truncated. Provisional entries make room for the notice.
    pub fn leave_out_rest(&mut self) {
        if !self.full {
            let _nothing_refused = self.become_full(None);
        }
    }

    /// Whether something was left out; every further push is refused.
    pub fn is_full(&self) -> bool {
        self.full
    }

    /// Entries (blocks and items) in the result so far, the cut text
    /// included. Final once [`is_full`](Self::is_full).
    pub fn kept(&self) -> usize {
        self.entries.len()
    }

    /// Structured items in the result so far: what a cursor usually counts.
    /// Final once [`is_full`](Self::is_full).
    pub fn kept_items(&self) -> usize {
        self.all_tally.items
    }

    /// The budget, in bytes on the wire.
    pub fn budget_bytes(&self) -> usize {
        self.config.budget_bytes
    }

    /// Bytes the result would take if it were finished now with nothing
    /// more left out.
    pub fn len_if_complete(&self) -> usize {
        self.layout(&self.all_tally, self.items_used, None)
    }

    /// Renders the result. If nothing was left out, `continuation` is
    /// ignored and the result carries no truncation marker.
    pub fn finish(self, continuation: Continuation) -> Result<BudgetedResult, BudgetError> {
        let notice = if self.full {
            let cursor = continuation.next_cursor.as_deref();
            let cursor_len = cursor.map_or(0, escaped_len);
            if cursor_len > self.config.max_cursor_bytes {
                return Err(BudgetError::CursorTooLong {
                    escaped_len: cursor_len,
                    max: self.config.max_cursor_bytes,
                });
            }
            let counted = if self.items_pushed {
                self.all_tally.items
            } else {
                self.all_tally.blocks
            };
            let summary = summary(
                &self.config,
                counted as u64,
                continuation.total_estimate,
                self.cut.map(|(kept, of)| (kept as u64, of as u64)),
                cursor,
            );
            Some(Notice {
                summary,
                cursor,
                total: continuation.total_estimate,
            })
        } else {
            None
        };
        let bytes = self.render(notice.as_ref());
        debug_assert!(
            bytes.len() <= self.config.budget_bytes,
            "{} > {}",
            bytes.len(),
            self.config.budget_bytes
        );
        Ok(BudgetedResult {
            bytes,
            truncated: self.full,
            kept: self.entries.len(),
            kept_items: self.all_tally.items,
        })
    }

    fn admit(&mut self, entry: Entry) -> Pushed {
        let items_used = self.items_used || matches!(entry, Entry::Item(..));
        let budget = self.config.budget_bytes;
        if self.committed == self.entries.len() {
            let committed = self.committed_tally.with(&entry);
            if self.layout(&committed, items_used, None) + self.reserve <= budget {
                self.committed_tally = committed;
                self.all_tally = committed;
                self.items_used = items_used;
                self.entries.push(entry);
                self.committed += 1;
                return Pushed::Kept;
            }
        }
        let all = self.all_tally.with(&entry);
        if self.layout(&all, items_used, None) <= budget {
            self.all_tally = all;
            self.items_used = items_used;
            self.entries.push(entry);
            return Pushed::Provisional;
        }
        let refused_text = match &entry {
            Entry::Text(text, _) => Some(text.as_str()),
            _ => None,
        };
        self.become_full(refused_text)
    }

    /// Drops the provisional entries and cuts the first entry past the
    /// committed ones, if it is a text, to the room the notice leaves.
    /// Returns what became of the refused entry (`refused_text` if it is a
    /// text).
    fn become_full(&mut self, refused_text: Option<&str>) -> Pushed {
        self.full = true;
        let uncommitted = self.entries.split_off(self.committed);
        self.all_tally = self.committed_tally;
        // The reserve covers the notice for the committed entries as they
        // were measured; a provisional or refused item must not add an
        // items array they did not pay for.
        self.items_used = self.committed_tally.items > 0;
        let refused_is_first = uncommitted.is_empty();
        let first_text = match uncommitted.first() {
            None => refused_text,
            Some(Entry::Text(text, _)) => Some(text.as_str()),
            Some(_) => None,
        };
        let mut outcome = Pushed::LeftOut;
        if let Some(text) = first_text {
            let empty_text = self.committed_tally.with(&Entry::Text(String::new(), 0));
            let used = self.layout(&empty_text, self.items_used, None) + self.reserve;
            let prefix = longest_prefix_within(text, self.config.budget_bytes.saturating_sub(used));
            if !prefix.is_empty() {
                let kept_bytes = prefix.len();
                self.cut = Some((kept_bytes, text.len()));
                let entry = Entry::Text(prefix.to_owned(), escaped_len(prefix));
                self.committed_tally = self.committed_tally.with(&entry);
                self.all_tally = self.committed_tally;
                self.entries.push(entry);
                self.committed += 1;
                if refused_is_first {
                    outcome = Pushed::Cut { kept_bytes };
                }
            }
        }
        outcome
    }
}

/// A finished `tools/call` result: the serialised `result` object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetedResult {
    bytes: Vec<u8>,
    truncated: bool,
    kept: usize,
    kept_items: usize,
}

impl BudgetedResult {
    /// The `result` object as JSON, at most the budget long.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The `result` object as JSON.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Whether something was left out (and the result says so).
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// Entries (blocks and items) in the result, a cut text included.
    pub fn kept(&self) -> usize {
        self.kept
    }

    /// Structured items in the result.
    pub fn kept_items(&self) -> usize {
        self.kept_items
    }

    /// The result parsed back into a `Value` (for callers that assemble
    /// their responses as values).
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_slice(&self.bytes)
    }

    /// The complete JSON-RPC response line for request `id`, without the
    /// trailing newline.
    pub fn response_frame(&self, id: Id<'_>) -> Vec<u8> {
        response_frame(Some(b"\"2.0\""), &id.to_json(), &self.bytes)
    }
}

/// `{"jsonrpc":…,"id":…,"result":…}` with `jsonrpc` and `id` written as the
/// given raw JSON tokens.
pub(crate) fn response_frame(jsonrpc: Option<&[u8]>, id: &[u8], result: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(result.len() + 64);
    out.push(b'{');
    if let Some(jsonrpc) = jsonrpc {
        out.extend_from_slice(b"\"jsonrpc\":");
        out.extend_from_slice(jsonrpc);
        out.push(b',');
    }
    out.extend_from_slice(b"\"id\":");
    out.extend_from_slice(id);
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result);
    out.push(b'}');
    out
}
