//! The authorization's way back: a listener on loopback for the browser's
//! redirect (`http://127.0.0.1:PORT/callback?code=…&state=…`, RFC 8252
//! §7.3), and opening the browser.

use std::io;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The longest a redirect's request head may be: a URL with a code and a
/// state, and a browser's headers. Bounds what a stray local client can
/// make the proxy hold.
const MAX_REQUEST_HEAD_BYTES: usize = 16 << 10;

/// The listener the authorization server redirects the browser to.
pub(crate) struct Callback {
    listener: TcpListener,
}

/// What came back.
pub(crate) enum Returned {
    /// The server granted a code; `iss`: the issuer it says it is (RFC
    /// 9207), to be checked before the code is used.
    Code { code: String, iss: Option<String> },
    /// The server (or the user) refused: its `error` and description.
    Refused(String),
}

impl Callback {
    /// Listens on `127.0.0.1:port` (0: any free port).
    pub(crate) async fn bind(port: u16) -> io::Result<Callback> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        Ok(Callback { listener })
    }

    /// The redirect URI to register and to send.
    pub(crate) fn redirect_uri(&self) -> io::Result<String> {
        let port = self.listener.local_addr()?.port();
        Ok(format!("http://127.0.0.1:{port}/callback"))
    }

    /// Waits up to `within` for the redirect carrying `state`; requests for
    /// anything else (a favicon, a wrong state) are answered 404 and
    /// ignored.
    pub(crate) async fn wait(&self, state: &str, within: Duration) -> Result<Returned, String> {
        let waiting = async {
            loop {
                let Ok((mut stream, _)) = self.listener.accept().await else {
                    continue;
                };
                let Ok(Ok(head)) =
                    tokio::time::timeout(Duration::from_secs(10), read_head(&mut stream)).await
                else {
                    continue;
                };
                let returned = returned(&head, state);
                let (status, page) = match &returned {
                    Some(Returned::Code { .. }) => (
                        "200 OK",
                        "Authorized. You can close this window and return to your MCP host.",
                    ),
                    Some(Returned::Refused(_)) => (
                        "200 OK",
                        "The authorization was refused. You can close this window.",
                    ),
                    None => ("404 Not Found", "Not the authorization's redirect."),
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                    page.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
                if let Some(returned) = returned {
                    return returned;
                }
            }
        };
        tokio::time::timeout(within, waiting).await.map_err(|_| {
            format!(
                "no authorization came back within {} min",
                within.as_secs() / 60
            )
        })
    }
}

async fn read_head(stream: &mut tokio::net::TcpStream) -> io::Result<Vec<u8>> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST_HEAD_BYTES {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    Ok(head)
}

/// The code (or the refusal) in a `GET /callback?…` request head, if it
/// carries `state`.
fn returned(head: &[u8], state: &str) -> Option<Returned> {
    let line = head.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    if words.next()? != "GET" {
        return None;
    }
    let target = url::Url::parse("http://127.0.0.1")
        .ok()?
        .join(words.next()?)
        .ok()?;
    if target.path() != "/callback" {
        return None;
    }
    let pairs: Vec<(String, String)> = target.query_pairs().into_owned().collect();
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    if get("state").as_deref() != Some(state) {
        return None;
    }
    if let Some(code) = get("code") {
        return Some(Returned::Code {
            code,
            iss: get("iss"),
        });
    }
    let error = get("error").unwrap_or_else(|| "no code".into());
    let description = get("error_description")
        .map(|d| format!(": {}", d.chars().take(300).collect::<String>()))
        .unwrap_or_default();
    Some(Returned::Refused(format!("{error}{description}")))
}

/// Opens `url` in the user's browser unless `DRAINPIPE_NO_BROWSER` is set:
/// the command `BROWSER` names if set (the convention `xdg-open` and
/// Python's `webbrowser` follow: `%s` in it is the URL, else the URL is
/// its last argument; the first of several `:`-separated commands), else
/// the platform's opener when there is a display. True if a browser was
/// started. The URL is on stderr in any case.
pub(crate) fn open_browser(url: &str) -> bool {
    if std::env::var_os("DRAINPIPE_NO_BROWSER").is_some_and(|v| !v.is_empty()) {
        return false;
    }
    let named = std::env::var("BROWSER")
        .ok()
        .and_then(|value| browser_command(&value, url));
    let mut command = if let Some((program, args)) = named {
        let mut command = std::process::Command::new(program);
        command.args(args);
        command
    } else if cfg!(target_os = "macos") {
        let mut command = std::process::Command::new("open");
        command.arg(url);
        command
    } else if cfg!(windows) {
        let mut command = std::process::Command::new("cmd");
        // `start`'s first quoted argument is a window title.
        command.args(["/C", "start", ""]).arg(url);
        command
    } else {
        let display = ["DISPLAY", "WAYLAND_DISPLAY"]
            .iter()
            .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
        if !display {
            return false;
        }
        let mut command = std::process::Command::new("xdg-open");
        command.arg(url);
        command
    };
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    match command.spawn() {
        Ok(mut child) => {
            // Reaped when it exits, without holding anything up.
            std::thread::spawn(move || child.wait());
            true
        }
        Err(_) => false,
    }
}

/// The program and arguments `BROWSER` names for `url`; `None` when it
/// names nothing. Split at white space (no quoting), the first of
/// several commands separated by the platform's path separator.
fn browser_command(value: &str, url: &str) -> Option<(String, Vec<String>)> {
    let separator = if cfg!(windows) { ';' } else { ':' };
    let first = value
        .split(separator)
        .map(str::trim)
        .find(|c| !c.is_empty())?;
    let mut words = first.split_whitespace().map(str::to_string);
    let program = words.next()?;
    let mut args: Vec<String> = words.collect();
    if args.iter().any(|arg| arg.contains("%s")) {
        for arg in &mut args {
            *arg = arg.replace("%s", url);
        }
    } else {
        args.push(url.to_string());
    }
    Some((program, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browser_names_the_command_to_open_with() {
        let url = "http://127.0.0.1:9/authorize?x=1";
        // BROWSER's value → the program and its arguments, if any.
        type Row<'a> = (&'a str, Option<(&'a str, &'a [&'a str])>);
        let table: &[Row] = &[
            ("firefox", Some(("firefox", &[url]))),
            (
                "node /t/browser.mjs",
                Some(("node", &["/t/browser.mjs", url])),
            ),
            (
                "open -a Safari %s --new",
                Some(("open", &["-a", "Safari", url, "--new"])),
            ),
            ("", None),
            (" : ", None),
        ];
        for (value, expected) in table {
            let got = browser_command(value, url);
            let expected = expected.map(|(program, args)| {
                (
                    program.to_string(),
                    args.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
                )
            });
            assert_eq!(got, expected, "{value:?}");
        }
        if !cfg!(windows) {
            assert_eq!(browser_command("w3m:lynx", url).unwrap().0, "w3m");
        }
    }

    #[test]
    fn the_redirect_gives_its_code_only_with_the_right_state() {
        let head = b"GET /callback?code=abc&state=s1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
        assert!(
            matches!(returned(head, "s1"), Some(Returned::Code { code, iss: None }) if code == "abc")
        );
        let with_iss =
            b"GET /callback?code=abc&state=s1&iss=https%3A%2F%2Fas.example HTTP/1.1\r\n\r\n";
        assert!(
            matches!(returned(with_iss, "s1"), Some(Returned::Code { iss: Some(iss), .. }) if iss == "https://as.example")
        );
        assert!(returned(head, "s2").is_none());
        assert!(returned(b"GET /favicon.ico HTTP/1.1\r\n\r\n", "s1").is_none());
        let refused =
            b"GET /callback?error=access_denied&error_description=no&state=s1 HTTP/1.1\r\n\r\n";
        assert!(
            matches!(returned(refused, "s1"), Some(Returned::Refused(r)) if r == "access_denied: no")
        );
    }
}
