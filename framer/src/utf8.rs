//! UTF-8 validation of a line that may arrive in pieces split anywhere,
//! including inside a code point.
//!
//! The bulk work is `simdutf8`; this module only carries the up to three bytes
//! of a code point that a chunk boundary cut in two.

use simdutf8::compat::from_utf8;

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
            match from_utf8(&self.pending[..filled]) {
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
        match from_utf8(rest) {
            Ok(_) => done(rest).map(Ok),
            Err(e) => {
                done(&rest[..e.valid_up_to()])?;
                if e.error_len().is_some() {
                    return Ok(Err(()));
                }
                let tail = &rest[e.valid_up_to()..];
                self.pending[..tail.len()].copy_from_slice(tail);
                self.pending_len = tail.len() as u8;
                Ok(Ok(()))
            }
        }
    }

    /// Bytes of an unfinished code point held back from the consumer.
    #[inline]
    pub(crate) fn held(&self) -> usize {
        usize::from(self.pending_len)
    }
}

/// The length of the UTF-8 sequence that `lead` starts. Only called on the
/// first byte of a carried, so far valid, incomplete sequence.
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
    }
}
