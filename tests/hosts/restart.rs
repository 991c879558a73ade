//! `a2aflow serve --store` SIGKILLed while its run waits on a slow agent, then started again on
//! the same store: the run is resumed, and the client re-attaches (GetTask, SubscribeToTask,
//! ListTasks by context) and sees it finish; the agent got its business command once.

use crate::served::{HANG, Served, client, file, sends, strings};
use a2aflow::model::a2a::{
    GetTaskRequest, Message, Part, Role, SendMessageConfiguration, SendMessageRequest,
    SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task, TaskState,
};
use a2aflow::protocol::{Binding, CallOptions, Transport};
use a2aflow::testkit::list_in_context;
use a2aflow::testkit::{AgentSpec, TestServer};
use futures_util::StreamExt;
use std::sync::Arc;

const RELAY: &str = r#"{"id": "relay-id", "name": "relay", "description": "Waits on a slow agent.",
 "steps": [{"name": "ask", "subtasks": [{"agent": "beta", "description": "slow 4 relay"}]}]}"#;

pub fn get(id: &str) -> GetTaskRequest {
    GetTaskRequest {
        id: id.to_owned(),
        history_length: None,
        tenant: None,
    }
}

/// Waits (bounded) until GetTask shows task `id` in a terminal state; returns it.
pub async fn settled(rpc: &Arc<dyn Transport>, id: &str) -> Task {
    let guard = tokio::time::Instant::now() + HANG;
    loop {
        let task = rpc
            .get_task(&get(id), &CallOptions::default())
            .await
            .unwrap();
        if task.status.state.is_terminal() {
            return task;
        }
        assert!(tokio::time::Instant::now() < guard, "task {id} never ended");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_resumes_its_run_and_the_client_re_attaches() {
    let agents = TestServer::builder()
        .agent(AgentSpec::new("beta").streaming(true))
        .spawn()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let workflow = file(dir.path(), "relay.json", RELAY);
    // A short lease: the killed process's runs can be taken over half a second after it died.
    let config = file(dir.path(), "engine.toml", "store_lease_secs = 0.5\n");
    let store = dir.path().join("runs.db").display().to_string();
    let log = dir.path().join("serve.log");
    let beta = format!("beta={}", agents.agent_url("beta"));
    let args = strings(&[
        "--workflow",
        &workflow,
        "--agent",
        &beta,
        "--store",
        &store,
        "--config",
        &config,
    ]);

    let first = Served::start(&args, 1, &log);
    let rpc = client(first.card("relay"), Binding::JsonRpc).await;
    let mut message = Message::new(Role::User, vec![Part::text("relay this")]);
    message.context_id = Some("ctx-restart".into());
    let request = SendMessageRequest {
        message,
        configuration: Some(SendMessageConfiguration {
            accepted_output_modes: None,
            task_push_notification_config: None,
            history_length: None,
            return_immediately: Some(true),
        }),
        metadata: None,
        tenant: None,
    };
    let SendMessageResponse::Task(task) = rpc
        .send_message(&request, &CallOptions::default())
        .await
        .unwrap()
    else {
        panic!("a task");
    };
    assert!(
        crate::served::wait_until(|| agents.task_count("beta") == 1).await,
        "the served run's task never reached the agent"
    );
    first.kill();

    let again = Served::start(&args, 1, &log);
    let rest = client(again.card("relay"), Binding::HttpJson).await;
    let got = rest
        .get_task(&get(&task.id), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(got.context_id, "ctx-restart");
    assert_ne!(got.status.state, TaskState::Failed, "{got:?}");
    // SubscribeToTask follows the resumed run to its end (unless it ended in between, which
    // the SDK's refusal of a terminal task says).
    match rest
        .subscribe_to_task(
            &SubscribeToTaskRequest {
                id: task.id.clone(),
                tenant: None,
            },
            &CallOptions::default(),
        )
        .await
    {
        Ok(mut stream) => {
            let mut last = None;
            while let Some(event) = tokio::time::timeout(HANG, stream.next())
                .await
                .expect("the stream ends with the run")
            {
                last = Some(match event.unwrap() {
                    StreamResponse::Task(t) => t.status.state,
                    StreamResponse::StatusUpdate(u) => u.status.state,
                    _ => continue,
                });
            }
            assert_eq!(last, Some(TaskState::Completed));
        }
        Err(e) => assert!(e.to_string().contains("terminal state"), "{e}"),
    }
    let done = settled(&rest, &task.id).await;
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    assert_eq!(done.artifacts.as_ref().map(Vec::len), Some(1), "{done:?}");
    let listed = rpc_of(&again)
        .await
        .list_tasks(&list_in_context("ctx-restart"), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(listed.total_size, 1);
    assert_eq!(listed.tasks[0].id, task.id);
    assert_eq!(listed.tasks[0].status.state, TaskState::Completed);
    assert_eq!(
        sends(&agents, "beta"),
        1,
        "the business command was sent once"
    );
    assert_eq!(agents.task_count("beta"), 1);
    again.stop();
}

async fn rpc_of(served: &Served) -> Arc<dyn Transport> {
    client(served.card("relay"), Binding::JsonRpc).await
}
