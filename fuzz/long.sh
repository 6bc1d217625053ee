#!/bin/bash
# long.sh: the long campaign (make fuzz-long): every target in turn, one
# process each, FUZZ_LONG_JOBS (1) targets at a time (in the order given:
# name the slow ones first), each until FUZZ_LONG_RUNS executions or FUZZ_LONG_SECONDS,
# whichever comes first, on a scratch copy of its corpus; then a summary table
# (target, executions, seconds, executions a second, coverage, features,
# corpus, findings: crashes, leaks, sanitizer reports and out-of-memory
# inputs, then timeouts (an input over FUZZ_LONG_TIMEOUT seconds, 25: on a
# loaded machine a niced process can take that long on an ordinary input,
# so each is replayed before it is called a finding), whether the execution
# goal was reached), printed and written to $FUZZ_WORK/summary.txt.  Slow
# units (libFuzzer's slow-unit-*) are not findings.  libFuzzer stops a
# target at its first finding.  Exit 1 when any target had one.
# ASan runs with malloc_context_size=0 and an 8 MB quarantine (unless
# ASAN_OPTIONS says otherwise): a quarter of the time of a model target went
# to recording every allocation's stack; a finding's input replays with the
# full report through bin/fuzz/replay_<target> or the sanitizer build.
# Usage: fuzz/long.sh BUILD_DIR TARGET...
#   env: FUZZ_LONG_RUNS (10000000), FUZZ_LONG_SECONDS (600),
#        FUZZ_LONG_TIMEOUT (25), FUZZ_LONG_JOBS (1), FUZZ_WORK,
#        FUZZ_NICE (19: the campaign runs niced), FUZZ_FLAGS
set -u
build=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/fuzz/maxlen.sh"
runs=${FUZZ_LONG_RUNS:-10000000}
secs=${FUZZ_LONG_SECONDS:-600}
nicev=${FUZZ_NICE:-19}
base=${FUZZ_WORK:-/tmp/qs-fuzz}
mkdir -p "$base"
summary="$base/summary.txt"
rows=
bad=0
total_start=$(date +%s)
one() {
    local name=$1
    bin="$build/bin/fuzz_$name"
    work="$base/$name"
    mkdir -p "$work/corpus" "$work/artifacts"
    cp "$root/fuzz/corpus/$name/"* "$work/corpus/" 2>/dev/null || true
    count() { find "$work/artifacts" -type f \( -name "$@" \) | wc -l; }
    before=$(count 'crash-*' -o -name 'leak-*' -o -name 'oom-*')
    tbefore=$(count 'timeout-*')
    dict=
    [ -f "$root/fuzz/dict/$name.dict" ] && dict="-dict=$root/fuzz/dict/$name.dict"
    maxlen=$(fuzz_maxlen "$name")
    start=$(date +%s)
    # -fork is not used: one process, one core.  A finding stops the target
    # (its input is in artifacts/); the others still run.
    # shellcheck disable=SC2086
    ASAN_OPTIONS="${ASAN_OPTIONS:-malloc_context_size=0:quarantine_size_mb=8}" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
        nice -n "$nicev" "$bin" -runs="$runs" -max_total_time="$secs" -timeout="${FUZZ_LONG_TIMEOUT:-25}" \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
        $dict $maxlen ${FUZZ_FLAGS:-} "$work/corpus" > "$work/long.log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/long.log" | tail -n 1)
    last=$(grep -E '^#[0-9]+' "$work/long.log" | tail -n 1)
    cov=$(printf '%s\n' "$last" | grep -o 'cov: [0-9]*' | cut -d' ' -f2)
    ft=$(printf '%s\n' "$last" | grep -o 'ft: [0-9]*' | cut -d' ' -f2)
    corp=$(printf '%s\n' "$last" | grep -o 'corp: [0-9]*' | cut -d' ' -f2)
    found=$(($(count 'crash-*' -o -name 'leak-*' -o -name 'oom-*') - before))
    slow=$(($(count 'timeout-*') - tbefore))
    [ "$rc" != 0 ] && [ "$found" = 0 ] && [ "$slow" = 0 ] && found="exit $rc"
    found="$found+${slow}t"
    rate=$(( ${execs:-0} / (took > 0 ? took : 1) ))
    goal=no
    [ "${execs:-0}" -ge "$runs" ] && goal=yes
    printf '%-10s %12s %7s %9s %7s %8s %7s %9s %5s\n' "$name" "${execs:-?}" "${took}s" \
        "$rate" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$found" "$goal" > "$work/row.txt"
    echo "fuzz-long: $name: ${execs:-?} executions in ${took}s, coverage ${cov:-?}, findings $found" >&2
}
njobs=${FUZZ_LONG_JOBS:-1}
for name in "$@"; do
    rm -f "$base/$name/row.txt"
    while [ "$(jobs -rp | wc -l)" -ge "$njobs" ]; do
        wait -n
    done
    one "$name" &
done
wait
for name in "$@"; do
    if [ -f "$base/$name/row.txt" ]; then
        rows="$rows$(cat "$base/$name/row.txt")
"
        grep -q ' 0+0t ' "$base/$name/row.txt" || bad=1
    else
        rows="$rows$(printf '%-10s (no result)' "$name")
"
        bad=1
    fi
done
{
    echo "# fuzz-long: goal $runs executions or ${secs}s per target, nice $nicev, one process a target, $njobs at a time"
    echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(( $(date +%s) - total_start ))s in all"
    echo "# findings: crashes, leaks, reports, out of memory + timeouts (t)"
    printf '%-10s %12s %7s %9s %7s %8s %7s %9s %5s\n' target executions time exec/s cov features corpus findings goal
    printf '%s' "$rows"
} > "$summary"
cat "$summary"
echo "fuzz-long: table in $summary; new inputs in $base/<target>/corpus, findings in $base/<target>/artifacts"
exit $bad
