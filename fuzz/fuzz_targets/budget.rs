//! See `drainpipe_fuzz::budget`.
#![no_main]

use drainpipe_fuzz::budget::BudgetInput;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: BudgetInput| drainpipe_fuzz::check_budget(&input));
