#!/usr/bin/env bash
# check-all.sh: every part of the test suite, each run whatever became of the
# ones before, then one summary line per part, run or not, with its time.
# Exits non-zero when a part failed.
#
#   scripts/check-all.sh                     make check: the suite on the plain
#                                            build, then the conformance tests
#                                            with each SIMD level turned off
#   SANITIZE=address,undefined scripts/check-all.sh
#                                            make check SANITIZE=...: the
#                                            sanitizer pass alone
#   scripts/check-all.sh --with-sanitizers   both (scripts/setup.sh test): the
#                                            plain parts, then the sanitizer
#                                            build and its pass, then bin/ back
#                                            on the plain build
#
# The sanitizer pass runs the files in QS_SAN_TESTS (default: SAN_TESTS
# below; QS_SAN_TESTS=all for the whole suite).  MAKE, MAKEFLAGS: as make
# passes them.
set -u -o pipefail
cd "$(dirname "$0")/.."

with_san=0
case "${1:-}" in
--with-sanitizers) with_san=1 ;;
'') ;;
*) echo "usage: scripts/check-all.sh [--with-sanitizers]" >&2; exit 2 ;;
esac
san_flags=address,undefined
make_cmd=${MAKE:-make}

# The sanitizer pass: the files whose code the plain pass cannot judge for
# memory errors, i.e. the error paths and hostile input (every die path, each
# reader's refusals, the bounds, the harness's own sanitizer checks), the
# threads and the options that change what is allocated, and one conformance
# file per reader.  The plain pass runs every file; what is left out here
# (the oracle-heavy conformance files, the blocking search, installation,
# the manual pages, ssh hosts) repeats code paths the listed files already
# take, on more data.  70-python.bats runs there the binding's API and
# bad-input tests and an oracle file per kind of model, its extension built against build-san's library with
# AddressSanitizer preloaded into the interpreter.
SAN_TESTS="tests/05-harness.bats tests/10-pipeline.bats tests/12-backends.bats
tests/14-xgboost-binary.bats tests/15-converters.bats tests/17-onnx.bats tests/18-compile.bats tests/18-zero-threshold.bats
tests/16-catboost-cbm.bats tests/22-linear.bats tests/26-batch.bats tests/27-cuda.bats
tests/23-trees-leaves.bats tests/30-errors.bats tests/35-hostile.bats tests/40-fuzz-corpus.bats
tests/45-eval-groups.bats tests/52-output.bats tests/53-library.bats tests/56-documents.bats
tests/57-progress.bats tests/58-bounds.bats tests/59-transforms.bats tests/60-threads.bats
tests/62-inputs.bats tests/63-info.bats tests/66-faults.bats tests/70-python.bats tests/eval.bats"

# each part's log, removed however this script ends
logs=$(mktemp -d "${TMPDIR:-/tmp}/qs-check-all.XXXXXX") || exit 1
trap 'rm -rf "$logs"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

names=()
states=()
notes=()
failed=0

# part NAME STATE NOTE: record one line of the summary.
part() {
    names+=("$1")
    states+=("$2")
    notes+=("$3")
    [ "$2" != FAILED ] || failed=1
}

# run_part NAME COMMAND...: run it, keep check.sh's last line and the time.
run_part() {
    local name="$1" t0 t1 rc=0 log
    shift
    log="$logs/part.log"
    t0=$(date +%s)
    echo "# ---- $name"
    "$@" 2>&1 | tee "$log" || rc=$?
    t1=$(date +%s)
    local counts why
    counts=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log" | tail -n 1)
    # the reason most of the skipped tests gave (TAP: "ok N name # skip (why)")
    why=$(sed -n 's/^ok [0-9][0-9]* .* # skip *//p' "$log" | sed 's/^(\(.*\))$/\1/' |
        sort | uniq -c | sort -rn | sed -n '1s/^ *[0-9]* //p')
    rm -f "$log"
    local took="$(( (t1 - t0) / 60 ))m$(( (t1 - t0) % 60 ))s"
    if [ "$rc" = 0 ] && [ "${counts%% *}" = 0 ]; then
        # a part that ran no test proved nothing: never "passed"
        part "$name" skipped "no test ran (${why:-no reason given}); ${counts:+$counts, }$took"
    elif [ "$rc" = 0 ]; then
        part "$name" passed "${counts:+$counts, }$took"
    else
        part "$name" FAILED "${counts:+$counts, }exit $rc, $took"
    fi
}

# QS_CHECK_FILES, QS_CHECK_CONFORMANCE: the files of the plain part (default
# tests/) and of the SIMD-off parts (tests/20-conformance.bats), for the
# suite's own test of this summary (tests/05-harness.bats).
plain_parts() {
    # shellcheck disable=SC2086
    run_part "suite, plain build" ./scripts/check.sh -- ${QS_CHECK_FILES:-tests/}
    local cpu off
    cpu=$(bin/qs-score --version -v 2> /dev/null | sed -n 's/^cpu: \([a-z0-9,]*\).*/\1/p')
    for off in avx512 avx2; do
        local name="conformance, QS_DISABLE_CPU_FEATURES=$off"
        case ",$cpu," in
        *",$off,"*)
            run_part "$name" env QS_DISABLE_CPU_FEATURES=$off QS_TEST_LAYOUT_ONLY=1 \
                ./scripts/check.sh -- "${QS_CHECK_CONFORMANCE:-tests/20-conformance.bats}"
            ;;
        *) part "$name" skipped "this CPU lacks $off" ;;
        esac
    done
}

san_files() {
    if [ "${QS_SAN_TESTS:-}" = all ]; then
        echo tests/
    else
        echo ${QS_SAN_TESTS:-$SAN_TESTS}
    fi
}

san_part() {
    # shellcheck disable=SC2046
    run_part "sanitizer pass ($SANITIZE; $(san_files | wc -w) files)" \
        env SANITIZE="$SANITIZE" ./scripts/check.sh -- $(san_files)
}

if [ -n "${SANITIZE:-}" ]; then
    part "suite, plain build" "not run" "this is the sanitizer build (make check runs it)"
    part "conformance, SIMD levels off" "not run" "plain build only (make check)"
    san_part
elif [ "$with_san" = 1 ]; then
    plain_parts
    echo "# ---- building with SANITIZE=$san_flags"
    if $make_cmd -s all SANITIZE=$san_flags; then
        SANITIZE=$san_flags san_part
    else
        part "sanitizer pass ($san_flags)" FAILED "the sanitizer build failed"
    fi
    # leave bin/ on the plain build
    $make_cmd -s bin-links > /dev/null || part "bin/ back on the plain build" FAILED "make failed"
else
    plain_parts
    part "sanitizer pass" "not run" "make check SANITIZE=$san_flags (scripts/setup.sh test runs it)"
fi

echo "# ---- summary"
for i in "${!names[@]}"; do
    printf '%-45s %-8s %s\n' "${names[$i]}" "${states[$i]}" "${notes[$i]}"
done
exit "$failed"
