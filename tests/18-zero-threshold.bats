#!/usr/bin/env bats
# LightGBM's zero threshold per input form (tests/fixtures/zero-band): a
# value with |x| <= kZeroThreshold ((double)1e-35f) is 0.0 to LightGBM's
# CSV/TSV readers and its dense-matrix input, and kept by its LibSVM reader
# and CSR input; qs reads each form as LightGBM's reader of it does, only
# for LightGBM models (the same model in ONNX, as ONNX Runtime scores it,
# keeps the value).  Models by LightGBM 4.7.0 split at -kZeroThreshold,
# scored on edge documents (../edge_docs.py) against LightGBM's own
# predict(), every back end, a second layout, --threads 2 and 3.

load test_helper

Z="$BATS_TEST_DIRNAME/fixtures/zero-band"
MODELS="nomissing poisson linear multi3 binary"
# the oracles are Python's %.17g: compare the values, bit for bit
export SCORE_COMPARE=values

@test "zero threshold: LETOR as LightGBM's LibSVM reader (the value kept)" {
    for m in $MODELS; do
        conform "$Z/$m.txt.zst" "$Z/docs.letor" "$Z/$m.libsvm.raw.txt" || { echo "($m)"; return 1; }
    done
}

@test "zero threshold: CSV and TSV as LightGBM's CSV/TSV readers (the value read as 0), raw and --transform" {
    tr ',' '\t' < "$Z/docs.csv" > "$BATS_TEST_TMPDIR/docs.tsv"
    for m in $MODELS; do
        conform "$Z/$m.txt.zst" "$Z/docs.csv" "$Z/$m.dense.raw.txt" --input csv --label-col 1 ||
            { echo "($m, csv)"; return 1; }
        conform "$Z/$m.txt.zst" "$BATS_TEST_TMPDIR/docs.tsv" "$Z/$m.dense.raw.txt" --input tsv --label-col 1 ||
            { echo "($m, tsv)"; return 1; }
        conform "$Z/$m.txt.zst" "$Z/docs.csv" "$Z/$m.dense.out.txt" --input csv --label-col 1 --transform ||
            { echo "($m, csv, --transform)"; return 1; }
    done
}

@test "zero threshold: f32 rows as LightGBM's dense float32 matrix" {
    for m in $MODELS; do
        conform "$Z/$m.txt.zst" "$Z/docs.f32" "$Z/$m.f32.raw.txt" --input f32 --features 6 ||
            { echo "($m)"; return 1; }
    done
}

@test "zero threshold: --lightgbm-dense reads LETOR as LightGBM's dense predict(); refused elsewhere" {
    for m in $MODELS; do
        conform "$Z/$m.txt.zst" "$Z/docs.letor" "$Z/$m.dense.raw.txt" --lightgbm-dense ||
            { echo "($m)"; return 1; }
    done
    qs-convert "$Z/nomissing.onnx" > "$BATS_TEST_TMPDIR/o.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/o.qsm" "$BATS_TEST_TMPDIR/o.txt"
    run qs-score --lightgbm-dense "$BATS_TEST_TMPDIR/o.qsm" "$Z/docs.letor"
    [ "$status" -eq 2 ]
    assert_output --partial "--lightgbm-dense is LightGBM's rule"
    run qs-score --lightgbm-dense --input csv --label-col 1 "$BATS_TEST_TMPDIR/o.qsm" "$Z/docs.csv"
    [ "$status" -eq 2 ]
    assert_output --partial "--lightgbm-dense is for LETOR input"
}

@test "zero threshold: qs_score_matrix reads rows as LightGBM's dense matrix" {
    for m in $MODELS; do
        qs-convert "$Z/$m.txt.zst" > "$BATS_TEST_TMPDIR/m.txt"
        qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" "$BATS_TEST_TMPDIR/m.txt"
        run "$UNIT/test_matrix" "$BATS_TEST_TMPDIR/m.qsm" "$Z/docs.letor"
        assert_success
        assert_output --regexp "^254 documents, 30 checks, 0 failures$"
    done
}

@test "zero threshold: the same model in ONNX keeps the value on every input (ONNX Runtime 1.32)" {
    conform "$Z/nomissing.onnx" "$Z/docs.letor" "$Z/nomissing.onnx.pred"
    conform "$Z/nomissing.onnx" "$Z/docs.csv" "$Z/nomissing.onnx.pred" --input csv --label-col 1
    conform "$Z/nomissing.onnx" "$Z/docs.f32" "$Z/nomissing.onnx.pred" --input f32 --features 6
}

@test "lightgbm format v2 (no tree_sizes, no \"end of trees\"): read as LightGBM 4.7 reads it" {
    conform "$Z/multi3.v2.txt.zst" "$Z/docs.letor" "$Z/multi3.libsvm.raw.txt"
    zstd -q -d -c "$Z/multi3.v2.txt.zst" > "$BATS_TEST_TMPDIR/v2.txt"
    # the trees end at "feature_importances:" as LightGBM's loader ends them
    grep -qx 'feature_importances:' "$BATS_TEST_TMPDIR/v2.txt"
    ! grep -qx 'end of trees' "$BATS_TEST_TMPDIR/v2.txt"
    # a v2 file may end after its last tree
    sed -n '/^feature_importances:$/q;p' "$BATS_TEST_TMPDIR/v2.txt" > "$BATS_TEST_TMPDIR/end.txt"
    conform "$BATS_TEST_TMPDIR/end.txt" "$Z/docs.letor" "$Z/multi3.libsvm.raw.txt"
    # a v2 file cut inside a tree is still an error; v1 is refused
    head -n 40 "$BATS_TEST_TMPDIR/v2.txt" > "$BATS_TEST_TMPDIR/cut.txt"
    run qs-convert "$BATS_TEST_TMPDIR/cut.txt"
    assert_failure 1
    sed 's/^version=v2$/version=v1/' "$BATS_TEST_TMPDIR/v2.txt" > "$BATS_TEST_TMPDIR/v1.txt"
    run qs-convert "$BATS_TEST_TMPDIR/v1.txt"
    assert_failure 3
    assert_output --partial "expected v2, v3 or v4"
}
