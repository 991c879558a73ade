//! Set-up shared by the CLI integration tests.

/// Testkit agents on loopback, served by a runtime of their own while the test drives the binary.
pub struct Agents {
    /// The server: `alpha` (blocking) and `beta` (streaming).
    pub server: a2aflow_testkit::TestServer,
    _rt: tokio::runtime::Runtime,
}

/// Starts `alpha` (blocking) and `beta` (streaming) on a one-worker background runtime.
pub fn agents() -> Agents {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(
            a2aflow_testkit::TestServer::builder()
                .agent(a2aflow_testkit::AgentSpec::new("alpha"))
                .agent(a2aflow_testkit::AgentSpec::new("beta").streaming(true))
                .spawn(),
        )
        .unwrap();
    Agents { server, _rt: rt }
}
