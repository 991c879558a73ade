//! # a2aflow-kernel — the scheduling kernel and runner
//!
//! **What it is.** The transport-free heart of a2aflow: the [`ControlPoint`] host callback
//! contract, the DAG executor with an online ready queue and dead-path elimination, routing,
//! the context builder, deadlines, cancellation, lifecycle events and the runner ([`run`],
//! [`run_stream`], and [`run_prepared`] for a [`PreparedWorkflow`] validated and planned once).
//!
//! **What it owns.** When each step runs, which edges activate, what each callback receives, and
//! how a run ends. It reaches remote agents only through the [`RemoteClient`] trait it defines;
//! [`InMemoryClient`] implements it for tests and benchmarks.
//!
//! **What it must never depend on.** The A2A-T crate `a2at`, and any network or TLS crate (hyper,
//! h2, rustls, …) — not even transitively, not even as a dev-dependency: kernel tests use an
//! in-memory client. `cargo xtask check-layers` and the `wrappers` rule in `deny.toml` enforce it.
//!
//! ## Scheduling rules
//!
//! * Roots start at once; a step starts the moment every incoming edge is resolved and at least
//!   one was activated. A step that can no longer run resolves its outgoing edges as not
//!   activated, so joins after conditional branches neither hang nor run twice.
//! * ALL_SUCCESS: all subtasks must succeed (all are awaited). ANY_SUCCESS: the first success
//!   wins; the others are cancelled through their token and recorded CANCELED (in the run's
//!   result with their context and remote task ids when the client reported them). SELF_LOOP:
//!   `on_self_task` per subtask, nothing sent. A SELF_LOOP step without subtasks succeeds
//!   without a callback. An ALL_SUCCESS or ANY_SUCCESS step without subtasks never runs:
//!   validation rejects the workflow with `workflow.empty_subtasks` before anything is sent
//!   (the runner validates every workflow it is given):
//!
//!   ```
//!   use a2aflow_model::{ErrorCode, LoadOptions, load_workflow_str, validate};
//!   let empty = r#"{"steps":[{"name":"a","stepType":"AnySuccess"},{"name":"b","stepType":"SelfLoop"}]}"#;
//!   let loaded = load_workflow_str(empty, LoadOptions::LENIENT).unwrap();
//!   let errors = validate(&loaded.workflow).unwrap_err();
//!   assert_eq!(errors.codes(), [ErrorCode::WorkflowEmptySubtasks]); // `a` only; `b` is fine
//!   ```
//! * After a step succeeds, its blank edges activate without a callback and every nonblank edge
//!   calls `on_route` concurrently; all decisions are in before any successor starts. One failed,
//!   timed-out or missing decision suppresses every successor and fails the run with
//!   `workflow.route_failed` naming source and target.
//! * A failed step (`workflow.step_failed`, the task's own code in the details) stops scheduling;
//!   steps already running finish and are recorded. The deadline (`workflow.timeout`) and
//!   cancellation (`workflow.cancelled`) stop everything in flight; late results are dropped.
//! * Context: `contextFrom` absent = direct predecessors that ran (declaration order), `"*"` =
//!   every completed ancestor (nearest first), names = those steps that ran (listed order). The
//!   window shares the upstream results (`Arc`); nothing is copied per task.
//! * Delegation: a subtask naming a child `workflow` runs it in the same engine after the
//!   [`DelegationPolicy`] admitted it (see `docs/guide/delegation.md`, "Execution").
//! * Durable runs: with [`RunOptions::store`] the run journals what it does before it acts on it
//!   (host answers, each send, each task's and step's end, events, the result) and holds a lease;
//!   [`resume`] continues it in another process without asking the host or sending twice
//!   (see `docs/architecture.md`, "A durable run").

#![cfg_attr(docsrs, feature(doc_cfg))]

mod agent_check;
mod client;
mod context;
mod control_point;
mod delegation;
mod durable;
mod events;
mod executor;
mod finish;
mod gates;
mod graph;
mod ids;
mod in_memory;
mod interrupt;
pub mod journal;
mod panic_guard;
mod prepared;
mod refill;
mod resume;
mod runner;
mod task;
mod view;

pub use agent_check::{check_agents, unknown_agents};
pub use client::{
    AttachRequest, DispatchJournal, DispatchRequest, NegotiationHook, NoJournal, RemoteClient,
    SendCheck, SendIntent, TaskFailure, TaskOutcome, project_outputs,
};
pub use control_point::{CallbackError, CallbackFuture, ControlPoint};
pub use delegation::{
    Budget, CostMeter, DEFAULT_MAX_DEPTH, DEFAULT_MAX_FAN_OUT, DelegationFirewall,
    DelegationPolicy, StaticCatalog, WorkflowCatalog,
};
pub use durable::ResumePolicy;
pub use events::{EventCallback, EventEdit, EventEmitter, EventHook};
pub use finish::FinishHook;
pub use gates::{GateBoard, GatePolicy, gate_not_open};
pub use ids::task_context_id;
pub use in_memory::{AgentScript, FollowUpSent, InMemoryClient, ScriptedReply, SentContent};
pub use journal::{
    JournalRecord, MemoryStore, RunJournal, RunState, RunStore, RunSummary, StoreError,
};
pub use prepared::PreparedWorkflow;
pub use resume::{resume, resume_stream};
pub use runner::{EventStream, OnFinish, RunInput, RunOptions, run, run_prepared, run_stream};

/// The README (the crate's page on crates.io), whose example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
