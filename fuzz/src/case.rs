//! The byte layout shared by the stream targets (`chunking`, `differential`)
//! and their seed corpus: a four-byte header, then the stream itself.
//!
//! The stream is a plain suffix of the input on purpose: a seed file is
//! `header ++ stream`, written by hand or by the seed generator, and libFuzzer's
//! byte mutations act directly on the stream. (A derived `Arbitrary` struct
//! would read collection lengths from the end of the input and scramble it.)
//!
//! | byte | meaning |
//! |------|---------|
//! | 0 | `max_frame_bytes`: `0..=199` as is, `200..=254` → `256 + 64·(b − 200)`, `255` → the 4 MiB default |
//! | 1 | `max_depth`: high bit set → the low 7 bits, else the default (128) |
//! | 2 | bit 0: JSON validation **off**; bits 1–3: [`SplitMode`]; bit 7: end the stream with `finish` |
//! | 3 | seed of the random split lengths |
//! | 4.. | the stream |

use drainpipe_framer::Config;
use drainpipe_framer::testing::Rng;

/// Header bytes before the stream.
pub const HEADER_BYTES: usize = 4;

/// How a stream is cut into the chunks pushed into the framer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitMode {
    /// One push of the whole stream (the reference chunking).
    Whole,
    /// One byte per push.
    OneByte,
    /// A cut inside every multibyte UTF-8 sequence and between every `\r`
    /// and the byte after it, plus after every newline.
    Boundaries,
    /// Random lengths of 1 to 8 bytes.
    Tiny,
    /// Random lengths of 0 to 64 bytes (empty pushes included).
    Small,
    /// Random lengths of 1 to 4096 bytes.
    Large,
}

impl SplitMode {
    const ALL: [SplitMode; 6] = [
        SplitMode::Whole,
        SplitMode::OneByte,
        SplitMode::Boundaries,
        SplitMode::Tiny,
        SplitMode::Small,
        SplitMode::Large,
    ];

    fn bits(self) -> u8 {
        SplitMode::ALL.iter().position(|&m| m == self).unwrap_or(0) as u8
    }

    pub(crate) fn from_bits(bits: u8) -> Self {
        // 8 codes for 6 modes: the two spare codes mean "random tiny", the
        // chunking most likely to find state carried wrongly across pushes.
        SplitMode::ALL
            .get(usize::from(bits))
            .copied()
            .unwrap_or(SplitMode::Tiny)
    }
}

/// One decoded input of a stream target.
#[derive(Clone, Debug)]
pub struct Case<'a> {
    /// The framer's limits.
    pub config: Config,
    /// How to cut the stream.
    pub split: SplitMode,
    /// Seed of the random split lengths.
    pub split_seed: u8,
    /// Whether the stream is ended with `finish`.
    pub eof: bool,
    /// The bytes pushed.
    pub stream: &'a [u8],
}

impl<'a> Case<'a> {
    /// Decodes a fuzzer input; inputs shorter than the header are a bare
    /// stream with the default header.
    pub fn decode(data: &'a [u8]) -> Self {
        let (header, stream) = match data.split_first_chunk::<HEADER_BYTES>() {
            Some((header, stream)) => (*header, stream),
            None => ([255, 0, 0x80, 0], data),
        };
        let [limit, depth, flags, split_seed] = header;
        let max_frame_bytes = match limit {
            0..=199 => usize::from(limit),
            200..=254 => 256 + 64 * usize::from(limit - 200),
            255 => Config::DEFAULT_MAX_FRAME_BYTES,
        };
        let max_depth = if depth & 0x80 != 0 {
            u32::from(depth & 0x7F)
        } else {
            Config::DEFAULT_MAX_DEPTH
        };
        Case {
            config: Config::default()
                .with_max_frame_bytes(max_frame_bytes)
                .with_max_depth(max_depth)
                .with_json_validation(flags & 1 == 0),
            split: SplitMode::from_bits((flags >> 1) & 0b111),
            split_seed,
            eof: flags & 0x80 != 0,
            stream,
        }
    }

    /// The chunk lengths for [`drainpipe_framer::testing::run_split`]
    /// (an empty list means one push of the whole stream).
    pub fn lengths(&self) -> Vec<usize> {
        split_lengths(self.stream, self.split, self.split_seed)
    }
}

/// Encodes a header for a seed file; the inverse of [`Case::decode`] for the
/// values it can express.
pub fn encode_header(
    max_frame_bytes: Option<u8>,
    validate_json: bool,
    split: SplitMode,
    eof: bool,
) -> [u8; 4] {
    let limit = max_frame_bytes.map_or(255, |n| n.min(199));
    let flags = u8::from(!validate_json) | (split.bits() << 1) | if eof { 0x80 } else { 0 };
    [limit, 0, flags, 0x5A]
}

/// Chunk lengths that cut `stream` the way `mode` says.
pub fn split_lengths(stream: &[u8], mode: SplitMode, seed: u8) -> Vec<usize> {
    let mut rng = Rng::new(u64::from(seed));
    let mut random = |lo: usize, hi: usize| {
        let mut lengths = Vec::new();
        let mut total = 0;
        while total < stream.len() {
            let len = lo + rng.below(hi - lo + 1);
            lengths.push(len);
            total += len;
        }
        lengths
    };
    match mode {
        SplitMode::Whole => Vec::new(),
        SplitMode::OneByte => vec![1],
        SplitMode::Tiny => random(1, 8),
        SplitMode::Small => random(0, 64),
        SplitMode::Large => random(1, 4096),
        SplitMode::Boundaries => {
            let mut lengths = Vec::new();
            let mut last_cut = 0;
            for at in 1..stream.len() {
                let before = stream[at - 1];
                let here = stream[at];
                let inside_code_point = before >= 0xC0 || (0x80..0xC0).contains(&here);
                if before == b'\r' || before == b'\n' || inside_code_point {
                    lengths.push(at - last_cut);
                    last_cut = at;
                }
            }
            // The final length covers the rest; a trailing huge value is never
            // cycled because the stream ends inside it.
            lengths.push(usize::MAX);
            lengths
        }
    }
}
