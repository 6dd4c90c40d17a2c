//! What a result builder is told up front: its budget and shape, and where
//! a truncated result continues.

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use serde_json::Value;

use super::wire::{Wire, string_wire};

/// How a result is shaped and how much of it may be sent.
///
/// The budget protects the agent's context (and the pipe behind it): it is
/// the size in **bytes on the wire** of the whole `result` object as
/// serialised JSON, after escaping, including the truncation notice and the
/// text copy of `structuredContent`. The JSON-RPC envelope around it
/// (`{"jsonrpc":"2.0","id":…,"result":` and `}`) is not counted.
///
/// A budget has a floor: room for the truncation notice is held back from
/// the first entry on, at its worst case (the summary, a cursor of
/// [`with_max_cursor_bytes`](Self::with_max_cursor_bytes) three times, a
/// 20-digit total twice). With the defaults that is 700 bytes, so budgets
/// are meant in kilobytes; [`ResultBuilder::with_config`](super::ResultBuilder::with_config)
/// says the exact floor when a budget is below it.
#[derive(Clone, Debug)]
pub struct ResultConfig {
    pub(super) budget_bytes: usize,
    pub(super) noun: String,
    pub(super) singular_noun: String,
    pub(super) items_key: String,
    pub(super) max_cursor_bytes: usize,
    pub(super) is_error: bool,
    pub(super) fields: Vec<Field>,
}

/// A fixed member of `structuredContent`, serialised once up front.
#[derive(Clone, Debug)]
pub(super) struct Field {
    pub(super) key: String,
    pub(super) json: Vec<u8>,
    pub(super) wire: Wire,
}

impl ResultConfig {
    /// The default longest cursor, in escaped bytes: room for a base64
    /// offset-and-query token, small enough not to matter in a budget.
    pub const DEFAULT_MAX_CURSOR_BYTES: usize = 64;

    /// A result of at most `budget_bytes` bytes on the wire, items under
    /// `structuredContent.items`, counted as "items" in the summary.
    pub fn new(budget_bytes: usize) -> Self {
        ResultConfig {
            budget_bytes,
            noun: "items".to_owned(),
            singular_noun: "item".to_owned(),
            items_key: "items".to_owned(),
            max_cursor_bytes: Self::DEFAULT_MAX_CURSOR_BYTES,
            is_error: false,
            fields: Vec::new(),
        }
    }

    /// What the summary calls the counted entries, e.g. `"matching
    /// records"`. The singular ("Returned 1 matching record; ...") is the
    /// same word without a final `s`; set it with
    /// [`with_singular_noun`](Self::with_singular_noun) if that is wrong.
    pub fn with_noun(mut self, noun: &str) -> Self {
        noun.clone_into(&mut self.noun);
        noun.strip_suffix('s')
            .unwrap_or(noun)
            .clone_into(&mut self.singular_noun);
        self
    }

    /// What the summary calls a single counted entry (default: the noun
    /// without its final `s`).
    pub fn with_singular_noun(mut self, noun: &str) -> Self {
        noun.clone_into(&mut self.singular_noun);
        self
    }

    /// The `structuredContent` member that holds the items (default `items`).
    pub fn with_items_key(mut self, key: &str) -> Self {
        key.clone_into(&mut self.items_key);
        self
    }

    /// The longest continuation cursor [`ResultBuilder::finish`](super::ResultBuilder::finish) accepts, in
    /// bytes after escaping. Room for it is reserved from the first entry
    /// on, since the cursor is only known at the end; it appears three times
    /// (summary, `nextCursor`, and the text copy of `structuredContent`).
    pub fn with_max_cursor_bytes(mut self, max_cursor_bytes: usize) -> Self {
        self.max_cursor_bytes = max_cursor_bytes;
        self
    }

    /// The value of `isError` (default `false`).
    pub fn with_is_error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        self
    }

    /// A member of `structuredContent` that is always sent whole, before the
    /// items (e.g. the query that was run). It is paid for up front.
    pub fn with_field(mut self, key: &str, value: &Value) -> Self {
        let json = serde_json::to_vec(value).expect("a serde_json::Value always serialises");
        let wire = string_wire(key) + Wire::plain(1) + Wire::of_json(&json);
        self.fields.push(Field {
            key: key.to_owned(),
            json,
            wire,
        });
        self
    }

    /// The budget in bytes on the wire.
    pub fn budget_bytes(&self) -> usize {
        self.budget_bytes
    }
}

/// Why a result could not be built within its budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BudgetError {
    /// Even an empty truncated result (notice, cursor room, fixed fields)
    /// needs `minimum` bytes; raise the budget or shorten the fields.
    BudgetTooSmall {
        /// The budget asked for, in bytes on the wire.
        budget: usize,
        /// The smallest budget that works with this configuration.
        minimum: usize,
    },
    /// The cursor passed to [`ResultBuilder::finish`](super::ResultBuilder::finish) is longer, escaped,
    /// than [`ResultConfig::with_max_cursor_bytes`] reserved room for.
    CursorTooLong {
        /// The cursor's escaped length in bytes.
        escaped_len: usize,
        /// The configured maximum.
        max: usize,
    },
    /// Two `structuredContent` members would share a key: a field repeats,
    /// or uses the items key, `truncated`, `nextCursor` or `totalEstimate`.
    DuplicateKey,
}

impl fmt::Display for BudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BudgetError::BudgetTooSmall { budget, minimum } => {
                write!(
                    f,
                    "a result budget of {budget} bytes is below the minimum of {minimum}"
                )
            }
            BudgetError::CursorTooLong { escaped_len, max } => {
                write!(
                    f,
                    "the cursor is {escaped_len} bytes escaped; at most {max} were reserved"
                )
            }
            BudgetError::DuplicateKey => f.write_str("two structuredContent members share a key"),
        }
    }
}

impl core::error::Error for BudgetError {}

/// Where the caller can continue after a truncated result. Used only if
/// something was left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Continuation {
    /// An opaque token the caller accepts back to resume after the last
    /// kept entry. Without one, the summary asks to narrow the query.
    pub next_cursor: Option<String>,
    /// The total number of entries (in the summary's unit), **only** if the
    /// caller actually knows it; never a guess.
    pub total_estimate: Option<u64>,
}

impl Continuation {
    /// No cursor, no total: the summary can only ask to narrow the query.
    pub fn none() -> Self {
        Self::default()
    }

    /// Resume with `cursor`.
    pub fn cursor(cursor: &str) -> Self {
        Continuation {
            next_cursor: Some(cursor.to_owned()),
            total_estimate: None,
        }
    }

    /// Adds a known total.
    pub fn with_total(mut self, total: u64) -> Self {
        self.total_estimate = Some(total);
        self
    }
}
