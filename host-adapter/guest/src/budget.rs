//! Glue for the `budget` interface: capture and condensing, both
//! implemented in `drainpipe_framer::budget`.

use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;

use drainpipe_framer::budget as core_budget;

use crate::Component;
use crate::exports::drainpipe::framer::budget as wit;

impl wit::Guest for Component {
    type Capture = Capture;
    type Condenser = Condenser;
}

/// The condenser; `None` once finished (or if the budget was refused).
pub(crate) struct Condenser(RefCell<Result<Option<core_budget::Condenser>, wit::CondenseError>>);

fn condense_error(error: core_budget::CondenseError) -> wit::CondenseError {
    use core_budget::CondenseError as E;
    match error {
        E::BudgetTooSmall { .. } => {
            wit::CondenseError::BudgetTooSmall(core_budget::MIN_CONDENSE_BUDGET as u64)
        }
        E::Overflow { at } => wit::CondenseError::Overflow(at),
        E::NotAnObject => wit::CondenseError::NotAnObject,
        E::Incomplete => wit::CondenseError::Incomplete,
        _ => panic!("condense error not in wit/framer.wit"),
    }
}

impl wit::GuestCondenser for Condenser {
    fn new(budget_bytes: u32) -> Self {
        let condenser = core_budget::Condenser::new(budget_bytes as usize)
            .map(Some)
            .map_err(condense_error);
        Condenser(RefCell::new(condenser))
    }

    fn feed(&self, piece: Vec<u8>) -> Result<(), wit::CondenseError> {
        match &mut *self.0.borrow_mut() {
            Ok(Some(condenser)) => condenser.feed(&piece).map_err(condense_error),
            Ok(None) => Err(wit::CondenseError::Incomplete),
            Err(error) => Err(*error),
        }
    }

    fn finish(&self) -> Result<wit::Condensed, wit::CondenseError> {
        let taken = match &mut *self.0.borrow_mut() {
            Ok(slot) => slot.take(),
            Err(error) => return Err(*error),
        };
        let condenser = taken.ok_or(wit::CondenseError::Incomplete)?;
        match condenser.finish().map_err(condense_error)? {
            core_budget::Condensed::Unchanged => Ok(wit::Condensed::Unchanged),
            core_budget::Condensed::Cut { frame, .. } => Ok(wit::Condensed::Cut(frame)),
            _ => panic!("condensed outcome not in wit/framer.wit"),
        }
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
