//! Sample journal records for the tests of the kernel and of every [`RunStore`] crate: one
//! workflow, its first record, and one record of each type. Compiled for the kernel's own tests
//! and, outside them, only with the `testing` feature (a store crate turns it on in its
//! dev-dependency), so no release build carries it.
//!
//! [`RunStore`]: super::RunStore

#![allow(clippy::expect_used)] // samples built from fixed literals; each states its invariant

use super::{
    Answer, CallbackAnswered, JournalRecord, NamedExecutionResult, NamedStepResult, NegotiationKey,
    RouteKey, RunStarted, RunState, RunSummary, TaskIntent, TaskKey,
};
use crate::RunOptions;
use a2aflow_model::a2a::TaskState;
use a2aflow_model::{
    ErrorCode, Event, EventKind, EventTime, ExecutionResult, Failure, Gate, MessageContent,
    NegotiationReply, OpenGate, Output, RouteDecision, StepResult, StepStatus, StepType,
    TaskOutcomeStatus, TaskResult, TaskResultView, Workflow,
};
use serde_json::json;

/// The workflow `wf-1` ("orders"): one ALL_SUCCESS step `a` with one subtask, billing/charge.
pub fn workflow() -> Workflow {
    serde_json::from_value(json!({
        "id": "wf-1", "name": "orders",
        "steps": [{"name": "a", "stepType": "ALL_SUCCESS",
                   "subtasks": [{"agent": "billing", "skill": "charge", "description": "charge"}]}]
    }))
    .expect("the sample workflow is a valid workflow document")
}

/// The first record of run `id` of [`workflow`], started at `at_ms` with default options.
pub fn started(id: &str, at_ms: u64) -> RunStarted {
    RunStarted::new(
        id,
        &workflow(),
        Some("ship it".into()),
        &RunOptions::default(),
        at_ms,
    )
    .expect("the sample workflow serialises to JSON")
}

/// A completed billing/charge task result for local task `local`.
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
        attempts: 1,
    }
}

/// A successful result of run `id`: step `a` completed, step `b` skipped.
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

/// The result [`result`] holds for step `a`.
pub fn step_result() -> StepResult {
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

/// A `taskIntent` for subtask `n` of step `a`: message `msg-{n}` in context `ctx-{n}`.
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
        JournalRecord::GateOpened {
            gate: OpenGate {
                step: "a".into(),
                local_task_id: local.into(),
                agent: "agent".into(),
                gate: Gate::InputRequired,
                context_id: Some("ctx-1".into()),
                remote_task_id: Some("t-1".into()),
                text: Some("which city?".into()),
            },
            evidence: Vec::new(),
        },
        JournalRecord::GateAnswered {
            local_task_id: local.into(),
            content: MessageContent::text("Paris"),
        },
        JournalRecord::GateDeclined {
            local_task_id: local.into(),
            code: "biz.no".into(),
            reason: "declined".into(),
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

/// What a driver writes at the end of run `id` of [`result`]: `r:a:0`'s `taskFinished`, then
/// `stepEnded` and `runEnded` naming it; a store reads them back as [`every_record`]'s last
/// two records.
pub fn named_ending(id: &str) -> Vec<JournalRecord> {
    let journaled = |_: &TaskResultView| true;
    vec![
        JournalRecord::TaskFinished {
            local_task_id: "r:a:0".into(),
            result: view("r:a:0"),
        },
        JournalRecord::StepEnded {
            result: NamedStepResult::naming(step_result(), journaled),
        },
        JournalRecord::RunEnded {
            result: NamedExecutionResult::naming(&result(id), journaled),
        },
    ]
}

/// A `taskRequest` event of run `id` numbered `seq`; an even `seq` has a time, an odd one none
/// (as events written before a2aflow kept times), so a store shows it keeps both.
pub fn event(id: &str, seq: u64) -> Event {
    Event {
        seq,
        kind: EventKind::TaskRequest,
        time: seq
            .is_multiple_of(2)
            .then(|| EventTime::from_unix_ms(1_796_008_065_744 + seq)),
        execution_id: id.into(),
        depth: 0,
        step: Some("a".into()),
        task_id: Some("r:a:0".into()),
        data: json!({"seq": seq}).into(),
    }
}

/// Each listed run's execution id and state, in the listing's order.
pub fn states(listed: &[RunSummary]) -> Vec<(&str, RunState)> {
    listed
        .iter()
        .map(|s| (s.execution_id.as_str(), s.state))
        .collect()
}
