//! The authorization server's endpoints as a client calls them: token
//! requests authenticated as the client registered, JSON documents read
//! with a bound, errors that never quote a body (it may hold tokens).

use base64::Engine;
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Uri};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use url::Url;

use super::super::http::{read_body, shown};
use super::discovery::ServerMetadata;
use super::store::{Client, Tokens};
use super::{MAX_DOCUMENT_BYTES, REFRESH_EARLY_SECS, TokenSource, checks, now, show};

/// A token endpoint's answer (RFC 6749 §5.1).
#[derive(Deserialize)]
pub(super) struct Granted {
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
    pub(super) fn into_tokens(
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

/// How a client with (or without) a secret authenticates at the token
/// endpoint of a server with `metadata`: `client_secret_basic` where it is
/// listed or nothing is (RFC 8414 §2's default), else
/// `client_secret_post`; `none` without a secret.
pub(super) fn auth_method(metadata: &ServerMetadata, has_secret: bool) -> &'static str {
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

/// `Authorization: Basic` for a client (RFC 6749 §2.3.1: id and secret
/// form-urlencoded, then joined by a colon and base64-encoded), marked
/// sensitive.
pub(super) fn basic_credentials(id: &str, secret: &str) -> HeaderValue {
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

impl TokenSource {
    /// A token request (RFC 6749 §4.1.3, §6) as `client`, authenticated as
    /// it was registered: its secret in an `Authorization: Basic` header
    /// (`client_secret_basic`), in the body (`client_secret_post`), or not
    /// at all (`none`, a public client).
    pub(super) async fn token_request(
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
    pub(super) async fn post<T: DeserializeOwned>(
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
    pub(super) async fn get_json<T: DeserializeOwned>(
        &self,
        url: &Url,
    ) -> Result<Option<T>, String> {
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
