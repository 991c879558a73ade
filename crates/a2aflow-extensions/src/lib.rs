//! # a2aflow-extensions — independent A2A-T operations
//!
//! **What it is.** The two A2A-T operations a host runs at its own times, outside any workflow:
//! Authorization-T (one shot, waits to a final result) and Notification-T (long-lived
//! subscriptions with acknowledgement, completion and liveness).
//!
//! **What it owns.** Their lifecycles, on connection pools of their own, so they can neither starve
//! nor close workflow traffic.
//!
//! **What it must never depend on.** The facade or the CLI; it never gates a running workflow.
