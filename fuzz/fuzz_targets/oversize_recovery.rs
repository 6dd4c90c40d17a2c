//! See `drainpipe_fuzz::oversize`.
#![no_main]

use drainpipe_fuzz::oversize::OversizeInput;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: OversizeInput| drainpipe_fuzz::check_oversize(&input));
