//! [`AgentAuth`]: the credential and provider headers of one agent, bound to one origin.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a::AgentCard;
use a2aflow_model::{ErrorCode, Failure};
use async_trait::async_trait;
use http::{HeaderMap, HeaderName, Uri};

use super::file::{AgentCredentials, Credentials};
use super::origin::{ConfiguredOrigin, Origin};
use super::requirement::{self, Choice, Inputs};
use super::token::{DEFAULT_TOKEN_TIMEOUT, TokenFetcher};
use super::{AuthProvider, AuthRequest, merge_headers};
use crate::headers::RequestHeaders;

/// Default bound on one [`AuthProvider::headers`] call.
pub const DEFAULT_PROVIDER_TIMEOUT: Duration = Duration::from_secs(30);

/// The headers of one agent: credentials for the chosen security requirement plus the host's
/// provider, only ever for the origin of the interface URL it was built for.
pub struct AgentAuth {
    agent: String,
    card: Arc<AgentCard>,
    origin: Origin,
    choice: Choice,
    provider: Option<Arc<dyn AuthProvider>>,
    fetcher: Option<Arc<dyn TokenFetcher>>,
    provider_timeout: Duration,
    emitted: Mutex<HashSet<HeaderName>>,
}

impl std::fmt::Debug for AgentAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentAuth")
            .field("agent", &self.agent)
            .field("origin", &self.origin.to_string())
            .field("schemes", &self.scheme_names())
            .field("provider", &self.provider.is_some())
            .finish_non_exhaustive()
    }
}

/// Builds an [`AgentAuth`]; all checks run in [`AgentAuthBuilder::build`].
pub struct AgentAuthBuilder {
    card: Arc<AgentCard>,
    interface_url: String,
    credentials: Option<AgentCredentials>,
    provider: Option<Arc<dyn AuthProvider>>,
    fetcher: Option<Arc<dyn TokenFetcher>>,
    client_identity: bool,
    token_timeout: Duration,
    provider_timeout: Duration,
    configured: ConfiguredOrigin,
}

impl AgentAuth {
    /// Starts building the headers of the agent described by `card`, bound to the origin of
    /// `interface_url` (the `supportedInterfaces[].url` the transport will call).
    pub fn builder(card: Arc<AgentCard>, interface_url: impl Into<String>) -> AgentAuthBuilder {
        AgentAuthBuilder {
            card,
            interface_url: interface_url.into(),
            credentials: None,
            provider: None,
            fetcher: None,
            client_identity: false,
            token_timeout: DEFAULT_TOKEN_TIMEOUT,
            provider_timeout: DEFAULT_PROVIDER_TIMEOUT,
            configured: ConfiguredOrigin::default(),
        }
    }

    /// The agent's card name.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The origin credentials are bound to.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Schemes of the chosen requirement covered by configured credentials.
    pub fn scheme_names(&self) -> Vec<&str> {
        self.choice
            .plans
            .iter()
            .map(|p| p.scheme.as_str())
            .collect()
    }

    /// `Ok` when credentials may be sent to `url`: same scheme, host and port as the interface
    /// URL this was built for; `auth.host_mismatch` otherwise. [`RequestHeaders::headers_for`]
    /// runs it first, so calling `headers_for` for every request and every redirect hop is enough;
    /// the transport may also call it directly before following a redirect.
    pub fn check_url(&self, url: &Uri) -> Result<(), Failure> {
        self.origin.check(url)
    }

    /// Names of every header this source sets or has set (credential placements, custom
    /// headers, and every header the provider returned so far): give them to the wire log's
    /// [`RedactionPolicy`](crate::wirelog::RedactionPolicy).
    pub fn sensitive_header_names(&self) -> Vec<HeaderName> {
        let mut names: HashSet<HeaderName> = self
            .choice
            .plans
            .iter()
            .flat_map(|p| {
                p.fixed
                    .keys()
                    .cloned()
                    .chain(p.fetched.iter().map(|(_, pl)| pl.header_name()))
            })
            .collect();
        if let Ok(seen) = self.emitted.lock() {
            names.extend(seen.iter().cloned());
        }
        let mut names: Vec<HeaderName> = names.into_iter().collect();
        names.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        names
    }

    /// Schemes of the chosen requirement left to the provider.
    pub fn provider_scheme_names(&self) -> Vec<&str> {
        self.choice.by_provider.iter().map(String::as_str).collect()
    }
}

impl AgentAuthBuilder {
    /// Uses the entry of `credentials` whose name is the card's name (none is fine when the card
    /// needs none or a provider covers it). The card's name must be the one the user gave the
    /// agent (set it before building), never the name a fetched card declares for itself.
    pub fn credentials(mut self, credentials: &Credentials) -> Self {
        self.credentials = credentials.for_agent(&self.card.name).cloned();
        self
    }

    /// Uses these credentials for the agent.
    pub fn agent_credentials(mut self, credentials: AgentCredentials) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// Adds the host's provider.
    pub fn provider(mut self, provider: Arc<dyn AuthProvider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// The fetcher for OAuth2 and login tokens (required when such a credential is chosen).
    pub fn token_fetcher(mut self, fetcher: Arc<dyn TokenFetcher>) -> Self {
        self.fetcher = Some(fetcher);
        self
    }

    /// Declares that the TLS configuration presents a client certificate, which satisfies the
    /// card's mutual-TLS schemes.
    pub fn client_identity(mut self, presented: bool) -> Self {
        self.client_identity = presented;
        self
    }

    /// Bound on one token fetch (default [`DEFAULT_TOKEN_TIMEOUT`]).
    pub fn token_timeout(mut self, timeout: Duration) -> Self {
        self.token_timeout = timeout;
        self
    }

    /// Who chose the origin credentials may go to (default [`ConfiguredOrigin::Interface`]: the
    /// caller chose the interface URL). Give [`ConfiguredOrigin::AgentUrl`] with the URL the user
    /// configured when the interface URL comes from a fetched card, or
    /// [`ConfiguredOrigin::Unknown`] for a card nobody vouched for.
    pub fn configured_origin(mut self, configured: ConfiguredOrigin) -> Self {
        self.configured = configured;
        self
    }

    /// Bound on one provider call (default [`DEFAULT_PROVIDER_TIMEOUT`]).
    pub fn provider_timeout(mut self, timeout: Duration) -> Self {
        self.provider_timeout = timeout;
        self
    }

    /// Checks everything: the interface URL has an http(s) origin (`a2a.invalid_response`: the
    /// card names it), the card's security requirements are satisfiable
    /// (`auth.requirement_unsatisfied`), a fetched token has a fetcher
    /// (`config.invalid_credentials`), and, when configured credentials will be sent, the
    /// interface is at an origin the user configured (`auth.host_mismatch`) and is not plain
    /// `http` for a card fetched over `https` (`auth.insecure_downgrade`).
    pub fn build(self) -> Result<AgentAuth, Failure> {
        let agent = self.card.name.as_str();
        let origin = Origin::parse(&self.interface_url)
            .map_err(|_| unusable_interface(agent, &self.interface_url))?;
        let configured = match &self.configured {
            ConfiguredOrigin::AgentUrl(url) => Some(Origin::parse(url).map_err(|_| {
                Failure::new(
                    ErrorCode::ConfigInvalid,
                    format!("the URL configured for agent {agent} is not an absolute http(s) URL"),
                )
                .with_detail("agent", agent)
            })?),
            _ => None,
        };
        let mut destinations: Vec<Origin> = match &self.configured {
            ConfiguredOrigin::AgentUrl(_) => configured.iter().cloned().collect(),
            ConfiguredOrigin::Unknown => Vec::new(),
            _ => vec![origin.clone()],
        };
        for allowed in self.credentials.iter().flat_map(|c| c.allowed_origins()) {
            if !destinations.contains(allowed) {
                destinations.push(allowed.clone());
            }
        }
        let card_chose_interface = self.configured != ConfiguredOrigin::Interface;
        let choice = requirement::choose(&Inputs {
            card: &self.card,
            credentials: self.credentials.as_ref(),
            provider: self.provider.as_deref(),
            client_identity: self.client_identity,
            token_timeout: self.token_timeout,
            card_url_origins: card_chose_interface.then_some(destinations.as_slice()),
        })?;
        if !choice.plans.is_empty() {
            check_destination(agent, &origin, configured.as_ref(), &destinations)?;
        }
        if self.fetcher.is_none()
            && let Some(p) = choice.plans.iter().find(|p| p.fetched.is_some())
        {
            return Err(Failure::new(
                ErrorCode::ConfigInvalidCredentials,
                format!(
                    "the credential for scheme {} of agent {} fetches a token but no token fetcher was given",
                    p.scheme, self.card.name
                ),
            ));
        }
        let unused: Vec<&str> = self
            .credentials
            .iter()
            .flat_map(|c| c.scheme_names())
            .filter(|s| !choice.plans.iter().any(|p| p.scheme == *s))
            .collect();
        if !unused.is_empty() {
            tracing::debug!(agent = %self.card.name, ?unused, "configured credentials not used by the chosen security requirement");
        }
        Ok(AgentAuth {
            agent: self.card.name.clone(),
            card: self.card,
            origin,
            choice,
            provider: self.provider,
            fetcher: self.fetcher,
            provider_timeout: self.provider_timeout,
            emitted: Mutex::new(HashSet::new()),
        })
    }
}

/// The card's interface URL has no http(s) origin: the agent's fault, whatever is configured.
fn unusable_interface(agent: &str, url: &str) -> Failure {
    let shown: String = url.chars().take(128).flat_map(char::escape_debug).collect();
    Failure::new(
        ErrorCode::A2aInvalidResponse,
        format!(
            "the card of agent {agent} names the interface URL \"{shown}\", which is not an absolute http(s) URL"
        ),
    )
    .with_detail("agent", agent)
}

/// Configured credentials go to `interface` only when it is one of the `destinations` the user
/// configured, and never over plain http when the agent URL the user gave is https.
fn check_destination(
    agent: &str,
    interface: &Origin,
    configured: Option<&Origin>,
    destinations: &[Origin],
) -> Result<(), Failure> {
    if let Some(configured) = configured.filter(|c| c.is_https() && !interface.is_https()) {
        return Err(Failure::new(
            ErrorCode::AuthInsecureDowngrade,
            format!(
                "the card of agent {agent}, fetched over https from {configured}, names a plain http interface at {interface}; its credentials are not sent in cleartext"
            ),
        )
        .with_detail("agent", agent)
        .with_detail("configuredOrigin", configured.to_string())
        .with_detail("interfaceOrigin", interface.to_string()));
    }
    if destinations.contains(interface) {
        return Ok(());
    }
    let message = match configured {
        Some(configured) => format!(
            "the card of agent {agent}, fetched from {configured}, names its interface at {interface}; credentials configured for {configured} are not sent there (to allow it, list \"{interface}\" in allowed_origins of agent {agent} in the credentials file)"
        ),
        None => format!(
            "the card of agent {agent} came without the URL it was fetched from, and its interface at {interface} is not in allowed_origins of the agent's credentials; refused (give the agent's URL, or list the origin in allowed_origins)"
        ),
    };
    let mut failure = Failure::new(ErrorCode::AuthHostMismatch, message)
        .with_detail("agent", agent)
        .with_detail("interfaceOrigin", interface.to_string());
    if let Some(configured) = configured {
        failure = failure.with_detail("configuredOrigin", configured.to_string());
    }
    Err(failure)
}

#[async_trait]
impl RequestHeaders for AgentAuth {
    async fn headers_for(&self, url: &Uri) -> Result<HeaderMap, Failure> {
        self.check_url(url)?;
        let mut out = HeaderMap::new();
        for plan in &self.choice.plans {
            let mut mine = plan.fixed.clone();
            if let (Some((cache, placement)), Some(fetcher)) = (&plan.fetched, &self.fetcher) {
                let token = cache.token(fetcher.as_ref()).await?;
                let (name, value) = placement.render(&token).ok_or_else(|| {
                    Failure::new(
                        ErrorCode::AuthTokenRequestFailed,
                        format!(
                            "the token for scheme {} of agent {} is not a valid header value",
                            plan.scheme, self.agent
                        ),
                    )
                })?;
                let mut one = HeaderMap::new();
                one.insert(name, value);
                merge_headers(&mut mine, one, &self.agent)?;
            }
            merge_headers(&mut out, mine, &self.agent)?;
        }
        if let Some(provider) = &self.provider {
            let request = AuthRequest {
                agent: &self.agent,
                card: &self.card,
                url,
            };
            let mut extra = tokio::time::timeout(self.provider_timeout, provider.headers(request))
                .await
                .map_err(|_| {
                    Failure::new(
                        ErrorCode::A2aTimeout,
                        format!(
                            "the auth provider gave no headers for agent {} within {} ms",
                            self.agent,
                            self.provider_timeout.as_millis()
                        ),
                    )
                    .with_detail("stage", "auth_provider")
                })??;
            for value in extra.values_mut() {
                value.set_sensitive(true);
            }
            merge_headers(&mut out, extra, &self.agent)?;
        }
        if let Ok(mut seen) = self.emitted.lock() {
            seen.extend(out.keys().cloned());
        }
        Ok(out)
    }

    async fn on_unauthorized(&self, url: &Uri) -> Result<bool, Failure> {
        self.check_url(url)?;
        let mut retry = false;
        for plan in &self.choice.plans {
            if let Some((cache, _)) = &plan.fetched {
                cache.invalidate().await;
                retry = true;
            }
        }
        if let Some(provider) = &self.provider {
            retry |= provider.on_unauthorized(&self.agent).await;
        }
        Ok(retry)
    }
}
