//! The kernel's negotiation hook: events, host callback, typed failures.

use crate::support::*;
use a2aflow_kernel::{AgentScript, InMemoryClient, ScriptedReply};
use a2aflow_model::{EventKind, MessageContent, NegotiationReply, TaskOutcomeStatus};
use std::sync::Arc;

fn negotiating(rounds: u32) -> Arc<InMemoryClient> {
    Arc::new(InMemoryClient::new().agent(
        "N",
        AgentScript::reply(ScriptedReply::Negotiate {
            rounds,
            then: Box::new(ScriptedReply::Echo),
        }),
    ))
}

#[tokio::test]
async fn negotiation_rounds_reach_the_host_in_causal_order() {
    let host = Arc::new(Host {
        negotiation: Some(NegotiationReply::Send {
            content: MessageContent::text("accept"),
        }),
        ..Default::default()
    });
    let client = negotiating(2);
    let rec = Recorder::default();
    let r = go(wf(vec![step("s", &["N"], &[])]), &host, &client, &rec).await;
    assert!(r.success, "{:?}", r.failure);
    let calls = host.negotiation_calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].task.local_task_id, "exec:s:0");
    assert_eq!(calls[0].original, MessageContent::text("s task"));
    assert!(calls[0].previous_exchanges.is_empty());
    assert_eq!(calls[1].previous_exchanges.len(), 1);
    assert_eq!(client.sent().len(), 3, "initial send + two replies");
    assert_eq!(client.exchanges().len(), 2);
    let k = rec.kinds();
    let order = [
        EventKind::TaskRequest,
        EventKind::AgentRequest,
        EventKind::NegotiationRequest,
        EventKind::NegotiationResolved,
        EventKind::NegotiationRequest,
        EventKind::NegotiationResolved,
        EventKind::AgentResponse,
        EventKind::TaskStatusChanged,
        EventKind::TaskResponse,
        EventKind::StepComplete,
    ];
    let filtered: Vec<_> = k.into_iter().filter(|x| order.contains(x)).collect();
    assert_eq!(filtered, order.to_vec());
    let req = rec
        .events()
        .into_iter()
        .find(|e| e.kind == EventKind::NegotiationRequest)
        .unwrap();
    assert_eq!(req.data["exchange"], 1);
    assert_eq!(req.task_id.as_deref(), Some("exec:s:0"));
}

#[tokio::test]
async fn stop_reply_fails_the_task_with_the_host_code() {
    let host = Arc::new(Host {
        negotiation: Some(NegotiationReply::Stop {
            code: "biz.price_too_high".into(),
            reason: "over budget".into(),
        }),
        ..Default::default()
    });
    let client = negotiating(3);
    let rec = Recorder::default();
    let r = go(wf(vec![step("s", &["N"], &[])]), &host, &client, &rec).await;
    assert!(!r.success);
    let v = &r.steps[0].task_results[0];
    assert_eq!(v.status, TaskOutcomeStatus::Failed);
    assert_eq!(v.error_code.as_deref(), Some("biz.price_too_high"));
    assert_eq!(v.received_messages.len(), 1, "the proposal stays evidence");
    assert_eq!(client.sent().len(), 1, "nothing sent after Stop");
}

#[tokio::test]
async fn missing_negotiation_callback_is_never_consent() {
    let host = Arc::new(Host::default());
    let client = negotiating(1);
    let rec = Recorder::default();
    let r = go(wf(vec![step("s", &["N"], &[])]), &host, &client, &rec).await;
    assert!(!r.success);
    assert_eq!(
        r.steps[0].task_results[0].error_code.as_deref(),
        Some("workflow.callback_missing")
    );
    let failed = rec
        .events()
        .into_iter()
        .find(|e| e.kind == EventKind::NegotiationFailed)
        .unwrap();
    assert_eq!(failed.data["errorCode"], "workflow.callback_missing");
    assert_eq!(client.sent().len(), 1);
}
