//! Interop: a2aflow's transports against a real A2A 1.0 peer on the official Python SDK
//! (`a2a-sdk==1.3.0`, `peer_agent.py`), on all three bindings. Needs `A2AFLOW_PY_PEER` (set by
//! `cargo xtask ci`); without it every test fails and says how to run it.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli;
mod crash;
mod engine;
mod gates;
#[allow(dead_code)] // the interop crash test uses the processes, not the random kills
#[path = "../crash/host.rs"]
mod host;
mod peer;
mod relay;
mod serve;

use a2aflow::testkit::list_in_context;
use std::sync::Arc;
use std::time::Duration;

use a2aflow::model::a2a::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, Part, Role,
    SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskState,
};
use a2aflow::protocol::grpc::Schemeless;
use a2aflow::protocol::{
    Binding, CallOptions, HttpClient, Transport, connect_interface_with, select_interface,
};
use futures_util::StreamExt;
use peer::Peer;

fn msg(text: &str) -> SendMessageRequest {
    SendMessageRequest {
        message: Message::new(Role::User, vec![Part::text(text)]),
        configuration: None,
        metadata: None,
        tenant: None,
    }
}

fn immediately(text: &str) -> SendMessageRequest {
    let mut r = msg(text);
    r.configuration = Some(SendMessageConfiguration {
        accepted_output_modes: None,
        task_push_notification_config: None,
        history_length: None,
        return_immediately: Some(true),
    });
    r
}

fn opts() -> CallOptions {
    CallOptions::default().with_timeout(Duration::from_secs(20))
}

fn transport(peer: &Peer, b: Binding) -> Arc<dyn Transport> {
    transport_on(peer, b, &HttpClient::new().expect("client"))
}

/// The peer's transport for `b` on `client`. The peer is configured at a plain http URL, so its
/// gRPC interface (`127.0.0.1:PORT`, no scheme) is reached in the clear, as a channel factory
/// given that URL would.
fn transport_on(peer: &Peer, b: Binding, client: &HttpClient) -> Arc<dyn Transport> {
    let (binding, interface) = select_interface(&peer.card, &[b]).expect("binding on the card");
    let schemeless = Schemeless::for_configured_url(Some(&peer.base_url));
    let t = connect_interface_with(binding, interface, client, schemeless).expect("transport");
    assert_eq!(t.binding(), b);
    t
}

async fn task_of(t: &dyn Transport, req: &SendMessageRequest) -> Task {
    match t.send_message(req, &opts()).await.expect("send") {
        SendMessageResponse::Task(task) => task,
        other => panic!("expected a task, got {other:?}"),
    }
}

fn cancel(id: &str) -> CancelTaskRequest {
    CancelTaskRequest {
        id: id.to_owned(),
        metadata: None,
        tenant: None,
    }
}

fn final_state(events: &[StreamResponse]) -> Option<TaskState> {
    events.iter().rev().find_map(|e| match e {
        StreamResponse::StatusUpdate(u) => Some(u.status.state.clone()),
        StreamResponse::Task(t) => Some(t.status.state.clone()),
        _ => None,
    })
}

async fn the_whole_surface(b: Binding) {
    let peer = Peer::start().await;
    assert_eq!(peer.card.name, "a2aflow-interop-peer");
    let t = transport(&peer, b);

    // SendMessage answering a Message, then a Task.
    match t.send_message(&msg("reply hello"), &opts()).await.unwrap() {
        SendMessageResponse::Message(m) => assert_eq!(m.text(), Some("reply hello"), "{b}"),
        other => panic!("{b}: {other:?}"),
    }
    let done = task_of(t.as_ref(), &msg("work on it")).await;
    assert_eq!(done.status.state, TaskState::Completed, "{b}");
    let out = done
        .artifacts
        .as_ref()
        .and_then(|a| a.first())
        .expect("artifact");
    assert_eq!(out.parts[0].as_text(), Some("work on it"), "{b}");

    // returnImmediately + GetTask + ListTasks by contextId + CancelTask (+ again: not cancelable).
    let live = task_of(t.as_ref(), &immediately("wait 30")).await;
    assert!(
        !live.status.state.is_terminal(),
        "{b}: {:?}",
        live.status.state
    );
    let got = t
        .get_task(
            &GetTaskRequest {
                id: live.id.clone(),
                history_length: Some(0),
                tenant: None,
            },
            &opts(),
        )
        .await
        .unwrap();
    assert_eq!(got.id, live.id, "{b}");
    let listed = t
        .list_tasks(
            &ListTasksRequest {
                page_size: Some(10),
                ..list_in_context(&live.context_id)
            },
            &opts(),
        )
        .await
        .unwrap();
    assert_eq!(
        listed
            .tasks
            .iter()
            .map(|t| t.id.as_str())
            .collect::<Vec<_>>(),
        vec![live.id.as_str()],
        "{b}"
    );
    let canceled = t.cancel_task(&cancel(&live.id), &opts()).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled, "{b}");
    let again = t.cancel_task(&cancel(&live.id), &opts()).await.unwrap_err();
    assert_eq!(again.code_str(), "a2a.task_not_cancelable", "{b}: {again}");

    // SendStreamingMessage.
    let events: Vec<StreamResponse> = t
        .send_streaming_message(&msg("stream please"), &opts())
        .await
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
        .await;
    assert!(
        matches!(events.first(), Some(StreamResponse::Task(_))),
        "{b}"
    );
    let chunks = events
        .iter()
        .filter(|e| matches!(e, StreamResponse::ArtifactUpdate(_)))
        .count();
    assert_eq!(chunks, 3, "{b}");
    assert_eq!(final_state(&events), Some(TaskState::Completed), "{b}");

    // SubscribeToTask on a live task, cancelled from the side.
    let live = task_of(t.as_ref(), &immediately("wait 30")).await;
    let mut sub = t
        .subscribe_to_task(
            &SubscribeToTaskRequest {
                id: live.id.clone(),
                tenant: None,
            },
            &opts(),
        )
        .await
        .unwrap();
    match sub.next().await {
        Some(Ok(StreamResponse::Task(first))) => assert_eq!(first.id, live.id, "{b}"),
        other => panic!("{b}: {other:?}"),
    }
    t.cancel_task(&cancel(&live.id), &opts()).await.unwrap();
    let rest: Vec<StreamResponse> = sub.map(|r| r.unwrap()).collect().await;
    assert_eq!(final_state(&rest), Some(TaskState::Canceled), "{b}");

    // Errors, each mapped to its code.
    let unknown = t
        .get_task(
            &GetTaskRequest {
                id: "no-such-task".into(),
                history_length: None,
                tenant: None,
            },
            &opts(),
        )
        .await
        .unwrap_err();
    assert_eq!(unknown.code_str(), "a2a.task_not_found", "{b}: {unknown}");
    assert_eq!(unknown.to_failure().details["reason"], "TASK_NOT_FOUND");

    let mut bad = msg("reply");
    bad.message.parts.clear();
    let bad = t.send_message(&bad, &opts()).await.unwrap_err();
    assert_eq!(bad.code_str(), "a2a.invalid_params", "{b}: {bad}");

    let terminal = match t
        .subscribe_to_task(
            &SubscribeToTaskRequest {
                id: live.id.clone(),
                tenant: None,
            },
            &opts(),
        )
        .await
    {
        Ok(_) => panic!("{b}: subscribed to a terminal task"),
        Err(e) => e,
    };
    assert_eq!(
        terminal.code_str(),
        "a2a.unsupported_operation",
        "{b}: {terminal}"
    );

    // The Python gRPC server does not check the version (the wire notes say so): only the HTTP
    // bindings refuse a request without one.
    if b == Binding::Grpc {
        return;
    }
    let no_version = HttpClient::builder()
        .send_version_header(false)
        .build()
        .unwrap();
    let nv = transport_on(&peer, b, &no_version);
    let e = nv
        .send_message(&msg("reply hi"), &opts())
        .await
        .unwrap_err();
    assert_eq!(e.code_str(), "a2a.version_not_supported", "{b}: {e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonrpc_against_the_python_sdk() {
    the_whole_surface(Binding::JsonRpc).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_json_against_the_python_sdk() {
    the_whole_surface(Binding::HttpJson).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_against_the_python_sdk() {
    the_whole_surface(Binding::Grpc).await;
}
