//! # a2aflow-protocol — protocol adaptation
//!
//! **What it is.** A2A 1.0 over the network: JSON-RPC 2.0 and HTTP+JSON transports with SSE on
//! hyper 1 + rustls, error-envelope mapping to stable `a2a.*` codes, credentials and TLS, the
//! redacting wire log, and the A2A engine client that implements the kernel's remote-client trait
//! (task identity, waiting, Negotiation-T) using `a2at`.
//!
//! **What it owns.** Every byte a2aflow sends to or reads from a remote agent for workflow traffic.
//!
//! **What it must never depend on.** Higher layers: `a2aflow-extensions`, the `a2aflow` facade,
//! the CLI. No OpenSSL, no reqwest, no second HTTP stack.
