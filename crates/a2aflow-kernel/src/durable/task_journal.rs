//! The [`DispatchJournal`] of one logical task of a durable run: each send is journaled
//! (`TaskIntent`, awaited) before the client lets it go, the remote task id as the client
//! reports it, and the last remote state with the next write.

use super::Durable;
use crate::client::{DispatchJournal, SendIntent};
use crate::journal::{JournalRecord, TaskIntent};
use a2aflow_model::a2a::TaskState;
use a2aflow_model::{Failure, TaskRequest};
use async_trait::async_trait;

/// The journal of one dispatch (or re-attachment).
pub(crate) struct TaskJournal<'a> {
    pub(crate) durable: &'a Durable,
    pub(crate) request: &'a TaskRequest,
    /// The attempt whose sends this journal records, from 1.
    pub(crate) attempt: u32,
}

#[async_trait]
impl DispatchJournal for TaskJournal<'_> {
    fn is_enabled(&self) -> bool {
        true
    }

    async fn before_send(&self, send: SendIntent<'_>) -> Result<(), Failure> {
        let r = self.request;
        let intent = TaskIntent {
            step: r.step_name.to_string(),
            subtask_index: r.subtask_index,
            local_task_id: r.local_task_id.to_string(),
            agent: r.agent.to_string(),
            skill: r.skill.to_string(),
            attempt: self.attempt,
            message_id: send.message_id.to_owned(),
            context_id: send.context_id.to_owned(),
            content: send.content.clone(),
        };
        self.durable
            .write_for(&r.local_task_id, vec![JournalRecord::TaskIntent(intent)])
            .await?;
        // The append may have waited long (a paused process): the lease must still be ours.
        self.durable.may_send().await
    }

    fn send_check(&self) -> Option<crate::SendCheck> {
        Some(self.durable.send_check())
    }

    async fn remote_task_known(&self, _context_id: &str, remote_task_id: &str) {
        let local = &self.request.local_task_id;
        if self.durable.remote_id(local).as_deref() == Some(remote_task_id) {
            return;
        }
        self.durable.note_remote_id(local, remote_task_id);
        // A failure stops the run (see `Durable::write`); the dispatch is cancelled with it.
        let _ = self
            .durable
            .write(vec![JournalRecord::RemoteTaskKnown {
                local_task_id: local.to_string(),
                remote_task_id: remote_task_id.to_owned(),
            }])
            .await;
    }

    async fn remote_task_named(
        &self,
        context_id: &str,
        remote_task_id: &str,
        state: Option<TaskState>,
    ) {
        let local = &self.request.local_task_id;
        let state = match state {
            Some(s) if s.is_terminal() => s,
            other => {
                self.remote_task_known(context_id, remote_task_id).await;
                if let Some(s) = other {
                    self.remote_state(remote_task_id, s).await;
                }
                return;
            }
        };
        // Named already finished (a blocking reply, mostly): the task's end comes next, and
        // the id goes in its append. A crash before that append finds the task again by its
        // context id (ListTasks) instead of by this id; nothing else reads it.
        if self.durable.remote_id(local).as_deref() != Some(remote_task_id) {
            self.durable.note_remote_id(local, remote_task_id);
            self.durable.hold_for(
                local,
                JournalRecord::RemoteTaskKnown {
                    local_task_id: local.to_string(),
                    remote_task_id: remote_task_id.to_owned(),
                },
            );
        }
        self.durable.hold_for(
            local,
            JournalRecord::RemoteState {
                local_task_id: local.to_string(),
                state,
            },
        );
    }

    async fn remote_state(&self, _remote_task_id: &str, state: TaskState) {
        // Nothing waits for it: it rides with the next write (the task's end, at the latest).
        self.durable
            .remote_state(&self.request.local_task_id, state);
    }
}
