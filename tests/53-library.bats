#!/usr/bin/env bats
# The C library through its public header: loading a .qsm from a file, the
# version macros (tests/unit/test_loadfile.c).

load test_helper

@test "qs_scorer_load_file: the same scorer as from memory; errors name the file (IO, format); version macros" {
    local T="$BATS_TEST_TMPDIR"
    qs-convert "$FIX/xgb-tiny/model.json" | qs-compile -o "$T/m.qsm" -
    printf 'not a model at all, but long enough to have a header of sixty-four bytes.....' > "$T/x.qsm"
    mkdir "$T/dir"
    run "$UNIT/test_loadfile" "$T/m.qsm" "$T/x.qsm" "$T/missing.qsm" "$T/dir"
    assert_success
    assert_output "ok"
    # and it can fail: a model that is not the one loaded from memory
    run "$UNIT/test_loadfile" "$T/x.qsm" "$T/x.qsm" "$T/missing.qsm" "$T/dir"
    assert_failure
    assert_output --partial "FAIL"
}
