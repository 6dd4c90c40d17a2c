//! The proxy's stderr: one thread writes, everyone else queues without
//! waiting.
//!
//! The proxy's own stderr is a pipe too. A host that stops reading it must not
//! stall the proxy, and through it the server, so nothing in the proxy ever
//! blocks on stderr: writes go to a queue bounded in bytes, and what does not
//! fit is dropped and counted.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// A handle to the stderr writer thread. Cheap to clone.
#[derive(Clone, Debug)]
pub struct StderrSink {
    tx: mpsc::Sender<Item>,
    shared: Arc<SinkShared>,
}

#[derive(Debug)]
struct SinkShared {
    /// Bytes queued and not yet written.
    queued: AtomicUsize,
    /// The queue bound, in bytes.
    max_queued_bytes: usize,
    dropped: AtomicU64,
}

/// What the writer thread is handed.
#[derive(Debug)]
enum Item {
    Bytes(Vec<u8>),
    /// Everything queued before was written: say so.
    Flushed(mpsc::Sender<()>),
}

/// Waits at exit until what was queued is written (bounded: stderr may be
/// blocked for good).
#[derive(Debug)]
pub struct SinkCloser {
    tx: mpsc::Sender<Item>,
}

impl StderrSink {
    /// Starts the writer thread on `out`. `max_queued_bytes` bounds the
    /// memory held for a stderr nobody reads.
    pub fn start(out: impl Write + Send + 'static, max_queued_bytes: usize) -> (Self, SinkCloser) {
        let (tx, rx) = mpsc::channel::<Item>();
        let shared = Arc::new(SinkShared {
            queued: AtomicUsize::new(0),
            max_queued_bytes,
            dropped: AtomicU64::new(0),
        });
        let writer_shared = shared.clone();
        thread::spawn(move || {
            let mut out = out;
            for item in rx {
                match item {
                    Item::Bytes(bytes) => {
                        let _ = out.write_all(&bytes).and_then(|()| out.flush());
                        writer_shared
                            .queued
                            .fetch_sub(bytes.len(), Ordering::Relaxed);
                    }
                    Item::Flushed(ack) => {
                        let _ = ack.send(());
                    }
                }
            }
        });
        let closer = SinkCloser { tx: tx.clone() };
        (StderrSink { tx, shared }, closer)
    }

    /// A sink on the process's stderr with a 1 MiB queue.
    pub fn stderr() -> (Self, SinkCloser) {
        Self::start(std::io::stderr(), 1 << 20)
    }

    /// Queues `bytes`; returns false (and counts them as dropped) when the
    /// queue has no room.
    pub fn write(&self, bytes: &[u8]) -> bool {
        let shared = &self.shared;
        let before = shared.queued.fetch_add(bytes.len(), Ordering::Relaxed);
        if before + bytes.len() > shared.max_queued_bytes
            || self.tx.send(Item::Bytes(bytes.to_vec())).is_err()
        {
            shared.queued.fetch_sub(bytes.len(), Ordering::Relaxed);
            shared
                .dropped
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Queues one line of the proxy's own, prefixed with `drainpipe: `.
    pub fn line(&self, text: &str) {
        self.write(format!("drainpipe: {text}\n").as_bytes());
    }

    /// Bytes dropped so far because the queue was full.
    pub fn dropped_bytes(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }
}

impl SinkCloser {
    /// Waits up to `limit` for everything queued so far to be written.
    /// Returns whether it was.
    pub fn close(self, limit: Duration) -> bool {
        let (ack, acked) = mpsc::channel();
        self.tx.send(Item::Flushed(ack)).is_ok() && acked.recv_timeout(limit).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that blocks forever, as a stderr pipe nobody reads does.
    struct Stuck;

    impl Write for Stuck {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            thread::sleep(Duration::from_secs(3600));
            Ok(0)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stuck_stderr_costs_dropped_bytes_not_a_blocked_caller() {
        let (sink, closer) = StderrSink::start(Stuck, 100);
        let started = std::time::Instant::now();
        let accepted = (0..1000).filter(|_| sink.write(&[b'x'; 10])).count();
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(
            accepted <= 11,
            "the queue holds about 100 bytes: {accepted}"
        );
        assert_eq!(sink.dropped_bytes(), (1000 - accepted as u64) * 10);
        drop(sink);
        assert!(!closer.close(Duration::from_millis(50)), "bounded wait");
    }

    #[test]
    fn everything_queued_is_written_in_order() {
        let (tx, rx) = mpsc::channel();
        struct Collect(mpsc::Sender<Vec<u8>>);
        impl Write for Collect {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                let _ = self.0.send(b.to_vec());
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let (sink, closer) = StderrSink::start(Collect(tx), 1 << 20);
        sink.line("one");
        sink.write(b"two\n");
        // Clones still alive (a signal watcher holds one) do not delay it.
        let _still_held = sink.clone();
        assert!(closer.close(Duration::from_secs(5)));
        let all: Vec<u8> = rx.try_iter().flatten().collect();
        assert_eq!(all, b"drainpipe: one\ntwo\n");
    }
}
