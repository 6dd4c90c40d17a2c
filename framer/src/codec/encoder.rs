//! The sending half: one message, one line.

use core::fmt;
use std::io;

use bytes::{BufMut, BytesMut};
use tokio_util::codec::Encoder;

use super::FramerCodec;

/// Why [`FramerCodec`] refused to encode a message, or why writing failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum EncodeError {
    /// The message holds a raw `\n`: on the wire it would become two lines
    /// and desynchronise the peer. Serialise JSON compactly (newlines inside
    /// strings are escaped as `\n`).
    ContainsNewline {
        /// Offset of the first newline in the message.
        at: usize,
    },
    /// The message is longer than the codec's
    /// [`max_frame_bytes`](crate::Config::with_max_frame_bytes): a peer with
    /// the same limit would discard it, and the request would never be
    /// answered.
    TooLarge {
        /// The message's length in bytes, without the newline.
        len: usize,
        /// The limit, in bytes.
        max_frame_bytes: usize,
    },
    /// The underlying writer failed.
    Io(io::Error),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::ContainsNewline { at } => {
                write!(
                    f,
                    "message contains a raw newline at byte {at}; it would split into two lines"
                )
            }
            EncodeError::TooLarge {
                len,
                max_frame_bytes,
            } => {
                write!(
                    f,
                    "message is {len} bytes, over the transport limit of {max_frame_bytes} bytes"
                )
            }
            EncodeError::Io(error) => write!(f, "writing the message failed: {error}"),
        }
    }
}

impl std::error::Error for EncodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EncodeError::Io(error) => Some(error),
            _ => None,
        }
    }
}

impl From<io::Error> for EncodeError {
    fn from(error: io::Error) -> Self {
        EncodeError::Io(error)
    }
}

/// Writes `message` and a `\n`, after checking that it is one line within the
/// limit. Accepts anything byte-like: `String`, `&str`, `Vec<u8>`, `Bytes`.
///
/// ```
/// use bytes::BytesMut;
/// use drainpipe_framer::codec::{EncodeError, FramerCodec};
/// use drainpipe_framer::Config;
/// use tokio_util::codec::Encoder;
///
/// let mut codec = FramerCodec::new(Config::default().with_max_frame_bytes(64));
/// let mut out = BytesMut::new();
/// codec.encode(r#"{"jsonrpc":"2.0","method":"ping"}"#, &mut out).unwrap();
/// assert_eq!(&out[..], b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n");
///
/// let refused = codec.encode("{\"a\":\n1}", &mut out).unwrap_err();
/// assert!(matches!(refused, EncodeError::ContainsNewline { at: 5 }));
/// ```
impl<T: AsRef<[u8]>> Encoder<T> for FramerCodec {
    type Error = EncodeError;

    fn encode(&mut self, message: T, dst: &mut BytesMut) -> Result<(), EncodeError> {
        let message = message.as_ref();
        let max_frame_bytes = self.config().max_frame_bytes();
        if message.len() > max_frame_bytes {
            return Err(EncodeError::TooLarge {
                len: message.len(),
                max_frame_bytes,
            });
        }
        if let Some(at) = memchr::memchr(b'\n', message) {
            return Err(EncodeError::ContainsNewline { at });
        }
        dst.reserve(message.len() + 1);
        dst.put_slice(message);
        dst.put_u8(b'\n');
        Ok(())
    }
}
