//! Set-up shared by the CLI integration tests: the binary, its output, testkit agents, and the
//! request reading and replying of the fake HTTP services.

use a2aflow_testkit::{TestServer, TestServerBuilder};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs the `a2aflow` binary with `args` and collects its output.
pub fn a2aflow(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args(args)
        .output()
        .expect("run a2aflow")
}

/// Runs the `a2aflow` binary with `args` under [`wait_guarded`]'s hang guard.
pub fn a2aflow_guarded(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run a2aflow");
    wait_guarded(child)
}

/// Waits for `child`, killing it past a generous hang guard (a hang is a failure, not a wait).
pub fn wait_guarded(mut child: Child) -> Output {
    let guard = Instant::now() + Duration::from_secs(45);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > guard {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "a2aflow hung; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Writes `contents` to a file `name` in a fresh temporary directory; returns the directory
/// (the file lives as long as it) and the file's path.
pub fn temp_file(name: &str, contents: impl AsRef<[u8]>) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    std::fs::write(&path, contents).expect("write");
    (dir, path.display().to_string())
}

/// The process's standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The process's standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts the process exited with `exit`, showing its standard error if not.
pub fn assert_exit(o: &Output, exit: i32) {
    assert_eq!(o.status.code(), Some(exit), "{}", stderr(o));
}

/// Asserts the process exited with `exit` and named `code` on standard error.
pub fn assert_fails_with(o: &Output, exit: i32, code: &str) {
    assert_exit(o, exit);
    assert!(stderr(o).contains(code), "{}", stderr(o));
}

/// The process's standard output parsed as JSON.
pub fn stdout_json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", stdout(o)))
}

/// Spawns `builder`'s server on a one-worker background runtime, returned with it (the server
/// lives as long as the runtime).
pub fn serve(builder: TestServerBuilder) -> (TestServer, tokio::runtime::Runtime) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(builder.spawn()).unwrap();
    (server, rt)
}

/// Testkit agents on loopback, served by a runtime of their own while the test drives the binary.
pub struct Agents {
    /// The server: `alpha` (blocking) and `beta` (streaming).
    pub server: TestServer,
    _rt: tokio::runtime::Runtime,
}

/// Starts `alpha` (blocking) and `beta` (streaming) on a one-worker background runtime.
pub fn agents() -> Agents {
    let (server, rt) = serve(
        TestServer::builder()
            .agent(a2aflow_testkit::AgentSpec::new("alpha"))
            .agent(a2aflow_testkit::AgentSpec::new("beta").streaming(true)),
    );
    Agents { server, _rt: rt }
}

/// One request a fake HTTP service saw: its request line, Authorization header and JSON body
/// (`null` when there is none).
#[derive(Debug, Clone)]
pub struct Seen {
    pub line: String,
    pub authorization: Option<String>,
    pub body: serde_json::Value,
}

impl Seen {
    /// The request target of the request line.
    pub fn path(&self) -> &str {
        self.line.split_whitespace().nth(1).unwrap_or_default()
    }
}

/// Reads one HTTP/1.1 request from `s`: the head, then a body of its content-length. `None` when
/// the peer closes first.
pub async fn read_request(s: &mut tokio::net::TcpStream) -> Option<Seen> {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    };
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    Some(Seen {
        line: head.lines().next().unwrap_or_default().to_owned(),
        authorization: header("authorization"),
        body: serde_json::from_slice(&buf[head_end..head_end + length])
            .unwrap_or(serde_json::Value::Null),
    })
}

/// Writes a `status` reply with the JSON text `body` and `connection: close`.
pub async fn reply_json(s: &mut tokio::net::TcpStream, status: &str, body: &str) {
    use tokio::io::AsyncWriteExt;
    let reply = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = s.write_all(reply.as_bytes()).await;
}
