//! What a resumed run takes from its journal: the answers already given, the tasks and steps
//! already finished, what was sent and not finished, and the cancels still to send.

use crate::journal::{Answer, CallbackAnswered, JournalRecord, RunJournal, TaskIntent};
use a2aflow_model::{FailureCode, OpenGate, ReceivedMessage};
use a2aflow_model::{
    MessageContent, NegotiationReply, RouteDecision, StepResult, TaskResult, TaskResultView,
};
use std::collections::{HashMap, HashSet};

/// Where a task's gate stands in the journal, when its last round stopped at one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum GateState {
    /// Open: the host has not answered.
    Open {
        gate: OpenGate,
        evidence: Vec<ReceivedMessage>,
    },
    /// Answered, and the answer not sent yet.
    Answered {
        gate: OpenGate,
        content: MessageContent,
    },
    /// Declined by the host.
    Declined {
        gate: OpenGate,
        code: FailureCode,
        reason: String,
    },
}

impl GateState {
    fn gate(&self) -> &OpenGate {
        match self {
            GateState::Open { gate, .. }
            | GateState::Answered { gate, .. }
            | GateState::Declined { gate, .. } => gate,
        }
    }
}

/// A remote task to cancel on resume: its cancel was journaled and never sent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PendingCancel {
    pub(crate) local_task_id: String,
    pub(crate) agent: String,
    pub(crate) remote_task_id: String,
}

/// The facts of a journal, keyed for lookup (empty for a fresh run).
#[derive(Debug, Default)]
pub(crate) struct Replay {
    on_task: HashMap<String, Answer<MessageContent>>,
    on_self_task: HashMap<String, Answer<TaskResult>>,
    on_route: HashMap<(String, String), Answer<RouteDecision>>,
    /// Keyed by local task id, attempt and exchange.
    on_negotiation: HashMap<(String, u32, u32), Answer<NegotiationReply>>,
    /// The last send of each logical task.
    intents: HashMap<String, TaskIntent>,
    remote_ids: HashMap<String, String>,
    /// The remote tasks of a logical task's earlier attempts, oldest first.
    earlier: HashMap<String, Vec<String>>,
    tasks: HashMap<String, TaskResultView>,
    steps: HashMap<String, StepResult>,
    /// A run-level cancel was journaled (`a2aflow runs cancel`).
    cancel_run: bool,
    /// Per-task cancels journaled and not sent, in journal order.
    cancels: Vec<(String, String)>,
    /// The cancels sent: (local task id, remote task id).
    sent: HashSet<(String, String)>,
    /// The tasks whose last round stopped at a gate, with where it stands.
    gates: HashMap<String, GateState>,
}

impl Replay {
    /// The facts of `journal`.
    pub(crate) fn of(journal: &RunJournal) -> Self {
        let mut r = Replay::default();
        for entry in &journal.entries {
            r.take(&entry.record);
        }
        let sent = &r.sent;
        r.cancels.retain(|c| !sent.contains(c));
        r
    }

    fn take(&mut self, record: &JournalRecord) {
        match record {
            JournalRecord::CallbackAnswered(a) => self.answer(a),
            JournalRecord::TaskIntent(i) => {
                // A send after the gate's answer: the answer is out, the task in flight again.
                self.gates.remove(&i.local_task_id);
                self.intent(i);
            }
            JournalRecord::GateOpened { gate, evidence } => {
                let state = GateState::Open {
                    gate: gate.clone(),
                    evidence: evidence.clone(),
                };
                self.gates.insert(gate.local_task_id.clone(), state);
            }
            JournalRecord::GateAnswered {
                local_task_id,
                content,
            } => self.gate_replied(local_task_id, |gate| GateState::Answered {
                gate,
                content: content.clone(),
            }),
            JournalRecord::GateDeclined {
                local_task_id,
                code,
                reason,
            } => self.gate_replied(local_task_id, |gate| GateState::Declined {
                gate,
                code: code.clone(),
                reason: reason.clone(),
            }),
            JournalRecord::RemoteTaskKnown {
                local_task_id,
                remote_task_id,
            } => {
                self.remote_ids
                    .insert(local_task_id.clone(), remote_task_id.clone());
            }
            JournalRecord::TaskFinished {
                local_task_id,
                result,
            } => {
                self.tasks.insert(local_task_id.clone(), result.clone());
            }
            JournalRecord::StepFinished { result } => {
                self.steps
                    .insert(result.step_name.to_string(), result.clone());
            }
            JournalRecord::CancelRequested {
                local_task_id: None,
                remote_task_id: None,
            } => self.cancel_run = true,
            JournalRecord::CancelRequested {
                local_task_id: Some(local),
                remote_task_id: Some(remote),
            } => self.cancels.push((local.clone(), remote.clone())),
            JournalRecord::CancelSent {
                local_task_id,
                remote_task_id,
            } => {
                self.sent
                    .insert((local_task_id.clone(), remote_task_id.clone()));
            }
            _ => {}
        }
    }

    /// The host's reply to the open gate of `local_task_id` (a reply to no open gate is
    /// ignored: the board refuses those before they are journaled).
    fn gate_replied(&mut self, local_task_id: &str, reply: impl FnOnce(OpenGate) -> GateState) {
        if let Some(state @ GateState::Open { .. }) = self.gates.get_mut(local_task_id) {
            *state = reply(state.gate().clone());
        }
    }

    /// Where the gate of `local_task_id` stands, when its last round stopped at one.
    pub(crate) fn gate(&self, local_task_id: &str) -> Option<&GateState> {
        self.gates.get(local_task_id)
    }

    /// A send: the last one of its task. A send of a later attempt moves the previous attempt's
    /// remote task to the earlier ones.
    fn intent(&mut self, i: &TaskIntent) {
        let local = &i.local_task_id;
        let later = self
            .intents
            .get(local)
            .is_some_and(|last| i.attempt > last.attempt);
        if later && let Some(remote) = self.remote_ids.remove(local) {
            self.earlier.entry(local.clone()).or_default().push(remote);
        }
        self.intents.insert(local.clone(), i.clone());
    }

    fn answer(&mut self, a: &CallbackAnswered) {
        match a {
            CallbackAnswered::OnTask { key, answer } => {
                self.on_task
                    .insert(key.local_task_id.clone(), answer.clone());
            }
            CallbackAnswered::OnSelfTask { key, answer } => {
                self.on_self_task
                    .insert(key.local_task_id.clone(), answer.clone());
            }
            CallbackAnswered::OnRoute { key, answer } => {
                let edge = (key.source_step.clone(), key.target_step.clone());
                self.on_route.insert(edge, answer.clone());
            }
            CallbackAnswered::OnNegotiation { key, answer } => {
                let exchange = (key.local_task_id.clone(), key.attempt, key.exchange);
                self.on_negotiation.insert(exchange, answer.clone());
            }
        }
    }

    pub(crate) fn on_task(&self, local_task_id: &str) -> Option<&Answer<MessageContent>> {
        self.on_task.get(local_task_id)
    }

    pub(crate) fn on_self_task(&self, local_task_id: &str) -> Option<&Answer<TaskResult>> {
        self.on_self_task.get(local_task_id)
    }

    pub(crate) fn on_route(&self, source: &str, target: &str) -> Option<&Answer<RouteDecision>> {
        self.on_route.get(&(source.to_owned(), target.to_owned()))
    }

    pub(crate) fn on_negotiation(
        &self,
        local_task_id: &str,
        attempt: u32,
        exchange: u32,
    ) -> Option<&Answer<NegotiationReply>> {
        self.on_negotiation
            .get(&(local_task_id.to_owned(), attempt, exchange))
    }

    /// The last journaled send of a task that did not finish.
    pub(crate) fn in_flight(&self, local_task_id: &str) -> Option<&TaskIntent> {
        self.intents.get(local_task_id)
    }

    /// The remote tasks of the earlier attempts of a task, oldest first.
    pub(crate) fn earlier_attempts(&self, local_task_id: &str) -> &[String] {
        self.earlier.get(local_task_id).map_or(&[], Vec::as_slice)
    }

    pub(crate) fn remote_id(&self, local_task_id: &str) -> Option<&str> {
        self.remote_ids.get(local_task_id).map(String::as_str)
    }

    pub(crate) fn task(&self, local_task_id: &str) -> Option<&TaskResultView> {
        self.tasks.get(local_task_id)
    }

    pub(crate) fn step(&self, name: &str) -> Option<&StepResult> {
        self.steps.get(name)
    }

    pub(crate) fn cancel_run(&self) -> bool {
        self.cancel_run
    }

    /// The cancels to send on resume: every journaled one not sent, and — when the run was
    /// cancelled — every in-flight task whose remote id is known.
    pub(crate) fn pending_cancels(&self) -> Vec<PendingCancel> {
        let mut out: Vec<PendingCancel> = Vec::new();
        let agent_of = |local: &str| {
            self.intents
                .get(local)
                .map(|i| i.agent.clone())
                .unwrap_or_default()
        };
        for (local, remote) in &self.cancels {
            out.push(PendingCancel {
                local_task_id: local.clone(),
                agent: agent_of(local),
                remote_task_id: remote.clone(),
            });
        }
        if self.cancel_run {
            let mut in_flight: Vec<_> = self
                .remote_ids
                .iter()
                .filter(|(local, _)| !self.tasks.contains_key(*local))
                .filter(|(local, remote)| {
                    let pair = ((*local).clone(), (*remote).clone());
                    !self.sent.contains(&pair) && !self.cancels.contains(&pair)
                })
                .collect();
            in_flight.sort();
            for (local, remote) in in_flight {
                out.push(PendingCancel {
                    local_task_id: local.clone(),
                    agent: agent_of(local),
                    remote_task_id: remote.clone(),
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::JournalEntry;
    use a2aflow_model::MessageContent;

    fn intent(local: &str, message_id: &str) -> JournalRecord {
        JournalRecord::TaskIntent(TaskIntent {
            step: "s".into(),
            subtask_index: 0,
            local_task_id: local.into(),
            agent: "agent".into(),
            skill: "skill".into(),
            attempt: 1,
            message_id: message_id.into(),
            context_id: format!("ctx-{local}"),
            content: MessageContent::text("x"),
        })
    }

    fn journal(records: Vec<JournalRecord>) -> RunJournal {
        RunJournal {
            execution_id: "e".into(),
            entries: records
                .into_iter()
                .enumerate()
                .map(|(i, record)| JournalEntry {
                    seq: i as u64 + 1,
                    record,
                })
                .collect(),
        }
    }

    fn known(local: &str, remote: &str) -> JournalRecord {
        JournalRecord::RemoteTaskKnown {
            local_task_id: local.into(),
            remote_task_id: remote.into(),
        }
    }

    fn attempt(local: &str, message_id: &str, n: u32) -> JournalRecord {
        let JournalRecord::TaskIntent(mut i) = intent(local, message_id) else {
            unreachable!()
        };
        i.attempt = n;
        JournalRecord::TaskIntent(i)
    }

    #[test]
    fn a_later_attempt_moves_the_remote_task_to_the_earlier_ones() {
        let r = Replay::of(&journal(vec![
            attempt("t", "m1", 1),
            known("t", "r1"),
            attempt("t", "m1b", 1),
            attempt("t", "m2", 2),
            known("t", "r2"),
            attempt("t", "m3", 3),
        ]));
        assert_eq!(r.earlier_attempts("t"), ["r1", "r2"]);
        assert_eq!(r.remote_id("t"), None, "attempt 3 has no remote task yet");
        assert_eq!(r.in_flight("t").map(|i| i.attempt), Some(3));
        assert!(r.earlier_attempts("other").is_empty());
    }

    #[test]
    fn the_last_send_of_a_task_is_the_one_found_again() {
        let r = Replay::of(&journal(vec![intent("t", "m1"), intent("t", "m2")]));
        assert_eq!(r.in_flight("t").map(|i| i.message_id.as_str()), Some("m2"));
        assert!(r.in_flight("other").is_none());
    }

    #[test]
    fn pending_cancels_are_the_unsent_ones_and_for_a_cancelled_run_every_in_flight_task() {
        let cancel = |local: &str, remote: &str| JournalRecord::CancelRequested {
            local_task_id: Some(local.into()),
            remote_task_id: Some(remote.into()),
        };
        let records = vec![
            intent("a", "m"),
            known("a", "ra"),
            intent("b", "m"),
            known("b", "rb"),
            intent("c", "m"),
            known("c", "rc"),
            cancel("a", "ra"),
            cancel("b", "rb"),
            JournalRecord::CancelSent {
                local_task_id: "b".into(),
                remote_task_id: "rb".into(),
            },
        ];
        let r = Replay::of(&journal(records.clone()));
        let remote = |r: &Replay| -> Vec<String> {
            r.pending_cancels()
                .into_iter()
                .map(|c| c.remote_task_id)
                .collect()
        };
        assert_eq!(remote(&r), ["ra"]);
        assert!(!r.cancel_run());

        let mut cancelled = records;
        cancelled.push(JournalRecord::CancelRequested {
            local_task_id: None,
            remote_task_id: None,
        });
        let r = Replay::of(&journal(cancelled));
        assert!(r.cancel_run());
        // `b`'s cancel was sent; `c` is in flight and gets one; `a` once, not twice.
        assert_eq!(remote(&r), ["ra", "rc"]);
    }
}
