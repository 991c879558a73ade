//! The A2A operations, independent of the binding: parameters in as JSON, a result value, a
//! stream source or an [`A2aError`] out.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use a2a::TaskState;
use bytes::Bytes;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::body::SseSource;
use crate::fault::FaultTable;
use crate::message::IncomingMessage;
use crate::runner;
use crate::script::{FollowUp, Script, Step};
use crate::spec::{AgentSpec, Binding};
use crate::store::{LogEvent, TaskEntry, TaskStore, state_name};
use crate::wire_error::{A2aError, ErrorKind};

/// One served agent at run time.
pub(crate) struct AgentRuntime {
    pub(crate) spec: AgentSpec,
    pub(crate) card: Bytes,
    pub(crate) store: TaskStore,
    pub(crate) faults: FaultTable,
    pub(crate) version_check: AtomicBool,
    /// Pre-task follow-ups keyed by contextId.
    pub(crate) pre_task: Mutex<HashMap<String, FollowUp>>,
}

impl AgentRuntime {
    pub(crate) fn new(spec: AgentSpec, card: Bytes) -> Self {
        Self {
            store: TaskStore::new(spec.task_bound),
            version_check: AtomicBool::new(spec.check_version),
            spec,
            card,
            faults: FaultTable::default(),
            pre_task: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn checks_version(&self) -> bool {
        self.version_check.load(Ordering::Relaxed)
    }
}

/// What the operations need from the server.
pub(crate) struct OpEnv<'a> {
    pub(crate) agent: &'a AgentRuntime,
    pub(crate) scripts: &'a TaskTracker,
    pub(crate) token: &'a CancellationToken,
    pub(crate) binding: Binding,
    pub(crate) requested_extensions: Arc<[String]>,
}

/// A successful operation.
pub(crate) enum OpOutput {
    Json(Value),
    Stream(SseSource),
}

type OpResult = Result<OpOutput, A2aError>;

fn params_object(params: &Value) -> Result<&Map<String, Value>, A2aError> {
    match params {
        Value::Object(m) => Ok(m),
        _ => Err(A2aError::new(
            ErrorKind::InvalidParams,
            "params must be an object",
        )),
    }
}

fn history_length(v: Option<&Value>) -> Result<Option<usize>, A2aError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_i64() {
            Some(n) if n < 0 => Err(A2aError::new(
                ErrorKind::InvalidParams,
                "history length must be non-negative",
            )),
            Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            None => Err(A2aError::field("historyLength", "Must be an integer.")),
        },
    }
}

fn task_id(params: &Map<String, Value>) -> Result<&str, A2aError> {
    match params.get("id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => Ok(id),
        _ => Err(A2aError::field("id", "Field is required.")),
    }
}

fn lookup(agent: &AgentRuntime, id: &str) -> Result<Arc<TaskEntry>, A2aError> {
    agent
        .store
        .get(id)
        .ok_or_else(|| A2aError::new(ErrorKind::TaskNotFound, "Task not found"))
}

fn validate_message(m: &Map<String, Value>) -> Result<(), A2aError> {
    if m.get("messageId")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(A2aError::field("message.message_id", "Field is required."));
    }
    let role_ok = match m.get("role") {
        Some(Value::String(r)) => r == "ROLE_USER" || r == "ROLE_AGENT",
        Some(Value::Number(n)) => matches!(n.as_u64(), Some(1 | 2)),
        _ => false,
    };
    if !role_ok {
        return Err(A2aError::field("message.role", "Field is required."));
    }
    if m.get("parts")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        return Err(A2aError::field("message.parts", "Field is required."));
    }
    Ok(())
}

/// Waits until the task's log, from `cursor`, shows a terminal or interrupted state.
async fn wait_settled(
    env: &OpEnv<'_>,
    entry: &TaskEntry,
    mut cursor: usize,
) -> Result<(), A2aError> {
    let mut rx = entry.watch();
    loop {
        rx.borrow_and_update();
        for ev in entry.events_from(cursor) {
            cursor += 1;
            match ev {
                LogEvent::Update { closes: true, .. } => return Ok(()),
                LogEvent::Crash { message } => {
                    return Err(A2aError::new(ErrorKind::Internal, message.as_ref()));
                }
                LogEvent::Update { .. } => {}
            }
        }
        tokio::select! {
            changed = rx.changed() => if changed.is_err() {
                return Err(A2aError::new(ErrorKind::Internal, "task vanished"));
            },
            () = env.token.cancelled() => {
                return Err(A2aError::new(ErrorKind::Internal, "server shutting down"));
            }
        }
    }
}

/// SendMessage / SendStreamingMessage.
pub(crate) async fn send(env: &OpEnv<'_>, params: &Value, streaming: bool) -> OpResult {
    let params = params_object(params)?;
    let Some(Value::Object(message)) = params.get("message") else {
        return Err(A2aError::field("message", "Field is required."));
    };
    validate_message(message)?;
    let config = params.get("configuration").and_then(Value::as_object);
    let return_immediately = config
        .and_then(|c| c.get("returnImmediately"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let hist = history_length(config.and_then(|c| c.get("historyLength")))?;
    if streaming && !env.agent.spec.streaming {
        return Err(A2aError::new(
            ErrorKind::UnsupportedOperation,
            "Streaming is not supported by the agent",
        ));
    }
    let mut message = message.clone();
    let incoming = |m: &Map<String, Value>| {
        IncomingMessage::new(
            Value::Object(m.clone()),
            env.requested_extensions.clone(),
            streaming,
            env.binding,
        )
    };

    // A follow-up on an existing task.
    if let Some(tid) = message
        .get("taskId")
        .and_then(Value::as_str)
        .map(str::to_owned)
    {
        let entry = env.agent.store.get(&tid).ok_or_else(|| {
            A2aError::new(ErrorKind::TaskNotFound, format!("Task {tid} not found"))
        })?;
        if let Some(ctx) = message.get("contextId").and_then(Value::as_str)
            && ctx != entry.context_id.as_ref()
        {
            return Err(A2aError::new(
                ErrorKind::InvalidParams,
                format!(
                    "Context {ctx} does not match context {} of task {tid}",
                    entry.context_id
                ),
            ));
        }
        message.insert("contextId".into(), entry.context_id.as_ref().into());
        let msg_in = incoming(&message);
        let cursor = entry.log_len();
        let then = entry.take_follow_up(Value::Object(message))?;
        let steps = match then(&msg_in) {
            Script::Task(t) => t.steps,
            Script::Reply(r) => vec![Step::Status {
                state: TaskState::Completed,
                message: Some(r.message),
            }],
        };
        runner::start(env.scripts, entry.clone(), steps);
        return finish_task(
            env,
            entry,
            cursor,
            Vec::new(),
            streaming,
            return_immediately,
            hist,
        )
        .await;
    }

    let context_id: Arc<str> = match message.get("contextId").and_then(Value::as_str) {
        Some(c) => Arc::from(c),
        None => Arc::from(uuid::Uuid::new_v4().to_string()),
    };
    let pending = {
        let mut g = env.agent.pre_task.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_empty() {
            None
        } else {
            g.remove(context_id.as_ref())
        }
    };
    let msg_in = incoming(&message);
    let script = match pending {
        Some(then) => then(&msg_in),
        None => (env.agent.spec.script)(&msg_in),
    };
    match script {
        Script::Reply(reply) => {
            let wire = reply.message.to_wire(&context_id, None);
            if let Some(then) = reply.then {
                env.agent
                    .pre_task
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(context_id.to_string(), then);
            }
            let payload = json!({ "message": wire });
            if streaming {
                Ok(OpOutput::Stream(SseSource {
                    initial: vec![payload],
                    follow: None,
                }))
            } else {
                Ok(OpOutput::Json(payload))
            }
        }
        Script::Task(task) => {
            let id: Arc<str> = Arc::from(uuid::Uuid::new_v4().to_string());
            message.insert("contextId".into(), context_id.as_ref().into());
            message.insert("taskId".into(), id.as_ref().into());
            let entry = TaskEntry::new(
                id,
                context_id,
                Value::Object(message),
                None,
                env.token.child_token(),
            );
            env.agent.store.insert(entry.clone());
            let first = entry.snapshot(None, true);
            runner::start(env.scripts, entry.clone(), task.steps);
            let initial = vec![json!({ "task": first })];
            finish_task(env, entry, 0, initial, streaming, return_immediately, hist).await
        }
    }
}

async fn finish_task(
    env: &OpEnv<'_>,
    entry: Arc<TaskEntry>,
    cursor: usize,
    initial: Vec<Value>,
    streaming: bool,
    return_immediately: bool,
    hist: Option<usize>,
) -> OpResult {
    if streaming {
        return Ok(OpOutput::Stream(SseSource {
            initial,
            follow: Some((entry, cursor)),
        }));
    }
    if return_immediately {
        if let Some(Value::Object(mut first)) = initial.into_iter().next() {
            if let (Some(Value::Object(task)), Some(0)) = (first.get_mut("task"), hist) {
                task.remove("history");
            }
            return Ok(OpOutput::Json(Value::Object(first)));
        }
        return Ok(OpOutput::Json(
            json!({ "task": entry.snapshot(hist, true) }),
        ));
    }
    wait_settled(env, &entry, cursor).await?;
    Ok(OpOutput::Json(
        json!({ "task": entry.snapshot(hist, true) }),
    ))
}

/// GetTask.
pub(crate) fn get(env: &OpEnv<'_>, params: &Value) -> OpResult {
    let params = params_object(params)?;
    let id = task_id(params)?;
    let hist = history_length(params.get("historyLength"))?;
    let entry = lookup(env.agent, id)?;
    Ok(OpOutput::Json(entry.snapshot(hist, true)))
}

/// ListTasks (newest first; the page token is an offset).
pub(crate) fn list(env: &OpEnv<'_>, params: &Value) -> OpResult {
    let params = params_object(params)?;
    let context = params
        .get("contextId")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty());
    let status = params
        .get("status")
        .cloned()
        .and_then(|s| serde_json::from_value::<TaskState>(s).ok())
        .filter(|s| *s != TaskState::Unspecified);
    let page_size = match params.get("pageSize") {
        None | Some(Value::Null) => 50,
        Some(v) => match v.as_i64() {
            Some(n) if n > 100 => {
                return Err(A2aError::new(
                    ErrorKind::InvalidParams,
                    "maximum page size is 100",
                ));
            }
            Some(n) if n < 1 => {
                return Err(A2aError::new(
                    ErrorKind::InvalidParams,
                    "minimum page size is 1",
                ));
            }
            Some(n) => n as usize,
            None => return Err(A2aError::field("pageSize", "Must be an integer.")),
        },
    };
    let offset = match params.get("pageToken").and_then(Value::as_str) {
        None | Some("") => 0,
        Some(t) => t
            .parse::<usize>()
            .map_err(|_| A2aError::new(ErrorKind::InvalidParams, "Token is not a valid cursor."))?,
    };
    let hist = history_length(params.get("historyLength"))?;
    let include_artifacts = params
        .get("includeArtifacts")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut entries = env.agent.store.list(context);
    if let Some(s) = &status {
        entries.retain(|e| e.state() == *s);
    }
    let total = entries.len();
    let tasks: Vec<Value> = entries
        .iter()
        .skip(offset)
        .take(page_size)
        .map(|e| e.snapshot(hist, include_artifacts))
        .collect();
    let next = if offset + page_size < total {
        (offset + page_size).to_string()
    } else {
        String::new()
    };
    Ok(OpOutput::Json(json!({
        "tasks": tasks,
        "pageSize": page_size,
        "totalSize": total,
        "nextPageToken": next,
    })))
}

/// CancelTask.
pub(crate) fn cancel(env: &OpEnv<'_>, params: &Value) -> OpResult {
    let params = params_object(params)?;
    let entry = lookup(env.agent, task_id(params)?)?;
    entry.cancel()?;
    Ok(OpOutput::Json(entry.snapshot(None, true)))
}

/// SubscribeToTask: the task first, then its updates.
pub(crate) fn subscribe(env: &OpEnv<'_>, params: &Value) -> OpResult {
    let params = params_object(params)?;
    let entry = lookup(env.agent, task_id(params)?)?;
    if !env.agent.spec.streaming {
        return Err(A2aError::new(
            ErrorKind::UnsupportedOperation,
            "Streaming is not supported by the agent",
        ));
    }
    let (snapshot, cursor) = entry.snapshot_and_cursor();
    let state = entry.state();
    if state.is_terminal() {
        return Err(A2aError::new(
            ErrorKind::UnsupportedOperation,
            format!(
                "Task {} is in terminal state: {}",
                entry.id,
                state_name(&state)
            ),
        ));
    }
    Ok(OpOutput::Stream(SseSource {
        initial: vec![json!({ "task": snapshot })],
        follow: Some((entry, cursor)),
    }))
}

/// GetExtendedAgentCard.
pub(crate) fn extended_card(env: &OpEnv<'_>) -> OpResult {
    env.agent
        .spec
        .extended_card
        .clone()
        .map(OpOutput::Json)
        .ok_or_else(|| {
            A2aError::new(
                ErrorKind::UnsupportedOperation,
                "The agent does not support authenticated extended cards",
            )
        })
}

/// Any push-notification-config method.
pub(crate) fn push_not_supported() -> A2aError {
    A2aError::new(
        ErrorKind::PushNotificationNotSupported,
        "Push notifications are not supported by the agent",
    )
}
