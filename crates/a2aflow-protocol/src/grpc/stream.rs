//! A server-streaming answer as a [`StreamResponseStream`]: each message within the idle
//! timeout, the whole stream within the caller's budget, the closing status mapped like a
//! unary call's; the stream ends after its first error.

use std::time::Duration;

use futures_util::stream;
use http::Uri;
use tokio::time::Instant;
use tonic::codec::Streaming;

use super::status::{Judged, classify};
use crate::error::{TimeoutPhase, TransportError};
use crate::http_client::WireTap;
use crate::stream::StreamResponseStream;

/// The limits of one stream.
pub(crate) struct Bounds {
    /// Longest wait for the next message.
    pub(crate) idle: Duration,
    /// The whole stream's deadline, when the caller set one.
    pub(crate) whole: Option<(Instant, TimeoutPhase, Duration)>,
    /// Largest message.
    pub(crate) message_limit: usize,
    /// The connect timeout (a fault of the connection names it).
    pub(crate) connect_timeout: Duration,
}

struct State {
    messages: Streaming<a2a_pb::StreamResponse>,
    bounds: Bounds,
    tap: WireTap,
    /// The method's URI (rendered only for the wire log).
    url: Uri,
    done: bool,
}

impl State {
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

    /// The next item, or `None` at the end of the stream.
    async fn next(&mut self) -> Option<Result<a2aflow_model::a2a::StreamResponse, TransportError>> {
        if self.done {
            return None;
        }
        let (until, timeout) = self.wait_limit();
        let item = match tokio::time::timeout_at(until, self.messages.message()).await {
            Err(_) => Err(timeout),
            Ok(Ok(None)) => {
                self.done = true;
                return None;
            }
            Ok(Err(status)) => Err(classify(&status, self.judged())),
            Ok(Ok(Some(message))) => super::owned::stream_response(message).ok_or_else(|| {
                TransportError::InvalidResponse("a gRPC stream message holds no payload".into())
            }),
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

/// The stream of `messages` within `bounds`.
pub(crate) fn messages(
    messages: Streaming<a2a_pb::StreamResponse>,
    bounds: Bounds,
    tap: WireTap,
    url: Uri,
) -> StreamResponseStream {
    let state = State {
        messages,
        bounds,
        tap,
        url,
        done: false,
    };
    Box::pin(stream::unfold(state, |mut state| async move {
        let item = state.next().await?;
        Some((item, state))
    }))
}
