//! The delegation policy: the limits a call must pass before a child workflow starts.

use a2aflow_model::Workflow;
use a2aflow_model::delegation::{Refusal, RefusalReason};
use std::sync::Arc;

/// Default cap on delegation depth: a root run's children sit at depth 1, so four levels of
/// children below the root are allowed.
pub const DEFAULT_MAX_DEPTH: u32 = 4;

/// Default cap on the children one execution may start over its life.
pub const DEFAULT_MAX_FAN_OUT: usize = 16;

/// Reports what an execution has cost so far (host-measured, in the host's unit, e.g. USD).
///
/// Called synchronously while a delegating subtask is admitted and when its record is built; it
/// must answer at once (read a counter, never wait on I/O).
pub trait CostMeter: Send + Sync {
    /// The cost so far of execution `execution_id`; `None` when nothing is known (counted as 0).
    fn cost(&self, execution_id: &str) -> Option<f64>;
}

/// A spending limit for a whole delegation tree.
#[derive(Clone)]
pub struct Budget {
    /// A new child is refused (`budget_exceeded`) once the tree's executions together have
    /// cost this much or more.
    pub limit: f64,
    /// Where the cost of each execution comes from.
    pub meter: Arc<dyn CostMeter>,
}

impl std::fmt::Debug for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Budget")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

/// The host's tool policy for delegation: whether a workflow may delegate at all, and whether
/// one particular call may go through. Both answer at once (no I/O); both default to allowing.
pub trait DelegationFirewall: Send + Sync + std::fmt::Debug {
    /// Whether workflow `caller` may use delegation at all; `false` refuses every call it makes
    /// with `tool_not_allowed`.
    fn may_delegate(&self, caller: &str) -> bool {
        let _ = caller;
        true
    }

    /// Whether this call from `caller` to `target` may go through; `false` refuses it with
    /// `firewall_denied`.
    fn allows(&self, caller: &str, target: &str) -> bool {
        let _ = (caller, target);
        true
    }
}

/// The limits checked before a child workflow starts. The policy of the root run applies to
/// the whole tree.
///
/// Checks, in this order (the first that fails names the refusal): the caller may delegate at
/// all (`tool_not_allowed`, [`DelegationPolicy::firewall`]), the target exists
/// (`flow_not_found`), the target's `callableBy` lists the caller when present
/// (`flow_not_callable`), the firewall lets this call through (`firewall_denied`), the child's
/// depth is at most [`DelegationPolicy::max_depth`]
/// (`depth_exceeded`), the target is not already in the call's ancestry (`cycle_detected`),
/// the caller has started fewer than [`DelegationPolicy::max_fan_out`] children
/// (`fanout_exceeded`), and the tree's spending is below the budget (`budget_exceeded`).
#[derive(Debug, Clone)]
pub struct DelegationPolicy {
    /// The deepest a child may sit (the root is depth 0). Default [`DEFAULT_MAX_DEPTH`].
    pub max_depth: u32,
    /// How many children one execution may start. Default [`DEFAULT_MAX_FAN_OUT`].
    pub max_fan_out: usize,
    /// An optional spending limit for the tree. Default none.
    pub budget: Option<Budget>,
    /// The host's tool policy (`tool_not_allowed`, `firewall_denied`). Default none: every
    /// workflow may delegate and no call is denied by it.
    pub firewall: Option<Arc<dyn DelegationFirewall>>,
}

impl Default for DelegationPolicy {
    fn default() -> Self {
        DelegationPolicy {
            max_depth: DEFAULT_MAX_DEPTH,
            max_fan_out: DEFAULT_MAX_FAN_OUT,
            budget: None,
            firewall: None,
        }
    }
}

/// One call as the stateless checks see it.
pub(crate) struct Call<'a> {
    /// The calling workflow's id.
    pub(crate) caller: &'a str,
    /// The id the subtask names.
    pub(crate) target_id: &'a str,
    /// What the catalog resolved it to.
    pub(crate) target: Option<&'a Workflow>,
    /// The depth the child would sit at.
    pub(crate) child_depth: u32,
    /// Workflow ids from the root down to the caller, inclusive.
    pub(crate) ancestry: &'a [String],
}

impl DelegationPolicy {
    /// The checks that need no state: tool not allowed, not found, not callable, firewall,
    /// depth, cycle.
    pub(crate) fn check_call(&self, call: &Call<'_>) -> Result<(), Refusal> {
        self.check_parties(call)?;
        self.check_placement(call)
    }

    /// Who calls whom: tool not allowed, not found, not callable, firewall.
    fn check_parties(&self, call: &Call<'_>) -> Result<(), Refusal> {
        let id = call.target_id;
        if let Some(firewall) = &self.firewall
            && !firewall.may_delegate(call.caller)
        {
            return Err(Refusal::new(
                RefusalReason::ToolNotAllowed,
                format!("workflow `{}` is not allowed to delegate", call.caller),
            ));
        }
        let Some(target) = call.target else {
            return Err(Refusal::new(
                RefusalReason::FlowNotFound,
                format!("no workflow `{id}` in the workflow catalog"),
            ));
        };
        if let Some(allowed) = &target.callable_by
            && !allowed.iter().any(|a| a == call.caller)
        {
            return Err(Refusal::new(
                RefusalReason::FlowNotCallable,
                format!(
                    "workflow `{id}` may be called only by [{}]; `{}` is not listed",
                    allowed.join(", "),
                    call.caller
                ),
            ));
        }
        if let Some(firewall) = &self.firewall
            && !firewall.allows(call.caller, id)
        {
            return Err(Refusal::new(
                RefusalReason::FirewallDenied,
                format!(
                    "the delegation firewall denied `{}` calling `{id}`",
                    call.caller
                ),
            ));
        }
        Ok(())
    }

    /// Where the child would sit: depth, cycle.
    fn check_placement(&self, call: &Call<'_>) -> Result<(), Refusal> {
        let id = call.target_id;
        if call.child_depth > self.max_depth {
            return Err(Refusal::new(
                RefusalReason::DepthExceeded,
                format!(
                    "the child would sit at depth {}, deeper than the cap {}",
                    call.child_depth, self.max_depth
                ),
            ));
        }
        if call.ancestry.iter().any(|a| a == id) {
            return Err(Refusal::new(
                RefusalReason::CycleDetected,
                format!(
                    "workflow `{id}` is already in this call's ancestry ({})",
                    call.ancestry.join(" -> ")
                ),
            ));
        }
        Ok(())
    }

    /// The fan-out check for a caller that has already started `started` children.
    pub(crate) fn check_fan_out(
        &self,
        caller_execution: &str,
        started: usize,
    ) -> Result<(), Refusal> {
        if started >= self.max_fan_out {
            return Err(Refusal::new(
                RefusalReason::FanoutExceeded,
                format!(
                    "execution `{caller_execution}` has already started {started} children; \
                     the cap is {}",
                    self.max_fan_out
                ),
            ));
        }
        Ok(())
    }

    /// The budget check over the executions of the tree so far.
    pub(crate) fn check_budget<'a>(
        &self,
        executions: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), Refusal> {
        let Some(budget) = &self.budget else {
            return Ok(());
        };
        let spent: f64 = executions
            .into_iter()
            .filter_map(|e| budget.meter.cost(e))
            .filter(|c| c.is_finite() && *c > 0.0)
            .sum();
        if spent >= budget.limit {
            return Err(Refusal::new(
                RefusalReason::BudgetExceeded,
                format!(
                    "the delegation tree has spent {spent} of its budget {}",
                    budget.limit
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workflow(id: &str, callable_by: Option<&[&str]>) -> Workflow {
        Workflow {
            id: id.into(),
            callable_by: callable_by.map(|c| c.iter().map(|s| (*s).to_owned()).collect()),
            ..Default::default()
        }
    }

    fn reason(r: Result<(), Refusal>) -> Option<RefusalReason> {
        r.err().map(|r| r.reason())
    }

    /// Denies everything it is asked about.
    #[derive(Debug)]
    struct DenyAll {
        may_delegate: bool,
    }
    impl DelegationFirewall for DenyAll {
        fn may_delegate(&self, _caller: &str) -> bool {
            self.may_delegate
        }
        fn allows(&self, _caller: &str, _target: &str) -> bool {
            false
        }
    }

    #[test]
    fn the_firewall_checks_sit_first_and_after_callable_by() {
        let ancestry = ["root".to_owned()];
        let open = workflow("t", None);
        let locked = workflow("t", Some(&["other"]));
        let mut call = Call {
            caller: "root",
            target_id: "t",
            target: None,
            child_depth: 1,
            ancestry: &ancestry,
        };
        let mut policy = DelegationPolicy {
            firewall: Some(Arc::new(DenyAll {
                may_delegate: false,
            })),
            ..Default::default()
        };
        // A caller that may not delegate is refused before the target is even looked at.
        assert_eq!(
            reason(policy.check_call(&call)),
            Some(RefusalReason::ToolNotAllowed)
        );
        policy.firewall = Some(Arc::new(DenyAll { may_delegate: true }));
        assert_eq!(
            reason(policy.check_call(&call)),
            Some(RefusalReason::FlowNotFound)
        );
        call.target = Some(&locked);
        assert_eq!(
            reason(policy.check_call(&call)),
            Some(RefusalReason::FlowNotCallable)
        );
        call.target = Some(&open);
        assert_eq!(
            reason(policy.check_call(&call)),
            Some(RefusalReason::FirewallDenied)
        );
        policy.firewall = None;
        assert_eq!(reason(policy.check_call(&call)), None);
    }

    #[test]
    fn checks_run_in_the_documented_order() {
        let policy = DelegationPolicy {
            max_depth: 2,
            ..Default::default()
        };
        let locked = workflow("a", Some(&["other"]));
        let ancestry = ["root".to_owned(), "a".to_owned()];
        // Every rule fails at once: the earliest in the order names the refusal.
        let mut call = Call {
            caller: "a",
            target_id: "a",
            target: None,
            child_depth: 3,
            ancestry: &ancestry,
        };
        assert_eq!(
            reason(policy.check_call(&call)),
            Some(RefusalReason::FlowNotFound)
        );
        call.target = Some(&locked);
        assert_eq!(
            reason(policy.check_call(&call)),
            Some(RefusalReason::FlowNotCallable)
        );
        let open = workflow("a", None);
        call.target = Some(&open);
        assert_eq!(
            reason(policy.check_call(&call)),
            Some(RefusalReason::DepthExceeded)
        );
        call.child_depth = 2;
        assert_eq!(
            reason(policy.check_call(&call)),
            Some(RefusalReason::CycleDetected)
        );
        call.ancestry = &ancestry[..1];
        assert_eq!(reason(policy.check_call(&call)), None);
    }

    #[test]
    fn callable_by_admits_listed_callers() {
        let policy = DelegationPolicy::default();
        let target = workflow("t", Some(&["p", "q"]));
        let call = Call {
            caller: "q",
            target_id: "t",
            target: Some(&target),
            child_depth: 1,
            ancestry: &["q".to_owned()],
        };
        assert_eq!(reason(policy.check_call(&call)), None);
    }

    #[test]
    fn fan_out_cap_counts_started_children() {
        let policy = DelegationPolicy {
            max_fan_out: 2,
            ..Default::default()
        };
        assert_eq!(reason(policy.check_fan_out("e", 1)), None);
        assert_eq!(
            reason(policy.check_fan_out("e", 2)),
            Some(RefusalReason::FanoutExceeded)
        );
    }

    struct Fixed;
    impl CostMeter for Fixed {
        fn cost(&self, execution_id: &str) -> Option<f64> {
            match execution_id {
                "root" => Some(0.5),
                "child" => Some(0.25),
                "bad" => Some(f64::NAN),
                _ => None,
            }
        }
    }

    #[test]
    fn budget_sums_the_tree() {
        let policy = DelegationPolicy {
            budget: Some(Budget {
                limit: 0.75,
                meter: Arc::new(Fixed),
            }),
            ..Default::default()
        };
        assert_eq!(
            reason(policy.check_budget(["root", "bad", "unknown"])),
            None
        );
        assert_eq!(
            reason(policy.check_budget(["root", "child"])),
            Some(RefusalReason::BudgetExceeded)
        );
        assert_eq!(
            reason(DelegationPolicy::default().check_budget(["root"])),
            None
        );
    }
}
