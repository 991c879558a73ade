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
