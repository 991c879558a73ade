//! The run's input from the inbound message: what the host's ControlPoint sees as the run's
//! runtime intent.
//!
//! The text parts, joined by newlines, then each data part as one line of compact JSON. A file
//! part (`raw` or `url`) is refused: a served workflow takes text and JSON data only.

use crate::wire_error::A2aError;
use a2a::{Message, PartContent, Role};
use a2aflow::kernel::RunInput;

/// The run input of `message` (a `ROLE_USER` message with text and data parts).
pub(crate) fn run_input(message: &Message) -> Result<RunInput, A2aError> {
    let mut violations = Vec::new();
    if message.role != Role::User {
        violations.push((
            "message.role".to_owned(),
            "A message that starts a run is sent by the client: ROLE_USER.".to_owned(),
        ));
    }
    let mut lines = Vec::with_capacity(message.parts.len());
    for (i, part) in message.parts.iter().enumerate() {
        match &part.content {
            PartContent::Text(text) => lines.push(text.clone()),
            PartContent::Data(data) => lines.push(data.to_string()),
            PartContent::Raw(_) | PartContent::Url(_) => violations.push((
                format!("message.parts[{i}]"),
                "A served workflow takes text and data parts only, not files.".to_owned(),
            )),
        }
    }
    if !violations.is_empty() {
        return Err(A2aError::fields(violations));
    }
    Ok(RunInput {
        runtime_intent: Some(lines.join("\n")).filter(|t| !t.is_empty()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a::Part;
    use serde_json::json;

    #[test]
    fn text_and_data_become_the_runtime_intent() {
        let message = Message::new(
            Role::User,
            vec![Part::text("review"), Part::data(json!({"repo": "x"}))],
        );
        let input = run_input(&message).ok();
        assert_eq!(
            input.and_then(|i| i.runtime_intent).as_deref(),
            Some("review\n{\"repo\":\"x\"}")
        );
    }

    #[test]
    fn a_file_part_is_refused() {
        let message = Message::new(Role::User, vec![Part::url("https://x/a.png")]);
        let err = run_input(&message).err();
        assert_eq!(err.map(|e| e.message), Some("Validation failed".to_owned()));
    }
}
