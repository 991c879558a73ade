//! The in-memory task store: one entry per task with its state, history, artifacts and an
//! append-only event log that streams follow. Locks are never held across an await.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use a2a::TaskState;
use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::clock::now_rfc3339;
use crate::script::{ArtifactChunk, FollowUp};
use crate::wire_error::{A2aError, ErrorKind};

/// Whether `state` ends a stream (terminal or interrupted).
pub(crate) fn closes_stream(state: &TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

/// The ProtoJSON enum name of a state.
pub(crate) fn state_name(state: &TaskState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "TASK_STATE_UNSPECIFIED".into())
}

/// One event in a task's log.
#[derive(Clone, Debug)]
pub(crate) enum LogEvent {
    /// A `StreamResponse` payload (`{"statusUpdate": …}` or `{"artifactUpdate": …}`).
    Update {
        payload: Arc<Value>,
        /// The update moved the task to a terminal or interrupted state.
        closes: bool,
    },
    /// The agent crashed; the stream ends with `event: error`.
    Crash { message: Arc<str> },
}

struct TaskInner {
    state: TaskState,
    status_message: Option<Value>,
    timestamp: Option<String>,
    artifacts: Vec<Value>,
    history: Vec<Value>,
    metadata: Option<Map<String, Value>>,
    log: Vec<LogEvent>,
    follow_up: Option<FollowUp>,
}

/// One task.
pub(crate) struct TaskEntry {
    pub(crate) id: Arc<str>,
    pub(crate) context_id: Arc<str>,
    inner: Mutex<TaskInner>,
    seq: watch::Sender<usize>,
    /// Cancelled when the task is cancelled or the server stops.
    pub(crate) token: CancellationToken,
}

impl TaskEntry {
    /// A SUBMITTED task whose history holds the first user message.
    pub(crate) fn new(
        id: Arc<str>,
        context_id: Arc<str>,
        first_message: Value,
        metadata: Option<Map<String, Value>>,
        token: CancellationToken,
    ) -> Arc<Self> {
        let (seq, _) = watch::channel(0);
        Arc::new(Self {
            id,
            context_id,
            inner: Mutex::new(TaskInner {
                state: TaskState::Submitted,
                status_message: None,
                timestamp: None,
                artifacts: Vec::new(),
                history: vec![first_message],
                metadata,
                log: Vec::new(),
                follow_up: None,
            }),
            seq,
            token,
        })
    }

    fn lock(&self) -> MutexGuard<'_, TaskInner> {
        // A poisoned lock only means a panic elsewhere mid-update; the data is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current state.
    pub(crate) fn state(&self) -> TaskState {
        self.lock().state.clone()
    }

    /// The task as ProtoJSON. `history_length`: `None` = all, `Some(0)` = omit.
    pub(crate) fn snapshot(&self, history_length: Option<usize>, include_artifacts: bool) -> Value {
        let g = self.lock();
        self.snapshot_of(&g, history_length, include_artifacts)
    }

    /// A full snapshot and the log cursor just after it, taken atomically (for SubscribeToTask).
    pub(crate) fn snapshot_and_cursor(&self) -> (Value, usize) {
        let g = self.lock();
        (self.snapshot_of(&g, None, true), g.log.len())
    }

    fn snapshot_of(
        &self,
        g: &TaskInner,
        history_length: Option<usize>,
        include_artifacts: bool,
    ) -> Value {
        let mut status = Map::new();
        status.insert("state".into(), state_name(&g.state).into());
        if let Some(m) = &g.status_message {
            status.insert("message".into(), m.clone());
        }
        if let Some(t) = &g.timestamp {
            status.insert("timestamp".into(), t.clone().into());
        }
        let mut task = Map::new();
        task.insert("id".into(), self.id.as_ref().into());
        task.insert("contextId".into(), self.context_id.as_ref().into());
        task.insert("status".into(), Value::Object(status));
        if include_artifacts && !g.artifacts.is_empty() {
            task.insert("artifacts".into(), Value::Array(g.artifacts.clone()));
        }
        let keep = history_length.unwrap_or(usize::MAX).min(g.history.len());
        if keep > 0 {
            let from = g.history.len() - keep;
            task.insert("history".into(), Value::Array(g.history[from..].to_vec()));
        }
        if let Some(md) = &g.metadata {
            task.insert("metadata".into(), Value::Object(md.clone()));
        }
        Value::Object(task)
    }

    /// The number of events logged so far (a cursor for [`Self::events_from`]).
    pub(crate) fn log_len(&self) -> usize {
        self.lock().log.len()
    }

    /// Events from `cursor` on.
    pub(crate) fn events_from(&self, cursor: usize) -> Vec<LogEvent> {
        let g = self.lock();
        g.log.get(cursor..).map(<[_]>::to_vec).unwrap_or_default()
    }

    /// A receiver that changes whenever an event is logged.
    pub(crate) fn watch(&self) -> watch::Receiver<usize> {
        self.seq.subscribe()
    }

    fn publish(&self, g: &mut TaskInner, event: LogEvent) {
        g.log.push(event);
        let n = g.log.len();
        self.seq.send_replace(n);
    }

    fn status_payload(&self, g: &TaskInner) -> Value {
        let mut status = Map::new();
        status.insert("state".into(), state_name(&g.state).into());
        if let Some(m) = &g.status_message {
            status.insert("message".into(), m.clone());
        }
        if let Some(t) = &g.timestamp {
            status.insert("timestamp".into(), t.clone().into());
        }
        json!({"statusUpdate": {
            "taskId": self.id.as_ref(),
            "contextId": self.context_id.as_ref(),
            "status": Value::Object(status),
        }})
    }

    fn apply_status(&self, g: &mut TaskInner, state: TaskState, message: Option<Value>) {
        if let Some(previous) = g.status_message.take() {
            g.history.push(previous);
        }
        g.state = state;
        g.status_message = message;
        g.timestamp = Some(now_rfc3339());
        let closes = closes_stream(&g.state);
        let payload = Arc::new(self.status_payload(g));
        self.publish(g, LogEvent::Update { payload, closes });
    }

    /// Moves to `state`. Returns `false` (and changes nothing) once the task is terminal.
    pub(crate) fn set_status(&self, state: TaskState, message: Option<Value>) -> bool {
        let mut g = self.lock();
        if g.state.is_terminal() {
            return false;
        }
        self.apply_status(&mut g, state, message);
        true
    }

    /// Moves to an interrupted state and parks `then` for the follow-up, atomically.
    pub(crate) fn interrupt(
        &self,
        state: TaskState,
        message: Option<Value>,
        then: FollowUp,
    ) -> bool {
        let mut g = self.lock();
        if g.state.is_terminal() {
            return false;
        }
        g.follow_up = Some(then);
        self.apply_status(&mut g, state, message);
        true
    }

    /// Records an artifact update. Returns `false` once the task is terminal.
    pub(crate) fn add_artifact(&self, chunk: &ArtifactChunk) -> bool {
        let mut g = self.lock();
        if g.state.is_terminal() {
            return false;
        }
        let mut artifact = Map::new();
        artifact.insert("artifactId".into(), chunk.artifact_id.clone().into());
        if let Some(n) = &chunk.name {
            artifact.insert("name".into(), n.clone().into());
        }
        artifact.insert("parts".into(), Value::Array(chunk.parts.clone()));
        if let Some(md) = &chunk.metadata {
            artifact.insert("metadata".into(), Value::Object(md.clone()));
        }
        let artifact = Value::Object(artifact);
        let existing = g
            .artifacts
            .iter_mut()
            .find(|a| a.get("artifactId").and_then(Value::as_str) == Some(&chunk.artifact_id));
        match existing {
            Some(a) if chunk.append => {
                if let Some(parts) = a.get_mut("parts").and_then(Value::as_array_mut) {
                    parts.extend(chunk.parts.iter().cloned());
                }
            }
            Some(a) => *a = artifact.clone(),
            None => g.artifacts.push(artifact.clone()),
        }
        let mut update = Map::new();
        update.insert("taskId".into(), self.id.as_ref().into());
        update.insert("contextId".into(), self.context_id.as_ref().into());
        update.insert("artifact".into(), artifact);
        if chunk.append {
            update.insert("append".into(), true.into());
        }
        if chunk.last_chunk {
            update.insert("lastChunk".into(), true.into());
        }
        let payload = Arc::new(json!({ "artifactUpdate": Value::Object(update) }));
        self.publish(
            &mut g,
            LogEvent::Update {
                payload,
                closes: false,
            },
        );
        true
    }

    /// Merges task metadata.
    pub(crate) fn merge_metadata(&self, md: &Map<String, Value>) {
        let mut g = self.lock();
        let target = g.metadata.get_or_insert_with(Map::new);
        for (k, v) in md {
            target.insert(k.clone(), v.clone());
        }
    }

    /// The agent crashed: FAILED without a status event, then a crash event.
    pub(crate) fn crash(&self, message: &str) {
        let mut g = self.lock();
        if g.state.is_terminal() {
            return;
        }
        g.state = TaskState::Failed;
        g.timestamp = Some(now_rfc3339());
        g.follow_up = None;
        self.publish(
            &mut g,
            LogEvent::Crash {
                message: Arc::from(message),
            },
        );
    }

    /// CancelTask: CANCELED with a status message, or TASK_NOT_CANCELABLE when terminal.
    pub(crate) fn cancel(&self) -> Result<(), A2aError> {
        {
            let mut g = self.lock();
            if g.state.is_terminal() {
                return Err(A2aError::new(
                    ErrorKind::TaskNotCancelable,
                    "Task cannot be canceled",
                ));
            }
            g.follow_up = None;
            let msg = crate::message::AgentMessage::text("canceled on request")
                .to_wire(&self.context_id, Some(&self.id));
            self.apply_status(&mut g, TaskState::Canceled, Some(msg));
        }
        self.token.cancel();
        Ok(())
    }

    /// A follow-up message for this task: checks it may continue, appends the message to the
    /// history and hands back the parked continuation.
    pub(crate) fn take_follow_up(&self, message: Value) -> Result<FollowUp, A2aError> {
        let mut g = self.lock();
        if g.state.is_terminal() {
            return Err(A2aError::new(
                ErrorKind::UnsupportedOperation,
                format!(
                    "Task {} is in terminal state: {}",
                    self.id,
                    state_name(&g.state)
                ),
            ));
        }
        let Some(then) = g.follow_up.take() else {
            return Err(A2aError::new(
                ErrorKind::UnsupportedOperation,
                format!(
                    "Task {} is not awaiting input (state {})",
                    self.id,
                    state_name(&g.state)
                ),
            ));
        };
        // The question comes before the answer in the history (as in the Python SDK).
        if let Some(question) = g.status_message.take() {
            g.history.push(question);
        }
        g.history.push(message);
        Ok(then)
    }
}

/// An agent's tasks, bounded: past the bound the oldest terminal tasks are evicted.
pub(crate) struct TaskStore {
    inner: Mutex<StoreInner>,
    bound: usize,
}

#[derive(Default)]
struct StoreInner {
    by_id: HashMap<Arc<str>, Arc<TaskEntry>>,
    order: VecDeque<Arc<TaskEntry>>,
}

impl TaskStore {
    pub(crate) fn new(bound: usize) -> Self {
        Self {
            inner: Mutex::new(StoreInner::default()),
            bound,
        }
    }

    fn lock(&self) -> MutexGuard<'_, StoreInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a task. Past the bound, the oldest terminal tasks are evicted in one sweep down to
    /// 90 % of the bound, so the sweep's cost is spread over many inserts. Running or
    /// interrupted tasks are never evicted (the store may then exceed its bound).
    pub(crate) fn insert(&self, entry: Arc<TaskEntry>) {
        let mut g = self.lock();
        g.by_id.insert(entry.id.clone(), entry.clone());
        g.order.push_back(entry);
        if g.order.len() <= self.bound {
            return;
        }
        let target = (self.bound - self.bound / 10).max(1);
        let mut excess = g.order.len().saturating_sub(target);
        let order = std::mem::take(&mut g.order);
        let mut kept = VecDeque::with_capacity(order.len());
        for e in order {
            if excess > 0 && e.state().is_terminal() {
                g.by_id.remove(&e.id);
                excess -= 1;
            } else {
                kept.push_back(e);
            }
        }
        g.order = kept;
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<TaskEntry>> {
        self.lock().by_id.get(id).cloned()
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().order.len()
    }

    /// Tasks of `context_id` (or all), newest first.
    pub(crate) fn list(&self, context_id: Option<&str>) -> Vec<Arc<TaskEntry>> {
        let g = self.lock();
        g.order
            .iter()
            .rev()
            .filter(|e| context_id.is_none_or(|c| e.context_id.as_ref() == c))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, ctx: &str) -> Arc<TaskEntry> {
        TaskEntry::new(
            Arc::from(id),
            Arc::from(ctx),
            json!({"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}),
            None,
            CancellationToken::new(),
        )
    }

    #[test]
    fn eviction_drops_oldest_terminal_only() {
        let store = TaskStore::new(2);
        let a = entry("a", "c");
        let b = entry("b", "c");
        let c = entry("c", "c");
        store.insert(a.clone());
        store.insert(b.clone());
        b.set_status(TaskState::Completed, None);
        store.insert(c);
        assert_eq!(
            store.len(),
            2,
            "one terminal task evicted (target is max(1, 90% of 2))"
        );
        assert!(store.get("a").is_some(), "running task a must survive");
        assert!(
            store.get("b").is_none(),
            "terminal task b is the oldest terminal"
        );
    }

    #[test]
    fn cancel_terminal_is_not_cancelable_and_status_moves_to_history() {
        let e = entry("t", "c");
        e.set_status(TaskState::Working, Some(json!({"messageId":"w"})));
        e.cancel().unwrap();
        let snap = e.snapshot(None, true);
        assert_eq!(snap["status"]["state"], "TASK_STATE_CANCELED");
        assert_eq!(snap["history"].as_array().unwrap().len(), 2);
        assert_eq!(e.cancel().unwrap_err().kind, ErrorKind::TaskNotCancelable);
        assert!(e.token.is_cancelled());
        assert!(!e.set_status(TaskState::Completed, None));
    }

    #[test]
    fn artifacts_append_chunks() {
        let e = entry("t", "c");
        e.add_artifact(&ArtifactChunk::new("a1", [a2a::Part::text("x")]).name("n"));
        e.add_artifact(
            &ArtifactChunk::new("a1", [a2a::Part::text("y")])
                .append(true)
                .last_chunk(true),
        );
        let snap = e.snapshot(Some(0), true);
        assert_eq!(
            snap["artifacts"][0]["parts"],
            json!([{"text":"x"},{"text":"y"}])
        );
        assert!(snap.get("history").is_none());
        let evs = e.events_from(1);
        let LogEvent::Update { payload, closes } = &evs[0] else {
            panic!()
        };
        assert!(!closes);
        assert_eq!(payload["artifactUpdate"]["append"], json!(true));
        assert_eq!(payload["artifactUpdate"]["lastChunk"], json!(true));
    }
}
