//! Event payloads written into the strings of an earlier payload of their kind. A callback sink
//! hands each event back once it returns (see `events::Spare`), so the kernel's most frequent
//! events (a step's start, a task's request and status change, a route decision) are built
//! without allocating: each rewrites the strings of the last one of its kind. A payload the
//! sink kept is never given here; `previous` is then `None` and a fresh payload is built.

use a2aflow_model::event_data::{
    RouteDecisionData, StepStartData, TaskRequestData, TaskStatusChangedData,
};
use a2aflow_model::{Edge, EventKind, EventPayload, StepType, Subtask, TaskOutcomeStatus};

/// How many kinds are written into (see [`place_of`]).
pub(crate) const REFILLED: usize = 4;

/// Where a spare payload of `kind` is kept (`0..REFILLED`) when it is a kind written into here:
/// those own nothing but their strings, so they are kept whole after their event for the next
/// one of their kind. Any other kind has none (its payload is dropped at once: it may share a
/// run's results).
pub(crate) fn place_of(kind: EventKind) -> Option<usize> {
    match kind {
        EventKind::StepStart => Some(0),
        EventKind::TaskRequest => Some(1),
        EventKind::TaskStatusChanged => Some(2),
        EventKind::RouteDecision => Some(3),
        _ => None,
    }
}

/// `text` written into `s`, whose buffer is reused.
fn rewrite(s: &mut String, text: &str) {
    s.clear();
    s.push_str(text);
}

/// `step_start` of `step`.
pub(crate) fn step_start(
    previous: Option<EventPayload>,
    step: &str,
    step_type: StepType,
) -> EventPayload {
    let mut d = match previous {
        Some(EventPayload::StepStart(d)) => d,
        _ => StepStartData {
            step: String::new(),
            step_type,
        },
    };
    rewrite(&mut d.step, step);
    d.step_type = step_type;
    EventPayload::StepStart(d)
}

/// `task_request` of subtask `index` (`sub`) of `step`, whose local id is `task_id`.
pub(crate) fn task_request(
    previous: Option<EventPayload>,
    step: &str,
    sub: &Subtask,
    index: usize,
    task_id: &str,
) -> EventPayload {
    let mut d = match previous {
        Some(EventPayload::TaskRequest(d)) => d,
        _ => TaskRequestData {
            step: String::new(),
            agent: String::new(),
            skill: String::new(),
            task: String::new(),
            subtask_index: index,
            task_id: String::new(),
        },
    };
    rewrite(&mut d.step, step);
    rewrite(&mut d.agent, &sub.agent);
    rewrite(&mut d.skill, &sub.skill);
    rewrite(&mut d.task, &sub.description);
    d.subtask_index = index;
    rewrite(&mut d.task_id, task_id);
    EventPayload::TaskRequest(d)
}

/// `task_status_changed` of subtask `index` of `step`, run by `agent`.
pub(crate) fn task_status_changed(
    previous: Option<EventPayload>,
    step: &str,
    index: usize,
    agent: &str,
    status: TaskOutcomeStatus,
) -> EventPayload {
    let mut d = match previous {
        Some(EventPayload::TaskStatusChanged(d)) => d,
        _ => TaskStatusChangedData {
            step: String::new(),
            subtask_index: index,
            agent: String::new(),
            status,
        },
    };
    rewrite(&mut d.step, step);
    d.subtask_index = index;
    rewrite(&mut d.agent, agent);
    d.status = status;
    EventPayload::TaskStatusChanged(d)
}

/// `route_decision` of `edge` of `step`: whether it is taken, and why.
pub(crate) fn route_decision(
    previous: Option<EventPayload>,
    step: &str,
    edge: &Edge,
    allowed: bool,
    reason: Option<&str>,
) -> EventPayload {
    let mut d = match previous {
        Some(EventPayload::RouteDecision(d)) => d,
        _ => RouteDecisionData {
            step: String::new(),
            next: String::new(),
            condition: String::new(),
            conditional: false,
            allowed,
            reason: None,
        },
    };
    rewrite(&mut d.step, step);
    rewrite(&mut d.next, &edge.step);
    rewrite(&mut d.condition, &edge.condition);
    d.conditional = !edge.is_unconditional();
    d.allowed = allowed;
    match reason {
        Some(r) => rewrite(d.reason.get_or_insert_default(), r),
        None => d.reason = None,
    }
    EventPayload::RouteDecision(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(agent: &str, skill: &str, description: &str) -> Subtask {
        Subtask {
            agent: agent.into(),
            skill: skill.into(),
            description: description.into(),
            ..Subtask::default()
        }
    }

    #[test]
    fn a_payload_written_into_an_earlier_one_equals_one_built_afresh() {
        let long = sub(
            "agent-with-a-long-name",
            "a-long-skill",
            "a long description",
        );
        let short = sub("a", "", "d");
        let cases: [&dyn Fn(Option<EventPayload>, bool) -> EventPayload; 4] = [
            &|p, first| {
                step_start(
                    p,
                    if first { "first-step" } else { "s" },
                    StepType::AnySuccess,
                )
            },
            &|p, first| {
                let (sub, id) = if first {
                    (&long, "exec:first-step:12")
                } else {
                    (&short, "e:s:0")
                };
                task_request(p, "s", sub, usize::from(first), id)
            },
            &|p, first| {
                let status = if first {
                    TaskOutcomeStatus::Failed
                } else {
                    TaskOutcomeStatus::Completed
                };
                task_status_changed(p, "s", 3, if first { "agent-x" } else { "" }, status)
            },
            &|p, first| {
                let edge = if first {
                    Edge::new("t", "x > 1")
                } else {
                    Edge::new("target", "")
                };
                let reason = first.then_some("because");
                route_decision(p, "s", &edge, !first, reason)
            },
        ];
        for (i, make) in cases.iter().enumerate() {
            let fresh = make(None, false);
            let earlier = make(None, true);
            assert_ne!(earlier, fresh, "case {i}");
            assert_eq!(make(Some(earlier), false), fresh, "case {i}");
            // A payload of another kind is dropped, not written into.
            let other = cases[(i + 1) % cases.len()](None, true);
            assert_eq!(make(Some(other), false), fresh, "case {i}");
            assert_eq!(place_of(fresh.kind()), Some(i), "case {i}");
        }
        assert_eq!(place_of(EventKind::StepComplete), None);
        assert_eq!(place_of(EventKind::TaskResponse), None);
    }
}
