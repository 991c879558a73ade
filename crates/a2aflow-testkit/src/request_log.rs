//! The request log: what clients sent, for assertions.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::Value;

use crate::fault::Route;

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// The agent the path named, if any.
    pub agent: Option<String>,
    /// The operation, when recognised.
    pub route: Option<Route>,
    /// HTTP method.
    pub method: http::Method,
    /// Path (without the query).
    pub path: String,
    /// Raw query string.
    pub query: Option<String>,
    /// All request headers, as sent (secrets included: this is a test fixture).
    pub headers: http::HeaderMap,
    /// The body parsed as JSON, when it was JSON.
    pub body: Option<Value>,
}

impl RecordedRequest {
    /// A header value as text (the first one).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The JSON-RPC `method`, for JSON-RPC requests.
    pub fn jsonrpc_method(&self) -> Option<&str> {
        self.body.as_ref()?.get("method")?.as_str()
    }
}

/// A bounded log (oldest entries dropped); capacity 0 records nothing.
pub(crate) struct RequestLog {
    entries: Mutex<VecDeque<RecordedRequest>>,
    capacity: usize,
}

impl RequestLog {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            entries: Mutex::new(VecDeque::new()),
            capacity,
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.capacity > 0
    }

    pub(crate) fn push(&self, r: RecordedRequest) {
        if self.capacity == 0 {
            return;
        }
        let mut g = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if g.len() == self.capacity {
            g.pop_front();
        }
        g.push_back(r);
    }

    pub(crate) fn snapshot(&self) -> Vec<RecordedRequest> {
        let g = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        g.iter().cloned().collect()
    }

    pub(crate) fn clear(&self) {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}
