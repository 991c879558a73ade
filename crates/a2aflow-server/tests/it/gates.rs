//! A served run parked at a gate: INPUT_REQUIRED / AUTH_REQUIRED on the wire with the agent's
//! status message, and a follow-up SendMessage on the task that answers the gate.

use crate::support::{HANG, Raw, raw};
use a2aflow::kernel::{CallbackError, ControlPoint};
use a2aflow::model::{LoadOptions, MessageContent, TaskRequest, Workflow, load_workflow_str};
use a2aflow::testkit::{AgentSpec, TestServer};
use a2aflow::{EngineConfig, discover_agents};
use a2aflow_server::{Server, ServerHandle};
use serde_json::{Value, json};
use std::sync::Arc;

const ASKING: &str = "need more input: send a follow-up message on this task";

/// The host: each remote task is sent with its subtask's description as the text.
struct Asker;

#[async_trait::async_trait]
impl ControlPoint for Asker {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(request.description))
    }
}

/// The served workflow `ask`: one step whose task goes to the testkit's `worker` with `text`.
fn asking(text: &str) -> Workflow {
    let text = json!({
        "id": "ask-id",
        "name": "ask",
        "description": "Asks its worker, who asks back.",
        "steps": [{ "name": "ask", "subtasks": [{ "agent": "worker", "description": text }] }]
    })
    .to_string();
    load_workflow_str(&text, LoadOptions::default())
        .unwrap()
        .workflow
}

/// A server publishing `ask` in front of a testkit worker.
async fn serve(text: &str) -> (ServerHandle, TestServer) {
    let worker = TestServer::builder()
        .agent(AgentSpec::new("worker"))
        .spawn()
        .await
        .unwrap();
    let config = EngineConfig::default();
    let agents = discover_agents(&[("worker", worker.agent_url("worker"))], &config)
        .await
        .unwrap();
    let server = Server::builder()
        .workflow(asking(text))
        .control_point(Arc::new(Asker))
        .agents(agents)
        .config(config)
        .start()
        .await
        .unwrap();
    (server, worker)
}

async fn call(server: &ServerHandle, method: &str, params: Value) -> Raw {
    let body = json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params });
    raw(
        server,
        "POST",
        "/agents/ask/jsonrpc",
        &[("A2A-Version", "1.0"), ("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
    .await
}

fn message(text: &str, task: Option<&str>, context: Option<&str>) -> Value {
    let mut m = json!({ "messageId": uuid(), "role": "ROLE_USER", "parts": [{ "text": text }] });
    if let Some(task) = task {
        m["taskId"] = json!(task);
    }
    if let Some(context) = context {
        m["contextId"] = json!(context);
    }
    json!({ "message": m })
}

fn uuid() -> String {
    format!("m-{}", std::process::id()) + &rand_suffix()
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst).to_string()
}

/// The SSE events of a streamed answer, as JSON-RPC results.
fn events(raw: &Raw) -> Vec<Value> {
    raw.body
        .split("\r\n\r\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(|d| serde_json::from_str::<Value>(d).unwrap()["result"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gated_run_is_input_required_and_a_follow_up_answers_it() {
    let (server, worker) = serve("input please").await;
    let sent = call(&server, "SendMessage", message("start", None, None)).await;
    let task = sent.json()["result"]["task"].clone();
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{task}"
    );
    let id = task["id"].as_str().unwrap().to_owned();
    let context = task["contextId"].as_str().unwrap().to_owned();
    let said = &task["status"]["message"];
    assert_eq!(said["role"], "ROLE_AGENT", "{task}");
    assert_eq!(said["parts"], json!([{ "text": ASKING }]), "{task}");
    assert_eq!(said["taskId"], json!(id));
    assert_eq!(said["contextId"], json!(context));
    assert_eq!(task["metadata"]["a2aflow/status"], "WAITING_FOR_HUMAN");

    let got = call(&server, "GetTask", json!({ "id": id })).await.json();
    assert_eq!(got["result"]["status"], task["status"], "{got}");
    let listed = call(&server, "ListTasks", json!({})).await.json();
    assert_eq!(
        listed["result"]["tasks"][0]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );

    let elsewhere = call(
        &server,
        "SendMessage",
        message("here", Some(&id), Some("other-ctx")),
    )
    .await;
    assert_eq!(
        elsewhere.json()["error"]["message"],
        format!("Context other-ctx does not match context {context} of task {id}")
    );

    let answered = call(
        &server,
        "SendMessage",
        message("here it is", Some(&id), Some(&context)),
    )
    .await;
    let done = answered.json()["result"]["task"].clone();
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(done["id"], json!(id));
    assert!(done["status"].get("message").is_none(), "{done}");
    let result = &done["artifacts"][0]["parts"][0]["data"];
    assert!(
        result.to_string().contains("here it is"),
        "the agent's answer to the follow-up is the result: {done}"
    );

    let again = call(&server, "SendMessage", message("more", Some(&id), None)).await;
    assert_eq!(
        again.body,
        format!(
            r#"{{"error":{{"code":-32004,"message":"Task {id} is in terminal state: TASK_STATE_COMPLETED","data":[{{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"UNSUPPORTED_OPERATION","domain":"a2a-protocol.org","metadata":{{}}}}]}},"id":7,"jsonrpc":"2.0"}}"#
        )
    );
    server.shutdown().await;
    worker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auth_gate_is_auth_required_and_streams_on_after_the_follow_up() {
    let (server, worker) = serve("auth please").await;
    let streamed = call(
        &server,
        "SendStreamingMessage",
        message("start", None, None),
    )
    .await;
    let opened = events(&streamed);
    assert!(opened[0].get("task").is_some(), "{opened:?}");
    let last = opened.last().unwrap();
    let status = &last["statusUpdate"]["status"];
    assert_eq!(status["state"], "TASK_STATE_AUTH_REQUIRED", "{opened:?}");
    assert!(
        status["message"]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("authorization required"),
        "{last}"
    );
    let id = last["statusUpdate"]["taskId"].as_str().unwrap().to_owned();

    let follow = tokio::time::timeout(
        HANG,
        call(
            &server,
            "SendStreamingMessage",
            message("token", Some(&id), None),
        ),
    )
    .await
    .unwrap();
    let on = events(&follow);
    assert_eq!(
        on[0]["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING",
        "a follow-up stream opens with a status update, as the SDK's: {on:?}"
    );
    let end = &on.last().unwrap()["statusUpdate"]["status"]["state"];
    assert_eq!(end, "TASK_STATE_COMPLETED", "{on:?}");
    server.shutdown().await;
    worker.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_follow_up_on_a_task_at_no_gate_is_refused() {
    let (server, _host) = crate::support::serve().await;
    let body = json!({ "jsonrpc": "2.0", "id": 3, "method": "SendMessage",
        "params": { "message": { "messageId": "m1", "role": "ROLE_USER", "parts": [{ "text": "slow" }] },
                    "configuration": { "returnImmediately": true } } });
    let sent = crate::support::rpc(&server, &body).await.json();
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    let follow = json!({ "jsonrpc": "2.0", "id": 4, "method": "SendMessage",
        "params": { "message": { "messageId": "m2", "role": "ROLE_USER", "parts": [{ "text": "x" }], "taskId": id } } });
    let refused = crate::support::rpc(&server, &follow).await.json();
    assert_eq!(refused["error"]["code"], -32004, "{refused}");
    server.shutdown().await;
}

/// A server on `store` and `index` publishing `ask` in front of `worker_url`.
async fn serve_durable(
    worker_url: String,
    store: &std::path::Path,
    index: &std::path::Path,
) -> ServerHandle {
    use a2aflow_store_sqlite::{SqliteStore, StoreOptions};
    let config = EngineConfig::default();
    let agents = discover_agents(&[("worker", worker_url)], &config)
        .await
        .unwrap();
    // A short lease: the dead process's run can be taken over soon after it died.
    let options = StoreOptions::default().with_lease_ttl(std::time::Duration::from_millis(500));
    let store = SqliteStore::open_with(store, options).await.unwrap();
    Server::builder()
        .workflow(asking("input please"))
        .control_point(Arc::new(Asker))
        .agents(agents)
        .config(config)
        .store(Arc::new(store), index)
        .start()
        .await
        .unwrap()
}

/// The process serving a gated run dies (its runtime is dropped, nothing is released); the
/// server started again on the same store resumes the run at its gate: the task shows it, and a
/// follow-up answers it and the run completes, on the same remote task.
#[test]
fn a_gated_run_resumed_after_a_restart_takes_its_follow_up() {
    let runtime = || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    };
    let agents = runtime();
    let worker = agents.block_on(async {
        TestServer::builder()
            .agent(AgentSpec::new("worker"))
            .spawn()
            .await
            .unwrap()
    });
    let dir = tempfile::tempdir().unwrap();
    let (db, index) = (dir.path().join("runs.db"), dir.path().join("served.jsonl"));

    let dying = runtime();
    let (id, context) = dying.block_on(async {
        let server = serve_durable(worker.agent_url("worker"), &db, &index).await;
        let sent = call(&server, "SendMessage", message("start", None, None)).await;
        let task = sent.json()["result"]["task"].clone();
        assert_eq!(
            task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
            "{task}"
        );
        std::mem::forget(server);
        (
            task["id"].as_str().unwrap().to_owned(),
            task["contextId"].as_str().unwrap().to_owned(),
        )
    });
    dying.shutdown_background();

    agents.block_on(async {
        let server = serve_durable(worker.agent_url("worker"), &db, &index).await;
        let got = call(&server, "GetTask", json!({ "id": id })).await.json();
        assert_eq!(
            got["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
            "{got}"
        );
        let answered = tokio::time::timeout(
            HANG,
            call(
                &server,
                "SendMessage",
                message("here it is", Some(&id), Some(&context)),
            ),
        )
        .await
        .unwrap();
        let done = answered.json()["result"]["task"].clone();
        assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
        assert!(
            done["artifacts"][0]["parts"][0]["data"]
                .to_string()
                .contains("here it is"),
            "{done}"
        );
        assert_eq!(worker.task_count("worker"), 1, "one remote task, answered");
        server.shutdown().await;
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_grpc_a_gate_is_input_required_and_a_follow_up_answers_it() {
    use a2aflow::protocol::{Binding, CallOptions, TransportError};
    let (server, worker) = serve("input please").await;
    let rpc = crate::support::client(&server, "ask", Binding::Grpc).await;
    let opts = CallOptions::default();
    let task = |r| match r {
        Ok(a2a::SendMessageResponse::Task(t)) => t,
        other => panic!("a task, got {other:?}"),
    };
    let start = crate::support::message("start");
    let gated = task(
        rpc.send_message(&crate::support::send(start, false), &opts)
            .await,
    );
    assert_eq!(gated.status.state, a2a::TaskState::InputRequired);
    let said = gated.status.message.as_ref().expect("the agent's words");
    assert_eq!(said.parts, vec![a2a::Part::text(ASKING)]);
    let mut follow = crate::support::message("here it is");
    follow.task_id = Some(gated.id.clone());
    follow.context_id = Some(gated.context_id.clone());
    let done = task(
        rpc.send_message(&crate::support::send(follow.clone(), false), &opts)
            .await,
    );
    assert_eq!(done.id, gated.id);
    assert_eq!(done.status.state, a2a::TaskState::Completed);
    follow.message_id = "another".into();
    match rpc
        .send_message(&crate::support::send(follow, false), &opts)
        .await
    {
        Err(e @ TransportError::Remote(_)) => {
            assert_eq!(e.code_str().to_string(), "a2a.unsupported_operation");
        }
        other => panic!("a follow-up on an ended task is refused, got {other:?}"),
    }
    server.shutdown().await;
    worker.shutdown().await.unwrap();
}
