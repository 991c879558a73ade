//! Scripts: what an agent does with one message — reply with a message, or run a task as a
//! sequence of [`Step`]s.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use a2a::TaskState;
use serde_json::{Map, Value};

use crate::message::{AgentMessage, IncomingMessage, Proposal, part_to_json};

/// Chooses the next script from a follow-up message (after `INPUT_REQUIRED`/`AUTH_REQUIRED`,
/// or after a pre-task reply).
pub type FollowUp = Arc<dyn Fn(&IncomingMessage) -> Script + Send + Sync>;

/// What an agent does with one incoming message.
///
/// ```
/// use a2aflow_testkit::{Script, TaskScript};
/// let reply = Script::reply_text("hi");
/// let task: Script = TaskScript::new().working().artifact_text("answer", "42").complete().into();
/// # let _ = (reply, task);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Script {
    /// Answer with a single `Message` (no task).
    Reply(Reply),
    /// Create a task and run its steps.
    Task(TaskScript),
}

impl Script {
    /// A direct reply with one text part.
    pub fn reply_text(text: impl Into<String>) -> Self {
        Self::Reply(Reply::new(AgentMessage::text(text)))
    }

    /// A direct reply with the given message.
    pub fn reply(message: AgentMessage) -> Self {
        Self::Reply(Reply::new(message))
    }
}

impl From<TaskScript> for Script {
    fn from(t: TaskScript) -> Self {
        Self::Task(t)
    }
}

impl From<Reply> for Script {
    fn from(r: Reply) -> Self {
        Self::Reply(r)
    }
}

/// A direct `Message` reply, optionally waiting for a follow-up on the same `contextId`
/// (A2A-T pre-task mode: a follow-up without `taskId` but with this `contextId` runs `then`).
#[derive(Clone)]
pub struct Reply {
    pub(crate) message: AgentMessage,
    pub(crate) then: Option<FollowUp>,
}

impl Reply {
    /// A reply with the given message.
    pub fn new(message: AgentMessage) -> Self {
        Self {
            message,
            then: None,
        }
    }

    /// A pre-task Negotiation-T PROPOSE as a bare message.
    pub fn propose(proposal: &Proposal) -> Self {
        Self::new(proposal.to_message())
    }

    /// Waits for a follow-up on the same context and runs the script `then` chooses.
    pub fn then(
        mut self,
        then: impl Fn(&IncomingMessage) -> Script + Send + Sync + 'static,
    ) -> Self {
        self.then = Some(Arc::new(then));
        self
    }
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply")
            .field("message", &self.message)
            .field("then", &self.then.is_some())
            .finish()
    }
}

/// One artifact update: a whole artifact or one chunk of it.
#[derive(Debug, Clone)]
pub struct ArtifactChunk {
    pub(crate) artifact_id: String,
    pub(crate) name: Option<String>,
    pub(crate) parts: Vec<Value>,
    pub(crate) append: bool,
    pub(crate) last_chunk: bool,
    pub(crate) metadata: Option<Map<String, Value>>,
}

impl ArtifactChunk {
    /// A chunk of artifact `artifact_id` with the given parts (`append`/`lastChunk` false).
    pub fn new(artifact_id: impl Into<String>, parts: impl IntoIterator<Item = a2a::Part>) -> Self {
        Self {
            artifact_id: artifact_id.into(),
            name: None,
            parts: parts.into_iter().map(|p| part_to_json(&p)).collect(),
            append: false,
            last_chunk: false,
            metadata: None,
        }
    }

    /// Sets the artifact name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Marks this chunk as appended to the earlier parts of the same artifact.
    pub fn append(mut self, append: bool) -> Self {
        self.append = append;
        self
    }

    /// Marks this chunk as the last one.
    pub fn last_chunk(mut self, last: bool) -> Self {
        self.last_chunk = last;
        self
    }

    /// Sets one artifact metadata key.
    pub fn metadata(mut self, key: impl Into<String>, value: Value) -> Self {
        self.metadata
            .get_or_insert_with(Map::new)
            .insert(key.into(), value);
        self
    }

    /// Adds a raw JSON part (any shape).
    pub fn raw_part(mut self, part: Value) -> Self {
        self.parts.push(part);
        self
    }
}

/// One step of a task script.
#[derive(Clone)]
#[non_exhaustive]
pub enum Step {
    /// Move to `state`, with an optional status message.
    Status {
        /// The new state.
        state: TaskState,
        /// The status message, if any.
        message: Option<AgentMessage>,
    },
    /// Move to an interrupted state (`INPUT_REQUIRED`/`AUTH_REQUIRED`) and wait for a follow-up
    /// message on the same task; `then` chooses how the task continues.
    Interrupt {
        /// The interrupted state.
        state: TaskState,
        /// The status message, if any.
        message: Option<AgentMessage>,
        /// Chooses the continuation from the follow-up.
        then: FollowUp,
    },
    /// Emit an artifact update.
    Artifact(ArtifactChunk),
    /// Sleep (tokio time; cancellable).
    Delay(Duration),
    /// Stay as is until the task is cancelled or the server shuts down.
    Hang,
    /// Fail like an agent that raised: the task becomes `FAILED`, a blocking send gets a
    /// JSON-RPC `-32603` / REST 500, a stream gets an `event: error`.
    Crash(String),
    /// Merge keys into the task's metadata (no event).
    TaskMetadata(Map<String, Value>),
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Status { state, message } => f
                .debug_struct("Status")
                .field("state", state)
                .field("message", message)
                .finish(),
            Self::Interrupt { state, message, .. } => f
                .debug_struct("Interrupt")
                .field("state", state)
                .field("message", message)
                .finish_non_exhaustive(),
            Self::Artifact(a) => f.debug_tuple("Artifact").field(a).finish(),
            Self::Delay(d) => f.debug_tuple("Delay").field(d).finish(),
            Self::Hang => f.write_str("Hang"),
            Self::Crash(m) => f.debug_tuple("Crash").field(m).finish(),
            Self::TaskMetadata(m) => f.debug_tuple("TaskMetadata").field(m).finish(),
        }
    }
}

/// A task as a sequence of steps. Every task starts `SUBMITTED`; when the steps run out and the
/// task is neither terminal nor interrupted, it is completed.
///
/// ```
/// use std::time::Duration;
/// use a2aflow_testkit::{AgentMessage, Proposal, Script, TaskScript};
/// let negotiating = TaskScript::new()
///     .working()
///     .propose(&Proposal::information(1, 3, "area"), |reply| {
///         match reply.negotiation().map(|c| c.performative) {
///             Some(p) if p == "ACCEPT" => TaskScript::new().complete_with("done").into(),
///             _ => TaskScript::new().fail("no agreement").into(),
///         }
///     });
/// let slow = TaskScript::new().working().delay(Duration::from_millis(50)).complete();
/// # let _ = (negotiating, slow);
/// ```
#[derive(Clone, Debug, Default)]
pub struct TaskScript {
    pub(crate) steps: Vec<Step>,
}

impl TaskScript {
    /// An empty script (the task completes at once).
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends any step.
    pub fn step(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    /// The steps so far.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Moves to `state` without a status message.
    pub fn status(self, state: TaskState) -> Self {
        self.step(Step::Status {
            state,
            message: None,
        })
    }

    /// Moves to `state` with a status message.
    pub fn status_with(self, state: TaskState, message: AgentMessage) -> Self {
        self.step(Step::Status {
            state,
            message: Some(message),
        })
    }

    /// `WORKING`.
    pub fn working(self) -> Self {
        self.status(TaskState::Working)
    }

    /// `WORKING` with a text status message.
    pub fn working_with(self, text: impl Into<String>) -> Self {
        self.status_with(TaskState::Working, AgentMessage::text(text))
    }

    /// A whole artifact (`lastChunk: true`) with one text part and a fresh id.
    pub fn artifact_text(self, name: &str, text: &str) -> Self {
        self.artifact(
            ArtifactChunk::new(uuid::Uuid::new_v4().to_string(), [a2a::Part::text(text)])
                .name(name)
                .last_chunk(true),
        )
    }

    /// A whole artifact (`lastChunk: true`) with one data part and a fresh id.
    pub fn artifact_data(self, name: &str, data: Value) -> Self {
        self.artifact(
            ArtifactChunk::new(uuid::Uuid::new_v4().to_string(), [a2a::Part::data(data)])
                .name(name)
                .last_chunk(true),
        )
    }

    /// An artifact update (whole or chunk).
    pub fn artifact(self, chunk: ArtifactChunk) -> Self {
        self.step(Step::Artifact(chunk))
    }

    /// Sleeps.
    pub fn delay(self, d: Duration) -> Self {
        self.step(Step::Delay(d))
    }

    /// `COMPLETED`.
    pub fn complete(self) -> Self {
        self.status(TaskState::Completed)
    }

    /// `COMPLETED` with a text status message.
    pub fn complete_with(self, text: impl Into<String>) -> Self {
        self.status_with(TaskState::Completed, AgentMessage::text(text))
    }

    /// `FAILED` with a text status message.
    pub fn fail(self, text: impl Into<String>) -> Self {
        self.status_with(TaskState::Failed, AgentMessage::text(text))
    }

    /// `REJECTED` with a text status message.
    pub fn reject(self, text: impl Into<String>) -> Self {
        self.status_with(TaskState::Rejected, AgentMessage::text(text))
    }

    /// `CANCELED` (by the agent itself) with a text status message.
    pub fn cancel(self, text: impl Into<String>) -> Self {
        self.status_with(TaskState::Canceled, AgentMessage::text(text))
    }

    /// `INPUT_REQUIRED` with `message`; a follow-up on the task continues with `then`'s script.
    pub fn input_required(
        self,
        message: AgentMessage,
        then: impl Fn(&IncomingMessage) -> Script + Send + Sync + 'static,
    ) -> Self {
        self.step(Step::Interrupt {
            state: TaskState::InputRequired,
            message: Some(message),
            then: Arc::new(then),
        })
    }

    /// `AUTH_REQUIRED` with `message`; a follow-up on the task continues with `then`'s script.
    pub fn auth_required(
        self,
        message: AgentMessage,
        then: impl Fn(&IncomingMessage) -> Script + Send + Sync + 'static,
    ) -> Self {
        self.step(Step::Interrupt {
            state: TaskState::AuthRequired,
            message: Some(message),
            then: Arc::new(then),
        })
    }

    /// `INPUT_REQUIRED` carrying a Negotiation-T PROPOSE; the reply continues with `then`'s script.
    pub fn propose(
        self,
        proposal: &Proposal,
        then: impl Fn(&IncomingMessage) -> Script + Send + Sync + 'static,
    ) -> Self {
        self.input_required(proposal.to_message(), then)
    }

    /// Waits until cancelled (or the server stops).
    pub fn hang(self) -> Self {
        self.step(Step::Hang)
    }

    /// Fails like an agent that raised (see [`Step::Crash`]).
    pub fn crash(self, message: impl Into<String>) -> Self {
        self.step(Step::Crash(message.into()))
    }

    /// Merges keys into the task metadata.
    pub fn task_metadata(self, metadata: Map<String, Value>) -> Self {
        self.step(Step::TaskMetadata(metadata))
    }
}
