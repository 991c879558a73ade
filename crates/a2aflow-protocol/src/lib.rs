//! # a2aflow-protocol — protocol adaptation
//!
//! **What it is.** A2A 1.0 over the network: JSON-RPC 2.0 and HTTP+JSON transports with SSE, and
//! gRPC on tonic, all on hyper 1 + rustls, error-envelope mapping to stable `a2a.*` codes, credentials and TLS, the
//! redacting wire log, plain JSON requests for services that are not agents, and the pure fold of
//! A2A responses into a task view ([`ResponseReducer`]).
//!
//! **What it owns.** Every byte a2aflow sends to or reads from a remote agent for workflow traffic.
//!
//! **What it must never depend on.** The scheduling kernel (`a2aflow-kernel`) and `a2at`, even as a
//! dev-dependency (`cargo xtask check-layers` enforces it): the engine client that joins the wire
//! to the kernel lives in `a2aflow-engine`, the registry and orchestration-centre clients in
//! `a2aflow-services`. Higher layers: `a2aflow-extensions`, the `a2aflow` facade, the CLI. No
//! OpenSSL, no reqwest, no second HTTP stack.
//!
//! ## Transport map
//!
//! - [`HttpClient`] — the pooled hyper client (HTTP/1.1 and HTTP/2, rustls with `ring`) with its
//!   [`Limits`] and the [`RequestHeaders`] hook; [`HttpClient::fetch_agent_card`].
//! - [`Transport`] — one async method per A2A operation; [`JsonRpcTransport`],
//!   [`RestTransport`] and [`GrpcTransport`] (tonic, [`grpc`]) implement it; [`connect`] picks one from a card's `supportedInterfaces`.
//! - [`ChannelFactory`] ([`channel`]) — the one door from a card (and the URL the user configured
//!   for it) and a [`ChannelConfig`] to an authenticated [`AgentChannel`]; clients keep their
//!   agents in an [`AgentTable`].
//! - [`TransportError`] — every failure with a stable code; [`envelope`] maps A2A error bodies.
//! - [`sse::SseParser`] — the incremental SSE parser the streams run on.
//! - [`ResponseReducer`] / [`TaskView`] ([`view`]) — the pure fold of A2A responses into a task
//!   view and `ReceivedMessage` evidence (usable without a network); [`end_state`] says what a
//!   view's state means ([`end_state_code`]).

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod binding;
pub mod card_compat;
pub mod channel;
pub mod end_state;
pub mod envelope;
pub mod error;
pub mod gate;
pub mod grpc;
pub mod headers;
pub mod http_client;
pub mod http_json;
pub mod jsonrpc;
pub mod limits;
pub mod outgoing;
mod payload;
pub mod percent;
pub mod rest;
pub mod resubscribe;
mod size;
pub mod sse;
pub mod stream;
pub mod transport;
pub mod view;

pub use binding::{Binding, connect, connect_interface, connect_interface_with, select_interface};
pub use channel::{
    AgentChannel, AgentSource, AgentTable, ChannelConfig, ChannelFactory, DeclaredUri,
};
pub use end_state::end_state_code;
pub use error::{RemoteDetails, RemoteError, TimeoutPhase, TransportError};
pub use gate::SendGate;
pub use grpc::GrpcTransport;
pub use headers::{CallOptions, RequestHeaders};
pub use http_client::HttpClient;
pub use jsonrpc::JsonRpcTransport;
pub use limits::Limits;
pub use rest::RestTransport;
pub use resubscribe::ResubscribePolicy;
pub use stream::StreamResponseStream;
pub use transport::Transport;
pub use view::{Applied, Folded, ResponseReducer, TaskView};
pub mod auth;
pub mod tls;
mod tls_words;
pub mod wirelog;

/// The README (the crate's page on crates.io), whose example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
