//! The identity a dispatch is given reaches the wire unchanged: a context id the caller names,
//! the remote task a follow-up continues, and the earlier attempts' task ids, on both bindings.

use crate::journal_support::{
    LONG, WIRES, client_for, request, sent_messages, serve, task_request,
};
use a2aflow_kernel::{NoJournal, RemoteClient};
use serde_json::Value;

#[tokio::test]
async fn a_named_context_id_and_reference_tasks_go_out_unchanged() {
    for wire in WIRES {
        let server = serve(wire, |a| a).await;
        let client = client_for(&server, wire).await;
        let task = task_request();
        let earlier = vec!["task-of-attempt-1".to_owned()];
        let mut req = request("work please", &task, &NoJournal);
        req.context_id = Some("host-ctx-7");
        req.reference_task_ids = &earlier;
        let outcome = client.dispatch(req).await.unwrap();
        assert_eq!(
            outcome.context_id.as_deref(),
            Some("host-ctx-7"),
            "{wire:?}"
        );
        let sent = sent_messages(&server);
        assert_eq!(sent.len(), 1, "{wire:?}");
        assert_eq!(sent[0]["contextId"], "host-ctx-7", "{wire:?}");
        assert_eq!(
            sent[0]["referenceTaskIds"],
            serde_json::json!(["task-of-attempt-1"]),
            "{wire:?}"
        );
        assert!(sent[0].get("taskId").is_none(), "{wire:?}");
    }
}

#[tokio::test]
async fn without_a_named_context_each_dispatch_mints_its_own() {
    let wire = WIRES[0];
    let server = serve(wire, |a| a).await;
    let client = client_for(&server, wire).await;
    let task = task_request();
    for _ in 0..2 {
        client
            .dispatch(request("work", &task, &NoJournal))
            .await
            .unwrap();
    }
    let sent = sent_messages(&server);
    let contexts: Vec<&Value> = sent.iter().map(|m| &m["contextId"]).collect();
    assert_eq!(contexts.len(), 2);
    assert!(
        contexts[0].is_string() && contexts[0] != contexts[1],
        "{contexts:?}"
    );
    assert!(sent.iter().all(|m| m.get("referenceTaskIds").is_none()));
}

/// A task parked at INPUT_REQUIRED is continued by a second dispatch that names it: the
/// follow-up carries both ids, and the task completes.
#[tokio::test]
async fn a_follow_up_continues_the_named_task_in_its_context() {
    for wire in WIRES {
        let server = serve(wire, |a| a).await;
        let client = client_for(&server, wire).await;
        let task = task_request();
        let first = client
            .dispatch(request("input which city", &task, &NoJournal))
            .await
            .unwrap_err();
        assert!(
            first.failure.gate().is_some(),
            "{wire:?}: {:?}",
            first.failure
        );
        let context_id = first.context_id.clone().unwrap();
        let remote = first.remote_task_id.clone().unwrap();
        let mut req = request("Paris", &task, &NoJournal);
        req.context_id = Some(&context_id);
        req.continues = Some(&remote);
        let done = tokio::time::timeout(LONG, client.dispatch(req))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            done.remote_task_id.as_deref(),
            Some(remote.as_str()),
            "{wire:?}"
        );
        assert_eq!(done.context_id.as_deref(), Some(context_id.as_str()));
        let sent = sent_messages(&server);
        assert_eq!(sent.len(), 2, "{wire:?}");
        assert_eq!(sent[1]["taskId"], remote.as_str(), "{wire:?}");
        assert_eq!(sent[1]["contextId"], context_id.as_str(), "{wire:?}");
    }
}
