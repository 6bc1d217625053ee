#!/usr/bin/env bats
# --transform bit for bit against the libraries' own predict() output, for
# the transforms that need more than a per-class function: XGBoost
# multi:softprob (float32 exps summed in double) and multi:softmax (the class
# index), LightGBM random forests (sum / iterations first), reg_sqrt and
# cross_entropy_lambda.  Fixtures: tests/fixtures/transforms and
# lightgbm-xentlambda (their make.py says how they were made).

load test_helper

F="$BATS_TEST_DIRNAME/fixtures/transforms"

# transform_exact NAME MODEL: convert, compile (and a reversed, small-block
# layout), score NAME's documents with --transform on every back end, and
# compare with the library's predictions as text (the same digits: %.9g of
# XGBoost's float32, %.17g of LightGBM's double).
transform_exact() {
    local name="$1" model="$2" T="$BATS_TEST_TMPDIR" b
    qs-convert "$model" > "$T/m.txt"
    qs-compile -o "$T/m.qsm" "$T/m.txt"
    qs-compile --reverse-all --tree-block 7 --doc-block 5 -o "$T/r.qsm" "$T/m.txt"
    for q in "$T/m.qsm" "$T/r.qsm"; do
        for b in $(backends); do
            [ "$b" = oblivious ] && continue
            qs-score --backend "$b" --transform "$q" "$F/$name.docs.letor.zst" > "$T/got" ||
                { echo "qs-score --backend $b failed"; return 1; }
            if ! cmp -s "$T/got" "$F/$name.pred.txt"; then
                echo "back end $b ($q): $(diff "$T/got" "$F/$name.pred.txt" | grep -c '^<') lines differ"
                diff "$T/got" "$F/$name.pred.txt" | head -4
                return 1
            fi
        done
    done
}

@test "xgboost multi:softprob --transform: XGBoost's probabilities bit for bit (5 classes)" {
    transform_exact xgb-softprob "$F/xgb-softprob.json.zst"
    run awk -F'\t' 'NF != 5' "$F/xgb-softprob.pred.txt"
    assert_output ""
}

@test "xgboost multi:softmax --transform: the class index, one column, as XGBoost predicts" {
    transform_exact xgb-softmax "$F/xgb-softmax.json.zst"
    grep -q '^transform argmax ' "$BATS_TEST_TMPDIR/m.txt"
    # Raw scores are still one column per class.
    run bash -c "qs-score '$BATS_TEST_TMPDIR/m.qsm' '$F/xgb-softmax.docs.letor.zst' | awk -F'\t' '{ print NF }' | sort -u"
    assert_output 5
}

@test "lightgbm random forest --transform: sum / iterations, then the objective's function" {
    transform_exact lgb-rf-binary "$F/lgb-rf-binary.txt.zst"
    grep -q '^transform sigmoid 0x1p+0 average 30$' "$BATS_TEST_TMPDIR/m.txt"
    transform_exact lgb-rf-regression "$F/lgb-rf-regression.txt.zst"
    transform_exact lgb-rf-multiclass "$F/lgb-rf-multiclass.txt.zst"
}

@test "lightgbm reg_sqrt --transform: sign(x) * x * x" {
    transform_exact lgb-sqrt "$F/lgb-sqrt.txt.zst"
    grep -q '^transform signed-square ' "$BATS_TEST_TMPDIR/m.txt"
}

@test "lightgbm cross_entropy_lambda --transform: log1p(exp(raw)) in double, edge documents, every back end" {
    local X="$BATS_TEST_DIRNAME/fixtures/lightgbm-xentlambda" n
    for n in xentlambda xentlambda-rf xentlambda-w; do
        conform "$X/$n.txt.zst" "$X/docs.letor" "$X/$n.raw.txt"
        conform "$X/$n.txt.zst" "$X/docs.letor" "$X/$n.out.txt" --transform
        qs-convert "$X/$n.txt.zst" > "$BATS_TEST_TMPDIR/$n.txt"
        grep -q '^transform log1p-exp 0x1p+0' "$BATS_TEST_TMPDIR/$n.txt"
    done
    grep -q '^transform log1p-exp 0x1p+0 average 12$' "$BATS_TEST_TMPDIR/xentlambda-rf.txt"
    conform "$X/xentlambda.txt.zst" "$X/docs.letor" "$X/xentlambda.iter4.txt" --trees 4
    # by name, and refused for a model whose library computes another function
    qs-compile -o "$BATS_TEST_TMPDIR/x.qsm" "$BATS_TEST_TMPDIR/xentlambda.txt"
    qs-score --transform log1p-exp "$BATS_TEST_TMPDIR/x.qsm" "$X/docs.letor" | cmp - "$X/xentlambda.out.txt"
    run qs-score --transform sigmoid "$BATS_TEST_TMPDIR/x.qsm" "$X/docs.letor"
    assert_failure 3
    assert_output --partial "LightGBM computes 'log1p-exp' for it (objective 'cross_entropy_lambda'"
}

@test "canonical text: 'average N' after the transform is checked" {
    T="$BATS_TEST_TMPDIR"
    qs-convert "$F/lgb-rf-binary.txt.zst" > "$T/m.txt"
    for bad in 'average 0' 'average x' 'averages 3' 'average'; do
        sed "s/^transform sigmoid 0x1p+0 average 30$/transform sigmoid 0x1p+0 $bad/" "$T/m.txt" > "$T/bad.txt"
        run qs-compile -o "$T/out.qsm" "$T/bad.txt"
        assert_failure 1
        [ ! -e "$T/out.qsm" ]
    done
}

@test "--transform NAME: the model's own or none accepted, another one refused with the reason (exit 3)" {
    qs-convert "$FIX/xgb-tiny/model.json" > "$BATS_TEST_TMPDIR/x.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/x.qsm" "$BATS_TEST_TMPDIR/x.txt"
    local own
    own=$(sed -n 's/^transform \([a-z-]*\) .*/\1/p' "$BATS_TEST_TMPDIR/x.txt")
    [ -n "$own" ]
    qs-score --transform "$BATS_TEST_TMPDIR/x.qsm" "$FIX/xgb-tiny/docs.letor" > "$BATS_TEST_TMPDIR/a"
    qs-score --transform "$own" "$BATS_TEST_TMPDIR/x.qsm" "$FIX/xgb-tiny/docs.letor" > "$BATS_TEST_TMPDIR/b"
    cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
    qs-score "$BATS_TEST_TMPDIR/x.qsm" "$FIX/xgb-tiny/docs.letor" > "$BATS_TEST_TMPDIR/raw"
    qs-score --transform none "$BATS_TEST_TMPDIR/x.qsm" "$FIX/xgb-tiny/docs.letor" > "$BATS_TEST_TMPDIR/none"
    cmp "$BATS_TEST_TMPDIR/raw" "$BATS_TEST_TMPDIR/none"
    local other=exp
    [ "$own" != exp ] || other=sigmoid
    run qs-score --transform "$other" -o "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/x.qsm" "$FIX/xgb-tiny/docs.letor"
    assert_failure 3
    assert_output --partial "transform '$other' is not exact for this model: XGBoost computes '$own' for it"
    [ ! -e "$BATS_TEST_TMPDIR/out" ]
    # a document file named like a transform: --transform=NAME, or ./NAME
    cp "$FIX/xgb-tiny/docs.letor" "$BATS_TEST_TMPDIR/exp"
    (cd "$BATS_TEST_TMPDIR" && qs-score --transform x.qsm exp) > "$BATS_TEST_TMPDIR/c"
    cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/c"
}

@test "--transform softmax rows sum to 1 (lightgbm multiclass)" {
    set -o pipefail
    qs-convert "$FIX/lgb-multiclass/model.txt.zst" | qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" -
    qs-score --transform "$BATS_TEST_TMPDIR/m.qsm" < "$FIX/lgb-multiclass/docs.letor" > "$BATS_TEST_TMPDIR/out"
    run awk -F'\t' '{ s = 0; for (i = 1; i <= NF; i++) s += $i; if (s < 0.999999 || s > 1.000001) print NR, s }' "$BATS_TEST_TMPDIR/out"
    assert_output ""
}
