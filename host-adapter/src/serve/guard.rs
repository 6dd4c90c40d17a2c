//! Who may call `serve`: the checks made on every request before anything
//! of it is read.
//!
//! - `Host`: a browser on a page of `evil.example` whose name was made to
//!   resolve to 127.0.0.1 sends `Host: evil.example` (DNS rebinding); a
//!   server on loopback that answered it would hand the page every tool.
//!   The names accepted are an allow-list, loopback's by default.
//! - `Origin`: sent by browsers only; when present its host must be one of
//!   the accepted names (or a listed origin), so a page elsewhere cannot
//!   drive the server through the user's browser.
//! - The bearer token: compared in constant time, never logged.

use hyper::header::{AUTHORIZATION, HOST, HeaderMap, ORIGIN};

/// The checks. `Guard::loopback()` accepts the loopback names only.
#[derive(Clone, Default)]
pub struct Guard {
    /// Host names (no port) a request's `Host` may name; `None` accepts any
    /// (a server beyond loopback, behind a token or a reverse proxy).
    pub hosts: Option<Vec<String>>,
    /// Origins (`https://app.example`) accepted besides those whose host is
    /// in `hosts`.
    pub origins: Vec<String>,
    /// The bearer token every request must carry; `None` for none.
    pub token: Option<String>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("hosts", &self.hosts)
            .field("origins", &self.origins)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Why a request was refused: its status and a message safe to send back.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// 403: the `Host` is not one of ours.
    Host,
    /// 403: the `Origin` is not one of ours.
    Origin,
    /// 401: no token, or the wrong one.
    Token,
}

impl Refusal {
    pub(crate) fn status(&self) -> u16 {
        match self {
            Refusal::Host | Refusal::Origin => 403,
            Refusal::Token => 401,
        }
    }

    pub(crate) fn message(&self) -> &'static str {
        match self {
            Refusal::Host => "Forbidden: the Host header names a host this server does not serve",
            Refusal::Origin => "Forbidden: requests from this Origin are not accepted",
            Refusal::Token => "Unauthorized: a valid bearer token is required",
        }
    }
}

/// The names of this machine's loopback interface.
pub(crate) const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl Guard {
    /// Accepts `localhost`, `127.0.0.1` and `[::1]` (any port), no token.
    pub fn loopback() -> Self {
        Guard {
            hosts: Some(LOOPBACK_NAMES.iter().map(|s| s.to_string()).collect()),
            origins: Vec::new(),
            token: None,
        }
    }

    /// Checks a request's host (its `Host` header; over HTTP/2 the
    /// `:authority` the URI carries), then its Origin, then the token (so
    /// that a rebinding page learns nothing about the token).
    pub(crate) fn check(
        &self,
        authority: Option<&str>,
        headers: &HeaderMap,
    ) -> Result<(), Refusal> {
        if let Some(hosts) = &self.hosts {
            let host = authority.or_else(|| headers.get(HOST).and_then(|v| v.to_str().ok()));
            if !host.is_some_and(|host| hosts.iter().any(|h| same_host(host, h))) {
                return Err(Refusal::Host);
            }
        }
        if let Some(origin) = headers.get(ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            if !self.origin_allowed(origin) {
                return Err(Refusal::Origin);
            }
        }
        if let Some(token) = &self.token {
            let given = headers
                .get(AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(bearer)
                .unwrap_or("");
            if !constant_time_eq(given.as_bytes(), token.as_bytes()) {
                return Err(Refusal::Token);
            }
        }
        Ok(())
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim_end_matches('/');
        if self
            .origins
            .iter()
            .any(|o| o.trim_end_matches('/').eq_ignore_ascii_case(origin))
        {
            return true;
        }
        // `scheme://host[:port]`: its host must be one we serve.
        let Some((_, authority)) = origin.split_once("://") else {
            return false;
        };
        match &self.hosts {
            Some(hosts) => hosts.iter().any(|h| same_host(authority, h)),
            // Any Host accepted: a browser's Origin still must be listed.
            None => false,
        }
    }
}

/// The token of `Bearer <token>` (the scheme's case ignored).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Whether `authority` (`host[:port]`, `[v6][:port]`) names `host`.
fn same_host(authority: &str, host: &str) -> bool {
    let name = if authority.starts_with('[') {
        match authority.find(']') {
            Some(end) => &authority[..=end],
            None => return false,
        }
    } else {
        match authority.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => authority,
        }
    };
    name.eq_ignore_ascii_case(host)
}

/// Equal bytes, in a time that depends on the lengths only: the token is
/// not guessed one byte at a time from response times.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= usize::from(x ^ y);
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn loopback_names_pass_with_any_port() {
        let guard = Guard::loopback();
        for host in ["localhost", "127.0.0.1:8080", "[::1]:9", "LOCALHOST:1"] {
            assert_eq!(
                guard.check(None, &headers(&[("host", host)])),
                Ok(()),
                "{host}"
            );
        }
    }

    #[test]
    fn a_rebinding_host_or_origin_is_refused() {
        let guard = Guard::loopback();
        let cases = [
            (vec![("host", "evil.example.com")], Refusal::Host),
            (vec![("host", "localhost.evil.example:80")], Refusal::Host),
            (vec![], Refusal::Host),
            (
                vec![
                    ("host", "localhost:8080"),
                    ("origin", "http://evil.example.com"),
                ],
                Refusal::Origin,
            ),
            (
                vec![("host", "localhost:8080"), ("origin", "null")],
                Refusal::Origin,
            ),
        ];
        for (pairs, refusal) in cases {
            assert_eq!(
                guard.check(None, &headers(&pairs)),
                Err(refusal),
                "{pairs:?}"
            );
        }
        let from_loopback = headers(&[
            ("host", "localhost:8080"),
            ("origin", "http://127.0.0.1:6274"),
        ]);
        assert_eq!(guard.check(None, &from_loopback), Ok(()));
    }

    #[test]
    fn listed_origins_pass_and_any_host_still_checks_origin() {
        let guard = Guard {
            hosts: None,
            origins: vec!["https://claude.ai".into()],
            token: None,
        };
        assert_eq!(
            guard.check(None, &headers(&[("host", "mcp.example")])),
            Ok(())
        );
        let listed = headers(&[("host", "mcp.example"), ("origin", "https://claude.ai")]);
        assert_eq!(guard.check(None, &listed), Ok(()));
        let other = headers(&[("host", "mcp.example"), ("origin", "https://x.example")]);
        assert_eq!(guard.check(None, &other), Err(Refusal::Origin));
    }

    #[test]
    fn the_token_must_match_exactly() {
        let guard = Guard {
            token: Some("s3cret".into()),
            ..Guard::loopback()
        };
        let with = |auth: &str| headers(&[("host", "localhost"), ("authorization", auth)]);
        assert_eq!(guard.check(None, &with("Bearer s3cret")), Ok(()));
        assert_eq!(guard.check(None, &with("bearer s3cret")), Ok(()));
        for wrong in [
            "Bearer s3cre",
            "Bearer s3cret2",
            "Basic s3cret",
            "s3cret",
            "Bearer ",
        ] {
            assert_eq!(
                guard.check(None, &with(wrong)),
                Err(Refusal::Token),
                "{wrong}"
            );
        }
        assert_eq!(
            guard.check(None, &headers(&[("host", "localhost")])),
            Err(Refusal::Token)
        );
        assert!(!format!("{guard:?}").contains("s3cret"));
    }

    #[test]
    fn an_http2_authority_is_checked_as_the_host() {
        let guard = Guard::loopback();
        let none = HeaderMap::new();
        assert_eq!(guard.check(Some("localhost:8443"), &none), Ok(()));
        assert_eq!(
            guard.check(Some("evil.example:8443"), &none),
            Err(Refusal::Host)
        );
        // The authority wins over a Host header that disagrees.
        let host = headers(&[("host", "localhost")]);
        assert_eq!(guard.check(Some("evil.example"), &host), Err(Refusal::Host));
    }
}
