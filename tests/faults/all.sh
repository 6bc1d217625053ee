#!/usr/bin/env bash
# all.sh: the fault sweeps of every tool (tests/faults/sweep.sh over
# tests/faults/qsfault.c): small runs of qs-convert (each format), qs-compile
# (and its --info, JSON and text), qs-score (each back end, --threads 2 and 3), qs-eval and qs-blocktune,
# with a failed allocation at each point; thread starts failed at each
# point; read errors at every byte offset of small inputs.
#
#   tests/faults/all.sh [-s STEP] [RUN...]      RUN: a name below, or a
#                                               prefix (convert, info, score, read)
# -s STEP: every STEP-th point (and the first and last three); default 1,
# every point (make check-faults).  Prints a line per run, then the total;
# exit 1 when any run failed.  Needs the tools on PATH (bin/).
set -u
step=1
[ "${1:-}" = -s ] && { step=$2; shift 2; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
fix=$root/tests/fixtures
T=$(mktemp -d "${TMPDIR:-/tmp}/qs-faults.XXXXXX")
trap 'rm -rf "$T"' EXIT
export PATH="$root/bin:$PATH"

# The inputs and what each run must write without a fault.
qs-convert "$fix/lgb-l8/model.txt.zst" > "$T/lgb.txt"
qs-compile -o "$T/lgb.qsm" "$T/lgb.txt"
qs-convert "$fix/xgb-tiny/model.json" > "$T/xgb.txt"
qs-compile -o "$T/xgb.qsm" "$T/xgb.txt"
qs-convert "$fix/xgboost/v2-cat.ubj" > "$T/ubj.txt"
qs-convert "$fix/catboost/multi.json" > "$T/cb.txt"
qs-convert "$fix/onnx/h3-modes.onnx" > "$T/onnx.txt"
qs-convert "$fix/quickrank/tiny.xml" > "$T/qr.txt"
qs-convert "$fix/qr-oblivious/model.xml.zst" | qs-compile -o "$T/obl.qsm" -
head -n 40 "$fix/lgb-l8/docs.letor" > "$T/docs"
head -n 40 "$fix/qr-oblivious/docs.letor" > "$T/obl.docs"
qs-score "$T/lgb.qsm" "$T/docs" > "$T/scores"
qs-score "$T/obl.qsm" "$T/obl.docs" > "$T/obl.scores"
head -n 10 "$fix/xgb-tiny/docs.letor" > "$T/xgb.docs"
qs-score "$T/xgb.qsm" "$T/xgb.docs" > "$T/xgb.scores"
qs-score --annotate "$T/lgb.qsm" "$T/docs" > "$T/annotated"
qs-eval -k 10 "$T/annotated" > "$T/ndcg"
cat "$T/docs" "$T/docs" "$T/docs" "$T/docs" > "$T/sample"

declare -A run
run[convert-lightgbm]="$T/lgb.txt -- qs-convert -o @OUT@ $fix/lgb-l8/model.txt.zst"
run[convert-xgboost-json]="$T/xgb.txt -- qs-convert -o @OUT@ $fix/xgb-tiny/model.json"
run[convert-xgboost-ubjson]="$T/ubj.txt -- qs-convert -o @OUT@ $fix/xgboost/v2-cat.ubj"
run[convert-catboost]="$T/cb.txt -- qs-convert -o @OUT@ $fix/catboost/multi.json"
run[convert-onnx]="$T/onnx.txt -- qs-convert -o @OUT@ $fix/onnx/h3-modes.onnx"
run[convert-quickrank]="$T/qr.txt -- qs-convert -o @OUT@ $fix/quickrank/tiny.xml"
run[compile]="$T/lgb.qsm -- qs-compile -o @OUT@ $T/lgb.txt"
# --info: an XGBoost model with a category encoder (zstd, JSON), its .qsm
# (tuned), as JSON and as text; to a file and to standard output (which a
# failed run must leave empty: the report is written whole or not at all)
qs-compile --info --json "$fix/xgboost-cats/cats.json.zst" > "$T/cats.json"
qs-compile --info "$fix/xgboost-cats/cats.json.zst" > "$T/cats.txt"
qs-blocktune --repeat 1 --budget 0.05 -o "$T/tuned.qsm" "$T/lgb.qsm" "$T/sample" > /dev/null
qs-compile --info --json "$T/tuned.qsm" > "$T/tuned.json"
run[info-json]="$T/cats.json -- qs-compile --info --json -o @OUT@ $fix/xgboost-cats/cats.json.zst"
run[info-json-stdout]="$T/cats.json -- qs-compile --info --json $fix/xgboost-cats/cats.json.zst"
run[info-text-stdout]="$T/cats.txt -- qs-compile --info $fix/xgboost-cats/cats.json.zst"
run[info-qsm-stdout]="$T/tuned.json -- qs-compile --info --json $T/tuned.qsm"
for b in walk qs vqs struct vpred walk-batch; do
    run[score-$b]="$T/scores -- qs-score --threads 1 --backend $b -o @OUT@ $T/lgb.qsm $T/docs"
done
run[score-oblivious]="$T/obl.scores -- qs-score --threads 1 --backend oblivious -o @OUT@ $T/obl.qsm $T/obl.docs"
run[score-threads2]="$T/scores -- qs-score --threads 2 -o @OUT@ $T/lgb.qsm $T/docs"
run[eval]="$T/ndcg -- qs-eval -k 10 $T/annotated"
# (its measurements allocate as they go: hundreds of thousands of points;
# every one of the first 600, which read the model and the sample and
# measure the defaults, then 20 spread over the rest)
run[blocktune]="- -m 600 -- qs-blocktune --repeat 1 --budget 0.05 -o @OUT@ $T/lgb.qsm $T/sample"
# thread starts: the probe before each team, the .qsm's second
# decompression thread, qs-blocktune's teams
run[thread-score2]="$T/scores -- qs-score --threads 2 -o @OUT@ $T/lgb.qsm $T/docs"
# (the model loaded with two threads: QSLY decompressed on a thread of its own)
run[thread-score2-load]="$T/scores -- env QS_PARSE_AHEAD=0 qs-score --threads 2 -o @OUT@ $T/lgb.qsm $T/docs"
run[thread-score3]="$T/scores -- qs-score --threads 3 -o @OUT@ $T/lgb.qsm $T/docs"
run[thread-blocktune]="- -- qs-blocktune --repeat 1 --budget 0.05 --threads 4 -o @OUT@ $T/lgb.qsm $T/sample"
# read errors at every byte offset (models and documents, plain and zstd)
run[read-score]="$T/xgb.scores -- qs-score --threads 1 -o @OUT@ $T/xgb.qsm $T/xgb.docs"
# (two threads: the documents read by ranges, pread, while the model loads)
run[read-score-threads]="$T/xgb.scores -- qs-score --threads 2 -o @OUT@ $T/xgb.qsm $T/xgb.docs"
run[read-convert]="$T/qr.txt -- qs-convert -o @OUT@ $fix/quickrank/tiny.xml"
# (a zstd frame: the reads of the file and of the decompressed stream)
if command -v zstd > /dev/null; then
    zstd -q -c "$fix/quickrank/tiny.xml" > "$T/tiny.xml.zst"
    run[read-convert-zstd]="$T/qr.txt -- qs-convert -o @OUT@ $T/tiny.xml.zst"
fi
run[read-eval]="$T/ndcg -- qs-eval -k 10 $T/annotated"

names=("$@")
[ ${#names[@]} = 0 ] && names=(convert compile info score eval blocktune thread read)
total=0 fails=0 nruns=0
for want in "${names[@]}"; do
    for r in $(printf '%s\n' "${!run[@]}" | sort); do
        case $r in "$want"|"$want"-*) ;; *) continue ;; esac
        kind=alloc
        case $r in thread-*) kind=thread ;; read-*) kind=read ;; esac
        # shellcheck disable=SC2086 # the run's words
        set -- ${run[$r]}
        exp=$1
        shift
        if [ "$exp" = - ]; then exp=; fi
        opt=()
        if [ "$1" = -m ]; then opt=(-m "$2"); shift 2; fi
        out=$("$here/sweep.sh" -k "$kind" -s "$step" "${opt[@]}" "$r" "$exp" "$@" 2>&1)
        rc=$?
        echo "$out"
        nruns=$((nruns + 1))
        [ $rc = 0 ] || fails=$((fails + 1))
        n=$(sed -n 's/^sweep [^:]*: [0-9]* points ([a-z]*), \([0-9]*\) run:.*/\1/p' <<< "$out")
        total=$((total + ${n:-0}))
    done
done
echo "faults: $nruns runs, $total faulted runs (step $step), $fails failed"
[ $fails = 0 ]
