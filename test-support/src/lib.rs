//! What drainpipe's test suites share: time bounds that fail loudly (every
//! wait in a test has one, and names what hung) and the process table read
//! from `/proc` (every test that starts processes proves nothing of them is
//! left running or unreaped), and the workspace's binaries, built when stale.
#![forbid(unsafe_code)]

pub mod bins;
pub mod bounds;
pub mod procs;

pub use bounds::{opts, opts_ms, start_tool, tool, wait_until, within};
