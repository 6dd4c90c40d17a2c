//! Where a server's client registration and tokens are kept between runs:
//! one JSON file per server URL in a directory only this user can open
//! (0700), the file only this user can read (0600), replaced atomically.
//!
//! Several proxies may share a record (two host windows, two hosts, a
//! client that starts its server twice). Renewing tokens is done under an
//! advisory lock on a `.lock` file beside the record ([`Store::lock`]),
//! after reading the record afresh: a proxy whose tokens another one
//! renewed takes those instead of spending a refresh token that was
//! already used (servers that rotate refresh tokens refuse it, and the
//! refusal would erase the good tokens), and every record written derives
//! from the newest one.
//!
//! The default directory is `$XDG_CONFIG_HOME/drainpipe/oauth`, else
//! `~/.config/drainpipe/oauth` (`%APPDATA%\drainpipe\oauth` on Windows).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::pipe::sys;

/// What is stored for one server. Debug never shows a secret.
#[derive(Clone, Default, Deserialize, Serialize)]
pub(crate) struct Record {
    /// The server URL the record is for (the file name is its hash).
    pub(crate) server: String,
    pub(crate) client: Option<Client>,
    pub(crate) tokens: Option<Tokens>,
}

/// A client registered with the authorization server (RFC 7591).
#[derive(Clone, Deserialize, Serialize)]
pub(crate) struct Client {
    pub(crate) client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<String>,
    /// The redirect URIs it was registered with (its callback's port).
    pub(crate) redirect_uris: Vec<String>,
    /// The authorization server it was registered with.
    pub(crate) token_endpoint: String,
    /// That server's issuer: a client is never shown to another one
    /// (SEP-2352: a new authorization server means a new registration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) issuer: Option<String>,
    /// How it authenticates at the token endpoint (`none`,
    /// `client_secret_post`, `client_secret_basic`), as registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) auth_method: Option<String>,
}

/// The tokens of the last grant.
#[derive(Clone, Deserialize, Serialize)]
pub(crate) struct Tokens {
    pub(crate) access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_at: Option<u64>,
    /// The token endpoint that issued them, for a refresh.
    pub(crate) token_endpoint: String,
    /// The `resource` they were issued for (RFC 8707).
    pub(crate) resource: String,
    /// When to refresh the access token before it is sent, in seconds since
    /// the Unix epoch: a little before it expires (a token that expires in
    /// flight costs a round trip).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refresh_at: Option<u64>,
    /// The scopes granted (or, when the server did not say, asked for):
    /// a step-up asks for these and the new ones together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) scope: Option<String>,
}

/// The directory of records.
#[derive(Clone, Debug)]
pub(crate) struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store in `dir`, or in the user's configuration directory.
    pub(crate) fn new(dir: Option<PathBuf>) -> io::Result<Store> {
        let dir = match dir {
            Some(dir) => dir,
            None => default_dir().ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "no configuration directory for OAuth tokens (set HOME or --oauth-dir)",
                )
            })?,
        };
        Ok(Store { dir })
    }

    /// The file for `server`: a hash of its URL, so that no URL (which may
    /// hold a key in its query) is a file name.
    pub(crate) fn path(&self, server: &str) -> PathBuf {
        let hash = Sha256::digest(server.as_bytes());
        let name: String = hash[..16].iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{name}.json"))
    }

    /// The record for `server`; empty when there is none or it cannot be
    /// read (then a new authorization replaces it).
    pub(crate) fn load(&self, server: &str) -> Record {
        let path = self.path(server);
        let record = fs::read(&path)
            .ok()
            .filter(|_| private_enough(&path))
            .and_then(|bytes| serde_json::from_slice::<Record>(&bytes).ok())
            .filter(|record| record.server == server);
        record.unwrap_or_else(|| Record {
            server: server.to_string(),
            ..Record::default()
        })
    }

    /// Writes `record`: a new private file renamed over the old one, so a
    /// reader never sees half of it.
    pub(crate) fn save(&self, record: &Record) -> io::Result<()> {
        self.make_dir()?;
        let path = self.path(&record.server);
        let making = path.with_extension(format!("json.{}.tmp", std::process::id()));
        let _ = fs::remove_file(&making);
        let written = (|| {
            let mut file = sys::create_private_file(&making)?;
            file.write_all(&serde_json::to_vec_pretty(record).map_err(io::Error::other)?)?;
            file.sync_all()?;
            fs::rename(&making, &path)
        })();
        if written.is_err() {
            let _ = fs::remove_file(&making);
        }
        written
    }

    /// Creates the directory (0700) if missing; its parents are ordinary
    /// directories. One that exists must be this user's.
    fn make_dir(&self) -> io::Result<()> {
        match fs::symlink_metadata(&self.dir) {
            Ok(metadata) if metadata.is_dir() && sys::owned_by_me(&metadata) => Ok(()),
            Ok(_) => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is not a directory of this user's: the OAuth tokens are not stored there",
                    self.dir.display()
                ),
            )),
            Err(_) => {
                if let Some(parent) = self.dir.parent() {
                    fs::create_dir_all(parent)?;
                }
                sys::create_private_dir(&self.dir)
            }
        }
    }

    /// The directory, for messages.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Takes the lock on `server`'s record, held until the [`Locked`] is
    /// dropped (or the process ends: the system releases it), waiting at
    /// most `within` for another process to release it.
    pub(crate) async fn lock(&self, server: &str, within: Duration) -> io::Result<Locked> {
        self.make_dir()?;
        let file = sys::open_lock_file(&self.path(server).with_extension("lock"))?;
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Locked { _file: file }),
                Err(fs::TryLockError::WouldBlock) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(LOCK_POLL).await;
                }
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "another drainpipe has been renewing these tokens for over {} s",
                            within.as_secs()
                        ),
                    ));
                }
                Err(fs::TryLockError::Error(error)) => return Err(error),
            }
        }
    }
}

/// How often a proxy waiting for another one's lock tries again: short
/// beside a token request, long enough not to spin.
const LOCK_POLL: Duration = Duration::from_millis(20);

/// The lock on one record; released when dropped (closing the file).
pub(crate) struct Locked {
    _file: fs::File,
}

/// A record another user could have written or read is not trusted.
fn private_enough(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && sys::owned_by_me(&m))
}

fn default_dir() -> Option<PathBuf> {
    let base = if cfg!(windows) {
        std::env::var_os("APPDATA").map(PathBuf::from)
    } else {
        std::env::var_os("XDG_CONFIG_HOME")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))
    };
    base.map(|base| base.join("drainpipe").join("oauth"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_private_and_keyed_by_the_server_url() {
        let dir = std::env::temp_dir().join(format!("drainpipe-oauth-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let store = Store::new(Some(dir.join("oauth"))).unwrap();
        let server = "https://a.example/mcp?key=k";
        assert!(store.load(server).tokens.is_none());
        let mut record = store.load(server);
        record.tokens = Some(Tokens {
            access_token: "at".into(),
            refresh_token: None,
            expires_at: Some(1),
            token_endpoint: "https://auth.example/token".into(),
            resource: server.into(),
            scope: None,
            refresh_at: None,
        });
        store.save(&record).unwrap();
        store.save(&record).unwrap();
        let name = store.path(server);
        assert!(!name.to_string_lossy().contains("a.example"));
        assert_eq!(store.load(server).tokens.unwrap().access_token, "at");
        assert!(store.load("https://b.example/mcp").tokens.is_none());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(store.dir()), 0o700);
            assert_eq!(mode(&name), 0o600);
        }
        assert_eq!(fs::read_dir(store.dir()).unwrap().count(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn one_holder_of_a_records_lock_at_a_time() {
        let dir = std::env::temp_dir().join(format!("drainpipe-oauth-lock-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let store = Store::new(Some(dir.join("oauth"))).unwrap();
        let server = "https://a.example/mcp";
        let held = store.lock(server, Duration::from_secs(1)).await.unwrap();
        // Another open file description (as another process has) waits,
        // then gives up with an error that says why.
        let waited = tokio::time::Instant::now();
        let error = store
            .lock(server, Duration::from_millis(200))
            .await
            .err()
            .unwrap();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(waited.elapsed() >= Duration::from_millis(200));
        // Another record's lock is free.
        drop(
            store
                .lock("https://b.example/mcp", Duration::ZERO)
                .await
                .unwrap(),
        );
        drop(held);
        drop(store.lock(server, Duration::ZERO).await.unwrap());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let lock = store.path(server).with_extension("lock");
            assert_eq!(
                fs::metadata(lock).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        fs::remove_dir_all(&dir).unwrap();
    }
}
