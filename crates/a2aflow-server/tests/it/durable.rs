//! Runs journaled in a store: a restarted server answers GetTask and ListTasks for the runs of
//! the process before it.

use crate::support::{Host, builder, client, get, message, send, store};
use a2a::{SendMessageResponse, TaskState};
use a2aflow::protocol::{Binding, CallOptions};
use a2aflow::testkit::list_in_context;
use std::sync::Arc;

#[tokio::test]
async fn get_task_answers_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let index = dir.path().join("served.jsonl");
    let server = builder(Arc::new(Host::default()))
        .store(store(&db).await, &index)
        .start()
        .await
        .unwrap();
    let rpc = client(&server, "echo", Binding::JsonRpc).await;
    let mut m = message("keep me");
    m.context_id = Some("ctx-durable".into());
    let SendMessageResponse::Task(task) = rpc
        .send_message(&send(m, false), &CallOptions::default())
        .await
        .unwrap()
    else {
        panic!("a task");
    };
    assert_eq!(task.status.state, TaskState::Completed);
    server.shutdown().await;

    let again = builder(Arc::new(Host::default()))
        .store(store(&db).await, &index)
        .start()
        .await
        .unwrap();
    let rpc = client(&again, "echo", Binding::HttpJson).await;
    let got = rpc
        .get_task(&get(&task.id), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(got.status.state, TaskState::Completed);
    assert_eq!(got.context_id, "ctx-durable");
    assert_eq!(got.artifacts, task.artifacts);
    again.shutdown().await;
}

#[tokio::test]
async fn an_index_entry_without_a_run_is_not_listed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let index = dir.path().join("served.jsonl");
    // The process stopped after the index line and before the store had the run.
    std::fs::write(
        &index,
        "{\"executionId\":\"never-ran\",\"contextId\":\"c\",\"workflow\":\"echo\",\"workflowId\":\"echo-id\",\"createdMs\":1}\n",
    )
    .unwrap();
    let server = builder(Arc::new(Host::default()))
        .store(store(&db).await, &index)
        .start()
        .await
        .unwrap();
    let rpc = client(&server, "echo", Binding::JsonRpc).await;
    // Every task, in no context.
    let request = a2a::ListTasksRequest {
        context_id: None,
        ..list_in_context("")
    };
    let listed = rpc
        .list_tasks(&request, &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(listed.total_size, 0);
    server.shutdown().await;
}
