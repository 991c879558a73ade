//! The testkit agents in a child process of their own (the same binary, role `server`), so the
//! engine's memory is measured without the agents' task stores.

use std::process::Stdio;
use std::time::Duration;

use a2aflow::a2at::NEGOTIATION_T_EXTENSION_URI;
use a2aflow::testkit::{AgentSpec, TestServer};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

/// The non-streaming agent (blocking or polled sends).
pub const POLLER: &str = "poller";
/// The streaming agent (SSE).
pub const STREAMER: &str = "streamer";

/// Tasks an agent keeps: more than any section has in flight.
const TASK_BOUND: usize = 1_000_000;
/// How long the child may take to start or to stop.
const START_STOP: Duration = Duration::from_secs(30);

/// Child side: serves both agents until stdin closes (the parent went away or asked to stop).
pub fn serve() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let agent = |name: &str, streaming: bool| {
            AgentSpec::new(name)
                .streaming(streaming)
                .extension(NEGOTIATION_T_EXTENSION_URI, false)
                .task_bound(TASK_BOUND)
        };
        let server = TestServer::builder()
            .agent(agent(POLLER, false))
            .agent(agent(STREAMER, true))
            .request_log_capacity(0)
            .spawn()
            .await
            .unwrap();
        println!("LISTEN {}", server.base_url());
        let mut sink = Vec::new();
        let _ = tokio::io::stdin().read_to_end(&mut sink).await;
        let _ = tokio::time::timeout(START_STOP, server.shutdown()).await;
    });
    // Tasks still hanging on the agents are not waited for: the process ends here.
    rt.shutdown_background();
}

/// Parent side: the running child.
pub struct ServerProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    base_url: String,
}

impl ServerProcess {
    /// Starts the child and waits for its address.
    pub async fn start() -> ServerProcess {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(crate::ROLE_ENV, "server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = tokio::time::timeout(START_STOP, lines.next_line())
            .await
            .expect("the server child did not start in time")
            .unwrap()
            .expect("the server child ended before listening");
        let base_url = line
            .strip_prefix("LISTEN ")
            .unwrap_or_else(|| panic!("unexpected first line from the server child: {line}"))
            .to_owned();
        ServerProcess {
            child,
            stdin,
            base_url,
        }
    }

    /// The card URL of `agent`.
    pub fn card_url(&self, agent: &str) -> String {
        format!(
            "{}/agents/{agent}/.well-known/agent-card.json",
            self.base_url
        )
    }

    /// Closes the child's stdin and waits for it to end (killed if it does not in time).
    pub async fn stop(mut self) {
        drop(self.stdin.take());
        if tokio::time::timeout(START_STOP, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}
