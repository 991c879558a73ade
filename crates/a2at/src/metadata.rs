//! `MetadataContent`: the A2A-T entries of a message, task or artifact `metadata` object.
//!
//! Built, the entries are, in order: `"<extension URI>": <prompt text or null>`,
//! `"templateUri": <string or null>`, and — only when there is one — `"negotiationContext"`.
//! Key order does not survive protobuf `Struct`, so readers never rely on it.

use serde_json::{Map, Value};

use crate::context::{ContextError, NegotiationContext};
use crate::uri::{
    NEGOTIATION_CONTEXT_KEY, NEGOTIATION_T_EXTENSION_URI, NEGOTIATION_T_EXTENSION_URI_NL,
    TEMPLATE_URI_KEY, normalize_extension_uri,
};

/// Why the A2A-T entries of a metadata object could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// The extension URI key holds something other than a string or null.
    #[error("A2A-T prompt text under the extension URI must be a string or null")]
    PromptNotText,
    /// `templateUri` holds something other than a string or null.
    #[error("templateUri must be a string or null")]
    TemplateUriNotText,
    /// `negotiationContext` is present but unreadable.
    #[error(transparent)]
    Context(#[from] ContextError),
}

/// The A2A-T content of one metadata object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetadataContent {
    /// The extension the content belongs to (its URI is the prompt's metadata key).
    pub extension_uri: String,
    /// The rendered prompt or message text (`null` on the wire when `None`).
    pub prompt_text: Option<String>,
    /// The template URI (`null` on the wire when `None`).
    pub template_uri: Option<String>,
    /// The negotiation context; the key is omitted entirely when `None`.
    pub negotiation_context: Option<NegotiationContext>,
}

impl MetadataContent {
    /// Content for `extension_uri` with no prompt, template or context.
    pub fn new(extension_uri: impl Into<String>) -> Self {
        MetadataContent {
            extension_uri: extension_uri.into(),
            prompt_text: None,
            template_uri: None,
            negotiation_context: None,
        }
    }

    /// The metadata object, keys in build order. The Negotiation-T NL alias is emitted as the
    /// canonical URI.
    pub fn to_metadata(&self) -> Map<String, Value> {
        let mut metadata = Map::with_capacity(3);
        self.write_into(&mut metadata);
        metadata
    }

    /// Writes the entries into an existing metadata object, leaving other keys alone. A stale
    /// `negotiationContext` is removed when this content has none, so that reading `metadata`
    /// back gives this content.
    pub fn write_into(&self, metadata: &mut Map<String, Value>) {
        let key = normalize_extension_uri(&self.extension_uri);
        let text =
            |s: &Option<String>| s.as_ref().map_or(Value::Null, |s| Value::String(s.clone()));
        metadata.insert(key.to_owned(), text(&self.prompt_text));
        metadata.insert(TEMPLATE_URI_KEY.to_owned(), text(&self.template_uri));
        match &self.negotiation_context {
            Some(context) => {
                metadata.insert(NEGOTIATION_CONTEXT_KEY.to_owned(), context.to_json());
            }
            None => {
                metadata.remove(NEGOTIATION_CONTEXT_KEY);
            }
        }
    }

    /// Reads the content of `extension_uri` from a metadata object; `Ok(None)` when the
    /// extension's key is absent. For Negotiation-T the NL alias key is accepted (the canonical
    /// key wins when both are present) and the result carries the canonical URI. An absent
    /// `templateUri` reads as `None`; `negotiationContext` is parsed whenever present.
    pub fn read(
        metadata: &Map<String, Value>,
        extension_uri: &str,
    ) -> Result<Option<Self>, MetadataError> {
        let extension_uri = normalize_extension_uri(extension_uri);
        let prompt = metadata.get(extension_uri).or_else(|| {
            (extension_uri == NEGOTIATION_T_EXTENSION_URI)
                .then(|| metadata.get(NEGOTIATION_T_EXTENSION_URI_NL))
                .flatten()
        });
        let Some(prompt) = prompt else {
            return Ok(None);
        };
        let prompt_text = optional_text(Some(prompt)).ok_or(MetadataError::PromptNotText)?;
        let template_uri = optional_text(metadata.get(TEMPLATE_URI_KEY))
            .ok_or(MetadataError::TemplateUriNotText)?;
        let negotiation_context = metadata
            .get(NEGOTIATION_CONTEXT_KEY)
            .map(NegotiationContext::from_json)
            .transpose()?;
        Ok(Some(MetadataContent {
            extension_uri: extension_uri.to_owned(),
            prompt_text,
            template_uri,
            negotiation_context,
        }))
    }
}

/// `Some(None)` for absent or null, `Some(Some(s))` for a string, `None` for any other type.
fn optional_text(value: Option<&Value>) -> Option<Option<String>> {
    match value {
        None | Some(Value::Null) => Some(None),
        Some(Value::String(s)) => Some(Some(s.clone())),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Performative;
    use crate::uri::TASK_T_EXTENSION_URI;
    use serde_json::json;

    #[test]
    fn build_order_and_null_entries() {
        let m = MetadataContent::new(TASK_T_EXTENSION_URI).to_metadata();
        assert_eq!(
            serde_json::to_string(&m).expect("serialises"),
            format!(r#"{{"{TASK_T_EXTENSION_URI}":null,"templateUri":null}}"#)
        );
    }

    #[test]
    fn alias_is_read_but_never_written() {
        let mut md = Map::new();
        md.insert(NEGOTIATION_T_EXTENSION_URI_NL.to_owned(), json!("## x"));
        let read = MetadataContent::read(&md, NEGOTIATION_T_EXTENSION_URI)
            .expect("readable")
            .expect("present");
        assert_eq!(read.extension_uri, NEGOTIATION_T_EXTENSION_URI);
        assert_eq!(read.prompt_text.as_deref(), Some("## x"));
        let mut aliased = read.clone();
        aliased.extension_uri = NEGOTIATION_T_EXTENSION_URI_NL.to_owned();
        let written = aliased.to_metadata();
        assert!(written.contains_key(NEGOTIATION_T_EXTENSION_URI));
        assert!(!written.contains_key(NEGOTIATION_T_EXTENSION_URI_NL));
    }

    #[test]
    fn read_rejects_wrong_types_and_reports_absence() {
        let mut md = Map::new();
        assert_eq!(MetadataContent::read(&md, TASK_T_EXTENSION_URI), Ok(None));
        md.insert(TASK_T_EXTENSION_URI.to_owned(), json!(1));
        assert_eq!(
            MetadataContent::read(&md, TASK_T_EXTENSION_URI),
            Err(MetadataError::PromptNotText)
        );
        md.insert(TASK_T_EXTENSION_URI.to_owned(), json!("p"));
        md.insert(TEMPLATE_URI_KEY.to_owned(), json!(["x"]));
        assert_eq!(
            MetadataContent::read(&md, TASK_T_EXTENSION_URI),
            Err(MetadataError::TemplateUriNotText)
        );
        md.insert(TEMPLATE_URI_KEY.to_owned(), json!("Task-T/a/v1"));
        md.insert(
            NEGOTIATION_CONTEXT_KEY.to_owned(),
            json!({"id": "x", "round": 1.5, "maxRounds": 5, "performative": "ABORT"}),
        );
        assert_eq!(
            MetadataContent::read(&md, TASK_T_EXTENSION_URI).map_err(|e| e.to_string()),
            Err("Negotiation round must be an integer".to_owned())
        );
    }

    #[test]
    fn write_into_keeps_foreign_keys_and_drops_a_stale_context() {
        let ctx = NegotiationContext::new("i", 1, 5, Performative::Propose).expect("valid");
        let mut md = Map::new();
        md.insert("host".to_owned(), json!(true));
        md.insert(NEGOTIATION_CONTEXT_KEY.to_owned(), ctx.to_json());
        let content = MetadataContent::new(TASK_T_EXTENSION_URI);
        content.write_into(&mut md);
        assert_eq!(md.get("host"), Some(&json!(true)));
        assert!(!md.contains_key(NEGOTIATION_CONTEXT_KEY));
        assert_eq!(
            MetadataContent::read(&md, TASK_T_EXTENSION_URI),
            Ok(Some(content))
        );
    }
}
