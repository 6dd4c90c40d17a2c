//! See `drainpipe_fuzz::parity` (needs `--features component`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
    |data: &[u8]| drainpipe_fuzz::check_component_parity(&drainpipe_fuzz::Case::decode(data))
);
