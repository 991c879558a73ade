//! # a2aflow-kernel — the scheduling kernel and runner
//!
//! **What it is.** The transport-free heart of a2aflow: the [`ControlPoint`]-style host callback
//! contract, the DAG executor with an online ready queue and dead-path elimination, routing,
//! the context builder, deadlines, cancellation, lifecycle events and the runner.
//!
//! **What it owns.** When each step runs, which edges activate, what each callback receives, and
//! how a run ends. It reaches remote agents only through the client trait it defines.
//!
//! **What it must never depend on.** The A2A-T crate `a2at`, and any network or TLS crate (hyper,
//! h2, rustls, …) — not even transitively, not even as a dev-dependency: kernel tests use an
//! in-memory client. `cargo xtask check-layers` and the `wrappers` rule in `deny.toml` enforce it.
