//! Every served task record validates against the seed-000 task schema: [`raw`] checks each
//! task in every response it reads (so every test of this binary that goes through it checks
//! its answers, the gated INPUT_REQUIRED and AUTH_REQUIRED tasks of `gates` included); this
//! module drives one of each kind through both bindings and counts the records checked.

use crate::support::{HANG, Host, builder, check_task_records, raw, rpc, serve};
use a2aflow::kernel::DelegationPolicy;
use serde_json::{Value, json};
use std::sync::Arc;

fn send(method: &str, text: &str, immediately: bool) -> Value {
    json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": {
        "message": { "messageId": format!("m-{text}"), "role": "ROLE_USER",
                     "parts": [{ "text": text }] },
        "configuration": { "returnImmediately": immediately } }})
}

fn call(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": 2, "method": method, "params": params })
}

async fn rest(
    server: &a2aflow_server::ServerHandle,
    method: &str,
    path: &str,
    body: &Value,
) -> String {
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    raw(
        server,
        method,
        &format!("/agents/echo/rest{path}"),
        &[("A2A-Version", "1.0"), ("Content-Type", "application/json")],
        body.as_bytes(),
    )
    .await
    .body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_of_served_task_record_validates() {
    let (server, _host) = serve().await;
    let mut checked = 0;

    // A root run, completed: depth 0, no parent.
    let done = rpc(&server, &send("SendMessage", "hello", false)).await;
    checked += check_task_records(&done.body);
    let task = done.json()["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(task["metadata"]["a2aflow/depth"], 0, "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    checked += check_task_records(
        &rpc(&server, &call("GetTask", json!({ "id": id })))
            .await
            .body,
    );
    checked += check_task_records(&rpc(&server, &call("ListTasks", json!({}))).await.body);

    // Working, then cancelled.
    let slow = rpc(&server, &send("SendMessage", "slow one", true)).await;
    checked += check_task_records(&slow.body);
    let slow_id = slow.json()["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let cancelled = rpc(&server, &call("CancelTask", json!({ "id": slow_id }))).await;
    checked += check_task_records(&cancelled.body);
    assert_eq!(
        cancelled.json()["result"]["status"]["state"],
        "TASK_STATE_CANCELED",
        "{}",
        cancelled.body
    );

    // Failed.
    let failed = rpc(&server, &send("SendMessage", "fail now", false)).await;
    checked += check_task_records(&failed.body);
    assert_eq!(
        failed.json()["result"]["task"]["status"]["state"],
        "TASK_STATE_FAILED"
    );

    // A stream: its first event is the task.
    let streamed = tokio::time::timeout(
        HANG,
        rpc(&server, &send("SendStreamingMessage", "streamed", false)),
    )
    .await
    .unwrap();
    checked += check_task_records(&streamed.body);

    // HTTP+JSON: send, get, list.
    let body = json!({ "message": { "messageId": "m-rest", "role": "ROLE_USER",
                                    "parts": [{ "text": "over rest" }] } });
    let sent = rest(&server, "POST", "/message:send", &body).await;
    checked += check_task_records(&sent);
    let rest_id = serde_json::from_str::<Value>(&sent).unwrap()["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    checked +=
        check_task_records(&rest(&server, "GET", &format!("/tasks/{rest_id}"), &Value::Null).await);
    checked += check_task_records(&rest(&server, "GET", "/tasks", &Value::Null).await);
    // Sent, got, listed (1 task then), working, cancelled, failed, the stream's first event,
    // REST's sent and got, and REST's list (5 tasks then).
    assert_eq!(checked, 14, "records checked");
    server.shutdown().await;
}

#[tokio::test]
async fn delegated_and_refused_records_validate() {
    let server = builder(Arc::new(Host::default()))
        .delegation(DelegationPolicy {
            max_depth: 2,
            ..DelegationPolicy::default()
        })
        .start()
        .await
        .unwrap();
    let delegated = |depth: u64| {
        json!({ "jsonrpc": "2.0", "id": 5, "method": "SendMessage", "params": { "message": {
            "messageId": format!("m-d{depth}"), "role": "ROLE_USER", "contextId": "root-1",
            "parts": [{ "text": "review" }],
            "metadata": {
                "a2aflow/kind": "delegation_request",
                "a2aflow/parentExecutionId": "parent-1",
                "a2aflow/rootExecutionId": "root-1",
                "a2aflow/flowId": "echo-id",
                "a2aflow/depth": depth,
            }
        }}})
    };
    let admitted = rpc(&server, &delegated(2)).await;
    assert_eq!(check_task_records(&admitted.body), 1);
    let task = admitted.json()["result"]["task"].clone();
    assert_eq!(task["metadata"]["a2aflow/depth"], 2, "{task}");
    let refused = rpc(&server, &delegated(3)).await;
    assert_eq!(check_task_records(&refused.body), 1);
    assert_eq!(
        refused.json()["result"]["task"]["status"]["state"],
        "TASK_STATE_REJECTED"
    );
    server.shutdown().await;
}
