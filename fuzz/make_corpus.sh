#!/bin/sh
# make_corpus.sh: regenerates the derived seeds of fuzz/corpus/<target>/ (files named gen-*) from tests/fixtures and, the oracle data (build/oracle, unpacked by make from tests/oracle): models cut to a few trees, their canonical text, compiled .qsm (packed and unpacked), LETOR lines and qs-eval inputs.
#
# Usage: fuzz/make_corpus.sh        (after `make`; uses bin/qs-convert, bin/qs-compile, bin/qs-score)
# Env:   QS_BIN=dir of the tools (default bin/), QS_ORACLE_DATA=the oracle data (default build/oracle),
#        CC=compiler for the small unpack helper (default cc).
# Hand-written seeds (hand-*), minimised findings (min-*) and the inputs a
# campaign added for coverage (cov-*) are left alone.
# Every seed is kept under 64 KB; a model too large even when cut is skipped.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
BIN=${QS_BIN:-$root/bin}
SHARED=${QS_ORACLE_DATA:-$root/build/oracle}
FIX=tests/fixtures
C=fuzz/corpus
MAX=65535
for t in qs-convert qs-compile qs-score; do
    [ -x "$BIN/$t" ] || { echo "make_corpus.sh: $BIN/$t not found: run make first" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for t in lightgbm xgboost xgboost_bin catboost cbm quickrank text qsm letor eval; do
    mkdir -p "$C/$t"
    rm -f "$C/$t"/gen-*
done

# keep SRC DEST: copy a seed if it is small enough (say so otherwise).
keep() {
    if [ "$(wc -c < "$1")" -gt "$MAX" ]; then
        echo "make_corpus.sh: skipping $2 ($(wc -c < "$1") bytes)" >&2
        return 0
    fi
    cat "$1" > "$2"
}

# plain FILE: print a model, decompressing .zst.
plain() {
    case "$1" in
        *.zst) zstd -q -d -c "$1" ;;
        *) cat "$1" ;;
    esac
}

# LightGBM text: header, the first K trees (tree_sizes cut to match), end of trees.
lgb_cut() {
    plain "$1" | awk -v k="$2" '
        /^Tree=/ { t++; if (t > k) skip = 1 }
        /^end of trees/ { print; exit }
        skip { next }
        /^tree_sizes=/ {
            n = split(substr($0, 12), a, " "); s = "tree_sizes="
            for (i = 1; i <= k && i <= n; i++) s = s (i > 1 ? " " : "") a[i]
            print s; next
        }
        { print }'
}

# QuickRank XML: the first K trees, <trees> set to K, the document closed.
qr_cut() {
    plain "$1" | awk -v k="$2" '
        /<trees>[0-9]+<\/trees>/ { sub(/<trees>[0-9]+<\/trees>/, "<trees>" k "</trees>") }
        { print }
        /<\/tree>/ { t++; if (t == k) { print "\t</ensemble>"; print "</ranker>"; exit } }'
}

# ------------------------------------------------------------ lightgbm
keep "$FIX/lightgbm/mixed.model.txt" "$C/lightgbm/gen-mixed.txt"
lgb_cut "$FIX/lgb-l8/model.txt.zst" 3 > "$tmp/m"; keep "$tmp/m" "$C/lightgbm/gen-l8-t3.txt"
lgb_cut "$FIX/lgb-multiclass/model.txt.zst" 10 > "$tmp/m"; keep "$tmp/m" "$C/lightgbm/gen-multiclass-t10.txt"
# linear trees: NaN-trained leaves, and stumps (oblivious, so QS-Omega)
lgb_cut "$FIX/linear/nan.txt.zst" 3 > "$tmp/m"; keep "$tmp/m" "$C/lightgbm/gen-linear-nan-t3.txt"
lgb_cut "$FIX/linear/stumps.txt.zst" 4 > "$tmp/m"; keep "$tmp/m" "$C/lightgbm/gen-linear-stumps-t4.txt"
if [ -d "$SHARED/lightgbm/models" ]; then
    for m in binary_l31_t200 categorical_l31_t200 nan_nantype_l31_t300 nan_usemissingfalse_l31_t300 \
             nan_zeroasmissing_l31_t300 regression_l31_t300 lineartree_l15_t20 lambdarank_l64_t100; do
        f="$SHARED/lightgbm/models/$m/model.txt"
        [ -f "$f" ] || continue
        lgb_cut "$f" 2 > "$tmp/m"; keep "$tmp/m" "$C/lightgbm/gen-$m-t2.txt"
    done
else
    echo "make_corpus.sh: no oracle data at $SHARED (make oracle): fixture seeds only" >&2
fi

# ------------------------------------------------------------ xgboost
keep "$FIX/xgb-tiny/model.json" "$C/xgboost/gen-tiny.json"
plain "$FIX/xgb-agaricus/model.json.zst" > "$tmp/m"; keep "$tmp/m" "$C/xgboost/gen-agaricus.json"
for f in "$FIX"/xgboost/*.json "$FIX"/xgboost/*.ubj; do
    keep "$f" "$C/xgboost/gen-$(basename "$f")"
done

# ------------------------------------------------------------ xgboost_bin
# XGBoost's binary format: tiny models by XGBoost 1.7.6 and 1.0.2 (no
# "binf"), gblinear, and the version-0 and version-2 refusals
for f in "$FIX"/xgboost-binary/seed-*.model "$FIX"/xgboost-binary/refuse-*.model; do
    keep "$f" "$C/xgboost_bin/gen-$(basename "$f")"
done

# ------------------------------------------------------------ catboost
for f in "$FIX"/catboost/*.json; do
    keep "$f" "$C/catboost/gen-$(basename "$f")"
done
# CatBoost's own JSON with a categorical feature (one-hot, saved with its
# pool, CTRs): refused naming it
for n in onehot onehot-pool ctr; do
    plain "$FIX/catboost-ntree/$n.json.zst" > "$tmp/m"; keep "$tmp/m" "$C/catboost/gen-cat-$n.json"
done
if [ -f "$SHARED/catboost/models/single_tree/model.json" ]; then
    keep "$SHARED/catboost/models/single_tree/model.json" "$C/catboost/gen-single_tree.json"
fi

# ------------------------------------------------------------ cbm
# CatBoost .cbm models written by tests/tools/cbm_forge.py from the specs of
# tests/fixtures/catboost-cbm/forge (small: no InfoMap of CatBoost's own)
for f in "$FIX"/catboost-cbm/forge/*.json; do
    python3 tests/tools/cbm_forge.py "$f" "$tmp/m"
    keep "$tmp/m" "$C/cbm/gen-$(basename "$f" .json).cbm"
done

# ------------------------------------------------------------ quickrank
for f in "$FIX"/quickrank/*.xml "$FIX"/quickrank/ranklib_*.txt "$FIX"/quickrank/bad_random_forest.txt \
         "$FIX"/quickrank/bad_garbage.bin; do
    keep "$f" "$C/quickrank/gen-$(basename "$f")"
done
qr_cut "$FIX/qr-oblivious/model.xml.zst" 3 > "$tmp/m"; keep "$tmp/m" "$C/quickrank/gen-oblivious-t3.xml"
if [ -f "$SHARED/quickrank/models/qr_lambdamart_l8_t100/model.xml" ]; then
    qr_cut "$SHARED/quickrank/models/qr_lambdamart_l8_t100/model.xml" 3 > "$tmp/m"
    keep "$tmp/m" "$C/quickrank/gen-lambdamart-l8-t3.xml"
fi

# ------------------------------------------------------------ text and qsm
# Every model seed that converts gives a canonical text seed, and that text
# a .qsm (as qs-compile writes it, zstd sections) and its unpacked twin
# (stored sections, records open to mutation).
${CC:-cc} -std=c11 -O1 -D_GNU_SOURCE -Iinclude -Ilib -o "$tmp/qsm_unpack" fuzz/qsm_unpack.c lib/common/crc32c.c \
    lib/common/cpu.c -lzstd
# (ONNX opset-1/3 regressors with a double input: the output rounded to
# float32, INFO's 1.5 extension, as XGBoost forests' trees per iteration)
for f in "$C"/lightgbm/gen-* "$C"/xgboost/gen-* "$C"/xgboost_bin/gen-seed-* "$C"/catboost/gen-* \
         "$C"/quickrank/gen-* "$FIX"/onnx-double/dbl000.onnx "$FIX"/onnx-double/dbl001.onnx; do
    base=$(basename "$(dirname "$f")")-$(basename "$f" | sed 's/^gen-//; s/\.[a-z]*$//')
    "$BIN/qs-convert" "$f" > "$tmp/t" 2>/dev/null || continue
    keep "$tmp/t" "$C/text/gen-$base.txt"
    [ -f "$C/text/gen-$base.txt" ] || continue
    "$BIN/qs-compile" -o "$tmp/q" "$tmp/t"
    keep "$tmp/q" "$C/qsm/gen-$base.qsm"
    "$tmp/qsm_unpack" "$tmp/q" "$tmp/u" && keep "$tmp/u" "$C/qsm/gen-$base.raw.qsm"
done
# Other layouts: every tree reversed, blocks of 2 trees and 5 documents, Δ 3.
for base in xgboost-tiny lightgbm-mixed quickrank-oblivious-t3 lightgbm-multiclass-t10; do
    [ -f "$C/text/gen-$base.txt" ] || continue
    "$BIN/qs-compile" --reverse-all --tree-block 2 --doc-block 5 --delta 3 -o "$tmp/q" \
        "$C/text/gen-$base.txt"
    "$tmp/qsm_unpack" "$tmp/q" "$tmp/u" && keep "$tmp/u" "$C/qsm/gen-$base.rev.raw.qsm"
done

# ------------------------------------------------------------ letor
for d in lgb-l8 xgb-tiny xgb-agaricus lgb-multiclass; do
    head -n 4 "$FIX/$d/docs.letor" > "$C/letor/gen-$d.letor"
done
head -n 4 "$FIX/lightgbm/mixed.docs.letor" > "$C/letor/gen-lightgbm-mixed.letor"
cat "$FIX/quickrank/tiny.letor" > "$C/letor/gen-quickrank-tiny.letor"
cat "$FIX/quickrank/ranklib.letor" > "$C/letor/gen-ranklib.letor"

# ------------------------------------------------------------ eval
# Control line (fuzz_eval.c): metric gain ties norel beyond discount
# score-type group mode column-1, then cutoffs.  Mode 0 is LETOR, "%%",
# scores; mode 1 annotated lines.
eval_seed() { # NAME CONTROL LETOR SCORES
    { printf '%s\n' "$2"; cat "$3"; printf '%%%%\n'; cat "$4"; } > "$tmp/e"
    keep "$tmp/e" "$C/eval/gen-$1"
}
if [ -d "$SHARED/ndcg/cases" ]; then
    i=0
    for l in "$SHARED"/ndcg/cases/*.letor; do
        n=$(basename "$l" .letor)
        s="$SHARED/ndcg/cases/$n.scores"
        [ -f "$s" ] || continue
        # A different convention per case, so the seeds cover every knob.
        case $((i % 8)) in
            0) ctl='0000000000' ;;    # ndcg, the QuickRank/RankLib defaults, @10
            1) ctl='01110000001:5' ;; # linear gain, reverse ties, norel one; @1 @10 @5
            2) ctl='0020001000' ;;    # ties average, float32 scores
            3) ctl='00021111000:5' ;; # norel skip, beyond zero, letor discount, float, qid; @all @10 @5
            4) ctl='1000000000123' ;; # err @1 @2 @3
            5) ctl='2000000100' ;;    # map, qid grouping
            6) ctl='3040000000;5' ;;  # p, optimistic ties; @11 @5
            7) ctl='0030000000' ;;    # pessimistic ties
        esac
        eval_seed "$n" "$ctl" "$l" "$s"
        i=$((i + 1))
    done
fi
# Annotated: qs-score --annotate on a few documents of the fixtures.
"$BIN/qs-convert" "$FIX/xgb-tiny/model.json" | "$BIN/qs-compile" -o "$tmp/q" -
head -n 40 "$FIX/xgb-tiny/docs.letor" > "$tmp/d"
{ echo 00000000105; "$BIN/qs-score" --annotate "$tmp/q" "$tmp/d"; } > "$C/eval/gen-annotated-xgb-tiny"
"$BIN/qs-convert" "$FIX/lgb-multiclass/model.txt.zst" | "$BIN/qs-compile" -o "$tmp/q" -
head -n 12 "$FIX/lgb-multiclass/docs.letor" > "$tmp/d"
{ echo 00000001130; "$BIN/qs-score" --annotate "$tmp/q" "$tmp/d"; } > "$C/eval/gen-annotated-multiclass"
# Two files as qs-eval reads them, from the LETOR fixtures.
head -n 30 "$FIX/lgb-l8/docs.letor" > "$tmp/l"
"$BIN/qs-convert" "$FIX/lgb-l8/model.txt.zst" | "$BIN/qs-compile" -o "$tmp/q" -
"$BIN/qs-score" "$tmp/q" "$tmp/l" > "$tmp/s"
eval_seed lgb-l8 0000000000 "$tmp/l" "$tmp/s"

# The budget is in bytes of input, not disk blocks (the corpus is many small files).
total=$(find "$C" -type f -exec cat {} + | wc -c | tr -d ' ')
echo "make_corpus.sh: $(find "$C" -type f | wc -l | tr -d ' ') files, $total bytes in $C"
[ "$total" -lt 4194304 ] || { echo "make_corpus.sh: corpus over 4 MiB" >&2; exit 1; }
