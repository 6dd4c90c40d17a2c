//! The framer's limits: what each one protects, and in which unit.

/// Limits and switches for one [`Framer`](crate::Framer).
///
/// Every limit is counted in **bytes on the wire**, never in characters: a
/// peer that counts JavaScript string length or Unicode scalars instead would
/// let a multibyte payload through at up to four times the intended size.
///
/// ```
/// use drainpipe_framer::Config;
/// let config = Config::default().with_max_frame_bytes(1 << 20).with_max_depth(64);
/// assert_eq!(config.max_frame_bytes(), 1 << 20);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    max_frame_bytes: usize,
    max_depth: u32,
    validate_json: bool,
}

impl Config {
    /// Default transport limit: 4 MiB per message.
    pub const DEFAULT_MAX_FRAME_BYTES: usize = 4 << 20;
    /// Default nesting limit: 128 open objects or arrays.
    pub const DEFAULT_MAX_DEPTH: u32 = 128;

    /// The defaults: 4 MiB frames, depth 128, strict JSON validation on.
    pub const fn new() -> Self {
        Config {
            max_frame_bytes: Self::DEFAULT_MAX_FRAME_BYTES,
            max_depth: Self::DEFAULT_MAX_DEPTH,
            validate_json: true,
        }
    }

    /// The transport limit: the largest message accepted, in bytes of the
    /// line without its `\n` (and without a `\r` just before it).
    ///
    /// Protects the host's **memory and parser time**. A line that passes it
    /// is never buffered past the limit and never parsed: the framer reports
    /// [`Event::Oversize`](crate::Event::Oversize) the moment the limit is
    /// crossed and discards the rest up to the next newline, so a server that
    /// writes a gigabyte on one line costs the host at most this many bytes.
    pub const fn with_max_frame_bytes(mut self, max_frame_bytes: usize) -> Self {
        self.max_frame_bytes = max_frame_bytes;
        self
    }

    /// The nesting limit for strict JSON validation: the most objects and
    /// arrays that may be open at once.
    ///
    /// Protects **memory and stack depth** of whoever parses the frame next:
    /// `[[[[…` a million levels deep is a few bytes per level on the wire but
    /// overflows recursive parsers. The validator itself keeps one bit per
    /// level, so its memory is `O(max_depth)`.
    pub const fn with_max_depth(mut self, max_depth: u32) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// Whether JSON lines are validated strictly (RFC 8259, top level must be
    /// an object) and their envelope peeked. On by default.
    ///
    /// With it off the framer only frames, enforces the byte limit and checks
    /// UTF-8; every line that starts like JSON is handed out as a frame.
    pub const fn with_json_validation(mut self, validate_json: bool) -> Self {
        self.validate_json = validate_json;
        self
    }

    /// See [`Config::with_max_frame_bytes`].
    pub const fn max_frame_bytes(&self) -> usize {
        self.max_frame_bytes
    }

    /// See [`Config::with_max_depth`].
    pub const fn max_depth(&self) -> u32 {
        self.max_depth
    }

    /// See [`Config::with_json_validation`].
    pub const fn json_validation(&self) -> bool {
        self.validate_json
    }
}

impl Default for Config {
    fn default() -> Self {
        Self::new()
    }
}
