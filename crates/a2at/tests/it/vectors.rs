//! Runs every A2A-T test vector of `tests/fixtures/a2a-t/vectors.json` (computed from the
//! reference `a2a-t-sdk` 1.2.0) through this crate. Each must give its expected result or error
//! text; the run fails unless exactly 60 vectors were checked.

// Test harness: a malformed fixture or a serde failure must abort the test loudly.

use a2at::{
    MetadataContent, NegotiationContext, Performative, RuleViolation, TemplateUri,
    check_progression, check_reply_context, check_rules, extension_name_from_uri,
    negotiation_reference,
};
use serde_json::{Map, Value, json};

const VECTORS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/a2a-t/vectors.json"
));
const EXPECTED_VECTORS: usize = 60;

fn section<'a>(doc: &'a Value, name: &str) -> &'a [Value] {
    doc[name]
        .as_array()
        .unwrap_or_else(|| panic!("section {name} missing"))
}

/// Builds a context from vector JSON, accepting `maxRounds` or `max_rounds`.
fn ctx(v: &Value) -> NegotiationContext {
    let max = v
        .get("maxRounds")
        .or_else(|| v.get("max_rounds"))
        .expect("maxRounds");
    NegotiationContext::new(
        v["id"]
            .as_str()
            .unwrap_or("3f2b8c1e-9a4d-4e6b-8f1a-2c3d4e5f6a7b"),
        v["round"].as_i64().expect("round"),
        max.as_i64().expect("maxRounds"),
        v.get("performative")
            .and_then(Value::as_str)
            .map_or(Performative::Propose, |p| {
                Performative::try_parse(p).expect("performative")
            }),
    )
    .expect("vector context is valid")
}

fn violation_json(v: &RuleViolation) -> Value {
    let facts: Map<String, Value> = v
        .facts()
        .into_iter()
        .map(|(k, s)| (k.to_owned(), Value::String(s)))
        .collect();
    json!({"slot": v.slot(), "code": v.code(), "facts": facts})
}

/// `"ok"` or the error text, as the vectors spell it.
fn outcome<E: std::fmt::Display>(r: Result<(), E>) -> Value {
    match r {
        Ok(()) => json!("ok"),
        Err(e) => json!(e.to_string()),
    }
}

fn run_context_parse(v: &Value) {
    let md = v["input"].as_object().expect("input object");
    let expect = &v["expect"];
    match NegotiationContext::from_metadata(md) {
        Ok(c) => {
            assert_eq!(c.to_json(), expect["ok"], "{}", v["name"]);
            assert_eq!(
                json!(c.is_exhausted()),
                expect["is_exhausted"],
                "{}",
                v["name"]
            );
            let violations: Vec<Value> = check_rules(&c).iter().map(violation_json).collect();
            assert_eq!(
                json!(violations),
                expect["rule_violations"],
                "{}",
                v["name"]
            );
        }
        Err(e) => assert_eq!(json!(e.to_string()), expect["error"], "{}", v["name"]),
    }
}

fn run_build_metadata(v: &Value) {
    let input = &v["input"];
    let content = MetadataContent {
        extension_uri: input["extension_uri"].as_str().expect("uri").to_owned(),
        prompt_text: input["prompt_text"].as_str().map(str::to_owned),
        template_uri: input["template_uri"].as_str().map(str::to_owned),
        negotiation_context: (!input["negotiation_context"].is_null())
            .then(|| ctx(&input["negotiation_context"])),
    };
    let built = content.to_metadata();
    let expect = v["expect"].as_object().expect("expect object");
    assert_eq!(&built, expect);
    // Key order too (the reference build order).
    assert!(built.keys().eq(expect.keys()));
    let read = MetadataContent::read(&built, &content.extension_uri).expect("readable");
    assert_eq!(read, Some(content));
}

fn run_template_uri(v: &Value) {
    let input = v["input"].as_str().expect("input");
    let got = TemplateUri::parse(input).map(|t| {
        json!({
            "extension_name": t.extension_name(),
            "path_segments": t.path_segments().collect::<Vec<_>>(),
            "template_version": t.version(),
            "uri": t.as_str(),
        })
    });
    assert_eq!(got.unwrap_or(Value::Null), v["expect"], "{input:?}");
}

fn run_negotiation_reference(v: &Value) {
    let expected =
        Performative::try_parse(v["expected_performative"].as_str().expect("p")).expect("p");
    let got = TemplateUri::parse(v["template_uri"].as_str().expect("uri"))
        .and_then(|t| negotiation_reference(&t, expected))
        .map(|r| {
            json!({
                "type": r.negotiation_type.map(|t| t.as_str()),
                "performative": r.performative.as_str(),
            })
        });
    assert_eq!(got.unwrap_or(Value::Null), v["expect"], "{v}");
}

#[test]
fn all_a2a_t_vectors_pass() {
    let doc: Value = serde_json::from_str(VECTORS).expect("vectors.json parses");
    let mut count = 0;
    for v in section(&doc, "context_parse") {
        run_context_parse(v);
        count += 1;
    }
    for v in section(&doc, "build_metadata") {
        run_build_metadata(v);
        count += 1;
    }
    for v in section(&doc, "reply") {
        let got = outcome(check_reply_context(&ctx(&v["received"]), &ctx(&v["reply"])));
        assert_eq!(got, v["expect"], "{v}");
        count += 1;
    }
    for v in section(&doc, "progression") {
        let previous = (!v["previous"].is_null()).then(|| ctx(&v["previous"]));
        let got = outcome(check_progression(previous.as_ref(), &ctx(&v["current"])));
        assert_eq!(got, v["expect"], "{v}");
        count += 1;
    }
    for v in section(&doc, "template_uri") {
        run_template_uri(v);
        count += 1;
    }
    for v in section(&doc, "negotiation_reference") {
        run_negotiation_reference(v);
        count += 1;
    }
    for v in section(&doc, "extension_name") {
        let got = extension_name_from_uri(v["uri"].as_str().expect("uri"));
        assert_eq!(json!(got), v["expect"], "{v}");
        count += 1;
    }
    println!("a2a-t vectors checked: {count}");
    assert_eq!(count, EXPECTED_VECTORS);
}
