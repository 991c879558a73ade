//! `a2aflow send` has one deadline for the whole exchange, says when a stream closed before a
//! terminal state, and `send`/`card` read `--config`.

use crate::support::{a2aflow_guarded, assert_exit, assert_fails_with, serve, stderr};
use a2aflow_testkit::{AgentSpec, Fault, Route, TestServer};
use std::time::Duration;

fn server(ping: Duration) -> (TestServer, tokio::runtime::Runtime) {
    serve(
        TestServer::builder()
            .ping_interval(ping)
            .agent(AgentSpec::new("beta").streaming(true)),
    )
}

#[test]
fn keep_alives_do_not_hold_send_past_its_deadline_and_the_task_is_cancelled() {
    let (server, _rt) = server(Duration::from_millis(50));
    let out = a2aflow_guarded(&[
        "send",
        &server.card_url("beta"),
        "hang until cancelled",
        "--stream",
        "--timeout",
        "1",
    ]);
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("a2a.timeout") && err.contains("deadline"),
        "{err}"
    );
    assert!(!err.contains("ended in"), "{err}");
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.route == Some(Route::Cancel)),
        "no CancelTask reached the agent"
    );
}

/// A JSON-RPC endpoint whose SendStreamingMessage answers one WORKING task event, then closes
/// the stream cleanly (as a server that hangs up does). Returns its URL.
fn hang_up_endpoint() -> String {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let id = serde_json::from_slice::<serde_json::Value>(&body)
                .map(|b| b["id"].clone())
                .unwrap_or_default();
            let event = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"task": {
                "id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_WORKING"}}}});
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: {event}\n\n"
            );
        }
    });
    url
}

#[test]
fn a_stream_that_closes_while_working_says_so() {
    let endpoint = hang_up_endpoint();
    let (server, _rt) = serve(
        TestServer::builder().agent(AgentSpec::new("quitter").streaming(true).card_patch(
            move |card| {
                for i in card["supportedInterfaces"].as_array_mut().unwrap() {
                    i["url"] = endpoint.clone().into();
                }
            },
        )),
    );
    let out = a2aflow_guarded(&[
        "send",
        &server.card_url("quitter"),
        "go",
        "--stream",
        "--binding",
        "jsonrpc",
    ]);
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("a2a.connection")
            && err.contains("the stream closed before task t-1")
            && err.contains("TASK_STATE_WORKING"),
        "{err}"
    );
    assert!(!err.contains("ended in"), "{err}");
}

#[test]
fn send_and_card_take_a_config_file() {
    let (server, _rt) = server(Duration::from_secs(15));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("engine.toml");
    std::fs::write(
        &config,
        "bindings = [\"rest\"]\n[timeouts]\nrequest_secs = 0.5\n",
    )
    .unwrap();
    let config = config.display().to_string();
    let out = a2aflow_guarded(&[
        "send",
        &server.card_url("beta"),
        "echo hi",
        "--config",
        &config,
    ]);
    assert_exit(&out, 0);
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.route == Some(Route::Send) && r.path.contains("/rest")),
        "the configured binding was used"
    );
    server
        .set_fault("beta", Route::Card, Fault::NeverAnswer)
        .unwrap();
    let out = a2aflow_guarded(&["card", &server.card_url("beta"), "--config", &config]);
    assert_fails_with(&out, 1, "a2a.timeout");
}
