#!/bin/sh
# bench/auto-grid.sh: is `auto` the fastest exact back end on every shape of
# model?  For each model of a grid (bench/gen_forest.py: random trees of 8 to
# 4,096 leaves; trees grown to XGBoost's max_depth 6, 10 and 12; oblivious
# trees of depth 6, 8 and 10), qs-blocktune's first stage times every exact
# back end this machine runs (one thread, the sample's documents as a
# float64 matrix, each back end's scores checked against the defaults', the
# median of --repeat passes) beside the defaults (what `auto` runs here).
# One row a model: what auto runs, its ns per document per tree, the
# fastest back end and its time, and auto / fastest (1.00: auto is right):
# those from qs-blocktune's confirmation (the defaults and the three fastest
# again, in interleaved rounds, medians; the first stage measures the
# defaults first, a little cold); then every back end's first-stage time.
#
#   bench/auto-grid.sh [--docs FILE] [--repeat N] [--dir DIR] [--quick | --only M,M...]
#
# --docs: LETOR documents (default: MQ2008's test set from the oracle data,
# $QS_ORACLE_DATA or build/oracle); --quick: every second model; --only:
# the models named (forest-64, depth10, ...).  The markdown table goes to
# standard output, progress to standard error.
set -eu

here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
repo=$(dirname -- "$here")
docs=${QS_ORACLE_DATA:-$repo/build/oracle}/letor/mq2008/test.txt
repeat=5
dir=${QS_BENCH_DIR:-/tmp/qs-bench}/auto-grid
quick=0
only=
while [ $# -gt 0 ]; do
    case $1 in
        --docs) docs=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --quick) quick=1; shift ;;
        --only) only=,$2,; shift 2 ;;
        -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench/auto-grid.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ -f "$docs" ] || { echo "bench/auto-grid.sh: no documents at $docs (make unpacks the oracle data; or --docs FILE)" >&2; exit 2; }
bin=$repo/bin
[ -x "$bin/qs-blocktune" ] || { echo "bench/auto-grid.sh: build qs first (make)" >&2; exit 2; }
mkdir -p "$dir"

# name  generator options  trees  leaves
grid='forest-8 - 1000 8
forest-16 - 1000 16
forest-32 - 1000 32
forest-64 - 1000 64
forest-128 - 1000 128
forest-256 - 512 256
forest-512 - 256 512
forest-768 - 170 768
forest-1024 - 128 1024
forest-2048 - 64 2048
forest-4096 - 32 4096
depth6 --max-depth=6 1000 64
depth10 --max-depth=10 128 1024
depth12 --max-depth=12 64 2500
oblivious-d6 --oblivious 1000 64
oblivious-d8 --oblivious 256 256
oblivious-d10 --oblivious 128 1024'

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "auto-grid: $(date -u +%Y-%m-%d), $cpu, $(nproc) CPUs, $(wc -l < "$docs") documents of $docs, median of $repeat" >&2
echo "| model | trees x leaves | auto runs | auto ns/doc/tree | fastest | its ns/doc/tree | auto / fastest | every back end, first stage (ns/doc/tree; p: probed on 512 documents) |"
echo "|---|---|---|---:|---|---:|---:|---|"
n=0
echo "$grid" | while read -r name opt trees leaves; do
    n=$((n + 1))
    if [ $quick = 1 ] && [ $((n % 2)) = 0 ]; then continue; fi
    case $only in ''|*,"$name",*) ;; *) continue ;; esac
    q=$dir/$name.qsm
    if [ ! -f "$q" ]; then
        set --
        case $opt in
            -) ;;
            --max-depth=*) set -- --max-depth "${opt#--max-depth=}" ;;
            *) set -- "$opt" ;;
        esac
        python3 "$here/gen_forest.py" "$@" "$trees" "$leaves" "$docs" 7 | "$bin/qs-compile" -o "$q" -
    fi
    echo "auto-grid: $name" >&2
    "$bin/qs-blocktune" --budget 0.001 --repeat "$repeat" -o "$dir/$name.tuned.qsm" "$q" "$docs" > "$dir/$name.report"
    awk -F'\t' -v name="$name" -v shape="$trees x $leaves" '
        # the defaults come first; the back ends are measured with their
        # settings (order SD, the same tau, delta and batch)
        $NF == "(defaults)" && auto == "" { auto = $8; auto_ns = $9; tau = $5; delta = $6; batch = $7 }
        auto != "" && ($1 == "SD" || $1 == "probe") && $2 == "SD" && $5 == tau && $6 == delta && $7 == batch {
            ns = $9
            b = $8
            if (!(b in seen)) { seen[b] = 1; list = list (list ? ", " : "") b " " sprintf("%.2f", ns) ($1 == "probe" ? " p" : "") }
            if ($1 != "probe" && (best == "" || ns + 0 < best_ns + 0)) { best = b; best_ns = ns }
        }
        # the defaults and the three best, again in interleaved rounds
        # (medians): auto against the fastest of them
        /^confirmation / {
            sub(/^[^:]*: /, "")
            k = split($0, c, "; ")
            for (i = 1; i <= k; i++) {
                sub(/ \(faster in [0-9]+ of [0-9]+\)$/, "", c[i])
                m = split(c[i], w, " ")
                if (i == 1) { cauto = w[m - 1]; cauto_ns = w[m] }
                if (i == 1 || w[m] + 0 < cbest_ns + 0) { cbest = w[m - 1]; cbest_ns = w[m] }
            }
        }
        END {
            if (cauto != "") { auto_ns = cauto_ns; best = cbest; best_ns = cbest_ns }
            printf "| %s | %s | %s | %.2f | %s | %.2f | %.2f | %s |\n", name, shape, auto, auto_ns, best, best_ns, auto_ns / best_ns, list
        }' "$dir/$name.report"
done
