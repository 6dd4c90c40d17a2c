//! Whose certificates are trusted: Mozilla's roots, built in
//! (`webpki-roots`), the same on every platform and with no system
//! library; plus the certificates OpenSSL's variables name, where a
//! company keeps its own root (or the root of a proxy that inspects TLS):
//!
//! - `SSL_CERT_FILE`: a PEM file of certificates (a bundle);
//! - `SSL_CERT_DIR`: directories, `:`-separated (`;` on Windows), whose
//!   `*.pem` and `*.crt` files and OpenSSL's hashed names (`5ed36f99.0`)
//!   are read the same way.
//!
//! A certificate that does not parse is skipped, not fatal: a system
//! bundle with one odd entry must not cost every other root. Each file
//! with skipped certificates is named in one warning for the user. A file
//! or directory that cannot be read at all is an error: the user named it.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// The largest file read for certificates, in bytes on disk. A bundle of
/// every public root is about 200 KiB; this bounds the memory a variable
/// pointing at the wrong file (a disk image, a log) can take.
const MAX_CERT_FILE_BYTES: u64 = 16 << 20;

/// Mozilla's roots plus those `SSL_CERT_FILE` and `SSL_CERT_DIR` (from
/// `lookup`) name. `warn` gets one line for each file whose certificates
/// were skipped, naming it and how many.
pub(crate) fn roots(
    lookup: &dyn Fn(&str) -> Option<OsString>,
    warn: &mut dyn FnMut(String),
) -> io::Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(file) = lookup("SSL_CERT_FILE").filter(|file| !file.is_empty()) {
        let file = PathBuf::from(file);
        let pem = read_cert_file(&file).map_err(|error| {
            io::Error::new(
                error.kind(),
                format!(
                    "SSL_CERT_FILE names {}, which cannot be read: {error}",
                    file.display()
                ),
            )
        })?;
        let added = add_pem(&mut roots, &pem);
        if added.found == 0 {
            warn(format!(
                "SSL_CERT_FILE: {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                file.display()
            ));
        }
        if let Some(warning) = added.skipped_warning("SSL_CERT_FILE", &file) {
            warn(warning);
        }
    }
    if let Some(dirs) = lookup("SSL_CERT_DIR").filter(|dirs| !dirs.is_empty()) {
        // A certificate's file and its hash link are read once.
        let mut read = HashSet::new();
        for dir in std::env::split_paths(&dirs).filter(|dir| !dir.as_os_str().is_empty()) {
            for file in cert_files(&dir)? {
                let canonical = std::fs::canonicalize(&file).unwrap_or_else(|_| file.clone());
                if !read.insert(canonical) {
                    continue;
                }
                match read_cert_file(&file) {
                    Ok(pem) => {
                        let added = add_pem(&mut roots, &pem);
                        if let Some(warning) = added.skipped_warning("SSL_CERT_DIR", &file) {
                            warn(warning);
                        }
                    }
                    Err(error) => warn(format!(
                        "SSL_CERT_DIR: skipped {}, which cannot be read: {error}",
                        file.display()
                    )),
                }
            }
        }
    }
    Ok(roots)
}

/// The files of `dir` OpenSSL would read certificates from, in name order.
fn cert_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|error| {
        io::Error::new(
            error.kind(),
            format!(
                "SSL_CERT_DIR names {}, which cannot be read as a directory: {error}",
                dir.display()
            ),
        )
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| is_cert_file_name(path) && path.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// `*.pem`, `*.crt`, or a hashed name as `openssl rehash` makes them
/// (eight hex digits, a dot, a number: `5ed36f99.0`).
fn is_cert_file_name(path: &Path) -> bool {
    let (Some(stem), Some(extension)) = (
        path.file_stem().and_then(|stem| stem.to_str()),
        path.extension().and_then(|extension| extension.to_str()),
    ) else {
        return false;
    };
    let hashed = stem.len() == 8
        && stem.bytes().all(|byte| byte.is_ascii_hexdigit())
        && !extension.is_empty()
        && extension.bytes().all(|byte| byte.is_ascii_digit());
    hashed || extension.eq_ignore_ascii_case("pem") || extension.eq_ignore_ascii_case("crt")
}

/// `file`'s bytes, at most [`MAX_CERT_FILE_BYTES`].
fn read_cert_file(file: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::fs::File::open(file)?
        .take(MAX_CERT_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CERT_FILE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "over {} MiB, too large for certificates",
                MAX_CERT_FILE_BYTES >> 20
            ),
        ));
    }
    Ok(bytes)
}

/// What one file gave.
#[derive(Debug, PartialEq, Eq)]
struct Added {
    /// Its PEM certificate sections.
    found: usize,
    /// Those that did not parse (the PEM or the certificate inside).
    skipped: usize,
}

impl Added {
    fn skipped_warning(&self, var: &str, file: &Path) -> Option<String> {
        (self.skipped > 0).then(|| {
            format!(
                "{var}: skipped {} of the {} certificates in {}, which do not parse; the others are trusted",
                self.skipped,
                self.found,
                file.display()
            )
        })
    }
}

/// Adds every certificate in `pem` that parses to `roots`.
fn add_pem(roots: &mut RootCertStore, pem: &[u8]) -> Added {
    let mut certificates = Vec::new();
    let mut unreadable = 0;
    // Sections of other kinds (keys, CRLs) are passed over by the
    // iterator; a malformed one is an error, and the iterator goes on
    // after it.
    for section in CertificateDer::pem_slice_iter(pem) {
        match section {
            Ok(certificate) => certificates.push(certificate),
            Err(_) => unreadable += 1,
        }
    }
    let found = certificates.len() + unreadable;
    let (_, unparsable) = roots.add_parsable_certificates(certificates);
    Added {
        found,
        skipped: unreadable + unparsable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed P-256 root, made once with `openssl req -x509`: only
    /// parsed here, so its dates do not matter.
    const ROOT: &str = "-----BEGIN CERTIFICATE-----
MIIBmzCCAUGgAwIBAgIUE0re0rzzrcb+b7UTDZaSlnTIoxcwCgYIKoZIzj0EAwIw
IjEgMB4GA1UEAwwXZHJhaW5waXBlIHRydXN0IGZpeHR1cmUwIBcNMjYxMjA2MDE1
MTQ3WhgPMjEyNjExMTIwMTUxNDdaMCIxIDAeBgNVBAMMF2RyYWlucGlwZSB0cnVz
dCBmaXh0dXJlMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8fbpzf21A7OmTMEy
zXvczzbxaDNLgtb4/NewM1jPRmT4ub/KZ2tFynYuyqja59adfYUluqw9Ydeahb/m
H1QdSqNTMFEwHQYDVR0OBBYEFBrx3pcCo7LEcwxc/LLlbydLYvODMB8GA1UdIwQY
MBaAFBrx3pcCo7LEcwxc/LLlbydLYvODMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZI
zj0EAwIDSAAwRQIhANe26lATQ2ANemcsCVEJiwQ6mYy3p49QoMuHvAQdy8K0AiBy
0sBDILMM0vkK3MQX4Od/T97V1BnGdDXqq3I6jxkh8w==
-----END CERTIFICATE-----
";
    /// Valid base64, but not a certificate.
    const NOT_A_CERTIFICATE: &str =
        "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n";
    /// Not base64.
    const NOT_BASE64: &str = "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
    const A_KEY: &str = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";

    fn mozilla() -> usize {
        webpki_roots::TLS_SERVER_ROOTS.len()
    }

    /// A fresh directory for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("drainpipe-trust-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// `roots` with only the variables `vars`; the count and the warnings.
    fn roots_with(vars: &[(&str, OsString)]) -> io::Result<(usize, Vec<String>)> {
        let mut warnings = Vec::new();
        let roots = roots(
            &|name| {
                vars.iter()
                    .find(|(var, _)| *var == name)
                    .map(|(_, value)| value.clone())
            },
            &mut |warning| warnings.push(warning),
        )?;
        Ok((roots.len(), warnings))
    }

    #[test]
    fn each_pem_certificate_is_added_and_what_does_not_parse_is_skipped() {
        let table = [
            (
                ROOT.to_string(),
                Added {
                    found: 1,
                    skipped: 0,
                },
            ),
            (
                format!("{ROOT}{A_KEY}"),
                Added {
                    found: 1,
                    skipped: 0,
                },
            ),
            (
                format!("{NOT_A_CERTIFICATE}{ROOT}"),
                Added {
                    found: 2,
                    skipped: 1,
                },
            ),
            (
                format!("{NOT_BASE64}{ROOT}{NOT_A_CERTIFICATE}"),
                Added {
                    found: 3,
                    skipped: 2,
                },
            ),
            (
                format!("{ROOT}-----BEGIN CERTIFICATE-----\nMIIB"),
                Added {
                    found: 2,
                    skipped: 1,
                },
            ),
            (
                A_KEY.to_string(),
                Added {
                    found: 0,
                    skipped: 0,
                },
            ),
        ];
        for (pem, expected) in table {
            let mut roots = RootCertStore::empty();
            assert_eq!(add_pem(&mut roots, pem.as_bytes()), expected, "{pem}");
            assert_eq!(roots.len(), expected.found - expected.skipped, "{pem}");
        }
    }

    #[test]
    fn ssl_cert_file_adds_what_parses_and_names_the_file_of_what_did_not() {
        let dir = scratch("file");
        let bundle = dir.join("bundle.pem");
        std::fs::write(&bundle, format!("{NOT_A_CERTIFICATE}{ROOT}{NOT_BASE64}")).unwrap();
        let (count, warnings) = roots_with(&[("SSL_CERT_FILE", bundle.clone().into())]).unwrap();
        assert_eq!(count, mozilla() + 1);
        assert_eq!(
            warnings,
            [format!(
                "SSL_CERT_FILE: skipped 2 of the 3 certificates in {}, which do not parse; the others are trusted",
                bundle.display()
            )]
        );
        let key = dir.join("key.pem");
        std::fs::write(&key, A_KEY).unwrap();
        let (count, warnings) = roots_with(&[("SSL_CERT_FILE", key.clone().into())]).unwrap();
        assert_eq!(count, mozilla());
        assert!(
            warnings[0].contains("holds no PEM certificate"),
            "{warnings:?}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn ssl_cert_dir_reads_pem_crt_and_hashed_files_of_each_directory() {
        let first = scratch("dir-first");
        let second = scratch("dir-second");
        std::fs::write(first.join("company.pem"), ROOT).unwrap();
        std::fs::write(first.join("broken.crt"), NOT_A_CERTIFICATE).unwrap();
        std::fs::write(first.join("readme.txt"), NOT_BASE64).unwrap();
        std::fs::write(first.join("key.pem"), A_KEY).unwrap();
        std::fs::write(second.join("5ed36f99.0"), ROOT).unwrap();
        std::fs::write(second.join("5ed36f99.r0"), NOT_BASE64).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(first.join("company.pem"), first.join("0a1b2c3d.0")).unwrap();
        let dirs = std::env::join_paths([&first, &second]).unwrap();
        let (count, warnings) = roots_with(&[("SSL_CERT_DIR", dirs)]).unwrap();
        // company.pem (its hash link read once) and 5ed36f99.0.
        assert_eq!(count, mozilla() + 2);
        assert_eq!(
            warnings,
            [format!(
                "SSL_CERT_DIR: skipped 1 of the 1 certificates in {}, which do not parse; the others are trusted",
                first.join("broken.crt").display()
            )]
        );
        for dir in [first, second] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    #[test]
    fn a_file_or_directory_named_but_missing_is_an_error_naming_it() {
        let missing = std::env::temp_dir().join("drainpipe-trust-no-such-thing");
        let error = roots_with(&[("SSL_CERT_FILE", missing.clone().into())]).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
        assert!(
            error.to_string().starts_with(&format!(
                "SSL_CERT_FILE names {}, which cannot be read",
                missing.display()
            )),
            "{error}"
        );
        let error = roots_with(&[("SSL_CERT_DIR", missing.clone().into())]).unwrap_err();
        assert!(
            error.to_string().starts_with(&format!(
                "SSL_CERT_DIR names {}, which cannot be read as a directory",
                missing.display()
            )),
            "{error}"
        );
    }

    #[test]
    fn unset_or_empty_variables_leave_mozillas_roots_alone() {
        for vars in [
            vec![],
            vec![
                ("SSL_CERT_FILE", OsString::new()),
                ("SSL_CERT_DIR", OsString::new()),
            ],
        ] {
            let (count, warnings) = roots_with(&vars).unwrap();
            assert_eq!((count, warnings.len()), (mozilla(), 0));
        }
    }

    #[test]
    fn openssl_names_are_recognised() {
        for (name, read) in [
            ("root.pem", true),
            ("ROOT.CRT", true),
            ("5ed36f99.0", true),
            ("5ed36f99.12", true),
            ("5ed36f99.r0", false),
            ("5ed36f9.0", false),
            ("ca.der", false),
            ("pem", false),
        ] {
            assert_eq!(is_cert_file_name(Path::new(name)), read, "{name}");
        }
    }
}
