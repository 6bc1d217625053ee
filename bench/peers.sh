#!/bin/sh
# bench/peers.sh: build qs if needed, then time qs against the other
# tree-ensemble scorers (bench/peers.py) with the bench-only virtual
# environment that bench/setup-peers.sh makes.  See bench/README.md, "Peers".
#
#   bench/setup-peers.sh                  # once: the venv (PyPI), peers that fail are skipped
#   bench/peers.sh [--quick | --grid | --models 1000x64,5000x8] [--docs N] [--reps N] ...
#
# The markdown table goes to standard output; progress to standard error.
set -eu

here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
repo=$(dirname -- "$here")
venv=${QS_BENCH_VENV:-${QS_BENCH_DIR:-/tmp/qs-bench}/venv}

build=1
prev=
for arg in "$@"; do
    case $arg in
        --no-build|-h|--help) build=0 ;;
        --venv=*) venv=${arg#--venv=} ;;
    esac
    [ "$prev" = --venv ] && venv=$arg
    prev=$arg
done

if [ ! -x "$venv/bin/python" ]; then
    echo "bench/peers.sh: no bench venv at $venv: run bench/setup-peers.sh first" >&2
    echo "  (or set QS_BENCH_VENV, or pass --venv DIR)" >&2
    exit 4
fi
if [ ! -x /usr/bin/python3 ] || ! /usr/bin/python3 -c 'import numpy, xgboost' 2>/dev/null; then
    echo "bench/peers.sh: the XGBoost workloads need Debian's python3-xgboost:" >&2
    echo "  apt-get install python3-xgboost python3-numpy python3-scipy zstd" >&2
    exit 4
fi
if [ "$build" = 1 ]; then
    echo "bench/peers.sh: make -C $repo" >&2
    if ! make -C "$repo" >&2; then
        echo "bench/peers.sh: building qs failed (see above); fix the build or use --no-build" >&2
        exit 1
    fi
fi
exec "$venv/bin/python" "$here/peers.py" --repo "$repo" "$@"
