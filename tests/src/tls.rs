//! A private certificate authority for the HTTPS tests, as a company's
//! own root would be: made with the `openssl` command, so nothing is
//! checked in and nothing expires between runs.

use std::path::PathBuf;

/// A root and a `localhost` (and `127.0.0.1`) certificate it signed, in a
/// directory of their own that is removed when this is dropped.
#[derive(Debug)]
pub struct PrivateRoot {
    /// The directory holding them.
    pub dir: PathBuf,
    /// The root's certificate (PEM): what `SSL_CERT_FILE` names.
    pub ca: String,
    /// The server's certificate (PEM).
    pub cert: String,
    /// The server's key (PEM).
    pub key: String,
}

impl Drop for PrivateRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Makes a root and a server certificate in a fresh directory named after
/// `name` (one per test that runs at the same time), or `None` when
/// `openssl` is missing and peers are not required (see
/// [`crate::peers::gate`]).
pub fn private_root(name: &str) -> Option<PrivateRoot> {
    let dir = std::env::temp_dir().join(format!("drainpipe-tls-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let path = |name: &str| dir.join(name).display().to_string();
    let ext = path("leaf.ext");
    std::fs::write(
        &ext,
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .expect("write leaf.ext");
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let steps: [Vec<String>; 3] = [
        ["req", "-x509"]
            .iter()
            .chain(&ec)
            .map(|s| s.to_string())
            .chain([
                "-keyout".into(),
                path("ca.key"),
                "-out".into(),
                path("ca.pem"),
                "-days".into(),
                "2".into(),
                "-subj".into(),
                "/CN=drainpipe test root".into(),
                "-addext".into(),
                "basicConstraints=critical,CA:TRUE".into(),
                "-addext".into(),
                "keyUsage=critical,keyCertSign".into(),
            ])
            .collect(),
        ["req"]
            .iter()
            .chain(&ec)
            .map(|s| s.to_string())
            .chain([
                "-keyout".into(),
                path("leaf.key"),
                "-out".into(),
                path("leaf.csr"),
                "-subj".into(),
                "/CN=localhost".into(),
            ])
            .collect(),
        [
            "x509",
            "-req",
            "-in",
            &path("leaf.csr"),
            "-CA",
            &path("ca.pem"),
            "-CAkey",
            &path("ca.key"),
            "-CAcreateserial",
            "-out",
            &path("leaf.pem"),
            "-days",
            "2",
            "-extfile",
            &ext,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    ];
    for args in steps {
        let made = std::process::Command::new("openssl").args(&args).output();
        let made = match made {
            Ok(output) if output.status.success() => Ok(()),
            Ok(output) => Err(format!(
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            )),
            Err(error) => Err(format!("openssl: {error}")),
        };
        crate::peers::gate("openssl (to make a test certificate)", made)?;
    }
    Some(PrivateRoot {
        ca: path("ca.pem"),
        cert: path("leaf.pem"),
        key: path("leaf.key"),
        dir,
    })
}
