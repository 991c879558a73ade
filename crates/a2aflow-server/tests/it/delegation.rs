//! Inbound delegation: a SendMessage with the delegation request metadata is admitted by the
//! server's DelegationPolicy before anything starts; a refusal is the TASK_STATE_REJECTED
//! record with its refusalReason, and the admitted run's record carries the lineage.

use crate::support::{Host, builder, rpc};
use a2aflow::kernel::DelegationPolicy;
use a2aflow_server::ServerHandle;
use serde_json::{Value, json};
use std::sync::Arc;

async fn serve(max_depth: u32, max_fan_out: usize) -> ServerHandle {
    let policy = DelegationPolicy {
        max_depth,
        max_fan_out,
        ..DelegationPolicy::default()
    };
    builder(Arc::new(Host::default()))
        .delegation(policy)
        .start()
        .await
        .unwrap()
}

fn delegated(method: &str, parent: &str, root: Option<&str>, depth: u64) -> Value {
    json!({ "jsonrpc": "2.0", "id": 5, "method": method, "params": { "message": {
        "messageId": format!("m-{parent}-{depth}"), "role": "ROLE_USER",
        "contextId": root.unwrap_or(parent),
        "parts": [{ "text": "review" }],
        "metadata": {
            "a2aflow/kind": "delegation_request",
            "a2aflow/parentExecutionId": parent,
            "a2aflow/rootExecutionId": root,
            "a2aflow/flowId": "echo-id",
            "a2aflow/depth": depth,
        }
    }}})
}

fn task(answer: &Value) -> Value {
    answer["result"]["task"].clone()
}

#[tokio::test]
async fn a_request_deeper_than_the_cap_is_rejected_and_nothing_runs() {
    let server = serve(2, 16).await;
    let refused = task(
        &rpc(&server, &delegated("SendMessage", "p1", Some("r1"), 3))
            .await
            .json(),
    );
    assert_eq!(
        refused["status"]["state"], "TASK_STATE_REJECTED",
        "{refused}"
    );
    let metadata = &refused["metadata"];
    assert_eq!(
        metadata["a2aflow/refusalReason"], "depth_exceeded",
        "{refused}"
    );
    assert_eq!(metadata["a2aflow/status"], "REFUSED");
    assert_eq!(metadata["a2aflow/depth"], 3);
    assert!(metadata.get("a2aflow/executionId").is_none(), "{refused}");
    assert!(refused.get("artifacts").is_none(), "{refused}");
    assert_eq!(refused["contextId"], "r1");
    let listed = rpc(
        &server,
        &json!({"jsonrpc": "2.0", "id": 6, "method": "ListTasks", "params": {}}),
    )
    .await
    .json();
    assert_eq!(
        listed["result"]["tasks"],
        json!([]),
        "nothing ran: {listed}"
    );

    let streamed = rpc(
        &server,
        &delegated("SendStreamingMessage", "p1", Some("r1"), 3),
    )
    .await;
    let events: Vec<Value> = streamed
        .body
        .split("\r\n\r\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(events.len(), 1, "{}", streamed.body);
    assert_eq!(
        events[0]["result"]["task"]["status"]["state"],
        "TASK_STATE_REJECTED"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn an_admitted_request_records_its_lineage_and_the_fan_out_is_capped() {
    let server = serve(4, 1).await;
    let admitted = task(
        &rpc(&server, &delegated("SendMessage", "p-ext", None, 1))
            .await
            .json(),
    );
    assert_eq!(
        admitted["status"]["state"], "TASK_STATE_COMPLETED",
        "{admitted}"
    );
    let metadata = &admitted["metadata"];
    assert_eq!(metadata["a2aflow/parentExecutionId"], "p-ext", "{admitted}");
    assert_eq!(
        metadata["a2aflow/rootExecutionId"],
        Value::Null,
        "{admitted}"
    );
    assert_eq!(metadata["a2aflow/depth"], 1, "{admitted}");
    let again = task(
        &rpc(&server, &delegated("SendMessage", "p-ext", None, 1))
            .await
            .json(),
    );
    assert_eq!(
        again["metadata"]["a2aflow/refusalReason"], "fanout_exceeded",
        "{again}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_request_whose_ancestry_holds_the_served_workflow_is_a_cycle() {
    let server = serve(4, 16).await;
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": { "message": {
        "messageId": "root", "role": "ROLE_USER", "parts": [{ "text": "root" }] } } });
    let root = task(&rpc(&server, &body).await.json());
    let root_id = root["id"].as_str().unwrap();
    let cycle = task(
        &rpc(&server, &delegated("SendMessage", root_id, None, 1))
            .await
            .json(),
    );
    assert_eq!(
        cycle["metadata"]["a2aflow/refusalReason"], "cycle_detected",
        "{cycle}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_malformed_request_is_a_validation_error() {
    let server = serve(4, 16).await;
    let bad = rpc(&server, &delegated("SendMessage", "p", None, 0))
        .await
        .json();
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert_eq!(
        bad["error"]["data"][0]["metadata"]["errors"][0]["field"], "message.metadata.a2aflow/depth",
        "{bad}"
    );
    server.shutdown().await;
}
