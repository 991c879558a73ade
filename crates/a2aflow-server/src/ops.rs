//! The A2A operations on a served workflow, shared by both bindings: each answers a JSON value
//! (the ProtoJSON of its response message) or a task stream.

use crate::auth::Who;
use crate::events::Opening;
use crate::params::{ListQuery, send_request, task_id};
use crate::record;
use crate::runs::{Runs, Watch};
use crate::wire_error::{A2aError, ErrorKind};
use a2a::{SendMessageResponse, Task};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use std::time::Duration;

/// What an operation answers.
pub(crate) enum Answer {
    /// A whole response message.
    Json(Value),
    /// A task stream: the watch, the snapshot the client sees first and how it opens.
    Stream(Watch, record::Snapshot, Opening),
    /// A stream of one task that will never change (a refused delegation).
    StreamOnce(Task),
}

/// `SendMessage` (`stream` false) or `SendStreamingMessage`.
pub(crate) async fn send(
    runs: &Runs,
    workflow: &str,
    who: &Who,
    params: &Value,
    stream: bool,
    wait_limit: Duration,
) -> Result<Answer, A2aError> {
    let request = send_request(params)?;
    let follow_up = request.message.task_id.is_some();
    if !follow_up && let Some(refused) = runs.refusal(workflow, who, &request.message)? {
        return Ok(if stream {
            Answer::StreamOnce(refused)
        } else {
            Answer::Json(to_json(&SendMessageResponse::Task(refused)))
        });
    }
    let mut watch = runs.start(workflow, who, &request.message).await?;
    if stream {
        if follow_up {
            let first = watch.rx.borrow_and_update().clone();
            return Ok(Answer::Stream(watch, first, Opening::Status));
        }
        let first = record::Snapshot::pending();
        return Ok(Answer::Stream(watch, first, Opening::Task));
    }
    let immediately = request
        .configuration
        .as_ref()
        .and_then(|c| c.return_immediately)
        .unwrap_or(false);
    let snapshot = if immediately {
        watch.rx.borrow().clone()
    } else {
        let waited = {
            let settled = watch.rx.wait_for(record::Snapshot::settled);
            tokio::time::timeout(wait_limit, settled)
                .await
                .map(|r| r.map(|s| s.clone()))
        };
        match waited {
            Ok(Ok(s)) => s,
            Ok(Err(_)) => return Err(A2aError::internal("the run ended without a state")),
            // Past the wait: the task as it stands (the client polls or subscribes).
            Err(_) => watch.rx.borrow().clone(),
        }
    };
    let task = record::task(&watch.meta, &snapshot);
    Ok(Answer::Json(to_json(&SendMessageResponse::Task(task))))
}

/// `GetTask`.
pub(crate) async fn get(
    runs: &Runs,
    workflow: &str,
    who: &Who,
    params: &Value,
) -> Result<Answer, A2aError> {
    let id = task_id(params)?;
    crate::params::checked_history_length(params)?;
    let current = runs.current(workflow, who, &id).await?;
    Ok(Answer::Json(task_json(&record::task(
        &current.meta,
        &current.snapshot,
    ))))
}

/// `CancelTask`.
pub(crate) async fn cancel(
    runs: &Runs,
    workflow: &str,
    who: &Who,
    params: &Value,
) -> Result<Answer, A2aError> {
    let id = task_id(params)?;
    let current = runs.cancel(workflow, who, &id).await?;
    Ok(Answer::Json(task_json(&record::task(
        &current.meta,
        &current.snapshot,
    ))))
}

/// `SubscribeToTask`.
pub(crate) async fn subscribe(
    runs: &Runs,
    workflow: &str,
    who: &Who,
    params: &Value,
) -> Result<Answer, A2aError> {
    let id = task_id(params)?;
    let mut watch = runs.subscribe(workflow, who, &id).await?;
    let first = watch.rx.borrow_and_update().clone();
    Ok(Answer::Stream(watch, first, Opening::Task))
}

/// `ListTasks`: newest first; `nextPageToken` is `""` on the last page.
pub(crate) async fn list(
    runs: &Runs,
    workflow: &str,
    who: &Who,
    query: ListQuery,
) -> Result<Answer, A2aError> {
    let after = match &query.page_token {
        None => None,
        Some(token) => Some(decode_token(token)?),
    };
    let page = runs
        .list(
            workflow,
            who,
            query.context_id.as_deref(),
            query.status,
            after.as_deref(),
            query.page_size,
        )
        .await?;
    let tasks: Vec<Value> = page
        .tasks
        .iter()
        .map(|c| {
            let mut task = record::task(&c.meta, &c.snapshot);
            if !query.include_artifacts {
                task.artifacts = None;
            }
            task_json(&task)
        })
        .collect();
    Ok(Answer::Json(json!({
        "tasks": tasks,
        "nextPageToken": page.next.map(|id| URL_SAFE_NO_PAD.encode(id)).unwrap_or_default(),
        "pageSize": query.page_size,
        "totalSize": page.total,
    })))
}

/// The execution id a page token names.
fn decode_token(token: &str) -> Result<String, A2aError> {
    URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| {
            A2aError::new(
                ErrorKind::InvalidParams,
                "Token is not a valid base64-encoded cursor.",
            )
        })
}

/// An operation the served agents do not offer (push notifications, the extended card).
pub(crate) fn unsupported(kind: Unsupported) -> A2aError {
    match kind {
        Unsupported::PushNotifications => A2aError::new(
            ErrorKind::PushNotificationNotSupported,
            "Push notifications are not supported by the agent",
        ),
        Unsupported::ExtendedCard => A2aError::new(
            ErrorKind::UnsupportedOperation,
            "The agent does not support authenticated extended cards",
        ),
    }
}

/// Which unsupported operation.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Unsupported {
    PushNotifications,
    ExtendedCard,
}

fn task_json(task: &Task) -> Value {
    to_json(task)
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
