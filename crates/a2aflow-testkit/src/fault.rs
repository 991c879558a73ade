//! Fault injection: which route misbehaves, and how.

use std::sync::Mutex;
use std::time::Duration;

use crate::spec::Credential;

/// An operation a fault can be attached to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Route {
    /// `GET …/.well-known/agent-card.json`.
    Card,
    /// SendMessage.
    Send,
    /// SendStreamingMessage.
    Stream,
    /// GetTask.
    Get,
    /// ListTasks.
    List,
    /// CancelTask.
    Cancel,
    /// SubscribeToTask.
    Subscribe,
    /// GetExtendedAgentCard.
    ExtendedCard,
}

impl Route {
    const ALL: [Route; 8] = [
        Route::Card,
        Route::Send,
        Route::Stream,
        Route::Get,
        Route::List,
        Route::Cancel,
        Route::Subscribe,
        Route::ExtendedCard,
    ];

    fn index(self) -> usize {
        Self::ALL.iter().position(|r| *r == self).unwrap_or(0)
    }

    /// Whether the route answers with an SSE stream.
    pub fn is_stream(self) -> bool {
        matches!(self, Route::Stream | Route::Subscribe)
    }
}

/// A misbehaviour. Stream-only faults applied to a plain route act on the JSON body instead
/// (reset mid-stream → reset mid-body, truncated SSE → truncated body).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// Read the request, then close the connection without any response.
    RefuseConnection,
    /// Send the headers (with the full `Content-Length`) and half the body, then drop the connection.
    ResetMidBody,
    /// Send the stream's first `after_events` events, then drop the connection (no clean end).
    ResetMidStream {
        /// Events sent before the reset.
        after_events: usize,
    },
    /// Answer `status` (e.g. 502) with an HTML body, as a proxy would.
    ServerError {
        /// The HTTP status (500–599 expected).
        status: u16,
    },
    /// Answer 200 with a JSON content type and a body that is not JSON.
    MalformedJson,
    /// Answer 200 with valid JSON of the wrong shape (numbers for ids, strings for objects).
    WrongTypes,
    /// Send the first `after_events` events and half an event, then end the stream cleanly.
    TruncatedSse {
        /// Events sent before the partial one.
        after_events: usize,
    },
    /// Answer 200 with a valid JSON body of about `bytes` bytes (streamed, `Content-Length` set).
    OversizedBody {
        /// Body size.
        bytes: usize,
    },
    /// Start the stream with one event whose `data:` line is about `bytes` bytes.
    OversizedSseEvent {
        /// Event size.
        bytes: usize,
    },
    /// Send `after_events` events, then an `event: error` with an internal error, then end.
    SseErrorEvent {
        /// Events sent before the error.
        after_events: usize,
    },
    /// Deliver the normal response one byte per `interval`.
    ByteDrip {
        /// Pause between bytes.
        interval: Duration,
    },
    /// Wait `delay` before answering normally.
    Delay(Duration),
    /// Never answer (the request is held until the client goes away or the server stops).
    NeverAnswer,
    /// Demand this credential; a missing or wrong one gets HTTP 401.
    RequireAuth(Credential),
    /// A hostile stream: after the first `after_events` events (at least one, which names the
    /// task), `chunks` artifact updates of about `chunk_bytes` bytes each, every one with
    /// `append: true` onto the same artifact (`flood`), then the stream ends. Built lazily, one
    /// event per read, so a client that stops reading stops the flood. Stream routes only (a
    /// plain route answers normally).
    ChunkFlood {
        /// Events sent before the flood (raised to 1).
        after_events: usize,
        /// Chunks in the flood.
        chunks: usize,
        /// Text bytes per chunk.
        chunk_bytes: usize,
    },
    /// A hostile stream: after the first `after_events` events (at least one, which names the
    /// task), the task's own events are never delivered again; every `every` the stream sends a
    /// keep-alive comment or a WORKING status update (alternately), and never a terminal state,
    /// until the client goes away or the server stops. Stream routes only.
    KeepAliveForever {
        /// Events sent before the endless part (raised to 1).
        after_events: usize,
        /// Pause between two keep-alives.
        every: Duration,
    },
    /// Answer normally, but with foreign identities: every task id (`taskId`, a Task's `id`) and/or
    /// every `contextId` in the answer is replaced by [`FOREIGN_ID`] — an agent that changes ids
    /// mid-conversation, or reuses a task id for another context. On a stream, the first
    /// `after_events` events keep their ids.
    ForeignIds {
        /// Rewrite task ids.
        task: bool,
        /// Rewrite context ids.
        context: bool,
        /// Stream events sent unchanged before the rewriting starts (ignored on a JSON body).
        after_events: usize,
    },
}

/// The id [`Fault::ForeignIds`] puts in place of the real ones.
pub const FOREIGN_ID: &str = "foreign-id-injected-by-testkit";

impl Fault {
    /// Applies [`Fault::ForeignIds`] to one answer payload (a JSON-RPC `result` or a REST body, a
    /// Task, Message or StreamResponse); any other fault leaves it unchanged.
    pub(crate) fn rewrite_ids(&self, payload: &mut serde_json::Value) {
        if let Fault::ForeignIds { task, context, .. } = *self {
            rewrite(payload, task, context, false);
        }
    }
}

/// Walks `v`; `in_task` is true when `v` sits where a Task belongs (its `id` is a task id).
fn rewrite(v: &mut serde_json::Value, task: bool, context: bool, in_task: bool) {
    match v {
        serde_json::Value::Object(map) => {
            let is_task = in_task || is_bare_task(map);
            for (key, value) in map.iter_mut() {
                let replace = match key.as_str() {
                    "taskId" => task,
                    "contextId" => context,
                    "id" => task && is_task,
                    _ => false,
                };
                if replace && value.is_string() {
                    *value = serde_json::Value::String(FOREIGN_ID.to_owned());
                } else {
                    // A Task sits under `task` (StreamResponse / SendMessageResponse) or in a
                    // `tasks` list (ListTasks); a bare Task answer (GetTask) is the top level.
                    rewrite(value, task, context, key == "task" || key == "tasks");
                }
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                rewrite(item, task, context, in_task);
            }
        }
        _ => {}
    }
}

/// A Task object: it has an `id`, a `contextId` and a `status`.
fn is_bare_task(map: &serde_json::Map<String, serde_json::Value>) -> bool {
    map.contains_key("id") && map.contains_key("contextId") && map.contains_key("status")
}

#[derive(Default)]
struct Slot {
    fault: Option<Fault>,
    /// `None` = until cleared; `Some(n)` = for the next n requests.
    remaining: Option<u32>,
}

/// Per-agent faults, one slot per route.
#[derive(Default)]
pub(crate) struct FaultTable {
    slots: Mutex<[Slot; 8]>,
}

impl FaultTable {
    pub(crate) fn set(&self, route: Route, fault: Option<Fault>, times: Option<u32>) {
        let mut g = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        g[route.index()] = Slot {
            fault,
            remaining: times,
        };
    }

    pub(crate) fn clear_all(&self) {
        let mut g = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        *g = Default::default();
    }

    /// The fault for this request, counting down a limited one.
    pub(crate) fn take(&self, route: Route) -> Option<Fault> {
        let mut g = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let slot = &mut g[route.index()];
        let fault = slot.fault.clone()?;
        if let Some(n) = slot.remaining.as_mut() {
            *n = n.saturating_sub(1);
            if *n == 0 {
                *slot = Slot::default();
            }
        }
        Some(fault)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn foreign_ids_rewrite_task_and_context_ids_only() {
        let both = Fault::ForeignIds {
            task: true,
            context: true,
            after_events: 0,
        };
        let mut get = json!({"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING",
            "message": {"messageId": "m1", "taskId": "t1", "contextId": "c1", "role": "ROLE_AGENT", "parts": []}},
            "artifacts": [{"artifactId": "a1", "parts": []}]});
        both.rewrite_ids(&mut get);
        assert_eq!(get["id"], FOREIGN_ID);
        assert_eq!(get["contextId"], FOREIGN_ID);
        assert_eq!(get["status"]["message"]["taskId"], FOREIGN_ID);
        assert_eq!(get["status"]["message"]["messageId"], "m1");
        assert_eq!(get["artifacts"][0]["artifactId"], "a1");

        let context_only = Fault::ForeignIds {
            task: false,
            context: true,
            after_events: 0,
        };
        let mut event = json!({"task": {"id": "t1", "contextId": "c1", "status": {}}});
        context_only.rewrite_ids(&mut event);
        assert_eq!(event["task"]["id"], "t1");
        assert_eq!(event["task"]["contextId"], FOREIGN_ID);

        let task_only = Fault::ForeignIds {
            task: true,
            context: false,
            after_events: 0,
        };
        let mut update = json!({"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {}}});
        task_only.rewrite_ids(&mut update);
        assert_eq!(update["statusUpdate"]["taskId"], FOREIGN_ID);
        assert_eq!(update["statusUpdate"]["contextId"], "c1");
        // Other faults never rewrite.
        let mut untouched = json!({"id": "t1", "contextId": "c1", "status": {}});
        Fault::MalformedJson.rewrite_ids(&mut untouched);
        assert_eq!(untouched["id"], "t1");
    }

    #[test]
    fn limited_fault_expires() {
        let t = FaultTable::default();
        t.set(Route::Get, Some(Fault::MalformedJson), Some(2));
        assert_eq!(t.take(Route::Get), Some(Fault::MalformedJson));
        assert_eq!(t.take(Route::Send), None);
        assert_eq!(t.take(Route::Get), Some(Fault::MalformedJson));
        assert_eq!(t.take(Route::Get), None);
        t.set(Route::Card, Some(Fault::NeverAnswer), None);
        assert_eq!(t.take(Route::Card), Some(Fault::NeverAnswer));
        assert_eq!(t.take(Route::Card), Some(Fault::NeverAnswer));
        t.clear_all();
        assert_eq!(t.take(Route::Card), None);
    }
}
