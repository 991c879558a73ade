//! Retries: the default policy of `[retry]`, and through `execute_workflow` against the testkit
//! (its `flaky N` behaviour fails until N earlier attempts are referenced), every attempt in the
//! same context, `referenceTaskIds` chaining them, attempts bounded by the policy and the
//! deadline.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::context_ids::{sent_messages, two_bindings};
use a2aflow::kernel::{CallbackError, ControlPoint, RunInput, RunOptions};
use a2aflow::model::{
    Event, EventKind, ExecutionResult, LoadOptions, MessageContent, TaskOutcomeStatus, TaskRequest,
    TaskResult, TaskResultView, load_workflow_str,
};
use a2aflow::{EngineConfig, HostHooks, execute_workflow, fetch_agent_cards};
use a2aflow_testkit::TestServer;
use serde_json::Value;

#[test]
fn the_default_policy_comes_from_toml_and_json_with_the_workflow_shape() {
    let toml = EngineConfig::from_toml_str(
        "[retry]\nattempts = 3\non = [\"a2a.task_failed\"]\n[retry.backoff]\ninitial = 0.2\nmax = 1\n",
    )
    .unwrap();
    let json = EngineConfig::from_json_str(
        r#"{"retry": {"attempts": 3, "on": ["a2a.task_failed"], "backoff": {"initial": 0.2, "max": 1}}}"#,
    )
    .unwrap();
    let policy = toml.retry_policy().unwrap().unwrap();
    assert_eq!(json.retry_policy().unwrap(), Some(policy.clone()));
    assert_eq!(policy.attempts, 3);
    assert_eq!(policy.backoff.initial, Duration::from_millis(200));
    assert_eq!(policy.backoff.max, Duration::from_secs(1));
    assert_eq!(policy.backoff.multiplier, 2.0);
    assert_eq!(EngineConfig::default().retry_policy().unwrap(), None);
}

#[test]
fn a_default_policy_naming_a_code_no_attempt_can_change_is_config_invalid() {
    let err = EngineConfig::from_toml_str("[retry]\nattempts = 2\non = [\"a2a.task_rejected\"]\n")
        .unwrap_err();
    assert_eq!(err.code, "config.invalid", "{err}");
    assert!(err.message.contains("retry.on.0"), "{err}");
    assert!(err.message.contains("a2a.task_rejected"), "{err}");
    let err = EngineConfig::from_toml_str("[retry]\nattempts = 2\nfactor = 2\n").unwrap_err();
    assert_eq!(err.code, "config.invalid", "{err}");
}

/// Sends each subtask's description as its text.
pub struct Verbatim;

#[async_trait::async_trait]
impl ControlPoint for Verbatim {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(request.description))
    }
    async fn on_self_task(&self, _: TaskRequest) -> Result<TaskResult, CallbackError> {
        Ok(TaskResult::default())
    }
}

/// A one-step workflow sending `description` to agent `rpc` and `rest`, each with `retry`.
fn workflow(description: &str, retry: &str) -> a2aflow::model::Workflow {
    let subtask = |agent: &str| {
        let retry = if retry.is_empty() {
            String::new()
        } else {
            format!(", \"retry\": {retry}")
        };
        format!("{{\"agent\": \"{agent}\", \"description\": \"{description}\"{retry}}}")
    };
    let text = format!(
        "{{\"steps\": [{{\"name\": \"ask\", \"subtasks\": [{}, {}]}}]}}",
        subtask("rpc"),
        subtask("rest")
    );
    load_workflow_str(&text, LoadOptions::STRICT)
        .unwrap()
        .workflow
}

/// Runs `workflow` against both agents of `server` with `config`; the result and its events.
async fn run(
    server: &TestServer,
    workflow: a2aflow::model::Workflow,
    config: &EngineConfig,
) -> (ExecutionResult, Vec<Event>) {
    let urls = [server.card_url("rpc"), server.card_url("rest")];
    let cards = fetch_agent_cards(&urls, config).await.unwrap();
    server.clear_requests();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let hooks = HostHooks {
        run_options: RunOptions {
            on_event: Some(Arc::new(move |e: &Event| {
                sink.lock().unwrap().push(e.clone())
            })),
            ..RunOptions::default()
        },
        ..HostHooks::default()
    };
    let result = execute_workflow(
        workflow,
        &cards,
        Arc::new(Verbatim),
        config,
        RunInput::default(),
        hooks,
    )
    .await
    .unwrap();
    let events = events.lock().unwrap().clone();
    (result, events)
}

fn view<'r>(result: &'r ExecutionResult, agent: &str) -> &'r TaskResultView {
    result.steps[0]
        .task_results
        .iter()
        .find(|v| v.agent_name == agent)
        .unwrap()
}

/// The messages agent `agent` received, in order.
fn received(server: &TestServer, agent: &str) -> Vec<Value> {
    sent_messages(server)
        .into_iter()
        .filter(|(a, _)| a == agent)
        .map(|(_, m)| m)
        .collect()
}

const QUICK: &str =
    r#"{"attempts": 3, "backoff": {"initial": 0.01, "max": 0.05}, "on": ["a2a.task_failed"]}"#;

#[tokio::test]
async fn failed_attempts_are_sent_again_in_the_same_context_chained_by_reference() {
    let server = two_bindings().await;
    let (result, events) = run(
        &server,
        workflow("flaky 2 please", QUICK),
        &EngineConfig::default(),
    )
    .await;
    assert!(result.success, "{:#?}", result.failure);
    for agent in ["rpc", "rest"] {
        let v = view(&result, agent);
        assert_eq!(
            (v.status, v.attempts),
            (TaskOutcomeStatus::Completed, 3),
            "{agent}"
        );
        let sent = received(&server, agent);
        assert_eq!(sent.len(), 3, "{agent}: {sent:?}");
        for m in &sent {
            assert_eq!(m["contextId"].as_str(), v.context_id.as_deref(), "{agent}");
            assert!(
                m.get("taskId").is_none(),
                "{agent}: a retry starts a new task"
            );
        }
        let ids: std::collections::HashSet<&str> = sent
            .iter()
            .map(|m| m["messageId"].as_str().unwrap())
            .collect();
        assert_eq!(ids.len(), 3, "{agent}: every attempt has its own messageId");
        // The task_retry events name each failed attempt's remote task; the next attempt
        // references every earlier one, oldest first.
        let retries: Vec<&Event> = events
            .iter()
            .filter(|e| e.kind == EventKind::TaskRetry && e.data["agent"] == agent)
            .collect();
        assert_eq!(retries.len(), 2, "{agent}");
        let failed: Vec<Value> = retries
            .iter()
            .map(|e| e.data["remoteTaskId"].clone())
            .collect();
        assert!(failed.iter().all(Value::is_string), "{failed:?}");
        assert!(sent[0].get("referenceTaskIds").is_none(), "{agent}");
        assert_eq!(
            sent[1]["referenceTaskIds"],
            Value::Array(failed[..1].to_vec())
        );
        assert_eq!(sent[2]["referenceTaskIds"], Value::Array(failed.clone()));
        for (n, e) in retries.iter().enumerate() {
            assert_eq!(e.data["attempt"], n + 1);
            assert_eq!(e.data["maxAttempts"], 3);
            assert_eq!(e.data["code"], "a2a.task_failed");
            assert!(e.data["delayMs"].as_u64().unwrap() <= 50);
        }
    }
    // The result's JSON carries the attempts.
    let json = serde_json::to_value(view(&result, "rpc")).unwrap();
    assert_eq!(json["attempts"], 3);
}

#[tokio::test]
async fn attempts_stop_at_the_policy_bound_with_the_last_failure() {
    let server = two_bindings().await;
    let (result, _) = run(
        &server,
        workflow("flaky 5 please", QUICK),
        &EngineConfig::default(),
    )
    .await;
    assert!(!result.success);
    for agent in ["rpc", "rest"] {
        let v = view(&result, agent);
        assert_eq!(v.error_code.as_deref(), Some("a2a.task_failed"), "{v:?}");
        assert_eq!(v.attempts, 3);
        assert_eq!(received(&server, agent).len(), 3, "{agent}");
    }
}

#[tokio::test]
async fn without_a_policy_a_failure_is_sent_once_and_the_json_has_no_attempts() {
    let server = two_bindings().await;
    let (result, events) = run(
        &server,
        workflow("flaky 1 please", ""),
        &EngineConfig::default(),
    )
    .await;
    assert!(!result.success);
    let v = view(&result, "rpc");
    assert_eq!(v.attempts, 1);
    assert!(serde_json::to_value(v).unwrap().get("attempts").is_none());
    assert_eq!(received(&server, "rpc").len(), 1);
    assert!(events.iter().all(|e| e.kind != EventKind::TaskRetry));
}

#[tokio::test]
async fn a_policy_without_codes_retries_only_transient_failures() {
    let server = two_bindings().await;
    let policy = r#"{"attempts": 3, "backoff": {"initial": 0.01}}"#;
    let (result, _) = run(
        &server,
        workflow("flaky 1 please", policy),
        &EngineConfig::default(),
    )
    .await;
    // a2a.task_failed is not transient: one attempt.
    assert_eq!(view(&result, "rpc").attempts, 1);
    assert_eq!(received(&server, "rest").len(), 1);
}

#[tokio::test]
async fn the_configured_default_policy_applies_to_subtasks_without_one() {
    let server = two_bindings().await;
    let config = EngineConfig::from_toml_str(
        "[retry]\nattempts = 2\non = [\"a2a.task_failed\"]\n[retry.backoff]\ninitial = 0.01\n",
    )
    .unwrap();
    let (result, _) = run(&server, workflow("flaky 1 please", ""), &config).await;
    assert!(result.success, "{:#?}", result.failure);
    assert_eq!(view(&result, "rest").attempts, 2);
}

#[tokio::test]
async fn no_attempt_starts_after_the_deadline() {
    let server = two_bindings().await;
    let config = EngineConfig::from_toml_str("[timeouts]\nrun_secs = 1\n").unwrap();
    let policy = r#"{"attempts": 50, "backoff": {"initial": 0.3, "multiplier": 1}, "on": ["a2a.task_failed"]}"#;
    let (result, _) = run(&server, workflow("flaky 100 please", policy), &config).await;
    for agent in ["rpc", "rest"] {
        let v = view(&result, agent);
        // The task ends with its last attempt's failure, not the run's timeout: the wait that
        // would have ended past the deadline was not begun.
        assert_eq!(v.error_code.as_deref(), Some("a2a.task_failed"), "{v:?}");
        assert!((2..50).contains(&v.attempts), "{v:?}");
        assert_eq!(received(&server, agent).len() as u32, v.attempts, "{agent}");
    }
}

#[tokio::test]
async fn every_attempt_is_journaled_with_its_number_in_the_one_context() {
    use a2aflow::kernel::journal::JournalRecord;
    let server = two_bindings().await;
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        store: Some(
            a2aflow::StoreLocation::parse(dir.path().join("runs.db").to_str().unwrap()).unwrap(),
        ),
        ..EngineConfig::default()
    };
    let (result, _) = run(&server, workflow("flaky 2 please", QUICK), &config).await;
    assert!(result.success, "{:#?}", result.failure);
    let store = config.open_store().await.unwrap().unwrap();
    let journal = store.load(&result.execution_id).await.unwrap();
    let v = view(&result, "rpc");
    let intents: Vec<(u32, String)> = journal
        .entries
        .iter()
        .filter_map(|e| match &e.record {
            JournalRecord::TaskIntent(i) if i.local_task_id == v.task_id => {
                Some((i.attempt, i.context_id.clone()))
            }
            _ => None,
        })
        .collect();
    let context = v.context_id.clone().unwrap();
    assert_eq!(
        intents,
        [(1, context.clone()), (2, context.clone()), (3, context)]
    );
}
