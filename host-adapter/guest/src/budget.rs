//! Glue for the `budget` interface: capture and result clipping, both
//! implemented in `drainpipe_framer::budget`.

use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;

use drainpipe_framer::budget as core_budget;

use crate::Component;
use crate::exports::drainpipe::framer::budget as wit;

impl wit::Guest for Component {
    type Capture = Capture;

    fn clip_response(
        frame: Vec<u8>,
        budget_bytes: u32,
        continuation: wit::Continuation,
    ) -> Result<Vec<u8>, wit::ClipError> {
        let mut then = match &continuation.next_cursor {
            Some(cursor) => core_budget::Continuation::cursor(cursor),
            None => core_budget::Continuation::none(),
        };
        if let Some(total) = continuation.total_estimate {
            then = then.with_total(total);
        }
        core_budget::clip_response(&frame, budget_bytes as usize, &then).map_err(|e| {
            use core_budget::ClipError as E;
            match e {
                E::Malformed { at } => wit::ClipError::Malformed(at as u64),
                E::NotAnObject => wit::ClipError::NotAnObject,
                E::NotAResponse => wit::ClipError::NotAResponse,
                E::ErrorResponse => wit::ClipError::ErrorResponse,
                E::MissingResult => wit::ClipError::MissingResult,
                E::MissingId => wit::ClipError::MissingId,
                E::DuplicateMember => wit::ClipError::DuplicateMember,
                E::NotAToolResult => wit::ClipError::NotAToolResult,
                E::BudgetTooSmall { minimum } => wit::ClipError::BudgetTooSmall(minimum as u64),
                _ => panic!("clip error not in wit/framer.wit"),
            }
        })
    }
}

/// The resource; `RefCell` because WIT methods take `&self`.
pub(crate) struct Capture(RefCell<core_budget::Capture>);

impl wit::GuestCapture for Capture {
    fn new(budget_bytes: u32, head_bytes: u32) -> Self {
        Capture(RefCell::new(core_budget::Capture::with_head(
            budget_bytes as usize,
            head_bytes as usize,
        )))
    }

    fn write(&self, chunk: Vec<u8>) {
        self.0.borrow_mut().write(&chunk);
    }

    fn report(&self) -> wit::CaptureReport {
        let r = self.0.borrow().report();
        wit::CaptureReport {
            seen: r.seen,
            kept: r.kept,
            dropped: r.dropped,
            truncated: r.truncated,
        }
    }

    fn head(&self) -> Vec<u8> {
        self.0.borrow().head().to_vec()
    }

    fn tail(&self) -> Vec<u8> {
        self.0.borrow().tail()
    }

    fn render(&self) -> String {
        self.0.borrow().render()
    }
}
