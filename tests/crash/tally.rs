//! What one kill-and-resume must show: the same result as an uninterrupted run (modulo ids and
//! timestamps), and each logical task's business command taking effect exactly once.

use a2aflow::protocol::{Binding, CallOptions, HttpClient, Transport, connect};
use a2aflow::testkit::list_in_context;
use a2aflow::testkit::{Route, TestServer};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a result is compared by: per step its name and status; per task its agent,
/// description, status, error code and outputs (artifact ids and every other id left out).
pub fn shape(result: &Value) -> Value {
    let steps = result["steps"].as_array().cloned().unwrap_or_default();
    let steps: Vec<Value> = steps
        .iter()
        .map(|s| {
            let tasks: Vec<Value> = s["taskResults"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|t| {
                    json!({
                        "agent": t["agentName"], "description": t["taskDescription"],
                        "status": t["status"], "errorCode": t["errorCode"],
                        "outputs": without_ids(&t["outputs"]),
                    })
                })
                .collect();
            json!({"step": s["stepName"], "status": s["status"], "tasks": tasks})
        })
        .collect();
    json!({"success": result["success"], "steps": steps, "skipped": result["skippedSteps"]})
}

fn without_ids(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.ends_with("Id"))
                .map(|(k, v)| (k.clone(), without_ids(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_ids).collect()),
        other => other.clone(),
    }
}

/// The tasks of a result: (agent, context id, status, error code).
pub fn tasks(result: &Value) -> Vec<(String, Option<String>, String, Option<String>)> {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    result["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["taskResults"].as_array().cloned().unwrap_or_default())
        .map(|t| {
            (
                text(&t["agentName"]).unwrap_or_default(),
                text(&t["contextId"]),
                text(&t["status"]).unwrap_or_default(),
                text(&t["errorCode"]),
            )
        })
        .collect()
}

/// The message of a SendMessage or SendStreamingMessage request (either binding).
fn sent_message(body: &Value) -> Option<&Value> {
    body.get("params")
        .and_then(|p| p.get("message"))
        .or_else(|| body.get("message"))
}

/// The SendMessage and SendStreamingMessage requests the agents received since the log was
/// cleared, per (agent, context id): the business commands (`follow_ups` false: messages that
/// start a task) or the follow-ups on a task (`follow_ups` true: a message with a `taskId`, such
/// as a negotiation reply).
fn messages_per_context(
    server: &TestServer,
    follow_ups: bool,
) -> BTreeMap<(String, String), usize> {
    let mut sends = BTreeMap::new();
    for r in server.requests() {
        if !matches!(r.route, Some(Route::Send | Route::Stream)) {
            continue;
        }
        let (Some(agent), Some(message)) =
            (r.agent.as_ref(), r.body.as_ref().and_then(sent_message))
        else {
            continue;
        };
        if message.get("taskId").is_some_and(Value::is_string) != follow_ups {
            continue;
        }
        if let Some(ctx) = message.get("contextId").and_then(Value::as_str) {
            *sends.entry((agent.clone(), ctx.to_owned())).or_default() += 1;
        }
    }
    sends
}

/// The business commands the agents received since the log was cleared: SendMessage and
/// SendStreamingMessage requests that start a task, per (agent, context id).
pub fn sends_per_context(server: &TestServer) -> BTreeMap<(String, String), usize> {
    messages_per_context(server, false)
}

/// The follow-up messages on a task (negotiation replies) since the log was cleared, per
/// (agent, context id).
pub fn follow_ups_per_context(server: &TestServer) -> BTreeMap<(String, String), usize> {
    messages_per_context(server, true)
}

/// The CancelTask requests for `remote_task_id` since the log was cleared (either binding).
pub fn cancels_of(server: &TestServer, remote_task_id: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.route == Some(Route::Cancel))
        .filter(|r| {
            let in_body = r
                .body
                .as_ref()
                .and_then(|b| b.get("params"))
                .and_then(|p| p.get("id"))
                .and_then(Value::as_str)
                == Some(remote_task_id);
            in_body || r.path.contains(remote_task_id)
        })
        .count()
}

/// Asks the agents which tasks they hold for a context id (ListTasks): the effects of the
/// business commands sent under it.
pub struct Agents {
    transports: BTreeMap<String, Arc<dyn Transport>>,
}

impl Agents {
    pub async fn connect(server: &TestServer, names: &[&str]) -> Agents {
        let http = HttpClient::new().expect("an HTTP client");
        let mut transports = BTreeMap::new();
        for name in names {
            let card = http
                .fetch_agent_card(&server.card_url(name), &CallOptions::default())
                .await
                .expect("the agent's card");
            let transport =
                connect(&card, &http, &[Binding::JsonRpc, Binding::HttpJson]).expect("a transport");
            transports.insert((*name).to_owned(), transport);
        }
        Agents { transports }
    }

    /// How many tasks `agent` holds for `context_id`.
    pub async fn tasks_of(&self, agent: &str, context_id: &str) -> usize {
        let request = list_in_context(context_id);
        self.transports[agent]
            .list_tasks(&request, &CallOptions::default())
            .await
            .expect("ListTasks")
            .tasks
            .len()
    }
}
