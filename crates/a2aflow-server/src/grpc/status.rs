//! An [`A2aError`] as a gRPC status, the way the official Python SDK's gRPC handler answers:
//! the code named by the A2A 1.0.1 table (`NOT_FOUND`, `INVALID_ARGUMENT`, …), the message, and
//! a `google.rpc.Status` in `grpc-status-details-bin` with the `ErrorInfo` (reason, domain
//! `a2a-protocol.org`, metadata) and, for a validation failure, a `BadRequest` with the field
//! violations. a2aflow's own client maps the reason to the same `a2a.*` codes as on the other
//! bindings.

use crate::wire_error::{A2aError, ERROR_DOMAIN};
use prost::Message as _;
use serde_json::Value;
use std::collections::HashMap;
use tonic::{Code, Status};

/// `google.rpc.Status`.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
    #[prost(message, repeated, tag = "3")]
    details: Vec<ProtoAny>,
}

/// `google.protobuf.Any`.
#[derive(Clone, PartialEq, prost::Message)]
struct ProtoAny {
    #[prost(string, tag = "1")]
    type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    value: Vec<u8>,
}

/// `google.rpc.ErrorInfo`.
#[derive(Clone, PartialEq, prost::Message)]
struct ErrorInfo {
    #[prost(string, tag = "1")]
    reason: String,
    #[prost(string, tag = "2")]
    domain: String,
    #[prost(map = "string, string", tag = "3")]
    metadata: HashMap<String, String>,
}

/// `google.rpc.BadRequest`.
#[derive(Clone, PartialEq, prost::Message)]
struct BadRequest {
    #[prost(message, repeated, tag = "1")]
    field_violations: Vec<FieldViolation>,
}

/// `google.rpc.BadRequest.FieldViolation`.
#[derive(Clone, PartialEq, prost::Message)]
struct FieldViolation {
    #[prost(string, tag = "1")]
    field: String,
    #[prost(string, tag = "2")]
    description: String,
}

/// The gRPC code of a `google.rpc.Code` name.
fn code_named(name: &str) -> Code {
    match name {
        "INVALID_ARGUMENT" => Code::InvalidArgument,
        "NOT_FOUND" => Code::NotFound,
        "FAILED_PRECONDITION" => Code::FailedPrecondition,
        "UNAUTHENTICATED" => Code::Unauthenticated,
        "INTERNAL" => Code::Internal,
        _ => Code::Unknown,
    }
}

/// The status of `e`.
pub(crate) fn status(e: &A2aError) -> Status {
    let (_, name) = e.kind.rest_status();
    let code = code_named(name);
    let metadata = e
        .metadata
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), v)
        })
        .collect();
    let info = ErrorInfo {
        reason: e.kind.reason().to_owned(),
        domain: ERROR_DOMAIN.to_owned(),
        metadata,
    };
    let mut details = vec![ProtoAny {
        type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
        value: info.encode_to_vec(),
    }];
    if !e.violations.is_empty() {
        let bad = BadRequest {
            field_violations: e
                .violations
                .iter()
                .map(|(field, description)| FieldViolation {
                    field: field.clone(),
                    description: description.clone(),
                })
                .collect(),
        };
        details.push(ProtoAny {
            type_url: "type.googleapis.com/google.rpc.BadRequest".into(),
            value: bad.encode_to_vec(),
        });
    }
    let rpc = RpcStatus {
        code: code as i32,
        message: e.message.clone(),
        details,
    };
    Status::with_details(code, e.message.clone(), rpc.encode_to_vec().into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire_error::ErrorKind;

    #[test]
    fn each_kind_has_the_sdk_code_and_its_reason_in_the_details() {
        let table = [
            (ErrorKind::TaskNotFound, Code::NotFound, "TASK_NOT_FOUND"),
            (
                ErrorKind::TaskNotCancelable,
                Code::FailedPrecondition,
                "TASK_NOT_CANCELABLE",
            ),
            (
                ErrorKind::UnsupportedOperation,
                Code::FailedPrecondition,
                "UNSUPPORTED_OPERATION",
            ),
            (
                ErrorKind::VersionNotSupported,
                Code::FailedPrecondition,
                "VERSION_NOT_SUPPORTED",
            ),
            (
                ErrorKind::InvalidParams,
                Code::InvalidArgument,
                "INVALID_PARAMS",
            ),
            (
                ErrorKind::Unauthenticated,
                Code::Unauthenticated,
                "UNAUTHENTICATED",
            ),
            (ErrorKind::Internal, Code::Internal, "INTERNAL_ERROR"),
        ];
        for (kind, code, reason) in table {
            let s = status(&A2aError::new(kind, "words"));
            assert_eq!(s.code(), code, "{kind:?}");
            assert_eq!(s.message(), "words");
            let rpc = RpcStatus::decode(s.details()).unwrap();
            assert_eq!(rpc.code, code as i32);
            let info = ErrorInfo::decode(rpc.details[0].value.as_slice()).unwrap();
            assert_eq!(
                (info.reason.as_str(), info.domain.as_str()),
                (reason, ERROR_DOMAIN)
            );
        }
    }

    #[test]
    fn a_validation_failure_carries_its_field_violations() {
        let e = A2aError::fields(vec![("id".into(), "must not be empty".into())]);
        let rpc = RpcStatus::decode(status(&e).details()).unwrap();
        assert_eq!(rpc.details.len(), 2);
        let bad = BadRequest::decode(rpc.details[1].value.as_slice()).unwrap();
        assert_eq!(bad.field_violations[0].field, "id");
        assert_eq!(bad.field_violations[0].description, "must not be empty");
    }
}
