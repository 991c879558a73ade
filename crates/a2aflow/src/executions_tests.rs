//! `execution_view`: the pure fold of a journal into what `get_execution` shows.

use super::*;
use a2aflow_kernel::RunOptions;
use a2aflow_kernel::journal::{Answer, JournalEntry, RunStarted, TaskIntent, TaskKey};
use a2aflow_model::{
    ExecutionResult, MessageContent, StepType, TaskResult, TaskResultView, Workflow,
};
use serde_json::json;

const ID: &str = "run-1";

fn workflow() -> Workflow {
    serde_json::from_value(json!({
        "id": "wf-1", "name": "orders",
        "steps": [
            {"name": "charge", "stepType": "ALL_SUCCESS",
             "subtasks": [{"agent": "billing", "skill": "charge", "description": "charge"}]},
            {"name": "note", "stepType": "SELF_LOOP",
             "subtasks": [{"agent": "", "skill": "", "description": "note"}]}
        ]
    }))
    .unwrap()
}

fn journal(records: Vec<JournalRecord>) -> RunJournal {
    let started = RunStarted::new(
        ID,
        &workflow(),
        Some("ship it".into()),
        &RunOptions::default(),
        1_000,
    )
    .unwrap();
    let entries = std::iter::once(JournalRecord::RunStarted(started))
        .chain(records)
        .enumerate()
        .map(|(seq, record)| JournalEntry {
            seq: seq as u64,
            record,
        })
        .collect();
    RunJournal {
        execution_id: ID.into(),
        entries,
    }
}

fn intent(attempt: u32) -> JournalRecord {
    JournalRecord::TaskIntent(TaskIntent {
        step: "charge".into(),
        subtask_index: 0,
        local_task_id: "run-1:charge:0".into(),
        agent: "billing".into(),
        skill: "charge".into(),
        attempt,
        message_id: format!("m-{attempt}"),
        context_id: "ctx-1".into(),
        content: MessageContent::text("charge 10"),
    })
}

fn remote_known() -> JournalRecord {
    JournalRecord::RemoteTaskKnown {
        local_task_id: "run-1:charge:0".into(),
        remote_task_id: "t-9".into(),
    }
}

fn failed_task() -> TaskResultView {
    serde_json::from_value(json!({
        "agentName": "billing", "skill": "charge", "taskId": "run-1:charge:0",
        "taskDescription": "charge", "status": "FAILED", "contextId": "ctx-1",
        "remoteTaskId": "t-9", "error": "card declined", "errorCode": "a2a.task_failed"
    }))
    .unwrap()
}

fn failed_step() -> StepResult {
    StepResult {
        step_name: "charge".into(),
        step_type: StepType::AllSuccess,
        status: StepStatus::Failed,
        task_results: vec![failed_task()],
        failure: Some(Failure::new(ErrorCode::WorkflowStepFailed, "charge failed")),
    }
}

#[test]
fn an_unfinished_run_is_running_with_a_live_lease_and_waiting_without() {
    let j = journal(vec![
        intent(1),
        remote_known(),
        JournalRecord::RemoteState {
            local_task_id: "run-1:charge:0".into(),
            state: TaskState::Working,
        },
    ]);
    let running = execution_view(&j, true).unwrap();
    assert_eq!(running.state, RunState::Running);
    assert_eq!(execution_view(&j, false).unwrap().state, RunState::Waiting);
    assert_eq!(running.workflow_name, "orders");
    assert_eq!(running.workflow_id, "wf-1");
    assert_eq!(running.runtime_intent.as_deref(), Some("ship it"));
    assert_eq!(running.started_at_ms, 1_000);
    assert_eq!(running.deadline_ms, 1_000 + 600_000);
    assert_eq!(running.steps.len(), 1);
    assert_eq!(running.steps[0].status, Progress::Running);
    let task = &running.tasks[0];
    assert_eq!(task.local_task_id, "run-1:charge:0");
    assert_eq!(task.step.as_deref(), Some("charge"));
    assert_eq!(task.agent, "billing");
    assert_eq!(task.context_id.as_deref(), Some("ctx-1"));
    assert_eq!(task.message_id.as_deref(), Some("m-1"));
    assert_eq!(task.remote_task_id.as_deref(), Some("t-9"));
    assert_eq!(task.remote_state, Some(TaskState::Working));
    assert_eq!(task.status, Progress::Running);
    assert_eq!(task.error_code, None);
}

#[test]
fn a_failed_run_shows_the_codes_of_its_run_step_and_task() {
    let failure = Failure::new(ErrorCode::WorkflowStepFailed, "step charge failed");
    let j = journal(vec![
        intent(1),
        intent(2),
        remote_known(),
        JournalRecord::TaskFinished {
            local_task_id: "run-1:charge:0".into(),
            result: failed_task(),
        },
        JournalRecord::StepFinished {
            result: failed_step(),
        },
        JournalRecord::RunFinished {
            result: ExecutionResult {
                execution_id: ID.into(),
                workflow_id: "wf-1".into(),
                success: false,
                failure: Some(failure.clone()),
                steps: vec![failed_step()],
                skipped_steps: vec!["note".into()],
            },
        },
    ]);
    // A finished run's state does not depend on a lease.
    let view = execution_view(&j, true).unwrap();
    assert_eq!(view.state, RunState::Failed);
    assert_eq!(view.failure, Some(failure));
    assert_eq!(view.skipped_steps, vec!["note".to_owned()]);
    assert_eq!(view.steps[0].status, Progress::Failed);
    assert_eq!(
        view.steps[0].error_code.as_deref(),
        Some("workflow.step_failed")
    );
    assert_eq!(view.tasks.len(), 1);
    let task = &view.tasks[0];
    assert_eq!(task.attempt, 2);
    assert_eq!(task.message_id.as_deref(), Some("m-2"));
    assert_eq!(task.status, Progress::Failed);
    assert_eq!(task.error_code.as_deref(), Some("a2a.task_failed"));
    assert_eq!(task.error.as_deref(), Some("card declined"));
}

#[test]
fn a_local_task_and_a_cancel_request_are_shown() {
    let key = TaskKey {
        step: "note".into(),
        subtask_index: 0,
        local_task_id: "run-1:note:0".into(),
        attempt: 1,
    };
    let j = journal(vec![
        JournalRecord::CallbackAnswered(CallbackAnswered::OnSelfTask {
            key,
            answer: Answer::Value(TaskResult::default()),
        }),
        JournalRecord::CancelRequested {
            local_task_id: None,
            remote_task_id: None,
        },
        JournalRecord::CancelRequested {
            local_task_id: Some("run-1:charge:0".into()),
            remote_task_id: Some("t-9".into()),
        },
    ]);
    let view = execution_view(&j, false).unwrap();
    assert!(view.cancel_requested);
    assert_eq!(view.steps[0].name, "note");
    assert_eq!(view.tasks[0].local_task_id, "run-1:note:0");
    assert_eq!(view.tasks[0].context_id, None);
    assert!(!view.tasks[0].cancel_requested);
    assert_eq!(view.tasks[1].local_task_id, "run-1:charge:0");
    assert!(view.tasks[1].cancel_requested);
}

#[test]
fn the_json_has_a_top_level_state_and_every_task_its_ids() {
    let view = execution_view(&journal(vec![intent(1)]), false).unwrap();
    let doc = serde_json::to_value(&view).unwrap();
    assert_eq!(doc["state"], "waiting");
    assert_eq!(doc["executionId"], ID);
    let task = &doc["tasks"][0];
    assert_eq!(task["localTaskId"], "run-1:charge:0");
    assert_eq!(task["contextId"], "ctx-1");
    // Unknown ids are present as null, so scripts can read every key.
    assert_eq!(task["remoteTaskId"], serde_json::Value::Null);
    assert_eq!(task["status"], "RUNNING");
    let back: ExecutionView = serde_json::from_value(doc).unwrap();
    assert_eq!(back, view);
}

#[test]
fn what_a_finished_run_left_without_a_result_is_unfinished() {
    let cancelled = Failure::new(ErrorCode::WorkflowCancelled, "cancelled");
    let j = journal(vec![
        intent(1),
        JournalRecord::RunFinished {
            result: ExecutionResult {
                execution_id: ID.into(),
                workflow_id: "wf-1".into(),
                success: false,
                failure: Some(cancelled),
                steps: Vec::new(),
                skipped_steps: Vec::new(),
            },
        },
    ]);
    let view = execution_view(&j, false).unwrap();
    assert_eq!(view.state, RunState::Cancelled);
    assert_eq!(view.steps[0].status, Progress::Unfinished);
    assert_eq!(view.tasks[0].status, Progress::Unfinished);
    // Before the run finished the same task is running.
    let mut open = j.clone();
    open.entries.pop();
    assert_eq!(
        execution_view(&open, false).unwrap().tasks[0].status,
        Progress::Running
    );
}

#[test]
fn a_journal_without_its_first_record_is_corrupt() {
    let mut j = journal(vec![intent(1)]);
    j.entries.remove(0);
    let e = execution_view(&j, false).unwrap_err();
    assert!(e.is(ErrorCode::StoreCorrupt), "{e}");
}
