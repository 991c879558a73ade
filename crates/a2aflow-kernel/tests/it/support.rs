//! Shared test support: workflow builders, a scriptable host, an event recorder.

use a2aflow_kernel::{CallbackError, ControlPoint, EventCallback, RunOptions};
use a2aflow_model::{
    BusinessFailure, ContextFrom, Edge, Event, EventKind, MessageContent, NegotiationReply,
    NegotiationRequest, Output, RouteDecision, RouteRequest, Step, StepType, Subtask, TaskRequest,
    TaskResult, Workflow,
};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub fn edge(target: &str, condition: &str) -> Edge {
    Edge {
        step: target.into(),
        condition: condition.into(),
    }
}

pub fn sub(agent: &str, description: &str) -> Subtask {
    Subtask {
        agent: agent.into(),
        skill: "skill".into(),
        description: description.into(),
        workflow: None,
        retry: None,
        timeout: None,
    }
}

/// A step with one subtask per agent (description = "<step> task") and unconditional edges.
pub fn step(name: &str, agents: &[&str], next: &[&str]) -> Step {
    Step {
        name: name.into(),
        subtasks: agents
            .iter()
            .map(|a| sub(a, &format!("{name} task")))
            .collect(),
        next: next.iter().map(|t| edge(t, "")).collect(),
        ..Default::default()
    }
}

pub fn typed(mut s: Step, t: StepType) -> Step {
    s.step_type = t;
    s
}

pub fn ctx(mut s: Step, c: ContextFrom) -> Step {
    s.context_from = c;
    s
}

pub fn cond(mut s: Step, edges: &[(&str, &str)]) -> Step {
    s.next = edges.iter().map(|(t, c)| edge(t, c)).collect();
    s
}

pub fn wf(steps: Vec<Step>) -> Workflow {
    Workflow {
        id: "wf".into(),
        name: "test workflow".into(),
        steps,
        ..Default::default()
    }
}

/// How the host answers one route request.
#[derive(Clone, Debug)]
pub enum Route {
    Allow,
    Deny(&'static str),
    Fail(&'static str),
    Hang,
    Panic,
    Missing,
}

/// A scriptable host. `on_task` returns the description as text unless scripted.
#[derive(Default)]
pub struct Host {
    pub task_fail: HashMap<String, CallbackError>,
    pub task_panic: Vec<String>,
    pub task_delay: HashMap<String, Duration>,
    pub task_hang: Vec<String>,
    pub self_outputs: HashMap<String, Vec<Output>>,
    pub self_missing: bool,
    pub routes: HashMap<String, Route>,
    pub route_default: Option<Route>,
    pub route_barrier: Option<Arc<tokio::sync::Barrier>>,
    pub negotiation: Option<NegotiationReply>,
    pub negotiation_delay: Duration,
    pub task_calls: Mutex<Vec<TaskRequest>>,
    pub self_calls: Mutex<Vec<TaskRequest>>,
    pub route_calls: Mutex<Vec<RouteRequest>>,
    pub negotiation_calls: Mutex<Vec<NegotiationRequest>>,
}

impl Host {
    pub fn task_calls(&self) -> Vec<TaskRequest> {
        self.task_calls.lock().unwrap().clone()
    }
    /// The `on_task` request for `step`; panics if there was none.
    pub fn task_call(&self, step: &str) -> TaskRequest {
        self.task_calls()
            .into_iter()
            .find(|t| t.step_name == step)
            .unwrap_or_else(|| panic!("no on_task call for step {step}"))
    }
    pub fn self_calls(&self) -> Vec<TaskRequest> {
        self.self_calls.lock().unwrap().clone()
    }
    pub fn route_calls(&self) -> Vec<RouteRequest> {
        self.route_calls.lock().unwrap().clone()
    }
}

#[async_trait]
impl ControlPoint for Host {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        self.task_calls.lock().unwrap().push(request.clone());
        if let Some(d) = self.task_delay.get(request.agent.as_str()) {
            tokio::time::sleep(*d).await;
        }
        if self.task_hang.iter().any(|a| *a == request.agent) {
            std::future::pending::<()>().await;
        }
        if self.task_panic.iter().any(|a| *a == request.agent) {
            panic!("host bug for {}", request.agent);
        }
        if let Some(e) = self.task_fail.get(request.agent.as_str()) {
            return Err(e.clone());
        }
        Ok(MessageContent::text(request.description.clone()))
    }

    async fn on_self_task(&self, request: TaskRequest) -> Result<TaskResult, CallbackError> {
        self.self_calls.lock().unwrap().push(request.clone());
        if self.self_missing {
            return Err(CallbackError::Missing("no self task".into()));
        }
        Ok(TaskResult {
            outputs: self
                .self_outputs
                .get(request.step_name.as_str())
                .cloned()
                .unwrap_or_else(|| vec![Output::text(format!("{} done", request.step_name))]),
        })
    }

    async fn on_route(&self, request: RouteRequest) -> Result<RouteDecision, CallbackError> {
        self.route_calls.lock().unwrap().push(request.clone());
        if let Some(b) = &self.route_barrier {
            b.wait().await;
        }
        let r = self
            .routes
            .get(&request.target_step)
            .or(self.route_default.as_ref())
            .cloned()
            .unwrap_or(Route::Missing);
        match r {
            Route::Allow => Ok(RouteDecision::allow("ok")),
            Route::Deny(reason) => Ok(RouteDecision::deny(reason)),
            Route::Fail(msg) => Err(CallbackError::Other(msg.into())),
            Route::Hang => {
                std::future::pending::<()>().await;
                unreachable!()
            }
            Route::Panic => panic!("route bug"),
            Route::Missing => Err(CallbackError::Missing(format!(
                "no decision for {} -> {}",
                request.source_step, request.target_step
            ))),
        }
    }

    async fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> Result<NegotiationReply, CallbackError> {
        self.negotiation_calls.lock().unwrap().push(request.clone());
        if !self.negotiation_delay.is_zero() {
            tokio::time::sleep(self.negotiation_delay).await;
        }
        self.negotiation
            .clone()
            .ok_or_else(|| CallbackError::Missing("on_negotiation handler is required".into()))
    }
}

pub fn business(code: &str, message: &str) -> CallbackError {
    CallbackError::Business(BusinessFailure {
        code: code.into(),
        message: message.into(),
        details: Default::default(),
    })
}

/// Collects events through `RunOptions::on_event`.
#[derive(Clone, Default)]
pub struct Recorder(pub Arc<Mutex<Vec<Event>>>);

impl Recorder {
    pub fn callback(&self) -> EventCallback {
        let inner = self.0.clone();
        Arc::new(move |e: &Event| inner.lock().unwrap().push(e.clone()))
    }
    pub fn options(&self) -> RunOptions {
        RunOptions {
            on_event: Some(self.callback()),
            execution_id: Some("exec".into()),
            ..Default::default()
        }
    }
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }
    /// The events without their times (two runs differ only there), each checked to have one.
    pub fn untimed(&self) -> Vec<Event> {
        let mut events = self.events();
        for e in &mut events {
            assert!(e.time.take().is_some(), "event {} has no time", e.seq);
        }
        events
    }
    pub fn kinds(&self) -> Vec<EventKind> {
        self.events().iter().map(|e| e.kind).collect()
    }
    pub fn count(&self, kind: EventKind) -> usize {
        self.events().iter().filter(|e| e.kind == kind).count()
    }
    /// Position of the first event of `kind` for `step` (or any step when None).
    pub fn pos(&self, kind: EventKind, step: Option<&str>) -> Option<usize> {
        self.events()
            .iter()
            .position(|e| e.kind == kind && (step.is_none() || e.step.as_deref() == step))
    }
}

pub fn ran(result: &a2aflow_model::ExecutionResult) -> Vec<String> {
    result
        .steps
        .iter()
        .map(|s| s.step_name.to_string())
        .collect()
}

pub fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Runs `w` against `host` with a fresh in-memory client and recorder, and returns all three.
pub async fn go_fresh(
    w: Workflow,
    host: &Arc<Host>,
) -> (
    a2aflow_model::ExecutionResult,
    Arc<a2aflow_kernel::InMemoryClient>,
    Recorder,
) {
    let client = Arc::new(a2aflow_kernel::InMemoryClient::new());
    let rec = Recorder::default();
    let r = go(w, host, &client, &rec).await;
    (r, client, rec)
}

/// A host that answers every route decision with `route`.
pub fn routing_host(route: Route) -> Arc<Host> {
    Arc::new(Host {
        route_default: Some(route),
        ..Default::default()
    })
}

/// A host that answers the route requests to the named targets as listed and every other one
/// with `default` (none: the callback is missing).
pub fn routes_host(default: Option<Route>, routes: &[(&str, Route)]) -> Arc<Host> {
    Arc::new(Host {
        route_default: default,
        routes: routes
            .iter()
            .map(|(target, route)| ((*target).to_owned(), route.clone()))
            .collect(),
        ..Default::default()
    })
}

pub async fn go(
    w: Workflow,
    host: &Arc<Host>,
    client: &Arc<a2aflow_kernel::InMemoryClient>,
    rec: &Recorder,
) -> a2aflow_model::ExecutionResult {
    go_with(w, host, client, rec.options()).await
}

pub async fn go_with(
    w: Workflow,
    host: &Arc<Host>,
    client: &Arc<a2aflow_kernel::InMemoryClient>,
    options: RunOptions,
) -> a2aflow_model::ExecutionResult {
    a2aflow_kernel::run(
        w,
        a2aflow_kernel::RunInput {
            runtime_intent: Some("intent".into()),
        },
        host.clone(),
        client.clone(),
        options,
    )
    .await
}

pub fn delayed(ms: u64) -> a2aflow_kernel::AgentScript {
    a2aflow_kernel::AgentScript::reply(a2aflow_kernel::ScriptedReply::Echo)
        .after(Duration::from_millis(ms))
}

pub fn failing(code: &str, ms: u64) -> a2aflow_kernel::AgentScript {
    a2aflow_kernel::AgentScript::reply(a2aflow_kernel::ScriptedReply::Fail(
        a2aflow_model::Failure::coded(code, format!("{code} from agent")),
    ))
    .after(Duration::from_millis(ms))
}

/// What a test store does differently from the store it wraps: the driver's appends, `load` and
/// `renew` may be taken over; by default each goes straight to [`StoreHooks::store`]. Every other
/// required call of a [`Hooked`] store goes to that store unchanged; the trait's provided calls
/// (`heartbeat`, `append`, …) keep their defaults, built on the calls above, hooks included.
#[async_trait]
pub trait StoreHooks: Send + Sync {
    /// The store every call not taken over goes to.
    fn store(&self) -> &dyn a2aflow_kernel::RunStore;

    async fn append_driven(
        &self,
        lease: &a2aflow_kernel::journal::Lease,
        records: Vec<a2aflow_kernel::journal::JournalRecord>,
    ) -> Result<std::ops::Range<u64>, a2aflow_kernel::StoreError> {
        self.store().append_driven(lease, records).await
    }

    async fn load(
        &self,
        id: &str,
    ) -> Result<a2aflow_kernel::journal::RunJournal, a2aflow_kernel::StoreError> {
        self.store().load(id).await
    }

    async fn renew(
        &self,
        lease: &a2aflow_kernel::journal::Lease,
    ) -> Result<a2aflow_kernel::journal::Lease, a2aflow_kernel::StoreError> {
        self.store().renew(lease).await
    }
}

/// A test store: its hooks' store, with what the hooks take over ([`StoreHooks`]). Dereferences
/// to the hooks, so a test reads their counters as fields of the store.
pub struct Hooked<H>(pub H);

impl<H> std::ops::Deref for Hooked<H> {
    type Target = H;
    fn deref(&self) -> &H {
        &self.0
    }
}

mod hooked {
    use super::{Hooked, StoreHooks};
    use a2aflow_kernel::journal::{
        JournalRecord, Lease, RunFilter, RunJournal, RunStarted, RunSummary,
    };
    use a2aflow_kernel::{RunStore, StoreError};
    use a2aflow_model::Event;
    use async_trait::async_trait;
    use std::ops::Range;

    #[async_trait]
    impl<H: StoreHooks> RunStore for Hooked<H> {
        async fn create_run(&self, run: RunStarted) -> Result<(), StoreError> {
            self.0.store().create_run(run).await
        }
        async fn append_batch(
            &self,
            id: &str,
            records: Vec<JournalRecord>,
        ) -> Result<Range<u64>, StoreError> {
            self.0.store().append_batch(id, records).await
        }
        async fn append_driven(
            &self,
            lease: &Lease,
            records: Vec<JournalRecord>,
        ) -> Result<Range<u64>, StoreError> {
            self.0.append_driven(lease, records).await
        }
        async fn record_driven_events(
            &self,
            lease: &Lease,
            events: Vec<Event>,
        ) -> Result<(), StoreError> {
            self.0.store().record_driven_events(lease, events).await
        }
        async fn load(&self, id: &str) -> Result<RunJournal, StoreError> {
            self.0.load(id).await
        }
        async fn list(&self, filter: RunFilter) -> Result<Vec<RunSummary>, StoreError> {
            self.0.store().list(filter).await
        }
        async fn record_events(&self, id: &str, events: Vec<Event>) -> Result<(), StoreError> {
            self.0.store().record_events(id, events).await
        }
        async fn events(
            &self,
            id: &str,
            after: Option<u64>,
            limit: usize,
        ) -> Result<Vec<Event>, StoreError> {
            self.0.store().events(id, after, limit).await
        }
        async fn lease(&self, id: &str) -> Result<Option<Lease>, StoreError> {
            self.0.store().lease(id).await
        }
        async fn acquire(&self, id: &str, owner: &str) -> Result<Lease, StoreError> {
            self.0.store().acquire(id, owner).await
        }
        async fn renew(&self, lease: &Lease) -> Result<Lease, StoreError> {
            self.0.renew(lease).await
        }
        async fn release(&self, lease: Lease) -> Result<(), StoreError> {
            self.0.store().release(lease).await
        }
    }
}
