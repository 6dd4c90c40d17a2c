//! One interface over the two ways to run the framer: natively, or as the
//! WebAssembly component inside wasmtime. Sessions take either.

use drainpipe_framer::owned::OwnedEvent;
use drainpipe_framer::{Config, Event, Framer, InPlaceFramer, Stats};

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
    /// The framer's own read buffer, for a backend that frames bytes where
    /// they were read (the native one: a message that spans reads is then
    /// never copied to be assembled), reading at most `read_bytes` at a
    /// time. `None` (the default, and the component's answer: its buffer is
    /// the guest's) if it takes chunks through [`FramerBackend::push_each`].
    /// Asked once, before the first push; a backend that says yes is then
    /// read through it only.
    fn in_place(&mut self, _read_bytes: usize) -> Option<&mut InPlaceFramer> {
        None
    }
    /// The framer's counters.
    fn stats(&mut self) -> Result<Stats, BackendError>;
    /// A short name for logs and metrics (`native` or `component`).
    fn name(&self) -> &'static str;
}

/// The framer compiled into the host.
#[derive(Debug)]
pub struct NativeFramer(Native);

/// How the native framer is fed: chunks the caller owns until it asks to
/// read in place (before its first byte), then reads into its own buffer.
#[derive(Debug)]
enum Native {
    Chunks(Framer),
    InPlace(InPlaceFramer),
}

impl NativeFramer {
    /// A native framer with the given limits.
    pub fn new(config: Config) -> Self {
        NativeFramer(Native::Chunks(Framer::new(config)))
    }
}

impl Native {
    /// Pushes `chunk`: as it is, or copied into the in-place buffer a read
    /// at a time (a caller that asked for that buffer reads into it instead).
    fn push(&mut self, chunk: &[u8], each: &mut dyn FnMut(Event<'_>)) {
        match self {
            Native::Chunks(framer) => framer.push(chunk, each),
            Native::InPlace(framer) => {
                let mut rest = chunk;
                while !rest.is_empty() {
                    let room = framer.spare();
                    let n = room.len().min(rest.len());
                    room[..n].copy_from_slice(&rest[..n]);
                    framer.filled(n, &mut *each);
                    rest = &rest[n..];
                }
            }
        }
    }

    fn finish(&mut self, each: &mut dyn FnMut(Event<'_>)) {
        match self {
            Native::Chunks(framer) => framer.finish(each),
            Native::InPlace(framer) => framer.finish(each),
        }
    }
}

impl FramerBackend for NativeFramer {
    fn push(&mut self, chunk: &[u8], out: &mut Vec<OwnedEvent>) -> Result<(), BackendError> {
        self.0.push(chunk, &mut |event| out.push(event.into()));
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<OwnedEvent>) -> Result<(), BackendError> {
        self.0.finish(&mut |event| out.push(event.into()));
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

    fn in_place(&mut self, read_bytes: usize) -> Option<&mut InPlaceFramer> {
        if let Native::Chunks(framer) = &self.0
            && framer.position() == 0
        {
            self.0 = Native::InPlace(InPlaceFramer::new(*framer.config(), read_bytes));
        }
        match &mut self.0 {
            Native::InPlace(framer) => Some(framer),
            Native::Chunks(_) => None,
        }
    }

    fn stats(&mut self) -> Result<Stats, BackendError> {
        Ok(*match &self.0 {
            Native::Chunks(framer) => framer.stats(),
            Native::InPlace(framer) => framer.stats(),
        })
    }

    fn name(&self) -> &'static str {
        "native"
    }
}
