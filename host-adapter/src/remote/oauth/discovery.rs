//! Finding where to authorize: the server's `WWW-Authenticate` challenge,
//! its protected resource metadata (RFC 9728) and its authorization
//! server's metadata (RFC 8414, or OpenID Connect Discovery), in the order
//! the MCP authorization specification gives. Pure functions over URLs and
//! JSON, so the order is tested without a network.

use serde::Deserialize;
use url::Url;

/// What a `401`'s `WWW-Authenticate: Bearer …` says.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// The challenge is for a bearer token (the scheme is `Bearer`).
    pub(crate) bearer: bool,
    /// `resource_metadata`: where the protected resource metadata is.
    pub(crate) resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs.
    pub(crate) scope: Option<String>,
    /// `error`: why the token was refused (`insufficient_scope` on a `403`
    /// asks for a token with more scopes).
    pub(crate) error: Option<String>,
}

/// Reads the `Bearer` challenge of a `WWW-Authenticate` value (RFC 9110
/// §11.6.1: a scheme, then `name=value` or `name="quoted"` pairs separated
/// by commas; other schemes may follow, each starting a new challenge).
pub(crate) fn parse_challenge(value: &str) -> Challenge {
    let mut challenge = Challenge::default();
    let mut rest = value.trim();
    let mut in_bearer = false;
    while !rest.is_empty() {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        // A token: a scheme, or a parameter's name.
        let end = rest
            .find(|c: char| c == '=' || c == ',' || c.is_whitespace())
            .unwrap_or(rest.len());
        let token = &rest[..end];
        rest = rest[end..].trim_start();
        if let Some(after) = rest.strip_prefix('=') {
            // `name=value`: the value is a token or a quoted string.
            let after = after.trim_start();
            let (value, left) = if let Some(quoted) = after.strip_prefix('"') {
                let mut value = String::new();
                let mut chars = quoted.char_indices();
                let mut end = quoted.len();
                while let Some((at, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, escaped)) = chars.next() {
                                value.push(escaped);
                            }
                        }
                        '"' => {
                            end = at + 1;
                            break;
                        }
                        c => value.push(c),
                    }
                }
                (value, &quoted[end.min(quoted.len())..])
            } else {
                let end = after.find(',').unwrap_or(after.len());
                (after[..end].trim().to_string(), &after[end..])
            };
            rest = left;
            if in_bearer {
                match token.to_ascii_lowercase().as_str() {
                    "resource_metadata" => challenge.resource_metadata = Some(value),
                    "scope" => challenge.scope = Some(value),
                    "error" => challenge.error = Some(value),
                    _ => {}
                }
            }
        } else if !token.is_empty() {
            // A scheme starts a new challenge.
            in_bearer = token.eq_ignore_ascii_case("bearer");
            challenge.bearer |= in_bearer;
        } else {
            break;
        }
    }
    challenge
}

/// Where to look for the protected resource metadata of `server` when the
/// challenge names none: the path-aware well-known URL first, then the
/// origin's (RFC 9728 §3.1).
pub(crate) fn resource_metadata_urls(server: &Url) -> Vec<Url> {
    let path = server.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(at(
            server,
            &format!("/.well-known/oauth-protected-resource{path}"),
        ));
    }
    urls.push(at(server, "/.well-known/oauth-protected-resource"));
    urls
}

/// Where to look for the metadata of the authorization server `issuer`,
/// in order: RFC 8414 with the issuer's path inserted after the well-known
/// prefix, OpenID Connect likewise, then OpenID Connect with the path
/// first (the order of the MCP authorization specification).
pub(crate) fn authorization_server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        return vec![
            at(issuer, "/.well-known/oauth-authorization-server"),
            at(issuer, "/.well-known/openid-configuration"),
        ];
    }
    vec![
        at(
            issuer,
            &format!("/.well-known/oauth-authorization-server{path}"),
        ),
        at(issuer, &format!("/.well-known/openid-configuration{path}")),
        at(issuer, &format!("{path}/.well-known/openid-configuration")),
    ]
}

/// `path` on `base`'s origin, with no query or fragment.
fn at(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    url.set_path(path);
    url.set_query(None);
    url.set_fragment(None);
    url
}

/// RFC 9728 protected resource metadata: the fields used.
#[derive(Debug, Deserialize)]
pub(crate) struct ResourceMetadata {
    /// The resource's identifier, sent as RFC 8707's `resource`.
    pub(crate) resource: Option<String>,
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    #[serde(default)]
    pub(crate) scopes_supported: Vec<String>,
}

/// RFC 8414 authorization server metadata: the fields used.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub(crate) struct ServerMetadata {
    /// Checked against the issuer it was looked up for (RFC 8414 §3.3).
    pub(crate) issuer: Option<String>,
    pub(crate) authorization_endpoint: String,
    pub(crate) token_endpoint: String,
    pub(crate) registration_endpoint: Option<String>,
    /// `None` when the metadata does not say: then there is no PKCE.
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    /// How clients may authenticate at the token endpoint; `None`: only
    /// `client_secret_basic` (RFC 8414 §2).
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: bool,
    /// The server takes a URL as client id and reads the client's metadata
    /// there (OAuth Client ID Metadata Documents).
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: bool,
    #[serde(default)]
    pub(crate) scopes_supported: Vec<String>,
    pub(crate) grant_types_supported: Option<Vec<String>>,
}

impl ServerMetadata {
    /// The endpoints an authorization server without metadata has by
    /// convention (the MCP 2025-03-26 revision's fallback): `/authorize`,
    /// `/token` and `/register` on its origin, with PKCE as that revision
    /// requires of every server.
    pub(crate) fn by_convention(origin: &Url) -> ServerMetadata {
        ServerMetadata {
            authorization_endpoint: at(origin, "/authorize").to_string(),
            token_endpoint: at(origin, "/token").to_string(),
            registration_endpoint: Some(at(origin, "/register").to_string()),
            code_challenge_methods_supported: Some(vec!["S256".into()]),
            ..ServerMetadata::default()
        }
    }

    /// Whether the server hands out refresh tokens (`grant_types_supported`
    /// lists `refresh_token`, or says nothing).
    pub(crate) fn refreshes(&self) -> bool {
        self.grant_types_supported
            .as_ref()
            .is_none_or(|grants| grants.iter().any(|g| g == "refresh_token"))
    }
}

/// The issuer of a server of the 2025-03-26 revision, which has no
/// protected resource metadata: its own origin (`https://host:port`, no
/// path, no trailing slash).
pub(crate) fn origin_issuer(server: &Url) -> String {
    server.origin().ascii_serialization()
}

/// The `resource` parameter for `server` (RFC 8707): the metadata's own
/// identifier exactly as published (already checked to name this server:
/// a parser's normalisation, such as a `/` after a bare origin, would make
/// it another string the authorization server may not know), else the
/// server's URL without its fragment.
pub(crate) fn resource_for(server: &Url, metadata: Option<&ResourceMetadata>) -> String {
    if let Some(resource) = metadata.and_then(|m| m.resource.as_deref()) {
        return resource.to_string();
    }
    let mut url = server.clone();
    url.set_fragment(None);
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_challenges_are_read() {
        let table: &[(&str, bool, Option<&str>, Option<&str>)] = &[
            (
                r#"Bearer resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource/mcp""#,
                true,
                Some("http://localhost:3000/.well-known/oauth-protected-resource/mcp"),
                None,
            ),
            (
                r#"Bearer error="invalid_token", error_description="The access token expired", resource_metadata="https://a.example/m", scope="files:read files:write""#,
                true,
                Some("https://a.example/m"),
                Some("files:read files:write"),
            ),
            (
                "bearer resource_metadata=https://a.example/m,scope=x",
                true,
                Some("https://a.example/m"),
                Some("x"),
            ),
            (
                r#"Basic realm="x", Bearer scope="a\"b""#,
                true,
                None,
                Some("a\"b"),
            ),
            (
                r#"Basic realm="x", resource_metadata="https://not-bearer.example""#,
                false,
                None,
                None,
            ),
            ("Bearer", true, None, None),
            ("", false, None, None),
            (
                r#"Bearer scope="unterminated"#,
                true,
                None,
                Some("unterminated"),
            ),
        ];
        for (value, bearer, metadata, scope) in table {
            let challenge = parse_challenge(value);
            assert_eq!(challenge.bearer, *bearer, "{value}");
            assert_eq!(challenge.resource_metadata.as_deref(), *metadata, "{value}");
            assert_eq!(challenge.scope.as_deref(), *scope, "{value}");
        }
    }

    fn strings(urls: Vec<Url>) -> Vec<String> {
        urls.into_iter().map(|u| u.to_string()).collect()
    }

    #[test]
    fn protected_resource_metadata_is_looked_for_path_aware_first() {
        let server = Url::parse("https://api.example/v1/mcp?x=1").unwrap();
        assert_eq!(
            strings(resource_metadata_urls(&server)),
            [
                "https://api.example/.well-known/oauth-protected-resource/v1/mcp",
                "https://api.example/.well-known/oauth-protected-resource",
            ]
        );
        let root = Url::parse("http://127.0.0.1:3000/").unwrap();
        assert_eq!(
            strings(resource_metadata_urls(&root)),
            ["http://127.0.0.1:3000/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn authorization_server_metadata_is_looked_for_in_the_specifications_order() {
        let plain = Url::parse("http://localhost:3001/").unwrap();
        assert_eq!(
            strings(authorization_server_metadata_urls(&plain)),
            [
                "http://localhost:3001/.well-known/oauth-authorization-server",
                "http://localhost:3001/.well-known/openid-configuration",
            ]
        );
        let tenant = Url::parse("https://auth.example/tenant1").unwrap();
        assert_eq!(
            strings(authorization_server_metadata_urls(&tenant)),
            [
                "https://auth.example/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example/.well-known/openid-configuration/tenant1",
                "https://auth.example/tenant1/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn the_resource_parameter_names_this_server() {
        let server = Url::parse("http://localhost:3000/mcp#frag").unwrap();
        let metadata = |resource: &str| ResourceMetadata {
            resource: Some(resource.into()),
            authorization_servers: vec![],
            scopes_supported: vec![],
        };
        assert_eq!(resource_for(&server, None), "http://localhost:3000/mcp");
        assert_eq!(
            resource_for(&server, Some(&metadata("http://localhost:3000/"))),
            "http://localhost:3000/"
        );
        assert_eq!(
            resource_for(&server, Some(&metadata("http://localhost:3000"))),
            "http://localhost:3000"
        );
        assert_eq!(
            origin_issuer(&Url::parse("https://mcp.example:8443/v1/mcp").unwrap()),
            "https://mcp.example:8443"
        );
    }

    #[test]
    fn metadata_documents_parse_with_only_the_fields_used() {
        let resource: ResourceMetadata = serde_json::from_str(
            r#"{"resource":"http://localhost:3000/mcp","authorization_servers":["http://localhost:3001/"],"scopes_supported":["mcp:tools"],"resource_name":"MCP Demo Server"}"#,
        )
        .unwrap();
        assert_eq!(resource.authorization_servers, ["http://localhost:3001/"]);
        let server: ServerMetadata = serde_json::from_str(
            r#"{"issuer":"http://localhost:3001/","authorization_endpoint":"http://localhost:3001/authorize","token_endpoint":"http://localhost:3001/token","registration_endpoint":"http://localhost:3001/register","response_types_supported":["code"],"code_challenge_methods_supported":["S256"]}"#,
        )
        .unwrap();
        assert_eq!(server.token_endpoint, "http://localhost:3001/token");
        let origin = Url::parse("https://mcp.example/mcp").unwrap();
        assert_eq!(
            ServerMetadata::by_convention(&origin).authorization_endpoint,
            "https://mcp.example/authorize"
        );
    }
}
