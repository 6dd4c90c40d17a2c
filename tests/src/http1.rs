//! A small HTTP/1.1 client over a real TCP socket, for the criteria of
//! `drainpipe serve`: requests written byte for byte as a client writes
//! them, responses read as they arrive (chunked bodies and server-sent
//! events included), every read bounded so that nothing can hang.
//!
//! Hand-written rather than an HTTP client crate: the tests need to do what
//! a client library never does (stop reading, drop a connection mid-stream,
//! send a body larger than it declared), and to see each event when it
//! arrives, not when a body ends.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The longest any read waits before the test fails.
pub const READ_BOUND: Duration = Duration::from_secs(30);

/// The longest a response may take to be read whole, keep-alive comments
/// or not: a stream that never ends fails the test instead of hanging it.
pub const RESPONSE_BOUND: Duration = Duration::from_secs(90);

/// A response's head, and its body if it was read whole.
#[derive(Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body, dechunked.
    pub body: Vec<u8>,
}

impl Reply {
    /// The first value of `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// The messages of an event-stream body, in order (events without data
    /// left out).
    pub fn events(&self) -> Vec<serde_json::Value> {
        parse_events(&self.body)
            .into_iter()
            .filter(|e| !e.data.is_empty())
            .map(|e| serde_json::from_str(&e.data).expect("an event's data is JSON"))
            .collect()
    }
}

/// One server-sent event.
#[derive(Debug, Clone, Default)]
pub struct Event {
    /// `id:`.
    pub id: Option<String>,
    /// `data:` lines, joined.
    pub data: String,
    /// `retry:`, in milliseconds.
    pub retry: Option<u64>,
}

/// The events in `body` (comments skipped).
pub fn parse_events(body: &[u8]) -> Vec<Event> {
    let text = String::from_utf8_lossy(body);
    let mut events = Vec::new();
    for block in text.split("\n\n") {
        let mut event = Event::default();
        let mut any = false;
        for line in block.lines() {
            if let Some(id) = line.strip_prefix("id:") {
                event.id = Some(id.trim().to_string());
                any = true;
            } else if let Some(data) = line.strip_prefix("data:") {
                event.data.push_str(data.trim_start());
                any = true;
            } else if let Some(retry) = line.strip_prefix("retry:") {
                event.retry = retry.trim().parse().ok();
                any = true;
            }
        }
        if any {
            events.push(event);
        }
    }
    events
}

/// A request on a connection of its own.
pub struct Request<'a> {
    /// `POST`, `GET`, …
    pub method: &'a str,
    /// The request target.
    pub path: &'a str,
    /// Headers besides `content-length` and `connection` (and `host`,
    /// unless given).
    pub headers: Vec<(&'a str, String)>,
    /// The body, sent after the head whatever the server does.
    pub body: Vec<u8>,
}

impl<'a> Request<'a> {
    /// A POST of `body` with the headers an MCP client sends.
    pub fn post(path: &'a str, body: &serde_json::Value) -> Self {
        Request {
            method: "POST",
            path,
            headers: vec![
                ("content-type", "application/json".into()),
                ("accept", "application/json, text/event-stream".into()),
            ],
            body: body.to_string().into_bytes(),
        }
    }

    /// A GET of an event stream.
    pub fn get(path: &'a str) -> Self {
        Request {
            method: "GET",
            path,
            headers: vec![("accept", "text/event-stream".into())],
            body: Vec::new(),
        }
    }

    /// A DELETE.
    pub fn delete(path: &'a str) -> Self {
        Request {
            method: "DELETE",
            path,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Adds a header.
    pub fn with(mut self, name: &'a str, value: impl Into<String>) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name, value.into()));
        self
    }

    /// Sends the request and reads the whole response (the connection is
    /// closed after it).
    pub fn send(self, addr: SocketAddr) -> Reply {
        let mut open = self.open(addr);
        let body = open.read_to_end();
        Reply {
            status: open.status,
            headers: open.headers.clone(),
            body,
        }
    }

    /// Sends the request and reads the response's head; the body is read
    /// from the returned stream as it arrives.
    pub fn open(self, addr: SocketAddr) -> Open {
        let stream = TcpStream::connect_timeout(&addr, READ_BOUND).expect("connect to serve");
        stream.set_read_timeout(Some(READ_BOUND)).expect("timeout");
        stream.set_write_timeout(Some(READ_BOUND)).expect("timeout");
        let mut head = format!("{} {} HTTP/1.1\r\n", self.method, self.path);
        let has_host = self
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("host"));
        if !has_host {
            head.push_str(&format!("host: {addr}\r\n"));
        }
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!(
            "content-length: {}\r\nconnection: close\r\n\r\n",
            self.body.len()
        ));
        let mut writer = stream.try_clone().expect("clone");
        writer.write_all(head.as_bytes()).expect("write the head");
        // A server may refuse before reading a large body: a failed write
        // is the refusal's to report, through the status below.
        let _ = writer.write_all(&self.body);
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).expect("read the status line");
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {line:?}"));
        let mut headers = Vec::new();
        loop {
            line.clear();
            reader.read_line(&mut line).expect("read a header");
            let trimmed = line.trim_end();
            if trimmed.is_empty() {
                break;
            }
            if let Some((name, value)) = trimmed.split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
            }
        }
        let chunked = headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
        let length = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse().ok());
        Open {
            status,
            headers,
            reader,
            chunked,
            remaining: length,
            ended: false,
            pending: Vec::new(),
            deadline: Instant::now() + RESPONSE_BOUND,
        }
    }
}

/// A response being read.
pub struct Open {
    /// The status code.
    pub status: u16,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    reader: BufReader<TcpStream>,
    chunked: bool,
    remaining: Option<usize>,
    ended: bool,
    /// Body bytes read and not yet returned as events.
    pending: Vec<u8>,
    deadline: Instant,
}

impl Open {
    /// The first value of `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The next piece of the body; empty at its end.
    fn next_piece(&mut self) -> Vec<u8> {
        if self.ended {
            return Vec::new();
        }
        assert!(
            Instant::now() < self.deadline,
            "the response was not read whole in {RESPONSE_BOUND:?}"
        );
        if self.chunked {
            let mut line = String::new();
            if self.reader.read_line(&mut line).expect("a chunk size") == 0 {
                self.ended = true;
                return Vec::new();
            }
            let size = usize::from_str_radix(line.trim(), 16)
                .unwrap_or_else(|_| panic!("bad chunk size {line:?}"));
            if size == 0 {
                self.ended = true;
                return Vec::new();
            }
            let mut piece = vec![0; size + 2];
            self.reader.read_exact(&mut piece).expect("a chunk");
            piece.truncate(size);
            return piece;
        }
        let want = self.remaining.unwrap_or(64 << 10).min(64 << 10);
        if want == 0 {
            self.ended = true;
            return Vec::new();
        }
        let mut piece = vec![0; want];
        let n = self.reader.read(&mut piece).expect("the body");
        if n == 0 {
            self.ended = true;
        }
        piece.truncate(n);
        if let Some(remaining) = &mut self.remaining {
            *remaining -= n;
        }
        piece
    }

    /// The rest of the body.
    pub fn read_to_end(&mut self) -> Vec<u8> {
        let mut body = std::mem::take(&mut self.pending);
        loop {
            let piece = self.next_piece();
            if piece.is_empty() {
                return body;
            }
            body.extend_from_slice(&piece);
        }
    }

    /// The next event of an event stream (keep-alive comments skipped);
    /// `None` at the end of the stream.
    pub fn next_event(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.pending.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.pending.drain(..end + 2).collect();
                if let Some(event) = parse_events(&block).pop() {
                    return Some(event);
                }
                continue;
            }
            let piece = self.next_piece();
            if piece.is_empty() {
                return None;
            }
            self.pending.extend_from_slice(&piece);
        }
    }

    /// The next event that carries a message, as JSON.
    pub fn next_message(&mut self) -> Option<serde_json::Value> {
        loop {
            let event = self.next_event()?;
            if !event.data.is_empty() {
                return Some(serde_json::from_str(&event.data).expect("JSON data"));
            }
        }
    }
}
