#!/usr/bin/env bats
# Tests of the test harness itself: the score comparison sees NaN, the sign
# of zero and one ulp; a sanitizer report has its own exit code; and
# scripts/check.sh fails when bats fails or when tests go missing.
# (tests/mutate.sh goes further: it breaks a copy of the code on purpose and
# checks that the suite fails.)

load test_helper
bats_require_minimum_version 1.5.0

setup() { T="$BATS_TEST_TMPDIR"; }

@test "cmpscores: NaN equals only NaN, -0 is not 0, one ulp is a difference, spelling is not" {
    cmpv() { # cmpv GOT WANT [--float]: compare two one-line files
        printf '%s\n' "$1" > "$T/g"
        printf '%s\n' "$2" > "$T/w"
        run "$UNIT/cmpscores" ${3:-} "$T/g" "$T/w"
    }
    cmpv nan 0.5;                        assert_failure 1
    cmpv 0.5 nan;                        assert_failure 1
    cmpv nan nan;                        assert_success
    cmpv -nan nan;                       assert_success
    cmpv -0 0;                           assert_failure 1
    assert_output --partial "line 1 col 1: got '-0' want '0'"
    cmpv 0 -0;                           assert_failure 1
    cmpv 0.10000000000000002 0.1;        assert_failure 1
    cmpv 0.1 0.10000000000000001;        assert_success
    cmpv 5e-1 0.5;                       assert_success
    cmpv inf -inf;                       assert_failure 1
    cmpv 1x 1x;                          assert_failure 1
    cmpv "$(printf '1\t2')" "1 2";       assert_success
    cmpv "$(printf '1\t2')" "1";         assert_failure 1
    cmpv 1.01585567 1.0158557;           assert_failure 1
    cmpv 1.01585567 1.0158557 --float;   assert_success
    cmpv 1.01585567 1.01585579 --float; assert_failure 1
    printf '1\n2\n' > "$T/g"
    printf '1\n' > "$T/w"
    run "$UNIT/cmpscores" "$T/g" "$T/w"
    assert_failure 1
    assert_output --partial "line counts differ: got 2, want 1"
    run "$UNIT/cmpscores" "$T/g"
    assert_failure 2
}

@test "compare_scores: fails on nan, -0 and one ulp, and on a respelled value; compare_values only on values" {
    local want="$FIX/lgb-l8/expected.txt"
    run compare_scores "$want" "$want"
    assert_success
    sed '7s/.*/nan/' "$want" > "$T/nan"
    run compare_scores "$T/nan" "$want"
    assert_failure
    assert_output --partial "line 7 col 1: got 'nan'"
    printf '0\n' > "$T/z"
    printf -- '-0\n' > "$T/mz"
    run compare_scores "$T/mz" "$T/z"
    assert_failure
    # 0.36370218666844439 is the first score; the next double up:
    sed '1s/.*/0.36370218666844445/' "$want" > "$T/ulp"
    run compare_scores "$T/ulp" "$want"
    assert_failure
    sed '1s/.*/3.6370218666844439e-1/' "$want" > "$T/spelled"
    run compare_scores "$T/spelled" "$want"
    assert_failure
    assert_output --partial "only the formatting differs"
    run compare_scores <(head -3 "$want") "$want"
    assert_failure
    # compare_values, for oracles written with other formatting: values.
    run compare_values "$T/spelled" "$want"
    assert_success
    run compare_values "$T/mz" "$T/z"
    assert_failure
    run compare_values "$T/nan" "$want"
    assert_failure
    printf '1.0158557\n' > "$T/f9"
    run compare_values --float <(printf '1.01585567\n') "$T/f9"
    assert_success
}

@test "sanitizer builds: a UBSan report exits 87, an ASan or LeakSanitizer report 86 (scripts/check.sh's codes)" {
    case "${SANITIZE:-}" in
        *undefined* | *address*) ;;
        *) skip "not a sanitizer build (scripts/check.sh sets SANITIZE for make check SANITIZE=...)" ;;
    esac
    case "$(readlink -f "$UNIT")" in
        */build-san/*) ;;
        *) echo "SANITIZE=$SANITIZE but $UNIT is not the sanitizer build"; return 1 ;;
    esac
    if [[ "$SANITIZE" == *undefined* ]]; then
        run "$UNIT/sanitizer_trip" ub
        assert_failure 87
        assert_output --partial "runtime error"
    fi
    if [[ "$SANITIZE" == *address* ]]; then
        run "$UNIT/sanitizer_trip" heap
        assert_failure 86
        assert_output --partial "heap-buffer-overflow"
        # A block a local variable still points at when the program exits:
        # a leak every time (scripts/check.sh has LeakSanitizer skip stacks
        # and registers), not only when the stack happens to have lost it.
        [[ ":$LSAN_OPTIONS:" == *:use_stacks=0:* ]] || { echo "LSAN_OPTIONS=$LSAN_OPTIONS"; return 1; }
        local i
        for i in 1 2 3; do
            run "$UNIT/sanitizer_trip" leak
            assert_failure 86
            assert_output --partial "ERROR: LeakSanitizer: detected memory leaks"
        done
    fi
}

# fake_bats COUNT STATUS TAP-LINES...: a stand-in for bats in $T/fake that
# answers --count with COUNT, prints the TAP lines and exits with STATUS.
fake_bats() {
    local count="$1" status="$2"; shift 2
    mkdir -p "$T/fake"
    {
        echo '#!/bin/sh'
        echo "if [ \"\$1\" = --count ]; then echo $count; exit 0; fi"
        printf "printf '%%s\\\\n' "
        printf "'%s' " "$@"
        echo
        echo "exit $status"
    } > "$T/fake/bats"
    chmod +x "$T/fake/bats"
}

@test "scripts/check.sh: fails when bats fails, when a test fails and when fewer tests ran than the suite holds" {
    fake_bats 2 0 "1..2" "ok 1 a" "ok 2 b # skip why"
    PATH="$T/fake:$PATH" run "$QS_ROOT/scripts/check.sh"
    assert_success
    assert_line "1 passed, 0 failed, 1 skipped"
    fake_bats 2 1 "1..2" "ok 1 a" "ok 2 b"
    PATH="$T/fake:$PATH" run "$QS_ROOT/scripts/check.sh"
    assert_failure
    assert_output --partial "bats exited with status 1"
    fake_bats 2 1 "1..2" "ok 1 a" "not ok 2 b"
    PATH="$T/fake:$PATH" run "$QS_ROOT/scripts/check.sh"
    assert_failure
    assert_line "1 passed, 1 failed, 0 skipped"
    fake_bats 3 0 "1..3" "ok 1 a"
    PATH="$T/fake:$PATH" run "$QS_ROOT/scripts/check.sh"
    assert_failure
    assert_output --partial "only 1 of the suite's 3 tests ran"
    # The sanitizer options it exports.
    printf '#!/bin/sh\nif [ "$1" = --count ]; then echo 1; exit 0; fi\necho 1..1; echo "ok 1 $ASAN_OPTIONS $LSAN_OPTIONS $UBSAN_OPTIONS"\n' > "$T/fake/bats"
    SANITIZE=undefined PATH="$T/fake:$PATH" run "$QS_ROOT/scripts/check.sh"
    assert_success
    assert_output --regexp "ok 1 exitcode=86:detect_leaks=1:.* use_stacks=0:use_registers=0.* exitcode=87:"
}

@test "scripts/check.sh: the tests' temporary files in a folder of its own; what a test leaves there fails the run, named, and is removed" {
    local t="$BATS_TEST_TMPDIR"
    printf '@test "tidy" { f=$(mktemp); rm "$f"; }\n' > "$t/tidy.bats"
    printf '@test "untidy" { mktemp -d "$TMPDIR/left-behind.XXXXXX"; }\n' > "$t/untidy.bats"
    mkdir "$t/tmp"
    TMPDIR="$t/tmp" run "$QS_ROOT/scripts/check.sh" -- "$t/tidy.bats"
    assert_success
    assert_line "1 passed, 0 failed, 0 skipped"
    TMPDIR="$t/tmp" run "$QS_ROOT/scripts/check.sh" -- "$t/untidy.bats"
    assert_failure
    assert_line "1 passed, 0 failed, 0 skipped"
    assert_line --regexp "^check.sh: the tests left these in TMPDIR \(removed now\): left-behind\.[A-Za-z0-9]{6}$"
    # nothing of either run left in TMPDIR
    run ls -A "$t/tmp"
    assert_output ""
}

@test "check-all.sh and check.sh stopped by a signal mid-run: nothing of theirs left in TMPDIR" {
    local t="$BATS_TEST_TMPDIR" pid n=0
    mkdir "$t/tmp"
    printf '@test "slow" { sleep 60; }\n' > "$t/slow.bats"
    TMPDIR="$t/tmp" QS_CHECK_FILES="$t/slow.bats" QS_TEST_JOBS=1 \
        setsid env -u SANITIZE "$QS_ROOT/scripts/check-all.sh" > "$t/out" 2>&1 3>&- &
    pid=$!
    # until the test runs: check.sh's folder holds bats's
    until compgen -G "$t/tmp/qs-check.*/bats-run-*/test/1" > /dev/null; do
        n=$((n + 1))
        [ "$n" -lt 300 ] || { kill -KILL -- "-$pid"; cat "$t/out"; return 1; }
        sleep 0.1
    done
    kill -TERM -- "-$pid"
    wait "$pid" || true
    run ls -A "$t/tmp"
    assert_output ""
}

@test "check-all.sh: a part that ran no test is 'skipped' with the reason, never 'passed'" {
    local t="$BATS_TEST_TMPDIR"
    printf '@test "a" { skip "no data here"; }\n@test "b" { skip "no data here"; }\n' > "$t/skips.bats"
    printf '@test "c" { true; }\n@test "d" { skip "not this one"; }\n' > "$t/runs.bats"
    run env -u SANITIZE QS_CHECK_FILES="$t/skips.bats" QS_CHECK_CONFORMANCE="$t/runs.bats" \
        "$QS_ROOT/scripts/check-all.sh"
    assert_success
    assert_line --regexp '^suite, plain build +skipped +no test ran \(no data here\); 0 passed, 0 failed, 2 skipped, '
    refute_line --regexp '^suite, plain build +passed'
    # a part with a test that ran (where this CPU has the level) passes
    if "$QS_ROOT/bin/qs-score" --version -v | grep -q '^cpu: .*avx2'; then
        assert_line --regexp '^conformance, QS_DISABLE_CPU_FEATURES=avx2 +passed +1 passed, 0 failed, 1 skipped, '
    fi
}
