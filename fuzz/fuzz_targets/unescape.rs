//! See `drainpipe_fuzz::unescape`.
#![no_main]

use drainpipe_fuzz::unescape::UnescapeInput;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: UnescapeInput| drainpipe_fuzz::check_unescape(&input));
