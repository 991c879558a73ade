//! Every A2A JSON body in the official Python SDK 1.3.0 transcripts round-trips through the
//! `a2a` types: parse, serialise, parse again, equal.
//!
//! The transcripts live in `tests/fixtures/a2a-python-sdk-1.3.0/` (`index.json` holds each
//! exchange's request line, headers and bodies). A body is classified by where it was sent
//! (JSON-RPC method, HTTP+JSON path, well-known card path) and by its HTTP status; SSE bodies are
//! split into their `data:` events. Bodies that are deliberately not A2A 1.0 objects (malformed
//! JSON probes, A2A 0.3 shapes, invalid requests) are listed in [`NOT_A2A_1_0`] with the reason,
//! and the test asserts that each of those really fails to parse — so the list cannot hide a
//! real body the types reject.

use a2aflow_model::ErrorEnvelope;
use a2aflow_model::a2a::{
    AgentCard, CancelTaskRequest, GetTaskRequest, JsonRpcError, JsonRpcRequest, JsonRpcResponse,
    ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig, TypedDetail,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::PathBuf;

/// (file, side, reason): bodies that are not A2A 1.0 objects of the type their place implies.
const NOT_A2A_1_0: &[(&str, &str, &str)] = &[
    (
        "jsonrpc/e03_params_missing_message.txt",
        "request",
        "SendMessage params without `message` (invalid on purpose)",
    ),
    (
        "jsonrpc/e04_params_wrong_type.txt",
        "request",
        "`message` is a string (invalid on purpose)",
    ),
    (
        "jsonrpc/e05_params_v03_shaped_message.txt",
        "request",
        "A2A 0.3 message shape (`kind`, role `user`)",
    ),
    (
        "jsonrpc/e06_params_not_object.txt",
        "request",
        "params is a string (invalid on purpose)",
    ),
    (
        "jsonrpc/e16_batch_request.txt",
        "request",
        "JSON-RPC batch (A2A does not use batches)",
    ),
    (
        "jsonrpc/e18_notification_no_id.txt",
        "request",
        "JSON-RPC notification without id",
    ),
    (
        "jsonrpc/e19_missing_method.txt",
        "request",
        "JSON-RPC request without method",
    ),
    (
        "jsonrpc/e27_bool_id.txt",
        "request",
        "JSON-RPC id is a boolean",
    ),
    (
        "rest/e04_missing_message.txt",
        "request",
        "SendMessage body without `message` (invalid on purpose)",
    ),
    (
        "rest/e05_v03_shaped_message.txt",
        "request",
        "A2A 0.3 message shape (`kind`, role `user`)",
    ),
];

/// What the typed round trip may legitimately not keep verbatim (see
/// docs/decisions/0010-rpc-status-envelope.md). Anything else dropped or changed fails the test.
const ALLOWED_DIFFERENCES: &[&str] = &[
    // A2A 0.3 card members that the 1.0 AgentCard does not have ("cards that mix 0.3 keys").
    "AgentCard: dropped /additionalInterfaces",
    "AgentCard: dropped /preferredTransport",
    "AgentCard: dropped /protocolVersion",
    "AgentCard: dropped /url",
    // e28: an unknown request member the agent ignores too.
    "GetTaskRequest: dropped /bogusField",
    // `"data": null` in 0.3-era JSON-RPC errors is written back as an absent `data`.
    "JsonRpcError: dropped null /data",
    "JsonRpcResponse: dropped null /error/data",
];

#[derive(Default)]
struct Tally {
    /// Bodies (or SSE events) that round-tripped, by type.
    passed: BTreeMap<&'static str, usize>,
    /// Bodies that are JSON but not A2A 1.0 by design (listed in NOT_A2A_1_0), confirmed failing.
    excluded: usize,
    /// A2A 0.3 payloads inside JSON-RPC envelopes (the envelope itself was checked).
    v03_payloads: usize,
    /// Non-JSON bodies (plain-text 404/405, malformed JSON probes).
    not_json: usize,
    failures: Vec<String>,
    /// What the typed round trip did not keep verbatim, with counts.
    differences: BTreeMap<String, usize>,
    excluded_seen: Vec<(String, String)>,
}

fn round_trip<T>(v: &Value) -> Result<Value, String>
where
    T: DeserializeOwned + Serialize + PartialEq + Debug,
{
    let first: T = serde_json::from_value(v.clone()).map_err(|e| format!("parse: {e}"))?;
    let wire = serde_json::to_value(&first).map_err(|e| format!("serialise: {e}"))?;
    let second: T =
        serde_json::from_value(wire.clone()).map_err(|e| format!("re-parse: {e} in {wire}"))?;
    if first != second {
        return Err(format!(
            "not equal after round trip:\n{first:?}\n{second:?}"
        ));
    }
    Ok(wire)
}

/// Members of `original` that the typed round trip dropped or changed, as generic paths
/// (`/supportedInterfaces/*/url`), so the test can say exactly what the types do not keep.
fn differences(original: &Value, wire: &Value, path: &str, out: &mut BTreeMap<String, usize>) {
    match (original, wire) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let p = format!("{path}/{k}");
                match b.get(k) {
                    Some(w) => differences(v, w, &p, out),
                    None if v.is_null() => {
                        *out.entry(format!("dropped null {p}")).or_default() += 1
                    }
                    None => *out.entry(format!("dropped {p}")).or_default() += 1,
                }
            }
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                *out.entry(format!("added {path}/{k}")).or_default() += 1;
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (x, y) in a.iter().zip(b) {
                differences(x, y, &format!("{path}/*"), out);
            }
        }
        (a, b) if a != b => *out.entry(format!("changed {path}")).or_default() += 1,
        _ => {}
    }
}

impl Tally {
    fn check<T>(&mut self, name: &'static str, what: &str, v: &Value)
    where
        T: DeserializeOwned + Serialize + PartialEq + Debug,
    {
        match round_trip::<T>(v) {
            Ok(wire) => {
                *self.passed.entry(name).or_default() += 1;
                let mut diffs = BTreeMap::new();
                differences(v, &wire, "", &mut diffs);
                for (d, n) in diffs {
                    *self.differences.entry(format!("{name}: {d}")).or_default() += n;
                }
            }
            Err(e) => self
                .failures
                .push(format!("{what}: {name}: {e}\n  body: {v}")),
        }
    }

    fn total(&self) -> usize {
        self.passed.values().sum()
    }
}

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/a2a-python-sdk-1.3.0")
}

fn sse_events(body: &str) -> Vec<&str> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect()
}

/// Checks the `result` of a JSON-RPC response by the request's method.
fn check_jsonrpc_result(t: &mut Tally, method: &str, what: &str, result: &Value, streaming: bool) {
    if streaming {
        return t.check::<StreamResponse>("StreamResponse", what, result);
    }
    match method {
        "SendMessage" => t.check::<SendMessageResponse>("SendMessageResponse", what, result),
        "GetTask" | "CancelTask" => t.check::<Task>("Task", what, result),
        "ListTasks" => t.check::<ListTasksResponse>("ListTasksResponse", what, result),
        "GetExtendedAgentCard" => t.check::<AgentCard>("AgentCard", what, result),
        other => t
            .failures
            .push(format!("{what}: no type known for result of {other}")),
    }
}

fn check_jsonrpc_params(t: &mut Tally, method: &str, what: &str, params: &Value) {
    match method {
        "SendMessage" | "SendStreamingMessage" => {
            t.check::<SendMessageRequest>("SendMessageRequest", what, params)
        }
        "GetTask" => t.check::<GetTaskRequest>("GetTaskRequest", what, params),
        "CancelTask" => t.check::<CancelTaskRequest>("CancelTaskRequest", what, params),
        "ListTasks" => t.check::<ListTasksRequest>("ListTasksRequest", what, params),
        "SubscribeToTask" => {
            t.check::<SubscribeToTaskRequest>("SubscribeToTaskRequest", what, params)
        }
        "CreateTaskPushNotificationConfig" => {
            t.check::<TaskPushNotificationConfig>("TaskPushNotificationConfig", what, params)
        }
        "GetExtendedAgentCard" | "FooBar" => {} // empty params of an unknown or parameterless method
        other => t
            .failures
            .push(format!("{what}: no type known for params of {other}")),
    }
}

fn check_jsonrpc_error(t: &mut Tally, what: &str, error: &Value) {
    t.check::<JsonRpcError>("JsonRpcError", what, error);
    if let Some(details @ Value::Array(_)) = error.get("data") {
        t.check::<Vec<TypedDetail>>("TypedDetail list (JSON-RPC error data)", what, details);
    }
}

/// A JSON-RPC response body (or SSE event): the envelope, then its result or error.
fn check_jsonrpc_response(t: &mut Tally, method: &str, what: &str, v: &Value, streaming: bool) {
    t.check::<JsonRpcResponse>("JsonRpcResponse", what, v);
    if let Some(error) = v.get("error") {
        check_jsonrpc_error(t, what, error);
    } else if let Some(result) = v.get("result") {
        if method.contains('/') {
            t.v03_payloads += 1; // an A2A 0.3 method: the 1.0 types do not apply
        } else {
            check_jsonrpc_result(t, method, what, result, streaming);
        }
    }
}

/// What an HTTP+JSON path carries (tenant prefixes and query strings are irrelevant).
fn rest_operation(method: &str, path: &str) -> &'static str {
    let path = path.split('?').next().unwrap_or(path).replace("%3A", ":");
    if path.ends_with("/.well-known/agent-card.json") {
        "card"
    } else if path.ends_with("message:send") {
        "send"
    } else if path.ends_with("message:stream") || path.ends_with(":subscribe") {
        "stream"
    } else if path.ends_with(":cancel") {
        "task"
    } else if path.ends_with("/pushNotificationConfigs") {
        "push_config"
    } else if path.ends_with("/extendedAgentCard") || path.ends_with("/card") {
        "card"
    } else if path.contains("/tasks/") && method == "GET" {
        "task"
    } else if path.ends_with("/tasks") && method == "GET" {
        "list"
    } else {
        "unknown"
    }
}

fn check_exchange(t: &mut Tally, entry: &Value) {
    let file = entry["file"].as_str().unwrap_or_default().to_owned();
    let line = entry["request"]["line"].as_str().unwrap_or_default();
    let mut parts = line.split(' ');
    let http_method = parts.next().unwrap_or_default();
    let path = parts.next().unwrap_or_default();
    let jsonrpc = path
        .split('?')
        .next()
        .unwrap_or_default()
        .ends_with("/jsonrpc");
    let status = entry["response"]["status"].as_u64().unwrap_or(0);
    let content_type = entry["response"]["headers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|h| {
            h[0].as_str()
                .is_some_and(|n| n.eq_ignore_ascii_case("content-type"))
        })
        .and_then(|h| h[1].as_str())
        .unwrap_or_default()
        .to_owned();
    let streaming = content_type.starts_with("text/event-stream");
    // The A2A 0.3 HTTP+JSON binding lives under `/rest/v1/`: its payloads are 0.3 shapes.
    let rest_v03 = !jsonrpc && path.contains("/rest/v1/");

    // ---- request ----
    let mut rpc_method = String::new();
    let req_body = entry["request"]["body"].as_str().unwrap_or_default();
    if !req_body.is_empty() {
        let what = format!("{file} request");
        let excluded = NOT_A2A_1_0
            .iter()
            .find(|(f, side, _)| *f == file && *side == "request");
        match serde_json::from_str::<Value>(req_body) {
            Err(_) => t.not_json += 1,
            Ok(v) => {
                let before = t.failures.len();
                if jsonrpc {
                    rpc_method = v["method"].as_str().unwrap_or_default().to_owned();
                    t.check::<JsonRpcRequest>("JsonRpcRequest", &what, &v);
                    if let Some(params) = v.get("params") {
                        if rpc_method.contains('/') {
                            t.v03_payloads += 1;
                        } else {
                            check_jsonrpc_params(t, &rpc_method, &what, params);
                        }
                    }
                } else if rest_v03 {
                    t.v03_payloads += 1;
                } else {
                    match rest_operation(http_method, path) {
                        "send" | "stream" => {
                            t.check::<SendMessageRequest>("SendMessageRequest", &what, &v)
                        }
                        "push_config" => t.check::<TaskPushNotificationConfig>(
                            "TaskPushNotificationConfig",
                            &what,
                            &v,
                        ),
                        _ => {} // e.g. `{}` posted to an unknown path: nothing A2A
                    }
                }
                if let Some((_, _, reason)) = excluded {
                    // An excluded body must really fail; its failures are expected, not counted.
                    assert!(
                        t.failures.len() > before,
                        "{what} is listed as not A2A 1.0 ({reason}) but parsed fine: remove it from the list"
                    );
                    t.failures.truncate(before);
                    t.excluded += 1;
                    t.excluded_seen.push((file.clone(), "request".into()));
                }
            }
        }
    }

    // ---- response ----
    let resp_body = entry["response"]["body"].as_str().unwrap_or_default();
    if resp_body.is_empty() {
        return;
    }
    let what = format!("{file} response");
    if streaming {
        for (i, data) in sse_events(resp_body).into_iter().enumerate() {
            let what = format!("{what} event {i}");
            match serde_json::from_str::<Value>(data) {
                Err(e) => t
                    .failures
                    .push(format!("{what}: SSE data is not JSON: {e}")),
                Ok(v) if jsonrpc => check_jsonrpc_response(t, &rpc_method, &what, &v, true),
                // An HTTP+JSON stream that fails midway sends the error envelope as an event.
                Ok(v) if v.get("error").is_some() => {
                    t.check::<ErrorEnvelope>("ErrorEnvelope (google.rpc.Status)", &what, &v)
                }
                Ok(_) if rest_v03 => t.v03_payloads += 1,
                Ok(v) => t.check::<StreamResponse>("StreamResponse", &what, &v),
            }
        }
        return;
    }
    let Ok(v) = serde_json::from_str::<Value>(resp_body) else {
        assert!(
            !content_type.contains("json"),
            "{what}: a JSON content type with a body that is not JSON"
        );
        t.not_json += 1;
        return;
    };
    if jsonrpc {
        return check_jsonrpc_response(t, &rpc_method, &what, &v, false);
    }
    if status >= 400 {
        return t.check::<ErrorEnvelope>("ErrorEnvelope (google.rpc.Status)", &what, &v);
    }
    if rest_v03 {
        t.v03_payloads += 1;
        return;
    }
    match rest_operation(http_method, path) {
        "card" => t.check::<AgentCard>("AgentCard", &what, &v),
        "send" => t.check::<SendMessageResponse>("SendMessageResponse", &what, &v),
        "task" => t.check::<Task>("Task", &what, &v),
        "list" => t.check::<ListTasksResponse>("ListTasksResponse", &what, &v),
        other => t
            .failures
            .push(format!("{what}: no type known for a {other} response")),
    }
}

#[test]
fn every_a2a_body_in_the_python_sdk_transcripts_round_trips() {
    let index = std::fs::read_to_string(fixture_dir().join("index.json"))
        .expect("tests/fixtures/a2a-python-sdk-1.3.0/index.json (copy of shared/fixtures)");
    let entries: Vec<Value> = serde_json::from_str(&index).expect("index.json is a JSON list");
    assert!(
        entries.len() >= 150,
        "only {} exchanges in index.json",
        entries.len()
    );

    let mut t = Tally::default();
    for entry in &entries {
        check_exchange(&mut t, entry);
    }
    for (file, side, _) in NOT_A2A_1_0 {
        assert!(
            t.excluded_seen.iter().any(|(f, s)| f == file && s == side),
            "{file} {side} is listed as not A2A 1.0 but was never met"
        );
    }

    println!(
        "A2A objects round-tripped: {} (from {} exchanges); excluded by design: {}; A2A 0.3 payloads: {}; non-JSON bodies: {}",
        t.total(),
        entries.len(),
        t.excluded,
        t.v03_payloads,
        t.not_json
    );
    for (name, n) in &t.passed {
        println!("  {n:4}  {name}");
    }
    println!("members not kept verbatim by the typed round trip:");
    for (d, n) in &t.differences {
        println!("  {n:4}  {d}");
    }
    let unexpected: Vec<_> = t
        .differences
        .keys()
        .filter(|d| !ALLOWED_DIFFERENCES.contains(&d.as_str()))
        .collect();
    assert!(
        unexpected.is_empty(),
        "the typed round trip lost or changed members: {unexpected:?}"
    );
    assert!(
        t.failures.is_empty(),
        "{} bodies failed to round-trip:\n{}",
        t.failures.len(),
        t.failures.join("\n")
    );
    // The corpus must keep covering the object kinds the issue names.
    for kind in [
        "AgentCard",
        "JsonRpcRequest",
        "JsonRpcResponse",
        "JsonRpcError",
        "SendMessageRequest",
        "SendMessageResponse",
        "StreamResponse",
        "Task",
        "ListTasksResponse",
        "ErrorEnvelope (google.rpc.Status)",
    ] {
        assert!(
            t.passed.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} was checked"
        );
    }
}

#[test]
fn doubles_in_struct_values_and_microsecond_timestamps_survive() {
    // From jsonrpc/26: data parts echo integers back as doubles (protobuf Struct); timestamps
    // carry microseconds.
    let body = r#"{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-11-30T03:19:10.490215Z"},
        "history":[{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"k":[1.0,2.0,3.0]},"mediaType":"application/json"}],"metadata":{"m":1.0}}]}"#;
    let task: Task = serde_json::from_str(body).unwrap();
    let wire = serde_json::to_value(&task).unwrap();
    assert_eq!(wire["status"]["timestamp"], "2026-11-30T03:19:10.490215Z");
    assert_eq!(wire["history"][0]["parts"][0]["data"]["k"][1], 2.0);
    assert_eq!(wire["history"][0]["metadata"]["m"], 1.0);
    assert_eq!(serde_json::from_value::<Task>(wire).unwrap(), task);
}
