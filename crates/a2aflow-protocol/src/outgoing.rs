//! The message a client sends for a host's content: the one place the engine client and the
//! extension sender build it.

use a2aflow_model::MessageContent;
use a2aflow_model::a2a::{self, Message, Role};

/// The `ROLE_USER` message carrying `content` unchanged (its parts and metadata), with a fresh
/// message id, in `context_id` (and `task_id` for a follow-up on a known task), activating
/// `extensions` in `message.extensions` (absent when empty).
pub fn user_message(
    content: MessageContent,
    context_id: &str,
    task_id: Option<String>,
    extensions: Vec<String>,
) -> Message {
    user_message_with_id(
        content,
        a2a::new_message_id(),
        context_id,
        task_id,
        extensions,
    )
}

/// [`user_message`] with the message id chosen by the caller: a resend of a journaled message
/// keeps the id it was first sent with, so that an agent can recognise the repetition.
pub fn user_message_with_id(
    content: MessageContent,
    message_id: String,
    context_id: &str,
    task_id: Option<String>,
    extensions: Vec<String>,
) -> Message {
    Message {
        message_id,
        context_id: Some(context_id.to_owned()),
        task_id,
        role: Role::User,
        parts: content.parts,
        metadata: content.metadata.map(|m| m.into_iter().collect()),
        extensions: (!extensions.is_empty()).then_some(extensions),
        reference_task_ids: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_content_goes_out_unchanged_as_a_user_message() {
        let mut metadata = serde_json::Map::new();
        metadata.insert("k".into(), json!({"v": 1}));
        let content = MessageContent {
            parts: MessageContent::text("hi").parts,
            metadata: Some(metadata),
            extensions: vec![],
            context_id: None,
        };
        let m = user_message(
            content.clone(),
            "ctx",
            Some("t1".into()),
            vec!["urn:x".into()],
        );
        assert_eq!(m.role, Role::User);
        assert_eq!(m.parts, content.parts);
        assert_eq!(m.metadata.unwrap()["k"], json!({"v": 1}));
        assert_eq!(
            (m.context_id.as_deref(), m.task_id.as_deref()),
            (Some("ctx"), Some("t1"))
        );
        assert_eq!(m.extensions, Some(vec!["urn:x".to_owned()]));
        let plain = user_message(MessageContent::text("x"), "ctx", None, vec![]);
        assert_eq!(plain.extensions, None);
        assert_ne!(plain.message_id, m.message_id);
    }

    #[test]
    fn a_resend_keeps_the_message_id_it_is_given() {
        let fresh = user_message(MessageContent::text("x"), "ctx", None, vec![]);
        let again = user_message_with_id(
            MessageContent::text("x"),
            fresh.message_id.clone(),
            "ctx",
            None,
            vec![],
        );
        assert_eq!(again, fresh);
    }
}
