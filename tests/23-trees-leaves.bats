#!/usr/bin/env bats
# qs-score --trees N (the first N iterations: LightGBM's num_iteration,
# XGBoost's iteration_range, CatBoost's ntree_end) and --leaves (each tree's exit leaf, as
# pred_leaf numbers them), against the libraries' own outputs
# (tests/fixtures/iterations/make.py), on every back end, layout and
# thread count; and what they refuse.

load test_helper

I="$BATS_TEST_DIRNAME/fixtures/iterations"

# compiled NAME: the fixture model NAME compiled (cached), and a second
# layout: every tree reversed, small blocks.
compiled() {
    local q="$BATS_FILE_TMPDIR/$1.qsm" m
    if [ ! -f "$q" ]; then
        m=$(ls "$I/$1".txt.zst "$I/$1".json.zst 2> /dev/null | head -n 1)
        qs-convert "$m" > "$BATS_FILE_TMPDIR/$1.txt" || return 1
        qs-compile -o "$q" "$BATS_FILE_TMPDIR/$1.txt" || return 1
        qs-compile --reverse-all --tree-block 3 --doc-block 5 --delta 2 -o "$q.alt" \
            "$BATS_FILE_TMPDIR/$1.txt" || return 1
    fi
    printf '%s\n' "$q"
}

# trees NAME N [quick]: --trees N on every back end, both layouts, threads;
# quick: auto and walk only.
trees() {
    local q
    q=$(compiled "$1") || return 1
    if [ "${3:-}" = quick ]; then
        QS_BACKEND=auto score_all "$q" "$I/$1.docs.letor" "$I/$1.iter$2.txt" --trees "$2" &&
            QS_BACKEND=walk score_all "$q" "$I/$1.docs.letor" "$I/$1.iter$2.txt" --trees "$2"
        return
    fi
    score_all "$q" "$I/$1.docs.letor" "$I/$1.iter$2.txt" --trees "$2" || return 1
    layout_backends "$q.alt" "$I/$1.docs.letor" "$I/$1.iter$2.txt" --trees "$2" || return 1
    conform_threads "$q" "$I/$1.docs.letor" --trees "$2"
}

# leaves NAME [N] [threads]: --leaves [--trees N] with the two ways leaves
# are found (walk; qs, which every other back end uses) and auto, on both
# layouts; threads: also --threads 2 and 3.
leaves() {
    local q want="$I/$1.leaf.txt" opt=() b
    q=$(compiled "$1") || return 1
    if [ -n "${2:-}" ]; then want="$I/$1.leaf.iter$2.txt"; opt=(--trees "$2"); fi
    for b in walk qs auto; do
        QS_BACKEND=$b score_all "$q" "$I/$1.docs.letor" "$want" --leaves "${opt[@]}" || return 1
    done
    QS_BACKEND=qs score_all "$q.alt" "$I/$1.docs.letor" "$want" --leaves "${opt[@]}" || return 1
    if [ "${3:-}" = threads ]; then
        conform_threads "$q" "$I/$1.docs.letor" --leaves "${opt[@]}"
    fi
}

@test "--trees: lightgbm multiclass (3 classes), 1, 3 and 8 of 8 iterations" {
    trees lgb-multiclass 1 quick
    trees lgb-multiclass 3
    trees lgb-multiclass 8 quick
}

@test "--trees: catboost (CatBoost 1.2.10's ntree_end): oblivious with a bias, 3 classes, non-symmetric" {
    local N="$BATS_TEST_DIRNAME/fixtures/catboost-ntree" n it
    for n in rmse:1 rmse:10 rmse:30 multi3:1 multi3:6 depthwise:7; do
        it=${n#*:}
        n=${n%:*}
        conform "$N/$n.json.zst" "$N/docs.letor" "$N/$n.ntree$it.txt" --trees "$it"
    done
    conform "$N/multi3.json.zst" "$N/docs.letor" "$N/multi3.raw.txt"
}

@test "--trees: an XGBoost boosted random forest counts num_parallel_tree x classes trees an iteration" {
    # (every forest of tests/fixtures/xgboost-binary in tests/14-xgboost-binary.bats)
    local B="$BATS_TEST_DIRNAME/fixtures/xgboost-binary"
    conform "$B/forest.json.zst" "$B/docs.letor" "$B/forest.iter7.txt" --trees 7
    conform "$B/forest-softprob.json.zst" "$B/docs.letor" "$B/forest-softprob.iter2.txt" --trees 2
}

@test "--trees: the canonical text's 'trees T per-iteration P' counts P trees an iteration, in text and .qsm" {
    local T="$BATS_TEST_TMPDIR" t
    {
        printf '%s\n' 'qs-ensemble 1' 'source unknown' 'objective -' 'compare le' 'precision double' \
            'accumulate double' 'absent zero' 'features 1' 'classes 2' 'transform none 0x1p+0' \
            'base 0 0x0p+0' 'base 1 0x0p+0' 'trees 6 per-iteration 3'
        # class 1 twice, then class 0: not one tree per class, counted by P
        for t in 0 1 2 3 4 5; do
            printf 'tree %d class %d weight 0x1p+0 nodes 1\n0 leaf 0x1p+%d\n' "$t" $((t % 3 < 2)) "$t"
        done
        echo end
    } > "$T/p.txt"
    qs-convert "$T/p.txt" | cmp - "$T/p.txt"
    qs-compile -o "$T/p.qsm" "$T/p.txt"
    run qs-score --trees 1 "$T/p.qsm" <<< '0 0:1'
    assert_success
    assert_output "$(printf '4\t3')"          # class 0: 2^2; class 1: 2^0 + 2^1
    run qs-score --trees 2 "$T/p.qsm" <<< '0 0:1'
    assert_output "$(printf '36\t27')"
    run qs-score --leaves --trees 1 "$T/p.qsm" <<< '0 0:1'
    assert_output "$(printf '0\t0\t0')"
    run qs-score "$T/p.qsm" <<< '0 0:1'
    assert_output "$(printf '36\t27')"
    # the .qsm is version 1.5 (INFO's extension) only for such a model
    [ "$(od -An -tu1 -j10 -N1 "$T/p.qsm" | tr -d ' ')" = 5 ]
    qs-compile -o "$T/l.qsm" <(zstd -q -d -c "$I/lgb-regression.txt.zst" | qs-convert -)
    [ "$(od -An -tu1 -j10 -N1 "$T/l.qsm" | tr -d ' ')" = 0 ]
    # without per-iteration these trees are refused
    sed 's/^trees 6 per-iteration 3$/trees 6/' "$T/p.txt" > "$T/n.txt"
    qs-compile -o "$T/n.qsm" "$T/n.txt"
    run qs-score --trees 1 "$T/n.qsm" <<< '0 0:1'
    assert_failure 3
    # malformed
    for bad in 'trees 6 per-iteration 0' 'trees 6 per-iteration' 'trees 6 per-iteration x' \
               'trees 6 iteration 3' 'trees 6 per-iteration 3 x' 'trees 6 per-iteration 4194305'; do
        sed "s/^trees 6 per-iteration 3$/$bad/" "$T/p.txt" > "$T/b.txt"
        run qs-convert "$T/b.txt"
        assert_failure 1
    done
}

@test "--trees: more iterations than the model has score all of them, as LightGBM does" {
    trees lgb-multiclass 20 quick
    cmp "$I/lgb-multiclass.iter20.txt" "$I/lgb-multiclass.iter8.txt"
}

@test "--trees: lightgbm regression, xgboost multiclass and regression (iteration_range)" {
    trees lgb-regression 4 quick
    trees xgb-multiclass 2
    trees xgb-multiclass 6 quick
    trees xgb-regression 5 quick
}

@test "--trees with --transform: a LightGBM random forest averages over the iterations kept" {
    local q
    q=$(compiled lgb-rf)
    score_all "$q" "$I/lgb-rf.docs.letor" "$I/lgb-rf.prob.iter3.txt" --trees 3 --transform
    QS_BACKEND=auto score_all "$q" "$I/lgb-rf.docs.letor" "$I/lgb-rf.prob.iter6.txt" --trees 6 --transform
    ! cmp -s "$I/lgb-rf.prob.iter3.txt" "$I/lgb-rf.prob.iter6.txt"
}

@test "--trees: fewer iterations change the scores (the oracle is not the full model's)" {
    ! cmp -s "$I/lgb-multiclass.iter3.txt" "$I/lgb-multiclass.iter8.txt"
    ! cmp -s "$I/xgb-multiclass.iter2.txt" "$I/xgb-multiclass.iter6.txt"
}

@test "--leaves: lightgbm leaf indexes (pred_leaf), whole model and first iterations" {
    leaves lgb-multiclass
    leaves lgb-multiclass 3 threads
    leaves lgb-regression
    leaves lgb-regression 4
    # trees of 90 leaves: multi-word leaf vectors
    leaves lgb-wide
    leaves lgb-wide 2
    trees lgb-wide 2 quick
}

@test "--leaves: xgboost node ids (pred_leaf), whole model and first iterations" {
    leaves xgb-multiclass "" threads
    leaves xgb-multiclass 2
    leaves xgb-regression
    leaves xgb-regression 5
}

@test "--leaves: the qs back end finds the walk's leaves on QS-Omega, reversed and shared models" {
    local m q d
    # linear stumps: oblivious, so QS-Omega blocks
    qs-convert "$FIX/linear/stumps.txt.zst" | qs-compile -o "$BATS_TEST_TMPDIR/s.qsm" -
    qs-score --backend walk --leaves "$BATS_TEST_TMPDIR/s.qsm" "$FIX/linear/stumps.docs.letor" > "$BATS_TEST_TMPDIR/s.walk"
    for b in qs auto oblivious; do
        qs-score --backend "$b" --leaves "$BATS_TEST_TMPDIR/s.qsm" "$FIX/linear/stumps.docs.letor" |
            cmp - "$BATS_TEST_TMPDIR/s.walk"
    done
    require_oracle
    for m in lightgbm/models/categorical_l31_t200/model.txt:lightgbm/data/rank_cat.test.letor \
             lightgbm/models/nan_zeroasmissing_l31_t300/model.txt:lightgbm/data/rank_nan.test.letor \
             quickrank/models/qr_oblivious_d3_t100/model.xml:lightgbm/data/rank.test.letor; do
        d="$ORACLE/${m#*:}"
        qs-convert "$ORACLE/${m%%:*}" > "$BATS_TEST_TMPDIR/m.txt"
        qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" "$BATS_TEST_TMPDIR/m.txt"
        qs-compile --reverse-all --tree-block 7 -o "$BATS_TEST_TMPDIR/r.qsm" "$BATS_TEST_TMPDIR/m.txt"
        qs-score --backend walk --leaves "$BATS_TEST_TMPDIR/m.qsm" "$d" > "$BATS_TEST_TMPDIR/w"
        qs-score --backend qs --leaves "$BATS_TEST_TMPDIR/m.qsm" "$d" | cmp - "$BATS_TEST_TMPDIR/w"
        qs-score --backend qs --leaves "$BATS_TEST_TMPDIR/r.qsm" "$d" | cmp - "$BATS_TEST_TMPDIR/w"
    done
}

@test "--trees and --leaves: bad arguments and models they cannot count are refused" {
    local q
    q=$(compiled lgb-regression)
    run qs-score --trees 0 "$q" "$I/lgb-regression.docs.letor"
    assert_failure 2
    assert_output --partial "bad --trees '0'"
    run qs-score --trees -1 "$q" "$I/lgb-regression.docs.letor"
    assert_failure 2
    run qs-score --trees x "$q" "$I/lgb-regression.docs.letor"
    assert_failure 2
    run qs-score --leaves --annotate "$q" "$I/lgb-regression.docs.letor"
    assert_failure 2
    assert_output --partial "--leaves prints exit leaves, not scores"
    run qs-score --leaves --transform "$q" "$I/lgb-regression.docs.letor"
    assert_failure 2
    # Two classes whose trees do not alternate: iterations cannot be counted.
    printf '%s\n' 'qs-ensemble 1' 'source unknown' 'objective -' 'compare le' 'precision double' \
        'accumulate double' 'absent zero' 'features 1' 'classes 2' 'transform none 0x1p+0' \
        'base 0 0x0p+0' 'base 1 0x0p+0' 'trees 2' \
        'tree 0 class 1 weight 0x1p+0 nodes 1' '0 leaf 0x1p+0' \
        'tree 1 class 0 weight 0x1p+0 nodes 1' '0 leaf 0x1p+1' 'end' > "$BATS_TEST_TMPDIR/k2.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/k2.qsm" "$BATS_TEST_TMPDIR/k2.txt"
    run qs-score --trees 1 "$BATS_TEST_TMPDIR/k2.qsm" <<< '0 0:1'
    assert_failure 3
    assert_output --partial "do not come one per class per iteration"
    run qs-score --leaves "$BATS_TEST_TMPDIR/k2.qsm" <<< '0 0:1'
    assert_success
    assert_output "$(printf '0\t0')"
}
