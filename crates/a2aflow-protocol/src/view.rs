//! The response reducer: folds the A2A objects an agent sends back (Task snapshots, status and
//! artifact updates, direct messages) into one current view of the remote task plus the
//! [`ReceivedMessage`] evidence the host sees.
//!
//! Rules: a Task snapshot replaces the whole view (artifacts included); an artifact update with
//! `append` concatenates parts onto the artifact with the same id, in arrival order, otherwise it
//! replaces that artifact; `lastChunk` closes it; a status update sets the state and the status
//! message and merges its metadata into the task metadata. Message, task and artifact metadata stay
//! at their own levels. Identity is checked on every object: the task id is nonblank, the context id
//! is ours, and the task id never changes once known.
//!
//! Sizes are capped ([`ResponseReducer::with_caps`]): one assembled artifact, and everything one
//! task keeps (its artifacts, the messages kept as evidence, its metadata), each counted as
//! content bytes (text, raw bytes, URLs, serialized data and metadata). An object that would pass a cap is refused with
//! `a2a.response_too_large` before it changes the view. Appending a chunk costs the chunk's size
//! only: nothing already assembled is copied.

use crate::Limits;
use crate::size;
use a2aflow_model::a2a::{
    Artifact, Message, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatusUpdateEvent,
};
use a2aflow_model::{ErrorCode, Failure, ReceivedKind, ReceivedMessage};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// The current state of one remote interaction, as the reducer sees it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskView {
    /// The remote task id, once the agent revealed one.
    pub task_id: Option<String>,
    /// The last task state seen (`None` until a task or status arrives).
    pub state: Option<TaskState>,
    /// The last status message.
    pub status_message: Option<Message>,
    /// Task-level metadata (snapshot metadata, merged with status-update metadata).
    pub task_metadata: Option<Map<String, Value>>,
    /// Artifacts in first-seen order, chunks assembled.
    pub artifacts: Vec<Artifact>,
    /// The last direct (taskless) message, when the answer was a Message.
    pub direct_message: Option<Message>,
}

impl TaskView {
    /// True when the state is COMPLETED, FAILED, CANCELED or REJECTED.
    pub fn is_terminal(&self) -> bool {
        self.state.as_ref().is_some_and(TaskState::is_terminal)
    }

    /// True when the state is only an acknowledgement (SUBMITTED or WORKING).
    pub fn is_acknowledgement(&self) -> bool {
        matches!(self.state, Some(TaskState::Submitted | TaskState::Working))
    }
}

/// What one applied object was, for events.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The object as evidence (artifact updates carry the assembled artifact so far).
    pub received: ReceivedMessage,
    /// For artifact updates: whether it appended.
    pub append: bool,
    /// For artifact updates: whether it was the last chunk.
    pub last_chunk: bool,
}

/// What one folded object was, enough to build its [`Applied`] (or its event) from the view
/// afterwards ([`ResponseReducer::fold`], [`ResponseReducer::applied`]).
#[derive(Debug)]
pub struct Folded {
    /// What kind of object it was.
    pub kind: ReceivedKind,
    /// The event's own metadata (status and artifact updates).
    pub event_meta: Option<Map<String, Value>>,
    /// For artifact updates: the assembled artifact's index in the view.
    pub(crate) artifact: Option<usize>,
    /// For artifact updates: whether it appended.
    pub append: bool,
    /// For artifact updates: whether it was the last chunk.
    pub last_chunk: bool,
}

impl Folded {
    fn plain(kind: ReceivedKind, event_meta: Option<Map<String, Value>>) -> Self {
        Folded {
            kind,
            event_meta,
            artifact: None,
            append: false,
            last_chunk: false,
        }
    }
}

/// Folds a sequence of A2A responses for one logical task into a [`TaskView`] and evidence.
#[derive(Debug, Clone)]
pub struct ResponseReducer {
    context_id: String,
    view: TaskView,
    closed: HashSet<String>,
    evidence: Vec<ReceivedMessage>,
    last_status_message_id: Option<String>,
    identity_code: ErrorCode,
    caps: Caps,
    sizes: Sizes,
}

/// The size caps of one task's answer, in content bytes.
#[derive(Debug, Clone, Copy)]
struct Caps {
    artifact: usize,
    evidence: usize,
}

/// Content bytes held, kept beside the view so that no check walks what is already assembled.
#[derive(Debug, Clone, Default)]
struct Sizes {
    /// Per artifact, in the view's order.
    artifacts: Vec<usize>,
    /// The messages kept as evidence (status and direct messages), with their metadata.
    evidence: usize,
    /// The task metadata (merged status-update metadata counts each time it arrives).
    metadata: usize,
}

impl Sizes {
    fn total(&self) -> usize {
        self.artifacts
            .iter()
            .fold(self.evidence.saturating_add(self.metadata), |a, b| {
                a.saturating_add(*b)
            })
    }
}

fn too_large(what: &'static str, message: String, limit: usize) -> Failure {
    Failure::new(ErrorCode::A2aResponseTooLarge, message)
        .with_detail("what", what)
        .with_detail("limitBytes", limit)
}

/// A2A metadata (a `HashMap`) as a JSON map, keys sorted so output is deterministic.
pub fn json_map(m: &HashMap<String, Value>) -> Map<String, Value> {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    keys.into_iter()
        .map(|k| (k.clone(), m[k].clone()))
        .collect()
}

fn invalid(message: impl Into<String>) -> Failure {
    Failure::new(ErrorCode::A2aInvalidResponse, message)
}

impl ResponseReducer {
    /// A reducer for the logical task using `context_id`.
    pub fn new(context_id: impl Into<String>) -> Self {
        ResponseReducer {
            context_id: context_id.into(),
            view: TaskView::default(),
            closed: HashSet::new(),
            evidence: Vec::new(),
            last_status_message_id: None,
            identity_code: ErrorCode::A2aInvalidResponse,
            caps: Caps {
                artifact: Limits::DEFAULT_MAX_ARTIFACT,
                evidence: Limits::DEFAULT_MAX_TASK_EVIDENCE,
            },
            sizes: Sizes::default(),
        }
    }

    /// With other size caps: the largest assembled artifact and the largest total a task keeps
    /// (artifacts, evidence messages, metadata), in content bytes. The defaults are
    /// [`Limits::DEFAULT_MAX_ARTIFACT`] and [`Limits::DEFAULT_MAX_TASK_EVIDENCE`].
    pub fn with_caps(mut self, max_artifact: usize, max_task_evidence: usize) -> Self {
        self.caps = Caps {
            artifact: max_artifact,
            evidence: max_task_evidence,
        };
        self
    }

    /// Fails when the task would hold `total` content bytes, past its cap.
    fn check_total(&self, total: usize) -> Result<(), Failure> {
        if total > self.caps.evidence {
            return Err(too_large(
                "task evidence",
                format!(
                    "The task's answer exceeded the limit of {} bytes",
                    self.caps.evidence
                ),
                self.caps.evidence,
            ));
        }
        Ok(())
    }

    /// Fails when artifact `id` would hold `bytes` content bytes, past its cap.
    fn check_artifact(&self, id: &str, bytes: usize) -> Result<(), Failure> {
        if bytes > self.caps.artifact {
            return Err(too_large(
                "artifact",
                format!(
                    "Artifact {id} exceeded the limit of {} bytes",
                    self.caps.artifact
                ),
                self.caps.artifact,
            )
            .with_detail("artifactId", id.to_owned()));
        }
        Ok(())
    }

    /// A reducer that already knows the remote task id (follow-ups, attach).
    pub fn with_task_id(context_id: impl Into<String>, task_id: impl Into<String>) -> Self {
        let mut r = Self::new(context_id);
        r.view.task_id = Some(task_id.into());
        r
    }

    /// From now on identity changes are reported as `negotiation.identity_changed`.
    pub fn mark_negotiating(&mut self) {
        self.identity_code = ErrorCode::NegotiationIdentityChanged;
    }

    /// The context id this reducer checks against.
    pub fn context_id(&self) -> &str {
        &self.context_id
    }

    /// The current view.
    pub fn view(&self) -> &TaskView {
        &self.view
    }

    /// The remote task id, once known.
    pub fn task_id(&self) -> Option<&str> {
        self.view.task_id.as_deref()
    }

    /// Forgets the last state (before a follow-up send, so the next answer is judged afresh) and the
    /// last direct message; artifacts and metadata stay until a snapshot replaces them.
    pub fn begin_follow_up(&mut self) {
        self.view.state = None;
        self.view.direct_message = None;
    }

    /// Checks a received object's identity: a nonblank task id, this reducer's context id, and
    /// the task id the view knows, if it knows one. `Ok(true)` when it knows none yet: the caller
    /// records this one.
    fn identity(&self, task_id: &str, context_id: &str) -> Result<bool, Failure> {
        if task_id.trim().is_empty() {
            return Err(invalid("Remote task has a blank task id"));
        }
        if context_id != self.context_id {
            return Err(
                Failure::new(self.identity_code, "Remote task/context identity changed")
                    .with_detail("expectedContextId", self.context_id.clone())
                    .with_detail("receivedContextId", context_id.to_owned()),
            );
        }
        match &self.view.task_id {
            Some(known) if known != task_id => Err(Failure::new(
                self.identity_code,
                "Remote task/context identity changed",
            )
            .with_detail("expectedTaskId", known.clone())
            .with_detail("receivedTaskId", task_id.to_owned())),
            Some(_) => Ok(false),
            None => Ok(true),
        }
    }

    /// [`identity`](Self::identity) of an object being folded, whose task id moves into the view
    /// when it is the first one (instead of being copied from an object dropped afterwards).
    fn check_identity(&mut self, task_id: String, context_id: &str) -> Result<(), Failure> {
        if self.identity(&task_id, context_id)? {
            self.view.task_id = Some(task_id);
        }
        Ok(())
    }

    /// Keeps the view's status message as evidence the first time it is seen. The evidence's
    /// task metadata is the snapshot's (Task) or the event's own (status update).
    fn note_status_message(
        &mut self,
        kind: ReceivedKind,
        event_meta: Option<&Map<String, Value>>,
    ) -> Result<(), Failure> {
        let Some(msg) = &self.view.status_message else {
            return Ok(());
        };
        if self.last_status_message_id.as_deref() == Some(msg.message_id.as_str()) {
            return Ok(());
        }
        let metadata = match kind {
            ReceivedKind::Task => self.view.task_metadata.clone(),
            _ => event_meta.cloned(),
        };
        let bytes = size::message(msg).saturating_add(metadata.as_ref().map_or(0, size::json_map));
        self.check_total(self.sizes.total().saturating_add(bytes))?;
        self.sizes.evidence = self.sizes.evidence.saturating_add(bytes);
        self.last_status_message_id = Some(msg.message_id.clone());
        self.evidence.push(ReceivedMessage {
            kind,
            task_id: self.view.task_id.clone(),
            context_id: Some(self.context_id.clone()),
            state: self.view.state.clone(),
            message: Some(msg.clone()),
            task_metadata: metadata,
            artifacts: Vec::new(),
        });
        Ok(())
    }

    /// Applies one streaming event (or a SendMessage / GetTask result wrapped as one).
    pub fn apply(&mut self, event: StreamResponse) -> Result<Applied, Failure> {
        let folded = self.fold(event)?;
        Ok(self.applied(folded))
    }

    /// Applies a full Task snapshot: it replaces state, status message, metadata and artifacts.
    pub fn apply_task(&mut self, task: Task) -> Result<Applied, Failure> {
        let folded = self.fold_task(task)?;
        Ok(self.applied(folded))
    }

    /// [`apply`](Self::apply) without building the [`Applied`] evidence: the same checks and the
    /// same view and evidence afterwards. [`applied`](Self::applied) builds it when it is wanted
    /// (for events), from the view, before the next object is folded.
    pub fn fold(&mut self, event: StreamResponse) -> Result<Folded, Failure> {
        match event {
            StreamResponse::Task(t) => self.fold_task(t),
            StreamResponse::Message(m) => self.fold_message(m),
            StreamResponse::StatusUpdate(s) => self.fold_status(s),
            StreamResponse::ArtifactUpdate(a) => self.fold_artifact(a),
        }
    }

    /// The [`Applied`] of the object just folded.
    pub fn applied(&self, folded: Folded) -> Applied {
        let Folded {
            kind,
            event_meta,
            artifact,
            append,
            last_chunk,
        } = folded;
        let received = match kind {
            ReceivedKind::StatusUpdate => ReceivedMessage {
                kind,
                task_id: self.view.task_id.clone(),
                context_id: Some(self.context_id.clone()),
                state: self.view.state.clone(),
                message: self.view.status_message.clone(),
                task_metadata: event_meta,
                artifacts: Vec::new(),
            },
            ReceivedKind::ArtifactUpdate => ReceivedMessage {
                kind,
                task_id: self.view.task_id.clone(),
                context_id: Some(self.context_id.clone()),
                state: self.view.state.clone(),
                message: None,
                task_metadata: event_meta,
                artifacts: artifact
                    .and_then(|i| self.view.artifacts.get(i))
                    .cloned()
                    .into_iter()
                    .collect(),
            },
            // A snapshot or a direct message: the view is exactly that object.
            _ => self.current_evidence(ReceivedKind::Task),
        };
        Applied {
            received,
            append,
            last_chunk,
        }
    }

    fn fold_task(&mut self, task: Task) -> Result<Folded, Failure> {
        self.check_identity(task.id, &task.context_id)?;
        let artifacts = task.artifacts.unwrap_or_default();
        let sizes: Vec<usize> = artifacts.iter().map(size::artifact).collect();
        for (a, bytes) in artifacts.iter().zip(&sizes) {
            self.check_artifact(&a.artifact_id, *bytes)?;
        }
        let metadata = task.metadata.as_ref().map(json_map);
        let metadata_bytes = metadata.as_ref().map_or(0, size::json_map);
        let total = sizes.iter().fold(
            self.sizes.evidence.saturating_add(metadata_bytes),
            |a, b| a.saturating_add(*b),
        );
        self.check_total(total)?;
        self.sizes.artifacts = sizes;
        self.sizes.metadata = metadata_bytes;
        self.view.state = Some(task.status.state);
        self.view.status_message = task.status.message;
        self.view.task_metadata = metadata;
        self.view.artifacts = artifacts;
        self.closed.clear();
        self.view.direct_message = None;
        self.note_status_message(ReceivedKind::Task, None)?;
        Ok(Folded::plain(ReceivedKind::Task, None))
    }

    fn fold_message(&mut self, msg: Message) -> Result<Folded, Failure> {
        if let Some(ctx) = msg.context_id.as_deref()
            && ctx != self.context_id
        {
            return Err(
                Failure::new(self.identity_code, "Remote task/context identity changed")
                    .with_detail("expectedContextId", self.context_id.clone())
                    .with_detail("receivedContextId", ctx.to_owned()),
            );
        }
        if let Some(tid) = msg.task_id.as_deref().filter(|t| !t.trim().is_empty())
            && self.identity(tid, &self.context_id)?
        {
            // The message itself is kept whole (the direct message): its task id is copied.
            self.view.task_id = Some(tid.to_owned());
        }
        let bytes = size::message(&msg);
        self.check_total(self.sizes.total().saturating_add(bytes))?;
        self.sizes.evidence = self.sizes.evidence.saturating_add(bytes);
        self.view.direct_message = Some(msg);
        let received = self.current_evidence(ReceivedKind::Message);
        self.evidence.push(received);
        Ok(Folded::plain(ReceivedKind::Message, None))
    }

    fn fold_status(&mut self, ev: TaskStatusUpdateEvent) -> Result<Folded, Failure> {
        self.check_identity(ev.task_id, &ev.context_id)?;
        let event_meta = ev.metadata.as_ref().map(json_map);
        let meta_bytes = event_meta.as_ref().map_or(0, size::json_map);
        self.check_total(self.sizes.total().saturating_add(meta_bytes))?;
        self.sizes.metadata = self.sizes.metadata.saturating_add(meta_bytes);
        self.view.state = Some(ev.status.state);
        if ev.status.message.is_some() {
            self.view.status_message = ev.status.message;
        }
        if let Some(meta) = &event_meta {
            let merged = self.view.task_metadata.get_or_insert_with(Map::new);
            for (k, v) in meta {
                merged.insert(k.clone(), v.clone());
            }
        }
        self.note_status_message(ReceivedKind::StatusUpdate, event_meta.as_ref())?;
        Ok(Folded::plain(ReceivedKind::StatusUpdate, event_meta))
    }

    fn fold_artifact(&mut self, ev: TaskArtifactUpdateEvent) -> Result<Folded, Failure> {
        self.check_identity(ev.task_id, &ev.context_id)?;
        let append = ev.append.unwrap_or(false);
        let last_chunk = ev.last_chunk.unwrap_or(false);
        let incoming = ev.artifact;
        let id = incoming.artifact_id.clone();
        if id.trim().is_empty() {
            return Err(invalid("Artifact update has a blank artifactId"));
        }
        let pos = self.view.artifacts.iter().position(|a| a.artifact_id == id);
        if pos.is_some() && append && self.closed.contains(&id) {
            return Err(invalid(format!(
                "Artifact {id} received a chunk after its last chunk"
            )));
        }
        let incoming_bytes = size::artifact(&incoming);
        let held = pos.map_or(0, |i| self.sizes.artifacts[i]);
        let (artifact_bytes, total) = if append && pos.is_some() {
            (
                held.saturating_add(incoming_bytes),
                self.sizes.total().saturating_add(incoming_bytes),
            )
        } else {
            (
                incoming_bytes,
                (self.sizes.total() - held).saturating_add(incoming_bytes),
            )
        };
        self.check_artifact(&id, artifact_bytes)?;
        self.check_total(total)?;
        let index = match (pos, append) {
            (Some(i), true) => {
                append_chunk(&mut self.view.artifacts[i], incoming);
                i
            }
            (Some(i), false) => {
                self.closed.remove(&id);
                self.view.artifacts[i] = incoming;
                i
            }
            (None, _) => {
                self.view.artifacts.push(incoming);
                self.sizes.artifacts.push(0);
                self.view.artifacts.len() - 1
            }
        };
        self.sizes.artifacts[index] = artifact_bytes;
        if last_chunk {
            self.closed.insert(id);
        }
        Ok(Folded {
            kind: ReceivedKind::ArtifactUpdate,
            event_meta: ev.metadata.as_ref().map(json_map),
            artifact: Some(index),
            append,
            last_chunk,
        })
    }

    /// The current view as one piece of evidence: the direct message when the answer was a
    /// Message, otherwise the task (state, status message, task metadata, assembled artifacts).
    pub fn current_evidence(&self, kind: ReceivedKind) -> ReceivedMessage {
        // Only the direct message is copied when the answer was one (not the whole view).
        if let Some(m) = &self.view.direct_message {
            return message_evidence(m.clone(), self.context_id.clone());
        }
        view_evidence(kind, self.view.clone(), self.context_id.clone())
    }

    /// The artifact an artifact update was folded into (its assembled state).
    pub fn folded_artifact(&self, folded: &Folded) -> Option<&Artifact> {
        folded.artifact.and_then(|i| self.view.artifacts.get(i))
    }

    /// True when [`evidence`](Self::evidence) ends with the task's final view (there is a task
    /// with a state, and the answer was not a direct message): that last entry is then what
    /// [`current_evidence`](Self::current_evidence) would build.
    pub fn evidence_ends_with_view(&self) -> bool {
        self.view.task_id.is_some()
            && self.view.state.is_some()
            && self.view.direct_message.is_none()
    }

    /// All evidence so far, ending with the final view of the task (when there is a task).
    /// Direct messages and each distinct status message appear once, in arrival order.
    pub fn evidence(&self) -> Vec<ReceivedMessage> {
        // Exactly the room needed: a `ReceivedMessage` is 352 bytes, and the first push into an
        // empty vector reserves four (1.4 KB kept per task by the run's result).
        let mut out = Vec::with_capacity(self.evidence.len() + 1);
        out.extend_from_slice(&self.evidence);
        let fin = self
            .evidence_ends_with_view()
            .then(|| self.current_evidence(ReceivedKind::Task));
        close_evidence(out, fin)
    }

    /// [`evidence`](Self::evidence), for the end of an interaction: the evidence and the final
    /// view move out instead of being copied (artifacts, status message, metadata). The reducer
    /// is left with no evidence; when the view went into the evidence, with an empty view and
    /// an empty context id too (both moved into the view's entry).
    pub fn take_evidence(&mut self) -> Vec<ReceivedMessage> {
        let ends = self.evidence_ends_with_view();
        let mut out = std::mem::take(&mut self.evidence);
        let fin = ends.then(|| {
            let view = std::mem::take(&mut self.view);
            self.sizes = Sizes::default();
            view_evidence(
                ReceivedKind::Task,
                view,
                std::mem::take(&mut self.context_id),
            )
        });
        out.reserve_exact(usize::from(fin.is_some()));
        close_evidence(out, fin)
    }
}

/// Appends a chunk onto the artifact assembled so far: its parts move in, its name and
/// description replace, its metadata merges, its extensions join (each once).
fn append_chunk(slot: &mut Artifact, incoming: Artifact) {
    slot.parts.extend(incoming.parts);
    if incoming.name.is_some() {
        slot.name = incoming.name;
    }
    if incoming.description.is_some() {
        slot.description = incoming.description;
    }
    if let Some(meta) = incoming.metadata {
        slot.metadata.get_or_insert_with(HashMap::new).extend(meta);
    }
    if let Some(exts) = incoming.extensions {
        let have = slot.extensions.get_or_insert_with(Vec::new);
        for e in exts {
            if !have.contains(&e) {
                have.push(e);
            }
        }
    }
}

/// The evidence entry for `view`: its direct message when the answer was one, else the task
/// view as `kind`.
fn view_evidence(kind: ReceivedKind, view: TaskView, context_id: String) -> ReceivedMessage {
    if let Some(m) = view.direct_message {
        return message_evidence(m, context_id);
    }
    ReceivedMessage {
        kind,
        task_id: view.task_id,
        context_id: Some(context_id),
        state: view.state,
        message: view.status_message,
        task_metadata: view.task_metadata,
        artifacts: view.artifacts,
    }
}

/// The evidence entry of a direct message.
fn message_evidence(m: Message, context_id: String) -> ReceivedMessage {
    ReceivedMessage {
        kind: ReceivedKind::Message,
        task_id: m.task_id.clone().filter(|t| !t.trim().is_empty()),
        context_id: Some(context_id),
        state: None,
        message: Some(m),
        task_metadata: None,
        artifacts: Vec::new(),
    }
}

/// Appends the final view's entry `fin` to the evidence `out`. The final snapshot repeats the
/// last status message, so an earlier entry carrying the same message is dropped.
fn close_evidence(
    mut out: Vec<ReceivedMessage>,
    fin: Option<ReceivedMessage>,
) -> Vec<ReceivedMessage> {
    if let Some(fin) = fin {
        if let (Some(last), Some(msg)) = (out.last(), fin.message.as_ref())
            && last.kind != ReceivedKind::Message
            && last.message.as_ref().map(|m| &m.message_id) == Some(&msg.message_id)
        {
            out.pop();
        }
        out.push(fin);
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use a2aflow_model::a2a::{Part, Role, TaskStatus};
    use serde_json::json;

    pub(crate) fn task(id: &str, ctx: &str, state: TaskState) -> Task {
        Task {
            id: id.into(),
            context_id: ctx.into(),
            status: TaskStatus {
                state,
                message: None,
                timestamp: None,
            },
            artifacts: None,
            history: None,
            metadata: None,
        }
    }

    pub(crate) fn artifact(id: &str, parts: Vec<Part>) -> Artifact {
        Artifact {
            artifact_id: id.into(),
            name: None,
            description: None,
            parts,
            metadata: None,
            extensions: None,
        }
    }

    fn chunk(id: &str, text: &str, append: bool, last: bool) -> StreamResponse {
        StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: "t1".into(),
            context_id: "c1".into(),
            artifact: artifact(id, vec![Part::text(text)]),
            append: Some(append),
            last_chunk: Some(last),
            metadata: None,
        })
    }

    fn texts(a: &Artifact) -> Vec<&str> {
        a.parts.iter().filter_map(Part::as_text).collect()
    }

    #[test]
    fn appended_chunks_assemble_by_artifact_id_in_order() {
        let mut r = ResponseReducer::new("c1");
        r.apply(StreamResponse::Task(task("t1", "c1", TaskState::Working)))
            .unwrap();
        r.apply(chunk("a", "one", false, false)).unwrap();
        r.apply(chunk("b", "x", false, true)).unwrap();
        let applied = r.apply(chunk("a", "two", true, false)).unwrap();
        assert!(applied.append);
        assert_eq!(texts(&applied.received.artifacts[0]), ["one", "two"]);
        r.apply(chunk("a", "three", true, true)).unwrap();
        let v = r.view();
        assert_eq!(v.artifacts.len(), 2);
        assert_eq!(texts(&v.artifacts[0]), ["one", "two", "three"]);
        assert_eq!(texts(&v.artifacts[1]), ["x"]);
        let err = r.apply(chunk("a", "late", true, false)).unwrap_err();
        assert!(err.is(ErrorCode::A2aInvalidResponse));
    }

    #[test]
    fn size_caps_refuse_what_would_pass_them_before_it_changes_the_view() {
        let mut r = ResponseReducer::new("c1").with_caps(10, 16);
        r.apply(chunk("a", "12345", false, false)).unwrap();
        r.apply(chunk("a", "67890", true, false)).unwrap();
        let e = r.apply(chunk("a", "x", true, false)).unwrap_err();
        assert!(e.is(ErrorCode::A2aResponseTooLarge), "{e:?}");
        assert_eq!(e.details["what"], json!("artifact"));
        assert_eq!(e.details["limitBytes"], json!(10));
        assert_eq!(texts(&r.view().artifacts[0]), ["12345", "67890"]);
        // A replacement frees what it replaces.
        r.apply(chunk("a", "short", false, false)).unwrap();
        r.apply(chunk("b", "0123456789", false, false)).unwrap();
        let e = r.apply(chunk("c", "xy", false, false)).unwrap_err();
        assert_eq!(e.details["what"], json!("task evidence"));
        // Evidence messages count too.
        let mut r = ResponseReducer::new("c1").with_caps(100, 8);
        let mut t = task("t1", "c1", TaskState::Working);
        t.status.message = Some(Message::new(Role::Agent, vec![Part::text("123456789")]));
        let e = r.apply_task(t).unwrap_err();
        assert!(e.is(ErrorCode::A2aResponseTooLarge));
        // A snapshot's artifacts are measured whole.
        let mut r = ResponseReducer::new("c1").with_caps(4, 100);
        let mut t = task("t1", "c1", TaskState::Completed);
        t.artifacts = Some(vec![artifact("z", vec![Part::text("final")])]);
        assert!(
            r.apply_task(t)
                .unwrap_err()
                .is(ErrorCode::A2aResponseTooLarge)
        );
    }

    #[test]
    fn non_append_update_replaces_and_snapshot_replaces_everything() {
        let mut r = ResponseReducer::new("c1");
        r.apply(chunk("a", "one", false, false)).unwrap();
        r.apply(chunk("a", "fresh", false, false)).unwrap();
        assert_eq!(texts(&r.view().artifacts[0]), ["fresh"]);
        let mut t = task("t1", "c1", TaskState::Completed);
        t.artifacts = Some(vec![artifact("z", vec![Part::text("final")])]);
        r.apply(StreamResponse::Task(t.clone())).unwrap();
        // Repeated snapshots never duplicate content.
        r.apply(StreamResponse::Task(t)).unwrap();
        assert_eq!(r.view().artifacts.len(), 1);
        assert_eq!(texts(&r.view().artifacts[0]), ["final"]);
    }

    #[test]
    fn status_update_sets_state_message_and_merges_metadata_at_task_level() {
        let mut r = ResponseReducer::new("c1");
        let mut t = task("t1", "c1", TaskState::Submitted);
        t.metadata = Some(HashMap::from([("k".to_owned(), json!(1))]));
        r.apply_task(t).unwrap();
        let mut msg = Message::new(Role::Agent, vec![Part::text("need input")]);
        msg.metadata = Some(HashMap::from([("m".to_owned(), json!("msg-level"))]));
        r.apply(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus {
                state: TaskState::InputRequired,
                message: Some(msg),
                timestamp: None,
            },
            metadata: Some(HashMap::from([("e".to_owned(), json!(2))])),
        }))
        .unwrap();
        let v = r.view();
        assert_eq!(v.state, Some(TaskState::InputRequired));
        let meta = v.task_metadata.as_ref().unwrap();
        assert_eq!((meta["k"].clone(), meta["e"].clone()), (json!(1), json!(2)));
        assert!(
            !meta.contains_key("m"),
            "message metadata stays in the message"
        );
        let ev = r.evidence();
        let last = ev.last().unwrap();
        assert_eq!(last.kind, ReceivedKind::Task);
        assert_eq!(
            last.message.as_ref().unwrap().metadata.as_ref().unwrap()["m"],
            json!("msg-level")
        );
        assert_eq!(
            ev.len(),
            1,
            "the status message appears once, in the final view"
        );
    }

    #[test]
    fn distinct_status_messages_are_kept_as_evidence_once() {
        let mut r = ResponseReducer::new("c1");
        let mut t = task("t1", "c1", TaskState::Working);
        t.status.message = Some(Message::new(Role::Agent, vec![Part::text("thinking")]));
        r.apply_task(t.clone()).unwrap();
        r.apply_task(t).unwrap();
        let mut done = task("t1", "c1", TaskState::Failed);
        done.status.message = Some(Message::new(Role::Agent, vec![Part::text("boom")]));
        r.apply_task(done).unwrap();
        let ev = r.evidence();
        let texts: Vec<_> = ev
            .iter()
            .map(|e| e.message.as_ref().and_then(Message::text).unwrap_or(""))
            .collect();
        assert_eq!(texts, ["thinking", "boom"]);
    }

    #[test]
    fn s_task_15_identity_checks() {
        let mut r = ResponseReducer::new("c1");
        let e = r
            .apply_task(task("t1", "other", TaskState::Working))
            .unwrap_err();
        assert!(e.is(ErrorCode::A2aInvalidResponse));
        assert_eq!(e.message, "Remote task/context identity changed");
        let e = r
            .apply_task(task(" ", "c1", TaskState::Working))
            .unwrap_err();
        assert_eq!(e.message, "Remote task has a blank task id");
        r.apply_task(task("t1", "c1", TaskState::Working)).unwrap();
        r.mark_negotiating();
        let e = r
            .apply_task(task("t2", "c1", TaskState::Working))
            .unwrap_err();
        assert!(e.is(ErrorCode::NegotiationIdentityChanged));
        assert_eq!(e.details["receivedTaskId"], json!("t2"));
        assert_eq!(r.task_id(), Some("t1"));
    }

    #[test]
    fn direct_message_is_evidence_and_foreign_context_fails() {
        let mut r = ResponseReducer::new("c1");
        let mut m = Message::new(Role::Agent, vec![Part::text("here you go")]);
        m.context_id = Some("c1".into());
        r.apply(StreamResponse::Message(m.clone())).unwrap();
        assert_eq!(r.view().direct_message.as_ref(), Some(&m));
        assert_eq!(r.evidence().len(), 1);
        assert_eq!(r.evidence()[0].kind, ReceivedKind::Message);
        m.context_id = Some("c2".into());
        assert!(r.apply(StreamResponse::Message(m)).is_err());
    }

    #[test]
    fn moving_the_evidence_out_gives_what_copying_it_gives() {
        let with_message = |state, text: &str| {
            let mut t = task("t1", "c1", state);
            t.status.message = Some(Message::new(Role::Agent, vec![Part::text(text)]));
            StreamResponse::Task(t)
        };
        let mut direct = Message::new(Role::Agent, vec![Part::text("here you go")]);
        direct.context_id = Some("c1".into());
        let cases: Vec<Vec<StreamResponse>> = vec![
            // No answer at all: no evidence.
            vec![],
            // A snapshot, then the final state repeating the status message.
            vec![
                with_message(TaskState::Working, "thinking"),
                with_message(TaskState::Completed, "thinking"),
            ],
            // Distinct status messages, each kept once.
            vec![
                with_message(TaskState::Working, "thinking"),
                with_message(TaskState::Failed, "boom"),
            ],
            // A direct message.
            vec![StreamResponse::Message(direct)],
        ];
        for events in cases {
            let mut r = ResponseReducer::new("c1");
            for e in events {
                r.apply(e).unwrap();
            }
            let copied = r.evidence();
            assert_eq!(r.take_evidence(), copied);
            assert!(r.evidence().is_empty());
        }
    }
}
