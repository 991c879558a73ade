//! Property tests of the redaction: for any JSON document with secrets under secret keys at any
//! depth, neither the redacted JSON nor the redacted text of any prefix of it (a truncated body)
//! contains a secret.

use a2aflow_protocol::wirelog::{RedactionPolicy, redact_body, redact_json};
use proptest::prelude::*;
use serde_json::{Map, Value};

const MARK: &str = "SECRETVALUE";

/// Keys: some secret (in several spellings), some business, some configured.
fn key() -> impl Strategy<Value = (String, bool)> {
    prop_oneof![
        Just(("password".to_owned(), true)),
        Just(("access_token".to_owned(), true)),
        Just(("accessToken".to_owned(), true)),
        Just(("Api-Key".to_owned(), true)),
        Just(("client_secret".to_owned(), true)),
        Just(("pin_code".to_owned(), true)),
        Just(("text".to_owned(), false)),
        Just(("taskId".to_owned(), false)),
        Just(("metadata".to_owned(), false)),
        Just((
            "https://example.org/ext/Authorization-T/v1".to_owned(),
            false
        )),
        "[a-z]{1,6}".prop_map(|k| (k, false)),
    ]
}

/// A JSON value; `secret` says whether it sits under a secret key (then its leaves are secrets).
fn value(secret: bool) -> impl Strategy<Value = Value> {
    let leaf = if secret {
        (0u32..1000)
            .prop_map(|n| Value::String(format!("{MARK}{n}")))
            .boxed()
    } else {
        prop_oneof![
            "[a-z \\\\\"{}:,]{0,12}".prop_map(Value::String),
            any::<i64>().prop_map(Value::from),
            any::<bool>().prop_map(Value::Bool),
            Just(Value::Null),
        ]
        .boxed()
    };
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..5).prop_map(move |entries| {
                let mut map = Map::new();
                for ((k, is_secret), v) in entries {
                    let v = if is_secret {
                        // Everything under a secret key is secret, whatever its shape.
                        mark_all(v)
                    } else {
                        v
                    };
                    map.insert(k, v);
                }
                Value::Object(map)
            }),
        ]
    })
}

/// Turns every leaf string of `v` into a secret (and keeps its shape).
fn mark_all(v: Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.into_iter().map(mark_all).collect()),
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, mark_all(v))).collect()),
        _ => Value::String(format!("{MARK}0")),
    }
}

fn policy() -> RedactionPolicy {
    RedactionPolicy::new().with_json_field("pinCode")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn redacted_json_holds_no_secret(doc in value(false)) {
        let out = redact_json(&doc, &policy()).to_string();
        prop_assert!(!out.contains(MARK), "{}", out);
    }

    #[test]
    fn every_prefix_of_the_body_is_redacted(doc in value(false), cut in 0usize..2000) {
        let text = doc.to_string();
        let cut = cut.min(text.len());
        // Cut at a char boundary (the body is ASCII apart from nothing here, but stay safe).
        let cut = (0..=cut).rev().find(|i| text.is_char_boundary(*i)).unwrap();
        let shown = redact_body(
            &text.as_bytes()[..cut],
            Some("application/json"),
            &policy(),
            usize::MAX,
        );
        // Not even a fragment of a secret (an unterminated value is redacted too).
        prop_assert!(!shown.contains("SEC"), "{} -> {}", &text[..cut], shown);
    }
}
