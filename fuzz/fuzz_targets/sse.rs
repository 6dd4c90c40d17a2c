//! See `drainpipe_fuzz::sse`.
#![no_main]

use drainpipe_fuzz::sse::SseInput;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| drainpipe_fuzz::check_sse(&SseInput::decode(data)));
