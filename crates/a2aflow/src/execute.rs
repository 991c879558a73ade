//! `execute_workflow`: build transports and the engine client from agent cards and an
//! [`EngineConfig`], run, and close only what was created here.
//!
//! Credentials from the configured credentials file follow the user, never the card: an
//! [`AgentEndpoint`] (from [`discover_agents`]) remembers the name the user gave the agent (which
//! selects its credentials entry) and the URL its card was fetched from (the origin its
//! credentials may go to, besides the entry's `allowed_origins`). A bare [`AgentCard`] carries no
//! configured origin, so its credentials go only to origins the entry lists in `allowed_origins`.

use crate::config::EngineConfig;
use a2aflow_engine::A2aEngineClient;
use a2aflow_kernel::journal::RunStore;
use a2aflow_kernel::{
    ControlPoint, EventStream, RemoteClient, ResumePolicy, RunInput, RunOptions, check_agents,
    resume as kernel_resume, resume_stream as kernel_resume_stream, run, run_stream,
};
use a2aflow_model::a2a::AgentCard;
use a2aflow_model::{ErrorCode, ExecutionResult, Failure, Workflow};
use a2aflow_protocol::auth::AuthProvider;
use a2aflow_protocol::wirelog::{RedactionPolicy, WireLog};
use a2aflow_protocol::{AgentSource, CallOptions, ChannelFactory, HttpClient};
use std::sync::Arc;

/// Host-supplied pieces beyond the configuration.
#[derive(Clone, Default)]
pub struct HostHooks {
    /// Headers from the host (tokens it manages); combined with configured credentials, and a
    /// conflict between the two fails instead of overwriting.
    pub auth_provider: Option<Arc<dyn AuthProvider>>,
    /// Run options (cancellation token, event sink, on_finish, execution id). Its `timeout` and
    /// `max_concurrent_remote_tasks` are taken from the configuration. A `store` here wins over
    /// the configured one; a `resume_policy` other than the default wins over `[resume]`.
    ///
    /// A host that must know a durable run's execution id before anything is sent either
    /// chooses it here (`execution_id`) or reads it from the run's first event, `start`, which
    /// carries it and is emitted before any callback or send.
    pub run_options: RunOptions,
}

/// An agent as the user configured it: its card, named with the name the user gave the agent
/// (the workflow's and the credentials file's name for it), and the URL the user gave for it.
#[derive(Debug, Clone)]
pub struct AgentEndpoint {
    card: AgentCard,
    configured_url: Option<String>,
}

impl AgentEndpoint {
    /// The agent the user calls `name`, configured at `url` (its card URL or base URL), with the
    /// `card` fetched from there. The card's own `name` is replaced by `name`.
    pub fn new(name: impl Into<String>, url: impl Into<String>, mut card: AgentCard) -> Self {
        card.name = name.into();
        AgentEndpoint {
            card,
            configured_url: Some(url.into()),
        }
    }

    /// The name the user gave the agent.
    pub fn name(&self) -> &str {
        &self.card.name
    }

    /// The card (its `name` is the user's name for the agent).
    pub fn card(&self) -> &AgentCard {
        &self.card
    }

    /// The URL the user configured for the agent; `None` for a card given on its own.
    pub fn configured_url(&self) -> Option<&str> {
        self.configured_url.as_deref()
    }
}

/// A card given on its own (from a file, a registry, or built in code): no configured origin, so
/// configured credentials go only to the origins of the entry's `allowed_origins`.
impl From<AgentCard> for AgentEndpoint {
    fn from(card: AgentCard) -> Self {
        AgentEndpoint {
            card,
            configured_url: None,
        }
    }
}

impl AgentSource for AgentEndpoint {
    fn card(&self) -> &AgentCard {
        &self.card
    }
    fn configured_url(&self) -> Option<&str> {
        self.configured_url.as_deref()
    }
}

/// Builds the engine client for `agents`: for each agent, the channel of
/// [`EngineConfig::channel_factory`] (the binding from the configured preference, its
/// credentials checked against the card's security requirements and bound to the origin the user
/// configured, TLS, limits and an HTTP client with a pool of its own). Every construction problem
/// is a typed failure (`config.*`, `auth.*`, `a2a.unsupported_binding`, `a2a.invalid_response` for
/// an unusable interface URL) before anything is sent.
pub fn build_engine_client<A: AgentSource>(
    agents: &[A],
    config: &EngineConfig,
    auth_provider: Option<Arc<dyn AuthProvider>>,
) -> Result<A2aEngineClient, Failure> {
    let channels = config.channel_factory(auth_provider)?;
    let mut client = A2aEngineClient::new(config.client_config()?)?;
    for agent in agents {
        client.add_channel(channels.channel(agent)?)?;
    }
    Ok(client)
}

/// Builds the extension sender for `agents` from the same door as [`build_engine_client`]
/// (channels of [`EngineConfig::channel_factory`], each with a connection pool of its own, never
/// the engine client's) and the configuration's `[extensions]` section.
#[cfg(feature = "extensions")]
pub fn build_extension_sender<A: AgentSource>(
    agents: &[A],
    config: &EngineConfig,
    auth_provider: Option<Arc<dyn AuthProvider>>,
) -> Result<a2aflow_extensions::ExtensionSender, Failure> {
    let channels = config.channel_factory(auth_provider)?;
    a2aflow_extensions::ExtensionSender::new(agents, &channels, config.extension_config()?)
}

/// The facade's name for the wire crate's door: one authenticated channel per agent card from an
/// [`EngineConfig`] ([`EngineConfig::channel_factory`]).
pub type TransportFactory = ChannelFactory;

/// Fetches the public agent card of each URL (the card URL itself or the agent's base URL) with
/// the configuration's TLS and limits, `A2A-Version: 1.0` included. No credentials are sent: the
/// card says which ones the agent needs. The cards do not remember where they came from: to send
/// configured credentials to the agents, use [`discover_agents`].
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

/// Fetches the card of each `(name, url)` the user configured (as [`fetch_agent_cards`]) and
/// returns the agents as [`AgentEndpoint`]s: named `name`, with credentials bound to `url`'s
/// origin.
pub async fn discover_agents<N: AsRef<str>, U: AsRef<str>>(
    agents: &[(N, U)],
    config: &EngineConfig,
) -> Result<Vec<AgentEndpoint>, Failure> {
    let urls: Vec<String> = agents.iter().map(|(_, u)| u.as_ref().to_owned()).collect();
    let cards = fetch_agent_cards(&urls, config).await?;
    Ok(agents
        .iter()
        .zip(cards)
        .map(|((name, url), card)| AgentEndpoint::new(name.as_ref(), url.as_ref(), card))
        .collect())
}

/// Runs `workflow` against the agents of `cards` with `control_point` deciding content, routes
/// and negotiation replies. Construction problems return `Err` before anything is sent; a run
/// that fails returns `Ok` with `success == false` and its failure. The transports and
/// connections built here are closed when this returns.
///
/// With a store (the configuration's `store`, opened and created on first use here, or one the
/// host set in `hooks.run_options.store`, which wins) the run is journaled and can be
/// continued by [`resume`] after a crash; a store that cannot be opened is `Err` with its
/// `store.*` code before anything is sent.
pub async fn execute_workflow<A: AgentSource>(
    workflow: impl Into<Arc<Workflow>>,
    cards: &[A],
    control_point: Arc<dyn ControlPoint>,
    config: &EngineConfig,
    input: RunInput,
    hooks: HostHooks,
) -> Result<ExecutionResult, Failure> {
    let client = build_engine_client(cards, config, hooks.auth_provider)?;
    let mut options = run_options(config, hooks.run_options)?;
    if options.store.is_none() {
        options.store = config.open_store().await?;
    }
    Ok(run(workflow, input, control_point, Arc::new(client), options).await)
}

/// [`execute_workflow`] as a stream of events; dropping the stream cancels the run. The client
/// built here lives exactly as long as the run.
///
/// The configured store is opened by the run's first journal write (this function cannot
/// wait): a store that cannot be opened ends the run with its `store.*` failure before anything
/// is sent. A host that wants that error up front opens it with [`EngineConfig::open_store`] and
/// sets `hooks.run_options.store`.
pub fn execute_workflow_stream<A: AgentSource>(
    workflow: impl Into<Arc<Workflow>>,
    cards: &[A],
    control_point: Arc<dyn ControlPoint>,
    config: &EngineConfig,
    input: RunInput,
    hooks: HostHooks,
) -> Result<EventStream, Failure> {
    let client = build_engine_client(cards, config, hooks.auth_provider)?;
    let mut options = run_options(config, hooks.run_options)?;
    if options.store.is_none() {
        let store_options = config.store_options()?;
        let password = config.store_password()?;
        options.store = config
            .store
            .as_ref()
            .map(|location| location.open_lazily_as(store_options, password));
    }
    Ok(run_stream(
        workflow,
        input,
        control_point,
        Arc::new(client),
        options,
    ))
}

/// Continues the journaled run `execution_id` after a crash (see [`a2aflow_kernel::resume`]):
/// the engine client is built from `agents` exactly as [`execute_workflow`] builds it, the store
/// is `hooks.run_options.store` or the configured one (which must exist: nothing is created),
/// and the resume policy is the host's when it set one, else the configuration's `[resume]`.
///
/// Finished steps and tasks keep their journaled results, journaled host answers are reused,
/// each task sent and not finished is found again (by remote task id, else by context id) and
/// waited on, and a task that cannot be found ends `workflow.outcome_unknown` unless the policy
/// allows resending its journaled message. The run keeps the absolute deadline it started with.
///
/// Errors before anything is sent: no store configured (`config.invalid`), the store's
/// `store.*` codes (`store.unknown_execution`, `store.locked` while another driver holds the
/// run, `store.workflow_mismatch`, a file that is not a store or is damaged), and every
/// construction problem of [`execute_workflow`]. A finished run returns its journaled result.
pub async fn resume<A: AgentSource>(
    execution_id: &str,
    agents: &[A],
    control_point: Arc<dyn ControlPoint>,
    config: &EngineConfig,
    hooks: HostHooks,
) -> Result<ExecutionResult, Failure> {
    let (store, client, options) = resume_parts(execution_id, agents, config, hooks).await?;
    kernel_resume(execution_id, store, control_point, client, options).await
}

/// [`resume`] as a stream of events (continuing the stored sequence; a finished run's stream
/// has no events and its result is the journaled one); dropping the stream cancels the run.
/// The errors before the run continues are [`resume`]'s, returned at once.
pub async fn resume_stream<A: AgentSource>(
    execution_id: &str,
    agents: &[A],
    control_point: Arc<dyn ControlPoint>,
    config: &EngineConfig,
    hooks: HostHooks,
) -> Result<EventStream, Failure> {
    let (store, client, options) = resume_parts(execution_id, agents, config, hooks).await?;
    kernel_resume_stream(execution_id, store, control_point, client, options).await
}

/// The store, engine client and options of a resume; an unfinished run whose workflow names an
/// agent without a card in `agents` is refused (`workflow.unknown_agent`) before anything is
/// sent, as [`execute_workflow`]'s caller would be by [`crate::check_agents`].
async fn resume_parts<A: AgentSource>(
    execution_id: &str,
    agents: &[A],
    config: &EngineConfig,
    hooks: HostHooks,
) -> Result<(Arc<dyn RunStore>, Arc<dyn RemoteClient>, RunOptions), Failure> {
    let client = build_engine_client(agents, config, hooks.auth_provider)?;
    let mut options = hooks.run_options;
    let store = match options.store.take() {
        Some(store) => store,
        None => resume_store(config).await?,
    };
    let journal = store.load(execution_id).await?;
    if journal.finished().is_none() {
        let workflow = journal.started()?.workflow()?;
        check_agents(&workflow, agents.iter().map(|a| a.card().name.as_str()))?;
    }
    if options.resume_policy == ResumePolicy::default() {
        options.resume_policy = config.resume.policy();
    }
    Ok((store, Arc::new(client), options))
}

/// The configured store of a resume: it must exist.
async fn resume_store(config: &EngineConfig) -> Result<Arc<dyn RunStore>, Failure> {
    match &config.store {
        Some(_) => config.open_existing_store().await,
        None => Err(Failure::new(
            ErrorCode::ConfigInvalid,
            "resume needs the run store the run was journaled in: configure `store` or set \
             the host's run_options.store",
        )),
    }
}

fn run_options(config: &EngineConfig, mut options: RunOptions) -> Result<RunOptions, Failure> {
    options.timeout = config.run_timeout()?;
    options.max_concurrent_remote_tasks = config.remote_task_limit();
    if options.retry.is_none() {
        options.retry = config.retry_policy()?;
    }
    Ok(options)
}
