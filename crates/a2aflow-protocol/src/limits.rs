//! The configurable limits every transport enforces (timeouts and sizes), and the sizes the
//! engine client enforces while it assembles a task's answer.

use std::time::Duration;

/// Limits applied to every request a transport makes, and to what the engine client assembles
/// from the answers. All of them are enforced: a limit that is exceeded ends the call (or the
/// task's interaction) with a typed error (`a2a.timeout` or `a2a.response_too_large`).
///
/// The transports enforce the timeouts, `max_response_body` and `max_sse_event`; the engine client
/// enforces `max_artifact` and `max_task_evidence` (given to it with
/// `ClientConfig::with_limits` in `a2aflow-engine`).
///
/// Build one from [`Limits::default`] and change the fields you need.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Time allowed to open a TCP connection (and finish the TLS handshake). Default 10 s.
    pub connect_timeout: Duration,
    /// Time allowed for a unary call, from sending the request to the last body byte; for a
    /// stream, the time allowed until the response head arrives. Default 60 s.
    pub request_timeout: Duration,
    /// Longest time an open stream may go without progress: a complete event or keep-alive
    /// comment restarts it; bytes that never complete a line do not. Default 60 s (the Python
    /// SDK pings every 15 s).
    pub idle_stream_timeout: Duration,
    /// Largest response body read for a unary call, enforced while reading. Default 16 MiB.
    pub max_response_body: usize,
    /// Largest single SSE event (its lines and data together). Default 4 MiB.
    pub max_sse_event: usize,
    /// Largest assembled artifact: the parts of one artifact id, all its appended chunks
    /// together, counted as content bytes (text, raw bytes, URL, serialized data and metadata).
    /// Default 32 MiB.
    pub max_artifact: usize,
    /// Largest answer kept for one logical task: its artifacts and the messages kept as its
    /// evidence, counted like `max_artifact`. Default 64 MiB.
    pub max_task_evidence: usize,
}

impl Limits {
    /// Default maximum response body: 16 MiB.
    pub const DEFAULT_MAX_RESPONSE_BODY: usize = 16 * 1024 * 1024;
    /// Default maximum SSE event: 4 MiB.
    pub const DEFAULT_MAX_SSE_EVENT: usize = 4 * 1024 * 1024;
    /// Default maximum assembled artifact: 32 MiB.
    pub const DEFAULT_MAX_ARTIFACT: usize = 32 * 1024 * 1024;
    /// Default maximum evidence of one task: 64 MiB.
    pub const DEFAULT_MAX_TASK_EVIDENCE: usize = 64 * 1024 * 1024;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            idle_stream_timeout: Duration::from_secs(60),
            max_response_body: Self::DEFAULT_MAX_RESPONSE_BODY,
            max_sse_event: Self::DEFAULT_MAX_SSE_EVENT,
            max_artifact: Self::DEFAULT_MAX_ARTIFACT,
            max_task_evidence: Self::DEFAULT_MAX_TASK_EVIDENCE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_documented_values() {
        let l = Limits::default();
        assert_eq!(l.max_response_body, 16 * 1024 * 1024);
        assert_eq!(l.max_sse_event, 4 * 1024 * 1024);
        assert_eq!(l.max_artifact, 32 * 1024 * 1024);
        assert_eq!(l.max_task_evidence, 64 * 1024 * 1024);
        assert_eq!(l.connect_timeout, Duration::from_secs(10));
        assert_eq!(l.idle_stream_timeout, Duration::from_secs(60));
    }
}
