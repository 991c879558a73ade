//! `a2aflow demo`: the cross-city incident-diagnosis workflow against embedded agents.

/// The demo workflow document.
pub const WORKFLOW: &str = include_str!("../demo/incident.workflow.json");

/// Runs the demo; returns the exit code.
pub fn run() -> u8 {
    println!(
        "a2aflow demo: the engine client is not wired into the CLI yet. When it is, this command \
         starts embedded A2A agents on loopback and runs the workflow below across them \
         (fan-out, Negotiation-T, join, conditional route, SELF_LOOP summary).\n"
    );
    match a2aflow::model::load_workflow_str(WORKFLOW, a2aflow::model::LoadOptions::STRICT) {
        Ok(loaded) => {
            print!(
                "{}",
                crate::graph::render(&loaded.workflow, crate::graph::GraphFormat::Mermaid)
            );
            0
        }
        Err(e) => {
            eprintln!("a2aflow: the demo workflow does not load: {e}");
            1
        }
    }
}
