//! Where one run sits in its delegation tree, and the admission of a child (the policy's
//! checks in their documented order, with the state they need).

use super::catalog::WorkflowCatalog;
use super::policy::{Call, DelegationPolicy};
use crate::ids::fresh_execution_id;
use a2aflow_model::delegation::{Lineage, Refusal};
use a2aflow_model::{SharedStr, Workflow};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::Semaphore;

/// Every execution id of a tree (root first), for the budget check.
type Tree = Arc<Mutex<Vec<String>>>;

/// What a child run takes from its parent.
pub(crate) struct Inherited {
    catalog: Option<Arc<dyn WorkflowCatalog>>,
    policy: DelegationPolicy,
    depth: u32,
    ancestry: Vec<String>,
    root_execution_id: SharedStr,
    tree: Tree,
    semaphore: Option<Arc<Semaphore>>,
}

/// What a root run's scope is made of: the host's delegation settings (from its run options)
/// and the run's identity.
pub(crate) struct Root<'a> {
    pub(crate) catalog: Option<Arc<dyn WorkflowCatalog>>,
    pub(crate) policy: DelegationPolicy,
    pub(crate) max_concurrent_remote_tasks: Option<usize>,
    pub(crate) workflow_id: &'a str,
    pub(crate) execution_id: &'a str,
}

/// One run's place in its delegation tree.
pub(crate) struct Scope {
    catalog: Option<Arc<dyn WorkflowCatalog>>,
    policy: DelegationPolicy,
    /// 0 for a root run.
    depth: u32,
    /// Workflow ids from the root down to this run, inclusive.
    ancestry: Vec<String>,
    /// `None` when this run is the root.
    root_execution_id: Option<SharedStr>,
    /// Children this execution has started (the fan-out count).
    started: AtomicUsize,
    tree: Tree,
    /// The remote-dispatch limiter, shared by the whole tree.
    semaphore: Option<Arc<Semaphore>>,
}

impl Scope {
    /// The scope of a root run: a fresh tree from the host's settings.
    pub(crate) fn root(root: Root<'_>) -> Self {
        Scope {
            catalog: root.catalog,
            policy: root.policy,
            depth: 0,
            ancestry: vec![root.workflow_id.to_owned()],
            root_execution_id: None,
            started: AtomicUsize::new(0),
            tree: Arc::new(Mutex::new(vec![root.execution_id.to_owned()])),
            semaphore: root
                .max_concurrent_remote_tasks
                .map(|n| Arc::new(Semaphore::new(n.max(1)))),
        }
    }

    /// The scope of a child run: what its parent handed down.
    pub(crate) fn child(parent: Inherited) -> Self {
        Scope {
            catalog: parent.catalog,
            policy: parent.policy,
            depth: parent.depth,
            ancestry: parent.ancestry,
            root_execution_id: Some(parent.root_execution_id),
            started: AtomicUsize::new(0),
            tree: parent.tree,
            semaphore: parent.semaphore,
        }
    }

    /// The run's delegation depth (0 for the root).
    pub(crate) fn depth(&self) -> u32 {
        self.depth
    }

    /// The remote-dispatch limiter (one for the whole tree).
    pub(crate) fn semaphore(&self) -> Option<Arc<Semaphore>> {
        self.semaphore.clone()
    }

    /// The catalog, when the host supplied one.
    pub(crate) fn catalog(&self) -> Option<&Arc<dyn WorkflowCatalog>> {
        self.catalog.as_ref()
    }

    /// The policy of the tree.
    pub(crate) fn policy(&self) -> &DelegationPolicy {
        &self.policy
    }

    /// The lineage of a child this run (execution `execution_id`) would start.
    pub(crate) fn child_lineage(&self, execution_id: &str) -> Lineage {
        Lineage::child_of(
            execution_id,
            self.root_execution_id.as_deref().map(str::to_owned),
            self.depth,
        )
    }

    /// Admits a call of this run (execution `caller_execution`, workflow `caller_workflow`) to
    /// `target_id`, checking in order: tool not allowed, not found, not callable, firewall,
    /// depth, cycle, fan-out, budget.
    /// On acceptance the fan-out slot is taken, the child's fresh execution id joins the tree,
    /// and what the child inherits is returned with that id.
    pub(crate) fn admit(
        &self,
        caller_execution: &str,
        caller_workflow: &str,
        target_id: &str,
        target: Option<&Workflow>,
    ) -> Result<(String, Inherited), Refusal> {
        self.policy.check_call(&Call {
            caller: caller_workflow,
            target_id,
            target,
            child_depth: self.depth.saturating_add(1),
            ancestry: &self.ancestry,
        })?;
        self.take_fan_out_slot(caller_execution)?;
        let child_execution = fresh_execution_id();
        self.join_tree(&child_execution)?;
        Ok((child_execution, self.inherited(caller_execution, target_id)))
    }

    /// Takes one of the caller's fan-out slots, or refuses when none is left.
    fn take_fan_out_slot(&self, caller_execution: &str) -> Result<(), Refusal> {
        let mut started = self.started.load(Ordering::Acquire);
        loop {
            self.policy.check_fan_out(caller_execution, started)?;
            match self.started.compare_exchange(
                started,
                started + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(()),
                Err(now) => started = now,
            }
        }
    }

    /// Adds a child's execution id to the tree once the budget allows it; a refusal gives the
    /// fan-out slot back (the call started nothing).
    fn join_tree(&self, child_execution: &str) -> Result<(), Refusal> {
        let mut tree = self.tree.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(refusal) = self.policy.check_budget(tree.iter().map(String::as_str)) {
            self.started.fetch_sub(1, Ordering::AcqRel);
            return Err(refusal);
        }
        tree.push(child_execution.to_owned());
        Ok(())
    }

    /// What a child of this run (execution `caller_execution`) running `target_id` inherits.
    fn inherited(&self, caller_execution: &str, target_id: &str) -> Inherited {
        let mut ancestry = Vec::with_capacity(self.ancestry.len() + 1);
        ancestry.extend(self.ancestry.iter().cloned());
        ancestry.push(target_id.to_owned());
        Inherited {
            catalog: self.catalog.clone(),
            policy: self.policy.clone(),
            depth: self.depth.saturating_add(1),
            ancestry,
            root_execution_id: self
                .root_execution_id
                .clone()
                .unwrap_or_else(|| SharedStr::from(caller_execution)),
            tree: self.tree.clone(),
            semaphore: self.semaphore.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow_model::delegation::RefusalReason;

    fn root(policy: DelegationPolicy, workflow_id: &str, execution_id: &str) -> Scope {
        Scope::root(Root {
            catalog: None,
            policy,
            max_concurrent_remote_tasks: None,
            workflow_id,
            execution_id,
        })
    }

    fn target(id: &str) -> Workflow {
        Workflow {
            id: id.into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_child_inherits_one_level_deeper_with_the_root_id() {
        let root = root(DelegationPolicy::default(), "root-wf", "root-exec");
        assert_eq!(root.depth(), 0);
        let (child_id, inherited) = root
            .admit(
                "root-exec",
                "root-wf",
                "child-wf",
                Some(&target("child-wf")),
            )
            .unwrap();
        let child = Scope::child(inherited);
        assert_eq!(child.depth(), 1);
        assert_eq!(child.ancestry, ["root-wf", "child-wf"]);
        let lineage = child.child_lineage(&child_id);
        assert_eq!(lineage.depth, 2);
        assert_eq!(lineage.root_execution_id.as_deref(), Some("root-exec"));
        assert_eq!(lineage.parent_execution_id, child_id);
        let tree = root.tree.lock().unwrap().clone();
        assert_eq!(tree, vec!["root-exec".to_owned(), child_id]);
        // The grandchild may not call back into its ancestry.
        let refused = child
            .admit("c", "child-wf", "root-wf", Some(&target("root-wf")))
            .err()
            .map(|r| r.reason());
        assert_eq!(refused, Some(RefusalReason::CycleDetected));
    }

    #[test]
    fn fan_out_counts_only_admitted_children() {
        let policy = DelegationPolicy {
            max_fan_out: 1,
            ..Default::default()
        };
        let root = root(policy, "r", "e");
        let missing = root.admit("e", "r", "x", None).err().map(|r| r.reason());
        assert_eq!(missing, Some(RefusalReason::FlowNotFound));
        assert!(root.admit("e", "r", "x", Some(&target("x"))).is_ok());
        let second = root
            .admit("e", "r", "y", Some(&target("y")))
            .err()
            .map(|r| r.reason());
        assert_eq!(second, Some(RefusalReason::FanoutExceeded));
    }
}
