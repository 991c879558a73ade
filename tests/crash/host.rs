//! The host processes of the crash test: the real `a2aflow` binary, started with `run --store`
//! and killed, then `runs resume` until the run is finished.

use serde_json::Value;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A hang guard for one process, never a timing assertion.
const PROCESS_GUARD: Duration = Duration::from_secs(60);

/// The `a2aflow` binary: `A2AFLOW_BIN` when set, else built (if needed) into the target
/// directory this test binary lives in (`<target>/<profile>/deps/crash-…`), with the cargo that
/// runs the test. A test binary of another package has no `CARGO_BIN_EXE_a2aflow`.
pub fn cli_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("A2AFLOW_BIN") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("<target>/<profile>/deps/<test>");
    let target_dir = profile_dir.parent().expect("<target>/<profile>");
    let profile = profile_dir
        .file_name()
        .and_then(|p| p.to_str())
        .expect("a profile directory name");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .args(["build", "--quiet", "-p", "a2aflow-cli", "--bin", "a2aflow"])
        .arg("--target-dir")
        .arg(target_dir);
    if profile == "release" {
        build.arg("--release");
    } else if profile != "debug" {
        build.args(["--profile", profile]);
    }
    let status = build.status().expect("run cargo build");
    assert!(status.success(), "cargo build of the a2aflow binary failed");
    profile_dir.join(format!("a2aflow{}", std::env::consts::EXE_SUFFIX))
}

/// What every host process of one store is given.
pub struct Host {
    pub bin: PathBuf,
    pub workflow: PathBuf,
    pub store: PathBuf,
    pub config: PathBuf,
    /// The arguments naming the agents (`--agent NAME=URL`, `--agents-dir DIR`), and any other
    /// argument every `run` and `runs resume` of this host is given.
    pub args: Vec<String>,
}

/// Each agent as `--agent NAME=URL`.
pub fn agent_args<'a>(agents: impl IntoIterator<Item = (&'a str, String)>) -> Vec<String> {
    agents
        .into_iter()
        .flat_map(|(name, url)| ["--agent".to_owned(), format!("{name}={url}")])
        .collect()
}

/// A `run` process that printed its execution id and has not been reaped.
pub struct Running {
    child: Child,
    stdout: BufReader<std::process::ChildStdout>,
    /// The id it printed first, if it got that far.
    pub execution_id: Option<String>,
}

impl Running {
    /// Whether the process has not ended on its own.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGKILL, then drain what is left of its stdout.
    pub fn kill(mut self) {
        kill(&mut self.child);
        let _ = self.stdout.read_to_string(&mut String::new());
    }
}

/// How a killed run's host process ended.
pub struct Killed {
    /// The id it printed first, if it got that far.
    pub execution_id: Option<String>,
    /// It was still running when killed (else it had finished on its own).
    pub was_running: bool,
}

impl Host {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args)
            .arg("--store")
            .arg(&self.store)
            .arg("--config")
            .arg(&self.config)
            .args(["--format", "json"])
            .args(&self.args);
        cmd
    }

    /// `runs ARGS ID --store PATH`, the commands that take no agents and no config.
    fn runs_command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("runs").args(args).arg("--store").arg(&self.store);
        cmd
    }

    /// `runs show ID --format json`: the run's `ExecutionView`.
    pub fn show(&self, execution_id: &str) -> Value {
        self.try_show(execution_id)
            .unwrap_or_else(|| panic!("runs show: no run {execution_id} in the store"))
    }

    /// [`Host::show`] of a run that may not be journaled yet (its id is printed before its
    /// first record): `None` for `store.unknown_execution`.
    pub fn try_show(&self, execution_id: &str) -> Option<Value> {
        let out = wait(self.runs_command(&["show", execution_id, "--format", "json"]));
        if out.code == Some(2) && out.stderr.contains("store.unknown_execution") {
            return None;
        }
        assert_eq!(out.code, Some(0), "runs show: {}", out.stderr);
        Some(serde_json::from_str(&out.stdout).expect("the ExecutionView"))
    }

    /// `runs cancel ID`.
    pub fn cancel(&self, execution_id: &str) {
        let out = wait(self.runs_command(&["cancel", execution_id]));
        assert_eq!(out.code, Some(0), "runs cancel: {}", out.stderr);
    }

    /// Starts the workflow and reads the execution id it prints first (stderr discarded).
    pub fn start(&self) -> Running {
        let workflow = self.workflow.display().to_string();
        let mut child = self
            .command(&["run", &workflow])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start a2aflow run");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut first = String::new();
        let execution_id = match stdout.read_line(&mut first) {
            Ok(n) if n > 0 => serde_json::from_str::<Value>(&first)
                .ok()
                .and_then(|v| v["executionId"].as_str().map(str::to_owned)),
            _ => None,
        };
        Running {
            child,
            stdout,
            execution_id,
        }
    }

    /// Runs the workflow to its end: its execution id and result.
    pub fn run_uninterrupted(&self) -> (String, Value) {
        let workflow = self.workflow.display().to_string();
        let out = wait(self.command(&["run", &workflow]));
        assert_eq!(out.code, Some(0), "uninterrupted run: {}", out.stderr);
        let (first, rest) = out
            .stdout
            .split_once('\n')
            .expect("the id line, then the result");
        let id = serde_json::from_str::<Value>(first).expect("the id line")["executionId"]
            .as_str()
            .expect("executionId")
            .to_owned();
        (id, serde_json::from_str(rest).expect("the result document"))
    }

    /// Starts the workflow and kills the process (SIGKILL) `delay` after it printed its
    /// execution id (or after its start, if it never prints one within the guard).
    pub fn run_and_kill(&self, delay: Duration) -> Killed {
        let mut running = self.start();
        std::thread::sleep(delay);
        let was_running = running.is_running();
        let execution_id = running.execution_id.take();
        running.kill();
        Killed {
            execution_id,
            was_running,
        }
    }

    fn resume_args(execution_id: &str, resend: bool) -> Vec<&str> {
        let mut args = vec!["runs", "resume", execution_id];
        if resend {
            args.push("--resend");
        }
        args
    }

    /// One `runs resume ID`, refused or not.
    pub fn resume_once(&self, execution_id: &str, resend: bool) -> Resumed {
        let out = wait(self.command(&Self::resume_args(execution_id, resend)));
        Resumed {
            code: out.code,
            result: serde_json::from_str(&out.stdout).ok(),
            stderr: out.stderr,
        }
    }

    /// `runs resume ID` until it is not refused for the lease a killed driver still holds.
    pub fn resume(&self, execution_id: &str, resend: bool) -> Resumed {
        let guard = Instant::now() + PROCESS_GUARD;
        loop {
            let resumed = self.resume_once(execution_id, resend);
            if !resumed.stderr.contains("store.locked") {
                return resumed;
            }
            assert!(
                Instant::now() < guard,
                "the killed driver's lease never lapsed"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Two `runs resume ID` started at once, both to their end.
    pub fn resume_twice_at_once(&self, execution_id: &str) -> [Resumed; 2] {
        std::thread::scope(|scope| {
            let first = scope.spawn(|| self.resume_once(execution_id, false));
            let second = scope.spawn(|| self.resume_once(execution_id, false));
            [
                first.join().expect("the first resume"),
                second.join().expect("the second resume"),
            ]
        })
    }

    /// Starts `runs resume ID` and kills it (SIGKILL) `delay` later. True when it was still
    /// running then and had not been refused (it was driving the run when killed).
    pub fn resume_and_kill(&self, execution_id: &str, resend: bool, delay: Duration) -> bool {
        let mut child = self
            .command(&Self::resume_args(execution_id, resend))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start a2aflow runs resume");
        let mut err = child.stderr.take().expect("piped stderr");
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text);
            text
        });
        std::thread::sleep(delay);
        let was_running = matches!(child.try_wait(), Ok(None));
        kill(&mut child);
        let stderr = reader.join().unwrap_or_default();
        was_running && !stderr.contains("store.locked")
    }
}

/// One `runs resume`.
pub struct Resumed {
    pub code: Option<i32>,
    pub result: Option<Value>,
    pub stderr: String,
}

struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` to its end under the hang guard.
fn wait(mut cmd: Command) -> Finished {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a2aflow");
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = err.read_to_string(&mut text);
        text
    });
    let mut stdout = String::new();
    let _ = out.read_to_string(&mut stdout);
    let guard = Instant::now() + PROCESS_GUARD;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for a2aflow") {
            break status;
        }
        if Instant::now() > guard {
            kill(&mut child);
            panic!("a2aflow hung");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Finished {
        code: status.code(),
        stdout,
        stderr: reader.join().unwrap_or_default(),
    }
}

/// SIGKILL (what `Child::kill` sends on unix), then reap.
fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}
