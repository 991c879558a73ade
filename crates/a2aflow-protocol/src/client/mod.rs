//! The A2A engine client: the kernel's remote-client trait implemented over the transport.
//!
//! - [`A2aEngineClient`] — [`a2aflow_kernel::RemoteClient`] over [`crate::Transport`]s: identity
//!   (a fresh context id per logical task, the first remote task id kept, `ROLE_USER`, fresh
//!   message ids), extension activation computed with `a2at`, waiting (stream, resubscribe, poll
//!   with backoff), the Negotiation-T loop, best-effort cancellation, and
//!   [`A2aEngineClient::attach`] for hosts that restart.
//! - [`ClientConfig`] — its bounds (negotiation budget, poll backoff, cancel bound, …).
//! - [`ResponseReducer`] / [`TaskView`] — the pure fold of A2A responses into a task view and
//!   `ReceivedMessage` evidence (usable without a network).

mod config;
mod end_state;
mod engine;
mod neg_context;
mod negotiation;
mod size;
pub mod view;

pub use config::{ClientConfig, MIN_POLL_INTERVAL};
pub use end_state::end_state_code;
pub use engine::A2aEngineClient;
pub use view::{Applied, ResponseReducer, TaskView};
