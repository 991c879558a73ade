//! A server-streaming answer as a [`StreamResponseStream`]: each message within the idle
//! timeout, the whole stream within the caller's budget, the closing status mapped like a
//! unary call's; the stream ends after its first error. One timer per stream, reset for each
//! wait (a timer made and dropped per message costs a registration and a removal each time).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::Stream;
use http::Uri;
use tokio::time::{Instant, Sleep};
use tonic::codec::Streaming;

use super::answer::StreamMessage;
use super::status::{Judged, classify};
use crate::error::{TimeoutPhase, TransportError};
use crate::http_client::{WholeDeadline, WireTap};
use crate::stream::StreamResponseStream;

/// The limits of one stream.
pub(crate) struct Bounds {
    /// Longest wait for the next message.
    pub(crate) idle: Duration,
    /// The whole stream's deadline, when the caller set one.
    pub(crate) whole: WholeDeadline,
    /// Largest message.
    pub(crate) message_limit: usize,
    /// The connect timeout (a fault of the connection names it).
    pub(crate) connect_timeout: Duration,
    /// Whether a task's history is converted (the caller reads it).
    pub(crate) history: super::owned::History,
}

/// The stream: the messages, the one timer that bounds each wait (reset for the next wait, not
/// made anew), and what the wire log needs.
struct Messages<M> {
    messages: Streaming<M>,
    bounds: Bounds,
    tap: WireTap,
    /// The method's URI (rendered only for the wire log).
    url: Uri,
    /// Bounds the current wait; armed (reset to the wait's limit) when a wait begins.
    timer: Pin<Box<Sleep>>,
    /// The error the current wait ends with when `timer` fires first; `None` between waits.
    waiting: Option<TransportError>,
    done: bool,
}

impl<M: StreamMessage> Messages<M> {
    /// When the wait for the next message ends, and the error it ends with.
    fn wait_limit(&self) -> (Instant, TransportError) {
        let idle = self.bounds.idle;
        let mut until = Instant::now() + idle;
        let mut timeout = TransportError::Timeout {
            phase: TimeoutPhase::IdleStream,
            after: idle,
        };
        if let Some((d, phase, after)) = self.bounds.whole
            && d < until
        {
            until = d;
            timeout = TransportError::Timeout { phase, after };
        }
        (until, timeout)
    }

    fn judged(&self) -> Judged {
        let (budget, budget_is_deadline) = match self.bounds.whole {
            Some((_, phase, after)) => (after, phase == TimeoutPhase::Deadline),
            None => (self.bounds.idle, false),
        };
        Judged {
            message_limit: self.bounds.message_limit,
            connect_timeout: self.bounds.connect_timeout,
            budget,
            budget_is_deadline,
        }
    }

    /// What one message (or the stream's closing status) gives.
    fn item(
        &mut self,
        next: Option<Result<M, tonic::Status>>,
    ) -> Option<Result<a2aflow_model::a2a::StreamResponse, TransportError>> {
        let item = match next {
            None => {
                self.done = true;
                return None;
            }
            Some(Err(status)) => Err(classify(&status, self.judged())),
            Some(Ok(message)) => {
                super::owned::stream_response(message.into_response(), self.bounds.history)
                    .ok_or_else(|| {
                        TransportError::InvalidResponse(
                            "a gRPC stream message holds no payload".into(),
                        )
                    })
            }
        };
        match &item {
            Ok(event) => {
                if self.tap.log.is_active() {
                    let data = serde_json::to_string(event).unwrap_or_default();
                    let url = self.url.to_string();
                    self.tap
                        .log
                        .log_sse_event(&self.tap.agent, &url, None, &data);
                }
            }
            Err(_) => self.done = true,
        }
        Some(item)
    }
}

impl<M: StreamMessage> Stream for Messages<M> {
    type Item = Result<a2aflow_model::a2a::StreamResponse, TransportError>;

    /// The next item within the wait's limit, or `None` at the end of the stream (and after
    /// its first error).
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if this.waiting.is_none() {
            let (until, timeout) = this.wait_limit();
            this.timer.as_mut().reset(until);
            this.waiting = Some(timeout);
        }
        if let Poll::Ready(next) = Pin::new(&mut this.messages).poll_next(cx) {
            this.waiting = None;
            return Poll::Ready(this.item(next));
        }
        if this.timer.as_mut().poll(cx).is_ready() {
            this.done = true;
            if let Some(timeout) = this.waiting.take() {
                return Poll::Ready(Some(Err(timeout)));
            }
        }
        Poll::Pending
    }
}

/// The stream of `messages` within `bounds`.
pub(crate) fn messages<M: StreamMessage>(
    messages: Streaming<M>,
    bounds: Bounds,
    tap: WireTap,
    url: Uri,
) -> StreamResponseStream {
    let timer = Box::pin(tokio::time::sleep_until(Instant::now() + bounds.idle));
    Box::pin(Messages {
        messages,
        bounds,
        tap,
        url,
        timer,
        waiting: None,
        done: false,
    })
}
