//! An event stream cut mid-way: the browser reaches the page through a relay the test controls;
//! the relay cuts every connection (the stream among them) and refuses new ones for a while, as
//! a stopped server or a dropped network would. The page says the stream was cut, keeps
//! working, and once the server can be reached again it resumes after the last event it had:
//! it shows what happened meanwhile, every event once.

use crate::cdp::{Browser, HANG};
use crate::support::{Fixture, http_request};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A TCP relay in front of the page's server that can cut its connections and refuse new ones.
struct Relay {
    addr: String,
    cut: Arc<watch::Sender<u64>>,
    down: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

impl Relay {
    async fn start(target: String) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let cut = Arc::new(watch::channel(0u64).0);
        let down = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn({
            let (cut, down) = (cut.clone(), down.clone());
            async move {
                loop {
                    let Ok((mut inbound, _)) = listener.accept().await else {
                        continue;
                    };
                    if down.load(Ordering::SeqCst) {
                        continue; // dropped: the connection closes at once
                    }
                    let mut cut = cut.subscribe();
                    let target = target.clone();
                    tokio::spawn(async move {
                        let Ok(mut outbound) = TcpStream::connect(&target).await else {
                            return;
                        };
                        tokio::select! {
                            _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                            _ = cut.changed() => {}
                        }
                    });
                }
            }
        });
        Relay {
            addr,
            cut,
            down,
            task,
        }
    }

    /// Cuts every open connection and refuses new ones until [`Relay::restore`].
    fn cut_and_refuse(&self) {
        self.down.store(true, Ordering::SeqCst);
        self.cut.send_modify(|generation| *generation += 1);
    }

    fn restore(&self) {
        self.down.store(false, Ordering::SeqCst);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
        self.cut.send_modify(|generation| *generation += 1);
    }
}

/// `hello` completes; `ask` parks at INPUT_REQUIRED until answered; `after` follows it.
const ASK_THEN: &str = r#"{"id": "cut", "name": "Cut stream", "steps": [
  {"name": "hello", "subtasks": [{"agent": "alpha", "description": "echo hello"}],
   "next": [{"step": "ask"}]},
  {"name": "ask", "subtasks": [{"agent": "alpha", "description": "input which city"}],
   "next": [{"step": "after"}]},
  {"name": "after", "subtasks": [{"agent": "alpha", "description": "echo done"}]}
]}"#;

fn state_is(step: &str, state: &str) -> String {
    format!("document.querySelector('.node[data-step=\"{step}\"]').dataset.state === '{state}'")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_mid_way_is_said_and_resumed_after_its_last_event() {
    let f = Fixture::start().await;
    let relay = Relay::start(f.addr()).await;
    let b = Browser::launch().await;
    b.goto(&f.ui.url().replace(&f.addr(), &relay.addr)).await;
    let run = f.start_run("cut-run", ASK_THEN);
    b.eval("location.hash = '#/run/cut-run'").await;
    b.wait_for(&state_is("ask", "parked")).await;
    b.wait_for("document.getElementById('stream-state').textContent.includes('following')")
        .await;
    // The first step's events are in the page before the cut.
    let before = b
        .wait_for("ui.events.some(e => e.kind === 'step_complete') && ui.events.length")
        .await
        .as_u64()
        .unwrap();

    // The server cannot be reached: the page says so and keeps trying.
    relay.cut_and_refuse();
    b.wait_for("document.getElementById('stream-state').textContent.includes('stream cut')")
        .await;
    let said = b
        .eval("document.getElementById('status').textContent")
        .await;
    assert!(
        said.as_str().unwrap().contains("The event stream was cut"),
        "{said}"
    );
    // Meanwhile the gate is answered elsewhere (straight to the server) and the run finishes.
    let auth = format!("Bearer {}", f.token());
    let (status, body) = http_request(
        &f.addr(),
        "POST",
        &format!(
            "/api/runs/cut-run/gates/{}/answer",
            f.live.board().open_gates("cut-run")[0].local_task_id
        ),
        &[("Authorization", auth.as_str())],
        r#"{"text": "Paris"}"#,
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let result = tokio::time::timeout(HANG, run).await.unwrap().unwrap();
    assert!(result.success, "{:#?}", result.failure);
    // The page still works while cut off: a node's panel opens from what it has.
    b.eval(
        "document.querySelector('.node[data-step=\"ask\"]').dispatchEvent(\
         new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}))",
    )
    .await;
    b.wait_for("document.getElementById('panel').innerText.includes('Step ask')")
        .await;
    assert_eq!(b.eval(&state_is("after", "pending")).await, true);
    assert!(
        b.eval("document.getElementById('stream-state').textContent")
            .await
            .as_str()
            .unwrap()
            .contains("reconnecting")
    );

    // Reachable again: the stream resumes after the last event the page had and the run's end
    // shows; the cut message goes.
    relay.restore();
    b.wait_for(&state_is("after", "succeeded")).await;
    b.wait_for(&state_is("ask", "succeeded")).await;
    b.wait_for("document.getElementById('stream-state').textContent.includes('finished')")
        .await;
    assert_eq!(
        b.eval("document.getElementById('status').textContent")
            .await,
        ""
    );
    // Every event once, in order, none lost: the stored ones.
    let seqs = b.eval("ui.events.map(e => e.seq)").await;
    let stored = f.stored_seqs("cut-run").await;
    assert!(stored.len() as u64 > before, "the run went on while cut");
    assert_eq!(seqs, serde_json::json!(stored));
    b.close().await;
}
