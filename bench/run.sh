#!/bin/sh
# bench/run.sh: build qs if needed, then time every qs-score back end against
# XGBoost's own predictor (bench/bench.py).  See bench/README.md.
#
#   bench/run.sh [--quick | --all | --models 1000x64,5000x64,oblivious] [--reps N]
#                [--no-build] [--dir DIR] ...        (bench/run.sh --help: all options)
#
# The markdown table goes to standard output; progress, and the paths of the
# CSV files and machine.txt, to standard error.
set -eu

here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
repo=$(dirname -- "$here")
py=${QS_BENCH_PYTHON:-/usr/bin/python3}

build=1
for arg in "$@"; do
    case $arg in
        --no-build|-h|--help) build=0 ;;
    esac
done

if [ ! -x "$py" ]; then
    echo "bench/run.sh: $py not found; install Debian's python3 with" >&2
    echo "  apt-get install python3 python3-xgboost python3-numpy zstd" >&2
    exit 4
fi
if ! "$py" -c 'import numpy, xgboost' 2>/dev/null; then
    echo "bench/run.sh: $py cannot import numpy and xgboost; install them with" >&2
    echo "  apt-get install python3-xgboost python3-numpy" >&2
    exit 4
fi

if [ "$build" = 1 ]; then
    if ! command -v make >/dev/null 2>&1; then
        echo "bench/run.sh: make not found (apt-get install make gcc libc6-dev libzstd-dev libexpat1-dev)" >&2
        exit 4
    fi
    echo "bench/run.sh: make -C $repo" >&2
    # make's chatter goes to stderr so that stdout holds only the table.
    if ! make -C "$repo" >&2; then
        echo "bench/run.sh: building qs failed (see above); fix the build or use --no-build" >&2
        exit 1
    fi
fi

exec "$py" "$here/bench.py" --repo "$repo" "$@"
