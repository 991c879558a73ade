//! The time left for a task reaches its callbacks: `TaskRequest::remaining_ms` in `on_task`,
//! `NegotiationRequest::remaining_ms` in each `on_negotiation`, decreasing from one callback of
//! the task to the next and never above the task's own timeout.

use a2aflow::a2at::{self, MetadataContent, NEGOTIATION_T_EXTENSION_URI, NegotiationContext};
use a2aflow::kernel::{CallbackError, ControlPoint, RunInput};
use a2aflow::model::{
    LoadOptions, MessageContent, NegotiationReply, NegotiationRequest, TaskRequest, TaskResult,
    load_workflow_str,
};
use a2aflow::{EngineConfig, HostHooks, execute_workflow, fetch_agent_cards};
use a2aflow_testkit::{AgentSpec, TestServer};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Activates Negotiation-T, rejects the first two proposals and accepts the third; records the
/// time left each callback was given, and lets some time pass in each.
#[derive(Default)]
struct Budgeting {
    seen: Mutex<Vec<(&'static str, u64)>>,
}

fn reply(request: &NegotiationRequest, performative: a2at::Performative) -> NegotiationReply {
    let received = NegotiationContext::from_json(&request.negotiation_context).unwrap();
    let mut metadata = serde_json::Map::new();
    let mut content = MetadataContent::new(NEGOTIATION_T_EXTENSION_URI);
    content.negotiation_context = Some(a2at::reply_context(&received, performative).unwrap());
    content.write_into(&mut metadata);
    let mut message = MessageContent::text("reply");
    message.metadata = Some(metadata);
    message
        .extensions
        .push(NEGOTIATION_T_EXTENSION_URI.to_owned());
    NegotiationReply::Send { content: message }
}

#[async_trait::async_trait]
impl ControlPoint for Budgeting {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        self.seen
            .lock()
            .unwrap()
            .push(("on_task", request.remaining_ms));
        tokio::time::sleep(Duration::from_millis(5)).await;
        let mut content = MessageContent::text("negotiate a price");
        content
            .extensions
            .push(NEGOTIATION_T_EXTENSION_URI.to_owned());
        let mut metadata = serde_json::Map::new();
        MetadataContent::new(NEGOTIATION_T_EXTENSION_URI).write_into(&mut metadata);
        content.metadata = Some(metadata);
        Ok(content)
    }

    async fn on_self_task(&self, _: TaskRequest) -> Result<TaskResult, CallbackError> {
        Ok(TaskResult::default())
    }

    async fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> Result<NegotiationReply, CallbackError> {
        assert_eq!(request.task.remaining_ms, request.remaining_ms);
        let round = {
            let mut seen = self.seen.lock().unwrap();
            seen.push(("on_negotiation", request.remaining_ms));
            seen.len() - 1
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        let performative = if round < 3 {
            a2at::Performative::Reject
        } else {
            a2at::Performative::Accept
        };
        Ok(reply(&request, performative))
    }
}

#[tokio::test]
async fn the_time_left_decreases_across_the_callbacks_of_one_task() {
    let server =
        TestServer::single(AgentSpec::new("haggler").extension(NEGOTIATION_T_EXTENSION_URI, false))
            .await
            .unwrap();
    let config = EngineConfig::default();
    let cards = fetch_agent_cards(&[server.card_url("haggler")], &config)
        .await
        .unwrap();
    let workflow = load_workflow_str(
        r#"{"steps": [{"name": "deal", "subtasks": [{"agent": "haggler", "timeout": 30}]}]}"#,
        LoadOptions::STRICT,
    )
    .unwrap()
    .workflow;
    let host = Arc::new(Budgeting::default());
    let result = execute_workflow(
        workflow,
        &cards,
        host.clone(),
        &config,
        RunInput::default(),
        HostHooks::default(),
    )
    .await
    .unwrap();
    assert!(result.success, "{:#?}", result.failure);
    let seen = host.seen.lock().unwrap().clone();
    let kinds: Vec<&str> = seen.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        kinds,
        [
            "on_task",
            "on_negotiation",
            "on_negotiation",
            "on_negotiation"
        ]
    );
    let left: Vec<u64> = seen.iter().map(|(_, ms)| *ms).collect();
    // Within the subtask's own 30 s (the run's budget is 600 s), and strictly less each time:
    // every callback let some time pass.
    assert!(left[0] <= 30_000 && left[0] > 0, "{left:?}");
    assert!(left.windows(2).all(|w| w[1] < w[0]), "{left:?}");
}
