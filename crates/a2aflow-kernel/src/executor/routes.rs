//! After a step completed: its outgoing edges evaluated as a set (blank edges at once, the
//! others through concurrent `on_route` calls, all decided before any successor), the
//! `route_decision` events, and the edges resolved — with dead-path elimination for a step that
//! can no longer run.

use super::{Executor, Job, StepState};
use crate::context::RunContext;
use crate::control_point::{CallbackError, ControlPoint};
use crate::durable::{Durable, answer_of, replayed};
use crate::interrupt::{Bounds, Guarded, Interrupt, guard, panicked};
use crate::journal::{CallbackAnswered, RouteKey};
use crate::refill;
use a2aflow_model::event_data::ErrorData;
use a2aflow_model::{
    ErrorCode, EventPayload, Failure, RouteDecision, RouteRequest, UpstreamResult,
};
use std::sync::Arc;
use tokio::task::JoinSet;
use tracing::Instrument;

/// Every decision of a step's edges, or the first edge that has none (with why).
type Decisions = Result<Vec<RouteDecision>, (usize, Failure)>;

/// The decisions, and the interruption that stopped their evaluation, if one did.
type RouteOutcome = (Decisions, Option<Interrupt>);

/// One edge's decision as its `on_route` call came to it.
type Decided = (usize, Guarded<Result<RouteDecision, Failure>>);

impl Executor {
    /// Routes completed step `s` (its result is `result`), unless the run stopped.
    pub(super) async fn route(&mut self, s: usize, result: Arc<UpstreamResult>) {
        if self.stopped {
            return;
        }
        if !self.plan.steps[s].has_conditional {
            self.apply_routes(s, None).await;
            return;
        }
        self.state[s] = StepState::Routing;
        let ctx = self.ctx.clone();
        let span = tracing::info_span!("routes", step = %ctx.step(s).name);
        self.jobs.spawn(
            async move {
                let (result, interrupt) = evaluate_routes(&ctx, s, result).await;
                Job::Routes {
                    step: s,
                    result,
                    interrupt,
                }
            }
            .instrument(span),
        );
    }

    /// The decisions of step `s` are in: its edges resolve, or the run fails (or stops).
    pub(super) async fn on_routes(
        &mut self,
        s: usize,
        result: Decisions,
        interrupt: Option<Interrupt>,
    ) {
        self.state[s] = StepState::Done;
        if let Some(i) = interrupt {
            self.interrupt_run(i);
            return;
        }
        match result {
            Ok(decisions) => {
                if !self.stopped {
                    self.apply_routes(s, Some(decisions)).await;
                }
            }
            Err((e, cause)) => self.route_failed(s, e, cause).await,
        }
    }

    /// Edge `e` of step `s` has no decision (`cause`): `workflow.route_failed`.
    async fn route_failed(&mut self, s: usize, e: usize, cause: Failure) {
        let source = self.name(s).to_owned();
        let target = self.ctx.step(s).next[e].step.as_ref().to_owned();
        let f = Failure::new(
            ErrorCode::WorkflowRouteFailed,
            format!(
                "on_route failed for edge {source} -> {target}: {}",
                cause.message
            ),
        )
        .with_detail("source", source.clone())
        .with_detail("target", target)
        .with_cause(cause);
        self.ctx
            .emit_step(&source, || ErrorData {
                step: Some(source.clone()),
                error: f.message.clone(),
                error_code: f.code.clone(),
                failure: f.clone(),
                steps: None,
            })
            .await;
        self.fail_run(f);
    }

    /// Emits the decisions and resolves the edges. `None` means every edge is unconditional.
    async fn apply_routes(&mut self, s: usize, decisions: Option<Vec<RouteDecision>>) {
        let allowed = |e: usize| decisions.as_ref().is_none_or(|d| d[e].allowed);
        self.emit_decisions(s, decisions.as_deref()).await;
        for e in 0..self.plan.steps[s].out.len() {
            if let Some(t) = self.plan.steps[s].out[e].target {
                self.resolve(t, allowed(e));
            }
        }
    }

    /// One `route_decision` event per edge of step `s`, in declaration order, emitted together
    /// (one time; each written into the strings of the one before when the sink left them).
    async fn emit_decisions(&self, s: usize, decisions: Option<&[RouteDecision]>) {
        if !self.ctx.hub.enabled() {
            return;
        }
        let step = self.ctx.step(s);
        let fill = |e: usize, payload: &mut EventPayload| {
            let (allowed, reason) = match decisions {
                Some(d) => (d[e].allowed, d[e].reason.as_deref()),
                None => (true, Some("unconditional edge")),
            };
            refill::route_decision(payload, &step.name, &step.next[e], allowed, reason);
        };
        self.ctx
            .hub
            .emit_together(&step.name, step.next.len(), fill)
            .await;
    }

    /// Resolves one incoming edge of `t`; a step whose edges all resolved without activation
    /// never runs, and its own outgoing edges resolve as not activated (dead-path elimination).
    fn resolve(&mut self, t: usize, activated: bool) {
        if !self.resolve_edge(t, activated) {
            return;
        }
        // Dead path: only now is a work list needed (a stack, as before: same ready order).
        let mut work: Vec<usize> = self.plan.steps[t]
            .out
            .iter()
            .filter_map(|e| e.target)
            .collect();
        while let Some(x) = work.pop() {
            if self.resolve_edge(x, false) {
                work.extend(self.plan.steps[x].out.iter().filter_map(|e| e.target));
            }
        }
    }

    /// Resolves one incoming edge of `t`; true when `t` became dead (all resolved, none active).
    fn resolve_edge(&mut self, t: usize, activated: bool) -> bool {
        self.unresolved[t] = self.unresolved[t].saturating_sub(1);
        self.activated[t] |= activated;
        if self.unresolved[t] != 0 {
            return false;
        }
        if self.activated[t] {
            self.ready.push_back(t);
            return false;
        }
        self.state[t] = StepState::Skipped;
        true
    }
}

/// Evaluates every outgoing edge of `s` concurrently; all decisions are in before it returns.
async fn evaluate_routes(
    ctx: &Arc<RunContext>,
    s: usize,
    source: Arc<UpstreamResult>,
) -> RouteOutcome {
    let step = ctx.step(s);
    let mut decisions: Vec<Option<Result<RouteDecision, Failure>>> = vec![None; step.next.len()];
    let mut set: JoinSet<Decided> = JoinSet::new();
    for (e, edge) in step.next.iter().enumerate() {
        if edge.is_unconditional() {
            decisions[e] = Some(Ok(RouteDecision::allow("unconditional edge")));
            continue;
        }
        let request = RouteRequest {
            execution_id: String::from(&*ctx.execution_id),
            source_step: step.name.clone(),
            target_step: String::from(&*edge.step),
            condition: edge.condition.to_string(),
            source_result: (*source).clone(),
            runtime_intent: ctx.runtime_intent.clone(),
        };
        set.spawn(ask_route(ctx, e, request).in_current_span());
    }
    let mut interrupt = None;
    while let Some(joined) = set.join_next().await {
        let Ok((e, g)) = joined else { continue };
        let (decision, cancelled) = decision_of(ctx, g);
        decisions[e] = Some(decision);
        interrupt = interrupt.or(cancelled);
    }
    if interrupt.is_some() {
        return (Ok(Vec::new()), interrupt);
    }
    (all_decided(decisions), None)
}

/// The guarded `on_route` call of edge `e`.
fn ask_route(
    ctx: &RunContext,
    e: usize,
    request: RouteRequest,
) -> impl Future<Output = Decided> + Send + 'static {
    let cp = ctx.cp.clone();
    let token = ctx.run_token.clone();
    let deadline = ctx.deadline;
    let durable = ctx.durable.clone();
    async move {
        let sleep = std::pin::pin!(tokio::time::sleep_until(deadline));
        let mut bounds = Bounds {
            token: &token,
            sleep,
            deadline,
        };
        if let Some(d) = durable {
            return (
                e,
                Box::pin(journaled_route(&d, &*cp, request, &mut bounds)).await,
            );
        }
        let decided = guard(cp.on_route(request), &mut bounds).await;
        (e, decided.map(|r| r.map_err(CallbackError::into_failure)))
    }
}

/// `on_route` in a durable run: the journaled decision of the edge when there is one,
/// otherwise the host's, journaled before it is applied.
async fn journaled_route(
    d: &Durable,
    cp: &dyn ControlPoint,
    request: RouteRequest,
    bounds: &mut Bounds<'_>,
) -> Guarded<Result<RouteDecision, Failure>> {
    if let Some(a) = d
        .replay()
        .on_route(&request.source_step, &request.target_step)
    {
        return Guarded::Done(replayed(a));
    }
    let key = RouteKey {
        source_step: request.source_step.clone(),
        target_step: request.target_step.clone(),
    };
    let decided = match guard(cp.on_route(request), bounds).await {
        Guarded::Done(r) => r.map_err(CallbackError::into_failure),
        other => return other.map(|r| r.map_err(CallbackError::into_failure)),
    };
    let answer = answer_of(&decided);
    match d.answered(CallbackAnswered::OnRoute { key, answer }).await {
        Ok(()) => Guarded::Done(decided),
        Err(f) => Guarded::Done(Err(f)),
    }
}

/// An edge's decision from its guarded call, and the cancellation that stopped it, if one did.
fn decision_of(
    ctx: &RunContext,
    g: Guarded<Result<RouteDecision, Failure>>,
) -> (Result<RouteDecision, Failure>, Option<Interrupt>) {
    match g {
        Guarded::Done(Ok(d)) => (Ok(d), None),
        Guarded::Done(Err(err)) => (Err(err), None),
        Guarded::Panicked(m) => (Err(panicked("on_route", &m)), None),
        Guarded::Interrupted(Interrupt::Timeout) => {
            (Err(ctx.interrupt_failure(Interrupt::Timeout)), None)
        }
        Guarded::Interrupted(Interrupt::Cancelled) => (
            Err(ctx.interrupt_failure(Interrupt::Cancelled)),
            Some(Interrupt::Cancelled),
        ),
    }
}

/// Every edge's decision, or the first edge without one.
// The error is the same value `Job::Routes` carries to the scheduler, once per routed step;
// boxing it would add an allocation there.
#[allow(clippy::result_large_err)]
fn all_decided(decisions: Vec<Option<Result<RouteDecision, Failure>>>) -> Decisions {
    let mut out = Vec::with_capacity(decisions.len());
    for (e, d) in decisions.into_iter().enumerate() {
        match d {
            Some(Ok(d)) => out.push(d),
            Some(Err(f)) => return Err((e, f)),
            None => {
                let f = Failure::new(
                    ErrorCode::WorkflowExecutionFailed,
                    "on_route gave no decision",
                );
                return Err((e, f));
            }
        }
    }
    Ok(out)
}
