//! `cargo xtask bench`: every criterion benchmark (the fleet bench against a Postgres server of
//! its own, `target/postgres-bench`, stopped at the end; the served-workflow load bench at 1,000
//! clients beside the Python SDK's server on the interop venv), the extensions load test, the soak,
//! load and cancellation test at full size, the crash test at 2,000 kills and the chaos test at
//! 3,000 runs (same server); then one consolidated
//! table written into `docs/benchmarks.md` between [`START`] and [`END`].
//!
//! Figures are read from the commands' output: criterion's `time:` / `thrpt:` lines, the
//! `BENCH name=value unit` lines the soak test and some benches print (the client throughput
//! bench's and the durable-run bench's medians of alternating pairs), and the crash test's
//! counts line. Each row carries the machine's cores, the date and the command that produced
//! it; where two criterion figures are compared the table gives their ratio.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Start marker of the generated section in `docs/benchmarks.md`.
pub const START: &str = "<!-- bench-report:start -->";
/// End marker of the generated section.
pub const END: &str = "<!-- bench-report:end -->";

/// The soak command at full size (also the one printed in the table).
const SOAK_ENV: [(&str, &str); 3] = [
    ("A2AFLOW_SOAK_RUNS", "10000"),
    ("A2AFLOW_LOAD_TASKS", "10000"),
    ("A2AFLOW_CANCEL_RUNS", "1000"),
];

/// The served-workflow load bench (`a2aflow-server`'s `serve_load`) at the recorded size: 1,000
/// concurrent streaming clients, two rounds of 10 s per server.
const SLOAD_ENV: [(&str, &str); 3] = [
    ("A2AFLOW_SLOAD_CLIENTS", "1000"),
    ("A2AFLOW_SLOAD_SECS", "10"),
    ("A2AFLOW_SLOAD_ROUNDS", "2"),
];

/// A `serve_load.*` row names the bench and the size that produced it (the workspace run sets
/// [`SLOAD_ENV`]); other rows are returned unchanged.
fn label_sload(row: Row) -> Row {
    if !row.name.starts_with("serve_load.") {
        return row;
    }
    let env: Vec<String> = SLOAD_ENV.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Row {
        command: format!(
            "{} cargo bench -p a2aflow-server --bench serve_load",
            env.join(" ")
        ),
        ..row
    }
}

/// The crash test's kill count at bench size, unless `A2AFLOW_CRASH_KILLS` is set (the table's
/// command then says the count that ran).
const CRASH_KILLS: &str = "2000";

/// The crash test as a release test binary.
const CRASH: [&str; 6] = [
    "test",
    "--release",
    "-p",
    "a2aflow-tests",
    "--test",
    "crash",
];

/// The counts of the crash test's summary line, in its order.
const CRASH_COUNTS: [&str; 5] = ["kills", "resumes", "duplicates", "lost", "outcome_unknown"];

/// Pairs compared as a ratio: (label, numerator row, denominator row, what the ratio means).
/// Both rows are criterion times, so `denominator / numerator` is the throughput ratio. The
/// client rows compare two criterion cases measured about a minute apart, which the machine's
/// drift moves by up to ±20 %; the bench's `paired_*` rows (alternating runs) are the ones the
/// target is read against.
const RATIOS: [(&str, &str, &str); 6] = [
    (
        "end-to-end tasks/s ÷ bare hyper, blocking (criterion cases, a minute apart)",
        "client_1000_tasks/engine_jsonrpc_blocking",
        "client_1000_tasks/bare_hyper_jsonrpc_blocking",
    ),
    (
        "end-to-end tasks/s ÷ bare hyper, streaming (criterion cases, a minute apart)",
        "client_1000_tasks/engine_jsonrpc_streaming",
        "client_1000_tasks/bare_hyper_jsonrpc_streaming",
    ),
    (
        "fast peer, JSON-RPC transport ÷ bare hyper, 64 in flight (criterion cases)",
        "send_64/jsonrpc",
        "send_64/bare_jsonrpc",
    ),
    (
        "fast peer, HTTP+JSON transport ÷ bare hyper, 64 in flight (criterion cases)",
        "send_64/http_json",
        "send_64/bare_http_json",
    ),
    (
        "fast peer, gRPC transport ÷ bare tonic, 64 in flight (criterion cases)",
        "send_64/grpc",
        "send_64/bare_tonic",
    ),
    (
        "SSE parse throughput ÷ serde_json on the same payloads",
        "sse/parse_events_16k_chunks",
        "sse/serde_json_value_same_payloads",
    ),
];

/// One figure of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// What was measured.
    pub name: String,
    /// The figure as printed (value and unit).
    pub figure: String,
    /// The command that produced it.
    pub command: String,
    /// The figure in seconds, for criterion times (to form ratios).
    pub seconds: Option<f64>,
}

/// Reads criterion's report lines: `name  time: [lo mid hi]` (the name may be on the line
/// before) and `thrpt: [lo mid hi]`; the middle estimate is kept.
pub fn parse_criterion(output: &str, command: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut name = String::new();
    for line in output.lines() {
        let (before, kind, after) = if let Some((b, a)) = line.split_once("time:") {
            (b, "time", a)
        } else if let Some((b, a)) = line.split_once("thrpt:") {
            (b, "thrpt", a)
        } else {
            let t = line.trim();
            if !t.is_empty() && !line.starts_with(char::is_whitespace) && !t.contains(':') {
                name = t.to_owned();
            }
            continue;
        };
        if !before.trim().is_empty() {
            name = before.trim().to_owned();
        }
        let Some(mid) = middle_estimate(after) else {
            continue;
        };
        rows.push(Row {
            name: if kind == "time" {
                name.clone()
            } else {
                format!("{name} (throughput)")
            },
            seconds: (kind == "time").then(|| seconds(&mid)).flatten(),
            figure: mid,
            command: command.to_owned(),
        });
    }
    rows
}

/// `[1.0 ms 1.2 ms 1.4 ms]` → `1.2 ms`.
fn middle_estimate(bracket: &str) -> Option<String> {
    let inner = bracket.trim().strip_prefix('[')?.split(']').next()?;
    let words: Vec<&str> = inner.split_whitespace().collect();
    (words.len() == 6).then(|| format!("{} {}", words[2], words[3]))
}

/// `1.2 ms` → 0.0012.
fn seconds(figure: &str) -> Option<f64> {
    let (value, unit) = figure.split_once(' ')?;
    let value: f64 = value.parse().ok()?;
    let scale = match unit {
        "ps" => 1e-12,
        "ns" => 1e-9,
        "µs" | "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        _ => return None,
    };
    Some(value * scale)
}

/// Reads `BENCH name=value unit` lines.
pub fn parse_bench_lines(output: &str, command: &str) -> Vec<Row> {
    output
        .lines()
        .filter_map(|line| {
            let rest = line.trim().strip_prefix("BENCH ")?;
            let (name, figure) = rest.split_once('=')?;
            Some(Row {
                name: name.trim().to_owned(),
                figure: figure.trim().to_owned(),
                command: command.to_owned(),
                seconds: None,
            })
        })
        .collect()
}

/// Reads the crash test's summary line, `crash: kills N resumes N duplicates N lost N
/// outcome_unknown N`, as one row per count (`crash.kills`, …); `None` when no line has every
/// count.
pub fn parse_crash_counts(output: &str, command: &str) -> Option<Vec<Row>> {
    parse_counts(output, "crash", &CRASH_COUNTS, command)
}

/// The counts of the first line that starts with `prefix` (then `:` or a space) and names every
/// one of `names` followed by a number, as rows `prefix.name`; `None` when no line has them all.
fn parse_counts(output: &str, prefix: &str, names: &[&str], command: &str) -> Option<Vec<Row>> {
    output.lines().find_map(|line| {
        let rest = line.trim().strip_prefix(prefix)?;
        let rest = rest.strip_prefix(':').unwrap_or(rest);
        if !rest.starts_with(char::is_whitespace) {
            return None;
        }
        let words: Vec<&str> = rest.split_whitespace().collect();
        names
            .iter()
            .map(|name| {
                let at = words.iter().position(|w| w == name)?;
                let count: u64 = words.get(at + 1)?.parse().ok()?;
                Some(Row {
                    name: format!("{prefix}.{name}"),
                    figure: count.to_string(),
                    command: command.to_owned(),
                    seconds: None,
                })
            })
            .collect()
    })
}

/// Builds the `a2aflow` binary and the crash test, then runs the test with `kills` kills on that
/// binary (`A2AFLOW_BIN`, so the timed run builds nothing: the test's own build of the binary
/// resolves other features than the test's, and would redo the crates they share): its counts
/// and its wall time as rows, and why it failed.
fn crash_step(root: &Path, kills: &str) -> (Vec<Row>, Vec<String>) {
    let cli = [
        "build",
        "--release",
        "-p",
        "a2aflow-cli",
        "--bin",
        "a2aflow",
    ];
    let build: Vec<&str> = CRASH.iter().copied().chain(["--no-run"]).collect();
    let mut failures = Vec::new();
    failures.extend(capture(root, "cargo", &cli, &[]).1);
    failures.extend(capture(root, "cargo", &build, &[]).1);
    if !failures.is_empty() {
        return (Vec::new(), failures);
    }
    let bin = root.join("target").join("release").join("a2aflow");
    let bin = bin.to_string_lossy();
    let command = format!("A2AFLOW_CRASH_KILLS={kills} cargo {}", CRASH.join(" "));
    let started = Instant::now();
    let envs = [
        ("A2AFLOW_CRASH_KILLS", kills),
        ("A2AFLOW_BIN", bin.as_ref()),
    ];
    let (out, failed) = capture(root, "cargo", &CRASH, &envs);
    let seconds = started.elapsed().as_secs_f64();
    failures.extend(failed);
    let mut rows = match parse_crash_counts(&out, &command) {
        Some(rows) => rows,
        None => {
            failures.push("the crash test printed no `crash: kills …` line".to_owned());
            Vec::new()
        }
    };
    rows.push(Row {
        name: "crash.wall_time".to_owned(),
        figure: format!("{seconds:.0} s"),
        command,
        seconds: None,
    });
    (rows, failures)
}

/// The crash test's kill count: `A2AFLOW_CRASH_KILLS` when set, else [`CRASH_KILLS`].
/// The chaos test's run count at bench size.
const CHAOS_RUNS: &str = "3000";

/// The chaos test as a release test binary (its workers the release CLI).
const CHAOS: [&str; 6] = [
    "test",
    "--release",
    "-p",
    "a2aflow-tests",
    "--test",
    "chaos",
];

/// The counts of the chaos test's summary line, in its order.
const CHAOS_COUNTS: [&str; 8] = [
    "runs",
    "kills",
    "stops",
    "resumes",
    "duplicates",
    "lost",
    "fenced",
    "resent",
];

/// Reads the chaos test's line `chaos runs N kills K … resent X (T s)`: one row per count.
pub fn parse_chaos_counts(output: &str, command: &str) -> Option<Vec<Row>> {
    parse_counts(output, "chaos", &CHAOS_COUNTS, command)
}

/// The chaos test at 3,000 runs against the bench's Postgres (`pg_env`).
fn chaos_step(root: &Path, pg_env: &[(&str, &str)]) -> (Vec<Row>, Vec<String>) {
    let cli = [
        "build",
        "--release",
        "-p",
        "a2aflow-cli",
        "--bin",
        "a2aflow",
    ];
    if let (_, Some(failed)) = capture(root, "cargo", &cli, &[]) {
        return (Vec::new(), vec![failed]);
    }
    let bin = root.join("target").join("release").join("a2aflow");
    let bin = bin.to_string_lossy();
    let command = format!("A2AFLOW_CHAOS_RUNS={CHAOS_RUNS} cargo {}", CHAOS.join(" "));
    let started = Instant::now();
    let mut envs = pg_env.to_vec();
    envs.extend([
        ("A2AFLOW_CHAOS_RUNS", CHAOS_RUNS),
        ("A2AFLOW_BIN", bin.as_ref()),
    ]);
    let (out, failed) = capture(root, "cargo", &CHAOS, &envs);
    let seconds = started.elapsed().as_secs_f64();
    let mut failures: Vec<String> = failed.into_iter().collect();
    let mut rows = parse_chaos_counts(&out, &command).unwrap_or_else(|| {
        failures.push("the chaos test printed no `chaos runs …` line".to_owned());
        Vec::new()
    });
    rows.push(Row {
        name: "chaos.wall_time".to_owned(),
        figure: format!("{seconds:.0} s"),
        command,
        seconds: None,
    });
    (rows, failures)
}

fn crash_kills() -> String {
    std::env::var("A2AFLOW_CRASH_KILLS").unwrap_or_else(|_| CRASH_KILLS.to_owned())
}

/// The ratio rows that can be formed from `rows`.
pub fn ratios(rows: &[Row]) -> Vec<Row> {
    let time = |name: &str| rows.iter().find(|r| r.name == name).and_then(|r| r.seconds);
    RATIOS
        .iter()
        .filter_map(|(label, num, den)| {
            let (n, d) = (time(num)?, time(den)?);
            let command = rows.iter().find(|r| r.name == *num)?.command.clone();
            Some(Row {
                name: (*label).to_owned(),
                figure: format!("{:.2}", d / n),
                command,
                seconds: None,
            })
        })
        .collect()
}

/// The generated section: markers, machine line and the table.
pub fn render(rows: &[Row], cores: usize, date: &str) -> String {
    let mut out = format!(
        "{START}\n_Generated by `cargo xtask bench` on {date}; machine: {cores} cores (`nproc`). \
         Release profile. Criterion figures are the middle estimate; ratios compare two rows \
         of the same run._\n\n| what | figure | cores | date | command |\n|---|---:|---:|---|---|\n"
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {cores} | {date} | `{}` |\n",
            r.name.replace('|', "\\|"),
            r.figure,
            r.command
        ));
    }
    out.push_str(END);
    out
}

/// Replaces the text between the markers (markers included), or inserts a "Consolidated
/// report" section before the first `## ` heading when the markers are missing.
pub fn splice(doc: &str, section: &str) -> String {
    if let (Some(a), Some(b)) = (doc.find(START), doc.find(END))
        && a < b
    {
        return format!("{}{section}{}", &doc[..a], &doc[b + END.len()..]);
    }
    let block = format!("## Consolidated report\n\n{section}\n\n");
    match doc.find("\n## ") {
        Some(i) => format!("{}{block}{}", &doc[..=i], &doc[i + 1..]),
        None => format!("{doc}\n{block}"),
    }
}

/// Runs a command, echoing its output; returns its stdout and, when it failed, why.
fn capture(
    root: &Path,
    program: &str,
    args: &[&str],
    envs: &[(&str, &str)],
) -> (String, Option<String>) {
    println!("\n==> {program} {}", args.join(" "));
    let child = Command::new(program)
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let out = match child.and_then(|c| c.wait_with_output()) {
        Ok(out) => out,
        Err(e) => {
            return (
                String::new(),
                Some(format!("could not run `{program}`: {e}")),
            );
        }
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    print!("{text}");
    let failed = (!out.status.success())
        .then(|| format!("`{program} {}` failed: {}", args.join(" "), out.status));
    (text, failed)
}

fn today() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "(date unknown)".to_owned())
}

/// `cargo xtask bench [--no-criterion | --crash-only]`: see the module docs. `--no-criterion`
/// skips the criterion benches (the table then holds only the other figures). The report is
/// written even when a command fails (with the figures it printed); the failure is returned
/// afterwards. `--crash-only` runs the crash test alone and prints its rows as a table without
/// touching `docs/benchmarks.md` (whose table would lose every other figure).
pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "--crash-only") {
        let (rows, failures) = crash_step(root, &crash_kills());
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
        println!("\n{}", render(&rows, cores, &today()));
        return if failures.is_empty() {
            Ok(())
        } else {
            Err(failures.join("\n"))
        };
    }
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    // The fleet bench and the chaos test need a Postgres server: one of this run's own,
    // stopped when `postgres` drops (whatever failed).
    let postgres = crate::postgres::Server::start_fresh(root, "postgres-bench")?;
    let pg_env = [
        ("A2AFLOW_PG_URL", postgres.url()),
        ("PGPASSWORD", postgres.password().to_owned()),
    ];
    let pg_env: Vec<(&str, &str)> = pg_env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    if !args.iter().any(|a| a == "--no-criterion") {
        // The served-workflow load bench at full size, beside the Python SDK's server on the
        // interop venv's python (built as `cargo xtask ci` builds it).
        let python = crate::ci::interop::ensure_python_peer(root);
        let mut envs = pg_env.clone();
        envs.extend(SLOAD_ENV);
        match &python {
            Ok(python) => envs.push(("A2AFLOW_SLOAD_PYTHON", python.as_str())),
            Err(e) => failures.push(format!("serve_load has no Python side: {e}")),
        }
        let (out, failed) = capture(root, "cargo", &["bench", "--workspace"], &envs);
        rows.extend(parse_criterion(&out, "cargo bench --workspace"));
        rows.extend(
            parse_bench_lines(&out, "cargo bench --workspace")
                .into_iter()
                .map(label_sload),
        );
        failures.extend(failed);
    }
    let ext = [
        "test",
        "--release",
        "-p",
        "a2aflow-extensions",
        "--test",
        "it",
        "--",
        "--ignored",
        "--nocapture",
        "load::",
    ];
    failures.extend(capture(root, "cargo", &ext, &[]).1);
    let soak = ["test", "--release", "-p", "a2aflow-tests", "--test", "soak"];
    let soak_cmd = format!(
        "{} cargo {}",
        SOAK_ENV
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
        soak.join(" ")
    );
    let (out, failed) = capture(root, "cargo", &soak, &SOAK_ENV);
    rows.extend(parse_bench_lines(&out, &soak_cmd));
    failures.extend(failed);
    let (crash, failed) = crash_step(root, &crash_kills());
    rows.extend(crash);
    failures.extend(failed);
    let (chaos, failed) = chaos_step(root, &pg_env);
    rows.extend(chaos);
    failures.extend(failed);
    drop(postgres);
    let derived = ratios(&rows);
    rows.extend(derived);
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let path = root.join("docs").join("benchmarks.md");
    let doc = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let updated = splice(&doc, &render(&rows, cores, &today()));
    std::fs::write(&path, updated).map_err(|e| format!("{}: {e}", path.display()))?;
    println!(
        "\nbench: {} figures written to {}",
        rows.len(),
        path.display()
    );
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CRITERION: &str = "\
kernel_scheduling/chain/100
                        time:   [1.2000 ms 1.3000 ms 1.4000 ms]
                        thrpt:  [142.14 Kelem/s 153.08 Kelem/s 165.83 Kelem/s]
Found 1 outliers among 10 measurements (10.00%)
sse/parse_events_16k_chunks   time:   [10.000 µs 20.000 µs 30.000 µs]
sse/serde_json_value_same_payloads
                        time:   [50.000 µs 60.000 µs 70.000 µs]
";

    #[test]
    fn criterion_lines_become_rows_with_the_middle_estimate() {
        let rows = parse_criterion(CRITERION, "cargo bench");
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "kernel_scheduling/chain/100",
                "kernel_scheduling/chain/100 (throughput)",
                "sse/parse_events_16k_chunks",
                "sse/serde_json_value_same_payloads",
            ]
        );
        assert_eq!(rows[0].figure, "1.3000 ms");
        assert_eq!(rows[1].figure, "153.08 Kelem/s");
        assert_eq!(rows[1].seconds, None);
        assert!((rows[2].seconds.unwrap() - 20e-6).abs() < 1e-12);
    }

    #[test]
    fn ratio_of_two_times_is_the_throughput_ratio() {
        let rows = parse_criterion(CRITERION, "cargo bench");
        let r = ratios(&rows);
        assert_eq!(r.len(), 1);
        assert!(r[0].name.starts_with("SSE parse"));
        assert_eq!(r[0].figure, "3.00");
    }

    #[test]
    fn bench_lines_among_criterion_output_become_their_own_rows() {
        let out = "client_1000_tasks/bare\n                        time:   [1.0000 ms 2.0000 ms 3.0000 ms]\n\
                   BENCH client_1000_tasks/paired_streaming=0.86 engine ÷ bare, median of 15 alternating pairs\n\
                   sse/x   time:   [1.0000 µs 2.0000 µs 3.0000 µs]\n";
        let names: Vec<String> = parse_criterion(out, "c")
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(names, ["client_1000_tasks/bare", "sse/x"]);
        let bench = parse_bench_lines(out, "c");
        assert_eq!(bench.len(), 1);
        assert_eq!(bench[0].name, "client_1000_tasks/paired_streaming");
        assert_eq!(
            bench[0].figure,
            "0.86 engine ÷ bare, median of 15 alternating pairs"
        );
    }

    #[test]
    fn serve_load_rows_name_their_bench_and_size() {
        let out =
            "BENCH serve_load.ratio.requests_per_s=2.50 a2aflow ÷ Python SDK\nBENCH other=1 x\n";
        let rows: Vec<Row> = parse_bench_lines(out, "cargo bench --workspace")
            .into_iter()
            .map(label_sload)
            .collect();
        assert_eq!(
            rows[0].command,
            "A2AFLOW_SLOAD_CLIENTS=1000 A2AFLOW_SLOAD_SECS=10 A2AFLOW_SLOAD_ROUNDS=2 cargo bench \
             -p a2aflow-server --bench serve_load"
        );
        assert_eq!(rows[0].figure, "2.50 a2aflow ÷ Python SDK");
        assert_eq!(rows[1].command, "cargo bench --workspace");
    }

    #[test]
    fn bench_lines_are_read_and_others_ignored() {
        let out = "soak: 10 runs\nBENCH soak.tasks_per_s=812.5 tasks/s\nnoise BENCH x\nBENCH load.rss_per_task=6120.0 bytes\n";
        let rows = parse_bench_lines(out, "cmd");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].name, "soak.tasks_per_s");
        assert_eq!(rows[0].figure, "812.5 tasks/s");
        assert_eq!(rows[1].figure, "6120.0 bytes");
    }

    #[test]
    fn the_crash_counts_line_becomes_one_row_per_count() {
        let out = "crash: kills 2000 resumes 2204 duplicates 0 lost 0 outcome_unknown 31\n\
                   crash: seed 0x5eedc4a5 never_started 3 finished_before_kill 9 in 1800.2s\n";
        let rows = parse_crash_counts(out, "cmd").unwrap();
        let got: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.name.as_str(), r.figure.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("crash.kills", "2000"),
                ("crash.resumes", "2204"),
                ("crash.duplicates", "0"),
                ("crash.lost", "0"),
                ("crash.outcome_unknown", "31"),
            ]
        );
        assert!(rows.iter().all(|r| r.command == "cmd"));
    }

    #[test]
    fn the_chaos_line_becomes_one_row_per_count() {
        let out = "chaos runs 3000 kills 160 stops 1 resumes 490 duplicates 0 lost 0 fenced 4 \
                   resent 0 (612.3 s)\n1 passed, 0 failed\n";
        let rows = parse_chaos_counts(out, "cmd").unwrap();
        let got: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.name.as_str(), r.figure.as_str()))
            .collect();
        assert_eq!(got[0], ("chaos.runs", "3000"));
        assert_eq!(got[6], ("chaos.fenced", "4"));
        assert_eq!(got.len(), 8);
        assert_eq!(parse_chaos_counts("chaos runs 3 kills 1\n", "c"), None);
    }

    #[test]
    fn a_crash_line_without_every_count_is_not_read() {
        assert_eq!(
            parse_crash_counts("crash: kills 10 resumes 12\n", "c"),
            None
        );
        assert_eq!(
            parse_crash_counts(
                "crash: kills x resumes 1 duplicates 0 lost 0 outcome_unknown 0",
                "c"
            ),
            None
        );
        assert_eq!(parse_crash_counts("no crash line here\n", "c"), None);
    }

    #[test]
    fn splice_replaces_between_markers_or_inserts_a_section() {
        let row = Row {
            name: "a|b".into(),
            figure: "1 x".into(),
            command: "c".into(),
            seconds: None,
        };
        let section = render(&[row], 2, "2026-11-30");
        assert!(section.contains("| a\\|b | 1 x | 2 | 2026-11-30 | `c` |"));
        let fresh = splice("# Benchmarks\n\nintro\n\n## Kernel\n\nkept\n", &section);
        assert!(fresh.starts_with("# Benchmarks\n\nintro\n\n## Consolidated report\n\n<!--"));
        assert!(fresh.ends_with("## Kernel\n\nkept\n"));
        let again = splice(&fresh, &render(&[], 4, "2027-01-01"));
        assert!(!again.contains("a\\|b"));
        assert!(again.contains("4 cores"));
        assert_eq!(again.matches(START).count(), 1);
        assert!(again.ends_with("## Kernel\n\nkept\n"));
    }
}
