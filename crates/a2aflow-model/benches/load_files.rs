//! The loader's time and peak memory per workflow file, one child process per file.
//!
//! `cargo bench -p a2aflow-model --bench load_files -- FILE_OR_DIR...` prints one JSON line per
//! file: `{"case":"load/<file stem>","file_mb","wall_s","peak_rss_mb","rss_ratio","ok",...}`.
//! `wall_s` is the median of up to 5 loads (`load_workflow_str`, fresh each time, within a 5 s
//! budget); `peak_rss_mb` is the child's high-water mark (`VmHWM`), which includes the file's
//! text the child read; `rss_ratio` is that peak over the file size. The size and step limits are
//! lifted so that the large generated files load.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use a2aflow_model::{LoadOptions, load_workflow_str};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const INNER_RUNS: usize = 5;
const INNER_BUDGET: Duration = Duration::from_secs(5);

fn options() -> LoadOptions {
    LoadOptions::LENIENT
        .with_max_document_bytes(usize::MAX)
        .with_max_steps(usize::MAX)
}

/// The process's peak resident set in MiB (`VmHWM` of /proc/self/status).
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn mb(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// Loads `path` in this process and prints its JSON line.
fn one(path: &Path) {
    let text = std::fs::read_to_string(path).expect("read the workflow file");
    let mut walls = Vec::new();
    let mut steps = 0;
    let mut ok = true;
    while walls.len() < INNER_RUNS && walls.iter().sum::<Duration>() < INNER_BUDGET {
        let start = Instant::now();
        let loaded = load_workflow_str(&text, options());
        walls.push(start.elapsed());
        match loaded {
            Ok(l) => {
                ok &= l.warnings.is_empty();
                steps = l.workflow.steps.len();
            }
            Err(_) => ok = false,
        }
    }
    walls.sort();
    let wall = walls[walls.len() / 2].as_secs_f64();
    let peak = peak_rss_mb().unwrap_or(f64::NAN);
    let file_mb = mb(text.len());
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    println!(
        "{{\"case\":\"load/{stem}\",\"file_mb\":{},\"steps\":{steps},\"wall_s\":{},\"inner_runs\":{},\"peak_rss_mb\":{},\"rss_ratio\":{},\"ok\":{ok},\"engine\":\"a2aflow load_workflow_str\"}}",
        round(file_mb, 2),
        round(wall, 5),
        walls.len(),
        round(peak, 1),
        round(peak / file_mb, 2),
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

fn main() {
    // cargo bench passes `--bench`; everything else that is not a flag is a file or a folder.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--one") {
        one(Path::new(&args[i + 1]));
        return;
    }
    let paths: Vec<String> = args.into_iter().filter(|a| !a.starts_with("--")).collect();
    if paths.is_empty() {
        eprintln!("usage: load_files FILE_OR_DIR... (one JSON line per .json file)");
        return;
    }
    let me = std::env::current_exe().expect("own path");
    for file in files(&paths) {
        let status = Command::new(&me)
            .arg("--one")
            .arg(&file)
            .status()
            .expect("run a child");
        if !status.success() {
            let stem = file.file_stem().unwrap_or_default().to_string_lossy();
            println!(
                "{{\"case\":\"load/{stem}\",\"ok\":false,\"error\":\"child exited {status}\"}}"
            );
        }
    }
}
