#!/usr/bin/env bash
# gpu-run.sh: the GPU back end's checks and benchmarks on a GPU machine, in
# one go, from the folder scripts/gpu-pack.sh made (nothing is built there),
# in order of what matters most, within a time budget:
#
#   QS_GPU_STEPS=info,diag,walk,conform,ncu,host,sanitize,sweep,crossover,scale,cpu \
#   QS_GPU_BUDGET=480 scripts/gpu-run.sh [PACK] [OUT]
#
# PACK defaults to build/gpu-pack, OUT to $OUT (or ./gpu-out).  Every step
# writes its results as TSV (and its log) under OUT and a line to
# OUT/summary.txt; a step that fails is reported and the next ones still run
# (exit 1 at the end), so one failed step can be rerun alone with
# QS_GPU_STEPS=STEP.  A step that would start after QS_GPU_BUDGET seconds
# (default 480: leaves time to rerun one) is not run, and says so.  `info`
# always runs first and stops everything when the back end is not available.
# Every score of every step is compared byte for byte (with the reference
# walk inside bench/cuda-kernel, or with the CPU's scores).
#
#   info      the GPU (nvidia-smi), the CPU, qs-score --version -v, --list-backends
#   diag      1,000 x 64 (XGBoost, MQ2008), 10^5 documents, the kernel alone:
#             the first GPU-QS kernel (cuda-kernel-v1) against each kernel now
#             (qs, rank, lanes, walk) and qs with 32, 64, 128 documents a
#             thread-block; the shared-atomics micro-benchmark (cuda-atomics)
#             -> diag.tsv, atomics.tsv
#   walk      rank, lanes and walk (the plain double-compare walk, the anchor
#             every GPU predictor uses) on 1,000 x 64 (10^5, 10^6 documents),
#             20,000 x 64 (10^4, 10^5) and 1,000 x 1,024 (10^5): threads 64,
#             128, 256, rows float32 and double -> walk.tsv
#   conform   every packed model in two layouts: --backend cuda byte for byte
#             against the CPU's scores, with the kernel auto picks (also
#             --threads 4 and --gpu-batch 1000) and with every other kernel
#             that takes the model; 8 processes at a time -> conform.tsv
#   ncu       counters (when ncu is on the machine) of rank and qs on 1,000 x 64:
#             bank conflicts, shared atomics, warps active, stall reasons,
#             L1/L2 hit rates -> ncu.txt
#   host      a process's fixed costs (cuda-host: driver, context, first
#             allocation, module load; pageable and page-locked copies), then
#             qs-score --backend cuda end to end on 10^6 documents, LETOR text
#             and --input f32, with and without the early device start
#             (QS_CUDA_WARM), against vqs on every core -> host.tsv
#   sanitize  compute-sanitizer racecheck and memcheck, every kernel, a small
#             model -> sanitize.*.txt
#   sweep     the tunables of each kernel on 1,000 x 64 and 20,000 x 64, the
#             kernel alone -> sweep.tsv
#   crossover batches of 10^2 .. 10^5 documents: cuda against vqs on every
#             core, end to end -> crossover.tsv
#   scale     this machine's CPU: qs-score --threads 1, 2, 4, 8, 16 (to the
#             CPUs there are) on 10^6 documents from a file, vqs -> scale.tsv
#   cpu       this machine's CPU: vqs-avx2 against vqs-avx512 against auto on
#             the packed grid of models (bench/kernels.sh) -> cpu.md
#
# A dry run on a machine without a GPU (checks this script, not the GPU):
#   QS_GPU_BACKEND=cuda-emu QS_GPU_SMALL=1 scripts/gpu-run.sh build/gpu-pack /tmp/gpu-out
set -uo pipefail
cd "$(dirname "$0")/.."
pack=$(cd "${1:-build/gpu-pack}" && pwd) || { echo "gpu-run.sh: no pack (scripts/gpu-pack.sh)" >&2; exit 2; }
out=${2:-${OUT:-gpu-out}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
steps=",${QS_GPU_STEPS:-info,diag,walk,conform,ncu,host,sanitize,sweep,crossover,scale,cpu},"
budget=${QS_GPU_BUDGET:-480}
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
small=${QS_GPU_SMALL:-}
kflag=
[ "$be" = cuda ] || kflag=--emu
# sizes: the device's, or the dry run's
if [ -n "$small" ]; then
    N5=400 N6=900 N4=100 NWIDE=120 SCALE=20
else
    N5=100000 N6=1000000 N4=10000 NWIDE=100000 SCALE=1
fi
# conform: at most this many models of the list, and documents of each
# (the dry run: a few)
cmodels=${QS_GPU_CONFORM_MODELS:-$([ -n "$small" ] && echo 6 || echo 100000)}
cdocs=${QS_GPU_CONFORM_DOCS:-$([ -n "$small" ] && echo 40 || echo 100000000)}
cpus=$(nproc)

t0=$(date +%s)
say() { printf '[%4ss] %s\n' "$(($(date +%s) - t0))" "$*" | tee -a "$out/summary.txt"; }
fail() { say "FAILED: $*"; failed="$failed $1"; }
# step NAME: whether to run step NAME now (asked for, and within the budget)
step() {
    [[ $steps == *,$1,* ]] || return 1
    if [ "$(($(date +%s) - t0))" -ge "$budget" ]; then
        say "$1: not run: past the budget of $budget s (QS_GPU_STEPS=$1 runs it alone)"
        return 1
    fi
    return 0
}
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
say "gpu-run.sh: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1); $cpus CPUs ($(sed -n 's/^Model name:[[:space:]]*//p' "$out/info.txt" | head -n 1))"
line=$(qs-score --list-backends | awk -F'\t' -v b="$be" '$1 == b')
say "$be: $(printf '%s' "$line" | cut -f2)"
case "$line" in
*'	yes	'*) ;;
*) say "gpu-run.sh: the $be back end is not available here; stopping"; exit 1 ;;
esac

# ------------------------------------------------------------ models, documents
mkdir -p "$work/m"
# (documents only: no blank or comment lines, so that a file of N lines is N documents)
zstdcat "$pack/bench/mq2008.letor.zst" | grep -v '^[[:space:]]*\(#.*\)\{0,1\}$' > "$work/mq.letor"
zstdcat "$pack/bench/1000x64.txt.zst" | qs-compile -o "$work/m/1000x64.qsm" - ||
    { say "gpu-run.sh: cannot compile the 1,000 x 64 model"; exit 1; }
# the synthetic forests, made here (seeded: the same models each time)
forest() { # NAME TREES LEAVES (the dry run: a 20th of the trees)
    [ -f "$work/m/$1.qsm" ] && return 0
    python3 bench/gen_forest.py "$(($2 / SCALE))" "$3" "$work/mq.letor" 7 | qs-compile -o "$work/m/$1.qsm" - ||
        { say "gpu-run.sh: cannot make the $1 forest (python3 bench/gen_forest.py)"; return 1; }
}
# documents: MQ2008 test, repeated to N (LETOR text, one file per size)
docs_n() {
    local n=$1 f="$work/docs.$1"
    if [ ! -f "$f" ]; then
        local have reps
        have=$(wc -l < "$work/mq.letor")
        reps=$(((n + have - 1) / have))
        for _ in $(seq "$reps"); do cat "$work/mq.letor"; done | head -n "$n" > "$f"
    fi
    printf '%s\n' "$f"
}
# kern TSV-FILE LABEL [ENV=V ...] -- ARGS: one bench/cuda-kernel run appended
# as "label<TAB>its line" (its check: "exact" or the count that differ)
kern() {
    local f=$1 label=$2
    shift 2
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    local o
    o=$(env "${envs[@]}" timeout 120 cuda-kernel $kflag "$@" 2>> "$out/kernel.log")
    local rc=$?
    if [ -z "$o" ]; then
        printf '%s\t(failed: exit %s)\n' "$label" "$rc" >> "$f"
        return 1
    fi
    printf '%s\t%s\n' "$label" "$o" >> "$f"
    [ "$rc" = 0 ]
}
KHEAD='run\tkernel\ttrees\tdocuments\tthreads\tdocs/block\ttau\tshared\tms min\tms median\tdocs/s\tns/doc/tree\tcopy ms\tMB in\tcheck'

# ------------------------------------------------------------ diag
if step diag; then
    printf "$KHEAD\n" > "$out/diag.tsv"
    # the kernel alone: cuda-kernel cycles the base documents up to -n
    m="$work/m/1000x64.qsm" d="$work/mq.letor"
    if [ -x "$pack/bin/cuda-kernel-v1" ]; then
        o=$(timeout 120 cuda-kernel-v1 $kflag -n "$N5" -r 3 "$m" "$d" 2>> "$out/kernel.log") &&
            printf 'the first kernel (v1)\tv1\t%s\n' "$o" >> "$out/diag.tsv" ||
            fail diag "the first kernel: $o"
    else
        say "diag: no cuda-kernel-v1 in the pack (gpu-pack.sh said why)"
    fi
    for k in qs rank lanes walk; do
        kern "$out/diag.tsv" "$k, defaults" -- -k "$k" -n "$N5" -r 5 "$m" "$d" || fail diag "$k"
    done
    for db in 64 128; do
        kern "$out/diag.tsv" "qs, $db documents a block" QS_CUDA_DB=$db -- -k qs -n "$N5" -r 5 "$m" "$d" ||
            fail diag "qs db $db"
    done
    if [ "$be" = cuda ]; then
        timeout 60 cuda-atomics > "$out/atomics.tsv" 2>> "$out/kernel.log" || fail diag "cuda-atomics"
    fi
    grep -q 'differ' "$out/diag.tsv" && fail diag "scores differ (diag.tsv)"
    say "diag: $(awk -F'\t' 'NR > 1 && $12 != "" { printf "%s %s ns; ", $1, $12 }' "$out/diag.tsv")"
fi

# ------------------------------------------------------------ walk
if step walk; then
    printf "$KHEAD\n" > "$out/walk.tsv"
    forest 20000x64 20000 64 && forest 1000x1024 1000 1024
    for k in rank lanes walk; do
        for mn in "1000x64 $N5" "1000x64 $N6" "20000x64 $N4" "20000x64 $N5" "1000x1024 $NWIDE"; do
            set -- $mn
            [ -f "$work/m/$1.qsm" ] || continue
            [ "$k" != lanes ] || [ "$1" != 1000x1024 ] || continue
            d="$work/mq.letor"
            kern "$out/walk.tsv" "$k $1" -- -k "$k" -n "$2" -r 3 "$work/m/$1.qsm" "$d" || fail walk "$k $1 $2"
        done
        d="$work/mq.letor"
        for th in 64 256; do
            kern "$out/walk.tsv" "$k 1000x64, $th threads" QS_CUDA_THREADS=$th -- -k "$k" -n "$N5" -r 3 \
                "$work/m/1000x64.qsm" "$d" || fail walk "$k threads $th"
        done
        kern "$out/walk.tsv" "$k 1000x64, double rows" -- -k "$k" --double -n "$N5" -r 3 \
            "$work/m/1000x64.qsm" "$d" || fail walk "$k double"
    done
    grep -q 'differ' "$out/walk.tsv" && fail walk "scores differ (walk.tsv)"
    say "walk: $(awk -F'\t' 'NR > 1 { printf "%s %s docs %s ns; ", $1, $4, $12 }' "$out/walk.tsv" | head -c 1500)"
fi

# ------------------------------------------------------------ conform
par=$((cpus < 8 ? cpus : 8))
export pack work be out
if step conform || step sanitize || step cpu; then
    compile_one() {
        local f=$1 key
        key=$(basename "$f" .txt.zst)
        [ -f "$work/m/$key.qsm" ] && return 0
        zstdcat "$f" > "$work/m/$key.txt" &&
            qs-compile -o "$work/m/$key.qsm" "$work/m/$key.txt" &&
            qs-compile --reverse-all --tree-block 37 -o "$work/m/$key.alt.qsm" "$work/m/$key.txt" ||
            { echo "cannot compile $f"; return 1; }
        rm "$work/m/$key.txt"
    }
    export -f compile_one
    if [ -n "$small" ]; then
        # the dry run: the models of its conformance runs only
        head -n "$cmodels" "$pack/conform/list.tsv" | cut -f2 | sort -u | sed "s|^|$pack/conform/|; s|\$|.txt.zst|"
    else
        ls "$pack"/conform/m*.txt.zst "$pack"/cpu/*.txt.zst 2> /dev/null
    fi | xargs -P "$cpus" -n 1 bash -c 'compile_one "$1"' _ ||
        { say "gpu-run.sh: cannot compile every packed model"; exit 1; }
fi
if step conform; then
    # one process per run, $par at a time (each its own CUDA context)
    export cdocs
    conform_one() {
        local key=$1 dk=$2 opts=$3 q=$4 run=$5 model=$6 extra=() envs=() t="$work/c.$1.$4.$5"
        [ "$opts" != - ] || opts=
        case $run in
        threads) extra=(--threads 4) ;;
        batch) extra=(--gpu-batch 1000) ;;
        qs | rank | lanes | walk) envs=(QS_CUDA_KERNEL=$run) ;;
        qs-search) envs=(QS_CUDA_KERNEL=qs QS_CUDA_PIVOTS=search) ;;
        esac
        # shellcheck disable=SC2086
        if ! zstdcat "$pack/conform/$dk.docs.zst" | head -n "$cdocs" | env "${envs[@]}" qs-score --backend "$be" \
            "${extra[@]}" $opts "$work/m/$q" > "$t.got" 2> "$t.err"; then
            if grep -q 'cannot score this model' "$t.err"; then
                printf 'refused\t%s\t%s\t%s\t%s\t%s\n' "$key" "$q" "$run" "$model${opts:+ $opts}" "$(head -c 200 "$t.err")"
            else
                printf 'BAD\t%s\t%s\t%s\t%s\texit: %s\n' "$key" "$q" "$run" "$model${opts:+ $opts}" "$(head -c 300 "$t.err")"
            fi
        elif ! zstdcat "$pack/conform/$key.cpu.zst" | head -n "$(wc -l < "$t.got")" | cmp -s "$t.got" - ||
            [ ! -s "$t.got" ]; then
            printf 'BAD\t%s\t%s\t%s\t%s\tdiffers\n' "$key" "$q" "$run" "$model${opts:+ $opts}"
        else
            printf 'same\t%s\t%s\t%s\t%s\t\n' "$key" "$q" "$run" "$model${opts:+ $opts}"
        fi
        rm -f "$t.got" "$t.err"
    }
    export -f conform_one
    while IFS=$'\t' read -r key mk dk opts model; do
        for run in plain threads batch qs qs-search rank lanes walk; do
            printf '%s\0%s\0%s\0%s\0%s\0%s\0' "$key" "$dk" "$opts" "$mk.qsm" "$run" "$model"
        done
        printf '%s\0%s\0%s\0%s\0%s\0%s\0' "$key" "$dk" "$opts" "$mk.alt.qsm" plain "$model"
    done < <(head -n "$cmodels" "$pack/conform/list.tsv") |
        xargs -0 -P "$par" -n 6 bash -c 'conform_one "$@"' _ > "$work/conform"
    { printf 'check\trun key\tmodel file\trun\tmodel\tnote\n'; sort -k2,2 -k4,4 "$work/conform"; } > "$out/conform.tsv"
    n=$(grep -c . "$work/conform")
    same=$(grep -c '^same' "$work/conform")
    refused=$(grep -c '^refused' "$work/conform")
    bad=$(grep -c '^BAD' "$work/conform")
    say "conform: $same of $n runs byte-identical to the CPU, $refused refused (a kernel that cannot take the model), $bad bad"
    [ "$bad" -eq 0 ] || fail conform "$bad runs differ or failed (conform.tsv)"
fi

# ------------------------------------------------------------ ncu
if step ncu; then
    nc=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2> /dev/null | head -n 1)
    if [ -z "$nc" ] || [ "$be" != cuda ]; then
        say "ncu: not on this machine: not run"
    else
        d="$work/mq.letor"
        for k in rank qs; do
            timeout 150 "$nc" --target-processes all --launch-skip 1 --launch-count 1 \
                --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warp_latency_issue_stalled_barrier,smsp__average_warp_latency_issue_stalled_long_scoreboard,smsp__average_warp_latency_issue_stalled_mio_throttle,smsp__average_warp_latency_issue_stalled_short_scoreboard,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed \
                cuda-kernel -k "$k" -n "$N5" -r 2 "$work/m/1000x64.qsm" "$d" > "$out/ncu.$k.txt" 2>&1 ||
                fail ncu "$k (ncu.$k.txt)"
        done
        say "ncu: ncu.rank.txt, ncu.qs.txt"
    fi
fi

# ------------------------------------------------------------ host
if step host; then
    printf 'what\tms\tGB/s or docs/s\tcheck\n' > "$out/host.tsv"
    if [ "$be" = cuda ]; then
        timeout 60 cuda-host 256 | tail -n +2 | sed 's/$/\t/' >> "$out/host.tsv" || fail host "cuda-host"
    fi
    d=$(docs_n "$N6")
    # float32 rows of the model's features (column j = LETOR id j, NaN for an
    # absent one: as the XGBoost model reads them), for --input f32: every
    # run's scores are the text's
    nf=$(qs-compile --info "$work/m/1000x64.qsm" | sed -n 's/^features: \([0-9]*\).*/\1/p')
    # (the base documents' rows once, repeated: the same rows as $d's)
    python3 - "$work/mq.letor" "$work/f32.base" "$nf" << 'EOF' || fail host "making f32 rows"
import array, sys
src, dst, nf = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(src) as fh, open(dst, "wb") as out:
    for line in fh:
        row = [float("nan")] * nf
        for tok in line.split("#", 1)[0].split()[2:]:
            k, _, v = tok.partition(":")
            f = int(k)
            if f < nf:
                row[f] = float(v)
        array.array("f", row).tofile(out)
EOF
    have=$(wc -l < "$work/mq.letor")
    for _ in $(seq $(((N6 + have - 1) / have))); do cat "$work/f32.base"; done |
        head -c $((N6 * nf * 4)) > "$work/f32"
    m="$work/m/1000x64.qsm"
    run_e2e() { # LABEL ENV... -- ARGS: best of 3, output kept as $work/e2e.LABEL
        local label=$1 best= ms
        shift
        local envs=()
        while [ "$1" != -- ]; do envs+=("$1"); shift; done
        shift
        for r in 1 2 3; do
            ms=$( { t_ms env "${envs[@]}" qs-score "$@" > "$work/e2e.$label" 2>> "$out/host.log"; } 3>&1) ||
                { fail host "$label"; return 1; }
            [ -z "$best" ] || [ "$ms" -lt "$best" ] && best=$ms
        done
        local check=reference
        if [ "$label" != vqs-text ]; then
            check=same
            cmp -s "$work/e2e.vqs-text" "$work/e2e.$label" || { check=DIFFERS; fail host "$label differs from vqs"; }
        fi
        awk -v l="$label" -v n="$N6" -v ms="$best" -v c="$check" \
            'BEGIN { printf "%s (%s documents, best of 3)\t%s\t%.0f\t%s\n", l, n, ms, n * 1000 / (ms > 0 ? ms : 1), c }' >> "$out/host.tsv"
    }
    run_e2e vqs-text QS_X=1 -- --backend vqs --threads "$cpus" "$m" "$d"
    run_e2e vqs-f32 QS_X=1 -- --backend vqs --threads "$cpus" --input f32 --features "$nf" "$m" "$work/f32"
    run_e2e cuda-text QS_CUDA_WARM=1 -- --backend "$be" "$m" "$d"
    run_e2e cuda-text-nowarm QS_CUDA_WARM=0 -- --backend "$be" "$m" "$d"
    run_e2e cuda-f32 QS_CUDA_WARM=1 -- --backend "$be" --input f32 --features "$nf" "$m" "$work/f32"
    say "host: $(awk -F'\t' 'NR > 1 { printf "%s: %s ms; ", $1, $2 }' "$out/host.tsv" | head -c 900)"
fi

# ------------------------------------------------------------ sanitize
if step sanitize; then
    cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
    if [ -z "$cs" ] || [ "$be" != cuda ]; then
        say "sanitize: compute-sanitizer is not on this machine: not run"
    else
        # small models (the tools are slow): one every kernel takes, and one
        # with categorical nodes (qs and walk take it; the others refuse)
        : > "$out/sanitize.txt"
        for pat in mq2008-tiny categorical; do
            mk=$(awk -F'\t' -v p="$pat" 'index($5, p) { print $2; exit }' "$pack/conform/list.tsv")
            dk=$(awk -F'\t' -v p="$pat" 'index($5, p) { print $3; exit }' "$pack/conform/list.tsv")
            [ -n "$mk" ] || { say "sanitize: no $pat model packed"; continue; }
            zstdcat "$pack/conform/$dk.docs.zst" | head -n 200 > "$work/sdocs"
            for k in qs rank lanes walk; do
                for tool in racecheck memcheck; do
                    QS_CUDA_KERNEL=$k timeout 120 "$cs" --tool $tool --error-exitcode 9 qs-score --backend cuda \
                        "$work/m/$mk.qsm" "$work/sdocs" > "$out/sanitize.$pat.$k.$tool.txt" 2>&1
                    rc=$?
                    if [ "$rc" = 0 ]; then
                        echo "$pat $k $tool: clean" >> "$out/sanitize.txt"
                    elif grep -q 'cannot score this model' "$out/sanitize.$pat.$k.$tool.txt"; then
                        echo "$pat $k $tool: refused (the kernel cannot take the model)" >> "$out/sanitize.txt"
                        break
                    else
                        echo "$pat $k $tool: exit $rc" >> "$out/sanitize.txt"
                        fail sanitize "$pat $k $tool (sanitize.$pat.$k.$tool.txt)"
                    fi
                done
            done
        done
        say "sanitize: $(grep -c clean "$out/sanitize.txt") clean, $(grep -c refused "$out/sanitize.txt") refused, $(grep -c exit "$out/sanitize.txt") failed"
    fi
fi

# ------------------------------------------------------------ sweep
if step sweep; then
    printf "$KHEAD\n" > "$out/sweep.tsv"
    forest 20000x64 20000 64
    for model in 1000x64 20000x64; do
        [ -f "$work/m/$model.qsm" ] || continue
        sn=$N5
        [ "$model" != 20000x64 ] || sn=$N4
        d="$work/mq.letor"
        for k in rank lanes; do
            for th in 64 96 128 192 256 512; do
                kern "$out/sweep.tsv" "$k $model threads=$th" QS_CUDA_THREADS=$th -- -k $k -n "$sn" -r 3 \
                    "$work/m/$model.qsm" "$d" || true
            done
        done
        for db in 32 64 128; do
            for th in 128 256 512; do
                for sh in 49152 100352 200704; do
                    kern "$out/sweep.tsv" "qs $model db=$db threads=$th shared=$sh" QS_CUDA_DB=$db \
                        QS_CUDA_THREADS=$th QS_CUDA_SHARED=$sh -- -k qs -n "$sn" -r 3 "$work/m/$model.qsm" "$d" || true
                done
            done
        done
    done
    grep -q 'differ' "$out/sweep.tsv" && fail sweep "scores differ (sweep.tsv)"
    say "sweep: best per model and kernel: $(awk -F'\t' 'NR > 1 && $9 != "" { split($1, a, " "); key = a[1] " " a[2]; if (!(key in b) || $9 + 0 < b[key] + 0) { b[key] = $9; w[key] = $1 } } END { for (k in b) printf "%s %s ms; ", w[k], b[k] }' "$out/sweep.tsv")"
fi

# ------------------------------------------------------------ crossover
if step crossover; then
    printf 'model\tdocuments\tcuda ms\tvqs ms (%s threads)\n' "$cpus" > "$out/crossover.tsv"
    forest 20000x64 20000 64
    for model in 1000x64 20000x64; do
        [ -f "$work/m/$model.qsm" ] || continue
        for n in 100 1000 10000 "$N5"; do
            d=$(docs_n "$n")
            c=$( { t_ms qs-score --backend "$be" "$work/m/$model.qsm" "$d" > "$work/x.c" 2>> "$out/bench.log"; } 3>&1)
            v=$( { t_ms qs-score --backend vqs --threads "$cpus" "$work/m/$model.qsm" "$d" > "$work/x.v" 2>> "$out/bench.log"; } 3>&1)
            cmp -s "$work/x.c" "$work/x.v" || fail crossover "$model $n differs"
            printf '%s\t%s\t%s\t%s\n' "$model" "$n" "$c" "$v" >> "$out/crossover.tsv"
        done
    done
    say "crossover: crossover.tsv"
fi

# ------------------------------------------------------------ scale
if step scale; then
    printf 'threads\tms (best of 3)\tdocuments/s\tspeed-up over 1\tcheck\n' > "$out/scale.tsv"
    d=$(docs_n "$N6")
    m="$work/m/1000x64.qsm"
    one=
    for t in 1 2 4 8 16 32 64; do
        [ "$t" -le "$cpus" ] || break
        best=
        for r in 1 2 3; do
            ms=$( { t_ms qs-score --backend vqs --threads "$t" "$m" "$d" > "$work/s.$t" 2>> "$out/scale.log"; } 3>&1) ||
                { fail scale "--threads $t"; break; }
            [ -z "$best" ] || [ "$ms" -lt "$best" ] && best=$ms
        done
        [ -n "$best" ] || continue
        [ -n "$one" ] || one=$best
        check=same
        cmp -s "$work/s.1" "$work/s.$t" || { check=DIFFERS; fail scale "--threads $t differs"; }
        awk -v t="$t" -v ms="$best" -v n="$N6" -v one="$one" -v c="$check" \
            'BEGIN { if (ms < 1) ms = 1; printf "%s\t%s\t%.0f\t%.2f\t%s\n", t, ms, n * 1000 / ms, one / ms, c }' >> "$out/scale.tsv"
    done
    say "scale: $(awk -F'\t' 'NR > 1 { printf "%s threads %sx; ", $1, $4 }' "$out/scale.tsv")"
fi

# ------------------------------------------------------------ cpu
# This machine's CPU: vqs-avx2 against vqs-avx512 against auto per model
# (bench/kernels.sh: the matrix view, one thread a model, pinned), on the
# packed grid; documents of each model's own set, repeated to
# QS_GPU_CPU_DOCS (20,000; 5,000 for 20,000 trees).
if step cpu; then
    cl="$work/cpu.list" cn=${QS_GPU_CPU_DOCS:-20000}
    [ -z "$small" ] || cn=500
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
        row=$(awk -F'\t' -v s="$2" 'substr($5, length($5) - length(s) + 1) == s && !seen++ { print $2 "\t" $3 }' \
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
    [ -f "$work/m/20000x64.qsm" ] && printf 'synthetic 64x20000\t%s\t%s\tnan\t%s\n' "$work/m/20000x64.qsm" "$mqd" $((cn / 4)) >> "$cl"
    cp "$cl" "$out/cpu.list"
    QS_BIN="$pack/bin" bench/kernels.sh --rounds "${QS_GPU_CPU_ROUNDS:-5}" --jobs "${QS_GPU_CPU_JOBS:-4}" \
        "$out/cpu" "$cl" > "$out/cpu.md" 2> "$out/cpu.log" || fail cpu "bench/kernels.sh (cpu.log)"
    grep -q DIFFER "$out/cpu.md" && fail cpu "a kernel's scores differ (cpu.md)"
    say "cpu: $(sed -n 's/^model name[[:space:]]*: //p' "$out/cpu/cpu.txt" 2> /dev/null | head -n 1); $(wc -l < "$cl") models (cpu.md)"
fi

if [ -n "$failed" ]; then
    say "gpu-run.sh: failed steps:$failed"
    exit 1
fi
say "gpu-run.sh: every step asked for passed (or said why it did not run)"
