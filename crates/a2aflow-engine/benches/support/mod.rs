//! What the engine's benches share: one case run a fixed number of times, for instruction
//! counts under callgrind.

/// `A2AFLOW_BENCH_REPEAT=<case>:<n>` (`<case>` one of `cases`' names): runs that case once
/// unmeasured (pools and allocator warm), then `n` more times, and returns `true` (the caller
/// then skips criterion and the pairs). Under callgrind, the instructions of `n = 3` minus those
/// of `n = 1`, ÷ 2 runs ÷ the calls per run, are one call's, setup and warm-up cancelled out:
///
/// ```text
/// A2AFLOW_BENCH_REPEAT=send_64/grpc:3 valgrind --tool=callgrind <bench binary>
/// ```
///
/// Unset: returns `false`. A case name not among `cases`, or a count that is not a number,
/// panics with the names it knows (a bench's usage error).
pub fn repeat_from_env(cases: &[(&str, &dyn Fn())]) -> bool {
    let Ok(spec) = std::env::var("A2AFLOW_BENCH_REPEAT") else {
        return false;
    };
    let known: Vec<&str> = cases.iter().map(|(name, _)| *name).collect();
    let (name, runs) = spec
        .rsplit_once(':')
        .and_then(|(name, n)| Some((name, n.parse::<usize>().ok()?)))
        .unwrap_or_else(|| panic!("A2AFLOW_BENCH_REPEAT={spec}: expected <case>:<runs>"));
    let Some((_, run)) = cases.iter().find(|(n, _)| *n == name) else {
        panic!("A2AFLOW_BENCH_REPEAT: no case {name}; the cases are {known:?}");
    };
    run();
    for _ in 0..runs {
        run();
    }
    eprintln!("repeat: {name} run 1 + {runs} times");
    true
}

/// A bench's peer in a child process: the bench binary re-run with an environment variable set,
/// which prints its URLs as one JSON line on stdout, then answers one number per line asked on
/// its stdin (`connections`, `sends`, …). Killed when dropped.
pub struct ChildProcess {
    child: std::process::Child,
    io: std::sync::Mutex<(
        std::process::ChildStdin,
        std::io::BufReader<std::process::ChildStdout>,
    )>,
    /// What the child printed first.
    pub urls: serde_json::Value,
}

impl ChildProcess {
    /// Starts `command` with `env=1` and reads the URLs it prints.
    pub fn spawn(mut command: std::process::Command, env: &str) -> ChildProcess {
        use std::io::BufRead;
        use std::process::Stdio;
        let mut child = command
            .env(env, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let urls = serde_json::from_str(&line).unwrap();
        ChildProcess {
            child,
            io: std::sync::Mutex::new((stdin, stdout)),
            urls,
        }
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The number the child answers to `what`.
    pub fn ask(&self, what: &str) -> usize {
        use std::io::{BufRead, Write};
        let mut io = self.io.lock().unwrap();
        let (stdin, stdout) = &mut *io;
        writeln!(stdin, "{what}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        line.trim().parse().unwrap()
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
