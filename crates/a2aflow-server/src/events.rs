//! The events of one task's stream, shared by both stream framings (SSE and gRPC): the opening
//! event (the `task`, or a `statusUpdate` for a follow-up), then a `statusUpdate` for each state
//! the run reaches (the `result` artifact as an `artifactUpdate` just before the state that
//! carries it), ending after a terminal or interrupted state.

use crate::record::{self, Snapshot};
use crate::runs::Watch;
use a2a::{StreamResponse, TaskArtifactUpdateEvent, TaskStatusUpdateEvent};
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

/// What the stream has next.
pub(crate) enum Event {
    /// An event for the client (boxed: it is large, and most of the stream's waits end in one).
    Update(Box<StreamResponse>),
    /// Nothing happened for the idle interval (SSE sends a `: ping` comment).
    Idle,
}

/// The events of one watched task.
pub(crate) struct TaskEvents {
    watch: Watch,
    last: Snapshot,
    idle: Duration,
    queued: VecDeque<StreamResponse>,
    done: bool,
}

impl TaskEvents {
    /// The events of `watch`, starting from `first` (the snapshot the client sees first); `idle`
    /// is how long [`TaskEvents::next`] waits before it says [`Event::Idle`].
    pub(crate) fn new(watch: Watch, first: Snapshot, opening: Opening, idle: Duration) -> Self {
        let event = match opening {
            Opening::Task => StreamResponse::Task(record::task(&watch.meta, &first)),
            Opening::Status => status_update(&watch, &first),
        };
        TaskEvents {
            done: first.settled(),
            last: first,
            idle,
            queued: VecDeque::from([event]),
            watch,
        }
    }

    /// The next event; `None` once the task settled (or its run's state is gone).
    pub(crate) async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.queued.pop_front() {
                return Some(Event::Update(Box::new(event)));
            }
            if self.done {
                return None;
            }
            match tokio::time::timeout(self.idle, self.watch.rx.changed()).await {
                Err(_) => return Some(Event::Idle),
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
            self.queued
                .push_back(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                    task_id: meta.execution_id.clone(),
                    context_id: meta.context_id.clone(),
                    artifact,
                    append: None,
                    last_chunk: Some(true),
                    metadata: None,
                }));
        }
        let event = status_update(&self.watch, &snapshot);
        self.queued.push_back(event);
        self.done = snapshot.settled();
        self.last = snapshot;
    }
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
