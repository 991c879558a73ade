//! Delegation across hosts, on the calling side: a task sent to a workflow that another a2aflow
//! server publishes carries the delegation request metadata (the calling execution, the root
//! of its tree, the depth the child would have, the flow it asks for), so that the serving side
//! admits it by its DelegationPolicy (depth, a cycle through its own runs, fan-out, budget)
//! before anything starts there.
//!
//! A served workflow's card is recognised by its skill: one skill tagged `a2aflow` and
//! `workflow`, whose id is the workflow's id (what this crate's cards say).

use a2a::AgentCard;
use a2aflow::kernel::{CallbackError, ControlPoint};
use a2aflow::model::delegation::{Lineage, MetadataKey};
use a2aflow::model::{
    MessageContent, NegotiationReply, NegotiationRequest, RouteDecision, RouteRequest, TaskRequest,
    TaskResult,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// The tags of a served workflow's skill.
const SERVED_TAGS: [&str; 2] = ["workflow", "a2aflow"];

/// The workflow id a served workflow's card names (its skill tagged `a2aflow` and `workflow`),
/// `None` for any other agent's card.
pub fn served_workflow_id(card: &AgentCard) -> Option<&str> {
    card.skills
        .iter()
        .find(|s| {
            SERVED_TAGS
                .iter()
                .all(|t| s.tags.iter().any(|tag| tag == t))
        })
        .map(|s| s.id.as_str())
}

/// A host's [`ControlPoint`] whose remote tasks to workflows served by a2aflow carry the
/// delegation request metadata; every decision stays the host's (the metadata is added to the
/// content its `on_task` returns, keys the host set itself are kept).
pub struct DelegatingControlPoint {
    inner: Arc<dyn ControlPoint>,
    /// Agent name → the workflow id its card serves.
    served: Arc<HashMap<String, String>>,
    /// Where the run that calls sits: `None` for a run that is its own root.
    position: Option<Lineage>,
}

impl std::fmt::Debug for DelegatingControlPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelegatingControlPoint")
            .field("served", &self.served)
            .field("position", &self.position)
            .finish_non_exhaustive()
    }
}

impl DelegatingControlPoint {
    /// `inner` for runs that are their own roots, calling the agents of `cards` (each card's
    /// `name` the agent name the workflows use).
    pub fn new<'a>(
        inner: Arc<dyn ControlPoint>,
        cards: impl IntoIterator<Item = &'a AgentCard>,
    ) -> Self {
        let served = cards
            .into_iter()
            .filter_map(|c| served_workflow_id(c).map(|id| (c.name.clone(), id.to_owned())))
            .collect();
        DelegatingControlPoint {
            inner,
            served: Arc::new(served),
            position: None,
        }
    }

    /// The same host for a run that sits at `lineage` in its tree (a served run a parent
    /// delegated); `None`: the run is its own root.
    pub(crate) fn at(&self, lineage: Option<Lineage>) -> Self {
        DelegatingControlPoint {
            inner: self.inner.clone(),
            served: self.served.clone(),
            position: lineage,
        }
    }

    /// The request metadata for a call of `flow_id` by execution `caller`.
    fn request_metadata(&self, caller: &str, flow_id: &str) -> [(MetadataKey, Value); 5] {
        let (root, depth) = match &self.position {
            // The caller is the root: the request's root is null, the child at depth 1.
            None => (Value::Null, 1),
            Some(l) => (
                Value::from(
                    l.root_execution_id
                        .as_deref()
                        .unwrap_or(&l.parent_execution_id),
                ),
                l.depth.saturating_add(1),
            ),
        };
        [
            (MetadataKey::Kind, Value::from("delegation_request")),
            (MetadataKey::ParentExecutionId, Value::from(caller)),
            (MetadataKey::RootExecutionId, root),
            (MetadataKey::FlowId, Value::from(flow_id)),
            (MetadataKey::Depth, Value::from(depth)),
        ]
    }
}

#[async_trait::async_trait]
impl ControlPoint for DelegatingControlPoint {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        self.on_task_ref(&request).await
    }

    /// The inner host is lent the request too: a host that implements only `on_task_ref` is
    /// asked through it (its `on_task` would answer `workflow.callback_missing`).
    async fn on_task_ref(&self, request: &TaskRequest) -> Result<MessageContent, CallbackError> {
        let flow_id = self.served.get(request.agent.as_str()).cloned();
        let caller = &request.execution_id;
        let mut content = self.inner.on_task_ref(request).await?;
        if let Some(flow_id) = flow_id {
            let metadata = content.metadata.get_or_insert_with(Default::default);
            for (key, value) in self.request_metadata(caller, &flow_id) {
                metadata.entry(key.as_str().to_owned()).or_insert(value);
            }
        }
        Ok(content)
    }

    async fn on_self_task(&self, request: TaskRequest) -> Result<TaskResult, CallbackError> {
        self.inner.on_self_task(request).await
    }

    async fn on_route(&self, request: RouteRequest) -> Result<RouteDecision, CallbackError> {
        self.inner.on_route(request).await
    }

    async fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> Result<NegotiationReply, CallbackError> {
        self.inner.on_negotiation(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::card;
    use a2aflow::model::{LoadOptions, load_workflow_str};

    struct Plain;

    #[async_trait::async_trait]
    impl ControlPoint for Plain {
        async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
            Ok(MessageContent::text(request.description))
        }
    }

    /// A host that implements only the lent form of `on_task`.
    struct LentOnly;

    #[async_trait::async_trait]
    impl ControlPoint for LentOnly {
        async fn on_task_ref(&self, r: &TaskRequest) -> Result<MessageContent, CallbackError> {
            Ok(MessageContent::text(format!("lent: {}", r.description)))
        }
    }

    fn served_card(name: &str) -> Option<AgentCard> {
        let text = format!(
            r#"{{"id": "{name}-id", "name": "{name}", "steps": [{{"name": "s", "type": "SELF_LOOP",
               "subtasks": [{{"description": "d"}}]}}]}}"#
        );
        let workflow = load_workflow_str(&text, LoadOptions::default())
            .ok()?
            .workflow;
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 1));
        Some(card(&workflow, "http://127.0.0.1:1/agents/x", &addr))
    }

    fn request(agent: &str) -> Option<TaskRequest> {
        Some(TaskRequest {
            execution_id: "exec-1".into(),
            workflow_id: "w".into(),
            step_name: "s".into(),
            step_type: a2aflow::model::StepType::AllSuccess,
            subtask_index: 0,
            local_task_id: "s.0".into(),
            agent: agent.into(),
            skill: Default::default(),
            description: "do it".into(),
            input: a2aflow::model::TaskInput::default(),
            workflow_input: a2aflow::model::WorkflowInput::default(),
            remaining_ms: 1000,
        })
    }

    #[tokio::test]
    async fn a_served_workflow_gets_the_lineage_and_another_agent_nothing() {
        let Some(child) = served_card("child") else {
            panic!("the test card");
        };
        assert_eq!(served_workflow_id(&child), Some("child-id"));
        let host = DelegatingControlPoint::new(Arc::new(Plain), [&child]);
        let Some(to_child) = request("child") else {
            panic!("the test request");
        };
        let content = host.on_task(to_child.clone()).await.ok();
        let metadata = content.and_then(|c| c.metadata).unwrap_or_default();
        assert_eq!(metadata["a2aflow/kind"], "delegation_request");
        assert_eq!(metadata["a2aflow/parentExecutionId"], "exec-1");
        assert_eq!(metadata["a2aflow/rootExecutionId"], Value::Null);
        assert_eq!(metadata["a2aflow/flowId"], "child-id");
        assert_eq!(metadata["a2aflow/depth"], 1);

        let below = host.at(Some(Lineage {
            parent_execution_id: "p".into(),
            root_execution_id: Some("r".into()),
            depth: 2,
        }));
        let content = below.on_task(to_child).await.ok();
        let metadata = content.and_then(|c| c.metadata).unwrap_or_default();
        assert_eq!(metadata["a2aflow/rootExecutionId"], "r");
        assert_eq!(metadata["a2aflow/depth"], 3);

        let Some(other) = request("plain-agent") else {
            panic!("the test request");
        };
        let content = host.on_task(other).await.ok();
        assert_eq!(content.map(|c| c.metadata), Some(None));
    }

    #[tokio::test]
    async fn a_host_that_is_lent_its_requests_is_asked_through_the_wrapper() {
        let Some(child) = served_card("child") else {
            panic!("the test card");
        };
        let host = DelegatingControlPoint::new(Arc::new(LentOnly), [&child]);
        let Some(to_child) = request("child") else {
            panic!("the test request");
        };
        // Lent (the form the kernel calls) and given: both reach the host's lent form.
        for content in [
            host.on_task_ref(&to_child).await,
            host.on_task(to_child.clone()).await,
        ] {
            let content = content.unwrap_or_else(|e| panic!("the host's answer: {e}"));
            assert_eq!(content.parts, MessageContent::text("lent: do it").parts);
            let metadata = content.metadata.unwrap_or_default();
            assert_eq!(metadata["a2aflow/flowId"], "child-id");
        }
    }
}
