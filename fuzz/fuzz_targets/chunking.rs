//! See `drainpipe_fuzz::streams::check_chunking`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| drainpipe_fuzz::check_chunking(&drainpipe_fuzz::Case::decode(data)));
