//! One interface over the two ways to run the framer: natively, or as the
//! WebAssembly component inside wasmtime. Sessions take either.

use drainpipe_framer::owned::OwnedEvent;
use drainpipe_framer::{Config, Event, Framer, Stats};

/// Why a framing backend could not process input. Only the component can
/// fail (a guest trap, its memory cap or its deadline); the session that sees
/// this ends with a clear error and the next session gets a fresh instance.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The guest trapped, ran out of its memory cap or passed its deadline.
    #[error("framer component failed: {0}")]
    Guest(String),
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
