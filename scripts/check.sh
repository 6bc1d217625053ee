#!/bin/sh
# check.sh: run the bats suite and end with one summary line
# ("N passed, N failed, N skipped"); exit non-zero if any test failed.
set -u
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
bats --tap "$@" tests/ | tee "$log"
rc=$?
pass=$(grep -c '^ok .*' "$log" | tr -d ' ')
skip=$(grep -c '^ok .* # skip' "$log" | tr -d ' ')
fail=$(grep -c '^not ok ' "$log" | tr -d ' ')
echo "$((pass - skip)) passed, $fail failed, $skip skipped"
[ "$rc" = 0 ] && [ "$fail" = 0 ]
