#!/usr/bin/env bash
# gpu-pack.sh: build here, with nvcc, everything a short run on a GPU machine
# needs, into one folder of at most 64 MiB (default build/gpu-pack), for
# scripts/gpu-run.sh to use there:
#
#   bin/      qs-score, qs-compile, qs-convert, bench/cuda-kernel (the CUDA
#             runtime linked in statically: only the driver is needed there)
#   lib/      the shared libraries they load besides the C library's own
#             (a bare GPU machine may lack libzstd, libexpat, protobuf-c,
#             libnuma, libgomp)
#   conform/  every conformance model of the reference data and the fixtures
#             as canonical text (zstd -19: smaller than .qsm files; gpu-run.sh
#             compiles each there in two layouts), each with its documents
#             (zstd) and the CPU's scores for them (zstd; scored here with
#             `qs`, which the suite checks against the oracle files), and a
#             list (conform/list.tsv)
#   bench/    the 1,000 x 64 XGBoost MQ2008 model and a 20,000 x 64 synthetic
#             forest over the same features (bench/gen_forest.py), as
#             canonical text, and the MQ2008 test documents, repeated there
#             to 10^5 and 10^6
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
cp build/bin/qs-score build/bin/qs-compile build/bin/qs-convert build/bench/cuda-kernel "$out/bin/"
# Shared libraries other than glibc's own and the dynamic loader.
ldd build/bin/qs-score build/bench/cuda-kernel | awk '$3 ~ /^\// { print $3 }' | sort -u |
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
python3 bench/gen_forest.py 20000 64 "$mqdocs" 7 | zstd -q -19 -T0 -o "$out/bench/20000x64.txt.zst"
zstd -q -19 -o "$out/bench/mq2008.letor.zst" "$mqdocs"

size=$(du -sm "$out" | cut -f1)
echo "gpu-pack.sh: $out: $n conformance runs over $(ls "$out"/conform/m*.txt.zst | wc -l) models, 2 bench models, ${size} MiB" >&2
[ "$size" -le 64 ] || { echo "gpu-pack.sh: over 64 MiB" >&2; exit 1; }
