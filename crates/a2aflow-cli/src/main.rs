//! # a2aflow — the command line
//!
//! **What it is.** The `a2aflow` binary: `validate`, `graph`, `card`, `send`, `run` and `demo`.
//!
//! **What it owns.** Argument parsing, progress output and exit codes; everything else comes from
//! the `a2aflow` facade. Nothing depends on it.

fn main() {
    println!(
        "a2aflow demo: not built yet. It will start embedded A2A agents on loopback, run a \
         cross-city incident-diagnosis workflow across them (fan-out, Negotiation-T, join, \
         conditional route, SELF_LOOP summary) and print the result and the graph."
    );
}
