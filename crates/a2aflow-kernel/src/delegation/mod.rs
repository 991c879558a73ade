//! Delegation: a subtask that names a child `workflow` runs that workflow in the same engine,
//! and the parent sees it through the A2A-shaped records of [`a2aflow_model::delegation`]. This
//! module holds which calls are allowed and what a child inherits; the call itself is a kind of
//! subtask (`crate::task`'s `delegated`).
//!
//! - [`WorkflowCatalog`] (host-supplied, [`StaticCatalog`] for a fixed set) resolves ids;
//! - [`DelegationPolicy`] is checked before anything runs, in this order: not found, not
//!   callable, depth cap, cycle, fan-out cap, budget (`Scope::admit`);
//! - the child runs with the parent's `ControlPoint` and client, one level deeper, its own
//!   execution id, the parent's remaining deadline and a child of the parent task's
//!   cancellation token; its events go into the parent's stream (the runner starts it).

mod catalog;
mod policy;
mod scope;

pub use catalog::{StaticCatalog, WorkflowCatalog};
pub use policy::{
    Budget, CostMeter, DEFAULT_MAX_DEPTH, DEFAULT_MAX_FAN_OUT, DelegationFirewall, DelegationPolicy,
};
pub(crate) use scope::{Inherited, Root, Scope};
