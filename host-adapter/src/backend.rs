//! One interface over the two ways to run the framer: natively, or as the
//! WebAssembly component inside wasmtime. Sessions take either.

use drainpipe_framer::owned::OwnedEvent;
use drainpipe_framer::{Config, Event, Framer, Stats};

/// Why a framing backend could not process input. Only the component can
/// fail; the session that sees this ends with a clear error and the next
/// session gets a fresh instance. One cause per variant, so a caller tells
/// a deadline from a memory cap without reading the message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// The guest asked for more memory than its cap.
    #[error(
        "framer component hit its memory cap of {cap} bytes (asked for {asked}); session ended"
    )]
    MemoryCap {
        /// The cap, in bytes.
        cap: usize,
        /// The memory size the guest asked for, in bytes.
        asked: usize,
    },
    /// One call ran past its deadline.
    #[error("framer component passed its deadline of {deadline:?} for one call; session ended")]
    Deadline {
        /// The deadline per call.
        deadline: std::time::Duration,
    },
    /// The guest trapped (a bug in the guest).
    #[error("framer component trapped: {message}; session ended")]
    Trap {
        /// What wasmtime said.
        message: String,
    },
    /// The guest answered with a batch that does not decode (a span out of
    /// range, a broken packed record).
    #[error("framer component returned a broken batch: {message}; session ended")]
    BadBatch {
        /// What is wrong with it.
        message: String,
    },
    /// The component could not be compiled or instantiated.
    #[error("framer component unavailable: {message}")]
    Unavailable {
        /// What failed.
        message: String,
    },
}

/// A framer the host can push stdout bytes through.
pub trait FramerBackend: Send {
    /// Pushes the next chunk; appends the events it produced to `out`, in
    /// stream order.
    fn push(&mut self, chunk: &[u8], out: &mut Vec<OwnedEvent>) -> Result<(), BackendError>;
    /// Ends the stream; appends the final events to `out`.
    fn finish(&mut self, out: &mut Vec<OwnedEvent>) -> Result<(), BackendError>;
    /// Pushes the next chunk and hands each event to `each`, in stream
    /// order, borrowed: a caller that keeps a message copies it once, from
    /// where it lies. The default goes through [`FramerBackend::push`].
    fn push_each(
        &mut self,
        chunk: &[u8],
        each: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), BackendError> {
        let mut out = Vec::new();
        self.push(chunk, &mut out)?;
        out.iter().for_each(|event| each(event.as_event()));
        Ok(())
    }
    /// Ends the stream; hands the final events to `each`, as
    /// [`FramerBackend::push_each`].
    fn finish_each(&mut self, each: &mut dyn FnMut(Event<'_>)) -> Result<(), BackendError> {
        let mut out = Vec::new();
        self.finish(&mut out)?;
        out.iter().for_each(|event| each(event.as_event()));
        Ok(())
    }
    /// The framer's counters.
    fn stats(&mut self) -> Result<Stats, BackendError>;
    /// A short name for logs and metrics (`native` or `component`).
    fn name(&self) -> &'static str;
}

/// The framer compiled into the host.
#[derive(Debug)]
pub struct NativeFramer(Framer);

impl NativeFramer {
    /// A native framer with the given limits.
    pub fn new(config: Config) -> Self {
        NativeFramer(Framer::new(config))
    }
}

impl FramerBackend for NativeFramer {
    fn push(&mut self, chunk: &[u8], out: &mut Vec<OwnedEvent>) -> Result<(), BackendError> {
        self.0.push(chunk, |event| out.push(event.into()));
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<OwnedEvent>) -> Result<(), BackendError> {
        self.0.finish(|event| out.push(event.into()));
        Ok(())
    }

    fn push_each(
        &mut self,
        chunk: &[u8],
        each: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), BackendError> {
        self.0.push(chunk, each);
        Ok(())
    }

    fn finish_each(&mut self, each: &mut dyn FnMut(Event<'_>)) -> Result<(), BackendError> {
        self.0.finish(each);
        Ok(())
    }

    fn stats(&mut self) -> Result<Stats, BackendError> {
        Ok(*self.0.stats())
    }

    fn name(&self) -> &'static str {
        "native"
    }
}
