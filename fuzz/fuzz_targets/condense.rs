//! See `drainpipe_fuzz::condense`.
#![no_main]

use drainpipe_fuzz::condense::CondenseInput;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: CondenseInput| drainpipe_fuzz::check_condense(&input));
