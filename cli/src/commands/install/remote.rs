//! Remote servers behind the proxy. `install --remote` turns an entry that
//! names a URL into a stdio entry that runs `drainpipe proxy --url URL
//! [--header 'Name: value' …]`; `uninstall` reads those words back.
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
    let mut rest = options[url_at + 2..].iter();
    while let Some(word) = rest.next() {
        let header = match (word.as_str(), rest.next()) {
            ("--header", Some(header)) => header,
            _ => {
                return Some(Err(format!(
                    "`{word}` after --url is not a --header that install writes"
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
}
