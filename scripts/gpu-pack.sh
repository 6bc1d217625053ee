#!/usr/bin/env bash
# gpu-pack.sh: build here, with nvcc, everything a short run on a GPU machine
# needs, into one folder of at most 64 MiB (default build/gpu-pack), for
# scripts/gpu-run.sh to use there:
#
#   bin/      qs-score, qs-compile, qs-convert, bench/cuda-kernel (the CUDA
#             runtime linked in statically: only the driver is needed there),
#             bench/qs-matrix, zstd (and a zstdcat), stripped
#   lib/      the shared libraries they load besides the C library's own
#             (a bare GPU machine may lack libzstd, libexpat, protobuf-c,
#             libnuma, libgomp; gpu-run.sh takes the machine's own first)
#   conform/  every conformance model of the reference data and the fixtures
#             as canonical text (zstd -19: smaller than .qsm files; gpu-run.sh
#             compiles each there in two layouts), each with its documents
#             (zstd) and the CPU's scores for them (zstd; scored here with
#             `qs`, which the suite checks against the oracle files), and a
#             list (conform/list.tsv)
#   bench/    the 1,000 x 64 XGBoost MQ2008 model as canonical text and the
#             MQ2008 test documents (gpu-run.sh makes there the 20,000 x 64
#             synthetic forest over the same features with
#             bench/gen_forest.py, which would take 15 MiB here, and repeats
#             the documents to 10^5 and 10^6)
#   cpu/      XGBoost 1,000 x 8 and 1,000 x 256 of bench/run.sh's grid, when
#             its workloads are there (QS_BENCH_DIR), for gpu-run.sh's step
#             `cpu` (the other grid models are conformance models)
#
#   scripts/gpu-pack.sh [OUT-DIR]      (QS_SHARED_DATA: the reference data)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/gpu-pack}
shared=${QS_SHARED_DATA:-../shared/data}
[ -d "$shared" ] || { echo "gpu-pack.sh: no reference data at $shared" >&2; exit 1; }
command -v zstd > /dev/null || { echo "gpu-pack.sh: zstd is needed" >&2; exit 1; }

make -s -j"$(nproc)" HAVE_CUDA=1 > /dev/null
bin/qs-score --version -v | grep -q 'cuda=1' || { echo "gpu-pack.sh: built without CUDA" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"/{bin,lib,conform,bench}
cp build/bin/qs-score build/bin/qs-compile build/bin/qs-convert build/bench/cuda-kernel \
    build/bench/qs-matrix "$(command -v zstd)" "$out/bin/"
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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
list="$out/conform/list.tsv"
: > "$list"
n=0
pairs() {
    local f l
    for f in tests/20-conformance.bats tests/16-catboost.bats; do
        grep -o 'conform "[^"]*" "[^"]*" "[^"]*"[^|;]*' "$f" | sed 's/^conform //' |
            grep -v '\$d/\|\$BATS\|\$L/\|\${@\|"\$@"' | while IFS= read -r l; do
            l=${l//\$SHARED/$shared}
            l=${l//\$C\//tests/fixtures/catboost/}
            l=${l//\$N\//tests/fixtures/catboost-nonsym/}
            # a line still naming a test's own variables is not a plain model and documents
            case $l in *'$'*) continue ;; esac
            printf '%s\n' "$l"
        done
    done
    for f in "$shared"/catboost/models/*/model.json; do
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
    [ -f "$model" ] && [ -f "$docs" ] || { echo "gpu-pack.sh: missing $model or $docs" >&2; exit 1; }
    n=$((n + 1))
    key=$(printf 'r%03d' "$n")
    mk=m$(printf '%s' "$model" | cksum | cut -d' ' -f1)
    dk=d$(printf '%s' "$docs" | cksum | cut -d' ' -f1)
    if [ ! -f "$out/conform/$mk.txt.zst" ]; then
        bin/qs-convert "$model" | zstd -q -19 -T0 -o "$out/conform/$mk.txt.zst"
    fi
    zstdcat "$out/conform/$mk.txt.zst" | bin/qs-compile -o "$tmp/m.qsm" -
    # documents: the first 2,000 (the scores are compared whole)
    if [ ! -f "$out/conform/$dk.docs.zst" ]; then
        if [ "${docs%.zst}" != "$docs" ]; then zstdcat "$docs"; else cat "$docs"; fi |
            awk 'NR <= 2000' | zstd -q -19 -o "$out/conform/$dk.docs.zst"
    fi
    # shellcheck disable=SC2086
    zstdcat "$out/conform/$dk.docs.zst" | bin/qs-score --backend qs $opts "$tmp/m.qsm" |
        zstd -q -19 -o "$out/conform/$key.cpu.zst"
    printf '%s\t%s\t%s\t%s\t%s\n' "$key" "$mk" "$dk" "${opts:--}" "$model" >> "$list"
done < <(pairs | sort -u)

# bench
x1k="$shared/xgboost/mq2008-ndcg-lg64-t1000/model.json.zst"
mqdocs="$shared/letor/mq2008/test.txt"
bin/qs-convert "$x1k" | zstd -q -19 -T0 -o "$out/bench/1000x64.txt.zst"
zstd -q -19 -o "$out/bench/mq2008.letor.zst" "$mqdocs"

# cpu: grid models of bench/run.sh not among the reference data (1,000 x 8
# and 1,000 x 256 trees; XGBoost on MQ2008), for the step `cpu` of gpu-run.sh,
# when bench/run.sh --prepare-only has made them (QS_BENCH_DIR)
wl=${QS_BENCH_DIR:-/tmp/qs-bench}/workloads
mkdir -p "$out/cpu"
for w in mq2008-t1000-l8 mq2008-t1000-l256; do
    if [ -f "$wl/$w-n50000-s1/model.json" ]; then
        bin/qs-convert "$wl/$w-n50000-s1/model.json" | zstd -q -19 -T0 -o "$out/cpu/$w.txt.zst"
    else
        echo "gpu-pack.sh: no $wl/$w-n50000-s1 (bench/run.sh --prepare-only): not packed" >&2
    fi
done

size=$(du -sm "$out" | cut -f1)
echo "gpu-pack.sh: $out: $n conformance runs over $(ls "$out"/conform/m*.txt.zst | wc -l) models, ${size} MiB" >&2
[ "$size" -le 64 ] || { echo "gpu-pack.sh: over 64 MiB" >&2; exit 1; }
