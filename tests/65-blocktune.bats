#!/usr/bin/env bats
# Traversal orders (qs-score --order) and the tuner qs-blocktune: every order
# and several (s, d, τ) give the training library's scores bit for bit, on
# oracle files and fixtures (linear leaves, float32 and RankLib's float +=
# double sums, multiclass, oblivious trees); the tuning record is written,
# read back, used on this machine only, and --ignore-tuning skips it; a
# sample too small is refused; the output is never half-written.  No timings
# are checked (speed is bench/blocktune.sh's).

load test_helper

ORDERS="SD DS DSD SDS DSDS SDSD"

# The kernels that read the QuickScorer layout on this machine: qs and each
# vqs-* level (auto and vqs run one of these).
order_backends() {
    local b
    for b in $(backends); do
        case "$b" in qs | vqs-*) echo "$b" ;; esac
    done
}

# Layouts and (s, d) pairs: ORDER_LAYOUTS="a b" (τ = 3; τ = 17, reversed).
ORDER_LAYOUTS="a b"
ORDER_PAIRS="1,4 5,200"

# orders_exact MODEL DOCS ORACLE [qs-score options]: convert and compile with
# small blocks (τ = 3, and τ = 17 with every tree reversed), then score with
# every order, several (s, d) and batches, and every layout back end; each
# must equal ORACLE byte for byte.
orders_exact() {
    local model="$1" docs="$2" oracle="$3"; shift 3
    local f
    for f in "$model" "$docs" "$oracle"; do
        [ -f "$f" ] || { echo "missing $f"; return 1; }
    done
    qs-convert "$model" > "$BATS_TEST_TMPDIR/m.txt" || return 1
    qs-compile --tree-block 3 --doc-block 256 -o "$BATS_TEST_TMPDIR/a.qsm" "$BATS_TEST_TMPDIR/m.txt" || return 1
    qs-compile --reverse-all --tree-block 17 --doc-block 100 --delta 3 -o "$BATS_TEST_TMPDIR/b.qsm" \
        "$BATS_TEST_TMPDIR/m.txt" || return 1
    tr ' ' '\t' < "$oracle" > "$BATS_TEST_TMPDIR/want"
    local q o b sd list
    list=$(order_backends) || return 1
    for q in $ORDER_LAYOUTS; do
        for o in $ORDERS; do
            for sd in $ORDER_PAIRS; do
                set -- ${sd%,*} ${sd#*,} "$@"
                for b in $list; do
                    qs-score --backend "$b" --order "$o" --order-s "$1" --order-d "$2" "${@:3}" \
                        "$BATS_TEST_TMPDIR/$q.qsm" < "$docs" > "$BATS_TEST_TMPDIR/got" ||
                        { echo "qs-score --backend $b --order $o s=$1 d=$2 failed"; return 1; }
                    compare_scores "$BATS_TEST_TMPDIR/got" "$BATS_TEST_TMPDIR/want" ||
                        { echo "layout $q, back end $b, order $o, s=$1 d=$2 differs"; return 1; }
                done
                shift 2
            done
        done
    done
}

@test "orders: LightGBM linear trees (fixtures), every order, s, d, tau and layout back end" {
    local n
    for n in regression nan binary stumps; do
        orders_exact "$FIX/linear/$n.txt.zst" "$FIX/linear/$n.docs.letor" "$FIX/linear/$n.pred.txt" ||
            { echo "(linear/$n)"; return 1; }
    done
}

@test "orders: RankLib float += double, QuickRank, XGBoost float32, CatBoost affine, multiclass, oblivious (fixtures)" {
    orders_exact "$FIX/quickrank/ranklib_exact.txt" "$FIX/quickrank/ranklib.letor" "$FIX/quickrank/ranklib_exact.scores"
    orders_exact "$FIX/quickrank/tiny.xml" "$FIX/quickrank/tiny.letor" "$FIX/quickrank/tiny.scores"
    orders_exact "$FIX/xgb-tiny/model.json" "$FIX/xgb-tiny/docs.letor" "$FIX/xgb-tiny/expected.txt"
    SCORE_COMPARE=values orders_exact "$FIX/catboost/tiny.json" "$FIX/catboost/tiny.letor" "$FIX/catboost/tiny.pred"
    orders_exact "$FIX/lgb-multiclass/model.txt.zst" "$FIX/lgb-multiclass/docs.letor" "$FIX/lgb-multiclass/expected.txt"
    orders_exact "$FIX/qr-oblivious/model.xml.zst" "$FIX/qr-oblivious/docs.letor" "$FIX/qr-oblivious/expected.txt"
}

@test "orders: oracle files (LightGBM double, linear, NaN, categorical, multiclass; XGBoost float32; QuickRank)" {
    require_oracle
    local ORDER_LAYOUTS=a ORDER_PAIRS="2,64 7,300"
    local L="$ORACLE/lightgbm" R="$ORACLE/lightgbm/data/rank.test.letor"
    orders_exact "$L/models/lambdarank_l64_t100/model.txt" "$R" "$L/models/lambdarank_l64_t100/pred_raw.txt"
    orders_exact "$L/models/lineartree_l15_t20/model.txt" "$R" "$L/models/lineartree_l15_t20/pred_raw.txt"
    orders_exact "$L/models/nan_nantype_l31_t300/model.txt" "$L/data/rank_nan.test.letor" "$L/models/nan_nantype_l31_t300/pred_raw.txt"
    orders_exact "$L/models/categorical_l31_t200/model.txt" "$L/data/rank_cat.test.letor" "$L/models/categorical_l31_t200/pred_raw.txt"
    orders_exact "$L/models/multiclass_k5_l15_t20/model.txt" "$L/data/multiclass.test.letor" "$L/models/multiclass_k5_l15_t20/pred_raw.txt"
    orders_exact "$ORACLE/xgboost/agaricus-logistic-d4-t50/model.json" "$ORACLE/svmlight/agaricus/test.txt" \
        "$ORACLE/xgboost/agaricus-logistic-d4-t50/test.pred.missing.txt"
    orders_exact "$ORACLE/quickrank/models/qr_lambdamart_l16_t500/model.xml" "$R" \
        "$ORACLE/quickrank/models/qr_lambdamart_l16_t500/scores.txt"
}

# Every oracle file of 20-conformance.bats (its conform lines), every order:
# long (about 2,000 runs of qs-score), so only with QS_TEST_ORDERS_ALL=1.
@test "orders: every oracle file of 20-conformance.bats (QS_TEST_ORDERS_ALL=1)" {
    require_oracle
    [ "${QS_TEST_ORDERS_ALL:-0}" = 1 ] || skip "set QS_TEST_ORDERS_ALL=1 to score every oracle file in every order"
    local ORDER_LAYOUTS=a ORDER_PAIRS="2,64 7,300" line n=0
    while IFS= read -r line; do
        line=${line#"${line%%[![:space:]]*}"}
        line=${line#OBLIVIOUS=yes }
        eval "orders_exact ${line#conform }" || { echo "($line)"; return 1; }
        n=$((n + 1))
    done < <(grep -E '^    (OBLIVIOUS=yes )?conform "' "$BATS_TEST_DIRNAME/20-conformance.bats")
    [ "$n" -gt 40 ]
}

@test "qs-score --order: bad names and --order-s without --order are usage errors" {
    run qs-score --order XYZ "$FIX/lgb-l8/docs.letor"
    assert_failure 2
    assert_output --partial "bad --order 'XYZ'"
    run qs-score --order-s 3 m.qsm
    assert_failure 2
    assert_output --partial "--order-s needs --order"
}

# A small model and a sample of 600 documents (the fixture's 300, twice).
tune_setup() {
    qs-convert "$FIX/lightgbm/mixed.model.txt" | qs-compile --tree-block 2 -o "$BATS_TEST_TMPDIR/m.qsm"
    cat "$FIX/lightgbm/mixed.docs.letor" "$FIX/lightgbm/mixed.docs.letor" > "$BATS_TEST_TMPDIR/sample.letor"
}

@test "qs-blocktune: a tuned model with its record; qs-score uses it here, scores unchanged" {
    tune_setup
    local T="$BATS_TEST_TMPDIR"
    run qs-blocktune --budget 2 --repeat 1 --plot "$T/p.svg" -o "$T/t.qsm" "$T/m.qsm" "$T/sample.letor"
    assert_success
    assert_line --regexp '^case	order	s	d	tau	delta	batch	backend	ns/doc/tree$'
    assert_line --partial "(defaults)"
    assert_line --regexp '^winner: '
    assert_line --regexp '^gain over the defaults: '
    # the confirmation: the defaults, then each candidate with the rounds it
    # was faster in (a winner must be faster in 4 of the 5)
    assert_line --regexp '^confirmation \(5 interleaved rounds, medians\): [^;]+ [0-9.]+(; [^;]+ [0-9.]+ \(faster in [0-5] of 5\))+$'
    grep -q '^<svg' "$T/p.svg" && grep -q '</svg>' "$T/p.svg"
    # the plot: four panels with their axes, one colour bar with its unit,
    # the defaults and the winner marked on it and named below
    local o
    for o in DSD SDS DSDS SDSD; do grep -q ">$o</text>" "$T/p.svg"; done
    [ "$(grep -c '>d: documents per inner block</text>' "$T/p.svg")" = 4 ]
    [ "$(grep -c '>s: scorers per inner block</text>' "$T/p.svg")" = 4 ]
    grep -q '>ns per document per tree (lower is faster' "$T/p.svg"
    grep -Eq '>defaults [0-9.e+-]+</text>' "$T/p.svg"
    grep -Eq '>winner [0-9.e+-]+</text>' "$T/p.svg"
    grep -q '>defaults (black on the bar; order SD, on no panel): SD ' "$T/p.svg"
    grep -q '>winner (red: ' "$T/p.svg"
    # the record, read back
    run qs-compile --info "$T/t.qsm"
    assert_success
    assert_line --regexp '^tuning: order (SD|DS|DSD|SDS|DSDS|SDSD), s [0-9]+, d [0-9]+, '
    assert_output --partial "(this machine)"
    assert_output --partial ".qsm version 1.4"
    assert_line --regexp '^  TUNE -  '
    qs-compile --info --json "$T/t.qsm" | jq -e '.tuning.this_machine == true and (.tuning.order | type) == "string"' > /dev/null
    run qs-compile --info "$T/m.qsm"
    assert_line "tuning: none (no tuning record)"
    # scores: the same bits with and without the record, and no message
    qs-score "$T/m.qsm" "$FIX/lightgbm/mixed.docs.letor" > "$T/a"
    run qs-score "$T/t.qsm" "$FIX/lightgbm/mixed.docs.letor"
    assert_success
    [ "$output" = "$(cat "$T/a")" ]
    compare_scores "$T/a" "$FIX/lightgbm/mixed.pred_raw.txt"
    # --time reads the record
    run qs-blocktune --time "$T/t.qsm" "$T/sample.letor"
    assert_success
    assert_output --regexp '^[0-9.]+	(SD|DS|DSD|SDS|DSDS|SDSD) s='
    # the exhaustive grid, on a layout of one tree per block (many points)
    qs-convert "$FIX/lightgbm/mixed.model.txt" | qs-compile --tree-block 1 -o "$T/m1.qsm"
    run qs-blocktune --exhaustive --repeat 1 -o "$T/e.qsm" "$T/m1.qsm" "$T/sample.letor"
    assert_success
    assert_output --partial ' (exhaustive)'
    [ "$(grep -c '^SDS[1-4]D[1-4]	SDSD	' <<< "$output")" -gt 20 ]
    # documents per call of plain BWQS: 2 and 4 times the default batch
    # (8 times is past this sample)
    grep -Eq '^SD	SD	0	0	[0-9]+	[0-9]+	128	' <<< "$output"
    grep -Eq '^SD	SD	0	0	[0-9]+	[0-9]+	256	' <<< "$output"
    qs-score "$T/e.qsm" "$FIX/lightgbm/mixed.docs.letor" | cmp - "$T/a"
}

@test "qs-blocktune: a record from another machine warns once and scores the same; --ignore-tuning is silent" {
    tune_setup
    local T="$BATS_TEST_TMPDIR"
    qs-blocktune --budget 1 --repeat 1 -o "$T/t.qsm" "$T/m.qsm" "$T/sample.letor" > /dev/null
    qs-score "$T/m.qsm" "$FIX/lightgbm/mixed.docs.letor" > "$T/a"
    QS_TUNE_FINGERPRINT="another CPU" qs-score --threads 3 "$T/t.qsm" "$FIX/lightgbm/mixed.docs.letor" > "$T/b" 2> "$T/err"
    cmp "$T/a" "$T/b"
    [ "$(wc -l < "$T/err")" = 1 ]
    grep -q "measured on another machine" "$T/err"
    QS_TUNE_FINGERPRINT="another CPU" qs-score --ignore-tuning "$T/t.qsm" "$FIX/lightgbm/mixed.docs.letor" > "$T/c" 2> "$T/err2"
    cmp "$T/a" "$T/c"
    [ ! -s "$T/err2" ]
    QS_TUNE_FINGERPRINT="another CPU" run qs-compile --info "$T/t.qsm"
    assert_output --partial "(another machine)"
}

@test "qs-blocktune: --sample-docs subsamples reproducibly; a sample too small is refused (exit 2)" {
    tune_setup
    local T="$BATS_TEST_TMPDIR"
    run qs-blocktune --sample-docs 100 -o "$T/t.qsm" "$T/m.qsm" "$T/sample.letor"
    assert_failure 2
    assert_output --partial "too small to measure"
    [ ! -e "$T/t.qsm" ]
    head -n 50 "$T/sample.letor" > "$T/small.letor"
    run qs-blocktune -o "$T/t.qsm" "$T/m.qsm" - < "$T/small.letor"
    assert_failure 2
    assert_output --partial "50 documents"
    run qs-blocktune --budget 1 --repeat 1 --sample-docs 200 --seed 7 -o "$T/t.qsm" "$T/m.qsm" "$T/sample.letor"
    assert_success
    assert_output --partial "# qs-blocktune"
    assert_output --partial ": 200 documents"
}

@test "qs-blocktune: a failure leaves no output, or the old one intact" {
    tune_setup
    local T="$BATS_TEST_TMPDIR"
    echo "keep" > "$T/old.qsm"
    printf '1 qid:1 1:x\n' >> "$T/sample.letor"
    run qs-blocktune --budget 1 -o "$T/old.qsm" "$T/m.qsm" "$T/sample.letor"
    assert_failure 1
    [ "$(cat "$T/old.qsm")" = keep ]
    run qs-blocktune --budget 1 -o "$T/new.qsm" "$T/m.qsm" "$T/sample.letor"
    assert_failure 1
    [ ! -e "$T/new.qsm" ]
    [ -z "$(ls "$T" | grep -F '.tmp')" ]
    run qs-blocktune "$T/m.qsm" "$T/sample.letor"
    assert_failure 2
    assert_output --partial "missing -o"
}

@test "an older reader's view: the TUNE section is optional, so the tuned file loads with its defaults" {
    tune_setup
    local T="$BATS_TEST_TMPDIR"
    qs-blocktune --budget 1 --repeat 1 -o "$T/t.qsm" "$T/m.qsm" "$T/sample.letor" > /dev/null
    qs-compile --info --json "$T/t.qsm" |
        jq -e '[.qsm.sections[] | select(.id == "TUNE")] | length == 1 and .[0].required == false and .[0].zstd == false' > /dev/null
    # tuning a tuned model replaces its record (one TUNE section)
    qs-blocktune --budget 1 --repeat 1 -o "$T/t2.qsm" "$T/t.qsm" "$T/sample.letor" > /dev/null
    qs-compile --info --json "$T/t2.qsm" | jq -e '[.qsm.sections[] | select(.id == "TUNE")] | length == 1' > /dev/null
}

@test "TUNE as the format says: a second TUNE section is a format error; a record naming an unknown back end is reported (--info fails, qs-score warns and keeps the defaults)" {
    tune_setup
    local T="$BATS_TEST_TMPDIR"
    qs-blocktune --budget 1 --repeat 1 -o "$T/t.qsm" "$T/m.qsm" "$T/sample.letor" > /dev/null
    qs-score "$T/m.qsm" "$FIX/lightgbm/mixed.docs.letor" > "$T/a"
    # the forger itself: an unchanged name keeps the file valid
    python3 "$BATS_TEST_DIRNAME/tools/qsm_tune.py" "$T/t.qsm" "$T/same.qsm" backend ""
    qs-compile --info "$T/same.qsm" > /dev/null
    python3 "$BATS_TEST_DIRNAME/tools/qsm_tune.py" "$T/t.qsm" "$T/dup.qsm" dup
    run qs-compile --info "$T/dup.qsm"
    assert_failure 1
    assert_output --partial "duplicate section"
    assert_output --partial "TUNE"
    run qs-score "$T/dup.qsm" "$FIX/lightgbm/mixed.docs.letor"
    assert_failure 1
    assert_output --partial "duplicate section"
    python3 "$BATS_TEST_DIRNAME/tools/qsm_tune.py" "$T/t.qsm" "$T/nb.qsm" backend nosuchbackend
    run qs-compile --info "$T/nb.qsm"
    assert_failure 1
    assert_output --partial "back end 'nosuchbackend' is unknown"
    qs-score "$T/nb.qsm" "$FIX/lightgbm/mixed.docs.letor" > "$T/b" 2> "$T/err"
    cmp "$T/a" "$T/b"
    grep -q "tuning record is unreadable (TUNE section: back end 'nosuchbackend' is unknown" "$T/err"
    # every back end of the registry is a valid name
    python3 "$BATS_TEST_DIRNAME/tools/qsm_tune.py" "$T/t.qsm" "$T/w.qsm" backend walk
    qs-compile --info "$T/w.qsm" | grep -q "back end walk"
}

@test "the tuning record in the library: written, read back, applied, replaced, damage detected; range cases; τ and Δ given at load (tests/unit/test_blocking.c)" {
    qs-convert "$FIX/lightgbm/mixed.model.txt" | qs-compile -o "$BATS_TEST_TMPDIR/m.qsm"
    run "$UNIT/test_blocking" "$BATS_TEST_TMPDIR/m.qsm"
    assert_success
    assert_output --regexp '^test_blocking: [0-9]+ checks, 0 failures$'
}

@test "qs-blocktune: a budget spent before any τ is measured keeps the default τ (no crash)" {
    tune_setup
    local T="$BATS_TEST_TMPDIR"
    run qs-blocktune --budget 0.000001 --repeat 1 -o "$T/t.qsm" "$T/m.qsm" "$T/sample.letor"
    assert_success
    assert_line --regexp '^winner: '
    qs-score "$T/t.qsm" "$FIX/lightgbm/mixed.docs.letor" | cmp - <(qs-score "$T/m.qsm" "$FIX/lightgbm/mixed.docs.letor")
}

@test "qs-blocktune: every exact back end this machine runs is measured or probed (vpred, struct, walk too); the winner's record scores the same" {
    command -v python3 > /dev/null || skip "python3 not installed"
    local T="$BATS_TEST_TMPDIR" d="$FIX/lgb-l8/docs.letor" b
    for i in 1 2 3; do cat "$d"; done > "$T/sample.letor"
    # 12 trees of 768 leaves: auto runs vpred where auto is vqs
    python3 "$QS_ROOT/bench/gen_forest.py" 12 768 "$d" 3 | qs-compile -o "$T/f.qsm" -
    run qs-blocktune --budget 1 --repeat 1 -o "$T/t.qsm" "$T/f.qsm" "$T/sample.letor"
    assert_success
    # one line each (the defaults' own back end is the defaults' line)
    for b in walk qs struct vpred $(qs-score --list-backends | awk -F'\t' '$1 ~ /^vqs-/ && $2 == "yes" { print $1 }'); do
        grep -Eq "^(SD|probe)	SD	.*	$b	[0-9.]+" <<< "$output" ||
            grep -Eq "^SD	SD	.*	$b	[0-9.]+	\(defaults\)" <<< "$output" ||
            { echo "back end $b not in the report"; return 1; }
    done
    # not measured: aliases, devices, whole batches, oblivious-only (this
    # model's trees are not oblivious)
    for b in cuda cuda-emu walk-batch oblivious; do
        ! grep -Eq "^(SD|probe)	SD	.*	$b	" <<< "$output" || { echo "$b measured"; return 1; }
    done
    assert_line --regexp '^winner: SD s=0 d=0 tau=[0-9]+ delta=[0-9]+ batch=[0-9]+ [a-z0-9-]+'
    qs-score "$T/f.qsm" "$d" > "$T/a"
    qs-score "$T/t.qsm" "$d" | cmp - "$T/a"
    qs-score --backend walk "$T/f.qsm" "$d" | cmp - "$T/a"
    # one back end named: measured in full (never only probed), no layout
    # search for a back end that does not read the layout
    run qs-blocktune --budget 1 --repeat 1 --backend struct -o "$T/s.qsm" "$T/f.qsm" "$T/sample.letor"
    assert_success
    assert_line --regexp '^SD	SD	0	0	[0-9]+	[0-9]+	[0-9]+	struct	[0-9.]+'
    assert_line --regexp '^points: 2, '
    qs-score "$T/s.qsm" "$d" | cmp - "$T/a"
    # a back end it does not measure, or that cannot take the model: exit 3
    for b in oblivious walk-batch; do
        run qs-blocktune --budget 1 --repeat 1 --backend $b -o "$T/x.qsm" "$T/f.qsm" "$T/sample.letor"
        assert_failure 3
        assert_output --partial "back end '$b' is not measured here"
        [ ! -e "$T/x.qsm" ]
    done
}
