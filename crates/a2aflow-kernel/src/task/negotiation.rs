//! The kernel's side of the Negotiation-T loop: events, deadline, the host callback.

use crate::client::NegotiationHook;
use crate::context::RunContext;
use crate::control_point::CallbackError;
use crate::durable::{Durable, answer_of, replayed};
use crate::events::EventEmitter;
use crate::interrupt::{Bounds, Guarded, guard, panicked, remaining_ms};
use crate::journal::{CallbackAnswered, NegotiationKey};
use a2aflow_model::event_data::{
    HostNegotiationFailedData, NegotiationRequestData, NegotiationResolvedData,
};
use a2aflow_model::{ErrorCode, Failure, NegotiationReply, NegotiationRequest};
use async_trait::async_trait;
use std::sync::atomic::{AtomicU32, Ordering};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// The negotiation hook of one dispatch.
pub(super) struct KernelNegotiation<'a> {
    pub(super) run: &'a RunContext,
    pub(super) token: &'a CancellationToken,
    pub(super) emitter: EventEmitter,
    pub(super) agent: &'a str,
    pub(super) exchanges: AtomicU32,
    /// The attempt whose exchanges these are (negotiation answers are journaled per attempt).
    pub(super) attempt: u32,
    /// The task's deadline (bounds the host's answer).
    pub(super) deadline: Instant,
}

#[async_trait]
impl NegotiationHook for KernelNegotiation<'_> {
    async fn negotiate(
        &self,
        mut request: NegotiationRequest,
    ) -> Result<NegotiationReply, Failure> {
        request.remaining_ms = remaining_ms(self.deadline);
        request.task.remaining_ms = request.remaining_ms;
        let exchange = self.exchanges.fetch_add(1, Ordering::Relaxed) + 1;
        // The span the `otel` feature exports for one Negotiation-T exchange (a child of `task`).
        let span = tracing::info_span!(
            "negotiation",
            task_id = %request.task.local_task_id,
            context_id = %request.context_id,
            remote_task_id = request.remote_task_id.as_deref().unwrap_or(""),
            exchange,
        );
        self.exchange(request, exchange).instrument(span).await
    }
}

impl KernelNegotiation<'_> {
    /// One exchange: events around the guarded `on_negotiation` call.
    async fn exchange(
        &self,
        request: NegotiationRequest,
        exchange: u32,
    ) -> Result<NegotiationReply, Failure> {
        self.emitter
            .emit_with(|| NegotiationRequestData {
                agent: self.agent.to_owned(),
                exchange,
                request: Box::new(request.clone()),
            })
            .await;
        let r = match &self.run.durable {
            Some(d) => Box::pin(self.journaled(d, request, exchange)).await,
            None => self.ask_host(request).await,
        };
        match &r {
            Ok(reply) => {
                self.emitter
                    .emit_with(|| NegotiationResolvedData {
                        agent: self.agent.to_owned(),
                        exchange,
                        reply: reply.clone(),
                    })
                    .await
            }
            Err(f) => {
                self.emitter
                    .emit_with(|| HostNegotiationFailedData {
                        agent: self.agent.to_owned(),
                        exchange,
                        error: f.message.clone(),
                        error_code: f.code.clone(),
                    })
                    .await
            }
        }
        r
    }

    /// `on_negotiation` in a durable run: the journaled reply of this exchange when there is
    /// one, otherwise the host's, journaled before the client acts on it.
    async fn journaled(
        &self,
        d: &Durable,
        request: NegotiationRequest,
        exchange: u32,
    ) -> Result<NegotiationReply, Failure> {
        let local_task_id = request.task.local_task_id.clone();
        if let Some(a) = d
            .replay()
            .on_negotiation(&local_task_id, self.attempt, exchange)
        {
            return replayed(a);
        }
        let reply = self.ask_host(request).await;
        if reply
            .as_ref()
            .is_err_and(|f| self.token.is_cancelled() || f.is(ErrorCode::WorkflowTimeout))
        {
            return reply; // interrupted: no answer to journal
        }
        let key = NegotiationKey {
            local_task_id: local_task_id.into(),
            attempt: self.attempt,
            exchange,
        };
        let answer = answer_of(&reply);
        d.answered(CallbackAnswered::OnNegotiation { key, answer })
            .await?;
        reply
    }

    /// The guarded `on_negotiation` call.
    async fn ask_host(&self, request: NegotiationRequest) -> Result<NegotiationReply, Failure> {
        let sleep = std::pin::pin!(tokio::time::sleep_until(self.deadline));
        let mut bounds = Bounds {
            token: self.token,
            sleep,
            deadline: self.deadline,
        };
        match guard(self.run.cp.on_negotiation(request), &mut bounds).await {
            Guarded::Done(Ok(reply)) => Ok(reply),
            Guarded::Done(Err(e)) => Err(CallbackError::into_failure(e)),
            Guarded::Panicked(m) => Err(panicked("on_negotiation", &m)),
            Guarded::Interrupted(i) => Err(self.run.interrupt_failure(i)),
        }
    }
}
