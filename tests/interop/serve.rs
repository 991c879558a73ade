//! The official Python SDK's client (`serve_client.py`) drives `a2aflow serve` over JSON-RPC,
//! HTTP+JSON and gRPC (the same port, the workflow named by the card's tenant): send blocking and streaming, get, list by context, cancel, a gate answered by a
//! follow-up and a refused delegation request. The served `slow` workflow waits on a testkit
//! agent's slow task, so its run is cancelled while it works; the served `ask` workflow's remote
//! task asks for input.

use crate::host::cli_binary;
use crate::peer::python;
use a2aflow::testkit::{AgentSpec, TestServer};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const QUICK: &str = r#"{"id": "quick-id", "name": "quick", "description": "Summarises its input at once.",
 "steps": [{"name": "sum", "type": "SELF_LOOP", "subtasks": [{"description": "summarise"}]}]}"#;

const ASK: &str = r#"{"id": "ask-id", "name": "ask", "description": "Its agent asks back.",
 "steps": [{"name": "ask", "subtasks": [{"agent": "worker", "description": "input please"}]}]}"#;

const SLOW: &str = r#"{"id": "slow-id", "name": "slow", "description": "Waits on a slow agent.",
 "steps": [{"name": "wait", "subtasks": [{"agent": "worker", "description": "slow 30"}]}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_drives_a2aflow_serve() {
    let py = python();
    let worker = TestServer::builder()
        .agent(AgentSpec::new("worker"))
        .spawn()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let quick = dir.path().join("quick.json");
    let slow = dir.path().join("slow.json");
    std::fs::write(&quick, QUICK).unwrap();
    std::fs::write(&slow, SLOW).unwrap();
    let ask = dir.path().join("ask.json");
    std::fs::write(&ask, ASK).unwrap();
    let mut server = Command::new(cli_binary())
        .arg("serve")
        .arg("--workflow")
        .arg(&quick)
        .arg("--workflow")
        .arg(&slow)
        .arg("--workflow")
        .arg(&ask)
        .arg("--agent")
        .arg(format!("worker={}", worker.agent_url("worker")))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let mut agents = HashMap::new();
    for _ in 0..3 {
        let line = lines.next().expect("a card line").unwrap();
        let (name, card) = line.split_once(' ').expect("NAME CARD_URL");
        let base = card.trim_end_matches("/.well-known/agent-card.json");
        agents.insert(name.to_owned(), base.to_owned());
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/interop/serve_client.py");
    let client = tokio::task::spawn_blocking({
        let (quick, slow) = (agents["quick"].clone(), agents["slow"].clone());
        let ask = agents["ask"].clone();
        move || {
            Command::new(py)
                .arg(script)
                .arg(quick)
                .arg(slow)
                .arg(ask)
                .stdin(Stdio::null())
                .output()
                .unwrap()
        }
    });
    let out = tokio::time::timeout(std::time::Duration::from_secs(120), client)
        .await
        .expect("the client finishes")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let checks: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let check = |name: &str| -> &Value {
            checks
                .iter()
                .find(|c| c["binding"] == binding && c["check"] == name)
                .unwrap_or_else(|| panic!("{binding} {name} in {stdout}"))
        };
        let send = check("send");
        assert_eq!(send["state"], "TASK_STATE_COMPLETED", "{send}");
        assert_eq!(send["contextId"], send["id"], "{send}");
        assert_eq!(send["status"], "SUCCEEDED", "{send}");
        let artifact = format!("{}/result", send["id"].as_str().unwrap());
        assert_eq!(send["artifacts"], serde_json::json!([artifact]), "{send}");
        assert_eq!(check("get")["state"], "TASK_STATE_COMPLETED");
        let list = check("list");
        let mut sent: Vec<Value> = list["sent"].as_array().unwrap().clone();
        sent.reverse();
        assert_eq!(list["listed"], Value::Array(sent), "newest first: {list}");
        assert_eq!(list["total"], 2, "{list}");
        assert_eq!(list["next"], "", "{list}");
        let stream = check("stream");
        assert_eq!(stream["kinds"][0], "task", "{stream}");
        assert_eq!(stream["last"], "TASK_STATE_COMPLETED", "{stream}");
        assert!(
            stream["kinds"]
                .as_array()
                .unwrap()
                .contains(&Value::from("artifact_update")),
            "{stream}"
        );
        let cancel = check("cancel");
        assert_eq!(cancel["after"], "TASK_STATE_CANCELED", "{cancel}");
        let gate = check("gate");
        assert_eq!(gate["gated"], "TASK_STATE_INPUT_REQUIRED", "{gate}");
        assert_eq!(
            gate["said"],
            serde_json::json!(["need more input: send a follow-up message on this task"]),
            "{gate}"
        );
        assert_eq!(gate["answered"], "TASK_STATE_COMPLETED", "{gate}");
        assert_eq!(gate["sameTask"], true, "{gate}");
        assert_eq!(gate["refused"], "UnsupportedOperationError", "{gate}");
        let refused = check("refused");
        assert_eq!(refused["state"], "TASK_STATE_REJECTED", "{refused}");
        assert_eq!(refused["reason"], "depth_exceeded", "{refused}");
        assert_eq!(refused["hasExecutionId"], false, "{refused}");
        assert_eq!(refused["contextId"], "py-root", "{refused}");
    }
    let status = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let stopped = tokio::task::spawn_blocking(move || server.wait_with_output().unwrap());
    let stopped = tokio::time::timeout(std::time::Duration::from_secs(60), stopped)
        .await
        .expect("the server stops")
        .unwrap();
    assert_eq!(
        stopped.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&stopped.stderr)
    );
    worker.shutdown().await.unwrap();
}
