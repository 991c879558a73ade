//! # a2aflow-extensions — independent A2A-T operations
//!
//! **What it is.** The two A2A-T operations a host runs at its own times, outside any workflow:
//! Authorization-T (one shot, waits to a final result) and Notification-T (long-lived
//! subscriptions with acknowledgement, completion and liveness).
//!
//! **What it owns.** Their lifecycles, on connection pools of their own, so they can neither starve
//! nor close workflow traffic.
//!
//! **What it must never depend on.** The scheduling kernel and the engine client (it stands on the
//! wire crate, `a2aflow-protocol`, and `a2at`; only its tests drive the kernel), the facade or the
//! CLI; it never gates a running workflow.
//!
//! ## Map
//! - [`ExtensionSender`] — built from agent cards and the wire crate's door
//!   ([`a2aflow_protocol::ChannelFactory`]: limits, TLS, credentials, binding preference), with a
//!   channel (a connection pool) of its own per agent.
//! - [`ExtensionSender::send_authorization`] → [`AuthorizationOutcome`].
//! - [`ExtensionSender::open_notification`] → [`NotificationSubscription`] (drop = close).
//! - [`ExtensionConfig`], [`ResubscribePolicy`] — deadlines and the resubscribe policy.

mod authorization;
mod config;
mod notification;
mod sender;

pub use authorization::{AuthorizationOutcome, AuthorizationStatus};
pub use config::{ExtensionConfig, ResubscribePolicy};
pub use notification::{Ended, NotificationSubscription, SubscriptionControl};
pub use sender::ExtensionSender;

/// The README (the crate's page on crates.io), whose example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
