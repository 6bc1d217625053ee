#!/usr/bin/env bash
# gpu-pack.sh: build here, with nvcc, everything a short run on a GPU machine
# needs, into one folder of at most 64 MiB (default build/gpu-pack), for
# scripts/gpu-run.sh to use there (nothing is built there):
#
#   bin/      qs-score, qs-compile, qs-convert, and the device benchmarks
#             bench/cuda-kernel (one kernel alone, exact-checked),
#             cuda-atomics (shared atomics in cycles), cuda-host (a process's
#             fixed costs, pageable and page-locked copies), and
#             cuda-kernel-v1: bench/cuda-kernel of the first GPU-QS kernel
#             (built from this repository's history, commit $QS_GPU_V1,
#             for the before-and-after of the diagnosis; left out with a
#             note when that commit is not in the history, or with
#             QS_GPU_V1=none); bench/qs-matrix,
#             zstd (and a zstdcat); the CUDA runtime linked in statically
#             (only the driver is needed there), stripped
#   lib/      the shared libraries they load besides the C library's own
#             (a bare GPU machine may lack libzstd, libexpat, protobuf-c,
#             libnuma, libgomp; gpu-run.sh takes the machine's own first)
#   conform/  every conformance model of the oracle (build/oracle, which make
#             unpacks; the large ones when scripts/oracle.sh large made them)
#             and the fixtures, as canonical text (zstd -19; gpu-run.sh
#             compiles each there in two layouts), each with its documents
#             (zstd, the first 2,000) and the CPU's scores for them (scored
#             here with `qs`, which the suite checks against the oracle), and
#             a list (conform/list.tsv)
#   bench/    the 1,000 x 64 XGBoost MQ2008 model as canonical text and the
#             MQ2008 test documents (gpu-run.sh makes there the synthetic
#             20,000 x 64 and 1,000 x 1,024 forests over the same features
#             with bench/gen_forest.py, and repeats the documents to 10^6)
#   cpu/      XGBoost 1,000 x 8 and 1,000 x 256 of bench/run.sh's grid, when
#             its workloads are there (QS_BENCH_DIR), for gpu-run.sh's step
#             `cpu` (the other grid models are conformance models)
#
#   scripts/gpu-pack.sh [OUT-DIR]      (QS_ORACLE_DATA: the oracle, default build/oracle;
#                                       QS_GPU_PACK_LEVEL: zstd level, default 19)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/gpu-pack}
# zstd level of the packed files (19: smallest; the suite's dry run: 3, fast)
level=${QS_GPU_PACK_LEVEL:-19}
command -v zstd > /dev/null || { echo "gpu-pack.sh: zstd is needed" >&2; exit 1; }

make -s -j"$(nproc)" HAVE_CUDA=1 > /dev/null
build/bin/qs-score --version -v | grep -q 'cuda=1' || { echo "gpu-pack.sh: built without CUDA" >&2; exit 1; }
oracle=${QS_ORACLE_DATA:-build/oracle}
[ -f "$oracle/lightgbm/MANIFEST.tsv" ] || { echo "gpu-pack.sh: no oracle at $oracle (make oracle)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"/{bin,lib,conform,bench}
cp build/bin/qs-score build/bin/qs-compile build/bin/qs-convert build/bench/cuda-kernel \
    build/bench/cuda-atomics build/bench/cuda-host build/bench/qs-matrix "$(command -v zstd)" "$out/bin/"

# the first kernel's benchmark, from the history
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/v1" > /dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
v1=${QS_GPU_V1:-fce2cae}
if [ "$v1" = none ]; then
    echo "gpu-pack.sh: QS_GPU_V1=none: no cuda-kernel-v1" >&2
elif git rev-parse -q --verify "$v1^{commit}" > /dev/null 2>&1 &&
    git worktree add --detach -q "$tmp/v1" "$v1" > /dev/null 2>&1 &&
    make -s -C "$tmp/v1" -j"$(nproc)" HAVE_CUDA=1 build/bench/cuda-kernel > "$tmp/v1.log" 2>&1; then
    cp "$tmp/v1/build/bench/cuda-kernel" "$out/bin/cuda-kernel-v1"
else
    echo "gpu-pack.sh: the first kernel ($v1) could not be built: no cuda-kernel-v1 (gpu-run.sh says so)" >&2
fi
strip -s "$out"/bin/*
# a GPU machine's image may lack zstd's command
printf '#!/bin/sh\nexec zstd -dcf "$@"\n' > "$out/bin/zstdcat"
chmod +x "$out/bin/zstdcat"
# Shared libraries other than glibc's own and the dynamic loader.
ldd build/bin/qs-score build/bench/cuda-kernel build/bench/qs-matrix "$(command -v zstd)" |
    awk '$3 ~ /^\// { print $3 }' | sort -u |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*)\.so' |
    while read -r l; do cp -L "$l" "$out/lib/"; done

# conform: model, documents, options, from the oracle test files.
list="$out/conform/list.tsv"
: > "$list"
n=0
pairs() {
    local f l
    for f in tests/20-conformance.bats tests/21-conformance-large.bats tests/16-catboost.bats; do
        [ -f "$f" ] || continue
        grep -o 'conform "[^"]*" "[^"]*" "[^"]*"[^|;]*' "$f" | sed 's/^conform //' |
            grep -v '\$d/\|\$BATS\|\$L/\|\${@\|"\$@"' | while IFS= read -r l; do
            l=${l//\$ORACLE/$oracle}
            l=${l//\$C\//tests/fixtures/catboost/}
            l=${l//\$N\//tests/fixtures/catboost-nonsym/}
            # a line still naming a test's own variables is not a plain model and documents
            case $l in *'$'*) continue ;; esac
            printf '%s\n' "$l"
        done
    done
    for f in "$oracle"/catboost/models/*/model.json; do
        printf '"%s" "%s" -\n' "$f" "$(dirname "$f")/test.letor"
    done
    for f in tests/fixtures/linear/*.txt.zst; do
        printf '"%s" "%s" -\n' "$f" "${f%.txt.zst}.docs.letor"
    done
    printf '"%s" "%s" -\n' \
        tests/fixtures/xgboost/categorical.json tests/fixtures/xgboost/categorical.docs.txt \
        tests/fixtures/lightgbm/mixed.model.txt tests/fixtures/lightgbm/mixed.docs.letor \
        tests/fixtures/lgb-multiclass/model.txt.zst tests/fixtures/lgb-multiclass/docs.letor \
        tests/fixtures/qr-oblivious/model.xml.zst tests/fixtures/qr-oblivious/docs.letor
}
while IFS= read -r line; do
    eval "set -- $line"
    model=$1 docs=$2
    shift 3
    opts="$*"
    # a large model not made (scripts/oracle.sh large): not packed
    [ -f "$model" ] || { echo "gpu-pack.sh: $model is not there: not packed" >&2; continue; }
    [ -f "$docs" ] || { echo "gpu-pack.sh: missing $docs" >&2; exit 1; }
    n=$((n + 1))
    key=$(printf 'r%03d' "$n")
    mk=m$(printf '%s' "$model" | cksum | cut -d' ' -f1)
    dk=d$(printf '%s' "$docs" | cksum | cut -d' ' -f1)
    if [ ! -f "$out/conform/$mk.txt.zst" ]; then
        build/bin/qs-convert "$model" | zstd -q -"$level" -T0 -o "$out/conform/$mk.txt.zst"
    fi
    zstdcat "$out/conform/$mk.txt.zst" | build/bin/qs-compile -o "$tmp/m.qsm" -
    # documents: the first 2,000 (the scores are compared whole)
    if [ ! -f "$out/conform/$dk.docs.zst" ]; then
        if [ "${docs%.zst}" != "$docs" ]; then zstdcat "$docs"; else cat "$docs"; fi |
            awk 'NR <= 2000' | zstd -q -"$level" -o "$out/conform/$dk.docs.zst"
    fi
    # shellcheck disable=SC2086
    zstdcat "$out/conform/$dk.docs.zst" | build/bin/qs-score --backend qs $opts "$tmp/m.qsm" |
        zstd -q -"$level" -o "$out/conform/$key.cpu.zst"
    printf '%s\t%s\t%s\t%s\t%s\n' "$key" "$mk" "$dk" "${opts:--}" "${model#"$oracle"/}" >> "$list"
done < <(pairs | sort -u)

# bench
build/bin/qs-convert "$oracle/xgboost/mq2008-ndcg-lg64-t1000/model.json" |
    zstd -q -"$level" -T0 -o "$out/bench/1000x64.txt.zst"
zstd -q -"$level" -o "$out/bench/mq2008.letor.zst" "$oracle/letor/mq2008/test.txt"

# cpu: grid models of bench/run.sh not among the oracle's (1,000 x 8 and
# 1,000 x 256 trees; XGBoost on MQ2008), for the step `cpu` of gpu-run.sh,
# when bench/run.sh --prepare-only has made them (QS_BENCH_DIR)
wl=${QS_BENCH_DIR:-/tmp/qs-bench}/workloads
mkdir -p "$out/cpu"
for w in mq2008-t1000-l8 mq2008-t1000-l256; do
    if [ -f "$wl/$w-n50000-s1/model.json" ]; then
        build/bin/qs-convert "$wl/$w-n50000-s1/model.json" | zstd -q -"$level" -T0 -o "$out/cpu/$w.txt.zst"
    else
        echo "gpu-pack.sh: no $wl/$w-n50000-s1 (bench/run.sh --prepare-only): not packed" >&2
    fi
done

size=$(du -sm "$out" | cut -f1)
echo "gpu-pack.sh: $out: $n conformance runs over $(ls "$out"/conform/m*.txt.zst | wc -l) models, ${size} MiB" >&2
[ "$size" -le 64 ] || { echo "gpu-pack.sh: over 64 MiB" >&2; exit 1; }
