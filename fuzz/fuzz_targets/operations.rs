//! See `drainpipe_fuzz::ops`.
#![no_main]

use drainpipe_fuzz::ops::OpsInput;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: OpsInput| drainpipe_fuzz::check_ops(&input));
