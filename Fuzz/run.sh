#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets (Fuzz/build.sh) and runs them side by side, each for
# FUZZ_SECONDS (default 60), starting from its seed corpus in Fuzz/Corpus/<target>. New inputs libFuzzer
# finds go to .build-fuzz/corpus/<target> (kept between runs, never committed). Any crash or
# violated property fails the run; its input is saved as .build-fuzz/crashes/<target>-crash-*,
# and becomes a regression test when copied to Fuzz/Regressions/<target>/ (FuzzCorpusTests
# runs every file there).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
bash Fuzz/build.sh 2>&1 | grep -v "Cannot export local symbol" || true
status=0
targets=(RequestHead:request-head ResponseHead:response-head Chunked:chunked HTTP2:http2 HTTP2Head:http2-head)
# All five at once, for FUZZ_SECONDS each: a fuzzer is one thread, so on a machine with fewer
# cores than targets each gets a share of one (on 2 cores, 60 s side by side is 30 s of a core
# each, where one after the other took 3 minutes for 60 s each).
pids=()
for pair in "${targets[@]}"; do
    binary=.build-fuzz/Fuzz${pair%%:*}
    target=${pair##*:}
    [ -x "$binary" ] || { echo "missing $binary (build failed)"; exit 1; }
    corpus=.build-fuzz/corpus/$target
    mkdir -p "$corpus" .build-fuzz/crashes
    # -timeout: one input may take at most 10 s (a hang is a failure too); -rss_limit_mb bounds memory.
    "$binary" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix=".build-fuzz/crashes/$target-" "$corpus" "Fuzz/Corpus/$target" >".build-fuzz/$target.log" 2>&1 &
    pids+=($!)
done
printf '%-14s %12s %10s %8s %s\n' target executions exec/s corpus result
for i in "${!targets[@]}"; do
    target=${targets[$i]##*:}
    log=.build-fuzz/$target.log
    result=ok
    if ! wait "${pids[$i]}"; then
        result=FAILED
        status=1
    fi
    corpus=.build-fuzz/corpus/$target
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    size=$(( $(ls "$corpus" | wc -l) + $(ls "Fuzz/Corpus/$target" | wc -l) ))
    printf '%-14s %12s %10s %8s %s\n' "$target" "${runs:-?}" "${rate:-?}" "$size" "$result"
    if [ "$result" != ok ]; then
        grep -E "Fatal error|ERROR|SUMMARY|artifact" "$log" | head -5
    fi
done
if [ "$status" != 0 ]; then
    echo "a fuzzer failed: the input is in .build-fuzz/crashes/; copy it to Fuzz/Regressions/<target>/ as a regression test"
fi
exit "$status"
