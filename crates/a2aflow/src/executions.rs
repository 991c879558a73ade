//! The runs a store holds, as a host or the CLI inspects them: [`list_executions`],
//! [`get_execution`] (an [`ExecutionView`] built from the journal by the pure
//! [`execution_view`]), [`execution_events`], [`request_cancel`], and the answers to a parked
//! run's gates, [`answer_gate`] and [`decline_gate`].
//!
//! Every error is a [`Failure`] with the store's `store.*` code (an answer to a task without an
//! open gate: `workflow.gate_not_open`).

use a2aflow_kernel::journal::{
    CallbackAnswered, JournalRecord, RunFilter, RunJournal, RunState, RunStore, RunSummary,
    StoreError,
};
use a2aflow_kernel::{GateBoard, gate_not_open};
use a2aflow_model::a2a::TaskState;
use a2aflow_model::{
    ErrorCode, Event, Failure, FailureCode, MessageContent, OpenGate, StepResult, StepStatus,
    TaskOutcomeStatus, TaskResultView,
};
use serde::{Deserialize, Serialize};

/// How far a step or a task has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum Progress {
    /// Started and not finished (as far as the journal knows).
    Running,
    /// Succeeded.
    Completed,
    /// Failed.
    Failed,
    /// Cancelled.
    Canceled,
    /// Started, but the run finished without a result for it in the journal.
    Unfinished,
}

impl From<StepStatus> for Progress {
    fn from(s: StepStatus) -> Self {
        match s {
            StepStatus::Completed => Progress::Completed,
            StepStatus::Failed => Progress::Failed,
            StepStatus::Canceled => Progress::Canceled,
        }
    }
}

impl From<TaskOutcomeStatus> for Progress {
    fn from(s: TaskOutcomeStatus) -> Self {
        match s {
            TaskOutcomeStatus::Completed => Progress::Completed,
            TaskOutcomeStatus::Failed => Progress::Failed,
            TaskOutcomeStatus::Canceled => Progress::Canceled,
        }
    }
}

impl Progress {
    /// The name, as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            Progress::Running => "RUNNING",
            Progress::Completed => "COMPLETED",
            Progress::Failed => "FAILED",
            Progress::Canceled => "CANCELED",
            Progress::Unfinished => "UNFINISHED",
        }
    }
}

/// One step of a run, in the order the journal first names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StepView {
    /// The step's name.
    pub name: String,
    /// How far it came.
    pub status: Progress,
    /// The step's failure code, when it failed.
    pub error_code: Option<String>,
}

/// One logical task of a run, in the order the journal first names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TaskView {
    /// The stable local task id.
    pub local_task_id: String,
    /// Its step, once the journal names it.
    pub step: Option<String>,
    /// Its index within the step, once the journal names it.
    pub subtask_index: Option<usize>,
    /// The agent (empty for local work).
    pub agent: String,
    /// The requested skill.
    pub skill: String,
    /// The latest attempt journaled, from 1 (0: none yet).
    pub attempt: u32,
    /// The A2A contextId minted for the task (shared by every attempt), when remote.
    pub context_id: Option<String>,
    /// The messageId of the latest send, when remote.
    pub message_id: Option<String>,
    /// The agent's task id, once it named one.
    pub remote_task_id: Option<String>,
    /// The last remote state seen.
    pub remote_state: Option<TaskState>,
    /// How far the logical task came.
    pub status: Progress,
    /// A stop was asked for this task (or the run was cancelled as a whole: see
    /// [`ExecutionView::cancel_requested`]).
    pub cancel_requested: bool,
    /// The stable error code, when it failed or was cancelled.
    pub error_code: Option<String>,
    /// The error message, when it failed or was cancelled.
    pub error: Option<String>,
}

/// A run as its journal tells it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ExecutionView {
    /// The run's execution id.
    pub execution_id: String,
    /// Where it stands.
    pub state: RunState,
    /// The workflow's id.
    pub workflow_id: String,
    /// The workflow's name.
    pub workflow_name: String,
    /// The host's runtime intent.
    pub runtime_intent: Option<String>,
    /// When it started, wall-clock milliseconds since the Unix epoch.
    pub started_at_ms: u64,
    /// Its absolute deadline, wall-clock milliseconds since the Unix epoch.
    pub deadline_ms: u64,
    /// A stop of the whole run was asked for (its driver, or the next resume, acts on it).
    pub cancel_requested: bool,
    /// Why it failed, once it finished with a failure.
    pub failure: Option<Failure>,
    /// The steps the journal names.
    pub steps: Vec<StepView>,
    /// Steps that never ran, once it finished.
    pub skipped_steps: Vec<String>,
    /// The logical tasks the journal names.
    pub tasks: Vec<TaskView>,
    /// The tasks parked at a gate, waiting for the host's answer (each with its
    /// `localTaskId`); the run is `waiting` while there is one. Not written when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_gates: Vec<OpenGate>,
}

impl ExecutionView {
    fn step_mut(&mut self, name: &str) -> &mut StepView {
        let i = match self.steps.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                self.steps.push(StepView {
                    name: name.to_owned(),
                    status: Progress::Running,
                    error_code: None,
                });
                self.steps.len() - 1
            }
        };
        &mut self.steps[i]
    }

    fn task_mut(&mut self, local_task_id: &str) -> &mut TaskView {
        let i = match self
            .tasks
            .iter()
            .position(|t| t.local_task_id == local_task_id)
        {
            Some(i) => i,
            None => {
                self.tasks.push(TaskView {
                    local_task_id: local_task_id.to_owned(),
                    step: None,
                    subtask_index: None,
                    agent: String::new(),
                    skill: String::new(),
                    attempt: 0,
                    context_id: None,
                    message_id: None,
                    remote_task_id: None,
                    remote_state: None,
                    status: Progress::Running,
                    cancel_requested: false,
                    error_code: None,
                    error: None,
                });
                self.tasks.len() - 1
            }
        };
        &mut self.tasks[i]
    }

    /// A task the journal names within a step.
    fn placed_task(
        &mut self,
        step: &str,
        subtask_index: usize,
        local_task_id: &str,
        attempt: u32,
    ) -> &mut TaskView {
        self.step_mut(step);
        let task = self.task_mut(local_task_id);
        task.step = Some(step.to_owned());
        task.subtask_index = Some(subtask_index);
        task.attempt = task.attempt.max(attempt);
        task
    }

    fn close_gate(&mut self, local_task_id: &str) {
        self.open_gates.retain(|g| g.local_task_id != local_task_id);
    }

    fn task_finished(&mut self, step: Option<&str>, result: &TaskResultView) {
        self.close_gate(&result.task_id);
        if let Some(step) = step {
            self.step_mut(step);
        }
        let task = self.task_mut(&result.task_id);
        if task.step.is_none() {
            task.step = step.map(str::to_owned);
        }
        if task.agent.is_empty() {
            task.agent = result.agent_name.to_string();
        }
        if task.skill.is_empty() {
            task.skill = result.skill.to_string();
        }
        if task.context_id.is_none() {
            task.context_id.clone_from(&result.context_id);
        }
        if task.remote_task_id.is_none() {
            task.remote_task_id.clone_from(&result.remote_task_id);
        }
        task.status = result.status.into();
        task.error_code.clone_from(&result.error_code);
        task.error.clone_from(&result.error);
    }

    fn step_finished(&mut self, result: &StepResult) {
        let step = self.step_mut(&result.step_name);
        step.status = result.status.into();
        step.error_code = result.failure.as_ref().map(|f| f.code.to_string());
        for task in &result.task_results {
            self.task_finished(Some(&result.step_name), task);
        }
    }

    /// A finished run: what is still running never got a result.
    fn mark_unfinished(&mut self) {
        let statuses = self.steps.iter_mut().map(|s| &mut s.status);
        for status in statuses.chain(self.tasks.iter_mut().map(|t| &mut t.status)) {
            if *status == Progress::Running {
                *status = Progress::Unfinished;
            }
        }
    }

    fn apply(&mut self, record: &JournalRecord) {
        match record {
            JournalRecord::CallbackAnswered(CallbackAnswered::OnTask { key, .. })
            | JournalRecord::CallbackAnswered(CallbackAnswered::OnSelfTask { key, .. }) => {
                self.placed_task(
                    &key.step,
                    key.subtask_index,
                    &key.local_task_id,
                    key.attempt,
                );
            }
            JournalRecord::TaskIntent(intent) => {
                let task = self.placed_task(
                    &intent.step,
                    intent.subtask_index,
                    &intent.local_task_id,
                    intent.attempt,
                );
                task.agent.clone_from(&intent.agent);
                task.skill.clone_from(&intent.skill);
                task.context_id = Some(intent.context_id.clone());
                task.message_id = Some(intent.message_id.clone());
            }
            JournalRecord::RemoteTaskKnown {
                local_task_id,
                remote_task_id,
            } => self.task_mut(local_task_id).remote_task_id = Some(remote_task_id.clone()),
            JournalRecord::RemoteState {
                local_task_id,
                state,
            } => self.task_mut(local_task_id).remote_state = Some(state.clone()),
            JournalRecord::TaskFinished { result, .. } => self.task_finished(None, result),
            JournalRecord::StepFinished { result } => self.step_finished(result),
            JournalRecord::CancelRequested {
                local_task_id: None,
                ..
            } => self.cancel_requested = true,
            JournalRecord::CancelRequested {
                local_task_id: Some(id),
                ..
            } => self.task_mut(id).cancel_requested = true,
            JournalRecord::GateOpened { gate, .. } => {
                self.close_gate(&gate.local_task_id);
                self.open_gates.push(gate.clone());
            }
            JournalRecord::GateAnswered { local_task_id, .. }
            | JournalRecord::GateDeclined { local_task_id, .. } => self.close_gate(local_task_id),
            JournalRecord::RunFinished { result } => {
                self.open_gates.clear();
                self.failure.clone_from(&result.failure);
                self.skipped_steps.clone_from(&result.skipped_steps);
                for step in &result.steps {
                    self.step_finished(step);
                }
            }
            // Route and negotiation answers, sent cancels and the first record say nothing
            // about progress beyond what the records above say.
            _ => {}
        }
    }
}

/// The view of a run from its journal. `lease_live` says whether a driver holds the run's lease
/// (it decides `running` against `waiting` for a run that has not finished). `store.corrupt`
/// when the journal does not start with its `runStarted` record.
pub fn execution_view(journal: &RunJournal, lease_live: bool) -> Result<ExecutionView, StoreError> {
    let started = journal.started()?;
    let state = match journal.finished() {
        Some(result) => RunState::of_result(result),
        None => RunState::unfinished(lease_live),
    };
    let mut view = ExecutionView {
        execution_id: started.execution_id.clone(),
        state,
        workflow_id: started.workflow_id.clone(),
        workflow_name: started.workflow_name.clone(),
        runtime_intent: started.runtime_intent.clone(),
        started_at_ms: started.started_at_ms,
        deadline_ms: started.deadline_ms,
        cancel_requested: false,
        failure: None,
        steps: Vec::new(),
        skipped_steps: Vec::new(),
        tasks: Vec::new(),
        open_gates: Vec::new(),
    };
    for entry in journal.entries.iter().skip(1) {
        view.apply(&entry.record);
    }
    if !view.open_gates.is_empty() && journal.finished().is_none() {
        view.state = RunState::Waiting;
    }
    if journal.finished().is_some() {
        view.mark_unfinished();
    }
    Ok(view)
}

/// The runs of `store`, newest first, as `filter` selects.
pub async fn list_executions(
    store: &dyn RunStore,
    filter: RunFilter,
) -> Result<Vec<RunSummary>, Failure> {
    Ok(store.list(filter).await?)
}

/// Whether a driver holds `execution_id`'s lease now (it has not lapsed).
async fn lease_live(store: &dyn RunStore, execution_id: &str) -> Result<bool, StoreError> {
    let now = a2aflow_kernel::journal::wall_clock_ms();
    Ok(store
        .lease(execution_id)
        .await?
        .is_some_and(|l| l.expires_at_ms > now))
}

/// One run of `store` (`store.unknown_execution` for an id it does not hold).
pub async fn get_execution(
    store: &dyn RunStore,
    execution_id: &str,
) -> Result<ExecutionView, Failure> {
    let journal = store.load(execution_id).await?;
    let live = journal.finished().is_none() && lease_live(store, execution_id).await?;
    Ok(execution_view(&journal, live)?)
}

/// The events of run `execution_id` after `after_seq` (all when `None`), in order, at most
/// `limit`: the same shapes as a live run's event stream.
pub async fn execution_events(
    store: &dyn RunStore,
    execution_id: &str,
    after_seq: Option<u64>,
    limit: usize,
) -> Result<Vec<Event>, Failure> {
    Ok(store.events(execution_id, after_seq, limit).await?)
}

/// What [`request_cancel`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CancelRequest {
    /// The request was journaled; the run's driver stops the run at its next lease renewal
    /// (within a third of the lease's length), or its next resume does when none drives it.
    Requested,
    /// The journal already held a request to stop the whole run; nothing was added.
    AlreadyRequested,
}

/// Asks run `execution_id` to stop: appends a run-level `cancelRequested` record. A driver
/// running it (in this or another process) finds the record at its next lease renewal (a third
/// of the lease's length at most) and stops the run as its host's cancel would: its remote tasks
/// get CancelTask and it ends `cancelled`; a run nobody drives stops at its next resume. A run
/// that already finished is `store.invalid_append` and nothing is written; an unknown id is
/// `store.unknown_execution`.
pub async fn request_cancel(
    store: &dyn RunStore,
    execution_id: &str,
) -> Result<CancelRequest, Failure> {
    let journal = store.load(execution_id).await?;
    if let Some(result) = journal.finished() {
        let state = RunState::of_result(result);
        return Err(Failure::new(
            ErrorCode::StoreInvalidAppend,
            format!(
                "run '{execution_id}' already finished ({}); there is nothing to cancel",
                state.as_str()
            ),
        )
        .with_detail("executionId", execution_id)
        .with_detail("state", state.as_str()));
    }
    let asked = journal.entries.iter().any(|e| {
        matches!(
            e.record,
            JournalRecord::CancelRequested {
                local_task_id: None,
                ..
            }
        )
    });
    if asked {
        return Ok(CancelRequest::AlreadyRequested);
    }
    store
        .append(
            execution_id,
            JournalRecord::CancelRequested {
                local_task_id: None,
                remote_task_id: None,
            },
        )
        .await?;
    Ok(CancelRequest::Requested)
}

/// Where an answer or a decline of a gate went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GateDelivery {
    /// A run live in this process took it from its board (and journaled it).
    Delivered,
    /// It was appended to the run's journal; the next resume sends it.
    Journaled,
}

/// Answers the open gate of task `local_task_id` in run `execution_id`: handed to the run's
/// `board` when the run is live in this process and waits there, otherwise appended to the
/// store as a `gateAnswered` record, which the next resume sends as the follow-up.
/// `workflow.gate_not_open` when the task has no open gate (not gated, already answered or
/// declined, unknown, or the run finished); `store.unknown_execution` for an unknown run;
/// `store.locked` when another driver holds the run (answer through its board instead).
pub async fn answer_gate(
    store: &dyn RunStore,
    board: Option<&GateBoard>,
    execution_id: &str,
    local_task_id: &str,
    content: MessageContent,
) -> Result<GateDelivery, Failure> {
    if let Some(board) = board.filter(|b| is_open(b, execution_id, local_task_id)) {
        board.answer(execution_id, local_task_id, content)?;
        return Ok(GateDelivery::Delivered);
    }
    let record = JournalRecord::GateAnswered {
        local_task_id: local_task_id.to_owned(),
        content,
    };
    journal_reply(store, execution_id, local_task_id, record).await
}

/// Declines the open gate of task `local_task_id` in run `execution_id`: the task fails with
/// `code` and `reason` (and a best-effort CancelTask goes to the remote task). Delivered and
/// refused as [`answer_gate`].
pub async fn decline_gate(
    store: &dyn RunStore,
    board: Option<&GateBoard>,
    execution_id: &str,
    local_task_id: &str,
    code: FailureCode,
    reason: String,
) -> Result<GateDelivery, Failure> {
    if let Some(board) = board.filter(|b| is_open(b, execution_id, local_task_id)) {
        board.decline(execution_id, local_task_id, code, reason)?;
        return Ok(GateDelivery::Delivered);
    }
    let record = JournalRecord::GateDeclined {
        local_task_id: local_task_id.to_owned(),
        code,
        reason,
    };
    journal_reply(store, execution_id, local_task_id, record).await
}

fn is_open(board: &GateBoard, execution_id: &str, local_task_id: &str) -> bool {
    board
        .open_gates(execution_id)
        .iter()
        .any(|g| g.local_task_id == local_task_id)
}

/// Appends a gate's reply when the journal shows the gate open.
async fn journal_reply(
    store: &dyn RunStore,
    execution_id: &str,
    local_task_id: &str,
    record: JournalRecord,
) -> Result<GateDelivery, Failure> {
    let journal = store.load(execution_id).await?;
    let view = execution_view(&journal, false)?;
    if !view
        .open_gates
        .iter()
        .any(|g| g.local_task_id == local_task_id)
    {
        return Err(gate_not_open(execution_id, local_task_id));
    }
    if lease_live(store, execution_id).await? {
        // Its driver would never read the journaled reply: it waits on its own board.
        return Err(Failure::new(
            ErrorCode::StoreLocked,
            format!(
                "run '{execution_id}' is being driven (its lease is live): answer task \
                 {local_task_id} through the GateBoard of the process that drives it"
            ),
        )
        .with_detail("executionId", execution_id)
        .with_detail("localTaskId", local_task_id));
    }
    store.append(execution_id, record).await?;
    // A hint only (the run is claimable already): an idle worker picks it up now.
    let _ = store.notify_claimable(execution_id).await;
    Ok(GateDelivery::Journaled)
}

#[cfg(test)]
#[path = "executions_tests.rs"]
mod tests;
