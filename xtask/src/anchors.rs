//! `cargo xtask bench-anchors`: a2aflow beside the Python anchors in one run.
//!
//! Builds the kernel's `anchors` bench binary and runs the shared `bench/run_baselines.sh`
//! (found at `$A2AFLOW_BASELINES`, default `../shared/bench` beside the workspace) with that
//! binary as its `EXTRA_KERNEL_CMD` hook, so a2aflow loads and runs the exact PSOP files
//! a2at-engine ran, in the same session. `ENGINE_PY` must be a Python with a2at-engine 1.0.1
//! and a2a-sdk 1.3.0 (the script's own requirement). Unless set in the environment, the run is
//! narrowed to the anchor cases (`KERNEL_CASES=chain:1000,wide:1000,layered:50x50,layered:80x80`,
//! once, and a token client run); every knob of the script can still be set. The JSON lines,
//! the script's summary and `ratios.md` (Python ÷ a2aflow per case) go to `target/anchors/`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The script's knobs this command narrows, unless the environment sets them.
const DEFAULTS: [(&str, &str); 9] = [
    (
        "KERNEL_CASES",
        "chain:1000,wide:1000,layered:50x50,layered:80x80",
    ),
    ("KERNEL_ONCE", ""),
    ("KERNEL_TIMEOUT", "600"),
    ("REPEATS", "1"),
    ("CLIENT_CASES", "sdk/jsonrpc/seq"),
    ("N", "200"),
    ("WRK_DURATION", "2"),
    ("LOADGEN_N", "2000"),
    ("PIN", "auto"),
];

/// The anchor cases of the ratio table: (file name, Python kernel case).
const CASES: [&str; 4] = [
    "chain-1000",
    "wide-1000",
    "layered-50x50-full",
    "layered-80x80-full",
];

pub fn run(root: &Path, _args: &[String]) -> Result<(), String> {
    let python = std::env::var("ENGINE_PY").map_err(|_| {
        "bench-anchors: set ENGINE_PY to a Python with a2at-engine 1.0.1 and a2a-sdk 1.3.0"
            .to_owned()
    })?;
    let baselines = std::env::var_os("A2AFLOW_BASELINES")
        .map_or_else(|| root.join("../shared/bench"), PathBuf::from);
    let script = baselines.join("run_baselines.sh");
    if !script.is_file() {
        return Err(format!(
            "bench-anchors: {} not found (set A2AFLOW_BASELINES to the folder that has it)",
            script.display()
        ));
    }
    let hook = build_anchors(root)?;
    let out = root.join("target/anchors");
    std::fs::create_dir_all(&out).map_err(|e| format!("bench-anchors: {e}"))?;
    let mut cmd = Command::new("bash");
    cmd.arg(&script)
        .env("BENCH_OUT", &out)
        .env("CARGO_TARGET_DIR", root.join("target/anchors-fast-agent"))
        .env(
            "EXTRA_KERNEL_CMD",
            format!(
                "{} --python {} \"$BENCH_WORKFLOWS\"",
                quoted(&hook.to_string_lossy()),
                quoted(&python)
            ),
        );
    for (key, value) in DEFAULTS {
        if std::env::var_os(key).is_none() {
            cmd.env(key, value);
        }
    }
    println!("bench-anchors: {cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("bench-anchors: could not start bash: {e}"))?;
    let lines = std::fs::read_to_string(out.join("summary.json"))
        .map_err(|e| format!("bench-anchors: no summary ({e})"))?;
    let table = ratios(&lines);
    std::fs::write(out.join("ratios.md"), &table).map_err(|e| format!("bench-anchors: {e}"))?;
    println!("{table}");
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "bench-anchors: run_baselines.sh exited {status} (its JSON lines say which case)"
        ))
    }
}

fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Builds the `anchors` bench binary and returns its path.
fn build_anchors(root: &Path) -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "bench",
            "-p",
            "a2aflow-kernel",
            "--bench",
            "anchors",
            "--no-run",
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(root)
        .output()
        .map_err(|e| format!("bench-anchors: could not start cargo: {e}"))?;
    if !out.status.success() {
        return Err("bench-anchors: building the anchors bench failed".to_owned());
    }
    cargo_metadata::Message::parse_stream(out.stdout.as_slice())
        .filter_map(Result::ok)
        .find_map(|m| match m {
            cargo_metadata::Message::CompilerArtifact(a) if a.target.name == "anchors" => {
                a.executable.map(PathBuf::from)
            }
            _ => None,
        })
        .ok_or_else(|| "bench-anchors: cargo named no anchors executable".to_owned())
}

/// The number after `"field":` (or `"field": `) in one flat JSON line.
fn number(line: &str, field: &str) -> Option<f64> {
    let key = format!("\"{field}\":");
    let at = line.find(&key)? + key.len();
    let rest = line[at..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | 'e' | 'E' | '+')))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// The summary line of `case`.
fn line_of<'a>(lines: &'a str, case: &str) -> Option<&'a str> {
    let (tight, spaced) = (
        format!("\"case\":\"{case}\""),
        format!("\"case\": \"{case}\""),
    );
    lines
        .lines()
        .find(|l| l.contains(&tight) || l.contains(&spaced))
}

fn field(lines: &str, case: &str, name: &str) -> Option<f64> {
    line_of(lines, case).and_then(|l| number(l, name))
}

fn ratio(num: Option<f64>, den: Option<f64>) -> String {
    match (num, den) {
        (Some(n), Some(d)) if d > 0.0 => format!("{:.1}×", n / d),
        _ => "–".to_owned(),
    }
}

fn secs(x: Option<f64>) -> String {
    x.map_or("–".to_owned(), |s| format!("{s:.4}"))
}

/// The Markdown table of Python ÷ a2aflow per anchor case, from the summary's JSON lines.
fn ratios(lines: &str) -> String {
    let mut t = String::from(
        "| case | a2at-engine wall s | a2aflow `run_prepared` + sink | ratio | no sink | ratio | `run` + sink | ratio |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for name in CASES {
        let py = field(lines, &format!("kernel/{name}"), "wall_s");
        let ours = |via: &str, sink: &str| {
            field(
                lines,
                &format!("a2aflow/kernel/{name}/{via}/{sink}"),
                "wall_s",
            )
        };
        let (ps, pn, rs) = (
            ours("prepared", "sink"),
            ours("prepared", "nosink"),
            ours("run", "sink"),
        );
        t.push_str(&format!(
            "| kernel {name} | {} | {} | {} | {} | {} | {} | {} |\n",
            secs(py),
            secs(ps),
            ratio(py, ps),
            secs(pn),
            ratio(py, pn),
            secs(rs),
            ratio(py, rs),
        ));
    }
    t.push_str("\n| file | MiB | `from_json` s | `load_workflow_str` s | speed-up | Python peak RSS MiB | a2aflow peak RSS MiB | a2aflow peak ÷ file |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for name in CASES {
        let (py, ours) = (
            format!("python/load/{name}"),
            format!("a2aflow/load/{name}"),
        );
        let (pw, ow) = (field(lines, &py, "wall_s"), field(lines, &ours, "wall_s"));
        let fmt1 = |x: Option<f64>| x.map_or("–".to_owned(), |v| format!("{v:.1}"));
        t.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} |\n",
            fmt1(field(lines, &ours, "file_mb")),
            secs(pw),
            secs(ow),
            ratio(pw, ow),
            fmt1(field(lines, &py, "peak_rss_mb")),
            fmt1(field(lines, &ours, "peak_rss_mb")),
            field(lines, &ours, "rss_ratio").map_or("–".to_owned(), |v| format!("{v:.2}×")),
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_pair_python_and_a2aflow_lines_of_either_spacing() {
        let lines = concat!(
            "{\"case\": \"kernel/chain-1000\", \"wall_s\": 0.2, \"ok\": true}\n",
            "{\"case\":\"a2aflow/kernel/chain-1000/prepared/sink\",\"wall_s\":0.01,\"ok\":true}\n",
            "{\"case\": \"python/load/chain-1000\", \"wall_s\": 0.03}\n",
            "{\"case\":\"a2aflow/load/chain-1000\",\"file_mb\":0.16,\"wall_s\":0.003,\"peak_rss_mb\":4.3,\"rss_ratio\":27.5}\n",
        );
        let t = ratios(lines);
        assert!(
            t.contains("| kernel chain-1000 | 0.2000 | 0.0100 | 20.0× | – | – | – | – |"),
            "{t}"
        );
        assert!(
            t.contains("| chain-1000 | 0.2 | 0.0300 | 0.0030 | 10.0× |"),
            "{t}"
        );
        assert!(t.contains("| kernel wide-1000 | – |"), "{t}");
    }
}
