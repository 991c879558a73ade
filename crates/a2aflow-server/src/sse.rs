//! The SSE stream of one task: the `task` first, then a `statusUpdate` for each state the run
//! reaches (the `result` artifact as an `artifactUpdate` just before the state that carries
//! it), closed after a terminal or interrupted state. Lines end in CRLF and a `: ping` comment
//! is sent while nothing happens, as sse-starlette does.

use crate::body::{Body, BodyError};
use crate::record::{self, Snapshot};
use crate::runs::Watch;
use a2a::{StreamResponse, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent};
use bytes::Bytes;
use futures_util::stream;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::time::Duration;

/// What a stream opens with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opening {
    /// The `task` (a new run, SubscribeToTask).
    Task,
    /// A `statusUpdate` (a follow-up on a task: the SDK sends no `task` first).
    Status,
}

/// How each event is framed.
#[derive(Debug, Clone)]
pub(crate) enum Framing {
    /// A JSON-RPC response with this request id around each `StreamResponse`.
    JsonRpc(Value),
    /// The bare `StreamResponse` (HTTP+JSON).
    Rest,
}

struct State {
    watch: Watch,
    last: Snapshot,
    framing: Framing,
    ping: Duration,
    queued: VecDeque<Bytes>,
    done: bool,
}

/// The stream body of `watch`, starting from `first` (the snapshot the client sees first).
pub(crate) fn task_stream(
    watch: Watch,
    first: Snapshot,
    opening: Opening,
    framing: Framing,
    ping: Duration,
) -> Body {
    let event = match opening {
        Opening::Task => StreamResponse::Task(record::task(&watch.meta, &first)),
        Opening::Status => status_update(&watch, &first),
    };
    let mut state = State {
        done: first.settled(),
        last: first,
        framing,
        ping,
        queued: VecDeque::new(),
        watch,
    };
    let opening = state.frame(&event);
    state.queued.push_back(opening);
    let frames = stream::unfold(state, |mut state| async move {
        let bytes = state.next().await?;
        Some((Ok::<_, BodyError>(Frame::data(bytes)), state))
    });
    StreamBody::new(frames).boxed_unsync()
}

impl State {
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(bytes) = self.queued.pop_front() {
                return Some(bytes);
            }
            if self.done {
                return None;
            }
            match tokio::time::timeout(self.ping, self.watch.rx.changed()).await {
                Err(_) => return Some(ping()),
                Ok(Err(_)) => return None,
                Ok(Ok(())) => {
                    let snapshot = self.watch.rx.borrow_and_update().clone();
                    self.advance(snapshot);
                }
            }
        }
    }

    /// Queues the events that take the client from `self.last` to `snapshot`.
    fn advance(&mut self, snapshot: Snapshot) {
        let gate = |s: &Snapshot| s.gate.as_ref().map(|g| g.local_task_id.clone());
        if snapshot.status == self.last.status && gate(&snapshot) == gate(&self.last) {
            return;
        }
        let meta = &self.watch.meta;
        if let Some(artifact) = record::artifact(meta, &snapshot) {
            let event = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: meta.execution_id.clone(),
                context_id: meta.context_id.clone(),
                artifact,
                append: None,
                last_chunk: Some(true),
                metadata: None,
            });
            let bytes = self.frame(&event);
            self.queued.push_back(bytes);
        }
        let event = status_update(&self.watch, &snapshot);
        let bytes = self.frame(&event);
        self.queued.push_back(bytes);
        self.done = snapshot.settled();
        self.last = snapshot;
    }

    fn frame(&self, event: &StreamResponse) -> Bytes {
        frame(&self.framing, event)
    }
}

/// The stream of one `task` that will never change: the event, then the end.
pub(crate) fn once(task: Task, framing: Framing) -> Body {
    let bytes = frame(&framing, &StreamResponse::Task(task));
    let frames = stream::iter([Ok::<_, BodyError>(Frame::data(bytes))]);
    StreamBody::new(frames).boxed_unsync()
}

/// The `statusUpdate` of `watch`'s task at `snapshot`.
fn status_update(watch: &Watch, snapshot: &Snapshot) -> StreamResponse {
    let meta = &watch.meta;
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: meta.execution_id.clone(),
        context_id: meta.context_id.clone(),
        status: record::status(meta, snapshot),
        metadata: None,
    })
}

/// One SSE event, framed.
fn frame(framing: &Framing, event: &StreamResponse) -> Bytes {
    let payload = serde_json::to_value(event).unwrap_or(Value::Null);
    let value = match framing {
        Framing::JsonRpc(id) => json!({ "result": payload, "id": id, "jsonrpc": "2.0" }),
        Framing::Rest => payload,
    };
    Bytes::from(format!("data: {value}\r\n\r\n"))
}

fn ping() -> Bytes {
    let now = chrono::Utc::now().format("%Y-%m-%d %H:%M:%S%.6f%:z");
    Bytes::from(format!(": ping - {now}\r\n\r\n"))
}
