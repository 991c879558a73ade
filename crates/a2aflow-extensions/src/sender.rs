//! [`ExtensionSender`]: the agents it can reach (each on a channel of its own) and the checks
//! and envelope shared by both operations.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use a2aflow_model::a2a::{self, Message, Role, SendMessageRequest};
use a2aflow_model::{ErrorCode, Failure, MessageContent};
use a2aflow_protocol::{AgentChannel, AgentSource, AgentTable, CallOptions, ChannelFactory};
use a2at::{ActivationError, ContentExtensions, DeclaredExtension};

use crate::config::ExtensionConfig;

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
        if !a2at::declares(&declared, uri) {
            return Err(Failure::new(
                ErrorCode::A2aExtensionNotSupported,
                format!("Agent {agent} does not declare {uri}"),
            )
            .with_detail("agent", agent)
            .with_detail("uri", uri));
        }
        let view = ContentExtensions::new(&content.extensions, content.metadata.as_ref());
        a2at::require_use(&declared, view, uri).map_err(|e| {
            Failure::new(ErrorCode::ConfigInvalid, e.to_string()).with_detail("uri", uri)
        })?;
        let plan = a2at::plan_extensions(&declared, view).map_err(|e| match e {
            ActivationError::RequiredNotActivated { uri } => Failure::new(
                ErrorCode::A2aExtensionSupportRequired,
                format!("Required extension not activated: {uri}"),
            )
            .with_detail("uri", uri),
            other => Failure::new(ErrorCode::ConfigInvalid, other.to_string()),
        })?;
        let context_id = a2a::new_context_id();
        let message = Message {
            message_id: a2a::new_message_id(),
            context_id: Some(context_id.clone()),
            task_id: None,
            role: Role::User,
            parts: content.parts.clone(),
            metadata: content
                .metadata
                .as_ref()
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
            extensions: Some(plan.message_extensions),
            reference_task_ids: None,
        };
        let header: Vec<String> = plan
            .header
            .as_deref()
            .map(|h| h.split(',').map(str::to_owned).collect())
            .unwrap_or_default();
        Ok(Prepared {
            agent: Arc::clone(channel),
            request: SendMessageRequest {
                message,
                configuration: None,
                metadata: None,
                tenant: None,
            },
            options: CallOptions::default().with_extensions(header),
            context_id,
        })
    }
}
