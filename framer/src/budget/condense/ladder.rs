//! Condensing into a budget in characters or tokens: a [`Ladder`] of byte
//! budgets, one condenser per rung, fed the same bytes; at the end the
//! largest rung whose result fits the budget in its unit is taken.
//!
//! A condenser plans its cuts in bytes as the response streams past, and
//! how many bytes a character or a token takes is known only once the text
//! is read (one for ASCII, three for most CJK, six for a `\uXXXX` escape;
//! three to five per token of prose or code). So instead of guessing, each
//! rung condenses into its own byte budget and the results are measured.
//! The smallest rung is the amount itself, which always fits (no unit is
//! more than a byte, see [`super::super::units`]); the rungs above it are
//! at most 1½ times apart, so little of the room is left unused: about a
//! third at worst, when the best fit lies just under the next rung.
//!
//! Costs: memory is the sum of the rungs (21¼ times the amount for
//! characters), and every byte of the response is read by each condenser
//! fed; [`Clip::rungs`](super::super::Clip::rungs) bounds both. A rung is
//! fed only once the line is long enough for it to cut anything: a line at
//! least `WHOLE_ROOM` bytes under a rung's budget is written whole, so until
//! the line passes that, the rung waits (the line so far is held, at most
//! the largest rung's budget) and is then fed what it missed. Rungs still
//! waiting at the end would all have kept the line whole: the smallest is
//! fed it, and the others end as it did. A line of a few times the amount
//! is condensed by the rungs near the amount only, and a line no longer than
//! the amount by one rung and the one that ends for the others. The rungs up
//! to the spilling one are always fed: their reports come as the line is
//! read.
//!
//! Spilling: only one rung reports the values it cuts (the smallest that
//! can keep links, which cuts the most); the result taken links the values
//! it cut by their pointers to that rung's numbers. An array is reported
//! from the first element that rung left out, so a larger rung that kept
//! fewer elements of it is not taken: the elements between would be
//! neither kept nor linked.

use alloc::vec::Vec;

use crate::budget::{Clip, Unit};

use super::{
    CondenseError, Condensed, Condenser, Keep, LINK_NOTICE, Links, MIN_LINKED_BUDGET, Spill,
    WHOLE_ROOM,
};

/// One condenser per byte budget, fed alike (see the module docs).
#[derive(Debug)]
pub struct Ladder {
    /// Smallest budget first.
    rungs: Vec<Condenser>,
    /// The rung whose cut values are reported for spilling.
    spiller: Option<usize>,
    /// The rungs fed the line: the smallest `fed`; the others wait (see the
    /// module docs).
    fed: usize,
    /// The line so far, while a rung waits.
    held: Vec<u8>,
}

/// The longest line a rung of `budget` bytes surely writes whole.
fn keeps_whole(budget: usize) -> usize {
    budget.saturating_sub(WHOLE_ROOM)
}

impl Ladder {
    /// A ladder over `budgets` (bytes; sorted and deduplicated here). Every
    /// budget must be at least [`MIN_CONDENSE_BUDGET`](super::MIN_CONDENSE_BUDGET).
    pub fn new(budgets: &[usize]) -> Result<Self, CondenseError> {
        let mut budgets = budgets.to_vec();
        budgets.sort_unstable();
        budgets.dedup();
        if budgets.is_empty() {
            return Err(CondenseError::BudgetTooSmall { budget: 0 });
        }
        let rungs = budgets
            .into_iter()
            .map(Condenser::new)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Ladder {
            rungs,
            spiller: None,
            fed: 1,
            held: Vec::new(),
        })
    }

    /// A ladder over `clip`'s rungs ([`Clip::rungs`]) whose notices name
    /// the budget as `clip` does (`a budget of 50000 characters`), keeping
    /// of each cut text what `clip` keeps.
    pub fn for_clip(clip: Clip) -> Result<Self, CondenseError> {
        let mut ladder = Ladder::new(&clip.rungs())?;
        let rungs = core::mem::take(&mut ladder.rungs);
        ladder.rungs = rungs
            .into_iter()
            .map(|r| r.stating(clip).keeping(clip.keep))
            .collect();
        Ok(ladder)
    }

    /// Every rung keeps `keep` of each cut text ([`Condenser::keeping`]).
    pub fn keeping(mut self, keep: Keep) -> Self {
        let rungs = core::mem::take(&mut self.rungs);
        self.rungs = rungs.into_iter().map(|r| r.keeping(keep)).collect();
        self
    }

    /// Keeps room for links on every rung that can hold them; the smallest
    /// of those reports its cut values ([`Ladder::feed_spilling`]). Needs
    /// one rung of at least [`MIN_LINKED_BUDGET`].
    pub fn with_links(mut self) -> Result<Self, CondenseError> {
        let Some(first) = self
            .rungs
            .iter()
            .position(|c| c.budget >= MIN_LINKED_BUDGET)
        else {
            return Err(CondenseError::BudgetTooSmall {
                budget: self.rungs.last().map_or(0, |c| c.budget),
            });
        };
        let rungs = core::mem::take(&mut self.rungs);
        self.rungs = rungs
            .into_iter()
            .map(|c| {
                if c.budget >= MIN_LINKED_BUDGET {
                    c.with_links()
                } else {
                    Ok(c)
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.spiller = Some(first);
        Ok(self)
    }

    /// The byte budgets, smallest first.
    pub fn budgets(&self) -> impl Iterator<Item = usize> + '_ {
        self.rungs.iter().map(|c| c.budget)
    }

    /// Feeds the next piece of the line to every rung.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), CondenseError> {
        self.feed_spilling(bytes, &mut |_| {})
    }

    /// Feeds the next piece of the line to every rung that may cut it
    /// (see the module docs); the spilling rung reports its cut values to
    /// `spill`. Fails only when every rung has.
    pub fn feed_spilling(
        &mut self,
        bytes: &[u8],
        spill: &mut dyn FnMut(Spill<'_>),
    ) -> Result<(), CondenseError> {
        // Whether a rung took the piece, else the last error.
        let mut last = Ok(());
        let mut any = false;
        let mut outcome = |fed: Result<(), CondenseError>, any: &mut bool| {
            *any |= fed.is_ok();
            if fed.is_err() {
                last = fed;
            }
        };
        // The rungs up to the spilling one are fed from the first byte.
        let eager = self.spiller.map_or(1, |k| k + 1).min(self.rungs.len());
        let mut start = self.fed.max(eager);
        for (k, rung) in self.rungs.iter_mut().enumerate().take(start) {
            let mut spilling = |piece: &[u8]| {
                if Some(k) == self.spiller {
                    rung.feed_spilling(piece, spill)
                } else {
                    rung.feed(piece)
                }
            };
            if k >= self.fed {
                // (Only when links were asked for after the line began.)
                let _ = spilling(&self.held);
            }
            outcome(spilling(bytes), &mut any);
        }
        let line = self.rungs[0].fed;
        // A rung the line may now be cut by is fed what it missed; so is
        // every rung once those fed have all failed, as they would have.
        let through = if any {
            start
                + self.rungs[start..]
                    .iter()
                    .take_while(|r| line > keeps_whole(r.budget) as u64)
                    .count()
        } else {
            self.rungs.len()
        };
        while start < through {
            let rung = &mut self.rungs[start];
            let _ = rung.feed(&self.held);
            outcome(rung.feed(bytes), &mut any);
            start += 1;
        }
        self.fed = start;
        if self.fed < self.rungs.len() {
            self.held.extend_from_slice(bytes);
        } else {
            self.held = Vec::new();
        }
        if any { Ok(()) } else { last }
    }

    /// Ends the line: the result of the largest rung for which `fits` says
    /// yes, else the smallest rung's, which is within the amount in any
    /// unit. [`Condensed::Unchanged`] when the chosen rung cut nothing.
    ///
    /// `fits` is given the whole response line (condensed or not) and a
    /// number of units still to come: a linked result's notice gains a
    /// sentence when its links are filled in ([`Links::fill`]), of at most
    /// that many bytes, so at most that many characters or tokens. A line
    /// offered by several rungs (those that cut nothing) is asked once.
    pub fn finish(
        self,
        fits: &mut dyn FnMut(&[u8], usize) -> bool,
    ) -> Result<Condensed, CondenseError> {
        self.finish_rung(fits).map(|(outcome, _)| outcome)
    }

    /// [`Ladder::finish`], with the byte budget of the rung taken.
    pub fn finish_rung(
        self,
        fits: &mut dyn FnMut(&[u8], usize) -> bool,
    ) -> Result<(Condensed, usize), CondenseError> {
        let ended = self.end();
        let chosen = ended
            .candidates()
            .find(|c| fits(c.line, c.to_come))
            .map_or(0, |c| c.rung);
        ended.take(chosen)
    }

    /// Ends the line on every rung, for a caller that measures the results
    /// itself ([`Ended::candidates`], then [`Ended::take`]): a tokenizer
    /// that lives outside this crate, as in the WebAssembly component.
    pub fn end(mut self) -> Ended {
        let budgets: Vec<usize> = self.budgets().collect();
        let spiller = self.spiller;
        // The rungs still waiting would all write the line whole: the
        // smallest is fed it, and the others end as it does.
        let alike_from = self.fed.min(self.rungs.len() - 1);
        if self.fed == alike_from {
            let _ = self.rungs[alike_from].feed(&self.held);
        }
        let mut outcomes: Vec<Result<Condensed, CondenseError>> = Vec::new();
        let mut whole: Vec<Option<Vec<u8>>> = Vec::new();
        for rung in self.rungs.into_iter().take(alike_from + 1) {
            // A rung that cut nothing holds the line (whitespace dropped).
            whole.push((rung.cut_count == 0 && rung.error.is_none()).then(|| rung.whole_line()));
            outcomes.push(rung.finish());
        }
        let spilled: Option<Links> = spiller.and_then(|k| match &outcomes[k] {
            Ok(Condensed::Cut { links, .. }) => links.clone(),
            _ => None,
        });
        Ended {
            budgets,
            spiller,
            outcomes,
            whole,
            spilled,
            alike_from,
        }
    }
}

impl From<Condenser> for Ladder {
    /// A ladder of one rung: `condenser`'s byte budget.
    fn from(condenser: Condenser) -> Self {
        Ladder {
            rungs: alloc::vec![condenser],
            spiller: None,
            fed: 1,
            held: Vec::new(),
        }
    }
}

/// A ladder whose rungs have all ended ([`Ladder::end`]): the results to
/// measure, and the one to take.
#[derive(Debug)]
pub struct Ended {
    budgets: Vec<usize>,
    spiller: Option<usize>,
    outcomes: Vec<Result<Condensed, CondenseError>>,
    whole: Vec<Option<Vec<u8>>>,
    spilled: Option<Links>,
    /// The rungs from this one on were not fed (see the module docs): they
    /// ended as this one did, whose outcome is the last of `outcomes`.
    alike_from: usize,
}

/// A rung's result that may be taken, if it fits ([`Ended::candidates`]).
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// Which rung, for [`Ended::take`].
    pub rung: usize,
    /// The whole response line, condensed or not.
    pub line: &'a [u8],
    /// Units still to come: a linked result's notice gains a sentence when
    /// its links are filled in ([`Links::fill`]), of at most that many
    /// bytes, so at most that many characters or tokens.
    pub to_come: usize,
}

impl Ended {
    /// The rungs above the smallest whose results may be taken, largest
    /// first; the caller takes the first that fits its budget, or rung 0
    /// (the amount in bytes, within the amount in any unit) if none does.
    /// A rung that failed, or that kept fewer elements of an array than the
    /// spilled rest starts from, is not offered; nor is a result equal to
    /// the one offered before it (the line, from the rungs that cut nothing
    /// and those not fed): it would fit as that one did, and is measured
    /// once.
    pub fn candidates(&self) -> impl Iterator<Item = Candidate<'_>> + '_ {
        let mut last = None;
        (1..self.budgets.len())
            .rev()
            .filter_map(move |rung| {
                let k = rung.min(self.alike_from);
                match (&self.outcomes[k], &self.whole[k]) {
                    (Ok(Condensed::Unchanged), Some(line)) => Some(Candidate {
                        rung,
                        line,
                        to_come: 0,
                    }),
                    (Ok(Condensed::Cut { frame, links, .. }), _) => {
                        let covered = Some(k) == self.spiller
                            || links
                                .as_ref()
                                .is_none_or(|l| l.rests_covered_by(self.spilled.as_ref()));
                        covered.then_some(Candidate {
                            rung,
                            line: frame,
                            to_come: if links.is_some() { LINK_NOTICE } else { 0 },
                        })
                    }
                    _ => None,
                }
            })
            .filter(move |c| {
                let again = last == Some((c.line, c.to_come));
                last = Some((c.line, c.to_come));
                !again
            })
    }

    /// The result of rung `rung` (0 if out of range), its links numbered as
    /// the spilling rung's, with that rung's byte budget.
    pub fn take(mut self, rung: usize) -> Result<(Condensed, usize), CondenseError> {
        let chosen = if rung < self.budgets.len() { rung } else { 0 };
        let k = chosen.min(self.alike_from);
        let mut outcome = self.outcomes.swap_remove(k);
        if Some(k) != self.spiller
            && let Ok(Condensed::Cut {
                links: Some(links), ..
            }) = &mut outcome
        {
            links.renumber(self.spilled.as_ref());
        }
        outcome.map(|outcome| (outcome, self.budgets[chosen]))
    }
}

impl Condenser {
    /// Names `clip` in the notice as the budget, when it is not in bytes.
    pub(crate) fn stating(mut self, clip: Clip) -> Self {
        if clip.unit != Unit::Bytes {
            self.stated = Some(clip);
        }
        self
    }

    /// What a condenser that cut nothing wrote: the line, whitespace
    /// dropped, with the slots it kept for the notice and the marker left
    /// as spaces (a slot's leading comma too).
    fn whole_line(&self) -> Vec<u8> {
        let mut line = self.out.clone();
        let slots = [self.notice_slot, self.marker_slot.map(|(at, _)| at)];
        for at in slots.into_iter().flatten() {
            if let Some(first) = line.get_mut(at) {
                *first = b' ';
            }
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{shown_size, utf16_len};
    use alloc::format;
    use alloc::string::String;

    /// Rungs wait until the line may be cut by them, are fed what they
    /// missed when it may, and those still waiting at the end take the
    /// outcome of the smallest: the ladder takes what it takes when every
    /// rung condenses the line alone, for lines below, across and above
    /// every rung's bound, fed in pieces.
    #[test]
    fn a_rung_waits_until_the_line_may_be_cut_by_it() {
        let clip = Clip::chars(8000);
        let fits = |frame: &[u8]| shown_size(frame, &mut utf16_len).is_some_and(|n| n <= 8000);
        for size in [100, 3_000, 7_000, 9_000, 14_000, 30_000, 60_000] {
            let text: String = (0..size).map(|i| ['a', 'é', 'z'][i % 3]).collect();
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{text}"}}],"structuredContent":{{"text":"{text}"}}}}}}"#
            );
            let line = line.as_bytes();
            let mut ladder = Ladder::for_clip(clip).unwrap();
            for piece in line.chunks(1000) {
                ladder.feed(piece).unwrap();
            }
            let budgets: Vec<usize> = ladder.budgets().collect();
            let may_cut = budgets
                .iter()
                .filter(|&&b| line.len() > b - WHOLE_ROOM)
                .count();
            assert_eq!(ladder.fed, may_cut.max(1), "{size}: the rungs fed");
            for (k, rung) in ladder.rungs.iter().enumerate() {
                let fed = if k < ladder.fed { line.len() } else { 0 };
                assert_eq!(rung.fed, fed as u64, "{size}: rung {k}");
            }
            let (outcome, budget) = ladder.finish_rung(&mut |frame, _| fits(frame)).unwrap();
            // Every rung alone, the largest whose result fits taken.
            let alone = |budget: usize| {
                let mut rung = Condenser::new(budget)
                    .unwrap()
                    .stating(clip)
                    .keeping(clip.keep);
                rung.feed(line).unwrap();
                rung.finish().unwrap()
            };
            let taken = (1..budgets.len())
                .rev()
                .map(|k| (alone(budgets[k]), budgets[k]))
                .find(|(outcome, _)| match outcome {
                    Condensed::Unchanged => fits(line),
                    Condensed::Cut { frame, .. } => fits(frame),
                })
                .unwrap_or_else(|| (alone(budgets[0]), budgets[0]));
            assert_eq!((outcome, budget), taken, "{size}");
        }
    }
}
