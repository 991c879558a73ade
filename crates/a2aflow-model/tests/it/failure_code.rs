//! `FailureCode`: the typed code of a `Failure`, serialised as the same plain string as before.

use a2aflow_model::{BusinessCode, BusinessFailure, ErrorCode, Failure, FailureCode};
use serde_json::Map;

fn business(code: &str) -> Failure {
    BusinessFailure {
        code: code.to_owned(),
        message: "card declined".to_owned(),
        details: Map::new(),
    }
    .into()
}

#[test]
fn every_registry_string_reads_as_its_engine_code_and_round_trips() {
    for &code in ErrorCode::ALL {
        let typed = FailureCode::parse(code.as_str());
        assert_eq!(typed, FailureCode::Engine(code));
        assert_eq!(typed, FailureCode::from(code));
        assert!(typed.is(code));
        assert_eq!(typed.error_code(), Some(code));
        let json = serde_json::to_string(&typed).unwrap();
        assert_eq!(json, format!("\"{}\"", code.as_str()));
        assert_eq!(serde_json::from_str::<FailureCode>(&json).unwrap(), typed);
    }
}

#[test]
fn an_unknown_string_reads_as_a_business_code_and_round_trips() {
    let typed: FailureCode = serde_json::from_str("\"billing.card_declined\"").unwrap();
    assert_eq!(
        typed,
        FailureCode::Business(BusinessCode::new("billing.card_declined").unwrap())
    );
    assert_eq!(typed.error_code(), None);
    assert!(!typed.is(ErrorCode::WorkflowExecutionFailed));
    assert_eq!(
        serde_json::to_string(&typed).unwrap(),
        "\"billing.card_declined\""
    );
    // One string, one representation: a registry string is never a business code.
    assert_eq!(BusinessCode::new("a2a.timeout"), None);
}

#[test]
fn failure_json_is_the_plain_string_shape_for_both_kinds() {
    let engine = Failure::new(ErrorCode::A2aTimeout, "timed out").with_detail("ms", 5);
    assert_eq!(
        serde_json::to_string(&engine).unwrap(),
        r#"{"code":"a2a.timeout","message":"timed out","details":{"ms":5}}"#
    );
    let host = business("billing.card_declined");
    assert_eq!(
        serde_json::to_string(&host).unwrap(),
        r#"{"code":"billing.card_declined","message":"card declined"}"#
    );
    for failure in [engine, host] {
        let json = serde_json::to_string(&failure).unwrap();
        assert_eq!(serde_json::from_str::<Failure>(&json).unwrap(), failure);
    }
}

#[test]
fn a_business_failure_keeps_its_code_typed() {
    let host = business("billing.card_declined");
    assert!(
        matches!(host.code, FailureCode::Business(ref c) if c.as_str() == "billing.card_declined")
    );
    assert_eq!(host.error_code(), None);
    // A host that reuses a registry string gets that engine code, as `error_code()` always gave.
    let reused = business("workflow.timeout");
    assert_eq!(reused.code, FailureCode::Engine(ErrorCode::WorkflowTimeout));
    assert!(reused.is(ErrorCode::WorkflowTimeout));
}

#[test]
fn a_code_compares_and_hashes_as_its_string() {
    let code = FailureCode::from(ErrorCode::A2aTimeout);
    assert_eq!(code, "a2a.timeout");
    assert_eq!(code, *"a2a.timeout");
    assert_eq!(code, "a2a.timeout".to_owned());
    assert_eq!("a2a.timeout", code);
    assert_eq!(code, ErrorCode::A2aTimeout);
    assert_ne!(code, "a2a.tls");
    assert_eq!(code.to_string(), "a2a.timeout");
    assert_eq!(String::from(code.clone()), "a2a.timeout");
    let set: std::collections::HashSet<FailureCode> =
        [code, FailureCode::parse("billing.card_declined")].into();
    assert!(set.contains("a2a.timeout"));
    assert!(set.contains("billing.card_declined"));
    assert!(!set.contains("a2a.tls"));
}
