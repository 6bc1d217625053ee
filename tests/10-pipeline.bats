#!/usr/bin/env bats
# The pipeline on the bundled fixtures (no shared data needed):
# qs-convert | qs-compile | qs-score on every back end and a second layout,
# the output's number formats, how documents are read, and the unit tests of
# the semantics and CRC-32C.  (tests/README.md: where the other features'
# tests live.)

load test_helper
bats_require_minimum_version 1.5.0

@test "lightgbm fixture (zstd model) scores bit for bit on every back end" {
    pipeline lgb-l8 model.txt.zst expected.txt
}

@test "lightgbm multiclass fixture: one tab-separated column per class" {
    pipeline lgb-multiclass model.txt.zst expected.txt
    run awk -F'\t' 'NF != 5' "$BATS_TEST_TMPDIR/out"
    assert_output ""
}

@test "quickrank oblivious fixture is laid out for QS-Omega and scores exactly" {
    OBLIVIOUS=yes pipeline qr-oblivious model.xml.zst expected.txt
}

@test "xgboost fixtures: absent = missing by default, --absent zero gives the dense oracle" {
    pipeline xgb-tiny model.json expected.txt
    pipeline xgb-agaricus model.json.zst expected.txt
    pipeline xgb-agaricus model.json.zst expected.dense.txt --absent zero
}

@test "float32 models print 9 significant digits, double models 17" {
    pipeline xgb-tiny model.json expected.txt
    run head -1 "$BATS_TEST_TMPDIR/out"
    assert_output "1.01585567"
    pipeline lgb-l8 model.txt.zst expected.txt
    run head -1 "$BATS_TEST_TMPDIR/out"
    assert_output "0.36370218666844439"
}

@test "--transform applies XGBoost's sigmoid (binary:logistic)" {
    pipeline xgb-agaricus model.json.zst expected.prob.txt --transform
}

@test "qs-score reads DOCS from a file argument, stdin, CRLF and no final newline alike" {
    set -o pipefail
    qs-convert "$FIX/xgb-tiny/model.json" | qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" -
    head -5 "$FIX/xgb-tiny/docs.letor" > "$BATS_TEST_TMPDIR/d"
    qs-score "$BATS_TEST_TMPDIR/m.qsm" "$BATS_TEST_TMPDIR/d" > "$BATS_TEST_TMPDIR/a"
    sed 's/$/\r/' "$BATS_TEST_TMPDIR/d" | head -c -2 | qs-score "$BATS_TEST_TMPDIR/m.qsm" > "$BATS_TEST_TMPDIR/b"
    cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
    compare_scores "$BATS_TEST_TMPDIR/a" <(head -5 "$FIX/xgb-tiny/expected.txt")
}

@test "ids in any order, comments and blank lines: same scores" {
    set -o pipefail
    qs-convert "$FIX/lgb-l8/model.txt.zst" | qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" -
    head -20 "$FIX/lgb-l8/docs.letor" > "$BATS_TEST_TMPDIR/d"
    awk '{ printf "%s %s", $1, $2; for (i = NF; i > 2; i--) printf " %s", $i; print " # reversed"; print "" }' \
        "$BATS_TEST_TMPDIR/d" > "$BATS_TEST_TMPDIR/r"
    qs-score "$BATS_TEST_TMPDIR/m.qsm" < "$BATS_TEST_TMPDIR/r" > "$BATS_TEST_TMPDIR/got"
    compare_scores "$BATS_TEST_TMPDIR/got" <(head -20 "$FIX/lgb-l8/expected.txt")
}

@test "signed zeros and NaN scores print as such (-0, 0, nan) on every back end and layout" {
    # No oracle file holds a zero score: a hand-made model whose sums are
    # -0 + -0 = -0 (left), -0 + 0 = 0 (right) and NaN (a NaN leaf), in the
    # double and the float32 accumulation.  90 documents so that batches of
    # 64 reach the byte-plane kernel.
    local acc i
    for acc in "double le double" "float lt float"; do
        set -- $acc
        cat > "$BATS_TEST_TMPDIR/z.txt" <<EOF
qs-ensemble 1
source lightgbm
objective zeros
compare $2
precision $3
accumulate $1
absent zero
features 3
classes 1
transform none 0x1p+0
base 0 -0x0p+0
trees 3
tree 0 class 0 weight 0x1p+0 nodes 3
0 num 1 0x1p-1 nan right 1 2
1 leaf -0x0p+0
2 leaf 0x0p+0
tree 1 class 0 weight 0x1p+0 nodes 1
0 leaf -0x0p+0
tree 2 class 0 weight 0x1p+0 nodes 3
0 num 2 0x1p-1 nan right 1 2
1 leaf -0x0p+0
2 leaf nan
end
EOF
        qs-compile -o "$BATS_TEST_TMPDIR/z.qsm" "$BATS_TEST_TMPDIR/z.txt"
        qs-compile --reverse-all --doc-block 3 -o "$BATS_TEST_TMPDIR/zr.qsm" "$BATS_TEST_TMPDIR/z.txt"
        : > "$BATS_TEST_TMPDIR/zd"
        : > "$BATS_TEST_TMPDIR/zw"
        for i in $(seq 30); do
            printf '0 1:0\n0 1:1\n0 2:1\n' >> "$BATS_TEST_TMPDIR/zd"
            printf -- '-0\n0\nnan\n' >> "$BATS_TEST_TMPDIR/zw"
        done
        score_all "$BATS_TEST_TMPDIR/z.qsm" "$BATS_TEST_TMPDIR/zd" "$BATS_TEST_TMPDIR/zw"
        layout_backends "$BATS_TEST_TMPDIR/zr.qsm" "$BATS_TEST_TMPDIR/zd" "$BATS_TEST_TMPDIR/zw"
        layout_backends "$BATS_TEST_TMPDIR/zr.qsm" "$BATS_TEST_TMPDIR/zd" "$BATS_TEST_TMPDIR/zw" --doc-block 64
    done
}

@test "semantics unit tests (boundaries, zeros, NaN, the 1e-35 band, absent, categorical, 200 leaves, oblivious)" {
    run "$UNIT/test_semantics"
    assert_success
    assert_output --regexp "[0-9]+ checks, 0 failures"
}

@test "CRC-32C: check value, pieces, and the SSE4.2 path equal to the table path" {
    run "$UNIT/test_crc32c"
    assert_success
    assert_output --regexp "[0-9]+ checks, 0 failures"
    local fast
    fast=$(grep '^digest' <<< "$output")
    QS_DISABLE_CPU_FEATURES=sse42 run "$UNIT/test_crc32c"
    assert_success
    assert_line "crc32c path: table"
    assert_line "$fast"
}
