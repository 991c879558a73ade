//! `a2aflow graph FILE [--format mermaid|dot]`: a workflow's DAG as Mermaid (for Markdown) or
//! Graphviz DOT (for `dot`).
//!
//! Only a valid workflow is drawn: the file is validated first, and an invalid one is refused
//! with its problems on stderr (exit 1), as `validate` prints them. Every name and condition is
//! escaped for the target format, and control or invisible characters are written as
//! `\u{XXXX}` (free-text conditions may hold them), so a drawing is always one line per node
//! or edge and shows what the document says.

use crate::validate_cmd;
use a2aflow::model::names::visible;
use a2aflow::model::{LoadOptions, StepType, Workflow};
use std::fmt::Write as _;
use std::path::Path;

/// Output format of `a2aflow graph`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GraphFormat {
    /// A Mermaid flowchart, ready to paste into a Markdown file.
    Mermaid,
    /// Graphviz DOT, ready to pipe into `dot -Tsvg`.
    Dot,
}

/// Runs the subcommand: validates the file, then prints the drawing. Exit 0 drawn, 1 the file is
/// not a valid workflow (problems on stderr), 2 it cannot be read.
pub fn run(file: &Path, format: GraphFormat) -> u8 {
    let options = LoadOptions::LENIENT;
    let (loaded, text) = match crate::workflow_file::read_with_text(file, &options) {
        Ok(read) => read,
        Err(e @ crate::workflow_file::ReadError::Io { .. }) => {
            eprintln!("a2aflow: {e}");
            return e.exit_code();
        }
        Err(crate::workflow_file::ReadError::Load { path, errors }) => {
            return refuse(&validate_cmd::check(path, Err(errors)));
        }
    };
    let report = validate_cmd::check(file.to_path_buf(), Ok((&loaded, &text)));
    if !report.valid {
        return refuse(&report);
    }
    let mut stderr = std::io::stderr().lock();
    for w in &report.warnings {
        let _ = writeln_io(&mut stderr, &format!("a2aflow: warning {w}"));
    }
    print!("{}", render(&loaded.workflow, format));
    0
}

fn writeln_io(out: &mut dyn std::io::Write, line: &str) -> std::io::Result<()> {
    writeln!(out, "{line}")
}

/// Prints an invalid file's report on stderr; exit code 1.
fn refuse(report: &validate_cmd::FileReport) -> u8 {
    let mut stderr = std::io::stderr().lock();
    let _ = validate_cmd::write_text(&mut stderr, report);
    let _ = writeln_io(
        &mut stderr,
        "a2aflow: not drawn: the workflow is invalid (fix the errors above)",
    );
    1
}

/// Renders the workflow in the chosen format. Step types label the nodes; conditional edges carry
/// their condition as the edge label.
pub fn render(workflow: &Workflow, format: GraphFormat) -> String {
    match format {
        GraphFormat::Mermaid => mermaid(workflow),
        GraphFormat::Dot => dot(workflow),
    }
}

fn type_label(t: StepType) -> &'static str {
    t.as_str()
}

/// Mermaid node ids must be simple identifiers: steps are numbered by document order.
fn mermaid(workflow: &Workflow) -> String {
    let index = |name: &str| workflow.steps.iter().position(|s| s.name == name);
    let mut out = String::from("flowchart TD\n");
    for (i, step) in workflow.steps.iter().enumerate() {
        let _ = writeln!(
            out,
            "    s{i}[\"{}<br/><small>{}</small>\"]",
            mermaid_escape(&step.name),
            type_label(step.step_type)
        );
    }
    for (i, step) in workflow.steps.iter().enumerate() {
        for edge in &step.next {
            let Some(j) = index(&edge.step) else {
                continue; // validation reports unknown targets; the graph shows what exists
            };
            if edge.is_unconditional() {
                let _ = writeln!(out, "    s{i} --> s{j}");
            } else {
                let _ = writeln!(
                    out,
                    "    s{i} -- \"{}\" --> s{j}",
                    mermaid_escape(edge.condition.trim())
                );
            }
        }
    }
    out
}

/// Text for inside a Mermaid `"…"` label: hidden characters as `\u{XXXX}`, then `#`, quotes,
/// angle brackets, `&` and backticks as Mermaid entity codes (`#quot;`, `#35;`…), so nothing
/// closes the label, starts markup or a Markdown string.
fn mermaid_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in visible(s).chars() {
        match c {
            '#' => out.push_str("#35;"),
            '"' => out.push_str("#quot;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#38;"),
            '`' => out.push_str("#96;"),
            c => out.push(c),
        }
    }
    out
}

fn dot(workflow: &Workflow) -> String {
    let mut out = String::new();
    let title = if workflow.name.is_empty() {
        &workflow.id
    } else {
        &workflow.name
    };
    let _ = writeln!(out, "digraph \"{}\" {{", dot_escape(title));
    out.push_str("    rankdir=TB;\n    node [shape=box, style=rounded];\n");
    for step in &workflow.steps {
        let _ = writeln!(
            out,
            "    \"{0}\" [label=\"{0}\\n{1}\"];",
            dot_escape(&step.name),
            type_label(step.step_type)
        );
    }
    for step in &workflow.steps {
        for edge in &step.next {
            if edge.is_unconditional() {
                let _ = writeln!(
                    out,
                    "    \"{}\" -> \"{}\";",
                    dot_escape(&step.name),
                    dot_escape(&edge.step)
                );
            } else {
                let _ = writeln!(
                    out,
                    "    \"{}\" -> \"{}\" [label=\"{}\", style=dashed];",
                    dot_escape(&step.name),
                    dot_escape(&edge.step),
                    dot_escape(edge.condition.trim())
                );
            }
        }
    }
    out.push_str("}\n");
    out
}

/// Text for inside a DOT `"…"` string: hidden characters as `\u{XXXX}`, then backslashes and
/// quotes escaped (so `\n`, `\l` and friends in a name are shown, not interpreted).
fn dot_escape(s: &str) -> String {
    visible(s).replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow::model::{Edge, Step};

    fn wf() -> Workflow {
        Workflow {
            id: "wf".into(),
            name: "Demo \"x\"".into(),
            steps: vec![
                Step {
                    name: "a".into(),
                    next: vec![
                        Edge {
                            step: "b".into(),
                            condition: "".into(),
                        },
                        Edge {
                            step: "c".into(),
                            condition: "severity > 3".into(),
                        },
                    ],
                    ..Default::default()
                },
                Step {
                    name: "b".into(),
                    step_type: StepType::AnySuccess,
                    ..Default::default()
                },
                Step {
                    name: "c".into(),
                    step_type: StepType::SelfLoop,
                    ..Default::default()
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn mermaid_labels_types_and_conditions() {
        let m = render(&wf(), GraphFormat::Mermaid);
        assert!(m.starts_with("flowchart TD\n"));
        assert!(
            m.contains("s1[\"b<br/><small>ANY_SUCCESS</small>\"]"),
            "{m}"
        );
        assert!(m.contains("    s0 --> s1\n"), "{m}");
        assert!(m.contains("    s0 -- \"severity #gt; 3\" --> s2\n"), "{m}");
    }

    #[test]
    fn dot_labels_types_and_dashes_conditional_edges() {
        let d = render(&wf(), GraphFormat::Dot);
        assert!(d.starts_with("digraph \"Demo \\\"x\\\"\" {"), "{d}");
        assert!(d.contains("\"c\" [label=\"c\\nSELF_LOOP\"];"), "{d}");
        assert!(d.contains("\"a\" -> \"b\";"), "{d}");
        assert!(
            d.contains("\"a\" -> \"c\" [label=\"severity > 3\", style=dashed];"),
            "{d}"
        );
        assert!(d.trim_end().ends_with('}'));
    }

    /// A name and a condition written to break out of their labels and the line.
    fn hostile() -> Workflow {
        let mut w = wf();
        w.name = "T\"]\n}".into();
        w.steps[0].name = "a\"]\nclick s0 call x()\u{1b}[2J\u{202E}<b>&#quot;`\\".into();
        w.steps[0].next[1].condition = "yes\"\n--> s9\r\\l".into();
        w
    }

    /// Every line of the output is one statement: no raw control character but the newlines
    /// that end the lines, no invisible character.
    fn assert_one_statement_per_line(out: &str, lines: usize) {
        assert_eq!(out.lines().count(), lines, "{out}");
        for c in out.chars() {
            assert!(
                c == '\n' || !(c.is_control() || a2aflow::model::names::is_invisible_character(c)),
                "raw {c:?} in {out}"
            );
        }
    }

    #[test]
    fn mermaid_escapes_hostile_names_and_conditions() {
        let m = render(&hostile(), GraphFormat::Mermaid);
        // header, three nodes, two edges
        assert_one_statement_per_line(&m, 6);
        assert!(
            m.contains(
                "    s0[\"a#quot;]\\u{000A}click s0 call x()\\u{001B}[2J\\u{202E}#lt;b#gt;#38;#35;quot;#96;\\<br/><small>ALL_SUCCESS</small>\"]\n"
            ),
            "{m}"
        );
        assert!(
            m.contains("    s0 -- \"yes#quot;\\u{000A}--#gt; s9\\u{000D}\\l\" --> s2\n"),
            "{m}"
        );
    }

    #[test]
    fn dot_escapes_hostile_names_and_conditions() {
        let d = render(&hostile(), GraphFormat::Dot);
        // header, two attribute lines, three nodes, two edges, closing brace
        assert_one_statement_per_line(&d, 9);
        assert!(d.starts_with("digraph \"T\\\"]\\\\u{000A}}\" {\n"), "{d}");
        let a = "a\\\"]\\\\u{000A}click s0 call x()\\\\u{001B}[2J\\\\u{202E}<b>&#quot;`\\\\";
        assert!(
            d.contains(&format!("    \"{a}\" [label=\"{a}\\nALL_SUCCESS\"];\n")),
            "{d}"
        );
        assert!(
            d.contains(&format!(
                "    \"{a}\" -> \"c\" [label=\"yes\\\"\\\\u{{000A}}--> s9\\\\u{{000D}}\\\\l\", style=dashed];\n"
            )),
            "{d}"
        );
    }
}
