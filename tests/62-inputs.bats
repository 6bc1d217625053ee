#!/usr/bin/env bats
bats_require_minimum_version 1.5.0
# qs-score --input csv|tsv|f32: the same documents as LETOR, written as CSV,
# TSV or raw float32 rows (tests/tools/letor2dense.py), give the same bytes
# as the LETOR path, with 1, 2 and 3 threads; hostile dense inputs are
# refused with file:line:column (text) or the byte offset (f32).

load test_helper

setup() {
    T="$BATS_TEST_TMPDIR"
    CONV="$BATS_TEST_DIRNAME/tools/letor2dense.py"
}

# compiled FILE: the model's .qsm (cached per file)
compiled() {
    local key q
    key=$(printf '%s' "$1" | cksum | cut -d' ' -f1)
    q="$BATS_FILE_TMPDIR/$key.qsm"
    if [ ! -f "$q" ]; then
        qs-convert "$1" | qs-compile -o "$q" || return 1
    fi
    echo "$q"
}

# same_as QSM DOCS WANT [qs-score options]: --threads 1, 2 and 3 (chunks of
# 700 bytes, so chunk boundaries fall everywhere) write WANT.
same_as() {
    local qsm="$1" docs="$2" want="$3" t; shift 3
    for t in 1 2 3; do
        QS_CHUNK_BYTES=700 qs-score --threads $t "$@" "$qsm" < "$docs" > "$T/got.$t" ||
            { echo "qs-score --threads $t $* failed"; return 1; }
        compare_scores "$T/got.$t" "$want" || { echo "(--threads $t $*)"; return 1; }
    done
}

# dense_all QSM LETOR WANT ABSENT [qs-score options]: the LETOR file as CSV
# (with a header, label and qid), TSV (label and qid by number, no header)
# and bare CSV, each scored as WANT says; then as f32 rows against the
# LETOR path on the same values rounded to float32.
dense_all() {
    local qsm="$1" letor="$2" want="$3" absent="$4"; shift 4
    python3 "$CONV" csv --header --label --qid --absent "$absent" < "$letor" > "$T/d.csv"
    same_as "$qsm" "$T/d.csv" "$want" --input csv --header --label-col label --qid-col 'query id' "$@"
    python3 "$CONV" tsv --label --qid --absent "$absent" < "$letor" > "$T/d.tsv"
    local ncol
    ncol=$(head -n 1 "$T/d.tsv" | awk -F'\t' '{ print NF }')
    same_as "$qsm" "$T/d.tsv" "$want" --input tsv --label-col 1 --qid-col "$ncol" "$@"
    python3 "$CONV" csv --absent "$absent" < "$letor" > "$T/bare.csv"
    same_as "$qsm" "$T/bare.csv" "$want" --input csv "$@"
    # f32: the LETOR twin holds the same float32 values
    python3 "$CONV" f32 --absent "$absent" < "$letor" > "$T/d.f32"
    python3 "$CONV" letor-f32 < "$letor" > "$T/twin.letor"
    local nf
    nf=$(awk '{ for (i = 2; i <= NF; i++) if ($i !~ /^qid:/) { split($i, a, ":"); if (a[1] + 0 > m) m = a[1] + 0 } } END { print m + 1 }' "$letor")
    qs-score --absent "$absent" "$@" "$qsm" "$T/twin.letor" > "$T/twin.scores"
    same_as "$qsm" "$T/d.f32" "$T/twin.scores" --input f32 --features "$nf" "$@"
}

@test "csv, tsv, f32: XGBoost (float32, absent = missing) as its oracle" {
    local q
    q=$(compiled "$FIX/xgb-tiny/model.json")
    dense_all "$q" "$FIX/xgb-tiny/docs.letor" "$FIX/xgb-tiny/expected.txt" missing
    # the twin is not the oracle file, but the same documents' float32 values
    compare_scores "$T/twin.scores" "$FIX/xgb-tiny/expected.txt"
    q=$(compiled "$FIX/xgb-agaricus/model.json.zst")
    dense_all "$q" "$FIX/xgb-agaricus/docs.letor" "$FIX/xgb-agaricus/expected.dense.txt" zero
    python3 "$CONV" csv --label < "$FIX/xgb-agaricus/docs.letor" > "$T/p.csv"
    same_as "$q" "$T/p.csv" "$FIX/xgb-agaricus/expected.prob.txt" --transform --input csv --label-col 1
}

@test "csv, tsv, f32: LightGBM (double, absent = zero), ranking and multiclass" {
    local q
    q=$(compiled "$FIX/lgb-l8/model.txt.zst")
    dense_all "$q" "$FIX/lgb-l8/docs.letor" "$FIX/lgb-l8/expected.txt" zero
    q=$(compiled "$FIX/lgb-multiclass/model.txt.zst")
    dense_all "$q" "$FIX/lgb-multiclass/docs.letor" "$FIX/lgb-multiclass/expected.txt" zero
    qs-score --transform "$q" "$FIX/lgb-multiclass/docs.letor" > "$T/prob"
    same_as "$q" "$T/d.csv" "$T/prob" --transform --input csv --header --label-col label --qid-col 'query id'
    qs-score --transform "$q" "$T/twin.letor" > "$T/twin.prob"
    same_as "$q" "$T/d.f32" "$T/twin.prob" --transform --input f32 --features 29
}

@test "csv, tsv, f32: shared oracles (LightGBM NaN rules, XGBoost higgs)" {
    require_oracle
    local m="$ORACLE/lightgbm/models/nan_nantype_l31_t300" q
    q=$(compiled "$m/model.txt")
    dense_all "$q" "$ORACLE/lightgbm/data/rank_nan.test.letor" "$m/pred_raw.txt" zero
    m="$ORACLE/xgboost/higgs-logistic-lg32-t500"
    q=$(compiled "$m/model.json")
    dense_all "$q" "$ORACLE/svmlight/higgs/test.txt" "$m/test.pred.missing.txt" missing
}

@test "csv --annotate: the LETOR path's label and qid columns, for qs-eval" {
    local q
    q=$(compiled "$FIX/lgb-l8/model.txt.zst")
    qs-score --annotate "$q" "$FIX/lgb-l8/docs.letor" > "$T/want"
    python3 "$CONV" csv --header --label --qid --absent zero < "$FIX/lgb-l8/docs.letor" > "$T/d.csv"
    same_as "$q" "$T/d.csv" "$T/want" --annotate --input csv --header --label-col label --qid-col 'query id'
    qs-score --annotate "$q" "$FIX/lgb-l8/docs.letor" | qs-eval > "$T/e1"
    qs-score --annotate --input csv --header --label-col label --qid-col 'query id' "$q" "$T/d.csv" |
        qs-eval > "$T/e2"
    cmp "$T/e1" "$T/e2"
    # -o: the file appears complete
    qs-score --input csv --header --label-col label -o "$T/out" "$q" "$T/d.csv"
    compare_scores "$T/out" "$FIX/lgb-l8/expected.txt"
    # zstd-compressed csv and f32 on standard input
    zstd -q -c "$T/d.csv" | qs-score --input csv --header --label-col label "$q" - > "$T/z"
    compare_scores "$T/z" "$FIX/lgb-l8/expected.txt"
    python3 "$CONV" f32 --absent zero < "$FIX/lgb-l8/docs.letor" > "$T/d.f32"
    qs-score --input f32 --features 301 "$q" "$T/d.f32" > "$T/f1"
    zstd -q -c "$T/d.f32" | qs-score --input f32 --features 301 "$q" > "$T/f2"
    cmp "$T/f1" "$T/f2"
}

@test "csv: quoting, spaces, CRLF, NA spellings, blank lines, name:COL" {
    local q
    q=$(compiled "$FIX/xgb-tiny/model.json")
    # column names with a comma, a doubled quote and digits
    python3 "$CONV" csv --label --qid < "$FIX/xgb-tiny/docs.letor" |
        awk 'NR == 1 { n = split($0, a, ","); printf "\"rel, graded\""; for (i = 2; i < n; i++) printf ",\"f \"\"%d\"\"\"", i; print ",\"7\"" }
             { sub(/,$/, ",\"\""); print }' > "$T/q.csv"
    # the first data row is written twice above: as the header source and as a row
    qs-score --input csv --header --label-col 'rel, graded' --qid-col name:7 "$q" "$T/q.csv" > "$T/got"
    compare_scores "$T/got" "$FIX/xgb-tiny/expected.txt"
    # NA, nan, NULL, spaces around cells, CRLF and blank lines: the same documents
    python3 "$CONV" csv --label < "$FIX/xgb-tiny/docs.letor" |
        awk 'NR % 4 == 0 { print "" } { n = split($0, a, ","); s = ""; for (i = 1; i <= n; i++) { c = a[i];
             if (c == "") c = (i % 3 == 0) ? "NA" : (i % 3 == 1) ? " nan " : "NULL"; s = s (i > 1 ? "," : "") " " c } print s "\r" }' > "$T/na.csv"
    qs-score --input csv --label-col 1 "$q" "$T/na.csv" > "$T/got"
    compare_scores "$T/got" "$FIX/xgb-tiny/expected.txt"
}

@test "csv: columns after the label move down; the qid column keeps its number" {
    # LightGBM's numbering: label, qid, then the LETOR ids 1.. (feature 0,
    # which these documents never use, is the qid column's number)
    local q
    q=$(compiled "$FIX/lgb-l8/model.txt.zst")
    python3 "$CONV" csv --label --qid --absent zero < "$FIX/lgb-l8/docs.letor" |
        awk -F, -v OFS=, '{ s = $1 OFS $NF; for (i = 3; i < NF; i++) s = s OFS $i; print s }' > "$T/lq.csv"
    qs-score --input csv --label-col 1 --qid-col 2 "$q" "$T/lq.csv" > "$T/got"
    compare_scores "$T/got" "$FIX/lgb-l8/expected.txt"
    # the same rows with the qid column dropped would shift every feature:
    # the scores change, so the numbering is what decides them
    cut -d, -f1,3- "$T/lq.csv" > "$T/l.csv"
    qs-score --input csv --label-col 1 "$q" "$T/l.csv" > "$T/shifted"
    if cmp -s "$T/shifted" "$FIX/lgb-l8/expected.txt"; then
        echo "shifted columns gave the same scores: the test cannot tell numberings apart"
        return 1
    fi
    qs-score --annotate --input csv --label-col 1 --qid-col 2 "$q" "$T/lq.csv" | head -n 1 > "$T/ann"
    [[ "$(cat "$T/ann")" == $'2\t1\t'* ]]
}

# refuse CODE PATTERN ARGS...: qs-score -o fails with CODE, the message
# matches, and no output file is left.
refuse() {
    local code="$1" pattern="$2"; shift 2
    run qs-score -o "$T/out" "$@"
    assert_failure "$code"
    assert_output --regexp "^qs-score: .*$pattern"
    [ ! -e "$T/out" ] || { echo "output file left behind"; return 1; }
}

@test "csv, tsv: bad cells, ragged rows, header mismatch, quotes: file:line:column" {
    local q
    q=$(compiled "$FIX/lgb-l8/model.txt.zst")
    printf '1,2,3\n4,abc,6\n' > "$T/a.csv"
    refuse 1 "a.csv:2:2: bad cell 'abc' \(expected a number" --input csv "$q" "$T/a.csv"
    printf '1,2,3\n4,5\n' > "$T/b.csv"
    refuse 1 "b.csv:2:3: 2 cells, expected 3" --input csv "$q" "$T/b.csv"
    printf '1,2,3\n\n4,5,6,7,8\n' > "$T/c.csv"
    refuse 1 "c.csv:3:4: 5 cells, expected 3" --input csv "$q" "$T/c.csv"
    printf 'rel,a,b\n1,2,3\n4,5,6,7\n' > "$T/h.csv"
    refuse 1 "h.csv:3:4: 4 cells, expected 3" --input csv --header --label-col rel "$q" "$T/h.csv"
    printf 'rel,a,b\n1,2,3\n' > "$T/h2.csv"
    refuse 1 "h2.csv:1: no column named 'qid' in the header" --input csv --header --qid-col qid "$q" "$T/h2.csv"
    refuse 1 "h2.csv:1:1: bad cell 'rel'.*a header row\? \(--header\)" --input csv "$q" "$T/h2.csv"
    refuse 1 "h2.csv:1: --label-col 4: the header has 3 columns" --input csv --header --label-col 4 "$q" "$T/h2.csv"
    printf 'x,a,x\n1,2,3\n' > "$T/d.csv"
    refuse 1 "d.csv:1: two columns are named 'x'" --input csv --header --label-col x "$q" "$T/d.csv"
    printf '1,2\n1,"2\n' > "$T/u.csv"
    refuse 1 "u.csv:2:2: unterminated quoted cell" --input csv "$q" "$T/u.csv"
    printf '1,"2"x\n' > "$T/x.csv"
    refuse 1 "x.csv:1:2: text after the closing quote" --input csv "$q" "$T/x.csv"
    # a quote inside an unquoted cell is text: the column still counts cells
    # as the reader splits them (found by fuzz_dsv)
    printf '1,2"x,3,"4"y\n' > "$T/x2.csv"
    refuse 1 "x2.csv:1:4: text after the closing quote" --input csv "$q" "$T/x2.csv"
    printf 'a\t1\n' > "$T/l.tsv"
    refuse 1 "l.tsv:1:1: bad label 'a'" --input tsv --label-col 1 "$q" "$T/l.tsv"
    printf '1\tNA\t1\n' > "$T/l2.tsv"
    refuse 1 "l2.tsv:1:2: bad label 'NA'" --input tsv --label-col 2 "$q" "$T/l2.tsv"
    printf '1,"a\tb",3\n' > "$T/qid.csv"
    refuse 1 "qid.csv:1:2: bad qid" --input csv --qid-col 2 "$q" "$T/qid.csv"
    # the first bad row is reported after every document before it, with threads too
    { for i in $(seq 1 500); do echo "1,2,3"; done; echo "1,2,zz"; } > "$T/late.csv"
    for t in 1 3; do
        QS_CHUNK_BYTES=100 run --separate-stderr qs-score --threads $t --input csv "$q" "$T/late.csv"
        assert_failure 1
        [ "$(printf '%s\n' "$output" | wc -l)" = 500 ]
        [ "$stderr" = "qs-score: $T/late.csv:501:3: bad cell 'zz' (expected a number, or empty, NA, NaN or null for a missing value)" ]
    done
}

@test "csv: a wide row, a huge cell, and a line over the 256 MiB limit" {
    local q
    q=$(compiled "$FIX/lgb-l8/model.txt.zst")
    # 2 million cells: features beyond the model's are ignored, with a warning
    awk 'BEGIN { for (i = 0; i < 2000000; i++) printf "%s1", (i ? "," : ""); print "" }' > "$T/wide.csv"
    run qs-score --input csv "$q" "$T/wide.csv"
    assert_success
    assert_line --partial "wide.csv:1: feature id 1999999 is beyond the model's 301 features"
    refuse 1 "wide.csv:1: feature id 1999999 is beyond" --strict-features --input csv "$q" "$T/wide.csv"
    awk 'BEGIN { printf "1,"; for (i = 0; i < 2000000; i++) printf "7"; print "" }' > "$T/cell.csv"
    refuse 1 "cell.csv:1:2: bad cell '7777" --input csv "$q" "$T/cell.csv"
    # the first line (read before the threads start) and a later one
    run bash -c "head -c 270000000 /dev/zero | tr '\\0' 1 | qs-score --input csv '$q'"
    assert_failure 1
    assert_output "qs-score: (stdin):1: line longer than 256 MiB"
    run bash -c "{ printf '1\\t2\\n'; head -c 270000000 /dev/zero | tr '\\0' 1; } | qs-score --input tsv '$q'"
    assert_failure 1
    assert_line "qs-score: (stdin):2: line longer than 256 MiB"
}

@test "f32: an incomplete last row names its byte offset; rows before it are scored" {
    local q
    q=$(compiled "$FIX/xgb-tiny/model.json")
    python3 "$CONV" f32 --features 47 < "$FIX/xgb-tiny/docs.letor" | head -c $((188 * 20 + 61)) > "$T/p.f32"
    for t in 1 2; do
        QS_CHUNK_BYTES=400 run --separate-stderr qs-score --threads $t --input f32 --features 47 "$q" "$T/p.f32"
        assert_failure 1
        [ "$(printf '%s\n' "$output" | wc -l)" = 20 ]
        [ "$stderr" = "qs-score: $T/p.f32: byte 3760: incomplete last row (61 of its 188 bytes; --features 47 makes rows of 188 bytes)" ]
    done
    head -n 20 "$FIX/xgb-tiny/expected.txt" > "$T/want20"
    QS_CHUNK_BYTES=400 qs-score --input f32 --features 47 "$q" < "$T/p.f32" 2> /dev/null | cmp - "$T/want20"
    refuse 1 "byte 3760: incomplete last row" --input f32 --features 47 "$q" "$T/p.f32"
    # rows wider than the model (47 values for 47 features is exact; 50 warns)
    python3 "$CONV" f32 --features 50 < "$FIX/xgb-tiny/docs.letor" > "$T/w.f32"
    run --separate-stderr qs-score --input f32 --features 50 "$q" "$T/w.f32"
    assert_success
    [[ "$stderr" == *"--features 50 is beyond the model's 47 features"* ]]
    refuse 1 "--features 50 is beyond the model's 47 features" --strict-features --input f32 --features 50 "$q" "$T/w.f32"
}

@test "empty inputs: no documents, except csv --header, which needs its header" {
    local q
    q=$(compiled "$FIX/xgb-tiny/model.json")
    for args in "--input csv" "--input tsv" "--input f32 --features 3"; do
        run qs-score $args "$q" /dev/null
        assert_success
        assert_output ""
    done
    printf '\n\r\n  \n' > "$T/blank.csv"
    run qs-score --input csv "$q" "$T/blank.csv"
    assert_success
    assert_output ""
    refuse 1 "no header row \(the input is empty" --input csv --header "$q" /dev/null
    refuse 1 "blank.csv: no header row" --input csv --header "$q" "$T/blank.csv"
}

@test "--input: usage errors (exit 2)" {
    local q
    q=$(compiled "$FIX/xgb-tiny/model.json")
    refuse 2 "bad --input 'json'" --input json "$q"
    refuse 2 "--header needs --input csv or tsv" --header "$q"
    refuse 2 "--label-col needs --input csv or tsv" --label-col 1 --input f32 --features 2 "$q"
    refuse 2 "--input f32 needs --features N" --input f32 "$q"
    refuse 2 "--features needs --input f32" --features 3 "$q"
    refuse 2 "bad --features '0'" --input f32 --features 0 "$q"
    refuse 2 "--label-col 'rel' is a name: it needs --header" --input csv --label-col rel "$q"
    refuse 2 "bad --qid-col '0' \(columns are numbered from 1\)" --input csv --qid-col 0 "$q"
    refuse 2 "--annotate needs labels: --input f32 has none" --annotate --input f32 --features 3 "$q"
    refuse 2 "--annotate needs --label-col with --input csv" --annotate --input csv "$q"
    printf '1,2\n' > "$T/s.csv"
    refuse 2 "--label-col and --qid-col name the same column \(2\)" --input csv --label-col 2 --qid-col 2 "$q" "$T/s.csv"
}

@test "csv --header whose first column looks like a label (label, target, relevance, y) and no --label-col: a warning, the scores as before" {
    local t="$BATS_TEST_TMPDIR" name
    qs-convert "$FIX/lgb-l8/model.txt.zst" | qs-compile -o "$t/m.qsm"
    for name in label Target relevance y; do
        printf '%s,f1,f2\n1,0.5,0.2\n0,0.1,0.9\n' "$name" > "$t/h.csv"
        run --separate-stderr qs-score --input csv --header "$t/m.qsm" "$t/h.csv"
        assert_success
        [ "$stderr" = "qs-score: $t/h.csv:1: warning: the first column is named '$name' but is read as feature 0 (a label? --label-col $name, or --label-col 1)" ] ||
            { echo "stderr: $stderr"; return 1; }
        [ "$(printf '%s\n' "$output" | wc -l)" = 2 ]
        # with --label-col, or another name, no warning
        run --separate-stderr qs-score --input csv --header --label-col "$name" "$t/m.qsm" "$t/h.csv"
        assert_success
        [ -z "$stderr" ]
    done
    printf 'f0,f1,f2\n1,0.5,0.2\n' > "$t/h.csv"
    run --separate-stderr qs-score --input csv --header "$t/m.qsm" "$t/h.csv"
    assert_success
    [ -z "$stderr" ]
}
