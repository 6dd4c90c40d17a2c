//! JSON-RPC batches from the host: arrays of messages, removed from MCP in
//! revision 2025-06-18. The framer rejects a line whose top level is not an
//! object; a host that still sends a batch waits for every request in it,
//! so each gets an error saying why. The line is captured from its first
//! byte, at most the transport limit, and parsed once to find the ids.

use serde_json::Value;

/// Captures one batch line at a time (at most `limit` bytes).
#[derive(Debug)]
pub(crate) struct BatchCapture {
    limit: usize,
    /// The line so far, while capturing.
    line: Option<Vec<u8>>,
}

/// What a capture step gives.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Captured {
    /// Nothing yet: the line goes on in the next read.
    Pending,
    /// The whole line.
    Line(Vec<u8>),
    /// The line passed the limit: its requests cannot be named.
    TooLong,
}

impl BatchCapture {
    pub(crate) fn new(limit: usize) -> Self {
        BatchCapture { limit, line: None }
    }

    /// Whether a batch line is being captured across reads.
    pub(crate) fn capturing(&self) -> bool {
        self.line.is_some()
    }

    /// A batch line starts at `from` in `chunk`.
    pub(crate) fn start(&mut self, chunk: &[u8], from: usize) -> Captured {
        self.line = Some(Vec::new());
        self.push(&chunk[from..])
    }

    /// The next read while capturing (or the rest of the one it started in).
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Captured {
        let Some(line) = self.line.as_mut() else {
            return Captured::Pending;
        };
        let end = memchr::memchr(b'\n', chunk);
        let piece = &chunk[..end.unwrap_or(chunk.len())];
        if line.len() + piece.len() > self.limit {
            // Keep reading to the newline without keeping anything.
            if end.is_some() {
                self.line = None;
            } else {
                line.clear();
                line.push(b' ');
            }
            return Captured::TooLong;
        }
        line.extend_from_slice(piece);
        match end {
            Some(_) => Captured::Line(self.line.take().unwrap_or_default()),
            None => Captured::Pending,
        }
    }
}

/// The ids (as JSON tokens) of the requests in a batch line: elements with
/// a `method` and an `id`. Empty if the line is not a JSON array.
pub(crate) fn request_ids(line: &[u8]) -> Vec<Vec<u8>> {
    let Ok(Value::Array(messages)) = serde_json::from_slice::<Value>(line) else {
        return Vec::new();
    };
    messages
        .iter()
        .filter(|m| m.get("method").is_some())
        .filter_map(|m| m.get("id"))
        .filter_map(|id| serde_json::to_vec(id).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_across_reads_is_captured_and_its_request_ids_found() {
        let line = br#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"id":"x","method":"b"},{"id":2,"result":{}}]"#;
        let mut stream = b"{}\n".to_vec();
        stream.extend_from_slice(line);
        stream.extend_from_slice(b"\n{}\n");
        let mut capture = BatchCapture::new(1 << 20);
        assert_eq!(capture.start(&stream[..20], 3), Captured::Pending);
        match capture.push(&stream[20..]) {
            Captured::Line(got) => {
                assert_eq!(got, line.to_vec());
                assert_eq!(request_ids(&got), [b"1".to_vec(), b"\"x\"".to_vec()]);
            }
            other => panic!("{other:?}"),
        }
        let mut small = BatchCapture::new(10);
        assert_eq!(small.start(&stream, 3), Captured::TooLong);
        assert!(!small.capturing());
    }
}
