//! # a2aflow-server — workflows served as A2A 1.0 agents
//!
//! **What it is.** A hyper 1 server a host embeds ([`Server::builder`]): each published
//! workflow is an A2A agent under `/agents/{workflow name}/` — its AgentCard at
//! `.well-known/agent-card.json` (one skill, the workflow; JSON-RPC, HTTP+JSON and gRPC;
//! streaming), JSON-RPC at `jsonrpc`, HTTP+JSON under `rest`, and gRPC
//! (`lf.a2a.v1.A2AService`, the official `a2a-pb` stubs on tonic) on the same port, the
//! workflow named by the request's tenant — speaking what the official Python SDK (a2a-sdk
//! 1.3.0) speaks: the `A2A-Version` rule, its error envelopes and ProtoJSON.
//!
//! **What it owns.** The inbound side of the wire: SendMessage and SendStreamingMessage start a
//! run of the workflow (the message's text and data parts are the run's input, which reaches
//! the host's ControlPoint); the task a client sees is the delegation task record (id = the
//! execution id, the `result` artifact carrying the run's result document, the state mapped by
//! the status table); GetTask, ListTasks, CancelTask and SubscribeToTask read and steer the
//! runs. With a run store, runs are journaled, still answered after a restart, and the ones
//! left unfinished are resumed by the restarted server. The calling side of delegation
//! across hosts is here too: [`DelegatingControlPoint`] adds the delegation request metadata to
//! a run's tasks for workflows another a2aflow server publishes; the agents the runs call may
//! be discovered after the server listens ([`ServerBuilder::discover_agents`]), so servers that
//! call each other can all start. Every
//! request passes tower layers (a tracing span, a deadline, a body limit).
//!
//! **What it must never depend on.** The CLI and the testkit. It builds no runtime: it runs on
//! the host's.

mod agents;
mod app;
mod auth;
mod body;
mod card;
mod delegated;
mod events;
#[doc(hidden)]
pub mod fuzzing;
mod gates;
mod grpc;
mod index;
mod input;
mod jsonrpc;
mod layers;
mod lineage;
mod ops;
mod params;
mod quota;
mod record;
mod rest;
mod runs;
mod server;
mod sse;
mod version;
mod wire_error;

pub use auth::{Caller, CallerCredential, Callers};
pub use lineage::{DelegatingControlPoint, served_workflow_id};
pub use server::{Limits, Server, ServerBuilder, ServerHandle};

/// The README (the crate's page on crates.io), whose example is compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
