//! The `a2aflow serve` process of a test: started with its arguments, the card URL of each
//! served workflow read from its stdout, SIGKILLed or stopped with SIGTERM; clients of its
//! agents; what the testkit agents were sent.

use crate::host::cli_binary;
use a2aflow::protocol::{Binding, CallOptions, HttpClient, Transport, connect};
use a2aflow::testkit::{Route, TestServer};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A hang guard, never a timing assertion.
pub const HANG: Duration = Duration::from_secs(60);

/// One running `a2aflow serve`.
pub struct Served {
    child: Child,
    cards: HashMap<String, String>,
}

impl Served {
    /// Starts `a2aflow serve ARGS` serving `workflows` workflows (stderr into `log`) and reads
    /// their `NAME CARD_URL` lines.
    pub fn start(args: &[String], workflows: usize, log: &Path) -> Served {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap();
        let mut child = Command::new(cli_binary())
            .arg("serve")
            .args(args)
            // The refusals of delegation requests are logged at info.
            .env("RUST_LOG", "a2aflow::serve=info")
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut cards = HashMap::new();
        for _ in 0..workflows {
            let line = lines
                .next()
                .expect("a card line (see the serve log)")
                .unwrap();
            let (name, url) = line.split_once(' ').expect("NAME CARD_URL");
            cards.insert(name.to_owned(), url.to_owned());
        }
        Served { child, cards }
    }

    /// The card URL of served workflow `name`.
    pub fn card(&self, name: &str) -> &str {
        &self.cards[name]
    }

    /// SIGKILL: the process ends at once, its runs' leases stay until they lapse.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM, and the exit code must be 0.
    pub fn stop(mut self) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let guard = Instant::now() + HANG;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < guard, "a2aflow serve did not stop");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(0), "a2aflow serve exits 0 on SIGTERM");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // A failed test leaves no process behind.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client of the agent whose card is at `card_url`, on `binding`.
pub async fn client(card_url: &str, binding: Binding) -> Arc<dyn Transport> {
    let http = HttpClient::builder().build().expect("http client");
    let card = http
        .fetch_agent_card(card_url, &CallOptions::default())
        .await
        .expect("card");
    connect(&card, &http, &[binding]).expect("transport")
}

/// The messages testkit agent `agent` was sent (SendMessage and SendStreamingMessage): the
/// business commands.
pub fn sends(agents: &TestServer, agent: &str) -> usize {
    agents
        .requests()
        .iter()
        .filter(|r| r.agent.as_deref() == Some(agent))
        .filter(|r| matches!(r.route, Some(Route::Send | Route::Stream)))
        .count()
}

/// A free loopback port (bound and let go), for a server that must come back on the same one.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Writes `text` to `dir/name` and returns the path as a string.
pub fn file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Strings from `&str`s.
pub fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

/// Waits until `done` holds, checking every 10 ms, for at most [`HANG`].
pub async fn wait_until(done: impl FnMut() -> bool) -> bool {
    a2aflow_tests::wait_until(HANG, done).await
}
