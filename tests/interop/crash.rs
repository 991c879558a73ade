//! Crash and resume against the Python peer, on both bindings: the real `a2aflow run --store`
//! is killed with SIGKILL while the peer's `wait` task runs, and `a2aflow runs resume` (without
//! `--resend`, straight to the peer) finds the task again and finishes the run with its result.
//! Killed before the host learned the task's id (a relay withholds the peer's answer), the task
//! is found through ListTasks by its context id; killed after, through GetTask. Either way the
//! peer holds exactly one task for the context, COMPLETED, and nothing was sent twice.

use crate::host::{Host, Running, agent_args, cli_binary};
use crate::peer::Peer;
use crate::relay::Relay;
use a2aflow::model::a2a::{ListTasksRequest, Task, TaskState};
use a2aflow::protocol::{Binding, CallOptions, HttpClient, connect};
use a2aflow::testkit::list_in_context;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long the peer's task works: long enough for a kill and a resume to land while it runs.
const WAIT: &str = "wait 3";

/// A hang guard for the polls of this test, never a timing assertion.
const GUARD: Duration = Duration::from_secs(30);

/// What the host process knew when it was killed.
#[derive(Clone, Copy, PartialEq)]
enum KillAt {
    /// The write-ahead record is journaled, the answer naming the task never arrived.
    ContextOnly,
    /// The remote task id is journaled.
    RemoteTaskKnown,
}

/// The workflow: one step, one `wait` task on the peer.
fn write_workflow(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("interop-crash.json");
    let workflow = json!({"id": "interop-crash", "name": "interop-crash", "steps": [
        {"name": "slow", "subtasks": [{"agent": "peer", "description": WAIT}]}
    ]});
    std::fs::write(&path, workflow.to_string()).unwrap();
    path
}

/// The engine configuration: one binding, a short lease (the killed host's lapses quickly),
/// the shortest poll.
fn write_config(dir: &Path, binding: &str) -> std::path::PathBuf {
    let path = dir.join("engine.toml");
    let text =
        format!("bindings = [\"{binding}\"]\nstore_lease_secs = 0.3\npoll_interval_ms = 100\n");
    std::fs::write(&path, text).unwrap();
    path
}

/// A directory holding the peer's card with every interface moved to the relay, for the first
/// run's `--agents-dir`: the host reaches the peer only through the relay.
fn relayed_card(dir: &Path, peer: &Peer, relay: &Relay) -> std::path::PathBuf {
    let cards = dir.join("cards");
    std::fs::create_dir(&cards).unwrap();
    let mut card = serde_json::to_value(&peer.card).unwrap();
    card["name"] = json!("peer");
    for interface in card["supportedInterfaces"].as_array_mut().unwrap() {
        let url = interface["url"].as_str().unwrap().to_owned();
        interface["url"] = json!(url.replacen(&peer.base_url, &relay.base_url, 1));
    }
    std::fs::write(cards.join("peer.json"), card.to_string()).unwrap();
    cards
}

/// The run's one task in `runs show`.
fn the_task(view: &Value) -> Value {
    let tasks = view["tasks"].as_array().cloned().unwrap_or_default();
    assert!(tasks.len() <= 1, "one task in the run: {view}");
    tasks.into_iter().next().unwrap_or(Value::Null)
}

/// The peer's tasks for `context_id` (ListTasks, straight to the peer).
async fn peer_tasks(peer: &Peer, context_id: &str) -> Vec<Task> {
    let client = HttpClient::new().unwrap();
    let transport = connect(&peer.card, &client, &[Binding::JsonRpc]).unwrap();
    let request = ListTasksRequest {
        page_size: Some(50),
        ..list_in_context(context_id)
    };
    let options = CallOptions::default().with_timeout(Duration::from_secs(5));
    transport
        .list_tasks(&request, &options)
        .await
        .expect("ListTasks on the peer")
        .tasks
}

/// Polls `runs show` (and the peer) until the kill point is reached: the journaled task's
/// context id, and then either the peer holding its task (the host cannot know its id: the
/// relay withholds it) or the journaled remote task id. Returns the journaled task.
async fn reach(host: &Host, running: &mut Running, peer: &Peer, at: KillAt) -> Value {
    let id = running
        .execution_id
        .clone()
        .expect("the run printed its id");
    let guard = Instant::now() + GUARD;
    loop {
        assert!(running.is_running(), "the run ended before the kill point");
        assert!(Instant::now() < guard, "the kill point was never reached");
        let view = tokio::task::block_in_place(|| host.try_show(&id));
        let task = the_task(&view.unwrap_or_default());
        if let Some(ctx) = task["contextId"].as_str() {
            let reached = match at {
                KillAt::ContextOnly => !peer_tasks(peer, ctx).await.is_empty(),
                KillAt::RemoteTaskKnown => task["remoteTaskId"].is_string(),
            };
            if reached {
                return task;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn crash_and_resume(binding: &str, at: KillAt) {
    let peer = Peer::start().await;
    let relay = Relay::start(peer.base_url.trim_start_matches("http://").to_owned()).await;
    let dir = tempfile::tempdir().unwrap();
    let workflow = write_workflow(dir.path());
    let config = write_config(dir.path(), binding);
    let store = dir.path().join("runs.db");
    let first_args = match at {
        KillAt::ContextOnly => vec![
            "--agents-dir".to_owned(),
            relayed_card(dir.path(), &peer, &relay)
                .display()
                .to_string(),
        ],
        KillAt::RemoteTaskKnown => agent_args([("peer", peer.base_url.clone())]),
    };
    let bin = cli_binary();
    let first = Host {
        bin: bin.clone(),
        workflow: workflow.clone(),
        store: store.clone(),
        config: config.clone(),
        args: first_args,
    };
    // The resume goes straight to the peer; its wire log shows what it sent.
    let mut args = agent_args([("peer", peer.base_url.clone())]);
    args.push("--wire-log".to_owned());
    let second = Host {
        bin,
        workflow,
        store,
        config,
        args,
    };

    let mut running = tokio::task::block_in_place(|| first.start());
    let id = running
        .execution_id
        .clone()
        .expect("the run printed its id");
    let before = reach(&first, &mut running, &peer, at).await;
    running.kill();
    let ctx = before["contextId"].as_str().unwrap().to_owned();
    if at == KillAt::ContextOnly {
        assert!(
            before["remoteTaskId"].is_null(),
            "{binding}: the relay withheld the task id, yet it was journaled: {before}"
        );
    }

    let resumed = tokio::task::block_in_place(|| second.resume(&id, false));
    assert_eq!(resumed.code, Some(0), "{binding}: {}", resumed.stderr);
    let result = resumed.result.expect("the resumed run's result");
    assert_eq!(result["success"], true, "{binding}: {result}");
    let task = &result["steps"][0]["taskResults"][0];
    assert_eq!(task["status"], "COMPLETED", "{binding}: {task}");
    assert_eq!(
        task["outputs"][0]["parts"][0]["text"], WAIT,
        "{binding}: {task}"
    );
    assert_eq!(task["contextId"], ctx.as_str(), "{binding}: {task}");

    let after = the_task(&tokio::task::block_in_place(|| second.show(&id)));
    assert_eq!(after["contextId"], ctx.as_str(), "{binding}: {after}");
    let remote = after["remoteTaskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{binding}: the resume journaled the remote task id: {after}"));
    assert_eq!(task["remoteTaskId"], remote, "{binding}");

    let tasks = peer_tasks(&peer, &ctx).await;
    assert_eq!(
        tasks.len(),
        1,
        "{binding}: one task for the context: {tasks:#?}"
    );
    assert_eq!(tasks[0].id, remote, "{binding}");
    assert_eq!(tasks[0].status.state, TaskState::Completed, "{binding}");

    // Nothing was sent twice: the first run sent once (through the relay when it was in the
    // way), the resume not at all.
    if at == KillAt::ContextOnly {
        assert_eq!(
            relay.sends_with(""),
            1,
            "{binding}: the sends through the relay"
        );
        assert_eq!(
            relay.sends_with(&ctx),
            1,
            "{binding}: the send of the context"
        );
    }
    // The way back to the task: ListTasks by the context id only when the id was never known.
    let listed = ["\"ListTasks\"", "/tasks?contextId="]
        .iter()
        .any(|m| resumed.stderr.contains(m));
    assert_eq!(
        listed,
        at == KillAt::ContextOnly,
        "{binding}: ListTasks in the resume's wire log:\n{}",
        resumed.stderr
    );
    for marker in [
        "message:send",
        "message:stream",
        "SendMessage",
        "SendStreamingMessage",
    ] {
        assert!(
            !resumed.stderr.contains(marker),
            "{binding}: the resume sent `{marker}`:\n{}",
            resumed.stderr
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_before_the_task_id_found_by_context_jsonrpc() {
    crash_and_resume("jsonrpc", KillAt::ContextOnly).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_before_the_task_id_found_by_context_rest() {
    crash_and_resume("rest", KillAt::ContextOnly).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_the_task_id_found_by_id_jsonrpc() {
    crash_and_resume("jsonrpc", KillAt::RemoteTaskKnown).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_the_task_id_found_by_id_rest() {
    crash_and_resume("rest", KillAt::RemoteTaskKnown).await;
}
