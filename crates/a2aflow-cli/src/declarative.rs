//! The built-in declarative ControlPoint of `a2aflow run` and `a2aflow demo`.
//!
//! - `on_task`: the subtask description as a text part, plus — when the task sees upstream
//!   results — one data part `{"runtimeIntent", "upstream": [{"step", "outputs"}]}`. Negotiation-T
//!   is activated (extension URI in `extensions` and its metadata key) only for agents whose card
//!   declares it, so a Propose from any other agent fails as `negotiation.not_activated`.
//! - `on_self_task`: a summary data part built from the upstream outputs.
//! - `on_route`: the route policy (allow all, deny all, or a table of `source->target` decisions;
//!   an edge missing from the table is a callback failure, never an implicit decision).
//! - `on_negotiation`: ACCEPT or REJECT echoing the proposal's id, round and maxRounds, or Stop.

use a2aflow::a2at::{
    self, MetadataContent, NEGOTIATION_T_EXTENSION_URI, NegotiationContext, Performative,
};
use a2aflow::kernel::{CallbackError, ControlPoint};
use a2aflow::model::a2a::{Part, PartContent};
use a2aflow::model::{
    MessageContent, NegotiationReply, NegotiationRequest, Output, RouteDecision, RouteRequest,
    TaskRequest, TaskResult, UpstreamResult,
};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashSet};

/// How `on_route` decides.
#[derive(Debug, Clone, PartialEq)]
pub enum RoutePolicy {
    /// Every conditional edge is taken.
    AllowAll,
    /// No conditional edge is taken.
    DenyAll,
    /// Decisions per `source->target`; a missing edge fails the route.
    Table(BTreeMap<String, bool>),
}

impl RoutePolicy {
    /// Parses `allow-all`, `deny-all`, or a JSON object `{"a->b": true, …}` read from a file.
    pub fn parse(spec: &str) -> Result<Self, String> {
        match spec {
            "allow-all" => Ok(RoutePolicy::AllowAll),
            "deny-all" => Ok(RoutePolicy::DenyAll),
            path => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read routes file {path}: {e}"))?;
                let table: BTreeMap<String, bool> = serde_json::from_str(&text).map_err(|e| {
                    format!(
                        "routes file {path} must be a JSON object of \"source->target\": bool ({e})"
                    )
                })?;
                Ok(RoutePolicy::Table(table))
            }
        }
    }
}

/// How `on_negotiation` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NegotiationPolicy {
    /// Reply ACCEPT.
    Accept,
    /// Reply REJECT.
    Reject,
    /// Stop locally (`negotiation.stopped`).
    Stop,
}

/// The declarative ControlPoint.
#[derive(Debug, Clone)]
pub struct DeclarativeControlPoint {
    routes: RoutePolicy,
    negotiation: NegotiationPolicy,
    negotiating_agents: HashSet<String>,
}

impl DeclarativeControlPoint {
    /// A ControlPoint with these policies; `negotiating_agents` are the agents whose cards declare
    /// Negotiation-T.
    pub fn new(
        routes: RoutePolicy,
        negotiation: NegotiationPolicy,
        negotiating_agents: HashSet<String>,
    ) -> Self {
        DeclarativeControlPoint {
            routes,
            negotiation,
            negotiating_agents,
        }
    }
}

fn upstream_json(upstream: &[std::sync::Arc<UpstreamResult>]) -> Value {
    Value::Array(
        upstream
            .iter()
            .map(|u| {
                let outputs: Vec<Value> = u
                    .task_results
                    .iter()
                    .flat_map(|t| t.outputs.iter())
                    .flat_map(|o| o.parts.iter())
                    .map(part_json)
                    .collect();
                json!({ "step": u.step_name, "outputs": outputs })
            })
            .collect(),
    )
}

fn part_json(part: &Part) -> Value {
    match &part.content {
        PartContent::Text(t) => Value::String(t.clone()),
        PartContent::Data(d) => d.clone(),
        PartContent::Url(u) => json!({ "url": u }),
        PartContent::Raw(bytes) => json!({ "rawBytes": bytes.len() }),
    }
}

#[async_trait::async_trait]
impl ControlPoint for DeclarativeControlPoint {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        let mut content = MessageContent::text(request.description.clone());
        let upstream = &request.workflow_input.upstream_results;
        if !upstream.is_empty() || request.workflow_input.runtime_intent.is_some() {
            let mut data = Part::data(json!({
                "runtimeIntent": request.workflow_input.runtime_intent,
                "upstream": upstream_json(upstream),
            }));
            data.media_type = Some("application/json".to_owned());
            content.parts.push(data);
        }
        if self.negotiating_agents.contains(request.agent.as_str()) {
            content
                .extensions
                .push(NEGOTIATION_T_EXTENSION_URI.to_owned());
            let mut metadata = Map::new();
            MetadataContent::new(NEGOTIATION_T_EXTENSION_URI).write_into(&mut metadata);
            content.metadata = Some(metadata);
        }
        Ok(content)
    }

    async fn on_self_task(&self, request: TaskRequest) -> Result<TaskResult, CallbackError> {
        let upstream = &request.workflow_input.upstream_results;
        let lines: Vec<String> = upstream
            .iter()
            .map(|u| {
                let states: Vec<String> = u
                    .task_results
                    .iter()
                    .map(|t| format!("{} {:?}", t.agent_name, t.status))
                    .collect();
                format!("{}: {}", u.step_name, states.join(", "))
            })
            .collect();
        Ok(TaskResult {
            outputs: vec![Output::data(json!({
                "summary": request.description,
                "steps": lines,
                "upstream": upstream_json(upstream),
            }))],
        })
    }

    async fn on_route(&self, request: RouteRequest) -> Result<RouteDecision, CallbackError> {
        match &self.routes {
            RoutePolicy::AllowAll => Ok(RouteDecision::allow("route policy: allow-all")),
            RoutePolicy::DenyAll => Ok(RouteDecision::deny("route policy: deny-all")),
            RoutePolicy::Table(table) => {
                let key = format!("{}->{}", request.source_step, request.target_step);
                match table.get(&key) {
                    Some(true) => Ok(RouteDecision::allow(format!("routes table: {key}"))),
                    Some(false) => Ok(RouteDecision::deny(format!("routes table: {key}"))),
                    None => Err(CallbackError::Other(format!(
                        "the routes table has no decision for edge {key}"
                    ))),
                }
            }
        }
    }

    async fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> Result<NegotiationReply, CallbackError> {
        let performative = match self.negotiation {
            NegotiationPolicy::Stop => {
                return Ok(NegotiationReply::Stop {
                    code: "negotiation.stopped".to_owned(),
                    reason: "the negotiation policy is stop".to_owned(),
                });
            }
            NegotiationPolicy::Accept => Performative::Accept,
            NegotiationPolicy::Reject => Performative::Reject,
        };
        let received = NegotiationContext::from_json(&request.negotiation_context)
            .map_err(|e| CallbackError::Other(format!("unreadable proposal: {e}")))?;
        let reply = a2at::reply_context(&received, performative)
            .map_err(|e| CallbackError::Other(format!("cannot answer the proposal: {e}")))?;
        let mut metadata = Map::new();
        let mut a2at_content = MetadataContent::new(NEGOTIATION_T_EXTENSION_URI);
        a2at_content.prompt_text = Some(performative.as_str().to_owned());
        a2at_content.negotiation_context = Some(reply);
        a2at_content.write_into(&mut metadata);
        Ok(NegotiationReply::Send {
            content: MessageContent {
                parts: vec![Part::text(format!(
                    "{} (round {} of {})",
                    performative.as_str(),
                    received.round(),
                    received.max_rounds()
                ))],
                metadata: Some(metadata),
                extensions: vec![NEGOTIATION_T_EXTENSION_URI.to_owned()],
                context_id: None,
            },
        })
    }
}
