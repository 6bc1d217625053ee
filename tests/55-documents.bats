#!/usr/bin/env bats
# Documents as qs-score reads them: feature ids beyond the model, long number
# tokens, zstd-compressed input; what qs-score and qs-convert say about a
# file of the wrong kind.

load test_helper

setup() {
    T="$BATS_TEST_TMPDIR"
    D="$FIX/xgb-tiny/docs.letor"
    qs-convert "$FIX/xgb-tiny/model.json" > "$T/m.txt"
    qs-compile -o "$T/m.qsm" "$T/m.txt"
}

@test "feature ids beyond the model: one warning naming the first line; --strict-features refuses" {
    # Lines 2 and 4 carry ids the 47-feature model does not have (47 is the
    # first id beyond it; ids are literal, 0-based).
    printf '1 qid:1 3:1 40:0.5\n0 qid:1 3:1 40:0.5 47:2 900:1\n\n2 qid:2 46:1 1:2\n0 qid:2 48:1 46:1 1:2\n' > "$T/x.letor"
    printf '1 qid:1 3:1 40:0.5\n0 qid:1 3:1 40:0.5\n\n2 qid:2 46:1 1:2\n0 qid:2 46:1 1:2\n' > "$T/y.letor"
    run bash -c "qs-score -o '$T/out' '$T/m.qsm' '$T/x.letor' 2> '$T/err'"
    assert_success
    run cat "$T/err"
    assert_output "qs-score: $T/x.letor:2: feature id 900 is beyond the model's 47 features (ids 0..46): ignored, here and on any later line (--strict-features refuses it)"
    # The extra ids change nothing.
    qs-score "$T/m.qsm" "$T/y.letor" > "$T/want"
    cmp "$T/out" "$T/want"
    # Within the model's ids: no warning.
    run bash -c "qs-score '$T/m.qsm' '$T/y.letor' 2>&1 >/dev/null"
    assert_success
    assert_output ""
    run qs-score --strict-features -o "$T/out2" "$T/m.qsm" "$T/x.letor"
    assert_failure 1
    assert_output "qs-score: $T/x.letor:2: feature id 900 is beyond the model's 47 features (ids 0..46; --strict-features)"
    [ ! -e "$T/out2" ]
    run bash -c "ls '$T' | grep tmp || true"
    assert_output ""
    run qs-score --strict-features "$T/m.qsm" "$T/y.letor"
    assert_success
}
