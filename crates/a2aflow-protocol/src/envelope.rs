//! Reading A2A error envelopes — JSON-RPC `error` objects and `google.rpc.Status` — whatever the
//! HTTP status they came with, and mapping them to stable `a2a.*` codes.
//!
//! Mapping rules (see `docs/error-codes.md`): a JSON-RPC envelope maps by its numeric code
//! (-32001..-32009 and the standard -32700..-32603), falling back to the `ErrorInfo` reason for
//! codes it does not know; a `google.rpc.Status` maps by its `ErrorInfo` reason, falling back to
//! the status name. Anything unknown is `a2a.remote_error` with the reason kept in the details.

use a2aflow_model::ErrorCode;
use serde_json::Value;

use crate::error::{
    DETAIL_BYTES_LIMIT, DETAILS_LIMIT, METADATA_LIMIT, RemoteDetails, RemoteError, TransportError,
    excerpt,
};
use serde_json::Map;

/// Largest agent message kept in a [`RemoteError`].
const MESSAGE_LIMIT: usize = 512;

/// The code for an A2A / JSON-RPC numeric error code.
pub fn code_for_jsonrpc(code: i64) -> Option<ErrorCode> {
    Some(match code {
        -32001 => ErrorCode::A2aTaskNotFound,
        -32002 => ErrorCode::A2aTaskNotCancelable,
        -32003 => ErrorCode::A2aPushNotificationNotSupported,
        -32004 => ErrorCode::A2aUnsupportedOperation,
        -32005 => ErrorCode::A2aContentTypeNotSupported,
        -32006 => ErrorCode::A2aInvalidAgentResponse,
        -32007 => ErrorCode::A2aExtendedCardNotConfigured,
        -32008 => ErrorCode::A2aExtensionSupportRequired,
        -32009 => ErrorCode::A2aVersionNotSupported,
        -32700 => ErrorCode::A2aParseError,
        -32600 => ErrorCode::A2aInvalidRequest,
        -32601 => ErrorCode::A2aMethodNotFound,
        -32602 => ErrorCode::A2aInvalidParams,
        -32603 => ErrorCode::A2aInternal,
        _ => return None,
    })
}

/// The code for an `ErrorInfo` reason (A2A reasons and the JSON-RPC ones Python emits).
pub fn code_for_reason(reason: &str) -> Option<ErrorCode> {
    Some(match reason {
        "TASK_NOT_FOUND" => ErrorCode::A2aTaskNotFound,
        "TASK_NOT_CANCELABLE" => ErrorCode::A2aTaskNotCancelable,
        "PUSH_NOTIFICATION_NOT_SUPPORTED" => ErrorCode::A2aPushNotificationNotSupported,
        "UNSUPPORTED_OPERATION" => ErrorCode::A2aUnsupportedOperation,
        "CONTENT_TYPE_NOT_SUPPORTED" | "UNSUPPORTED_CONTENT_TYPE" => {
            ErrorCode::A2aContentTypeNotSupported
        }
        "INVALID_AGENT_RESPONSE" => ErrorCode::A2aInvalidAgentResponse,
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED" | "EXTENDED_CARD_NOT_CONFIGURED" => {
            ErrorCode::A2aExtendedCardNotConfigured
        }
        "EXTENSION_SUPPORT_REQUIRED" => ErrorCode::A2aExtensionSupportRequired,
        "VERSION_NOT_SUPPORTED" => ErrorCode::A2aVersionNotSupported,
        "PARSE_ERROR" => ErrorCode::A2aParseError,
        "INVALID_REQUEST" => ErrorCode::A2aInvalidRequest,
        "METHOD_NOT_FOUND" => ErrorCode::A2aMethodNotFound,
        "INVALID_PARAMS" => ErrorCode::A2aInvalidParams,
        "INTERNAL_ERROR" | "INTERNAL" => ErrorCode::A2aInternal,
        _ => return None,
    })
}

/// The code for a `google.rpc.Status` status name without a known reason.
fn code_for_status(status: &str) -> Option<ErrorCode> {
    Some(match status {
        "INVALID_ARGUMENT" => ErrorCode::A2aInvalidParams,
        // The Python client reads a 404 without ErrorInfo as "method not found".
        "NOT_FOUND" | "UNIMPLEMENTED" => ErrorCode::A2aMethodNotFound,
        "INTERNAL" => ErrorCode::A2aInternal,
        "UNAUTHENTICATED" | "PERMISSION_DENIED" => ErrorCode::AuthRejected,
        _ => return None,
    })
}

/// What the typed details of an envelope say: the first `ErrorInfo`'s reason, domain and
/// metadata, and the other details, bounded and redacted.
#[derive(Default)]
struct Details {
    reason: Option<String>,
    domain: Option<String>,
    metadata: Map<String, Value>,
    others: Vec<Value>,
}

fn is_error_info(v: &Value) -> bool {
    let ty = v.get("@type").and_then(Value::as_str).unwrap_or_default();
    if ty.is_empty() {
        return v.get("reason").is_some();
    }
    ty.ends_with("google.rpc.ErrorInfo")
}

/// A redacted copy of `v`, or only its `@type` when its JSON is larger than the limit.
fn bounded_detail(v: &Value) -> Value {
    let policy = crate::wirelog::RedactionPolicy::new();
    let redacted = crate::wirelog::redact_json(v, &policy);
    if serde_json::to_vec(&redacted).map_or(usize::MAX, |b| b.len()) <= DETAIL_BYTES_LIMIT {
        return redacted;
    }
    let mut kept = Map::new();
    if let Some(ty) = v.get("@type").and_then(Value::as_str) {
        kept.insert("@type".into(), Value::String(bounded(ty)));
    }
    kept.insert(
        "omitted".into(),
        Value::String("over the size limit".into()),
    );
    Value::Object(kept)
}

/// Reads a list (or a single object) of `@type` details.
fn details_in(details: Option<&Value>) -> Details {
    let items: Vec<&Value> = match details {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(obj @ Value::Object(_)) => vec![obj],
        _ => Vec::new(),
    };
    let mut out = Details::default();
    for item in items {
        if out.reason.is_none() && is_error_info(item) {
            out.reason = item.get("reason").and_then(Value::as_str).map(bounded);
            out.domain = item.get("domain").and_then(Value::as_str).map(bounded);
            let policy = crate::wirelog::RedactionPolicy::new();
            let meta = item
                .get("metadata")
                .map(|m| crate::wirelog::redact_json(m, &policy));
            if let Some(Value::Object(meta)) = meta {
                out.metadata = meta
                    .iter()
                    .take(METADATA_LIMIT)
                    .map(|(k, v)| (bounded(k), bounded_detail(v)))
                    .collect();
            }
        } else if item.is_object() && out.others.len() < DETAILS_LIMIT {
            out.others.push(bounded_detail(item));
        }
    }
    out
}

fn bounded(message: &str) -> String {
    if message.len() <= MESSAGE_LIMIT {
        return message.to_owned();
    }
    excerpt(message.as_bytes())
}

/// Reads the `error` member of a JSON body as an A2A error envelope.
///
/// Returns `None` when the value holds no recognisable error envelope (no `error` member, or one
/// without a numeric `code`).
pub fn remote_error(body: &Value, http_status: Option<u16>) -> Option<RemoteError> {
    let err = body.get("error")?;
    let numeric = err.get("code").and_then(|c| {
        c.as_i64()
            .or_else(|| c.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
    })?;
    let message = bounded(
        err.get("message")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    );
    let status = err.get("status").and_then(Value::as_str).map(str::to_owned);
    let is_status_envelope = status.is_some() || err.get("details").is_some() || numeric > 0;
    let (details, code) = if is_status_envelope {
        let details = details_in(err.get("details"));
        let code = details
            .reason
            .as_deref()
            .and_then(code_for_reason)
            .or_else(|| status.as_deref().and_then(code_for_status))
            .or(match numeric {
                401 | 403 => Some(ErrorCode::AuthRejected),
                404 => Some(ErrorCode::A2aMethodNotFound),
                400 => Some(ErrorCode::A2aInvalidParams),
                500 => Some(ErrorCode::A2aInternal),
                _ => None,
            });
        (details, code)
    } else {
        let details = details_in(err.get("data"));
        let code = code_for_jsonrpc(numeric)
            .or_else(|| details.reason.as_deref().and_then(code_for_reason));
        (details, code)
    };
    Some(RemoteError {
        code: code.unwrap_or(ErrorCode::A2aRemoteError),
        message,
        numeric_code: Some(numeric),
        status,
        reason: details.reason,
        http_status,
        info: Box::new(RemoteDetails {
            domain: details.domain,
            metadata: details.metadata,
            details: details.others,
            retry_after: None,
        }),
    })
}

/// Classifies a body that came with an error, or that is not what a call expected.
///
/// `body` is parsed as JSON; an error envelope becomes [`TransportError::Remote`] whatever the
/// status. Otherwise a 401/403 is [`TransportError::AuthRejected`], another non-2xx status is
/// [`TransportError::HttpStatus`] with a redacted excerpt, and a 2xx is `None` (the caller
/// decides what the body should have been).
pub fn classify_error_body(status: u16, body: &[u8]) -> Option<TransportError> {
    if let Ok(v) = serde_json::from_slice::<Value>(body)
        && let Some(r) = remote_error(&v, Some(status))
    {
        return Some(TransportError::Remote(r));
    }
    match status {
        200..=299 => None,
        401 | 403 => Some(TransportError::AuthRejected { status }),
        _ => Some(TransportError::HttpStatus {
            status,
            excerpt: excerpt(body),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(serde::Deserialize)]
    struct Transcript {
        file: String,
        status: u16,
        body: String,
    }

    /// Expected code for every error body the official Python SDK produced in the transcripts
    /// (`tests/fixtures/transcript_errors.json`, extracted from the shared fixture index).
    const EXPECTED: &[(&str, &str)] = &[
        (
            "compat03/04_jsonrpc_v03_method_with_v1_header.txt",
            "a2a.internal",
        ),
        (
            "compat03/05_jsonrpc_v1_method_no_header.txt",
            "a2a.version_not_supported",
        ),
        (
            "compat03/10_jsonrpc_v03_tasks_get_unknown.txt",
            "a2a.task_not_found",
        ),
        (
            "compat03/11_jsonrpc_v03_tasks_cancel_completed.txt",
            "a2a.task_not_cancelable",
        ),
        (
            "compat03/12b_rest_v03_message_send_jsonrpc_shaped_body.txt",
            "a2a.invalid_params",
        ),
        (
            "compat03/13_rest_v1_message_send_no_header.txt",
            "a2a.version_not_supported",
        ),
        ("compat03/15_rest_v03_card.txt", "a2a.unsupported_operation"),
        (
            "compat03/17_jsonrpc_v03_bad_params.txt",
            "a2a.invalid_request",
        ),
        ("jsonrpc/30_send_crash.txt", "a2a.internal"),
        ("jsonrpc/e01_unknown_method.txt", "a2a.method_not_found"),
        ("jsonrpc/e02_v03_method_name.txt", "a2a.method_not_found"),
        (
            "jsonrpc/e03_params_missing_message.txt",
            "a2a.invalid_params",
        ),
        ("jsonrpc/e04_params_wrong_type.txt", "a2a.invalid_params"),
        (
            "jsonrpc/e05_params_v03_shaped_message.txt",
            "a2a.invalid_params",
        ),
        ("jsonrpc/e06_params_not_object.txt", "a2a.invalid_request"),
        ("jsonrpc/e07_get_unknown_task.txt", "a2a.task_not_found"),
        ("jsonrpc/e08_cancel_unknown_task.txt", "a2a.task_not_found"),
        (
            "jsonrpc/e09_cancel_completed_task.txt",
            "a2a.task_not_cancelable",
        ),
        (
            "jsonrpc/e09b_cancel_already_canceled_task.txt",
            "a2a.task_not_cancelable",
        ),
        (
            "jsonrpc/e10_subscribe_terminal_task.txt",
            "a2a.unsupported_operation",
        ),
        (
            "jsonrpc/e11_subscribe_unknown_task.txt",
            "a2a.task_not_found",
        ),
        (
            "jsonrpc/e12_send_to_terminal_task.txt",
            "a2a.unsupported_operation",
        ),
        ("jsonrpc/e13_send_unknown_task_id.txt", "a2a.task_not_found"),
        (
            "jsonrpc/e14_send_context_mismatch.txt",
            "a2a.invalid_params",
        ),
        ("jsonrpc/e15_malformed_json.txt", "a2a.parse_error"),
        ("jsonrpc/e16_batch_request.txt", "a2a.invalid_request"),
        (
            "jsonrpc/e17_wrong_jsonrpc_version.txt",
            "a2a.invalid_request",
        ),
        ("jsonrpc/e18_notification_no_id.txt", "a2a.task_not_found"),
        ("jsonrpc/e19_missing_method.txt", "a2a.invalid_request"),
        (
            "jsonrpc/e20_push_config_unsupported.txt",
            "a2a.push_notification_not_supported",
        ),
        (
            "jsonrpc/e21_extended_card_unsupported.txt",
            "a2a.unsupported_operation",
        ),
        (
            "jsonrpc/e22_negative_history_length.txt",
            "a2a.invalid_params",
        ),
        (
            "jsonrpc/e23_list_tasks_page_size_too_big.txt",
            "a2a.invalid_params",
        ),
        (
            "jsonrpc/e24_list_tasks_bad_page_token.txt",
            "a2a.invalid_params",
        ),
        ("jsonrpc/e27_bool_id.txt", "a2a.invalid_request"),
        ("rest/28_send_crash.txt", "a2a.internal"),
        ("rest/e03_malformed_json.txt", "a2a.invalid_request"),
        ("rest/e04_missing_message.txt", "a2a.invalid_params"),
        ("rest/e05_v03_shaped_message.txt", "a2a.invalid_params"),
        ("rest/e06_get_unknown_task.txt", "a2a.task_not_found"),
        ("rest/e07_cancel_unknown_task.txt", "a2a.task_not_found"),
        (
            "rest/e08_cancel_completed_task.txt",
            "a2a.task_not_cancelable",
        ),
        (
            "rest/e08b_cancel_already_canceled_task.txt",
            "a2a.task_not_cancelable",
        ),
        (
            "rest/e09_subscribe_terminal_task.txt",
            "a2a.unsupported_operation",
        ),
        (
            "rest/e10_send_to_terminal_task.txt",
            "a2a.unsupported_operation",
        ),
        (
            "rest/e11_push_config_unsupported.txt",
            "a2a.push_notification_not_supported",
        ),
        (
            "rest/e12_extended_card_unsupported.txt",
            "a2a.unsupported_operation",
        ),
        (
            "rest/e14_list_tasks_page_size_too_big.txt",
            "a2a.invalid_params",
        ),
        ("rest/e16_stream_malformed_json.txt", "a2a.invalid_request"),
        ("rest/e17_negative_history_length.txt", "a2a.invalid_params"),
        ("rest/e18_send_unknown_task_id.txt", "a2a.task_not_found"),
        (
            "version/jsonrpc_01_no_header.txt",
            "a2a.version_not_supported",
        ),
        ("version/jsonrpc_02_v0.3.txt", "a2a.version_not_supported"),
        ("version/jsonrpc_06_v2.0.txt", "a2a.version_not_supported"),
        (
            "version/jsonrpc_07_garbage.txt",
            "a2a.version_not_supported",
        ),
        (
            "version/jsonrpc_08_stream_no_header.txt",
            "a2a.version_not_supported",
        ),
        (
            "version/jsonrpc_09_v03_method_no_header.txt",
            "a2a.method_not_found",
        ),
        (
            "version/jsonrpc_10_query_param.txt",
            "a2a.version_not_supported",
        ),
        ("version/rest_01_no_header.txt", "a2a.version_not_supported"),
        ("version/rest_02_v0.3.txt", "a2a.version_not_supported"),
        ("version/rest_04_v2.0.txt", "a2a.version_not_supported"),
        (
            "version/rest_05_get_task_no_header.txt",
            "a2a.version_not_supported",
        ),
        (
            "version/rest_06_stream_no_header.txt",
            "a2a.version_not_supported",
        ),
        (
            "version/rest_07_query_param.txt",
            "a2a.version_not_supported",
        ),
    ];

    #[test]
    fn every_transcript_error_body_maps_to_its_code() {
        let all: Vec<Transcript> =
            serde_json::from_str(include_str!("../tests/fixtures/transcript_errors.json")).unwrap();
        assert_eq!(all.len(), EXPECTED.len(), "fixture and table disagree");
        for t in &all {
            let want = EXPECTED
                .iter()
                .find(|(f, _)| *f == t.file)
                .unwrap_or_else(|| panic!("no expectation for {}", t.file))
                .1;
            let got = classify_error_body(t.status, t.body.as_bytes())
                .unwrap_or_else(|| panic!("{} not classified as an error", t.file));
            assert_eq!(got.code_str(), want, "{}", t.file);
            let f = got.to_failure();
            assert_eq!(f.details["httpStatus"], t.status, "{}", t.file);
            assert!(f.details.contains_key("remoteCode"), "{}", t.file);
        }
    }

    #[test]
    fn jsonrpc_envelope_keeps_code_reason_and_status() {
        let body = json!({"error":{"code":-32001,"message":"Task not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{}}]},"id":7,"jsonrpc":"2.0"});
        let r = remote_error(&body, Some(500)).unwrap();
        assert_eq!(r.code, ErrorCode::A2aTaskNotFound);
        assert_eq!(r.numeric_code, Some(-32001));
        assert_eq!(r.reason.as_deref(), Some("TASK_NOT_FOUND"));
        assert_eq!(r.http_status, Some(500));
    }

    #[test]
    fn every_a2a_and_jsonrpc_code_maps() {
        let table = [
            (-32001, "a2a.task_not_found"),
            (-32002, "a2a.task_not_cancelable"),
            (-32003, "a2a.push_notification_not_supported"),
            (-32004, "a2a.unsupported_operation"),
            (-32005, "a2a.content_type_not_supported"),
            (-32006, "a2a.invalid_agent_response"),
            (-32007, "a2a.extended_agent_card_not_configured"),
            (-32008, "a2a.extension_support_required"),
            (-32009, "a2a.version_not_supported"),
            (-32700, "a2a.parse_error"),
            (-32600, "a2a.invalid_request"),
            (-32601, "a2a.method_not_found"),
            (-32602, "a2a.invalid_params"),
            (-32603, "a2a.internal"),
            (-32050, "a2a.remote_error"),
        ];
        for (code, want) in table {
            let body = json!({"jsonrpc":"2.0","id":1,"error":{"code":code,"message":"m"}});
            assert_eq!(
                remote_error(&body, None).unwrap().code.as_str(),
                want,
                "{code}"
            );
        }
    }

    #[test]
    fn unknown_jsonrpc_code_falls_back_to_reason_and_data_may_be_anything() {
        let body = json!({"error":{"code":-32099,"message":"m","data":{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"EXTENSION_SUPPORT_REQUIRED"}}});
        assert_eq!(
            remote_error(&body, None).unwrap().code,
            ErrorCode::A2aExtensionSupportRequired
        );
        let body =
            json!({"error":{"code":-32601,"message":"Method not found","data":{"method":"x"}}});
        assert_eq!(
            remote_error(&body, None).unwrap().code,
            ErrorCode::A2aMethodNotFound
        );
        let body = json!({"error":{"code":-32601,"message":"x","data":null}});
        assert_eq!(
            remote_error(&body, None).unwrap().code,
            ErrorCode::A2aMethodNotFound
        );
    }

    #[test]
    fn status_envelope_maps_by_reason_then_status() {
        let body = json!({"error":{"code":400,"status":"FAILED_PRECONDITION","message":"x","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[]},{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"EXTENSION_SUPPORT_REQUIRED"}]}});
        let r = remote_error(&body, Some(400)).unwrap();
        assert_eq!(r.code, ErrorCode::A2aExtensionSupportRequired);
        assert_eq!(r.status.as_deref(), Some("FAILED_PRECONDITION"));
        let body =
            json!({"error":{"code":404,"status":"NOT_FOUND","message":"Resource not found"}});
        assert_eq!(
            remote_error(&body, Some(404)).unwrap().code,
            ErrorCode::A2aMethodNotFound
        );
        let body = json!({"error":{"code":409,"status":"ABORTED","message":"x","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"SOMETHING_NEW"}]}});
        let r = remote_error(&body, Some(409)).unwrap();
        assert_eq!(r.code, ErrorCode::A2aRemoteError);
        assert_eq!(r.reason.as_deref(), Some("SOMETHING_NEW"));
        let body = json!({"error":{"code":401,"status":"UNAUTHENTICATED","message":"no"}});
        assert_eq!(
            remote_error(&body, Some(401)).unwrap().code,
            ErrorCode::AuthRejected
        );
    }

    #[test]
    fn non_envelopes_become_http_status_or_nothing() {
        let html = b"<html><body><h1>502 Bad Gateway</h1></body></html>";
        match classify_error_body(502, html).unwrap() {
            TransportError::HttpStatus { status, excerpt } => {
                assert_eq!(status, 502);
                assert!(excerpt.contains("502 Bad Gateway"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            classify_error_body(401, b"denied"),
            Some(TransportError::AuthRejected { status: 401 })
        ));
        assert!(classify_error_body(200, b"{\"result\":{}}").is_none());
        // `error` that is not an object with a numeric code is not an envelope.
        assert!(classify_error_body(200, b"{\"error\":\"boom\"}").is_none());
        assert_eq!(
            classify_error_body(500, b"{\"error\":\"boom\"}")
                .unwrap()
                .code_str(),
            "a2a.http_status"
        );
    }

    #[test]
    fn error_info_domain_metadata_and_typed_details_are_kept_bounded_and_redacted() {
        let big = "z".repeat(DETAIL_BYTES_LIMIT * 2);
        let mut details = vec![
            json!({"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
                "domain": "a2a-protocol.org",
                "metadata": {"taskId": "t-9", "password": "hunter2"}}),
            json!({"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [
                {"field": "message.parts", "description": "must not be empty"}]}),
            json!({"@type": "type.googleapis.com/google.rpc.DebugInfo", "detail": big}),
        ];
        for i in 0..DETAILS_LIMIT * 2 {
            details.push(json!({"@type": "x.Other", "n": i}));
        }
        let status = json!({"error": {"code": 404, "status": "NOT_FOUND", "message": "gone",
            "details": details}});
        let r = remote_error(&status, Some(404)).unwrap();
        assert_eq!(r.code, ErrorCode::A2aTaskNotFound);
        let f = TransportError::Remote(r.with_retry_after(Some("Wed, 21 Oct 2026 07:28:00 GMT")))
            .to_failure();
        assert_eq!(f.details["domain"], "a2a-protocol.org");
        assert_eq!(f.details["metadata"]["taskId"], "t-9");
        assert_eq!(f.details["metadata"]["password"], "***");
        let kept = f.details["errorDetails"].as_array().unwrap();
        assert_eq!(kept.len(), DETAILS_LIMIT);
        assert_eq!(
            kept[0]["fieldViolations"][0]["field"],
            json!("message.parts")
        );
        assert_eq!(kept[1]["@type"], "type.googleapis.com/google.rpc.DebugInfo");
        assert!(
            kept[1].get("detail").is_none(),
            "an oversized detail keeps its type only"
        );
        assert_eq!(f.details["retryAfter"], "Wed, 21 Oct 2026 07:28:00 GMT");
        assert!(f.details.get("retryAfterSecs").is_none());
        // JSON-RPC carries the same details in `data`.
        let rpc = json!({"error": {"code": -32001, "message": "Task not found", "data": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
             "domain": "a2a-protocol.org", "metadata": {"taskId": "t-1"}}]}});
        let f = TransportError::Remote(remote_error(&rpc, Some(200)).unwrap()).to_failure();
        assert_eq!(f.details["metadata"]["taskId"], "t-1");
        assert_eq!(f.details["domain"], "a2a-protocol.org");
        // A Retry-After too long to be one is dropped.
        let r = remote_error(&rpc, None)
            .unwrap()
            .with_retry_after(Some(&"9".repeat(100)));
        assert!(r.info.retry_after.is_none());
    }

    #[test]
    fn long_remote_messages_are_bounded() {
        let msg = "x".repeat(10_000);
        let body = json!({"error":{"code":-32603,"message":msg}});
        assert!(remote_error(&body, None).unwrap().message.len() < 600);
    }
}
