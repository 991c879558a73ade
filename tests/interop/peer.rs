//! Starting and stopping the Python peer (`peer_agent.py`) on loopback ports it binds itself.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use a2aflow::model::a2a::AgentCard;
use a2aflow::protocol::{CallOptions, HttpClient};

/// The environment variable `cargo xtask ci` sets to the interop venv's python.
pub const PY_PEER_VAR: &str = "A2AFLOW_PY_PEER";

/// How long the peer may take to answer its card after start (Python imports are slow).
const START_DEADLINE: Duration = Duration::from_secs(60);

/// A running peer; killed when dropped.
pub struct Peer {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    /// The port of its gRPC server (the card's `GRPC` interface is `127.0.0.1:PORT`).
    pub grpc_port: u16,
    /// The card it served.
    pub card: AgentCard,
}

/// The python to run the peer with. Never skips: without the variable the test fails and says how
/// to get one.
pub fn python() -> String {
    match std::env::var(PY_PEER_VAR) {
        Ok(p) if !p.trim().is_empty() => p,
        _ => panic!(
            "{PY_PEER_VAR} is not set: the interop tests need the official A2A Python SDK peer. \
             Run `cargo xtask ci` (it creates target/interop-venv and sets {PY_PEER_VAR}), or create \
             the venv yourself (python3 -m venv target/interop-venv && \
             target/interop-venv/bin/pip install -r tests/interop/requirements.lock.txt) and set \
             {PY_PEER_VAR}=target/interop-venv/bin/python"
        ),
    }
}

/// Reads the peer's `ready PORT GRPC_PORT` line on a thread (then drains its stdout to the end,
/// so a later print never meets a closed pipe).
fn ready_line(stdout: ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(line)) = lines.next() {
            let _ = tx.send(line);
        }
        for _ in lines {}
    });
    rx
}

/// `ready 41234 41235` → the two ports.
fn parse_ready(line: &str) -> (u16, u16) {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["ready", http, grpc] => match (http.parse(), grpc.parse()) {
            (Ok(h), Ok(g)) => (h, g),
            _ => panic!("the Python peer printed {line:?}, not `ready PORT GRPC_PORT`"),
        },
        _ => panic!("the Python peer printed {line:?}, not `ready PORT GRPC_PORT`"),
    }
}

impl Peer {
    /// Starts the peer on ports it binds itself (port 0: no race with other tests for a port
    /// picked here), learns them from its `ready` line, and waits (bounded) until its card answers.
    pub async fn start() -> Peer {
        let python = python();
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("interop")
            .join("peer_agent.py");
        let mut child = Command::new(&python)
            .arg(&script)
            .arg("0")
            .arg("0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {python} {}: {e}", script.display()));
        let ready = ready_line(child.stdout.take().expect("piped stdout"));
        let deadline = tokio::time::Instant::now() + START_DEADLINE;
        let (port, grpc_port) = loop {
            if let Ok(line) = ready.try_recv() {
                break parse_ready(&line);
            }
            if let Some(status) = child.try_wait().expect("peer status") {
                panic!("the Python peer exited early ({status}); see its stderr above");
            }
            if tokio::time::Instant::now() > deadline {
                panic!("the Python peer did not print its ports within {START_DEADLINE:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let base_url = format!("http://127.0.0.1:{port}");
        let mut peer = Peer {
            child,
            base_url,
            grpc_port,
            card: placeholder_card(),
        };
        let client = HttpClient::new().expect("client");
        loop {
            if let Some(status) = peer.child.try_wait().expect("peer status") {
                panic!("the Python peer exited early ({status}); see its stderr above");
            }
            let opts = CallOptions::default().with_timeout(Duration::from_secs(2));
            match client.fetch_agent_card(&peer.base_url, &opts).await {
                Ok(card) => {
                    peer.card = card;
                    return peer;
                }
                Err(e) if tokio::time::Instant::now() > deadline => {
                    panic!("the Python peer did not answer within {START_DEADLINE:?}: {e}")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn placeholder_card() -> AgentCard {
    serde_json::from_value(serde_json::json!({
        "name": "", "description": "", "version": "", "supportedInterfaces": [],
        "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": []
    }))
    .expect("placeholder card")
}
