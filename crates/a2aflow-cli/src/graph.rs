//! Rendering a workflow's DAG as Mermaid (for Markdown) or Graphviz DOT (for `dot`).

use a2aflow::model::{StepType, Workflow};
use std::fmt::Write as _;

/// Output format of `a2aflow graph`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GraphFormat {
    /// A Mermaid flowchart, ready to paste into a Markdown file.
    Mermaid,
    /// Graphviz DOT, ready to pipe into `dot -Tsvg`.
    Dot,
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

fn mermaid_escape(s: &str) -> String {
    s.replace('"', "#quot;")
        .replace('<', "#lt;")
        .replace('>', "#gt;")
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

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
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
                            condition: String::new(),
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
}
