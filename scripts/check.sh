#!/bin/sh
# check.sh: run the bats suite and end with one summary line
# ("N passed, N failed, N skipped"); exit non-zero if any test failed.
set -u
cd "$(dirname "$0")/.."
if [ -n "${SANITIZE:-}" ]; then
    # A sanitizer report must fail its test: give it an exit code no tool uses.
    export ASAN_OPTIONS="exitcode=86:detect_leaks=1:abort_on_error=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
    echo "# sanitizers: $SANITIZE"
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
[ $# -gt 0 ] || set -- tests/
bats --tap "$@" | tee "$log"
rc=$?
pass=$(grep -c '^ok .*' "$log" | tr -d ' ')
skip=$(grep -c '^ok .* # skip' "$log" | tr -d ' ')
fail=$(grep -c '^not ok ' "$log" | tr -d ' ')
echo "$((pass - skip)) passed, $fail failed, $skip skipped"
[ "$rc" = 0 ] && [ "$fail" = 0 ]
