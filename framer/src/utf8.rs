//! UTF-8 validation of a line that may arrive in pieces split anywhere,
//! including inside a code point.
//!
//! The bulk work is `simdutf8`; this module only carries the up to three bytes
//! of a code point that a chunk boundary cut in two.

/// How many leading bytes of `bytes` are valid UTF-8: all of them, or up to
/// the first invalid or cut code point (`core`'s `valid_up_to`).
///
/// Valid input, the usual case, is read once by `simdutf8`'s fast check,
/// which only says yes or no: unlike its `compat` check it does not stop to
/// keep a position after every block, and it has one loop that is not left
/// and entered again at every switch between ASCII and other text (in the
/// WebAssembly component each entry costs a loop check and its vector
/// constants again, and text with an accented word in every message
/// switches at every message). Only input found invalid is read again, by
/// `core`, to say where. A code point cut by the end is left out before
/// the check, so a valid input cut inside its last code point (a chunk's
/// end) is still read once.
pub(crate) fn valid_up_to(bytes: &[u8]) -> usize {
    let uncut = &bytes[..uncut_len(bytes)];
    if simdutf8::basic::from_utf8(uncut).is_ok() {
        return uncut.len();
    }
    core::str::from_utf8(uncut).map_or_else(|e| e.valid_up_to(), |_| uncut.len())
}

/// The length of `bytes` without a code point cut short at its end (up to
/// three bytes that start a sequence they do not finish). An invalid end is
/// kept: the check finds it.
fn uncut_len(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=n.min(3) {
        let b = bytes[n - back];
        if b & 0xC0 != 0x80 {
            return if b >= 0xC0 && sequence_width(b) > back {
                n - back
            } else {
                n
            };
        }
    }
    n
}

/// Validation state of one line.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Utf8Stream {
    /// The start of a code point that the previous piece ended inside.
    pending: [u8; 4],
    pending_len: u8,
}

impl Utf8Stream {
    /// Checks the next piece of the line and returns how many of its leading
    /// bytes are now known to be valid: bytes of a code point cut by the end
    /// of the piece are held back until it completes. `done` receives, first,
    /// a carried code point completed by this piece, then the valid part of
    /// the piece, so a consumer sees only confirmed UTF-8 in stream order.
    ///
    /// On error returns `Err(n)`: the invalid code point starts `n` bytes
    /// before the end of what `done` received, i.e. at the line offset where
    /// the confirmed bytes stop.
    #[inline]
    pub(crate) fn feed<E>(
        &mut self,
        piece: &[u8],
        mut done: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<Result<(), ()>, E> {
        let mut rest = piece;
        if self.pending_len > 0 {
            let have = usize::from(self.pending_len);
            let width = sequence_width(self.pending[0]);
            let take = (width - have).min(rest.len());
            self.pending[have..have + take].copy_from_slice(&rest[..take]);
            let filled = have + take;
            match core::str::from_utf8(&self.pending[..filled]) {
                Ok(_) => {
                    self.pending_len = 0;
                    let completed = self.pending;
                    done(&completed[..filled])?;
                }
                Err(e) if e.error_len().is_none() => {
                    self.pending_len = filled as u8;
                    return Ok(Ok(()));
                }
                Err(_) => {
                    self.pending_len = 0;
                    return Ok(Err(()));
                }
            }
            rest = &rest[take..];
        }
        let valid = valid_up_to(rest);
        done(&rest[..valid])?;
        // What is left starts with an invalid or a cut code point (or is
        // empty): `core` says which, reading no further than that one.
        let tail = &rest[valid..];
        match core::str::from_utf8(tail) {
            Ok(_) => Ok(Ok(())),
            Err(e) if e.error_len().is_none() => {
                self.pending[..tail.len()].copy_from_slice(tail);
                self.pending_len = tail.len() as u8;
                Ok(Ok(()))
            }
            Err(_) => Ok(Err(())),
        }
    }

    /// Bytes of an unfinished code point held back from the consumer.
    #[inline]
    pub(crate) fn held(&self) -> usize {
        usize::from(self.pending_len)
    }
}

/// The length of the UTF-8 sequence that `lead` starts (a byte of
/// `0xC0..`; 4 for those no sequence starts with).
fn sequence_width(lead: u8) -> usize {
    match lead {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_split(bytes: &[u8]) -> bool {
        let whole = core::str::from_utf8(bytes).is_ok();
        for cut1 in 0..=bytes.len() {
            for cut2 in cut1..=bytes.len() {
                let mut s = Utf8Stream::default();
                let mut seen = alloc::vec::Vec::new();
                let mut feed = |piece: &[u8]| {
                    s.feed(piece, |ok: &[u8]| {
                        seen.extend_from_slice(ok);
                        Ok::<(), ()>(())
                    })
                    .unwrap()
                    .is_ok()
                };
                let ok = feed(&bytes[..cut1]) && feed(&bytes[cut1..cut2]) && feed(&bytes[cut2..]);
                let ok = ok && s.held() == 0;
                assert_eq!(ok, whole, "{bytes:?} cut at {cut1},{cut2}");
                if ok {
                    assert_eq!(seen, bytes);
                } else {
                    // What was confirmed is exactly the valid prefix.
                    let valid = core::str::from_utf8(bytes).unwrap_err().valid_up_to();
                    assert!(seen.len() <= valid);
                }
            }
        }
        whole
    }

    #[test]
    fn splits_anywhere_agree_with_core() {
        assert!(check_split("aé€😀z".as_bytes()));
        assert!(check_split("😀😀".as_bytes()));
        assert!(!check_split(b"a\xF0\x9F\x98"));
        assert!(!check_split(b"\xC3\x28ab"));
        assert!(!check_split(b"\xED\xA0\x80"));
        assert!(!check_split(b"\xF4\x90\x80\x80"));
        assert!(!check_split(b"ab\xFF"));
        assert!(!check_split(b"\xE2\x82"));
        // Past `simdutf8`'s 64-byte blocks, cut inside the last code point.
        let long = ["é".repeat(40), "😀".into()].concat();
        assert!(check_split(long.as_bytes()));
        assert!(!check_split(&long.as_bytes()[..long.len() - 1]));
        assert!(!check_split([long.as_bytes(), b"\xFF"].concat().as_slice()));
    }

    /// Every string of up to four bytes drawn from ASCII, continuation
    /// bytes, every kind of lead and never-valid bytes, after an ASCII and a
    /// long valid prefix (past `simdutf8`'s 64-byte blocks).
    #[test]
    fn valid_up_to_agrees_with_core() {
        const BYTES: [u8; 14] = [
            b'a', 0x80, 0x9F, 0xA0, 0xBF, 0xC2, 0xC0, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xFF,
        ];
        let long = "é".repeat(40);
        for prefix in ["", "x", long.as_str()] {
            let mut tails = alloc::vec![alloc::vec::Vec::new()];
            for _ in 0..4 {
                tails = tails
                    .iter()
                    .flat_map(|t| {
                        BYTES.iter().map(move |&b| {
                            let mut t = t.clone();
                            t.push(b);
                            t
                        })
                    })
                    .collect();
                for tail in &tails {
                    let bytes = [prefix.as_bytes(), tail].concat();
                    let expected = core::str::from_utf8(&bytes)
                        .map_or_else(|e| e.valid_up_to(), |_| bytes.len());
                    assert_eq!(valid_up_to(&bytes), expected, "{bytes:x?}");
                }
            }
        }
    }
}
