#!/usr/bin/env bats
bats_require_minimum_version 1.5.0
# The whole-batch door: `walk-batch` (the reference walk behind a back
# end's score_rows entry, which a device back end uses) gets whole parsed
# chunks from qs-score, --gpu-batch documents per call.  It must write the
# bytes of `walk` on every conformance oracle file (the list of
# tests/20-conformance.bats) and on the fixtures, with 1, 2 and 3 threads,
# batches that end inside queries, every input form, --annotate,
# --transform, and a bad line in the middle of a batch.

load test_helper

setup() {
    T="$BATS_TEST_TMPDIR"
    CONV="$BATS_TEST_DIRNAME/tools/letor2dense.py"
}

# compiled MODEL: its .qsm, converted and compiled once per file.
compiled() {
    local key q
    key=$(printf '%s' "$1" | cksum | cut -d' ' -f1)
    q="$BATS_FILE_TMPDIR/$key.qsm"
    if [ ! -f "$q" ]; then
        qs-convert "$1" > "$BATS_FILE_TMPDIR/$key.txt" || { echo "qs-convert $1 failed"; return 1; }
        qs-compile -o "$q" "$BATS_FILE_TMPDIR/$key.txt" || { echo "qs-compile $1 failed"; return 1; }
    fi
    echo "$q"
}

# batch_same QSM DOCS WANT [qs-score options]: walk-batch writes WANT's
# bytes with --threads 1 and 2 and batches of 7 and 1,000 documents in
# chunks of 4 KiB (chunk and batch ends inside queries), with 3 threads
# and the text read ahead while the model loads, and with the defaults.
batch_same() {
    local qsm="$1" docs="$2" want="$3" t g; shift 3
    for t in 1 2; do
        for g in 7 1000; do
            QS_CHUNK_BYTES=4096 qs-score --backend walk-batch --threads $t --gpu-batch $g "$@" \
                "$qsm" < "$docs" > "$T/batch" 2> "$T/batch.err" ||
                { echo "walk-batch --threads $t --gpu-batch $g $* failed:"; cat "$T/batch.err"; return 1; }
            cmp "$T/batch" "$want" ||
                { echo "walk-batch --threads $t --gpu-batch $g $* differs from walk ($docs)"; return 1; }
        done
    done
    QS_PARSE_AHEAD=wait QS_CHUNK_BYTES=4096 qs-score --backend walk-batch --threads 3 --gpu-batch 7 \
        "$@" "$qsm" < "$docs" > "$T/batch" || { echo "walk-batch --threads 3 (read ahead) failed"; return 1; }
    cmp "$T/batch" "$want" || { echo "walk-batch --threads 3 (read ahead) $* differs from walk"; return 1; }
    qs-score --backend walk-batch "$@" "$qsm" < "$docs" > "$T/batch" || { echo "walk-batch $* failed"; return 1; }
    cmp "$T/batch" "$want" || { echo "walk-batch (defaults) $* differs from walk"; return 1; }
}

# batch_conform MODEL DOCS ORACLE [qs-score options]: walk equals ORACLE
# bit for bit, and walk-batch writes walk's bytes (batch_same).
batch_conform() {
    local model="$1" docs="$2" oracle="$3" f q; shift 3
    for f in "$model" "$docs" "$oracle"; do
        [ -f "$f" ] || { echo "missing $f (the reference data is incomplete)"; return 1; }
    done
    q=$(compiled "$model") || return 1
    case "$docs" in
        *.zst) zstd -q -d -c "$docs" > "$T/docs" ;;
        *) cp "$docs" "$T/docs" ;;
    esac
    # Under the sanitizers, the first 1,000 documents (as conform does).
    if [ -n "${SANITIZE:-}" ] && [ "$(wc -l < "$T/docs")" -gt 1000 ] &&
        [ "$(wc -l < "$T/docs")" = "$(wc -l < "$oracle")" ]; then
        head -n 1000 "$T/docs" > "$T/d" && mv "$T/d" "$T/docs"
        head -n 1000 "$oracle" > "$T/oracle"
        oracle="$T/oracle"
    fi
    qs-score --backend walk "$@" "$q" < "$T/docs" > "$T/walk" || { echo "walk $* failed"; return 1; }
    compare_scores "$T/walk" "$oracle" || { echo "walk differs from $oracle"; return 1; }
    batch_same "$q" "$T/docs" "$T/walk" "$@" || { echo "($model)"; return 1; }
}

# oracles PATTERN: every `conform MODEL DOCS ORACLE [options]` line of
# tests/20-conformance.bats whose model path matches PATTERN, through
# batch_conform; at least one.
oracles() {
    require_oracle
    local line n=0
    while IFS= read -r line; do
        line=${line#"${line%%[! ]*}"}
        line=${line#"OBLIVIOUS=yes "}
        case "$line" in
            "conform \"\$ORACLE/$1"*) ;;
            *) continue ;;
        esac
        eval "batch_conform ${line#conform }" || return 1
        n=$((n + 1))
    done < "$BATS_TEST_DIRNAME/20-conformance.bats"
    echo "# $n oracle files" >&3
    [ "$n" -gt 0 ] || { echo "no conformance line for $1 in 20-conformance.bats"; return 1; }
}

@test "walk-batch is listed with the batch flag, never auto, never the reference" {
    run qs-score --list-backends
    assert_success
    assert_line --regexp '^walk-batch	yes	threads,batch	.'
    run qs-score --version -v
    refute_output --partial "default: auto = walk-batch"
}

@test "every LightGBM oracle file: walk-batch, 1-3 threads, batches of 7 and 1000, the bytes of walk" {
    oracles lightgbm/
}

@test "every QuickRank oracle file: walk-batch, the bytes of walk" {
    oracles quickrank/
}

@test "every XGBoost oracle file (absent missing and zero, --transform): walk-batch, the bytes of walk" {
    oracles xgboost/
}

@test "fixtures: walk-batch writes walk's bytes (double and float32 sums, multiclass, QS-Omega, linear leaves, CatBoost's scale and bias), --annotate and --transform" {
    local C="$FIX/catboost" N="$FIX/catboost-nonsym" L="$FIX/linear"
    batch_conform "$FIX/lgb-l8/model.txt.zst" "$FIX/lgb-l8/docs.letor" "$FIX/lgb-l8/expected.txt"
    batch_conform "$FIX/lgb-l8/model.txt.zst" "$FIX/lgb-l8/docs.letor" "$FIX/lgb-l8/expected.txt" --threads 1
    qs-score --backend walk --annotate "$(compiled "$FIX/lgb-l8/model.txt.zst")" "$FIX/lgb-l8/docs.letor" > "$T/annotated"
    batch_same "$(compiled "$FIX/lgb-l8/model.txt.zst")" "$FIX/lgb-l8/docs.letor" "$T/annotated" --annotate
    batch_conform "$FIX/lgb-multiclass/model.txt.zst" "$FIX/lgb-multiclass/docs.letor" "$FIX/lgb-multiclass/expected.txt"
    qs-score --backend walk --transform "$(compiled "$FIX/lgb-multiclass/model.txt.zst")" "$FIX/lgb-multiclass/docs.letor" > "$T/prob"
    batch_same "$(compiled "$FIX/lgb-multiclass/model.txt.zst")" "$FIX/lgb-multiclass/docs.letor" "$T/prob" --transform
    batch_conform "$FIX/qr-oblivious/model.xml.zst" "$FIX/qr-oblivious/docs.letor" "$FIX/qr-oblivious/expected.txt"
    batch_conform "$FIX/xgb-tiny/model.json" "$FIX/xgb-tiny/docs.letor" "$FIX/xgb-tiny/expected.txt"
    batch_conform "$FIX/xgb-agaricus/model.json.zst" "$FIX/xgb-agaricus/docs.letor" "$FIX/xgb-agaricus/expected.txt"
    batch_conform "$FIX/xgb-agaricus/model.json.zst" "$FIX/xgb-agaricus/docs.letor" "$FIX/xgb-agaricus/expected.dense.txt" --absent zero
    batch_conform "$FIX/xgb-agaricus/model.json.zst" "$FIX/xgb-agaricus/docs.letor" "$FIX/xgb-agaricus/expected.prob.txt" --transform
    batch_conform "$L/binary.txt.zst" "$L/binary.docs.letor" "$L/binary.pred.txt"
    batch_conform "$L/nan.txt.zst" "$L/nan.docs.letor" "$L/nan.pred.txt"
    SCORE_COMPARE=values batch_conform "$C/tiny.json" "$C/tiny.letor" "$C/tiny.pred"
    SCORE_COMPARE=values batch_conform "$C/multi.json" "$C/multi.letor" "$C/multi.pred"
    SCORE_COMPARE=values batch_conform "$N/depthwise.json.zst" "$N/docs.letor" "$N/depthwise.expected.txt"
}

@test "csv, tsv, f32 and csv --annotate: walk-batch writes walk's bytes" {
    local q nf
    for f in "lgb-l8 model.txt.zst zero" "xgb-agaricus model.json.zst missing" "lgb-multiclass model.txt.zst zero"; do
        set -- $f
        q=$(compiled "$FIX/$1/$2")
        python3 "$CONV" csv --header --label --qid --absent "$3" < "$FIX/$1/docs.letor" > "$T/d.csv"
        qs-score --backend walk --input csv --header --label-col label --qid-col 'query id' --annotate "$q" "$T/d.csv" > "$T/want"
        batch_same "$q" "$T/d.csv" "$T/want" --input csv --header --label-col label --qid-col 'query id' --annotate
        python3 "$CONV" tsv --label --qid --absent "$3" < "$FIX/$1/docs.letor" > "$T/d.tsv"
        nf=$(head -n 1 "$T/d.tsv" | awk -F'\t' '{ print NF }')
        qs-score --backend walk --input tsv --label-col 1 --qid-col "$nf" "$q" "$T/d.tsv" > "$T/want"
        batch_same "$q" "$T/d.tsv" "$T/want" --input tsv --label-col 1 --qid-col "$nf"
        # fewer columns than features: the rest absent, as the model says
        python3 "$CONV" csv --absent "$3" < "$FIX/$1/docs.letor" | cut -d, -f1-5 > "$T/short.csv"
        qs-score --backend walk --input csv "$q" "$T/short.csv" > "$T/want"
        batch_same "$q" "$T/short.csv" "$T/want" --input csv
        python3 "$CONV" f32 --absent "$3" < "$FIX/$1/docs.letor" > "$T/d.f32"
        nf=$(awk '{ for (i = 2; i <= NF; i++) if ($i !~ /^qid:/) { split($i, a, ":"); if (a[1] + 0 > m) m = a[1] + 0 } } END { print m + 1 }' "$FIX/$1/docs.letor")
        qs-score --backend walk --input f32 --features "$nf" "$q" "$T/d.f32" > "$T/want"
        [ "$(wc -l < "$T/want")" = "$(grep -c . "$FIX/$1/docs.letor")" ]
        batch_same "$q" "$T/d.f32" "$T/want" --input f32 --features "$nf"
        # rows of fewer values than the model's features: the rest absent
        head -c $((37 * 4 * 5)) "$T/d.f32" > "$T/few.f32"
        qs-score --backend walk --input f32 --features 5 "$q" "$T/few.f32" > "$T/want"
        batch_same "$q" "$T/few.f32" "$T/want" --input f32 --features 5
    done
}

@test "a bad line in the middle of a batch: the documents before it, the message and exit code of walk" {
    local q t g
    q=$(compiled "$FIX/lgb-l8/model.txt.zst")
    { head -n 53 "$FIX/lgb-l8/docs.letor"; echo "1 qid:9 abc:1"; tail -n +54 "$FIX/lgb-l8/docs.letor"; } > "$T/bad.letor"
    run --separate-stderr qs-score --backend walk "$q" "$T/bad.letor"
    [ "$status" = 1 ]
    [ "$stderr" = "qs-score: $T/bad.letor:54: bad feature token 'abc:1' (expected INDEX:VALUE)" ]
    [ "$output" = "$(head -n 53 "$FIX/lgb-l8/expected.txt")" ]
    for t in 1 2 3; do
        for g in 7 1000; do
            run --separate-stderr env QS_CHUNK_BYTES=4000 qs-score --backend walk-batch --threads $t --gpu-batch $g "$q" "$T/bad.letor"
            [ "$status" = 1 ] || { echo "--threads $t --gpu-batch $g: exit $status"; return 1; }
            [ "$stderr" = "qs-score: $T/bad.letor:54: bad feature token 'abc:1' (expected INDEX:VALUE)" ] ||
                { echo "--threads $t --gpu-batch $g: $stderr"; return 1; }
            [ "$output" = "$(head -n 53 "$FIX/lgb-l8/expected.txt")" ] ||
                { echo "--threads $t --gpu-batch $g: other output"; return 1; }
        done
    done
    # a bad cell in the middle of a CSV batch, and an incomplete last f32 row
    python3 "$CONV" csv --absent zero < "$FIX/lgb-l8/docs.letor" > "$T/d.csv"
    sed '40s/^[^,]*,/x1,/' "$T/d.csv" > "$T/bad.csv"
    run --separate-stderr qs-score --backend walk --input csv "$q" "$T/bad.csv"
    [ "$status" = 1 ]
    local want_err="$stderr" want_out="$output"
    [ "$(printf '%s\n' "$output" | wc -l)" = 39 ]
    for t in 1 2; do
        run --separate-stderr env QS_CHUNK_BYTES=4000 qs-score --backend walk-batch --threads $t --gpu-batch 7 --input csv "$q" "$T/bad.csv"
        [ "$status" = 1 ] && [ "$stderr" = "$want_err" ] && [ "$output" = "$want_out" ] ||
            { echo "csv, --threads $t: exit $status, $stderr"; return 1; }
    done
    python3 "$CONV" f32 --absent zero < "$FIX/lgb-l8/docs.letor" | head -c -3 > "$T/cut.f32"
    run --separate-stderr qs-score --backend walk --input f32 --features 137 "$q" "$T/cut.f32"
    [ "$status" = 1 ]
    want_err="$stderr" want_out="$output"
    for t in 1 2; do
        run --separate-stderr env QS_CHUNK_BYTES=4000 qs-score --backend walk-batch --threads $t --gpu-batch 7 --input f32 --features 137 "$q" "$T/cut.f32"
        [ "$status" = 1 ] && [ "$stderr" = "$want_err" ] && [ "$output" = "$want_out" ] ||
            { echo "f32, --threads $t: exit $status, $stderr"; return 1; }
    done
}

@test "--leaves with walk-batch: the exit leaves of every other back end" {
    local q
    q=$(compiled "$FIX/lgb-l8/model.txt.zst")
    qs-score --backend qs --leaves "$q" "$FIX/lgb-l8/docs.letor" > "$T/want"
    for t in 1 2; do
        QS_CHUNK_BYTES=4000 qs-score --backend walk-batch --gpu-batch 7 --threads $t --leaves "$q" "$FIX/lgb-l8/docs.letor" > "$T/got"
        cmp "$T/got" "$T/want"
    done
}

@test "--gpu-batch and --device: 0, garbage and negatives refused with a short usage error (exit 2)" {
    local q
    q=$(compiled "$FIX/lgb-l8/model.txt.zst")
    for v in 0 -1 abc 7x "" 16777217 99999999999999999999; do
        run --separate-stderr qs-score --backend walk-batch --gpu-batch "$v" "$q" "$FIX/lgb-l8/docs.letor"
        [ "$status" = 2 ] || { echo "--gpu-batch '$v': exit $status"; return 1; }
        [ "$stderr" = "qs-score: bad --gpu-batch '$v' (expected 1..16777216)
Try 'qs-score --help' for more information." ] || { echo "$stderr"; return 1; }
        [ -z "$output" ]
    done
    for v in -1 -0 +0 " 1" abc 1.5 "" 99999999999; do
        run --separate-stderr qs-score --device "$v" "$q" "$FIX/lgb-l8/docs.letor"
        [ "$status" = 2 ] || { echo "--device '$v': exit $status"; return 1; }
        [ "$stderr" = "qs-score: bad --device '$v' (expected a device ordinal, 0 or more)
Try 'qs-score --help' for more information." ] || { echo "$stderr"; return 1; }
    done
    # a device ordinal is accepted by every back end (those without a
    # device ignore it), and --gpu-batch by those that take no batches
    qs-score --device 3 --gpu-batch 5 --backend qs "$q" "$FIX/lgb-l8/docs.letor" > "$T/got"
    cmp "$T/got" "$FIX/lgb-l8/expected.txt"
    qs-score --device 1 --backend walk-batch "$q" "$FIX/lgb-l8/docs.letor" > "$T/got"
    cmp "$T/got" "$FIX/lgb-l8/expected.txt"
    # the largest batch is accepted (and held within 256 MiB)
    qs-score --gpu-batch 16777216 --backend walk-batch "$q" "$FIX/lgb-l8/docs.letor" > "$T/got"
    cmp "$T/got" "$FIX/lgb-l8/expected.txt"
    run qs-score --help
    assert_output --partial "--gpu-batch N"
    assert_output --partial "--device N"
}

@test "a batch's memory stays bounded: fewer documents per batch for a model of many features" {
    # xgb-tiny declared with 2^20 features: a row is 8 MiB, so a batch of
    # 65,536 rows would be 512 GiB; it shrinks to 31 rows (256 MiB).
    qs-convert "$FIX/xgb-tiny/model.json" | sed 's/^features 47$/features 1048576/' > "$T/wide.txt"
    grep -q '^features 1048576$' "$T/wide.txt"
    qs-compile -o "$T/wide.qsm" "$T/wide.txt"
    local base
    base=$(san_rss qs-score)
    /usr/bin/time -f %M -o "$T/rss" qs-score --backend walk-batch --threads 1 "$T/wide.qsm" \
        "$FIX/xgb-tiny/docs.letor" > "$T/got"
    compare_scores "$T/got" "$FIX/xgb-tiny/expected.txt"
    # 31 rows of 8 MiB, the workspace's 32 MiB and the model: under 400 MiB
    # (the 150 documents in one batch would touch 1.2 GiB)
    [ "$(tail -n 1 "$T/rss")" -lt $((400 * 1024 + base)) ] || { echo "peak RSS $(tail -n 1 "$T/rss") KB"; return 1; }
}
