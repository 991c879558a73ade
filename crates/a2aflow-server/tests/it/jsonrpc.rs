//! The JSON-RPC binding driven by a2aflow's own JSON-RPC transport: card, blocking and
//! immediate sends, get, cancel, list by context with paging, streaming and subscribing.

use crate::support::{HANG, client, message, send, serve};
use a2a::{
    ListTasksRequest, PartContent, SendMessageResponse, StreamResponse, SubscribeToTaskRequest,
    TaskState,
};
use a2aflow::model::delegation::result_data;
use a2aflow::protocol::{Binding, CallOptions, HttpClient, TransportError};
use a2aflow::testkit::list_in_context;
use futures_util::StreamExt;
use serde_json::json;

fn task_of(response: SendMessageResponse) -> a2a::Task {
    match response {
        SendMessageResponse::Task(t) => t,
        SendMessageResponse::Message(m) => panic!("a served workflow answers a task, got {m:?}"),
    }
}

#[tokio::test]
async fn the_card_names_one_skill_the_three_bindings_and_streaming() {
    let (server, _) = serve().await;
    let http = HttpClient::builder().build().unwrap();
    let url = server.card_url("echo").unwrap();
    let card = http
        .fetch_agent_card(&url, &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(card.name, "echo");
    assert_eq!(card.skills.len(), 1);
    assert_eq!(card.skills[0].id, "echo-id");
    assert_eq!(card.capabilities.streaming, Some(true));
    let bindings: Vec<(&str, &str)> = card
        .supported_interfaces
        .iter()
        .map(|i| (i.protocol_binding.as_str(), i.protocol_version.as_str()))
        .collect();
    assert_eq!(
        bindings,
        [("JSONRPC", "1.0"), ("HTTP+JSON", "1.0"), ("GRPC", "1.0")]
    );
    assert!(
        card.supported_interfaces[0]
            .url
            .ends_with("/agents/echo/jsonrpc")
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_blocking_send_runs_the_workflow_on_the_message_and_answers_the_record() {
    let (server, host) = serve().await;
    let rpc = client(&server, "echo", Binding::JsonRpc).await;
    let mut m = message("review");
    m.parts.push(a2a::Part::data(json!({"repo": "x"})));
    let task = task_of(
        rpc.send_message(&send(m, false), &CallOptions::default())
            .await
            .unwrap(),
    );
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.context_id, task.id, "a run of its own is its own root");
    let document = result_data(&task).expect("the result artifact");
    assert_eq!(document["executionId"], json!(task.id));
    assert_eq!(document["success"], json!(true));
    let metadata = task.metadata.clone().unwrap_or_default();
    assert_eq!(metadata["a2aflow/status"], json!("SUCCEEDED"));
    assert_eq!(metadata["a2aflow/executionId"], json!(task.id));
    let seen = host.intents.lock().unwrap().clone();
    assert_eq!(seen, [Some("review\n{\"repo\":\"x\"}".to_owned())]);
    server.shutdown().await;
}

#[tokio::test]
async fn a_failing_run_is_failed_without_an_artifact() {
    let (server, _) = serve().await;
    let rpc = client(&server, "echo", Binding::JsonRpc).await;
    let task = task_of(
        rpc.send_message(&send(message("fail now"), false), &CallOptions::default())
            .await
            .unwrap(),
    );
    assert_eq!(task.status.state, TaskState::Failed);
    assert_eq!(task.artifacts, None);
    server.shutdown().await;
}

#[tokio::test]
async fn return_immediately_answers_a_working_task_that_cancel_stops() {
    let (server, _) = serve().await;
    let rpc = client(&server, "echo", Binding::JsonRpc).await;
    let opts = CallOptions::default();
    let task = task_of(
        rpc.send_message(&send(message("slow job"), true), &opts)
            .await
            .unwrap(),
    );
    assert!(
        matches!(task.status.state, TaskState::Submitted | TaskState::Working),
        "{:?}",
        task.status.state
    );
    let got = rpc
        .get_task(
            &a2a::GetTaskRequest {
                id: task.id.clone(),
                history_length: None,
                tenant: None,
            },
            &opts,
        )
        .await
        .unwrap();
    assert_eq!(got.id, task.id);
    let cancel = a2a::CancelTaskRequest {
        id: task.id.clone(),
        metadata: None,
        tenant: None,
    };
    let cancelled = rpc.cancel_task(&cancel, &opts).await.unwrap();
    assert_eq!(cancelled.status.state, TaskState::Canceled);
    let again = rpc.cancel_task(&cancel, &opts).await;
    match again {
        Err(TransportError::Remote(e)) => assert_eq!(e.numeric_code, Some(-32002)),
        other => panic!("a second cancel is refused, got {other:?}"),
    }
    server.shutdown().await;
}

#[tokio::test]
async fn list_filters_by_the_clients_context_and_pages() {
    let (server, _) = serve().await;
    let rpc = client(&server, "echo", Binding::JsonRpc).await;
    let opts = CallOptions::default();
    let mut ids = Vec::new();
    for (text, context) in [("one", "ctx-1"), ("two", "ctx-1"), ("three", "ctx-2")] {
        let mut m = message(text);
        m.context_id = Some(context.to_owned());
        let task = task_of(rpc.send_message(&send(m, false), &opts).await.unwrap());
        assert_eq!(task.context_id, context);
        ids.push(task.id);
    }
    let mut request = ListTasksRequest {
        page_size: Some(1),
        ..list_in_context("ctx-1")
    };
    let first = rpc.list_tasks(&request, &opts).await.unwrap();
    assert_eq!(first.total_size, 2);
    assert_eq!(first.tasks.len(), 1);
    assert_eq!(first.tasks[0].id, ids[1], "newest first");
    assert_eq!(
        first.tasks[0].artifacts, None,
        "artifacts only when asked for"
    );
    assert!(!first.next_page_token.is_empty());
    request.page_token = Some(first.next_page_token.clone());
    let second = rpc.list_tasks(&request, &opts).await.unwrap();
    assert_eq!(second.tasks.len(), 1);
    assert_eq!(second.tasks[0].id, ids[0]);
    assert_eq!(second.next_page_token, "");
    server.shutdown().await;
}

#[tokio::test]
async fn a_stream_starts_with_the_task_and_ends_completed_after_the_result() {
    let (server, _) = serve().await;
    let rpc = client(&server, "echo", Binding::JsonRpc).await;
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
    let artifact = artifact.expect("the result artifact is streamed");
    assert_eq!(
        artifact.artifact.artifact_id,
        format!("{}/result", first.id)
    );
    assert!(matches!(
        artifact.artifact.parts[0].content,
        PartContent::Data(_)
    ));
    server.shutdown().await;
}

#[tokio::test]
async fn a_subscriber_sees_the_task_first_and_the_cancel_last() {
    let (server, _) = serve().await;
    let rpc = client(&server, "echo", Binding::JsonRpc).await;
    let opts = CallOptions::default();
    let task = task_of(
        rpc.send_message(&send(message("slow"), true), &opts)
            .await
            .unwrap(),
    );
    let mut stream = rpc
        .subscribe_to_task(
            &SubscribeToTaskRequest {
                id: task.id.clone(),
                tenant: None,
            },
            &opts,
        )
        .await
        .unwrap();
    let first = tokio::time::timeout(HANG, stream.next()).await.unwrap();
    assert!(matches!(first, Some(Ok(StreamResponse::Task(ref t))) if t.id == task.id));
    let cancel = a2a::CancelTaskRequest {
        id: task.id.clone(),
        metadata: None,
        tenant: None,
    };
    rpc.cancel_task(&cancel, &opts).await.unwrap();
    let rest: Vec<_> = tokio::time::timeout(HANG, stream.collect::<Vec<_>>())
        .await
        .expect("the stream ends after the cancel");
    let last = rest.last().and_then(|e| e.as_ref().ok());
    assert!(
        matches!(last, Some(StreamResponse::StatusUpdate(s)) if s.status.state == TaskState::Canceled),
        "{rest:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_dropped_handle_stops_listening() {
    let (server, _) = serve().await;
    let addr = server.local_addr();
    drop(server);
    let refused = async {
        while tokio::net::TcpStream::connect(addr).await.is_ok() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(HANG, refused)
        .await
        .expect("the listener closes");
}
