//! A gRPC status → [`TransportError`]: the agent's `google.rpc.Status` (from the
//! `grpc-status-details-bin` trailer) maps by its `ErrorInfo` reason through the same table as
//! the other bindings ([`crate::envelope`]); a status without one maps by its code; faults of
//! the connection itself, and what the client refused to read, keep the transport's own codes.

use std::time::Duration;

use prost::Message as _;
use serde_json::{Map, Value, json};
use tonic::{Code, Status};
use tonic_types::pb::{BadRequest, ErrorInfo, Status as RpcStatus};

use crate::envelope::remote_error;
use crate::error::{TimeoutPhase, TransportError};
use crate::http_client::{Cause, chain, find_cause};

const ERROR_INFO: &str = tonic_types::ErrorInfo::TYPE_URL;
const BAD_REQUEST: &str = tonic_types::BadRequest::TYPE_URL;

/// A detail as the ProtoJSON `Any` the other bindings carry: `ErrorInfo` and `BadRequest` with
/// their fields, any other type by its `@type` alone.
fn detail_json(type_url: &str, value: &[u8]) -> Value {
    match type_url {
        ERROR_INFO => match ErrorInfo::decode(value) {
            Ok(info) => json!({
                "@type": ERROR_INFO,
                "reason": info.reason,
                "domain": info.domain,
                "metadata": info.metadata.into_iter().map(|(k, v)| (k, Value::String(v))).collect::<Map<_, _>>(),
            }),
            Err(_) => json!({"@type": ERROR_INFO, "undecodable": true}),
        },
        BAD_REQUEST => match BadRequest::decode(value) {
            Ok(b) => json!({
                "@type": BAD_REQUEST,
                "fieldViolations": b.field_violations.iter().map(|v| json!({"field": v.field, "description": v.description})).collect::<Vec<_>>(),
            }),
            Err(_) => json!({"@type": BAD_REQUEST, "undecodable": true}),
        },
        other => json!({ "@type": other }),
    }
}

/// The canonical name of a gRPC code (`NOT_FOUND`, …), as `google.rpc.Status` envelopes of the
/// HTTP bindings spell it.
pub(crate) fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// The HTTP status of an answer that was no gRPC answer at all (a proxy's error page), as tonic
/// names it: in a status it inferred from the HTTP status (no `grpc-status`), or in the error of
/// reading the page's bytes as gRPC messages.
fn http_status_of(message: &str) -> Option<u16> {
    [
        "mapped from HTTP status code ",
        "while receiving response with status: ",
    ]
    .iter()
    .find_map(|marker| {
        let rest = &message[message.find(marker)? + marker.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}

/// An answer that was no gRPC answer, with a status other than 200: the same errors the HTTP
/// bindings give a non-A2A answer (`a2a.http_status`; 401/403: `auth.rejected`).
fn non_grpc_answer(status: &Status) -> Option<TransportError> {
    let http = http_status_of(status.message()).filter(|s| *s != 200)?;
    Some(match http {
        401 | 403 => TransportError::AuthRejected { status: http },
        _ => TransportError::HttpStatus {
            status: http,
            excerpt: format!(
                "no gRPC answer ({})",
                crate::error::excerpt(status.message().as_bytes())
            ),
        },
    })
}

/// The header [`Marked`] adds beside a failed status the agent sent (in the answer's headers or
/// its trailers): tonic keeps every header but the status's own three as the status's metadata,
/// so a status that has it came from the agent.
const FROM_AGENT: &str = "a2aflow-status-from-agent";
/// [`FROM_AGENT`] as a header name, made at compile time (a `&str` key is parsed into a name on
/// every insert or lookup).
const FROM_AGENT_NAME: http::HeaderName = http::HeaderName::from_static(FROM_AGENT);
/// `grpc-status` as a header name, made at compile time (looked up in every answer's headers and
/// trailers).
const GRPC_STATUS: http::HeaderName = http::HeaderName::from_static("grpc-status");

/// Whether tonic made `status` on this side (its decode limit, a frame it cannot read) rather
/// than reading it from the agent's answer. The words alone cannot tell: a tonic server refusing
/// the request as over its limit sends the very words tonic's client uses for an answer over
/// the client's, and tonic adds the answer's headers to a status it makes while reading one.
fn made_here(status: &Status) -> bool {
    status.metadata().get(FROM_AGENT).is_none()
}

/// The gRPC channel with every failed status the agent sends marked ([`FROM_AGENT`]) before
/// tonic reads it.
#[derive(Debug, Clone)]
pub(crate) struct Marked<S>(pub(crate) S);

type GrpcResponse = http::Response<tonic::body::Body>;

impl<S> tower_service::Service<http::Request<tonic::body::Body>> for Marked<S>
where
    S: tower_service::Service<http::Request<tonic::body::Body>, Response = GrpcResponse>,
    S::Future: Send + 'static,
{
    type Response = GrpcResponse;
    type Error = S::Error;
    /// The channel's own future, its answer marked: named, so not boxed per call.
    type Future = futures_util::future::MapOk<S::Future, fn(GrpcResponse) -> GrpcResponse>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    /// A request that carries a [`SendGate`](crate::SendGate) in its extensions (a business
    /// command) gets the gate in front of its body.
    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let (mut parts, body) = request.into_parts();
        let body = match parts.extensions.remove::<crate::SendGate>() {
            Some(gate) => tonic::body::Body::new(crate::gate::GatedBody::new(body, Some(gate))),
            None => body,
        };
        let answer = self.0.call(http::Request::from_parts(parts, body));
        futures_util::TryFutureExt::map_ok(answer, mark as fn(GrpcResponse) -> GrpcResponse)
    }
}

/// Marks a failed status in `response`'s headers (a trailers-only answer) or trailers.
fn mark(response: GrpcResponse) -> GrpcResponse {
    use http_body_util::BodyExt as _;
    let (mut parts, body) = response.into_parts();
    mark_failed(&mut parts.headers);
    let body = body.map_frame(|mut frame| {
        if let Some(trailers) = frame.trailers_mut() {
            mark_failed(trailers);
        }
        frame
    });
    http::Response::from_parts(parts, tonic::body::Body::new(body))
}

fn mark_failed(headers: &mut http::HeaderMap) {
    if headers.get(&GRPC_STATUS).is_some_and(|s| s != "0") {
        headers.insert(FROM_AGENT_NAME, http::HeaderValue::from_static("1"));
    }
}

/// What the client itself refused to read: tonic's own statuses for a message over the size
/// limit (they name the client's own limit), and for bytes that are not a gRPC answer (framing,
/// compression, protobuf). The same words from the agent — a tonic server refusing the
/// *request* as over its limit, or as unreadable — are the agent's answer, mapped by its code.
fn local_refusal(status: &Status, limit: usize) -> Option<TransportError> {
    if !made_here(status) {
        return None;
    }
    let m = status.message();
    let names_own_limit = || m.ends_with(&format!("the limit is: {limit} bytes"));
    match status.code() {
        Code::OutOfRange | Code::ResourceExhausted
            if (m.starts_with("Error, decoded message length too large") && names_own_limit())
                || m.starts_with("Error decompressing: size limit") =>
        {
            Some(TransportError::ResponseTooLarge {
                what: "gRPC message",
                limit,
            })
        }
        Code::Internal
            if m.starts_with("protocol error")
                || m.starts_with("Unexpected EOF decoding stream")
                || m.starts_with("failed to decode Protobuf message")
                || m.starts_with("Error decompressing") =>
        {
            Some(TransportError::InvalidResponse(format!(
                "the agent's gRPC answer cannot be read: {}",
                crate::error::excerpt(m.as_bytes())
            )))
        }
        _ => None,
    }
}

/// A fault of the connection under the call (refused, reset, TLS, a connect timeout), when the
/// status stands for one: tonic keeps the hyper or I/O error as its source.
/// Whether tonic's `TimeoutExpired` is anywhere in the chain (tonic wraps it in its transport
/// error).
fn timeout_expired(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(e);
    for _ in 0..32 {
        match next {
            Some(s) if s.downcast_ref::<tonic::TimeoutExpired>().is_some() => return true,
            Some(s) => next = s.source(),
            None => return false,
        }
    }
    false
}

/// tonic's own end of the call's deadline (the `grpc-timeout` it was given) is the call's
/// timeout, whichever of tonic and the transport notices it first.
fn connection_fault(status: &Status, judged: Judged) -> Option<TransportError> {
    use std::error::Error as _;
    let source = status.source()?;
    if timeout_expired(source) {
        return Some(deadline(judged));
    }
    let connect_timeout = judged.connect_timeout;
    Some(match find_cause(source, true) {
        Some(Cause::Tls(m)) => TransportError::Tls(m),
        Some(Cause::TimedOut) => TransportError::Timeout {
            phase: TimeoutPhase::Connect,
            after: connect_timeout,
        },
        None => TransportError::Connection(chain(source)),
    })
}

/// The limits a status is judged against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Judged {
    /// The message size limit of the call.
    pub(crate) message_limit: usize,
    /// The connect timeout (a connect that timed out names it).
    pub(crate) connect_timeout: Duration,
    /// The call's budget (an agent's `DEADLINE_EXCEEDED` names it).
    pub(crate) budget: Duration,
    /// Whether that budget is the caller's deadline rather than the request timeout.
    pub(crate) budget_is_deadline: bool,
}

/// Maps a failed call's status.
pub(crate) fn classify(status: &Status, judged: Judged) -> TransportError {
    if let Some(e) = connection_fault(status, judged) {
        return e;
    }
    if let Some(e) = non_grpc_answer(status) {
        return e;
    }
    if let Some(e) = local_refusal(status, judged.message_limit) {
        return e;
    }
    let details: Vec<Value> = RpcStatus::decode(status.details())
        .map(|s| {
            s.details
                .iter()
                .map(|any| detail_json(&any.type_url, &any.value))
                .collect()
        })
        .unwrap_or_default();
    let has_reason = details.iter().any(|d| d.get("reason").is_some());
    if !has_reason && let Some(e) = by_code_alone(status, judged) {
        return e;
    }
    let envelope = json!({"error": {
        "code": status.code() as i32,
        "status": code_name(status.code()),
        "message": status.message(),
        "details": details,
    }});
    match remote_error(&envelope, None) {
        Some(r) => TransportError::Remote(r),
        None => TransportError::InvalidResponse("an unreadable gRPC status".into()),
    }
}

/// The call's budget ran out.
fn deadline(judged: Judged) -> TransportError {
    TransportError::Timeout {
        phase: if judged.budget_is_deadline {
            TimeoutPhase::Deadline
        } else {
            TimeoutPhase::Request
        },
        after: judged.budget,
    }
}

/// The codes that stand for the transport, not for the agent's verdict, when no `ErrorInfo`
/// says otherwise.
fn by_code_alone(status: &Status, judged: Judged) -> Option<TransportError> {
    let shown = crate::error::excerpt(status.message().as_bytes());
    Some(match status.code() {
        Code::Ok => TransportError::InvalidResponse(
            "the gRPC call ended with status OK and no answer".into(),
        ),
        Code::Unavailable => {
            TransportError::Connection(format!("the agent is unavailable: {shown}"))
        }
        Code::Cancelled => {
            TransportError::Connection(format!("the call was cancelled by the other side: {shown}"))
        }
        Code::Unknown if status.message().starts_with("Service was not ready") => {
            TransportError::Connection(shown)
        }
        Code::DeadlineExceeded => deadline(judged),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged() -> Judged {
        Judged {
            message_limit: 1024,
            connect_timeout: Duration::from_secs(3),
            budget: Duration::from_secs(7),
            budget_is_deadline: false,
        }
    }

    fn with_reason(code: Code, reason: &str) -> Status {
        use tonic_types::{ErrorDetail, StatusExt as _};
        let info = tonic_types::ErrorInfo::new(
            reason,
            "a2a-protocol.org",
            [("taskId".to_owned(), "t-1".to_owned())],
        );
        Status::with_error_details_vec(code, "from the agent", [ErrorDetail::ErrorInfo(info)])
    }

    /// Every gRPC code without an `ErrorInfo`: the code it maps to.
    #[test]
    fn every_status_code_without_error_info() {
        let table: &[(Code, &str)] = &[
            (Code::Ok, "a2a.invalid_response"),
            (Code::Cancelled, "a2a.connection"),
            (Code::Unknown, "a2a.remote_error"),
            (Code::InvalidArgument, "a2a.invalid_params"),
            (Code::DeadlineExceeded, "a2a.timeout"),
            (Code::NotFound, "a2a.method_not_found"),
            (Code::AlreadyExists, "a2a.remote_error"),
            (Code::PermissionDenied, "auth.rejected"),
            (Code::ResourceExhausted, "a2a.remote_error"),
            (Code::FailedPrecondition, "a2a.remote_error"),
            (Code::Aborted, "a2a.remote_error"),
            (Code::OutOfRange, "a2a.remote_error"),
            (Code::Unimplemented, "a2a.method_not_found"),
            (Code::Internal, "a2a.internal"),
            (Code::Unavailable, "a2a.connection"),
            (Code::DataLoss, "a2a.remote_error"),
            (Code::Unauthenticated, "auth.rejected"),
        ];
        assert_eq!(table.len(), 17, "every gRPC code is in the table");
        for (code, want) in table {
            let e = classify(&Status::new(*code, "said the agent"), judged());
            assert_eq!(e.code_str(), *want, "{code:?}: {e}");
            if let TransportError::Remote(r) = &e {
                assert_eq!(r.status.as_deref(), Some(code_name(*code)));
                assert_eq!(r.message, "said the agent");
            }
        }
    }

    /// Every A2A reason maps as on the other bindings, whatever code carries it.
    #[test]
    fn error_info_reasons_map_like_the_other_bindings() {
        let table: &[(Code, &str, &str)] = &[
            (Code::NotFound, "TASK_NOT_FOUND", "a2a.task_not_found"),
            (
                Code::FailedPrecondition,
                "TASK_NOT_CANCELABLE",
                "a2a.task_not_cancelable",
            ),
            (
                Code::FailedPrecondition,
                "PUSH_NOTIFICATION_NOT_SUPPORTED",
                "a2a.push_notification_not_supported",
            ),
            (
                Code::FailedPrecondition,
                "UNSUPPORTED_OPERATION",
                "a2a.unsupported_operation",
            ),
            (
                Code::InvalidArgument,
                "CONTENT_TYPE_NOT_SUPPORTED",
                "a2a.content_type_not_supported",
            ),
            (
                Code::Internal,
                "INVALID_AGENT_RESPONSE",
                "a2a.invalid_agent_response",
            ),
            (
                Code::FailedPrecondition,
                "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
                "a2a.extended_agent_card_not_configured",
            ),
            (
                Code::FailedPrecondition,
                "EXTENSION_SUPPORT_REQUIRED",
                "a2a.extension_support_required",
            ),
            (
                Code::FailedPrecondition,
                "VERSION_NOT_SUPPORTED",
                "a2a.version_not_supported",
            ),
            (Code::Unavailable, "TASK_NOT_FOUND", "a2a.task_not_found"),
            (Code::Aborted, "SOMETHING_NEW", "a2a.remote_error"),
        ];
        for (code, reason, want) in table {
            let e = classify(&with_reason(*code, reason), judged());
            assert_eq!(e.code_str(), *want, "{reason}");
            let TransportError::Remote(r) = e else {
                panic!("{reason}: not a remote error");
            };
            assert_eq!(r.reason.as_deref(), Some(*reason));
            assert_eq!(r.info.domain.as_deref(), Some("a2a-protocol.org"));
            assert_eq!(r.info.metadata["taskId"], "t-1");
            assert_eq!(r.numeric_code, Some(*code as i64));
        }
    }

    #[test]
    fn what_the_client_refused_to_read_keeps_its_own_codes() {
        let too_large = Status::out_of_range(
            "Error, decoded message length too large: found 2048 bytes, the limit is: 1024 bytes",
        );
        match classify(&too_large, judged()) {
            TransportError::ResponseTooLarge { what, limit } => {
                assert_eq!((what, limit), ("gRPC message", 1024));
            }
            other => panic!("{other}"),
        }
        for m in [
            "failed to decode Protobuf message: invalid wire type",
            "protocol error: received message with invalid compression flag: 7",
            "Unexpected EOF decoding stream.",
        ] {
            let e = classify(&Status::internal(m), judged());
            assert_eq!(e.code_str(), "a2a.invalid_response", "{m}");
        }
    }

    /// A status as the agent sent it (a trailers-only answer), read through [`Marked`].
    fn from_the_agent(code: Code, message: &str) -> Status {
        let mut answer = http::Response::new(tonic::body::Body::empty());
        let headers = answer.headers_mut();
        headers.insert("content-type", "application/grpc".parse().unwrap());
        headers.insert("grpc-status", (code as i32).into());
        headers.insert("grpc-message", message.parse().unwrap());
        Status::from_header_map(mark(answer).headers()).unwrap()
    }

    /// A status tonic makes while reading an answer carries the answer's headers: still its own.
    fn made_while_reading(status: Status) -> Status {
        let mut answer = http::Response::new(tonic::body::Body::empty());
        answer
            .headers_mut()
            .insert("content-type", "application/grpc".parse().unwrap());
        let mut status = status;
        *status.metadata_mut() =
            tonic::metadata::MetadataMap::from_headers(mark(answer).headers().clone());
        assert!(!status.metadata().is_empty());
        status
    }

    /// tonic's words for a message over a limit, or for bytes it cannot read: the client's own
    /// refusal when tonic made the status here (naming the client's limit), the agent's answer
    /// when the agent sent it (a tonic server refusing the request), whatever limit it names.
    #[test]
    fn the_same_words_from_the_agent_are_the_agents_refusal() {
        let own = "Error, decoded message length too large: found 2048 bytes, the limit is: \
                   1024 bytes";
        let other = "Error, decoded message length too large: found 2048 bytes, the limit is: \
                     512 bytes";
        let unreadable = "failed to decode Protobuf message: invalid wire type";
        let table: &[(Status, &str)] = &[
            (Status::out_of_range(own), "a2a.response_too_large"),
            (
                made_while_reading(Status::out_of_range(own)),
                "a2a.response_too_large",
            ),
            (from_the_agent(Code::OutOfRange, own), "a2a.remote_error"),
            (from_the_agent(Code::OutOfRange, other), "a2a.remote_error"),
            // Made here and naming another limit: no decode limit of this client.
            (Status::out_of_range(other), "a2a.remote_error"),
            (
                made_while_reading(Status::internal(unreadable)),
                "a2a.invalid_response",
            ),
            (from_the_agent(Code::Internal, unreadable), "a2a.internal"),
        ];
        for (status, want) in table {
            let e = classify(status, judged());
            assert_eq!(e.code_str(), *want, "{status:?}: {e}");
            if let TransportError::Remote(r) = &e {
                assert_eq!(r.status.as_deref(), Some(code_name(status.code())));
                assert_eq!(r.message, status.message());
            }
        }
    }

    #[test]
    fn an_agents_deadline_exceeded_names_the_calls_budget() {
        let j = Judged {
            budget_is_deadline: true,
            ..judged()
        };
        match classify(&Status::deadline_exceeded("late"), j) {
            TransportError::Timeout { phase, after } => {
                assert_eq!(
                    (phase, after),
                    (TimeoutPhase::Deadline, Duration::from_secs(7))
                );
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn tonics_own_deadline_is_the_calls_timeout() {
        let s = Status::from_error(Box::new(tonic::TimeoutExpired(())));
        match classify(&s, judged()) {
            TransportError::Timeout { phase, after } => {
                assert_eq!(
                    (phase, after),
                    (TimeoutPhase::Request, Duration::from_secs(7))
                );
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn an_answer_that_is_no_grpc_answer_keeps_its_http_status() {
        let inferred =
            Status::unavailable("grpc-status header missing, mapped from HTTP status code 502");
        match classify(&inferred, judged()) {
            TransportError::HttpStatus { status, .. } => assert_eq!(status, 502),
            other => panic!("{other}"),
        }
        let read = Status::internal(
            "protocol error: received message with invalid compression flag: 60 (valid flags are 0 and 1) while receiving response with status: 503 Service Unavailable",
        );
        assert_eq!(classify(&read, judged()).code_str(), "a2a.http_status");
        let auth =
            Status::unauthenticated("grpc-status header missing, mapped from HTTP status code 401");
        assert_eq!(classify(&auth, judged()).code_str(), "auth.rejected");
        // Bytes that are no gRPC message on a 200 stay an unreadable answer.
        let ok = Status::internal(
            "protocol error: received message with invalid compression flag: 60 (valid flags are 0 and 1) while receiving response with status: 200 OK",
        );
        assert_eq!(classify(&ok, judged()).code_str(), "a2a.invalid_response");
    }

    #[test]
    fn undecodable_details_fall_back_to_the_code() {
        let s = Status::with_details(Code::NotFound, "x", bytes::Bytes::from_static(b"\xff\xff"));
        assert_eq!(classify(&s, judged()).code_str(), "a2a.method_not_found");
    }
}
