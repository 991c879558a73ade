//! Protocol exactness: requests from the official Python SDK's transcripts
//! (`tests/fixtures/a2a-python-sdk-1.3.0`) replayed against a served workflow, answered with
//! the SDK server's status, content type and body, byte for byte; and the body limit (the
//! limits on runs and streams are in `limits`, over every binding).

use crate::support::{raw, rpc, serve, serve_with};
use a2aflow_server::Limits;
use serde_json::{Value, json};

/// The transcripts whose answer does not depend on a task the SDK's agent made.
const REPLAYED: &[&str] = &[
    "version/jsonrpc_01_no_header",
    "version/jsonrpc_02_v0.3",
    "version/jsonrpc_06_v2.0",
    "version/jsonrpc_07_garbage",
    "version/jsonrpc_08_stream_no_header",
    "version/jsonrpc_09_v03_method_no_header",
    "version/jsonrpc_10_query_param",
    "version/rest_01_no_header",
    "version/rest_02_v0.3",
    "version/rest_04_v2.0",
    "version/rest_05_get_task_no_header",
    "version/rest_06_stream_no_header",
    "version/rest_07_query_param",
    "jsonrpc/e01_unknown_method",
    "jsonrpc/e02_v03_method_name",
    "jsonrpc/e03_params_missing_message",
    "jsonrpc/e04_params_wrong_type",
    "jsonrpc/e05_params_v03_shaped_message",
    "jsonrpc/e06_params_not_object",
    "jsonrpc/e07_get_unknown_task",
    "jsonrpc/e08_cancel_unknown_task",
    "jsonrpc/e11_subscribe_unknown_task",
    "jsonrpc/e13_send_unknown_task_id",
    "jsonrpc/e16_batch_request",
    "jsonrpc/e17_wrong_jsonrpc_version",
    "jsonrpc/e18_notification_no_id",
    "jsonrpc/e20_push_config_unsupported",
    "jsonrpc/e21_extended_card_unsupported",
    "jsonrpc/e22_negative_history_length",
    "jsonrpc/e23_list_tasks_page_size_too_big",
    "jsonrpc/e24_list_tasks_bad_page_token",
    "jsonrpc/e25_http_get_on_endpoint",
    "jsonrpc/e27_bool_id",
    "rest/e01_unknown_path",
    "rest/e02_wrong_http_method",
    "rest/e04_missing_message",
    "rest/e05_v03_shaped_message",
    "rest/e06_get_unknown_task",
    "rest/e07_cancel_unknown_task",
    "rest/e11_push_config_unsupported",
    "rest/e12_extended_card_unsupported",
    "rest/e13_v03_path",
    "rest/e14_list_tasks_page_size_too_big",
    "rest/e17_negative_history_length",
    "rest/e18_send_unknown_task_id",
];

fn transcripts() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/a2a-python-sdk-1.3.0/index.json"
    );
    let text = std::fs::read_to_string(path).expect("the SDK transcripts");
    match serde_json::from_str(&text).expect("index.json") {
        Value::Array(all) => all,
        _ => panic!("index.json is a list"),
    }
}

/// The SDK peer's path on our server: `/jsonrpc` and `/rest` are agent `echo`'s.
fn our_path(line: &str) -> (String, String) {
    let mut words = line.split(' ');
    let method = words.next().unwrap_or("GET").to_owned();
    let path = words.next().unwrap_or("/");
    let ours = if let Some(rest) = path.strip_prefix("/jsonrpc") {
        format!("/agents/echo/jsonrpc{rest}")
    } else if let Some(rest) = path.strip_prefix("/rest") {
        format!("/agents/echo/rest{rest}")
    } else {
        format!("/agents/echo{path}")
    };
    (method, ours)
}

#[tokio::test]
async fn sdk_error_transcripts_replay_byte_for_byte() {
    let (server, _) = serve().await;
    let all = transcripts();
    let mut mismatches = Vec::new();
    for name in REPLAYED {
        let file = format!("{name}.txt");
        let t = all
            .iter()
            .find(|t| t["file"] == json!(file))
            .unwrap_or_else(|| panic!("no transcript {file}"));
        let (method, path) = our_path(t["request"]["line"].as_str().unwrap_or(""));
        let headers: Vec<(String, String)> = t["request"]["headers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|h| Some((h[0].as_str()?.to_owned(), h[1].as_str()?.to_owned())))
            .filter(|(k, _)| {
                !["host", "content-length", "user-agent"].contains(&k.to_lowercase().as_str())
            })
            .collect();
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let body = t["request"]["body"].as_str().unwrap_or("");
        let answer = raw(&server, &method, &path, &headers, body.as_bytes()).await;
        let want_status = t["response"]["status"].as_u64().unwrap_or(0);
        let want_type = t["response"]["headers"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|h| h[0] == json!("content-type"))
            .and_then(|h| h[1].as_str())
            .unwrap_or("");
        let want_body = t["response"]["body"].as_str().unwrap_or("");
        if u64::from(answer.status) != want_status
            || answer.content_type != want_type
            || answer.body != want_body
        {
            mismatches.push(format!(
                "{name}:\n  want {want_status} {want_type} {want_body}\n  got  {} {} {}",
                answer.status, answer.content_type, answer.body
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    server.shutdown().await;
}

#[tokio::test]
async fn a_body_past_the_limit_is_an_invalid_request() {
    let mut limits = Limits::default();
    limits.max_body_bytes = 256;
    let (server, _) = serve_with(limits).await;
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x".repeat(1000)}]}}});
    let answer = rpc(&server, &big).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json()["error"]["code"], json!(-32600));
    assert_eq!(
        answer.json()["error"]["message"],
        json!("the request body is larger than 256 bytes, the server's limit")
    );
    let rest = raw(
        &server,
        "POST",
        "/agents/echo/rest/message:send",
        &[("A2A-Version", "1.0")],
        big["params"].to_string().as_bytes(),
    )
    .await;
    assert_eq!(rest.status, 400);
    assert_eq!(rest.json()["error"]["status"], json!("INVALID_ARGUMENT"));
    server.shutdown().await;
}
