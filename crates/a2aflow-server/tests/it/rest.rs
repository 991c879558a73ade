//! The HTTP+JSON binding driven by a2aflow's own REST transport.

use crate::support::{HANG, client, message, send, serve};
use a2a::{SendMessageResponse, StreamResponse, TaskState};
use a2aflow::protocol::{Binding, CallOptions};
use futures_util::StreamExt;

#[tokio::test]
async fn send_get_and_stream_over_http_json() {
    let (server, _) = serve().await;
    let rest = client(&server, "echo", Binding::HttpJson).await;
    assert_eq!(rest.binding(), Binding::HttpJson);
    let opts = CallOptions::default();
    let answer = rest
        .send_message(&send(message("hello rest"), false), &opts)
        .await
        .unwrap();
    let SendMessageResponse::Task(task) = answer else {
        panic!("a task");
    };
    assert_eq!(task.status.state, TaskState::Completed);
    let got = rest
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
    assert_eq!(got.status.state, TaskState::Completed);
    assert_eq!(got.artifacts, task.artifacts);
    let stream = rest
        .send_streaming_message(&send(message("stream rest"), false), &opts)
        .await
        .unwrap();
    let events: Vec<_> = tokio::time::timeout(HANG, stream.collect::<Vec<_>>())
        .await
        .unwrap();
    assert!(matches!(events.first(), Some(Ok(StreamResponse::Task(_)))));
    assert!(matches!(
        events.last(),
        Some(Ok(StreamResponse::StatusUpdate(s))) if s.status.state == TaskState::Completed
    ));
    server.shutdown().await;
}
