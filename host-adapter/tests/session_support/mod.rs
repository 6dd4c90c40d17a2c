//! The session tests' helpers, all from `drainpipe-test-support`: the
//! fixture server in a session, time bounds that fail loudly, and
//! process-table checks for zombies and orphans.
// Each test binary uses some of these.
#![allow(unused_imports, unreachable_pub)]

pub use drainpipe_test_support::bins::fixture_binary;
pub use drainpipe_test_support::bounds::*;
pub use drainpipe_test_support::fixture::*;
pub use drainpipe_test_support::procs::{assert_all_gone, assert_group_gone, descendants, stat};
