#!/usr/bin/env bats
# Converter fixtures made for the edge cases the shared oracles do not cover:
# XGBoost categorical splits, base_score links, UBJSON, multiclass; QuickRank
# and RankLib boundaries; and models that must be refused.  (Provenance and the
# reasoning behind each expected value: tests/fixtures/{xgboost,quickrank}/README.md.)

load test_helper

X="$BATS_TEST_DIRNAME/fixtures/xgboost"
Q="$BATS_TEST_DIRNAME/fixtures/quickrank"

score_fixture() { # score_fixture MODEL DOCS WANT [qs-score options]: every back end and layout
    local model="$1" docs="$2" want="$3"; shift 3
    qs-convert "$model" > "$BATS_TEST_TMPDIR/m.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" "$BATS_TEST_TMPDIR/m.txt"
    qs-compile --reverse-all --tree-block 2 --doc-block 3 -o "$BATS_TEST_TMPDIR/r.qsm" "$BATS_TEST_TMPDIR/m.txt"
    tr ' ' '\t' < "$want" > "$BATS_TEST_TMPDIR/want"
    score_all "$BATS_TEST_TMPDIR/m.qsm" "$docs" "$BATS_TEST_TMPDIR/want" "$@"
    layout_backends "$BATS_TEST_TMPDIR/r.qsm" "$docs" "$BATS_TEST_TMPDIR/want" "$@"
}

@test "xgboost categorical splits (hand-reasoned): members go right, invalid left" {
    score_fixture "$X/categorical.json" "$X/categorical.docs.txt" "$X/categorical.pred.missing.txt"
    score_fixture "$X/categorical.json" "$X/categorical.docs.txt" "$X/categorical.pred.dense.txt" --absent zero
}

@test "xgboost categorical model trained by XGBoost 1.7.4, JSON and UBJSON" {
    score_fixture "$X/real-cat.json" "$X/real-cat.docs.txt" "$X/real-cat.pred.txt"
    score_fixture "$X/real-cat.ubj" "$X/real-cat.docs.txt" "$X/real-cat.pred.txt"
}

@test "xgboost base_score through the inverse link: logistic 0.3, poisson 2.5" {
    score_fixture "$X/real-logistic-b03.json" "$X/real-logistic-b03.docs.txt" "$X/real-logistic-b03.pred.txt"
    score_fixture "$X/real-poisson-b25.json" "$X/real-poisson-b25.docs.txt" "$X/real-poisson-b25.pred.txt"
}

@test "xgboost multi:softprob (UBJSON): one column per class" {
    score_fixture "$X/real-softprob.ubj" "$X/real-softprob.docs.txt" "$X/real-softprob.pred.txt"
}

@test "xgboost 2.x and 3.x (JSON and UBJSON): regression, logistic, softprob, categorical" {
    local v
    for v in v2 v3; do
        score_fixture "$X/$v-reg.json" "$X/v23.docs.txt" "$X/$v-reg.pred.txt"
        score_fixture "$X/$v-reg.ubj" "$X/v23.docs.txt" "$X/$v-reg.pred.txt"
        score_fixture "$X/$v-logistic.json" "$X/v23.docs.txt" "$X/$v-logistic.pred.txt"
        score_fixture "$X/$v-softprob.ubj" "$X/v23.docs.txt" "$X/$v-softprob.pred.txt"
        score_fixture "$X/$v-cat.json" "$X/v23-cat.docs.txt" "$X/$v-cat.pred.txt"
        score_fixture "$X/$v-cat.ubj" "$X/v23-cat.docs.txt" "$X/$v-cat.pred.txt"
    done
}

@test "xgboost 3.x vector base_score: one intercept per class or target" {
    run grep -c '"base_score":"\[[^],]*,[^],]*,[^]]*\]"' "$X/v3-multitarget.json"
    assert_output 1
    qs-convert "$X/v3-softprob.ubj" > "$BATS_TEST_TMPDIR/s.txt"
    run grep -c '^base ' "$BATS_TEST_TMPDIR/s.txt"
    assert_output 3
    # three different margins, not one repeated
    run sh -c "grep '^base ' '$BATS_TEST_TMPDIR/s.txt' | cut -d' ' -f3 | sort -u | wc -l"
    assert_output 3
}

@test "xgboost 2.x/3.x multi-target (one_output_per_tree): one column per target" {
    local v
    for v in v2 v3; do
        score_fixture "$X/$v-multitarget.json" "$X/v23.docs.txt" "$X/$v-multitarget.pred.txt"
        score_fixture "$X/$v-multitarget.ubj" "$X/v23.docs.txt" "$X/$v-multitarget.pred.txt"
    done
}

@test "xgboost 2.x/3.x vector-leaf trees (multi_output_tree): one canonical tree per target" {
    # 2.x keeps the leaf vectors in base_weights (K per node), 3.x in
    # leaf_weights (K per leaf, right_children holding the leaf's index)
    local v
    for v in v2 v3; do
        score_fixture "$X/$v-vecleaf.json" "$X/v23.docs.txt" "$X/$v-vecleaf.pred.txt"
        score_fixture "$X/$v-vecleaf.ubj" "$X/v23.docs.txt" "$X/$v-vecleaf.pred.txt"
    done
    grep -q '"right_children":\[2,4,6,8,10,12,14,0,1,2,3,4,5,6,7\]' "$X/v3-vecleaf.json"
    sed 's/"right_children":\[2,4,6,8,10,12,14,0,1,2,3,4,5,6,7\]/"right_children":[2,4,6,8,10,12,14,0,1,2,3,4,5,6,99]/' \
        "$X/v3-vecleaf.json" > "$BATS_TEST_TMPDIR/bad.json"
    run qs-convert "$BATS_TEST_TMPDIR/bad.json"
    assert_failure 1
    assert_output --partial "leaf vector 99 is beyond"
}

@test "xgboost num_class with num_target is refused" {
    sed 's/"num_class":"0"/"num_class":"3"/' "$X/v3-multitarget.json" > "$BATS_TEST_TMPDIR/mc.json"
    run qs-convert "$BATS_TEST_TMPDIR/mc.json"
    assert_failure 3
    assert_output --partial "multi-target classifiers"
}

@test "xgboost 3.1+ categories (cats.enc): values are the training codes, as XGBoost's numeric input; --info lists them" {
    local C="$BATS_TEST_DIRNAME/fixtures/xgboost-cats"
    SCORE_COMPARE=values conform "$C/cats.json.zst" "$C/docs.letor" "$C/cats.pred.txt"
    run qs-compile --info "$C/cats.json.zst"
    assert_success
    assert_output --partial 'categories of feature 0 (code: value): 0: "teal" 1: "red" 2: "plum" 3: "blue" 4: "green"'
    assert_output --partial 'categories of feature 2 (code: value): 0: "10" 1: "20" 2: "35"'
    run qs-compile --info --json "$C/cats.json.zst"
    assert_output --partial '"categories": {"0": ["teal", "red", "plum", "blue", "green"], "2": ["10", "20", "35"]},'
    # an encoder of numbers in a hand-edited model converts to the same model
    grep -q '"enc":\[\]' "$X/v3-cat.json"
    sed 's/"enc":\[\]/"enc":[{"type":0,"values":[3,7]}]/' "$X/v3-cat.json" > "$BATS_TEST_TMPDIR/enc.json"
    qs-convert "$BATS_TEST_TMPDIR/enc.json" > "$BATS_TEST_TMPDIR/a.txt"
    qs-convert "$X/v3-cat.json" | cmp - "$BATS_TEST_TMPDIR/a.txt"
}

@test "xgboost dart with dropout weights (XGBoost 3.2, x86-64): each tree's float32 leaf * weight, then the float32 sum" {
    local D="$BATS_TEST_DIRNAME/fixtures/xgboost-dart" m
    for m in dart-reg dart-logistic dart-softprob; do
        SCORE_COMPARE=values conform "$D/$m.json.zst" "$D/docs.letor" "$D/$m.raw.txt" ||
            { echo "($m)"; return 1; }
        SCORE_COMPARE=values conform "$D/$m.json.zst" "$D/docs.letor" "$D/$m.out.txt" --transform ||
            { echo "($m --transform)"; return 1; }
    done
    # the older fixture with dropout weights converts too
    run qs-convert "$X/real-dart-rate.json"
    assert_success
}

@test "quickrank hand-made model: float32 <=, NaN goes right, absent is 0" {
    score_fixture "$Q/tiny.xml" "$Q/tiny.letor" "$Q/tiny.scores"
}

@test "ranklib: Java's float += double sum, with and without float32 products" {
    score_fixture "$Q/ranklib_exact.txt" "$Q/ranklib.letor" "$Q/ranklib_exact.scores"
    score_fixture "$Q/ranklib_inexact.txt" "$Q/ranklib.letor" "$Q/ranklib_inexact.scores"
    run qs-convert "$Q/ranklib_inexact.txt"
    assert_output --partial "accumulate float-double"
    run qs-convert "$Q/bad_random_forest.txt"
    assert_failure 3
}

@test "quickrank malformed models: clear errors with line numbers" {
    run qs-convert "$Q/bad_one_child.xml"
    assert_failure 1
    assert_output --partial "bad_one_child.xml:5: "
    run qs-convert "$Q/bad_two_left.xml"
    assert_failure 1
    assert_output --partial ":8: "
    run qs-convert "$Q/bad_threshold.xml"
    assert_failure 1
    assert_output --partial "tree 12: bad threshold 'abc'"
    run qs-convert "$Q/bad_leaf_with_feature.xml"
    assert_failure 1
    run qs-convert "$Q/bad_truncated.xml"
    assert_failure 1
    run qs-convert --from quickrank "$Q/bad_garbage.bin"
    assert_failure 1
    run qs-convert "$Q/bad_entity_bomb.xml"
    assert_failure 3
    run qs-convert "$Q/bad_double_rounding.xml"
    assert_failure 3
}

@test "quickrank: 200,000 nested splits are refused without recursion" {
    run qs-convert "$Q/bad_deep_200k.xml.zst"
    assert_failure 1
    assert_output --partial "neither <output> nor <feature>"
}

@test "xgboost: deep JSON nesting and wrong array lengths are refused" {
    awk 'BEGIN { printf "{\"zz\":"; for (i = 0; i < 100000; i++) printf "["; for (i = 0; i < 100000; i++) printf "]"; print "}" }' > "$BATS_TEST_TMPDIR/deep.json"
    run qs-convert --from xgboost "$BATS_TEST_TMPDIR/deep.json"
    assert_failure 1
    assert_output --partial "nesting deeper than"
    sed 's/"left_children":\[1,/"left_children":[1,1,/' "$FIX/xgb-tiny/model.json" > "$BATS_TEST_TMPDIR/len.json"
    run qs-convert "$BATS_TEST_TMPDIR/len.json"
    assert_failure 1
    assert_output --partial "left_children"
}

@test "lightgbm hand-made model: two-word categorical set, every missing type, a one-leaf tree" {
    L="$BATS_TEST_DIRNAME/fixtures/lightgbm"
    score_fixture "$L/mixed.model.txt" "$L/mixed.docs.letor" "$L/mixed.pred_raw.txt"
}

@test "an objective with '#' survives the text round trip" {
    set -o pipefail
    zstd -dc "$FIX/lgb-l8/model.txt.zst" | sed 's/^objective=lambdarank/objective=lambdarank#x/' > "$BATS_TEST_TMPDIR/m.txt"
    grep -q '^objective=lambdarank#x' "$BATS_TEST_TMPDIR/m.txt"
    run qs-convert -o "$BATS_TEST_TMPDIR/a.txt" "$BATS_TEST_TMPDIR/m.txt"
    assert_success
    # The writer replaces '#' (which would open a comment) with '_'.
    run grep '^objective ' "$BATS_TEST_TMPDIR/a.txt"
    assert_output "objective lambdarank_x"
    qs-convert "$BATS_TEST_TMPDIR/a.txt" > "$BATS_TEST_TMPDIR/b.txt"
    cmp "$BATS_TEST_TMPDIR/a.txt" "$BATS_TEST_TMPDIR/b.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" "$BATS_TEST_TMPDIR/a.txt"
    qs-score "$BATS_TEST_TMPDIR/m.qsm" "$FIX/lgb-l8/docs.letor" > "$BATS_TEST_TMPDIR/got"
    compare_scores "$BATS_TEST_TMPDIR/got" "$FIX/lgb-l8/expected.txt"
}

@test "xgboost: a string with an escaped NUL is refused, not cut at the NUL" {
    T="$BATS_TEST_TMPDIR"
    M="$FIX/xgb-tiny/model.json"
    check() { # check SED-EXPR: the edited model is refused naming the byte
        sed "$1" "$M" > "$T/nul.json"
        cmp -s "$T/nul.json" "$M" && { echo "sed '$1' changed nothing"; return 1; }
        run qs-convert -o "$T/out" "$T/nul.json"
        assert_failure 1
        assert_output --regexp "^qs-convert: $T/nul.json: byte [0-9]+: json: escaped NUL \(\\\\u0000\) in a string is not accepted"
        [ ! -e "$T/out" ]
    }
    check 's/"name":"gbtree"/"name":"gbtree\\u0000dart"/'
    check 's/"name":"rank:ndcg"/"name":"binary:logistic\\u0000rank:ndcg"/'
    check 's/"num_feature":"47"/"num_feature":"47\\u00009"/'
    check 's/"num_feature":/"num_feature\\u0000x":/'
    # UBJSON holds strings as bytes: a NUL byte is refused the same way.
    LC_ALL=C sed 's/gbtree/gb\x00ree/' "$X/real-cat.ubj" > "$T/nul.ubj"
    cmp -s "$T/nul.ubj" "$X/real-cat.ubj" && { echo "no gbtree in the UBJSON model"; return 1; }
    run qs-convert "$T/nul.ubj"
    assert_failure 1
    assert_output --regexp "^qs-convert: $T/nul.ubj: byte [0-9]+: .*NUL byte in a string"
}

@test "readers' table: every --from name is accepted, each format detected and its source named" {
    # The names qs-convert's help lists are the table's; each reads its own
    # format, and a model of each format converts with and without --from.
    run qs-convert --help
    assert_success
    names=$(sed -n 's/^usage: qs-convert \[--from \([a-z|-]*\)\].*/\1/p' <<< "$output" | tr '|' ' ')
    [ "$names" = "lightgbm xgboost catboost onnx catboost-cbm quickrank" ]
    F="$BATS_TEST_DIRNAME/fixtures"
    for pair in "lightgbm:$F/lightgbm/mixed.model.txt" "xgboost:$X/real-cat.ubj" \
                "catboost:$F/catboost-nonsym/depthwise.json.zst" "onnx:$F/onnx/sk-gbr.onnx" \
                "catboost-cbm:$F/catboost-cbm/multiclass.cbm.zst" "cbm:$F/catboost-cbm/rmse.cbm.zst" \
                "quickrank:$Q/tiny.xml" "ranklib:$Q/ranklib_exact.txt"; do
        name=${pair%%:*} model=${pair#*:}
        src=$name; [ "$src" = ranklib ] && src=quickrank
        case $src in catboost-cbm | cbm) src=catboost ;; esac
        qs-convert "$model" > "$BATS_TEST_TMPDIR/a.txt"
        qs-convert --from "$name" "$model" > "$BATS_TEST_TMPDIR/b.txt"
        cmp "$BATS_TEST_TMPDIR/a.txt" "$BATS_TEST_TMPDIR/b.txt"
        grep -qx "source $src" "$BATS_TEST_TMPDIR/a.txt"
        run qs-compile --info "$model"
        assert_success
        assert_output --partial "source: $src"
    done
    # A name the table lacks: the message lists the table's names.
    run qs-convert --from canonical "$X/real-cat.ubj"
    [ "$status" -eq 2 ]
    assert_output --partial "expected lightgbm, xgboost, catboost, onnx, catboost-cbm (cbm) or quickrank (ranklib)"
}

@test "lightgbm: a category set of 257,049 words (category 8,225,567) against LightGBM 4.7" {
    B="$BATS_TEST_DIRNAME/fixtures/lightgbm-bigcat"
    SCORE_COMPARE=values conform "$B/bigcat.txt.zst" "$B/docs.letor" "$B/bigcat.pred.txt"
}

@test "lightgbm: categorical tables (every width, >63 classes, a 70,002-row domain) against LightGBM 4.7" {
    # A synthetic model with 1,394 categorical splits in runs of 10 trees of
    # <=8, <=16, <=32, <=64 and >64 leaves; documents with NaN, negatives,
    # -0, fractions, huge and infinite categories in the same batches as
    # plain ones (fixtures/lightgbm-cats/make.py).  Every back end, in one
    # block, in blocks of 10 (each width its own block) in batches of 64 and
    # 5, and of 7 one document at a time (the byte lookups, the per-lane
    # table rows, the nodes).
    B="$BATS_TEST_DIRNAME/fixtures/lightgbm-cats"
    conform "$B/model.txt.zst" "$B/docs.letor" "$B/model.pred.txt"
    local key q
    key=$(printf '%s' "$B/model.txt.zst" | cksum | cut -d' ' -f1)
    for q in "$BATS_FILE_TMPDIR/$key.qsm" "$BATS_FILE_TMPDIR/$key.qsm.alt"; do
        for tb_db in 10:64 10:5 7:1; do
            score_all "$q" "$B/docs.letor" "$B/model.pred.txt" --tree-block "${tb_db%:*}" \
                --doc-block "${tb_db#*:}" || { echo "($q, --tree-block/--doc-block $tb_db)"; return 1; }
        done
    done
}

@test "canonical text round-trips: convert(text) == text" {
    for f in lgb-l8/model.txt.zst lgb-multiclass/model.txt.zst qr-oblivious/model.xml.zst xgb-agaricus/model.json.zst; do
        qs-convert "$FIX/$f" > "$BATS_TEST_TMPDIR/a.txt"
        qs-convert "$BATS_TEST_TMPDIR/a.txt" > "$BATS_TEST_TMPDIR/b.txt"
        cmp "$BATS_TEST_TMPDIR/a.txt" "$BATS_TEST_TMPDIR/b.txt"
    done
}
