//! The host every section uses: the description as text (Negotiation-T activated for
//! `negotiate …` tasks), and ACCEPT for every proposal.

use std::sync::Arc;

use a2aflow::a2at::Performative;
use a2aflow::engine::A2aEngineClient;
use a2aflow::kernel::{CallbackError, ControlPoint};
use a2aflow::model::{
    MessageContent, NegotiationReply, NegotiationRequest, TaskRequest, TaskResult,
};
use a2aflow::{EngineConfig, TransportFactory, fetch_agent_cards};

/// See the module docs.
pub struct Host;

#[async_trait::async_trait]
impl ControlPoint for Host {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        if request.description.starts_with("negotiate") {
            return Ok(a2aflow_tests::negotiation_activating(
                request.description.into(),
            ));
        }
        Ok(MessageContent::text(request.description))
    }

    async fn on_self_task(&self, _request: TaskRequest) -> Result<TaskResult, CallbackError> {
        Err(CallbackError::Other("no SELF_LOOP steps here".into()))
    }

    async fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> Result<NegotiationReply, CallbackError> {
        a2aflow_tests::negotiation_reply(&request, Performative::Accept, "ACCEPT")
    }
}

/// One engine client shared by every run of a section: the facade's [`TransportFactory`] builds
/// each agent's transport; non-streaming sends return at once and are polled, so a waiting task
/// holds no socket.
pub async fn shared_client(card_urls: &[String], config: &EngineConfig) -> Arc<A2aEngineClient> {
    let cards = fetch_agent_cards(card_urls, config).await.unwrap();
    let factory: TransportFactory = config.channel_factory(None).unwrap();
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
