//! # a2aflow-services — clients for services that are not A2A agents
//!
//! **What it is.** Library clients a host (or the CLI) uses around a run: the agent registry
//! ([`registry::RegistryClient`]: AgentCards by name and organisation) and the orchestration
//! centre ([`registry::OrchestratorClient`]: workflows by id, workflow search), with the bearer
//! token they take ([`registry::BearerToken`], [`registry::service_client`]).
//!
//! **What it owns.** The URL layouts and JSON shapes of those services and the typed errors their
//! answers map to. Every request goes through `a2aflow-protocol`'s [`HttpClient`] (its TLS,
//! limits, wire log and headers hook).
//!
//! **What it must never depend on.** The scheduling kernel (`a2aflow-kernel`), the engine client
//! (`a2aflow-engine`) and `a2at`: finding agents and workflows has nothing to do with scheduling
//! them. Higher layers: `a2aflow-extensions`, the `a2aflow` facade, the CLI.
//!
//! [`HttpClient`]: a2aflow_protocol::HttpClient

pub mod registry;

/// The README (the crate's page on crates.io), whose example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
