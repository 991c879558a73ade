//! Leases across real processes: this test binary runs itself as the second driver
//! (`child::drive`, ignored unless started by these tests with its environment).
//!
//! Takeover after SIGKILL is by lease expiry: a killed driver stops renewing, its lease lapses
//! after the store's time to live, and the next driver gets the run with a higher token.

use crate::support::{block_on, started};
use a2aflow_kernel::journal::RunStore;
use a2aflow_model::ErrorCode;
use a2aflow_store_sqlite::{SqliteStore, StoreOptions};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const ENV_PATH: &str = "A2AFLOW_STORE_CHILD_PATH";
const ENV_OWNER: &str = "A2AFLOW_STORE_CHILD_OWNER";
const ENV_TTL_MS: &str = "A2AFLOW_STORE_CHILD_TTL_MS";
/// Hang guard for every wait on a child or a lease (never part of an assertion).
const HANG_GUARD: Duration = Duration::from_secs(60);

mod child {
    use super::*;

    /// The second process: opens the store, tries to take run `r1`, prints `ACQUIRED <token>`
    /// or `REFUSED <code>`, then holds on until its stdin closes (or it is killed).
    #[test]
    #[ignore = "run as a child process by the lease tests"]
    fn drive() {
        let (Ok(path), Ok(owner), Ok(ttl)) = (
            std::env::var(ENV_PATH),
            std::env::var(ENV_OWNER),
            std::env::var(ENV_TTL_MS),
        ) else {
            panic!("started without {ENV_PATH}, {ENV_OWNER} and {ENV_TTL_MS}");
        };
        let ttl = Duration::from_millis(ttl.parse().unwrap());
        block_on(async {
            let options = StoreOptions::default().with_lease_ttl(ttl);
            let store = SqliteStore::open_with(&path, options).await.unwrap();
            match store.acquire("r1", &owner).await {
                Ok(lease) => println!("ACQUIRED {}", lease.token),
                Err(e) => println!("REFUSED {}", e.code),
            }
        });
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    }
}

struct Driver {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Driver {
    fn start(path: &Path, owner: &str, ttl: Duration) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "processes::child::drive",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ENV_PATH, path)
            .env(ENV_OWNER, owner)
            .env(ENV_TTL_MS, ttl.as_millis().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Driver { child, lines }
    }

    /// The child's verdict (`ACQUIRED n` or `REFUSED code`), found in the harness's output
    /// (libtest may print the test's name on the same line).
    fn verdict(&mut self) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(HANG_GUARD)
                .expect("the child gave no verdict");
            for word in ["ACQUIRED", "REFUSED"] {
                if let Some(at) = line.find(word) {
                    return line[at..].trim().to_owned();
                }
            }
        }
    }

    fn kill(mut self) {
        // std's kill is SIGKILL on Unix.
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

fn store_with_run(path: &Path) {
    block_on(async {
        let store = SqliteStore::open(path).await.unwrap();
        store.create_run(started("r1", 1)).await.unwrap();
        store.close().await;
    });
}

#[test]
fn two_processes_taking_the_same_run_one_wins_the_other_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    store_with_run(&path);
    let long = Duration::from_secs(600);
    let mut a = Driver::start(&path, "process-a", long);
    let mut b = Driver::start(&path, "process-b", long);
    let mut verdicts = [a.verdict(), b.verdict()];
    verdicts.sort();
    assert_eq!(
        verdicts,
        ["ACQUIRED 1".to_owned(), "REFUSED store.locked".to_owned()]
    );
    // And this process is locked out too while the winner lives.
    block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        let e = store.acquire("r1", "process-c").await.unwrap_err();
        assert!(e.is(ErrorCode::StoreLocked), "{e}");
        assert!(e.details["owner"].as_str().unwrap().starts_with("process-"));
    });
    a.kill();
    b.kill();
}

#[test]
fn a_lease_of_a_process_killed_with_sigkill_is_taken_over_once_it_lapses() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    store_with_run(&path);
    let mut dead = Driver::start(&path, "doomed", Duration::from_millis(500));
    assert_eq!(dead.verdict(), "ACQUIRED 1");
    dead.kill();
    let lease = block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        let started = Instant::now();
        loop {
            match store.acquire("r1", "survivor").await {
                Ok(lease) => break lease,
                Err(e) => {
                    assert!(e.is(ErrorCode::StoreLocked), "{e}");
                    assert_eq!(e.details["owner"], "doomed");
                    assert!(started.elapsed() < HANG_GUARD, "the lease never lapsed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    });
    assert_eq!(lease.owner, "survivor");
    assert_eq!(lease.token, 2, "a takeover raises the fencing token");
}
