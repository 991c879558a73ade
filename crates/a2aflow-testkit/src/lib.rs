//! # a2aflow-testkit — a scriptable A2A 1.0 agent server
//!
//! **What it is.** An A2A 1.0 server on hyper (agent card, JSON-RPC, HTTP+JSON, SSE) whose agents
//! are scripted in Rust, with fault injection per route, for tests, benchmarks and the demo.
//!
//! **What it owns.** Loopback servers that start on an ephemeral port and stop when dropped.
//!
//! **What it must never depend on.** The kernel, the protocol client or anything above them: it
//! is the independent peer the client is tested against.
//!
//! ## Wire behaviour (mirrors the official Python SDK 1.3.0)
//! - `A2A-Version` is checked on every call except the public card: a missing header counts as
//!   `0.3`; only major version 1 is accepted (JSON-RPC `-32009`, REST 400 `FAILED_PRECONDITION`
//!   / `VERSION_NOT_SUPPORTED`). [`AgentSpec::check_version`] and
//!   [`TestServer::set_version_check`] turn it off.
//! - JSON-RPC errors are HTTP 200 with A2A codes and an ErrorInfo in `data`; REST errors are
//!   `google.rpc.Status` envelopes. An error before a stream starts is a plain JSON body.
//! - SSE events are `data: {…}\r\n\r\n`; idle streams get `: ping - <time>` comments; a crash
//!   mid-stream is `event: error`. A task stream ends at a terminal or interrupted state.
//!
//! ## Example
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use a2aflow_testkit::{AgentSpec, Script, TaskScript, TestServer};
//! let server = TestServer::builder()
//!     .agent(AgentSpec::new("builtin")) // echo / task / slow N / input / stream / negotiate …
//!     .agent(AgentSpec::new("custom").script(|m| {
//!         if m.text().is_empty() {
//!             Script::reply_text("say something")
//!         } else {
//!             TaskScript::new().working().artifact_text("answer", m.text()).complete().into()
//!         }
//!     }))
//!     .spawn()
//!     .await?;
//! let card_url = server.card_url("custom");
//! // … point the client under test at `card_url`, then assert on `server.requests()` …
//! # let _ = card_url;
//! server.shutdown().await?;
//! # Ok(()) }
//! ```

pub mod behaviours;
mod body;
mod clock;
mod dispatch;
mod error;
mod fast;
mod fast_grpc;
mod fault;
mod grpc;
mod lifecycle;
mod message;
mod ops;
mod request_log;
pub mod requests;
mod runner;
mod script;
mod server;
mod silent;
mod spec;
mod store;
mod tls;
mod token_endpoint;
mod wire_error;

pub use error::TestkitError;
pub use fast::FastPeer;
pub use fault::{FOREIGN_ID, Fault, Route};
pub use message::{
    AgentMessage, IncomingMessage, NEGOTIATION_CONTEXT_KEY, NEGOTIATION_T_URI, NegotiationContext,
    Proposal, TEMPLATE_URI_KEY,
};
pub use request_log::RecordedRequest;
pub use requests::{list_all, list_in_context};
pub use script::{ArtifactChunk, FollowUp, Reply, Script, Step, TaskScript};
pub use server::{
    DEFAULT_PING_INTERVAL, DEFAULT_REQUEST_LOG_CAPACITY, SHUTDOWN_TIMEOUT, TestServer,
    TestServerBuilder,
};
pub use silent::{SILENT_HOLD, SilentServer};
pub use spec::{AgentSpec, Binding, Credential, DEFAULT_TASK_BOUND, ListTasks, ScriptFn};
pub use tls::{ClientIdentity, TlsOptions};
pub use token_endpoint::{TokenEndpoint, TokenMode, TokenRequestRecord};

/// The A2A wire types crate (`a2a-lf`), re-exported for scripts (`a2a::Part`, `a2a::TaskState`).
pub use a2a;

/// The README (the crate's page on crates.io), whose example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
