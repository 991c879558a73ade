//! VAL: invalid workflows end before anything runs (engine_scenarios.md "VAL").

use crate::support::*;
use a2aflow_model::{ContextFrom, EventKind, Workflow};
use std::sync::Arc;

/// Runs an invalid workflow and checks the common VAL-24 contract; returns the failure code.
async fn rejected(w: Workflow) -> (String, String) {
    let host = Arc::new(Host::default());
    let (r, client, rec) = go_fresh(w, &host).await;
    assert!(!r.success);
    assert!(r.steps.is_empty());
    assert_eq!(client.total_dispatches(), 0);
    assert!(
        host.task_calls().is_empty()
            && host.self_calls().is_empty()
            && host.route_calls().is_empty()
    );
    assert_eq!(rec.count(EventKind::Error), 1);
    assert_eq!(rec.count(EventKind::StepStart), 0);
    assert_eq!(rec.count(EventKind::WorkflowComplete), 0);
    assert_eq!(
        rec.kinds(),
        vec![EventKind::Start, EventKind::Error, EventKind::Close]
    );
    let err = rec
        .events()
        .into_iter()
        .find(|e| e.kind == EventKind::Error)
        .unwrap();
    assert_eq!(err.execution_id, "exec");
    let f = r.failure.unwrap();
    assert_eq!(err.data["errorCode"], f.code.as_str());
    (f.code.into(), f.message)
}

#[tokio::test]
async fn s_val_02_context_source_not_upstream() {
    let (code, msg) = rejected(wf(vec![
        step("left", &["a"], &[]),
        ctx(
            step("right", &["b"], &[]),
            ContextFrom::Steps(vec!["left".into()]),
        ),
    ]))
    .await;
    assert_eq!(code, "workflow.context_not_upstream");
    assert!(msg.contains("left"), "{msg}");
}

#[tokio::test]
async fn s_val_04_cycle_fails_before_execution() {
    let (code, msg) = rejected(wf(vec![
        step("root", &["r"], &["first"]),
        step("first", &["a"], &["second"]),
        step("second", &["b"], &["first"]),
    ]))
    .await;
    assert_eq!(code, "workflow.cycle");
    assert!(msg.contains("cycle"), "{msg}");
}

#[tokio::test]
async fn s_val_08_blank_target() {
    let (code, _) = rejected(wf(vec![cond(step("start", &["a"], &[]), &[("  ", "")])])).await;
    assert_eq!(code, "workflow.blank_target");
}

#[tokio::test]
async fn s_val_10_blank_step_name() {
    let (code, _) = rejected(wf(vec![step("  ", &["a"], &[])])).await;
    assert_eq!(code, "workflow.blank_step_name");
}

#[tokio::test]
async fn s_val_12_unknown_context_step() {
    let (code, msg) = rejected(wf(vec![ctx(
        step("m", &["a"], &[]),
        ContextFrom::Steps(vec!["ghost".into()]),
    )]))
    .await;
    assert_eq!(code, "workflow.unknown_context_step");
    assert!(msg.contains("ghost"), "{msg}");
}

#[tokio::test]
async fn s_val_14_empty_workflow_is_rejected() {
    let (code, _) = rejected(wf(vec![])).await;
    assert_eq!(code, "workflow.no_steps");
}

#[tokio::test]
async fn s_val_24_unknown_target_one_error_event_nothing_else() {
    let (code, msg) = rejected(wf(vec![step("s", &["a"], &["ghost"])])).await;
    assert_eq!(code, "workflow.unknown_target");
    assert!(msg.contains("ghost"), "{msg}");
}

#[tokio::test]
async fn s_val_16_terminal_targets_schedule_nothing() {
    let host = Arc::new(Host::default());
    let (r, client, _) = go_fresh(
        wf(vec![
            step("s1", &["a1"], &["s2"]),
            step("s2", &["a2"], &["endNode"]),
        ]),
        &host,
    )
    .await;
    assert!(r.success);
    assert_eq!(ran(&r), vec!["s1", "s2"]);
    assert!(r.skipped_steps.is_empty());
    assert_eq!(client.total_dispatches(), 2);
}
