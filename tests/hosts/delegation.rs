//! A parent `a2aflow run` delegates a step to a workflow served by `a2aflow serve` in another
//! process; the serving process is SIGKILLed while the child run waits on its agent and is
//! started again on the same store and port: the child run is resumed, the parent's wait
//! re-attaches to the remote task, and the child's result arrives as the parent's outputs.

use crate::host::cli_binary;
use crate::served::{HANG, Served, file, free_port, sends, strings, wait_until};
use a2aflow::testkit::{AgentSpec, TestServer};
use serde_json::Value;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = r#"{"id": "child-id", "name": "child", "description": "Works on a slow agent.",
 "steps": [{"name": "work", "subtasks": [{"agent": "beta", "description": "slow 4 child work"}]}]}"#;

const PARENT: &str = r#"{"id": "parent-id", "name": "parent", "description": "Delegates to the child.",
 "steps": [{"name": "delegate", "subtasks": [{"agent": "child", "description": "please work"}]}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_run_re_attaches_to_a_served_child_across_a_server_restart() {
    let agents = TestServer::builder()
        .agent(AgentSpec::new("beta").streaming(true))
        .spawn()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let child = file(dir.path(), "child.json", CHILD);
    let parent = file(dir.path(), "parent.json", PARENT);
    let serve_config = file(dir.path(), "serve.toml", "store_lease_secs = 0.5\n");
    // The parent's wait polls once a second after its stream drops (three failed polls in a
    // row end the task): the restarted server has seven seconds to come back.
    let parent_config = file(dir.path(), "parent.toml", "poll_interval_ms = 1000\n");
    let store = dir.path().join("child.db").display().to_string();
    let log = dir.path().join("serve.log");
    let listen = format!("127.0.0.1:{}", free_port());
    let beta = format!("beta={}", agents.agent_url("beta"));
    let args = strings(&[
        "--workflow",
        &child,
        "--agent",
        &beta,
        "--store",
        &store,
        "--config",
        &serve_config,
        "--listen",
        &listen,
    ]);
    let first = Served::start(&args, 1, &log);
    let child_agent = format!("child={}", first.card("child"));
    let run = parent_run(&parent, &child_agent, &parent_config);
    assert!(
        wait_until(|| agents.task_count("beta") == 1).await,
        "the child run's task never reached its agent"
    );
    first.kill();
    let again = Served::start(&args, 1, &log);

    let out = finished(run).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{stderr}\n{}",
        log_of(&log)
    );
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["success"], true, "{result:#}");
    // The parent's one task holds the child's result document: the child run's own result,
    // with the child workflow's id and its step.
    let task = &result["steps"][0]["taskResults"][0];
    let outputs = task["outputs"].to_string();
    assert!(outputs.contains("child-id"), "{task:#}");
    assert!(outputs.contains("\"work\""), "{task:#}");
    assert_eq!(
        sends(&agents, "beta"),
        1,
        "the child's business command was sent once"
    );
    assert_eq!(agents.task_count("beta"), 1);
    again.stop();
}

/// Starts `a2aflow run PARENT --agent CHILD --config CONFIG --format json`.
fn parent_run(parent: &str, child_agent: &str, config: &str) -> Child {
    Command::new(cli_binary())
        .args(["run", parent, "--agent", child_agent, "--format", "json"])
        .args(["--config", config])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (bounded) for `run` to exit; its output.
async fn finished(run: Child) -> Output {
    tokio::task::spawn_blocking(move || {
        let guard = Instant::now() + HANG;
        let mut run = run;
        while run.try_wait().unwrap().is_none() {
            if Instant::now() > guard {
                let _ = run.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        run.wait_with_output().unwrap()
    })
    .await
    .unwrap()
}

fn log_of(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The served workflow `child` on one server calls the served workflow `leaf` on another.
const MIDDLE: &str = r#"{"id": "middle-id", "name": "middle", "description": "Calls the leaf.",
 "steps": [{"name": "pass", "subtasks": [{"agent": "leaf", "description": "leaf work"}]}]}"#;

const LEAF: &str = r#"{"id": "leaf-id", "name": "leaf", "description": "Works alone.",
 "steps": [{"name": "alone", "type": "SELF_LOOP", "subtasks": [{"description": "summarise"}]}]}"#;

const TOP: &str = r#"{"id": "top-id", "name": "top", "description": "Calls the middle.",
 "steps": [{"name": "call", "subtasks": [{"agent": "middle", "description": "middle work"}]}]}"#;

/// `a2aflow run top` → server 1's `middle` → server 2's `leaf` (started with `leaf_args`):
/// the parent's output, server 1's and server 2's clients, the servers and the logs' dir.
struct Chain {
    out: Output,
    middle: Served,
    leaf: Served,
    dir: tempfile::TempDir,
}

async fn chain(leaf_args: &[&str]) -> Chain {
    let dir = tempfile::tempdir().unwrap();
    let leaf_file = file(dir.path(), "leaf.json", LEAF);
    let middle_file = file(dir.path(), "middle.json", MIDDLE);
    let top = file(dir.path(), "top.json", TOP);
    let config = file(dir.path(), "run.toml", "");
    let mut args = strings(&["--workflow", &leaf_file]);
    args.extend(strings(leaf_args));
    let leaf = Served::start(&args, 1, &dir.path().join("leaf.log"));
    let to_leaf = format!("leaf={}", leaf.card("leaf"));
    let middle = Served::start(
        &strings(&["--workflow", &middle_file, "--agent", &to_leaf]),
        1,
        &dir.path().join("middle.log"),
    );
    let to_middle = format!("middle={}", middle.card("middle"));
    let out = finished(parent_run(&top, &to_middle, &config)).await;
    Chain {
        out,
        middle,
        leaf,
        dir,
    }
}

/// The tasks served workflow `name` of `served` lists.
async fn listed(served: &Served, name: &str) -> Vec<a2aflow::model::a2a::Task> {
    let rpc = crate::served::client(served.card(name), a2aflow::protocol::Binding::JsonRpc).await;
    rpc.list_tasks(
        &a2aflow::testkit::list_all(),
        &a2aflow::protocol::CallOptions::default(),
    )
    .await
    .unwrap()
    .tasks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lineage_goes_hop_by_hop_across_two_servers() {
    let chain = chain(&["--max-depth", "2"]).await;
    let stdout = String::from_utf8_lossy(&chain.out.stdout);
    assert_eq!(chain.out.status.code(), Some(0), "{stdout}");
    let result: Value = serde_json::from_str(&stdout).unwrap();
    let root = result["executionId"].as_str().unwrap();
    let middle = listed(&chain.middle, "middle").await;
    assert_eq!(middle.len(), 1);
    let meta = middle[0].metadata.clone().unwrap_or_default();
    assert_eq!(meta["a2aflow/parentExecutionId"], root, "{meta:?}");
    assert_eq!(
        meta["a2aflow/rootExecutionId"],
        Value::Null,
        "the parent is the root"
    );
    assert_eq!(meta["a2aflow/depth"], 1);
    let leaf = listed(&chain.leaf, "leaf").await;
    assert_eq!(leaf.len(), 1);
    let meta = leaf[0].metadata.clone().unwrap_or_default();
    assert_eq!(meta["a2aflow/parentExecutionId"], middle[0].id.as_str());
    assert_eq!(meta["a2aflow/rootExecutionId"], root);
    assert_eq!(meta["a2aflow/depth"], 2);
    assert_eq!(meta["a2aflow/flowId"], "leaf-id");
    chain.middle.stop();
    chain.leaf.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_deeper_than_a_servers_max_depth_is_refused_there() {
    let chain = chain(&["--max-depth", "1"]).await;
    let stdout = String::from_utf8_lossy(&chain.out.stdout);
    assert_ne!(chain.out.status.code(), Some(0), "{stdout}");
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["success"], false, "{result:#}");
    // Nothing ran on the leaf's server: the request (depth 2) was refused before a run existed.
    assert!(listed(&chain.leaf, "leaf").await.is_empty());
    let log = log_of(&chain.dir.path().join("leaf.log"));
    assert!(log.contains("depth_exceeded"), "{log}");
    let middle = listed(&chain.middle, "middle").await;
    assert_eq!(middle.len(), 1);
    assert_eq!(
        middle[0].status.state,
        a2aflow::model::a2a::TaskState::Failed,
        "{:?}",
        middle[0]
    );
    chain.middle.stop();
    chain.leaf.stop();
}

/// Server A's `ping` calls server B's `pong`, which calls A's `ping` back.
const PING: &str = r#"{"id": "ping-id", "name": "ping", "description": "Calls pong.",
 "steps": [{"name": "out", "subtasks": [{"agent": "pong", "description": "to pong"}]}]}"#;

const PONG: &str = r#"{"id": "pong-id", "name": "pong", "description": "Calls ping back.",
 "steps": [{"name": "back", "subtasks": [{"agent": "ping", "description": "to ping"}]}]}"#;

/// The card URL `a2aflow serve --listen ADDR` publishes for workflow `name`.
fn card_at(addr: &str, name: &str) -> String {
    format!("http://{addr}/agents/{name}/.well-known/agent-card.json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_that_call_each_other_both_start_and_the_cycle_is_refused_by_the_roots_ancestry()
 {
    let dir = tempfile::tempdir().unwrap();
    let ping = file(dir.path(), "ping.json", PING);
    let pong = file(dir.path(), "pong.json", PONG);
    let (a_addr, b_addr) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let a_log = dir.path().join("a.log");
    // A starts first, while B does not listen yet: its agent `pong` is discovered later.
    let to_pong = format!("pong={}", card_at(&b_addr, "pong"));
    let a = Served::start(
        &strings(&[
            "--workflow",
            &ping,
            "--agent",
            &to_pong,
            "--listen",
            &a_addr,
        ]),
        1,
        &a_log,
    );
    assert_eq!(a.card("ping"), card_at(&a_addr, "ping"));
    let to_ping = format!("ping={}", a.card("ping"));
    let b = Served::start(
        &strings(&[
            "--workflow",
            &pong,
            "--agent",
            &to_ping,
            "--listen",
            &b_addr,
        ]),
        1,
        &dir.path().join("b.log"),
    );

    // A client starts `ping` on A: ping → B's pong → A's ping again, which A refuses: the
    // request's root is the first ping run, whose workflow is the one asked for.
    let rpc = crate::served::client(a.card("ping"), a2aflow::protocol::Binding::JsonRpc).await;
    let message = a2aflow::model::a2a::Message::new(
        a2aflow::model::a2a::Role::User,
        vec![a2aflow::model::a2a::Part::text("go")],
    );
    let request = a2aflow::model::a2a::SendMessageRequest {
        message,
        configuration: None,
        metadata: None,
        tenant: None,
    };
    let answered = tokio::time::timeout(
        HANG,
        rpc.send_message(&request, &a2aflow::protocol::CallOptions::default()),
    )
    .await
    .expect("the run ends")
    .unwrap();
    let a2aflow::model::a2a::SendMessageResponse::Task(root) = answered else {
        panic!("a task, got {answered:?}");
    };
    assert_eq!(
        root.status.state,
        a2aflow::model::a2a::TaskState::Failed,
        "{root:?}\n{}",
        log_of(&a_log)
    );
    // A ran ping once: the call back was refused before a run existed.
    let pings = listed(&a, "ping").await;
    assert_eq!(pings.len(), 1, "{pings:?}");
    assert_eq!(pings[0].id, root.id);
    let log = log_of(&a_log);
    assert!(log.contains("cycle_detected"), "{log}");
    // B's pong ran as ping's child and failed on the refusal.
    let pongs = listed(&b, "pong").await;
    assert_eq!(pongs.len(), 1, "{pongs:?}");
    let meta = pongs[0].metadata.clone().unwrap_or_default();
    assert_eq!(meta["a2aflow/parentExecutionId"], root.id.as_str());
    assert_eq!(meta["a2aflow/depth"], 1);
    assert_eq!(
        pongs[0].status.state,
        a2aflow::model::a2a::TaskState::Failed
    );
    a.stop();
    b.stop();
}

const UP: &str = r#"{"id": "up-id", "name": "up", "description": "Calls the leaf.",
 "steps": [{"name": "call", "subtasks": [{"agent": "leaf", "description": "leaf work"}]}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_run_delegates_to_a_served_workflow_over_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let leaf_file = file(dir.path(), "leaf.json", LEAF);
    let up = file(dir.path(), "up.json", UP);
    let leaf = Served::start(
        &strings(&["--workflow", &leaf_file]),
        1,
        &dir.path().join("leaf.log"),
    );
    let to_leaf = format!("leaf={}", leaf.card("leaf"));
    let run = Command::new(cli_binary())
        .args(["run", &up, "--agent", &to_leaf, "--binding", "grpc"])
        .args(["--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = finished(run).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["success"], true, "{result:#}");
    let outputs = result["steps"][0]["taskResults"][0]["outputs"].to_string();
    assert!(
        outputs.contains("leaf-id"),
        "the child's result document: {outputs}"
    );
    // The delegation request metadata went over gRPC with the task.
    let tasks = listed(&leaf, "leaf").await;
    assert_eq!(tasks.len(), 1);
    let meta = tasks[0].metadata.clone().unwrap_or_default();
    assert_eq!(
        meta["a2aflow/parentExecutionId"], result["executionId"],
        "{meta:?}"
    );
    assert_eq!(meta["a2aflow/depth"], 1);
    leaf.stop();
}
