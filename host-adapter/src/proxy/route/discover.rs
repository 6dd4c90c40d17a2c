//! What the server announces, when this proxy did not see the handshake.
//!
//! With `--clip` the proxy adds `resources` to the capabilities of a server
//! that announces none, and then answers the resource methods itself. It
//! learns what the server announces from the handshake answer passing
//! through. But a 2026-07-28 host need not open with a handshake on this
//! copy of the server: the TypeScript SDK v2 client probes with
//! `server/discover` in a copy of the server command that it closes at
//! once, then talks to a second copy whose proxy sees no handshake, while
//! the client believes what the first proxy added. So when a 2026-07-28
//! request (one that carries the protocol envelope in `_meta`) arrives
//! before any handshake, the proxy asks the server itself, once, with its
//! own `server/discover`, and swallows the answer; a resource request that
//! arrives before that answer waits for it (at most [`MAX_HELD`]), then is
//! answered by the proxy or forwarded, as the answer says.

use std::sync::atomic::Ordering;

use drainpipe_framer::splice::Span;

use super::{Kind, Router, SpillRoute};
use crate::pipe::jsonrpc::SERVER_BUSY;
use crate::proxy::spill::rpc::{handshake, own_request};

/// The id of the proxy's own `server/discover` (a host is not expected to
/// use it; its answer is never forwarded).
pub(crate) const PROBE_ID: &[u8] = b"\"io.drainpipe/discover\"";

/// Resource requests held while the proxy's own `server/discover` waits
/// for its answer, at most. Bounds the proxy's **memory**; past it a
/// request is answered busy at once.
const MAX_HELD: usize = 64;

/// What the proxy knows of the server's handshake.
#[derive(Debug, Default)]
pub(crate) struct Discovery {
    /// A handshake answer was read (the host's, or the proxy's own probe):
    /// the `resources` question is settled.
    settled: bool,
    /// The proxy's own `server/discover` waits for its answer.
    probing: bool,
    /// Resource requests held until then: the line, its id, its method.
    held: Vec<Held>,
}

#[derive(Debug)]
struct Held {
    line: Vec<u8>,
    id: Vec<u8>,
    method: Vec<u8>,
}

impl Discovery {
    /// A handshake answer passed through: nothing to ask.
    pub(crate) fn settle(&mut self) {
        self.settled = true;
    }

    /// The ids of the requests still held (the proxy is ending: each gets
    /// an answer).
    pub(crate) fn drain_held(&mut self) -> Vec<Vec<u8>> {
        self.held.drain(..).map(|held| held.id).collect()
    }
}

/// The protocol envelope of a 2026-07-28 request, as written (`params._meta`,
/// when it names a protocol version).
fn modern_meta(frame: &[u8]) -> Option<&[u8]> {
    memchr::memmem::find(frame, b"io.modelcontextprotocol/protocolVersion")?;
    let meta = Span::whole(frame)?
        .member(frame, "params")?
        .member(frame, "_meta")?;
    meta.member(frame, "io.modelcontextprotocol/protocolVersion")?;
    Some(meta.bytes(frame))
}

impl Router {
    /// Host request `bytes` (`method`, `id`) before the handshake is
    /// settled: sends the proxy's own `server/discover` at the first
    /// 2026-07-28 request, and holds a resource request until its answer.
    /// Returns whether the request was taken (held, or answered busy).
    pub(super) fn discover_or_hold(
        &mut self,
        spill: &SpillRoute,
        method: &[u8],
        bytes: &[u8],
        id: &[u8],
    ) -> bool {
        let mut discovery = spill.discovery.lock().expect("discovery");
        if discovery.settled {
            return false;
        }
        if !discovery.probing {
            if matches!(method, b"initialize" | b"server/discover") {
                return false;
            }
            let Some(meta) = modern_meta(bytes) else {
                return false;
            };
            let mut probe = b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec();
            probe.extend_from_slice(PROBE_ID);
            probe.extend_from_slice(b",\"method\":\"server/discover\",\"params\":{\"_meta\":");
            probe.extend_from_slice(meta);
            probe.extend_from_slice(b"}}\n");
            if self.answer_other.try_send(probe).is_err() {
                // Not asked: resource requests go on as they would without.
                discovery.settled = true;
                return false;
            }
            self.in_flight
                .lock()
                .expect("in flight")
                .insert(PROBE_ID.to_vec(), Kind::Probe);
            discovery.probing = true;
            self.sink.line(
                "a 2026-07-28 session opened without a handshake here: asking the server what it announces (server/discover)",
            );
        }
        if !method.starts_with(b"resources/") {
            return false;
        }
        if discovery.held.len() >= MAX_HELD {
            drop(discovery);
            self.send_error(
                true,
                id,
                SERVER_BUSY,
                "too many resource requests are waiting for the server's capabilities; try again",
            );
            return true;
        }
        discovery.held.push(Held {
            line: bytes.to_vec(),
            id: id.to_vec(),
            method: method.to_vec(),
        });
        true
    }

    /// The answer to the proxy's own `server/discover` (`bytes`; `answered`:
    /// it is a result, not an error): settles what the proxy adds, then
    /// answers or forwards the requests held meanwhile. The answer itself
    /// goes nowhere.
    pub(super) fn settle_probe(&mut self, bytes: &[u8], answered: bool) {
        let Some(spill) = self.spill.clone() else {
            return;
        };
        // The server announces no resources: the host was told it does (by
        // the proxy in front of the copy the host probed), so the proxy
        // answers them here too.
        let added = answered && handshake(bytes).line.is_some();
        spill.resources_added.store(added, Ordering::Relaxed);
        let held = {
            let mut discovery = spill.discovery.lock().expect("discovery");
            discovery.settled = true;
            discovery.probing = false;
            std::mem::take(&mut discovery.held)
        };
        self.sink.line(if added {
            "the server announces no resources: the proxy answers the resource methods itself"
        } else {
            "the server announces its own resources (or did not say): its resource methods go to it"
        });
        for held in held {
            let server_tool = spill.server_tool.load(Ordering::Relaxed);
            if let Some(own) = own_request(&held.method, &held.line, server_tool, added) {
                self.answer_own(spill.clone(), own, held.id);
                continue;
            }
            // Forwarded as the host wrote it, through the queue of the
            // proxy's own lines to the server (never waited on).
            self.in_flight
                .lock()
                .expect("in flight")
                .insert(held.id.clone(), Kind::Other);
            let mut line = held.line;
            line.push(b'\n');
            if self.reply.try_send(line).is_err() {
                self.in_flight.lock().expect("in flight").take(&held.id);
                self.send_error(
                    false,
                    &held.id,
                    SERVER_BUSY,
                    "the proxy's queue to the server is full; try again",
                );
            }
        }
    }
}
