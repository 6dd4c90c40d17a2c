//! Remote servers behind the proxy. `install --remote` turns an entry that
//! names a URL into a stdio entry that runs `drainpipe proxy --url URL
//! [--header 'Name: value' …] [--oauth-… …]`; `uninstall` reads those words
//! back.
//!
//! An entry's `oauth` block (Gemini CLI's and Claude Code's: `clientId`,
//! `clientSecret`, `scopes`, `callbackPort`, `enabled`) becomes the proxy's
//! `--oauth-client-id`, `--oauth-client-secret`, `--oauth-scope`,
//! `--oauth-port` and `--no-oauth`. A client secret written in the file
//! moves into the entry's `env` as [`SECRET_VARIABLE`] and the argument
//! names it (`${DRAINPIPE_OAUTH_CLIENT_SECRET}`): a process's arguments
//! are readable by every user of the machine (`ps`), its environment is
//! not.
//!
//! Header values are copied as the file spells them, with one exception: a
//! reference to an environment variable in the host's syntax (`${env:NAME}`
//! for VS Code and Cursor, `${NAME}` for Claude Code and Gemini CLI) becomes
//! `${NAME}`, which the proxy expands from its own environment. The secret
//! then stays out of the config file, as it was; the format edits say how
//! the variable reaches the proxy (the entry's `env`, Codex's `env_vars`).

use super::wrap::{Wrapper, proxy_index};

/// A remote server as its entry describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Remote {
    /// The server's address.
    pub(crate) url: String,
    /// Header names and values, in the entry's order, values in the form
    /// the proxy reads (`${NAME}` for a variable).
    pub(crate) headers: Vec<(String, String)>,
    /// The `--oauth-…` arguments, as the proxy reads them.
    pub(crate) oauth: Vec<String>,
}

/// The variable a client secret written in a host's file moves to.
pub(crate) const SECRET_VARIABLE: &str = "DRAINPIPE_OAUTH_CLIENT_SECRET";

/// An entry's `oauth` block, as the hosts that have one spell it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OAuthBlock {
    /// `enabled: false`.
    pub(crate) disabled: bool,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<String>,
    pub(crate) scopes: Vec<String>,
    /// `callbackPort`, or the port of a loopback `redirectUri`.
    pub(crate) callback_port: Option<u16>,
}

/// The proxy's words for `block`, the variables its values refer to, and
/// the literal secret to put in the entry's `env` as [`SECRET_VARIABLE`].
pub(crate) fn oauth_args(block: &OAuthBlock) -> (Vec<String>, Vec<Reference>, Option<String>) {
    let mut words = Vec::new();
    let mut references: Vec<Reference> = Vec::new();
    let mut literal_secret = None;
    if block.disabled {
        words.push("--no-oauth".to_string());
    }
    if let Some(id) = &block.client_id {
        let (id, found) = header_value(id);
        words.extend(["--oauth-client-id".to_string(), id]);
        references.extend(found);
    }
    if let Some(secret) = &block.client_secret {
        let (proxy_form, found) = header_value(secret);
        let value = if found.is_empty() {
            literal_secret = Some(secret.clone());
            format!("${{{SECRET_VARIABLE}}}")
        } else {
            references.extend(found);
            proxy_form
        };
        words.extend(["--oauth-client-secret".to_string(), value]);
    }
    if !block.scopes.is_empty() {
        words.extend(["--oauth-scope".to_string(), block.scopes.join(" ")]);
    }
    if let Some(port) = block.callback_port {
        words.extend(["--oauth-port".to_string(), port.to_string()]);
    }
    references.dedup_by(|a, b| a.name == b.name);
    (words, references, literal_secret)
}

/// The `oauth` block the proxy's words say, for `uninstall` to write back;
/// `None` when there are none.
pub(crate) fn oauth_block(words: &[String]) -> Option<OAuthBlock> {
    if words.is_empty() {
        return None;
    }
    let mut block = OAuthBlock::default();
    let mut rest = words.iter();
    while let Some(word) = rest.next() {
        match word.as_str() {
            "--no-oauth" => block.disabled = true,
            "--oauth-client-id" => block.client_id = rest.next().cloned(),
            "--oauth-client-secret" => block.client_secret = rest.next().cloned(),
            "--oauth-scope" => {
                block.scopes = rest
                    .next()
                    .map(|scopes| scopes.split_whitespace().map(str::to_string).collect())
                    .unwrap_or_default();
            }
            "--oauth-port" => block.callback_port = rest.next().and_then(|p| p.parse().ok()),
            _ => {}
        }
    }
    Some(block)
}

/// The port of a loopback redirect URI (`http://localhost:7777/callback`).
pub(crate) fn loopback_port(uri: &str) -> Option<u16> {
    let rest = uri.strip_prefix("http://")?;
    let authority = rest.split('/').next()?;
    let (host, port) = authority.rsplit_once(':')?;
    matches!(host, "localhost" | "127.0.0.1" | "[::1]")
        .then(|| port.parse().ok())
        .flatten()
}

/// An environment variable a header value refers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reference {
    /// The variable's name.
    pub(crate) name: String,
    /// The reference as the file spelled it (`${env:TOKEN}`), which is what
    /// a host that expands references in `env` needs to be given.
    pub(crate) spelled: String,
}

/// A header value in the proxy's form, and the variables it refers to:
/// `${env:NAME}` and `${NAME}` become `${NAME}`, everything else is kept.
pub(crate) fn header_value(value: &str) -> (String, Vec<Reference>) {
    let mut out = String::with_capacity(value.len());
    let mut references: Vec<Reference> = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[start..]);
            return (out, references);
        };
        let inner = &after[..close];
        let name = inner.strip_prefix("env:").unwrap_or(inner);
        if is_variable_name(name) {
            out.push_str("${");
            out.push_str(name);
            out.push('}');
            if !references.iter().any(|seen| seen.name == name) {
                references.push(Reference {
                    name: name.to_string(),
                    spelled: rest[start..start + 3 + close].to_string(),
                });
            }
        } else {
            // `${input:token}`, `${workspaceFolder}`, …: the host's to expand.
            out.push_str(&rest[start..start + 3 + close]);
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    (out, references)
}

/// A portable environment variable name: a letter or `_`, then letters,
/// digits and `_`.
fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Wrapper {
    /// A remote server's new arguments: the runner's words, `proxy`, the
    /// proxy arguments, `--url URL`, then `--header 'Name: value'` for each
    /// header.
    pub(crate) fn remote_args(&self, remote: &Remote) -> Vec<String> {
        let mut words = self.prefix();
        words.pop(); // no `--`: there is no server command
        words.extend(["--url".to_string(), remote.url.clone()]);
        for (name, value) in &remote.headers {
            words.push("--header".to_string());
            words.push(format!("{name}: {value}"));
        }
        words.extend(remote.oauth.iter().cloned());
        words
    }
}

/// A server `install --remote` wrapped, read back from its command and
/// arguments: the wrapper used and the remote server. `None` when the
/// entry runs no `drainpipe proxy --url` (a wrapped stdio server, or no
/// drainpipe at all); an error names words `install` does not write after
/// `--url`.
pub(crate) fn remote_of(
    command: &str,
    args: &[String],
) -> Option<Result<(Wrapper, Remote), String>> {
    let proxy = proxy_index(command, args)?;
    let options = &args[proxy + 1..];
    if options.iter().any(|word| word == "--") {
        return None;
    }
    let url_at = options.iter().position(|word| word == "--url")?;
    let wrapper = Wrapper {
        command: command.to_string(),
        launcher: args[..proxy].to_vec(),
        proxy_args: options[..url_at].to_vec(),
        remote: true,
    };
    let Some(url) = options.get(url_at + 1) else {
        return Some(Err("nothing follows --url".to_string()));
    };
    let mut headers = Vec::new();
    let mut oauth = Vec::new();
    let mut rest = options[url_at + 2..].iter();
    while let Some(word) = rest.next() {
        if word == "--no-oauth" {
            oauth.push(word.clone());
            continue;
        }
        let header = match (word.as_str(), rest.next()) {
            ("--header", Some(header)) if oauth.is_empty() => header,
            (
                "--oauth-client-id" | "--oauth-client-secret" | "--oauth-scope" | "--oauth-port",
                Some(value),
            ) => {
                oauth.extend([word.clone(), value.clone()]);
                continue;
            }
            _ => {
                return Some(Err(format!(
                    "`{word}` after --url is not a --header or --oauth option that install writes"
                )));
            }
        };
        let Some((name, value)) = header.split_once(':') else {
            return Some(Err(format!("the header `{header}` has no `:`")));
        };
        headers.push((name.trim().to_string(), value.trim_start().to_string()));
    }
    Some(Ok((
        wrapper,
        Remote {
            url: url.clone(),
            headers,
            oauth,
        },
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|word| word.to_string()).collect()
    }

    #[test]
    fn variable_references_become_the_proxys_form() {
        let reference = |name: &str, spelled: &str| Reference {
            name: name.to_string(),
            spelled: spelled.to_string(),
        };
        for (value, proxy, references) in [
            ("Bearer abc", "Bearer abc", vec![]),
            (
                "Bearer ${env:TOKEN}",
                "Bearer ${TOKEN}",
                vec![reference("TOKEN", "${env:TOKEN}")],
            ),
            (
                "${USER_ID}:${API_KEY}${USER_ID}",
                "${USER_ID}:${API_KEY}${USER_ID}",
                vec![
                    reference("USER_ID", "${USER_ID}"),
                    reference("API_KEY", "${API_KEY}"),
                ],
            ),
            ("Bearer ${input:token}", "Bearer ${input:token}", vec![]),
            ("${1X} ${} ${open", "${1X} ${} ${open", vec![]),
        ] {
            assert_eq!(
                header_value(value),
                (proxy.to_string(), references),
                "{value}"
            );
        }
    }

    #[test]
    fn remote_arguments_read_back_as_written() {
        let wrapper = Wrapper {
            command: "npx".to_string(),
            launcher: words(&["-y", "drainpipe@0.1.0"]),
            proxy_args: words(&["--clip", "8000"]),
            remote: true,
        };
        let remote = Remote {
            url: "https://api.example/mcp".to_string(),
            headers: vec![
                ("Authorization".to_string(), "Bearer ${TOKEN}".to_string()),
                ("X-Team".to_string(), "core".to_string()),
            ],
            oauth: words(&["--oauth-client-id", "abc", "--oauth-scope", "repo read:org"]),
        };
        let args = wrapper.remote_args(&remote);
        assert_eq!(
            args,
            words(&[
                "-y",
                "drainpipe@0.1.0",
                "proxy",
                "--clip",
                "8000",
                "--url",
                "https://api.example/mcp",
                "--header",
                "Authorization: Bearer ${TOKEN}",
                "--header",
                "X-Team: core",
                "--oauth-client-id",
                "abc",
                "--oauth-scope",
                "repo read:org",
            ])
        );
        assert_eq!(remote_of("npx", &args), Some(Ok((wrapper, remote))));
        // A wrapped stdio server, or none at all, is not a remote one.
        assert_eq!(
            remote_of("drainpipe", &words(&["proxy", "--", "npx", "--url", "x"])),
            None
        );
        assert_eq!(remote_of("node", &words(&["--url", "x"])), None);
        assert!(
            remote_of("drainpipe", &words(&["proxy", "--url", "u", "--clip", "1"]))
                .unwrap()
                .is_err()
        );
        assert!(
            remote_of("drainpipe", &words(&["proxy", "--url"]))
                .unwrap()
                .is_err()
        );
    }

    #[test]
    fn oauth_blocks_become_the_proxys_options_and_back() {
        let block = OAuthBlock {
            disabled: false,
            client_id: Some("Iv23li".to_string()),
            client_secret: Some("s3cret".to_string()),
            scopes: words(&["repo", "read:org"]),
            callback_port: Some(33418),
        };
        let (args, references, secret) = oauth_args(&block);
        assert_eq!(
            args,
            words(&[
                "--oauth-client-id",
                "Iv23li",
                "--oauth-client-secret",
                "${DRAINPIPE_OAUTH_CLIENT_SECRET}",
                "--oauth-scope",
                "repo read:org",
                "--oauth-port",
                "33418",
            ])
        );
        assert!(references.is_empty());
        // The secret leaves the arguments for the entry's environment.
        assert_eq!(secret.as_deref(), Some("s3cret"));
        assert!(!args.iter().any(|word| word.contains("s3cret")));
        let back = oauth_block(&args).unwrap();
        assert_eq!(
            back.client_secret.as_deref(),
            Some("${DRAINPIPE_OAUTH_CLIENT_SECRET}")
        );
        assert_eq!(
            (back.client_id, back.scopes, back.callback_port),
            (block.client_id, block.scopes, block.callback_port)
        );

        // A secret that names a variable stays a reference.
        let by_reference = OAuthBlock {
            client_secret: Some("${env:GH_SECRET}".to_string()),
            disabled: true,
            ..OAuthBlock::default()
        };
        let (args, references, secret) = oauth_args(&by_reference);
        assert_eq!(
            args,
            words(&["--no-oauth", "--oauth-client-secret", "${GH_SECRET}"])
        );
        assert_eq!(references.len(), 1);
        assert_eq!(references[0].spelled, "${env:GH_SECRET}");
        assert_eq!(secret, None);
        assert_eq!(oauth_block(&[]), None);

        assert_eq!(loopback_port("http://localhost:7777/callback"), Some(7777));
        assert_eq!(loopback_port("http://127.0.0.1:9/cb"), Some(9));
        assert_eq!(loopback_port("https://app.example/cb"), None);
    }
}
