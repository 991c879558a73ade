//! `execute_workflow`: build transports and the engine client from agent cards and an
//! [`EngineConfig`], run, and close only what was created here.

use crate::config::EngineConfig;
use a2aflow_kernel::{ControlPoint, EventStream, RunInput, RunOptions, run, run_stream};
use a2aflow_model::a2a::AgentCard;
use a2aflow_model::{ExecutionResult, Failure, Workflow};
use a2aflow_protocol::auth::{
    AgentAuth, AuthProvider, Credentials, Environment, HttpTokenFetcher, TokenFetcher,
};
use a2aflow_protocol::client::A2aEngineClient;
use a2aflow_protocol::wirelog::{RedactionPolicy, WireLog};
use a2aflow_protocol::{Binding, CallOptions, HttpClient, Limits, Transport, binding};
use std::sync::Arc;

/// Host-supplied pieces beyond the configuration.
#[derive(Clone, Default)]
pub struct HostHooks {
    /// Headers from the host (tokens it manages); combined with configured credentials, and a
    /// conflict between the two fails instead of overwriting.
    pub auth_provider: Option<Arc<dyn AuthProvider>>,
    /// Run options (cancellation token, event sink, on_finish, execution id). Its `timeout` and
    /// `max_concurrent_remote_tasks` are taken from the configuration.
    pub run_options: RunOptions,
}

/// Builds the engine client for `cards`: for each card, the binding from the configured
/// preference, its credentials (checked against the card's security requirements), TLS, limits and
/// an HTTP client with a pool of its own. Every construction problem is a typed failure
/// (`config.*`, `auth.*`, `a2a.unsupported_binding`) before anything is sent.
pub fn build_engine_client(
    cards: &[AgentCard],
    config: &EngineConfig,
    auth_provider: Option<Arc<dyn AuthProvider>>,
) -> Result<A2aEngineClient, Failure> {
    let transports = TransportFactory::new(config, auth_provider)?;
    let mut client = A2aEngineClient::new(config.client_config()?)?;
    for card in cards {
        client.add_agent(card, transports.connect(card)?)?;
    }
    Ok(client)
}

/// Builds one authenticated transport per agent card from an [`EngineConfig`]: the binding from
/// the configured preference, the agent's credentials (checked against the card's security
/// requirements), TLS, limits, and an HTTP client with a pool of its own. The credentials file is
/// read once, when the factory is made.
pub struct TransportFactory {
    preference: Vec<Binding>,
    limits: Limits,
    tls: Arc<rustls::ClientConfig>,
    client_identity: bool,
    credentials: Option<Credentials>,
    auth_provider: Option<Arc<dyn AuthProvider>>,
    wire_log: bool,
    token_fetcher: Arc<dyn TokenFetcher>,
}

impl TransportFactory {
    /// Validates `config` and loads its credentials (`config.*` failures).
    pub fn new(
        config: &EngineConfig,
        auth_provider: Option<Arc<dyn AuthProvider>>,
    ) -> Result<Self, Failure> {
        config.validate()?;
        let tls = config.tls_config();
        let credentials = match &config.credentials_file {
            Some(path) => {
                let mut env = Environment::from_process();
                if let Some(env_file) = &config.env_file {
                    env = env.with_env_file(env_file)?;
                }
                Some(Credentials::from_file(path, &env)?)
            }
            None => None,
        };
        let limits = config.limits()?;
        let tls_config = tls.client_config()?;
        // OAuth2 and login tokens: the configuration's timeouts and TLS, a pool of its own.
        let token_fetcher = Arc::new(HttpTokenFetcher::new(limits.clone(), tls_config.clone())?);
        Ok(TransportFactory {
            preference: config.binding_preference(),
            limits,
            tls: tls_config,
            token_fetcher,
            client_identity: tls.presents_client_identity(),
            credentials,
            auth_provider,
            wire_log: config.wire_log,
        })
    }

    /// The transport for `card` (`a2a.unsupported_binding`, `auth.*` before anything is sent).
    pub fn connect(&self, card: &AgentCard) -> Result<Arc<dyn Transport>, Failure> {
        let (_, interface) = binding::select_interface(card, &self.preference)?;
        let mut auth = AgentAuth::builder(Arc::new(card.clone()), interface.url.clone())
            .client_identity(self.client_identity)
            .token_fetcher(self.token_fetcher.clone());
        if let Some(creds) = &self.credentials {
            auth = auth.credentials(creds);
        }
        if let Some(provider) = &self.auth_provider {
            auth = auth.provider(provider.clone());
        }
        let auth = Arc::new(auth.build()?);
        let mut http = HttpClient::builder()
            .limits(self.limits.clone())
            .tls(self.tls.clone());
        if self.wire_log {
            // Every header the agent's auth sets is redacted, custom API-key headers included.
            let policy = RedactionPolicy::new()
                .with_headers(auth.sensitive_header_names().iter().map(|n| n.as_str()));
            http = http.wire_log(WireLog::enabled(policy), card.name.clone());
        }
        let http = http.request_headers(auth).build()?;
        Ok(binding::connect(card, &http, &self.preference)?)
    }
}

/// Fetches the public agent card of each URL (the card URL itself or the agent's base URL) with
/// the configuration's TLS and limits, `A2A-Version: 1.0` included. No credentials are sent: the
/// card says which ones the agent needs.
pub async fn fetch_agent_cards(
    urls: &[String],
    config: &EngineConfig,
) -> Result<Vec<AgentCard>, Failure> {
    config.validate()?;
    let mut http = HttpClient::builder()
        .limits(config.limits()?)
        .tls(config.tls_config().client_config()?);
    if config.wire_log {
        http = http.wire_log(WireLog::enabled(RedactionPolicy::new()), "agent-card");
    }
    let http = http.build()?;
    let mut cards = Vec::with_capacity(urls.len());
    for url in urls {
        cards.push(http.fetch_agent_card(url, &CallOptions::default()).await?);
    }
    Ok(cards)
}

/// Runs `workflow` against the agents of `cards` with `control_point` deciding content, routes
/// and negotiation replies. Construction problems return `Err` before anything is sent; a run
/// that fails returns `Ok` with `success == false` and its failure. The transports and
/// connections built here are closed when this returns.
pub async fn execute_workflow(
    workflow: impl Into<Arc<Workflow>>,
    cards: &[AgentCard],
    control_point: Arc<dyn ControlPoint>,
    config: &EngineConfig,
    input: RunInput,
    hooks: HostHooks,
) -> Result<ExecutionResult, Failure> {
    let client = build_engine_client(cards, config, hooks.auth_provider)?;
    let options = run_options(config, hooks.run_options)?;
    Ok(run(workflow, input, control_point, Arc::new(client), options).await)
}

/// [`execute_workflow`] as a stream of events; dropping the stream cancels the run. The client
/// built here lives exactly as long as the run.
pub fn execute_workflow_stream(
    workflow: impl Into<Arc<Workflow>>,
    cards: &[AgentCard],
    control_point: Arc<dyn ControlPoint>,
    config: &EngineConfig,
    input: RunInput,
    hooks: HostHooks,
) -> Result<EventStream, Failure> {
    let client = build_engine_client(cards, config, hooks.auth_provider)?;
    let options = run_options(config, hooks.run_options)?;
    Ok(run_stream(
        workflow,
        input,
        control_point,
        Arc::new(client),
        options,
    ))
}

fn run_options(config: &EngineConfig, mut options: RunOptions) -> Result<RunOptions, Failure> {
    options.timeout = config.run_timeout()?;
    options.max_concurrent_remote_tasks = config.max_concurrent_remote_tasks;
    Ok(options)
}
