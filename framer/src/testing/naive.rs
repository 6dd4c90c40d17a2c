//! The reference framer: deliberately simple, whole input at once.
//!
//! It splits on `\n`, strips one `\r`, and decides each line with `serde_json`
//! and `core::str::from_utf8` instead of the streaming validator. It is slow
//! and obviously right; the real framer must agree with it on every input and
//! every chunking (see [`super::Outcome`] for what "agree" means).

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use super::{Outcome, OwnedEnvelope, OwnedId};
use crate::{Config, Envelope};

/// The outcomes the reference framer predicts for `stream`, ended by EOF if
/// `eof` is set.
pub fn reference_outcomes(config: &Config, stream: &[u8], eof: bool) -> Vec<Outcome> {
    let mut out = Vec::new();
    let mut offset = 0u64;
    let mut rest = stream;
    while let Some(newline) = rest.iter().position(|&b| b == b'\n') {
        line_outcome(config, &rest[..newline], offset, false, &mut out);
        offset += newline as u64 + 1;
        rest = &rest[newline + 1..];
    }
    if eof && !rest.is_empty() {
        line_outcome(config, rest, offset, true, &mut out);
    }
    out
}

fn line_outcome(config: &Config, line: &[u8], offset: u64, at_eof: bool, out: &mut Vec<Outcome>) {
    let len = line.len() as u64;
    let content = line.strip_suffix(b"\r").unwrap_or(line);
    let first = content
        .iter()
        .find(|&&b| !matches!(b, b' ' | b'\t' | b'\r'));
    let lost = if at_eof {
        Outcome::LostAtEof { offset, len }
    } else {
        Outcome::Rejected {
            offset,
            len,
            envelope: None,
        }
    };
    if content.len() > config.max_frame_bytes() {
        // A valid message but for its size: the framer follows it to its
        // end and reports the envelope of the whole line.
        let valid = !at_eof && config.json_validation() && valid_message(config, content);
        out.push(match lost {
            Outcome::Rejected { offset, len, .. } if valid => Outcome::Rejected {
                offset,
                len,
                envelope: Some(serde_envelope(content)),
            },
            lost => lost,
        });
        return;
    }
    let Some(&first) = first else { return }; // blank
    if at_eof {
        out.push(lost);
        return;
    }
    if !matches!(first, b'{' | b'[' | b'"') {
        out.push(Outcome::NotProtocol {
            offset,
            line: content.to_vec(),
        });
        return;
    }
    if core::str::from_utf8(content).is_err() {
        out.push(lost);
        return;
    }
    if !config.json_validation() {
        out.push(Outcome::Frame {
            offset,
            bytes: content.to_vec(),
            envelope: OwnedEnvelope::default(),
        });
        return;
    }
    if !valid_message(config, content) {
        out.push(lost);
        return;
    }
    out.push(Outcome::Frame {
        offset,
        bytes: content.to_vec(),
        envelope: serde_envelope(content),
    });
}

/// Whether `content` (valid UTF-8, starting like JSON) is one message the
/// framer accepts: an object, within the depth limit, that `serde_json`
/// accepts.
fn valid_message(config: &Config, content: &[u8]) -> bool {
    let first = content
        .iter()
        .find(|&&b| !matches!(b, b' ' | b'\t' | b'\r'));
    first == Some(&b'{')
        && core::str::from_utf8(content).is_ok()
        && nesting_depth(content) <= config.max_depth() as usize
        && serde_accepts(content)
}

/// Whether `serde_json` accepts the bytes as one JSON value.
pub(super) fn serde_accepts(bytes: &[u8]) -> bool {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.disable_recursion_limit();
    serde::de::Deserialize::deserialize(&mut de)
        .map(|_: IgnoredAny| ())
        .and_then(|_| de.end())
        .is_ok()
}

/// The deepest nesting of objects and arrays, counted outside strings.
pub(super) fn nesting_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0, false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The envelope as `serde_json` sees it: last duplicate key wins, values
/// kept as raw tokens.
pub fn serde_envelope(message: &[u8]) -> OwnedEnvelope {
    let Ok(map) = serde_json::from_slice::<BTreeMap<KeyBytes, &RawValue>>(message) else {
        return OwnedEnvelope::default();
    };
    let raw = |key: &str| map.get(key.as_bytes()).map(|v| v.get().as_bytes());
    let string_contents = |token: &[u8]| {
        let inner = token.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
        (inner.len() <= Envelope::MAX_FIELD_BYTES).then(|| inner.to_vec())
    };
    let id = raw("id").and_then(|token| match token.first()? {
        b'"' => string_contents(token).map(OwnedId::String),
        b'n' => Some(OwnedId::Null),
        b'-' | b'0'..=b'9' if token.len() <= Envelope::MAX_FIELD_BYTES => {
            Some(OwnedId::Number(token.to_vec()))
        }
        _ => None,
    });
    OwnedEnvelope {
        jsonrpc: raw("jsonrpc").and_then(string_contents),
        id,
        method: raw("method").and_then(string_contents),
        has_result: map.contains_key(&b"result"[..]),
        has_error: map.contains_key(&b"error"[..]),
    }
}

/// A key as `serde_json` decodes it to bytes, so a key it cannot make a
/// `String` of (a lone surrogate escape) is kept rather than failing the map.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct KeyBytes(Vec<u8>);

impl core::borrow::Borrow<[u8]> for KeyBytes {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

impl<'de> serde::Deserialize<'de> for KeyBytes {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct Bytes;
        impl serde::de::Visitor<'_> for Bytes {
            type Value = KeyBytes;
            fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str("an object key")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<KeyBytes, E> {
                Ok(KeyBytes(v.to_vec()))
            }
            fn visit_str<E>(self, v: &str) -> Result<KeyBytes, E> {
                Ok(KeyBytes(v.as_bytes().to_vec()))
            }
        }
        de.deserialize_bytes(Bytes)
    }
}
