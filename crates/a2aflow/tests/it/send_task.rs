//! `send_task`: one task outside a workflow, with a task's events and Negotiation-T, against the
//! testkit.

use a2aflow::a2at::{self, MetadataContent, NEGOTIATION_T_EXTENSION_URI, NegotiationContext};
use a2aflow::kernel::{CallbackError, ControlPoint, RunOptions};
use a2aflow::model::{
    ErrorCode, Event, EventKind, MessageContent, NegotiationReply, NegotiationRequest,
    TaskOutcomeStatus,
};
use a2aflow::{AgentEndpoint, EngineConfig, HostHooks, discover_agents, send_task};
use a2aflow_testkit::{AgentSpec, TestServer};
use std::sync::{Arc, Mutex};

/// Answers every proposal with ACCEPT.
struct Accepting;

#[async_trait::async_trait]
impl ControlPoint for Accepting {
    async fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> Result<NegotiationReply, CallbackError> {
        let received = NegotiationContext::from_json(&request.negotiation_context)
            .map_err(|e| CallbackError::Other(e.to_string()))?;
        let reply = a2at::reply_context(&received, a2at::Performative::Accept)
            .map_err(|e| CallbackError::Other(e.to_string()))?;
        let mut metadata = serde_json::Map::new();
        let mut content = MetadataContent::new(NEGOTIATION_T_EXTENSION_URI);
        content.prompt_text = Some("ACCEPT".to_owned());
        content.negotiation_context = Some(reply);
        content.write_into(&mut metadata);
        let mut reply = MessageContent::text("ACCEPT");
        reply.metadata = Some(metadata);
        reply.extensions = vec![NEGOTIATION_T_EXTENSION_URI.to_owned()];
        Ok(NegotiationReply::Send { content: reply })
    }
}

/// Content that activates Negotiation-T.
fn activating(text: &str) -> MessageContent {
    let mut content = MessageContent::text(text);
    content
        .extensions
        .push(NEGOTIATION_T_EXTENSION_URI.to_owned());
    let mut metadata = serde_json::Map::new();
    MetadataContent::new(NEGOTIATION_T_EXTENSION_URI).write_into(&mut metadata);
    content.metadata = Some(metadata);
    content
}

async fn agent() -> (TestServer, AgentEndpoint) {
    let server = TestServer::builder()
        .agent(AgentSpec::new("noc").extension(NEGOTIATION_T_EXTENSION_URI, false))
        .spawn()
        .await
        .unwrap();
    let config = EngineConfig::default();
    let mut agents = discover_agents(&[("noc", server.card_url("noc"))], &config)
        .await
        .unwrap();
    (server, agents.remove(0))
}

fn recording() -> (HostHooks, Arc<Mutex<Vec<Event>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let hooks = HostHooks {
        run_options: RunOptions {
            on_event: Some(Arc::new(move |e: &Event| {
                sink.lock().unwrap().push(e.clone())
            })),
            ..RunOptions::default()
        },
        ..HostHooks::default()
    };
    (hooks, events)
}

#[tokio::test]
async fn one_task_is_sent_with_its_events_and_its_result_returned() {
    let (server, noc) = agent().await;
    let (hooks, events) = recording();
    let config = EngineConfig::default();
    let view = send_task(
        &noc,
        MessageContent::text("task check link A-B"),
        None,
        &config,
        hooks,
    )
    .await
    .unwrap();
    assert_eq!(view.status, TaskOutcomeStatus::Completed, "{view:?}");
    assert_eq!(view.agent_name, "noc");
    assert!(view.remote_task_id.is_some() && view.context_id.is_some());
    assert!(!view.outputs.is_empty(), "{view:?}");
    let kinds: Vec<EventKind> = events.lock().unwrap().iter().map(|e| e.kind).collect();
    for kind in [
        EventKind::TaskRequest,
        EventKind::AgentRequest,
        EventKind::TaskResponse,
    ] {
        assert!(kinds.contains(&kind), "{kind:?} missing from {kinds:?}");
    }
    let sends = server
        .requests()
        .iter()
        .filter(|r| r.agent.as_deref() == Some("noc"))
        .count();
    assert!(sends > 0);
}

#[tokio::test]
async fn a_failed_task_is_its_view_and_a_negotiation_goes_to_the_negotiator() {
    let (_server, noc) = agent().await;
    let config = EngineConfig::default();
    let failed = send_task(
        &noc,
        MessageContent::text("fail now"),
        None,
        &config,
        HostHooks::default(),
    )
    .await
    .unwrap();
    assert_eq!(failed.status, TaskOutcomeStatus::Failed);
    assert_eq!(
        failed.error_code.as_deref(),
        Some("a2a.task_failed"),
        "{failed:?}"
    );

    let negotiated = send_task(
        &noc,
        activating("negotiate a price"),
        Some(Arc::new(Accepting)),
        &config,
        HostHooks::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        negotiated.status,
        TaskOutcomeStatus::Completed,
        "{negotiated:?}"
    );

    let refused = send_task(
        &noc,
        activating("negotiate a price"),
        None,
        &config,
        HostHooks::default(),
    )
    .await
    .unwrap();
    assert_eq!(refused.status, TaskOutcomeStatus::Failed);
    assert_eq!(
        refused.error_code.as_deref(),
        Some(ErrorCode::WorkflowCallbackMissing.as_str()),
        "{refused:?}"
    );
}
