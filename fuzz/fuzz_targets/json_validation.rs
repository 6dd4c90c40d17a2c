//! See `drainpipe_fuzz::json_line`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| drainpipe_fuzz::check_json_line(data));
