//! `Failure`'s typed carriers: the gate, the cause and the retry rule are typed facts that
//! serialise into `details` exactly where the map entries used to be.

use a2aflow_model::{ErrorCode, Failure, FailureCause, FailureCode, Gate};
use serde_json::{Value, json};

fn round_trip(f: &Failure) -> Failure {
    serde_json::from_str(&serde_json::to_string(f).unwrap()).unwrap()
}

#[test]
fn a_gate_is_typed_and_serialises_as_the_flag_first_in_details() {
    let f = Failure::new(ErrorCode::A2aAuthRequired, "sign in")
        .with_gate(Gate::AuthRequired)
        .with_detail("contextId", "c1")
        .with_detail("state", "TASK_STATE_AUTH_REQUIRED");
    assert_eq!(
        serde_json::to_string(&f).unwrap(),
        r#"{"code":"a2a.auth_required","message":"sign in","details":{"gate":true,"contextId":"c1","state":"TASK_STATE_AUTH_REQUIRED"}}"#
    );
    let back = round_trip(&f);
    assert_eq!(back, f);
    assert_eq!(back.gate(), Some(Gate::AuthRequired));
    assert!(!back.details.contains_key("gate"));
}

#[test]
fn the_json_gate_flag_reads_as_the_gate_of_the_code() {
    let input: Failure = serde_json::from_value(json!({
        "code": "negotiation.not_negotiable", "message": "m", "details": {"gate": true}
    }))
    .unwrap();
    assert_eq!(input.gate(), Some(Gate::InputRequired));
    assert_eq!(
        Gate::InputRequired.code(),
        ErrorCode::NegotiationNotNegotiable
    );
    // A flag on a code that is no gate is not invented into one: it stays a plain detail.
    let odd = Failure::new(ErrorCode::A2aTaskFailed, "m").with_detail("gate", true);
    assert_eq!(odd.gate(), None);
    assert_eq!(odd.details["gate"], json!(true));
    assert_eq!(
        serde_json::to_value(&odd).unwrap()["details"]["gate"],
        json!(true)
    );
}

#[test]
fn a_whole_cause_serialises_as_its_failure_object_last_in_details() {
    let host = Failure::new(ErrorCode::WorkflowCallbackMissing, "no on_route")
        .with_detail("callback", "on_route");
    let f = Failure::new(ErrorCode::WorkflowRouteFailed, "route a -> b failed")
        .with_detail("source", "a")
        .with_cause(host.clone())
        .with_detail("target", "b");
    assert_eq!(
        serde_json::to_value(&f).unwrap(),
        json!({"code": "workflow.route_failed", "message": "route a -> b failed",
               "details": {"source": "a", "target": "b", "cause": {
                   "code": "workflow.callback_missing", "message": "no on_route",
                   "details": {"callback": "on_route"}}}})
    );
    let back = round_trip(&f);
    assert_eq!(back.cause().and_then(FailureCause::failure), Some(&host));
    assert_eq!(back, f);
}

#[test]
fn a_code_cause_serialises_as_the_bare_code_string() {
    let f = Failure::new(ErrorCode::DelegationChildFailed, "child failed")
        .with_detail("childCode", "workflow.step_failed")
        .with_cause(ErrorCode::A2aTaskFailed);
    let json = serde_json::to_value(&f).unwrap();
    assert_eq!(json["details"]["cause"], json!("a2a.task_failed"));
    let back = round_trip(&f);
    assert_eq!(
        back.cause().map(FailureCause::code),
        Some(&FailureCode::Engine(ErrorCode::A2aTaskFailed))
    );
    assert_eq!(back.cause().and_then(FailureCause::failure), None);
    // A writer that still names the detail key lands in the same typed fact.
    let legacy = Failure::new(ErrorCode::DelegationChildFailed, "child failed")
        .with_detail("childCode", "workflow.step_failed")
        .with_detail("cause", "a2a.task_failed");
    assert_eq!(legacy, f);
}

#[test]
fn into_parts_keeps_the_json_details_for_flat_carriers() {
    let f = Failure::new(ErrorCode::A2aAuthRequired, "sign in")
        .with_gate(Gate::AuthRequired)
        .with_detail("remoteTaskId", "t1");
    let json = serde_json::to_value(&f).unwrap();
    let (code, message, details) = f.into_parts();
    assert_eq!(code, ErrorCode::A2aAuthRequired);
    assert_eq!(message, "sign in");
    assert_eq!(Value::Object(details), json["details"]);
}

#[test]
fn retryable_follows_the_code_unless_overridden() {
    let transient = [
        Failure::new(ErrorCode::A2aConnection, "refused"),
        Failure::new(ErrorCode::A2aTimeout, "idle"),
        Failure::new(ErrorCode::A2aHttpStatus, "bad gateway").with_detail("httpStatus", 502),
        Failure::new(ErrorCode::A2aHttpStatus, "slow down").with_detail("httpStatus", 429),
    ];
    for f in &transient {
        assert!(f.is_retryable(), "{f}");
    }
    let lasting = [
        Failure::new(ErrorCode::A2aHttpStatus, "not found").with_detail("httpStatus", 404),
        Failure::new(ErrorCode::A2aTaskFailed, "failed"),
        Failure::new(ErrorCode::A2aAuthRequired, "gate").with_gate(Gate::AuthRequired),
        Failure::new(ErrorCode::WorkflowTimeout, "deadline"),
        Failure::new(ErrorCode::AuthRejected, "401"),
        Failure::coded("billing.card_declined", "declined"),
    ];
    for f in &lasting {
        assert!(!f.is_retryable(), "{f}");
    }
    // The override wins both ways, and only an override is written out.
    let forced = Failure::new(ErrorCode::A2aTaskFailed, "flaky").with_retryable(true);
    assert!(forced.is_retryable());
    assert!(
        !Failure::new(ErrorCode::A2aConnection, "x")
            .with_retryable(false)
            .is_retryable()
    );
    assert_eq!(
        serde_json::to_value(&forced).unwrap()["details"],
        json!({"retryable": true})
    );
    assert_eq!(round_trip(&forced), forced);
    assert!(
        serde_json::to_value(&transient[0])
            .unwrap()
            .get("details")
            .is_none()
    );
}

#[test]
fn the_typed_facts_cost_a_failure_one_pointer() {
    // Every fallible function returns a `Failure` by value; clippy.toml's large-error-threshold
    // is set just above this size.
    assert!(std::mem::size_of::<Failure>() <= 128);
    assert_eq!(
        std::mem::size_of::<a2aflow_model::FailureFacts>(),
        std::mem::size_of::<usize>()
    );
}
