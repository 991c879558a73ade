//! The gRPC door driven by a2aflow's own gRPC transport (the card's `GRPC` interface, on the
//! server's one port, the workflow named by the tenant): send, stream, get, list by context,
//! subscribe, cancel, credentials from metadata and per-caller scoping, the typed refusals, and
//! the HTTP/2 keep-alive that closes the connection of a client gone silent.

use crate::support::{
    HANG, Host, as_caller, builder, cancel, client, client_with, get, message, send, serve,
    serve_with,
};
use a2a::{SendMessageResponse, StreamResponse, SubscribeToTaskRequest, TaskState};
use a2aflow::model::delegation::result_data;
use a2aflow::protocol::auth::Secret;
use a2aflow::protocol::{Binding, CallOptions, HttpClient, TransportError};
use a2aflow::testkit::list_in_context;
use a2aflow_server::{Callers, Limits};
use futures_util::StreamExt;
use serde_json::json;
use std::sync::Arc;

fn task_of(response: SendMessageResponse) -> a2a::Task {
    match response {
        SendMessageResponse::Task(t) => t,
        SendMessageResponse::Message(m) => panic!("a served workflow answers a task, got {m:?}"),
    }
}

/// The `a2a.*` code of a refused call.
fn code(result: Result<impl std::fmt::Debug, TransportError>) -> String {
    match result {
        Err(e) => e.code_str().to_string(),
        Ok(v) => panic!("the call is refused, got {v:?}"),
    }
}

#[tokio::test]
async fn the_card_names_the_grpc_door_at_the_servers_address_with_the_workflow_as_tenant() {
    let (server, _) = serve().await;
    let http = HttpClient::builder().build().unwrap();
    let url = server.card_url("echo").unwrap();
    let card = http
        .fetch_agent_card(&url, &CallOptions::default())
        .await
        .unwrap();
    let grpc = card
        .supported_interfaces
        .iter()
        .find(|i| i.protocol_binding == "GRPC")
        .expect("a GRPC interface");
    assert_eq!(grpc.url, server.local_addr().to_string());
    assert_eq!(grpc.tenant.as_deref(), Some("echo"));
    assert_eq!(grpc.protocol_version, "1.0");
    server.shutdown().await;
}

#[tokio::test]
async fn send_get_and_list_by_context_over_grpc() {
    let (server, host) = serve().await;
    let rpc = client(&server, "echo", Binding::Grpc).await;
    let opts = CallOptions::default();
    let mut m = message("review");
    m.parts.push(a2a::Part::data(json!({"repo": "x"})));
    m.context_id = Some("ctx-g".into());
    let task = task_of(rpc.send_message(&send(m, false), &opts).await.unwrap());
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.context_id, "ctx-g");
    let document = result_data(&task).expect("the result artifact");
    assert_eq!(document["executionId"], json!(task.id));
    assert_eq!(document["success"], json!(true));
    let seen = host.intents.lock().unwrap().clone();
    assert_eq!(seen, [Some("review\n{\"repo\":\"x\"}".to_owned())]);
    let got = rpc.get_task(&get(&task.id), &opts).await.unwrap();
    assert_eq!(
        (got.id.as_str(), got.status.state),
        (task.id.as_str(), TaskState::Completed)
    );
    let mut other = message("another");
    other.context_id = Some("ctx-g".into());
    let second = task_of(rpc.send_message(&send(other, false), &opts).await.unwrap());
    rpc.send_message(&send(message("elsewhere"), false), &opts)
        .await
        .unwrap();
    let listed = rpc
        .list_tasks(&list_in_context("ctx-g"), &opts)
        .await
        .unwrap();
    let ids: Vec<&str> = listed.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, [second.id.as_str(), task.id.as_str()], "newest first");
    assert_eq!(listed.total_size, 2);
    assert_eq!(listed.next_page_token, "");
    server.shutdown().await;
}

#[tokio::test]
async fn a_grpc_stream_starts_with_the_task_and_ends_completed_after_the_result() {
    let (server, _) = serve().await;
    let rpc = client(&server, "echo", Binding::Grpc).await;
    let stream = rpc
        .send_streaming_message(&send(message("stream me"), false), &CallOptions::default())
        .await
        .unwrap();
    let events: Vec<StreamResponse> = tokio::time::timeout(HANG, stream.collect::<Vec<_>>())
        .await
        .expect("the stream ends")
        .into_iter()
        .map(|e| e.expect("event"))
        .collect();
    let StreamResponse::Task(first) = &events[0] else {
        panic!("first event is the task, got {:?}", events[0]);
    };
    assert_eq!(first.status.state, TaskState::Submitted);
    let Some(StreamResponse::StatusUpdate(last)) = events.last() else {
        panic!("the last event is a status update: {events:?}");
    };
    assert_eq!(last.status.state, TaskState::Completed);
    let artifact = events.iter().find_map(|e| match e {
        StreamResponse::ArtifactUpdate(a) => Some(a),
        _ => None,
    });
    assert_eq!(
        artifact.expect("the result artifact").artifact.artifact_id,
        format!("{}/result", first.id)
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_grpc_subscriber_sees_the_task_first_and_the_cancel_last() {
    let (server, _) = serve().await;
    let rpc = client(&server, "echo", Binding::Grpc).await;
    let opts = CallOptions::default();
    let task = task_of(
        rpc.send_message(&send(message("slow"), true), &opts)
            .await
            .unwrap(),
    );
    assert!(
        matches!(task.status.state, TaskState::Submitted | TaskState::Working),
        "{:?}",
        task.status.state
    );
    let subscribe = SubscribeToTaskRequest {
        id: task.id.clone(),
        tenant: None,
    };
    let mut stream = rpc.subscribe_to_task(&subscribe, &opts).await.unwrap();
    let first = tokio::time::timeout(HANG, stream.next()).await.unwrap();
    assert!(
        matches!(first, Some(Ok(StreamResponse::Task(ref t))) if t.id == task.id),
        "{first:?}"
    );
    let cancelled = rpc.cancel_task(&cancel(&task.id), &opts).await.unwrap();
    assert_eq!(cancelled.status.state, TaskState::Canceled);
    let rest: Vec<_> = tokio::time::timeout(HANG, stream.collect::<Vec<_>>())
        .await
        .expect("the stream ends after the cancel");
    let last = rest.last().and_then(|e| e.as_ref().ok());
    assert!(
        matches!(last, Some(StreamResponse::StatusUpdate(s)) if s.status.state == TaskState::Canceled),
        "{rest:?}"
    );
    assert_eq!(
        code(rpc.cancel_task(&cancel(&task.id), &opts).await),
        "a2a.task_not_cancelable"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn unknown_ids_oversized_messages_and_unserved_operations_are_typed_refusals() {
    let mut limits = Limits::default();
    limits.max_body_bytes = 4096;
    let (server, host) = serve_with(limits).await;
    // The client reads answers up to the same 4096 bytes: the server's refusal of the request
    // is still the server's, not taken for an answer over the client's own limit.
    let mut client_limits = a2aflow::protocol::Limits::default();
    client_limits.max_response_body = 4096;
    let http = HttpClient::builder().limits(client_limits).build().unwrap();
    let rpc = client_with(&server, "echo", Binding::Grpc, &http).await;
    let opts = CallOptions::default();
    assert_eq!(
        code(rpc.get_task(&get("no-such-task"), &opts).await),
        "a2a.task_not_found"
    );
    let big = message(&"x".repeat(8192));
    match rpc.send_message(&send(big, false), &opts).await {
        Err(TransportError::Remote(e)) => {
            assert_eq!(e.reason.as_deref(), Some("INVALID_REQUEST"), "{e:?}");
            assert_eq!(e.status.as_deref(), Some("INVALID_ARGUMENT"), "{e:?}");
        }
        other => panic!("an oversized message is refused by the server, got {other:?}"),
    }
    assert!(host.intents.lock().unwrap().is_empty(), "nothing ran");
    assert_eq!(
        code(rpc.get_extended_agent_card(&opts).await),
        "a2a.unsupported_operation"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn credentials_come_from_metadata_and_a_caller_sees_only_its_own_tasks() {
    let callers = Callers::new()
        .bearer("alice", Secret::new("alice-token"))
        .unwrap()
        .api_key("bob", "X-API-Key", Secret::new("bob-key"))
        .unwrap();
    let host = Arc::new(Host::default());
    let server = builder(host.clone())
        .callers(callers)
        .start()
        .await
        .unwrap();
    let opts = CallOptions::default();
    let alice_http = as_caller("authorization", "Bearer alice-token");
    let alice = client_with(&server, "echo", Binding::Grpc, &alice_http).await;
    let bob_http = as_caller("x-api-key", "bob-key");
    let bob = client_with(&server, "echo", Binding::Grpc, &bob_http).await;
    let nobody_http = as_caller("authorization", "Bearer alice-tokeN");
    let nobody = client_with(&server, "echo", Binding::Grpc, &nobody_http).await;

    assert_eq!(
        code(
            nobody
                .send_message(&send(message("hi"), false), &opts)
                .await
        ),
        "auth.rejected"
    );
    assert!(host.intents.lock().unwrap().is_empty(), "nothing ran");

    let mut m = message("alice's");
    m.context_id = Some("shared-ctx".into());
    let task = task_of(alice.send_message(&send(m, false), &opts).await.unwrap());
    assert_eq!(task.status.state, TaskState::Completed);
    let own = alice.get_task(&get(&task.id), &opts).await.unwrap();
    assert_eq!(own.id, task.id);

    // Bob: the same answer for alice's task as for one that never existed.
    assert_eq!(
        code(bob.get_task(&get(&task.id), &opts).await),
        "a2a.task_not_found"
    );
    assert_eq!(
        code(bob.cancel_task(&cancel(&task.id), &opts).await),
        "a2a.task_not_found"
    );
    let subscribe = SubscribeToTaskRequest {
        id: task.id.clone(),
        tenant: None,
    };
    assert_eq!(
        code(bob.subscribe_to_task(&subscribe, &opts).await.map(|_| ())),
        "a2a.task_not_found"
    );
    let listed = bob
        .list_tasks(&list_in_context("shared-ctx"), &opts)
        .await
        .unwrap();
    assert!(listed.tasks.is_empty(), "{listed:?}");
    let listed = alice
        .list_tasks(&list_in_context("shared-ctx"), &opts)
        .await
        .unwrap();
    assert_eq!(listed.tasks.len(), 1);
    server.shutdown().await;
}

/// A bare tonic client of the stubs (no a2aflow transport): what a call without the version
/// metadata, or naming no served workflow, is answered.
#[tokio::test]
async fn the_version_metadata_and_the_tenant_are_checked_first() {
    use a2a_pb::a2a_service_client::A2aServiceClient;
    let (server, host) = serve().await;
    let mut bare = A2aServiceClient::connect(format!("http://{}", server.local_addr()))
        .await
        .unwrap();
    let get = |tenant: &str| a2a_pb::GetTaskRequest {
        tenant: tenant.to_owned(),
        id: "nope".to_owned(),
        ..Default::default()
    };
    let unversioned = bare.get_task(get("echo")).await.unwrap_err();
    assert_eq!(unversioned.code(), tonic::Code::FailedPrecondition);
    assert_eq!(
        unversioned.message(),
        "A2A version '0.3' is not supported by this handler. Expected version '1.0'."
    );
    let versioned = |tenant: &str| {
        let mut r = tonic::Request::new(get(tenant));
        r.metadata_mut()
            .insert("a2a-version", "1.0".parse().unwrap());
        r
    };
    let unknown = bare.get_task(versioned("echo")).await.unwrap_err();
    assert_eq!(unknown.code(), tonic::Code::NotFound);
    assert_eq!(unknown.message(), "Task not found");
    let elsewhere = bare.get_task(versioned("other")).await.unwrap_err();
    assert_eq!(elsewhere.code(), tonic::Code::NotFound);
    assert!(elsewhere.message().contains("\"other\""), "{elsewhere:?}");
    // One workflow served: a call without a tenant means it.
    let untenanted = bare.get_task(versioned("")).await.unwrap_err();
    assert_eq!(untenanted.message(), "Task not found");
    assert!(host.intents.lock().unwrap().is_empty());
    server.shutdown().await;
}

/// An HTTP/2 client that stops answering (it acknowledged the server's settings, then went
/// silent, as one whose host vanished): the server's keep-alive PING goes unacknowledged and the
/// server closes the connection. Clients that answer pings (tonic's) are served as before.
#[tokio::test]
async fn an_http2_client_that_stops_answering_pings_is_disconnected() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut limits = Limits::default();
    limits.http2_keep_alive_interval = Some(std::time::Duration::from_millis(50));
    limits.http2_keep_alive_timeout = std::time::Duration::from_millis(50);
    let (server, _) = serve_with(limits).await;
    let mut conn = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    // The connection preface and an empty SETTINGS frame.
    let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    hello.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    conn.write_all(&hello).await.unwrap();
    let (mut pinged, mut went_away) = (false, false);
    let watched = async {
        loop {
            let mut head = [0u8; 9];
            if conn.read_exact(&mut head).await.is_err() {
                return; // closed
            }
            let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
            let mut payload = vec![0u8; len];
            if conn.read_exact(&mut payload).await.is_err() {
                return;
            }
            let (kind, flags) = (head[3], head[4]);
            match kind {
                // The server's SETTINGS: acknowledged, as a client does.
                4 if flags & 1 == 0 => {
                    conn.write_all(&[0, 0, 0, 4, 1, 0, 0, 0, 0]).await.unwrap();
                }
                // A PING: never answered.
                6 if flags & 1 == 0 => pinged = true,
                7 => went_away = true,
                _ => {}
            }
        }
    };
    tokio::time::timeout(HANG, watched)
        .await
        .expect("the server closes a connection whose client answers no ping");
    assert!(pinged, "the server pinged the client");
    assert!(went_away, "the server said GOAWAY before closing");
    // A client that answers pings is served on the same server.
    let rpc = client(&server, "echo", Binding::Grpc).await;
    let task = task_of(
        rpc.send_message(&send(message("hi"), false), &CallOptions::default())
            .await
            .unwrap(),
    );
    assert_eq!(task.status.state, TaskState::Completed);
    server.shutdown().await;
}
