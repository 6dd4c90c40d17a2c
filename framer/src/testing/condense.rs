//! Generated `tools/call` responses and the oracle for the
//! [`Condenser`](crate::budget::Condenser): shared by the property tests and
//! the fuzz target.
//!
//! The oracle checks what the condenser promises, from the original and the
//! output alone: the output is valid JSON within the budget; parsed, it
//! equals the original except for the documented edits (each cut string is
//! a prefix of the original, each cut array a prefix, a content block whose
//! binary value was left out replaced by a text block, one notice block
//! appended to `content`, the marker merged into `_meta`); a mirror in
//! `structuredContent` is cut like the text it mirrors; the marker's sizes
//! are the real ones; and the budget is spent: with a budget of at least
//! [`SPENT_FROM`] bytes, a cut result without a left-out binary value
//! takes at least nine tenths of it.
//!
//! With links ([`condense_linked`]): every value reported for spilling
//! decodes to the original value at its pointer, and the output holds one
//! `resource_link` block per linked value after the notice.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use serde_json::{Map, Value, json};

mod response;
pub use response::{text, tool_response, tool_response_scaled, tool_response_sorted};

use crate::budget::{
    Clip, Condensed, Condenser, Keep, LINK_NOTICE, Ladder, Link, MARKER_KEY, MIN_LINKED_BUDGET,
    Shown, Spill, SpillKind, Spilled, Unit, shown_size, utf16_len,
};

/// The smallest budget for which the oracle checks that a cut result
/// spends at least nine tenths of it (below, the condenser's fixed room for
/// the notice, the marker and the members after a text is a larger part).
pub const SPENT_FROM: usize = 64 << 10;

/// The response of a Python SDK tool returning `count` search hits as a
/// `list` of models, the way the SDK writes it: a text block per hit (its
/// JSON, indented by two), the list again in `structuredContent.result`,
/// the members inside `result` sorted, `id` first. Every hit has an
/// escape, a tab and multibyte characters. The hits, and the line.
pub fn python_hits_response(count: usize) -> (Vec<Value>, String) {
    let hits: Vec<Value> = (0..count)
        .map(|n| json!({"path": format!("src/file-{n}.rs"), "line": n, "text": format!("item-{n}: fn «ünïcødé» \"q\"\t{n}")}))
        .collect();
    let blocks: Vec<Value> = hits
        .iter()
        .map(|hit| json!({"text": serde_json::to_string_pretty(hit).unwrap_or_default(), "type": "text"}))
        .collect();
    let line = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": blocks, "isError": false, "structuredContent": {"result": hits}}});
    (hits, line.to_string())
}

/// `line` in pieces of the given lengths (cycled; the whole line when
/// there are none).
fn pieces<'a>(line: &'a [u8], lengths: &'a [usize]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut rest = line;
    let mut step = 0;
    core::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let len = lengths
            .get(step % lengths.len().max(1))
            .copied()
            .unwrap_or(rest.len())
            .clamp(1, rest.len());
        step += 1;
        let (piece, tail) = rest.split_at(len);
        rest = tail;
        Some(piece)
    })
}

/// Condenses `line` fed in pieces of the given lengths (cycled).
pub fn condense_split(line: &[u8], budget: usize, lengths: &[usize]) -> Result<Condensed, String> {
    condense_split_keeping(line, budget, lengths, Keep::Head)
}

/// [`condense_split`], keeping `keep` of each cut text.
pub fn condense_split_keeping(
    line: &[u8],
    budget: usize,
    lengths: &[usize],
    keep: Keep,
) -> Result<Condensed, String> {
    let mut condenser = Condenser::new(budget)
        .map_err(|e| e.to_string())?
        .keeping(keep);
    for piece in pieces(line, lengths) {
        condenser.feed(piece).map_err(|e| e.to_string())?;
        assert!(condenser.written() <= budget, "wrote past the budget");
    }
    condenser.finish().map_err(|e| e.to_string())
}

/// What a host shows of `frame`, read the plain way: the whole line as a
/// `Value`, then each block's `text` (or its resource's, when it has no
/// `text`) and `structuredContent` as compact JSON. The reading
/// [`crate::budget::shown`] is held to, without building the tree.
pub fn shown_by_value(frame: &[u8]) -> Option<Shown> {
    let response: Value = serde_json::from_slice(frame).ok()?;
    let result = response.as_object()?.get("result")?.as_object()?;
    let mut shown = Shown::default();
    if let Some(blocks) = result.get("content").and_then(Value::as_array) {
        for block in blocks {
            let text = block
                .get("text")
                .or_else(|| block.get("resource").and_then(|r| r.get("text")));
            if let Some(text) = text.and_then(Value::as_str) {
                shown.texts.push(text.into());
            }
        }
    }
    if let Some(value) = result.get("structuredContent") {
        shown.structured = Some(serde_json::to_string(value).ok()?);
    }
    Some(shown)
}

/// The size of `line` in `clip`'s unit, as the host measures it (tokens
/// counted as bytes of the texts: the testing module has no tokenizer).
pub fn measure(clip: Clip, line: &[u8]) -> Option<u64> {
    match clip.unit {
        Unit::Chars => shown_size(line, &mut utf16_len),
        Unit::Tokens => shown_size(line, &mut |t: &str| t.len() as u64),
        _ => Some(line.len() as u64),
    }
}

/// Condenses `line` into `clip` with a [`Ladder`] (links on if `linked`),
/// fed in pieces of the given lengths, and checks it: the result taken is
/// valid, bounded, honest and spends its rung ([`check_condensed`]), is
/// within the amount in its unit, and no larger rung's result would have
/// been (each condensed again alone); with links, every reported value is
/// the original at its pointer, and each link the result carries points at
/// the value reported for its pointer.
pub fn check_ladder(
    line: &[u8],
    clip: Clip,
    lengths: &[usize],
    linked: bool,
) -> Result<(), String> {
    check_ladder_keeping(line, clip, lengths, linked, Keep::Head)
}

/// [`check_ladder`], every rung keeping `keep` of each cut text.
pub fn check_ladder_keeping(
    line: &[u8],
    clip: Clip,
    lengths: &[usize],
    linked: bool,
    keep: Keep,
) -> Result<(), String> {
    let before: Value = serde_json::from_slice(line).map_err(|e| format!("original: {e}"))?;
    let ladder = LadderCheck {
        clip,
        linked,
        keep,
        larger: LargerRungs::All,
    };
    ladder.check(line, &before, lengths)
}

/// Which rungs above the one taken [`LadderCheck::check`] condenses again
/// alone, to show that none of them fits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LargerRungs {
    /// Every one, as the property tests do.
    All,
    /// The one just above the rung taken, and one more of the others: the
    /// `n`-th, counted around. A fuzzer that runs thousands of inputs
    /// checks every rung in turn, at a third of the cost.
    Two(usize),
}

/// [`check_ladder_keeping`] in full: the clip, links or not, what a cut
/// text keeps, and which larger rungs are condensed again.
#[derive(Clone, Copy, Debug)]
pub struct LadderCheck {
    /// The amount and its unit.
    pub clip: Clip,
    /// Links on.
    pub linked: bool,
    /// What each cut text keeps.
    pub keep: Keep,
    /// The larger rungs checked.
    pub larger: LargerRungs,
}

impl LadderCheck {
    /// Checks the ladder on `line` (parsed: `before`) fed in pieces of the
    /// given lengths: see [`check_ladder`].
    pub fn check(&self, line: &[u8], before: &Value, lengths: &[usize]) -> Result<(), String> {
        let LadderCheck {
            clip,
            linked,
            keep,
            larger: larger_rungs,
        } = *self;
        let rungs = clip.rungs();
        let mut ladder = Ladder::for_clip(clip)
            .map_err(|e| e.to_string())?
            .keeping(keep);
        if linked {
            ladder = ladder.with_links().map_err(|e| e.to_string())?;
        }
        let mut raws: Vec<Vec<u8>> = Vec::new();
        for piece in pieces(line, lengths) {
            let fed = ladder.feed_spilling(piece, &mut |event| match event {
                Spill::Start { .. } => raws.push(Vec::new()),
                Spill::Raw { bytes, .. } => {
                    if let Some(raw) = raws.last_mut() {
                        raw.extend_from_slice(bytes);
                    }
                }
                Spill::End { .. } => {}
            });
            if let Err(e) = fed {
                return Err(e.to_string());
            }
        }
        // Each frame is measured once: the larger rungs condensed alone below
        // mostly give frames the ladder measured, byte for byte (the size is a
        // function of the bytes, so the check loses nothing by it).
        let measured: core::cell::RefCell<Vec<(Vec<u8>, Option<u64>)>> = Default::default();
        let size = |frame: &[u8]| {
            let known = measured
                .borrow()
                .iter()
                .find_map(|(seen, size)| (seen.as_slice() == frame).then_some(*size));
            known.unwrap_or_else(|| {
                let size = measure(clip, frame);
                measured.borrow_mut().push((frame.to_vec(), size));
                size
            })
        };
        let fits = |frame: &[u8]| size(frame).is_some_and(|n| n <= clip.amount as u64);
        // What the ladder is told: the frame before its links are filled in,
        // and the units the link sentence may add.
        let fits_before = |frame: &[u8], to_come: usize| {
            size(frame).is_some_and(|n| n + to_come as u64 <= clip.amount as u64)
        };
        let (mut outcome, budget) = ladder
            .finish_rung(&mut |frame, to_come| fits_before(frame, to_come))
            .map_err(|e| e.to_string())?;
        let taken = match &mut outcome {
            Condensed::Unchanged => {
                if !fits(line) {
                    return Err("unchanged but not within the amount".into());
                }
                None
            }
            Condensed::Cut { frame, links, .. } => {
                if let Some(links) = links {
                    let uris: Vec<String> =
                        (0..raws.len()).map(|n| format!("test://v/{n}")).collect();
                    links.fill(frame, "read it with test://", |value| {
                        let n = value.value as usize;
                        Some(Link {
                            uri: uris.get(n)?,
                            size: raws[n].len() as u64,
                        })
                    });
                    let mut after: Option<Value> = None;
                    for value in links.values() {
                        let Some(raw) = raws.get(value.value as usize) else {
                            continue;
                        };
                        let at = before["result"].pointer(&value.pointer);
                        let decoded: Option<String> =
                            serde_json::from_slice(&[b"\"".as_slice(), raw, b"\""].concat()).ok();
                        if value.complete
                            && value.kind == SpillKind::Text
                            && at.and_then(Value::as_str) != decoded.as_deref()
                        {
                            return Err(format!("link {} points at another value", value.pointer));
                        }
                        if let SpillKind::Elements { first } = value.kind
                            && value.complete
                        {
                            let one_line = !line.contains(&b'\n');
                            check_rest(before, &value.pointer, first, raw, one_line)?;
                            // The elements before `first` are in the result.
                            // (The filled frame, parsed once for every rest.)
                            if after.is_none() {
                                after =
                                    Some(serde_json::from_slice(frame).map_err(|e| e.to_string())?);
                            }
                            let kept = after.as_ref().expect("parsed above")["result"]
                                .pointer(&value.pointer)
                                .and_then(Value::as_array)
                                .map_or(0, Vec::len);
                            if !value.pointer.is_empty() && (kept as u64) < first {
                                return Err(format!(
                                    "{}: {kept} items kept, the rest linked from item {first}",
                                    value.pointer
                                ));
                            }
                        }
                    }
                }
                Some(frame.clone())
            }
        };
        match &outcome {
            Condensed::Cut {
                links: Some(links), ..
            } => {
                let values: Vec<super::lost::LinkedValue<'_>> = links
                    .values()
                    .iter()
                    .filter_map(|v| Some((v, raws.get(v.value as usize)?.as_slice())))
                    .collect();
                check_linked_parsed(line, before, budget, &outcome, &values)?;
            }
            _ => check_condensed_parsed(line, before, budget, &outcome)?,
        }
        if let Some(frame) = &taken
            && budget != rungs[0]
            && !fits(frame)
        {
            return Err(format!("the rung of {budget} bytes is over {clip}"));
        }
        // Where the spilling rung (the smallest that can keep links) left each
        // array's rest: a rung that kept fewer of its elements is not taken.
        // (Condensed when a larger rung's result has links to compare.)
        let spilling_rung = || -> Result<Vec<Spilled>, String> {
            let mut reported = Vec::new();
            if let Some(&smallest) = rungs.iter().find(|&&b| b >= MIN_LINKED_BUDGET) {
                let mut spiller = Condenser::new(smallest)
                    .and_then(Condenser::with_links)
                    .map_err(|e| e.to_string())?
                    .keeping(keep);
                spiller.feed(line).map_err(|e| e.to_string())?;
                if let Ok(Condensed::Cut {
                    links: Some(links), ..
                }) = spiller.finish()
                {
                    reported.extend(links.values().iter().cloned());
                }
            }
            Ok(reported)
        };
        let mut reported: Option<Vec<Spilled>> = None;
        // A rung is taken only if what it cut is linked once its values are
        // numbered as the spilling rung's: each has a counterpart there (a
        // rest from no later), or lies in such a rest of one of its arrays.
        let covered = |reported: &[Spilled], links: &Option<crate::budget::Links>| {
            let Some(links) = links else {
                return true;
            };
            let theirs = |v: &Spilled| {
                reported.iter().find(|r| {
                    !r.pointer.is_empty()
                        && r.pointer == v.pointer
                        && core::mem::discriminant(&r.kind) == core::mem::discriminant(&v.kind)
                })
            };
            let rests: Vec<(String, u64)> = links
                .values()
                .iter()
                .filter_map(|v| match theirs(v)?.kind {
                    SpillKind::Elements { first } => Some((v.pointer.clone(), first)),
                    _ => None,
                })
                .collect();
            links.values().iter().all(|v| {
                let linked = match (v.kind.first(), theirs(v).map(|r| r.kind)) {
                    (Some(first), Some(kind)) => kind.first().is_some_and(|t| t <= first),
                    (_, found) => found.is_some(),
                };
                linked
                    || rests.iter().any(|(array, first)| {
                        let item = v.pointer.strip_prefix(array.as_str()).and_then(|p| {
                            p.strip_prefix('/')?.split('/').next()?.parse::<u64>().ok()
                        });
                        item.is_some_and(|i| i >= *first)
                    })
            })
        };
        // No larger rung fits, condensed alone as the ladder did.
        let mut larger: Vec<usize> = rungs.iter().copied().filter(|&b| b > budget).collect();
        if let LargerRungs::Two(n) = larger_rungs
            && larger.len() > 2
        {
            larger = vec![larger[0], larger[1 + n % (larger.len() - 1)]];
        }
        let mut line_fits: Option<bool> = None;
        for larger in larger {
            let mut alone = Condenser::new(larger)
                .map_err(|e| e.to_string())?
                .stating(clip)
                .keeping(keep);
            if linked {
                alone = alone.with_links().map_err(|e| e.to_string())?;
            }
            alone.feed(line).map_err(|e| e.to_string())?;
            let fitting = match alone.finish().map_err(|e| e.to_string())? {
                Condensed::Cut { frame, links, .. } => {
                    if linked && links.is_some() && reported.is_none() {
                        reported = Some(spilling_rung()?);
                    }
                    covered(reported.as_deref().unwrap_or_default(), &links)
                        && fits_before(&frame, if links.is_some() { LINK_NOTICE } else { 0 })
                }
                // (Every rung that cuts nothing offers the line: measured once.)
                Condensed::Unchanged => *line_fits.get_or_insert_with(|| fits(line)),
            };
            if fitting {
                return Err(format!("the larger rung of {larger} bytes fits {clip} too"));
            }
        }
        // The smallest rung is within the amount in any unit.
        if budget == rungs[0]
            && let Some(frame) = &taken
            && !fits(frame)
        {
            return Err(format!("the smallest rung is over {clip}"));
        }
        Ok(())
    }
}

/// A value reported for spilling, with the raw bytes reported for it.
#[derive(Clone, Debug)]
pub struct SpilledRaw {
    /// What the condenser said of it at the end.
    pub spilled: Spilled,
    /// Its raw bytes, in order.
    pub raw: Vec<u8>,
    /// Whether its `End` came.
    pub ended: bool,
}

/// Condenses `line` like [`condense_split`] with links on, collecting the
/// spilled values and checking the order of the events, then fills every
/// link with `test://v/<n>` and the raw size.
pub fn condense_linked(
    line: &[u8],
    budget: usize,
    lengths: &[usize],
) -> Result<(Condensed, Vec<SpilledRaw>), String> {
    condense_linked_keeping(line, budget, lengths, Keep::Head)
}

/// [`condense_linked`], keeping `keep` of each cut text.
pub fn condense_linked_keeping(
    line: &[u8],
    budget: usize,
    lengths: &[usize],
    keep: Keep,
) -> Result<(Condensed, Vec<SpilledRaw>), String> {
    let mut condenser = Condenser::new(budget)
        .and_then(Condenser::with_links)
        .map_err(|e| e.to_string())?
        .keeping(keep);
    let mut raws: Vec<(Vec<u8>, bool)> = Vec::new();
    let mut open: Option<u32> = None;
    let mut order = Ok(());
    let mut on_spill = |event: Spill<'_>| match event {
        Spill::Start { value, .. } => {
            if open.is_some() || value as usize != raws.len() {
                order = Err(format!("start {value} out of order"));
            }
            open = Some(value);
            raws.push((Vec::new(), false));
        }
        Spill::Raw { value, bytes } => match raws.get_mut(value as usize) {
            Some((raw, false)) if open == Some(value) => raw.extend_from_slice(bytes),
            _ => order = Err(format!("raw bytes of {value} while it is not open")),
        },
        Spill::End { value } => {
            if open != Some(value) {
                order = Err(format!("end of {value} while it is not open"));
            }
            open = None;
            if let Some(entry) = raws.get_mut(value as usize) {
                entry.1 = true;
            }
        }
    };
    for piece in pieces(line, lengths) {
        condenser
            .feed_spilling(piece, &mut on_spill)
            .map_err(|e| e.to_string())?;
        assert!(condenser.written() <= budget, "wrote past the budget");
    }
    order?;
    let mut outcome = condenser.finish().map_err(|e| e.to_string())?;
    let mut spilled = Vec::new();
    if let Condensed::Cut { frame, links, .. } = &mut outcome {
        if let Some(links) = links {
            if links.values().len() != raws.len() {
                return Err("values listed are not the values reported".into());
            }
            let uris: Vec<String> = (0..raws.len()).map(|n| format!("test://v/{n}")).collect();
            links.fill(frame, "read it with test://", |value| {
                let n = value.value as usize;
                Some(Link {
                    uri: &uris[n],
                    size: raws[n].0.len() as u64,
                })
            });
            for (value, (raw, ended)) in links.values().iter().zip(raws) {
                if value.complete != ended {
                    return Err("complete differs from the end reported".into());
                }
                spilled.push(SpilledRaw {
                    spilled: value.clone(),
                    raw,
                    ended,
                });
            }
        } else if !raws.is_empty() {
            return Err("values reported without room for their links".into());
        }
    } else if !raws.is_empty() {
        return Err("values reported for an unchanged result".into());
    }
    Ok((outcome, spilled))
}

/// Checks that the result of [`condense_linked`] loses nothing of
/// `original`: what it cut is linked ([`super::lost`]).
pub fn check_nothing_lost(
    original: &[u8],
    outcome: &Condensed,
    spilled: &[SpilledRaw],
) -> Result<(), String> {
    if let Condensed::Unchanged = outcome {
        return Ok(());
    }
    let before: Value = serde_json::from_slice(original).map_err(|e| format!("original: {e}"))?;
    check_nothing_lost_parsed(&before, outcome, spilled)
}

/// [`check_nothing_lost`] with the original already parsed.
pub fn check_nothing_lost_parsed(
    before: &Value,
    outcome: &Condensed,
    spilled: &[SpilledRaw],
) -> Result<(), String> {
    let values: Vec<super::lost::LinkedValue<'_>> = spilled
        .iter()
        .map(|s| (&s.spilled, s.raw.as_slice()))
        .collect();
    super::lost::check_nothing_lost_parsed(before, outcome, &values)
}

/// Checks the spilled values of `original`: each one ended is, decoded,
/// the original value at its pointer (a string, or a block's base64).
pub fn check_spilled(original: &[u8], spilled: &[SpilledRaw]) -> Result<(), String> {
    let before: Value = serde_json::from_slice(original).map_err(|e| format!("original: {e}"))?;
    check_spilled_parsed(original, &before, spilled)
}

/// [`check_spilled`] with the original also parsed (`before`).
pub fn check_spilled_parsed(
    original: &[u8],
    before: &Value,
    spilled: &[SpilledRaw],
) -> Result<(), String> {
    for value in spilled {
        if !value.ended {
            return Err(format!("value {} never ended", value.spilled.value));
        }
        if let SpillKind::Elements { first } = value.spilled.kind {
            let one_line = !original.contains(&b'\n');
            check_rest(before, &value.spilled.pointer, first, &value.raw, one_line)?;
            continue;
        }
        if let SpillKind::Members { .. } = value.spilled.kind {
            check_members(before, &value.spilled.pointer, &value.raw)?;
            continue;
        }
        let mut quoted = Vec::with_capacity(value.raw.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(&value.raw);
        quoted.push(b'"');
        let decoded: String = serde_json::from_slice(&quoted)
            .map_err(|e| format!("value {} does not decode: {e}", value.spilled.value))?;
        if value.spilled.pointer.is_empty() {
            continue;
        }
        let at = before["result"]
            .pointer(&value.spilled.pointer)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("no string at {}", value.spilled.pointer))?;
        if at != decoded {
            return Err(format!(
                "{} spilled differs from the original",
                value.spilled.pointer
            ));
        }
        let binary =
            value.spilled.pointer.ends_with("/data") || value.spilled.pointer.ends_with("/blob");
        if binary != (value.spilled.kind == SpillKind::Binary) {
            return Err(format!("{} has the wrong kind", value.spilled.pointer));
        }
    }
    Ok(())
}

/// Checks the spilled rest of the object at `pointer` in `before`: its
/// members the original's, one member a line.
pub fn check_members(before: &Value, pointer: &str, raw: &[u8]) -> Result<(), String> {
    let lines: Vec<&[u8]> = raw.split(|&b| b == b'\n').collect();
    if lines.first() != Some(&&b"{"[..]) || lines.last() != Some(&&b"}"[..]) {
        return Err(format!("{pointer}: the rest does not open and close alone"));
    }
    let rest: Map<String, Value> =
        serde_json::from_slice(raw).map_err(|e| format!("{pointer}: the rest is not JSON: {e}"))?;
    if lines.len() != rest.len() + 2 {
        return Err(format!("{pointer}: the rest is not one member a line"));
    }
    let Some(whole) = before["result"].pointer(pointer).and_then(Value::as_object) else {
        return Err(format!("no object at {pointer}"));
    };
    for (key, value) in &rest {
        if whole.get(key) != Some(value) {
            return Err(format!("{pointer}/{key}: the rest's member differs"));
        }
    }
    Ok(())
}

/// Checks the spilled rest of the array at `pointer` in `before`: the
/// elements from `first` on, equal to the original's, and (when the
/// original is `one_line`, as a framed message is) one element a line.
pub fn check_rest(
    before: &Value,
    pointer: &str,
    first: u64,
    raw: &[u8],
    one_line: bool,
) -> Result<(), String> {
    let lines: Vec<&[u8]> = raw.split(|&b| b == b'\n').collect();
    if lines.first() != Some(&&b"["[..]) || lines.last() != Some(&&b"]"[..]) {
        return Err(format!("{pointer}: the rest does not open and close alone"));
    }
    let rest: Value =
        serde_json::from_slice(raw).map_err(|e| format!("{pointer}: the rest is not JSON: {e}"))?;
    let Some(rest) = rest.as_array() else {
        return Err(format!("{pointer}: the rest is not an array"));
    };
    if one_line && lines.len() != rest.len() + 2 {
        return Err(format!("{pointer}: the rest is not one element a line"));
    }
    if pointer.is_empty() {
        return Ok(());
    }
    let Some(whole) = before["result"].pointer(pointer).and_then(Value::as_array) else {
        return Err(format!("no array at {pointer}"));
    };
    let first = usize::try_from(first).unwrap_or(usize::MAX);
    if whole.get(first..) != Some(rest.as_slice()) {
        return Err(format!(
            "{pointer}: the rest from item {first} differs from the original"
        ));
    }
    Ok(())
}

/// Checks `condensed`, the condenser's answer for `original` under
/// `budget` (see the module docs). `Err` says what is wrong.
pub fn check_condensed(
    original: &[u8],
    budget: usize,
    condensed: &Condensed,
) -> Result<(), String> {
    if let Condensed::Unchanged = condensed {
        return check_condensed_parsed(original, &Value::Null, budget, condensed);
    }
    let before: Value = serde_json::from_slice(original).map_err(|e| format!("original: {e}"))?;
    check_condensed_parsed(original, &before, budget, condensed)
}

/// [`check_condensed`] with the original also parsed (`before`), for a
/// caller that checks it more than once.
pub fn check_condensed_parsed(
    original: &[u8],
    before: &Value,
    budget: usize,
    condensed: &Condensed,
) -> Result<(), String> {
    let Some(frame) = cut_frame(original, budget, condensed)? else {
        return Ok(());
    };
    let after: Value = parse_output(frame)?;
    check_cut(original, before, budget, frame, &after)
}

/// [`check_condensed_parsed`], then, for a cut result, that it loses
/// nothing ([`super::lost`]): the frame parsed once for both. `values` are
/// the values reported, by number.
pub fn check_linked_parsed(
    original: &[u8],
    before: &Value,
    budget: usize,
    condensed: &Condensed,
    values: &[super::lost::LinkedValue<'_>],
) -> Result<(), String> {
    let Some(frame) = cut_frame(original, budget, condensed)? else {
        return Ok(());
    };
    let after: Value = parse_output(frame)?;
    check_cut(original, before, budget, frame, &after)?;
    super::lost::check_nothing_lost_tree(before, after, values)
}

/// The frame of a cut result within `budget`; `None` for a line left
/// unchanged that fits; an error for the rest.
fn cut_frame<'c>(
    original: &[u8],
    budget: usize,
    condensed: &'c Condensed,
) -> Result<Option<&'c [u8]>, String> {
    let frame = match condensed {
        Condensed::Unchanged if original.len() <= budget => return Ok(None),
        Condensed::Unchanged => {
            return Err(format!(
                "unchanged, but {} bytes > budget {budget}",
                original.len()
            ));
        }
        Condensed::Cut {
            frame,
            original_bytes,
            ..
        } => {
            if *original_bytes != original.len() as u64 {
                return Err("original_bytes".into());
            }
            frame
        }
    };
    if frame.len() > budget {
        return Err(format!("{} bytes > budget {budget}", frame.len()));
    }
    Ok(Some(frame))
}

/// The condensed frame parsed, or why it is not JSON.
fn parse_output(frame: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(frame).map_err(|e| {
        format!(
            "output is not JSON: {e}: {}",
            String::from_utf8_lossy(frame)
        )
    })
}

/// [`check_condensed_parsed`] for a cut result: `frame` within `budget`,
/// parsed (`after`). Reads `after` where it lies: the marker, the notice
/// and the links are passed over, not removed, so the caller may hand
/// the same tree on to the nothing-lost check.
fn check_cut(
    original: &[u8],
    before: &Value,
    budget: usize,
    frame: &[u8],
    after: &Value,
) -> Result<(), String> {
    let (Value::Object(before), Value::Object(after)) = (before, after) else {
        return Err("not objects".into());
    };
    let result = after.get("result").ok_or("no result")?;
    for (key, value) in before {
        if key != "result" && after.get(key) != Some(value) {
            return Err(format!("top-level {key} changed"));
        }
    }
    if after.len() != before.len() {
        return Err("top-level members added".into());
    }
    let original_result = before.get("result").ok_or("original has no result")?;
    let result_object = result.as_object().ok_or("result is not an object")?;
    // The marker.
    let meta = result_object
        .get("_meta")
        .ok_or("no _meta")?
        .as_object()
        .ok_or("_meta is not an object")?;
    let marker = meta.get(MARKER_KEY).ok_or("no marker")?;
    if marker["originalBytes"] != json!(original.len()) || marker["keptBytes"] != json!(frame.len())
    {
        return Err(format!("marker sizes: {marker}"));
    }
    if marker["cutCount"].as_u64().unwrap_or(0) == 0 {
        return Err("cutCount".into());
    }
    // `_meta` is the original's and the marker, nothing else.
    match original_result.get("_meta") {
        Some(original_meta) => {
            let same = original_meta.as_object().is_some_and(|original_meta| {
                !original_meta.contains_key(MARKER_KEY)
                    && original_meta.len() + 1 == meta.len()
                    && original_meta.iter().all(|(k, v)| meta.get(k) == Some(v))
            });
            if !same {
                return Err("_meta changed".into());
            }
        }
        None => {
            if meta.len() > 1 {
                return Err("_meta gained members".into());
            }
        }
    }
    // The links (`test://` ones, from `condense_linked`), then the notice:
    // the blocks shown are those before them.
    let mut shown = None;
    if let Some(Value::Array(content)) = result_object.get("content") {
        let links = content
            .iter()
            .rev()
            .take_while(|b| {
                b["type"] == "resource_link"
                    && b["uri"].as_str().is_some_and(|u| u.starts_with("test://"))
            })
            .count();
        let notice_at = content
            .len()
            .checked_sub(links + 1)
            .ok_or("no notice block")?;
        let notice = &content[notice_at];
        if notice["type"] != "text"
            || !notice["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("[drainpipe]"))
        {
            return Err(format!("last content block is not the notice: {notice}"));
        }
        let says_linked = notice["text"]
            .as_str()
            .is_some_and(|t| t.contains("resource_link"));
        if says_linked != (links > 0) {
            return Err(format!("{links} links, but the notice says: {notice}"));
        }
        shown = Some(&content[..notice_at]);
    }
    let kept_blocks = shown.unwrap_or_default();
    // The budget is spent. (A binary value that did not fit was left out
    // whole, replaced by a text saying so, or, with links, with the rest
    // of its array from it: what it would have taken may stay unused.)
    let replaced = original_result
        .get("content")
        .and_then(Value::as_array)
        .zip(shown)
        .is_some_and(|(before, after)| {
            let kept = before.iter().zip(after).take_while(|(b, a)| b == a).count();
            before.get(kept).is_some_and(is_binary)
                || before
                    .iter()
                    .zip(after)
                    .any(|(before, after)| is_replacement(before, after))
        });
    if budget >= SPENT_FROM && !replaced && frame.len() < budget / 10 * 9 {
        return Err(format!(
            "{} bytes: less than nine tenths of the budget {budget} spent",
            frame.len()
        ));
    }
    // The pointers the marker lists, when it lists them all (its slot
    // may end first): every value cut must be among them.
    let listed: Option<Vec<String>> = marker["cut"].as_array().and_then(|cut| {
        let pointers: Vec<String> = cut
            .iter()
            .filter_map(|p| p.as_str().map(String::from))
            .collect();
        (Some(pointers.len() as u64) == marker["cutCount"].as_u64()).then_some(pointers)
    });
    within_result(original_result, result_object, shown, listed.as_deref())
        .map_err(|e| format!("{e}\n{}", String::from_utf8_lossy(frame)))?;
    // Mirrors are cut alike.
    if let (Some(Value::Array(content)), Some(Value::Object(structured))) = (
        original_result.get("content"),
        original_result.get("structuredContent"),
    ) {
        for (i, block) in content.iter().enumerate() {
            let Some(t) = block.get("text").and_then(Value::as_str) else {
                continue;
            };
            // A block replaced for its binary value keeps no text to mirror.
            if kept_blocks
                .get(i)
                .is_some_and(|kept| is_replacement(block, kept))
            {
                continue;
            }
            for (key, value) in structured {
                if value.as_str() == Some(t) {
                    let kept_text = kept_blocks.get(i).and_then(|b| b.get("text"));
                    let kept_mirror = result_object
                        .get("structuredContent")
                        .and_then(|s| s.get(key));
                    if let (Some(a), Some(b)) = (kept_text, kept_mirror)
                        && a != b
                    {
                        return Err(format!("mirror {key} cut unlike content[{i}].text"));
                    }
                }
            }
        }
    }
    Ok(())
}

/// [`within`] for the result itself: its `_meta` was checked apart (it
/// holds the marker), and of its `content` only the `shown` blocks, before
/// the notice and the links, are compared.
fn within_result(
    original: &Value,
    kept: &Map<String, Value>,
    shown: Option<&[Value]>,
    listed: Listed<'_>,
) -> Result<(), String> {
    let Value::Object(original) = original else {
        return Err(": changed".into());
    };
    let at = At::Root;
    // (`_meta` is the original's, or added for the marker alone.)
    if kept
        .keys()
        .any(|key| !original.contains_key(key) && key != "_meta")
    {
        return Err(": members added".into());
    }
    for (key, o) in original {
        if key == "_meta" {
            continue;
        }
        let Some(k) = kept.get(key) else {
            return Err(format!("/{key} missing"));
        };
        if key == "resultType" {
            if o != k {
                return Err(format!("/{key} changed"));
            }
            continue;
        }
        let at = At::Member(&at, key);
        match (key.as_str(), o, shown) {
            ("content", Value::Array(o), Some(shown)) => within_items(o, shown, &at, listed)?,
            _ => within(o, k, &at, listed)?,
        }
    }
    Ok(())
}
/// Where a value lies in the result, as a JSON Pointer: written out only
/// when an error names it (a path built for every member compared was
/// most of what the check allocated).
enum At<'a> {
    Root,
    Member(&'a At<'a>, &'a str),
    Item(&'a At<'a>, usize),
}

impl At<'_> {
    /// Whether the pointer starts with `prefix` (a member of the root).
    fn starts_with(&self, prefix: &str) -> bool {
        match self {
            At::Root => prefix.is_empty(),
            At::Member(At::Root, key) => key.starts_with(prefix),
            At::Member(parent, _) | At::Item(parent, _) => parent.starts_with(prefix),
        }
    }
}

impl core::fmt::Display for At<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            At::Root => Ok(()),
            At::Member(parent, key) => write!(f, "{parent}/{key}"),
            At::Item(parent, i) => write!(f, "{parent}/{i}"),
        }
    }
}

/// The pointers a marker lists as cut, or `None` if its list stopped
/// short of `cutCount`.
type Listed<'a> = Option<&'a [String]>;

/// Whether the value at `at`, cut, is listed (or the list is not whole).
fn listed_cut(at: &At<'_>, listed: Listed<'_>) -> Result<(), String> {
    let Some(pointers) = listed else {
        return Ok(());
    };
    // (The pointer written out once, not once per listed pointer.)
    let at = at.to_string();
    if pointers.contains(&at) {
        Ok(())
    } else {
        Err(format!("{at}: cut, but not in the marker's list"))
    }
}

fn within(original: &Value, kept: &Value, at: &At<'_>, listed: Listed<'_>) -> Result<(), String> {
    match (original, kept) {
        (Value::String(o), Value::String(k)) => {
            if o == k {
                Ok(())
            } else if o.starts_with(k.as_str()) || kept_ends(o, k) {
                listed_cut(at, listed)
            } else {
                Err(format!(
                    "{at}: neither a prefix nor a beginning, a true mark and an end"
                ))
            }
        }
        (Value::Array(o), Value::Array(k)) => within_items(o, k, at, listed),
        (Value::Object(o), Value::Object(k)) => {
            // Members of an object in `structuredContent` may be left out
            // whole; none is added, and none of a content block or of the
            // result itself is left out.
            if k.keys().any(|key| !o.contains_key(key)) {
                return Err(format!("{at}: members added"));
            }
            let may_leave_out = at.starts_with("structuredContent");
            for (key, o) in o {
                let Some(k) = k.get(key) else {
                    if may_leave_out {
                        continue;
                    }
                    return Err(format!("{at}/{key} missing"));
                };
                if key == "_meta" || key == "resultType" {
                    if o != k {
                        return Err(format!("{at}/{key} changed"));
                    }
                    continue;
                }
                within(o, k, &At::Member(at, key), listed)?;
            }
            Ok(())
        }
        (o, k) if o == k => Ok(()),
        _ => Err(format!("{at}: changed")),
    }
}

/// [`within`] for the items of an array.
fn within_items(o: &[Value], k: &[Value], at: &At<'_>, listed: Listed<'_>) -> Result<(), String> {
    if k.len() > o.len() {
        return Err(format!("{at}: array grew"));
    }
    if k.len() < o.len() {
        listed_cut(at, listed)?;
    }
    // Its first elements, each within the original's; then (under
    // `Keep::Ends`) its last, whole. Taking the first elements as far as
    // they go loses nothing: if the last `m` are the original's, so are
    // the last `m - 1`.
    let first = o
        .iter()
        .zip(k)
        .enumerate()
        .take_while(|(i, (o, k))| {
            is_replacement(o, k) || within(o, k, &At::Item(at, *i), listed).is_ok()
        })
        .count();
    let last = &k[first..];
    if last != &o[o.len() - last.len()..] {
        let i = first;
        within(&o[i], &k[i], &At::Item(at, i), listed)?;
        return Err(format!(
            "{at}: items from {i} on are neither within the first nor the last"
        ));
    }
    Ok(())
}

/// Whether `kept` is a beginning of `original`, the mark that says how
/// many bytes were left out after it (and from which byte), and an end of
/// `original`, the numbers exact ([`Keep`]).
pub fn kept_ends(original: &str, kept: &str) -> bool {
    const OPEN: &str = "\n[… drainpipe left out ";
    const MIDDLE: &str = " bytes here, from byte ";
    const CLOSE: &str = " …]\n";
    let number = |s: &str, until: &str| -> Option<(u64, usize)> {
        let end = s.find(until)?;
        let digits = &s[..end];
        let n = digits
            .parse()
            .ok()
            .filter(|_| digits.bytes().all(|b| b.is_ascii_digit()))?;
        Some((n, end + until.len()))
    };
    kept.match_indices(OPEN).any(|(at, _)| {
        let head = &kept[..at];
        let rest = &kept[at + OPEN.len()..];
        let Some((left_out, used)) = number(rest, MIDDLE) else {
            return false;
        };
        let rest = &rest[used..];
        let Some((from, used)) = number(rest, CLOSE) else {
            return false;
        };
        let tail = &rest[used..];
        from == head.len() as u64
            && original.starts_with(head)
            && original.ends_with(tail)
            && left_out > 0
            && original.len() as u64 == from + left_out + tail.len() as u64
    })
}

/// A content block with a binary value, replaced by the notice text block.
/// A content block whose bytes cannot be cut: an image's or audio's
/// `data`, an embedded resource's `blob`.
fn is_binary(block: &Value) -> bool {
    block.get("data").is_some() || block.get("resource").and_then(|r| r.get("blob")).is_some()
}

pub(super) fn is_replacement(original: &Value, kept: &Value) -> bool {
    is_binary(original)
        && kept["type"] == "text"
        && kept["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("[drainpipe]") && t.contains("left out"))
}
