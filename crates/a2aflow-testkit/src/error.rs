//! Errors returned by the testkit's own API (never sent on the wire).

/// What went wrong while starting, configuring or stopping a [`crate::TestServer`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestkitError {
    /// The loopback listener could not be bound or inspected.
    #[error("testkit: cannot bind the loopback listener: {0}")]
    Bind(#[source] std::io::Error),
    /// Two agents were given the same name, or a name that cannot be a path segment.
    #[error("testkit: invalid agent name `{0}` (must be unique, non-empty, [A-Za-z0-9._-])")]
    InvalidAgentName(String),
    /// The server was built without any agent.
    #[error("testkit: a server needs at least one agent")]
    NoAgents,
    /// A call named an agent the server does not serve.
    #[error("testkit: no agent named `{0}`")]
    UnknownAgent(String),
    /// Generating the self-signed certificate or building the TLS configuration failed.
    #[error("testkit: TLS setup failed: {0}")]
    Tls(String),
    /// `shutdown` did not finish within its deadline (something kept a connection or task alive).
    #[error("testkit: shutdown did not finish within {0:?}")]
    ShutdownTimeout(std::time::Duration),
}
