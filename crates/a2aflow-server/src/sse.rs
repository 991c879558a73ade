//! The SSE framing of a task's stream ([`crate::events`]): one `data:` event per stream
//! response, lines ending in CRLF, and a `: ping` comment while nothing happens, as
//! sse-starlette does.

use crate::body::{Body, BodyError};
use crate::events::{Event, Opening, TaskEvents};
use crate::record::Snapshot;
use crate::runs::Watch;
use a2a::{StreamResponse, Task};
use bytes::Bytes;
use futures_util::stream;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use serde_json::{Value, json};
use std::time::Duration;

/// How each event is framed.
#[derive(Debug, Clone)]
pub(crate) enum Framing {
    /// A JSON-RPC response with this request id around each `StreamResponse`.
    JsonRpc(Value),
    /// The bare `StreamResponse` (HTTP+JSON).
    Rest,
}

/// The stream body of `watch`, starting from `first` (the snapshot the client sees first).
pub(crate) fn task_stream(
    watch: Watch,
    first: Snapshot,
    opening: Opening,
    framing: Framing,
    ping_every: Duration,
) -> Body {
    let events = TaskEvents::new(watch, first, opening, ping_every);
    let frames = stream::unfold((events, framing), |(mut events, framing)| async move {
        let bytes = match events.next().await? {
            Event::Update(event) => frame(&framing, &event),
            Event::Idle => ping(),
        };
        Some((Ok::<_, BodyError>(Frame::data(bytes)), (events, framing)))
    });
    StreamBody::new(frames).boxed_unsync()
}

/// The stream of one `task` that will never change: the event, then the end.
pub(crate) fn once(task: Task, framing: Framing) -> Body {
    let bytes = frame(&framing, &StreamResponse::Task(task));
    let frames = stream::iter([Ok::<_, BodyError>(Frame::data(bytes))]);
    StreamBody::new(frames).boxed_unsync()
}

/// One SSE event, framed.
fn frame(framing: &Framing, event: &StreamResponse) -> Bytes {
    let payload = serde_json::to_value(event).unwrap_or(Value::Null);
    let value = match framing {
        Framing::JsonRpc(id) => json!({ "result": payload, "id": id, "jsonrpc": "2.0" }),
        Framing::Rest => payload,
    };
    Bytes::from(format!("data: {value}\r\n\r\n"))
}

fn ping() -> Bytes {
    let now = chrono::Utc::now().format("%Y-%m-%d %H:%M:%S%.6f%:z");
    Bytes::from(format!(": ping - {now}\r\n\r\n"))
}
