//! The two servers as child processes: started, read (resident memory, CPU time from `/proc`),
//! released (one stdin line per release of the held streams) and stopped.

use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

/// How long a server may take to start or to stop.
const START_STOP: Duration = Duration::from_secs(60);

/// A running server child.
pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    pid: u32,
    port: u16,
}

impl Server {
    /// Starts `command` and waits for its `ready PORT` line.
    pub async fn start(mut command: Command) -> Result<Server, String> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("spawn: {e}"))?;
        let pid = child.id().ok_or("the child has no pid")?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("the child has no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(START_STOP, lines.next_line())
            .await
            .map_err(|_| "the server did not start in time".to_owned())?
            .map_err(|e| format!("reading the server's stdout: {e}"))?
            .ok_or("the server ended before listening")?;
        let port = line
            .strip_prefix("ready ")
            .and_then(|p| p.trim().parse().ok())
            .ok_or_else(|| format!("unexpected first line from the server: {line:?}"))?;
        // The rest of its stdout is not read: neither server writes more.
        drop(lines);
        Ok(Server {
            child,
            stdin,
            pid,
            port,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Resident set size, KiB.
    pub fn rss_kib(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap_or_default();
        status_kib(&status, "VmRSS").unwrap_or(0)
    }

    /// User + system CPU time so far, in clock ticks.
    pub fn cpu_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap_or_default();
        stat_cpu_ticks(&stat).unwrap_or(0)
    }

    /// Releases every stream held with `hold K` where K is the number of releases so far.
    pub async fn release(&mut self) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin
            .write_all(b"release\n")
            .await
            .map_err(|e| format!("release: {e}"))?;
        stdin.flush().await.map_err(|e| format!("release: {e}"))
    }

    /// Closes stdin (the server's signal to stop) and waits; kills it if it does not end.
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

/// A `kB` field of `/proc/PID/status`.
fn status_kib(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

/// utime + stime of `/proc/PID/stat` (fields 14 and 15; the command name in parentheses may
/// hold spaces, so fields are counted after its closing parenthesis).
fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) is index 11 and stime (15) index 12.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Clock ticks per second (`getconf CLK_TCK`; 100 on Linux unless it says otherwise).
pub fn ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// The `/proc` parsers read the fields they should (run before the bench).
pub fn self_check() {
    assert_eq!(
        status_kib("Name:\tx\nVmRSS:\t  1234 kB\n", "VmRSS"),
        Some(1234)
    );
    assert_eq!(status_kib("VmHWM:\t1 kB\n", "VmRSS"), None);
    let stat = "42 (a b) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0";
    assert_eq!(stat_cpu_ticks(stat), Some(10));
}
