//! An [`A2aError`] as a gRPC status, the way the official Python SDK's gRPC handler answers:
//! the code named by the A2A 1.0.1 table (`NOT_FOUND`, `INVALID_ARGUMENT`, …), the message, and
//! a `google.rpc.Status` in `grpc-status-details-bin` with the `ErrorInfo` (reason, domain
//! `a2a-protocol.org`, metadata) and, for a validation failure, a `BadRequest` with the field
//! violations. a2aflow's own client maps the reason to the same `a2a.*` codes as on the other
//! bindings.

use crate::wire_error::{A2aError, ERROR_DOMAIN};
use serde_json::Value;
use std::collections::HashMap;
use tonic::{Code, Status};
use tonic_types::{BadRequest, ErrorDetail, ErrorInfo, FieldViolation, StatusExt as _};

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
    let metadata: HashMap<String, String> = e
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
    let mut details = vec![ErrorDetail::ErrorInfo(ErrorInfo::new(
        e.kind.reason(),
        ERROR_DOMAIN,
        metadata,
    ))];
    if !e.violations.is_empty() {
        details.push(ErrorDetail::BadRequest(BadRequest::new(
            e.violations
                .iter()
                .map(|(field, description)| FieldViolation::new(field, description))
                .collect::<Vec<_>>(),
        )));
    }
    Status::with_error_details_vec(code, e.message.clone(), details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire_error::ErrorKind;
    use prost::Message as _;
    use tonic_types::pb::{
        BadRequest as PbBadRequest, ErrorInfo as PbErrorInfo, Status as RpcStatus,
    };

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
            let info = PbErrorInfo::decode(rpc.details[0].value.as_slice()).unwrap();
            assert_eq!(rpc.details[0].type_url, ErrorInfo::TYPE_URL);
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
        assert_eq!(rpc.details[1].type_url, BadRequest::TYPE_URL);
        let bad = PbBadRequest::decode(rpc.details[1].value.as_slice()).unwrap();
        assert_eq!(bad.field_violations[0].field, "id");
        assert_eq!(bad.field_violations[0].description, "must not be empty");
    }
}
