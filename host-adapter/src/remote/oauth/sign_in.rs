//! Signing in: discovery with its checks, the client to authorize as,
//! the browser and its way back, the code exchanged for tokens. The
//! stages, in order, are the diagram in `mod.rs`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use url::Url;

use super::callback::{self, Callback, Returned};
use super::discovery::{self, Challenge, ResourceMetadata, ServerMetadata};
use super::endpoint::auth_method;
use super::store::{Client, Record};
use super::{
    AUTHORIZE_WITHIN, OAuthGrant, PreRegisteredClient, State, TokenSource, checks, random_text,
    scope_union, show,
};

/// What discovery found, every document checked.
struct Found {
    resource_metadata: Option<ResourceMetadata>,
    /// The authorization server's issuer; `None` for a 2025-03-26 server
    /// without metadata.
    issuer: Option<String>,
    metadata: ServerMetadata,
}

/// The client registered beforehand, as the authorization server of
/// `metadata` (`issuer`) takes it: authenticating as its metadata lists.
fn pre_registered(
    given: &PreRegisteredClient,
    issuer: Option<&str>,
    metadata: &ServerMetadata,
    redirect_uris: Vec<String>,
) -> Client {
    Client {
        client_id: given.id.clone(),
        client_secret: given.secret.clone(),
        redirect_uris,
        token_endpoint: metadata.token_endpoint.clone(),
        issuer: issuer.map(str::to_string),
        auth_method: Some(auth_method(metadata, given.secret.is_some()).to_string()),
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

impl TokenSource {
    /// The whole authorization: discovery and its checks, a client, the
    /// browser, the code exchange. `scope`: the scopes of a step-up.
    pub(super) async fn authorize(
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
        if self.config.grant == OAuthGrant::ClientCredentials {
            return self
                .client_credentials(state, issuer.as_deref(), metadata, resource, scope)
                .await;
        }

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
        // PKCE protects the authorization code; the client credentials grant
        // has none.
        if self.config.grant == OAuthGrant::AuthorizationCode {
            checks::pkce_s256_supported(metadata.code_challenge_methods_supported.as_deref())?;
        }
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
            let client = pre_registered(given, issuer, metadata, vec![redirect_uri.to_string()]);
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

    /// The client credentials grant (OAuth 2.1 §4.2; the MCP extension
    /// `io.modelcontextprotocol/oauth-client-credentials`): a program
    /// signing in as itself, with the pre-registered client's secret and no
    /// browser. Asked again whenever the token is refused, as there is no
    /// refresh token.
    async fn client_credentials(
        &self,
        state: &mut State,
        issuer: Option<&str>,
        metadata: &ServerMetadata,
        resource: String,
        scope: Option<String>,
    ) -> Result<(), String> {
        let Some(given) = &self.config.client else {
            return Err(
                "the client credentials grant needs --oauth-client-id and --oauth-client-secret"
                    .into(),
            );
        };
        let client = pre_registered(given, issuer, metadata, Vec::new());
        let mut form = vec![
            ("grant_type", "client_credentials"),
            ("resource", resource.as_str()),
        ];
        if let Some(scope) = &scope {
            form.push(("scope", scope));
        }
        let granted = self
            .token_request(&metadata.token_endpoint, &client, &form)
            .await
            .map_err(|why| format!("the client credentials grant: {why}"))?;
        state.record.client = Some(client);
        self.keep(
            state,
            granted.into_tokens(metadata.token_endpoint.clone(), resource, scope),
        );
        self.sink.line(&format!(
            "OAuth: signed in to {} as client {} (client credentials)",
            show(&self.server),
            given.id
        ));
        Ok(())
    }
}
