//! Drives `a2aflow send` against testkit agents: every exit code and the output shapes.

use crate::support::{
    Agents, a2aflow, agents, assert_exit, assert_fails_with, stdout, stdout_json,
};
use std::process::Output;

/// `a2aflow send <card of agent> <text> <extra…>` against the shared testkit agents.
fn send_to(a: &Agents, agent: &str, text: &str, extra: &[&str]) -> Output {
    let card = a.server.card_url(agent);
    let mut args = vec!["send", card.as_str(), text];
    args.extend_from_slice(extra);
    a2aflow(&args)
}

#[test]
fn a_direct_message_exits_0_and_prints_its_text() {
    let a = agents();
    let out = send_to(&a, "alpha", "echo hello there", &[]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.starts_with("message "), "{text}");
    assert!(text.contains("echo hello there"), "{text}");
}

#[test]
fn a_direct_message_as_json_is_an_a2a_message() {
    let a = agents();
    let out = send_to(
        &a,
        "alpha",
        "echo hi",
        &["--format", "json", "--binding", "rest"],
    );
    assert_exit(&out, 0);
    let m = stdout_json(&out);
    assert_eq!(m["role"], "ROLE_AGENT", "{m:#}");
    assert_eq!(m["parts"][0]["text"], "echo hi", "{m:#}");
    assert!(m["messageId"].as_str().is_some_and(|s| !s.is_empty()));
}

#[test]
fn a_completed_task_exits_0_with_its_artifact() {
    let a = agents();
    let out = send_to(
        &a,
        "alpha",
        "task look",
        &["--data", "{\"k\": 1}", "--format", "json"],
    );
    assert_exit(&out, 0);
    let t = stdout_json(&out);
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t:#}");
    assert!(t["id"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(t["contextId"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(t["artifacts"][0]["name"], "result", "{t:#}");
    assert_eq!(
        t["artifacts"][0]["parts"][0]["data"]["echo"], "task look",
        "{t:#}"
    );
    // The --data value went out as a data part after the text.
    let sent = a
        .server
        .requests()
        .into_iter()
        .filter_map(|r| r.body)
        .find(|b| b.to_string().contains("task look"))
        .expect("the send request");
    let parts = &sent["params"]["message"]["parts"];
    assert_eq!(parts[0]["text"], "task look", "{sent:#}");
    assert_eq!(parts[1]["data"], serde_json::json!({"k": 1}), "{sent:#}");
}

#[test]
fn a_completed_task_in_text_names_state_and_artifact() {
    let a = agents();
    let out = send_to(&a, "alpha", "task look", &[]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.starts_with("task "), "{text}");
    assert!(text.contains("TASK_STATE_COMPLETED"), "{text}");
    assert!(text.contains("artifact result:"), "{text}");
}

#[test]
fn a_failed_task_exits_1_with_a2a_task_failed() {
    let a = agents();
    let out = send_to(&a, "alpha", "fail on purpose", &[]);
    assert_fails_with(&out, 1, "a2a.task_failed");
    assert!(
        stdout(&out).contains("TASK_STATE_FAILED"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_rejected_task_exits_1_with_a2a_task_rejected() {
    let a = agents();
    let out = send_to(&a, "alpha", "reject please", &[]);
    assert_fails_with(&out, 1, "a2a.task_rejected");
}

#[test]
fn a_stream_assembles_the_chunks_into_one_artifact() {
    let a = agents();
    let out = send_to(&a, "beta", "stream it", &["--stream", "--format", "json"]);
    assert_exit(&out, 0);
    let t = stdout_json(&out);
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t:#}");
    let artifacts = t["artifacts"].as_array().unwrap();
    assert_eq!(artifacts.len(), 1, "{t:#}");
    assert_eq!(artifacts[0]["name"], "stream-result");
    let texts: Vec<&str> = artifacts[0]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["chunk-1 ", "chunk-2 ", "chunk-3"]);
    assert_eq!(
        t["status"]["message"]["parts"][0]["text"],
        "stream done: stream it"
    );
}

#[test]
fn bad_data_json_exits_2_before_sending() {
    let a = agents();
    let before = a.server.requests().len();
    let out = send_to(&a, "alpha", "echo x", &["--data", "{not json"]);
    assert_fails_with(&out, 2, "--data is not JSON");
    assert_eq!(a.server.requests().len(), before);
}

#[test]
fn usage_errors_exit_2() {
    let cases: [(&str, &[&str]); 2] = [
        ("no message", &["send", "http://127.0.0.1:9/"]),
        (
            "unknown binding",
            &["send", "http://127.0.0.1:9/", "x", "--binding", "slimrpc"],
        ),
    ];
    for (name, args) in cases {
        assert_eq!(a2aflow(args).status.code(), Some(2), "{name}");
    }
}

#[test]
fn an_unreachable_agent_exits_1_with_a2a_connection() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let out = a2aflow(&["send", &format!("http://127.0.0.1:{port}/"), "echo x"]);
    assert_fails_with(&out, 1, "a2a.connection");
}

#[test]
fn an_input_required_task_exits_1_and_a_follow_up_on_it_completes() {
    let a = agents();
    let url = a.server.card_url("alpha");
    let out = a2aflow(&["send", &url, "input please", "--format", "json"]);
    assert_fails_with(&out, 1, "negotiation.not_negotiable");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the agent asks for more input"), "{err}");
    let t = stdout_json(&out);
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{t:#}");
    assert!(
        err.contains(&format!("--task-id {}", t["id"].as_str().unwrap())),
        "{err}"
    );
    let (task_id, context_id) = (
        t["id"].as_str().unwrap().to_owned(),
        t["contextId"].as_str().unwrap().to_owned(),
    );
    let out = a2aflow(&[
        "send",
        &url,
        "more detail",
        "--task-id",
        &task_id,
        "--context-id",
        &context_id,
        "--format",
        "json",
    ]);
    assert_exit(&out, 0);
    let t = stdout_json(&out);
    assert_eq!(t["id"], task_id.as_str());
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t:#}");
    assert_eq!(t["artifacts"][0]["parts"][0]["data"]["echo"], "more detail");
}

/// `send` selects credentials by the name the user gives (`--agent-name`),
/// never by the name the agent's card declares for itself.
#[test]
fn credentials_are_selected_by_agent_name_not_by_the_cards_name() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let spec = a2aflow_testkit::AgentSpec::new("locked")
        .require_auth(a2aflow_testkit::Credential::Bearer("victim-token".into()))
        .card_patch(|card| card["name"] = serde_json::json!("victim"));
    let server = rt
        .block_on(a2aflow_testkit::TestServer::single(spec))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let creds = dir.path().join("credentials.json");
    std::fs::write(
        &creds,
        r#"{"victim": {"bearer": {"token": "victim-token"}}}"#,
    )
    .unwrap();
    let url = server.card_url("locked");
    let creds = creds.to_str().unwrap();

    let out = a2aflow(&["send", &url, "echo hi", "--credentials", creds]);
    assert_fails_with(&out, 2, "--agent-name");

    let out = a2aflow(&[
        "send",
        &url,
        "echo hi",
        "--credentials",
        creds,
        "--agent-name",
        "mine",
    ]);
    assert_fails_with(&out, 1, "auth.requirement_unsatisfied");
    assert!(
        !server
            .requests()
            .iter()
            .any(|r| r.header("authorization").is_some()),
        "the card's self-declared name must not pick the token"
    );

    let out = a2aflow(&[
        "send",
        &url,
        "echo hi",
        "--credentials",
        creds,
        "--agent-name",
        "victim",
    ]);
    assert_exit(&out, 0);

    // Credentials named by a --config file need the user's name just the same.
    let config = dir.path().join("engine.toml");
    std::fs::write(&config, format!("credentials_file = {creds:?}\n")).unwrap();
    let before = server.requests().len();
    let out = a2aflow(&[
        "send",
        &url,
        "echo hi",
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_fails_with(&out, 2, "--agent-name");
    assert_eq!(
        server.requests().len(),
        before,
        "refused before any request"
    );
    drop(server);
}
