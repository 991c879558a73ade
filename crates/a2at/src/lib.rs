//! # a2at — the A2A-T core
//!
//! **What it is.** The telecom extensions to A2A 1.0 as data: extension URIs (Task-T,
//! Negotiation-T, Authorization-T, Notification-T), `MetadataContent`, the `NegotiationContext`
//! and its validation rules, and the computation of which extension URIs a message activates.
//!
//! **What it owns.** Everything an engine needs to read and write A2A-T metadata, and nothing about
//! engines: no scheduling, no transport, no callbacks.
//!
//! **What it must never depend on.** Any a2aflow crate, any runtime or network crate. Only the
//! protocol and extension layers (and crates above them) may depend on it; the scheduling kernel
//! never does, directly or transitively (`deny.toml` wrappers and `cargo xtask check-layers`).
//!
//! ## Map of the crate
//!
//! | module | holds |
//! |---|---|
//! | `uri` | extension URIs, metadata keys, [`Extension`], NL-alias normalisation |
//! | `context` | [`Performative`], [`NegotiationContext`] and its wire parser, [`ContextError`] |
//! | `metadata` | [`MetadataContent`] build and read |
//! | `exchange` | context lookup in a response, Propose / progression / reply rules, [`ExchangeError`] |
//! | `rules` | the receiver-side rule gate ([`check_rules`]: UUID id, round budget) |
//! | `template` | [`TemplateUri`] parsing and Negotiation-T template addressing |
//! | `activation` | what a message activates; `message.extensions` and the `A2A-Extensions` header |
//!
//! Everything works on `serde_json::Map<String, Value>` metadata, so callers holding any A2A
//! binding's types can use it. Error `Display` texts are the reference SDKs' reason strings.
//!
//! ```
//! use a2at::{find_negotiation_context, reply_context, MetadataContent, Performative};
//! use serde_json::json;
//!
//! let status_metadata = json!({
//!     "negotiationContext": {"id": "3f2b8c1e-9a4d-4e6b-8f1a-2c3d4e5f6a7b",
//!                            "round": 1.0, "maxRounds": 5.0, "performative": "PROPOSE"}
//! });
//! let received = find_negotiation_context(status_metadata.as_object(), None, [])?;
//! let reply = reply_context(&received, Performative::Accept)?;
//! let mut content = MetadataContent::new(a2at::NEGOTIATION_T_EXTENSION_URI);
//! content.negotiation_context = Some(reply);
//! let metadata = content.to_metadata();
//! assert_eq!(metadata["negotiationContext"]["round"], json!(1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod activation;
mod context;
mod exchange;
mod metadata;
mod rules;
mod template;
mod uri;

pub use activation::{
    ActivationError, ContentExtensions, DeclaredExtension, ExtensionPlan, activate, declares,
    metadata_carries, plan_extensions, require_use,
};
pub use context::{ContextError, DEFAULT_MAX_ROUNDS, NegotiationContext, Performative, ShapeRule};
pub use exchange::{
    ExchangeError, check_incoming_propose, check_progression, check_reply, check_reply_context,
    find_negotiation_context, reply_context,
};
pub use metadata::{MetadataContent, MetadataError};
pub use rules::{
    INVALID_CONTEXT_ID_CODE, ROUND_EXCEEDED_CODE, RULE_VIOLATION_CODE, RuleViolation, check_rules,
    is_uuid,
};
pub use template::{NegotiationReference, NegotiationType, TemplateUri, negotiation_reference};
pub use uri::{
    A2A_EXTENSIONS_HEADER, AUTHORIZATION_T_EXTENSION_URI, EXTENSION_BASE, Extension,
    NEGOTIATION_CONTEXT_KEY, NEGOTIATION_T_EXTENSION_URI, NEGOTIATION_T_EXTENSION_URI_NL,
    NOTIFICATION_T_EXTENSION_URI, TASK_T_EXTENSION_URI, TEMPLATE_URI_KEY, extension_name_from_uri,
    normalize_extension_uri,
};

/// The README (the crate's page on crates.io), whose example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
