//! Independence from workflow traffic: a workflow run through the kernel with the engine client
//! gives identical results with and without an open subscription, and no TCP connection ever
//! carries both (a loopback proxy records each client connection's bytes by peer address).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::*;
use a2aflow_engine::{A2aEngineClient, ClientConfig};
use a2aflow_extensions::{Ended, ExtensionConfig, ExtensionSender};
use a2aflow_kernel::{CallbackError, ControlPoint, RunInput, RunOptions};
use a2aflow_model::a2a::AgentCard;
use a2aflow_model::{
    ExecutionResult, LoadOptions, MessageContent, TaskRequest, load_workflow_value,
};
use a2aflow_protocol::{Binding, HttpClient, connect};
use a2aflow_testkit::{AgentSpec, TestServer};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Client→server bytes of every connection through the proxy, by the client's address.
type Log = Arc<Mutex<HashMap<SocketAddr, Vec<u8>>>>;

async fn proxy(upstream: SocketAddr) -> (SocketAddr, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log: Log = Arc::default();
    let sink = Arc::clone(&log);
    tokio::spawn(async move {
        while let Ok((client, peer)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(upstream).await else {
                continue;
            };
            let sink = Arc::clone(&sink);
            tokio::spawn(async move {
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let down = tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut sr, &mut cw).await;
                    let _ = cw.shutdown().await;
                });
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = match cr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    sink.lock()
                        .unwrap()
                        .entry(peer)
                        .or_default()
                        .extend_from_slice(&buf[..n]);
                    if sw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
                let _ = sw.shutdown().await;
                let _ = down.await;
            });
        }
    });
    (addr, log)
}

/// The card with every interface URL pointed at the proxy.
fn via(mut card: AgentCard, server: &TestServer, proxy: SocketAddr) -> AgentCard {
    let from = server.base_url().to_owned();
    let to = format!("http://{proxy}");
    for i in &mut card.supported_interfaces {
        i.url = i.url.replace(&from, &to);
    }
    card
}

struct EchoHost;

#[async_trait]
impl ControlPoint for EchoHost {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(request.description))
    }
}

async fn run_workflow(card: &AgentCard) -> ExecutionResult {
    let http = HttpClient::new().unwrap();
    let transport = connect(card, &http, Binding::DEFAULT_PREFERENCE).unwrap();
    let client = A2aEngineClient::new(ClientConfig::default())
        .unwrap()
        .with_agent(card, transport)
        .unwrap();
    let workflow = load_workflow_value(
        &json!({
            "id": "wf", "name": "isolation",
            "steps": [{"name": "all", "type": "ALL_SUCCESS", "subtasks": [
                {"agent": "w", "description": "task wfmarker one"},
                {"agent": "w", "description": "task wfmarker two"},
                {"agent": "w", "description": "slow 0.2 wfmarker three"}
            ]}]
        }),
        LoadOptions::LENIENT,
    )
    .unwrap()
    .workflow;
    let options = RunOptions {
        timeout: Duration::from_secs(20),
        ..RunOptions::default()
    };
    a2aflow_kernel::run(
        workflow,
        RunInput::default(),
        Arc::new(EchoHost),
        Arc::new(client),
        options,
    )
    .await
}

/// What must not change: per step, per subtask, the agent, status and outputs (ids aside).
fn projection(r: &ExecutionResult) -> Value {
    let mut steps: Vec<Value> = r
        .steps
        .iter()
        .map(|s| {
            let mut tasks: Vec<Value> = s
                .task_results
                .iter()
                .map(|t| {
                    // artifact ids are minted by the agent per task; the content must match
                    let outputs: Vec<Value> = t
                        .outputs
                        .iter()
                        .map(|o| {
                            let mut v = json!(o);
                            if let Some(m) = v.as_object_mut() {
                                m.remove("artifactId");
                            }
                            v
                        })
                        .collect();
                    json!({"agent": t.agent_name, "description": t.task_description,
                        "status": t.status, "outputs": outputs, "error": t.error_code})
                })
                .collect();
            tasks.sort_by_key(|v| v["description"].to_string());
            json!({"step": s.step_name, "status": s.status, "tasks": tasks})
        })
        .collect();
    steps.sort_by_key(|v| v["step"].to_string());
    json!({"success": r.success, "failure": r.failure, "steps": steps, "skipped": r.skipped_steps})
}

fn contains(bytes: &[u8], needle: &str) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn a_workflow_is_unaffected_by_an_open_subscription_and_shares_no_connection_with_it() {
    let server = TestServer::builder()
        .agent(AgentSpec::new("w"))
        .agent(agent("notif", &[NOTIF, AUTH]))
        .spawn()
        .await
        .unwrap();
    let (proxy_addr, log) = proxy(server.addr()).await;
    let wcard = via(card(&server, "w").await, &server, proxy_addr);
    let ncard = via(card(&server, "notif").await, &server, proxy_addr);

    let alone = run_workflow(&wcard).await;
    assert!(alone.success, "{:?}", alone.failure);

    let sender = ExtensionSender::new(
        [&ncard],
        &crate::support::channels(),
        ExtensionConfig::default(),
    )
    .unwrap();
    // An authorization first leaves an idle keep-alive connection in the sender's pool: a shared
    // pool would hand it to the workflow.
    let out = sender
        .send_authorization("notif", auth_content("approve"))
        .await
        .unwrap();
    assert!(out.is_success());
    let (seen, listener) = recorder();
    let sub = sender
        .open_notification("notif", notif_content("events 3"), listener)
        .unwrap();
    sub.acknowledgement().await.unwrap();

    let with_subscription = run_workflow(&wcard).await;
    assert_eq!(projection(&with_subscription), projection(&alone));
    // The workflow's own remote traffic never closed or disturbed the subscription.
    assert!(sub.is_active());
    assert!(seen.lock().unwrap().len() >= 4);
    sub.close();
    assert_eq!(sub.completion().await.unwrap(), Ended::Closed);

    let log = log.lock().unwrap().clone();
    let mut ext = 0;
    let mut wf = 0;
    for (peer, bytes) in log.iter() {
        let is_ext = contains(bytes, "Notification-T") || contains(bytes, "Authorization-T");
        let is_wf = contains(bytes, "wfmarker");
        assert!(
            !(is_ext && is_wf),
            "connection {peer} carried both kinds of traffic"
        );
        ext += usize::from(is_ext);
        wf += usize::from(is_wf);
    }
    assert!(ext >= 1 && wf >= 1, "ext {ext} wf {wf}");
    server.shutdown().await.unwrap();
}
