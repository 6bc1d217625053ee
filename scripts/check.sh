#!/usr/bin/env bash
# check.sh: run the bats suite and end with one summary line
# ("N passed, N failed, N skipped").  Exits non-zero if a test failed, if
# bats itself failed, if fewer tests ran than the suite holds (bats --count),
# or if the tests left something in their TMPDIR (a folder of this run's own).
#
#   scripts/check.sh [BATS-OPTION...] [-- FILE-OR-DIR...]     (default: tests/)
#
# With SANITIZE set (make check SANITIZE=...), a sanitizer report must fail
# its test: ASan exits 86 and UBSan 87, codes no tool uses
# (tests/05-harness.bats checks both with a deliberately broken program).
set -u -o pipefail
cd "$(dirname "$0")/.."
#
# LeakSanitizer runs at every exit.  It is told not to scan stacks and
# registers (use_stacks=0, use_registers=0): a block still held when a
# program exits then counts as a leak whatever the stack happens to hold at
# that moment (with them scanned, a tool dying with a block in a local
# variable passes or fails by luck).  The tools free what they hold on every
# exit (tool_hold in tools/common/tool.h).  Before the tests, a program that
# exits holding a block (tests/unit/sanitizer_trip.c) must be caught, or the
# pass stops: LeakSanitizer is then not working here (under ptrace, say).
if [ -n "${SANITIZE:-}" ]; then
    export ASAN_OPTIONS="exitcode=86:detect_leaks=1:abort_on_error=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    export LSAN_OPTIONS="use_stacks=0:use_registers=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
    export UBSAN_OPTIONS="exitcode=87:print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
    echo "# sanitizers: $SANITIZE"
    case ",$SANITIZE," in
    *,address,*)
        trip=bin/unit/sanitizer_trip
        lrc=0
        lout=$("$trip" leak 2>&1) || lrc=$?
        if [ "$lrc" = 86 ] && printf '%s\n' "$lout" | grep -q 'ERROR: LeakSanitizer: detected memory leaks'; then
            echo "# LeakSanitizer: active (a block held at exit is a leak: $trip leak exits 86)"
        else
            echo "check.sh: LeakSanitizer is not active: '$trip leak' exited $lrc:" >&2
            printf '%s\n' "$lout" | tail -n 5 >&2
            exit 1
        fi
        ;;
    esac
fi
export SANITIZE="${SANITIZE:-}"

opts=()
targets=()
while [ $# -gt 0 ]; do
    if [ "$1" = -- ]; then
        shift
        targets=("$@")
        break
    fi
    opts+=("$1")
    shift
done
[ ${#targets[@]} -gt 0 ] || targets=(tests/)

# The slowest files first, so that the last file to start is a short one
# and the CPUs finish together (measured with the plain build; the rest
# follow in name order).  A folder stands for its .bats files.
slow_first=(tests/65-blocktune.bats tests/24-simd-blocks.bats tests/20-conformance.bats tests/70-python.bats
    tests/26-batch.bats tests/27-cuda.bats tests/50-install.bats tests/52-output.bats tests/60-threads.bats tests/eval.bats
    tests/16-catboost.bats tests/50-claims.bats tests/62-inputs.bats tests/10-pipeline.bats
    tests/12-backends.bats)
files=()
for t in "${targets[@]}"; do
    if [ -d "$t" ]; then
        files+=("${t%/}"/*.bats)
    else
        files+=("$t")
    fi
done
targets=()
for f in "${slow_first[@]}"; do
    for g in "${files[@]}"; do
        [ "$g" != "$f" ] || targets+=("$g")
    done
done
for g in "${files[@]}"; do
    case " ${slow_first[*]} " in *" $g "*) ;; *) targets+=("$g") ;; esac
done

# Test files run side by side, one per CPU (QS_TEST_JOBS=N to choose, 1 for
# one at a time); the tests inside a file keep their order, since some share
# the models the file compiles once.  bats needs GNU parallel for this.
jobs=${QS_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in '' | *[!0-9]*) echo "check.sh: QS_TEST_JOBS must be a number" >&2; exit 2 ;; esac
if [ "$jobs" -gt 1 ] && command -v parallel >/dev/null; then
    opts+=(--jobs "$jobs" --no-parallelize-within-files)
fi

if ! expected=$(bats --count "${opts[@]}" "${targets[@]}") || [ -z "$expected" ]; then
    echo "check.sh: bats --count failed" >&2
    exit 1
fi

# The tests' temporary files go to a folder of this run's own (TMPDIR):
# bats's, and whatever else a test or a program it runs puts there.  What is
# left in it when bats is done is a test that does not clean up after
# itself: named, removed, and the run fails.
log=$(mktemp)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/qs-check.XXXXXX")
trap 'rm -f "$log"; rm -rf "$tmp"' EXIT
# a signal (^C, or TERM to the process group) ends the run once bats has
# stopped, so that nothing of bats's is written after the folder is gone
trap 'exit 130' INT
trap 'exit 143' TERM
TMPDIR="$tmp" bats --tap "${opts[@]}" "${targets[@]}" | tee "$log"
rc=${PIPESTATUS[0]}
left=$(cd "$tmp" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | sort | tr '\n' ' ')
ran=$(grep -cE '^(not )?ok ' "$log")
pass=$(grep -c '^ok ' "$log")
skip=$(grep -c '^ok .* # skip' "$log")
fail=$(grep -c '^not ok ' "$log")
echo "$((pass - skip)) passed, $fail failed, $skip skipped"
status=0
if [ "$rc" != 0 ]; then
    echo "check.sh: bats exited with status $rc" >&2
    status=1
fi
if [ "$fail" != 0 ]; then
    status=1
fi
if [ -n "$left" ]; then
    echo "check.sh: the tests left these in TMPDIR (removed now): ${left% }" >&2
    status=1
fi
if [ "$ran" -lt "$expected" ]; then
    echo "check.sh: only $ran of the suite's $expected tests ran" >&2
    status=1
fi
exit "$status"
