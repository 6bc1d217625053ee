#!/usr/bin/env bats
# CatBoost JSON models: the shared oracles (CatBoost's own predictions,
# tests/oracle/catboost), hand-made fixtures whose scores follow CatBoost's
# rule (tests/fixtures/catboost/README.md), the output affine in the text and
# the .qsm, and the models that must be refused.

load test_helper

# CatBoost prints its predictions with its own formatting: compare the
# values, bit for bit (tests/unit/cmpscores.c).
SCORE_COMPARE=values

C="$BATS_TEST_DIRNAME/fixtures/catboost"
CB() { printf '%s\n' "$ORACLE/catboost/models/$1"; }

# shared NAME ORACLE [qs-score options]: a shared model against its oracle,
# every back end, a second layout and the threaded paths.
shared() {
    require_oracle
    local d
    d=$(CB "$1")
    [ -d "$d" ] || skip "missing $d"
    conform "$d/model.json" "$d/test.letor" "$d/$2" "${@:3}"
}

@test "catboost hand-made model: float32 >, NaN as false/true/as is, depth 0 to 3, scale and bias" {
    conform "$C/tiny.json" "$C/tiny.letor" "$C/tiny.pred"
}

@test "catboost hand-made multiclass model: leaf-major values, one bias per class" {
    conform "$C/multi.json" "$C/multi.letor" "$C/multi.pred"
}

N="$BATS_TEST_DIRNAME/fixtures/catboost-nonsym"

@test "catboost non-symmetric trees (CatBoost 1.2.10): Depthwise with NaN as Min, every back end" {
    conform "$N/depthwise.json.zst" "$N/docs.letor" "$N/depthwise.expected.txt"
}

@test "catboost non-symmetric trees: Lossguide with NaN as Max, every back end" {
    conform "$N/lossguide.json.zst" "$N/docs.letor" "$N/lossguide.expected.txt"
}

@test "catboost non-symmetric trees: MultiClass (3 columns), every back end" {
    conform "$N/multiclass.json.zst" "$N/docs.letor" "$N/multiclass.expected.txt"
}

@test "catboost non-symmetric trees: malformed nodes are errors (exit 1)" {
    local j='{"features_info": {"float_features": [{"borders": [], "feature_index": 0, "flat_feature_index": 0, "has_nans": false, "nan_value_treatment": "AsIs"}]}, "scale_and_bias": [1, [0]], "trees": ['
    local s='"split": {"border": 0.5, "float_feature_index": 0, "split_index": 0, "split_type": "FloatFeature"}'
    printf '%s{%s, "left": {"value": 1}, "right": {"value": 2}}]}' "$j" "$s" > "$BATS_TEST_TMPDIR/ok.json"
    run qs-convert "$BATS_TEST_TMPDIR/ok.json"
    assert_success
    printf '%s{%s, "left": {"value": 1}}]}' "$j" "$s" > "$BATS_TEST_TMPDIR/b1.json"
    run qs-convert "$BATS_TEST_TMPDIR/b1.json"
    assert_failure 1
    assert_output --partial "should be a split with left and right, or a leaf with a value"
    printf '%s{%s, "value": 3, "left": {"value": 1}, "right": {"value": 2}}]}' "$j" "$s" > "$BATS_TEST_TMPDIR/b2.json"
    run qs-convert "$BATS_TEST_TMPDIR/b2.json"
    assert_failure 1
    printf '%s{%s, "left": {"value": [1, 2]}, "right": {"value": 2}}]}' "$j" "$s" > "$BATS_TEST_TMPDIR/b3.json"
    run qs-convert "$BATS_TEST_TMPDIR/b3.json"
    assert_failure 1
    assert_output --partial "a leaf with 2 values, expected 1 outputs"
    # nesting beyond CatBoost's depth limit is refused, not followed
    local deep="" i
    for i in $(seq 20); do deep="$deep{$s, \"right\": {\"value\": 0}, \"left\": "; done
    deep="$deep{\"value\": 1}"
    for i in $(seq 20); do deep="$deep}"; done
    printf '%s%s]}' "$j" "$deep" > "$BATS_TEST_TMPDIR/deep.json"
    run qs-convert "$BATS_TEST_TMPDIR/deep.json"
    assert_failure
    assert_output --partial "deeper than 16 levels"
}

@test "catboost shared: single_tree" { shared single_tree pred_raw.txt; }
@test "catboost shared: shallow_trees (200 stumps)" { shared shallow_trees pred_raw.txt; }
@test "catboost shared: many_borders" { shared many_borders pred_raw.txt; }
@test "catboost shared: deep_trees (depth 8)" { shared deep_trees pred_raw.txt; }
@test "catboost shared: large_features (50 features)" { shared large_features pred_raw.txt; }
@test "catboost shared: extreme_values" { shared extreme_values pred_raw.txt; }
@test "catboost shared: nan_as_false" { shared nan_as_false pred_raw.txt; }
@test "catboost shared: nan_as_true" { shared nan_as_true pred_raw.txt; }
@test "catboost shared: multiclass_5 (5 columns)" { shared multiclass_5 pred_raw.txt; }

@test "catboost shared: float_binary, Probability = sigmoid of the raw score" {
    shared float_binary pred_probability.txt --transform
}

@test "catboost shared: float_regression, Exponent = exp of the raw score (bias -0.013): --transform exp" {
    # RMSE's own output is the raw value; the oracle holds CatBoost's
    # Exponent prediction type, which is exp(raw), picked at predict time:
    # --transform exp picks it here.
    shared float_regression pred_exponent.txt --transform exp
    # the same written into the text (the canonical text's transform line)
    local d t
    d=$(CB float_regression)
    t="$BATS_TEST_TMPDIR/m.txt"
    qs-convert "$d/model.json" > "$t"
    # RMSE's own output is the raw value; the oracle holds CatBoost's
    # Exponent prediction type: say so in the text.  This oracle was made on
    # macOS (the model's catboost_version_info), where CatBoost's exp is
    # evidently the C library's (20 of 20 rows; fmath's expd, its x86-64
    # exp, gives 8): `transform exp`.
    run grep -c '^transform none 0x1p+0$' "$t"
    assert_output 1
    sed 's/^transform none 0x1p+0$/transform exp 0x1p+0/' "$t" > "$BATS_TEST_TMPDIR/exp.txt"
    conform "$BATS_TEST_TMPDIR/exp.txt" "$d/test.letor" "$d/pred_exponent.txt" --transform
}

@test "catboost: --transform NAME picks the prediction type (sigmoid, exp, fmath-exp, none); the rest refused (exit 3)" {
    require_oracle
    local d
    d=$(CB float_binary)
    qs-convert "$d/model.json" | qs-compile -o "$BATS_TEST_TMPDIR/b.qsm" -
    # Probability is the model's own: --transform and --transform sigmoid agree
    qs-score --transform "$BATS_TEST_TMPDIR/b.qsm" "$d/test.letor" > "$BATS_TEST_TMPDIR/own"
    qs-score --transform sigmoid "$BATS_TEST_TMPDIR/b.qsm" "$d/test.letor" > "$BATS_TEST_TMPDIR/sig"
    cmp "$BATS_TEST_TMPDIR/own" "$BATS_TEST_TMPDIR/sig"
    compare_scores "$BATS_TEST_TMPDIR/sig" "$d/pred_probability.txt"
    # none: the raw scores; exp: exp of them, in double
    qs-score "$BATS_TEST_TMPDIR/b.qsm" "$d/test.letor" > "$BATS_TEST_TMPDIR/raw"
    qs-score --transform=none "$BATS_TEST_TMPDIR/b.qsm" "$d/test.letor" > "$BATS_TEST_TMPDIR/none"
    cmp "$BATS_TEST_TMPDIR/raw" "$BATS_TEST_TMPDIR/none"
    qs-score --transform exp "$BATS_TEST_TMPDIR/b.qsm" "$d/test.letor" > "$BATS_TEST_TMPDIR/exp"
    python3 -c '
import math, sys
raw = [float(l) for l in open(sys.argv[1])]
got = [float(l) for l in open(sys.argv[2])]
assert len(raw) == len(got) > 0
for r, g in zip(raw, got):
    assert math.exp(r) == g, (r, g)
' "$BATS_TEST_TMPDIR/raw" "$BATS_TEST_TMPDIR/exp"
    # fmath-exp: CatBoost's own Exponent on x86-64 (fmath's expd)
    qs-score --transform fmath-exp "$BATS_TEST_TMPDIR/b.qsm" "$d/test.letor" > "$BATS_TEST_TMPDIR/fexp"
    [ "$(wc -l < "$BATS_TEST_TMPDIR/fexp")" -eq "$(wc -l < "$BATS_TEST_TMPDIR/raw")" ]
    run qs-score --transform softmax "$BATS_TEST_TMPDIR/b.qsm" "$d/test.letor"
    assert_failure 3
    assert_output --partial "transform 'softmax' is not exact for this model: CatBoost computes 'sigmoid' for it"
    run qs-score --transform=bogus "$BATS_TEST_TMPDIR/b.qsm" "$d/test.letor"
    assert_failure 2
    assert_output --partial "bad --transform 'bogus'"
    # (written apart, a word that names no transform is the next argument)
    run qs-score --transform bogus "$BATS_TEST_TMPDIR/b.qsm" "$d/test.letor"
    assert_failure 2
    assert_output --partial "too many arguments"
    # a multiclass model: its own softmax (CatBoost's exp) or none
    qs-convert "$C/multi.json" | qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" -
    run qs-score --transform exp "$BATS_TEST_TMPDIR/m.qsm" "$C/multi.letor"
    assert_failure 3
    assert_output --partial "transform 'exp' is not exact for this model: CatBoost computes 'fmath-softmax' for it"
    qs-score "$BATS_TEST_TMPDIR/m.qsm" "$C/multi.letor" > "$BATS_TEST_TMPDIR/mraw"
    qs-score --transform none "$BATS_TEST_TMPDIR/m.qsm" "$C/multi.letor" > "$BATS_TEST_TMPDIR/mnone"
    cmp "$BATS_TEST_TMPDIR/mraw" "$BATS_TEST_TMPDIR/mnone"
}

@test "catboost: MultiClass's softmax is CatBoost's (fmath's exp on x86-64), raw scores unchanged" {
    qs-convert "$C/multi.json" > "$BATS_TEST_TMPDIR/m.txt"
    run grep '^transform ' "$BATS_TEST_TMPDIR/m.txt"
    assert_output "transform fmath-softmax 0x1p+0"
}

# CatBoost 1.2.10 (PyPI, x86-64) on 3,000 documents, edge documents first
# (tests/fixtures/catboost-exp): raw and with CatBoost's prediction type.
CE="$BATS_TEST_DIRNAME/fixtures/catboost-exp"
cb_exp() { # cb_exp NAME [TRANSFORM]: raw, then --transform, every back end
    local m="$CE/$1.json.zst"
    if [ -n "${2:-}" ]; then
        qs-convert "$m" | sed "s/^transform none 0x1p+0$/transform $2 0x1p+0/" > "$BATS_TEST_TMPDIR/$1.txt"
        m="$BATS_TEST_TMPDIR/$1.txt"
    fi
    conform "$m" "$CE/docs.letor.zst" "$(plain "$CE/$1.raw.txt.zst")" || return 1
    conform "$m" "$CE/docs.letor.zst" "$(plain "$CE/$1.out.txt.zst")" --transform
}

@test "catboost 1.2.10: Poisson and Tweedie Exponent with CatBoost's exp (fmath's expd), 3,000 rows" {
    for m in poisson tweedie; do
        qs-convert "$CE/$m.json.zst" | grep -qx 'transform fmath-exp 0x1p+0'
        cb_exp "$m" || { echo "($m)"; return 1; }
    done
}

@test "catboost 1.2.10: RMSE predicted as Exponent (transform fmath-exp in the text), 3,000 rows" {
    cb_exp rmse fmath-exp
    # the same prediction type chosen when scoring: --transform fmath-exp
    qs-convert "$CE/rmse.json.zst" | qs-compile -o "$BATS_TEST_TMPDIR/r.qsm" -
    qs-score --transform fmath-exp "$BATS_TEST_TMPDIR/r.qsm" "$CE/docs.letor.zst" > "$BATS_TEST_TMPDIR/got"
    "$UNIT/cmpscores" "$BATS_TEST_TMPDIR/got" "$(plain "$CE/rmse.out.txt.zst")"
}

@test "catboost 1.2.10: Logloss Probability (the C library's exp), 3,000 rows" {
    cb_exp logloss
}

@test "catboost 1.2.10: MultiClass Probability, 3 and 5 classes (softmax with CatBoost's exp), 3,000 rows" {
    for m in multi3 multi5; do
        cb_exp "$m" || { echo "($m)"; return 1; }
    done
}

@test "catboost 1.2.10: the C library's exp is not CatBoost's Exponent (the fixture tells them apart)" {
    qs-convert "$CE/poisson.json.zst" | sed 's/^transform fmath-exp /transform exp /' > "$BATS_TEST_TMPDIR/p.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/p.qsm" "$BATS_TEST_TMPDIR/p.txt"
    qs-score --transform "$BATS_TEST_TMPDIR/p.qsm" "$CE/docs.letor.zst" > "$BATS_TEST_TMPDIR/got"
    run "$UNIT/cmpscores" "$BATS_TEST_TMPDIR/got" "$(plain "$CE/poisson.out.txt.zst")"
    assert_failure
}

@test "catboost: detected without --from; XGBoost JSON is still XGBoost" {
    run qs-convert "$C/tiny.json"
    assert_success
    assert_line --index 1 "source catboost"
    run qs-convert "$FIX/xgb-tiny/model.json"
    assert_success
    assert_line --index 1 "source xgboost"
    run qs-convert --from catboost "$FIX/xgb-tiny/model.json"
    assert_failure 1
    assert_output --partial "not a catboost json model"
}

@test "catboost: the canonical text is version 2 with the affine, and round-trips byte for byte" {
    local m t
    for m in "$C/tiny.json" "$C/multi.json"; do
        qs-convert "$m" > "$BATS_TEST_TMPDIR/a.txt"
        qs-convert "$BATS_TEST_TMPDIR/a.txt" > "$BATS_TEST_TMPDIR/b.txt"
        cmp "$BATS_TEST_TMPDIR/a.txt" "$BATS_TEST_TMPDIR/b.txt"
    done
    t="$BATS_TEST_TMPDIR/t.txt"
    qs-convert "$C/tiny.json" > "$t"
    run sed -n '1p;/^out-/p' "$t"
    assert_output "$(printf 'qs-ensemble 2\nout-scale 0x1.6666666666666p-1\nout-bias 0 -0x1.aa5c5f7c6759bp-7')"
    if [ -d "$ORACLE/catboost/models" ]; then
        for m in "$ORACLE"/catboost/models/*/model.json; do
            qs-convert "$m" > "$BATS_TEST_TMPDIR/a.txt"
            qs-convert "$BATS_TEST_TMPDIR/a.txt" > "$BATS_TEST_TMPDIR/b.txt"
            cmp "$BATS_TEST_TMPDIR/a.txt" "$BATS_TEST_TMPDIR/b.txt" || { echo "$m"; return 1; }
        done
    fi
}

@test "catboost: .qsm 1.1 with AFFN listed first; models without an affine stay 1.0" {
    qs-convert "$C/tiny.json" > "$BATS_TEST_TMPDIR/c.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/c.qsm" "$BATS_TEST_TMPDIR/c.txt"
    # minor version (offset 10), section count (20), first section id (64)
    run od -An -tu2 -j10 -N2 "$BATS_TEST_TMPDIR/c.qsm"
    assert_output --regexp '^ +1$'
    run od -An -tu4 -j20 -N4 "$BATS_TEST_TMPDIR/c.qsm"
    assert_output --regexp '^ +4$'
    run od -An -c -j64 -N4 "$BATS_TEST_TMPDIR/c.qsm"
    assert_output --regexp 'A +F +F +N'
    qs-convert "$FIX/xgb-tiny/model.json" > "$BATS_TEST_TMPDIR/x.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/x.qsm" "$BATS_TEST_TMPDIR/x.txt"
    run od -An -tu2 -j10 -N2 "$BATS_TEST_TMPDIR/x.qsm"
    assert_output --regexp '^ +0$'
    run od -An -tu4 -j20 -N4 "$BATS_TEST_TMPDIR/x.qsm"
    assert_output --regexp '^ +3$'
    run sed -n 1p "$BATS_TEST_TMPDIR/x.txt"
    assert_output "qs-ensemble 1"
}

@test "canonical text: the affine lines belong to version 2 only, and are required there" {
    local t="$BATS_TEST_TMPDIR/t.txt"
    qs-convert "$C/tiny.json" > "$t"
    grep -v '^out-scale ' "$t" > "$BATS_TEST_TMPDIR/noscale.txt"
    run qs-convert "$BATS_TEST_TMPDIR/noscale.txt"
    assert_failure 1
    assert_output --partial "expected 'out-scale'"
    sed '1s/.*/qs-ensemble 1/' "$t" > "$BATS_TEST_TMPDIR/v1.txt"
    run qs-convert "$BATS_TEST_TMPDIR/v1.txt"
    assert_failure 1
    assert_output --partial "expected 'trees'"
    sed 's/^accumulate double$/accumulate float/' "$t" > "$BATS_TEST_TMPDIR/fl.txt"
    run qs-convert "$BATS_TEST_TMPDIR/fl.txt"
    assert_failure 1
    assert_output --partial "with accumulate float the output scale must be 1"
    sed '1s/.*/qs-ensemble 4/' "$t" > "$BATS_TEST_TMPDIR/v4.txt"
    run qs-convert "$BATS_TEST_TMPDIR/v4.txt"
    assert_failure 3
}

@test "catboost: categorical features, CTRs and unknown fields are refused (exit 3)" {
    run qs-convert "$C/categorical.json"
    assert_failure 3
    assert_output --partial "categorical features"
    run qs-convert "$C/ctr.json"
    assert_failure 3
    assert_output --partial '"OnlineCtr"'
    # (a non-symmetric tree is read; this one's border is not a float32 value)
    run qs-convert "$C/nonsymmetric.json"
    assert_failure 3
    assert_output --partial "not a float32 value"
    run qs-convert "$C/unknown-field.json"
    assert_failure 3
    assert_output --partial '"leaf_scale"'
    sed 's/"AsTrue"/"AsMaybe"/' "$C/tiny.json" > "$BATS_TEST_TMPDIR/nan.json"
    run qs-convert "$BATS_TEST_TMPDIR/nan.json"
    assert_failure 3
    assert_output --partial "AsMaybe"
    # a border that is not a float32 value (CatBoost writes float32 borders)
    sed 's/"border": 0.5,/"border": 0.1,/' "$C/tiny.json" > "$BATS_TEST_TMPDIR/b.json"
    run qs-convert "$BATS_TEST_TMPDIR/b.json"
    assert_failure 3
    assert_output --partial "not a float32 value"
}

@test "catboost 1.2.10: categorical features refused naming the feature, one-hot, CTR and saved with the pool (exit 3)" {
    local N="$BATS_TEST_DIRNAME/fixtures/catboost-ntree" f
    for f in onehot onehot-pool ctr; do
        run qs-convert "$N/$f.json.zst"
        assert_failure 3
        assert_output --partial 'categorical features are not supported: the model has 1 (byte'
        assert_output --partial 'the first "color" (categorical feature 0, flat feature 1)'
        refute_output --partial "unknown field"
    done
    run qs-convert "$N/ctr.json.zst"
    assert_output --partial ', with CTRs (ctr_data)'
}

@test "catboost: malformed models are errors (exit 1) that say what was expected" {
    run qs-convert "$C/bad-leaf-count.json"
    assert_failure 1
    assert_output --partial "7 leaf values, expected 8"
    head -c 700 "$C/tiny.json" > "$BATS_TEST_TMPDIR/cut.json"
    run qs-convert "$BATS_TEST_TMPDIR/cut.json"
    assert_failure 1
    sed 's/"float_feature_index": 2/"float_feature_index": 9/' "$C/tiny.json" > "$BATS_TEST_TMPDIR/f.json"
    run qs-convert "$BATS_TEST_TMPDIR/f.json"
    assert_failure 1
    assert_output --partial "float feature 9 is not described"
    sed 's/"scale_and_bias": \[/"scale_and_bias": [[1], /' "$C/tiny.json" > "$BATS_TEST_TMPDIR/s.json"
    run qs-convert "$BATS_TEST_TMPDIR/s.json"
    assert_failure 1
    assert_output --partial "scale_and_bias"
}
