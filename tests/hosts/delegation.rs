//! A parent `a2aflow run` delegates a step to a workflow served by `a2aflow serve` in another
//! process; the serving process is SIGKILLed while the child run waits on its agent and is
//! started again on the same store and port: the child run is resumed, the parent's wait
//! re-attaches to the remote task, and the child's result arrives as the parent's outputs.

use crate::host::cli_binary;
use crate::served::{HANG, Served, file, free_port, sends, strings, wait_until};
use a2aflow::testkit::{AgentSpec, TestServer};
use serde_json::Value;
use std::process::{Command, Stdio};
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
    let run = Command::new(cli_binary())
        .args(["run", &parent, "--agent", &child_agent, "--format", "json"])
        .args(["--config", &parent_config])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        wait_until(|| agents.task_count("beta") == 1).await,
        "the child run's task never reached its agent"
    );
    first.kill();
    let again = Served::start(&args, 1, &log);

    let out = tokio::task::spawn_blocking(move || {
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
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}\n{}", log_of(&log));
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["success"], true, "{result:#}");
    // The parent's one task holds the child's result document: the child run's own result,
    // with the child workflow's id and its step.
    let task = &result["steps"][0]["tasks"][0];
    let outputs = task["outputs"].to_string();
    assert!(outputs.contains("child-id"), "{task:#}");
    assert!(outputs.contains("\"work\""), "{task:#}");
    assert_eq!(sends(&agents, "beta"), 1, "the child's business command was sent once");
    assert_eq!(agents.task_count("beta"), 1);
    again.stop();
}

fn log_of(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
