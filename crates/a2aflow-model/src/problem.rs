//! One problem found in a workflow document: what the loader and the validator both report.
//!
//! A [`Problem`] carries a stable [`ErrorCode`], a message a person can act on, the JSON pointer
//! of the offending value (like `/steps/2/next/0/step`), the step names involved, and — when the
//! document was loaded from text — the line and column of that value.

use crate::error_code::{ErrorCode, Failure};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A 1-based line and column in the source text (columns count characters, not bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Position {
    /// Line, starting at 1.
    pub line: usize,
    /// Column, starting at 1.
    pub column: usize,
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// One problem in a workflow document or definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    /// The stable code (`workflow.*`).
    pub code: ErrorCode,
    /// What is wrong and what to do about it.
    pub message: String,
    /// JSON pointer of the offending value (`""` is the whole document).
    pub path: String,
    /// Step names involved, in a stable order (empty when none is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<String>,
    /// Where the offending value starts in the source text, when loaded from text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,
}

impl Problem {
    /// A problem with no step names and no position.
    pub fn new(code: ErrorCode, path: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            code,
            message: message.into(),
            path: path.into(),
            steps: Vec::new(),
            position: None,
        }
    }

    /// Adds the step names involved.
    pub fn with_steps<I, S>(mut self, steps: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.steps = steps.into_iter().map(Into::into).collect();
        self
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A path holds the document's keys: shown escaped, like the names in messages.
        let path = if self.path.is_empty() {
            "/".into()
        } else {
            crate::names::visible(&self.path)
        };
        write!(f, "[{}] {path}", self.code)?;
        if let Some(pos) = self.position {
            write!(f, " ({pos})")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Escapes one JSON-pointer reference token (`~` → `~0`, `/` → `~1`).
pub fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Writes a list of problems, one per line, for error `Display` impls.
pub(crate) fn write_problems(
    f: &mut std::fmt::Formatter<'_>,
    what: &str,
    problems: &[Problem],
) -> std::fmt::Result {
    let n = problems.len();
    write!(f, "{what}: {n} problem{}", if n == 1 { "" } else { "s" })?;
    for p in problems {
        write!(f, "\n  {p}")?;
    }
    Ok(())
}

/// Turns a non-empty problem list into one [`Failure`]: the first problem's code, every message,
/// and the problems themselves under the `problems` detail (`fallback` when the list is empty).
pub fn problems_to_failure(fallback: ErrorCode, what: &str, problems: &[Problem]) -> Failure {
    let code = problems.first().map_or(fallback, |p| p.code);
    let message = format!(
        "{what}: {}",
        problems
            .iter()
            .map(|p| p.message.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    );
    let details: Vec<Value> = problems
        .iter()
        .filter_map(|p| serde_json::to_value(p).ok())
        .collect();
    Failure::new(code, message).with_detail("problems", Value::Array(details))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_shows_a_path_with_hidden_characters_escaped() {
        let p = Problem::new(ErrorCode::WorkflowUnknownKey, "/k\u{1b}[2J\u{202e}", "m");
        assert_eq!(
            p.to_string(),
            "[workflow.unknown_key] /k\\u{001B}[2J\\u{202E}: m"
        );
    }

    #[test]
    fn display_shows_code_path_position_and_message() {
        let mut p = Problem::new(
            ErrorCode::WorkflowUnknownKey,
            "/steps/0/foo",
            "unknown key `foo`",
        );
        assert_eq!(
            p.to_string(),
            "[workflow.unknown_key] /steps/0/foo: unknown key `foo`"
        );
        p.position = Some(Position { line: 3, column: 7 });
        assert_eq!(
            p.to_string(),
            "[workflow.unknown_key] /steps/0/foo (line 3, column 7): unknown key `foo`"
        );
    }

    #[test]
    fn pointer_tokens_are_escaped() {
        assert_eq!(pointer_token("a/b~c"), "a~1b~0c");
    }

    #[test]
    fn problems_serialise_camel_case_and_skip_empty() {
        let p = Problem::new(ErrorCode::WorkflowCycle, "/steps/0", "cycle").with_steps(["a", "b"]);
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"code": "workflow.cycle", "message": "cycle", "path": "/steps/0", "steps": ["a", "b"]})
        );
        let f = problems_to_failure(ErrorCode::WorkflowInvalidDocument, "invalid workflow", &[p]);
        assert_eq!(f.code, "workflow.cycle");
        assert_eq!(f.message, "invalid workflow: cycle");
        assert_eq!(f.details["problems"][0]["steps"][1], "b");
    }
}
