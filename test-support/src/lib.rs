//! What drainpipe's test suites share: time bounds that fail loudly (every
//! wait in a test has one, and names what hung), the process table read from
//! `/proc` (every test that starts processes proves nothing of them is left
//! running or unreaped), the workspace's binaries (built when stale) and the
//! fixture server in a session.
#![forbid(unsafe_code)]

pub mod bins;
pub mod bounds;
pub mod fixture;
pub mod procs;

pub use bounds::{opts, opts_ms, start_tool, tool, wait_until, within};
