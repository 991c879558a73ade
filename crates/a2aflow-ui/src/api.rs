//! The JSON API behind the page (documented in docs/guide/ui.md):
//!
//! | request | answer |
//! |---|---|
//! | `GET /api/runs?state=&offset=&limit=` | `{runs, offset, limit, more}`, newest first |
//! | `GET /api/runs/{id}[?facts=false]` | the run: view, drawing, task facts (folded from its events unless `facts=false`) |
//! | `GET /api/runs/{id}/events` | Server-Sent Events (see [`crate::sse`]) |
//! | `POST /api/runs/{id}/cancel` | `{delivered: "live"\|"journaled"\|"alreadyRequested"}` |
//! | `POST /api/runs/{id}/gates/{task}/answer` `{text}` or `{data}` | `{delivered: "live"\|"journaled"}` |
//! | `POST /api/runs/{id}/gates/{task}/decline` `{reason, code?}` | as answer |
//! | `POST /api/runs/{id}/resume` | `{resumed: "live"}` (see [`crate::resume`]) |
//!
//! Errors are `{"error": {"code", "message"}}` with the failure's stable code: 404 for an
//! unknown run, 409 for a request the run's state refuses, 400 for a malformed request, 503
//! when the store cannot be read.

use crate::detail::{is_finished, run_answer, run_detail};
use crate::live::LiveRuns;
use crate::resume::{Resumer, resume};
use crate::routes::{Body, full, response};
use crate::sse::{Follow, events_body};
use crate::token::query_param;
use crate::views::Views;
use a2aflow::model::a2a::Part;
use a2aflow::model::{ErrorCode, Failure, FailureCode, MessageContent};
use a2aflow::{
    CancelRequest, GateDelivery, RunFilter, RunState, RunStore, answer_gate, decline_gate,
    get_execution, list_executions, request_cancel,
};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Runs a list page holds when the request names no `limit`.
const DEFAULT_LIMIT: usize = 50;
/// The most runs one list page holds.
const MAX_LIMIT: usize = 200;
/// The largest request body taken (an answer's content).
const MAX_BODY: usize = 256 * 1024;

/// The code a decline from the page carries when it names none (a host code, not the engine's).
pub const DECLINED: &str = "ui.declined";

/// What every request handler shares.
pub(crate) struct State {
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) live: LiveRuns,
    pub(crate) poll: Duration,
    pub(crate) shutdown: CancellationToken,
    /// Resumes runs in this process; `None`: the page cannot.
    pub(crate) resumer: Option<Arc<dyn Resumer>>,
    /// The drawings and finished runs' answers kept.
    pub(crate) views: Arc<Views>,
}

/// An error answer.
pub(crate) fn error_response(status: StatusCode, code: &str, message: &str) -> Response<Body> {
    let body = json!({"error": {"code": code, "message": message}}).to_string();
    response(status, "application/json", full(body))
}

fn failure_response(f: &Failure) -> Response<Body> {
    let code = f.code.to_string();
    let status = match ErrorCode::parse(&code) {
        Some(ErrorCode::StoreUnknownExecution) => StatusCode::NOT_FOUND,
        Some(
            ErrorCode::WorkflowGateNotOpen | ErrorCode::StoreLocked | ErrorCode::StoreInvalidAppend,
        ) => StatusCode::CONFLICT,
        Some(ErrorCode::ConfigInvalid) => StatusCode::BAD_REQUEST,
        Some(
            ErrorCode::StoreUnavailable
            | ErrorCode::StoreNotAStore
            | ErrorCode::StoreNewerSchema
            | ErrorCode::StoreCorrupt,
        ) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    error_response(status, &code, &f.message)
}

fn bad_request(message: impl Into<String>) -> Failure {
    Failure::new(ErrorCode::ConfigInvalid, message)
}

pub(crate) fn ok_json(value: &impl serde::Serialize) -> Response<Body> {
    match serde_json::to_string(value) {
        Ok(text) => response(StatusCode::OK, "application/json", full(text)),
        Err(e) => failure_response(&Failure::new(ErrorCode::ConfigInvalid, e.to_string())),
    }
}

/// Answers a request under `/api/`.
pub(crate) async fn route(state: &State, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    let segments: Vec<&str> = path.trim_start_matches("/api/").split('/').collect();
    let query = req.uri().query().map(str::to_owned);
    let result = match (req.method().clone(), segments.as_slice()) {
        (Method::GET, ["runs"]) => runs(state, query.as_deref()).await,
        (Method::GET, ["runs", id]) => {
            // `?facts=false`: without folding the events (the page folds the stream itself).
            let facts = query_param(query.as_deref(), "facts").as_deref() != Some("false");
            let (store, id) = (state.store.as_ref(), decode(id));
            let can_resume = state.resumer.is_some();
            if facts {
                run_detail(store, &state.views, &id, true, can_resume)
                    .await
                    .map(|d| ok_json(&d))
            } else {
                run_answer(store, &state.views, &id, can_resume)
                    .await
                    .map(|(text, _)| {
                        let body = full(Bytes::copy_from_slice(text.as_bytes()));
                        response(StatusCode::OK, "application/json", body)
                    })
            }
        }
        (Method::GET, ["runs", id, "events"]) => {
            events(state, &decode(id), &req, query.as_deref()).await
        }
        (Method::POST, ["runs", id, "cancel"]) => cancel(state, &decode(id)).await,
        (Method::POST, ["runs", id, "resume"]) => resume(state, &decode(id)).await,
        (Method::POST, ["runs", id, "gates", task, action @ ("answer" | "decline")]) => {
            let (id, task, action) = (decode(id), decode(task), (*action).to_owned());
            match read_json(req).await {
                Ok(body) => gate(state, &id, &task, &action, body).await,
                Err(f) => Err(f),
            }
        }
        _ => return error_response(StatusCode::NOT_FOUND, "config.invalid", "no such API path"),
    };
    result.unwrap_or_else(|f| failure_response(&f))
}

/// A path segment, percent-decoded (ids are minted by the engine, but a host may choose its own).
fn decode(segment: &str) -> String {
    query_param(Some(&format!("v={segment}")), "v").unwrap_or_default()
}

async fn runs(state: &State, query: Option<&str>) -> Result<Response<Body>, Failure> {
    let state_filter = match query_param(query, "state").filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(parse_state(&s)?),
    };
    let offset = number(query, "offset", 0)?;
    let limit = number(query, "limit", DEFAULT_LIMIT)?.clamp(1, MAX_LIMIT);
    let filter = RunFilter {
        state: state_filter,
        offset,
        limit: limit + 1,
    };
    let mut summaries = list_executions(state.store.as_ref(), filter).await?;
    let more = summaries.len() > limit;
    summaries.truncate(limit);
    let mut runs = Vec::with_capacity(summaries.len());
    for s in summaries {
        // A run parked at a gate may be `running` in the list (its driver holds the lease while
        // it waits for the answer) as well as `waiting` (no driver): both can have open gates.
        let gates = if !is_finished(s.state) {
            get_execution(state.store.as_ref(), &s.execution_id)
                .await
                .map(|v| v.open_gates.len())
                .unwrap_or(0)
        } else {
            0
        };
        let mut row = serde_json::to_value(&s).unwrap_or(Value::Null);
        if let Some(obj) = row.as_object_mut() {
            obj.insert("openGates".into(), gates.into());
        }
        runs.push(row);
    }
    Ok(ok_json(
        &json!({"runs": runs, "offset": offset, "limit": limit, "more": more}),
    ))
}

fn parse_state(text: &str) -> Result<RunState, Failure> {
    let all = [
        RunState::Running,
        RunState::Waiting,
        RunState::Succeeded,
        RunState::Failed,
        RunState::Cancelled,
    ];
    all.into_iter().find(|s| s.as_str() == text).ok_or_else(|| {
        bad_request(format!(
            "unknown run state `{text}`: give running, waiting, succeeded, failed or cancelled"
        ))
    })
}

fn number(query: Option<&str>, name: &str, default: usize) -> Result<usize, Failure> {
    match query_param(query, name) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| bad_request(format!("`{name}` must be a whole number, not `{v}`"))),
    }
}

async fn events(
    state: &State,
    id: &str,
    req: &Request<Incoming>,
    query: Option<&str>,
) -> Result<Response<Body>, Failure> {
    // An unknown run is a plain 404, not a stream that only says so. Its lease row is read (one
    // small read, `store.unknown_execution` for an unknown id in every store), not its journal.
    state.store.lease(id).await?;
    let resume_from = req
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| query_param(query, "after"));
    let after = match resume_from.filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(s.parse::<u64>().map_err(|_| {
            bad_request(format!(
                "`Last-Event-ID` / `after` must be an event seq, not `{s}`"
            ))
        })?),
    };
    let follow = Follow {
        store: state.store.clone(),
        poll: state.poll,
        shutdown: state.shutdown.clone(),
        can_resume: state.resumer.is_some(),
        views: state.views.clone(),
    };
    Ok(response(
        StatusCode::OK,
        "text/event-stream",
        events_body(follow, id.to_owned(), after),
    ))
}

async fn cancel(state: &State, id: &str) -> Result<Response<Body>, Failure> {
    let view = get_execution(state.store.as_ref(), id).await?;
    let delivered = if !is_finished(view.state) && state.live.cancel(id) {
        "live"
    } else {
        match request_cancel(state.store.as_ref(), id).await? {
            CancelRequest::Requested => "journaled",
            _ => "alreadyRequested",
        }
    };
    Ok(ok_json(&json!({"delivered": delivered})))
}

/// The body of an answer or a decline.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GateBody {
    text: Option<String>,
    data: Option<Value>,
    reason: Option<String>,
    code: Option<String>,
}

async fn read_json(req: Request<Incoming>) -> Result<GateBody, Failure> {
    let bytes = Limited::new(req.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| {
            bad_request(format!(
                "cannot read the request body (at most {MAX_BODY} bytes): {e}"
            ))
        })?
        .to_bytes();
    serde_json::from_slice(&bytes)
        .map_err(|e| bad_request(format!("the request body is not the JSON expected: {e}")))
}

async fn gate(
    state: &State,
    id: &str,
    task: &str,
    action: &str,
    body: GateBody,
) -> Result<Response<Body>, Failure> {
    let store = state.store.as_ref();
    let board = Some(state.live.board());
    let delivery = if action == "answer" {
        let content = match (body.text, body.data) {
            (Some(text), None) => MessageContent::text(text),
            (None, Some(data)) => MessageContent {
                parts: vec![Part::data(data)],
                ..MessageContent::default()
            },
            _ => {
                return Err(bad_request(
                    "an answer is `{\"text\": …}` or `{\"data\": …}`",
                ));
            }
        };
        answer_gate(store, board, id, task, content).await?
    } else {
        let reason = body
            .reason
            .filter(|r| !r.trim().is_empty())
            .ok_or_else(|| bad_request("a decline needs a `reason`"))?;
        let code = body
            .code
            .map(FailureCode::parse)
            .unwrap_or_else(|| FailureCode::parse(DECLINED));
        decline_gate(store, board, id, task, code, reason).await?
    };
    let delivered = match delivery {
        GateDelivery::Delivered => "live",
        _ => "journaled",
    };
    Ok(ok_json(&json!({"delivered": delivered})))
}
