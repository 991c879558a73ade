//! Response bodies: whole JSON documents, plain text and SSE streams.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use serde_json::Value;

/// The error a streaming body may end with.
pub(crate) type BodyError = Box<dyn std::error::Error + Send + Sync>;
/// Every response body.
pub(crate) type Body = UnsyncBoxBody<Bytes, BodyError>;

/// A complete body.
pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// A response with `status`, `content_type` and `body`.
pub(crate) fn response(status: u16, content_type: &'static str, body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// A JSON document (`application/json`).
pub(crate) fn json(status: u16, value: &Value) -> Response<Body> {
    response(status, "application/json", full(value.to_string()))
}

/// A successful HTTP+JSON answer (`application/a2a+json`, as the SDK sends it).
pub(crate) fn a2a_json(value: &Value) -> Response<Body> {
    response(200, "application/a2a+json", full(value.to_string()))
}

/// A plain-text answer (the SDK's `Not Found`, `Method Not Allowed`).
pub(crate) fn text(status: u16, words: &'static str) -> Response<Body> {
    response(status, "text/plain; charset=utf-8", full(words))
}
