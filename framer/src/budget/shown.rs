//! Reading what a host shows the model of a response (see
//! [`super::units`]) in one pass over the line, without building its tree.
//!
//! A ladder measures every candidate result it may take
//! ([`Ladder::finish`](super::Ladder::finish)), so this runs up to seven
//! times a condensed call. Parsing each one into a `serde_json::Value` made
//! a map node and a `String` of every key and value, most of them in
//! members nothing shows; here only the shown texts are kept (borrowed from
//! the line when they hold no escape), and `structuredContent` is written
//! out as compact JSON as it is read ([`Compact`]).
//!
//! It reads exactly what `serde_json::from_slice::<Value>` then the lookups
//! read: the whole line must parse (every member, numbers range-checked and
//! strings decoded the same way, within the same depth limit), and a key
//! given twice counts as its last value, as in a `Value` map. The tests
//! hold it to that reading.

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::marker::PhantomData;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The shown parts of a response: the texts of `result.content`, in order,
/// and `result.structuredContent` as compact JSON if present.
#[derive(Debug, Default)]
pub(super) struct ShownParts<'a> {
    pub(super) texts: Vec<Cow<'a, str>>,
    pub(super) structured: Option<String>,
}

/// The shown parts of `frame`; `None` if it is not JSON, or not an object
/// whose `result` is an object.
pub(super) fn read_shown(frame: &[u8]) -> Option<ShownParts<'_>> {
    serde_json::from_slice::<Response<'_>>(frame).ok()?.0
}

/// The response: its last `result`, if that is an object.
#[derive(Default)]
struct Response<'a>(Option<ShownParts<'a>>);

/// `result`: its parts, if it is an object.
#[derive(Default)]
struct ResultMember<'a>(Option<ShownParts<'a>>);

/// `content`: the shown text of each block, if it is an array.
#[derive(Default)]
struct Content<'a>(Vec<Cow<'a, str>>);

/// A content block, if it is an object.
#[derive(Default)]
struct BlockValue<'a>(Option<Block<'a>>);

/// A content block's texts: its own `text` (the outer `Option` says
/// whether the member is there at all), and its `resource`'s.
#[derive(Default)]
struct Block<'a> {
    text: Option<Option<Cow<'a, str>>>,
    resource_text: Option<Cow<'a, str>>,
}

impl<'a> Block<'a> {
    /// What a host shows of it: `text` if the block has one (shown only if
    /// it is a string), else its resource's.
    fn shown(self) -> Option<Cow<'a, str>> {
        match self.text {
            Some(text) => text,
            None => self.resource_text,
        }
    }
}

/// An embedded resource's `text`, if it is an object whose `text` is a
/// string.
#[derive(Default)]
struct Resource<'a>(Option<Cow<'a, str>>);

/// A string, borrowed when it needs no decoding; `None` for any other
/// value.
#[derive(Default)]
struct Text<'a>(Option<Cow<'a, str>>);

/// A value read and dropped. (The lifetime only fits it to [`reader!`].)
#[derive(Default)]
struct Skip<'a>(PhantomData<&'a ()>);

/// Every reader goes through `deserialize_any`, as `Value` does: a number
/// out of range or a bad string fails the line alike, at the same depth.
/// Its visitor reads each kind of value it does not list ([`Skip`]'s way)
/// into the type's default.
macro_rules! reader {
    ($name:ident, $visitor:ident, $what:literal, [$($kind:ident),*], $($own:item),* $(,)?) => {
        struct $visitor;

        impl<'de> Deserialize<'de> for $name<'de> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any($visitor)
            }
        }

        impl<'de> Visitor<'de> for $visitor {
            type Value = $name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str($what)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Default::default())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Default::default())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Default::default())
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Default::default())
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Default::default())
            }
            $(reader!(@$kind);)*
            $($own)*
        }
    };
    (@str) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (@seq) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<Skip>()?.is_some() {}
            Ok(Default::default())
        }
    };
    (@map) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<Skip, Skip>()?.is_some() {}
            Ok(Default::default())
        }
    };
}

/// An object's next key, decoded.
fn next_key<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<Cow<'de, str>>, A::Error> {
    Ok(map
        .next_key::<Text<'de>>()?
        .map(|k| k.0.unwrap_or_default()))
}

/// Reads an object's members: `known` reads the value of a key it knows
/// and says so; every other value is read and dropped.
fn members<'de, A: MapAccess<'de>>(
    map: &mut A,
    mut known: impl FnMut(&str, &mut A) -> Result<bool, A::Error>,
) -> Result<(), A::Error> {
    while let Some(key) = next_key(map)? {
        if !known(&key, map)? {
            map.next_value::<Skip>()?;
        }
    }
    Ok(())
}

/// The last value of `key` in an object (a key given twice counts as its
/// last value, as in a `Value` map), the others read and dropped.
fn last_of<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    map: &mut A,
    key: &str,
) -> Result<Option<T>, A::Error> {
    let mut value = None;
    members(map, |k, map| {
        let known = k == key;
        if known {
            value = Some(map.next_value::<T>()?);
        }
        Ok(known)
    })?;
    Ok(value)
}

reader!(Skip, SkipVisitor, "any JSON value", [str, seq, map],);

reader!(
    Text,
    TextVisitor,
    "any JSON value",
    [seq, map],
    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Text<'de>, E> {
        Ok(Text(Some(Cow::Borrowed(text))))
    },
    fn visit_str<E: de::Error>(self, text: &str) -> Result<Text<'de>, E> {
        Ok(Text(Some(Cow::Owned(text.into()))))
    },
    fn visit_string<E: de::Error>(self, text: String) -> Result<Text<'de>, E> {
        Ok(Text(Some(Cow::Owned(text))))
    }
);

reader!(
    Response,
    ResponseVisitor,
    "a JSON-RPC response",
    [str, seq],
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Response<'de>, A::Error> {
        let result = last_of::<ResultMember<'de>, A>(&mut map, "result")?;
        Ok(Response(result.and_then(|r| r.0)))
    }
);

reader!(
    ResultMember,
    ResultVisitor,
    "a result",
    [str, seq],
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResultMember<'de>, A::Error> {
        let mut parts = ShownParts::default();
        members(&mut map, |key, map| {
            match key {
                "content" => parts.texts = map.next_value::<Content<'de>>()?.0,
                "structuredContent" => {
                    let mut json = String::new();
                    let mut scratch = Scratch::default();
                    map.next_value_seed(Compact {
                        out: &mut json,
                        scratch: &mut scratch,
                    })?;
                    parts.structured = Some(json);
                }
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(ResultMember(Some(parts)))
    }
);

reader!(
    Content,
    ContentVisitor,
    "content blocks",
    [str, map],
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content<'de>, A::Error> {
        let mut texts = Vec::new();
        while let Some(block) = seq.next_element::<BlockValue<'de>>()? {
            texts.extend(block.0.and_then(Block::shown));
        }
        Ok(Content(texts))
    }
);

reader!(
    BlockValue,
    BlockVisitor,
    "a content block",
    [str, seq],
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<BlockValue<'de>, A::Error> {
        let mut block = Block::default();
        members(&mut map, |key, map| {
            match key {
                "text" => block.text = Some(map.next_value::<Text<'de>>()?.0),
                "resource" => block.resource_text = map.next_value::<Resource<'de>>()?.0,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(BlockValue(Some(block)))
    }
);

reader!(
    Resource,
    ResourceVisitor,
    "a resource",
    [str, seq],
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Resource<'de>, A::Error> {
        let text = last_of::<Text<'de>, A>(&mut map, "text")?;
        Ok(Resource(text.and_then(|t| t.0)))
    }
);

/// Writes the value it reads as compact JSON, byte for byte what
/// `serde_json::to_string` writes of it parsed as a `Value`: an object's
/// members sorted by key (a `Value` map is a `BTreeMap`), a key given twice
/// written once with its last value, strings escaped as `serde_json`
/// escapes them, numbers as it writes them.
///
/// Members are written as they come; an object whose keys did not come in
/// order, or came twice, is put in order when it closes (most writers sort
/// their keys, or write each once in an order that is often sorted).
struct Compact<'o, 'de> {
    out: &'o mut String,
    scratch: &'o mut Scratch<'de>,
}

/// A member of an object being written: its key, and where its
/// `"key":value` starts and ends in the output.
type Member<'de> = (Cow<'de, str>, usize, usize);

/// Buffers [`Compact`] reuses while it writes one value. Each object
/// lists its members (to sort them when they came out of order), and
/// each list is taken when an object opens and given back emptied when
/// it closes; a `structuredContent` of a thousand small objects then
/// allocates a list per level of nesting, where a list of its own for
/// each object was a fifth of the allocations a ladder makes (it
/// measures every candidate). `sorted` holds an object's members in
/// order for the moment they are copied back.
#[derive(Default)]
struct Scratch<'de> {
    lists: Vec<Vec<Member<'de>>>,
    sorted: String,
}

impl<'de> DeserializeSeed<'de> for Compact<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Compact<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.out.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        write_display(self.out, v);
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        write_display(self.out, v);
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        // As a `Value` holds it: a finite float (parsing refuses the rest),
        // written the way `serde_json` writes one.
        match serde_json::Number::from_f64(v) {
            Some(n) => write_display(self.out, n),
            None => self.out.push_str("null"),
        }
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.out.push_str("null");
        Ok(())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        write_string(self.out, v);
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Compact { out, scratch } = self;
        out.push('[');
        let mut first = true;
        while seq
            .next_element_seed(Element {
                out: &mut *out,
                scratch: &mut *scratch,
                first,
            })?
            .is_some()
        {
            first = false;
        }
        out.push(']');
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Compact { out, scratch } = self;
        out.push('{');
        let open = out.len();
        // (A list left behind by an error is dropped with the scratch.)
        let mut members = scratch.lists.pop().unwrap_or_default();
        let mut in_order = true;
        while let Some(key) = next_key(&mut map)? {
            if let Some((last, _, _)) = members.last() {
                in_order &= *last < key;
                out.push(',');
            }
            let start = out.len();
            write_string(out, &key);
            out.push(':');
            map.next_value_seed(Compact {
                out: &mut *out,
                scratch: &mut *scratch,
            })?;
            members.push((key, start, out.len()));
        }
        if !in_order {
            // Sorted by key, the last of each key kept (a stable sort keeps
            // a key's members in the order they came).
            members.sort_by(|a, b| a.0.cmp(&b.0));
            let sorted = &mut scratch.sorted;
            sorted.clear();
            for (n, (key, start, end)) in members.iter().enumerate() {
                if members.get(n + 1).is_some_and(|next| next.0 == *key) {
                    continue;
                }
                if !sorted.is_empty() {
                    sorted.push(',');
                }
                sorted.push_str(&out[*start..*end]);
            }
            out.truncate(open);
            out.push_str(sorted);
        }
        out.push('}');
        members.clear();
        scratch.lists.push(members);
        Ok(())
    }
}

/// An array's element, after a comma unless it is the first.
struct Element<'o, 'de> {
    out: &'o mut String,
    scratch: &'o mut Scratch<'de>,
    first: bool,
}

impl<'de> DeserializeSeed<'de> for Element<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if !self.first {
            self.out.push(',');
        }
        d.deserialize_any(Compact {
            out: self.out,
            scratch: self.scratch,
        })
    }
}

fn write_display(out: &mut String, value: impl fmt::Display) {
    use fmt::Write;
    // (Writing to a `String` does not fail.)
    let _ = write!(out, "{value}");
}

/// `text` as a JSON string, escaped as `serde_json` escapes it: `"` and
/// `\`, the control characters (`\b`, `\t`, `\n`, `\f`, `\r` by name, the
/// others as `\u00XX` in lowercase hex); everything else as it is.
fn write_string(out: &mut String, text: &str) {
    out.push('"');
    let mut from = 0;
    for (at, byte) in text.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            0x0c => "\\f",
            b'\r' => "\\r",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&text[from..at]);
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        } else {
            out.push_str(escape);
        }
        from = at + 1;
    }
    out.push_str(&text[from..]);
    out.push('"');
}
