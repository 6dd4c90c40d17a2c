//! See `drainpipe_fuzz::streams::check_differential`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| drainpipe_fuzz::check_differential(&drainpipe_fuzz::Case::decode(data)));
