//! Lifecycle events: stable names, serde-serialisable, delivered in causal order.

use crate::event_body::EventBody;
use crate::event_data::{EventPayload, PayloadError};
use crate::event_time::{EVENT_TIME_LEN, EventTime};
use serde::{Deserialize, Serialize};

macro_rules! event_kinds {
    ($( $(#[doc = $doc:literal])* $variant:ident => $name:literal, )*) => {
        /// The kind of an [`Event`]; each has a stable string name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[non_exhaustive]
        pub enum EventKind {
            $( $(#[doc = $doc])* #[serde(rename = $name)] $variant, )*
        }

        impl EventKind {
            /// Every kind, in vocabulary order.
            pub const ALL: &'static [EventKind] = &[ $( EventKind::$variant, )* ];

            /// The kind's place in [`EventKind::ALL`] (for tables indexed by kind).
            pub const fn index(self) -> usize {
                self as usize
            }

            /// The stable name, e.g. `"step_start"`.
            pub const fn as_str(self) -> &'static str {
                match self { $( EventKind::$variant => $name, )* }
            }
        }
    };
}

event_kinds! {
    /// The run started.
    Start => "start",
    /// The run's work finished (success or failure).
    Complete => "complete",
    /// The run closed: nothing more will be emitted.
    Close => "close",
    /// A step started.
    StepStart => "step_start",
    /// A step finished.
    StepComplete => "step_complete",
    /// A logical task was requested.
    TaskRequest => "task_request",
    /// A logical task finished.
    TaskResponse => "task_response",
    /// A logical task changed state.
    TaskStatusChanged => "task_status_changed",
    /// An edge was decided.
    RouteDecision => "route_decision",
    /// The workflow finished; emitted last before complete/close.
    WorkflowComplete => "workflow_complete",
    /// A request was sent to an agent.
    AgentRequest => "agent_request",
    /// An agent answered a request.
    AgentResponse => "agent_response",
    /// A remote status update arrived.
    AgentStatusUpdate => "agent_status_update",
    /// A remote artifact update arrived.
    AgentArtifactUpdate => "agent_artifact_update",
    /// A remote direct message arrived.
    AgentMessageEvent => "agent_message_event",
    /// A Negotiation-T proposal reached the host.
    NegotiationRequest => "negotiation_request",
    /// A negotiation ended well.
    NegotiationResolved => "negotiation_resolved",
    /// A negotiation failed.
    NegotiationFailed => "negotiation_failed",
    /// An error.
    Error => "error",
    /// Reserved for Authorization-T (unused by workflows: those results go to the host directly).
    AuthorizationRequest => "authorization_request",
    /// Reserved for Authorization-T.
    AuthorizationResolved => "authorization_resolved",
    /// Reserved for Notification-T.
    Notification => "notification",
    /// A logical task parked at a gate (INPUT_REQUIRED or AUTH_REQUIRED) and waits for the
    /// host's answer.
    TaskGated => "task_gated",
    /// An attempt of a logical task failed and the task's retry policy sends it again.
    TaskRetry => "task_retry",
    /// An event the host's event hook put into the run's sequence; its data is the host's own
    /// (any JSON). The engine never emits it.
    HostEvent => "host_event",
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One lifecycle event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Position in the run's event sequence, from 0.
    pub seq: u64,
    /// The kind.
    pub kind: EventKind,
    /// When the engine emitted the event (its clock, UTC; RFC 3339 with milliseconds on the
    /// wire). Absent in events written before a2aflow kept times, and in events a host built
    /// without one until the run numbers them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<EventTime>,
    /// The run's execution id (a child run's own id for delegated events).
    pub execution_id: String,
    /// Delegation depth: 0 for the root run.
    #[serde(default)]
    pub depth: u32,
    /// The step, when the event concerns one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The local task id, when the event concerns a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Event-specific data: the typed payload of an event the engine emitted, or JSON (read
    /// back, or a host's); reads as a `serde_json::Value` through `Deref`.
    #[serde(default, skip_serializing_if = "EventBody::is_null")]
    pub data: EventBody,
}

impl Event {
    /// An event of the payload's kind, with the payload as its `data` (depth 0, no time, step
    /// or task: set those fields as the event needs; a run gives an event without a time the
    /// time it emits it). The payload is kept typed; its JSON is built
    /// only when read. Never fails today; the `Result` stays for callers written against the
    /// JSON-building version.
    pub fn from_payload(
        seq: u64,
        execution_id: impl Into<String>,
        payload: impl Into<EventPayload>,
    ) -> Result<Event, serde_json::Error> {
        let payload = payload.into();
        Ok(Event {
            seq,
            kind: payload.kind(),
            time: None,
            execution_id: execution_id.into(),
            depth: 0,
            step: None,
            task_id: None,
            data: EventBody::typed(payload),
        })
    }

    /// The typed data: the payload the event holds when it is of the event's kind, else its
    /// `data` read as its kind's payload.
    pub fn payload(&self) -> Result<EventPayload, PayloadError> {
        self.data.payload_of(self.kind)
    }
}

/// An event borrowed from its parts, with typed data: serialises to the same JSON text as the
/// [`Event`] with `data` = [`EventPayload::to_data`], without building the `Value` tree (a
/// durable run writes its events this way).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventView<'a> {
    /// Position in the run's event sequence, from 0.
    pub seq: u64,
    /// The kind (the payload's).
    pub kind: EventKind,
    /// When the event was emitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<EventTime>,
    /// The run's execution id.
    pub execution_id: &'a str,
    /// Delegation depth: 0 for the root run.
    pub depth: u32,
    /// The step, when the event concerns one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<&'a str>,
    /// The local task id, when the event concerns a task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<&'a str>,
    /// Event-specific data.
    pub data: &'a EventPayload,
}

impl EventView<'_> {
    /// The event's JSON text (fails only where [`EventPayload::to_data`] would).
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        let tail = self.tail()?;
        Ok(match self.time {
            Some(time) => tail.place(self.seq, time).into_string(),
            None => tail.finish(self.seq, None),
        })
    }

    /// The event's text but for its `seq` and `time` (see [`EventTail`]): written before the
    /// event takes its place in its run's sequence, so that the place is held only for
    /// [`EventTail::place`].
    pub fn tail(&self) -> Result<EventTail, serde_json::Error> {
        self.tail_sized(0)
    }

    /// [`EventView::tail`] into a buffer of at least `size_hint` bytes (the length of the last
    /// event of its kind, say: the text is then written without growing its buffer).
    pub fn tail_sized(&self, size_hint: usize) -> Result<EventTail, serde_json::Error> {
        /// The fields after `time`, in [`EventView`]'s order and spelling.
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Rest<'a> {
            execution_id: &'a str,
            depth: u32,
            #[serde(skip_serializing_if = "Option::is_none")]
            step: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            task_id: Option<&'a str>,
            data: &'a EventPayload,
        }
        let kind = self.kind.as_str();
        let mut text = Vec::with_capacity(size_hint.max(SEQ_ROOM + kind.len() + 128));
        text.resize(SEQ_ROOM, b' ');
        text.extend_from_slice(b",\"kind\":\"");
        // A kind's name is plain lowercase ASCII and underscores: nothing to escape.
        text.extend_from_slice(kind.as_bytes());
        text.extend_from_slice(b"\",\"time\":\"");
        let time_at = text.len();
        text.resize(time_at + EVENT_TIME_LEN, b'0');
        text.push(b'"');
        let rest_at = text.len();
        serde_json::to_writer(
            &mut text,
            &Rest {
                execution_id: self.execution_id,
                depth: self.depth,
                step: self.step,
                task_id: self.task_id,
                data: self.data,
            },
        )?;
        // `Rest` is an object with at least two fields: its `{` becomes the comma that follows
        // the fields above.
        text[rest_at] = b',';
        let text = String::from_utf8(text).map_err(|_| {
            <serde_json::Error as serde::ser::Error>::custom("an event's text is not UTF-8")
        })?;
        Ok(EventTail {
            text,
            time_at,
            rest_at,
        })
    }
}

/// Room left before an event's text for `{"seq":` and the longest `u64`.
const SEQ_ROOM: usize = 7 + 20;

/// An event's JSON text without its `seq` and `time` ([`EventView::tail`]), finished once they
/// are known into the bytes [`EventView::to_json`] gives: in place ([`EventTail::place`]: the
/// text is written once, with room left for the two) or as a copy ([`EventTail::finish`]).
#[derive(Debug, Clone)]
pub struct EventTail {
    /// [`SEQ_ROOM`] spaces, `,"kind":"…","time":"`, room for the time's text, `"`, then the
    /// fields after `time` (`,"executionId":…}`).
    text: String,
    /// Where the room for the time's text starts.
    time_at: usize,
    /// Where the fields after `time` start (at their comma).
    rest_at: usize,
}

/// An event's JSON text written in place by [`EventTail::place`]: a buffer and where in it the
/// text starts.
#[derive(Debug, Clone)]
pub struct EventText {
    buffer: String,
    start: usize,
}

/// Texts are equal when they read the same, wherever they start in their buffers.
impl PartialEq for EventText {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for EventText {}

impl EventText {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.buffer[self.start..]
    }

    /// The text as a string of its own (a copy when it does not start its buffer).
    pub fn into_string(mut self) -> String {
        if self.start > 0 {
            self.buffer.drain(..self.start);
        }
        self.buffer
    }
}

impl From<String> for EventText {
    fn from(buffer: String) -> Self {
        EventText { buffer, start: 0 }
    }
}

/// `{"seq":<seq>`, written at the end of `out` (at most [`SEQ_ROOM`] bytes); returns where it
/// starts.
fn seq_head(seq: u64, out: &mut [u8; SEQ_ROOM]) -> usize {
    let mut at = SEQ_ROOM;
    let mut n = seq;
    loop {
        at -= 1;
        // A digit: `n % 10` is below 10.
        out[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    at -= 7;
    out[at..at + 7].copy_from_slice(b"{\"seq\":");
    at
}

impl EventTail {
    /// The event's text numbered `seq`, at `time`, written into the tail's own buffer (no copy
    /// of the text for a time of the years 1970 to 9999, which is every clock's).
    pub fn place(mut self, seq: u64, time: EventTime) -> EventText {
        let Some(time_text) = time.rfc3339_bytes() else {
            return EventText::from(self.finish(seq, Some(time)));
        };
        let mut head = [0u8; SEQ_ROOM];
        let start = seq_head(seq, &mut head);
        // Both are ASCII (digits, punctuation), written over ASCII room of their length.
        let (Ok(head), Ok(time_text)) = (
            std::str::from_utf8(&head[start..]),
            std::str::from_utf8(&time_text),
        ) else {
            return EventText::from(self.finish(seq, Some(time)));
        };
        self.text
            .replace_range(self.time_at..self.time_at + EVENT_TIME_LEN, time_text);
        self.text.replace_range(start..SEQ_ROOM, head);
        EventText {
            buffer: self.text,
            start,
        }
    }

    /// How long the event's text is with room for its `seq` (what its buffer needs).
    pub fn len(&self) -> usize {
        self.text.len()
    }

    /// Never: an event's text holds at least its kind.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The event's JSON text numbered `seq`, at `time`, as a new string (the tail is kept).
    pub fn finish(&self, seq: u64, time: Option<EventTime>) -> String {
        use std::fmt::Write;
        let kind = &self.text[SEQ_ROOM..self.time_at - ",\"time\":\"".len()];
        let rest = &self.text[self.rest_at..];
        let mut out = String::with_capacity(self.text.len());
        // Writing into a `String` cannot fail.
        let _ = write!(out, "{{\"seq\":{seq}{kind}");
        if let Some(time) = time {
            let _ = write!(out, ",\"time\":\"{time}\"");
        }
        out.push_str(rest);
        out
    }
}
