//! [`InMemoryClient`]: a scriptable [`RemoteClient`] for tests and benchmarks. No network: each
//! agent name maps to an [`AgentScript`] (a delay on tokio's clock, so paused-clock tests work,
//! and a [`ScriptedReply`]). It records every dispatch and every content it was asked to send,
//! and counts the cancellations it observed (an ANY_SUCCESS loser, a cancelled run, a deadline).
//!
//! In a durable run (the dispatch's journal is enabled) it journals each send before it counts
//! as made, reports the remote task id, and keeps the context id of every send: a resumed run
//! re-attaches to such a task ([`RemoteClient::reattach`]) and gets the agent's answer without a
//! second send; a context it never received is resent only when the request allows it.

use crate::client::{
    AttachRequest, DispatchJournal, DispatchRequest, RemoteClient, SendIntent, TaskFailure,
    TaskOutcome,
};
use crate::events::EventEmitter;
use a2aflow_model::a2a::{Artifact, Message, Part, Role, TaskState};
use a2aflow_model::event_data::{LocalRequestData, LocalResponseData};
use a2aflow_model::{
    ClientEvent, ErrorCode, Failure, Gate, MessageContent, NegotiationExchange, NegotiationReply,
    NegotiationRequest, Output, ReceivedKind, ReceivedMessage,
};
use async_trait::async_trait;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

/// How a scripted agent answers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ScriptedReply {
    /// Succeed with one output holding the parts of the content it was sent.
    Echo,
    /// Succeed with these outputs (the evidence is a COMPLETED task carrying them as artifacts).
    Succeed(Vec<Output>),
    /// Succeed with this evidence; outputs are projected from it.
    Respond(Vec<ReceivedMessage>),
    /// Fail with this failure (code kept).
    Fail(Failure),
    /// Ask the host through the negotiation hook `rounds` times (INPUT_REQUIRED with a proposal),
    /// then answer with `then`. A `Stop` reply fails the task with the host's code.
    Negotiate {
        /// How many proposals to make.
        rounds: u32,
        /// The answer after the last accepted round.
        then: Box<ScriptedReply>,
    },
    /// Stop at `gate` (INPUT_REQUIRED with nothing to negotiate, or AUTH_REQUIRED: the gate's
    /// failure, with a status message as evidence); a follow-up on the task (a dispatch that
    /// `continues` it) answers with `then`, which may be another gate.
    Gate {
        /// Which gate.
        gate: Gate,
        /// The answer to the follow-up.
        then: Box<ScriptedReply>,
    },
}

/// One agent's script.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentScript {
    /// How long the agent takes (tokio time) before it answers.
    pub delay: Duration,
    /// The answer.
    pub reply: ScriptedReply,
}

impl AgentScript {
    /// Answers at once with `reply`.
    pub fn reply(reply: ScriptedReply) -> Self {
        AgentScript {
            delay: Duration::ZERO,
            reply,
        }
    }

    /// The same script after `delay`.
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// One content the client was asked to send (the initial send or a negotiation reply).
#[derive(Debug, Clone, PartialEq)]
pub struct SentContent {
    /// The agent.
    pub agent: String,
    /// The logical task.
    pub local_task_id: String,
    /// The content, exactly as received from the kernel / host.
    pub content: MessageContent,
}

#[derive(Debug, Default)]
struct Stats {
    /// Per agent (a `BTreeMap`: a dispatch's lookup compares a few names instead of hashing
    /// one with SipHash).
    dispatches: BTreeMap<String, usize>,
    cancellations: BTreeMap<String, usize>,
    sent: Vec<SentContent>,
    exchanges: Vec<NegotiationExchange>,
    /// Initial (business) sends per local task id.
    initial_sends: HashMap<String, usize>,
    /// Durable runs: the context ids the agents received, with the negotiation replies sent in
    /// each.
    contexts: HashMap<String, u32>,
    reattached: usize,
    remote_cancels: Vec<(String, String)>,
    /// Follow-ups sent, in order.
    follow_ups: Vec<FollowUpSent>,
}

/// A follow-up the client was asked to send: a dispatch that continues a remote task.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FollowUpSent {
    /// The logical task.
    pub local_task_id: String,
    /// The context id the follow-up named.
    pub context_id: Option<String>,
    /// The remote task it continues.
    pub continues: String,
    /// The content.
    pub content: MessageContent,
}

/// Whether a script runs for a fresh send or for a task found again after a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Sent,
    Attached,
}

/// A scriptable in-memory remote client (tests, benchmarks, demos without a network).
///
/// Agents without a script use the default script ([`ScriptedReply::Echo`] at once, unless
/// [`InMemoryClient::with_default`] changed it).
#[derive(Debug)]
pub struct InMemoryClient {
    scripts: HashMap<String, AgentScript>,
    default: Option<AgentScript>,
    record: bool,
    stats: Mutex<Stats>,
}

impl Default for InMemoryClient {
    fn default() -> Self {
        Self::new()
    }
}

impl InMemoryClient {
    /// Every agent echoes at once; dispatches are recorded.
    pub fn new() -> Self {
        InMemoryClient {
            scripts: HashMap::new(),
            default: Some(AgentScript::reply(ScriptedReply::Echo)),
            record: true,
            stats: Mutex::new(Stats::default()),
        }
    }

    /// Scripts one agent.
    pub fn agent(mut self, name: impl Into<String>, script: AgentScript) -> Self {
        self.scripts.insert(name.into(), script);
        self
    }

    /// The script of agents without their own; `None` fails them with `workflow.unknown_agent`.
    pub fn with_default(mut self, script: Option<AgentScript>) -> Self {
        self.default = script;
        self
    }

    /// Turns recording of sent contents off (benchmarks); counters stay on.
    pub fn recording(mut self, on: bool) -> Self {
        self.record = on;
        self
    }

    fn stats(&self) -> std::sync::MutexGuard<'_, Stats> {
        // A poisoned lock only means a test panicked mid-update; the counters stay usable.
        self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many tasks were dispatched to `agent`.
    pub fn dispatches(&self, agent: &str) -> usize {
        self.stats().dispatches.get(agent).copied().unwrap_or(0)
    }

    /// How many tasks were dispatched in all.
    pub fn total_dispatches(&self) -> usize {
        self.stats().dispatches.values().sum()
    }

    /// How many of `agent`'s tasks saw their cancellation token fire while still running.
    pub fn cancellations(&self, agent: &str) -> usize {
        self.stats().cancellations.get(agent).copied().unwrap_or(0)
    }

    /// Every content sent, in order (initial sends and negotiation replies).
    pub fn sent(&self) -> Vec<SentContent> {
        self.stats().sent.clone()
    }

    /// The agents sent to, in order of the initial sends.
    pub fn sent_agents(&self) -> Vec<String> {
        let stats = self.stats();
        let mut seen = std::collections::HashSet::new();
        stats
            .sent
            .iter()
            .filter(|s| seen.insert(s.local_task_id.clone()))
            .map(|s| s.agent.clone())
            .collect()
    }

    /// How many initial (business) sends the logical task `local_task_id` got (recorded
    /// unless [`InMemoryClient::recording`] is off).
    pub fn business_sends(&self, local_task_id: &str) -> usize {
        self.stats()
            .initial_sends
            .get(local_task_id)
            .copied()
            .unwrap_or(0)
    }

    /// How many journaled tasks a resumed run found again.
    pub fn reattached(&self) -> usize {
        self.stats().reattached
    }

    /// Every remote cancel sent through [`RemoteClient::cancel_remote`]: (agent, remote task id).
    pub fn remote_cancels(&self) -> Vec<(String, String)> {
        self.stats().remote_cancels.clone()
    }

    /// Every follow-up sent (a dispatch that continued a remote task, e.g. a gate's answer).
    pub fn follow_ups(&self) -> Vec<FollowUpSent> {
        self.stats().follow_ups.clone()
    }

    /// How many follow-ups the logical task `local_task_id` got.
    fn follow_ups_of(&self, local_task_id: &str) -> usize {
        let stats = self.stats();
        stats
            .follow_ups
            .iter()
            .filter(|f| f.local_task_id == local_task_id)
            .count()
    }

    /// Every completed negotiation exchange, in order.
    pub fn exchanges(&self) -> Vec<NegotiationExchange> {
        self.stats().exchanges.clone()
    }

    fn note_initial(&self, agent: &str, task: &str, content: &MessageContent) {
        if self.record {
            *self
                .stats()
                .initial_sends
                .entry(task.to_owned())
                .or_default() += 1;
        }
        self.note_sent(agent, task, content);
    }

    fn note_follow_up(&self, request: &DispatchRequest<'_>, continues: &str) {
        self.stats().follow_ups.push(FollowUpSent {
            local_task_id: request.local_task_id.to_owned(),
            context_id: request.context_id.map(str::to_owned),
            continues: continues.to_owned(),
            content: request.content.clone(),
        });
        self.note_sent(request.agent, request.local_task_id, &request.content);
    }

    fn note_sent(&self, agent: &str, task: &str, content: &MessageContent) {
        if self.record {
            self.stats().sent.push(SentContent {
                agent: agent.to_owned(),
                local_task_id: task.to_owned(),
                content: content.clone(),
            });
        }
    }
}

fn message(id: String, text: String) -> Message {
    message_of(id, vec![Part::text(text)])
}

/// An agent's message with these parts.
fn message_of(id: String, parts: Vec<Part>) -> Message {
    Message {
        message_id: id,
        context_id: None,
        task_id: None,
        role: Role::Agent,
        parts,
        metadata: None,
        extensions: None,
        reference_task_ids: None,
    }
}

#[async_trait]
impl RemoteClient for InMemoryClient {
    async fn dispatch(&self, mut request: DispatchRequest<'_>) -> Result<TaskOutcome, TaskFailure> {
        let agent = request.agent;
        let task_id = request.local_task_id;
        {
            let mut stats = self.stats();
            match stats.dispatches.get_mut(agent) {
                Some(n) => *n += 1,
                None => {
                    stats.dispatches.insert(agent.to_owned(), 1);
                }
            }
        }
        let follow_up = request.continues.map(|_| self.follow_ups_of(task_id) + 1);
        if request.journal.is_enabled() {
            let context_id = context_of(&request);
            let message_id = match follow_up {
                Some(n) => format!("{task_id}-follow-up-{n}"),
                None => [task_id, "-msg-0"].concat(),
            };
            let intent = SendIntent {
                context_id: &context_id,
                message_id: &message_id,
                remote_task_id: request.continues,
                content: &request.content,
            };
            request
                .journal
                .before_send(intent)
                .await
                .map_err(TaskFailure::new)?;
            last_check(request.journal).map_err(TaskFailure::new)?;
            self.stats().contexts.entry(context_id).or_insert(0);
        }
        match request.continues {
            Some(continues) => self.note_follow_up(&request, continues),
            None => self.note_initial(agent, task_id, &request.content),
        }
        // The request is the dispatch's own (`mut`): bound again, it took its room in this
        // future twice.
        self.play(&mut request, Mode::Sent).await
    }

    async fn reattach(&self, request: AttachRequest<'_>) -> Result<TaskOutcome, TaskFailure> {
        let known = self.stats().contexts.contains_key(request.context_id);
        if known {
            self.stats().reattached += 1;
            let mut dispatch = request.dispatch;
            return self.play(&mut dispatch, Mode::Attached).await;
        }
        if request.resend {
            return self.dispatch(request.dispatch).await;
        }
        Err(request.outcome_unknown("the agent holds no task for its context id"))
    }

    async fn cancel_remote(
        &self,
        agent: &str,
        remote_task_id: &str,
        _deadline: tokio::time::Instant,
    ) -> Result<(), Failure> {
        self.stats()
            .remote_cancels
            .push((agent.to_owned(), remote_task_id.to_owned()));
        Ok(())
    }
}

/// What is left of emitting `event` once a callback sink, when events go straight to one, was
/// handed it: nothing, or [`EventEmitter::emit`] in a boxed future to await. A dispatch's future
/// so keeps no room for the event (248 B) and its delivery across its waits.
fn emit(events: &EventEmitter, event: ClientEvent) -> Option<impl Future<Output = ()> + Send + '_> {
    let event = events.emit_at_once(event)?;
    Some(Box::pin(events.emit(event)))
}

/// The failure of a task stopped at `gate`, as the engine client reports it.
fn gate_failure(gate: Gate) -> Failure {
    Failure::new(gate.code(), "the agent waits at a gate").with_gate(gate)
}

/// The task at `gate`, with its status message: the evidence of a gate.
fn gate_evidence(gate: Gate, remote_id: &str, context_id: &str) -> ReceivedMessage {
    let (state, text) = match gate {
        Gate::AuthRequired => (TaskState::AuthRequired, "sign in to continue"),
        _ => (TaskState::InputRequired, "need more input"),
    };
    ReceivedMessage {
        kind: ReceivedKind::Task,
        task_id: Some(remote_id.to_owned()),
        context_id: Some(context_id.to_owned()),
        state: Some(state),
        message: Some(message(format!("{remote_id}-gate"), text.to_owned())),
        task_metadata: None,
        artifacts: Vec::new(),
    }
}

/// The remote task id the in-memory agents give the logical task `task_id`.
fn remote_id_of(task_id: &str) -> String {
    ["task-", task_id].concat()
}

/// The context id of a dispatch: the one it names, else the one the in-memory agents mint for
/// its logical task.
fn context_of(request: &DispatchRequest<'_>) -> String {
    request
        .context_id
        .map_or_else(|| ["ctx-", request.local_task_id].concat(), str::to_owned)
}

impl InMemoryClient {
    /// Plays the agent's script for a task that was sent (or found again: `Mode::Attached`,
    /// where the negotiation replies already sent are not sent again).
    ///
    /// The request is borrowed (its parts are taken for an echo's reply), so this future does not
    /// hold a second copy of it beside its caller's; the waits an echo at once does not make (the
    /// delay, the negotiation rounds) are boxed futures of their own. An echo's dispatch then
    /// stays one allocation under 1 KiB, which glibc serves from its thread cache.
    async fn play(
        &self,
        request: &mut DispatchRequest<'_>,
        mode: Mode,
    ) -> Result<TaskOutcome, TaskFailure> {
        let agent = request.agent;
        let task_id = request.local_task_id;
        let context_id = context_of(request);
        let with_ids = |failure: Failure, received: Vec<ReceivedMessage>| TaskFailure {
            failure,
            context_id: Some(context_id.clone()),
            remote_task_id: Some(remote_id_of(task_id)),
            received_messages: received,
        };
        if request.events.is_enabled() {
            let event = LocalRequestData {
                agent: agent.to_owned(),
                content: request.content.clone(),
            };
            if let Some(delivery) = emit(&request.events, event.into()) {
                delivery.await;
            }
        }
        // The script is borrowed (a copy of it, and of its reply, took their room in this future
        // across every wait); what a reply hands over is copied where it is used.
        let Some(script) = self.scripts.get(agent).or(self.default.as_ref()) else {
            return Err(TaskFailure::new(Failure::new(
                ErrorCode::WorkflowUnknownAgent,
                format!("no script for agent '{agent}'"),
            )));
        };
        // An echo answers with a bare message: no remote task to name (made only when used).
        let remote_id = match script.reply {
            ScriptedReply::Echo => String::new(),
            _ => remote_id_of(task_id),
        };
        if request.journal.is_enabled() && script.reply != ScriptedReply::Echo {
            // The agent created its task at once (a bare Message answers an Echo).
            request
                .journal
                .remote_task_known(&context_id, &remote_id)
                .await;
        }
        if (!script.delay.is_zero() || request.cancel.is_cancelled())
            && let Err(failure) = Box::pin(self.wait(request, script.delay)).await
        {
            return Err(with_ids(failure, Vec::new()));
        }
        let mut reply = &script.reply;
        // The gates this task's follow-ups answered already (a task found again keeps them).
        let mut answered = self.follow_ups_of(task_id);
        while let ScriptedReply::Gate { gate, then } = reply {
            if answered == 0 {
                let evidence = gate_evidence(*gate, &remote_id, &context_id);
                return Err(with_ids(gate_failure(*gate), vec![evidence]));
            }
            answered -= 1;
            reply = then;
        }
        let mut received = Vec::new();
        let negotiated_then: Box<ScriptedReply>;
        if let ScriptedReply::Negotiate { .. } = reply {
            let negotiated = self.negotiate(
                request,
                mode,
                reply.clone(),
                &context_id,
                &remote_id,
                &mut received,
            );
            negotiated_then = match Box::pin(negotiated).await {
                Ok(then) => Box::new(then),
                Err(failure) => return Err(with_ids(failure, received)),
            };
            reply = &negotiated_then;
        }
        let result = match reply {
            ScriptedReply::Echo => {
                let outputs = vec![Output {
                    parts: request.content.parts.clone(),
                    ..Default::default()
                }];
                // `<remote id>-reply`, written at once.
                let m = message_of(
                    ["task-", task_id, "-reply"].concat(),
                    std::mem::take(&mut request.content.parts),
                );
                // One message (a first push would reserve room for four: 1.4 KiB).
                received.reserve_exact(1);
                received.push(ReceivedMessage {
                    kind: ReceivedKind::Message,
                    task_id: None,
                    context_id: Some(context_id.clone()),
                    state: None,
                    message: Some(m),
                    task_metadata: None,
                    artifacts: Vec::new(),
                });
                Ok(TaskOutcome {
                    // The last use of the context id: moved, not copied.
                    context_id: Some(context_id),
                    remote_task_id: None,
                    outputs,
                    received_messages: received,
                })
            }
            ScriptedReply::Succeed(outputs) => {
                let artifacts = outputs
                    .iter()
                    .enumerate()
                    .map(|(i, o)| Artifact {
                        artifact_id: o
                            .artifact_id
                            .clone()
                            .unwrap_or_else(|| format!("artifact-{i}")),
                        name: o.name.clone(),
                        description: None,
                        parts: o.parts.clone(),
                        metadata: o.metadata.as_ref().map(|m| m.clone().into_iter().collect()),
                        extensions: None,
                    })
                    .collect();
                received.push(ReceivedMessage {
                    kind: ReceivedKind::Task,
                    task_id: Some(remote_id.clone()),
                    context_id: Some(context_id.clone()),
                    state: Some(TaskState::Completed),
                    message: None,
                    task_metadata: None,
                    artifacts,
                });
                Ok(TaskOutcome {
                    context_id: Some(context_id.clone()),
                    remote_task_id: Some(remote_id.clone()),
                    outputs: outputs.clone(),
                    received_messages: received,
                })
            }
            ScriptedReply::Respond(evidence) => {
                received.extend(evidence.iter().cloned());
                Ok(TaskOutcome::from_evidence(
                    Some(context_id.clone()),
                    Some(remote_id.clone()),
                    received,
                ))
            }
            ScriptedReply::Fail(f) => Err(with_ids(f.clone(), received)),
            ScriptedReply::Negotiate { .. } | ScriptedReply::Gate { .. } => Err(with_ids(
                Failure::new(ErrorCode::WorkflowExecutionFailed, "unreachable script"),
                received,
            )),
        };
        if request.events.is_enabled() {
            let n = match &result {
                Ok(o) => o.received_messages.len(),
                Err(f) => f.received_messages.len(),
            };
            let event = LocalResponseData {
                agent: agent.to_owned(),
                ok: result.is_ok(),
                received_messages: n,
            };
            if let Some(delivery) = emit(&request.events, event.into()) {
                delivery.await;
            }
        }
        result
    }

    /// Waits out the agent's delay, bounded by the task's cancellation and deadline.
    async fn wait(&self, request: &DispatchRequest<'_>, delay: Duration) -> Result<(), Failure> {
        tokio::select! {
            biased;
            _ = request.cancel.cancelled() => {
                *self.stats().cancellations.entry(request.agent.to_owned()).or_default() += 1;
                Err(Failure::new(ErrorCode::WorkflowCancelled, "cancelled"))
            }
            _ = tokio::time::sleep_until(request.deadline) => {
                Err(Failure::new(ErrorCode::WorkflowTimeout, "deadline passed"))
            }
            _ = tokio::time::sleep(delay) => Ok(()),
        }
    }

    /// Plays the negotiation rounds of `reply` (and of the negotiations it ends in), each
    /// proposal kept in `received`; the reply after the last accepted round.
    async fn negotiate(
        &self,
        request: &DispatchRequest<'_>,
        mode: Mode,
        mut reply: ScriptedReply,
        context_id: &str,
        remote_id: &str,
        received: &mut Vec<ReceivedMessage>,
    ) -> Result<ScriptedReply, Failure> {
        let mut previous: Vec<NegotiationExchange> = Vec::new();
        while let ScriptedReply::Negotiate { rounds, then } = reply {
            for round in 1..=rounds {
                let proposal = ReceivedMessage {
                    kind: ReceivedKind::Task,
                    task_id: Some(remote_id.to_owned()),
                    context_id: Some(context_id.to_owned()),
                    state: Some(TaskState::InputRequired),
                    message: Some(message(
                        format!("{remote_id}-proposal-{round}"),
                        format!("proposal {round}"),
                    )),
                    task_metadata: None,
                    artifacts: Vec::new(),
                };
                received.push(proposal.clone());
                let answer = request
                    .negotiation
                    .negotiate(NegotiationRequest {
                        task: request.task.clone(),
                        original: request.content.clone(),
                        context_id: context_id.to_owned(),
                        remote_task_id: Some(remote_id.to_owned()),
                        negotiation_context: json!({"round": round, "maxRounds": rounds}),
                        evidence: proposal.clone(),
                        previous_exchanges: previous.clone(),
                        remaining_budget: rounds - round + 1,
                        remaining_ms: 0,
                    })
                    .await;
                match answer {
                    Ok(NegotiationReply::Send { content }) => {
                        self.send_reply(request, mode, round, context_id, remote_id, &content)
                            .await?;
                        let exchange = NegotiationExchange {
                            proposal,
                            reply: content,
                        };
                        self.stats().exchanges.push(exchange.clone());
                        previous.push(exchange);
                    }
                    Ok(NegotiationReply::Stop { code, reason }) => {
                        return Err(Failure::coded(code, reason));
                    }
                    Err(f) => return Err(f),
                }
            }
            reply = *then;
        }
        Ok(reply)
    }

    /// Sends the reply of negotiation round `round` (journaled first in a durable run), unless
    /// a task found again had it sent before the restart.
    async fn send_reply(
        &self,
        request: &DispatchRequest<'_>,
        mode: Mode,
        round: u32,
        context_id: &str,
        remote_id: &str,
        content: &MessageContent,
    ) -> Result<(), Failure> {
        if request.journal.is_enabled() {
            let sent = self.stats().contexts.get(context_id).copied().unwrap_or(0);
            if mode == Mode::Attached && sent >= round {
                return Ok(());
            }
            let message_id = format!("{}-msg-{round}", request.local_task_id);
            let intent = SendIntent {
                context_id,
                message_id: &message_id,
                remote_task_id: Some(remote_id),
                content,
            };
            request.journal.before_send(intent).await?;
            last_check(request.journal)?;
            self.stats().contexts.insert(context_id.to_owned(), round);
        }
        self.note_sent(request.agent, request.local_task_id, content);
        Ok(())
    }
}

/// The journal's last check before a message would be written, as a network client makes it
/// on its connection: a closed check sends nothing (`workflow.cancelled`; the journal has
/// stopped the run with its reason).
fn last_check(journal: &dyn DispatchJournal) -> Result<(), Failure> {
    match journal.send_check() {
        Some(check) if !check() => Err(Failure::new(
            ErrorCode::WorkflowCancelled,
            "the message was withheld at the last moment: the run's journal closed its send check",
        )),
        _ => Ok(()),
    }
}
