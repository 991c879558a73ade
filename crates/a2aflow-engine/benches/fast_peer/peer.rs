//! Where the fast peer runs: in a process of its own pinned to one CPU (the default), the bench's
//! client side — the engine, the bare loops and wrk — pinned to the other CPUs; or, with
//! `A2AFLOW_BENCH_PEER=in-process`, on the bench's own runtime (the arrangement of the figures
//! before 2026-12-06).
//!
//! The child is this bench binary re-run with [`CHILD_ENV`] under `taskset -c <peer CPU>`: it
//! serves a [`FastPeer`] on a current-thread runtime, prints its URLs as one JSON line, answers
//! each `connections` or `sends` line on its standard input with that counter, and stops at the
//! end of its input (the parent exiting or dropping the pipe). The parent pins itself (every
//! thread it has and will start, so tokio's workers and wrk too) with `taskset -a -p`. Without
//! `taskset`, or on one CPU, nothing is pinned and the bench says so.

use a2aflow_testkit::FastPeer;
use serde_json::json;
use std::io::{BufRead, Write};
use std::process::{Command, Stdio};

/// Set in the child process that serves the peer.
pub const CHILD_ENV: &str = "A2AFLOW_BENCH_PEER_CHILD";

/// The CPU the peer runs on in the pinned arrangement; the client side gets every other one.
const PEER_CPU: usize = 0;

/// The child side: serves the peer until its standard input ends.
pub fn serve_child() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let peer = rt.block_on(FastPeer::spawn()).unwrap();
    let urls = json!({"card": peer.card_url(), "jsonrpc": peer.jsonrpc_url(),
        "rest": peer.rest_url(), "grpc": peer.grpc_url()});
    println!("{urls}");
    std::io::stdout().flush().unwrap();
    // Standard input is read on a thread of its own: the runtime's one thread serves the peer.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rt.block_on(async {
        while let Some(line) = rx.recv().await {
            let answer = match line.trim() {
                "connections" => peer.total_connections(),
                "sends" => peer.sends(),
                _ => continue,
            };
            let mut out = std::io::stdout().lock();
            writeln!(out, "{answer}").unwrap();
            out.flush().unwrap();
        }
        peer.shutdown().await.unwrap();
    });
}

/// The peer in a child process, and the pipes to ask it for its counters.
pub struct ChildPeer(crate::support::ChildProcess);

impl ChildPeer {
    fn url(&self, kind: &str) -> String {
        self.0.urls[kind].as_str().unwrap().to_owned()
    }

    fn ask(&self, what: &str) -> usize {
        self.0.ask(what)
    }
}

/// The fast peer the bench measures against.
pub enum Peer {
    InProcess(FastPeer),
    Child(ChildPeer),
}

/// `taskset` with these arguments succeeded.
fn taskset(args: &[&str]) -> bool {
    Command::new("taskset")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Peer {
    /// The peer in a child process, unless `A2AFLOW_BENCH_PEER` is `in-process` (`None`: the
    /// caller spawns a [`FastPeer`] on its runtime). Call before building the client side's
    /// runtime: pinning this process then also pins every worker thread the runtime starts, and
    /// sizes the runtime to the CPUs left.
    pub fn child() -> Option<Peer> {
        match std::env::var("A2AFLOW_BENCH_PEER").as_deref() {
            Ok("in-process") => return None,
            Ok("process") | Err(_) => {}
            Ok(other) => panic!("A2AFLOW_BENCH_PEER={other}: expected process or in-process"),
        }
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        let exe = std::env::current_exe().unwrap();
        let pinned = cpus > 1
            && taskset(&[
                "-a",
                "-p",
                "-c",
                &format!("{}-{}", PEER_CPU + 1, cpus - 1),
                &std::process::id().to_string(),
            ]);
        let command = if pinned {
            let mut c = Command::new("taskset");
            c.args(["-c", &PEER_CPU.to_string()]).arg(exe);
            c
        } else {
            Command::new(exe)
        };
        let child = crate::support::ChildProcess::spawn(command, CHILD_ENV);
        if pinned {
            eprintln!(
                "fast peer: in a child process (pid {}) on CPU {PEER_CPU}; the client side on \
                 CPUs {}-{}",
                child.id(),
                PEER_CPU + 1,
                cpus - 1
            );
        } else {
            eprintln!(
                "fast peer: in a child process (pid {}), not pinned ({cpus} CPU(s) or no taskset)",
                child.id()
            );
        }
        Some(Peer::Child(ChildPeer(child)))
    }

    /// Where the peer runs, as the figures' lines say it.
    pub fn arrangement(&self) -> &'static str {
        match self {
            Peer::InProcess(_) => "peer in process",
            Peer::Child(_) => "peer in its own process",
        }
    }

    pub fn card_url(&self) -> String {
        match self {
            Peer::InProcess(p) => p.card_url(),
            Peer::Child(c) => c.url("card"),
        }
    }

    pub fn jsonrpc_url(&self) -> String {
        match self {
            Peer::InProcess(p) => p.jsonrpc_url(),
            Peer::Child(c) => c.url("jsonrpc"),
        }
    }

    pub fn rest_url(&self) -> String {
        match self {
            Peer::InProcess(p) => p.rest_url(),
            Peer::Child(c) => c.url("rest"),
        }
    }

    pub fn grpc_url(&self) -> String {
        match self {
            Peer::InProcess(p) => p.grpc_url(),
            Peer::Child(c) => c.url("grpc"),
        }
    }

    /// Connections the peer accepted so far (every door).
    pub fn total_connections(&self) -> usize {
        match self {
            Peer::InProcess(p) => p.total_connections(),
            Peer::Child(c) => c.ask("connections"),
        }
    }

    /// The peer process's id (`None` in process).
    pub fn pid(&self) -> Option<u32> {
        match self {
            Peer::InProcess(_) => None,
            Peer::Child(c) => Some(c.0.id()),
        }
    }

    /// The peer's CPU time so far, in clock ticks (in process: this whole process's).
    pub fn cpu_ticks(&self) -> Option<u64> {
        match self {
            Peer::InProcess(_) => cpu_ticks("self"),
            Peer::Child(c) => cpu_ticks(&c.0.id().to_string()),
        }
    }

    /// SendMessage requests the peer answered so far.
    pub fn sends(&self) -> usize {
        match self {
            Peer::InProcess(p) => p.sends(),
            Peer::Child(c) => c.ask("sends"),
        }
    }

    pub fn shutdown(self, rt: &tokio::runtime::Runtime) {
        match self {
            Peer::InProcess(p) => rt.block_on(async { p.shutdown().await.unwrap() }),
            Peer::Child(c) => drop(c),
        }
    }
}

/// User + system CPU time of process `pid` (`self` for this one) so far, in clock ticks
/// (`/proc/<pid>/stat`; `None` where it cannot be read).
pub fn cpu_ticks(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which may hold spaces), from field 3 (`state`) on:
    // `utime` and `stime` are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}
