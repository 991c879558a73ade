//! Where child workflows come from: the host's catalog.

use a2aflow_model::Workflow;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Arc;

/// Resolves the workflow ids subtasks name with `workflow`.
///
/// Called once per delegating subtask, before the policy runs; bounded by the run's deadline and
/// the task's cancellation. `None` means no such workflow: the call is refused with
/// `flow_not_found`.
#[async_trait]
pub trait WorkflowCatalog: Send + Sync {
    /// The workflow with id `workflow_id`, or `None` when the catalog has none.
    async fn resolve(&self, workflow_id: &str) -> Option<Arc<Workflow>>;
}

/// A fixed, in-memory catalog keyed by each workflow's `id`.
#[derive(Debug, Clone, Default)]
pub struct StaticCatalog {
    workflows: HashMap<String, Arc<Workflow>>,
}

impl StaticCatalog {
    /// An empty catalog.
    pub fn new() -> Self {
        Self::default()
    }

    /// The catalog with `workflow` added under its id (replacing one with the same id).
    pub fn with(mut self, workflow: impl Into<Arc<Workflow>>) -> Self {
        let workflow = workflow.into();
        self.workflows.insert(workflow.id.clone(), workflow);
        self
    }

    /// How many workflows the catalog holds.
    pub fn len(&self) -> usize {
        self.workflows.len()
    }

    /// True when the catalog holds none.
    pub fn is_empty(&self) -> bool {
        self.workflows.is_empty()
    }
}

#[async_trait]
impl WorkflowCatalog for StaticCatalog {
    async fn resolve(&self, workflow_id: &str) -> Option<Arc<Workflow>> {
        self.workflows.get(workflow_id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn resolves_by_id_and_misses_unknown_ids() {
        let catalog = StaticCatalog::new().with(Workflow {
            id: "child".into(),
            name: "Child".into(),
            ..Default::default()
        });
        assert_eq!(catalog.len(), 1);
        let found = catalog.resolve("child").await;
        assert_eq!(found.map(|w| w.name.clone()).as_deref(), Some("Child"));
        assert!(catalog.resolve("Child").await.is_none());
    }
}
