//! Generators and oracles for the drainpipe framer's fuzz targets.
//!
//! The targets in `fuzz_targets/` are a few lines each: they decode an input
//! and call one `check_*` function from here. The same functions run in this
//! crate's `cargo test` over the committed seed corpus, so a property is
//! exercised even where nightly and libFuzzer are not available.
//!
//! The reference framer, `outcomes`, `run_split`, `assert_memory_bound` and
//! the workloads come from `drainpipe_framer::testing`; this crate adds only
//! what is specific to fuzzing: input layouts, structured generators
//! (streams planned around the limit, operation sequences) and the oracles
//! built on them.
//!
//! | target | input | property |
//! |---|---|---|
//! | `chunking` | [`case`] layout | any cut gives the same events and counters as one push |
//! | `differential` | [`case`] layout | outcomes equal the reference framer's |
//! | `oversize_recovery` | [`oversize::OversizeInput`] | exact events for lines planned around the limit |
//! | `json_validation` | [`json_line`] layout | verdict and envelope equal `serde_json`'s |
//! | `operations` | [`ops::OpsInput`] | push/finish/reset/stats in any order keep the model's invariants |
//! | `sse` | [`sse::SseInput`] layout | event-stream bodies (pieces, mixed CRLF/LF/CR) and raw bytes: any cut gives the same events, the reference parser's; LF line ends change only offsets |
//! | `component_parity` | [`case`] layout | the wasmtime component gives the native framer's events, step by step (feature `component`) |
//! | `budget` | [`budget::BudgetInput`] | byte counts equal `serde_json`'s; results and clipped responses within budget, valid, honest about truncation; capture counters add up |
//! | `condense` | [`condense::CondenseInput`] | a condensed response is valid, within budget, the original but for the documented cuts, the same under any chunking; in characters and tokens, the largest rung that fits, within the amount |
//! | `unescape` | [`unescape::UnescapeInput`] | escaped text decodes back to itself in any pieces; any bytes decode within bounds, the same in pieces, as `serde_json` reads them |
//!
//! Every property asserts the memory bound after each push.

pub mod budget;
pub mod case;
pub mod condense;
pub mod json_line;
pub mod ops;
pub mod oversize;
#[cfg(feature = "component")]
pub mod parity;
pub mod seeds;
pub mod sse;
pub mod streams;
pub mod unescape;

pub use budget::check_budget;
pub use case::Case;
pub use condense::check_condense;
pub use json_line::check_json_line;
pub use ops::check_ops;
pub use oversize::check_oversize;
#[cfg(feature = "component")]
pub use parity::check_component_parity;
pub use sse::check_sse;
pub use streams::{check_chunking, check_differential};
pub use unescape::check_unescape;
