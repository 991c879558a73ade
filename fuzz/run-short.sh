#!/usr/bin/env bash
# Runs every fuzz target for a short, bounded time (CI smoke fuzzing). Needs cargo-fuzz
# (`cargo install cargo-fuzz --locked`); the stable toolchain works with RUSTC_BOOTSTRAP=1.
#
# Usage: fuzz/run-short.sh [seconds-per-target]   (default 20)
# Environment: FUZZ_SANITIZER=none|address (default address), FUZZ_TARGETS="a b" to pick targets,
# FUZZ_PROFILE=release|dev (default release; CI uses dev: an unoptimised build compiles in a
# fraction of the time, and a short smoke run needs coverage feedback, not speed).
# Exit status is non-zero as soon as one target finds a crash; its input is kept under
# fuzz/artifacts/<target>/.
set -euo pipefail

secs="${1:-20}"
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
sanitizer="${FUZZ_SANITIZER:-address}"
profile="--${FUZZ_PROFILE:-release}"
targets="${FUZZ_TARGETS:-sse_parser error_envelope workflow_loader negotiation_context delegation_record stream_event inbound_request}"
export RUSTC_BOOTSTRAP=1

cargo fuzz build "$profile" -a -s "$sanitizer"
for t in $targets; do
    # A scratch corpus seeded from the committed seeds, so CI never writes into fuzz/seeds.
    corpus="corpus/$t"
    mkdir -p "$corpus"
    echo "== $t: ${secs}s"
    cargo fuzz run "$profile" -a -s "$sanitizer" "$t" "$corpus" "seeds/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -timeout=5 -jobs=1 -workers=1 -print_final_stats=1
done
echo "all fuzz targets ran ${secs}s each without a crash"
