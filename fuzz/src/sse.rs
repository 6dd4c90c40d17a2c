//! The event-stream framer against the reference parser, on bodies built
//! from SSE pieces with a mix of line ends and on raw bytes, in pieces cut
//! where the input says: see `drainpipe_framer::testing::sse`.

use drainpipe_framer::testing::sse::{
    check_bytes, check_lines, check_relay, join_lines, recipe_lines, sse_config,
};

/// One fuzz input, decoded from bytes: a selector byte (the limits), a
/// flags byte (bit 0: the stream ends; bit 1: its last line does), then
/// three sections each led by its length byte (piece lengths, line ends,
/// a recipe of pieces and line breaks), then raw bytes to the end. A
/// short input leaves the later parts empty.
#[derive(Debug, Default)]
pub struct SseInput {
    selector: u8,
    eof: bool,
    ended: bool,
    lengths: Vec<u8>,
    ends: Vec<u8>,
    recipe: Vec<u8>,
    raw: Vec<u8>,
}

impl SseInput {
    /// Reads the layout above; every byte string is an input.
    pub fn decode(data: &[u8]) -> SseInput {
        let mut rest = data;
        let mut byte = || {
            let (&b, tail) = rest.split_first()?;
            rest = tail;
            Some(b)
        };
        let selector = byte().unwrap_or(0);
        let flags = byte().unwrap_or(3);
        let mut section = || {
            let (&len, tail) = rest.split_first()?;
            let (bytes, tail) = tail.split_at(usize::from(len).min(tail.len()));
            rest = tail;
            Some(bytes.to_vec())
        };
        let lengths = section().unwrap_or_default();
        let ends = section().unwrap_or_default();
        let recipe = section().unwrap_or_default();
        SseInput {
            selector,
            eof: flags & 1 != 0,
            ended: flags & 2 != 0,
            lengths,
            ends,
            recipe,
            raw: rest.to_vec(),
        }
    }

    /// The bytes that decode to this input.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![
            self.selector,
            u8::from(self.eof) | u8::from(self.ended) << 1,
        ];
        for section in [&self.lengths, &self.ends, &self.recipe] {
            out.push(section.len() as u8);
            out.extend_from_slice(section);
        }
        out.extend_from_slice(&self.raw);
        out
    }
}

/// Pushed whole, one byte at a time and in the input's lengths, the body
/// from the recipe gives the same events, the reference's, and with LF
/// line ends the same events but for their offsets; the raw bytes give
/// the reference's events; the memory bound holds after every push.
pub fn check_sse(input: &SseInput) {
    let config = sse_config(input.selector);
    let lengths: Vec<usize> = input.lengths.iter().map(|&n| usize::from(n % 64)).collect();
    let lines = recipe_lines(&input.recipe);
    check_lines(
        config,
        &lines,
        &input.ends,
        input.ended,
        &lengths,
        input.eof,
    );
    check_bytes(config, &input.raw, &lengths, input.eof);
    check_relay(&input.raw, &lengths, input.eof);
    check_relay(&join_lines(&lines, &input.ends, input.ended), &lengths, input.eof);
}

/// Seeds: bodies as the SDKs send them (priming event, `event: message`,
/// id, JSON-RPC data, keep-alives, CRLF), and the corner cases the rules
/// name, each as a recipe of the shared pieces or as raw bytes.
pub fn seeds() -> Vec<Vec<u8>> {
    let raw: [&[u8]; 10] = [
        b"id: 1\ndata:\n\nevent: message\nid: 2\ndata: {\"result\":{},\"jsonrpc\":\"2.0\",\"id\":1}\n\n",
        b": ping\r\n\r\nretry: 3000\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\n",
        b"\xEF\xBB\xBFdata: a\rdata: b\r\rdata\n\n",
        b"id: a\0b\ndata: x\n\nid\ndata: y\n\n",
        b"data: {\"id\":1,\ndata: \"result\":[1,2]}\n\ndata: [1]\n\ndata: {\"a\":\"\xff\"}\n\n",
        b"retry: 1x\nretry: 99999999999999999999999\nretry:\n\n",
        b"data: {\"result\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\",\"id\":9}\nid: 7\n\n",
        b"data: {\"id\":1,\"result\":0}\r",
        b"\xEF\xBB",
        b"data: {\"id\":2",
    ];
    let mut seeds = Vec::new();
    for (n, body) in raw.iter().enumerate() {
        let n = n as u8;
        for selector in [6, 4 + 7 * n, 1 + 7 * n] {
            let input = SseInput {
                selector,
                eof: selector != 6,
                ended: n.is_multiple_of(2),
                lengths: vec![1 + n, 7, 0],
                ends: vec![n, n + 1, n + 2],
                // Pieces and line breaks (below 8) of the shared set.
                recipe: vec![8 + n, 9, 0, 10 + n, 11, 0, 0, 12 + 2 * n, 1, 1],
                raw: body.to_vec(),
            };
            seeds.push(input.encode());
        }
    }
    seeds
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every seed decodes to the input it was written from, and passes.
    #[test]
    fn the_seeds_decode_and_pass() {
        for seed in seeds() {
            let input = SseInput::decode(&seed);
            assert_eq!(input.encode(), seed);
            check_sse(&input);
        }
        check_sse(&SseInput::decode(b""));
    }
}
