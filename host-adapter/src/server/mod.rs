//! The server side, for tool authors: run a subprocess under a budget, and
//! stop in-flight work when the client sends `notifications/cancelled`.
//!
//! - [`BoundedSubprocess`]: drains a child's stdout and stderr independently
//!   into bounded captures until it exits; cancellation or a timeout kills
//!   its whole process group, grandchildren included, and a drain timeout
//!   ends the wait for pipes held open by anything that escaped.
//! - [`CancellationRegistry`]: request id → active work (its task, its
//!   process group), so a cancellation stops it and forgets it.

mod registry;
mod subprocess;

pub use registry::{CancellationRegistry, DuplicateWork, WorkContext};
pub use subprocess::{BoundedSubprocess, SubprocessEnding, SubprocessLimits, SubprocessReport};
