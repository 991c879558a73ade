//! The host every section uses: the description as text (Negotiation-T activated for
//! `negotiate …` tasks), and ACCEPT for every proposal.

use std::sync::Arc;

use a2aflow::a2at::{
    self, MetadataContent, NEGOTIATION_T_EXTENSION_URI, NegotiationContext, Performative,
};
use a2aflow::kernel::{CallbackError, ControlPoint};
use a2aflow::model::a2a::Part;
use a2aflow::model::{
    MessageContent, NegotiationReply, NegotiationRequest, TaskRequest, TaskResult,
};
use a2aflow::protocol::client::A2aEngineClient;
use a2aflow::{EngineConfig, TransportFactory, fetch_agent_cards};
use serde_json::Map;

/// See the module docs.
pub struct Host;

#[async_trait::async_trait]
impl ControlPoint for Host {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        let negotiating = request.description.starts_with("negotiate");
        let mut content = MessageContent::text(request.description);
        if negotiating {
            content
                .extensions
                .push(NEGOTIATION_T_EXTENSION_URI.to_owned());
            let mut metadata = Map::new();
            MetadataContent::new(NEGOTIATION_T_EXTENSION_URI).write_into(&mut metadata);
            content.metadata = Some(metadata);
        }
        Ok(content)
    }

    async fn on_self_task(&self, _request: TaskRequest) -> Result<TaskResult, CallbackError> {
        Err(CallbackError::Other("no SELF_LOOP steps here".into()))
    }

    async fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> Result<NegotiationReply, CallbackError> {
        let received = NegotiationContext::from_json(&request.negotiation_context)
            .map_err(|e| CallbackError::Other(format!("unreadable proposal: {e}")))?;
        let reply = a2at::reply_context(&received, Performative::Accept)
            .map_err(|e| CallbackError::Other(format!("cannot answer: {e}")))?;
        let mut metadata = Map::new();
        let mut content = MetadataContent::new(NEGOTIATION_T_EXTENSION_URI);
        content.prompt_text = Some("ACCEPT".to_owned());
        content.negotiation_context = Some(reply);
        content.write_into(&mut metadata);
        Ok(NegotiationReply::Send {
            content: MessageContent {
                parts: vec![Part::text("ACCEPT")],
                metadata: Some(metadata),
                extensions: vec![NEGOTIATION_T_EXTENSION_URI.to_owned()],
            },
        })
    }
}

/// One engine client shared by every run of a section: the facade's [`TransportFactory`] builds
/// each agent's transport; non-streaming sends return at once and are polled, so a waiting task
/// holds no socket.
pub async fn shared_client(card_urls: &[String], config: &EngineConfig) -> Arc<A2aEngineClient> {
    let cards = fetch_agent_cards(card_urls, config).await.unwrap();
    let factory = TransportFactory::new(config, None).unwrap();
    let mut client = A2aEngineClient::new(
        config
            .client_config()
            .unwrap()
            .with_return_immediately(true),
    )
    .unwrap();
    for card in &cards {
        client
            .add_agent(card, factory.connect(card).unwrap())
            .unwrap();
    }
    Arc::new(client)
}
