//! The README's first workflow (`examples/first-workflow.json`) runs as the README says: its
//! commands against two agents, and the output block the README shows (times and ids aside).

use crate::support::{a2aflow_guarded, assert_exit, serve, stdout};
use a2aflow_testkit::{AgentSpec, TestServer};
use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The fenced block after each `<!-- first-workflow: ARGS -->` marker in the README (its `$ `
/// lines are the command, not output).
fn readme_blocks() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut blocks = Vec::new();
    let mut rest = readme.as_str();
    while let Some(at) = rest.find("<!-- first-workflow:") {
        rest = &rest[at + "<!-- first-workflow:".len()..];
        let (args, after) = rest.split_once("-->").unwrap();
        let body = after.split_once("```text\n").unwrap().1;
        let (block, _) = body.split_once("```").unwrap();
        blocks.push((args.trim().to_owned(), block.to_owned()));
        rest = after;
    }
    blocks
}

/// What a person sees, as the README shows it: the progress lines (stderr) without their
/// elapsed-time column (`[  0.01s] `), then stdout with the run's id written `ID`.
fn as_shown(o: &std::process::Output) -> String {
    let progress = crate::support::stderr(o);
    let mut lines: Vec<String> = progress
        .lines()
        .map(|l| match l.split_once("s] ") {
            Some((time, rest)) if time.starts_with('[') => rest.to_owned(),
            _ => l.to_owned(),
        })
        .collect();
    for l in stdout(o).lines() {
        let words: Vec<&str> = l.split(' ').collect();
        lines.push(match words.as_slice() {
            ["run", _id, verdict] => format!("run ID {verdict}"),
            _ => l.to_owned(),
        });
    }
    lines.join("\n")
}

fn agents() -> (TestServer, tokio::runtime::Runtime) {
    serve(
        TestServer::builder()
            .agent(AgentSpec::new("noc"))
            .agent(AgentSpec::new("field")),
    )
}

#[test]
fn the_readme_example_runs_and_prints_what_the_readme_shows() {
    let (server, _rt) = agents();
    let file = repo().join("examples/first-workflow.json");
    let blocks = readme_blocks();
    assert!(blocks.len() >= 2, "the README shows both route policies");
    for (args, shown) in blocks {
        let noc = format!("noc={}", server.card_url("noc"));
        let field = format!("field={}", server.card_url("field"));
        let mut argv = vec![
            "run",
            file.to_str().unwrap(),
            "--agent",
            &noc,
            "--agent",
            &field,
        ];
        argv.extend(args.split_whitespace());
        let out = a2aflow_guarded(&argv);
        assert_exit(&out, 0);
        let printed = as_shown(&out);
        let shown: Vec<&str> = shown.lines().filter(|l| !l.starts_with("$ ")).collect();
        assert_eq!(
            printed.trim_end(),
            shown.join("\n").trim_end(),
            "`a2aflow run examples/first-workflow.json … {args}` no longer prints what the \
             README shows"
        );
    }
}
