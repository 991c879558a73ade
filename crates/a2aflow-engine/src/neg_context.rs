//! Where Negotiation-T sits in received evidence, read with `a2at`'s rules.
//!
//! A2A metadata arrives as `HashMap`s; `a2at` reads `serde_json::Map`s. This module bridges the
//! two and answers the two questions the state machine asks: does a received object mention
//! Negotiation-T at all, and which one context does it carry.

use a2aflow_model::a2a::{Artifact, Message};
use a2aflow_protocol::view::json_map;
use a2at::{
    ContextError, NEGOTIATION_CONTEXT_KEY, NEGOTIATION_T_EXTENSION_URI,
    NEGOTIATION_T_EXTENSION_URI_NL, NegotiationContext,
};
use serde_json::{Map, Value};

/// The metadata levels of one received object: the direct or status message, the task, and
/// each artifact.
pub(crate) struct Levels {
    message: Option<Map<String, Value>>,
    task: Option<Map<String, Value>>,
    artifacts: Vec<Map<String, Value>>,
}

impl Levels {
    /// Collects the levels of a received object.
    pub fn new(
        message: Option<&Message>,
        task_metadata: Option<&Map<String, Value>>,
        artifacts: &[Artifact],
    ) -> Self {
        Levels {
            message: message.and_then(|m| m.metadata.as_ref()).map(json_map),
            task: task_metadata.cloned(),
            artifacts: artifacts
                .iter()
                .filter_map(|a| a.metadata.as_ref().map(json_map))
                .collect(),
        }
    }

    fn all(&self) -> impl Iterator<Item = &Map<String, Value>> {
        self.message
            .iter()
            .chain(self.task.iter())
            .chain(self.artifacts.iter())
    }

    /// True when any level carries the Negotiation-T URI key (or its alias) or a
    /// `negotiationContext`.
    pub fn mentions_negotiation(&self) -> bool {
        self.all().any(|m| {
            m.contains_key(NEGOTIATION_T_EXTENSION_URI)
                || m.contains_key(NEGOTIATION_T_EXTENSION_URI_NL)
                || m.contains_key(NEGOTIATION_CONTEXT_KEY)
        })
    }

    /// The one context across the levels (message, task, artifacts in that order).
    pub fn context(&self) -> Result<NegotiationContext, ContextError> {
        a2at::find_negotiation_context(self.message.as_ref(), self.task.as_ref(), &self.artifacts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow_model::a2a::Role;
    use serde_json::json;
    use std::collections::HashMap;

    #[test]
    fn s_neg_19_conflicting_levels() {
        let mut msg = Message::new(Role::Agent, vec![]);
        msg.metadata = Some(HashMap::from([(
            NEGOTIATION_CONTEXT_KEY.to_owned(),
            json!({"id":"A","round":1,"maxRounds":5,"performative":"PROPOSE"}),
        )]));
        let mut task = Map::new();
        task.insert(
            NEGOTIATION_CONTEXT_KEY.to_owned(),
            json!({"id":"B","round":1,"maxRounds":5,"performative":"PROPOSE"}),
        );
        let levels = Levels::new(Some(&msg), Some(&task), &[]);
        assert_eq!(levels.context().unwrap_err(), ContextError::Conflicting);
        assert_eq!(
            levels.context().unwrap_err().to_string(),
            "Conflicting negotiation contexts in response"
        );
        task.insert(
            NEGOTIATION_CONTEXT_KEY.to_owned(),
            json!({"id":"A","round":1.0,"maxRounds":5,"performative":"PROPOSE"}),
        );
        let levels = Levels::new(Some(&msg), Some(&task), &[]);
        assert_eq!(levels.context().unwrap().id(), "A");
    }

    #[test]
    fn artifact_level_uri_key_counts_as_a_mention() {
        let art = Artifact {
            artifact_id: "a".into(),
            name: None,
            description: None,
            parts: vec![],
            metadata: Some(HashMap::from([(
                NEGOTIATION_T_EXTENSION_URI_NL.to_owned(),
                json!("## text"),
            )])),
            extensions: None,
        };
        let levels = Levels::new(None, None, &[art]);
        assert!(levels.mentions_negotiation());
        assert_eq!(levels.context().unwrap_err(), ContextError::Missing);
        assert!(!Levels::new(None, None, &[]).mentions_negotiation());
    }
}
