//! Bytes on the wire: the counters against `serde_json`.

use super::*;

#[test]
fn escaped_len_matches_serde_json_on_the_hard_cases() {
    let mut cases: Vec<String> = vec![
        String::new(),
        "\"".into(),
        "\\".into(),
        "\"\\\"".into(),
        "\u{7f}".into(),
        "é".into(),
        "😀".into(),
        "\u{10FFFF}".into(),
        "𝄞 4-byte".into(),
        "x".repeat(100_000),
        "\"".repeat(10_000),
        "line\nline\r\nline\ttab\u{8}\u{c}".into(),
    ];
    cases.extend((0u8..0x20).map(|b| format!("a{}b", char::from(b))));
    cases.push((0u8..0x20).map(char::from).collect());
    for s in &cases {
        assert_eq!(
            escaped_len(s) + 2,
            serde_json::to_vec(s).unwrap().len(),
            "{s:?}"
        );
        assert_eq!(
            value_wire_len(&json!(s)),
            serde_json::to_vec(s).unwrap().len()
        );
    }
}

#[test]
fn prefix_never_splits_an_escape_or_a_character() {
    let text = "a\"\u{1}😀é\\\n".repeat(3);
    for max in 0..=escaped_len(&text) + 1 {
        let prefix = longest_prefix_within(&text, max);
        assert!(escaped_len(prefix) <= max);
        assert!(text.starts_with(prefix));
        // Longest: the next character would not fit.
        if let Some(next) = text[prefix.len()..].chars().next() {
            assert!(
                escaped_len(prefix) + escaped_len(next.encode_utf8(&mut [0; 4])) > max,
                "max {max}"
            );
        }
    }
}

#[test]
fn property_wire_lengths_match_serde_json() {
    bolero::check!()
        .with_type::<(Vec<u8>, Vec<(u8, Vec<u8>, i64, f64)>, u16)>()
        .for_each(|(bytes, members, cut)| {
            let s = text_from(bytes);
            assert_eq!(escaped_len(&s) + 2, serde_json::to_vec(&s).unwrap().len());
            let prefix = longest_prefix_within(&s, usize::from(*cut));
            assert!(escaped_len(prefix) <= usize::from(*cut) && s.starts_with(prefix));

            let mut object = serde_json::Map::new();
            let mut array = Vec::new();
            for (kind, key, int, float) in members {
                let value = match kind % 5 {
                    0 => json!(int),
                    1 => serde_json::Number::from_f64(*float).map_or(Value::Null, Value::Number),
                    2 => json!(text_from(key)),
                    3 => json!([int, text_from(key), null, true, false]),
                    _ => json!({ text_from(key): { "nested": [float.to_bits()] } }),
                };
                array.push(value.clone());
                object.insert(text_from(key), value);
            }
            let value = json!({"object": object, "array": array});
            assert_eq!(value_wire_len(&value), wire(&value));
        });
}
