//! Headless chromium driven over the DevTools protocol: the browser named by
//! `A2AFLOW_CHROMIUM` (CI installs Debian's `chromium` and exports it; without it the browser
//! tests fail and say how to get it), one page, `Runtime.evaluate` to read and act on the DOM,
//! `Page.captureScreenshot` to save what it shows.

use base64::Engine as _;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

/// Every DevTools call and wait is bounded by this (a hang guard, never a timing assertion).
pub const HANG: Duration = Duration::from_secs(60);

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// A running headless chromium with one page attached.
pub struct Browser {
    child: Child,
    _profile: tempfile::TempDir,
    tx: mpsc::UnboundedSender<Message>,
    pending: Pending,
    next: AtomicU64,
}

/// The chromium binary the tests use.
pub fn chromium() -> PathBuf {
    match std::env::var_os("A2AFLOW_CHROMIUM") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "A2AFLOW_CHROMIUM is not set: the run page's browser tests need Debian's chromium. \
             Install it (`apt-get install -y chromium`) and export \
             A2AFLOW_CHROMIUM=$(command -v chromium), or run `cargo xtask ci`, which does both"
        ),
    }
}

impl Browser {
    /// Starts chromium headless on a fresh profile and attaches to a blank page.
    pub async fn launch() -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(chromium())
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "--window-size=1280,900",
                "about:blank",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromium().display()));
        let stderr = child.stderr.take().unwrap();
        let browser_ws = tokio::time::timeout(HANG, devtools_url(stderr))
            .await
            .expect("chromium prints its DevTools URL");
        let http = browser_ws
            .trim_start_matches("ws://")
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        let page_ws = page_target(&http).await;
        let (ws, _) = tokio_tungstenite::connect_async(page_ws.as_str())
            .await
            .expect("the page's DevTools websocket opens");
        let (mut write, mut read) = ws.split();
        let (tx, mut rx) = mpsc::unbounded_channel::<Message>();
        tokio::spawn(async move {
            while let Some(m) = rx.recv().await {
                if write.send(m).await.is_err() {
                    return;
                }
            }
        });
        let pending: Pending = Arc::default();
        let answers = pending.clone();
        tokio::spawn(async move {
            while let Some(Ok(m)) = read.next().await {
                let Message::Text(text) = m else { continue };
                let Ok(v) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                if let Some(id) = v.get("id").and_then(Value::as_u64)
                    && let Some(done) = answers.lock().await.remove(&id)
                {
                    let _ = done.send(v);
                }
            }
        });
        let b = Browser {
            child,
            _profile: profile,
            tx,
            pending,
            next: AtomicU64::new(1),
        };
        b.call("Page.enable", json!({})).await;
        b.call("Runtime.enable", json!({})).await;
        b
    }

    /// One DevTools command; panics on a protocol error.
    pub async fn call(&self, method: &str, params: Value) -> Value {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (done, answer) = oneshot::channel();
        self.pending.lock().await.insert(id, done);
        let msg = json!({"id": id, "method": method, "params": params}).to_string();
        self.tx.send(Message::text(msg)).unwrap();
        let v = tokio::time::timeout(HANG, answer)
            .await
            .unwrap_or_else(|_| panic!("{method} answers"))
            .unwrap();
        if let Some(e) = v.get("error") {
            panic!("{method} failed: {e}");
        }
        v["result"].clone()
    }

    /// Loads `url` and waits until its document finished loading.
    pub async fn goto(&self, url: &str) {
        self.call("Page.navigate", json!({"url": url})).await;
        self.wait_for("document.readyState === 'complete' && location.href !== 'about:blank'")
            .await;
    }

    /// Evaluates `expr` in the page (promises awaited) and returns its value.
    pub async fn eval(&self, expr: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        if let Some(e) = r.get("exceptionDetails") {
            panic!("`{expr}` threw: {e}");
        }
        r["result"]["value"].clone()
    }

    /// Waits until `expr` is truthy in the page.
    pub async fn wait_for(&self, expr: &str) -> Value {
        let wait = async {
            loop {
                let v = self
                    .eval(&format!(
                        "(() => {{ try {{ return {expr}; }} catch (e) {{ return null; }} }})()"
                    ))
                    .await;
                if !(v.is_null() || v == json!(false) || v == json!("") || v == json!(0)) {
                    return v;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        };
        match tokio::time::timeout(HANG, wait).await {
            Ok(v) => v,
            Err(_) => {
                let body = self
                    .eval("document.body ? document.body.innerText.slice(0, 3000) : ''")
                    .await;
                panic!(
                    "`{expr}` never held; the page said:\n{}",
                    body.as_str().unwrap_or("")
                );
            }
        }
    }

    /// Saves a PNG of the page to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let r = self
            .call(
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": false}),
            )
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().unwrap())
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }

    /// Ends chromium.
    pub async fn close(mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(HANG, self.child.wait()).await;
    }
}

/// Reads chromium's stderr up to its `DevTools listening on ws://…` line, then drains the rest.
async fn devtools_url(stderr: tokio::process::ChildStderr) -> String {
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = String::new();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(url) = line.split("DevTools listening on ").nth(1) {
            let url = url.trim().to_owned();
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            return url;
        }
        seen.push_str(&line);
        seen.push('\n');
    }
    panic!("chromium exited without a DevTools URL:\n{seen}");
}

/// The websocket URL of the first page target of the browser at `host:port`.
async fn page_target(http: &str) -> String {
    for _ in 0..200 {
        let body = crate::support::http_get(http, "/json/list", &[]).await.1;
        if let Ok(Value::Array(targets)) = serde_json::from_str::<Value>(&body) {
            let page = targets.iter().find(|t| t["type"] == "page");
            if let Some(url) = page.and_then(|t| t["webSocketDebuggerUrl"].as_str()) {
                return url.to_owned();
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("chromium shows no page target");
}
