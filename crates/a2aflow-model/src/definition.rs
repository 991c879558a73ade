//! The workflow definition (the PSOP format the reference engines load), as plain data.
//!
//! Loading from text (both snake and camel case, unknown-key reporting with JSON paths, line and
//! column) lives in [`crate::load`]; graph validation in [`mod@crate::validate`]. These types are what
//! both produce and what the kernel schedules.

use crate::SharedStr;
use crate::retry::RetryPolicy;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Step names reserved for terminal routes; no step may use them.
pub const RESERVED_STEP_NAMES: &[&str] = &["end", "retry", "endNode"];

/// A workflow: a DAG of steps.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Workflow {
    /// Workflow id (may be empty).
    #[serde(default)]
    pub id: String,
    /// Human-readable name.
    #[serde(default)]
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// The steps, in document order.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// Workflow ids allowed to call this workflow as a child (delegation); `None` = any caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callable_by: Option<Vec<String>>,
}

/// One step of a workflow.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// Unique, nonblank name.
    pub name: String,
    /// The logical subtasks this step dispatches (concurrently).
    #[serde(default)]
    pub subtasks: Vec<Subtask>,
    /// Outgoing edges.
    #[serde(default)]
    pub next: Vec<Edge>,
    /// How the subtasks' outcomes combine.
    #[serde(default)]
    pub step_type: StepType,
    /// Which upstream steps' results the step's tasks see (serialised in the document form:
    /// absent, `"*"`, or a list of names).
    #[serde(default, skip_serializing_if = "ContextFrom::is_predecessors")]
    pub context_from: ContextFrom,
    /// Design-time hint from the PSOP format; accepted and ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<i64>,
    /// The longest the step's subtasks may take, together, from the step's start (seconds in
    /// JSON); always inside the run's own deadline. `None`: the run's deadline alone.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::seconds::option"
    )]
    pub timeout: Option<Duration>,
}

/// One logical subtask: a remote agent (or, with delegation, a child workflow) and what to ask.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subtask {
    /// The agent to send to (nonblank unless `workflow` is set or the step is SELF_LOOP).
    #[serde(default)]
    pub agent: String,
    /// The skill requested of the agent.
    #[serde(default)]
    pub skill: String,
    /// What the task is about; the host's `on_task` turns it into content.
    #[serde(default)]
    pub description: String,
    /// A child workflow id to run instead of an agent (delegation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// How the subtask's dispatch is retried; `None`: the run's default policy, if any (none
    /// unless the host configured one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
    /// The longest this subtask may take, every attempt included, from its start (seconds in
    /// JSON); always inside its step's timeout and the run's deadline.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::seconds::option"
    )]
    pub timeout: Option<Duration>,
}

/// An outgoing edge. A blank condition is unconditional.
///
/// The target's name and the condition are [`SharedStr`]s: the loader gives every edge to the
/// same step one shared name, and every equal condition (most often the blank one) another
/// (interned per document), so a workflow with many edges holds each text once and an `Edge` is
/// 16 bytes. Their JSON forms are plain strings, as in the document.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Edge {
    /// Target step name.
    pub step: SharedStr,
    /// Condition text for the host's `on_route`; blank = always taken, no callback.
    #[serde(default)]
    pub condition: SharedStr,
}

impl Edge {
    /// An edge to `step` taken when `condition` holds (blank: always).
    pub fn new(step: impl Into<SharedStr>, condition: impl Into<SharedStr>) -> Self {
        Edge {
            step: step.into(),
            condition: condition.into(),
        }
    }

    /// True when the edge is taken without asking the host.
    pub fn is_unconditional(&self) -> bool {
        self.condition.trim().is_empty()
    }
}

/// How a step's subtasks combine into the step's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StepType {
    /// Every subtask must succeed.
    #[default]
    AllSuccess,
    /// The first success wins; unfinished siblings are cancelled.
    AnySuccess,
    /// Each subtask is local work through `on_self_task`; nothing is sent.
    SelfLoop,
}

impl StepType {
    /// The canonical string (`ALL_SUCCESS`, `ANY_SUCCESS`, `SELF_LOOP`).
    pub const fn as_str(self) -> &'static str {
        match self {
            StepType::AllSuccess => "ALL_SUCCESS",
            StepType::AnySuccess => "ANY_SUCCESS",
            StepType::SelfLoop => "SELF_LOOP",
        }
    }
}

/// Which upstream results a step's tasks receive in `workflow_input`.
///
/// Its JSON form is the workflow document's: `"*"` for [`ContextFrom::AllAncestors`], a list of
/// names for [`ContextFrom::Steps`], and absent (the field skipped) for
/// [`ContextFrom::Predecessors`] — so a serialised [`Workflow`] is a loadable document.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ContextFrom {
    /// Absent in the document: the direct predecessors that ran.
    #[default]
    Predecessors,
    /// `"*"`: every completed ancestor.
    AllAncestors,
    /// Named steps (an empty list means none), exactly as the document listed them. A list that
    /// mixes [`CONTEXT_WILDCARD`] with names stays here as written, so that
    /// [`crate::validate()`] can report it (`workflow.context_wildcard_mixed`).
    Steps(Vec<String>),
}

/// The `contextFrom` entry that means "every completed ancestor".
pub const CONTEXT_WILDCARD: &str = "*";

impl Serialize for ContextFrom {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            // Only reached when serialised on its own; inside a Step the field is skipped.
            ContextFrom::Predecessors => serializer.serialize_none(),
            ContextFrom::AllAncestors => serializer.serialize_str(CONTEXT_WILDCARD),
            ContextFrom::Steps(names) => names.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ContextFrom {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            One(String),
            Many(Vec<String>),
        }
        Ok(match Option::<Form>::deserialize(deserializer)? {
            None => ContextFrom::Predecessors,
            Some(Form::One(name)) => ContextFrom::from_names(vec![name]),
            Some(Form::Many(names)) => ContextFrom::from_names(names),
        })
    }
}

impl ContextFrom {
    /// True for the default (direct predecessors), which documents express by omission.
    pub fn is_predecessors(&self) -> bool {
        matches!(self, ContextFrom::Predecessors)
    }

    /// From a list as written in a document: exactly `["*"]` is [`ContextFrom::AllAncestors`];
    /// every other list (including `[]` and `"*"` mixed with names) is [`ContextFrom::Steps`].
    pub fn from_names(names: Vec<String>) -> Self {
        if names.len() == 1 && names[0] == CONTEXT_WILDCARD {
            ContextFrom::AllAncestors
        } else {
            ContextFrom::Steps(names)
        }
    }

    /// True when a named list also contains [`CONTEXT_WILDCARD`] (invalid; validation reports it).
    pub fn is_wildcard_mixed(&self) -> bool {
        matches!(self, ContextFrom::Steps(names)
            if names.len() > 1 && names.iter().any(|n| n == CONTEXT_WILDCARD))
    }
}
