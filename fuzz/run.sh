#!/bin/sh
# run.sh: runs one libFuzzer target (make fuzz-NAME) for FUZZ_SECONDS on a scratch copy of its seed corpus, prints executions and coverage, and fails with the crash artifact's path on a finding.
# Usage: fuzz/run.sh NAME BINARY   (env: FUZZ_SECONDS, FUZZ_WORK, FUZZ_FLAGS)
set -u
name=$1
bin=$2
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/fuzz/maxlen.sh"
secs=${FUZZ_SECONDS:-60}
work=${FUZZ_WORK:-/tmp/qs-fuzz}/$name
# New inputs and crashes go to the scratch directory, never into the repo;
# the copy is kept between runs so a later run starts where this one ended.
mkdir -p "$work/corpus" "$work/artifacts"
cp "$root/fuzz/corpus/$name/"* "$work/corpus/" 2>/dev/null || true
dict=
[ -f "$root/fuzz/dict/$name.dict" ] && dict="-dict=$root/fuzz/dict/$name.dict"
maxlen=$(fuzz_maxlen "$name")
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
# shellcheck disable=SC2086 # dict, maxlen and FUZZ_FLAGS are lists of flags
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" $dict $maxlen ${FUZZ_FLAGS:-} "$work/corpus" \
    > "$work/log" 2>&1
rc=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
last=$(grep -E '^#[0-9]+' "$work/log" | tail -n 1)
cov=$(printf '%s\n' "$last" | grep -o 'cov: [0-9]*' | cut -d' ' -f2)
ft=$(printf '%s\n' "$last" | grep -o 'ft: [0-9]*' | cut -d' ' -f2)
corp=$(printf '%s\n' "$last" | grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' | cut -d' ' -f2)
echo "fuzz-$name: ${execs:-?} executions in ${secs}s, coverage ${cov:-?} edges, ${ft:-?} features, corpus ${corp:-?} (log: $work/log)"
if [ "$rc" != 0 ]; then
    echo "fuzz-$name: FINDING (libFuzzer exit $rc); input(s) in $work/artifacts/:" >&2
    ls -l "$work/artifacts/" >&2
    grep -E -m 40 'ERROR|SUMMARY|invariant|runtime error|#[0-9]+ 0x' "$work/log" >&2
    exit 1
fi
