//! Regressions found by the `fuzz/` targets (see `docs/reliability.md`). Each input is the
//! fuzzer's input, embedded as bytes.

use a2aflow_model::{LoadOptions, load_workflow_str};

/// `workflow_loader` target, "serialise/load round trip": `Workflow`'s serde `Serialize` used to
/// write `contextFrom` as the tagged enum `{"kind":"predecessors"}`, which `load_workflow_str`
/// rejects. `ContextFrom` now serialises in the document form (absent, `"*"`, or names).
#[test]
fn a_serialised_workflow_loads_back_to_itself() {
    let input: &[u8] =
        b"{\n  \"steps\": [\n    {\n      \"name\": \"a\",\n      \"step_type\": \"AnySuccess\",\n      \"subtasks\": []\n    }\n  ]\n}\n";
    let text = std::str::from_utf8(input).unwrap();
    let loaded = load_workflow_str(text, LoadOptions::LENIENT).unwrap();
    let again = serde_json::to_string(&loaded.workflow).unwrap();
    let reloaded = load_workflow_str(&again, LoadOptions::LENIENT)
        .unwrap_or_else(|e| panic!("serialised workflow does not load: {e}\n{again}"));
    assert_eq!(reloaded.workflow, loaded.workflow);
}

/// What holds today: the fuzzer's input loads strictly, and the absent `contextFrom` is the
/// default (the value whose serde form does not load back).
#[test]
fn the_round_trip_input_loads_with_the_default_context() {
    let text = "{\n  \"steps\": [\n    {\n      \"name\": \"a\",\n      \"step_type\": \"AnySuccess\",\n      \"subtasks\": []\n    }\n  ]\n}\n";
    let loaded = load_workflow_str(text, LoadOptions::STRICT).unwrap();
    assert_eq!(loaded.workflow.steps.len(), 1);
    assert_eq!(loaded.workflow.steps[0].name, "a");
    assert_eq!(
        loaded.workflow.steps[0].context_from,
        a2aflow_model::ContextFrom::Predecessors
    );
}

/// Every form of `contextFrom` survives serialise → load (strict).
#[test]
fn every_context_form_round_trips_through_the_document_form() {
    let text = r#"{"steps": [
      {"name": "a", "subtasks": [{"agent": "x"}], "next": [{"step": "b"}, {"step": "c"}, {"step": "d"}]},
      {"name": "b", "subtasks": [{"agent": "x"}], "contextFrom": "*"},
      {"name": "c", "subtasks": [{"agent": "x"}], "contextFrom": ["a"]},
      {"name": "d", "subtasks": [{"agent": "x"}], "contextFrom": []}
    ]}"#;
    let loaded = load_workflow_str(text, LoadOptions::STRICT).unwrap();
    let again = serde_json::to_string(&loaded.workflow).unwrap();
    let reloaded = load_workflow_str(&again, LoadOptions::STRICT).unwrap();
    assert_eq!(reloaded.workflow, loaded.workflow);
    let value: serde_json::Value = serde_json::from_str(&again).unwrap();
    assert!(value["steps"][0].get("contextFrom").is_none());
    assert_eq!(value["steps"][1]["contextFrom"], "*");
    assert_eq!(value["steps"][2]["contextFrom"], serde_json::json!(["a"]));
    assert_eq!(value["steps"][3]["contextFrom"], serde_json::json!([]));
}
