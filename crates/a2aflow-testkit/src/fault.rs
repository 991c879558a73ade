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
