//! Which MCP revision a session speaks, and the handshake that settles it.
//!
//! Two eras share stdio. Revision 2026-07-28 has no handshake: a client
//! probes with `server/discover`, and every request then carries the
//! protocol envelope (`io.modelcontextprotocol/protocolVersion`,
//! `clientInfo`, `clientCapabilities`) in its own `params._meta`. The 2025
//! revisions open with `initialize` and `notifications/initialized`, after
//! which requests are bare.
//!
//! [`Session::negotiate`] runs the handshake on a running session and, in
//! the 2026-07-28 era, makes every later request of that session carry the
//! envelope, so callers write the same `call` in either era.
//! [`Session::connect`] also handles the servers that end on an unknown
//! first request (some 2025-era SDKs exit on anything before `initialize`):
//! it starts the server again for the 2025 handshake.
//!
//! Results of 2026-07-28 carry `resultType`; the session hands results over
//! as they came, so `resultType` is there to read ([`Response::result_type`]).

use std::fmt;

use serde_json::{Value, json};
use tokio::process::Command;

use super::{CallError, CallOptions, Response, Session, SessionConfig};

/// A revision of the MCP specification this library speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Revision {
    /// 2026-07-28: `server/discover`, the envelope in every request.
    V2026_07_28,
    /// 2025-11-25, after `initialize`.
    V2025_11_25,
    /// 2025-06-18, after `initialize`: what [`Protocol::Auto`] falls back to,
    /// the oldest revision with `resource_link` and output schemas.
    V2025_06_18,
}

impl Revision {
    /// Every revision, newest first.
    pub const ALL: [Revision; 3] = [
        Revision::V2026_07_28,
        Revision::V2025_11_25,
        Revision::V2025_06_18,
    ];

    /// The revision's name, as the wire spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Revision::V2026_07_28 => "2026-07-28",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2025_06_18 => "2025-06-18",
        }
    }

    /// The revision named `text`, if this library speaks it.
    pub fn parse(text: &str) -> Option<Revision> {
        Revision::ALL.into_iter().find(|r| r.as_str() == text)
    }

    /// True for the revisions without `initialize` (2026-07-28).
    pub fn is_stateless(self) -> bool {
        self == Revision::V2026_07_28
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which revision to negotiate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Protocol {
    /// 2026-07-28 through `server/discover` if the server offers it, else the
    /// 2025 `initialize` at 2025-06-18.
    #[default]
    Auto,
    /// Exactly this revision, or fail (a server that answers `initialize`
    /// with another revision fails it too).
    Pin(Revision),
}

impl std::str::FromStr for Protocol {
    type Err = String;

    /// `auto`, or a revision's name.
    fn from_str(text: &str) -> Result<Protocol, String> {
        if text == "auto" {
            return Ok(Protocol::Auto);
        }
        Revision::parse(text).map(Protocol::Pin).ok_or_else(|| {
            let names: Vec<&str> = Revision::ALL.iter().map(|r| r.as_str()).collect();
            format!("unknown revision {text}: auto, {}", names.join(", "))
        })
    }
}

/// Who the client is, as the handshake (and in 2026-07-28 every request)
/// tells the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientInfo {
    /// The client's name.
    pub name: String,
    /// The client's version.
    pub version: String,
}

impl ClientInfo {
    /// A client called `name`, version `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> ClientInfo {
        ClientInfo {
            name: name.into(),
            version: version.into(),
        }
    }

    fn to_json(&self) -> Value {
        json!({ "name": self.name, "version": self.version })
    }
}

/// How the handshake went.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Negotiated {
    /// The revision both sides speak from now on.
    pub revision: Revision,
    /// The request that settled it: `server/discover` or `initialize`.
    pub via: &'static str,
    /// The server's `serverInfo` (`Value::Null` if it sent none).
    pub server_info: Value,
    /// The server's `capabilities` (`Value::Null` if it sent none).
    pub capabilities: Value,
    /// The whole result of the handshake request.
    pub result: Value,
    /// True if [`Session::connect`] started the server a second time,
    /// because it ended on `server/discover`.
    pub restarted: bool,
}

impl Negotiated {
    /// The server's name and version from `serverInfo`, for reports.
    pub fn server(&self) -> String {
        let name = self.server_info["name"].as_str().unwrap_or("(no name)");
        match self.server_info["version"].as_str() {
            Some(version) => format!("{name} {version}"),
            None => name.to_string(),
        }
    }
}

/// Why the handshake failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum NegotiateError {
    /// The handshake request itself failed (an error answer, a timeout, the
    /// server ended…).
    #[error("{method}: {error}")]
    Call {
        /// `server/discover` or `initialize`.
        method: &'static str,
        /// How it failed.
        error: CallError,
    },
    /// The server answered but does not offer the revision asked for.
    #[error("{method}: {wanted} is not offered (offered: {})", offered.join(", "))]
    NotOffered {
        /// `server/discover` or `initialize`.
        method: &'static str,
        /// The revision asked for.
        wanted: Revision,
        /// What the server offered instead.
        offered: Vec<String>,
    },
    /// The session already negotiated; a second handshake would change the
    /// envelope under requests already in flight.
    #[error("the session already negotiated {0}")]
    Already(Revision),
}

impl Session {
    /// Runs the handshake for `protocol` on this session. Revision
    /// 2026-07-28 has none: the client probes with `server/discover`, and
    /// every later request of this session carries the protocol envelope in
    /// `params._meta` (keys the caller set there are kept); the 2025
    /// revisions open with `initialize`, then `notifications/initialized` is
    /// sent.
    ///
    /// With [`Protocol::Auto`], a server that answers `server/discover` with
    /// an error or without 2026-07-28 is asked `initialize`; one that ended
    /// on it fails here with [`CallError::SessionLost`], which
    /// [`Session::connect`] turns into a second start.
    pub async fn negotiate(
        &self,
        protocol: Protocol,
        client: &ClientInfo,
        options: CallOptions,
    ) -> Result<Negotiated, NegotiateError> {
        // One handshake at a time: a second caller waits, then finds it done.
        let _one = self.shared().negotiating.lock().await;
        if let Some(revision) = self.revision() {
            return Err(NegotiateError::Already(revision));
        }
        match protocol {
            Protocol::Pin(revision) if revision.is_stateless() => {
                self.discover(revision, client, options).await
            }
            Protocol::Pin(revision) => self.initialize(revision, client, options, true).await,
            Protocol::Auto => {
                let modern = Revision::V2026_07_28;
                match self.discover(modern, client, options).await {
                    Ok(negotiated) => Ok(negotiated),
                    Err(error) if self.lost().is_some() => Err(error),
                    Err(_) => {
                        self.initialize(Revision::V2025_06_18, client, options, false)
                            .await
                    }
                }
            }
        }
    }

    /// Starts the server with `command()` and negotiates (see
    /// [`Session::negotiate`]). With [`Protocol::Auto`], a server that ends
    /// on `server/discover` is started once more, with a second
    /// `command()`, for `initialize`.
    ///
    /// Returns the session even when the handshake failed, so the caller can
    /// read its stderr and metrics and shut it down.
    pub async fn connect(
        mut command: impl FnMut() -> Command,
        config: SessionConfig,
        protocol: Protocol,
        client: &ClientInfo,
        options: CallOptions,
    ) -> std::io::Result<(Session, Result<Negotiated, NegotiateError>)> {
        let session = Session::spawn(command(), config.clone())?;
        let outcome = session.negotiate(protocol, client, options).await;
        if outcome.is_ok() || protocol != Protocol::Auto || session.lost().is_none() {
            return Ok((session, outcome));
        }
        // It ended on the unknown `server/discover`: a 2025-era server.
        session.shutdown().await;
        let session = Session::spawn(command(), config)?;
        let outcome = session
            .initialize(Revision::V2025_06_18, client, options, false)
            .await
            .map(|negotiated| Negotiated {
                restarted: true,
                ..negotiated
            });
        Ok((session, outcome))
    }

    /// The negotiated revision, once [`Session::negotiate`] succeeded.
    pub fn revision(&self) -> Option<Revision> {
        self.shared().negotiated.get().map(|n| n.revision)
    }

    async fn discover(
        &self,
        revision: Revision,
        client: &ClientInfo,
        options: CallOptions,
    ) -> Result<Negotiated, NegotiateError> {
        const METHOD: &str = "server/discover";
        let envelope = envelope(revision, client);
        let answer = self
            .call(METHOD, with_envelope(json!({}), &envelope), options)
            .await
            .map_err(|error| NegotiateError::Call {
                method: METHOD,
                error,
            })?;
        let offered: Vec<String> = answer.result["supportedVersions"]
            .as_array()
            .map(|versions| {
                versions
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        if !offered.iter().any(|v| v == revision.as_str()) {
            return Err(NegotiateError::NotOffered {
                method: METHOD,
                wanted: revision,
                offered,
            });
        }
        let negotiated = Negotiated {
            revision,
            via: METHOD,
            // serverInfo travels in the result's `_meta` in this revision;
            // a top-level one is taken too.
            server_info: first_present(
                &answer,
                &[
                    &["_meta", "io.modelcontextprotocol/serverInfo"],
                    &["serverInfo"],
                ],
            ),
            capabilities: first_present(&answer, &[&["capabilities"]]),
            result: answer.result,
            restarted: false,
        };
        self.settle(revision, Some(envelope));
        Ok(negotiated)
    }

    /// The 2025 handshake, asking for `revision`; the server may answer
    /// with another 2025 revision it prefers, taken unless `exact`.
    async fn initialize(
        &self,
        revision: Revision,
        client: &ClientInfo,
        options: CallOptions,
        exact: bool,
    ) -> Result<Negotiated, NegotiateError> {
        const METHOD: &str = "initialize";
        let params = json!({
            "protocolVersion": revision.as_str(),
            "capabilities": {},
            "clientInfo": client.to_json(),
        });
        let answer =
            self.call(METHOD, params, options)
                .await
                .map_err(|error| NegotiateError::Call {
                    method: METHOD,
                    error,
                })?;
        // The server answers with the revision it will speak: the one asked
        // for, or another it prefers. Take any revision this library speaks.
        let answered = answer.result["protocolVersion"].as_str();
        // A stateless revision has no `initialize`: an answer naming one is
        // not a revision this handshake can settle.
        let spoken = answered
            .and_then(Revision::parse)
            .filter(|spoken| !spoken.is_stateless() && (!exact || *spoken == revision));
        let Some(spoken) = spoken else {
            return Err(NegotiateError::NotOffered {
                method: METHOD,
                wanted: revision,
                offered: answered.map(str::to_string).into_iter().collect(),
            });
        };
        let _ = self.notify("notifications/initialized", json!({})).await;
        self.settle(spoken, None);
        Ok(Negotiated {
            revision: spoken,
            via: METHOD,
            server_info: first_present(&answer, &[&["serverInfo"]]),
            capabilities: first_present(&answer, &[&["capabilities"]]),
            result: answer.result,
            restarted: false,
        })
    }

    fn settle(&self, revision: Revision, envelope: Option<Value>) {
        let _ = self.shared().negotiated.set(Settled { revision, envelope });
    }
}

/// What the handshake settled, kept by the session.
#[derive(Debug)]
pub(crate) struct Settled {
    revision: Revision,
    /// The per-request `_meta` envelope (2026-07-28 only).
    envelope: Option<Value>,
}

impl Settled {
    /// The revision settled on, as the protocol names it.
    #[cfg(feature = "otel")]
    pub(crate) fn revision_name(&self) -> &'static str {
        self.revision.as_str()
    }

    /// Whether requests carry the per-request envelope (2026-07-28), and
    /// with it trace context.
    #[cfg(feature = "otel")]
    pub(crate) fn is_stateless(&self) -> bool {
        self.envelope.is_some()
    }

    /// `params` as the settled revision sends them.
    pub(crate) fn params(&self, params: Value) -> Value {
        match &self.envelope {
            Some(envelope) => with_envelope(params, envelope),
            None => params,
        }
    }
}

impl Response {
    /// The result's `resultType` (`"complete"`, `"input_required"`; present
    /// from revision 2026-07-28), if it has one.
    pub fn result_type(&self) -> Option<&str> {
        self.result.get("resultType")?.as_str()
    }
}

/// The per-request `_meta` envelope of a stateless revision.
fn envelope(revision: Revision, client: &ClientInfo) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": revision.as_str(),
        "io.modelcontextprotocol/clientInfo": client.to_json(),
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// `params` with the envelope's keys added to its `_meta`, where the caller
/// did not set them. Params that are not an object (a protocol error the
/// server will report) are left alone.
fn with_envelope(mut params: Value, envelope: &Value) -> Value {
    if let (Some(object), Value::Object(envelope)) = (params.as_object_mut(), envelope)
        && let Some(meta) = object
            .entry("_meta")
            .or_insert_with(|| json!({}))
            .as_object_mut()
    {
        for (key, value) in envelope {
            meta.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
    params
}

/// The first of `paths` present in the result, or `Value::Null`.
fn first_present(answer: &Response, paths: &[&[&str]]) -> Value {
    paths
        .iter()
        .find_map(|path| {
            path.iter()
                .try_fold(&answer.result, |value, key| value.get(key))
        })
        .cloned()
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_parse_by_name() {
        assert_eq!("auto".parse(), Ok(Protocol::Auto));
        for revision in Revision::ALL {
            assert_eq!(revision.as_str().parse(), Ok(Protocol::Pin(revision)));
        }
        let error = "2024-11-05".parse::<Protocol>().unwrap_err();
        assert!(error.contains("unknown revision 2024-11-05"), "{error}");
    }

    #[test]
    fn the_envelope_keeps_what_the_caller_set() {
        let envelope = envelope(Revision::V2026_07_28, &ClientInfo::new("c", "1"));
        let params = with_envelope(
            json!({"name": "t", "_meta": {"progressToken": 7,
                "io.modelcontextprotocol/clientInfo": {"name": "mine"}}}),
            &envelope,
        );
        let meta = &params["_meta"];
        assert_eq!(meta["progressToken"], 7);
        assert_eq!(meta["io.modelcontextprotocol/clientInfo"]["name"], "mine");
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            json!({})
        );
        assert_eq!(params["name"], "t");
        // Not an object: left for the server to reject.
        assert_eq!(with_envelope(json!([1]), &envelope), json!([1]));
    }
}
