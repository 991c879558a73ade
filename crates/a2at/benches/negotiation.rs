//! Cost of the per-response A2A-T work an engine does: finding and parsing the negotiation
//! context of a response (integer and protobuf-double forms), building the reply metadata, and
//! planning the extensions of an outgoing message.
//!
//! Run: `cargo bench -p a2at --bench negotiation`.

use std::hint::black_box;

use a2at::{
    ContentExtensions, DeclaredExtension, MetadataContent, NEGOTIATION_T_EXTENSION_URI,
    Performative, TASK_T_EXTENSION_URI, find_negotiation_context, plan_extensions, reply_context,
};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};

fn metadata(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn bench(c: &mut Criterion) {
    let id = "3f2b8c1e-9a4d-4e6b-8f1a-2c3d4e5f6a7b";
    let ints = metadata(json!({
        NEGOTIATION_T_EXTENSION_URI: "## Information Negotiation\nPlease supplement ...",
        "templateUri": "Negotiation-T/information-negotiation/propose/v1",
        "negotiationContext": {"id": id, "round": 1, "maxRounds": 5, "performative": "PROPOSE"}
    }));
    let doubles = metadata(json!({
        "negotiationContext": {"id": id, "round": 1.0, "maxRounds": 5.0, "performative": "PROPOSE"}
    }));
    let task = metadata(json!({"trace": "x"}));
    let artifact = metadata(json!({"kind": "report"}));

    c.bench_function("find_context/status_message_ints", |b| {
        b.iter(|| find_negotiation_context(black_box(Some(&ints)), Some(&task), [&artifact]))
    });
    c.bench_function("find_context/three_layers_doubles", |b| {
        b.iter(|| find_negotiation_context(Some(&task), Some(black_box(&doubles)), [&doubles]))
    });

    let received = find_negotiation_context(Some(&ints), None, []).ok();
    c.bench_function("reply/build_accept_metadata", |b| {
        b.iter(|| {
            let reply = received
                .as_ref()
                .and_then(|r| reply_context(black_box(r), Performative::Accept).ok());
            MetadataContent {
                extension_uri: NEGOTIATION_T_EXTENSION_URI.to_owned(),
                prompt_text: Some("## Information Negotiation Result\nAccept".to_owned()),
                template_uri: Some(
                    "Negotiation-T/information-negotiation/accept-reject/v1".to_owned(),
                ),
                negotiation_context: reply,
            }
            .to_metadata()
        })
    });

    let declared = [
        DeclaredExtension {
            uri: TASK_T_EXTENSION_URI,
            required: true,
        },
        DeclaredExtension {
            uri: NEGOTIATION_T_EXTENSION_URI,
            required: false,
        },
    ];
    let extensions = vec![
        TASK_T_EXTENSION_URI.to_owned(),
        NEGOTIATION_T_EXTENSION_URI.to_owned(),
    ];
    let task_md =
        metadata(json!({TASK_T_EXTENSION_URI: "## Task Type\n...", "templateUri": "Task-T/a/v1"}));
    c.bench_function("activation/plan_task_t_with_negotiation", |b| {
        b.iter(|| {
            plan_extensions(
                black_box(&declared),
                ContentExtensions::new(&extensions, Some(&task_md)),
            )
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
