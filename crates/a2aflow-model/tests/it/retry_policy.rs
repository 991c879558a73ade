//! Retry policies and timeouts in the workflow document: loaded with their values, and refused
//! with a code and the JSON path of the offending value when no attempt could help.

use a2aflow_model::{ErrorCode, LoadOptions, Position, load_workflow_str, validate};
use std::time::Duration;

const POLICY: &str = r#"{"steps": [{"name": "a", "timeout": 20, "subtasks": [
  {"agent": "x", "timeout": 2.5,
   "retry": {"attempts": 4, "backoff": {"initial": 0.25, "max": 2, "multiplier": 3, "jitter": 0.5},
             "on": ["a2a.task_failed"]}},
  {"agent": "y", "retry": {"attempts": 2}}
]}]}"#;

#[test]
fn a_policy_and_timeouts_load_with_their_values_and_defaults() {
    let loaded = load_workflow_str(POLICY, LoadOptions::STRICT).unwrap();
    validate(&loaded.workflow).unwrap();
    let step = &loaded.workflow.steps[0];
    assert_eq!(step.timeout, Some(Duration::from_secs(20)));
    let first = &step.subtasks[0];
    assert_eq!(first.timeout, Some(Duration::from_millis(2500)));
    let policy = first.retry.as_ref().unwrap();
    assert_eq!(policy.attempts, 4);
    assert_eq!(policy.backoff.initial, Duration::from_millis(250));
    assert_eq!(policy.backoff.max, Duration::from_secs(2));
    assert_eq!(
        (policy.backoff.multiplier, policy.backoff.jitter),
        (3.0, 0.5)
    );
    assert_eq!(policy.on, ["a2a.task_failed"]);
    let defaults = step.subtasks[1].retry.as_ref().unwrap();
    assert_eq!(defaults.backoff, a2aflow_model::Backoff::default());
    assert!(defaults.on.is_empty());
    // The definition serialises back to a document that loads to the same workflow.
    let text = serde_json::to_string(&loaded.workflow).unwrap();
    let again = load_workflow_str(&text, LoadOptions::STRICT).unwrap();
    assert_eq!(again.workflow, loaded.workflow);
}

fn refused(on: &str) -> a2aflow_model::Problem {
    let text = format!(
        "{{\"steps\": [{{\"name\": \"a\", \"subtasks\": [\n  {{\"agent\": \"x\", \"retry\": {{\"attempts\": 3, \"on\": [\"a2a.connection\", {on}]}}}}]}}]}}"
    );
    let loaded = load_workflow_str(&text, LoadOptions::STRICT).unwrap();
    let mut errors = validate(&loaded.workflow).unwrap_err();
    loaded.locate(Some(&text), &mut errors);
    assert_eq!(errors.problems.len(), 1, "{errors}");
    errors.problems.remove(0)
}

#[test]
fn a_code_no_attempt_can_change_is_refused_with_its_path() {
    for code in [
        "a2a.task_rejected",
        "workflow.invalid_document",
        "negotiation.aborted",
    ] {
        let p = refused(&format!("\"{code}\""));
        assert_eq!(p.code, ErrorCode::WorkflowRetryCodeRefused, "{p}");
        assert_eq!(p.path, "/steps/0/subtasks/0/retry/on/1", "{p}");
        assert!(
            p.message.contains(code) && p.message.contains("remove it"),
            "{p}"
        );
        assert_eq!(
            p.position,
            Some(Position {
                line: 2,
                column: 68
            }),
            "{p}"
        );
        assert_eq!(p.steps, ["a"]);
    }
}

#[test]
fn an_unknown_code_is_refused_too() {
    let p = refused("\"a2a.conection\"");
    assert_eq!(p.code, ErrorCode::WorkflowRetryCodeRefused, "{p}");
    assert!(p.message.contains("not an a2aflow error code"), "{p}");
}

#[test]
fn values_that_cannot_work_are_invalid_retry_or_invalid_timeout() {
    let text = r#"{"steps": [{"name": "a", "timeout": 0, "subtasks": [
      {"agent": "x", "retry": {"attempts": 0, "backoff": {"multiplier": 0.5, "jitter": 2}}}]}]}"#;
    let loaded = load_workflow_str(text, LoadOptions::STRICT).unwrap();
    let errors = validate(&loaded.workflow).unwrap_err();
    let found: Vec<(ErrorCode, &str)> = errors
        .problems
        .iter()
        .map(|p| (p.code, p.path.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (ErrorCode::WorkflowInvalidTimeout, "/steps/0/timeout"),
            (
                ErrorCode::WorkflowInvalidRetry,
                "/steps/0/subtasks/0/retry/attempts"
            ),
            (
                ErrorCode::WorkflowInvalidRetry,
                "/steps/0/subtasks/0/retry/backoff/multiplier"
            ),
            (
                ErrorCode::WorkflowInvalidRetry,
                "/steps/0/subtasks/0/retry/backoff/jitter"
            ),
        ]
    );
}

#[test]
fn a_policy_on_a_subtask_that_is_never_sent_is_invalid_retry() {
    let text = r#"{"steps": [
      {"name": "local", "type": "SELF_LOOP", "subtasks": [{"retry": {"attempts": 2}}], "next": [{"step": "child"}]},
      {"name": "child", "subtasks": [{"workflow": "w2", "retry": {"attempts": 2}}]}]}"#;
    let loaded = load_workflow_str(text, LoadOptions::STRICT).unwrap();
    let errors = validate(&loaded.workflow).unwrap_err();
    let found: Vec<(ErrorCode, &str)> = errors
        .problems
        .iter()
        .map(|p| (p.code, p.path.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (ErrorCode::WorkflowInvalidRetry, "/steps/0/subtasks/0/retry"),
            (ErrorCode::WorkflowInvalidRetry, "/steps/1/subtasks/0/retry"),
        ]
    );
    assert!(errors.problems[0].message.contains("SELF_LOOP"), "{errors}");
}
