//! Agents discovered after the server listens (`ServerBuilder::discover_agents`): a server
//! whose agent does not answer yet starts anyway; a run that cannot wait longer for its agent
//! fails (typed, logged) instead of hanging; once the agent answers, runs go through.

use crate::support::{HANG, Host, builder, client, message, send, workflow};
use a2a::{SendMessageResponse, TaskState};
use a2aflow::kernel::{CallbackError, ControlPoint};
use a2aflow::model::{LoadOptions, MessageContent, TaskRequest, load_workflow_str};
use a2aflow::protocol::{Binding, CallOptions};
use a2aflow_server::{Limits, Server};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// A free loopback address (bound and let go), for a server that starts later.
fn free_addr() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// The front server's host: each remote task is sent with its description as the text.
struct Relay;

#[async_trait::async_trait]
impl ControlPoint for Relay {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(request.description))
    }
}

fn state(response: SendMessageResponse) -> TaskState {
    match response {
        SendMessageResponse::Task(t) => t.status.state,
        SendMessageResponse::Message(m) => panic!("a task, got {m:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_starts_before_its_agent_and_its_runs_go_through_once_the_agent_answers() {
    let later = free_addr();
    let relay = load_workflow_str(
        &json!({
            "id": "relay-id", "name": "relay", "description": "Calls the echo server.",
            "steps": [{ "name": "call", "subtasks": [{ "agent": "peer", "description": "hi" }] }]
        })
        .to_string(),
        LoadOptions::default(),
    )
    .unwrap()
    .workflow;
    let peer_card = format!("http://{later}/agents/echo/.well-known/agent-card.json");
    let mut limits = Limits::default();
    limits.discovery_wait = Duration::from_millis(300);
    let front = Server::builder()
        .workflow(relay)
        .discover_agents(vec![("peer".to_owned(), peer_card)], |cards| {
            assert_eq!(cards.len(), 1);
            assert_eq!(cards[0].name, "peer", "a card is named as the agent");
            Arc::new(Relay) as Arc<dyn ControlPoint>
        })
        .limits(limits)
        .start()
        .await
        .expect("the server starts while its agent does not answer");
    let rpc = client(&front, "relay", Binding::JsonRpc).await;
    let opts = CallOptions::default();
    let first = rpc
        .send_message(&send(message("too early"), false), &opts)
        .await
        .unwrap();
    assert_eq!(state(first), TaskState::Failed, "no agent, no hang");

    let echo = builder(Arc::new(Host::default()))
        .listen(later)
        .start()
        .await
        .unwrap();
    assert_eq!(echo.agent_names(), ["echo"]);
    // Discovery retries with a growing pause: the runs go through once it found the agent.
    let through = async {
        loop {
            let answer = rpc
                .send_message(&send(message("now"), false), &opts)
                .await
                .unwrap();
            if state(answer) == TaskState::Completed {
                return;
            }
        }
    };
    tokio::time::timeout(HANG, through)
        .await
        .expect("a run goes through once the agent answers");
    front.shutdown().await;
    echo.shutdown().await;
}

#[tokio::test]
async fn a_server_needs_a_control_point_or_agents_to_discover() {
    let refused = Server::builder().workflow(workflow("echo")).start().await;
    let e = refused.expect_err("no ControlPoint");
    assert_eq!(e.code.to_string(), "config.invalid");
    assert!(e.message.contains("discover_agents"), "{e}");
}

#[tokio::test]
async fn a_workflow_naming_an_agent_not_to_be_discovered_is_refused() {
    let relay = load_workflow_str(
        &json!({
            "id": "relay-id", "name": "relay",
            "steps": [{ "name": "call", "subtasks": [{ "agent": "nobody", "description": "hi" }] }]
        })
        .to_string(),
        LoadOptions::default(),
    )
    .unwrap()
    .workflow;
    let refused = Server::builder()
        .workflow(relay)
        .discover_agents(
            vec![("peer".to_owned(), "http://127.0.0.1:1/".to_owned())],
            |_| Arc::new(Host::default()) as Arc<dyn ControlPoint>,
        )
        .start()
        .await;
    let e = refused.expect_err("an unknown agent");
    assert_eq!(e.code.to_string(), "workflow.unknown_agent");
}
