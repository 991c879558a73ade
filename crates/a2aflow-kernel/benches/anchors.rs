//! a2aflow beside the Python anchors: the hook `EXTRA_KERNEL_CMD` of the shared
//! `bench/run_baselines.sh` (see `cargo xtask bench-anchors`), usable on its own too.
//!
//! `anchors [--python PY] DIR_OR_FILE...` runs, for every PSOP file (`chain-1000.json`, …), one
//! child process per case and prints one JSON line per case in the baselines' shape
//! (`case`, `steps`, `tasks`, `edges`, `wall_s`, `peak_rss_mb`, `ok`):
//!
//! * `a2aflow/load/<name>`: `load_workflow_str` of the file's text (limits lifted);
//! * `a2aflow/kernel/<name>/<run|prepared>/<sink|nosink>`: one whole run with an in-memory client
//!   that answers at once; `prepared` is `run_prepared` on a `PreparedWorkflow` built once,
//!   `sink` a counting event callback (every event counted, none kept);
//! * with `--python`, `python/load/<name>`: a2at-engine's `Workflow.from_json` on the same text,
//!   in a child of that Python.
//!
//! `wall_s` is the median of up to 5 repetitions within 5 s (fresh load / run each time), or of
//! exactly `A2AFLOW_ANCHORS_RUNS` repetitions when that is set (so an instruction count under
//! `valgrind` divides by a known number: per run = (Ir at 3 − Ir at 1) ÷ 2);
//! `peak_rss_mb` is the child's `VmHWM` (text, workflow and run together). `ok` checks the run
//! succeeded, every task ran, and (with the sink) one `step_start` per step.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use a2aflow_kernel::{
    CallbackError, ControlPoint, EventCallback, InMemoryClient, PreparedWorkflow, RunInput,
    RunOptions, run, run_prepared,
};
use a2aflow_model::{
    Event, EventKind, LoadOptions, MessageContent, TaskRequest, Workflow, load_workflow_str,
};
use async_trait::async_trait;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const INNER_RUNS: usize = 5;
const INNER_BUDGET: Duration = Duration::from_secs(5);
const KERNEL_MODES: [(&str, &str); 4] = [
    ("prepared", "sink"),
    ("prepared", "nosink"),
    ("run", "sink"),
    ("run", "nosink"),
];

/// a2at-engine's loader on one file, timed like ours; prints one JSON line.
const PYTHON_LOAD: &str = r#"
import json, os, statistics, sys, time
from a2at_engine.core.models import Workflow
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
walls = []
while len(walls) < 5 and sum(walls) < 5.0:
    t = time.perf_counter(); wf = Workflow.from_json(text); walls.append(time.perf_counter() - t)
    steps = len(wf.steps); wf = None
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) / 1024
mb = len(text.encode()) / 1048576
print(json.dumps({"case": "python/load/" + os.path.basename(path)[:-5], "file_mb": round(mb, 2),
    "steps": steps, "wall_s": round(statistics.median(walls), 5), "inner_runs": len(walls),
    "peak_rss_mb": round(hwm, 1), "rss_ratio": round(hwm / mb, 2), "ok": True,
    "engine": "a2at-engine Workflow.from_json"}))
"#;

struct Host;

#[async_trait]
impl ControlPoint for Host {
    // Lent the request: no copy of it per task (the kernel's default hands `on_task` one).
    async fn on_task_ref(&self, r: &TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(r.description.as_str()))
    }
}

fn options() -> LoadOptions {
    LoadOptions::LENIENT
        .with_max_document_bytes(usize::MAX)
        .with_max_steps(usize::MAX)
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

fn name_of(path: &Path) -> String {
    path.file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// The fixed repetition count `A2AFLOW_ANCHORS_RUNS`, when set (at least 1).
fn fixed_runs() -> Option<usize> {
    let runs = std::env::var("A2AFLOW_ANCHORS_RUNS").ok()?;
    Some(
        runs.trim()
            .parse::<usize>()
            .expect("A2AFLOW_ANCHORS_RUNS: a whole number")
            .max(1),
    )
}

/// Repeats `once` up to [`INNER_RUNS`] times within [`INNER_BUDGET`] (or exactly
/// [`fixed_runs`] times); the median and the count.
fn median_of(mut once: impl FnMut() -> Duration) -> (f64, usize) {
    let mut walls = Vec::new();
    match fixed_runs() {
        Some(n) => walls.extend((0..n).map(|_| once())),
        None => {
            while walls.len() < INNER_RUNS && walls.iter().sum::<Duration>() < INNER_BUDGET {
                walls.push(once());
            }
        }
    }
    walls.sort();
    (walls[walls.len() / 2].as_secs_f64(), walls.len())
}

fn counts(w: &Workflow) -> (usize, usize, usize) {
    let tasks = w.steps.iter().map(|s| s.subtasks.len()).sum();
    let edges = w.steps.iter().map(|s| s.next.len()).sum();
    (w.steps.len(), tasks, edges)
}

fn load_case(path: &Path) {
    let text = std::fs::read_to_string(path).expect("read the workflow file");
    let mut steps = 0;
    let mut ok = true;
    let (wall, runs) = median_of(|| {
        let start = Instant::now();
        let loaded = load_workflow_str(&text, options());
        let took = start.elapsed();
        match loaded {
            Ok(l) => {
                ok &= l.warnings.is_empty();
                steps = l.workflow.steps.len();
            }
            Err(_) => ok = false,
        }
        took
    });
    let peak = peak_rss_mb();
    let file_mb = text.len() as f64 / 1_048_576.0;
    println!(
        "{{\"case\":\"a2aflow/load/{}\",\"file_mb\":{},\"steps\":{steps},\"wall_s\":{},\"inner_runs\":{runs},\"peak_rss_mb\":{},\"rss_ratio\":{},\"ok\":{ok},\"engine\":\"a2aflow load_workflow_str\"}}",
        name_of(path),
        round(file_mb, 2),
        round(wall, 5),
        round(peak, 1),
        round(peak / file_mb, 2),
    );
}

fn kernel_case(path: &Path, via: &str, sink: &str) {
    let text = std::fs::read_to_string(path).expect("read the workflow file");
    let workflow = Arc::new(load_workflow_str(&text, options()).expect("load").workflow);
    drop(text);
    let (steps, tasks, edges) = counts(&workflow);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let host: Arc<dyn ControlPoint> = Arc::new(Host);
    let client = Arc::new(InMemoryClient::new().recording(false));
    let prepared = PreparedWorkflow::new(workflow.clone()).expect("a valid workflow");
    let events = Arc::new(AtomicU64::new(0));
    let step_starts = Arc::new(AtomicU64::new(0));
    let mut ok = true;
    let mut per_run = (0, 0);
    let (wall, runs) = median_of(|| {
        events.store(0, Ordering::Relaxed);
        step_starts.store(0, Ordering::Relaxed);
        let mut options = RunOptions {
            timeout: Duration::from_secs(600),
            ..RunOptions::default()
        };
        if sink == "sink" {
            let (all, starts) = (events.clone(), step_starts.clone());
            let on_event: EventCallback = Arc::new(move |e: &Event| {
                all.fetch_add(1, Ordering::Relaxed);
                if e.kind == EventKind::StepStart {
                    starts.fetch_add(1, Ordering::Relaxed);
                }
            });
            options.on_event = Some(on_event);
        }
        let start = Instant::now();
        let result = if via == "prepared" {
            rt.block_on(run_prepared(
                &prepared,
                RunInput::default(),
                host.clone(),
                client.clone(),
                options,
            ))
        } else {
            rt.block_on(run(
                workflow.clone(),
                RunInput::default(),
                host.clone(),
                client.clone(),
                options,
            ))
        };
        let took = start.elapsed();
        let ran: usize = result.steps.iter().map(|s| s.task_results.len()).sum();
        ok &= result.success && ran == tasks && result.steps.len() == steps;
        per_run = (
            events.load(Ordering::Relaxed),
            step_starts.load(Ordering::Relaxed),
        );
        if sink == "sink" {
            ok &= per_run.1 == steps as u64;
        }
        drop(result);
        took
    });
    println!(
        "{{\"case\":\"a2aflow/kernel/{}/{via}/{sink}\",\"steps\":{steps},\"tasks\":{tasks},\"edges\":{edges},\"wall_s\":{},\"inner_runs\":{runs},\"peak_rss_mb\":{},\"tasks_per_s\":{},\"events\":{},\"ok\":{ok},\"engine\":\"a2aflow-kernel\"}}",
        name_of(path),
        round(wall, 6),
        round(peak_rss_mb(), 1),
        round(tasks as f64 / wall, 1),
        per_run.0,
    );
}

fn files(args: &[String]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for a in args {
        let p = PathBuf::from(a);
        if p.is_dir() {
            let mut inside: Vec<PathBuf> = std::fs::read_dir(&p)
                .expect("read the folder")
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "json"))
                .collect();
            inside.sort();
            out.extend(inside);
        } else {
            out.push(p);
        }
    }
    out
}

/// Runs one case in a child of this binary (or of Python), so its peak RSS is its own.
fn child(cmd: &mut Command, case: &str) {
    match cmd.status() {
        Ok(s) if s.success() => {}
        other => println!("{{\"case\":\"{case}\",\"ok\":false,\"error\":\"child: {other:?}\"}}"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--load") => return load_case(Path::new(&args[1])),
        Some("--kernel") => return kernel_case(Path::new(&args[1]), &args[2], &args[3]),
        _ => {}
    }
    // `--python PY` and the files or folders, in any order (cargo bench adds `--bench`).
    let mut python = None;
    let mut paths = Vec::new();
    let mut rest = args.into_iter();
    while let Some(a) = rest.next() {
        if a == "--python" {
            python = rest.next();
        } else if !a.starts_with("--") {
            paths.push(a);
        }
    }
    let me = std::env::current_exe().expect("own path");
    for file in files(&paths) {
        let name = name_of(&file);
        child(
            Command::new(&me).arg("--load").arg(&file),
            &format!("a2aflow/load/{name}"),
        );
        if let Some(py) = &python {
            child(
                Command::new(py).arg("-c").arg(PYTHON_LOAD).arg(&file),
                &format!("python/load/{name}"),
            );
        }
        for (via, sink) in KERNEL_MODES {
            child(
                Command::new(&me)
                    .args(["--kernel"])
                    .arg(&file)
                    .args([via, sink]),
                &format!("a2aflow/kernel/{name}/{via}/{sink}"),
            );
        }
    }
}
