//! Shared set-up: stores in temporary directories, a run's first record, one record of each type.

use a2aflow_kernel::RunOptions;
use a2aflow_kernel::journal::{
    Answer, CallbackAnswered, JournalRecord, NegotiationKey, RouteKey, RunStarted, TaskIntent,
    TaskKey,
};
use a2aflow_model::a2a::TaskState;
use a2aflow_model::{
    ErrorCode, Event, EventKind, ExecutionResult, Failure, MessageContent, NegotiationReply,
    Output, RouteDecision, StepResult, StepStatus, StepType, TaskOutcomeStatus, TaskResult,
    TaskResultView, Workflow,
};
use serde_json::json;
use std::future::Future;

/// Runs `f` on a fresh multi-thread runtime (the store's thread answers on its own).
pub fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

pub fn workflow() -> Workflow {
    serde_json::from_value(json!({
        "id": "wf-1", "name": "orders",
        "steps": [{"name": "a", "stepType": "ALL_SUCCESS",
                   "subtasks": [{"agent": "billing", "skill": "charge", "description": "charge"}]}]
    }))
    .unwrap()
}

pub fn started(id: &str, at_ms: u64) -> RunStarted {
    RunStarted::new(
        id,
        &workflow(),
        Some("ship it".into()),
        &RunOptions::default(),
        at_ms,
    )
    .unwrap()
}

pub fn view(local: &str) -> TaskResultView {
    TaskResultView {
        agent_name: "billing".into(),
        skill: "charge".into(),
        task_id: local.into(),
        task_description: "charge".into(),
        status: TaskOutcomeStatus::Completed,
        context_id: Some("ctx-1".into()),
        remote_task_id: Some("t-1".into()),
        outputs: vec![Output::text("done")],
        received_messages: Vec::new(),
        error: None,
        error_code: None,
        error_details: serde_json::Map::new(),
    }
}

pub fn result(id: &str) -> ExecutionResult {
    ExecutionResult {
        execution_id: id.into(),
        workflow_id: "wf-1".into(),
        success: true,
        failure: None,
        steps: vec![step_result()],
        skipped_steps: vec!["b".into()],
    }
}

fn step_result() -> StepResult {
    StepResult {
        step_name: "a".into(),
        step_type: StepType::AllSuccess,
        status: StepStatus::Completed,
        task_results: vec![view("r:a:0")],
        failure: None,
    }
}

fn key(local: &str) -> TaskKey {
    TaskKey {
        step: "a".into(),
        subtask_index: 0,
        local_task_id: local.into(),
        attempt: 1,
    }
}

pub fn intent(local: &str, n: usize) -> JournalRecord {
    JournalRecord::TaskIntent(TaskIntent {
        step: "a".into(),
        subtask_index: n,
        local_task_id: local.into(),
        agent: "billing".into(),
        skill: "charge".into(),
        attempt: 1,
        message_id: format!("msg-{n}"),
        context_id: format!("ctx-{n}"),
        content: MessageContent::text(format!("charge order {n}")),
    })
}

/// One record of every type after `runStarted`, `runFinished` last.
pub fn every_record(id: &str) -> Vec<JournalRecord> {
    let local = "r:a:0";
    vec![
        JournalRecord::CallbackAnswered(CallbackAnswered::OnTask {
            key: key(local),
            answer: Answer::Value(MessageContent::text("charge")),
        }),
        JournalRecord::CallbackAnswered(CallbackAnswered::OnSelfTask {
            key: key(local),
            answer: Answer::Value(TaskResult {
                outputs: vec![Output::data(json!({"n": 1}))],
            }),
        }),
        JournalRecord::CallbackAnswered(CallbackAnswered::OnRoute {
            key: RouteKey {
                source_step: "a".into(),
                target_step: "b".into(),
            },
            answer: Answer::Failure(Failure::new(ErrorCode::WorkflowRouteFailed, "no")),
        }),
        JournalRecord::CallbackAnswered(CallbackAnswered::OnNegotiation {
            key: NegotiationKey {
                local_task_id: local.into(),
                attempt: 1,
                exchange: 1,
            },
            answer: Answer::Value(NegotiationReply::Send {
                content: MessageContent::text("accept"),
            }),
        }),
        JournalRecord::CallbackAnswered(CallbackAnswered::OnRoute {
            key: RouteKey {
                source_step: "a".into(),
                target_step: "c".into(),
            },
            answer: Answer::Value(RouteDecision::allow("fine")),
        }),
        intent(local, 0),
        JournalRecord::RemoteTaskKnown {
            local_task_id: local.into(),
            remote_task_id: "t-1".into(),
        },
        JournalRecord::RemoteState {
            local_task_id: local.into(),
            state: TaskState::Working,
        },
        JournalRecord::CancelRequested {
            local_task_id: Some(local.into()),
            remote_task_id: Some("t-1".into()),
        },
        JournalRecord::CancelSent {
            local_task_id: local.into(),
            remote_task_id: "t-1".into(),
        },
        JournalRecord::TaskFinished {
            local_task_id: local.into(),
            result: view(local),
        },
        JournalRecord::StepFinished {
            result: step_result(),
        },
        JournalRecord::RunFinished { result: result(id) },
    ]
}

pub fn event(id: &str, seq: u64) -> Event {
    Event {
        seq,
        kind: EventKind::TaskRequest,
        execution_id: id.into(),
        depth: 0,
        step: Some("a".into()),
        task_id: Some("r:a:0".into()),
        data: json!({"seq": seq}),
    }
}
