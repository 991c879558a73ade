//! `a2aflow send` has one deadline for the whole exchange, says when a stream closed before a
//! terminal state, and `send`/`card` read `--config`.

use a2aflow_testkit::{AgentSpec, Fault, Route, TestServer};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn server(ping: Duration) -> (TestServer, tokio::runtime::Runtime) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(
            TestServer::builder()
                .ping_interval(ping)
                .agent(AgentSpec::new("beta").streaming(true))
                .spawn(),
        )
        .unwrap();
    (server, rt)
}

fn a2aflow(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_guarded(child)
}

/// Waits for `child`, killing it past a generous hang guard (a hang is a failure, not a wait).
fn wait_guarded(mut child: Child) -> Output {
    let guard = Instant::now() + Duration::from_secs(45);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > guard {
            let _ = child.kill();
            panic!("a2aflow hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn keep_alives_do_not_hold_send_past_its_deadline_and_the_task_is_cancelled() {
    let (server, _rt) = server(Duration::from_millis(50));
    let out = a2aflow(&[
        "send",
        &server.card_url("beta"),
        "hang until cancelled",
        "--stream",
        "--timeout",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(
            TestServer::builder()
                .agent(
                    AgentSpec::new("quitter")
                        .streaming(true)
                        .card_patch(move |card| {
                            for i in card["supportedInterfaces"].as_array_mut().unwrap() {
                                i["url"] = endpoint.clone().into();
                            }
                        }),
                )
                .spawn(),
        )
        .unwrap();
    let out = a2aflow(&[
        "send",
        &server.card_url("quitter"),
        "go",
        "--stream",
        "--binding",
        "jsonrpc",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
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
    let out = a2aflow(&[
        "send",
        &server.card_url("beta"),
        "echo hi",
        "--config",
        &config,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
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
    let out = a2aflow(&["card", &server.card_url("beta"), "--config", &config]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("a2a.timeout"), "{}", stderr(&out));
}
