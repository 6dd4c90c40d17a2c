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
//! renews the tokens and sends the request once more. Token values are
//! never written to stderr, an error, a metric or a span; the store is the
//! only place they are written.
//!
//! Not the `oauth2` crate: see host-adapter/Cargo.toml.

mod callback;
mod checks;
mod discovery;
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
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode, Uri};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use url::Url;

use super::http::{Http, HttpError, read_body, shown};
use crate::proxy::StderrSink;
use callback::{Callback, Returned};
use discovery::{Challenge, ResourceMetadata, ServerMetadata};
use store::{Client, Record, Store, Tokens};

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

/// Parameters of the authorization request the flow sets itself; `--oauth-param`
/// cannot replace them (PKCE, the state and the redirect are what keep the
/// code safe).
const OWN_PARAMS: &[&str] = &[
    "response_type",
    "client_id",
    "redirect_uri",
    "code_challenge",
    "code_challenge_method",
    "state",
    "resource",
    "scope",
];

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

    /// The whole authorization: discovery and its checks, a client, the
    /// browser, the code exchange. `scope`: the scopes of a step-up.
    async fn authorize(
        &self,
        state: &mut State,
        challenge: &Challenge,
        scope: Option<String>,
    ) -> Result<(), String> {
        let found = self.discover(challenge).await?;
        let Found {
            resource_metadata,
            issuer,
            metadata,
        } = &found;
        let resource =
            self.config.resource.clone().unwrap_or_else(|| {
                discovery::resource_for(&self.server, resource_metadata.as_ref())
            });
        let scope = scope
            .or_else(|| self.config.scope.clone())
            .or_else(|| challenge.scope.clone())
            .or_else(|| {
                resource_metadata
                    .as_ref()
                    .filter(|m| !m.scopes_supported.is_empty())
                    .map(|m| m.scopes_supported.join(" "))
            });
        // A refresh token outlives the session (SEP-2207): asked for where
        // the server offers it.
        let scope = if metadata.refreshes()
            && metadata
                .scopes_supported
                .iter()
                .any(|s| s == "offline_access")
        {
            scope_union(scope.as_deref().unwrap_or(""), "offline_access").or(scope)
        } else {
            scope
        };

        let callback = self.bind_callback(&state.record).await?;
        let redirect_uri = callback.redirect_uri().map_err(|e| e.to_string())?;
        let client = self
            .client_for(state, issuer.as_deref(), metadata, &redirect_uri)
            .await?;

        let verifier = random_text(32);
        let code_challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let csrf = random_text(16);
        let mut url =
            checks::endpoint_is_secure("authorization endpoint", &metadata.authorization_endpoint)?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &code_challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &csrf)
                .append_pair("resource", &resource);
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
            }
            for (name, value) in &self.config.params {
                if !OWN_PARAMS.contains(&name.as_str()) {
                    query.append_pair(name, value);
                }
            }
        }
        let opened = callback::open_browser(url.as_str());
        self.sink.line(&format!(
            "OAuth: {} asks for authorization; {} this URL to approve (waiting {} min): {url}",
            show(&self.server),
            if opened {
                "a browser was opened at"
            } else {
                "open"
            },
            AUTHORIZE_WITHIN.as_secs() / 60
        ));
        let (code, iss) = match callback.wait(&csrf, AUTHORIZE_WITHIN).await? {
            Returned::Code { code, iss } => (code, iss),
            Returned::Refused(why) => return Err(format!("the authorization was refused: {why}")),
        };
        checks::iss_matches_issuer(
            metadata.authorization_response_iss_parameter_supported,
            issuer.as_deref(),
            iss.as_deref(),
        )?;
        let granted = self
            .token_request(
                &metadata.token_endpoint,
                &client,
                &[
                    ("grant_type", "authorization_code"),
                    ("code", &code),
                    ("redirect_uri", &redirect_uri),
                    ("code_verifier", &verifier),
                    ("resource", &resource),
                ],
            )
            .await
            .map_err(|why| format!("exchanging the authorization code: {why}"))?;
        self.keep(
            state,
            granted.into_tokens(metadata.token_endpoint.clone(), resource, scope),
        );
        self.sink.line(&format!(
            "OAuth: authorized for {}; tokens stored in {}",
            show(&self.server),
            self.store.dir().display()
        ));
        Ok(())
    }

    /// Where to authorize, each document checked before it is used: the
    /// protected resource metadata (its `resource` must be this server),
    /// its first authorization server's metadata (its `issuer` must be the
    /// one looked up); for a server with no resource metadata (2025-03-26),
    /// the metadata at its origin, else the conventional endpoints there.
    /// Then every endpoint must be https (or loopback) and PKCE with S256
    /// listed.
    async fn discover(&self, challenge: &Challenge) -> Result<Found, String> {
        let resource_metadata = self.resource_metadata(challenge).await?;
        let (issuer, metadata) = match &resource_metadata {
            Some(found) => {
                checks::resource_matches_server(&self.server, found.resource.as_deref())?;
                let issuer = found
                    .authorization_servers
                    .first()
                    .ok_or("the protected resource metadata names no authorization server")?
                    .clone();
                let metadata = self.server_metadata(&issuer).await?.ok_or_else(|| {
                    format!("the authorization server {issuer:?} publishes no metadata (RFC 8414)")
                })?;
                (Some(issuer), metadata)
            }
            None => {
                let issuer = discovery::origin_issuer(&self.server);
                match self.server_metadata(&issuer).await? {
                    Some(metadata) => (Some(issuer), metadata),
                    None => (None, ServerMetadata::by_convention(&self.server)),
                }
            }
        };
        checks::endpoint_is_secure("token endpoint", &metadata.token_endpoint)?;
        checks::endpoint_is_secure("authorization endpoint", &metadata.authorization_endpoint)?;
        checks::pkce_s256_supported(metadata.code_challenge_methods_supported.as_deref())?;
        Ok(Found {
            resource_metadata,
            issuer,
            metadata,
        })
    }

    /// The client to authorize as: the pre-registered one, else the stored
    /// one if it was registered with this issuer and this redirect URI,
    /// else this client's metadata document URL where the server takes
    /// one, else a new registration. A new client forgets the old tokens.
    async fn client_for(
        &self,
        state: &mut State,
        issuer: Option<&str>,
        metadata: &ServerMetadata,
        redirect_uri: &str,
    ) -> Result<Client, String> {
        if let Some(given) = &self.config.client {
            let client = Client {
                client_id: given.id.clone(),
                client_secret: given.secret.clone(),
                redirect_uris: vec![redirect_uri.to_string()],
                token_endpoint: metadata.token_endpoint.clone(),
                issuer: issuer.map(str::to_string),
                auth_method: Some(auth_method(metadata, given.secret.is_some()).to_string()),
            };
            state.record.client = Some(client.clone());
            return Ok(client);
        }
        let stored = state.record.client.as_ref().filter(|client| {
            let same_server = match (&client.issuer, issuer) {
                (Some(theirs), Some(this)) => theirs == this,
                _ => client.token_endpoint == metadata.token_endpoint,
            };
            same_server && client.redirect_uris.iter().any(|uri| uri == redirect_uri)
        });
        if let Some(client) = stored {
            return Ok(client.clone());
        }
        let client = match &self.config.client_metadata_url {
            Some(url) if metadata.client_id_metadata_document_supported => Client {
                client_id: url.clone(),
                client_secret: None,
                redirect_uris: vec![redirect_uri.to_string()],
                token_endpoint: metadata.token_endpoint.clone(),
                issuer: issuer.map(str::to_string),
                auth_method: Some("none".into()),
            },
            _ => self.register(issuer, metadata, redirect_uri).await?,
        };
        state.record.client = Some(client.clone());
        state.record.tokens = None;
        self.save(&state.record);
        Ok(client)
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

    /// The callback on `--oauth-port`, else on the port the stored client
    /// was registered with if it is free, else on any port.
    async fn bind_callback(&self, record: &Record) -> Result<Callback, String> {
        if let Some(port) = self.config.port {
            return Callback::bind(port)
                .await
                .map_err(|e| format!("listening on 127.0.0.1:{port} for the callback: {e}"));
        }
        let registered = record
            .client
            .as_ref()
            .and_then(|client| client.redirect_uris.first())
            .and_then(|uri| Url::parse(uri).ok())
            .and_then(|uri| uri.port());
        if let Some(port) = registered
            && let Ok(callback) = Callback::bind(port).await
        {
            return Ok(callback);
        }
        Callback::bind(0)
            .await
            .map_err(|e| format!("listening on 127.0.0.1 for the callback: {e}"))
    }

    /// RFC 9728 metadata: at the challenge's URL, else the well-known
    /// URLs; `None` when the server publishes none.
    async fn resource_metadata(
        &self,
        challenge: &Challenge,
    ) -> Result<Option<ResourceMetadata>, String> {
        let named = challenge
            .resource_metadata
            .as_deref()
            .and_then(|url| Url::parse(url).ok())
            .filter(|url| matches!(url.scheme(), "http" | "https"));
        let urls = match named {
            Some(url) => vec![url],
            None => discovery::resource_metadata_urls(&self.server),
        };
        for url in urls {
            if let Some(metadata) = self.get_json(&url).await? {
                return Ok(Some(metadata));
            }
        }
        Ok(None)
    }

    /// RFC 8414 (or OpenID Connect) metadata of `issuer` at its well-known
    /// URLs, checked to be that issuer's; `None` when there is none.
    async fn server_metadata(&self, issuer: &str) -> Result<Option<ServerMetadata>, String> {
        let url = checks::endpoint_is_secure("authorization server", issuer)?;
        for url in discovery::authorization_server_metadata_urls(&url) {
            if let Some(metadata) = self.get_json::<ServerMetadata>(&url).await? {
                checks::issuer_matches_metadata(issuer, metadata.issuer.as_deref())?;
                return Ok(Some(metadata));
            }
        }
        Ok(None)
    }

    /// Dynamic client registration (RFC 7591): a native client with PKCE,
    /// authenticating at the token endpoint as the server prefers.
    async fn register(
        &self,
        issuer: Option<&str>,
        metadata: &ServerMetadata,
        redirect_uri: &str,
    ) -> Result<Client, String> {
        let Some(endpoint) = &metadata.registration_endpoint else {
            return Err(
                "the authorization server offers no dynamic client registration: register a client with it and pass --oauth-client-id (and --oauth-client-secret)"
                    .into(),
            );
        };
        checks::endpoint_is_secure("registration endpoint", endpoint)?;
        let asked = registration_auth_method(metadata);
        let body = serde_json::json!({
            "client_name": "drainpipe",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": asked,
            // SEP-837: a program on the user's machine with a loopback
            // redirect (OpenID Connect Registration §2).
            "application_type": "native",
        });
        #[derive(Deserialize)]
        struct Registered {
            client_id: String,
            client_secret: Option<String>,
            token_endpoint_auth_method: Option<String>,
        }
        let registered: Registered = self
            .post(endpoint, "application/json", body.to_string(), None)
            .await
            .map_err(|why| format!("registering a client: {why}"))?;
        let auth_method =
            registered.token_endpoint_auth_method.unwrap_or_else(|| {
                match &registered.client_secret {
                    Some(_) if asked == "none" => auth_method(metadata, true).to_string(),
                    _ => asked.to_string(),
                }
            });
        Ok(Client {
            client_id: registered.client_id,
            client_secret: registered.client_secret,
            redirect_uris: vec![redirect_uri.to_string()],
            token_endpoint: metadata.token_endpoint.clone(),
            issuer: issuer.map(str::to_string),
            auth_method: Some(auth_method),
        })
    }

    /// A token request (RFC 6749 §4.1.3, §6) as `client`, authenticated as
    /// it was registered: its secret in an `Authorization: Basic` header
    /// (`client_secret_basic`), in the body (`client_secret_post`), or not
    /// at all (`none`, a public client).
    async fn token_request(
        &self,
        endpoint: &str,
        client: &Client,
        form: &[(&str, &str)],
    ) -> Result<Granted, String> {
        checks::endpoint_is_secure("token endpoint", endpoint)?;
        let method = client
            .auth_method
            .as_deref()
            .unwrap_or(if client.client_secret.is_some() {
                "client_secret_post"
            } else {
                "none"
            });
        let secret = client.client_secret.as_deref().filter(|_| method != "none");
        let basic = match (method, secret) {
            ("client_secret_basic", Some(secret)) => {
                Some(basic_credentials(&client.client_id, secret))
            }
            _ => None,
        };
        // Built before any await: the serializer is not `Send`.
        let body = {
            let mut body = url::form_urlencoded::Serializer::new(String::new());
            body.extend_pairs(form.iter().copied());
            if basic.is_none() {
                body.append_pair("client_id", &client.client_id);
                if let Some(secret) = secret {
                    body.append_pair("client_secret", secret);
                }
            }
            body.finish()
        };
        let granted: Granted = self
            .post(endpoint, "application/x-www-form-urlencoded", body, basic)
            .await?;
        if !granted.token_type.eq_ignore_ascii_case("bearer") {
            return Err(format!(
                "a {:?} token, not a bearer token",
                granted.token_type
            ));
        }
        Ok(granted)
    }

    /// POSTs `body` (with `authorization`, client credentials, if given)
    /// and reads a JSON answer. An error says the status and the server's
    /// `error` and `error_description`, never the body.
    async fn post<T: DeserializeOwned>(
        &self,
        endpoint: &str,
        content_type: &'static str,
        body: String,
        authorization: Option<HeaderValue>,
    ) -> Result<T, String> {
        let uri: Uri = endpoint
            .parse()
            .map_err(|_| "an endpoint that is not a URL".to_string())?;
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(uri.clone())
            .header(CONTENT_TYPE, content_type)
            .header(ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|_| "an endpoint that is not a URL".to_string())?;
        if let Some(authorization) = authorization {
            request.headers_mut().insert(AUTHORIZATION, authorization);
        }
        let response = self.http.send(request).await.map_err(|e| e.to_string())?;
        let status = response.status();
        let bytes = read_body(&mut response.into_body(), MAX_DOCUMENT_BYTES, self.idle).await?;
        if !status.is_success() {
            #[derive(Deserialize)]
            struct Refusal {
                error: Option<String>,
                error_description: Option<String>,
            }
            let said = serde_json::from_slice::<Refusal>(&bytes)
                .ok()
                .map(|r| {
                    let text = [r.error, r.error_description]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join(": ");
                    format!(" ({})", text.chars().take(300).collect::<String>())
                })
                .unwrap_or_default();
            return Err(format!("{} answered HTTP {status}{said}", shown(&uri)));
        }
        // The body may hold tokens: a parse error names the field only.
        serde_json::from_slice(&bytes).map_err(|error| {
            format!(
                "{} answered with a document that is not what OAuth specifies ({:?} at line {})",
                shown(&uri),
                error.classify(),
                error.line()
            )
        })
    }

    /// GETs a metadata document: `None` when the server has none there
    /// (any status but success, or not the document expected).
    async fn get_json<T: DeserializeOwned>(&self, url: &Url) -> Result<Option<T>, String> {
        let uri: Uri = url
            .as_str()
            .parse()
            .map_err(|_| format!("{} is not a usable URL", show(url)))?;
        let request = Request::builder()
            .method(Method::GET)
            .uri(uri)
            .header(ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|_| format!("{} is not a usable URL", show(url)))?;
        let response = self.http.send(request).await.map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Ok(None);
        }
        let bytes = read_body(&mut response.into_body(), MAX_DOCUMENT_BYTES, self.idle).await?;
        Ok(serde_json::from_slice(&bytes).ok())
    }
}

/// A token endpoint's answer (RFC 6749 §5.1).
#[derive(Deserialize)]
struct Granted {
    access_token: String,
    token_type: String,
    expires_in: Option<u64>,
    refresh_token: Option<String>,
    /// The scopes granted, when they differ from those asked (RFC 6749
    /// §5.1); servers often send them anyway.
    scope: Option<String>,
}

impl Granted {
    /// The tokens to store; `asked`: the scopes requested, taken as granted
    /// when the server does not say.
    fn into_tokens(
        self,
        token_endpoint: String,
        resource: String,
        asked: Option<String>,
    ) -> Tokens {
        let now = now();
        Tokens {
            access_token: self.access_token,
            refresh_token: self.refresh_token,
            expires_at: self.expires_in.map(|secs| now + secs),
            refresh_at: self
                .expires_in
                .map(|secs| now + secs - REFRESH_EARLY_SECS.min(secs / 4)),
            token_endpoint,
            resource,
            scope: self.scope.or(asked),
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

/// What discovery found, every document checked.
struct Found {
    resource_metadata: Option<ResourceMetadata>,
    /// The authorization server's issuer; `None` for a 2025-03-26 server
    /// without metadata.
    issuer: Option<String>,
    metadata: ServerMetadata,
}

/// How a client with (or without) a secret authenticates at the token
/// endpoint of a server with `metadata`: `client_secret_basic` where it is
/// listed or nothing is (RFC 8414 §2's default), else
/// `client_secret_post`; `none` without a secret.
fn auth_method(metadata: &ServerMetadata, has_secret: bool) -> &'static str {
    if !has_secret {
        return "none";
    }
    match &metadata.token_endpoint_auth_methods_supported {
        Some(methods)
            if !methods.iter().any(|m| m == "client_secret_basic")
                && methods.iter().any(|m| m == "client_secret_post") =>
        {
            "client_secret_post"
        }
        _ => "client_secret_basic",
    }
}

/// The method to register with: a public client (`none`) where the server
/// takes one (a program on the user's machine cannot keep a secret), else
/// the first secret-based method it lists.
fn registration_auth_method(metadata: &ServerMetadata) -> &'static str {
    match &metadata.token_endpoint_auth_methods_supported {
        Some(methods) if methods.iter().any(|m| m == "none") => "none",
        Some(methods) if methods.iter().any(|m| m == "client_secret_basic") => {
            "client_secret_basic"
        }
        Some(methods) if methods.iter().any(|m| m == "client_secret_post") => "client_secret_post",
        Some(_) => "none",
        // Unlisted: RFC 8414's default is client_secret_basic, but most
        // MCP authorization servers register public clients.
        None => "none",
    }
}

/// `Authorization: Basic` for a client (RFC 6749 §2.3.1: id and secret
/// form-urlencoded, then joined by a colon and base64-encoded), marked
/// sensitive.
fn basic_credentials(id: &str, secret: &str) -> HeaderValue {
    let encode =
        |text: &str| url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
    let credentials = base64::engine::general_purpose::STANDARD.encode(format!(
        "{}:{}",
        encode(id),
        encode(secret)
    ));
    let mut value = HeaderValue::from_str(&format!("Basic {credentials}"))
        .expect("base64 is a valid header value");
    value.set_sensitive(true);
    value
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
