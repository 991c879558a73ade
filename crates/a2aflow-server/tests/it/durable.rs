//! Runs journaled in a store: a restarted server answers GetTask and ListTasks for the runs of
//! the process before it.

use crate::support::{Host, builder, client, message, send};
use a2a::{SendMessageResponse, TaskState};
use a2aflow::RunStore;
use a2aflow::protocol::{Binding, CallOptions};
use a2aflow::store_sqlite::SqliteStore;
use std::sync::Arc;

async fn store(path: &std::path::Path) -> Arc<dyn RunStore> {
    Arc::new(SqliteStore::open(path).await.expect("store"))
}

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
        .get_task(
            &a2a::GetTaskRequest {
                id: task.id.clone(),
                history_length: None,
                tenant: None,
            },
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(got.status.state, TaskState::Completed);
    assert_eq!(got.context_id, "ctx-durable");
    assert_eq!(got.artifacts, task.artifacts);
    again.shutdown().await;
}
