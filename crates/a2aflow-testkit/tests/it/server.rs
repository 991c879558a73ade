//! The server's happy paths and error envelopes, checked on the wire.

use std::time::Duration;

use crate::support::*;
use a2aflow_testkit::{
    AgentSpec, Credential, NEGOTIATION_T_URI, Reply, Script, TaskScript, TestServer, behaviours,
};
use serde_json::{Value, json};

async fn server() -> TestServer {
    TestServer::builder()
        .agent(AgentSpec::new("a"))
        .spawn()
        .await
        .unwrap()
}

#[tokio::test]
async fn card_is_served_and_the_request_is_logged() {
    let s = server().await;
    let resp = call(
        &s,
        "GET",
        &path_of(&s.card_url("a")),
        &[V1, ("A2A-Extensions", "urn:x")],
        None,
    )
    .await
    .unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    let card = resp.json().await;
    assert_eq!(card["name"], "a");
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        json!(s.jsonrpc_url("a"))
    );
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    assert_eq!(
        card["supportedInterfaces"][1]["url"],
        json!(s.rest_url("a"))
    );
    assert_eq!(card["supportedInterfaces"][1]["protocolVersion"], "1.0");
    assert_eq!(card["capabilities"]["streaming"], json!(true));
    let log = s.requests();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].route, Some(a2aflow_testkit::Route::Card));
    assert_eq!(log[0].header("a2a-version"), Some("1.0"));
    assert_eq!(log[0].header("a2a-extensions"), Some("urn:x"));
    // Unknown agents and paths are plain 404s.
    let r = get_v1(&s, "/agents/nobody/.well-known/agent-card.json").await;
    assert_eq!(r.status, 404);
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn jsonrpc_send_get_list_cancel() {
    let s = server().await;
    let echo = rpc(
        &s,
        "a",
        "SendMessage",
        json!({"message": user_message("echo hi")}),
    )
    .await;
    assert_eq!(echo["result"]["message"]["parts"][0]["text"], "echo hi");
    assert_eq!(echo["result"]["message"]["role"], "ROLE_AGENT");
    assert_eq!(echo["jsonrpc"], "2.0");

    let done = rpc(
        &s,
        "a",
        "SendMessage",
        json!({"message": user_message("task build")}),
    )
    .await;
    let task = &done["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["data"]["echo"],
        "task build"
    );
    let id = task["id"].as_str().unwrap();
    let ctx = task["contextId"].as_str().unwrap();
    assert_eq!(task["history"][0]["taskId"], json!(id));

    let got = rpc(&s, "a", "GetTask", json!({"id": id, "historyLength": 0})).await;
    assert_eq!(got["result"]["id"], json!(id));
    assert!(got["result"].get("history").is_none());

    let listed = rpc(&s, "a", "ListTasks", json!({"contextId": ctx})).await;
    assert_eq!(listed["result"]["totalSize"], json!(1));
    assert_eq!(listed["result"]["nextPageToken"], json!(""));
    assert!(
        listed["result"]["tasks"][0].get("artifacts").is_none(),
        "artifacts only with includeArtifacts"
    );

    let slow = rpc(
        &s,
        "a",
        "SendMessage",
        json!({"message": user_message("slow 30"), "configuration": {"returnImmediately": true}}),
    )
    .await;
    assert_eq!(
        slow["result"]["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    let slow_id = slow["result"]["task"]["id"].as_str().unwrap();
    let canceled = rpc(&s, "a", "CancelTask", json!({"id": slow_id})).await;
    assert_eq!(canceled["result"]["status"]["state"], "TASK_STATE_CANCELED");
    let again = rpc(&s, "a", "CancelTask", json!({"id": slow_id})).await;
    assert_eq!(again["error"]["code"], json!(-32002));
    assert_eq!(again["error"]["data"][0]["reason"], "TASK_NOT_CANCELABLE");

    let missing = rpc(&s, "a", "GetTask", json!({"id": "nope"})).await;
    assert_eq!(missing["error"]["code"], json!(-32001));
    let all = rpc(&s, "a", "ListTasks", json!({"pageSize": 1})).await;
    assert_eq!(all["result"]["totalSize"], json!(2));
    assert_eq!(all["result"]["nextPageToken"], json!("1"));
    let unknown = rpc(&s, "a", "FooBar", json!({})).await;
    assert_eq!(
        unknown["error"],
        json!({"code": -32601, "message": "Method not found"})
    );
    let invalid = rpc(&s, "a", "SendMessage", json!({})).await;
    assert_eq!(invalid["error"]["code"], json!(-32602));
    s.shutdown().await.unwrap();
}

#[tokio::test]
async fn version_header_is_checked_unless_turned_off() {
    let s = server().await;
    let body = json!({"jsonrpc": "2.0", "id": 8, "method": "SendStreamingMessage", "params": {"message": user_message("echo v")}});
    let r = call(&s, "POST", &path_of(&s.jsonrpc_url("a")), &[], Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("application/json"),
        "error before a stream is plain JSON"
    );
    let v = r.json().await;
    assert_eq!(v["error"]["code"], json!(-32009));
    assert_eq!(v["error"]["data"][0]["reason"], "VERSION_NOT_SUPPORTED");
    assert_eq!(v["id"], json!(8));

    let rest = format!("{}/message:send", path_of(&s.rest_url("a")));
    let r = call(
        &s,
        "POST",
        &rest,
        &[("A2A-Version", "2.0")],
        Some(&json!({"message": user_message("echo")})),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 400);
    let v = r.json().await;
    assert_eq!(v["error"]["status"], "FAILED_PRECONDITION");
    assert_eq!(v["error"]["details"][0]["reason"], "VERSION_NOT_SUPPORTED");

    s.set_version_check("a", false).unwrap();
    let r = call(
        &s,
        "POST",
        &rest,
        &[],
        Some(&json!({"message": user_message("echo ok")})),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/a2a+json"));
    assert_eq!(r.json().await["message"]["parts"][0]["text"], "echo ok");
}

#[tokio::test]
async fn streaming_uses_python_sse_framing() {
    let s = server().await;
    let body = json!({"jsonrpc": "2.0", "id": "s1", "method": "SendStreamingMessage", "params": {"message": user_message("stream x")}});
    let r = post_rpc(&s, "a", &body).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("text/event-stream; charset=utf-8")
    );
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let raw = r.bytes().await.unwrap();
    assert!(raw.starts_with(b"data: {"));
    assert!(raw.ends_with(b"}\r\n\r\n"));
    let events: Vec<Value> = sse_events(&raw)
        .into_iter()
        .map(|(name, data)| {
            assert_eq!(name, "message");
            serde_json::from_str(&data).unwrap()
        })
        .collect();
    assert!(
        events
            .iter()
            .all(|e| e["id"] == "s1" && e["jsonrpc"] == "2.0")
    );
    assert_eq!(
        events[0]["result"]["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    let chunks: Vec<&Value> = events
        .iter()
        .filter_map(|e| e["result"].get("artifactUpdate"))
        .collect();
    assert_eq!(chunks.len(), 3);
    assert!(chunks[0].get("append").is_none());
    assert_eq!(chunks[1]["append"], json!(true));
    assert_eq!(chunks[2]["lastChunk"], json!(true));
    let last = events.last().unwrap();
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );

    // REST streams carry bare StreamResponses.
    let path = format!("{}/message:stream", path_of(&s.rest_url("a")));
    let r = call(
        &s,
        "POST",
        &path,
        &[V1],
        Some(&json!({"message": user_message("echo over rest")})),
    )
    .await
    .unwrap();
    let ev = sse_events(&r.bytes().await.unwrap());
    assert_eq!(ev.len(), 1);
    let msg: Value = serde_json::from_str(&ev[0].1).unwrap();
    assert_eq!(msg["message"]["parts"][0]["text"], "echo over rest");
}

#[tokio::test]
async fn subscribe_starts_with_the_task_and_pings_while_idle() {
    let s = TestServer::builder()
        .agent(AgentSpec::new("a"))
        .ping_interval(Duration::from_millis(10))
        .spawn()
        .await
        .unwrap();
    let started = rpc(
        &s,
        "a",
        "SendMessage",
        json!({"message": user_message("slow 0.2"), "configuration": {"returnImmediately": true}}),
    )
    .await;
    let id = started["result"]["task"]["id"].as_str().unwrap().to_owned();
    let path = format!("{}/tasks/{id}:subscribe", path_of(&s.rest_url("a")));
    let r = call(&s, "POST", &path, &[V1], None).await.unwrap();
    let events = sse_events(&r.bytes().await.unwrap());
    let data: Vec<Value> = events
        .iter()
        .filter(|(n, _)| n == "message")
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(data[0]["task"]["id"], json!(id));
    assert_eq!(
        data.last().unwrap()["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert!(
        events
            .iter()
            .any(|(n, c)| n == "comment" && c.starts_with("ping - ")),
        "{events:?}"
    );

    // Subscribing to a terminal task: a plain JSON error, JSON-RPC -32004.
    let v = rpc(&s, "a", "SubscribeToTask", json!({"id": id})).await;
    assert_eq!(v["error"]["code"], json!(-32004));
    let r = get_v1(&s, &path).await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json().await["error"]["details"][0]["reason"],
        "UNSUPPORTED_OPERATION"
    );
}

#[tokio::test]
async fn rest_happy_paths_and_errors() {
    let s = server().await;
    let base = path_of(&s.rest_url("a"));
    let r = call(
        &s,
        "POST",
        &format!("{base}/message:send"),
        &[V1],
        Some(&json!({"message": user_message("task r")})),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    let t = r.json().await;
    let id = t["task"]["id"].as_str().unwrap().to_owned();
    let ctx = t["task"]["contextId"].as_str().unwrap().to_owned();
    let r = get_v1(&s, &format!("{base}/tasks/{id}?historyLength=1")).await;
    let got = r.json().await;
    assert_eq!(got["history"].as_array().unwrap().len(), 1);
    let r = get_v1(
        &s,
        &format!("{base}/tasks?contextId={ctx}&includeArtifacts=true"),
    )
    .await;
    let listed = r.json().await;
    assert_eq!(listed["tasks"][0]["artifacts"][0]["name"], "result");
    let r = call(
        &s,
        "POST",
        &format!("{base}/tasks/{id}%3Acancel"),
        &[V1],
        None,
    )
    .await
    .unwrap();
    assert_eq!(r.status, 400);
    let e = r.json().await;
    assert_eq!(e["error"]["details"][0]["reason"], "TASK_NOT_CANCELABLE");
    // (path under the REST base, status, the error's `status` where it is checked)
    let errors = [
        ("/tasks/nope", 404, Some("NOT_FOUND")),
        ("/message:send", 404, None),
        ("/extendedAgentCard", 400, None),
    ];
    for (path, status, error_status) in errors {
        let r = get_v1(&s, &format!("{base}{path}")).await;
        assert_eq!(r.status, status, "GET {path}");
        if let Some(expected) = error_status {
            assert_eq!(r.json().await["error"]["status"], expected, "GET {path}");
        }
    }
}

#[tokio::test]
async fn input_required_follow_up_completes_the_task() {
    let s = server().await;
    let first = rpc(
        &s,
        "a",
        "SendMessage",
        json!({"message": user_message("input please")}),
    )
    .await;
    let task = &first["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let mut follow = user_message("here it is");
    follow["taskId"] = task["id"].clone();
    follow["contextId"] = task["contextId"].clone();
    let done = rpc(&s, "a", "SendMessage", json!({"message": follow})).await;
    assert_eq!(
        done["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert_eq!(
        done["result"]["task"]["status"]["message"]["parts"][0]["text"],
        "thanks, got: here it is"
    );
    let history = done["result"]["task"]["history"].as_array().unwrap();
    let roles: Vec<&str> = history
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["ROLE_USER", "ROLE_AGENT", "ROLE_USER"],
        "question before answer"
    );
    let again = rpc(&s, "a", "SendMessage", json!({"message": follow})).await;
    assert_eq!(again["error"]["code"], json!(-32004));
    let mut wrong_ctx = user_message("x");
    wrong_ctx["taskId"] = task["id"].clone();
    wrong_ctx["contextId"] = json!("other");
    assert_eq!(
        rpc(&s, "a", "SendMessage", json!({"message": wrong_ctx})).await["error"]["code"],
        json!(-32602)
    );
}

#[tokio::test]
async fn negotiation_propose_then_accept() {
    let s = server().await;
    let first = rpc(
        &s,
        "a",
        "SendMessage",
        json!({"message": user_message("negotiate energy")}),
    )
    .await;
    let task = &first["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let status_msg = &task["status"]["message"];
    assert_eq!(status_msg["extensions"], json!([NEGOTIATION_T_URI]));
    let md = status_msg["metadata"].as_object().unwrap();
    assert_eq!(
        md["templateUri"],
        "Negotiation-T/information-negotiation/propose/v1"
    );
    let ctx = a2aflow_testkit::NegotiationContext::from_metadata(md).unwrap();
    assert_eq!(
        (ctx.round, ctx.max_rounds, ctx.performative.as_str()),
        (1, 3, "PROPOSE")
    );

    // REJECT in round 1 brings a round-2 PROPOSE with the same id.
    let mut reject = user_message("no");
    reject["taskId"] = task["id"].clone();
    reject["metadata"] = behaviours::reply_metadata(&ctx, "REJECT");
    reject["extensions"] = json!([NEGOTIATION_T_URI]);
    let second = rpc(&s, "a", "SendMessage", json!({"message": reject})).await;
    let md2 = second["result"]["task"]["status"]["message"]["metadata"]
        .as_object()
        .unwrap()
        .clone();
    let ctx2 = a2aflow_testkit::NegotiationContext::from_metadata(&md2).unwrap();
    assert_eq!((ctx2.id.as_str(), ctx2.round), (ctx.id.as_str(), 2));

    let mut accept = user_message("yes");
    accept["taskId"] = task["id"].clone();
    accept["metadata"] = behaviours::reply_metadata(&ctx2, "ACCEPT");
    let done = rpc(&s, "a", "SendMessage", json!({"message": accept})).await;
    assert_eq!(
        done["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert_eq!(
        done["result"]["task"]["artifacts"][0]["parts"][0]["data"]["round"],
        json!(2)
    );
}

#[tokio::test]
async fn pre_task_reply_waits_for_a_follow_up_on_the_context() {
    let s = TestServer::builder()
        .agent(AgentSpec::new("p").script(|_| {
            Reply::propose(&a2aflow_testkit::Proposal::information(1, 5, "area"))
                .then(|m| Script::reply_text(format!("pre-task got {}", m.text())))
                .into()
        }))
        .spawn()
        .await
        .unwrap();
    let first = rpc(
        &s,
        "p",
        "SendMessage",
        json!({"message": user_message("start")}),
    )
    .await;
    let ctx = first["result"]["message"]["contextId"].clone();
    assert!(first["result"]["message"].get("taskId").is_none());
    assert!(first["result"]["message"]["metadata"]["negotiationContext"].is_object());
    let mut follow = user_message("accept");
    follow["contextId"] = ctx;
    let second = rpc(&s, "p", "SendMessage", json!({"message": follow})).await;
    assert_eq!(
        second["result"]["message"]["parts"][0]["text"],
        "pre-task got accept"
    );
}

#[tokio::test]
async fn crash_is_an_internal_error_or_an_sse_error_event() {
    let s = server().await;
    let v = rpc(
        &s,
        "a",
        "SendMessage",
        json!({"message": user_message("crash now")}),
    )
    .await;
    assert_eq!(
        v["error"],
        json!({"code": -32603, "message": "agent crashed on purpose: crash now"})
    );
    let body = json!({"jsonrpc": "2.0", "id": 31, "method": "SendStreamingMessage", "params": {"message": user_message("crash in stream")}});
    let r = post_rpc(&s, "a", &body).await;
    let events = sse_events(&r.bytes().await.unwrap());
    let (name, data) = events.last().unwrap();
    assert_eq!(name, "error");
    let err: Value = serde_json::from_str(data).unwrap();
    assert_eq!(err["error"]["code"], json!(-32603));
    assert_eq!(err["id"], json!(31));
}

#[tokio::test]
async fn required_extensions_and_auth_are_enforced() {
    let s = TestServer::builder()
        .agent(
            AgentSpec::new("x")
                .extension("urn:ext:must", true)
                .require_auth(Credential::ApiKey {
                    header: "X-API-Key".into(),
                    value: "k1".into(),
                }),
        )
        .spawn()
        .await
        .unwrap();
    let path = path_of(&s.jsonrpc_url("x"));
    let body = rpc_body("SendMessage", json!({"message": user_message("echo")}));
    let r = call(&s, "POST", &path, &[V1], Some(&body)).await.unwrap();
    assert_eq!(r.status, 401);
    let r = call(
        &s,
        "POST",
        &path,
        &[V1, ("X-API-Key", "wrong")],
        Some(&body),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 401);
    let r = call(&s, "POST", &path, &[V1, ("X-API-Key", "k1")], Some(&body))
        .await
        .unwrap();
    assert_eq!(r.json().await["error"]["code"], json!(-32008));
    let r = call(
        &s,
        "POST",
        &path,
        &[
            V1,
            ("X-API-Key", "k1"),
            ("A2A-Extensions", "urn:other, urn:ext:must"),
        ],
        Some(&body),
    )
    .await
    .unwrap();
    assert_eq!(
        r.json().await["result"]["message"]["parts"][0]["text"],
        "echo"
    );
    // The public card needs no credentials and declares the scheme.
    let r = call(&s, "GET", &path_of(&s.card_url("x")), &[], None)
        .await
        .unwrap();
    let card = r.json().await;
    assert_eq!(
        card["securitySchemes"]["apiKey"]["apiKeySecurityScheme"]["name"],
        "X-API-Key"
    );
    assert_eq!(
        card["capabilities"]["extensions"][0]["required"],
        json!(true)
    );
}

#[tokio::test]
async fn task_store_is_bounded() {
    let s = TestServer::builder()
        .agent(
            AgentSpec::new("b")
                .task_bound(3)
                .script(|_| TaskScript::new().complete().into()),
        )
        .spawn()
        .await
        .unwrap();
    let mut ids = Vec::new();
    for _ in 0..5 {
        let v = rpc(
            &s,
            "b",
            "SendMessage",
            json!({"message": user_message("t")}),
        )
        .await;
        ids.push(v["result"]["task"]["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(s.task_count("b"), 3);
    assert!(s.task("b", &ids[0]).is_none());
    assert!(s.task("b", &ids[4]).is_some());
}

#[tokio::test]
async fn http2_prior_knowledge_is_served() {
    use http_body_util::BodyExt;
    let s = server().await;
    let tcp = tokio::net::TcpStream::connect(s.addr()).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tcp),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "SendStreamingMessage", "params": {"message": user_message("task over h2")}});
    let req = http::Request::post(s.jsonrpc_url("a"))
        .header("A2A-Version", "1.0")
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(bytes::Bytes::from(
            body.to_string(),
        )))
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    assert_eq!(resp.version(), http::Version::HTTP_2);
    let raw = resp.into_body().collect().await.unwrap().to_bytes();
    let events = sse_events(&raw);
    let last: Value = serde_json::from_str(&events.last().unwrap().1).unwrap();
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    s.shutdown().await.unwrap();
    assert_eq!(s.open_connections(), 0);
}

#[tokio::test]
async fn declared_requested_extensions_can_be_echoed() {
    let s = TestServer::builder()
        .agent(
            AgentSpec::new("e")
                .extension("urn:a", false)
                .echo_extensions(true),
        )
        .spawn()
        .await
        .unwrap();
    let body = rpc_body("SendMessage", json!({"message": user_message("echo")}));
    let path = path_of(&s.jsonrpc_url("e"));
    let r = call(
        &s,
        "POST",
        &path,
        &[V1, ("A2A-Extensions", "urn:a, urn:unknown")],
        Some(&body),
    )
    .await
    .unwrap();
    assert_eq!(r.header("a2a-extensions"), Some("urn:a"));
    let r = call(&s, "POST", &path, &[V1], Some(&body)).await.unwrap();
    assert_eq!(r.header("a2a-extensions"), None);
}
