#!/usr/bin/env bats
# qs-compile: layouts (--delta, --tree-block), tree reversal
# (--reverse-sample, --reverse-all), a deterministic output written whole.

load test_helper
bats_require_minimum_version 1.5.0

@test "--reverse-sample: -v reports the trees reversed, scores stay bit for bit; --reverse-all excludes it (exit 2)" {
    local T="$BATS_TEST_TMPDIR" docs="$FIX/lgb-l8/docs.letor" n r args
    qs-convert "$FIX/lgb-l8/model.txt.zst" > "$T/m.txt"
    n=$(grep -c '^tree ' "$T/m.txt")
    qs-compile -o "$T/plain.qsm" "$T/m.txt"
    run --separate-stderr qs-compile -v --reverse-sample "$docs" -o "$T/r.qsm" "$T/m.txt"
    assert_success
    [ -z "$output" ]
    # "reversed R of T trees (sample of D documents)", in the words of this build.
    [[ "$stderr" =~ ([0-9]+)\ of\ $n\ trees\ \(sample\ of\ 120\ documents ]] ||
        { echo "unexpected -v line: $stderr"; return 1; }
    r=${BASH_REMATCH[1]}
    [ "$r" -gt 0 ] && [ "$r" -lt "$n" ] || { echo "reversed $r of $n"; return 1; }
    run cmp -s "$T/plain.qsm" "$T/r.qsm"
    assert_failure
    score_all "$T/r.qsm" "$docs" "$FIX/lgb-l8/expected.txt"
    layout_backends "$T/r.qsm" "$docs" "$FIX/lgb-l8/expected.txt" --doc-block 3
    # The sample from standard input, and without -v: same file, no message.
    run --separate-stderr qs-compile --reverse-sample - -o "$T/r2.qsm" "$T/m.txt" < "$docs"
    assert_success
    [ -z "$stderr" ]
    cmp "$T/r.qsm" "$T/r2.qsm"
    for args in "--reverse-sample $docs --reverse-all" "--reverse-all --reverse-sample $docs"; do
        # shellcheck disable=SC2086
        run qs-compile $args -o "$T/x.qsm" "$T/m.txt"
        assert_failure 2
        assert_output --partial "exclude each other"
        [ ! -e "$T/x.qsm" ]
    done
}

@test "qs-compile output is deterministic and -o writes only the final file" {
    qs-convert "$FIX/lgb-l8/model.txt.zst" > "$BATS_TEST_TMPDIR/m.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/a.qsm" "$BATS_TEST_TMPDIR/m.txt"
    qs-compile "$BATS_TEST_TMPDIR/m.txt" > "$BATS_TEST_TMPDIR/b.qsm"
    cmp "$BATS_TEST_TMPDIR/a.qsm" "$BATS_TEST_TMPDIR/b.qsm"
    run ls "$BATS_TEST_TMPDIR"
    refute_output --partial ".tmp"
}

@test "--delta and --tree-block change the layout, not the scores" {
    qs-convert "$FIX/lgb-l8/model.txt.zst" > "$BATS_TEST_TMPDIR/m.txt"
    for opt in "--delta 1" "--delta 64" "--tree-block 1" "--tree-block 7 --delta 3"; do
        qs-compile $opt -o "$BATS_TEST_TMPDIR/m.qsm" "$BATS_TEST_TMPDIR/m.txt"
        qs-score "$BATS_TEST_TMPDIR/m.qsm" < "$FIX/lgb-l8/docs.letor" > "$BATS_TEST_TMPDIR/got"
        compare_scores "$BATS_TEST_TMPDIR/got" "$FIX/lgb-l8/expected.txt"
    done
}
