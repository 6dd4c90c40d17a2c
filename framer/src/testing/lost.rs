//! The "nothing lost" oracle of the [`Condenser`](crate::budget::Condenser)
//! with links: the original result is rebuilt from the condensed one and
//! the values its links point at, and compared with the input.
//!
//! Every value of the original is either in the result as it was, or
//! readable in full through a link the result carries:
//!
//! - a cut string (a text, or a binary value whose block was replaced) by
//!   a link to its whole value: the one at its pointer, or one with the
//!   same contents (a text and its mirror share a file);
//! - a cut array by a link to its rest, from an item no later than the
//!   first it did not keep whole, holding the original's items from there
//!   on; the items before it are in the result, each one checked the same
//!   way (an item kept with a cut text in it needs that text's link);
//! - a value inside an array's rest needs nothing more.
//!
//! There is no exception: a condenser short of links leaves an element out
//! whole for its array's link to carry, and keeps links for the arrays
//! (and `structuredContent` objects) that may be cut, so a value cut past
//! [`MAX_LINKS`] would be a bug here. (A string outside any array or
//! object that may be cut could still go unlinked; the generated
//! responses have none.)

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use serde_json::{Map, Value};

#[cfg(doc)]
use crate::budget::MAX_LINKS;
use crate::budget::{Condensed, MARKER_KEY, SpillKind, Spilled};

/// A value the result links to: what the condenser said of it and its raw
/// bytes, as reported.
pub type LinkedValue<'a> = (&'a Spilled, &'a [u8]);

/// Checks that `condensed` (its links filled in with `test://v/<n>` URIs,
/// `<n>` the value's number) loses nothing of the original, parsed as
/// `before`: see the module docs. `values` are the values reported, by
/// number.
pub fn check_nothing_lost_parsed(
    before: &Value,
    condensed: &Condensed,
    values: &[LinkedValue<'_>],
) -> Result<(), String> {
    let Condensed::Cut { frame, .. } = condensed else {
        return Ok(());
    };
    let after: Value = serde_json::from_slice(frame).map_err(|e| format!("output: {e}"))?;
    check_nothing_lost_tree(before, after, values)
}

/// [`check_nothing_lost_parsed`] on the cut frame already parsed
/// (`after`), which it takes apart.
pub(super) fn check_nothing_lost_tree(
    before: &Value,
    mut after: Value,
    values: &[LinkedValue<'_>],
) -> Result<(), String> {
    let mut kept = after["result"].take();
    let linked_numbers = strip_additions(&mut kept, &before["result"])?;
    let mut linked = Vec::new();
    for &(spilled, raw) in values {
        if linked_numbers.contains(&spilled.value) && spilled.complete {
            linked.push(Decoded::new(spilled, raw)?);
        }
    }
    let walk = Walk { linked: &linked };
    walk.value(&before["result"], &kept, "")
}

/// A linked value, decoded.
struct Decoded<'a> {
    spilled: &'a Spilled,
    /// A string's text (or base64), an array's rest, an object's rest.
    text: Option<String>,
    rest: Option<Vec<Value>>,
    members: Option<Map<String, Value>>,
}

impl<'a> Decoded<'a> {
    fn new(spilled: &'a Spilled, raw: &[u8]) -> Result<Self, String> {
        let pointer = &spilled.pointer;
        match spilled.kind {
            SpillKind::Elements { .. } => {
                let rest: Vec<Value> = serde_json::from_slice(raw)
                    .map_err(|e| format!("{pointer}: the rest is not a JSON array: {e}"))?;
                Ok(Decoded {
                    spilled,
                    text: None,
                    rest: Some(rest),
                    members: None,
                })
            }
            SpillKind::Members { .. } => {
                let members: Map<String, Value> = serde_json::from_slice(raw)
                    .map_err(|e| format!("{pointer}: the rest is not a JSON object: {e}"))?;
                Ok(Decoded {
                    spilled,
                    text: None,
                    rest: None,
                    members: Some(members),
                })
            }
            _ => {
                let quoted = [b"\"".as_slice(), raw, b"\""].concat();
                let text: String = serde_json::from_slice(&quoted)
                    .map_err(|e| format!("{pointer}: the value does not decode: {e}"))?;
                Ok(Decoded {
                    spilled,
                    text: Some(text),
                    rest: None,
                    members: None,
                })
            }
        }
    }
}

/// Takes out of `kept` (a condensed `result`) what the condenser added:
/// the `resource_link` blocks it wrote, the notice, the marker (and a
/// `_meta` the original did not have). Returns the numbers of the values
/// linked.
fn strip_additions(kept: &mut Value, original: &Value) -> Result<Vec<u32>, String> {
    let mut numbers = Vec::new();
    if let Some(Value::Array(content)) = kept.get_mut("content") {
        while let Some(number) = content.last().and_then(test_link) {
            numbers.push(number);
            content.pop();
        }
        let notice = content.pop().ok_or("no notice block")?;
        if !notice["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("[drainpipe]"))
        {
            return Err(format!("the last block is not the notice: {notice}"));
        }
    }
    if let Some(Value::Object(result)) = Some(&mut *kept) {
        if let Some(Value::Object(meta)) = result.get_mut("_meta") {
            meta.remove(MARKER_KEY);
        }
        if original.get("_meta").is_none() {
            result.remove("_meta");
        }
    }
    Ok(numbers)
}

/// The value number of a `resource_link` block to `test://v/<n>`.
fn test_link(block: &Value) -> Option<u32> {
    if block["type"] != "resource_link" {
        return None;
    }
    block["uri"]
        .as_str()?
        .strip_prefix("test://v/")?
        .parse()
        .ok()
}

struct Walk<'a> {
    linked: &'a [Decoded<'a>],
}

impl Walk<'_> {
    /// `kept` is `original`, or what is missing of it is linked.
    fn value(&self, original: &Value, kept: &Value, at: &str) -> Result<(), String> {
        if original == kept {
            return Ok(());
        }
        match (original, kept) {
            (Value::String(o), Value::String(_)) => {
                let whole = self.linked.iter().any(|d| {
                    d.text.as_deref() == Some(o.as_str())
                        && (d.spilled.pointer == at || d.spilled.kind == SpillKind::Text)
                });
                if whole {
                    Ok(())
                } else {
                    Err(format!("{at}: cut, and no link holds it whole"))
                }
            }
            (Value::Array(o), Value::Array(k)) => self.array(o, k, at),
            (Value::Object(o), Value::Object(k)) => {
                if super::condense::is_replacement(original, kept) {
                    return self.replaced(original, at);
                }
                // An object cut: its members not kept are in its rest.
                let rest = self.linked.iter().find_map(|d| match d.spilled.kind {
                    SpillKind::Members { .. } if d.spilled.pointer == at => d.members.as_ref(),
                    _ => None,
                });
                for (key, value) in o {
                    let path = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                    if let Some(linked) = rest.and_then(|r| r.get(key)) {
                        if linked != value {
                            return Err(format!("{path}: linked, but not the original's"));
                        }
                        continue;
                    }
                    match k.get(key) {
                        Some(kept) => self.value(value, kept, &path)?,
                        None if rest.is_some() => {
                            return Err(format!("{path}: neither kept nor in the rest"));
                        }
                        None => return Err(format!("{path}: left out, and no link holds it")),
                    }
                }
                if k.keys().any(|key| !o.contains_key(key)) {
                    return Err(format!("{at}: members added"));
                }
                Ok(())
            }
            _ => Err(format!("{at}: changed")),
        }
    }

    /// An array: its items kept whole or within, up to where its rest is
    /// linked from; the rest the original's.
    fn array(&self, original: &[Value], kept: &[Value], at: &str) -> Result<(), String> {
        let rest = self.linked.iter().find_map(|d| match d.spilled.kind {
            SpillKind::Elements { first } if d.spilled.pointer == at => {
                Some((first, d.rest.as_deref().unwrap_or(&[])))
            }
            _ => None,
        });
        let covered = match rest {
            Some((first, items)) => {
                let first = usize::try_from(first).unwrap_or(usize::MAX);
                if original.get(first..) != Some(items) {
                    return Err(format!(
                        "{at}: the rest linked from item {first} is not the original's"
                    ));
                }
                first
            }
            None if kept.len() == original.len() => original.len(),
            None => {
                return Err(format!(
                    "{at}: kept {} of {} items, and no link holds the rest",
                    kept.len(),
                    original.len()
                ));
            }
        };
        if kept.len() < covered {
            return Err(format!(
                "{at}: {} items kept, the rest linked only from item {covered}",
                kept.len()
            ));
        }
        for (i, (o, k)) in original.iter().zip(kept).take(covered).enumerate() {
            self.value(o, k, &format!("{at}/{i}"))?;
        }
        Ok(())
    }

    /// A content block whose binary value was left out: the value linked.
    fn replaced(&self, original: &Value, at: &str) -> Result<(), String> {
        let (binary, path) = match original.get("data") {
            Some(data) => (data, format!("{at}/data")),
            None => (&original["resource"]["blob"], format!("{at}/resource/blob")),
        };
        let linked = self
            .linked
            .iter()
            .any(|d| d.spilled.pointer == path && d.text.as_deref() == binary.as_str());
        if linked {
            Ok(())
        } else {
            Err(format!("{path}: left out, and not linked"))
        }
    }
}
