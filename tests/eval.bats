#!/usr/bin/env bats
# qs-eval: every NDCG convention against tests/oracle/ndcg/expected, the
# oracle NDCG@10 (and XGBoost's map) of the reference models, ERR/MAP/P by
# hand, the annotated pipe, robust input, and the error paths.

load test_helper
bats_require_minimum_version 1.5.0

NDCG="$ORACLE/ndcg"

setup() {
    T="$BATS_TEST_TMPDIR"
}

# Options for a convention name of expected/*.tsv (shared/docs/ndcg.md §4 and
# the table in tests/oracle/ndcg/README.md); an @qid/@block suffix is --group.
conv_opts() {
    local o
    case "${1%@*}" in
        exp2_stable_zero) o="" ;;
        exp2_stable_one) o="--norel=1" ;;
        exp2_stable_skip) o="--norel=skip" ;;
        exp2_stable_one_f32) o="--norel=1 --score-type=float" ;;
        exp2_stable_zero_f32) o="--score-type=float" ;;
        linear_stable_zero) o="--gain=linear" ;;
        linear_average_zero) o="--gain=linear --ties=average" ;;
        linear_reverse_zero) o="--gain=linear --ties=reverse" ;;
        exp2_reverse_one) o="--ties=reverse --norel=1" ;;
        exp2_average_zero) o="--ties=average" ;;
        exp2_pessimistic_zero) o="--ties=pessimistic" ;;
        exp2_optimistic_zero) o="--ties=optimistic" ;;
        letor_perl) o="--discount=letor --beyond=zero --group=qid" ;;
        *) echo "unknown convention $1" >&2; return 1 ;;
    esac
    case "$1" in *@qid) o="$o --group=qid" ;; *@block) o="$o --group=block" ;; esac
    echo "$o"
}

# near GOT WANT: same rows, same qids, same `excluded` cells, numbers within
# 1e-9.  Prints the first differences.
near() {
    awk -F'\t' 'NR == FNR { w[FNR] = $0; nw = FNR; next }
        { ng = FNR; nb = split(w[FNR], b, "\t"); n = split($0, a, "\t")
          if (n != nb || a[1] != b[1]) { if (bad++ < 5) print "row " FNR ": got [" $0 "] want [" w[FNR] "]"; next }
          for (i = 2; i <= n; i++) {
              if (a[i] == "excluded" || b[i] == "excluded") {
                  if (a[i] != b[i] && bad++ < 5) print "row " FNR " col " i ": got " a[i] " want " b[i]
                  continue }
              d = a[i] - b[i]; if (d < 0) d = -d
              if (!(d <= 1e-9) && bad++ < 5) print "row " FNR " col " i ": got " a[i] " want " b[i] } }
        END { if (ng != nw) { print "rows: got " ng " want " nw; bad++ }
              exit bad > 0 }' "$2" "$1"
}

# within A B: |A - B| <= 1e-9
within() {
    awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= 1e-9) }'
}

mean_col() { # the value in column $1 of the mean row of stdin
    awk -F'\t' -v c="$1" '$1 == "mean" { print $c }'
}

# Every case/convention pair of expected/, run with extra options "$@".
# Prints the failures; returns non-zero when there is one.
check_expected() {
    local f c conv fails=0 total=0
    for f in "$NDCG"/expected/*.tsv; do
        c=$(basename "$f" .tsv)
        for conv in $(tail -n +2 "$f" | cut -f1 | uniq); do
            total=$((total + 1))
            grep "^$conv	" "$f" | cut -f2- > "$T/want"
            # shellcheck disable=SC2046
            if ! (set -o pipefail; qs-eval --per-query -k 1,3,5,10 $(conv_opts "$conv") \
                    "$NDCG/cases/$c.letor" "$NDCG/cases/$c.scores" 2>"$T/err" |
                    tail -n +3 > "$T/got") || ! near "$T/got" "$T/want" > "$T/diff"; then
                fails=$((fails + 1))
                echo "FAIL $c $conv: $(head -3 "$T/diff" "$T/err")"
            fi
        done
    done
    echo "$total conventions x cases, $fails failed"
    [ "$total" -gt 100 ] && [ "$fails" -eq 0 ]
}

@test "qs-eval: --help on stdout (exit 0) states every metric; --version" {
    run --separate-stderr qs-eval --help
    assert_success
    assert_output --partial "usage: qs-eval"
    assert_output --partial "ERR@k = sum_{r<=k} R_r/r * prod_{i<r} (1-R_i), R = (2^rel-1)/16"
    assert_output --partial "AP@k"
    assert_output --partial "P@k"
    assert_output --partial "--like TOOL"
    [ -z "$stderr" ]
    run qs-eval --version
    assert_success
    assert_output --regexp "^qs-eval [0-9]"
}

@test "qs-eval: every convention on every case of ndcg/expected matches per query and mean (1e-9)" {
    require_oracle
    [ -d "$NDCG/expected" ] || skip "no $NDCG/expected"
    run check_expected
    assert_success
}

@test "qs-eval: --like presets reproduce their conventions; later options override" {
    require_oracle
    set -o pipefail
    local f c want like fails=0
    for f in "$NDCG"/expected/*.tsv; do
        c=$(basename "$f" .tsv)
        for pair in quickrank:exp2_stable_zero ranklib:exp2_stable_zero \
                    lightgbm:exp2_stable_one xgboost:exp2_stable_one_f32 \
                    xgboost-minus:exp2_stable_zero_f32 trec:linear_stable_zero@qid \
                    sklearn:linear_average_zero rankeval:exp2_reverse_one letor:letor_perl; do
            like=${pair%%:*}
            want=${pair#*:}
            # Outside splitblock the grouping does not matter and only the
            # plain name is listed.
            grep -q "^$want	" "$f" || want=${want%@*}
            grep "^$want	" "$f" | cut -f2- > "$T/want"
            qs-eval --per-query -k 1,3,5,10 --like "$like" "$NDCG/cases/$c.letor" \
                "$NDCG/cases/$c.scores" 2>/dev/null | tail -n +3 > "$T/got"
            near "$T/got" "$T/want" || { echo "FAIL --like $like on $c"; fails=$((fails + 1)); }
        done
        # An option after --like overrides it; --like resets what came before.
        grep "^exp2_stable_zero	" "$f" | cut -f2- > "$T/want"
        qs-eval --per-query -k 1,3,5,10 --like lightgbm --norel=0 "$NDCG/cases/$c.letor" \
            "$NDCG/cases/$c.scores" 2>/dev/null | tail -n +3 > "$T/got"
        near "$T/got" "$T/want" || { echo "FAIL --like lightgbm --norel=0 on $c"; fails=$((fails + 1)); }
        grep "^exp2_stable_one	" "$f" | cut -f2- > "$T/want"
        qs-eval --per-query -k 1,3,5,10 --norel=skip --like lightgbm "$NDCG/cases/$c.letor" \
            "$NDCG/cases/$c.scores" 2>/dev/null | tail -n +3 > "$T/got"
        near "$T/got" "$T/want" || { echo "FAIL --norel=skip --like lightgbm on $c"; fails=$((fails + 1)); }
    done
    [ "$fails" -eq 0 ]
}

@test "qs-eval: other cutoffs agree with ndcg_ref.py (k = 2,4,7,15,40)" {
    require_oracle
    command -v python3 > /dev/null || skip "python3 not found"
    set -o pipefail
    local f c conv fails=0
    local convs="exp2_stable_zero exp2_stable_skip linear_average_zero exp2_reverse_one
                 exp2_pessimistic_zero letor_perl exp2_stable_one_f32"
    # the sanitizer pass: two conventions (the reference's time is the
    # test's; qs-eval takes the same paths for the others)
    [ -z "${SANITIZE:-}" ] || convs="exp2_stable_skip letor_perl"
    for f in "$NDCG"/cases/*.letor; do
        c=$(basename "$f" .letor)
        for conv in $convs; do
            python3 "$NDCG/ndcg_ref.py" "$f" "$NDCG/cases/$c.scores" "$conv" 2 4 7 15 40 > "$T/want" ||
                { echo "ndcg_ref.py failed on $c $conv"; return 1; }
            # shellcheck disable=SC2046
            qs-eval --per-query -k 2,4,7,15,40 $(conv_opts "$conv") "$f" "$NDCG/cases/$c.scores" \
                2>/dev/null | tail -n +3 > "$T/got"
            near "$T/got" "$T/want" || { echo "FAIL $c $conv"; fails=$((fails + 1)); }
        done
    done
    [ "$fails" -eq 0 ]
}

@test "qs-eval: NDCG@10 of the LightGBM oracle scores (MANIFEST ndcg10_recomputed)" {
    require_oracle
    set -o pipefail
    local m="$ORACLE/lightgbm/MANIFEST.tsv" n=0 fails=0 model td want got
    [ -f "$m" ] || skip "no $m"
    # awk, not read: empty columns must stay columns.
    while IFS='|' read -r model td want; do
        # a model left out of the repository (SHA256SUMS.large), until made
        [ -f "$ORACLE/lightgbm/models/$model/pred_raw.txt" ] ||
            grep -q " lightgbm/models/$model/pred_raw.txt\$" "$QS_ROOT/tests/oracle/SHA256SUMS.large" || return 1
        [ -f "$ORACLE/lightgbm/models/$model/pred_raw.txt" ] || continue
        got=$(qs-eval "$ORACLE/lightgbm/data/$td" "$ORACLE/lightgbm/models/$model/pred_raw.txt" | mean_col 2)
        n=$((n + 1))
        within "$got" "$want" || { echo "FAIL $model: got $got want $want"; fails=$((fails + 1)); }
    done < <(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
                         $h["ndcg10_recomputed"] != "" { print $h["model"] "|" $h["test_data"] "|" $h["ndcg10_recomputed"] }' "$m")
    echo "$n models"
    [ "$n" -gt 10 ] && [ "$fails" -eq 0 ]
}

@test "qs-eval: NDCG@10 of the QuickRank oracle scores (MANIFEST ndcg10_recomputed)" {
    require_oracle
    set -o pipefail
    local m="$ORACLE/quickrank/MANIFEST.tsv" n=0 fails=0 model td want got
    [ -f "$m" ] || skip "no $m"
    while IFS='|' read -r model td want; do
        got=$(qs-eval "$ORACLE/lightgbm/data/$td" "$ORACLE/quickrank/models/$model/scores.txt" | mean_col 2)
        n=$((n + 1))
        within "$got" "$want" || { echo "FAIL $model: got $got want $want"; fails=$((fails + 1)); }
    done < <(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
                         $h["ndcg10_recomputed"] != "" { print $h["model"] "|" $h["test_data"] "|" $h["ndcg10_recomputed"] }' "$m")
    echo "$n models"
    [ "$n" -ge 8 ] && [ "$fails" -eq 0 ]
}

@test "qs-eval: XGBoost ndcg@10, ndcg@10- and map of every ranking model (info.json)" {
    require_oracle
    command -v jq > /dev/null || skip "jq not found"
    set -o pipefail
    local d j tf conv n=0 fails=0 want got
    for d in "$ORACLE"/xgboost/*/; do
        j="$d/info.json"
        [ -f "$j" ] || continue
        tf="$ORACLE/$(jq -r .test_file "$j")"
        for conv in dense missing xgbfile; do
            # Only the ranking models have numbers in own_ndcg_on_test.
            jq -e ".own_ndcg_on_test.$conv[\"ndcg@10\"] | numbers" "$j" > /dev/null 2>&1 || continue
            [ -f "$d/test.pred.$conv.txt" ] || continue
            n=$((n + 1))
            want=$(jq -r ".own_ndcg_on_test.$conv[\"ndcg@10\"]" "$j")
            got=$(qs-eval --like xgboost "$tf" "$d/test.pred.$conv.txt" | mean_col 2)
            within "$got" "$want" || { echo "FAIL $d $conv ndcg@10: $got vs $want"; fails=$((fails + 1)); }
            want=$(jq -r ".own_ndcg_on_test.$conv[\"ndcg@10-\"]" "$j")
            got=$(qs-eval --like xgboost-minus "$tf" "$d/test.pred.$conv.txt" | mean_col 2)
            within "$got" "$want" || { echo "FAIL $d $conv ndcg@10-: $got vs $want"; fails=$((fails + 1)); }
            want=$(jq -r ".xgboost_eval_on_test.$conv.map // empty" "$j")
            [ -n "$want" ] || continue
            got=$(qs-eval --like xgboost --metric map "$tf" "$d/test.pred.$conv.txt" | mean_col 2)
            within "$got" "$want" || { echo "FAIL $d $conv map: $got vs $want"; fails=$((fails + 1)); }
        done
    done
    echo "$n model/score-file pairs"
    [ "$n" -gt 10 ] && [ "$fails" -eq 0 ]
}

# annotate LETOR SCORES: the label<TAB>qid<TAB>score stream qs-score --annotate
# would write (label and qid verbatim; empty qid when the line has none).
annotate() {
    paste -d '\n' "$1" /dev/null | awk -v sf="$2" '
        { sub(/\r$/, ""); body = $0; sub(/#.*/, "", body)
          n = split(body, t, /[ \t]+/); if (n == 0 || (n == 1 && t[1] == "")) next
          s = 1; if (t[1] == "") s = 2
          q = ""; for (i = s + 1; i <= n; i++) if (t[i] ~ /^qid:/) q = substr(t[i], 5)
          getline sc < sf; printf "%s\t%s\t%s\n", t[s], q, sc }'
}

@test "qs-eval: the annotated pipe (-, or no file) gives the numbers of the two-file form" {
    require_oracle
    set -o pipefail
    local f c opts fails=0
    for f in "$NDCG"/cases/*.letor; do
        c=$(basename "$f" .letor)
        annotate "$f" "$NDCG/cases/$c.scores" > "$T/ann"
        for opts in "" "--like xgboost" "--like letor" "--metric map" "--metric err -k 1,5" \
                    "--metric p -k 3,10 --ties=average"; do
            # shellcheck disable=SC2086
            qs-eval --per-query -k 1,3,5,10 $opts "$f" "$NDCG/cases/$c.scores" > "$T/two" 2>/dev/null
            # shellcheck disable=SC2086
            qs-eval --per-query -k 1,3,5,10 $opts - < "$T/ann" > "$T/pipe1" 2>/dev/null
            # shellcheck disable=SC2086
            cat "$T/ann" | qs-eval --per-query -k 1,3,5,10 $opts > "$T/pipe2" 2>/dev/null
            cmp -s "$T/two" "$T/pipe1" && cmp -s "$T/two" "$T/pipe2" ||
                { echo "FAIL $c [$opts]"; fails=$((fails + 1)); }
        done
    done
    [ "$fails" -eq 0 ]
}

@test "qs-eval: qs-score --annotate | qs-eval equals qs-eval LETOR SCORES" {
    set -o pipefail
    local t fx n=0 model
    for fx in xgb-tiny lgb-l8; do
        model=$(ls "$FIX/$fx"/model.* | head -1)
        qs-convert "$model" > "$T/$fx.txt"
        qs-compile -o "$T/$fx.qsm" "$T/$fx.txt"
        qs-score "$T/$fx.qsm" < "$FIX/$fx/docs.letor" > "$T/$fx.scores"
        for opts in "-k 1,3,5,10" "--like xgboost -k 1,3,5,10" "--metric map" "--metric err"; do
            # shellcheck disable=SC2086
            qs-eval --per-query $opts "$FIX/$fx/docs.letor" "$T/$fx.scores" > "$T/two"
            # shellcheck disable=SC2086
            qs-score --annotate "$T/$fx.qsm" < "$FIX/$fx/docs.letor" | qs-eval --per-query $opts > "$T/pipe"
            run cmp "$T/two" "$T/pipe"
            assert_success
            n=$((n + 1))
        done
    done
    [ "$n" -eq 8 ]
}

@test "qs-eval: ERR@k, MAP and P@k by hand; --norel, --beyond, --ties on them" {
    printf '3 qid:1\n0 qid:1\n1 qid:1\n2 qid:1\n0 qid:2\n0 qid:2\n' > "$T/m.letor"
    printf '4\n3\n2\n1\n1\n2\n' > "$T/m.s"
    # Ranked labels of query 1: 3 0 1 2.  R = 7/16, 0, 1/16, 3/16.
    run qs_eval_rows --per-query --metric err -k 1,3,4,10 "$T/m.letor" "$T/m.s"
    assert_success
    assert_line --index 0 "qid	err@1	err@3	err@4	err@10"
    assert_line --index 1 "1	0.437500000000	0.449218750000	0.473937988281	0.473937988281"
    assert_line --index 2 "2	0.000000000000	0.000000000000	0.000000000000	0.000000000000"
    # AP: precisions 1, 2/3, 3/4 at the relevant ranks 1, 3, 4, over 3 relevant.
    run qs_eval_rows --per-query --metric map "$T/m.letor" "$T/m.s"
    assert_success
    assert_line --index 0 "qid	map"
    assert_line --index 1 "1	0.805555555556"
    assert_line --index 3 "mean	0.402777777778"
    run qs_eval_rows --metric map -k 2,3 --like xgboost "$T/m.letor" "$T/m.s"
    assert_line --index 0 "qid	map@2	map@3"
    assert_line --index 1 "mean	0.666666666667	0.777777777778"
    run qs_eval_rows --metric p -k 1,2,3,10 --norel=skip --per-query "$T/m.letor" "$T/m.s"
    assert_line --index 1 "1	1.000000000000	0.500000000000	0.666666666667	0.750000000000"
    assert_line --index 2 "2	excluded	excluded	excluded	excluded"
    assert_line --index 3 "mean	1.000000000000	0.500000000000	0.666666666667	0.750000000000"
    run qs_eval_rows --metric p -k 4,5 --beyond=zero "$T/m.letor" "$T/m.s"
    assert_line --index 1 "mean	0.375000000000	0.000000000000"
    # A three-way tie at the top holding two relevant documents.
    printf '1 qid:1\n0 qid:1\n1 qid:1\n0 qid:1\n' > "$T/t.letor"
    printf '1\n1\n1\n0\n' > "$T/t.s"
    run qs_eval_rows --metric p -k 1,2,4 --ties=average "$T/t.letor" "$T/t.s"
    assert_line --index 1 "mean	0.666666666667	0.666666666667	0.500000000000"
    run qs_eval_rows --metric p -k 1,2 --ties=pessimistic "$T/t.letor" "$T/t.s"
    assert_line --index 1 "mean	0.000000000000	0.500000000000"
    run qs_eval_rows --metric p -k 1,2 --ties=optimistic "$T/t.letor" "$T/t.s"
    assert_line --index 1 "mean	1.000000000000	1.000000000000"
    run qs_eval_rows --metric p -k 1,2 --ties=reverse "$T/t.letor" "$T/t.s"
    assert_line --index 1 "mean	1.000000000000	0.500000000000"
    # k = 0 is the whole list.
    run qs_eval_rows -k 0,10 "$T/t.letor" "$T/t.s"
    assert_line --index 0 "qid	ndcg	ndcg@10"
}

@test "qs-eval: LETOR comments, CRLF, no final newline, lines without qid, odd score spellings, zstd" {
    printf '1 1:0 # c\r\n0 2:1 x:y anything\r\n# only a comment\r\n\r\n   \n2 qid:7 3:3 #qid:9\r\n0 qid:7' > "$T/a.letor"
    printf '0.1\r\n0.9\r\n1e-3\r\n+2.50' > "$T/a.s"
    run --separate-stderr qs_eval_rows --per-query -k 1,2 "$T/a.letor" "$T/a.s"
    assert_success
    assert_line --index 1 "	0.000000000000	0.630929753571"
    assert_line --index 2 "7	0.000000000000	0.630929753571"
    [ -z "$stderr" ]
    local want="$output"
    zstd -q -c "$T/a.letor" > "$T/a.letor.zst"
    zstd -q -c "$T/a.s" > "$T/a.s.zst"
    run qs_eval_rows --per-query -k 1,2 "$T/a.letor.zst" "$T/a.s.zst"
    assert_success
    assert_output "$want"
    # -0 ties with 0.0 and 1e-3 with 0.001: input order decides.
    printf '1 qid:1\n0 qid:1\n2 qid:2\n0 qid:2\n' > "$T/z.letor"
    printf -- '-0\n0.0\n1e-3\n0.001\n' > "$T/z.s"
    run qs_eval_rows -k 1 --per-query "$T/z.letor" "$T/z.s"
    assert_line --index 1 "1	1.000000000000"
    assert_line --index 2 "2	1.000000000000"
    run qs_eval_rows -k 1 --per-query --ties=reverse "$T/z.letor" "$T/z.s"
    assert_line --index 1 "1	0.000000000000"
    # --column picks a column of a multi-column score file; float32 rounding
    # makes 1.0000000001 and 1.0 a tie.
    printf '0 qid:1\n1 qid:1\n' > "$T/c.letor"
    printf '9\t1.0000000001\n9\t1.0\n' > "$T/c.s"
    run qs_eval_rows -k 1 --column 2 "$T/c.letor" "$T/c.s"
    assert_line --index 1 "mean	0.000000000000"
    run qs_eval_rows -k 1 --column 2 --score-type=float --ties=reverse "$T/c.letor" "$T/c.s"
    assert_line --index 1 "mean	1.000000000000"
    # A 2 MiB line (many features) is fine.
    { printf '1 qid:1'; seq 1 200000 | awk '{ printf " %d:0.5", $1 }'; printf '\n0 qid:1\n'; } > "$T/long.letor"
    printf '1\n2\n' > "$T/long.s"
    run qs_eval_rows -k 1 "$T/long.letor" "$T/long.s"
    assert_success
    assert_line --index 1 "mean	0.000000000000"
}

@test "qs-eval: a qid that comes back after another qid is warned about (block) and merged with --group=qid" {
    require_oracle
    run --separate-stderr qs_eval_rows --per-query -k 3 "$NDCG/cases/splitblock.letor" "$NDCG/cases/splitblock.scores"
    assert_success
    [ "${#lines[@]}" -eq 5 ]
    [[ "$stderr" == "qs-eval: $NDCG/cases/splitblock.letor:"[0-9]*": qid '1' comes back after another qid"* ]]
    run --separate-stderr qs_eval_rows --group=qid --per-query -k 3 "$NDCG/cases/splitblock.letor" "$NDCG/cases/splitblock.scores"
    assert_success
    [ "${#lines[@]}" -eq 4 ]
    [ -z "$stderr" ]
}

@test "qs-eval: score file shorter, longer, bad or NaN score: file, line, exit 1" {
    printf '1 qid:1 1:0\n# c\n0 qid:1 1:1\n2 qid:2\n' > "$T/d.letor"
    printf '0.5\n0.2\n' > "$T/short.s"
    run qs-eval "$T/d.letor" "$T/short.s"
    assert_failure 1
    assert_output "qs-eval: $T/d.letor:4: no score for this document ($T/short.s has only 2 lines)"
    printf '0.5\n0.2\n1\n4\n' > "$T/long.s"
    run qs-eval "$T/d.letor" "$T/long.s"
    assert_failure 1
    assert_output "qs-eval: $T/long.s:4: more scores than documents ($T/d.letor has 3)"
    printf '0.5\n0.2\n1\n\n\n' > "$T/trail.s"
    run qs-eval "$T/d.letor" "$T/trail.s"
    assert_success
    printf '0.5\nabc\n1\n' > "$T/bad.s"
    run qs-eval "$T/d.letor" "$T/bad.s"
    assert_failure 1
    assert_output "qs-eval: $T/bad.s:2: bad score 'abc' (expected a number)"
    printf '0.5\n1.5x\n1\n' > "$T/bad.s"
    run qs-eval "$T/d.letor" "$T/bad.s"
    assert_failure 1
    assert_output "qs-eval: $T/bad.s:2: bad score '1.5x' (expected a number)"
    printf '0.5\n0.1\nNaN\n' > "$T/nan.s"
    run qs-eval "$T/d.letor" "$T/nan.s"
    assert_failure 1
    assert_output "qs-eval: $T/nan.s:3: bad score 'NaN' (NaN cannot be ranked)"
    printf '0.5\n\n1\n' > "$T/hole.s"
    run qs-eval "$T/d.letor" "$T/hole.s"
    assert_failure 1
    assert_output "qs-eval: $T/hole.s:2: bad score '' (expected a number)"
    printf '0.5\n0.1\n1\n' > "$T/ok.s"
    run qs-eval --column 3 "$T/d.letor" "$T/ok.s"
    assert_failure 1
    assert_output "qs-eval: $T/ok.s:1: no score column 3 (the line has 1)"
}

@test "qs-eval: bad labels: fractional or above 30 under exp2, negative, above 4 for ERR" {
    printf '0.5\n0.2\n' > "$T/two.s"
    printf '1 qid:1\n2.5 qid:1\n' > "$T/frac.letor"
    run qs-eval "$T/frac.letor" "$T/two.s"
    assert_failure 1
    assert_output --regexp "^qs-eval: $T/frac.letor:2: bad label '2.5' \(gain exp2 needs an integer label 0..30"
    run qs-eval --gain=linear "$T/frac.letor" "$T/two.s"
    assert_success
    printf '0 qid:1\n31 qid:1\n' > "$T/big.letor"
    run qs-eval "$T/big.letor" "$T/two.s"
    assert_failure 1
    assert_output --regexp "^qs-eval: $T/big.letor:2: bad label '31'"
    printf -- '-1 qid:1\n1 qid:1\n' > "$T/neg.letor"
    run qs-eval --gain=linear "$T/neg.letor" "$T/two.s"
    assert_failure 1
    assert_output "qs-eval: $T/neg.letor:1: bad label '-1' (expected a number >= 0)"
    printf '5 qid:1\n1 qid:1\n' > "$T/five.letor"
    run qs-eval --metric err "$T/five.letor" "$T/two.s"
    assert_failure 1
    assert_output --regexp "^qs-eval: $T/five.letor:1: bad label '5' \(ERR needs an integer label 0..4"
    printf 'abc qid:1\n1 qid:1\n' > "$T/word.letor"
    run qs-eval "$T/word.letor" "$T/two.s"
    assert_failure 1
    assert_output "qs-eval: $T/word.letor:1: bad label 'abc' (expected a number)"
    printf '1 qid:1 qid:2\n' > "$T/twoqid.letor"
    run qs-eval "$T/twoqid.letor" "$T/two.s"
    assert_failure 1
    assert_output --regexp "^qs-eval: $T/twoqid.letor:1: more than one qid"
}

@test "qs-eval: empty input, NUL bytes, garbage, bad annotated lines: clean errors" {
    : > "$T/empty"
    run qs-eval "$T/empty" "$T/empty"
    assert_failure 1
    assert_output "qs-eval: $T/empty: no documents"
    printf '1\n' > "$T/one.s"
    run qs-eval "$T/empty" "$T/one.s"
    assert_failure 1
    assert_output "qs-eval: $T/one.s:1: more scores than documents ($T/empty has 0)"
    printf '# nothing but comments\n\n' > "$T/comments"
    run qs-eval "$T/comments" "$T/empty"
    assert_failure 1
    assert_output "qs-eval: $T/comments: no documents"
    run qs-eval < "$T/empty"
    assert_failure 1
    assert_output "qs-eval: (stdin): no documents"
    printf '1 qid:1\n0 qid:1 1:2\0003\n' > "$T/nul.letor"
    printf '1\n2\n' > "$T/two.s"
    run qs-eval "$T/nul.letor" "$T/two.s"
    assert_failure 1
    assert_output "qs-eval: $T/nul.letor:2: NUL byte in the line (binary input?)"
    head -c 65536 /dev/urandom > "$T/garbage"
    run qs-eval "$T/garbage" "$T/two.s"
    assert_failure 1
    assert_output --regexp "^qs-eval: $T/garbage:[0-9]+: "
    run qs-eval "$T/garbage"
    assert_failure 1
    assert_output --regexp "^qs-eval: $T/garbage:[0-9]+: "
    printf '1\t7\n' > "$T/ann"
    run qs-eval - < "$T/ann"
    assert_failure 1
    assert_output "qs-eval: (stdin):1: expected label<TAB>qid<TAB>score (as qs-score --annotate writes), found 2 fields"
    printf '1\t7\t0.5\n2\t7\tfoo\n' > "$T/ann"
    run qs-eval "$T/ann"
    assert_failure 1
    assert_output "qs-eval: $T/ann:2: bad score 'foo' (expected a number)"
    seq 1 20000 | awk '{ print $1 % 5 "\t" int($1 / 10) "\t" $1 }' | zstd -q -c | head -c 200 > "$T/trunc.zst"
    run qs-eval "$T/trunc.zst"
    assert_failure 1
    assert_output "qs-eval: $T/trunc.zst: truncated zstd stream"
    run qs-eval "$T/nonexistent" "$T/two.s"
    assert_failure 4
    assert_output --partial "qs-eval: $T/nonexistent: cannot open"
}

@test "qs-eval: usage errors exit 2 with the mistake and a pointer to --help" {
    printf '1 qid:1\n' > "$T/d.letor"
    printf '1\n' > "$T/d.s"
    local args
    for args in "--metric=foo" "-k 1,,3" "-k x" "--like foo" "--gain=cubic" "--ties=random" \
                "--norel=2" "--group=doc" "--column 0" "--metric err --ties=average" \
                "--metric map --ties=average" "--bogus" "-x"; do
        # shellcheck disable=SC2086
        run --separate-stderr qs-eval $args "$T/d.letor" "$T/d.s"
        [ "$status" -eq 2 ] || { echo "[$args] exit $status"; return 1; }
        [[ "$stderr" == "qs-eval: "*$'\n'"Try 'qs-eval --help' for more information." ]] ||
            { echo "[$args] $stderr"; return 1; }
        [ -z "$output" ]
    done
    run --separate-stderr qs-eval "$T/d.letor" "$T/d.s" "$T/d.s"
    assert_failure 2
    [[ "$stderr" == "qs-eval: too many arguments"* ]]
    run --separate-stderr qs-eval - - < /dev/null
    assert_failure 2
    run --separate-stderr qs-eval --gain
    assert_failure 2
    [[ "$stderr" == "qs-eval: option '--gain' needs a value"* ]]
}

@test "qs-eval --like-model MODEL: the convention of the library that trained the model (a .qsm, or any model qs-compile reads)" {
    local m
    # a query without relevant documents: 0 by default, 1 for LightGBM and XGBoost
    printf '0 qid:1\n0 qid:1\n2 qid:2\n0 qid:2\n' > "$T/n.letor"
    printf '0.5\n0.25\n0.1\n0.9\n' > "$T/n.s"
    qs-convert "$FIX/xgb-tiny/model.json" | qs-compile -o "$T/x.qsm" -
    qs-convert "$FIX/lgb-l8/model.txt.zst" | qs-compile -o "$T/l.qsm" -
    qs-convert "$FIX/catboost/tiny.json" | qs-compile -o "$T/c.qsm" -
    for m in x:xgboost l:lightgbm; do
        run qs_eval_rows --per-query -k 1,2 --like-model "$T/${m%%:*}.qsm" "$T/n.letor" "$T/n.s"
        assert_success
        assert_output "$(qs_eval_rows --per-query -k 1,2 --like "${m#*:}" "$T/n.letor" "$T/n.s")"
        assert_line --index 1 "$(printf '1\t1.000000000000\t1.000000000000')"
    done
    # any model qs-compile reads, opened as qs-score opens it (converted and
    # compiled in memory): the library it names, as its .qsm would
    for m in "$FIX/xgb-tiny/model.json":xgboost "$FIX/lgb-l8/model.txt.zst":lightgbm; do
        run qs_eval_rows --per-query -k 1,2 --like-model "${m%%:*}" "$T/n.letor" "$T/n.s"
        assert_success
        assert_output "$(qs_eval_rows --per-query -k 1,2 --like "${m#*:}" "$T/n.letor" "$T/n.s")"
    done
    run --separate-stderr qs_eval_rows --like-model "$FIX/catboost/tiny.json" "$T/n.letor" "$T/n.s"
    assert_failure 2
    [[ "$stderr" == "qs-eval: --like-model $FIX/catboost/tiny.json: qs-eval has no convention for the library of this model (CatBoost); give --like TOOL"* ]] || { echo "$stderr"; return 1; }
    # the defaults differ here, and options after it override it
    run qs_eval_rows --per-query -k 1,2 --like-model "$T/l.qsm" --norel=0 "$T/n.letor" "$T/n.s"
    assert_output "$(qs_eval_rows --per-query -k 1,2 "$T/n.letor" "$T/n.s")"
    assert_line --index 1 "$(printf '1\t0.000000000000\t0.000000000000')"
    run --separate-stderr qs_eval_rows --like-model "$T/c.qsm" "$T/n.letor" "$T/n.s"
    assert_failure 2
    [[ "$stderr" == "qs-eval: --like-model $T/c.qsm: qs-eval has no convention for the library of this model (CatBoost); give --like TOOL"$'\n'"Try 'qs-eval --help' for more information." ]] || { echo "$stderr"; return 1; }
    run qs_eval_rows --like-model "$T/missing.qsm" "$T/n.letor" "$T/n.s"
    assert_failure 4
    assert_output "qs-eval: $T/missing.qsm: cannot open: No such file or directory"
    run qs_eval_rows --like-model "$T/n.letor" "$T/n.letor" "$T/n.s"
    assert_failure 1
    assert_output --partial "qs-eval: $T/n.letor: "
}

@test "qs-eval: the output's first line names the convention used (every knob, the preset it equals)" {
    printf '0 qid:1\n0 qid:1\n2 qid:2\n0 qid:2\n' > "$T/n.letor"
    printf '0.5\n0.25\n0.1\n0.9\n' > "$T/n.s"
    run qs-eval "$T/n.letor" "$T/n.s"
    assert_success
    assert_line --index 0 "# ndcg: gain=exp2 ties=input norel=0 beyond=clamp discount=log2 score-type=double group=block (as --like quickrank, the default); a query without relevant documents scores 0 (1 with --norel=1, --like lightgbm or xgboost)"
    assert_line --index 1 "$(printf 'qid\tndcg@10')"
    run qs-eval --like xgboost -k 5 "$T/n.letor" "$T/n.s"
    assert_line --index 0 "# ndcg: gain=exp2 ties=input norel=1 beyond=clamp discount=log2 score-type=float group=block (as --like xgboost)"
    run qs-eval --metric err --like trec --ties=reverse "$T/n.letor" "$T/n.s"
    assert_line --index 0 "# err: gain=linear ties=reverse norel=0 beyond=clamp discount=log2 score-type=double group=qid; a query without relevant documents scores 0 (1 with --norel=1, --like lightgbm or xgboost)"
    qs-convert "$FIX/xgb-tiny/model.json" | qs-compile -o "$T/x.qsm" -
    run qs-eval --like-model "$T/x.qsm" "$T/n.letor" "$T/n.s"
    assert_line --index 0 --partial "(as --like xgboost)"
    # with --per-query too, once, first
    run qs-eval --per-query "$T/n.letor" "$T/n.s"
    assert_line --index 0 --partial "# ndcg: gain=exp2 "
    [ "$(printf '%s\n' "$output" | grep -c '^# ')" = 1 ]
}
