//! Messages in and out: what a script sees ([`IncomingMessage`]), what an agent says
//! ([`AgentMessage`]) and the Negotiation-T metadata shapes ([`NegotiationContext`], [`Proposal`]).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::spec::Binding;

/// The canonical Negotiation-T extension URI (A2A-T 1.2).
pub const NEGOTIATION_T_URI: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Negotiation-T/v1";
/// The metadata key holding the negotiation context object.
pub const NEGOTIATION_CONTEXT_KEY: &str = "negotiationContext";
/// The metadata key holding the template URI.
pub const TEMPLATE_URI_KEY: &str = "templateUri";

/// A user message as the agent received it, handed to scripts.
///
/// ```
/// use a2aflow_testkit::IncomingMessage;
/// let m = IncomingMessage::from_json(serde_json::json!({
///     "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "slow 2 please"}]
/// }));
/// assert_eq!(m.first_word(), "slow");
/// assert_eq!(m.text(), "slow 2 please");
/// assert!(m.task_id().is_none());
/// ```
#[derive(Debug, Clone)]
pub struct IncomingMessage {
    raw: Value,
    text: String,
    requested_extensions: Arc<[String]>,
    streaming: bool,
    binding: Binding,
}

impl IncomingMessage {
    /// Wraps a message object (ProtoJSON) as received, for unit-testing scripts.
    pub fn from_json(message: Value) -> Self {
        Self::new(message, Arc::from(Vec::new()), false, Binding::JsonRpc)
    }

    pub(crate) fn new(
        raw: Value,
        requested_extensions: Arc<[String]>,
        streaming: bool,
        binding: Binding,
    ) -> Self {
        let text = first_text(&raw).to_owned();
        Self {
            raw,
            text,
            requested_extensions,
            streaming,
            binding,
        }
    }

    /// The whole message object as received (ProtoJSON), with `taskId`/`contextId` as sent.
    pub fn message(&self) -> &Value {
        &self.raw
    }

    /// The first text part, or `""`.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The first whitespace-separated word of [`Self::text`], lower-cased (the Python peer's command).
    pub fn first_word(&self) -> String {
        self.text
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_lowercase()
    }

    /// `message.taskId`, if the client sent one.
    pub fn task_id(&self) -> Option<&str> {
        self.raw.get("taskId").and_then(Value::as_str)
    }

    /// `message.contextId`, if the client sent one.
    pub fn context_id(&self) -> Option<&str> {
        self.raw.get("contextId").and_then(Value::as_str)
    }

    /// `message.referenceTaskIds`: the string entries, in order (none when absent).
    pub fn reference_task_ids(&self) -> Vec<&str> {
        self.raw
            .get("referenceTaskIds")
            .and_then(Value::as_array)
            .map(|ids| ids.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// `message.metadata`, if present and an object.
    pub fn metadata(&self) -> Option<&Map<String, Value>> {
        self.raw.get("metadata").and_then(Value::as_object)
    }

    /// `message.extensions` (the URIs the message says it uses).
    pub fn extensions(&self) -> Vec<&str> {
        self.raw
            .get("extensions")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// The URIs listed in the request's `A2A-Extensions` header(s).
    pub fn requested_extensions(&self) -> &[String] {
        &self.requested_extensions
    }

    /// Whether the message came through a streaming method.
    pub fn is_streaming(&self) -> bool {
        self.streaming
    }

    /// The binding the message came through.
    pub fn binding(&self) -> Binding {
        self.binding
    }

    /// The Negotiation-T context in `metadata.negotiationContext`, read leniently
    /// (integral floats accepted), or `None` when absent or malformed.
    pub fn negotiation(&self) -> Option<NegotiationContext> {
        self.metadata().and_then(NegotiationContext::from_metadata)
    }
}

fn first_text(message: &Value) -> &str {
    message
        .get("parts")
        .and_then(Value::as_array)
        .and_then(|parts| {
            parts
                .iter()
                .find_map(|p| p.get("text").and_then(Value::as_str))
        })
        .unwrap_or("")
}

/// A message the agent sends (a direct reply or a task status message).
///
/// ```
/// use a2aflow_testkit::AgentMessage;
/// let m = AgentMessage::text("hello").with_metadata("k", serde_json::json!(1));
/// # let _ = m;
/// ```
#[derive(Debug, Clone, Default)]
pub struct AgentMessage {
    parts: Vec<Value>,
    metadata: Option<Map<String, Value>>,
    extensions: Vec<String>,
}

impl AgentMessage {
    /// A message with one text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::default().with_raw_part(json!({ "text": text.into() }))
    }

    /// A message with the given parts.
    pub fn parts(parts: impl IntoIterator<Item = a2a::Part>) -> Self {
        parts
            .into_iter()
            .fold(Self::default(), |m, p| m.with_part(p))
    }

    /// Adds a part.
    pub fn with_part(self, part: a2a::Part) -> Self {
        self.with_raw_part(part_to_json(&part))
    }

    /// Adds a part given as raw JSON (any shape, for fault tests).
    pub fn with_raw_part(mut self, part: Value) -> Self {
        self.parts.push(part);
        self
    }

    /// Sets one metadata key.
    pub fn with_metadata(mut self, key: impl Into<String>, value: Value) -> Self {
        self.metadata
            .get_or_insert_with(Map::new)
            .insert(key.into(), value);
        self
    }

    /// Adds an extension URI to `message.extensions`.
    pub fn with_extension(mut self, uri: impl Into<String>) -> Self {
        self.extensions.push(uri.into());
        self
    }

    /// The wire form, stamped with a fresh `messageId` and the given identities.
    pub(crate) fn to_wire(&self, context_id: &str, task_id: Option<&str>) -> Value {
        let mut m = Map::new();
        m.insert("messageId".into(), uuid::Uuid::new_v4().to_string().into());
        m.insert("contextId".into(), context_id.into());
        if let Some(t) = task_id {
            m.insert("taskId".into(), t.into());
        }
        m.insert("role".into(), "ROLE_AGENT".into());
        m.insert("parts".into(), Value::Array(self.parts.clone()));
        if let Some(md) = &self.metadata {
            m.insert("metadata".into(), Value::Object(md.clone()));
        }
        if !self.extensions.is_empty() {
            m.insert("extensions".into(), json!(self.extensions));
        }
        Value::Object(m)
    }
}

/// Serializes an `a2a::Part` (infallible for the part shapes `a2a` defines).
pub(crate) fn part_to_json(part: &a2a::Part) -> Value {
    serde_json::to_value(part)
        .unwrap_or_else(|e| json!({ "text": format!("<unserializable part: {e}>") }))
}

/// The Negotiation-T `negotiationContext` object: `{id, round, maxRounds, performative}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NegotiationContext {
    /// Negotiation id (a UUID on the wire).
    pub id: String,
    /// 1-based round.
    pub round: u32,
    /// The round budget.
    pub max_rounds: u32,
    /// `PROPOSE`, `ACCEPT`, `REJECT` or `ABORT` (kept verbatim).
    pub performative: String,
}

impl NegotiationContext {
    /// A fresh PROPOSE context with a random UUID id.
    pub fn propose(round: u32, max_rounds: u32) -> Self {
        Self {
            id: uuid::Uuid::new_v4().to_string(),
            round,
            max_rounds,
            performative: "PROPOSE".into(),
        }
    }

    /// The JSON object, integers as integers, key order as the SDK emits it.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "round": self.round,
            "maxRounds": self.max_rounds,
            "performative": self.performative,
        })
    }

    /// Reads `metadata.negotiationContext` leniently; `None` if absent or not well formed.
    pub fn from_metadata(metadata: &Map<String, Value>) -> Option<Self> {
        let ctx = metadata.get(NEGOTIATION_CONTEXT_KEY)?.as_object()?;
        let int = |k: &str| {
            let v = ctx.get(k)?;
            v.as_u64()
                .or_else(|| {
                    v.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                        .map(|f| f as u64)
                })
                .and_then(|n| u32::try_from(n).ok())
        };
        Some(Self {
            id: ctx.get("id")?.as_str()?.to_owned(),
            round: int("round")?,
            max_rounds: int("maxRounds")?,
            performative: ctx.get("performative")?.as_str()?.to_owned(),
        })
    }
}

/// A Negotiation-T PROPOSE the agent sends in an `INPUT_REQUIRED` status message
/// (or a bare message in pre-task mode).
///
/// ```
/// use a2aflow_testkit::Proposal;
/// let p = Proposal::information(1, 5, "Energy saving area information");
/// assert_eq!(p.context.performative, "PROPOSE");
/// ```
#[derive(Debug, Clone)]
pub struct Proposal {
    /// The human-readable text part.
    pub text: String,
    /// The rendered prompt stored under the Negotiation-T URI key.
    pub prompt: String,
    /// The `templateUri` value.
    pub template_uri: String,
    /// The negotiation context (performative `PROPOSE`).
    pub context: NegotiationContext,
}

impl Proposal {
    /// An information-negotiation PROPOSE asking for one item.
    pub fn information(round: u32, max_rounds: u32, item: &str) -> Self {
        Self {
            text: "Please supplement the missing information.".into(),
            prompt: format!(
                "## Information Negotiation\nPlease supplement the relevant content based on <Required Information Items>.\n\n## Required Information Items\n1. {item}"
            ),
            template_uri: "Negotiation-T/information-negotiation/propose/v1".into(),
            context: NegotiationContext::propose(round, max_rounds),
        }
    }

    /// The same proposal one round later (same negotiation id).
    pub fn next_round(&self) -> Self {
        let mut next = self.clone();
        next.context.round = self.context.round.saturating_add(1);
        next
    }

    /// The metadata map: `{<Negotiation-T URI>: prompt, templateUri, negotiationContext}`.
    pub fn metadata(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(NEGOTIATION_T_URI.into(), self.prompt.clone().into());
        m.insert(TEMPLATE_URI_KEY.into(), self.template_uri.clone().into());
        m.insert(NEGOTIATION_CONTEXT_KEY.into(), self.context.to_json());
        m
    }

    /// The agent message carrying this proposal (metadata plus `extensions: [Negotiation-T]`).
    pub fn to_message(&self) -> AgentMessage {
        let mut msg = AgentMessage::text(self.text.clone()).with_extension(NEGOTIATION_T_URI);
        msg.metadata = Some(self.metadata());
        msg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proposal_metadata_has_a2at_shape() {
        let p = Proposal::information(2, 5, "area");
        let md = p.metadata();
        assert_eq!(
            md[TEMPLATE_URI_KEY],
            json!("Negotiation-T/information-negotiation/propose/v1")
        );
        let ctx = &md[NEGOTIATION_CONTEXT_KEY];
        assert_eq!(ctx["round"], json!(2));
        assert_eq!(ctx["maxRounds"], json!(5));
        assert_eq!(ctx["performative"], json!("PROPOSE"));
        assert!(md[NEGOTIATION_T_URI].as_str().unwrap().contains("1. area"));
    }

    #[test]
    fn negotiation_context_reads_integral_floats_and_rejects_fractions() {
        let mut md = Map::new();
        md.insert(
            NEGOTIATION_CONTEXT_KEY.into(),
            json!({"id":"x","round":2.0,"maxRounds":5,"performative":"ACCEPT"}),
        );
        let ctx = NegotiationContext::from_metadata(&md).unwrap();
        assert_eq!((ctx.round, ctx.max_rounds), (2, 5));
        md.insert(
            NEGOTIATION_CONTEXT_KEY.into(),
            json!({"id":"x","round":1.5,"maxRounds":5,"performative":"ACCEPT"}),
        );
        assert!(NegotiationContext::from_metadata(&md).is_none());
    }

    #[test]
    fn agent_message_wire_shape() {
        let w = AgentMessage::text("hi").to_wire("c1", Some("t1"));
        assert_eq!(w["role"], "ROLE_AGENT");
        assert_eq!(w["contextId"], "c1");
        assert_eq!(w["taskId"], "t1");
        assert_eq!(w["parts"], json!([{"text":"hi"}]));
        assert!(w.get("metadata").is_none());
    }
}
