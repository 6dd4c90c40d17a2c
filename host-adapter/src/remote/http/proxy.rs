//! Which way a request goes: straight to its server, or through the HTTP
//! proxy the environment names. Read once, when the client is made, from
//! the variables curl and Go read:
//!
//! | variable                      | for                                   |
//! |-------------------------------|---------------------------------------|
//! | `https_proxy`, `HTTPS_PROXY`  | https:// servers: a CONNECT tunnel    |
//! | `http_proxy`, `HTTP_PROXY`    | http:// servers: requests in absolute form |
//! | `all_proxy`, `ALL_PROXY`      | either, where its own is not set      |
//! | `no_proxy`, `NO_PROXY`        | servers reached directly              |
//!
//! The lower-case name wins where both are set (curl's order), and an
//! empty value counts as unset. `NO_PROXY` is a comma-separated list of
//! host names (each matching its subdomains too, with or without a leading
//! dot), IP addresses, CIDR ranges, or `*` for every server; hyper-util's
//! `Matcher` applies it and parses the proxy URLs, credentials included.
//!
//! Loopback servers (`localhost`, `*.localhost`, 127.0.0.0/8, `[::1]`) are
//! always reached directly, as Go's client and most MCP clients do (curl
//! does not): a proxy elsewhere cannot reach this machine's loopback, and
//! a company's `HTTPS_PROXY` must not break a server run on the laptop.
//! `DRAINPIPE_PROXY_LOOPBACK=1` sends them through the proxy too, for a
//! debugging proxy on this machine watching a local server.
//!
//! Nothing here does IO: the environment comes in as a lookup function.

use std::ffi::OsString;
use std::fmt;
use std::net::IpAddr;

use hyper::Uri;
use hyper::header::HeaderValue;
use hyper_util::client::proxy::matcher::Matcher;

/// The variable that sends loopback servers through the proxy too (`1`).
pub(crate) const PROXY_LOOPBACK_VAR: &str = "DRAINPIPE_PROXY_LOOPBACK";

/// An HTTP proxy as the environment names it.
#[derive(Clone)]
pub(crate) struct Proxy {
    /// Where to connect (`http://host:port/`), without the credentials.
    pub(crate) uri: Uri,
    /// `Basic …` from the URL's user info, marked sensitive: sent as
    /// `Proxy-Authorization`, never shown.
    pub(crate) authorization: Option<HeaderValue>,
    /// `http://host:port (HTTPS_PROXY)`: how every message names it, so
    /// that a user sees which proxy and which variable, never a password.
    pub(crate) shown: String,
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

/// How a request reaches its server.
#[derive(Clone, Debug)]
pub(crate) enum Route {
    /// A TCP connection to the server itself.
    Direct,
    /// An https:// server: a CONNECT tunnel through the proxy, and TLS to
    /// the server inside it, so the proxy sees only the host and port.
    Tunnel(Proxy),
    /// An http:// server: each request goes to the proxy in absolute form
    /// (`POST http://host/mcp`), with `Proxy-Authorization` on it.
    Forward(Proxy),
    /// The variable for this server's scheme names a proxy drainpipe cannot
    /// use (why, naming the variable): the request fails with that rather
    /// than going around a proxy the user asked for. Only the servers that
    /// would go through it fail, so an `ALL_PROXY=socks5://…` set for other
    /// tools does not stop a server that `HTTPS_PROXY` covers.
    Unusable(String),
}

/// The proxy settings of one client.
pub(crate) struct ProxyRules {
    /// For http:// servers: `http_proxy`, else `all_proxy`.
    http: Option<Result<Proxy, String>>,
    /// For https:// servers: `https_proxy`, else `all_proxy`.
    https: Option<Result<Proxy, String>>,
    /// `NO_PROXY` as hyper-util matches it: a matcher whose proxy is a
    /// stand-in, so a server it does not intercept is one `NO_PROXY` names.
    no_proxy: Matcher,
    /// `DRAINPIPE_PROXY_LOOPBACK=1`.
    through_loopback: bool,
}

impl fmt::Debug for ProxyRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyRules")
            .field("http", &self.http)
            .field("https", &self.https)
            .field("through_loopback", &self.through_loopback)
            .finish_non_exhaustive()
    }
}

impl ProxyRules {
    /// The rules the variables from `lookup` set. Fails only on a value
    /// that is not UTF-8; a proxy URL drainpipe cannot use fails the
    /// requests it would carry ([`Route::Unusable`]). No message holds a
    /// variable's value (a proxy URL may hold a password).
    pub(crate) fn read(lookup: &dyn Fn(&str) -> Option<OsString>) -> Result<ProxyRules, String> {
        let first = |names: &[&'static str]| -> Result<Option<(&'static str, String)>, String> {
            for &name in names {
                if let Some(value) = lookup(name) {
                    let value = value
                        .into_string()
                        .map_err(|_| format!("{name} is not valid UTF-8"))?;
                    if !value.trim().is_empty() {
                        return Ok(Some((name, value.trim().to_string())));
                    }
                }
            }
            Ok(None)
        };
        // Under CGI a request's `Proxy:` header arrives as HTTP_PROXY
        // ("httpoxy"): curl never reads the upper-case name, Go skips it
        // there, and so does this.
        let cgi = lookup("REQUEST_METHOD").is_some();
        let http_names: &[&'static str] = if cgi {
            &["http_proxy"]
        } else {
            &["http_proxy", "HTTP_PROXY"]
        };
        let all = first(&["all_proxy", "ALL_PROXY"])?;
        let http = first(http_names)?.or_else(|| all.clone());
        let https = first(&["https_proxy", "HTTPS_PROXY"])?.or(all);
        let no_proxy = first(&["no_proxy", "NO_PROXY"])?;
        let proxy = |named: Option<(&'static str, String)>| {
            named.map(|(name, value)| proxy_from(name, &value))
        };
        Ok(ProxyRules {
            http: proxy(http),
            https: proxy(https),
            no_proxy: Matcher::builder()
                .all("http://drainpipe.invalid")
                .no(no_proxy.map_or(String::new(), |(_, value)| value))
                .build(),
            through_loopback: lookup(PROXY_LOOPBACK_VAR).is_some_and(|value| value == "1"),
        })
    }

    /// How a request to `server` goes.
    pub(crate) fn route(&self, server: &Uri) -> Route {
        let proxy = match server.scheme_str() {
            Some("https") => &self.https,
            Some("http") => &self.http,
            _ => return Route::Direct,
        };
        let Some(proxy) = proxy else {
            return Route::Direct;
        };
        let Some(host) = server.host() else {
            return Route::Direct;
        };
        if (is_loopback(host) && !self.through_loopback)
            || self.no_proxy.intercept(server).is_none()
        {
            return Route::Direct;
        }
        match (proxy, server.scheme_str()) {
            (Err(why), _) => Route::Unusable(why.clone()),
            (Ok(proxy), Some("https")) => Route::Tunnel(proxy.clone()),
            (Ok(proxy), _) => Route::Forward(proxy.clone()),
        }
    }
}

/// The proxy `value` of variable `name` names: an `http://` URL (or a bare
/// `host:port`), with optional `user:password@`.
fn proxy_from(name: &str, value: &str) -> Result<Proxy, String> {
    let scheme = value
        .split_once("://")
        .map(|(scheme, _)| scheme.to_ascii_lowercase());
    match scheme.as_deref() {
        None | Some("http") => {}
        Some("https") => {
            return Err(format!(
                "{name} names an https:// proxy, which drainpipe does not speak TLS to: give the proxy's http:// address (the connection to an https:// server is still TLS from end to end, inside the proxy's tunnel)"
            ));
        }
        Some(scheme) if scheme.starts_with("socks") => {
            return Err(format!(
                "{name} names a SOCKS proxy, which drainpipe does not support: give an HTTP proxy, http://host:port"
            ));
        }
        Some(_) => return Err(format!("{name} is not an http:// proxy URL")),
    }
    // hyper-util's parser: the credentials percent-decoded and encoded as
    // `Basic`, the path dropped, port 80 when none is given.
    let probe = Uri::from_static("http://drainpipe.invalid/");
    let intercept = Matcher::builder()
        .http(value)
        .build()
        .intercept(&probe)
        .ok_or_else(|| {
            format!(
                "{name} is not a proxy URL drainpipe can use: http://[user:password@]host:port, with any @ : / in the password percent-encoded"
            )
        })?;
    let uri = intercept.uri().clone();
    let host = uri.host().unwrap_or_default();
    let port = uri.port_u16().unwrap_or(80);
    let mut authorization = intercept.basic_auth().cloned();
    if let Some(value) = &mut authorization {
        value.set_sensitive(true);
    }
    Ok(Proxy {
        shown: format!("http://{host}:{port} ({name})"),
        uri,
        authorization,
    })
}

/// Whether `host` (as a URI holds it, IPv6 in brackets) is this machine's
/// loopback: `localhost`, a name under `.localhost` (RFC 6761 keeps them
/// all on loopback), 127.0.0.0/8, `::1`, or `::ffff:127.x.y.z`.
fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => ip.is_loopback(),
        Ok(IpAddr::V6(ip)) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|ip| ip.is_loopback())
        }
        Err(_) => {
            let name = host.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(vars: &[(&str, &str)]) -> Result<ProxyRules, String> {
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(name, value)| (name.to_string(), OsString::from(value)))
            .collect();
        ProxyRules::read(&move |name| {
            vars.iter()
                .find(|(var, _)| var == name)
                .map(|(_, value)| value.clone())
        })
    }

    /// `direct`, `tunnel <proxy>`, `forward <proxy>` or `unusable: <why>`.
    fn way(rules: &ProxyRules, server: &str) -> String {
        match rules.route(&server.parse().unwrap()) {
            Route::Direct => "direct".into(),
            Route::Tunnel(proxy) => format!("tunnel {}", proxy.shown),
            Route::Forward(proxy) => format!("forward {}", proxy.shown),
            Route::Unusable(why) => format!("unusable: {why}"),
        }
    }

    #[test]
    fn each_scheme_takes_its_own_proxy_and_all_proxy_fills_in() {
        let both = rules(&[
            ("HTTPS_PROXY", "http://tls-proxy:3128"),
            ("HTTP_PROXY", "plain-proxy:8080"),
        ])
        .unwrap();
        assert_eq!(
            way(&both, "https://mcp.example.com/mcp"),
            "tunnel http://tls-proxy:3128 (HTTPS_PROXY)"
        );
        assert_eq!(
            way(&both, "http://mcp.example.com/mcp"),
            "forward http://plain-proxy:8080 (HTTP_PROXY)"
        );
        let all = rules(&[("ALL_PROXY", "http://proxy"), ("https_proxy", "http://p:1")]).unwrap();
        assert_eq!(
            way(&all, "http://mcp.example.com/"),
            "forward http://proxy:80 (ALL_PROXY)"
        );
        assert_eq!(
            way(&all, "https://mcp.example.com/"),
            "tunnel http://p:1 (https_proxy)"
        );
        assert_eq!(
            way(&rules(&[]).unwrap(), "https://mcp.example.com/"),
            "direct"
        );
    }

    #[test]
    fn the_lower_case_name_wins_and_an_empty_value_is_unset() {
        let table = [
            (
                vec![
                    ("https_proxy", "http://lower:1"),
                    ("HTTPS_PROXY", "http://upper:2"),
                ],
                "tunnel http://lower:1 (https_proxy)",
            ),
            (
                vec![("https_proxy", " "), ("HTTPS_PROXY", "http://upper:2")],
                "tunnel http://upper:2 (HTTPS_PROXY)",
            ),
            (
                vec![
                    ("HTTPS_PROXY", "http://p:1"),
                    ("no_proxy", "example.com"),
                    ("NO_PROXY", ""),
                ],
                "direct",
            ),
            (
                vec![
                    ("HTTPS_PROXY", "http://p:1"),
                    ("no_proxy", ""),
                    ("NO_PROXY", "other.org"),
                ],
                "tunnel http://p:1 (HTTPS_PROXY)",
            ),
        ];
        for (vars, expected) in table {
            let rules = rules(&vars).unwrap();
            assert_eq!(
                way(&rules, "https://mcp.example.com/"),
                expected,
                "{vars:?}"
            );
        }
    }

    #[test]
    fn no_proxy_takes_hosts_suffixes_addresses_ranges_and_a_star() {
        let table = [
            ("example.com", "https://example.com/", "direct"),
            ("example.com", "https://mcp.example.com/", "direct"),
            (".example.com", "https://mcp.example.com/", "direct"),
            (".example.com", "https://example.com/", "direct"),
            ("example.com", "https://notexample.com/", "tunnel"),
            (
                "other.org, example.com",
                "https://a.b.example.com/",
                "direct",
            ),
            ("*", "https://anything.net/", "direct"),
            ("10.1.2.3", "https://10.1.2.3/", "direct"),
            ("10.1.2.3", "https://10.1.2.4/", "tunnel"),
            ("10.0.0.0/8", "https://10.9.9.9:8443/", "direct"),
            ("::2", "https://[::2]/", "direct"),
            ("", "https://mcp.example.com/", "tunnel"),
        ];
        for (no_proxy, server, expected) in table {
            let rules = rules(&[("HTTPS_PROXY", "http://p:1"), ("NO_PROXY", no_proxy)]).unwrap();
            let way = way(&rules, server);
            assert_eq!(
                way.split(' ').next(),
                Some(expected),
                "NO_PROXY={no_proxy:?} {server}"
            );
        }
    }

    #[test]
    fn loopback_servers_are_reached_directly_unless_asked() {
        let proxied = [("HTTPS_PROXY", "http://p:1"), ("HTTP_PROXY", "http://p:1")];
        let rules_default = rules(&proxied).unwrap();
        let mut asked = proxied.to_vec();
        asked.push((PROXY_LOOPBACK_VAR, "1"));
        let rules_asked = rules(&asked).unwrap();
        for server in [
            "http://localhost:3000/mcp",
            "http://LOCALHOST./mcp",
            "https://dev.localhost/mcp",
            "http://127.0.0.1:8080/mcp",
            "http://127.0.0.2/mcp",
            "https://[::1]:8443/mcp",
            "https://[::ffff:127.0.0.1]/mcp",
        ] {
            assert_eq!(way(&rules_default, server), "direct", "{server}");
            assert_ne!(way(&rules_asked, server), "direct", "{server}");
        }
        for server in ["https://localhost.example.com/", "http://128.0.0.1/"] {
            assert_ne!(way(&rules_default, server), "direct", "{server}");
        }
    }

    #[test]
    fn credentials_go_in_the_header_and_nowhere_else() {
        let rules = rules(&[("HTTPS_PROXY", "http://alice:s3cr%40t@proxy.corp:3128/")]).unwrap();
        let Route::Tunnel(proxy) = rules.route(&"https://mcp.example.com/".parse().unwrap()) else {
            panic!("not tunnelled")
        };
        let authorization = proxy.authorization.as_ref().unwrap();
        // alice:s3cr@t
        assert_eq!(authorization, "Basic YWxpY2U6czNjckB0");
        assert!(authorization.is_sensitive());
        for shown in [
            proxy.shown.clone(),
            format!("{proxy:?}"),
            format!("{rules:?}"),
            proxy.uri.to_string(),
        ] {
            assert!(
                !shown.contains("s3cr") && !shown.contains("alice"),
                "{shown}"
            );
        }
        assert_eq!(proxy.shown, "http://proxy.corp:3128 (HTTPS_PROXY)");
    }

    #[test]
    fn a_proxy_that_cannot_be_used_fails_its_requests_naming_the_variable_not_its_value() {
        let table = [
            (
                "HTTPS_PROXY",
                "https://u:hunter2@proxy:443",
                "https:// proxy",
            ),
            ("https_proxy", "socks5h://u:hunter2@proxy:1080", "SOCKS"),
            (
                "ALL_PROXY",
                "ftp://u:hunter2@proxy",
                "not an http:// proxy URL",
            ),
            (
                "HTTPS_PROXY",
                "http://u:hunter2@[bad",
                "not a proxy URL drainpipe can use",
            ),
        ];
        for (name, value, expected) in table {
            let rules = rules(&[(name, value), ("NO_PROXY", "internal.corp")]).unwrap();
            let unusable = way(&rules, "https://mcp.example.com/");
            let why = unusable
                .strip_prefix("unusable: ")
                .unwrap_or_else(|| panic!("{unusable}"));
            assert!(why.starts_with(name), "{why}");
            assert!(why.contains(expected), "{why}");
            assert!(!why.contains("hunter2"), "{why}");
            // Servers it would not carry are not held back by it.
            assert_eq!(way(&rules, "https://mcp.internal.corp/"), "direct");
            assert_eq!(way(&rules, "https://localhost/"), "direct");
        }
        // A SOCKS ALL_PROXY for other tools, with HTTPS_PROXY set: https://
        // servers are fine, http:// ones fail.
        let mixed = rules(&[
            ("ALL_PROXY", "socks5://p:1080"),
            ("HTTPS_PROXY", "http://p:3128"),
        ])
        .unwrap();
        assert_eq!(
            way(&mixed, "https://mcp.example.com/"),
            "tunnel http://p:3128 (HTTPS_PROXY)"
        );
        assert!(way(&mixed, "http://mcp.example.com/").starts_with("unusable: ALL_PROXY"));
    }

    #[test]
    fn under_cgi_the_upper_case_http_proxy_is_not_read() {
        let cgi = rules(&[("REQUEST_METHOD", "GET"), ("HTTP_PROXY", "http://evil:1")]).unwrap();
        assert_eq!(way(&cgi, "http://mcp.example.com/"), "direct");
        let lower = rules(&[("REQUEST_METHOD", "GET"), ("http_proxy", "http://p:1")]).unwrap();
        assert_eq!(
            way(&lower, "http://mcp.example.com/"),
            "forward http://p:1 (http_proxy)"
        );
    }
}
