//! Turning an open `text/event-stream` body into a stream of [`StreamResponse`] results, with the
//! idle-stream timeout (a complete event or keep-alive comment restarts it; bytes that never
//! complete a line do not), the SSE event limit,
//! the caller's overall deadline, and `event: error` mapped to a typed error that ends the stream.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use a2aflow_model::a2a::StreamResponse;
use bytes::Bytes;
use futures_util::Stream;
use hyper::body::{Body, Frame, Incoming};
use serde_json::Value;
use tokio::time::{Instant, Sleep};

use crate::envelope::remote_error;
use crate::error::{TimeoutPhase, TransportError};
use crate::http_client::{WholeDeadline, WireTap, classify_body_error};
use crate::sse::{SseError, SseEvent, SseParser};

/// A stream of A2A events. It ends after the server closes the stream or after the first error
/// (which is always the last item). Dropping it closes the underlying request.
pub type StreamResponseStream =
    Pin<Box<dyn Stream<Item = Result<StreamResponse, TransportError>> + Send>>;

/// How the `data:` of an event is wrapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// A JSON-RPC response whose `result` is the `StreamResponse`.
    JsonRpc,
    /// The bare `StreamResponse` (HTTP+JSON).
    Bare,
}

/// Decodes one SSE event. `Ok(None)` for events without payload (empty data). A plain success is
/// decoded in one pass ([`crate::payload`]); anything else takes the checked `Value` path.
pub(crate) fn decode_event(
    ev: &SseEvent,
    framing: Framing,
) -> Result<Option<StreamResponse>, TransportError> {
    if ev.data.trim().is_empty() {
        if ev.is_error() {
            return Err(TransportError::InvalidResponse(
                "an `event: error` without data".into(),
            ));
        }
        return Ok(None);
    }
    if !ev.is_error()
        && let Some(item) = crate::payload::stream_response(&ev.data, framing == Framing::JsonRpc)
    {
        return Ok(Some(item));
    }
    checked_event(&ev.data, ev.is_error(), framing)
}

/// Both decodings of one event's data: the one-pass path ([`crate::payload`]; `None` means it
/// declined) and the checked path. For the differential fuzz target
/// (`fuzz/fuzz_targets/stream_event.rs`), which checks that whatever the one-pass path accepts,
/// the checked path decodes to the same value. Not part of the stable API.
#[doc(hidden)]
pub fn decode_both_ways(
    data: &str,
    json_rpc: bool,
) -> (
    Option<StreamResponse>,
    Result<Option<StreamResponse>, TransportError>,
) {
    let framing = if json_rpc {
        Framing::JsonRpc
    } else {
        Framing::Bare
    };
    (
        crate::payload::stream_response(data, json_rpc),
        checked_event(data, false, framing),
    )
}

/// The checked path: through a `Value`, mapping error envelopes and explaining what is wrong.
fn checked_event(
    data: &str,
    is_error: bool,
    framing: Framing,
) -> Result<Option<StreamResponse>, TransportError> {
    let mut v: Value = serde_json::from_str(data)
        .map_err(|e| TransportError::InvalidResponse(format!("an SSE event is not JSON: {e}")))?;
    if let Some(r) = remote_error(&v, None) {
        return Err(TransportError::Remote(r));
    }
    if is_error || v.get("error").is_some() {
        return Err(TransportError::InvalidResponse(
            "an error event without a readable A2A error envelope".into(),
        ));
    }
    let payload = match framing {
        Framing::JsonRpc => {
            if v.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
                return Err(TransportError::InvalidResponse(
                    "a stream event is not a JSON-RPC 2.0 response".into(),
                ));
            }
            match v.get_mut("result") {
                Some(r) => r.take(),
                None => {
                    return Err(TransportError::InvalidResponse(
                        "a JSON-RPC stream event has no result".into(),
                    ));
                }
            }
        }
        Framing::Bare => v,
    };
    serde_json::from_value(payload)
        .map(Some)
        .map_err(|e| TransportError::InvalidResponse(format!("not a StreamResponse: {e}")))
}

/// The open stream. Polled by hand rather than built with `stream::unfold`: unfold moves this
/// whole state (≈ 550 bytes) in and out of a new future for every event.
struct EventStream {
    body: Incoming,
    parser: SseParser,
    queue: VecDeque<SseEvent>,
    /// Events completed by the current chunk (reused: no allocation per chunk).
    scratch: Vec<SseEvent>,
    framing: Framing,
    idle: Duration,
    /// When the stream last made progress: a complete event or keep-alive comment. Bytes that
    /// never complete a line (a byte drip) do not count, so they cannot hold a stream forever.
    last_progress: Instant,
    deadline: WholeDeadline,
    /// The timer for the current wait, created the first time a frame is not ready at once and
    /// reset afterwards (one timer per stream, not one per frame).
    timer: Option<Pin<Box<Sleep>>>,
    eof: bool,
    tap: WireTap,
    url: String,
    failure: Option<TransportError>,
    done: bool,
}

fn sse_error(e: SseError) -> TransportError {
    match e {
        SseError::EventTooLarge { limit } => TransportError::ResponseTooLarge {
            what: "SSE event",
            limit,
        },
        SseError::Truncated { pending } => TransportError::InvalidResponse(format!(
            "the event stream ended in the middle of an event ({pending} bytes pending)"
        )),
    }
}

/// Wraps an open SSE body.
#[allow(clippy::too_many_arguments)]
pub(crate) fn event_stream(
    body: Incoming,
    tap: WireTap,
    url: String,
    framing: Framing,
    max_event: usize,
    idle: Duration,
    deadline: WholeDeadline,
) -> StreamResponseStream {
    Box::pin(EventStream {
        body,
        parser: SseParser::new(max_event),
        queue: VecDeque::new(),
        scratch: Vec::new(),
        framing,
        idle,
        last_progress: Instant::now(),
        deadline,
        timer: None,
        eof: false,
        tap,
        url,
        failure: None,
        done: false,
    })
}

impl EventStream {
    /// When the current wait for a frame ends, and the error it ends with: the idle limit, or the
    /// caller's deadline when that comes first.
    fn wait_limit(&self) -> (Instant, TransportError) {
        let mut until = self.last_progress + self.idle;
        let mut timeout = TransportError::Timeout {
            phase: TimeoutPhase::IdleStream,
            after: self.idle,
        };
        if let Some((d, phase, after)) = self.deadline
            && d < until
        {
            until = d;
            timeout = TransportError::Timeout { phase, after };
        }
        (until, timeout)
    }

    /// Feeds one body frame (or the end of the body) to the parser, queueing completed events.
    fn take_frame(&mut self, frame: Option<Result<Frame<Bytes>, hyper::Error>>) {
        let res = match frame {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => {
                    let r = self
                        .parser
                        .feed_into(&data, &mut self.scratch)
                        .map_err(sse_error);
                    if !self.scratch.is_empty() || self.parser.is_idle() {
                        self.last_progress = Instant::now();
                    }
                    self.queue.extend(self.scratch.drain(..));
                    r
                }
                Err(_) => Ok(()), // trailers
            },
            Some(Err(e)) => Err(classify_body_error(&e)),
            None => {
                self.eof = true;
                self.parser
                    .finish()
                    .map(|evs| self.queue.extend(evs))
                    .map_err(sse_error)
            }
        };
        if let Err(e) = res {
            // Events completed before the failure are still delivered first.
            self.eof = true;
            self.failure = Some(e);
        }
    }
}

impl Stream for EventStream {
    type Item = Result<StreamResponse, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let st = self.get_mut();
        loop {
            if st.done {
                return Poll::Ready(None);
            }
            if let Some(ev) = st.queue.pop_front() {
                st.tap
                    .log
                    .log_sse_event(&st.tap.agent, &st.url, ev.event.as_deref(), &ev.data);
                let decoded = decode_event(&ev, st.framing);
                st.parser.recycle(ev);
                match decoded {
                    Ok(Some(item)) => return Poll::Ready(Some(Ok(item))),
                    Ok(None) => continue,
                    Err(e) => {
                        st.done = true;
                        return Poll::Ready(Some(Err(e)));
                    }
                }
            }
            if let Some(e) = st.failure.take() {
                st.done = true;
                return Poll::Ready(Some(Err(e)));
            }
            if st.eof {
                return Poll::Ready(None);
            }
            // Like `timeout_at`: a frame that is ready is taken; the limit ends only a real wait.
            match Pin::new(&mut st.body).poll_frame(cx) {
                Poll::Ready(frame) => st.take_frame(frame),
                Poll::Pending => {
                    let (until, timeout) = st.wait_limit();
                    let timer = match &mut st.timer {
                        Some(timer) => {
                            if timer.deadline() != until {
                                timer.as_mut().reset(until);
                            }
                            timer
                        }
                        None => st.timer.insert(Box::pin(tokio::time::sleep_until(until))),
                    };
                    if timer.as_mut().poll(cx).is_ready() {
                        st.done = true;
                        return Poll::Ready(Some(Err(timeout)));
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.into(),
            id: None,
        }
    }

    #[test]
    fn jsonrpc_events_unwrap_the_result() {
        let e = ev(
            None,
            r#"{"result": {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}, "id": "s1", "jsonrpc": "2.0"}"#,
        );
        match decode_event(&e, Framing::JsonRpc).unwrap() {
            Some(StreamResponse::StatusUpdate(u)) => assert_eq!(u.task_id, "t"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bare_events_decode_directly() {
        let e = ev(
            None,
            r#"{"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}}}"#,
        );
        assert!(matches!(
            decode_event(&e, Framing::Bare).unwrap(),
            Some(StreamResponse::Task(_))
        ));
    }

    #[test]
    fn mid_stream_errors_map_to_their_codes() {
        // Captured from a2a-sdk 1.3.0 (JSON-RPC and REST framing).
        let rpc = ev(
            Some("error"),
            r#"{"error": {"code": -32006, "message": "Received Message object in task mode.", "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "INVALID_AGENT_RESPONSE", "domain": "a2a-protocol.org", "metadata": {}}]}, "id": "e1", "jsonrpc": "2.0"}"#,
        );
        assert_eq!(
            decode_event(&rpc, Framing::JsonRpc).unwrap_err().code_str(),
            "a2a.invalid_agent_response"
        );
        let rest = ev(
            Some("error"),
            r#"{"error": {"code": 500, "status": "INTERNAL", "message": "agent crashed"}}"#,
        );
        assert_eq!(
            decode_event(&rest, Framing::Bare).unwrap_err().code_str(),
            "a2a.internal"
        );
        let crash = ev(
            None,
            r#"{"error":{"code":-32603,"message":"agent exploded"},"id":"e2","jsonrpc":"2.0"}"#,
        );
        assert_eq!(
            decode_event(&crash, Framing::JsonRpc)
                .unwrap_err()
                .code_str(),
            "a2a.internal"
        );
    }

    #[test]
    fn malformed_events_are_invalid_responses() {
        for (e, f) in [
            (ev(None, "{not json"), Framing::Bare),
            (ev(None, r#"{"unknown": {}}"#), Framing::Bare),
            (ev(None, r#"{"result": {}}"#), Framing::JsonRpc),
            (ev(None, r#"{"jsonrpc":"2.0","id":1}"#), Framing::JsonRpc),
            (ev(Some("error"), r#"{"oops": 1}"#), Framing::Bare),
            (ev(Some("error"), ""), Framing::Bare),
        ] {
            assert_eq!(
                decode_event(&e, f).unwrap_err().code_str(),
                "a2a.invalid_response"
            );
        }
        assert!(
            decode_event(&ev(None, " "), Framing::Bare)
                .unwrap()
                .is_none()
        );
    }

    const TASK: &str =
        r#"{"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}"#;

    /// Whatever the one-pass path accepts, the checked path decodes to the same value.
    fn agree(data: &str, json_rpc: bool) {
        let (fast, checked) = decode_both_ways(data, json_rpc);
        if let Some(fast) = fast {
            match checked {
                Ok(Some(reference)) => assert_eq!(fast, reference, "{data}"),
                other => panic!("one-pass accepted {data}; checked path: {other:?}"),
            }
        }
    }

    #[test]
    fn null_members_are_read_as_the_checked_path_reads_them() {
        // (data, JSON-RPC framing, whether the event decodes to the task)
        for (data, json_rpc, is_task) in [
            // `a2a-lf` takes the first member present, and cannot read `null` as a message.
            (
                format!(
                    r#"{{"jsonrpc": "2.0", "id": 1, "result": {{"message": null, "task": {TASK}}}}}"#
                ),
                true,
                false,
            ),
            // An `error` member, even `null`, is not a plain success.
            (
                format!(
                    r#"{{"jsonrpc": "2.0", "id": 1, "result": {{"task": {TASK}}}, "error": null}}"#
                ),
                true,
                false,
            ),
            (
                format!(r#"{{"task": {TASK}, "error": null}}"#),
                false,
                false,
            ),
            // A null member after the chosen one is never read by `a2a-lf`.
            (
                format!(r#"{{"task": {TASK}, "statusUpdate": null}}"#),
                false,
                true,
            ),
        ] {
            agree(&data, json_rpc);
            let framing = if json_rpc {
                Framing::JsonRpc
            } else {
                Framing::Bare
            };
            match decode_event(&ev(None, &data), framing) {
                Ok(Some(StreamResponse::Task(t))) if is_task => assert_eq!(t.id, "t"),
                Err(TransportError::InvalidResponse(_)) if !is_task => {}
                other => panic!("{data}: {other:?}"),
            }
        }
    }
}
