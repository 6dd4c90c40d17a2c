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

/// The condenser: open, ended for the caller to count (`candidates`), or
/// done (finished, or the budget was refused).
pub(crate) struct Condenser(RefCell<Result<State, wit::CondenseError>>);

enum State {
    Open(Inner),
    Ended(core_budget::Ended),
    Done,
}

/// One byte budget, or a ladder of them for a budget in characters or
/// tokens.
enum Inner {
    Bytes(core_budget::Condenser),
    Ladder(core_budget::Ladder, core_budget::Clip),
}

impl Inner {
    fn feed(&mut self, piece: &[u8]) -> Result<(), core_budget::CondenseError> {
        match self {
            Inner::Bytes(condenser) => condenser.feed(piece),
            Inner::Ladder(ladder, _) => ladder.feed(piece),
        }
    }

    fn finish(self) -> Result<core_budget::Condensed, core_budget::CondenseError> {
        match self {
            Inner::Bytes(condenser) => condenser.finish(),
            Inner::Ladder(ladder, clip) => ladder.finish(&mut |line, to_come| {
                let size = match clip.unit {
                    core_budget::Unit::Bytes => Some(line.len() as u64),
                    core_budget::Unit::Chars => {
                        core_budget::shown_size(line, &mut core_budget::utf16_len)
                    }
                    // Counted by the caller (`candidates`): the amount in
                    // bytes, rung 0, is what surely fits.
                    _ => None,
                };
                size.is_some_and(|size| size + to_come as u64 <= clip.amount as u64)
            }),
        }
    }

    fn end(self) -> core_budget::Ended {
        match self {
            Inner::Bytes(condenser) => {
                // One rung: the byte budget itself.
                core_budget::Ladder::from(condenser).end()
            }
            Inner::Ladder(ladder, _) => ladder.end(),
        }
    }
}

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

fn condensed(outcome: core_budget::Condensed) -> wit::Condensed {
    match outcome {
        core_budget::Condensed::Unchanged => wit::Condensed::Unchanged,
        core_budget::Condensed::Cut { frame, .. } => wit::Condensed::Cut(frame),
        _ => panic!("condensed outcome not in wit/framer.wit"),
    }
}

impl Condenser {
    /// The open condenser, or why there is none.
    fn with_open<T>(
        &self,
        f: impl FnOnce(Inner) -> Result<T, wit::CondenseError>,
    ) -> Result<T, wit::CondenseError> {
        let mut state = self.0.borrow_mut();
        let taken = match &mut *state {
            Ok(state) => core::mem::replace(state, State::Done),
            Err(error) => return Err(*error),
        };
        match taken {
            State::Open(inner) => f(inner),
            other => {
                *state = Ok(other);
                Err(wit::CondenseError::Incomplete)
            }
        }
    }
}

impl wit::GuestCondenser for Condenser {
    fn new(budget_bytes: u32) -> Self {
        let condenser = core_budget::Condenser::new(budget_bytes as usize)
            .map(|c| State::Open(Inner::Bytes(c)))
            .map_err(condense_error);
        Condenser(RefCell::new(condenser))
    }

    fn within(
        amount: u32,
        unit: wit::Unit,
        keep: wit::Keep,
    ) -> Result<wit::Condenser, wit::CondenseError> {
        let clip = match unit {
            wit::Unit::Bytes => core_budget::Clip::bytes(amount as usize),
            wit::Unit::Chars => core_budget::Clip::chars(amount as usize),
            wit::Unit::Tokens => core_budget::Clip::tokens(amount as usize),
        };
        let clip = clip.keeping(match keep {
            wit::Keep::Head => core_budget::Keep::Head,
            wit::Keep::Tail => core_budget::Keep::Tail,
            wit::Keep::Ends => core_budget::Keep::Ends,
        });
        if clip.amount < core_budget::MIN_CONDENSE_BUDGET {
            return Err(wit::CondenseError::BudgetTooSmall(
                core_budget::MIN_CONDENSE_BUDGET as u64,
            ));
        }
        let ladder = core_budget::Ladder::for_clip(clip).map_err(condense_error)?;
        let inner = Inner::Ladder(ladder, clip);
        Ok(wit::Condenser::new(Condenser(RefCell::new(Ok(
            State::Open(inner),
        )))))
    }

    fn feed(&self, piece: Vec<u8>) -> Result<(), wit::CondenseError> {
        match &mut *self.0.borrow_mut() {
            Ok(State::Open(condenser)) => condenser.feed(&piece).map_err(condense_error),
            Ok(_) => Err(wit::CondenseError::Incomplete),
            Err(error) => Err(*error),
        }
    }

    fn finish(&self) -> Result<wit::Condensed, wit::CondenseError> {
        self.with_open(|inner| inner.finish().map(condensed).map_err(condense_error))
    }

    fn candidates(&self) -> Result<Vec<wit::Candidate>, wit::CondenseError> {
        let ended = self.with_open(|inner| Ok(inner.end()))?;
        let candidates = ended
            .candidates()
            .map(|c| {
                let shown = core_budget::shown(c.line).unwrap_or_default();
                wit::Candidate {
                    rung: c.rung as u32,
                    texts: shown.texts,
                    structured: shown.structured,
                    to_come: c.to_come as u32,
                }
            })
            .collect();
        *self.0.borrow_mut() = Ok(State::Ended(ended));
        Ok(candidates)
    }

    fn take(&self, rung: u32) -> Result<wit::Condensed, wit::CondenseError> {
        let mut state = self.0.borrow_mut();
        match core::mem::replace(&mut *state, Ok(State::Done)) {
            Ok(State::Ended(ended)) => ended
                .take(rung as usize)
                .map(|(outcome, _)| condensed(outcome))
                .map_err(condense_error),
            Err(error) => {
                *state = Err(error);
                Err(error)
            }
            Ok(other) => {
                *state = Ok(other);
                Err(wit::CondenseError::Incomplete)
            }
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
