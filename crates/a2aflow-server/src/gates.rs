//! Served runs at their gates: which open gate a task shows (the run's `task_gated` events and
//! the server's [`GateBoard`]), and the answer a follow-up message carries.
//!
//! A task shows the first of its run's open gates, in the order they opened; a follow-up
//! SendMessage on the task answers that gate. The `task_gated` event is emitted just before
//! the gate reaches the board, so a gate announced by its event and not yet on the board still
//! counts as open; once seen on the board, it is closed when the board no longer holds it.

use crate::wire_error::A2aError;
use a2a::{Message, PartContent};
use a2aflow::kernel::GateBoard;
use a2aflow::model::{Event, EventKind, EventPayload, MessageContent, OpenGate};
use std::sync::{Mutex, PoisonError};

/// The gates one run announced, oldest first.
#[derive(Debug, Default)]
pub(crate) struct GateWatch {
    announced: Mutex<Vec<Announced>>,
}

/// One announced gate: the event's `seq` tells this announcement from a later one of the same
/// task; `seen` once the board held it (or a follow-up's answer was taken for it).
#[derive(Debug)]
struct Announced {
    gate: OpenGate,
    seq: u64,
    seen: bool,
}

impl GateWatch {
    /// Takes note of a `task_gated` event of the run (other events are ignored).
    pub(crate) fn observe(&self, event: &Event) {
        if event.kind != EventKind::TaskGated {
            return;
        }
        let Ok(EventPayload::TaskGated(gate)) = event.data.payload_of(EventKind::TaskGated) else {
            tracing::warn!(
                target: "a2aflow::serve",
                execution_id = %event.execution_id,
                "a task_gated event without a readable gate; the task does not show it"
            );
            return;
        };
        let mut announced = self.lock();
        announced.retain(|a| a.gate.local_task_id != gate.local_task_id);
        announced.push(Announced {
            gate,
            seq: event.seq,
            seen: false,
        });
    }

    /// Takes note of a gate the run's journal holds open (a run of an earlier process, about
    /// to be resumed): shown like an announced one until the board has held it and let go.
    pub(crate) fn recorded(&self, gate: OpenGate) {
        let mut announced = self.lock();
        announced.retain(|a| a.gate.local_task_id != gate.local_task_id);
        announced.push(Announced {
            gate,
            seq: 0,
            seen: false,
        });
    }

    /// The first gate of run `execution_id` still open, after forgetting the closed ones.
    pub(crate) fn first_open(&self, board: &GateBoard, execution_id: &str) -> Option<OpenGate> {
        self.first_announced(board, execution_id)
            .map(|(gate, _)| gate)
    }

    /// [`GateWatch::first_open`] with the `seq` of the event that announced it.
    pub(crate) fn first_announced(
        &self,
        board: &GateBoard,
        execution_id: &str,
    ) -> Option<(OpenGate, u64)> {
        let on_board = board.open_gates(execution_id);
        let mut announced = self.lock();
        announced.retain_mut(|a| {
            if on_board
                .iter()
                .any(|g| g.local_task_id == a.gate.local_task_id)
            {
                a.seen = true;
                true
            } else {
                !a.seen
            }
        });
        announced.first().map(|a| (a.gate.clone(), a.seq))
    }

    /// The `seq` of the latest announcement of the gate of task `local_task_id`, if any.
    pub(crate) fn seq_of(&self, local_task_id: &str) -> Option<u64> {
        self.lock()
            .iter()
            .rev()
            .find(|a| a.gate.local_task_id == local_task_id)
            .map(|a| a.seq)
    }

    /// The board took an answer for the gate announced by event `seq`: it is closed even if
    /// this watch never saw it on the board (it arrived and was answered in between). A later
    /// announcement of the same task is left open.
    pub(crate) fn answered(&self, local_task_id: &str, seq: u64) {
        for a in self.lock().iter_mut() {
            if a.gate.local_task_id == local_task_id && a.seq == seq {
                a.seen = true;
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Announced>> {
        self.announced
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The answer a follow-up `message` carries to a gate: its text and data parts (files are
/// refused, as for a message that starts a run). The client's metadata stays with the server:
/// the agent behind the gate gets the parts only.
pub(crate) fn answer_content(message: &Message) -> Result<MessageContent, A2aError> {
    let mut violations = Vec::new();
    for (i, part) in message.parts.iter().enumerate() {
        if matches!(part.content, PartContent::Raw(_) | PartContent::Url(_)) {
            violations.push((
                format!("message.parts[{i}]"),
                "A served workflow takes text and data parts only, not files.".to_owned(),
            ));
        }
    }
    if !violations.is_empty() {
        return Err(A2aError::fields(violations));
    }
    Ok(MessageContent {
        parts: message.parts.clone(),
        ..MessageContent::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow::model::Gate;

    fn gate(id: &str) -> OpenGate {
        OpenGate {
            step: "s".into(),
            local_task_id: id.into(),
            agent: "a".into(),
            gate: Gate::InputRequired,
            context_id: None,
            remote_task_id: Some("r".into()),
            text: Some("more".into()),
        }
    }

    fn gated(id: &str) -> Event {
        gated_at(id, 3)
    }

    fn gated_at(id: &str, seq: u64) -> Event {
        let event = serde_json::json!({
            "seq": seq, "kind": "task_gated", "executionId": "e1", "data": gate(id),
        });
        serde_json::from_value(event).unwrap_or_else(|e| panic!("an event: {e}"))
    }

    #[test]
    fn an_announced_gate_is_open_until_the_board_has_held_it_and_let_it_go() {
        let watch = GateWatch::default();
        let board = GateBoard::new();
        watch.observe(&gated("t1"));
        assert_eq!(
            watch.first_open(&board, "e1").map(|g| g.local_task_id),
            Some("t1".to_owned())
        );
    }

    /// A gate answered between two looks at the board (it arrived and was answered in
    /// between) is closed, not shown again; a later announcement of the same task stays open.
    #[test]
    fn an_answered_announcement_closes_and_a_later_one_stays_open() {
        let watch = GateWatch::default();
        let board = GateBoard::new();
        watch.observe(&gated_at("t1", 3));
        let (_, seq) = watch.first_announced(&board, "e1").unwrap();
        watch.answered("t1", seq);
        assert_eq!(watch.first_open(&board, "e1"), None);

        watch.observe(&gated_at("t1", 9));
        watch.answered("t1", 3);
        assert_eq!(
            watch.first_open(&board, "e1").map(|g| g.local_task_id),
            Some("t1".to_owned())
        );
    }
}
