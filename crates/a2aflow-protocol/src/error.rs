//! [`TransportError`]: everything that can go wrong on the wire, each with a stable code.

use std::time::Duration;

use a2aflow_model::{ErrorCode, Failure, FailureCode};
use serde_json::{Map, Value};

/// An error the agent reported in an A2A error envelope (JSON-RPC `error` or `google.rpc.Status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteError {
    /// The stable code it maps to (`a2a.task_not_found`, …; `a2a.remote_error` when unknown).
    pub code: ErrorCode,
    /// The agent's message, bounded and redacted.
    pub message: String,
    /// The numeric code of the envelope (JSON-RPC `-32001`, or the HTTP-like `404` of a Status).
    pub numeric_code: Option<i64>,
    /// The `google.rpc.Status` status name (`NOT_FOUND`, `FAILED_PRECONDITION`, …).
    pub status: Option<String>,
    /// The `ErrorInfo` reason (`TASK_NOT_FOUND`, …).
    pub reason: Option<String>,
    /// The HTTP status the envelope came with (absent for SSE `event: error`).
    pub http_status: Option<u16>,
    /// What else the envelope said: the `ErrorInfo` domain and metadata, the other typed details
    /// and the `Retry-After` header (boxed: most errors carry little of it).
    pub info: Box<RemoteDetails>,
}

/// The parts of an agent's error a host may act on, bounded and redacted like the wire log.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemoteDetails {
    /// The `ErrorInfo` domain (`a2a-protocol.org`, …).
    pub domain: Option<String>,
    /// The `ErrorInfo` metadata (such as the `taskId`): at most [`METADATA_LIMIT`] entries,
    /// redacted, each value bounded.
    pub metadata: Map<String, Value>,
    /// The other typed details (`google.rpc.BadRequest` field violations, `RetryInfo`, …), each
    /// with its `@type`: at most [`DETAILS_LIMIT`] of them, redacted, each bounded to
    /// [`DETAIL_BYTES_LIMIT`] bytes of JSON (a larger one keeps only its `@type`).
    pub details: Vec<Value>,
    /// The `Retry-After` header of the HTTP answer, as sent (bounded).
    pub retry_after: Option<String>,
}

/// Most `ErrorInfo` metadata entries kept in a [`RemoteError`].
pub const METADATA_LIMIT: usize = 16;
/// Most typed details kept in a [`RemoteError`].
pub const DETAILS_LIMIT: usize = 8;
/// Largest typed detail (or metadata value) kept whole, in bytes of JSON.
pub const DETAIL_BYTES_LIMIT: usize = 2048;
/// Longest `Retry-After` value kept.
const RETRY_AFTER_LIMIT: usize = 64;

impl RemoteError {
    /// With the `Retry-After` header of the answer it came with (bounded to a short value).
    pub fn with_retry_after(mut self, value: Option<&str>) -> Self {
        self.info.retry_after = value
            .map(str::trim)
            .filter(|v| !v.is_empty() && v.len() <= RETRY_AFTER_LIMIT)
            .map(|v| excerpt(v.as_bytes()));
        self
    }
}

/// Adds the `Retry-After` header of an HTTP answer to the agent's error it carried; other errors
/// are unchanged.
pub(crate) fn with_retry_after(e: TransportError, value: Option<&str>) -> TransportError {
    match e {
        TransportError::Remote(r) => TransportError::Remote(r.with_retry_after(value)),
        other => other,
    }
}

/// The longest `Location` a redirect error repeats (in characters).
const MAX_LOCATION_CHARS: usize = 200;

/// A 3xx answer's [`TransportError::HttpStatus`] as the [`TransportError::Redirect`] it is,
/// naming its `Location` (escaped and bounded: the agent chose it); other errors are unchanged.
pub(crate) fn with_redirect(e: TransportError, location: Option<&str>) -> TransportError {
    match e {
        TransportError::HttpStatus { status, .. } if (300..400).contains(&status) => {
            let location = match location {
                Some(l) => {
                    let shown: String = l.chars().take(MAX_LOCATION_CHARS).collect();
                    let cut = if l.chars().count() > MAX_LOCATION_CHARS {
                        "…"
                    } else {
                        ""
                    };
                    format!("{}{cut}", a2aflow_model::names::visible(&shown))
                }
                None => "(none)".to_owned(),
            };
            TransportError::Redirect { status, location }
        }
        other => other,
    }
}

/// Which wait a timeout ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeoutPhase {
    /// Opening the connection.
    Connect,
    /// A unary request (or the head of a stream).
    Request,
    /// Silence on an open stream.
    IdleStream,
    /// The caller's deadline for the whole call.
    Deadline,
}

impl std::fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimeoutPhase::Connect => "connect",
            TimeoutPhase::Request => "request",
            TimeoutPhase::IdleStream => "idle-stream",
            TimeoutPhase::Deadline => "deadline",
        })
    }
}

/// A transport failure. Every variant has a stable [`ErrorCode`] ([`TransportError::code`]) and
/// converts into an [`a2aflow_model::Failure`] whose details are safe to log.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The agent answered with an A2A error envelope.
    #[error("agent error {}: {}", .0.code, .0.message)]
    Remote(RemoteError),
    /// A non-2xx answer whose body is not an A2A error envelope (an HTML 502, …).
    #[error("HTTP {status} with a non-A2A body: {excerpt}")]
    HttpStatus {
        /// The HTTP status.
        status: u16,
        /// A bounded, redacted excerpt of the body.
        excerpt: String,
    },
    /// A 3xx answer: a2aflow never follows redirects (credentials would go where the agent
    /// points, not where the user configured them).
    #[error(
        "HTTP {status}: redirect to {location} not followed (a2aflow does not follow \
             redirects; if you trust that address, configure it as the agent's URL)"
    )]
    Redirect {
        /// The HTTP status (301, 302, 303, 307, 308, …).
        status: u16,
        /// The `Location` the answer named, control characters escaped and bounded
        /// (`(none)` when it named none).
        location: String,
    },
    /// HTTP 401/403 without an A2A error envelope.
    #[error("the agent rejected the credentials (HTTP {status})")]
    AuthRejected {
        /// 401 or 403.
        status: u16,
    },
    /// The connection could not be made or was lost.
    #[error("connection failed: {0}")]
    Connection(String),
    /// A timeout expired.
    #[error("{phase} timeout after {after:?}")]
    Timeout {
        /// Which wait expired.
        phase: TimeoutPhase,
        /// The configured duration.
        after: Duration,
    },
    /// TLS handshake or certificate verification failed.
    #[error("TLS failure: {0}")]
    Tls(String),
    /// A body or SSE event exceeded its configured limit.
    #[error("{what} exceeded the limit of {limit} bytes")]
    ResponseTooLarge {
        /// `response body` or `SSE event`.
        what: &'static str,
        /// The limit in bytes.
        limit: usize,
    },
    /// The answer could not be read as the A2A object it should be.
    #[error("invalid response: {0}")]
    InvalidResponse(String),
    /// The card offers no binding in the preference order.
    #[error("the agent card offers no supported binding (offered: {offered:?})")]
    UnsupportedBinding {
        /// The `protocolBinding@protocolVersion` values the card offered.
        offered: Vec<String>,
    },
    /// The request could not be built (bad URL, unserialisable body).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The request-headers hook (credentials) failed; its failure is passed through unchanged.
    #[error("{0}")]
    Headers(Failure),
    /// The call's [`SendGate`](crate::SendGate) was closed at the last moment: nothing of the
    /// request reached the agent (its caller withdrew it, as a cancel would).
    #[error(
        "the request was withheld: its send gate closed before the request was written, so \
         nothing reached the agent"
    )]
    Withheld,
}

impl TransportError {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            TransportError::Remote(r) => r.code,
            TransportError::HttpStatus { .. } | TransportError::Redirect { .. } => {
                ErrorCode::A2aHttpStatus
            }
            TransportError::AuthRejected { .. } => ErrorCode::AuthRejected,
            TransportError::Connection(_) => ErrorCode::A2aConnection,
            TransportError::Timeout { .. } => ErrorCode::A2aTimeout,
            TransportError::Tls(_) => ErrorCode::A2aTls,
            TransportError::ResponseTooLarge { .. } => ErrorCode::A2aResponseTooLarge,
            TransportError::InvalidResponse(_) => ErrorCode::A2aInvalidResponse,
            TransportError::UnsupportedBinding { .. } => ErrorCode::A2aUnsupportedBinding,
            TransportError::InvalidRequest(_) => ErrorCode::ConfigInvalid,
            TransportError::Headers(f) => f.error_code().unwrap_or(ErrorCode::ConfigInvalid),
            TransportError::Withheld => ErrorCode::WorkflowCancelled,
        }
    }

    /// The stable code as the `Failure` carries it (a header failure keeps its own code).
    pub fn code_str(&self) -> FailureCode {
        match self {
            TransportError::Headers(f) => f.code.clone(),
            other => other.code().into(),
        }
    }

    /// The agent's error, when this is one.
    pub fn remote(&self) -> Option<&RemoteError> {
        match self {
            TransportError::Remote(r) => Some(r),
            _ => None,
        }
    }

    /// The failure as the engine reports it.
    pub fn to_failure(&self) -> Failure {
        if let TransportError::Headers(f) = self {
            return f.clone();
        }
        let mut f = Failure::new(self.code(), self.to_string());
        match self {
            TransportError::Remote(r) => {
                if let Some(n) = r.numeric_code {
                    f = f.with_detail("remoteCode", n);
                }
                if let Some(s) = r.http_status {
                    f = f.with_detail("httpStatus", s);
                }
                if let Some(s) = &r.reason {
                    f = f.with_detail("reason", s.clone());
                }
                if let Some(s) = &r.status {
                    f = f.with_detail("status", s.clone());
                }
                let info = &r.info;
                if let Some(d) = &info.domain {
                    f = f.with_detail("domain", d.clone());
                }
                if !info.metadata.is_empty() {
                    f = f.with_detail("metadata", Value::Object(info.metadata.clone()));
                }
                if !info.details.is_empty() {
                    f = f.with_detail("errorDetails", info.details.clone());
                }
                if let Some(v) = &info.retry_after {
                    f = f.with_detail("retryAfter", v.clone());
                    if let Ok(secs) = v.parse::<u64>() {
                        f = f.with_detail("retryAfterSecs", secs);
                    }
                }
            }
            TransportError::HttpStatus { status, excerpt } => {
                f = f
                    .with_detail("httpStatus", *status)
                    .with_detail("excerpt", excerpt.clone());
            }
            TransportError::Redirect { status, location } => {
                f = f
                    .with_detail("httpStatus", *status)
                    .with_detail("location", location.clone());
            }
            TransportError::AuthRejected { status } => f = f.with_detail("httpStatus", *status),
            TransportError::Timeout { phase, after } => {
                f = f.with_detail("phase", phase.to_string()).with_detail(
                    "afterMs",
                    u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
                );
            }
            TransportError::ResponseTooLarge { what, limit } => {
                f = f
                    .with_detail("what", *what)
                    .with_detail("limitBytes", *limit);
            }
            TransportError::UnsupportedBinding { offered } => {
                f = f.with_detail("offered", offered.clone());
            }
            _ => {}
        }
        f
    }
}

impl From<TransportError> for Failure {
    fn from(e: TransportError) -> Self {
        e.to_failure()
    }
}

/// Largest excerpt of a foreign body kept in an error.
pub const EXCERPT_LIMIT: usize = 256;

/// A bounded, redacted, single-line excerpt of a body that is not an A2A envelope.
///
/// Credentials that servers echo back (`Bearer …`, `Basic …`, `token=…`, JSON fields named like
/// secrets) are replaced by `***`; control characters and runs of whitespace collapse to one space.
pub fn excerpt(body: &[u8]) -> String {
    let raw = String::from_utf8_lossy(&body[..body.len().min(EXCERPT_LIMIT * 4)]);
    let scrubbed = crate::wirelog::redact_credentials_in_text(
        &crate::wirelog::redact_json_like_text(&raw, &crate::wirelog::RedactionPolicy::new()),
    );
    let mut s = scrubbed
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .map(redact_word)
        .collect::<Vec<_>>()
        .join(" ");
    if s.len() > EXCERPT_LIMIT {
        let mut cut = EXCERPT_LIMIT;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

const SECRET_KEYS: &[&str] = &[
    "token",
    "access_token",
    "accesstoken",
    "refresh_token",
    "password",
    "secret",
    "client_secret",
    "apikey",
    "api_key",
    "api-key",
    "authorization",
    "credentials",
];

/// Redacts `key=value` and `key:value` words when the key looks like a secret (form and header
/// shapes; JSON fields and `Bearer`/`Basic` values are handled by the wire log's redaction).
fn redact_word(w: &str) -> String {
    for sep in ['=', ':'] {
        if let Some(p) = w.find(sep) {
            let key = w[..p].trim_matches(|c| c == '"' || c == '\'' || c == '{' || c == ',');
            let lower = key.to_ascii_lowercase();
            if SECRET_KEYS.iter().any(|k| lower.ends_with(k)) {
                return format!("{}{}***", &w[..p], sep);
            }
        }
    }
    w.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_its_documented_code() {
        let cases: Vec<(TransportError, &str)> = vec![
            (
                TransportError::HttpStatus {
                    status: 502,
                    excerpt: "x".into(),
                },
                "a2a.http_status",
            ),
            (
                TransportError::AuthRejected { status: 401 },
                "auth.rejected",
            ),
            (
                TransportError::Connection("refused".into()),
                "a2a.connection",
            ),
            (
                TransportError::Timeout {
                    phase: TimeoutPhase::IdleStream,
                    after: Duration::from_secs(1),
                },
                "a2a.timeout",
            ),
            (TransportError::Tls("bad cert".into()), "a2a.tls"),
            (
                TransportError::ResponseTooLarge {
                    what: "response body",
                    limit: 10,
                },
                "a2a.response_too_large",
            ),
            (
                TransportError::InvalidResponse("x".into()),
                "a2a.invalid_response",
            ),
            (
                TransportError::UnsupportedBinding { offered: vec![] },
                "a2a.unsupported_binding",
            ),
            (
                TransportError::Headers(Failure::new(ErrorCode::AuthHostMismatch, "no")),
                "auth.host_mismatch",
            ),
        ];
        for (e, code) in cases {
            assert_eq!(e.to_failure().code, code, "{e}");
            assert_eq!(e.code_str(), code);
        }
    }

    #[test]
    fn remote_details_are_kept() {
        let e = TransportError::Remote(RemoteError {
            code: ErrorCode::A2aTaskNotFound,
            message: "Task not found".into(),
            numeric_code: Some(-32001),
            status: None,
            reason: Some("TASK_NOT_FOUND".into()),
            http_status: Some(200),
            info: Box::default(),
        });
        let f = Failure::from(e);
        assert_eq!(f.code, "a2a.task_not_found");
        assert_eq!(f.details["remoteCode"], -32001);
        assert_eq!(f.details["httpStatus"], 200);
        assert_eq!(f.details["reason"], "TASK_NOT_FOUND");
    }

    #[test]
    fn excerpts_are_bounded_single_line_and_redacted() {
        let html = b"<html>\n<body>\r\n<h1>502 Bad Gateway</h1>\n\tAuthorization: Bearer abc.def.ghi token=s3cr3t {\"password\":\"hunter2\"}</body></html>";
        let e = excerpt(html);
        assert!(
            e.starts_with("<html> <body> <h1>502 Bad Gateway</h1>"),
            "{e}"
        );
        assert!(!e.contains("abc.def.ghi"), "{e}");
        assert!(!e.contains("s3cr3t"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        assert!(!e.contains('\n'));
        let long = vec![b'x'; 10_000];
        let e = excerpt(&long);
        assert!(e.len() <= EXCERPT_LIMIT + '…'.len_utf8());
        let utf = "é".repeat(500);
        assert!(excerpt(utf.as_bytes()).ends_with('…'));
    }
}
