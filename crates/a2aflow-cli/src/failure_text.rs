//! A failure for people: its code and message, then the root causes its details name (the failed
//! tasks of a failed step with their own codes, the callback error of a failed route), so text
//! output says *why* (HTTP 500, `auth.rejected`, `workflow.unknown_agent`, …) and not only
//! "Step execution failed".
//!
//! [`root_causes`] reads a failure's JSON form (as an `error` event carries it), [`describe`] the
//! typed [`Failure`]. Everything they return is already escaped for a terminal ([`crate::terminal::inline`]).

use crate::terminal::inline;
use a2aflow::model::{Failure, FailureCause};
use serde_json::Value;

/// `[code] message`, `[code]` or `message`, escaped; `None` when both are missing.
fn code_message(code: Option<&str>, message: Option<&str>) -> Option<String> {
    match (code, message) {
        (None, None) => None,
        (Some(c), None) => Some(format!("[{}]", inline(c))),
        (None, Some(m)) => Some(inline(m)),
        (Some(c), Some(m)) => Some(format!("[{}] {}", inline(c), inline(m))),
    }
}

/// `[code] message` of one failure-shaped object (`code`/`errorCode`, `message`/`error`).
fn code_and_message(v: &Value) -> Option<String> {
    let code = v["code"].as_str().or_else(|| v["errorCode"].as_str());
    let message = v["message"].as_str().or_else(|| v["error"].as_str());
    code_message(code, message)
}

/// `agent NAME: [code] message` (or `[code] message` without an agent) for each failed task a
/// step failure's details list under `causes`.
fn task_causes(causes: Option<&Value>) -> Vec<String> {
    let mut out = Vec::new();
    for cause in causes.and_then(Value::as_array).into_iter().flatten() {
        let Some(text) = code_and_message(cause) else {
            continue;
        };
        match cause["agent"].as_str().filter(|a| !a.is_empty()) {
            Some(agent) => out.push(format!("agent {}: {text}", inline(agent))),
            None => out.push(text),
        }
    }
    out
}

/// One line per root cause named in `failure`'s JSON form: `agent NAME: [code] message` for each
/// failed task of a step, `[code] message` for the error behind a failed route.
pub fn root_causes(failure: &Value) -> Vec<String> {
    let details = &failure["details"];
    let mut out = task_causes(details.get("causes"));
    if let Some(text) = details.get("cause").and_then(code_and_message) {
        out.push(text);
    }
    out
}

/// The failure's own `[code] message`, then `cause: …` lines, each starting with `indent`: the
/// failed tasks of a step, then the failure behind this one (a cause that is only a code, such
/// as a child workflow's origin code, is already named by the message).
pub fn describe(failure: &Failure, indent: &str) -> String {
    let mut out = format!(
        "{indent}[{}] {}\n",
        inline(failure.code.as_str()),
        inline(&failure.message)
    );
    let mut lines = task_causes(failure.details.get("causes"));
    if let Some(cause) = failure.cause().and_then(FailureCause::failure) {
        lines.extend(code_message(
            Some(cause.code.as_str()),
            Some(&cause.message),
        ));
    }
    for line in lines {
        out.push_str(&format!("{indent}cause: {line}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow::model::ErrorCode;
    use serde_json::json;

    #[test]
    fn a_failed_step_names_each_failed_task_with_its_code() {
        let f = Failure::new(
            ErrorCode::WorkflowStepFailed,
            "Step execution failed: step 's'",
        )
        .with_detail(
            "causes",
            json!([
                {"taskId": "t1", "agent": "a", "code": "a2a.http_status", "message": "HTTP 500 from agent"},
                {"taskId": "t2", "agent": "", "code": "auth.rejected", "message": null},
            ]),
        );
        assert_eq!(
            describe(&f, "  "),
            "  [workflow.step_failed] Step execution failed: step 's'\n\
             \x20 cause: agent a: [a2a.http_status] HTTP 500 from agent\n\
             \x20 cause: [auth.rejected]\n"
        );
    }

    #[test]
    fn a_failed_route_shows_its_callback_error_and_hostile_text_is_escaped() {
        let f = Failure::new(ErrorCode::WorkflowRouteFailed, "route a -> b failed")
            .with_detail("cause", json!({"code": "x.y", "message": "no\u{1b}[2J"}));
        let text = describe(&f, "");
        assert!(text.ends_with("cause: [x.y] no\\x1b[2J\n"), "{text}");
        assert!(!text.contains('\u{1b}'));
        assert!(root_causes(&json!({})).is_empty());
    }
}
