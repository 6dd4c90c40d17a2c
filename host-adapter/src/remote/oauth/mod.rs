//! OAuth 2.1 for remote servers, as the MCP authorization specification
//! asks of a client and as hosts and `mcp-remote` do it:
//!
//! ```text
//!  request ──► 401 (any), or 403 + error="insufficient_scope" (step-up)
//!                │
//!                ├─ 401, refresh token stored? grant_type=refresh_token ─► retry once
//!                │
//!                ├─ protected resource metadata (RFC 9728; the challenge's URL,
//!                │    else /.well-known/oauth-protected-resource, path-aware first);
//!                │    its `resource` must be this server            [checks.rs]
//!                │    none at all (2025-03-26): the server's origin is the issuer
//!                ├─ authorization server metadata (RFC 8414, then OpenID Connect);
//!                │    its `issuer` must be the one looked up, its endpoints
//!                │    https (or loopback), S256 listed               [checks.rs]
//!                │    none, for a 2025-03-26 server: /authorize, /token, /register
//!                ├─ a client: pre-registered (--oauth-client-id), the stored one if
//!                │    registered with this issuer, a metadata document URL, else
//!                │    dynamic registration (RFC 7591, application_type native)
//!                ├─ the browser: authorization code + PKCE S256 + resource (RFC 8707),
//!                │    back to http://127.0.0.1:PORT/callback; `iss` checked (RFC 9207)
//!                └─ the code exchanged for tokens (none, client_secret_post or
//!                     client_secret_basic, as registered), stored (0600 in 0700)
//!                                                              ─► retry once
//! ```
//!
//! The bridge sees one call, [`TokenSource::send`]: it puts the bearer on
//! the request (refreshing an expired token first) and, on a `401`,
//! renews the tokens and sends the request once more. This file keeps the
//! tokens' life (send, refresh, renew under the store's lock, step-up);
//! `sign_in.rs` is the authorization, stage by stage; `endpoint.rs` the
//! requests to the authorization server; `checks.rs` every rule the
//! specifications make a MUST. Token values are
//! never written to stderr, an error, a metric or a span; the store is the
//! only place they are written.
//!
//! Not the `oauth2` crate: see host-adapter/Cargo.toml.

mod callback;
mod checks;
mod discovery;
mod endpoint;
mod sign_in;
mod store;

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use hyper::{Request, Response, StatusCode, Uri};
use url::Url;

use super::http::{Http, HttpError, shown};
use crate::pipe::sink::StderrSink;
use discovery::Challenge;
use store::{Record, Store, Tokens};

/// When the proxy authorizes with OAuth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OAuthMode {
    /// Never (`--no-oauth`, or an `Authorization` header given): a `401`
    /// is an error for its request.
    #[default]
    Off,
    /// When the server asks for it: any `401` starts the flow (the
    /// challenge's metadata, else the well-known URLs, as the MCP
    /// authorization specification asks), and tokens stored by an earlier
    /// run are sent from the first request. Without anywhere to keep
    /// tokens, OAuth is off.
    OnChallenge,
    /// Always (`--oauth`): as above, and an error at start when there is
    /// nowhere to keep tokens.
    Always,
}

/// How the proxy obtains tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OAuthGrant {
    /// A user approves in the browser (authorization code with PKCE).
    #[default]
    AuthorizationCode,
    /// The pre-registered client signs in as itself, with its secret and
    /// no browser: for machine-to-machine use.
    ClientCredentials,
}

/// A client registered with the authorization server beforehand (for
/// servers without dynamic registration, such as GitHub's). Debug never
/// shows the secret.
#[derive(Clone, Default)]
pub struct PreRegisteredClient {
    /// `client_id`.
    pub id: String,
    /// `client_secret`, for a confidential client.
    pub secret: Option<String>,
}

impl std::fmt::Debug for PreRegisteredClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreRegisteredClient")
            .field("id", &self.id)
            .field("secret", &self.secret.as_ref().map(|_| "…"))
            .finish()
    }
}

/// How to authorize with a remote server.
#[derive(Clone, Debug, Default)]
pub struct OAuthConfig {
    /// When.
    pub mode: OAuthMode,
    /// Where tokens and client registrations are kept; `None`: the user's
    /// configuration directory (`$XDG_CONFIG_HOME/drainpipe/oauth`, else
    /// `~/.config/drainpipe/oauth`; `%APPDATA%\drainpipe\oauth` on
    /// Windows).
    pub dir: Option<PathBuf>,
    /// The callback's port on 127.0.0.1; `None`: the port of the stored
    /// client's registration if free, else any.
    pub port: Option<u16>,
    /// A client registered beforehand: used instead of registering one.
    pub client: Option<PreRegisteredClient>,
    /// The URL of this client's metadata document, used as its client id
    /// with servers that support Client ID Metadata Documents.
    pub client_metadata_url: Option<String>,
    /// The scopes to ask for, instead of those the server suggests.
    pub scope: Option<String>,
    /// The `resource` to ask tokens for (RFC 8707), instead of the one the
    /// server's metadata names.
    pub resource: Option<String>,
    /// More parameters for the authorization request (`access_type=offline`
    /// for Google).
    pub params: Vec<(String, String)>,
    /// How tokens are obtained.
    pub grant: OAuthGrant,
}

/// The longest the user has to approve in the browser: the request that
/// needed it waits that long, then fails.
const AUTHORIZE_WITHIN: Duration = Duration::from_secs(300);

/// The longest metadata or token document read: far over any real one,
/// bounding what a hostile server can make the proxy hold.
const MAX_DOCUMENT_BYTES: usize = 256 << 10;

/// An access token this close to its expiry is refreshed before it is
/// sent, in seconds (a quarter of its life if that is shorter): a token
/// that expires in flight costs a round trip.
const REFRESH_EARLY_SECS: u64 = 60;

/// How much longer than an authorization a proxy waits for another one
/// holding the lock on a shared token record: past it, its request fails
/// with an error rather than waiting without end for a process that hangs.
const LOCK_MARGIN: Duration = Duration::from_secs(60);

/// Step-ups (`403 insufficient_scope` → a new authorization with more
/// scopes) in a row without a request getting through: a server that
/// keeps asking for scopes it never accepts must not send the user to the
/// browser again and again.
const MAX_STEP_UPS: u32 = 2;

/// The bearer tokens of one server, and renewing them.
pub(crate) struct TokenSource {
    /// For the authorization server: without the `--header` headers,
    /// which are for the MCP server only.
    http: Http,
    server: Url,
    config: OAuthConfig,
    store: Store,
    sink: StderrSink,
    idle: Duration,
    /// Held while tokens are renewed, so requests failing together start
    /// one authorization, and requests wait for it.
    state: tokio::sync::Mutex<State>,
    /// Step-ups since a request last got through (see [`MAX_STEP_UPS`]).
    step_ups: AtomicU32,
}

struct State {
    record: Record,
    /// Bumped whenever the tokens change: a `401` for a request sent with
    /// older tokens is retried with the new ones, not renewed again.
    generation: u64,
}

impl TokenSource {
    /// The token source `config` asks for: none when OAuth is off, or
    /// automatic with nowhere to keep tokens (no home directory); an error
    /// when `--oauth` has nowhere to keep them.
    pub(crate) fn for_config(
        config: &OAuthConfig,
        server: &Uri,
        http: &Http,
        sink: StderrSink,
        idle: Duration,
    ) -> io::Result<Option<TokenSource>> {
        match config.mode {
            OAuthMode::Off => Ok(None),
            OAuthMode::OnChallenge => Ok(Self::new(config, server, http, sink, idle).ok()),
            OAuthMode::Always => Self::new(config, server, http, sink, idle).map(Some),
        }
    }

    fn new(
        config: &OAuthConfig,
        server: &Uri,
        http: &Http,
        sink: StderrSink,
        idle: Duration,
    ) -> io::Result<TokenSource> {
        let server = Url::parse(&server.to_string())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "--url is not a URL"))?;
        let store = Store::new(config.dir.clone())?;
        let mut record = store.load(server.as_str());
        if let Some(given) = &config.client
            && record.client.as_ref().map(|c| &c.client_id) != Some(&given.id)
        {
            // Tokens of another client are not this one's.
            record.client = None;
            record.tokens = None;
        }
        Ok(TokenSource {
            http: http.without_headers(),
            server,
            config: config.clone(),
            store,
            sink,
            idle,
            state: tokio::sync::Mutex::new(State {
                record,
                generation: 0,
            }),
            step_ups: AtomicU32::new(0),
        })
    }

    /// Sends `request` through `http` with the bearer token; on a `401`,
    /// renews the tokens (a refresh, else an authorization in the browser)
    /// and sends it once more; on a `403 insufficient_scope`, authorizes
    /// again for the scopes held and asked together, then sends it once
    /// more. When nothing can be renewed the answer is returned as it came.
    pub(crate) async fn send(
        &self,
        http: &Http,
        mut request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, HttpError> {
        let mut again = copy(&request);
        let generation = self.add_bearer(&mut request).await;
        let response = http.send(request).await?;
        let status = response.status();
        if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
            self.step_ups.store(0, Ordering::Relaxed);
            return Ok(response);
        }
        let challenge = response
            .headers()
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .map(discovery::parse_challenge)
            .find(|challenge| challenge.bearer)
            .unwrap_or_default();
        let renewed = if status == StatusCode::UNAUTHORIZED {
            self.renew(generation, &challenge).await
        } else if challenge.error.as_deref() == Some("insufficient_scope") {
            self.step_up(generation, &challenge).await
        } else {
            return Ok(response);
        };
        match renewed {
            Ok(true) => {
                self.add_bearer(&mut again).await;
                http.send(again).await
            }
            Ok(false) => Ok(response),
            Err(why) => {
                self.sink.line(&format!("OAuth: {why}"));
                Ok(response)
            }
        }
    }

    /// Puts the bearer on `request`, refreshing an access token about to
    /// expire first; returns the tokens' generation.
    async fn add_bearer(&self, request: &mut Request<Full<Bytes>>) -> u64 {
        let mut state = self.state.lock().await;
        if state.record.tokens.as_ref().is_some_and(due_for_refresh)
            && let Err(why) = self.refresh_due(&mut state).await
        {
            self.sink.line(&format!("OAuth: {why}"));
        }
        let target = Url::parse(&request.uri().to_string());
        if let Some(tokens) = &state.record.tokens
            && target.is_ok_and(|target| checks::bearer_may_go_to(&self.server, &target))
            && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", tokens.access_token))
        {
            value.set_sensitive(true);
            request.headers_mut().insert(AUTHORIZATION, value);
        }
        state.generation
    }

    /// Refreshes tokens due for it, unless another proxy sharing the store
    /// already did: then its tokens are taken.
    async fn refresh_due(&self, state: &mut State) -> Result<(), String> {
        let _locked = self.lock_store().await?;
        if self.take_stored(state) && !state.record.tokens.as_ref().is_some_and(due_for_refresh) {
            return Ok(());
        }
        self.refresh(state).await
    }

    /// After a `401` for a request sent with generation `sent`: true when
    /// there are new tokens to retry with (renewed here, in this process
    /// meanwhile, or by another proxy sharing the store).
    async fn renew(&self, sent: u64, challenge: &Challenge) -> Result<bool, String> {
        let mut state = self.state.lock().await;
        if state.generation != sent {
            // Renewed while this request was out.
            return Ok(true);
        }
        let _locked = self.lock_store().await?;
        if self.take_stored(&mut state) {
            return Ok(true);
        }
        let refreshable = state
            .record
            .tokens
            .as_ref()
            .is_some_and(|tokens| tokens.refresh_token.is_some());
        if refreshable {
            match self.refresh(&mut state).await {
                Ok(()) => return Ok(true),
                Err(why) => self.sink.line(&format!("OAuth: {why}; authorizing again")),
            }
        }
        self.authorize(&mut state, challenge, None).await?;
        Ok(true)
    }

    /// The lock on this server's record, shared with every proxy using the
    /// same store: held while tokens are renewed (an authorization in the
    /// browser included, so that the others wait for it and use its tokens
    /// rather than asking the user again).
    async fn lock_store(&self) -> Result<store::Locked, String> {
        self.store
            .lock(self.server.as_str(), AUTHORIZE_WITHIN + LOCK_MARGIN)
            .await
            .map_err(|error| {
                format!(
                    "locking the token record in {}: {error}",
                    self.store.dir().display()
                )
            })
    }

    /// Reads the record afresh (under the lock): when another proxy stored
    /// other tokens than those held here, they are newer (every write is
    /// made under the lock from what was read under it) and are taken;
    /// true then. A client another proxy registered is taken either way.
    fn take_stored(&self, state: &mut State) -> bool {
        let stored = self.store.load(self.server.as_str());
        let held = state.record.tokens.as_ref().map(|t| &t.access_token);
        let theirs = stored.tokens.as_ref().map(|t| &t.access_token);
        let pre_registered = self.config.client.as_ref().map(|c| &c.id);
        let their_client = stored.client.as_ref().map(|c| &c.client_id);
        if pre_registered.is_some() && their_client != pre_registered {
            // Another client's tokens (an older configuration): not ours.
            return false;
        }
        if theirs.is_some() && theirs != held {
            state.record = stored;
            state.generation += 1;
            return true;
        }
        if stored.client.is_some() {
            state.record.client = stored.client;
        }
        false
    }

    /// After a `403 insufficient_scope` for a request sent with generation
    /// `sent`: authorizes again for the scopes held and the ones asked
    /// (SEP-2350), unless it asks for nothing new or the step-ups in a row
    /// reached [`MAX_STEP_UPS`]. True when there are new tokens.
    async fn step_up(&self, sent: u64, challenge: &Challenge) -> Result<bool, String> {
        let mut state = self.state.lock().await;
        if state.generation != sent {
            return Ok(true);
        }
        let _locked = self.lock_store().await?;
        self.take_stored(&mut state);
        let held = state
            .record
            .tokens
            .as_ref()
            .and_then(|tokens| tokens.scope.clone())
            .unwrap_or_default();
        let asked = challenge.scope.clone().unwrap_or_default();
        let Some(union) = scope_union(&held, &asked) else {
            return Err(format!(
                "{} refused the request for want of scope {asked:?}, which the tokens already have: not asking again",
                show(&self.server)
            ));
        };
        if self.step_ups.fetch_add(1, Ordering::Relaxed) >= MAX_STEP_UPS {
            return Err(format!(
                "{} asked for more scopes {MAX_STEP_UPS} times in a row: not asking again",
                show(&self.server)
            ));
        }
        self.sink.line(&format!(
            "OAuth: {} needs scope {asked:?} for this request: authorizing again for {union:?}",
            show(&self.server)
        ));
        self.authorize(&mut state, challenge, Some(union)).await?;
        Ok(true)
    }

    /// `grant_type=refresh_token` with the stored refresh token.
    async fn refresh(&self, state: &mut State) -> Result<(), String> {
        let (Some(tokens), Some(client)) = (&state.record.tokens, &state.record.client) else {
            return Err("nothing to refresh".into());
        };
        let Some(refresh_token) = tokens.refresh_token.clone() else {
            return Err("no refresh token".into());
        };
        let (endpoint, resource) = (tokens.token_endpoint.clone(), tokens.resource.clone());
        let scope = tokens.scope.clone();
        let granted = self
            .token_request(
                &endpoint,
                client,
                &[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", &refresh_token),
                    ("resource", &resource),
                ],
            )
            .await;
        let granted = match granted {
            Ok(granted) => granted,
            Err(why) => {
                // A refused refresh token is not tried again.
                state.record.tokens = None;
                let _ = self.store.save(&state.record);
                state.generation += 1;
                return Err(format!("refreshing the access token: {why}"));
            }
        };
        let mut tokens = granted.into_tokens(endpoint, resource, scope);
        tokens.refresh_token = tokens.refresh_token.or(Some(refresh_token));
        self.keep(state, tokens);
        Ok(())
    }

    /// Stores new tokens and makes them current.
    fn keep(&self, state: &mut State, tokens: Tokens) {
        state.record.tokens = Some(tokens);
        state.generation += 1;
        self.save(&state.record);
    }

    fn save(&self, record: &Record) {
        if let Err(error) = self.store.save(record) {
            self.sink.line(&format!(
                "OAuth: could not store the tokens in {} ({error}): the next run authorizes again",
                self.store.dir().display()
            ));
        }
    }
}

/// Whether `tokens` are to be refreshed before they are sent: they can be,
/// and their refresh time has come.
fn due_for_refresh(tokens: &Tokens) -> bool {
    let at = tokens.refresh_at.or_else(|| {
        tokens
            .expires_at
            .map(|at| at.saturating_sub(REFRESH_EARLY_SECS))
    });
    tokens.refresh_token.is_some() && at.is_some_and(|at| at <= now())
}

/// The scopes of `held` and then those of `asked` not among them,
/// space-separated; `None` when `asked` adds nothing.
fn scope_union(held: &str, asked: &str) -> Option<String> {
    let mut scopes: Vec<&str> = held.split_whitespace().collect();
    let before = scopes.len();
    for scope in asked.split_whitespace() {
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    (scopes.len() > before).then(|| scopes.join(" "))
}

/// The same request again (its body is shared bytes).
fn copy(request: &Request<Full<Bytes>>) -> Request<Full<Bytes>> {
    let mut again = Request::new(request.body().clone());
    *again.method_mut() = request.method().clone();
    *again.uri_mut() = request.uri().clone();
    *again.version_mut() = request.version();
    *again.headers_mut() = request.headers().clone();
    again
}

/// `bytes` random bytes as unpadded base64url: a PKCE verifier (RFC 7636
/// §4.1: 43 characters from 32 bytes) or a state.
fn random_text(bytes: usize) -> String {
    let mut random = vec![0u8; bytes];
    getrandom::fill(&mut random).expect("the system's random source");
    URL_SAFE_NO_PAD.encode(random)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A URL as it may be shown: no user info, no query.
fn show(url: &Url) -> String {
    url.as_str()
        .parse::<Uri>()
        .map_or_else(|_| url.origin().ascii_serialization(), |uri| shown(&uri))
}

#[cfg(test)]
mod tests;
