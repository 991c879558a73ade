//! # a2aflow-testkit — a scriptable A2A 1.0 agent server
//!
//! **What it is.** An A2A 1.0 server on hyper (agent card, JSON-RPC, HTTP+JSON, SSE) whose agents
//! are scripted in Rust, with fault injection per route, for tests, benchmarks and the demo.
//!
//! **What it owns.** Loopback servers that start on an ephemeral port and stop when dropped.
//!
//! **What it must never depend on.** The kernel, the protocol client or anything above them: it
//! is the independent peer the client is tested against.
