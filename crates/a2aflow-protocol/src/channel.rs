//! The one door from an agent card (and the URL the user configured for it) to an agent channel:
//! the binding chosen from the configured preference, its interface, the authenticated
//! transport on an HTTP client with a pool of its own, and what the callers keep per agent.
//!
//! [`ChannelConfig`] says how channels are built (binding preference, [`Limits`], TLS, whether a
//! client identity is presented, credentials, a host's [`AuthProvider`], the token fetcher, the
//! wire log); [`ChannelFactory`] builds them. The engine client and the extension sender both
//! keep their agents in an [`AgentTable`] of [`AgentChannel`]s.

use std::collections::BTreeMap;
use std::sync::Arc;

use a2aflow_model::a2a::{AgentCard, AgentInterface};
use a2aflow_model::{ErrorCode, Failure};

use crate::auth::{
    AgentAuth, AuthProvider, ConfiguredOrigin, Credentials, HttpTokenFetcher, TokenFetcher,
};
use crate::binding::{Binding, connect_interface_with, select_interface};
use crate::grpc::{Schemeless, target_url};
use crate::http_client::HttpClient;
use crate::limits::Limits;
use crate::transport::Transport;
use crate::view::ResponseReducer;
use crate::wirelog::{RedactionPolicy, WireLog};

/// An agent as a channel is built for it: its card (whose `name` selects the credentials entry
/// and names the agent) and the URL the user configured for it, if any.
pub trait AgentSource {
    /// The card; its `name` selects the credentials entry and is the workflow's name for the agent.
    fn card(&self) -> &AgentCard;
    /// The URL the user configured for the agent (its card URL or base URL), if any.
    fn configured_url(&self) -> Option<&str>;
}

/// A card given on its own: nobody configured its origin.
impl AgentSource for AgentCard {
    fn card(&self) -> &AgentCard {
        self
    }
    fn configured_url(&self) -> Option<&str> {
        None
    }
}

/// How [`ChannelFactory`] builds channels. [`ChannelConfig::new`] is the default: JSON-RPC, then
/// HTTP+JSON, then gRPC, default limits and TLS (webpki roots), no credentials, no wire log.
#[derive(Clone)]
#[non_exhaustive]
pub struct ChannelConfig {
    /// Bindings in order of preference; empty means [`Binding::DEFAULT_PREFERENCE`].
    pub preference: Vec<Binding>,
    /// Limits of every request, and the assembly caps of what is read back.
    pub limits: Limits,
    /// The rustls client configuration every channel shares.
    pub tls: Arc<rustls::ClientConfig>,
    /// Whether `tls` presents a client certificate (it satisfies `mtls` security schemes).
    pub client_identity: bool,
    /// Credentials from the configured credentials file.
    pub credentials: Option<Credentials>,
    /// Headers a host manages itself, combined with the credentials (a conflict fails).
    pub auth_provider: Option<Arc<dyn AuthProvider>>,
    /// Fetches OAuth2 and login tokens; `None`: an [`HttpTokenFetcher`] with these limits and
    /// TLS, on a pool of its own.
    pub token_fetcher: Option<Arc<dyn TokenFetcher>>,
    /// Log every request and response, redacted (every header the agent's auth sets included).
    pub wire_log: bool,
}

impl std::fmt::Debug for ChannelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelConfig")
            .field("preference", &self.preference)
            .field("limits", &self.limits)
            .field("client_identity", &self.client_identity)
            .field("credentials", &self.credentials.is_some())
            .field("auth_provider", &self.auth_provider.is_some())
            .field("token_fetcher", &self.token_fetcher.is_some())
            .field("wire_log", &self.wire_log)
            .finish_non_exhaustive()
    }
}

impl ChannelConfig {
    /// The default configuration (see the type); fails only when the default TLS configuration
    /// cannot be built (`config.*`).
    pub fn new() -> Result<Self, Failure> {
        Ok(ChannelConfig {
            preference: Binding::DEFAULT_PREFERENCE.to_vec(),
            limits: Limits::default(),
            tls: crate::tls::TlsConfig::new().client_config()?,
            client_identity: false,
            credentials: None,
            auth_provider: None,
            token_fetcher: None,
            wire_log: false,
        })
    }

    /// With a binding preference.
    pub fn with_preference(mut self, preference: &[Binding]) -> Self {
        self.preference = preference.to_vec();
        self
    }

    /// With these limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// With this rustls configuration; `client_identity` says whether it presents a client
    /// certificate.
    pub fn with_tls(mut self, tls: Arc<rustls::ClientConfig>, client_identity: bool) -> Self {
        self.tls = tls;
        self.client_identity = client_identity;
        self
    }

    /// With these TLS settings (`config.*` when they cannot be loaded).
    pub fn with_tls_config(self, tls: &crate::tls::TlsConfig) -> Result<Self, Failure> {
        let client = tls.client_config()?;
        Ok(self.with_tls(client, tls.presents_client_identity()))
    }

    /// With configured credentials.
    pub fn with_credentials(mut self, credentials: Credentials) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// With a host's auth provider.
    pub fn with_auth_provider(mut self, provider: Arc<dyn AuthProvider>) -> Self {
        self.auth_provider = Some(provider);
        self
    }

    /// With another token fetcher.
    pub fn with_token_fetcher(mut self, fetcher: Arc<dyn TokenFetcher>) -> Self {
        self.token_fetcher = Some(fetcher);
        self
    }

    /// With the wire log on or off.
    pub fn with_wire_log(mut self, on: bool) -> Self {
        self.wire_log = on;
        self
    }
}

/// Builds one [`AgentChannel`] per agent from a [`ChannelConfig`]: the interface is chosen once,
/// the credentials are bound to it, and each channel gets an HTTP client (a connection pool) of
/// its own.
#[derive(Clone)]
pub struct ChannelFactory {
    config: ChannelConfig,
    token_fetcher: Arc<dyn TokenFetcher>,
}

impl std::fmt::Debug for ChannelFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelFactory")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ChannelFactory {
    /// A factory for `config` (its token fetcher is made here when it has none).
    pub fn new(config: ChannelConfig) -> Result<Self, Failure> {
        let token_fetcher = match &config.token_fetcher {
            Some(f) => Arc::clone(f),
            None => Arc::new(HttpTokenFetcher::new(
                config.limits.clone(),
                config.tls.clone(),
            )?),
        };
        Ok(ChannelFactory {
            config,
            token_fetcher,
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &ChannelConfig {
        &self.config
    }

    /// The limits every channel gets.
    pub fn limits(&self) -> &Limits {
        &self.config.limits
    }

    fn preference(&self) -> &[Binding] {
        if self.config.preference.is_empty() {
            Binding::DEFAULT_PREFERENCE
        } else {
            &self.config.preference
        }
    }

    /// The channel to `agent` (`a2a.unsupported_binding`, `a2a.invalid_response`, `auth.*` before
    /// anything is sent): credentials from the entry named by the card's name, sent only to the
    /// origin of the agent's configured URL or of the entry's `allowed_origins`
    /// (`auth.host_mismatch`), and never over plain http when the configured URL is https
    /// (`auth.insecure_downgrade`). A card given on its own has no configured origin.
    pub fn channel<A: AgentSource + ?Sized>(&self, agent: &A) -> Result<AgentChannel, Failure> {
        let card = agent.card();
        let (binding, interface) = select_interface(card, self.preference())?;
        // A gRPC `host:port` is reached in the clear only when the user configured the agent at
        // a plain http URL; credentials are bound to the origin it resolves to.
        let schemeless = Schemeless::for_configured_url(agent.configured_url());
        let origin_url = match binding {
            Binding::Grpc => target_url(&interface.url, schemeless)?,
            _ => interface.url.clone(),
        };
        let auth = Arc::new(self.auth(card, origin_url, agent.configured_url())?);
        let mut http = HttpClient::builder()
            .limits(self.config.limits.clone())
            .tls(self.config.tls.clone());
        if self.config.wire_log {
            // Every header the agent's auth sets is redacted, custom API-key headers included.
            let policy = RedactionPolicy::new()
                .with_headers(auth.sensitive_header_names().iter().map(|n| n.as_str()));
            http = http.wire_log(WireLog::enabled(policy), card.name.clone());
        }
        let http = http.request_headers(auth).build()?;
        let transport = connect_interface_with(binding, interface, &http, schemeless)?;
        Ok(
            AgentChannel::new(card, transport, self.config.limits.clone())
                .with_interface(interface.clone()),
        )
    }

    /// The authenticated transport of [`channel`](Self::channel) alone.
    pub fn connect_agent<A: AgentSource + ?Sized>(
        &self,
        agent: &A,
    ) -> Result<Arc<dyn Transport>, Failure> {
        Ok(self.channel(agent)?.transport)
    }

    /// The transport for a card given on its own (no configured origin: configured credentials
    /// go only to the entry's `allowed_origins`).
    pub fn connect(&self, card: &AgentCard) -> Result<Arc<dyn Transport>, Failure> {
        self.connect_agent(card)
    }

    fn auth(
        &self,
        card: &AgentCard,
        interface_url: String,
        configured_url: Option<&str>,
    ) -> Result<AgentAuth, Failure> {
        let configured = match configured_url {
            Some(url) => ConfiguredOrigin::AgentUrl(url.to_owned()),
            None => ConfiguredOrigin::Unknown,
        };
        let mut auth = AgentAuth::builder(Arc::new(card.clone()), interface_url)
            .configured_origin(configured)
            .client_identity(self.config.client_identity)
            .token_fetcher(self.token_fetcher.clone());
        if let Some(creds) = &self.config.credentials {
            auth = auth.credentials(creds);
        }
        if let Some(provider) = &self.config.auth_provider {
            auth = auth.provider(provider.clone());
        }
        auth.build()
    }
}

/// One extension an agent's card declares, as the channel keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredUri {
    /// The extension URI as the card spells it.
    pub uri: String,
    /// Whether the card requires every request to activate it.
    pub required: bool,
}

/// One agent a client can reach: its name, the transport, what its card says about streaming
/// and extensions, and the limits of what is read back from it.
#[derive(Debug, Clone)]
pub struct AgentChannel {
    /// The agent's name (the card's, trimmed).
    pub name: String,
    /// The interface the channel talks to, when it was chosen by a [`ChannelFactory`].
    pub interface: Option<AgentInterface>,
    /// The transport (authenticated when built by a [`ChannelFactory`]).
    pub transport: Arc<dyn Transport>,
    /// The card advertises streaming.
    pub streaming: bool,
    /// The extensions the card declares, in card order.
    pub declared: Vec<DeclaredUri>,
    /// Limits of the channel; its `max_artifact` and `max_task_evidence` cap what is assembled.
    pub limits: Limits,
}

impl AgentChannel {
    /// The channel for `card` over a transport built elsewhere.
    pub fn new(card: &AgentCard, transport: Arc<dyn Transport>, limits: Limits) -> Self {
        let declared = card
            .capabilities
            .extensions
            .iter()
            .flatten()
            .map(|e| DeclaredUri {
                uri: e.uri.clone(),
                required: e.required.unwrap_or(false),
            })
            .collect();
        AgentChannel {
            name: card.name.trim().to_owned(),
            interface: None,
            transport,
            streaming: card.capabilities.streaming.unwrap_or(false),
            declared,
            limits,
        }
    }

    /// With the interface the transport talks to.
    pub fn with_interface(mut self, interface: AgentInterface) -> Self {
        self.interface = Some(interface);
        self
    }

    /// The binding of the transport.
    pub fn binding(&self) -> Binding {
        self.transport.binding()
    }

    /// A reducer for answers from this agent in `context_id` (of task `task_id` when known),
    /// capped by the channel's `max_artifact` and `max_task_evidence`.
    pub fn reducer(&self, context_id: impl Into<String>, task_id: Option<&str>) -> ResponseReducer {
        let reducer = match task_id {
            Some(t) => ResponseReducer::with_task_id(context_id, t),
            None => ResponseReducer::new(context_id),
        };
        reducer.with_caps(self.limits.max_artifact, self.limits.max_task_evidence)
    }
}

/// The agents of one client by name. Names are unique and not blank.
#[derive(Debug, Clone, Default)]
pub struct AgentTable {
    /// Ordered by name: a lookup per dispatch is a few string compares, not a SipHash of the
    /// name.
    agents: BTreeMap<String, Arc<AgentChannel>>,
}

impl AgentTable {
    /// An empty table.
    pub fn new() -> Self {
        AgentTable::default()
    }

    /// Adds `channel` under its name: a blank or duplicate name is `config.invalid`.
    pub fn insert(&mut self, channel: AgentChannel) -> Result<(), Failure> {
        let name = channel.name.as_str();
        if name.is_empty() {
            return Err(Failure::new(
                ErrorCode::ConfigInvalid,
                "AgentCard name must not be blank",
            ));
        }
        if self.agents.contains_key(name) {
            return Err(Failure::new(
                ErrorCode::ConfigInvalid,
                format!("Duplicate AgentCard name: {name}"),
            ));
        }
        self.agents.insert(name.to_owned(), Arc::new(channel));
        Ok(())
    }

    /// The channel of `name`; an unknown name is `workflow.unknown_agent`.
    pub fn get(&self, name: &str) -> Result<&Arc<AgentChannel>, Failure> {
        self.agents.get(name).ok_or_else(|| {
            Failure::new(
                ErrorCode::WorkflowUnknownAgent,
                format!("Agent not found: {name}"),
            )
        })
    }

    /// How many agents the table holds.
    pub fn len(&self) -> usize {
        self.agents.len()
    }

    /// True when the table holds no agent.
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }
}
