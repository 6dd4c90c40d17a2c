//! The content limit: results that fit a byte budget and say what they left out.
//!
//! The transport limit ([`Config::with_max_frame_bytes`](crate::Config::with_max_frame_bytes))
//! protects the host's memory; this module protects the agent's context. A
//! budget is counted in **bytes on the wire** (the JSON text exactly as
//! `serde_json` writes it, after escaping), except where a [`Clip`] names
//! characters or tokens of what a host shows the model ([`Ladder`]).
//!
//! - [`ResultBuilder`] (server side): builds a `tools/call` result entry by
//!   entry until the next one would not fit, cuts a text that is too large
//!   on its own at a character boundary, and, if anything was left out, adds
//!   a plain-text summary and `structuredContent.truncated` / `nextCursor` /
//!   `totalEstimate`. A result that fits is sent as is.
//! - [`Capture`] (subprocess or remote output): accepts any number of bytes,
//!   keeps a head and a tail within a budget and counts the rest, so the
//!   caller can keep draining a pipe while holding a bounded preview.
//! - [`Condenser`] (host side, on the wire): turns a response of any size,
//!   fed as it streams, into a valid one within a budget that says what was
//!   cut, holding at most the budget.
//! - [`Ladder`] (host side, on the wire): a budget in characters or tokens,
//!   condensed by one condenser per byte budget and measured at the end
//!   ([`shown_size`]): the largest result that fits is taken.
//! - [`Unescaper`] (host side, on the wire): decodes a long string's
//!   escaped contents, fed as they stream, into UTF-8 text in constant
//!   memory, so a kept text can be written out as it arrives.
//! - [`escaped_len`], [`value_wire_len`], [`longest_prefix_within`]: the
//!   byte counting the first three rely on.
//!
//! Like the rest of the crate: no IO, no clocks, no `unsafe`, `no_std` with
//! `alloc`.

mod capture;
mod condense;
mod config;
mod layout;
mod notice;
mod result;
mod shown;
mod unescape;
mod units;
mod wire;

pub use capture::{Capture, CaptureReport, CapturedOutput};
pub use condense::{
    Candidate, CondenseError, Condensed, Condenser, Ended, Keep, LINK_NOTICE, Ladder, Link, Links,
    MARKER_KEY, MAX_LINKS, MIN_CONDENSE_BUDGET, MIN_LINKED_BUDGET, Spill, SpillKind, Spilled,
    WHOLE_ROOM,
};
pub use config::{BudgetError, Continuation, ResultConfig};
pub use result::{BudgetedResult, Pushed, ResultBuilder};
pub use unescape::{UnescapeError, Unescaper};
pub use units::{Clip, Shown, Unit, shown, shown_size, utf16_len};
pub use wire::{escaped_len, longest_prefix_within, value_wire_len};
