//! What a session does with its server's stderr, drained by
//! [`crate::pipe::stderr`]: keeps a bounded head and tail of it, and logs
//! each line to `tracing`.

use std::sync::{Arc, Mutex};

use tokio::process::ChildStderr;

use drainpipe_framer::budget::Capture;

use super::metrics::Counters;
use crate::pipe::stderr::drain;

/// Where stderr goes, and how much of one line is logged.
pub(crate) struct StderrTarget {
    pub(crate) capture: Arc<Mutex<Capture>>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) pid: u32,
    /// The longest piece of one line logged to `tracing`, in bytes: a server
    /// printing a gigabyte without a newline must not become a gigabyte-long
    /// log record.
    pub(crate) max_log_line_bytes: usize,
    pub(crate) read_chunk_bytes: usize,
}

/// Reads until end of file (or a read error) and returns.
pub(crate) async fn run(stderr: ChildStderr, target: StderrTarget) {
    let mut lines = LineSplitter::new(target.max_log_line_bytes);
    let pid = target.pid;
    let mut log = |line: &[u8], cut: bool| {
        let line = String::from_utf8_lossy(line);
        tracing::debug!(target: "drainpipe::server_stderr", pid, cut, "{}", line.trim_end_matches('\r'));
    };
    drain(stderr, target.read_chunk_bytes, |chunk| {
        Counters::add(&target.counters.stderr_bytes, chunk.len() as u64);
        target.capture.lock().expect("stderr capture").write(chunk);
        // Splitting costs a scan per byte: skip it when nobody listens.
        if tracing::enabled!(target: "drainpipe::server_stderr", tracing::Level::DEBUG) {
            lines.push(chunk, &mut log);
        }
    })
    .await;
    lines.flush(&mut log);
}

/// Splits a byte stream into lines, keeping at most `max_line_bytes` of any
/// one line (the rest of a longer line is skipped, and the kept part is
/// reported as cut).
struct LineSplitter {
    max_line_bytes: usize,
    partial: Vec<u8>,
    /// The current line already passed `max_line_bytes`: skip to its newline.
    skipping: bool,
}

impl LineSplitter {
    fn new(max_line_bytes: usize) -> Self {
        LineSplitter {
            max_line_bytes,
            partial: Vec::new(),
            skipping: false,
        }
    }

    /// Calls `emit(line, cut)` for every line that ends in `bytes`, and for a
    /// line the moment it passes the limit.
    fn push(&mut self, mut bytes: &[u8], emit: &mut impl FnMut(&[u8], bool)) {
        while !bytes.is_empty() {
            let (piece, ended) = match memchr::memchr(b'\n', bytes) {
                Some(at) => (&bytes[..at], true),
                None => (bytes, false),
            };
            if !self.skipping {
                let room = self.max_line_bytes.saturating_sub(self.partial.len());
                self.partial
                    .extend_from_slice(&piece[..piece.len().min(room)]);
                if piece.len() > room {
                    emit(&self.partial, true);
                    self.partial.clear();
                    self.skipping = true;
                }
            }
            if ended {
                if !self.skipping {
                    emit(&self.partial, false);
                    self.partial.clear();
                }
                self.skipping = false;
                bytes = &bytes[piece.len() + 1..];
            } else {
                bytes = &[];
            }
        }
    }

    /// Emits a last line that had no newline.
    fn flush(&mut self, emit: &mut impl FnMut(&[u8], bool)) {
        if !self.partial.is_empty() {
            emit(&self.partial, false);
            self.partial.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::LineSplitter;

    fn split(chunks: &[&[u8]], max: usize) -> Vec<(String, bool)> {
        let mut lines = Vec::new();
        let mut emit =
            |line: &[u8], cut: bool| lines.push((String::from_utf8_lossy(line).into_owned(), cut));
        let mut splitter = LineSplitter::new(max);
        for chunk in chunks {
            splitter.push(chunk, &mut emit);
        }
        splitter.flush(&mut emit);
        lines
    }

    #[test]
    fn lines_split_anywhere_come_out_whole() {
        let expected = vec![
            ("one".to_string(), false),
            ("two".into(), false),
            ("".into(), false),
            ("end".into(), false),
        ];
        assert_eq!(split(&[b"one\ntwo\n\nend"], 10), expected);
        assert_eq!(
            split(&[b"o", b"ne\ntw", b"o\n", b"\nen", b"d"], 10),
            expected
        );
    }

    #[test]
    fn a_long_line_is_cut_once_and_skipped_to_its_newline() {
        assert_eq!(
            split(&[b"abcdefgh", b"ijklmnop\nnext\n"], 5),
            vec![("abcde".to_string(), true), ("next".into(), false)]
        );
        assert_eq!(
            split(&[b"abcde\n"], 5),
            vec![("abcde".to_string(), false)],
            "exactly at the limit"
        );
        assert_eq!(
            split(&[b"abcdef"], 5),
            vec![("abcde".to_string(), true)],
            "cut without a newline"
        );
    }
}
