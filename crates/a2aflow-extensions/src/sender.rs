//! [`ExtensionSender`]: the agents it can reach (each on a channel of its own) and the checks
//! and envelope shared by both operations.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use a2aflow_model::a2a::{self, SendMessageRequest};
use a2aflow_model::{ErrorCode, Failure, MessageContent};
use a2aflow_protocol::outgoing::user_message;
use a2aflow_protocol::{AgentChannel, AgentSource, AgentTable, CallOptions, ChannelFactory};
use a2at::{ActivationError, ContentExtensions, DeclaredExtension};

use crate::config::ExtensionConfig;

/// The failure of content that does not fit the agent's card, with the codes the engine client
/// reports for the same refusals (`a2a.extension_not_supported`,
/// `a2a.extension_support_required`); content that does not use the operation's extension is
/// `config.invalid`. The refused URI is the `uri` detail.
fn activation_failure(e: ActivationError, agent: &str) -> Failure {
    let (code, uri) = match &e {
        ActivationError::NotDeclared { uri, .. } => (ErrorCode::A2aExtensionNotSupported, uri),
        ActivationError::RequiredNotActivated { uri } => {
            (ErrorCode::A2aExtensionSupportRequired, uri)
        }
        ActivationError::NotUsed { uri } => (ErrorCode::ConfigInvalid, uri),
        other => return Failure::new(ErrorCode::ConfigInvalid, other.to_string()),
    };
    let message = match &e {
        ActivationError::NotDeclared { .. } => format!("{e}: {agent}"),
        _ => e.to_string(),
    };
    Failure::new(code, message).with_detail("uri", uri.clone())
}

/// A message ready to send: the request, its call options and the fresh context id.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) agent: Arc<AgentChannel>,
    pub(crate) request: SendMessageRequest,
    pub(crate) options: CallOptions,
    pub(crate) context_id: String,
}

/// Counts the sender's live subscription tasks; a guard decrements on every exit path.
#[derive(Debug, Default)]
pub(crate) struct LiveCounter(AtomicUsize);

/// Held by one running subscription task.
#[derive(Debug)]
pub(crate) struct LiveGuard(Arc<LiveCounter>);

impl LiveGuard {
    pub(crate) fn new(counter: &Arc<LiveCounter>) -> Self {
        counter.0.fetch_add(1, Ordering::SeqCst);
        LiveGuard(Arc::clone(counter))
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Sends the two independent A2A-T operations — Authorization-T
/// ([`send_authorization`](Self::send_authorization)) and Notification-T
/// ([`open_notification`](Self::open_notification)) — on connection pools of its own.
///
/// Nothing here touches a running workflow: results reach the host only through the returned
/// values, never through the workflow event stream. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct ExtensionSender {
    agents: AgentTable,
    pub(crate) config: ExtensionConfig,
    pub(crate) live: Arc<LiveCounter>,
}

impl ExtensionSender {
    /// A sender for `agents` (keyed by card name), each reached through a channel of
    /// `channels` — a new connection pool per agent, never one the workflow client uses. Fails
    /// with `config.invalid` on a blank or duplicate name or out-of-bounds `config`,
    /// `a2a.unsupported_binding` when a card offers no usable interface, and with the TLS or
    /// credential failure when a channel cannot be built. Building spawns nothing and makes no
    /// request.
    pub fn new<'a, A: AgentSource + ?Sized + 'a>(
        agents: impl IntoIterator<Item = &'a A>,
        channels: &ChannelFactory,
        config: ExtensionConfig,
    ) -> Result<Self, Failure> {
        config.validate()?;
        let mut table = AgentTable::new();
        for agent in agents {
            table.insert(channels.channel(agent)?)?;
        }
        Ok(ExtensionSender {
            agents: table,
            config,
            live: Arc::new(LiveCounter::default()),
        })
    }

    /// A sender over one given transport (unit tests with scripted transports).
    #[cfg(test)]
    pub(crate) fn with_transport(
        name: &str,
        transport: Arc<dyn a2aflow_protocol::Transport>,
        declared: &[&str],
        config: ExtensionConfig,
    ) -> Self {
        let channel = AgentChannel {
            name: name.to_owned(),
            interface: None,
            transport,
            streaming: true,
            declared: declared
                .iter()
                .map(|u| a2aflow_protocol::DeclaredUri {
                    uri: (*u).to_owned(),
                    required: false,
                })
                .collect(),
            limits: a2aflow_protocol::Limits::default(),
        };
        let mut agents = AgentTable::new();
        #[allow(clippy::unwrap_used)] // unit tests only: one agent, a non-blank name
        agents.insert(channel).unwrap();
        ExtensionSender {
            agents,
            config,
            live: Arc::new(LiveCounter::default()),
        }
    }

    /// The settings in use.
    pub fn config(&self) -> &ExtensionConfig {
        &self.config
    }

    /// Subscription tasks still running (each open or closing subscription counts once until
    /// its task has exited).
    pub fn live_subscriptions(&self) -> usize {
        self.live.0.load(Ordering::SeqCst)
    }

    /// Checks `agent` and `content` for the operation of `uri` and builds the request: a fresh
    /// context id, the content unchanged as a `ROLE_USER` message, the extension activated in
    /// `message.extensions` and the `A2A-Extensions` header.
    pub(crate) fn prepare(
        &self,
        agent: &str,
        content: &MessageContent,
        uri: &str,
    ) -> Result<Prepared, Failure> {
        content.check_sendable()?;
        let channel = self.agents.get(agent)?;
        let declared: Vec<DeclaredExtension<'_>> = channel
            .declared
            .iter()
            .map(|d| DeclaredExtension {
                uri: &d.uri,
                required: d.required,
            })
            .collect();
        let view = ContentExtensions::new(&content.extensions, content.metadata.as_ref());
        let plan = a2at::activate(&declared, view, Some(uri))
            .map_err(|e| activation_failure(e, agent).with_detail("agent", agent))?;
        let context_id = a2a::new_context_id();
        let message = user_message(content.clone(), &context_id, None, plan.message_extensions);
        Ok(Prepared {
            agent: Arc::clone(channel),
            request: SendMessageRequest {
                message,
                configuration: None,
                metadata: None,
                tenant: None,
            },
            options: CallOptions::default().with_extensions(plan.header),
            context_id,
        })
    }
}
