//! Property tests: `NegotiationContext` and `MetadataContent` survive JSON text and a
//! protobuf-`Struct`-like conversion (every integer becomes a double) unchanged.

// Test harness: a malformed fixture or a serde failure must abort the test loudly.

use a2at::{
    AUTHORIZATION_T_EXTENSION_URI, MetadataContent, NEGOTIATION_T_EXTENSION_URI,
    NOTIFICATION_T_EXTENSION_URI, NegotiationContext, Performative, TASK_T_EXTENSION_URI,
};
use proptest::prelude::*;
use serde_json::{Map, Value};

/// What protobuf `Struct` does to numbers: every number becomes an `f64`.
fn struct_like(value: &Value) -> Value {
    match value {
        Value::Number(n) => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Value::Array(items) => Value::Array(items.iter().map(struct_like).collect()),
        Value::Object(map) => Value::Object(struct_like_map(map)),
        other => other.clone(),
    }
}

fn struct_like_map(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .map(|(k, v)| (k.clone(), struct_like(v)))
        .collect()
}

fn performative() -> impl Strategy<Value = Performative> {
    prop::sample::select(Performative::ALL.to_vec())
}

fn context() -> impl Strategy<Value = NegotiationContext> {
    (
        "[a-zA-Z0-9-]{0,8}[a-zA-Z0-9][ -~]{0,30}",
        1..=i64::from(i32::MAX),
        1..=i64::from(i32::MAX),
        performative(),
    )
        // Every generated tuple is valid (non-blank id, counts in range), so nothing is filtered.
        .prop_filter_map("valid context", |(id, round, max, p)| {
            NegotiationContext::new(id, round, max, p).ok()
        })
}

fn extension_uri() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(TASK_T_EXTENSION_URI.to_owned()),
        Just(NEGOTIATION_T_EXTENSION_URI.to_owned()),
        Just(AUTHORIZATION_T_EXTENSION_URI.to_owned()),
        Just(NOTIFICATION_T_EXTENSION_URI.to_owned()),
        "urn:x-[a-z]{1,12}",
    ]
}

fn content() -> impl Strategy<Value = MetadataContent> {
    (
        extension_uri(),
        prop::option::of("\\PC{0,64}"),
        prop::option::of("[A-Za-z-]{1,12}/[a-z-]{1,12}/v[0-9]"),
        prop::option::of(context()),
    )
        .prop_map(
            |(extension_uri, prompt_text, template_uri, negotiation_context)| MetadataContent {
                extension_uri,
                prompt_text,
                template_uri,
                negotiation_context,
            },
        )
}

proptest! {
    #[test]
    fn context_round_trips_through_json_and_struct(c in context()) {
        let text = serde_json::to_string(&c).expect("serialises");
        let back: NegotiationContext = serde_json::from_str(&text).expect("parses");
        prop_assert_eq!(&back, &c);
        prop_assert_eq!(serde_json::from_str::<Value>(&text).expect("json"), c.to_json());

        let doubled = struct_like(&c.to_json());
        prop_assert!(doubled["round"].is_f64());
        prop_assert_eq!(NegotiationContext::from_json(&doubled), Ok(c.clone()));
        // And back out: emission is integral again.
        prop_assert_eq!(NegotiationContext::from_json(&doubled).map(|c| c.to_json()), Ok(c.to_json()));
    }

    #[test]
    fn metadata_round_trips_through_json_and_struct(m in content()) {
        let built = m.to_metadata();
        let text = serde_json::to_string(&built).expect("serialises");
        let parsed: Map<String, Value> = serde_json::from_str(&text).expect("parses");
        prop_assert_eq!(MetadataContent::read(&parsed, &m.extension_uri), Ok(Some(m.clone())));

        let doubled = struct_like_map(&built);
        let read = MetadataContent::read(&doubled, &m.extension_uri);
        prop_assert_eq!(&read, &Ok(Some(m.clone())));
        prop_assert_eq!(read.map(|r| r.map(|r| r.to_metadata())), Ok(Some(built)));
    }
}
