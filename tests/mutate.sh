#!/usr/bin/env bash
# mutate.sh: a test of the test suite.  Each mutation breaks a scratch copy
# of the repository on purpose (the working tree is never touched), builds
# it, and runs the bats files that should notice; the suite must FAIL for
# every one of them.
#
#   tests/mutate.sh [--all] [--keep] [MUTATION...]     (default: every mutation)
#   tests/mutate.sh --list
#
# One line per mutation:
#   mutation NAME: suite failed (good): ...
#   mutation NAME: suite PASSED (bad): ...
#   mutation NAME: not applied (...)          (the code it patches has changed)
#   mutation NAME: skipped (...)              (it needs something this tree lacks)
# Exit status: 1 if any mutation went unnoticed or could not be applied,
# else 0.
#
# The bats files of a mutation are run in order until one fails (--all runs
# them all).  The copy holds the tracked and untracked, not ignored, files of
# the working tree.  Builds run with make -j$MUTATE_JOBS (default 2); the
# sanitizer mutation builds the copy with SANITIZE=address,undefined and runs
# its files through scripts/check.sh, as make check does.  Takes a few
# minutes.
set -u -o pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${MUTATE_JOBS:-2}
all=no
keep=no
want=()
for a in "$@"; do
    case "$a" in
        --all) all=yes ;;
        --keep) keep=yes ;;
        --list) want=(--list) ;;
        -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "mutate.sh: unknown option $a" >&2; exit 2 ;;
        *) want+=("$a") ;;
    esac
done

# ------------------------------------------------------------ the mutations
# Each is a function mut_NAME that patches the copy in the current directory
# (returning non-zero when its pattern is not found), and three variables:
# what it breaks, which build (plain or san), the bats files to run.

# patch FILE PERL-SUBSTITUTION: apply it; fail when it changed nothing.
patch() {
    local file="$1" expr="$2"
    [ -f "$file" ] || { echo "no $file"; return 1; }
    cp "$file" "$file.orig"
    perl -0pi -e "$expr" "$file"
    if cmp -s "$file" "$file.orig"; then
        rm -f "$file.orig"
        echo "pattern not found in $file"
        return 1
    fi
    rm -f "$file.orig"
}

names=(nan ulp negzero oblivious byteplane-cat ubsan-pipe empty-list-backends zero-band-csv zero-band-f32
       zero-band-matrix zero-band-onnx lightgbm-dense fmath-exp fmath-softmax lightgbm-v2-end
       cat-words onnx-average xgboost-dart xgboost-cats xgboost-forest-iter xgboost-binary-deleted
       onnx-double-round xentlambda catboost-cat-name)

# The rules of the issue on exact scores for the models people bring: each
# must be seen by its tests.
what_zero_band_csv="CSV/TSV keep |x| <= 1e-35f for LightGBM models (its CSV reader reads them as 0)"
build_zero_band_csv=plain
files_zero_band_csv="tests/18-zero-threshold.bats"
mut_zero_band_csv() {
    patch lib/score/dense.c 's/const int zero_band = qs_model_dense_zero_band\(s->m\);/const int zero_band = 0;/'
}
what_zero_band_f32="f32 rows keep |x| <= 1e-35f for LightGBM models (its dense matrix reads them as 0)"
build_zero_band_f32=plain
files_zero_band_f32="tests/18-zero-threshold.bats"
mut_zero_band_f32() {
    patch tools/qs-score/pipeline.c 's/const int zero_band = qs_scorer_zero_band\(wk->s\);/const int zero_band = 0;/'
}
what_zero_band_matrix="qs_score_matrix keeps |x| <= 1e-35f for LightGBM models"
build_zero_band_matrix=plain
files_zero_band_matrix="tests/18-zero-threshold.bats"
mut_zero_band_matrix() {
    patch lib/score/matrix.c 's/if \(!qs_model_dense_zero_band\(m\)\)/if (1)/'
}
what_zero_band_onnx="an ONNX model read with LightGBM's zero band (ONNX Runtime has none)"
build_zero_band_onnx=plain
files_zero_band_onnx="tests/18-zero-threshold.bats"
mut_zero_band_onnx() {
    patch lib/model/model.h 's/return m->source == QS_SRC_LIGHTGBM;/return m->source == QS_SRC_LIGHTGBM || m->source == QS_SRC_ONNX;/'
}
what_lightgbm_dense="qs-score --lightgbm-dense reads LETOR as LibSVM after all (one thread)"
build_lightgbm_dense=plain
files_lightgbm_dense="tests/18-zero-threshold.bats"
mut_lightgbm_dense() {
    patch tools/qs-score/pipeline.c 's/(if \(job->lightgbm_dense\)\n\s*)qs_doc_zero_band\(wk->w\);/${1}(void)0;/'
}
what_fmath_exp="CatBoost's Exponent with the C library's exp"
build_fmath_exp=plain
files_fmath_exp="tests/16-catboost.bats"
mut_fmath_exp() {
    patch lib/score/transform.c 's/(x = x > -708\.39641853226408 \? x : -708\.39641853226408;\n)(\s*)return fmath_core\(x\);/$1$2return exp(x);/'
}
what_fmath_softmax="CatBoost's MultiClass softmax with the C library's exp"
build_fmath_softmax=plain
files_fmath_softmax="tests/16-catboost.bats"
mut_fmath_softmax() {
    patch lib/score/transform.c 's/y\[c\] = c < \(k & ~3u\) \? catboost_exp\(z\) : catboost_exp_tail\(z\);/y[c] = exp(z);/'
}
what_lightgbm_v2_end="a LightGBM v2 file that ends after its last tree is refused"
build_lightgbm_v2_end=plain
files_lightgbm_v2_end="tests/18-zero-threshold.bats"
mut_lightgbm_v2_end() {
    patch lib/convert/lightgbm.c 's/if \(c->v2 && c->ntrees > 0\)/if (0)/'
}
what_cat_words="the categorical set limit back at 2^16 words (LightGBM's 257,049-word sets refused)"
build_cat_words=plain
files_cat_words="tests/15-converters.bats"
mut_cat_words() {
    patch lib/model/model.h 's/#define QS_MAX_CAT_WORDS  \(1u << 26\)/#define QS_MAX_CAT_WORDS  (1u << 16)/'
}
what_onnx_average="ONNX AVERAGE divides by multiplying with the float reciprocal"
build_onnx_average=plain
files_onnx_average="tests/17-onnx.bats"
mut_onnx_average() {
    patch lib/model/model.c 's/s = s \/ nd;/s = s * (1.0f \/ nd);/'
}
what_xgboost_dart="XGBoost dart trees added without their weight_drop"
build_xgboost_dart=plain
files_xgboost_dart="tests/15-converters.bats"
mut_xgboost_dart() {
    patch lib/convert/xgboost.c 's/volatile float p = leaf \* w;/volatile float p = leaf;/'
}
what_xgboost_cats="qs-compile --info shows no categories of an XGBoost model's encoder"
build_xgboost_cats=plain
files_xgboost_cats="tests/15-converters.bats"
mut_xgboost_cats() {
    patch lib/convert/xgboost.c 's/if \(!buf \|\| qs_detect_format\(buf, len\) != QS_FMT_XGBOOST\)/if (1)/'
}

what_xgboost_forest_iter="--trees counts one tree per class per iteration of an XGBoost boosted random forest"
build_xgboost_forest_iter=plain
files_xgboost_forest_iter="tests/23-trees-leaves.bats tests/14-xgboost-binary.bats"
mut_xgboost_forest_iter() {
    patch lib/convert/xgboost.c 's/m->iter_trees = \(uint32_t\)\(P \* k\);/(void)0;/'
}
what_xgboost_binary_deleted="the binary reader's default-left bit read from bit 30 of the split index"
build_xgboost_binary_deleted=plain
files_xgboost_binary_deleted="tests/14-xgboost-binary.bats"
mut_xgboost_binary_deleted() {
    patch lib/convert/xgboost.c 's/t->arr\[F_DEFAULT_LEFT\]\.v\[i\] = sindex >> 31;/t->arr[F_DEFAULT_LEFT].v[i] = (sindex >> 30) & 1;/'
}
what_onnx_double_round="an ONNX opset-1/3 regressor with a double input keeps the double sum (no float32 rounding)"
build_onnx_double_round=plain
files_onnx_double_round="tests/17-onnx.bats"
mut_onnx_double_round() {
    patch lib/model/model.c 's/out\[d \* K \+ c\] = m->out_float \? \(double\)\(float\)r : r;/out[d * K + c] = r;/'
}
what_xentlambda="LightGBM cross_entropy_lambda's transform as log(1 + exp(x))"
build_xentlambda=plain
files_xentlambda="tests/59-transforms.bats"
mut_xentlambda() {
    patch lib/score/transform.c 's/y\[c\] = log1p\(exp\(y\[c\]\)\);/y[c] = log(1.0 + exp(y[c]));/'
}
what_catboost_cat_name="CatBoost's cat_features_hash refused as an unknown field again"
build_catboost_cat_name=plain
files_catboost_cat_name="tests/16-catboost.bats"
mut_catboost_cat_name() {
    patch lib/convert/catboost.c 's/\} else if \(qs_json_str_eq\(&k, "cat_features_hash"\)\) \{/} else if (0) {/'
}

what_nan="qs-score's score formatter prints nan for every score"
build_nan=plain
files_nan="tests/10-pipeline.bats tests/20-conformance.bats"
mut_nan() {
    patch tools/qs-score/pipeline.c 's/(for \(uint32_t k = 0; k < ncol; k\+\+\)\n\s*)(c->out_len \+=)/${1}sc[k] = __builtin_nan(""), $2/'
}

what_ulp="STRUCT+ (struct) scores the first document of a run one ulp too high"
build_ulp=plain
files_ulp="tests/10-pipeline.bats tests/20-conformance.bats"
mut_ulp() {
    patch lib/score/baselines.c 's/(acc_add\(b->acc, &o\[tr->cls\], [^;]*;\n\s*\}\n)/$1        { static int once; if (!once++) o[0] = __builtin_nextafter(o[0], __builtin_inf()); }\n/'
}

what_negzero="qs-score prints -0 for a score of 0"
build_negzero=plain
files_negzero="tests/10-pipeline.bats tests/20-conformance.bats"
mut_negzero() {
    patch tools/qs-score/pipeline.c 's/(for \(uint32_t k = 0; k < ncol; k\+\+\)\n\s*)(c->out_len \+=)/${1}sc[k] = sc[k] == 0 ? -0.0 : sc[k], $2/'
}

what_oblivious="the oblivious back end refuses every model (exit 3)"
build_oblivious=plain
files_oblivious="tests/10-pipeline.bats tests/20-conformance.bats"
mut_oblivious() {
    patch lib/score/baselines.c 's/(int qs_baselines_has_oblivious\(const qs_baselines \*b\)\s*\{)\s*return b->obl;/$1 (void)b; return 0;/'
}

# Only the AVX-512 byte-plane kernel (batches of 32 or more documents) gets
# categorical nodes of reversed trees wrong: no fixture has both, so only the
# reversed conformance layout scored with --doc-block 64 can see it.
what_byteplane_cat="the byte-plane kernels ignore the reversal of categorical nodes"
build_byteplane_cat=plain
files_byteplane_cat="tests/20-conformance.bats"
needs_byteplane_cat() {
    bin/qs-score --list-backends | grep -q '^vqs-avx512	yes	' ||
        { echo "this CPU does not run vqs-avx512"; return 1; }
}
mut_byteplane_cat() {
    patch lib/score/x86/vqs_common.h 's/(l < BP_LANES; l\+\+\)\s*\n\s*if \(qs_node_goes_left\(m, n, xs\[l\]\[n->feature\]\) == )!!\(C->tree & QS_CAT_REVERSED\)/${1}0/'
}

what_ubsan_pipe="qs-convert overflows a signed int at exit when its output is a pipe (a UBSan report, sanitizer build)"
build_ubsan_pipe=san
files_ubsan_pipe="tests/35-hostile.bats tests/10-pipeline.bats"
mut_ubsan_pipe() {
    patch tools/qs-convert/main.c 's/(int main\(int argc, char \*\*argv\)\s*\{)/#include <limits.h>\n#include <sys\/stat.h>\nstatic void mutant_trip(void)\n{\n    struct stat st;\n    fflush(stdout);\n    if (fstat(1, &st) == 0 && S_ISFIFO(st.st_mode)) {\n        volatile int big = INT_MAX;\n        volatile int sum = big + 1;\n        (void)sum;\n    }\n}\n\n$1\n    atexit(mutant_trip);/'
}

# qs-score --list-backends (machine-readable: name<TAB>yes|no: reason<TAB>
# flags<TAB>summary) is how the suite learns the back ends: a qs-score whose
# list is empty must fail the suite.  Done with a wrapper in bin/, so that it does not
# depend on how the option is written.
what_empty_list_backends="qs-score --list-backends prints nothing"
build_empty_list_backends=plain
files_empty_list_backends="tests/12-backends.bats tests/20-conformance.bats"
needs_empty_list_backends() {
    bin/qs-score --list-backends > /dev/null 2>&1 ||
        { echo "this qs-score has no --list-backends yet"; return 1; }
}
mut_empty_list_backends() { :; }
after_build_empty_list_backends() {
    local real
    real=$(readlink -f bin/qs-score)
    rm -f bin/qs-score
    printf '#!/bin/sh\nfor a; do [ "$a" = --list-backends ] && exit 0; done\nexec "%s" "$@"\n' "$real" > bin/qs-score
    chmod +x bin/qs-score
}

if [ "${want[*]:-}" = --list ]; then
    for n in "${names[@]}"; do
        v="what_${n//-/_}"
        printf '%-20s %s\n' "$n" "${!v}"
    done
    exit 0
fi
[ ${#want[@]} -gt 0 ] || want=("${names[@]}")
for n in "${want[@]}"; do
    declare -F "mut_${n//-/_}" > /dev/null || { echo "mutate.sh: no mutation '$n' (--list)" >&2; exit 2; }
done

# ------------------------------------------------------------ the copies
scratch=$(mktemp -d "${TMPDIR:-/tmp}/qs-mutate.XXXXXX")
cleanup() {
    if [ "$keep" = yes ]; then
        echo "# scratch copies kept in $scratch"
    else
        rm -rf "$scratch"
    fi
}
trap cleanup EXIT

# The oracle data: the real checkout's unpacked copy (the copy made for the
# mutations has no build/).
export QS_ORACLE_DATA="${QS_ORACLE_DATA:-$root/build/oracle}"
[ -d "$QS_ORACLE_DATA" ] || { echo "mutate.sh: no oracle data at $QS_ORACLE_DATA (make oracle)" >&2; exit 1; }
unset QS_BACKEND

log="$scratch/log"
mkdir -p "$scratch/base"
(cd "$root" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -C "$scratch/base" -xf - ||
    { echo "mutate.sh: cannot copy the working tree" >&2; exit 2; }

# build_base KIND: an unmutated copy (plain or san), built once, in
# $scratch/base-KIND; each mutation's copy starts from it and reuses its
# objects, so that only the patched file is recompiled.
declare -A built
build_base() {
    local kind="$1" dir="$scratch/base-$1"
    [ -z "${built[$kind]:-}" ] || return 0
    rm -rf "$dir"
    cp -a "$scratch/base" "$dir"
    echo "# building the unmutated copy ($kind)"
    if [ "$kind" = san ]; then
        (cd "$dir" && make -j"$jobs" SANITIZE=address,undefined) > "$scratch/build-$kind.log" 2>&1
    else
        (cd "$dir" && make -j"$jobs") > "$scratch/build-$kind.log" 2>&1
    fi || { echo "mutate.sh: the unmutated copy does not build ($kind):" >&2; tail -20 "$scratch/build-$kind.log" >&2; exit 2; }
    built[$kind]=1
}

# run_files DIR KIND FILES...: run the bats files in DIR until one fails;
# prints a summary; returns 0 when one failed (the good outcome).
run_files() {
    local dir="$1" kind="$2" f failed=0 ran=0 total nfail
    shift 2
    for f in "$@"; do
        ran=$((ran + 1))
        if [ "$kind" = san ]; then
            (cd "$dir" && SANITIZE=address,undefined ./scripts/check.sh -- "$f") > "$log" 2>&1
        else
            (cd "$dir" && bats --tap "$f") > "$log" 2>&1
        fi
        local rc=$?
        nfail=$(grep -c '^not ok ' "$log")
        total=$(grep -cE '^(not )?ok ' "$log")
        if [ "$rc" != 0 ]; then
            failed=1
            echo "$nfail of $total tests failed in $f; first: $(grep -m1 '^not ok ' "$log" | sed 's/^not ok [0-9]* //')"
            [ "$all" = yes ] || break
        fi
    done
    [ "$failed" = 1 ] || echo "all $ran files passed: $*"
    [ "$failed" = 1 ]
}

unnoticed=0
for n in "${want[@]}"; do
    id=${n//-/_}
    w="what_$id"
    b="build_$id"
    fl="files_$id"
    kind=${!b}
    build_base "$kind"
    dir="$scratch/mut-$n"
    rm -rf "$dir"
    cp -a "$scratch/base-$kind" "$dir"
    cd "$dir" || exit 2
    if declare -F "needs_$id" > /dev/null && ! why=$("needs_$id"); then
        echo "mutation $n: skipped ($why)"
        cd "$scratch" && rm -rf "$dir"
        continue
    fi
    if ! why=$("mut_$id"); then
        echo "mutation $n: not applied ($why)"
        unnoticed=1
        cd "$scratch" && rm -rf "$dir"
        continue
    fi
    if [ "$kind" = san ]; then
        make -j"$jobs" SANITIZE=address,undefined > "$scratch/build-$n.log" 2>&1
    else
        make -j"$jobs" > "$scratch/build-$n.log" 2>&1
    fi || {
        echo "mutation $n: not applied (the mutated copy does not build: $(grep -m1 'error' "$scratch/build-$n.log"))"
        unnoticed=1
        cd "$scratch" && rm -rf "$dir"
        continue
    }
    if declare -F "after_build_$id" > /dev/null; then "after_build_$id"; fi
    # shellcheck disable=SC2086
    if summary=$(run_files "$dir" "$kind" ${!fl}); then
        echo "mutation $n: suite failed (good): ${!w}: $summary"
    else
        echo "mutation $n: suite PASSED (bad): ${!w}: $summary"
        unnoticed=1
    fi
    cd "$scratch" || exit 2
    [ "$keep" = yes ] || rm -rf "$dir"
done
exit "$unnoticed"
