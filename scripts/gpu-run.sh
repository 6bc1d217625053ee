#!/usr/bin/env bash
# gpu-run.sh: the GPU-QS checks and benchmarks, on a GPU machine, in one go,
# from the folder scripts/gpu-pack.sh made (nothing is built there).
#
#   QS_GPU_STEPS=info,conform,sanitize,cpu,bench,sweep scripts/gpu-run.sh [PACK] [OUT]
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
#             (batches that end inside queries) on the first layout; up to 8
#             runs at a time, each its own process and CUDA context
#   sanitize  compute-sanitizer racecheck and memcheck on a small model
#             (when compute-sanitizer is on the machine)
#   cpu       this machine's CPU, not its GPU: vqs-avx2 against vqs-avx512
#             against auto on the packed grid of models (bench/kernels.sh)
#   bench     1,000 x 64 and 20,000 x 64 on 10^5 and 10^6 documents: the
#             kernel alone (bench/cuda-kernel) and end to end (text in,
#             scores out) for cuda, vqs on every core and qs on one core
#             (20,000 x 64: on 10^4 documents), every output compared
#   sweep     documents per thread-block x threads x shared budget, kernel
#             alone, 10^5 documents, both models (QS_GPU_SWEEP=full: a
#             larger grid; small: 4 settings)
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
steps=",${QS_GPU_STEPS:-info,conform,sanitize,cpu,bench,sweep},"
export PATH="$pack/bin:$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The shared libraries: the machine's own where it has them (a packed one may
# need a newer glibc than the machine's), else the packed ones; if the
# programs do not start that way, every packed one.
mkdir -p "$work/lib"
for l in "$pack"/lib/*; do
    ldconfig -p 2> /dev/null | grep -q "/$(basename "$l")\$" || ln -s "$l" "$work/lib/"
done
starts() { qs-score --version -v > /dev/null && qs-compile --version > /dev/null && zstd -V > /dev/null &&
    { qs-matrix > /dev/null 2>&1; [ $? = 2 ]; } && { cuda-kernel > /dev/null 2>&1; [ $? != 127 ]; }; }
export LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! starts 2> /dev/null; then
    export LD_LIBRARY_PATH="$pack/lib:$LD_LIBRARY_PATH"
    starts || { echo "gpu-run.sh: the packed programs do not start here" >&2; exit 2; }
fi
failed=
be=${QS_GPU_BACKEND:-cuda}
sizes=${QS_GPU_SIZES:-100000 1000000}
small=$(printf '%s\n' $sizes | head -n 1)
kflag=
[ "$be" = cuda ] || kflag=--emu

t0=$(date +%s)
say() { printf '[%4ss] %s\n' "$(($(date +%s) - t0))" "$*" | tee -a "$out/summary.txt"; }
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
# the 20,000 x 64 synthetic forest, made here (seeded: the same model each time)
if [ ! -f "$pack/bench/20000x64.txt.zst" ]; then
    zstdcat "$pack/bench/mq2008.letor.zst" > "$work/mq.letor"
    python3 bench/gen_forest.py 20000 64 "$work/mq.letor" 7 | qs-compile -o "$work/m/20000x64.qsm" - ||
        { say "gpu-run.sh: cannot make the 20,000 x 64 forest (python3 bench/gen_forest.py)"; exit 1; }
fi
for f in "$pack"/bench/*.txt.zst; do
    zstdcat "$f" | qs-compile -o "$work/m/$(basename "$f" .txt.zst).qsm" - ||
        { say "gpu-run.sh: cannot compile $f"; exit 1; }
done
par=$(( $(nproc) < 8 ? $(nproc) : 8 ))
export pack work be out
if [[ $steps == *,conform,* || $steps == *,sanitize,* || $steps == *,cpu,* ]]; then
    compile_one() {
        local f=$1 key
        key=$(basename "$f" .txt.zst)
        zstdcat "$f" > "$work/m/$key.txt" &&
            qs-compile -o "$work/m/$key.qsm" "$work/m/$key.txt" &&
            qs-compile --reverse-all --tree-block 37 -o "$work/m/$key.alt.qsm" "$work/m/$key.txt" ||
            { echo "cannot compile $f"; return 1; }
        rm "$work/m/$key.txt"
    }
    export -f compile_one
    ls "$pack"/conform/m*.txt.zst "$pack"/cpu/*.txt.zst 2> /dev/null |
        xargs -P "$(nproc)" -n 1 bash -c 'compile_one "$1"' _ ||
        { say "gpu-run.sh: cannot compile every packed model"; exit 1; }
fi

# ------------------------------------------------------------ conform
# one process per run, $par at a time (each its own CUDA context)
if [[ $steps == *,conform,* ]]; then
    conform_one() {
        local key=$1 mk=$2 dk=$3 opts=$4 q=$5 run=$6 model=$7 extra=() t="$work/c.$1.$5.$6"
        [ "$opts" != - ] || opts=
        case $run in
        threads) extra=(--threads 4) ;;
        batch) extra=(--gpu-batch 1000) ;;
        esac
        # shellcheck disable=SC2086
        if ! zstdcat "$pack/conform/$dk.docs.zst" | qs-score --backend "$be" "${extra[@]}" $opts "$work/m/$q" \
            > "$t.got" 2> "$t.err"; then
            echo "BAD $key $q ($model${opts:+ $opts}) $run: exit: $(head -c 300 "$t.err")"
        elif ! zstdcat "$pack/conform/$key.cpu.zst" | cmp -s "$t.got" -; then
            echo "BAD $key $q ($model${opts:+ $opts}) $run: differs: $(zstdcat "$pack/conform/$key.cpu.zst" | cmp "$t.got" - | head -c 200)"
        else
            echo "ok $key $q ($model${opts:+ $opts}) $run: same"
        fi
        rm -f "$t.got" "$t.err"
    }
    export -f conform_one
    while IFS=$'\t' read -r key mk dk opts model; do
        for run in plain threads batch; do
            printf '%s\0%s\0%s\0%s\0%s\0%s\0%s\0' "$key" "$mk" "$dk" "$opts" "$mk.qsm" "$run" "$model"
        done
        printf '%s\0%s\0%s\0%s\0%s\0%s\0%s\0' "$key" "$mk" "$dk" "$opts" "$mk.alt.qsm" plain "$model"
    done < "$pack/conform/list.tsv" |
        xargs -0 -P "$par" -n 7 bash -c 'conform_one "$@"' _ > "$out/conform.txt"
    n=$(wc -l < "$out/conform.txt")
    bad=$(grep -c '^BAD' "$out/conform.txt")
    say "conform: $((n - bad)) of $n runs byte-identical to the CPU"
    [ "$bad" -eq 0 ] || fail conform "$bad runs differ or failed (conform.txt)"
fi

# ------------------------------------------------------------ sanitize
if [[ $steps == *,sanitize,* ]]; then
    cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
    if [ -z "$cs" ]; then
        say "sanitize: compute-sanitizer is not on this machine: not run"
    else
        IFS=$'\t' read -r key _ dk _ < "$pack/conform/list.tsv"
        zstdcat "$pack/conform/$dk.docs.zst" | head -n 200 > "$work/sdocs"
        for tool in racecheck memcheck; do
            timeout 120 "$cs" --tool $tool --error-exitcode 9 qs-score --backend cuda "$work/m/$(
                awk -F'\t' -v k="$key" '$1 == k { print $2 }' "$pack/conform/list.tsv").qsm" "$work/sdocs" \
                > "$out/sanitize.$tool.txt" 2>&1 && say "sanitize: $tool clean" ||
                fail sanitize "$tool (sanitize.$tool.txt: $(tail -n 3 "$out/sanitize.$tool.txt" | tr '\n' ' ' | head -c 300))"
        done
    fi
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

# ------------------------------------------------------------ cpu
# This machine's CPU: vqs-avx2 against vqs-avx512 against auto per model
# (bench/kernels.sh: the matrix view, one thread a model, pinned), on the
# packed grid: LightGBM 8-64 leaves x 1,000 and 5,000 trees, XGBoost 16-64 x
# 1,000 and 64 x 5,000 (and 8 and 256 x 1,000 when packed), the QuickRank
# oblivious model and the 1,000 / 20,000 x 64 bench models; documents of each
# model's own set, repeated to QS_GPU_CPU_DOCS (20,000; 5,000 for 20,000 trees).
if [[ $steps == *,cpu,* ]]; then
    cl="$work/cpu.list" cn=${QS_GPU_CPU_DOCS:-20000}
    : > "$cl"
    rep_docs() { # SRC.zst N -> a file of N documents
        local f
        f="$work/rep.$(basename "$1" .zst).$2"
        [ -f "$f" ] || {
            zstdcat "$1" | grep -v '^[[:space:]]*$' > "$f.base"
            : > "$f"
            while [ "$(wc -l < "$f")" -lt "$2" ]; do cat "$f.base" >> "$f"; done
            head -n "$2" "$f" > "$f.tmp" && mv "$f.tmp" "$f"
        }
        printf '%s\n' "$f"
    }
    addm() { # NAME PATH-SUFFIX FILL
        local row mk dk
        row=$(awk -F'\t' -v s="$2" '{ p = $5; sub(/\.zst$/, "", p) } substr(p, length(p) - length(s) + 1) == s && !seen++ { print $2 "\t" $3 }' \
            "$pack/conform/list.tsv")
        [ -n "$row" ] || { say "cpu: $2 is not packed: skipped"; return; }
        mk=${row%%$'\t'*} dk=${row#*$'\t'}
        printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$work/m/$mk.qsm" "$(rep_docs "$pack/conform/$dk.docs.zst" "$cn")" "$3" "$cn" >> "$cl"
    }
    for l in 8 16 32 64; do
        for t in 1000 5000; do addm "LightGBM ${l}x$t" "lambdarank_l${l}_t$t/model.txt" zero; done
    done
    for l in 16 32; do addm "XGBoost ${l}x1000" "mq2008-ndcg-lg$l-t1000/model.json" nan; done
    addm "XGBoost 64x1000" "mq2008-ndcg-lg64-t1000/model.json" nan
    addm "XGBoost 64x5000" "mq2008-ndcg-lg64-t5000/model.json" nan
    addm "XGBoost depth 6 x1000" "mq2008-ndcg-d6-t1000/model.json" nan
    addm "QuickRank oblivious d6 x1000" "qr_oblivious_d6_t1000/model.xml" zero
    mqd=$(rep_docs "$pack/bench/mq2008.letor.zst" "$cn")
    for w in mq2008-t1000-l8 mq2008-t1000-l256; do
        [ -f "$work/m/$w.qsm" ] && printf 'XGBoost %s\t%s\t%s\tnan\t%s\n' "${w#mq2008-t1000-l}x1000" "$work/m/$w.qsm" "$mqd" "$cn" >> "$cl"
    done
    printf 'synthetic 64x20000\t%s\t%s\tnan\t%s\n' "$work/m/20000x64.qsm" "$mqd" $((cn / 4)) >> "$cl"
    cp "$cl" "$out/cpu.list"
    QS_BIN="$pack/bin" bench/kernels.sh --rounds "${QS_GPU_CPU_ROUNDS:-5}" --jobs "${QS_GPU_CPU_JOBS:-4}" \
        "$out/cpu" "$cl" > "$out/cpu.md" 2> "$out/cpu.log" || fail cpu "bench/kernels.sh (cpu.log)"
    grep -q DIFFER "$out/cpu.md" && fail cpu "a kernel's scores differ (cpu.md)"
    say "cpu: $(sed -n 's/^model name[[:space:]]*: //p' "$out/cpu/cpu.txt"); $(wc -l < "$cl") models (cpu.md)"
fi

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
            # 20,000 trees: the smallest size only (at 1 ns per document
            # and tree, 10^6 documents are 20 s a call), 3 reps
            [ "$trees" -lt 20000 ] || [ "$n" = "$small" ] || continue
            reps=$((trees >= 20000 ? 3 : 5))
            d=$(docs_n $n)
            bytes=$(wc -c < "$d")
            # the kernel alone (documents already on the device)
            cuda-kernel $kflag -n "$n" -r "$reps" "$q" "$d" > "$work/k" 2>> "$out/bench.log" ||
                fail bench "cuda-kernel $model $n: $(cat "$work/k")"
            awk -F'\t' -v m="$model" -v n="$n" -v r="$reps" '{ printf "%s\t%s\tcuda kernel (min of " r ")\t%s\t%s\t%s\t%s\n", m, n, $7, $9, $10, $12 }' \
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
    dbs="8 16 32" ths="128 256 512" shs="49152 200704"
    [ "${QS_GPU_SWEEP:-}" != full ] || { dbs="4 8 16 32" ths="64 128 256 512" shs="49152 98304 200704"; }
    [ "${QS_GPU_SWEEP:-}" != small ] || { dbs="4 16" ths="64 256" shs="49152"; }
    printf 'trees\tdocuments\tdb\tthreads\ttau\tshared\tkernel ms min\tmedian\tdocs/s\tns/doc/tree\tcopy ms\tcheck\n' > "$out/sweep.tsv"
    for model in 1000x64 20000x64; do
        # 20,000 trees: a tenth of the documents (the same work as 1,000 trees' 2x)
        sn=$small
        [ "$model" != 20000x64 ] || sn=$((small / 10))
        for db in $dbs; do
            for th in $ths; do
                for sh in $shs; do
                    QS_CUDA_DB=$db QS_CUDA_THREADS=$th QS_CUDA_SHARED=$sh \
                        timeout 60 cuda-kernel $kflag -n "$sn" -r 3 "$work/m/$model.qsm" "$d" \
                        >> "$out/sweep.tsv" 2>> "$out/sweep.log" || echo "$model db=$db threads=$th shared=$sh: failed" >> "$out/sweep.log"
                done
            done
        done
    done
    say "sweep: best per model: $(sort -t$'\t' -k1,1n -k7,7g "$out/sweep.tsv" | awk -F'\t' '$1 ~ /^[0-9]/ && !seen[$1]++ { printf "%s trees: db=%s threads=%s shared=%s %s ms; ", $1, $3, $4, $6, $7 }')"
fi

if [ -n "$failed" ]; then
    say "gpu-run.sh: failed steps:$failed"
    exit 1
fi
say "gpu-run.sh: every step passed"
