//! The finished tasks kept in memory (`Limits::finished_tasks_kept`): past the limit the oldest
//! finished tasks are dropped and answered, over every binding, exactly as ids that never
//! existed; a running task is never dropped; a restarted server with a store keeps the same.

use crate::support::{Host, builder, cancel, client, get, message, rpc, send, serve_with, store};
use a2a::{SendMessageResponse, SubscribeToTaskRequest, TaskState};
use a2aflow::protocol::{Binding, CallOptions, Transport, TransportError};
use a2aflow::testkit::list_in_context;
use a2aflow_server::Limits;
use serde_json::json;
use std::sync::Arc;

fn kept(n: usize) -> Limits {
    let mut limits = Limits::default();
    limits.finished_tasks_kept = n;
    limits.shutdown_grace = std::time::Duration::from_millis(200);
    limits
}

/// Sends `text` in `context` and returns the task once the send answers (`immediately`: at
/// once, else when the run has finished).
async fn start(rpc: &dyn Transport, text: &str, context: &str, immediately: bool) -> a2a::Task {
    let mut m = message(text);
    m.context_id = Some(context.to_owned());
    match rpc
        .send_message(&send(m, immediately), &CallOptions::default())
        .await
        .unwrap()
    {
        SendMessageResponse::Task(t) => t,
        SendMessageResponse::Message(m) => panic!("a served workflow answers a task, got {m:?}"),
    }
}

fn code<T: std::fmt::Debug>(result: Result<T, TransportError>) -> String {
    match result {
        Err(e) => e.code_str().to_string(),
        Ok(v) => panic!("the call is refused, got {v:?}"),
    }
}

/// What `rpc` answers for task `id`: its state, or the code of the refusal of GetTask,
/// CancelTask and SubscribeToTask (which must agree).
async fn seen(rpc: &dyn Transport, id: &str) -> Result<TaskState, String> {
    let opts = CallOptions::default();
    match rpc.get_task(&get(id), &opts).await {
        Ok(task) => Ok(task.status.state),
        Err(e) => {
            let subscribe = SubscribeToTaskRequest {
                id: id.to_owned(),
                tenant: None,
            };
            let cancelled = code(rpc.cancel_task(&cancel(id), &opts).await);
            let subscribed = code(rpc.subscribe_to_task(&subscribe, &opts).await.map(|_| ()));
            let got = e.code_str().to_string();
            assert_eq!((&cancelled, &subscribed), (&got, &got), "task {id}");
            Err(got)
        }
    }
}

const NOT_FOUND: &str = "a2a.task_not_found";

#[tokio::test]
async fn past_the_limit_the_oldest_finished_tasks_are_unknown_over_every_binding() {
    let (server, _) = serve_with(kept(2)).await;
    let jsonrpc = client(&server, "echo", Binding::JsonRpc).await;
    let grpc = client(&server, "echo", Binding::Grpc).await;
    let bindings = [&jsonrpc, &grpc];
    // Started first, still running when every later one has finished: never dropped.
    let running = start(jsonrpc.as_ref(), "slow", "ctx-kept", true).await;
    let mut finished = Vec::new();
    for i in 0..5 {
        // Alternately over both bindings: the limit is the server's, not a binding's.
        let task = start(
            bindings[i % 2].as_ref(),
            &format!("run {i}"),
            "ctx-kept",
            false,
        )
        .await;
        assert_eq!(task.status.state, TaskState::Completed);
        finished.push(task.id);
    }
    for rpc in bindings {
        for id in &finished[..3] {
            assert_eq!(seen(rpc.as_ref(), id).await, Err(NOT_FOUND.to_owned()));
        }
        for id in &finished[3..] {
            assert_eq!(seen(rpc.as_ref(), id).await, Ok(TaskState::Completed));
        }
        let state = seen(rpc.as_ref(), &running.id).await;
        assert!(
            matches!(state, Ok(TaskState::Submitted | TaskState::Working)),
            "{state:?}"
        );
        let listed = rpc
            .list_tasks(&list_in_context("ctx-kept"), &CallOptions::default())
            .await
            .unwrap();
        let ids: Vec<&str> = listed.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                finished[4].as_str(),
                finished[3].as_str(),
                running.id.as_str()
            ],
            "newest first, the dropped ones not listed"
        );
        assert_eq!(listed.total_size, 3);
    }
    // A dropped task is refused with the very bytes of an id that never existed.
    let refusal =
        |id: &str| json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": id}});
    let dropped = rpc(&server, &refusal(&finished[0])).await.json();
    let never = rpc(&server, &refusal("never-existed")).await.json();
    assert_eq!(dropped["error"], never["error"], "{dropped}");
    assert_eq!(dropped["error"]["code"], json!(-32001), "{dropped}");

    // Cancelled, the running task is finished too: the oldest kept one makes room for it.
    let cancelled = grpc
        .cancel_task(&cancel(&running.id), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(cancelled.status.state, TaskState::Canceled);
    assert_eq!(
        seen(grpc.as_ref(), &running.id).await,
        Ok(TaskState::Canceled)
    );
    assert_eq!(
        seen(jsonrpc.as_ref(), &finished[3]).await,
        Err(NOT_FOUND.to_owned())
    );
    assert_eq!(
        seen(jsonrpc.as_ref(), &finished[4]).await,
        Ok(TaskState::Completed)
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_restarted_server_with_a_store_keeps_the_same_newest_finished_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let index = dir.path().join("served.jsonl");
    let server = builder(Arc::new(Host::default()))
        .store(store(&db).await, &index)
        .limits(kept(2))
        .start()
        .await
        .unwrap();
    let rpc = client(&server, "echo", Binding::JsonRpc).await;
    let mut finished = Vec::new();
    for i in 0..4 {
        finished.push(
            start(rpc.as_ref(), &format!("run {i}"), "ctx-d", false)
                .await
                .id,
        );
    }
    for id in &finished[..2] {
        assert_eq!(seen(rpc.as_ref(), id).await, Err(NOT_FOUND.to_owned()));
    }
    server.shutdown().await;
    let lines = |path: &std::path::Path| {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["executionId"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        lines(&index).len(),
        4,
        "a few drops leave the index as it is"
    );

    let again = builder(Arc::new(Host::default()))
        .store(store(&db).await, &index)
        .limits(kept(2))
        .start()
        .await
        .unwrap();
    let grpc = client(&again, "echo", Binding::Grpc).await;
    for id in &finished[..2] {
        assert_eq!(seen(grpc.as_ref(), id).await, Err(NOT_FOUND.to_owned()));
    }
    for id in &finished[2..] {
        assert_eq!(seen(grpc.as_ref(), id).await, Ok(TaskState::Completed));
    }
    let listed = grpc
        .list_tasks(&list_in_context("ctx-d"), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(listed.total_size, 2, "{listed:?}");
    assert_eq!(
        lines(&index),
        [json!(finished[2]), json!(finished[3])],
        "the restarted server compacted the index to the tasks it answers for"
    );
    again.shutdown().await;
}

/// A server that runs on: the index file is compacted while it serves, so it holds about as
/// many lines as the tasks the server answers for, not one per request ever served.
#[tokio::test]
async fn the_index_file_is_compacted_while_the_server_serves() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("served.jsonl");
    let server = builder(Arc::new(Host::default()))
        .store(store(&dir.path().join("runs.db")).await, &index)
        .limits(kept(2))
        .start()
        .await
        .unwrap();
    let rpc = client(&server, "echo", Binding::JsonRpc).await;
    let runs = 200;
    let mut last = String::new();
    for i in 0..runs {
        last = start(rpc.as_ref(), &format!("run {i}"), "ctx-c", false)
            .await
            .id;
    }
    // Compacted in the run's task after its end was announced: the shutdown waits for it.
    server.shutdown().await;
    let lines = std::fs::read_to_string(&index).unwrap().lines().count();
    assert!(
        lines < runs / 2,
        "{lines} lines in the index after {runs} runs with 2 finished tasks kept"
    );
    let again = builder(Arc::new(Host::default()))
        .store(store(&dir.path().join("runs.db")).await, &index)
        .limits(kept(2))
        .start()
        .await
        .unwrap();
    let rpc = client(&again, "echo", Binding::Grpc).await;
    assert_eq!(seen(rpc.as_ref(), &last).await, Ok(TaskState::Completed));
    again.shutdown().await;
}
