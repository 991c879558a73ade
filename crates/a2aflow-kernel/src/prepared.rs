//! [`PreparedWorkflow`]: a workflow validated and resolved into the scheduler's index form once,
//! so a host that runs the same definition many times pays for validation and planning once.

use crate::graph::{self, Plan};
use a2aflow_model::{ValidationErrors, Workflow};
use std::sync::Arc;

/// A workflow that passed [`a2aflow_model::validate()`], with its scheduling plan precomputed.
///
/// Build it once with [`PreparedWorkflow::new`] and run it any number of times with
/// [`crate::run_prepared`]; cloning is cheap (two reference counts). [`crate::run`] validates and
/// plans on every call and behaves the same otherwise.
#[derive(Clone)]
pub struct PreparedWorkflow {
    workflow: Arc<Workflow>,
    plan: Arc<Plan>,
}

impl std::fmt::Debug for PreparedWorkflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedWorkflow")
            .field("workflow_id", &self.workflow.id)
            .field("steps", &self.workflow.steps.len())
            .finish_non_exhaustive()
    }
}

impl PreparedWorkflow {
    /// Validates `workflow` and resolves it; every validation problem is returned at once.
    pub fn new(workflow: impl Into<Arc<Workflow>>) -> Result<Self, ValidationErrors> {
        let workflow = workflow.into();
        a2aflow_model::validate(&workflow)?;
        let plan = Arc::new(graph::plan(&workflow));
        Ok(PreparedWorkflow { workflow, plan })
    }

    /// The validated workflow.
    pub fn workflow(&self) -> &Arc<Workflow> {
        &self.workflow
    }

    pub(crate) fn plan(&self) -> &Arc<Plan> {
        &self.plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow_model::{Edge, ErrorCode, Step, Subtask};

    fn step(name: &str, next: &[&str]) -> Step {
        Step {
            name: name.into(),
            subtasks: vec![Subtask {
                agent: "a".into(),
                ..Default::default()
            }],
            next: next
                .iter()
                .map(|t| Edge {
                    step: (*t).into(),
                    condition: "".into(),
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_valid_workflow_is_planned_once_and_an_invalid_one_keeps_every_problem() {
        let ok = PreparedWorkflow::new(Workflow {
            id: "w".into(),
            steps: vec![step("a", &["b"]), step("b", &[])],
            ..Default::default()
        })
        .unwrap();
        assert_eq!(ok.plan().roots, vec![0]);
        assert_eq!(ok.plan().steps[1].in_degree, 1);
        assert_eq!(ok.workflow().id, "w");
        let bad = PreparedWorkflow::new(Workflow {
            steps: vec![step("a", &["ghost"]), step("a", &[])],
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(
            bad.codes(),
            vec![
                ErrorCode::WorkflowUnknownTarget,
                ErrorCode::WorkflowDuplicateStep
            ]
        );
    }
}
