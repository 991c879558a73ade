//! What can stop the page from starting. Each error has a stable code from the registry
//! ([`UiError::code`]) and becomes a [`Failure`] for a host that reports failures.

use a2aflow::model::{ErrorCode, Failure};
use std::net::SocketAddr;

/// Why the page could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UiError {
    /// The listen address is not a loopback address and the host did not allow that.
    #[error(
        "refusing to listen on {addr}: it is not a loopback address, so anyone who can reach it \
         could try the page that cancels runs; listen on 127.0.0.1 or [::1], or allow it \
         explicitly (`--allow-remote`)"
    )]
    NotLoopback {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The address could not be bound (in use, not an address of this machine, no permission).
    #[error("cannot listen on {addr}: {reason}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The operating system's reason.
        reason: String,
    },
    /// The operating system's random source could not be read for the access token.
    #[error("cannot make the page's access token: the OS random source failed: {0}")]
    Random(String),
}

impl UiError {
    /// The error's stable code: `config.invalid` for a listen address refused or unusable and
    /// for a random source that fails.
    pub fn code(&self) -> ErrorCode {
        match self {
            UiError::NotLoopback { .. } | UiError::Bind { .. } | UiError::Random(_) => {
                ErrorCode::ConfigInvalid
            }
        }
    }
}

impl From<UiError> for Failure {
    fn from(e: UiError) -> Self {
        let failure = Failure::new(e.code(), e.to_string());
        match &e {
            UiError::NotLoopback { addr } | UiError::Bind { addr, .. } => {
                failure.with_detail("listen", addr.to_string())
            }
            UiError::Random(_) => failure,
        }
    }
}
