//! Event payloads written into the strings of an earlier payload of their kind. A callback sink
//! hands each event back once it returns (see `events::Spare`), so the kernel's most frequent
//! events (a step's start, a task's request and status change, a route decision) are built
//! without allocating: each rewrites, in place, the strings of the last one of its kind. A
//! payload the sink kept is never given here: then the payload given is of another kind (an
//! inert one), and it is replaced by a fresh one.

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
pub(crate) fn step_start(payload: &mut EventPayload, step: &str, step_type: StepType) {
    if !matches!(payload, EventPayload::StepStart(_)) {
        *payload = EventPayload::StepStart(StepStartData {
            step: String::new(),
            step_type,
        });
    }
    // Every field named (no `..`): a field added to the payload must be written here too, or
    // it would keep the last event's value.
    if let EventPayload::StepStart(StepStartData {
        step: s,
        step_type: t,
    }) = payload
    {
        rewrite(s, step);
        *t = step_type;
    }
}

/// `task_request` of subtask `index` (`sub`) of `step`, whose local id is `task_id`.
pub(crate) fn task_request(
    payload: &mut EventPayload,
    step: &str,
    sub: &Subtask,
    index: usize,
    task_id: &str,
) {
    if !matches!(payload, EventPayload::TaskRequest(_)) {
        *payload = EventPayload::TaskRequest(TaskRequestData {
            step: String::new(),
            agent: String::new(),
            skill: String::new(),
            task: String::new(),
            subtask_index: index,
            task_id: String::new(),
        });
    }
    if let EventPayload::TaskRequest(TaskRequestData {
        step: s,
        agent,
        skill,
        task,
        subtask_index,
        task_id: id,
    }) = payload
    {
        rewrite(s, step);
        rewrite(agent, &sub.agent);
        rewrite(skill, &sub.skill);
        rewrite(task, &sub.description);
        *subtask_index = index;
        rewrite(id, task_id);
    }
}

/// `task_status_changed` of subtask `index` of `step`, run by `agent`.
pub(crate) fn task_status_changed(
    payload: &mut EventPayload,
    step: &str,
    index: usize,
    agent: &str,
    status: TaskOutcomeStatus,
) {
    if !matches!(payload, EventPayload::TaskStatusChanged(_)) {
        *payload = EventPayload::TaskStatusChanged(TaskStatusChangedData {
            step: String::new(),
            subtask_index: index,
            agent: String::new(),
            status,
        });
    }
    if let EventPayload::TaskStatusChanged(TaskStatusChangedData {
        step: s,
        subtask_index,
        agent: a,
        status: st,
    }) = payload
    {
        rewrite(s, step);
        *subtask_index = index;
        rewrite(a, agent);
        *st = status;
    }
}

/// `route_decision` of `edge` of `step`: whether it is taken, and why.
pub(crate) fn route_decision(
    payload: &mut EventPayload,
    step: &str,
    edge: &Edge,
    allowed: bool,
    reason: Option<&str>,
) {
    if !matches!(payload, EventPayload::RouteDecision(_)) {
        *payload = EventPayload::RouteDecision(RouteDecisionData {
            step: String::new(),
            next: String::new(),
            condition: String::new(),
            conditional: false,
            allowed,
            reason: None,
        });
    }
    if let EventPayload::RouteDecision(RouteDecisionData {
        step: s,
        next,
        condition,
        conditional,
        allowed: a,
        reason: why,
    }) = payload
    {
        rewrite(s, step);
        rewrite(next, &edge.step);
        rewrite(condition, &edge.condition);
        *conditional = !edge.is_unconditional();
        *a = allowed;
        match reason {
            Some(r) => rewrite(why.get_or_insert_default(), r),
            None => *why = None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow_model::event_data::WorkflowCompleteData;

    fn sub(agent: &str, skill: &str, description: &str) -> Subtask {
        Subtask {
            agent: agent.into(),
            skill: skill.into(),
            description: description.into(),
            ..Subtask::default()
        }
    }

    /// Writes one of two payloads of a kind (`true`: the first).
    type Fill<'a> = dyn Fn(&mut EventPayload, bool) + 'a;

    #[test]
    fn a_payload_written_into_an_earlier_one_equals_one_built_afresh() {
        let long = sub(
            "agent-with-a-long-name",
            "a-long-skill",
            "a long description",
        );
        let short = sub("a", "", "d");
        let cases: [&Fill; 4] = [
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
        let inert = || EventPayload::WorkflowComplete(WorkflowCompleteData { success: false });
        let made = |i: usize, mut payload: EventPayload, first: bool| {
            cases[i](&mut payload, first);
            payload
        };
        for i in 0..cases.len() {
            let fresh = made(i, inert(), false);
            let earlier = made(i, inert(), true);
            assert_ne!(earlier, fresh, "case {i}");
            assert_eq!(made(i, earlier, false), fresh, "case {i}");
            // A payload of another kind is replaced, not written into.
            let other = made((i + 1) % cases.len(), inert(), true);
            assert_eq!(made(i, other, false), fresh, "case {i}");
            assert_eq!(place_of(fresh.kind()), Some(i), "case {i}");
        }
        assert_eq!(place_of(EventKind::StepComplete), None);
        assert_eq!(place_of(EventKind::TaskResponse), None);
    }
}
