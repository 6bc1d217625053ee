#!/bin/sh
# bench/blocktune.sh: the guided search of qs-blocktune against its exhaustive
# grid, on the MQ2008 workloads of bench/run.sh (see bench/README.md,
# "Blocktune").  For each model: a 20,000-document sample and 20,000 other
# (held-out) documents of the workload; qs-blocktune (guided) and
# qs-blocktune --exhaustive, each timed; then the three settings (the
# defaults, the guided winner, the grid's winner) timed on the held-out
# documents with qs-blocktune --time, interleaved (A B C A B C ...), medians.
#
#   bench/blocktune.sh [--models 1000x64,5000x16] [--rounds N] [--dir DIR]
#
# The workloads come from `bench/run.sh --prepare-only --models ...`.
set -eu

here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
repo=$(dirname -- "$here")
models=1000x64,5000x16
rounds=7
dir=${QS_BENCH_DIR:-/tmp/qs-bench}
while [ $# -gt 0 ]; do
    case $1 in
        --models) models=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench/blocktune.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
bin=$repo/bin
out=$dir/blocktune
mkdir -p "$out"

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
now() { date +%s.%N; }

echo "| model | setting | order s d τ Δ batch back end | ns/doc/tree on the sample | ns/doc/tree held out (median of $rounds) | vs defaults | vs grid best | search s |"
echo "|---|---|---|---:|---:|---:|---:|---:|"
for m in $(echo "$models" | tr , ' '); do
    trees=${m%x*}
    leaves=${m#*x}
    w=$dir/workloads/mq2008-t$trees-l$leaves-n50000-s1
    [ -f "$w/model.json" ] || { echo "bench/blocktune.sh: $w is missing: run bench/run.sh --prepare-only --models $m" >&2; exit 4; }
    o=$out/$m
    mkdir -p "$o"
    [ -f "$o/m.qsm" ] || "$bin/qs-convert" "$w/model.json" | "$bin/qs-compile" -o "$o/m.qsm"
    head -n 20000 "$w/docs.txt" > "$o/sample.letor"
    tail -n 20000 "$w/docs.txt" > "$o/held.letor"
    t0=$(now)
    "$bin/qs-blocktune" -o "$o/guided.qsm" "$o/m.qsm" "$o/sample.letor" > "$o/guided.txt"
    t1=$(now)
    if [ ! -f "$o/exhaustive.qsm" ] || [ "${QS_BENCH_REDO:-0}" = 1 ]; then
        "$bin/qs-blocktune" --exhaustive -o "$o/exhaustive.qsm" "$o/m.qsm" "$o/sample.letor" > "$o/exhaustive.txt"
    fi
    t2=$(now)
    tg=$(echo "$t1 - $t0" | bc)
    te=$(sed -n 's/^points: .*search time \([0-9.]*\) s.*/\1/p' "$o/exhaustive.txt")
    echo "$m: guided search $tg s (wall, load and sample included); exhaustive $te s (search)" >&2
    : > "$o/held.m" ; : > "$o/held.guided" ; : > "$o/held.exhaustive"
    r=0
    while [ $r -lt "$rounds" ]; do
        for v in m guided exhaustive; do
            "$bin/qs-blocktune" --time "$o/$v.qsm" "$o/held.letor" | cut -f1 >> "$o/held.$v"
        done
        r=$((r + 1))
    done
    hm=$(median < "$o/held.m"); hg=$(median < "$o/held.guided"); he=$(median < "$o/held.exhaustive")
    for v in m guided exhaustive; do
        case $v in
            m) name=defaults; s=$(sed -n 's/^defaults: \(.*\): \([0-9.]*\) ns.*/\1/p' "$o/guided.txt")
               sn=$(sed -n 's/^defaults: .*: \([0-9.]*\) ns.*/\1/p' "$o/guided.txt"); h=$hm; st="" ;;
            guided) name=guided; s=$(sed -n 's/^winner: \(.*\): [0-9.]* ns.*/\1/p' "$o/guided.txt")
               sn=$(sed -n 's/^winner: .*: \([0-9.]*\) ns.*/\1/p' "$o/guided.txt"); h=$hg; st=$tg ;;
            exhaustive) name=exhaustive; s=$(sed -n 's/^winner: \(.*\): [0-9.]* ns.*/\1/p' "$o/exhaustive.txt")
               sn=$(sed -n 's/^winner: .*: \([0-9.]*\) ns.*/\1/p' "$o/exhaustive.txt"); h=$he; st=$te ;;
        esac
        printf '| %s | %s | %s | %s | %s | %.3f | %.3f | %s |\n' "$m" "$name" "$s" "$sn" "$h" \
            "$(echo "$hm / $h" | bc -l)" "$(echo "$he / $h" | bc -l)" "$st"
    done
done
