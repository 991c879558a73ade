//! The events of real runs against `schemas/events.schema.json`: two runs against testkit agents
//! (one that succeeds, one that fails) reach every kind a workflow emits, and every event they
//! emit validates and reads back as its kind's typed payload.

use a2aflow::a2at::{self, MetadataContent, NEGOTIATION_T_EXTENSION_URI, NegotiationContext};
use a2aflow::kernel::{CallbackError, ControlPoint, GateBoard, GatePolicy, RunInput, RunOptions};
use a2aflow::model::event_schema::check_event_schema;
use a2aflow::model::{
    Event, EventKind, EventPayload, LoadOptions, MessageContent, NegotiationReply,
    NegotiationRequest, Output, RouteDecision, RouteRequest, TaskRequest, TaskResult,
    load_workflow_str,
};
use a2aflow::{EngineConfig, HostHooks, execute_workflow_stream, fetch_agent_cards};
use a2aflow_testkit::{AgentSpec, TestServer};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// Negotiation-T for `negotiate …` tasks: ACCEPT, a Stop for `negotiate stop`, and a failing
/// hook for `negotiate broken`; plain text otherwise; every route allowed.
struct Host;

fn activating(text: String) -> MessageContent {
    let mut content = MessageContent::text(text);
    content
        .extensions
        .push(NEGOTIATION_T_EXTENSION_URI.to_owned());
    let mut metadata = serde_json::Map::new();
    MetadataContent::new(NEGOTIATION_T_EXTENSION_URI).write_into(&mut metadata);
    content.metadata = Some(metadata);
    content
}

fn accept(request: &NegotiationRequest) -> Result<NegotiationReply, CallbackError> {
    let received = NegotiationContext::from_json(&request.negotiation_context)
        .map_err(|e| CallbackError::Other(format!("unreadable proposal: {e}")))?;
    let reply = a2at::reply_context(&received, a2at::Performative::Accept)
        .map_err(|e| CallbackError::Other(format!("cannot answer: {e}")))?;
    let mut metadata = serde_json::Map::new();
    let mut content = MetadataContent::new(NEGOTIATION_T_EXTENSION_URI);
    content.prompt_text = Some("ACCEPT".to_owned());
    content.negotiation_context = Some(reply);
    content.write_into(&mut metadata);
    Ok(NegotiationReply::Send {
        content: MessageContent {
            parts: vec![a2aflow::model::a2a::Part::text("ACCEPT")],
            metadata: Some(metadata),
            extensions: vec![NEGOTIATION_T_EXTENSION_URI.to_owned()],
            context_id: None,
        },
    })
}

#[async_trait::async_trait]
impl ControlPoint for Host {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        if request.description.starts_with("negotiate") {
            return Ok(activating(request.description.into()));
        }
        Ok(MessageContent::text(request.description))
    }

    async fn on_self_task(&self, _request: TaskRequest) -> Result<TaskResult, CallbackError> {
        Ok(TaskResult {
            outputs: vec![Output::data(json!({"done": true}))],
        })
    }

    async fn on_route(&self, _request: RouteRequest) -> Result<RouteDecision, CallbackError> {
        Ok(RouteDecision::allow("looks good"))
    }

    async fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> Result<NegotiationReply, CallbackError> {
        match request.task.description.as_str() {
            "negotiate stop" => Ok(NegotiationReply::Stop {
                code: "biz.declined".into(),
                reason: "the host declines".into(),
            }),
            "negotiate broken" => Err(CallbackError::Other("the hook broke".into())),
            _ => accept(&request),
        }
    }
}

const SUCCEEDS: &str = r#"{"id": "ok", "steps": [
  {"name": "ask", "subtasks": [
     {"agent": "streamer", "description": "stream please"},
     {"agent": "plain", "description": "hello there"},
     {"agent": "plain", "description": "negotiate go"}],
   "next": [{"step": "sum", "condition": "if it went well"}]},
  {"name": "sum", "type": "SELF_LOOP", "subtasks": [{"agent": "", "description": "sum"}]}
]}"#;

const FAILS: &str = r#"{"id": "bad", "steps": [
  {"name": "try", "subtasks": [
     {"agent": "plain", "description": "fail now"},
     {"agent": "plain", "description": "negotiate stop"},
     {"agent": "plain", "description": "negotiate broken"},
     {"agent": "plain", "description": "flaky 1 then fine",
      "retry": {"attempts": 2, "backoff": {"initial": 0.01}, "on": ["a2a.task_failed"]}}]}
]}"#;

async fn events_of(workflow: &str, server: &TestServer) -> Vec<Event> {
    let config = EngineConfig::default();
    let urls = vec![server.card_url("streamer"), server.card_url("plain")];
    let cards = fetch_agent_cards(&urls, &config).await.unwrap();
    let workflow = load_workflow_str(workflow, LoadOptions::STRICT)
        .unwrap()
        .workflow;
    let mut stream = execute_workflow_stream(
        workflow,
        &cards,
        Arc::new(Host),
        &config,
        RunInput::default(),
        HostHooks::default(),
    )
    .unwrap();
    let mut events = Vec::new();
    let collect = async {
        while let Some(e) = stream.next().await {
            events.push(e);
        }
    };
    tokio::time::timeout(Duration::from_secs(60), collect)
        .await
        .expect("the run ends");
    events
}

const GATED: &str = r#"{"id": "gated", "steps": [
  {"name": "ask", "subtasks": [{"agent": "plain", "description": "input which city"}]}
]}"#;

/// A run whose task parks at its gate (`task_gated`), declined by the host when it opens.
async fn gated_events(server: &TestServer) -> Vec<Event> {
    let config = EngineConfig::default();
    let cards = fetch_agent_cards(&[server.card_url("plain")], &config)
        .await
        .unwrap();
    let workflow = load_workflow_str(GATED, LoadOptions::STRICT)
        .unwrap()
        .workflow;
    let board = GateBoard::new();
    let hooks = HostHooks {
        run_options: RunOptions {
            gate_policy: GatePolicy::Park,
            gate_board: Some(board.clone()),
            ..RunOptions::default()
        },
        ..HostHooks::default()
    };
    let mut stream = execute_workflow_stream(
        workflow,
        &cards,
        Arc::new(Host),
        &config,
        RunInput::default(),
        hooks,
    )
    .unwrap();
    let mut events = Vec::new();
    let collect = async {
        while let Some(e) = stream.next().await {
            if e.kind == EventKind::TaskGated {
                let task = e.task_id.clone().unwrap();
                board
                    .decline(&e.execution_id, &task, "biz.declined", "no")
                    .unwrap();
            }
            events.push(e);
        }
    };
    tokio::time::timeout(Duration::from_secs(60), collect)
        .await
        .expect("the run ends");
    events
}

#[tokio::test]
async fn every_event_of_real_runs_validates_and_reads_as_its_payload() {
    let server = TestServer::builder()
        .agent(AgentSpec::new("streamer").streaming(true))
        .agent(AgentSpec::new("plain").extension(NEGOTIATION_T_EXTENSION_URI, false))
        .spawn()
        .await
        .unwrap();
    let mut events = events_of(SUCCEEDS, &server).await;
    events.extend(events_of(FAILS, &server).await);
    events.extend(gated_events(&server).await);
    let mut seen = HashSet::new();
    let mut shapes = HashSet::new();
    for e in &events {
        let json = serde_json::to_value(e).unwrap();
        if let Err(v) = check_event_schema(&json) {
            panic!("{} refused by the schema: {v:?}\n{json:#}", e.kind);
        }
        // Read back from the event's text, as a consumer of the stream reads it.
        let payload = a2aflow::model::EventPayload::from_data(e.kind, &json["data"])
            .unwrap_or_else(|err| panic!("{err}\n{json:#}"));
        assert_eq!(payload.kind(), e.kind);
        assert_eq!(
            payload.to_data().unwrap(),
            e.data,
            "{} re-serialises",
            e.kind
        );
        seen.insert(e.kind);
        shapes.insert(shape(&payload));
    }
    // The reserved kinds, and the host's own (only a host's event hook emits it).
    let reserved = [
        EventKind::AuthorizationRequest,
        EventKind::AuthorizationResolved,
        EventKind::Notification,
        EventKind::HostEvent,
    ];
    let missing: Vec<_> = EventKind::ALL
        .iter()
        .filter(|k| !reserved.contains(k) && !seen.contains(k))
        .collect();
    assert!(missing.is_empty(), "kinds no run reached: {missing:?}");
    // Both negotiation_failed shapes: the client's (a host Stop) and the kernel's (a failing
    // hook); and the engine's own request/response shapes.
    for s in [
        "ClientNegotiationFailed",
        "HostNegotiationFailed",
        "RemoteRequest",
        "RemoteResponse",
    ] {
        assert!(shapes.contains(s), "no {s} event in {shapes:?}");
    }
}

/// The family member of a client payload, by name.
fn shape(payload: &EventPayload) -> &'static str {
    use a2aflow::model::ClientEvent as C;
    use a2aflow::model::event_data::{AgentRequestData, AgentResponseData, NegotiationFailedData};
    match payload {
        EventPayload::Client(C::NegotiationFailed(NegotiationFailedData::Client(_))) => {
            "ClientNegotiationFailed"
        }
        EventPayload::Client(C::NegotiationFailed(NegotiationFailedData::Host(_))) => {
            "HostNegotiationFailed"
        }
        EventPayload::Client(C::AgentRequest(AgentRequestData::Remote(_))) => "RemoteRequest",
        EventPayload::Client(C::AgentResponse(AgentResponseData::Remote(_))) => "RemoteResponse",
        _ => "other",
    }
}
