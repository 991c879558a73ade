//! # a2aflow — the facade
//!
//! **What it is.** The one dependency a host adds: re-exports of the layers behind features
//! (`protocol`, `extensions`, `testkit`) and the one-call `execute_workflow` entry point.
//!
//! **What it owns.** Assembly only: building transports and the engine client from agent cards and
//! a configuration, running, and closing only what it created.
//!
//! **What it must never depend on.** The CLI. It adds no behaviour of its own that a layer should own.

#[cfg(feature = "extensions")]
pub use a2aflow_extensions as extensions;
pub use a2aflow_kernel as kernel;
pub use a2aflow_model as model;
#[cfg(feature = "protocol")]
pub use a2aflow_protocol as protocol;
#[cfg(feature = "testkit")]
pub use a2aflow_testkit as testkit;
#[cfg(feature = "protocol")]
pub use a2at;
