//! OAuth 2.1 for remote servers, as the MCP authorization specification
//! asks of a client and as hosts and `mcp-remote` do it:
//!
//! ```text
//!  request ──► 401 + WWW-Authenticate: Bearer resource_metadata=…
//!                │
//!                ├─ refresh token stored? grant_type=refresh_token ─► retry once
//!                │
//!                ├─ protected resource metadata (RFC 9728; the challenge's URL,
//!                │    else /.well-known/oauth-protected-resource, path-aware first)
//!                ├─ authorization server metadata (RFC 8414, then OpenID Connect)
//!                ├─ a client: the stored one, else dynamic registration (RFC 7591)
//!                ├─ the browser: authorization code + PKCE S256 + resource (RFC 8707),
//!                │    back to http://127.0.0.1:PORT/callback
//!                └─ the code exchanged for tokens, stored (0600 in a 0700 directory)
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
mod discovery;
mod store;

use std::io;
use std::path::PathBuf;
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
    /// Never: a `401` is an error for its request.
    #[default]
    Off,
    /// When the server asks for it: a `401` whose `WWW-Authenticate:
    /// Bearer` names `resource_metadata` starts the flow, and tokens stored
    /// by an earlier run are sent from the first request.
    OnChallenge,
    /// Always (`--oauth`): stored tokens from the first request, and any
    /// `401` starts the flow.
    Always,
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
}

/// The longest the user has to approve in the browser: the request that
/// needed it waits that long, then fails.
const AUTHORIZE_WITHIN: Duration = Duration::from_secs(300);

/// The longest metadata or token document read: far over any real one,
/// bounding what a hostile server can make the proxy hold.
const MAX_DOCUMENT_BYTES: usize = 256 << 10;

/// An access token this close to its expiry is refreshed before it is
/// sent, in seconds: a token that expires in flight costs a round trip.
const REFRESH_EARLY_SECS: u64 = 60;

/// The bearer tokens of one server, and renewing them.
pub(crate) struct TokenSource {
    /// For the authorization server: without the `--header` headers,
    /// which are for the MCP server only.
    http: Http,
    server: Url,
    mode: OAuthMode,
    port: Option<u16>,
    store: Store,
    sink: StderrSink,
    idle: Duration,
    /// Held while tokens are renewed, so requests failing together start
    /// one authorization, and requests wait for it.
    state: tokio::sync::Mutex<State>,
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
        let record = store.load(server.as_str());
        Ok(TokenSource {
            http: http.without_headers(),
            server,
            mode: config.mode,
            port: config.port,
            store,
            sink,
            idle,
            state: tokio::sync::Mutex::new(State {
                record,
                generation: 0,
            }),
        })
    }

    /// Sends `request` through `http` with the bearer token; on a `401`,
    /// renews the tokens (a refresh, else an authorization in the browser)
    /// and sends it once more. When nothing can be renewed the `401` is
    /// returned as it came.
    pub(crate) async fn send(
        &self,
        http: &Http,
        mut request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, HttpError> {
        let mut again = copy(&request);
        let generation = self.add_bearer(&mut request).await;
        let response = http.send(request).await?;
        if response.status() != StatusCode::UNAUTHORIZED {
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
        match self.renew(generation, &challenge).await {
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
        let expiring = state.record.tokens.as_ref().is_some_and(|tokens| {
            tokens.refresh_token.is_some()
                && tokens
                    .expires_at
                    .is_some_and(|at| at <= now() + REFRESH_EARLY_SECS)
        });
        if expiring && let Err(why) = self.refresh(&mut state).await {
            self.sink.line(&format!("OAuth: {why}"));
        }
        if let Some(tokens) = &state.record.tokens
            && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", tokens.access_token))
        {
            value.set_sensitive(true);
            request.headers_mut().insert(AUTHORIZATION, value);
        }
        state.generation
    }

    /// After a `401` for a request sent with generation `sent`: true when
    /// there are new tokens to retry with.
    async fn renew(&self, sent: u64, challenge: &Challenge) -> Result<bool, String> {
        let mut state = self.state.lock().await;
        if state.generation != sent {
            // Renewed while this request was out.
            return Ok(true);
        }
        if self.mode == OAuthMode::OnChallenge
            && state.record.tokens.is_none()
            && challenge.resource_metadata.is_none()
        {
            return Ok(false);
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
        self.authorize(&mut state, challenge).await?;
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
        let mut tokens = granted.into_tokens(endpoint, resource);
        tokens.refresh_token = tokens.refresh_token.or(Some(refresh_token));
        self.keep(state, tokens);
        Ok(())
    }

    /// The whole authorization: discovery, a client, the browser, the code
    /// exchange.
    async fn authorize(&self, state: &mut State, challenge: &Challenge) -> Result<(), String> {
        let resource_metadata = self.resource_metadata(challenge).await?;
        let issuer = match resource_metadata
            .as_ref()
            .and_then(|m| m.authorization_servers.first())
        {
            Some(issuer) => Url::parse(issuer)
                .map_err(|_| "the resource metadata names no usable authorization server")?,
            // Servers of the 2025-03-26 revision are their own.
            None => self.server.clone(),
        };
        let metadata = self.server_metadata(&issuer).await?;
        let methods = &metadata.code_challenge_methods_supported;
        if !methods.is_empty() && !methods.iter().any(|m| m == "S256") {
            return Err(format!(
                "the authorization server {} does not support PKCE with S256",
                show(&issuer)
            ));
        }
        let resource = discovery::resource_for(&self.server, resource_metadata.as_ref());
        let scope = challenge.scope.clone().or_else(|| {
            resource_metadata
                .as_ref()
                .filter(|m| !m.scopes_supported.is_empty())
                .map(|m| m.scopes_supported.join(" "))
        });

        let callback = self.bind_callback(&state.record).await?;
        let redirect_uri = callback.redirect_uri().map_err(|e| e.to_string())?;
        let client = match &state.record.client {
            Some(client)
                if client.token_endpoint == metadata.token_endpoint
                    && client.redirect_uris.contains(&redirect_uri) =>
            {
                client.clone()
            }
            _ => {
                let client = self.register(&metadata, &redirect_uri).await?;
                state.record.client = Some(client.clone());
                state.record.tokens = None;
                self.save(&state.record);
                client
            }
        };

        let verifier = random_text(32);
        let code_challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let csrf = random_text(16);
        let mut url = Url::parse(&metadata.authorization_endpoint)
            .map_err(|_| "the authorization endpoint is not a URL")?;
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
        let code = match callback.wait(&csrf, AUTHORIZE_WITHIN).await? {
            Returned::Code(code) => code,
            Returned::Refused(why) => return Err(format!("the authorization was refused: {why}")),
        };
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
            granted.into_tokens(metadata.token_endpoint.clone(), resource),
        );
        self.sink.line(&format!(
            "OAuth: authorized for {}; tokens stored in {}",
            show(&self.server),
            self.store.dir().display()
        ));
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

    /// The callback on `--oauth-port`, else on the port the stored client
    /// was registered with if it is free, else on any port.
    async fn bind_callback(&self, record: &Record) -> Result<Callback, String> {
        if let Some(port) = self.port {
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

    /// RFC 8414 (or OpenID Connect) metadata of `issuer`, else the
    /// conventional endpoints on its origin.
    async fn server_metadata(&self, issuer: &Url) -> Result<ServerMetadata, String> {
        for url in discovery::authorization_server_metadata_urls(issuer) {
            if let Some(metadata) = self.get_json(&url).await? {
                return Ok(metadata);
            }
        }
        Ok(ServerMetadata::by_convention(issuer))
    }

    /// Dynamic client registration (RFC 7591): a public client with PKCE.
    async fn register(
        &self,
        metadata: &ServerMetadata,
        redirect_uri: &str,
    ) -> Result<Client, String> {
        let Some(endpoint) = &metadata.registration_endpoint else {
            return Err(
                "the authorization server offers no dynamic client registration, and no client is stored"
                    .into(),
            );
        };
        let body = serde_json::json!({
            "client_name": "drainpipe",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        });
        #[derive(Deserialize)]
        struct Registered {
            client_id: String,
            client_secret: Option<String>,
        }
        let registered: Registered = self
            .post(endpoint, "application/json", body.to_string())
            .await
            .map_err(|why| format!("registering a client: {why}"))?;
        Ok(Client {
            client_id: registered.client_id,
            client_secret: registered.client_secret,
            redirect_uris: vec![redirect_uri.to_string()],
            token_endpoint: metadata.token_endpoint.clone(),
        })
    }

    /// A token request (RFC 6749 §4.1.3, §6) as `client` (its secret, if
    /// it has one, in the body).
    async fn token_request(
        &self,
        endpoint: &str,
        client: &Client,
        form: &[(&str, &str)],
    ) -> Result<Granted, String> {
        // Built before any await: the serializer is not `Send`.
        let body = {
            let mut body = url::form_urlencoded::Serializer::new(String::new());
            body.extend_pairs(form.iter().copied());
            body.append_pair("client_id", &client.client_id);
            if let Some(secret) = &client.client_secret {
                body.append_pair("client_secret", secret);
            }
            body.finish()
        };
        let granted: Granted = self
            .post(endpoint, "application/x-www-form-urlencoded", body)
            .await?;
        if !granted.token_type.eq_ignore_ascii_case("bearer") {
            return Err(format!(
                "a {:?} token, not a bearer token",
                granted.token_type
            ));
        }
        Ok(granted)
    }

    /// POSTs `body` and reads a JSON answer. An error says the status and
    /// the server's `error` and `error_description`, never the body.
    async fn post<T: DeserializeOwned>(
        &self,
        endpoint: &str,
        content_type: &'static str,
        body: String,
    ) -> Result<T, String> {
        let uri: Uri = endpoint
            .parse()
            .map_err(|_| "an endpoint that is not a URL".to_string())?;
        let request = Request::builder()
            .method(Method::POST)
            .uri(uri.clone())
            .header(CONTENT_TYPE, content_type)
            .header(ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|_| "an endpoint that is not a URL".to_string())?;
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
}

impl Granted {
    fn into_tokens(self, token_endpoint: String, resource: String) -> Tokens {
        Tokens {
            access_token: self.access_token,
            refresh_token: self.refresh_token,
            expires_at: self.expires_in.map(|secs| now() + secs),
            token_endpoint,
            resource,
        }
    }
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
mod tests {
    use super::*;

    #[test]
    fn pkce_verifiers_are_43_url_safe_characters() {
        let verifier = random_text(32);
        assert_eq!(verifier.len(), 43);
        assert!(
            verifier
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_ne!(verifier, random_text(32));
        // RFC 7636 appendix B.
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(
            b"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
        ));
        assert_eq!(challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    }

    /// What the fake server saw of one request.
    #[derive(Debug, PartialEq, Eq)]
    struct Seen {
        path: String,
        bearer: Option<String>,
        body: String,
    }

    /// An MCP endpoint (`/mcp`) that takes only `Bearer new`, and a token
    /// endpoint (`/token`) that trades refresh token `r1` for `new` and
    /// `r2`: HTTP/1.1, one request per connection.
    async fn fake_server() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Seen>>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut data = Vec::new();
                let mut chunk = [0u8; 4096];
                let (head, body) = loop {
                    let n = stream.read(&mut chunk).await.unwrap();
                    data.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&data).to_string();
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let length = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap())
                            })
                            .unwrap_or(0);
                        if body.len() >= length || n == 0 {
                            break (head.to_string(), body.to_string());
                        }
                    }
                };
                let path = head.split_whitespace().nth(1).unwrap().to_string();
                let bearer = head.lines().find_map(|l| {
                    l.to_ascii_lowercase()
                        .starts_with("authorization:")
                        .then(|| {
                            l["authorization:".len()..]
                                .trim()
                                .trim_start_matches("Bearer ")
                                .to_string()
                        })
                });
                let (status, answer) = match path.as_str() {
                    "/token" if body.contains("refresh_token=r1") => (
                        "200 OK",
                        r#"{"access_token":"new","token_type":"Bearer","expires_in":3600,"refresh_token":"r2"}"#,
                    ),
                    "/token" => ("400 Bad Request", r#"{"error":"invalid_grant"}"#),
                    "/mcp" if bearer.as_deref() == Some("new") => ("200 OK", "{}"),
                    _ => ("401 Unauthorized", ""),
                };
                log.lock().unwrap().push(Seen { path, bearer, body });
                let response = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nwww-authenticate: Bearer\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
                stream.write_all(response.as_bytes()).await.unwrap();
            }
        });
        (base, seen)
    }

    /// A token source for `base/mcp` whose store holds a client and the
    /// access token `old` (expiring at `expires_at`) with refresh token
    /// `r1`.
    fn source(base: &str, dir: &std::path::Path, expires_at: u64) -> TokenSource {
        let server = format!("{base}/mcp");
        let store = Store::new(Some(dir.to_path_buf())).unwrap();
        let mut record = store.load(&server);
        record.client = Some(Client {
            client_id: "c".into(),
            client_secret: None,
            redirect_uris: vec!["http://127.0.0.1:1/callback".into()],
            token_endpoint: format!("{base}/token"),
        });
        record.tokens = Some(Tokens {
            access_token: "old".into(),
            refresh_token: Some("r1".into()),
            expires_at: Some(expires_at),
            token_endpoint: format!("{base}/token"),
            resource: server.clone(),
        });
        store.save(&record).unwrap();
        let config = OAuthConfig {
            mode: OAuthMode::Always,
            dir: Some(dir.to_path_buf()),
            port: None,
        };
        let http = Http::new(&[], Duration::from_secs(5)).unwrap();
        let (sink, _closer) = StderrSink::start(io::sink(), 1 << 16);
        TokenSource::for_config(
            &config,
            &server.parse().unwrap(),
            &http,
            sink,
            Duration::from_secs(5),
        )
        .unwrap()
        .unwrap()
    }

    fn post(base: &str) -> Request<Full<Bytes>> {
        Request::post(format!("{base}/mcp"))
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap()
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("drainpipe-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[tokio::test]
    async fn a_401_refreshes_the_token_and_retries_once() {
        let (base, seen) = fake_server().await;
        let dir = temp_dir("oauth-401");
        let source = source(&base, &dir, now() + 3600);
        let http = Http::new(&[], Duration::from_secs(5)).unwrap();
        let response = source.send(&http, post(&base)).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let seen = seen.lock().unwrap();
        let paths: Vec<(&str, Option<&str>)> = seen
            .iter()
            .map(|s| (s.path.as_str(), s.bearer.as_deref()))
            .collect();
        assert_eq!(
            paths,
            [
                ("/mcp", Some("old")),
                ("/token", None),
                ("/mcp", Some("new"))
            ]
        );
        assert!(seen[1].body.contains("grant_type=refresh_token"));
        assert!(seen[1].body.contains("resource=http"));
        let stored = Store::new(Some(dir.clone()))
            .unwrap()
            .load(&format!("{base}/mcp"));
        let tokens = stored.tokens.unwrap();
        assert_eq!(tokens.access_token, "new");
        assert_eq!(tokens.refresh_token.as_deref(), Some("r2"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn an_expired_token_is_refreshed_before_it_is_sent() {
        let (base, seen) = fake_server().await;
        let dir = temp_dir("oauth-expired");
        let source = source(&base, &dir, 1);
        let http = Http::new(&[], Duration::from_secs(5)).unwrap();
        let response = source.send(&http, post(&base)).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let paths: Vec<String> = seen
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.path.clone())
            .collect();
        assert_eq!(paths, ["/token", "/mcp"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
