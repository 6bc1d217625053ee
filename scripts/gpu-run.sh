#!/usr/bin/env bash
# gpu-run.sh: the GPU-QS checks and benchmarks, on a GPU machine, in one go,
# from the folder scripts/gpu-pack.sh made (nothing is built there).
#
#   QS_GPU_STEPS=info,conform,bench,sweep,sanitize scripts/gpu-run.sh [PACK] [OUT]
#
# PACK defaults to build/gpu-pack, OUT to $OUT (or ./gpu-out).  Every step
# writes its log and results under OUT; a step that fails is reported and the
# next ones still run (exit 1 at the end), so one failed step can be rerun
# alone with QS_GPU_STEPS=STEP.  `info` always runs first and stops
# everything when `cuda` is not available.
#
#   info      the GPU (nvidia-smi), the CPU, qs-score --version -v and
#             --list-backends
#   conform   every packed model, both layouts: --backend cuda byte for byte
#             against the CPU's scores; also --threads 4 and --gpu-batch 1000
#             (batches that end inside queries) on the first layout
#   bench     1,000 x 64 and 20,000 x 64 on 10^5 and 10^6 documents: the
#             kernel alone (bench/cuda-kernel) and end to end (text in,
#             scores out) for cuda, vqs on every core and qs on one core
#             (20,000 x 64: on 10^4 documents), every output compared
#   sweep     documents per thread-block x threads x shared budget, kernel
#             alone, 10^5 documents, both models
#   sanitize  compute-sanitizer racecheck and memcheck on a small model
#             (when compute-sanitizer is on the machine)
#
# A dry run on a machine without a GPU (checks this script, not the GPU):
#   QS_GPU_BACKEND=cuda-emu QS_GPU_SIZES="1000 3000" QS_GPU_SWEEP=small \
#       scripts/gpu-run.sh build/gpu-pack /tmp/gpu-out
set -uo pipefail
cd "$(dirname "$0")/.."
pack=$(cd "${1:-build/gpu-pack}" && pwd) || { echo "gpu-run.sh: no pack (scripts/gpu-pack.sh)" >&2; exit 2; }
out=${2:-${OUT:-gpu-out}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
steps=",${QS_GPU_STEPS:-info,conform,bench,sweep,sanitize},"
export LD_LIBRARY_PATH="$pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$pack/bin:$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=
be=${QS_GPU_BACKEND:-cuda}
sizes=${QS_GPU_SIZES:-100000 1000000}
small=$(printf '%s\n' $sizes | head -n 1)
kflag=
[ "$be" = cuda ] || kflag=--emu

say() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }
fail() { say "FAILED: $*"; failed="$failed $1"; }
t_ms() { local a b; a=$(date +%s%N); "$@"; local rc=$?; b=$(date +%s%N); echo $(((b - a) / 1000000)) >&3; return $rc; }

# ------------------------------------------------------------ info
{
    date -u
    nvidia-smi || true
    nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv || true
    lscpu | sed -n '1,20p'
    nproc
    qs-score --version -v
    qs-score --list-backends
} > "$out/info.txt" 2>&1
say "gpu-run.sh: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1); $(nproc) CPUs"
line=$(qs-score --list-backends | awk -F'\t' -v b="$be" '$1 == b')
say "$be: $(printf '%s' "$line" | cut -f2)"
case "$line" in
*'	yes	'*) ;;
*) say "gpu-run.sh: the $be back end is not available here; stopping"; exit 1 ;;
esac

# ------------------------------------------------------------ models
# Every packed model compiled here: as compiled by default, and (conform)
# with every tree reversed in blocks of 37.
mkdir -p "$work/m"
for f in "$pack"/bench/*.txt.zst; do
    zstdcat "$f" | qs-compile -o "$work/m/$(basename "$f" .txt.zst).qsm" - ||
        { say "gpu-run.sh: cannot compile $f"; exit 1; }
done
if [[ $steps == *,conform,* || $steps == *,sanitize,* ]]; then
    for f in "$pack"/conform/m*.txt.zst; do
        key=$(basename "$f" .txt.zst)
        zstdcat "$f" > "$work/m/$key.txt"
        qs-compile -o "$work/m/$key.qsm" "$work/m/$key.txt" &&
            qs-compile --reverse-all --tree-block 37 -o "$work/m/$key.alt.qsm" "$work/m/$key.txt" ||
            { say "gpu-run.sh: cannot compile $f"; exit 1; }
        rm "$work/m/$key.txt"
    done
fi

# ------------------------------------------------------------ conform
if [[ $steps == *,conform,* ]]; then
    n=0 bad=0
    : > "$out/conform.txt"
    while IFS=$'\t' read -r key mk dk opts model; do
        [ "$opts" != - ] || opts=
        zstdcat "$pack/conform/$dk.docs.zst" > "$work/docs"
        zstdcat "$pack/conform/$key.cpu.zst" > "$work/cpu"
        for q in "$mk.qsm" "$mk.alt.qsm"; do
            for run in plain threads batch; do
                [ "$q" = "$mk.qsm" ] || [ $run = plain ] || continue
                case $run in
                plain) extra=() ;;
                threads) extra=(--threads 4) ;;
                batch) extra=(--gpu-batch 1000) ;;
                esac
                n=$((n + 1))
                # shellcheck disable=SC2086
                if ! qs-score --backend "$be" "${extra[@]}" $opts "$work/m/$q" < "$work/docs" \
                    > "$work/got" 2> "$work/err"; then
                    bad=$((bad + 1))
                    echo "$q ($model) $run: exit: $(head -c 300 "$work/err")" >> "$out/conform.txt"
                elif ! cmp -s "$work/got" "$work/cpu"; then
                    bad=$((bad + 1))
                    echo "$q ($model) $run: differs: $(cmp "$work/got" "$work/cpu" | head -c 200)" >> "$out/conform.txt"
                else
                    echo "$q ($model) $run: same" >> "$out/conform.txt"
                fi
            done
        done
    done < "$pack/conform/list.tsv"
    say "conform: $((n - bad)) of $n runs byte-identical to the CPU"
    [ "$bad" -eq 0 ] || fail conform "$bad runs differ or failed (conform.txt)"
fi

# documents: MQ2008 test, repeated to N (LETOR text, one file per size)
docs_n() {
    local n=$1 f="$work/docs.$1"
    if [ ! -f "$f" ]; then
        zstdcat "$pack/bench/mq2008.letor.zst" | grep -v '^[[:space:]]*$' > "$work/base"
        local have reps
        have=$(wc -l < "$work/base")
        reps=$(((n + have - 1) / have))
        for _ in $(seq "$reps"); do cat "$work/base"; done | head -n "$n" > "$f"
    fi
    printf '%s\n' "$f"
}

# ------------------------------------------------------------ bench
if [[ $steps == *,bench,* ]]; then
    {
        printf 'model\tdocuments\tmethod\tms\tdocs/s\tns/doc/tree\tcheck\n'
    } > "$out/bench.tsv"
    cpus=$(nproc)
    for model in 1000x64 20000x64; do
        trees=${model%x*}
        q="$work/m/$model.qsm"
        for n in $sizes; do
            d=$(docs_n $n)
            bytes=$(wc -c < "$d")
            # the kernel alone (documents already on the device), 5 reps
            cuda-kernel $kflag -n "$n" -r 5 "$q" "$d" > "$work/k" 2>> "$out/bench.log" ||
                fail bench "cuda-kernel $model $n: $(cat "$work/k")"
            awk -F'\t' -v m="$model" -v n="$n" '{ printf "%s\t%s\tcuda kernel (min of 5)\t%s\t%s\t%s\t%s\n", m, n, $7, $9, $10, $12 }' \
                "$work/k" >> "$out/bench.tsv"
            awk -F'\t' -v m="$model" -v n="$n" '{ printf "%s\t%s\tcopy in (%.0f MB)\t%s\t\t\t\n", m, n, n * 46 * 8 / 1e6, $11 }' \
                "$work/k" >> "$out/bench.tsv"
            # end to end: text in, scores out; then every output compared with vqs's
            rm -f "$work"/s.*
            rows=()
            for meth in "vqs-$cpus:--backend vqs --threads $cpus" "$be:--backend $be" "qs-1:--backend qs --threads 1"; do
                name=${meth%%:*} args=${meth#*:}
                dd=$d nn=$n
                if [ "$name" = qs-1 ]; then
                    nn=$((trees >= 20000 ? small / 10 : small))
                    [ "$n" = "$small" ] || continue
                    dd=$(docs_n $nn)
                fi
                best=
                for r in 1 2 3; do
                    # shellcheck disable=SC2086
                    ms=$( { t_ms qs-score $args "$q" "$dd" > "$work/s.$name" 2>> "$out/bench.log"; } 3>&1) ||
                        { fail bench "$name $model $nn"; best=; break; }
                    [ -z "$best" ] || [ "$ms" -lt "$best" ] && best=$ms
                done
                [ -n "$best" ] || continue
                check=reference
                if [ "$name" != "vqs-$cpus" ]; then
                    check=same
                    cmp -s <(head -n "$nn" "$work/s.vqs-$cpus") "$work/s.$name" ||
                        { check=DIFFERS; fail bench "$name $model $nn differs from vqs"; }
                fi
                awk -v m="$model" -v n="$nn" -v nm="$name end to end (best of 3, $((bytes / 1000000)) MB text)" -v ms="$best" -v t="$trees" -v c="$check" \
                    'BEGIN { printf "%s\t%s\t%s\t%s\t%.0f\t%.3f\t%s\n", m, n, nm, ms, n / (ms / 1e3), ms * 1e6 / (n * t), c }' >> "$out/bench.tsv"
            done
        done
    done
    # the crossover: batches of 10^2 .. 10^5 documents, cuda against vqs on every core
    printf 'model\tdocuments\tcuda ms\tvqs ms\n' > "$out/crossover.tsv"
    for model in 1000x64 20000x64; do
        for n in 100 1000 10000 $small; do
            d=$(docs_n $n)
            c=$( { t_ms qs-score --backend "$be" "$work/m/$model.qsm" "$d" > /dev/null 2>> "$out/bench.log"; } 3>&1)
            v=$( { t_ms qs-score --backend vqs --threads "$(nproc)" "$work/m/$model.qsm" "$d" > /dev/null 2>> "$out/bench.log"; } 3>&1)
            printf '%s\t%s\t%s\t%s\n' "$model" "$n" "$c" "$v" >> "$out/crossover.tsv"
        done
    done
    say "bench: $(wc -l < "$out/bench.tsv") lines (bench.tsv, crossover.tsv)"
fi

# ------------------------------------------------------------ sweep
if [[ $steps == *,sweep,* ]]; then
    d=$(docs_n "$small")
    dbs="4 8 16 32" ths="64 128 256 512" shs="49152 98304 200704"
    [ "${QS_GPU_SWEEP:-}" != small ] || { dbs="4 16" ths="64 256" shs="49152"; }
    printf 'trees\tdocuments\tdb\tthreads\ttau\tshared\tkernel ms min\tmedian\tdocs/s\tns/doc/tree\tcopy ms\tcheck\n' > "$out/sweep.tsv"
    for model in 1000x64 20000x64; do
        for db in $dbs; do
            for th in $ths; do
                for sh in $shs; do
                    QS_CUDA_DB=$db QS_CUDA_THREADS=$th QS_CUDA_SHARED=$sh \
                        timeout 60 cuda-kernel $kflag -n "$small" -r 3 "$work/m/$model.qsm" "$d" \
                        >> "$out/sweep.tsv" 2>> "$out/sweep.log" || echo "$model db=$db threads=$th shared=$sh: failed" >> "$out/sweep.log"
                done
            done
        done
    done
    say "sweep: best per model: $(sort -t$'\t' -k1,1n -k7,7g "$out/sweep.tsv" | awk -F'\t' '$1 ~ /^[0-9]/ && !seen[$1]++ { printf "%s trees: db=%s threads=%s shared=%s %s ms; ", $1, $3, $4, $6, $7 }')"
fi

# ------------------------------------------------------------ sanitize
if [[ $steps == *,sanitize,* ]]; then
    cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
    if [ -z "$cs" ]; then
        say "sanitize: compute-sanitizer is not on this machine: not run"
    else
        IFS=$'\t' read -r _ key dk _ < "$pack/conform/list.tsv"
        zstdcat "$pack/conform/$dk.docs.zst" | head -n 200 > "$work/sdocs"
        for tool in racecheck memcheck; do
            "$cs" --tool $tool --error-exitcode 9 qs-score --backend cuda "$work/m/$key.qsm" "$work/sdocs" \
                > "$out/sanitize.$tool.txt" 2>&1 && say "sanitize: $tool clean" ||
                fail sanitize "$tool (sanitize.$tool.txt)"
        done
    fi
fi

if [ -n "$failed" ]; then
    say "gpu-run.sh: failed steps:$failed"
    exit 1
fi
say "gpu-run.sh: every step passed"
