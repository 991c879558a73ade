//! Response bodies: whole JSON, SSE streams and the deliberately broken ones.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{StreamExt, stream};
use http_body::Frame;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::clock::now_rfc3339;
use crate::fault::Fault;
use crate::store::{LogEvent, TaskEntry};
use crate::wire_error::{A2aError, ErrorKind};

/// The error a broken body reports to hyper (which then drops the connection).
pub(crate) type BodyError = Box<dyn std::error::Error + Send + Sync>;
/// Every response body.
pub(crate) type Body = UnsyncBoxBody<Bytes, BodyError>;

/// A complete body.
pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

pub(crate) fn from_frames<S>(s: S) -> Body
where
    S: futures_util::Stream<Item = Result<Frame<Bytes>, BodyError>> + Send + 'static,
{
    StreamBody::new(s).boxed_unsync()
}

fn injected(what: &str) -> BodyError {
    format!("a2aflow-testkit injected fault: {what}").into()
}

/// Returns `Pending` once so hyper flushes what it has written before an injected reset.
async fn flush_pause() {
    tokio::task::yield_now().await;
    tokio::task::yield_now().await;
}

/// The first half of `bytes`, then an error (the connection is dropped mid-body).
pub(crate) fn reset_mid_body(bytes: Bytes) -> Body {
    let half = bytes.slice(..bytes.len() / 2);
    from_frames(
        stream::unfold(Some(half), |state| async move {
            match state {
                Some(half) => Some((Ok(Frame::data(half)), None)),
                None => {
                    flush_pause().await;
                    Some((Err(injected("reset mid-body")), None))
                }
            }
        })
        .take(2),
    )
}

/// A JSON body of about `size` bytes: `prefix`, a long run of `x`, `suffix`, in 64 KiB frames.
pub(crate) fn oversized(prefix: String, suffix: &'static str, size: usize) -> (Body, usize) {
    const CHUNK: usize = 64 * 1024;
    let filler = size.saturating_sub(prefix.len() + suffix.len());
    let total = prefix.len() + filler + suffix.len();
    let chunk = Bytes::from(vec![b'x'; CHUNK.min(filler.max(1))]);
    let mut parts: Vec<Bytes> = vec![Bytes::from(prefix)];
    let mut left = filler;
    while left > 0 {
        let n = left.min(CHUNK);
        parts.push(chunk.slice(..n));
        left -= n;
    }
    parts.push(Bytes::from_static(suffix.as_bytes()));
    (
        from_frames(stream::iter(parts.into_iter().map(|b| Ok(Frame::data(b))))),
        total,
    )
}

/// `body` re-delivered one byte per `interval` (ends early when the server stops).
pub(crate) fn drip(body: Body, interval: Duration, token: CancellationToken) -> Body {
    let state = (body, Bytes::new(), true, token);
    from_frames(stream::unfold(
        state,
        move |(mut body, mut buf, first, token)| async move {
            while buf.is_empty() {
                match body.frame().await? {
                    Ok(frame) => match frame.into_data() {
                        Ok(data) => buf = data,
                        Err(_) => continue,
                    },
                    Err(e) => return Some((Err(e), (body, buf, false, token))),
                }
            }
            if !first {
                tokio::select! {
                    () = tokio::time::sleep(interval) => {}
                    () = token.cancelled() => return None,
                }
            }
            let byte = buf.split_to(1);
            Some((Ok(Frame::data(byte)), (body, buf, false, token)))
        },
    ))
}

/// How stream events are wrapped.
#[derive(Clone, Debug)]
pub(crate) enum Framing {
    /// Each `data:` is a JSON-RPC response with this id.
    JsonRpc(Value),
    /// Each `data:` is a bare `StreamResponse`.
    Rest,
}

impl Framing {
    fn data_json(&self, payload: &Value) -> Vec<u8> {
        let v = match self {
            Self::JsonRpc(id) => json!({"result": payload, "id": id, "jsonrpc": "2.0"}),
            Self::Rest => payload.clone(),
        };
        serde_json::to_vec(&v).unwrap_or_default()
    }

    fn event(&self, payload: &Value) -> Bytes {
        sse_frame(None, &self.data_json(payload))
    }

    fn error_event(&self, err: &A2aError) -> Bytes {
        let v = match self {
            Self::JsonRpc(id) => err.jsonrpc_response(id),
            Self::Rest => {
                let (status, mut body) = err.rest_response();
                if let Some(code) = body.pointer_mut("/error/code") {
                    *code = status.into();
                }
                body
            }
        };
        sse_frame(Some("error"), &serde_json::to_vec(&v).unwrap_or_default())
    }
}

fn sse_frame(event: Option<&str>, data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + 24);
    if let Some(e) = event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(e.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n\r\n");
    Bytes::from(out)
}

/// What a stream carries: events known now, then (optionally) a task's log from a cursor.
pub(crate) struct SseSource {
    pub(crate) initial: Vec<Value>,
    pub(crate) follow: Option<(Arc<TaskEntry>, usize)>,
}

enum Item {
    Payload(Value, bool),
    Crash(Arc<str>),
}

struct SseState {
    queue: VecDeque<Item>,
    follow: Option<(Arc<TaskEntry>, usize, watch::Receiver<usize>)>,
    framing: Framing,
    ping: Duration,
    token: CancellationToken,
    fault: Option<Fault>,
    oversized: Option<usize>,
    emitted: usize,
    /// The task and context ids the events sent so far named (for hostile events).
    ids: Option<(String, String)>,
    /// Hostile events sent ([`Fault::ChunkFlood`], [`Fault::KeepAliveForever`]).
    injected: usize,
    /// The flood's event, encoded once.
    flood: Option<Bytes>,
    finished: bool,
}

/// The SSE body for `source`, with stream faults applied and `: ping` comments every `ping`.
pub(crate) fn sse(
    source: SseSource,
    framing: Framing,
    ping: Duration,
    token: CancellationToken,
    fault: Option<Fault>,
) -> Body {
    let oversized = match &fault {
        Some(Fault::OversizedSseEvent { bytes }) => Some(*bytes),
        _ => None,
    };
    let state = SseState {
        queue: source
            .initial
            .into_iter()
            .map(|v| Item::Payload(v, false))
            .collect(),
        follow: source.follow.map(|(e, c)| {
            let rx = e.watch();
            (e, c, rx)
        }),
        framing,
        ping,
        token,
        fault,
        oversized,
        emitted: 0,
        ids: None,
        injected: 0,
        flood: None,
        finished: false,
    };
    from_frames(stream::unfold(state, |mut st| async move {
        let frame = next_frame(&mut st).await?;
        Some((frame, st))
    }))
}

async fn next_frame(st: &mut SseState) -> Option<Result<Frame<Bytes>, BodyError>> {
    if st.finished {
        return None;
    }
    match st.fault {
        Some(Fault::ResetMidStream { after_events }) if st.emitted >= after_events => {
            st.finished = true;
            flush_pause().await;
            return Some(Err(injected("reset mid-stream")));
        }
        Some(Fault::TruncatedSse { after_events }) if st.emitted >= after_events => {
            st.finished = true;
            let partial =
                Bytes::from_static(b"data: {\"result\": {\"statusUpdate\": {\"taskId\": \"tru");
            return Some(Ok(Frame::data(partial)));
        }
        Some(Fault::SseErrorEvent { after_events }) if st.emitted >= after_events => {
            st.finished = true;
            let err = A2aError::new(ErrorKind::Internal, "injected mid-stream error");
            return Some(Ok(Frame::data(st.framing.error_event(&err))));
        }
        Some(Fault::ChunkFlood {
            after_events,
            chunks,
            chunk_bytes,
        }) if st.emitted >= after_events.max(1) => return flood_frame(st, chunks, chunk_bytes),
        Some(Fault::KeepAliveForever {
            after_events,
            every,
        }) if st.emitted >= after_events.max(1) => return keep_alive_frame(st, every).await,
        _ => {}
    }
    if let Some(size) = st.oversized.take() {
        let filler = "x".repeat(size);
        let payload = json!({"message": {"messageId": "oversized", "role": "ROLE_AGENT", "parts": [{"text": filler}]}});
        return Some(Ok(Frame::data(st.framing.event(&payload))));
    }
    loop {
        if let Some(item) = st.queue.pop_front() {
            return Some(Ok(Frame::data(emit(st, item))));
        }
        let (entry, cursor, rx) = st.follow.as_mut()?;
        rx.borrow_and_update();
        let events = entry.events_from(*cursor);
        if !events.is_empty() {
            *cursor += events.len();
            st.queue.extend(events.into_iter().map(|e| match e {
                LogEvent::Update { payload, closes } => Item::Payload((*payload).clone(), closes),
                LogEvent::Crash { message } => Item::Crash(message),
            }));
            continue;
        }
        let token = st.token.clone();
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { return None },
            () = tokio::time::sleep(st.ping) => {
                let ping = format!(": ping - {}\r\n\r\n", now_rfc3339());
                return Some(Ok(Frame::data(Bytes::from(ping))));
            }
            () = token.cancelled() => return None,
        }
    }
}

/// The task and context ids a StreamResponse payload names.
fn ids_of(payload: &Value) -> Option<(String, String)> {
    let (obj, id_key) = if let Some(t) = payload.get("task") {
        (t, "id")
    } else if let Some(u) = payload.get("statusUpdate") {
        (u, "taskId")
    } else {
        (payload.get("artifactUpdate")?, "taskId")
    };
    let id = obj.get(id_key)?.as_str()?;
    let context = obj.get("contextId")?.as_str()?;
    Some((id.to_owned(), context.to_owned()))
}

/// The next event of a [`Fault::ChunkFlood`]; the stream ends after the last one.
fn flood_frame(
    st: &mut SseState,
    chunks: usize,
    chunk_bytes: usize,
) -> Option<Result<Frame<Bytes>, BodyError>> {
    if st.injected >= chunks {
        st.finished = true;
        return None;
    }
    st.injected += 1;
    if st.flood.is_none() {
        let (task_id, context_id) = st.ids.clone().unwrap_or_default();
        let payload = json!({"artifactUpdate": {"taskId": task_id, "contextId": context_id,
            "artifact": {"artifactId": "flood", "name": "flood",
                "parts": [{"text": "x".repeat(chunk_bytes)}]},
            "append": true}});
        st.flood = Some(st.framing.event(&payload));
    }
    st.flood.clone().map(|b| Ok(Frame::data(b)))
}

/// The next frame of a [`Fault::KeepAliveForever`]: after `every`, a keep-alive comment or a
/// WORKING status update, alternately; `None` once the server stops.
async fn keep_alive_frame(
    st: &mut SseState,
    every: Duration,
) -> Option<Result<Frame<Bytes>, BodyError>> {
    let token = st.token.clone();
    tokio::select! {
        () = tokio::time::sleep(every) => {}
        () = token.cancelled() => return None,
    }
    st.injected += 1;
    let working = match (&st.ids, st.injected.is_multiple_of(2)) {
        (Some((task_id, context_id)), true) => Some(json!({"statusUpdate": {
            "taskId": task_id, "contextId": context_id,
            "status": {"state": "TASK_STATE_WORKING", "timestamp": now_rfc3339()}}})),
        _ => None,
    };
    let frame = match working {
        Some(payload) => st.framing.event(&payload),
        None => Bytes::from(format!(": keep-alive {}\r\n\r\n", now_rfc3339())),
    };
    Some(Ok(Frame::data(frame)))
}

fn emit(st: &mut SseState, item: Item) -> Bytes {
    st.emitted += 1;
    match item {
        Item::Payload(mut payload, closes) => {
            if st.ids.is_none() {
                st.ids = ids_of(&payload);
            }
            // A stream with no task behind it (a direct message) ends after its events.
            if closes || (st.follow.is_none() && st.queue.is_empty()) {
                st.finished = true;
            }
            if let Some(fault @ Fault::ForeignIds { after_events, .. }) = &st.fault
                && st.emitted > *after_events
            {
                fault.rewrite_ids(&mut payload);
            }
            st.framing.event(&payload)
        }
        Item::Crash(message) => {
            st.finished = true;
            st.framing
                .error_event(&A2aError::new(ErrorKind::Internal, message.as_ref()))
        }
    }
}
