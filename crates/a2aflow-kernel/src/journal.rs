//! The run journal contract: what a durable run records ([`JournalRecord`]) and the store that
//! keeps it ([`RunStore`]). No I/O here, like [`crate::RemoteClient`]: stores live in their own
//! crates above the kernel (the embedded SQLite store is `a2aflow-store-sqlite`);
//! [`MemoryStore`] implements the trait in memory for tests.
//!
//! # What is written when
//!
//! * [`RunStarted`] (sequence 0, through [`RunStore::create_run`]): the execution id, the
//!   workflow as canonical JSON with its SHA-256 hash, the runtime intent, the options and the
//!   absolute deadline as wall-clock milliseconds.
//! * [`CallbackAnswered`]: every answer of a host callback (content, local result, route
//!   decision, negotiation reply, or the failure the callback returned), so recovery never asks
//!   the host the same question twice.
//! * [`TaskIntent`]: write-ahead, acknowledged by the store BEFORE the message is sent: the
//!   identity the message goes out with (messageId, contextId) and its content.
//! * `RemoteTaskKnown`, `RemoteState`, `TaskFinished`, `StepEnded`, `CancelRequested`,
//!   `CancelSent`, and last `RunEnded` with the [`ExecutionResult`]. `StepEnded` and `RunEnded`
//!   name the task results `TaskFinished` records already hold ([`TaskSlot`]); a store reading
//!   a journal back turns them into the `StepFinished` / `RunFinished` records they stand for
//!   ([`RunJournal::expand_named`]), the shape journals written before them have.
//! * `GateOpened` when a task parks at a gate, `GateAnswered` / `GateDeclined` for the host's
//!   reply (before the follow-up's `TaskIntent`).
//!
//! Events are not journal records: they are the bulk of what a run writes and recovery does not
//! need them, so a store keeps them apart ([`RunStore::record_events`], [`RunStore::events`]),
//! keyed by the event's own `seq`, for replaying a run that finished in another process.
//!
//! # The per-run lease
//!
//! One driver at a time: [`RunStore::acquire`] grants a [`Lease`] that expires after the
//! store's time to live unless renewed ([`RunStore::renew`]); a second owner gets
//! `store.locked` while it is live and takes the run over once it expired (a driver killed with
//! SIGKILL stops renewing). Each takeover raises the lease's `token`, a fencing number.

#[cfg(any(test, feature = "testing"))]
pub mod conformance;
mod memory;
mod named;
#[cfg(any(test, feature = "testing"))]
pub mod samples;

pub use memory::{DEFAULT_LEASE_TTL, MemoryStore};
pub use named::{NamedExecutionResult, NamedStepResult, TaskSlot};

use crate::gates::GatePolicy;
use a2aflow_model::RetryPolicy;
use a2aflow_model::a2a::TaskState;
use a2aflow_model::event::EventText;
use a2aflow_model::{
    ErrorCode, Event, ExecutionResult, Failure, FailureCode, MessageContent, NegotiationReply,
    OpenGate, ReceivedMessage, RouteDecision, StepResult, TaskResult, TaskResultView, Workflow,
};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::ops::Range;
use std::time::Duration;

/// Why a store refused or failed an operation. The code is one of the `store.*` codes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("[{code}] {message}")]
pub struct StoreError {
    /// The stable code (`store.*`).
    pub code: ErrorCode,
    /// What went wrong and what to do, for a person.
    pub message: String,
    /// Safe structured facts (path, execution id, owner, …).
    pub details: Map<String, Value>,
}

impl StoreError {
    /// An error with a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        StoreError {
            code,
            message: message.into(),
            details: Map::new(),
        }
    }

    /// Adds one detail.
    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    /// `store.unknown_execution` for `execution_id`.
    pub fn unknown_execution(execution_id: &str) -> Self {
        StoreError::new(
            ErrorCode::StoreUnknownExecution,
            format!(
                "no run with execution id '{execution_id}' is in this store (list the runs it \
                 holds, or name the store the run was started with)"
            ),
        )
        .with_detail("executionId", execution_id)
    }

    /// True when the error carries `code`.
    pub fn is(&self, code: ErrorCode) -> bool {
        self.code == code
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Failure::from_parts(e.code, e.message, e.details)
    }
}

/// The options of a run that the journal keeps, and that a resumed run keeps too (see
/// `JournaledOptions::apply_to` beside `RunOptions`): a run's limits, retries and gate policy are
/// fixed when it starts. Host objects such as the catalog, the firewall or the cost meter are the
/// host's to supply again on resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JournaledOptions {
    /// The run's deadline budget in milliseconds.
    pub timeout_ms: u64,
    /// The limit of remote dispatches in flight, when one was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_remote_tasks: Option<usize>,
    /// The cleanup grace of an interrupted client, in milliseconds.
    pub cleanup_grace_ms: u64,
    /// The delegation depth limit.
    pub max_delegation_depth: u32,
    /// The delegation fan-out limit.
    pub max_delegation_fan_out: usize,
    /// The delegation budget limit, when one was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegation_budget: Option<f64>,
    /// The retry policy of subtasks whose workflow entry gives none, when the run had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
    /// What the run does at a gate; `None` in a journal that predates the field (a resume then
    /// takes the resuming host's policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate_policy: Option<GatePolicy>,
}

// `JournaledOptions::of(&RunOptions)` (and `From<&RunOptions>`) live beside `RunOptions` in the
// runner, which depends on this module and not the other way round.

/// Whole milliseconds of `d`, saturating.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The first record of every run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStarted {
    /// The run's execution id.
    pub execution_id: String,
    /// The workflow's id.
    pub workflow_id: String,
    /// The workflow's name (what run listings show).
    pub workflow_name: String,
    /// The workflow as canonical JSON (its serialised [`Workflow`]).
    pub workflow: Value,
    /// Lowercase hex SHA-256 of the compact JSON text of `workflow`.
    pub workflow_sha256: String,
    /// The host's runtime intent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_intent: Option<String>,
    /// The options the run started with.
    pub options: JournaledOptions,
    /// When the run started, wall-clock milliseconds since the Unix epoch.
    pub started_at_ms: u64,
    /// The absolute deadline, wall-clock milliseconds since the Unix epoch (a resumed run keeps
    /// it).
    pub deadline_ms: u64,
}

impl RunStarted {
    /// The record for a run of `workflow` starting at `started_at_ms`; the deadline is the start
    /// plus `options.timeout`.
    pub fn new(
        execution_id: impl Into<String>,
        workflow: &Workflow,
        runtime_intent: Option<String>,
        options: impl Into<JournaledOptions>,
        started_at_ms: u64,
    ) -> Result<Self, StoreError> {
        let document = serde_json::to_value(workflow).map_err(|e| {
            StoreError::new(
                ErrorCode::StoreInvalidAppend,
                format!("the workflow cannot be journaled as JSON: {e}"),
            )
        })?;
        let options = options.into();
        Ok(RunStarted {
            execution_id: execution_id.into(),
            workflow_id: workflow.id.clone(),
            workflow_name: workflow.name.clone(),
            workflow_sha256: workflow_sha256(&document),
            workflow: document,
            runtime_intent,
            deadline_ms: started_at_ms.saturating_add(options.timeout_ms),
            options,
            started_at_ms,
        })
    }

    /// The journaled workflow, after checking it against its recorded hash
    /// (`store.workflow_mismatch` when it was changed, `store.corrupt` when it does not decode).
    pub fn workflow(&self) -> Result<Workflow, StoreError> {
        let actual = workflow_sha256(&self.workflow);
        if actual != self.workflow_sha256 {
            return Err(StoreError::new(
                ErrorCode::StoreWorkflowMismatch,
                format!(
                    "the journaled workflow of run '{}' no longer matches the hash it was recorded \
                     with; the journal was changed after the run started",
                    self.execution_id
                ),
            )
            .with_detail("executionId", self.execution_id.as_str())
            .with_detail("recordedSha256", self.workflow_sha256.as_str())
            .with_detail("actualSha256", actual));
        }
        serde_json::from_value(self.workflow.clone()).map_err(|e| {
            StoreError::new(
                ErrorCode::StoreCorrupt,
                format!(
                    "the journaled workflow of run '{}' does not decode: {e}",
                    self.execution_id
                ),
            )
        })
    }

    /// Checks that `workflow` is the one this run started with (`store.workflow_mismatch`
    /// otherwise), for a host that supplies the workflow again on resume.
    pub fn check_same_workflow(&self, workflow: &Workflow) -> Result<(), StoreError> {
        let given = serde_json::to_value(workflow).map(|v| workflow_sha256(&v));
        match given {
            Ok(hash) if hash == self.workflow_sha256 => Ok(()),
            Ok(hash) => Err(StoreError::new(
                ErrorCode::StoreWorkflowMismatch,
                format!(
                    "run '{}' started with a different workflow (its journal holds workflow '{}'); \
                     resume it with the workflow it started with",
                    self.execution_id, self.workflow_id
                ),
            )
            .with_detail("executionId", self.execution_id.as_str())
            .with_detail("recordedSha256", self.workflow_sha256.as_str())
            .with_detail("givenSha256", hash)),
            Err(e) => Err(StoreError::new(
                ErrorCode::StoreWorkflowMismatch,
                format!("the given workflow cannot be hashed as JSON: {e}"),
            )),
        }
    }
}

/// Lowercase hex SHA-256 of the compact JSON text of `document`.
pub fn workflow_sha256(document: &Value) -> String {
    let digest = Sha256::digest(document.to_string().as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    hex
}

/// Which subtask a task callback answered, and for which attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskKey {
    /// The step's name.
    pub step: String,
    /// The subtask's index within its step.
    pub subtask_index: usize,
    /// The stable local task id.
    pub local_task_id: String,
    /// The attempt, from 1.
    pub attempt: u32,
}

/// Which edge an `on_route` decision is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteKey {
    /// The source step.
    pub source_step: String,
    /// The target step.
    pub target_step: String,
}

/// Which negotiation exchange an `on_negotiation` reply is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NegotiationKey {
    /// The local task id of the negotiating task.
    pub local_task_id: String,
    /// The attempt of that task, from 1.
    pub attempt: u32,
    /// The exchange within the task, from 1.
    pub exchange: u32,
}

/// What a host callback answered: its value, or the failure it returned (a callback that was
/// interrupted or panicked gave no answer and is not journaled).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Answer<T> {
    /// The callback's value.
    Value(T),
    /// The failure the callback returned.
    Failure(Failure),
}

/// One answered host callback.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "callback", rename_all = "camelCase")]
#[non_exhaustive]
pub enum CallbackAnswered {
    /// `on_task`: the content to send.
    OnTask {
        /// The subtask.
        key: TaskKey,
        /// The answer.
        answer: Answer<MessageContent>,
    },
    /// `on_self_task`: the local result.
    OnSelfTask {
        /// The subtask.
        key: TaskKey,
        /// The answer.
        answer: Answer<TaskResult>,
    },
    /// `on_route`: one edge's decision.
    OnRoute {
        /// The edge.
        key: RouteKey,
        /// The answer.
        answer: Answer<RouteDecision>,
    },
    /// `on_negotiation`: one reply.
    OnNegotiation {
        /// The exchange.
        key: NegotiationKey,
        /// The answer.
        answer: Answer<NegotiationReply>,
    },
}

/// The write-ahead record of one send: stored before the message leaves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIntent {
    /// The step's name.
    pub step: String,
    /// The subtask's index within its step.
    pub subtask_index: usize,
    /// The stable local task id.
    pub local_task_id: String,
    /// The agent the message goes to.
    pub agent: String,
    /// The requested skill.
    pub skill: String,
    /// The attempt, from 1.
    pub attempt: u32,
    /// The A2A messageId the message is sent with.
    pub message_id: String,
    /// The A2A contextId minted for the logical task (shared by every attempt).
    pub context_id: String,
    /// The content, exactly as it is sent.
    pub content: MessageContent,
}

/// One fact of a run's journal. Serialised as camelCase JSON tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum JournalRecord {
    /// The run started (always sequence 0).
    RunStarted(RunStarted),
    /// A host callback answered.
    CallbackAnswered(CallbackAnswered),
    /// A message is about to be sent (write-ahead).
    TaskIntent(TaskIntent),
    /// The agent named the remote task of a logical task.
    RemoteTaskKnown {
        /// The local task id.
        local_task_id: String,
        /// The agent's task id.
        remote_task_id: String,
    },
    /// The last remote state seen for a logical task.
    RemoteState {
        /// The local task id.
        local_task_id: String,
        /// The remote task's state.
        state: TaskState,
    },
    /// A logical task ended: its outcome and evidence.
    TaskFinished {
        /// The local task id.
        local_task_id: String,
        /// The task's result view (status, outputs, evidence, failure).
        result: TaskResultView,
    },
    /// A step ended.
    StepFinished {
        /// The step's result.
        result: StepResult,
    },
    /// The run (no ids) or one task was asked to stop.
    CancelRequested {
        /// The local task id, when one task is meant.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        local_task_id: Option<String>,
        /// The remote task id, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remote_task_id: Option<String>,
    },
    /// A CancelTask request went out for a remote task.
    CancelSent {
        /// The local task id.
        local_task_id: String,
        /// The remote task id cancelled.
        remote_task_id: String,
    },
    /// The run ended (the last record).
    RunFinished {
        /// The run's result.
        result: ExecutionResult,
    },
    /// A step ended, its journaled task results named (what drivers write; read back as
    /// `StepFinished`, see [`RunJournal::expand_named`]).
    StepEnded {
        /// The step's result.
        result: NamedStepResult,
    },
    /// The run ended, its journaled task results named (the last record; what drivers write,
    /// read back as `RunFinished`).
    RunEnded {
        /// The run's result.
        result: NamedExecutionResult,
    },
    /// A logical task parked at a gate and waits for the host's answer.
    GateOpened {
        /// The gate.
        gate: OpenGate,
        /// The evidence the agent sent up to the gate (a resumed run parks with it).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        evidence: Vec<ReceivedMessage>,
    },
    /// The host answered a task's open gate; the answer is sent as a follow-up (its own
    /// `TaskIntent` follows, write-ahead as any send).
    GateAnswered {
        /// The local task id.
        local_task_id: String,
        /// The answer, exactly as it is sent.
        content: MessageContent,
    },
    /// The host declined a task's open gate: the task fails with this code and reason.
    GateDeclined {
        /// The local task id.
        local_task_id: String,
        /// The host's code.
        code: FailureCode,
        /// The host's reason.
        reason: String,
    },
}

impl JournalRecord {
    /// The record's `type` tag, as serialised.
    pub fn kind(&self) -> &'static str {
        match self {
            JournalRecord::RunStarted(_) => "runStarted",
            JournalRecord::CallbackAnswered(_) => "callbackAnswered",
            JournalRecord::TaskIntent(_) => "taskIntent",
            JournalRecord::RemoteTaskKnown { .. } => "remoteTaskKnown",
            JournalRecord::RemoteState { .. } => "remoteState",
            JournalRecord::TaskFinished { .. } => "taskFinished",
            JournalRecord::StepFinished { .. } => "stepFinished",
            JournalRecord::CancelRequested { .. } => "cancelRequested",
            JournalRecord::CancelSent { .. } => "cancelSent",
            JournalRecord::RunFinished { .. } => "runFinished",
            JournalRecord::StepEnded { .. } => "stepEnded",
            JournalRecord::RunEnded { .. } => "runEnded",
            JournalRecord::GateOpened { .. } => "gateOpened",
            JournalRecord::GateAnswered { .. } => "gateAnswered",
            JournalRecord::GateDeclined { .. } => "gateDeclined",
        }
    }

    /// How the run ended, for a record that ends it (`runFinished`, `runEnded`).
    pub fn final_state(&self) -> Option<RunState> {
        match self {
            JournalRecord::RunFinished { result } => Some(RunState::of_result(result)),
            JournalRecord::RunEnded { result } => Some(RunState::of_outcome(
                result.success,
                result.failure.as_ref(),
            )),
            _ => None,
        }
    }
}

/// One journaled record with its position in the run's journal (from 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JournalEntry {
    /// The record's sequence number within its run.
    pub seq: u64,
    /// The record.
    pub record: JournalRecord,
}

/// A run read back from a store: every record in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunJournal {
    /// The run's execution id.
    pub execution_id: String,
    /// Every record, `runStarted` first, in sequence order.
    pub entries: Vec<JournalEntry>,
}

impl RunJournal {
    /// The run's first record (`store.corrupt` when the journal does not start with one).
    pub fn started(&self) -> Result<&RunStarted, StoreError> {
        match self.entries.first().map(|e| &e.record) {
            Some(JournalRecord::RunStarted(s)) => Ok(s),
            _ => Err(StoreError::new(
                ErrorCode::StoreCorrupt,
                format!(
                    "the journal of run '{}' does not start with its runStarted record",
                    self.execution_id
                ),
            )),
        }
    }

    /// Whether the journal holds a run-level `CancelRequested` record ([`is_run_cancel`]).
    pub fn cancel_requested(&self) -> bool {
        self.entries.iter().any(|e| is_run_cancel(&e.record))
    }

    /// The run's result, when it finished.
    pub fn finished(&self) -> Option<&ExecutionResult> {
        self.entries.iter().rev().find_map(|e| match &e.record {
            JournalRecord::RunFinished { result } => Some(result),
            _ => None,
        })
    }
}

/// Where a run stands, as listings show it (serialised lowercase).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum RunState {
    /// Not finished, and a driver holds a live lease.
    Running,
    /// Not finished, and no driver holds it (its host stopped or died): it waits for a resume.
    Waiting,
    /// Finished with success.
    Succeeded,
    /// Finished with a failure other than cancellation.
    Failed,
    /// Finished cancelled (`workflow.cancelled`).
    Cancelled,
}

impl RunState {
    /// The state of a finished run.
    pub fn of_result(result: &ExecutionResult) -> Self {
        RunState::of_outcome(result.success, result.failure.as_ref())
    }

    /// The state of a run that finished with `success` and `failure`.
    pub fn of_outcome(success: bool, failure: Option<&Failure>) -> Self {
        match failure {
            None if success => RunState::Succeeded,
            Some(f) if f.is(ErrorCode::WorkflowCancelled) => RunState::Cancelled,
            _ => RunState::Failed,
        }
    }

    /// The state of a run that has not finished.
    pub fn unfinished(lease_live: bool) -> Self {
        if lease_live {
            RunState::Running
        } else {
            RunState::Waiting
        }
    }

    /// The lowercase name, as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Waiting => "waiting",
            RunState::Succeeded => "succeeded",
            RunState::Failed => "failed",
            RunState::Cancelled => "cancelled",
        }
    }
}

/// One run in a listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    /// The run's execution id.
    pub execution_id: String,
    /// Where it stands.
    pub state: RunState,
    /// The workflow's name.
    pub workflow_name: String,
    /// When it started, wall-clock milliseconds since the Unix epoch.
    pub started_at_ms: u64,
    /// When its `runFinished` record was appended (absent while it runs, and for runs a store
    /// finished before it kept the time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at_ms: Option<u64>,
}

/// Which runs a listing returns: newest first, `offset` runs skipped, at most `limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFilter {
    /// Only runs in this state.
    pub state: Option<RunState>,
    /// How many matching runs to skip (paging).
    pub offset: usize,
    /// At most this many runs.
    pub limit: usize,
}

impl Default for RunFilter {
    fn default() -> Self {
        RunFilter {
            state: None,
            offset: 0,
            limit: 100,
        }
    }
}

/// The right to drive one run, until `expires_at_ms` unless renewed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// The run.
    pub execution_id: String,
    /// Who holds it (a host-chosen name, e.g. host and process id).
    pub owner: String,
    /// Fencing number: raised each time another owner takes the run over.
    pub token: u64,
    /// When it lapses, wall-clock milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
}

impl Lease {
    /// `store.locked` for a run whose live lease `self` is held by someone else.
    pub fn locked_error(&self) -> StoreError {
        StoreError::new(
            ErrorCode::StoreLocked,
            format!(
                "run '{}' is driven by '{}' (its lease runs until {} ms since the epoch); stop \
                 that driver or wait for its lease to lapse",
                self.execution_id, self.owner, self.expires_at_ms
            ),
        )
        .with_detail("executionId", self.execution_id.as_str())
        .with_detail("owner", self.owner.as_str())
        .with_detail("expiresAtMs", self.expires_at_ms)
    }
}

/// The lease a store grants `owner` at `now_ms` given the run's current lease, or
/// `store.locked`. A lease lapses at its `expires_at_ms`; the same owner renews its own.
pub fn grant_lease(
    current: Option<&Lease>,
    execution_id: &str,
    owner: &str,
    now_ms: u64,
    ttl: Duration,
) -> Result<Lease, StoreError> {
    let expires_at_ms = now_ms.saturating_add(millis(ttl));
    let token = match current {
        None => 1,
        Some(l) if l.owner == owner => l.token,
        Some(l) if l.expires_at_ms <= now_ms => l.token.saturating_add(1),
        Some(l) => return Err(l.locked_error()),
    };
    Ok(Lease {
        execution_id: execution_id.to_owned(),
        owner: owner.to_owned(),
        token,
        expires_at_ms,
    })
}

/// `store.lease_lost` unless `held` is still the run's lease (same owner and token): the
/// condition every write of a driver ([`RunStore::append_driven`],
/// [`RunStore::record_driven_events`]) is checked against in the write's own transaction.
pub fn check_fence(current: Option<&Lease>, held: &Lease) -> Result<(), StoreError> {
    match current {
        Some(c) if c.owner == held.owner && c.token == held.token => Ok(()),
        _ => Err(StoreError::new(
            ErrorCode::StoreLeaseLost,
            format!(
                "'{}' no longer holds the lease of run '{}' (it lapsed and another driver took \
                 the run over, or it was released): nothing was written, and this driver stops",
                held.owner, held.execution_id
            ),
        )
        .with_detail("executionId", held.execution_id.as_str())
        .with_detail("owner", held.owner.as_str())),
    }
}

/// The renewal of `held`: the same owner and token with a new expiry, or `store.lease_lost`
/// when `held` is no longer the run's lease (`current`).
pub fn renew_lease(
    current: Option<&Lease>,
    held: &Lease,
    now_ms: u64,
    ttl: Duration,
) -> Result<Lease, StoreError> {
    check_fence(current, held)?;
    grant_lease(current, &held.execution_id, &held.owner, now_ms, ttl)
}

/// What releasing `held` leaves as the run's lease: `held` lapsed at once, its owner and token
/// kept so the next owner's token is still higher (fencing); `None` (nothing to change) when
/// `held` is no longer the run's lease (`current`).
pub fn released_lease(current: Option<&Lease>, held: &Lease) -> Option<Lease> {
    check_fence(current, held).ok().map(|()| Lease {
        expires_at_ms: 0,
        ..held.clone()
    })
}

/// What a lease renewal brings back to the run's driver ([`RunStore::heartbeat`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeat {
    /// The renewed lease.
    pub lease: Lease,
    /// Whether the run's journal holds a run-level `CancelRequested` record.
    pub cancel_requested: bool,
}

/// True for a run-level `CancelRequested` record (one that names no task).
pub fn is_run_cancel(record: &JournalRecord) -> bool {
    matches!(
        record,
        JournalRecord::CancelRequested {
            local_task_id: None,
            remote_task_id: None,
        }
    )
}

/// Checks that `records` may follow a journal that is `finished` or not: no second
/// `runStarted`, nothing after `runFinished` (`store.invalid_append`).
pub fn check_append(
    execution_id: &str,
    mut finished: bool,
    records: &[JournalRecord],
) -> Result<(), StoreError> {
    for record in records {
        let refusal = if finished {
            Some("the run already finished")
        } else if matches!(record, JournalRecord::RunStarted(_)) {
            Some("a run starts once, through create_run")
        } else {
            None
        };
        if let Some(why) = refusal {
            return Err(StoreError::new(
                ErrorCode::StoreInvalidAppend,
                format!(
                    "cannot append a {} record to run '{execution_id}': {why}",
                    record.kind()
                ),
            )
            .with_detail("executionId", execution_id)
            .with_detail("record", record.kind()));
        }
        finished = record.final_state().is_some();
    }
    Ok(())
}

/// `store.invalid_append` unless every event's `seq` is after `last_seq` and increasing.
pub fn check_event_order(
    execution_id: &str,
    last_seq: Option<u64>,
    events: &[Event],
) -> Result<(), StoreError> {
    check_seq_order(execution_id, last_seq, events.iter().map(|e| e.seq))
}

/// [`check_event_order`] for events written as JSON text.
pub fn check_encoded_event_order(
    execution_id: &str,
    last_seq: Option<u64>,
    events: &[EncodedEvent],
) -> Result<(), StoreError> {
    check_seq_order(execution_id, last_seq, events.iter().map(EncodedEvent::seq))
}

fn check_seq_order(
    execution_id: &str,
    mut last_seq: Option<u64>,
    seqs: impl Iterator<Item = u64>,
) -> Result<(), StoreError> {
    for seq in seqs {
        if last_seq.is_some_and(|l| seq <= l) {
            return Err(StoreError::new(
                ErrorCode::StoreInvalidAppend,
                format!(
                    "event {} of run '{execution_id}' is not after the last stored event {}",
                    seq,
                    last_seq.unwrap_or_default()
                ),
            )
            .with_detail("executionId", execution_id)
            .with_detail("seq", seq));
        }
        last_seq = Some(seq);
    }
    Ok(())
}

/// Wall-clock milliseconds since the Unix epoch (0 when the clock is before it).
pub fn wall_clock_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(millis)
        .unwrap_or_default()
}

/// One event as JSON text: the bytes `serde_json::to_string` gives for the [`Event`], and its
/// `seq`. A durable run writes its events this way once, when they happen; a store keeps the
/// text as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedEvent {
    seq: u64,
    json: EventText,
}

impl EncodedEvent {
    /// `event` written as JSON text.
    pub fn encode(event: &Event) -> Result<Self, StoreError> {
        let json = serde_json::to_string(event).map_err(|e| {
            StoreError::new(
                ErrorCode::StoreInvalidAppend,
                format!("event {} cannot be written as JSON: {e}", event.seq),
            )
        })?;
        Ok(EncodedEvent {
            seq: event.seq,
            json: json.into(),
        })
    }

    /// An event's text as [`a2aflow_model::event::EventView::to_json`] wrote it, or as
    /// [`a2aflow_model::event::EventTail::place`] placed it (the caller vouches that `json` is
    /// the event numbered `seq`).
    pub(crate) fn from_parts(seq: u64, json: impl Into<EventText>) -> Self {
        EncodedEvent {
            seq,
            json: json.into(),
        }
    }

    /// The event's position in its run's sequence.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The event's JSON text.
    pub fn json(&self) -> &str {
        self.json.as_str()
    }

    /// The event read back (`store.invalid_append` should the text not be an event).
    pub fn decode(&self) -> Result<Event, StoreError> {
        serde_json::from_str(self.json()).map_err(|e| {
            StoreError::new(
                ErrorCode::StoreInvalidAppend,
                format!("event {} is not an event's JSON text: {e}", self.seq),
            )
        })
    }
}

/// Keeps runs' journals. Implementations live above the kernel; see the module docs.
///
/// Every error is a [`StoreError`] with a `store.*` code. An append returns once the records are
/// as durable as the store promises (the SQLite store: on disk); a driver sends a message only
/// after its [`TaskIntent`] was acknowledged.
#[async_trait]
pub trait RunStore: Send + Sync {
    /// Starts a run's journal with its first record (`store.duplicate_execution` when the id is
    /// taken).
    async fn create_run(&self, run: RunStarted) -> Result<(), StoreError>;

    /// Appends records in order, atomically; returns the sequence numbers they got.
    async fn append_batch(
        &self,
        execution_id: &str,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError>;

    /// Appends records for the run's driver, as [`RunStore::append_batch`] does, on the
    /// condition, checked in the same transaction, that `lease` is still the run's lease
    /// ([`check_fence`]): a driver that lost it gets `store.lease_lost` and nothing is written.
    /// Drivers write only through this and [`RunStore::record_driven_events`]; the unfenced
    /// calls are for requests from outside the drive (a cancel) and for tools.
    async fn append_driven(
        &self,
        lease: &Lease,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError>;

    /// Keeps the run's events for its driver, on the condition of [`RunStore::append_driven`].
    async fn record_driven_events(
        &self,
        lease: &Lease,
        events: Vec<Event>,
    ) -> Result<(), StoreError>;

    /// [`RunStore::record_driven_events`] for events already written as JSON text (a durable
    /// run's events are: it never builds their `Value` data). The default reads them back and
    /// calls `record_driven_events`; a store that keeps the text as it is overrides this.
    async fn record_driven_encoded_events(
        &self,
        lease: &Lease,
        events: Vec<EncodedEvent>,
    ) -> Result<(), StoreError> {
        let decoded = events
            .iter()
            .map(EncodedEvent::decode)
            .collect::<Result<Vec<_>, _>>()?;
        self.record_driven_events(lease, decoded).await
    }

    /// Appends one record; returns its sequence number.
    async fn append(&self, execution_id: &str, record: JournalRecord) -> Result<u64, StoreError> {
        self.append_batch(execution_id, vec![record])
            .await
            .map(|r| r.start)
    }

    /// Reads a run's journal back (`store.unknown_execution` for an id it does not hold).
    async fn load(&self, execution_id: &str) -> Result<RunJournal, StoreError>;

    /// The runs, newest first, as the filter selects.
    async fn list(&self, filter: RunFilter) -> Result<Vec<RunSummary>, StoreError>;

    /// Keeps a run's events; each `seq` must be after the last one kept.
    async fn record_events(&self, execution_id: &str, events: Vec<Event>)
    -> Result<(), StoreError>;

    /// A run's events with `seq` after `after_seq` (all when `None`), in order, at most `limit`.
    async fn events(
        &self,
        execution_id: &str,
        after_seq: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError>;

    /// The run's lease as it stands (live or lapsed; `None` when no driver ever took it), for
    /// readers that ask who drives a run (`store.unknown_execution` for an id it does not hold).
    async fn lease(&self, execution_id: &str) -> Result<Option<Lease>, StoreError>;

    /// Takes the run's lease for `owner` (`store.locked` while another owner's lease is live).
    async fn acquire(&self, execution_id: &str, owner: &str) -> Result<Lease, StoreError>;

    /// Extends a held lease (`store.lease_lost` when it is no longer held).
    async fn renew(&self, lease: &Lease) -> Result<Lease, StoreError>;

    /// Gives the lease up (a no-op when it is no longer held).
    async fn release(&self, lease: Lease) -> Result<(), StoreError>;

    /// Starts a run's journal as [`RunStore::create_run`] does and takes its lease for `owner`
    /// as [`RunStore::acquire`] does: how a host that drives the run it starts begins. A store
    /// that hands runs out to workers ([`RunStore::claim`]) does both in one transaction, so no
    /// worker can claim the run in between. The default calls the two in turn.
    async fn create_run_leased(&self, run: RunStarted, owner: &str) -> Result<Lease, StoreError> {
        let execution_id = run.execution_id.clone();
        self.create_run(run).await?;
        self.acquire(&execution_id, owner).await
    }

    /// Gives up the lease of a run that suspended at its open gates
    /// (`RunOptions::suspend_when_parked`), as [`RunStore::release`] does. A store that hands
    /// runs out to workers ([`RunStore::claim`]) does not hand this run out again until a
    /// record is appended after the first `seen` records of its journal (the ones its driver
    /// knew of: a gate answer or decline, a cancel, written later, makes it claimable) or its
    /// deadline passed (a worker then ends it). The default releases.
    async fn release_suspended(&self, lease: Lease, seen: u64) -> Result<(), StoreError> {
        let _ = seen;
        self.release(lease).await
    }

    /// The driver's heartbeat: [`RunStore::renew`], and whether the run's journal holds a
    /// run-level `CancelRequested` (written by another process: `runs cancel`, the run page), so
    /// that a running driver stops the run as its host's cancel would. `store.lease_lost` as
    /// `renew`. The default renews and then reads the whole journal; a store overrides it with
    /// one look-up.
    async fn heartbeat(&self, lease: &Lease) -> Result<Heartbeat, StoreError> {
        let lease = self.renew(lease).await?;
        let cancel_requested = self.load(&lease.execution_id).await?.cancel_requested();
        Ok(Heartbeat {
            lease,
            cancel_requested,
        })
    }

    /// Tells idle workers that run `execution_id` may be claimable now (it was submitted, or a
    /// gate answer was journaled for it); a lease released by [`RunStore::release`] tells them
    /// itself. A hint: workers also look again after a bounded wait. A store that hands no runs
    /// out to workers has nobody to tell (the default does nothing).
    async fn notify_claimable(&self, execution_id: &str) -> Result<(), StoreError> {
        let _ = execution_id;
        Ok(())
    }

    /// Takes, for `owner`, the lease of one unfinished run that no driver holds (never leased,
    /// released, or lapsed), oldest first, raising its token as [`RunStore::acquire`] does: how
    /// a worker picks up work. `None` when there is no such run. A store that cannot hand runs
    /// out to several workers refuses with `store.unavailable` (the default).
    async fn claim(&self, owner: &str) -> Result<Option<Lease>, StoreError> {
        Err(StoreError::new(
            ErrorCode::StoreUnavailable,
            format!(
                "this run store cannot hand runs out to workers ('{owner}' asked for one); use \
                 the Postgres store"
            ),
        ))
    }
}

#[cfg(test)]
mod tests;
