//! Inbound delegation: a SendMessage carrying the delegation request metadata (`a2aflow/kind` =
//! `delegation_request`, the parent and root execution ids, the depth) is admitted by the
//! server's [`DelegationPolicy`] before anything starts; a refusal is the `TASK_STATE_REJECTED`
//! record with its `a2aflow/refusalReason`, and no run exists for it.
//!
//! What the serving side can check: the depth against `max_depth`; a cycle, when the served
//! workflow already sits in the call's ancestry as this server knows it (the parent and its
//! ancestors among the caller's own served runs, up to the root); the fan-out, counting the
//! served runs the parent already started here; the budget, summing the meter over the tree's
//! executions this server knows (the root and the caller's served runs in the tree).

use crate::wire_error::A2aError;
use a2a::Message;
use a2aflow::kernel::DelegationPolicy;
use a2aflow::model::delegation::{Lineage, MetadataKey, Refusal, RefusalReason};
use serde_json::Value;

/// The value of `a2aflow/kind` on a delegation request.
const REQUEST_KIND: &str = "delegation_request";

/// The lineage an inbound message claims, `None` for a message that is not a delegation
/// request (no delegation key at all).
///
/// # Errors
/// A field violation for a request whose keys are malformed: a kind other than
/// `delegation_request`, a missing or empty parent id, a root id that is not a string or null,
/// a depth that is not an integer of at least 1.
pub(crate) fn lineage(message: &Message) -> Result<Option<Lineage>, A2aError> {
    let Some(metadata) = &message.metadata else {
        return Ok(None);
    };
    let get = |key: MetadataKey| metadata.get(key.as_str());
    let keys = [
        MetadataKey::Kind,
        MetadataKey::ParentExecutionId,
        MetadataKey::RootExecutionId,
        MetadataKey::Depth,
    ];
    if keys.iter().all(|k| get(*k).is_none()) {
        return Ok(None);
    }
    let mut violations = Vec::new();
    let mut bad = |key: MetadataKey, problem: &str| {
        violations.push((
            format!("message.metadata.{}", key.as_str()),
            problem.to_owned(),
        ));
    };
    if get(MetadataKey::Kind).and_then(Value::as_str) != Some(REQUEST_KIND) {
        bad(
            MetadataKey::Kind,
            "A delegation request's kind is \"delegation_request\".",
        );
    }
    let parent = get(MetadataKey::ParentExecutionId)
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty());
    if parent.is_none() {
        bad(
            MetadataKey::ParentExecutionId,
            "The execution that made the call is required (a non-empty string).",
        );
    }
    let root = match get(MetadataKey::RootExecutionId) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(r)) if !r.is_empty() => Ok(Some(r.clone())),
        Some(_) => Err(()),
    };
    if root.is_err() {
        bad(
            MetadataKey::RootExecutionId,
            "The root execution is a non-empty string, or null when the caller is the root.",
        );
    }
    let depth = get(MetadataKey::Depth)
        .and_then(whole_number)
        .filter(|d| *d >= 1);
    if depth.is_none() {
        bad(
            MetadataKey::Depth,
            "The child's depth is an integer of at least 1 (1: a direct child of the root).",
        );
    }
    match (parent, root, depth) {
        (Some(parent), Ok(root), Some(depth)) if violations.is_empty() => Ok(Some(Lineage {
            parent_execution_id: parent.to_owned(),
            root_execution_id: root,
            depth,
        })),
        _ => Err(A2aError::fields(violations)),
    }
}

/// A JSON number that is a whole number fitting `u32`: `3`, or `3.0` as clients whose metadata
/// is a protobuf `Struct` (every number a double) send it.
fn whole_number(value: &Value) -> Option<u32> {
    if let Some(n) = value.as_u64() {
        return u32::try_from(n).ok();
    }
    let f = value.as_f64()?;
    let whole = f.fract() == 0.0 && f >= 0.0 && f <= f64::from(u32::MAX);
    // A whole number within range: the cast is exact.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    whole.then_some(f as u32)
}

/// What the server knows of a call's tree, for the policy's checks.
pub(crate) struct Known {
    /// The workflow ids of the call's ancestors among the caller's served runs.
    pub(crate) ancestry: Vec<String>,
    /// How many served runs the parent already started here.
    pub(crate) started_by_parent: usize,
    /// The execution ids of the tree this server knows (the root and the caller's served
    /// runs in it), for the budget.
    pub(crate) tree: Vec<String>,
}

/// Admits a call of `target_id` at `lineage` by `policy`, in the policy's order (depth, cycle,
/// fan-out, budget).
pub(crate) fn admit(
    policy: &DelegationPolicy,
    target_id: &str,
    lineage: &Lineage,
    known: &Known,
) -> Result<(), Refusal> {
    if lineage.depth > policy.max_depth {
        return Err(Refusal::new(
            RefusalReason::DepthExceeded,
            format!(
                "the child would sit at depth {}, deeper than the cap {}",
                lineage.depth, policy.max_depth
            ),
        ));
    }
    if known.ancestry.iter().any(|a| a == target_id) {
        return Err(Refusal::new(
            RefusalReason::CycleDetected,
            format!(
                "workflow `{target_id}` is already in this call's ancestry ({})",
                known.ancestry.join(" -> ")
            ),
        ));
    }
    if known.started_by_parent >= policy.max_fan_out {
        return Err(Refusal::new(
            RefusalReason::FanoutExceeded,
            format!(
                "execution `{}` has already started {} children here; the cap is {}",
                lineage.parent_execution_id, known.started_by_parent, policy.max_fan_out
            ),
        ));
    }
    if let Some(budget) = &policy.budget {
        let spent: f64 = known
            .tree
            .iter()
            .filter_map(|id| budget.meter.cost(id))
            .sum();
        if spent >= budget.limit {
            return Err(Refusal::new(
                RefusalReason::BudgetExceeded,
                format!(
                    "the tree has spent {spent}, which reaches its budget of {}",
                    budget.limit
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a::{Part, Role};
    use serde_json::json;

    fn message(metadata: Value) -> Message {
        let mut m = Message::new(Role::User, vec![Part::text("go")]);
        m.metadata = serde_json::from_value(metadata).ok();
        m
    }

    #[test]
    fn a_request_names_its_lineage_and_a_malformed_one_is_refused() {
        let ok = lineage(&message(json!({
            "a2aflow/kind": "delegation_request",
            "a2aflow/parentExecutionId": "p",
            "a2aflow/rootExecutionId": null,
            "a2aflow/depth": 1,
        })));
        assert_eq!(
            ok.ok().flatten().map(|l| (l.parent_execution_id, l.depth)),
            Some(("p".to_owned(), 1))
        );
        let bad = lineage(&message(json!({ "a2aflow/depth": 0 }))).err();
        assert_eq!(bad.map(|e| e.message), Some("Validation failed".to_owned()));
        assert!(matches!(lineage(&message(json!({"other": 1}))), Ok(None)));
        let double = lineage(&message(json!({
            "a2aflow/kind": "delegation_request",
            "a2aflow/parentExecutionId": "p",
            "a2aflow/depth": 2.0,
        })));
        assert_eq!(double.ok().flatten().map(|l| l.depth), Some(2));
        assert!(lineage(&message(json!({"a2aflow/depth": 1.5}))).is_err());
    }
}
