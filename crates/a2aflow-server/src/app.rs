//! One request, routed: `/agents/{name}/.well-known/agent-card.json`, `/agents/{name}/jsonrpc`
//! and `/agents/{name}/rest/…`; anything else is the SDK's plain `404 Not Found`.

use crate::auth::Callers;
use crate::body::{self, Body};
use crate::events::Opening;
use crate::record::Snapshot;
use crate::runs::{Runs, Watch};
use crate::sse::{Framing, task_stream};
use crate::wire_error::{A2aError, ErrorKind};
use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, header};
use http_body_util::BodyExt;
use http_body_util::LengthLimitError;
use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Duration;
use tower::BoxError;

/// The limits a request meets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestLimits {
    /// The largest request body read.
    pub(crate) max_body_bytes: usize,
    /// How long a blocking SendMessage waits for its run to settle before it answers with the
    /// task as it stands.
    pub(crate) send_wait: Duration,
    /// The interval of SSE `: ping` comments.
    pub(crate) ping: Duration,
}

/// What every request shares.
pub(crate) struct App {
    pub(crate) runs: Runs,
    /// Each served workflow's card, as JSON text.
    pub(crate) cards: HashMap<String, Bytes>,
    pub(crate) limits: RequestLimits,
    /// Who may call (empty: anyone, as the one anonymous caller).
    pub(crate) callers: Callers,
}

/// Which door of an agent a path names.
enum Door<'a> {
    Card,
    JsonRpc,
    Rest(&'a str),
}

/// Splits `/agents/{name}/{rest}` into the agent's name and its door.
fn door(path: &str) -> Option<(&str, Door<'_>)> {
    let after = path.strip_prefix("/agents/")?;
    let (name, rest) = after.split_once('/')?;
    let door = match rest {
        ".well-known/agent-card.json" => Door::Card,
        "jsonrpc" | "jsonrpc/" => Door::JsonRpc,
        _ => {
            let sub = rest.strip_prefix("rest")?;
            if !(sub.is_empty() || sub.starts_with('/')) {
                return None;
            }
            Door::Rest(sub)
        }
    };
    Some((name, door))
}

/// Serves one request whose body the body-limit layer bounds (its error, past the limit, is
/// [`LengthLimitError`]).
pub(crate) async fn handle<B>(app: &App, request: Request<B>) -> Response<Body>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let (parts, incoming) = request.into_parts();
    let decoded = percent_decode(parts.uri.path()).into_owned();
    let Some((name, door)) = door(&decoded) else {
        return body::text(404, "Not Found");
    };
    let Some(card) = app.cards.get(name) else {
        return body::text(404, "Not Found");
    };
    if let Door::Card = door {
        return match parts.method {
            Method::GET | Method::HEAD => {
                body::response(200, "application/json", body::full(card.clone()))
            }
            _ => body::text(405, "Method Not Allowed"),
        };
    }
    if matches!(door, Door::JsonRpc) && parts.method != Method::POST {
        return body::text(405, "Method Not Allowed");
    }
    let Some(who) = app.callers.identify(&parts.headers) else {
        return unauthenticated(app, &door);
    };
    let bytes = match read_body(incoming, app.limits.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(e) => {
            return match door {
                Door::JsonRpc => crate::jsonrpc::error(&serde_json::Value::Null, &e),
                _ => {
                    let (status, value) = e.rest_response();
                    body::json(status, &value)
                }
            };
        }
    };
    match door {
        Door::JsonRpc => crate::jsonrpc::serve(app, name, &who, &parts.headers, &bytes).await,
        Door::Rest(path) => crate::rest::serve(app, name, &who, &parts, path, &bytes).await,
        Door::Card => body::text(404, "Not Found"),
    }
}

/// The refusal of a request without valid credentials: HTTP 401 with a challenge, the body in
/// the door's envelope. It never says which credential came close or which callers exist.
fn unauthenticated(app: &App, door: &Door<'_>) -> Response<Body> {
    let e = unauthenticated_error();
    let mut response = match door {
        Door::JsonRpc => crate::jsonrpc::error(&serde_json::Value::Null, &e),
        _ => {
            let (status, value) = e.rest_response();
            body::json(status, &value)
        }
    };
    if let Ok(challenge) = HeaderValue::from_str(&app.callers.challenge()) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

/// The whole body; past the limit, the typed refusal.
async fn read_body<B>(incoming: B, limit: usize) -> Result<Bytes, A2aError>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    match incoming.collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) => {
            let e: BoxError = e.into();
            if e.downcast_ref::<LengthLimitError>().is_some() {
                Err(A2aError::new(
                    ErrorKind::InvalidRequest,
                    format!("the request body is larger than {limit} bytes, the server's limit"),
                ))
            } else {
                Err(A2aError::new(
                    ErrorKind::InvalidRequest,
                    format!("the request body could not be read: {e}"),
                ))
            }
        }
    }
}

/// The refusal of a caller without valid credentials, on every binding.
pub(crate) fn unauthenticated_error() -> A2aError {
    A2aError::new(
        ErrorKind::Unauthenticated,
        "the request carries no valid credentials for this agent: send the bearer token or \
         API key the server's operator issued you, as the agent card's security schemes say",
    )
}

/// An SSE response for `watch`.
pub(crate) fn stream_response(
    app: &App,
    watch: Watch,
    first: Snapshot,
    opening: Opening,
    framing: Framing,
) -> Response<Body> {
    let mut r = body::response(
        200,
        "text/event-stream; charset=utf-8",
        task_stream(watch, first, opening, framing, app.limits.ping),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// An SSE response of one task that will never change.
pub(crate) fn once_response(task: a2a::Task, framing: Framing) -> Response<Body> {
    let mut r = body::response(
        200,
        "text/event-stream; charset=utf-8",
        crate::sse::once(task, framing),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// `%XX` escapes decoded (an invalid escape is kept as it is; bytes that are not UTF-8 become
/// U+FFFD).
pub(crate) fn percent_decode(text: &str) -> Cow<'_, str> {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy()
}
