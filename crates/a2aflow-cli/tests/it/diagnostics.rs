//! Diagnostics on stderr: `-v`, `RUST_LOG` and `--wire-log` show the traffic with every secret
//! redacted, and `insecure_skip_verify` warns once.

use crate::support::{assert_exit, assert_fails_with, serve, stderr};
use a2aflow_testkit::{AgentSpec, Credential, TestServer};
use std::process::{Command, Output};

const SECRET: &str = "s3cr3t-bearer-token-do-not-log-4711";

fn locked_server() -> (TestServer, tokio::runtime::Runtime) {
    serve(
        TestServer::builder()
            .agent(AgentSpec::new("locked").require_auth(Credential::Bearer(SECRET.into()))),
    )
}

fn send(server: &TestServer, extra: &[&str], env: &[(&str, &str)]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let creds = dir.path().join("credentials.json");
    std::fs::write(
        &creds,
        r#"{"locked": {"bearer": {"token": "env:DIAG_TEST_TOKEN"}}}"#,
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2aflow"));
    cmd.args(["send", &server.card_url("locked"), "task with a token"])
        .args(["--credentials", &creds.display().to_string()])
        .args(["--agent-name", "locked"])
        .args(extra)
        .env_remove("RUST_LOG")
        .env("DIAG_TEST_TOKEN", SECRET);
    for (k, v) in env {
        cmd.env(k, v);
    }
    (cmd.output().unwrap(), dir)
}

#[test]
fn the_wire_log_flag_shows_requests_with_the_token_redacted() {
    let (server, _rt) = locked_server();
    let (out, _d) = send(&server, &["--wire-log"], &[]);
    assert_exit(&out, 0);
    let err = stderr(&out);
    assert!(err.contains("a2aflow::wire"), "{err}");
    assert!(
        err.contains("SendMessage"),
        "the request body is logged: {err}"
    );
    assert!(
        err.contains("***"),
        "the auth header is shown redacted: {err}"
    );
    assert!(!err.contains(SECRET), "the token leaked: {err}");
}

#[test]
fn rust_log_and_verbose_flags_reach_the_subscriber_without_leaking_the_token() {
    let (server, _rt) = locked_server();
    let (out, _d) = send(&server, &[], &[("RUST_LOG", "a2aflow::wire=debug")]);
    assert_fails_with(&out, 0, "a2aflow::wire");
    assert!(!stderr(&out).contains(SECRET), "{}", stderr(&out));

    let (out, _d) = send(&server, &["-vvv"], &[]);
    assert_fails_with(&out, 0, "TRACE");
    assert!(!stderr(&out).contains(SECRET), "{}", stderr(&out));

    // Without a flag, nothing but warnings.
    let (out, _d) = send(&server, &[], &[]);
    assert_eq!(stderr(&out), "");
}

#[test]
fn insecure_skip_verify_warns_once() {
    let (server, _rt) = locked_server();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("engine.toml");
    std::fs::write(&config, "[tls]\ninsecure_skip_verify = true\n").unwrap();
    let (out, _d) = send(&server, &["--config", &config.display().to_string()], &[]);
    assert_exit(&out, 0);
    assert_eq!(
        stderr(&out)
            .matches("TLS server verification is DISABLED")
            .count(),
        1,
        "{}",
        stderr(&out)
    );
}
