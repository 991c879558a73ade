//! Inbound authentication and read scoping: the card names the schemes, a request without a
//! valid credential is HTTP 401, a caller sees only its own runs (any other id is answered as
//! one that never existed, byte for byte). Each caller's own limit of runs in flight is in
//! `limits` (over every binding).

use crate::support::{Host, Raw, builder, raw};
use a2aflow::protocol::auth::Secret;
use a2aflow_server::{Callers, Limits, ServerHandle};
use serde_json::{Value, json};
use std::sync::Arc;

fn callers() -> Callers {
    Callers::new()
        .bearer("alice", Secret::new("alice-token"))
        .unwrap()
        .api_key("bob", "X-API-Key", Secret::new("bob-key"))
        .unwrap()
}

async fn serve(limits: Limits) -> ServerHandle {
    builder(Arc::new(Host::default()))
        .callers(callers())
        .limits(limits)
        .start()
        .await
        .unwrap()
}

const ALICE: (&str, &str) = ("Authorization", "Bearer alice-token");
const BOB: (&str, &str) = ("X-API-Key", "bob-key");

async fn rpc_as(
    server: &ServerHandle,
    who: Option<(&str, &str)>,
    method: &str,
    params: Value,
) -> Raw {
    let body = json!({ "jsonrpc": "2.0", "id": 9, "method": method, "params": params });
    let mut headers = vec![("A2A-Version", "1.0"), ("Content-Type", "application/json")];
    headers.extend(who);
    raw(
        server,
        "POST",
        "/agents/echo/jsonrpc",
        &headers,
        body.to_string().as_bytes(),
    )
    .await
}

async fn rest_as(
    server: &ServerHandle,
    who: Option<(&str, &str)>,
    method: &str,
    path: &str,
) -> Raw {
    let mut headers = vec![("A2A-Version", "1.0")];
    headers.extend(who);
    raw(
        server,
        method,
        &format!("/agents/echo/rest{path}"),
        &headers,
        b"",
    )
    .await
}

fn start(text: &str, immediately: bool) -> Value {
    json!({
        "message": { "messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{ "text": text }] },
        "configuration": { "returnImmediately": immediately },
    })
}

#[tokio::test]
async fn the_card_names_the_schemes_and_a_request_without_credentials_is_401() {
    let server = serve(Limits::default()).await;
    let card = raw(
        &server,
        "GET",
        "/agents/echo/.well-known/agent-card.json",
        &[],
        b"",
    )
    .await;
    assert_eq!(card.status, 200, "the card stays public");
    let card = card.json();
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer",
        "{card}"
    );
    assert_eq!(
        card["securitySchemes"]["apiKey:x-api-key"]["apiKeySecurityScheme"]["name"], "x-api-key",
        "{card}"
    );

    for who in [
        None,
        Some(("Authorization", "Bearer alice-tokeN")),
        Some(("X-API-Key", "alice-token")),
    ] {
        let refused = rpc_as(&server, who, "GetTask", json!({ "id": "x" })).await;
        assert_eq!(refused.status, 401, "{}", refused.body);
        assert_eq!(
            refused.json()["error"]["data"][0]["reason"],
            "UNAUTHENTICATED",
            "{}",
            refused.body
        );
        let refused = rest_as(&server, who, "GET", "/tasks/x").await;
        assert_eq!(refused.status, 401, "{}", refused.body);
        assert_eq!(
            refused.json()["error"]["status"],
            "UNAUTHENTICATED",
            "{}",
            refused.body
        );
    }
    let allowed = rpc_as(&server, Some(ALICE), "SendMessage", start("hi", false)).await;
    assert_eq!(allowed.status, 200);
    assert_eq!(
        allowed.json()["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{}",
        allowed.body
    );
    server.shutdown().await;
}

#[tokio::test]
async fn another_callers_task_is_answered_as_one_that_never_existed() {
    let server = serve(Limits::default()).await;
    let sent = rpc_as(&server, Some(ALICE), "SendMessage", start("mine", false))
        .await
        .json();
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    let own = rpc_as(&server, Some(ALICE), "GetTask", json!({ "id": id }))
        .await
        .json();
    assert_eq!(own["result"]["id"], json!(id));

    let never = "01a00000-0000-7000-8000-000000000000";
    for method in ["GetTask", "CancelTask", "SubscribeToTask"] {
        let foreign = rpc_as(&server, Some(BOB), method, json!({ "id": id })).await;
        let unknown = rpc_as(&server, Some(BOB), method, json!({ "id": never })).await;
        assert_eq!(foreign.status, unknown.status, "{method}");
        assert_eq!(foreign.body, unknown.body, "{method}");
        assert_eq!(
            foreign.json()["error"]["code"],
            -32001,
            "{method}: {}",
            foreign.body
        );
    }
    let follow = |task: &str| {
        let mut p = start("again", false);
        p["message"]["taskId"] = json!(task);
        p
    };
    let foreign = rpc_as(&server, Some(BOB), "SendMessage", follow(&id)).await;
    let unknown = rpc_as(&server, Some(BOB), "SendMessage", follow(never)).await;
    assert_eq!(foreign.json()["error"]["code"], -32001, "{}", foreign.body);
    assert_eq!(
        foreign.body.replace(&id, "ID"),
        unknown.body.replace(never, "ID"),
        "a follow-up names only the id it was given"
    );
    let foreign = rest_as(&server, Some(BOB), "GET", &format!("/tasks/{id}")).await;
    let unknown = rest_as(&server, Some(BOB), "GET", &format!("/tasks/{never}")).await;
    assert_eq!(
        (foreign.status, &foreign.body),
        (unknown.status, &unknown.body)
    );
    assert_eq!(foreign.status, 404);

    let listed = rpc_as(&server, Some(BOB), "ListTasks", json!({}))
        .await
        .json();
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    assert_eq!(listed["result"]["totalSize"], 0, "{listed}");
    let listed = rpc_as(&server, Some(ALICE), "ListTasks", json!({}))
        .await
        .json();
    assert_eq!(listed["result"]["tasks"][0]["id"], json!(id), "{listed}");
    server.shutdown().await;
}

#[tokio::test]
async fn an_open_server_refuses_a_listen_address_that_is_not_loopback() {
    let refused = builder(Arc::new(Host::default()))
        .listen("0.0.0.0:0".parse().unwrap())
        .start()
        .await
        .unwrap_err();
    assert_eq!(refused.code.to_string(), "config.invalid");
    assert!(
        refused.message.contains("without authentication"),
        "{}",
        refused.message
    );
    let allowed = builder(Arc::new(Host::default()))
        .listen("0.0.0.0:0".parse().unwrap())
        .allow_unauthenticated()
        .start()
        .await
        .unwrap();
    allowed.shutdown().await;
}
