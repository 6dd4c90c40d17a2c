//! The checks the OAuth specifications make a MUST for a client, one
//! function each, named for what it protects and citing its section. Each
//! returns why it refused, as the user reads it; the flow stops there and
//! sends nothing more to the party that failed the check.
//!
//! Pure functions over strings and URLs: every one is tested here without a
//! network, and the conformance suite (`tests/conformance`) runs the flow
//! that calls them against servers that break each rule.

use url::Url;

/// RFC 9728 §3.3: the protected resource metadata's `resource` must be the
/// server the client is talking to. Metadata naming another resource (a
/// server that points the client at someone else's authorization server)
/// is not used at all: the tokens it would lead to are for another
/// audience, or the metadata is an attacker's.
///
/// "The server" is its URL's origin, and a prefix of its path on a
/// segment boundary (`https://a.example/` covers `https://a.example/mcp`;
/// `https://a.example/mc` does not). A document without `resource` is
/// taken to be about the server (`resource` is required, but older servers
/// leave it out); the server's URL is then the resource.
pub(crate) fn resource_matches_server(server: &Url, resource: Option<&str>) -> Result<(), String> {
    let Some(resource) = resource else {
        return Ok(());
    };
    let named = Url::parse(resource).map_err(|_| {
        format!("the protected resource metadata names a resource that is not a URL ({resource:?})")
    })?;
    let path = named.path().trim_end_matches('/');
    let covers = named.origin() == server.origin()
        && (server.path() == path
            || server.path().trim_end_matches('/') == path
            || server.path().starts_with(&format!("{path}/")));
    if covers {
        Ok(())
    } else {
        Err(format!(
            "the protected resource metadata is for {}, not for {} (RFC 9728 §3.3): not authorizing",
            origin_and_path(&named),
            origin_and_path(server)
        ))
    }
}

/// RFC 8414 §3.3 (and OpenID Connect Discovery §4.3): the `issuer` in an
/// authorization server's metadata must be identical to the issuer whose
/// well-known URL it was read from. Otherwise the document may be another
/// server's, and its endpoints would receive the user's code and the
/// client's secret (a mix-up). Compared as strings, as the RFC says: no
/// normalisation.
pub(crate) fn issuer_matches_metadata(
    expected: &str,
    metadata_issuer: Option<&str>,
) -> Result<(), String> {
    match metadata_issuer {
        Some(issuer) if issuer == expected => Ok(()),
        Some(issuer) => Err(format!(
            "the authorization server metadata says its issuer is {issuer:?}, but it was looked up for {expected:?} (RFC 8414 §3.3): not using it"
        )),
        None => Err(format!(
            "the authorization server metadata for {expected:?} names no issuer (RFC 8414 §3.3): not using it"
        )),
    }
}

/// RFC 9207 §2.4: the authorization response's `iss` must be the issuer the
/// request was sent to, compared as strings. It must be there when the
/// server advertises `authorization_response_iss_parameter_supported`; when
/// it is there unadvertised it is still compared. An answer that fails is
/// dropped before its code is exchanged: the code may come from another
/// authorization server the user also uses (a mix-up attack), and
/// exchanging it would send it, and the verifier, to the wrong one.
pub(crate) fn iss_matches_issuer(
    advertised: bool,
    issuer: Option<&str>,
    iss: Option<&str>,
) -> Result<(), String> {
    match (iss, issuer) {
        (Some(iss), Some(issuer)) if iss == issuer => Ok(()),
        (Some(iss), Some(issuer)) => Err(format!(
            "the authorization response came from issuer {iss:?}, not {issuer:?} (RFC 9207 §2.4): its code is not used"
        )),
        // No recorded issuer (an authorization server without metadata):
        // nothing to compare with.
        (Some(_), None) => Ok(()),
        (None, _) if advertised => Err(
            "the authorization server promises an iss parameter, and the authorization response has none (RFC 9207 §2.4): its code is not used"
                .into(),
        ),
        (None, _) => Ok(()),
    }
}

/// OAuth 2.1 §7.5.2 and the MCP authorization specification (2025-11-25):
/// PKCE with `S256`, and no authorization at all with a server whose
/// metadata does not list it. Without PKCE a code intercepted on its way
/// back to the loopback callback could be redeemed by whoever took it.
pub(crate) fn pkce_s256_supported(methods: Option<&[String]>) -> Result<(), String> {
    match methods {
        Some(methods) if methods.iter().any(|m| m == "S256") => Ok(()),
        Some(_) => Err(
            "the authorization server does not support PKCE with S256 (code_challenge_methods_supported): not authorizing"
                .into(),
        ),
        None => Err(
            "the authorization server's metadata does not say it supports PKCE (no code_challenge_methods_supported): not authorizing"
                .into(),
        ),
    }
}

/// OAuth 2.1 §1.5 and the MCP authorization specification: every
/// authorization server endpoint is served over HTTPS. Plain `http://` is
/// taken only on loopback (a development server on this machine), where
/// nobody on the network can read the codes, secrets and tokens it
/// carries.
pub(crate) fn endpoint_is_secure(what: &str, endpoint: &str) -> Result<Url, String> {
    let url = Url::parse(endpoint).map_err(|_| format!("the {what} is not a URL"))?;
    match url.scheme() {
        "https" => Ok(url),
        "http" if is_loopback(&url) => Ok(url),
        _ => Err(format!(
            "the {what} {} is not https:// (only loopback may use http://): not sending anything there",
            origin_and_path(&url)
        )),
    }
}

/// RFC 6750 §5.3 and the MCP authorization specification ("token
/// audience binding"): a bearer token goes only to the server it was issued
/// for. A request to any other origin (an older transport's endpoint on
/// another host, a redirect) is sent without it.
pub(crate) fn bearer_may_go_to(server: &Url, target: &Url) -> bool {
    server.origin() == target.origin()
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// A URL as it may be shown: no user info, query or fragment.
fn origin_and_path(url: &Url) -> String {
    format!("{}{}", url.origin().ascii_serialization(), url.path())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn the_resource_must_be_the_server() {
        let server = url("http://localhost:3000/mcp");
        let table: &[(Option<&str>, bool)] = &[
            (None, true),
            (Some("http://localhost:3000/mcp"), true),
            (Some("http://localhost:3000/mcp/"), true),
            (Some("http://localhost:3000/"), true),
            (Some("http://localhost:3000"), true),
            (Some("https://evil.example.com/mcp"), false),
            (Some("http://localhost:3001/mcp"), false),
            (Some("https://localhost:3000/mcp"), false),
            (Some("http://localhost:3000/mc"), false),
            (Some("http://localhost:3000/other"), false),
            (Some("not a url"), false),
        ];
        for (resource, ok) in table {
            assert_eq!(
                resource_matches_server(&server, *resource).is_ok(),
                *ok,
                "{resource:?}"
            );
        }
    }

    #[test]
    fn the_metadata_issuer_must_be_identical() {
        let issuer = "http://localhost:3001";
        assert!(issuer_matches_metadata(issuer, Some("http://localhost:3001")).is_ok());
        for wrong in [
            Some("https://attacker.example.com"),
            Some("http://localhost:3001/"),
            Some("HTTP://localhost:3001"),
            None,
        ] {
            assert!(issuer_matches_metadata(issuer, wrong).is_err(), "{wrong:?}");
        }
    }

    #[test]
    fn iss_is_checked_as_rfc_9207_says() {
        let issuer = Some("http://localhost:3001");
        // (advertised, iss, accepted)
        let table: &[(bool, Option<&str>, bool)] = &[
            (true, Some("http://localhost:3001"), true),
            (true, None, false),
            (true, Some("https://evil.example.com"), false),
            (true, Some("http://localhost:3001/"), false),
            (false, None, true),
            (false, Some("http://localhost:3001"), true),
            (false, Some("https://evil.example.com"), false),
        ];
        for (advertised, iss, ok) in table {
            assert_eq!(
                iss_matches_issuer(*advertised, issuer, *iss).is_ok(),
                *ok,
                "{advertised} {iss:?}"
            );
        }
        assert!(iss_matches_issuer(false, None, Some("http://x")).is_ok());
    }

    #[test]
    fn pkce_needs_s256_listed() {
        let s256 = vec!["plain".to_string(), "S256".to_string()];
        assert!(pkce_s256_supported(Some(&s256)).is_ok());
        assert!(pkce_s256_supported(Some(&["plain".to_string()])).is_err());
        assert!(pkce_s256_supported(Some(&[])).is_err());
        assert!(pkce_s256_supported(None).is_err());
    }

    #[test]
    fn endpoints_are_https_or_loopback() {
        for ok in [
            "https://auth.example/token",
            "http://127.0.0.1:9/token",
            "http://localhost:9/token",
            "http://[::1]:9/token",
        ] {
            assert!(endpoint_is_secure("token endpoint", ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://auth.example/token",
            "http://10.0.0.1/token",
            "ftp://auth.example/token",
            "token",
        ] {
            assert!(endpoint_is_secure("token endpoint", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bearers_stay_on_their_origin() {
        let server = url("https://mcp.example/mcp");
        assert!(bearer_may_go_to(
            &server,
            &url("https://mcp.example/messages?s=1")
        ));
        assert!(!bearer_may_go_to(
            &server,
            &url("https://other.example/mcp")
        ));
        assert!(!bearer_may_go_to(&server, &url("http://mcp.example/mcp")));
        assert!(!bearer_may_go_to(
            &server,
            &url("https://mcp.example:8443/mcp")
        ));
    }
}
