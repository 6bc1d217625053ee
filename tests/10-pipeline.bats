#!/usr/bin/env bats
# The pipeline on the bundled fixtures (no shared data needed):
# qs-convert | qs-compile | qs-score, per back end, and the tools' options.

load test_helper
bats_require_minimum_version 1.5.0

pipeline() { # pipeline FIXTURE_DIR MODEL_FILE WANT [qs-score options]: every back end and layout
    local dir="$FIX/$1" model="$2" want="$FIX/$1/$3"; shift 3
    qs-convert "$dir/$model" > "$BATS_TEST_TMPDIR/m.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" "$BATS_TEST_TMPDIR/m.txt"
    qs-compile --reverse-all --tree-block 9 --doc-block 3 -o "$BATS_TEST_TMPDIR/r.qsm" "$BATS_TEST_TMPDIR/m.txt"
    score_all "$BATS_TEST_TMPDIR/m.qsm" "$dir/docs.letor" "$want" "$@"
    layout_backends "$BATS_TEST_TMPDIR/r.qsm" "$dir/docs.letor" "$want" "$@"
    cp "$BATS_TEST_TMPDIR/got.${QS_BACKEND:-qs}" "$BATS_TEST_TMPDIR/out"
}

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

@test "--transform softmax rows sum to 1 (lightgbm multiclass)" {
    set -o pipefail
    qs-convert "$FIX/lgb-multiclass/model.txt.zst" | qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" -
    qs-score --transform "$BATS_TEST_TMPDIR/m.qsm" < "$FIX/lgb-multiclass/docs.letor" > "$BATS_TEST_TMPDIR/out"
    run awk -F'\t' '{ s = 0; for (i = 1; i <= NF; i++) s += $i; if (s < 0.999999 || s > 1.000001) print NR, s }' "$BATS_TEST_TMPDIR/out"
    assert_output ""
}

@test "--annotate writes label, qid and score" {
    set -o pipefail
    qs-convert "$FIX/xgb-tiny/model.json" | qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" -
    qs-score --annotate "$BATS_TEST_TMPDIR/m.qsm" < "$FIX/xgb-tiny/docs.letor" > "$BATS_TEST_TMPDIR/out"
    run head -2 "$BATS_TEST_TMPDIR/out"
    assert_line --index 0 "$(printf '0\t1\t1.01585567')"
    run awk -F'\t' 'NF != 3' "$BATS_TEST_TMPDIR/out"
    assert_output ""
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

@test "canonical text round-trips: convert(text) == text" {
    for f in lgb-l8/model.txt.zst lgb-multiclass/model.txt.zst qr-oblivious/model.xml.zst xgb-agaricus/model.json.zst; do
        qs-convert "$FIX/$f" > "$BATS_TEST_TMPDIR/a.txt"
        qs-convert "$BATS_TEST_TMPDIR/a.txt" > "$BATS_TEST_TMPDIR/b.txt"
        cmp "$BATS_TEST_TMPDIR/a.txt" "$BATS_TEST_TMPDIR/b.txt"
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

@test "qs-score --version -v lists the back ends; unknown back end is a usage error" {
    run qs-score --version -v
    assert_success
    assert_output --partial "walk"
    assert_output --partial "qs "
    assert_output --regexp "build: library [0-9.]+, openmp=[01] numa=[01] cuda=[01]"
    run qs-score --backend nosuch /dev/null
    assert_failure 2
    assert_output --partial "unknown back end 'nosuch'"
    run env QS_BACKEND=nosuch qs-score /dev/null
    assert_failure 2
}

@test "--help goes to stdout with exit 0 for every tool" {
    for t in qs-convert qs-compile qs-score qs-eval; do
        run "$t" --help
        assert_success
        assert_output --partial "usage: $t"
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

@test "baselines (STRUCT+, VPRED, OBLIVIOUS) and QS/vQS on random and fixture models equal the reference walk bit for bit" {
    run "$UNIT/test_baselines" "$FIX"
    assert_success
    assert_output --regexp "[0-9]+ checks, 0 failures"
    # All 12 fixture models it lists are found and converted (the dart model
    # with weight_drop too, since dart is read).
    assert_line "real fixture models: 12 found under $FIX"
    run grep -c "not converted" <<< "$output"
    assert_output 0
    note_missing_kernels "test_baselines"
}

# vqs_fixtures BACKEND: every fixture through BACKEND, on the compiled layout
# and on a reversed one with small blocks (δ = 3 leaves part-filled lanes).
vqs_fixtures() {
    local b="$1" f
    for f in "lgb-l8 model.txt.zst expected.txt" "lgb-multiclass model.txt.zst expected.txt" \
             "qr-oblivious model.xml.zst expected.txt" "xgb-tiny model.json expected.txt" \
             "xgb-agaricus model.json.zst expected.txt"; do
        set -- $f
        QS_BACKEND="$b" pipeline "$@"
    done
}

# cpu_lacks BACKEND REASON: when this CPU cannot run BACKEND, check that it
# is refused (exit 3, named) and skip with REASON.
cpu_lacks() {
    if ! qs-score --list-backends | grep -q "^$1	yes	"; then
        qs-convert "$FIX/lgb-l8/model.txt.zst" > "$BATS_TEST_TMPDIR/m.txt"
        qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" "$BATS_TEST_TMPDIR/m.txt"
        run qs-score --backend "$1" "$BATS_TEST_TMPDIR/m.qsm" < "$FIX/lgb-l8/docs.letor"
        assert_failure 3
        assert_output --partial "back end '$1' is not available"
        skip "$2 (checked only that --backend $1 is refused with exit 3)"
    fi
}

@test "vQS with AVX-512 (64 documents per instruction) equals the reference on every fixture" {
    cpu_lacks vqs-avx512 "this CPU lacks AVX-512 F/DQ/CD/VL/BW"
    vqs_fixtures vqs-avx512
}

@test "vQS with AVX2 (64 documents on byte planes) equals the reference on every fixture" {
    cpu_lacks vqs-avx2 "this CPU lacks AVX2"
    vqs_fixtures vqs-avx2
}

@test "the default back end is the widest vQS this CPU runs, or scalar QS" {
    local list want
    list=$(qs-score --list-backends)
    if echo "$list" | grep -q '^vqs-avx512	yes	'; then want=vqs-avx512
    elif echo "$list" | grep -q '^vqs-avx2	yes	'; then want=vqs-avx2
    else want=qs; fi
    run qs-score --version -v
    assert_output --partial "default: auto = $want"
    # --list-backends marks the same one, and only it.
    [ "$(echo "$list" | awk -F'\t' '$3 ~ /(^|,)auto(,|$)/ { print $1 }')" = "$want" ]
}

@test "QS_DISABLE_CPU_FEATURES turns SIMD levels off: auto falls back, a disabled back end is refused" {
    local list
    list=$(QS_DISABLE_CPU_FEATURES=avx512,avx2 qs-score --list-backends)
    [ "$(echo "$list" | awk -F'\t' '$3 ~ /(^|,)auto(,|$)/ { print $1 }')" = qs ]
    run env QS_DISABLE_CPU_FEATURES=avx512,avx2 qs-score --version -v
    assert_output --partial "default: auto = qs"
    qs-convert "$FIX/lgb-l8/model.txt.zst" > "$BATS_TEST_TMPDIR/m.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" "$BATS_TEST_TMPDIR/m.txt"
    run env QS_DISABLE_CPU_FEATURES=avx2 qs-score --backend vqs-avx2 "$BATS_TEST_TMPDIR/m.qsm" < "$FIX/lgb-l8/docs.letor"
    assert_failure 3
    assert_output --partial "back end 'vqs-avx2' is not available"
    # auto without SIMD still scores exactly.
    QS_DISABLE_CPU_FEATURES=all qs-score "$BATS_TEST_TMPDIR/m.qsm" < "$FIX/lgb-l8/docs.letor" > "$BATS_TEST_TMPDIR/got"
    compare_scores "$BATS_TEST_TMPDIR/got" "$FIX/lgb-l8/expected.txt"
}

@test "--list-backends: one tab-separated line per back end, every known back end listed" {
    run qs-score --list-backends
    assert_success
    local b
    for b in walk qs vqs vqs-avx2 vqs-avx512 struct vpred oblivious walk-batch cuda cuda-emu; do
        echo "$output" | grep -q "^$b	" || { echo "back end $b missing"; return 1; }
    done
    # four fields, the second yes or "no: reason", the third flags or -
    echo "$output" | awk -F'\t' 'NF != 4 || ($2 != "yes" && $2 !~ /^no: ./) || $3 == "" { bad = 1; print "bad line: " $0 } END { exit bad }'
    echo "$output" | grep -q '^walk	yes	reference[,	]'
    echo "$output" | grep -q '^struct	yes	baseline[,	]'
    echo "$output" | grep -q '^oblivious	yes	baseline,oblivious-only[,	]'
    echo "$output" | grep -q '^walk-batch	yes	threads,batch	'
}
