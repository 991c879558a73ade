//! The real CLI against the Python peer over gRPC: `a2aflow card` shows the peer's gRPC
//! interface, and `a2aflow send URL TEXT --binding grpc` (plain and `--stream`) reaches it.

use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::host::cli_binary;
use crate::peer::Peer;

/// Runs the CLI; every exchange is bounded by `--timeout` (card fetch, send, stream).
fn a2aflow(args: &[&str]) -> Output {
    Command::new(cli_binary())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run a2aflow")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn card_shows_the_grpc_interface() {
    let peer = Peer::start().await;
    let out = a2aflow(&["card", &peer.base_url]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let line = format!("GRPC 127.0.0.1:{} (1.0)", peer.grpc_port);
    assert!(stdout.contains(&line), "{line} in:\n{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_over_grpc_completes_a_task() {
    let peer = Peer::start().await;
    for extra in [&[][..], &["--stream"][..]] {
        let mut args = vec![
            "send",
            peer.base_url.as_str(),
            "work over grpc",
            "--binding",
            "grpc",
            "--format",
            "json",
            "--timeout",
            "30",
        ];
        args.extend_from_slice(extra);
        let out = a2aflow(&args);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{extra:?}: {stdout}{}",
            text(&out.stderr)
        );
        let task: Value = serde_json::from_str(&stdout).expect("a task as JSON");
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task:#}");
        assert_eq!(
            task["artifacts"][0]["parts"][0]["text"], "work over grpc",
            "{task:#}"
        );
    }
    // The peer's task store holds the tasks the gRPC sends made (shared by every binding).
    let out = a2aflow(&[
        "send",
        peer.base_url.as_str(),
        "reply over grpc",
        "--binding",
        "grpc",
        "--timeout",
        "30",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("reply over grpc"));
}
