//! End states: what a reduced [`TaskView`] means for the logical task. Outputs are projected by
//! the kernel (`a2aflow_kernel::project_outputs`) from the evidence.

use crate::view::TaskView;
use a2aflow_model::a2a::{Message, Part, TaskState};
use a2aflow_model::{ErrorCode, Failure};

/// The meaning of the current view. Exhaustive on purpose: the engine client (`a2aflow-engine`)
/// matches every case, so a new meaning cannot go unhandled there.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    /// Nothing decisive yet: no state, SUBMITTED or WORKING (acknowledgements only).
    Pending,
    /// COMPLETED.
    Completed,
    /// FAILED, REJECTED or CANCELED, mapped to its failure.
    Terminal(Failure),
    /// AUTH_REQUIRED: a gate, never success.
    AuthRequired,
    /// INPUT_REQUIRED: a negotiation candidate.
    InputRequired,
    /// A taskless direct message answered.
    DirectMessage,
}

/// The state's proto name, e.g. `TASK_STATE_FAILED`.
pub fn state_name(state: &TaskState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{state:?}"))
}

fn message_text(m: &Message) -> Option<String> {
    let texts: Vec<&str> = m.parts.iter().filter_map(Part::as_text).collect();
    if texts.is_empty() {
        None
    } else {
        Some(texts.join("\n"))
    }
}

/// Adds the identity facts a host needs to act on a failure (and to attach later).
pub fn with_identity(mut f: Failure, view: &TaskView, context_id: &str) -> Failure {
    f.details
        .entry("contextId")
        .or_insert_with(|| context_id.to_owned().into());
    if let Some(t) = &view.task_id {
        f.details
            .entry("remoteTaskId")
            .or_insert_with(|| t.clone().into());
    }
    if let Some(s) = &view.state {
        f.details
            .entry("state")
            .or_insert_with(|| state_name(s).into());
    }
    f
}

/// A failure for a remote state, with the status text as the message when there is one.
pub fn state_failure(code: ErrorCode, view: &TaskView) -> Failure {
    let state = view.state.clone().unwrap_or_default();
    let message = view
        .status_message
        .as_ref()
        .and_then(message_text)
        .unwrap_or_else(|| format!("Agent returned state={}", state_name(&state)));
    Failure::new(code, message)
}

/// The stable code of a remote task state that ends an interaction without success:
/// FAILED → `a2a.task_failed`, REJECTED → `a2a.task_rejected`, CANCELED → `a2a.task_canceled`,
/// AUTH_REQUIRED → `a2a.auth_required`, INPUT_REQUIRED → `negotiation.not_negotiable` (when no
/// Negotiation-T takes it over). `None` for COMPLETED and for SUBMITTED / WORKING / unspecified,
/// which are acknowledgements only.
///
/// ```
/// use a2aflow_model::ErrorCode;
/// use a2aflow_model::a2a::TaskState;
/// use a2aflow_protocol::end_state_code;
/// assert_eq!(end_state_code(&TaskState::Rejected), Some(ErrorCode::A2aTaskRejected));
/// assert_eq!(end_state_code(&TaskState::Completed), None);
/// ```
pub fn end_state_code(state: &TaskState) -> Option<ErrorCode> {
    match state {
        TaskState::Failed => Some(ErrorCode::A2aTaskFailed),
        TaskState::Rejected => Some(ErrorCode::A2aTaskRejected),
        TaskState::Canceled => Some(ErrorCode::A2aTaskCanceled),
        TaskState::AuthRequired => Some(ErrorCode::A2aAuthRequired),
        TaskState::InputRequired => Some(ErrorCode::NegotiationNotNegotiable),
        TaskState::Completed
        | TaskState::Unspecified
        | TaskState::Submitted
        | TaskState::Working => None,
    }
}

/// Classifies the current view.
pub fn observe(view: &TaskView) -> Observation {
    let state = match &view.state {
        None if view.direct_message.is_some() => return Observation::DirectMessage,
        None => return Observation::Pending,
        Some(TaskState::Completed) => return Observation::Completed,
        Some(state) => state,
    };
    match end_state_code(state) {
        None => Observation::Pending,
        Some(ErrorCode::A2aAuthRequired) => Observation::AuthRequired,
        Some(ErrorCode::NegotiationNotNegotiable) => Observation::InputRequired,
        Some(code) => Observation::Terminal(state_failure(code, view)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::ResponseReducer;
    use crate::view::tests::task;
    use a2aflow_model::a2a::Role;
    use serde_json::json;

    fn view_of(state: TaskState, status: Option<&str>) -> TaskView {
        let mut r = ResponseReducer::new("c");
        let mut t = task("t", "c", state);
        t.status.message = status.map(|s| Message::new(Role::Agent, vec![Part::text(s)]));
        r.apply_task(t).unwrap();
        r.view().clone()
    }

    #[test]
    fn terminal_states_map_to_stable_codes_with_status_text() {
        let cases = [
            (TaskState::Failed, "a2a.task_failed"),
            (TaskState::Rejected, "a2a.task_rejected"),
            (TaskState::Canceled, "a2a.task_canceled"),
        ];
        for (state, code) in cases {
            let Observation::Terminal(f) = observe(&view_of(state.clone(), Some("not allowed")))
            else {
                panic!("{state:?} is terminal");
            };
            assert_eq!((f.code.as_str(), f.message.as_str()), (code, "not allowed"));
        }
        let Observation::Terminal(f) = observe(&view_of(TaskState::Rejected, None)) else {
            panic!()
        };
        assert_eq!(f.message, "Agent returned state=TASK_STATE_REJECTED");
    }

    #[test]
    fn acknowledgements_are_pending_and_gates_are_classified() {
        assert_eq!(
            observe(&view_of(TaskState::Submitted, None)),
            Observation::Pending
        );
        assert_eq!(
            observe(&view_of(TaskState::Working, Some("busy"))),
            Observation::Pending
        );
        assert_eq!(
            observe(&view_of(TaskState::AuthRequired, None)),
            Observation::AuthRequired
        );
        assert_eq!(
            observe(&view_of(TaskState::InputRequired, None)),
            Observation::InputRequired
        );
        assert_eq!(
            observe(&view_of(TaskState::Completed, None)),
            Observation::Completed
        );
        assert_eq!(observe(&TaskView::default()), Observation::Pending);
    }

    #[test]
    fn identity_details_are_added_once() {
        let v = view_of(TaskState::AuthRequired, None);
        let f = with_identity(Failure::new(ErrorCode::A2aAuthRequired, "x"), &v, "c");
        assert_eq!(f.details["contextId"], json!("c"));
        assert_eq!(f.details["remoteTaskId"], json!("t"));
        assert_eq!(f.details["state"], json!("TASK_STATE_AUTH_REQUIRED"));
    }
}
