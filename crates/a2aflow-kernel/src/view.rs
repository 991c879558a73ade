//! The [`TaskResultView`] a subtask's job fills in: blank, named after its subtask, failed.

use crate::ids::local_task_id;
use a2aflow_model::{Failure, SharedStr, Step, TaskOutcomeStatus, TaskRequest, TaskResultView};

/// The view of a subtask before it ran, without its identity (see [`name_view`]).
pub(crate) fn unnamed_view() -> TaskResultView {
    TaskResultView {
        agent_name: SharedStr::default(),
        skill: SharedStr::default(),
        task_id: SharedStr::default(),
        task_description: SharedStr::default(),
        status: TaskOutcomeStatus::Completed,
        context_id: None,
        remote_task_id: None,
        outputs: Vec::new(),
        received_messages: Vec::new(),
        error: None,
        error_code: None,
        error_details: serde_json::Map::new(),
        attempts: 1,
    }
}

/// The view of subtask `i` of `step` (in run `execution_id`) before it produced anything.
pub(crate) fn subtask_view(execution_id: &str, step: &Step, i: usize) -> TaskResultView {
    let sub = &step.subtasks[i];
    TaskResultView {
        agent_name: sub.agent.as_str().into(),
        skill: sub.skill.as_str().into(),
        task_id: local_task_id(execution_id, &step.name, i),
        task_description: sub.description.as_str().into(),
        ..unnamed_view()
    }
}

/// Gives `view` the identity of the subtask `request` describes. The request is consumed: its
/// strings move into the view (the request is no longer needed once the task ended).
pub(crate) fn name_view(view: &mut TaskResultView, request: TaskRequest) {
    view.agent_name = request.agent;
    view.skill = request.skill;
    view.task_id = request.local_task_id;
    view.task_description = request.description;
}

/// Gives `view` the identity of the subtask `request` describes, copied (the request is still
/// needed).
pub(crate) fn copy_name(view: &mut TaskResultView, request: &TaskRequest) {
    view.agent_name = request.agent.clone();
    view.skill = request.skill.clone();
    view.task_id = request.local_task_id.clone();
    view.task_description = request.description.clone();
}

/// Records `f` in `view` with `status`.
pub(crate) fn fail_view(view: &mut TaskResultView, status: TaskOutcomeStatus, f: Failure) {
    let (code, message, details) = f.into_parts();
    view.status = status;
    view.error = Some(message);
    view.error_code = Some(code.into());
    view.error_details = details;
}
