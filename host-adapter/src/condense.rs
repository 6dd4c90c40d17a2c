//! Condensing results on the server→host path, for the proxy and the
//! session: the line tap that feeds the [`Condenser`] a line as it streams,
//! so a result of any size (over the transport limit too) becomes one
//! within the content budget, in bounded memory.
//!
//! A line that lies inside one read is condensed from the frame the framer
//! hands out. A line that crosses reads is tapped: its bytes are held while
//! it is under the budget (at most the budget), and once it passes the
//! budget a condenser takes them and every later byte of the line as it is
//! read. Which lines are `tools/call` results is known only when they end
//! (the TypeScript SDK writes `id` last), so the outcome waits, keyed by the
//! line's offset, for the framer's event for that line.
//!
//! A budget in characters or tokens ([`Clip`]) is condensed by a
//! [`Ladder`] of byte budgets and measured here ([`fits`]): characters with
//! the framer's count, tokens with `o200k_base` (feature `tokens`).

use drainpipe_framer::budget::{
    Clip, CondenseError, Condensed, Ladder, MIN_LINKED_BUDGET, Unit, shown_size, utf16_len,
};

use crate::proxy::spill::{LineSpill, SpillStore};

/// Whether the line that passes the budget now should be spilled (asked
/// once per line).
pub(crate) struct SpillWanted(pub(crate) Box<dyn Fn() -> bool + Send>);

impl std::fmt::Debug for SpillWanted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SpillWanted")
    }
}

/// A condensed line and, with a spill store, the values it cut.
pub(crate) type Tapped = (Result<Condensed, CondenseError>, Option<LineSpill>);

/// The line that crosses reads, for condensing (see the module docs).
#[derive(Debug)]
pub(crate) struct LineTap {
    /// The content budget.
    clip: Clip,
    /// Stream offset of the current line's first byte.
    line_start: u64,
    /// The current line's bytes while it surely fits the budget. Never
    /// more than its amount: past it the condensers have them.
    held: Vec<u8>,
    /// The current line's condensers, once it passed the amount.
    condenser: Option<Ladder>,
    /// Where the values the condenser cuts are kept, if anywhere; and
    /// those of the current line.
    spill: Option<(SpillStore, SpillWanted)>,
    line_spill: Option<LineSpill>,
    /// The outcome for the line that ended in the last read, by its offset.
    finished: Option<(u64, Tapped)>,
    /// Started in the middle of the stream: the bytes up to the first
    /// newline are the end of a line whose start was not seen.
    resyncing: bool,
}

impl LineTap {
    /// A tap from the start of the stream.
    pub(crate) fn new(clip: Clip) -> Self {
        LineTap {
            clip,
            line_start: 0,
            held: Vec::new(),
            condenser: None,
            spill: None,
            line_spill: None,
            finished: None,
            resyncing: false,
        }
    }

    /// A tap whose condensed lines keep what they cut in `store`, when
    /// `wanted` says so as the line passes the budget.
    pub(crate) fn with_spill(mut self, store: Option<(SpillStore, SpillWanted)>) -> Self {
        self.spill = store;
        self
    }

    /// A tap that starts at stream offset `at`, inside a line if
    /// `mid_line`: that line is not tapped.
    pub(crate) fn starting_at(clip: Clip, at: u64, mid_line: bool) -> Self {
        LineTap {
            line_start: at,
            resyncing: mid_line,
            ..LineTap::new(clip)
        }
    }

    /// Takes the read `chunk`, which starts at stream offset `at`.
    pub(crate) fn push(&mut self, chunk: &[u8], at: u64) {
        let Some(first) = memchr::memchr(b'\n', chunk) else {
            if !self.resyncing {
                self.extend(chunk);
            }
            return;
        };
        // The line that was open ends here; lines wholly inside the chunk
        // are condensed from their frames; the last one stays open.
        if !std::mem::take(&mut self.resyncing) {
            self.extend(&chunk[..first]);
        }
        let line_spill = self.line_spill.take();
        let clip = self.clip;
        self.finished = self
            .condenser
            .take()
            .map(|ladder| (self.line_start, (finish(ladder, clip), line_spill)));
        self.held.clear();
        let last = memchr::memrchr(b'\n', chunk).unwrap_or(first);
        self.line_start = at + last as u64 + 1;
        self.extend(&chunk[last + 1..]);
    }

    fn extend(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if let Some(condenser) = self.condenser.as_mut() {
            // An error stays in the condenser; `finish` reports it.
            feed(condenser, bytes, self.line_spill.as_mut());
            return;
        }
        if self.clip.surely_fits(self.held.len() + bytes.len()) {
            self.held.extend_from_slice(bytes);
            return;
        }
        // Past the budget: from here on the line is condensed as it streams.
        // (A budget below the condenser's minimum is refused when the proxy
        // is configured.)
        let store = self
            .spill
            .as_ref()
            .filter(|(_, wanted)| (wanted.0)())
            .map(|(store, _)| store);
        if let Ok((mut condenser, mut line_spill)) = condenser(self.clip, store) {
            feed(&mut condenser, &self.held, line_spill.as_mut());
            feed(&mut condenser, bytes, line_spill.as_mut());
            self.condenser = Some(condenser);
            self.line_spill = line_spill;
        }
        self.held = Vec::new();
    }

    /// The outcome for the line at `offset`, if it crossed reads and passed
    /// the budget.
    pub(crate) fn take(&mut self, offset: u64) -> Option<Result<Condensed, CondenseError>> {
        self.take_spilled(offset).map(|(outcome, _)| outcome)
    }

    /// Like [`LineTap::take`], with the values the line cut.
    pub(crate) fn take_spilled(&mut self, offset: u64) -> Option<Tapped> {
        match &self.finished {
            Some((at, _)) if *at == offset => self.finished.take().map(|(_, tapped)| tapped),
            _ => None,
        }
    }
}

/// The condensers for `clip`, with links and a line spill when there is a
/// store and a rung has room for links.
fn condenser(
    clip: Clip,
    store: Option<&SpillStore>,
) -> Result<(Ladder, Option<LineSpill>), CondenseError> {
    check(clip)?;
    let ladder = Ladder::for_clip(clip)?;
    match store {
        Some(store) if ladder.budgets().any(|b| b >= MIN_LINKED_BUDGET) => {
            Ok((ladder.with_links()?, Some(LineSpill::new(store.clone()))))
        }
        _ => Ok((ladder, None)),
    }
}

/// Whether this build can count in `clip`'s unit: an error for tokens
/// without the `tokens` feature.
pub(crate) fn check(clip: Clip) -> Result<(), CondenseError> {
    if clip.unit == Unit::Tokens && !cfg!(feature = "tokens") {
        return Err(CondenseError::UnitUnavailable);
    }
    Ok(())
}

/// The largest rung that fits `clip`.
fn finish(ladder: Ladder, clip: Clip) -> Result<Condensed, CondenseError> {
    ladder.finish(&mut |line, to_come| fits(clip, line, to_come))
}

/// Whether the response `line` is within `clip` with `to_come` units more
/// (see [`drainpipe_framer::budget::shown_size`] for what is counted).
fn fits(clip: Clip, line: &[u8], to_come: usize) -> bool {
    let size = match clip.unit {
        Unit::Bytes => Some(line.len() as u64),
        Unit::Chars => shown_size(line, &mut utf16_len),
        Unit::Tokens => shown_size(line, &mut count_tokens),
        _ => None,
    };
    size.is_some_and(|size| size + to_come as u64 <= clip.amount as u64)
}

/// Tokens of `text` by `o200k_base`, the vocabulary of OpenAI's current
/// models, built into the binary ([`crate::tokens`]). Without the `tokens`
/// feature, its bytes (never fewer than its tokens).
pub(crate) fn count_tokens(text: &str) -> u64 {
    #[cfg(feature = "tokens")]
    {
        crate::tokens::o200k().count(text) as u64
    }
    #[cfg(not(feature = "tokens"))]
    {
        text.len() as u64
    }
}

/// Feeds `bytes`, reporting cut values to `line_spill`.
fn feed(condenser: &mut Ladder, bytes: &[u8], line_spill: Option<&mut LineSpill>) {
    // An error stays in the condenser; `finish` reports it.
    match line_spill {
        Some(line_spill) => {
            let _ = condenser.feed_spilling(bytes, &mut |event| line_spill.on(event));
            line_spill.flush();
        }
        None => {
            let _ = condenser.feed(bytes);
        }
    }
}

/// Condenses a whole frame (without its newline).
pub(crate) fn condense_frame(frame: &[u8], clip: Clip) -> Result<Condensed, CondenseError> {
    condense_frame_spilling(frame, clip, None).0
}

/// Condenses a whole frame, keeping what it cuts in `store`.
pub(crate) fn condense_frame_spilling(
    frame: &[u8],
    clip: Clip,
    store: Option<&SpillStore>,
) -> Tapped {
    let (mut condenser, mut line_spill) = match condenser(clip, store) {
        Ok(made) => made,
        Err(error) => return (Err(error), None),
    };
    feed(&mut condenser, frame, line_spill.as_mut());
    (finish(condenser, clip), line_spill)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_across_reads_is_condensed_and_found_by_its_offset() {
        let text = "t".repeat(40_000);
        let line = format!(
            r#"{{"result":{{"content":[{{"type":"text","text":"{text}"}}]}},"jsonrpc":"2.0","id":3}}"#
        );
        let stream = format!("{{\"a\":1}}\n{line}\n{{\"b\":2}}\n");
        let start = stream.find(&line).unwrap() as u64;
        let mut tap = LineTap::new(Clip::bytes(8 << 10));
        let mut at = 0u64;
        let mut found = None;
        for chunk in stream.as_bytes().chunks(4096) {
            tap.push(chunk, at);
            at += chunk.len() as u64;
            if let Some(outcome) = tap.take(start) {
                found = Some(outcome);
            }
        }
        match found.expect("condensed").expect("no error") {
            Condensed::Cut { frame, .. } => assert!(frame.len() <= 8 << 10),
            other => panic!("{other:?}"),
        }
    }
}
