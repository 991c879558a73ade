//! Per-step and per-subtask timeouts against the testkit (`slow N`): a slow subtask times out
//! alone with `workflow.timeout` naming it while its sibling finishes; a step timeout bounds
//! every subtask of the step; both stay inside the run's deadline.

use crate::context_ids::two_bindings;
use crate::retries::Verbatim;
use a2aflow::kernel::RunInput;
use a2aflow::model::{ExecutionResult, LoadOptions, TaskOutcomeStatus, load_workflow_str};
use a2aflow::{EngineConfig, HostHooks, execute_workflow, fetch_agent_cards};
use a2aflow_testkit::{Route, TestServer};
use std::sync::Arc;

async fn run(server: &TestServer, text: &str) -> ExecutionResult {
    let config = EngineConfig::default();
    let urls = [server.card_url("rpc"), server.card_url("rest")];
    let cards = fetch_agent_cards(&urls, &config).await.unwrap();
    server.clear_requests();
    let workflow = load_workflow_str(text, LoadOptions::STRICT)
        .unwrap()
        .workflow;
    execute_workflow(
        workflow,
        &cards,
        Arc::new(Verbatim),
        &config,
        RunInput::default(),
        HostHooks::default(),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn a_slow_subtask_times_out_alone_while_its_sibling_finishes() {
    let server = two_bindings().await;
    let result = run(
        &server,
        r#"{"steps": [{"name": "ask", "subtasks": [
          {"agent": "rpc", "description": "slow 30 please", "timeout": 0.3},
          {"agent": "rest", "description": "slow 0.6 then done"}]}]}"#,
    )
    .await;
    let views = &result.steps[0].task_results;
    let slow = &views[0];
    assert_eq!(slow.status, TaskOutcomeStatus::Failed, "{slow:?}");
    assert_eq!(slow.error_code.as_deref(), Some("workflow.timeout"));
    let message = slow.error.as_deref().unwrap();
    assert!(
        message.contains("subtask #0 (agent 'rpc') of step 'ask'") && message.contains("0.3 s"),
        "{message}"
    );
    assert_eq!(slow.error_details["localTaskId"], slow.task_id.as_str());
    assert_eq!(slow.error_details["timeoutOf"], "subtask");
    assert_eq!(slow.error_details["timeoutMs"], 300);
    // The sibling outlived the slow task's timeout and finished.
    assert_eq!(
        views[1].status,
        TaskOutcomeStatus::Completed,
        "{:?}",
        views[1]
    );
    // The step failed because of that one task, not the run's deadline.
    let failure = result.failure.unwrap();
    assert_eq!(failure.code, "workflow.step_failed", "{failure}");
    // The timed-out remote task got its best-effort CancelTask.
    let cancels: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.route == Some(Route::Cancel))
        .map(|r| r.agent)
        .collect();
    assert_eq!(cancels, [Some("rpc".to_owned())]);
}

#[tokio::test]
async fn a_step_timeout_bounds_every_subtask_of_the_step() {
    let server = two_bindings().await;
    let result = run(
        &server,
        r#"{"steps": [{"name": "ask", "timeout": 0.3, "subtasks": [
          {"agent": "rpc", "description": "slow 30 a"},
          {"agent": "rest", "description": "slow 30 b", "timeout": 20}]}]}"#,
    )
    .await;
    for v in &result.steps[0].task_results {
        assert_eq!(v.error_code.as_deref(), Some("workflow.timeout"), "{v:?}");
        assert_eq!(v.error_details["timeoutOf"], "step", "{v:?}");
        assert!(v.error.as_deref().unwrap().contains("its step's timeout"));
    }
}

#[tokio::test]
async fn a_subtask_timeout_beyond_the_run_deadline_leaves_the_run_deadline_in_charge() {
    let server = two_bindings().await;
    let config = EngineConfig::from_toml_str("[timeouts]\nrun_secs = 0.4\n").unwrap();
    let urls = [server.card_url("rpc"), server.card_url("rest")];
    let cards = fetch_agent_cards(&urls, &config).await.unwrap();
    let workflow = load_workflow_str(
        r#"{"steps": [{"name": "ask", "subtasks": [
          {"agent": "rpc", "description": "slow 30 a", "timeout": 60}]}]}"#,
        LoadOptions::STRICT,
    )
    .unwrap()
    .workflow;
    let result = execute_workflow(
        workflow,
        &cards,
        Arc::new(Verbatim),
        &config,
        RunInput::default(),
        HostHooks::default(),
    )
    .await
    .unwrap();
    let failure = result.failure.unwrap();
    assert_eq!(failure.code, "workflow.timeout", "{failure}");
    assert!(failure.message.contains("run's deadline"), "{failure}");
}
