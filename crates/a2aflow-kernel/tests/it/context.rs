//! CTX: what each task sees, and how outputs are projected (engine_scenarios.md "CTX").

use crate::support::*;
use a2aflow_kernel::{AgentScript, InMemoryClient, ScriptedReply, project_outputs};
use a2aflow_model::a2a::{Artifact, Message, Part, Role, TaskState};
use a2aflow_model::{ContextFrom, Output, ReceivedKind, ReceivedMessage, TaskOutcomeStatus};
use serde_json::json;
use std::sync::Arc;

fn window(host: &Host, step: &str) -> Vec<String> {
    let t = host
        .task_calls()
        .into_iter()
        .find(|t| t.step_name == step)
        .unwrap();
    t.workflow_input
        .upstream_results
        .iter()
        .map(|u| u.step_name.to_string())
        .collect()
}

#[tokio::test]
async fn s_ctx_03_direct_predecessors_provide_typed_results() {
    let host = Arc::new(Host::default());
    let client = Arc::new(InMemoryClient::new().agent(
        "OMC-1",
        AgentScript::reply(ScriptedReply::Succeed(vec![Output::text("result-from-A")])),
    ));
    let rec = Recorder::default();
    let r = go(
        wf(vec![
            step("s1", &["OMC-1"], &["s2"]),
            step("s2", &["B"], &[]),
        ]),
        &host,
        &client,
        &rec,
    )
    .await;
    assert!(r.success);
    let t = host.task_call("s2");
    let up = &t.workflow_input.upstream_results;
    assert_eq!(up.len(), 1);
    assert_eq!(up[0].step_name, "s1");
    let v = &up[0].task_results[0];
    assert_eq!(v.agent_name, "OMC-1");
    assert_eq!(v.status, TaskOutcomeStatus::Completed);
    assert_eq!(v.outputs[0].parts, vec![Part::text("result-from-A")]);
    // No host context id: the kernel's own for the task.
    assert_eq!(
        v.context_id,
        Some(a2aflow_kernel::task_context_id("exec", "exec:s1:0"))
    );
    assert_eq!(
        v.received_messages.len(),
        1,
        "evidence travels with the view"
    );
    assert_eq!(
        t.input.text.as_deref(),
        Some("s2 task"),
        "input is the description only"
    );
}

#[tokio::test]
async fn s_ctx_06_explicit_empty_context_disables_upstream() {
    let host = Arc::new(Host::default());
    go_fresh(
        wf(vec![
            step("s1", &["A"], &["s2"]),
            ctx(step("s2", &["B"], &[]), ContextFrom::Steps(vec![])),
        ]),
        &host,
    )
    .await;
    let t = host.task_call("s2");
    assert!(t.workflow_input.upstream_results.is_empty());
    assert_eq!(t.workflow_input.runtime_intent.as_deref(), Some("intent"));
}

#[tokio::test]
async fn wildcard_context_is_every_completed_ancestor_nearest_first() {
    let host = Arc::new(Host::default());
    go_fresh(
        wf(vec![
            step("s1", &["A"], &["s2"]),
            step("s2", &["B"], &["s3"]),
            ctx(step("s3", &["C"], &[]), ContextFrom::AllAncestors),
        ]),
        &host,
    )
    .await;
    assert_eq!(window(&host, "s3"), vec!["s2", "s1"]);
    assert_eq!(window(&host, "s2"), vec!["s1"]);
}

#[tokio::test]
async fn named_context_uses_the_listed_order_and_skips_steps_that_did_not_run() {
    let host = routes_host(None, &[("b", Route::Deny("no")), ("a", Route::Allow)]);
    let client = Arc::new(InMemoryClient::new());
    let rec = Recorder::default();
    let w = wf(vec![
        cond(step("root", &["R"], &[]), &[("a", "x"), ("b", "y")]),
        step("a", &["A"], &["m"]),
        step("b", &["B"], &["m"]),
        ctx(
            step("m", &["M"], &[]),
            ContextFrom::Steps(vec!["b".into(), "a".into(), "root".into()]),
        ),
    ]);
    let r = go(w, &host, &client, &rec).await;
    assert!(r.success, "{:?}", r.failure);
    assert_eq!(window(&host, "m"), vec!["a", "root"]);
}

#[test]
fn s_ctx_10_message_parts_are_outputs_without_flattening() {
    let mut m = Message::new(
        Role::Agent,
        vec![
            Part::data(json!(["one", {"value": 2}])),
            Part::data(json!(3)),
            Part::text("{not parsed}"),
        ],
    );
    m.message_id = "m".into();
    let received = vec![ReceivedMessage {
        kind: ReceivedKind::Message,
        task_id: None,
        context_id: None,
        state: None,
        message: Some(m.clone()),
        task_metadata: None,
        artifacts: vec![],
    }];
    let out = project_outputs(&received, true);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].parts, m.parts);
    assert!(project_outputs(&received, false).is_empty());
}

fn artifact(id: &str, data: serde_json::Value, meta: &str) -> Artifact {
    Artifact {
        artifact_id: id.into(),
        name: Some("report".into()),
        description: Some("desc".into()),
        parts: vec![Part::data(data)],
        metadata: Some([("same".to_string(), json!(meta))].into()),
        extensions: Some(vec!["urn:artifact".into()]),
    }
}

#[test]
fn s_ctx_11_artifacts_win_and_keep_their_metadata() {
    let received = vec![ReceivedMessage {
        kind: ReceivedKind::Task,
        task_id: Some("t".into()),
        context_id: None,
        state: Some(TaskState::Completed),
        message: None,
        task_metadata: Some([("same".to_string(), json!("task"))].into_iter().collect()),
        artifacts: vec![artifact("artifact1", json!(["a"]), "artifact")],
    }];
    let out = project_outputs(&received, true);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].artifact_id.as_deref(), Some("artifact1"));
    assert_eq!(out[0].parts, vec![Part::data(json!(["a"]))]);
    assert_eq!(out[0].metadata.as_ref().unwrap()["same"], "artifact");
    // a metadata-only message gives no outputs
    let mut m = Message::new(Role::Agent, vec![]);
    m.metadata = Some([("same".to_string(), json!("message"))].into());
    let only_meta = vec![ReceivedMessage {
        kind: ReceivedKind::Message,
        task_id: None,
        context_id: None,
        state: None,
        message: Some(m),
        task_metadata: None,
        artifacts: vec![],
    }];
    assert!(project_outputs(&only_meta, true).is_empty());
}

#[tokio::test]
async fn s_ctx_13_failed_status_is_evidence_but_partial_artifacts_are_outputs() {
    let failed_status = |artifacts: Vec<Artifact>| ReceivedMessage {
        kind: ReceivedKind::Task,
        task_id: Some("t".into()),
        context_id: None,
        state: Some(TaskState::Failed),
        message: Some(Message::new(
            Role::Agent,
            vec![Part::text("error: remote rejected")],
        )),
        task_metadata: Some(
            [("reason".to_string(), json!("rejected"))]
                .into_iter()
                .collect(),
        ),
        artifacts,
    };
    assert!(project_outputs(&[failed_status(vec![])], false).is_empty());
    let partial = project_outputs(
        &[failed_status(vec![artifact(
            "p",
            json!({"ports": ["a", "b"]}),
            "x",
        )])],
        false,
    );
    assert_eq!(
        partial[0].parts,
        vec![Part::data(json!({"ports": ["a", "b"]}))]
    );

    // Through the kernel: a TaskFailure with evidence keeps it, outputs only from artifacts.
    struct FailingWithEvidence(ReceivedMessage);
    #[async_trait::async_trait]
    impl a2aflow_kernel::RemoteClient for FailingWithEvidence {
        async fn dispatch(
            &self,
            _r: a2aflow_kernel::DispatchRequest<'_>,
        ) -> Result<a2aflow_kernel::TaskOutcome, a2aflow_kernel::TaskFailure> {
            Err(a2aflow_kernel::TaskFailure {
                failure: a2aflow_model::Failure::new(
                    a2aflow_model::ErrorCode::A2aTaskFailed,
                    "Agent returned state=TASK_STATE_FAILED",
                ),
                context_id: Some("c".into()),
                remote_task_id: Some("t".into()),
                received_messages: vec![self.0.clone()],
            })
        }
    }
    let host = Arc::new(Host::default());
    let r = a2aflow_kernel::run(
        wf(vec![step("s", &["A"], &[])]),
        Default::default(),
        host,
        Arc::new(FailingWithEvidence(failed_status(vec![]))),
        Default::default(),
    )
    .await;
    let v = &r.steps[0].task_results[0];
    assert_eq!(v.status, TaskOutcomeStatus::Failed);
    assert_eq!(v.error_code.as_deref(), Some("a2a.task_failed"));
    assert!(v.outputs.is_empty());
    assert_eq!(v.received_messages.len(), 1);
    assert_eq!(v.remote_task_id.as_deref(), Some("t"));
}

#[test]
fn s_ctx_16_repeated_artifact_snapshots_count_once() {
    let snap = |state| ReceivedMessage {
        kind: ReceivedKind::Task,
        task_id: None,
        context_id: None,
        state: Some(state),
        message: None,
        task_metadata: None,
        artifacts: vec![artifact("diagnosis", json!("diagnosis"), "m")],
    };
    let out = project_outputs(
        &[snap(TaskState::Working), snap(TaskState::Completed)],
        true,
    );
    assert_eq!(out.len(), 1);
}
