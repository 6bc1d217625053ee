#!/bin/sh
# bench/setup-peers.sh: a bench-only Python virtual environment with the other
# tree-ensemble scorers that bench/peers.py compares qs with (lleaves, ONNX
# Runtime, xgboost 3.x, treelite + tl2cgen, LightGBM, CatBoost), from PyPI.
#
#   bench/setup-peers.sh [--venv DIR] [--python PY]
#
# Default DIR: $QS_BENCH_VENV, else $QS_BENCH_DIR/venv, else /tmp/qs-bench/venv
# (never inside the repository).  qs, its build and its tests never use this
# environment.  Every peer is installed on its own: one that fails to install
# is skipped, with the reason, and the others are still installed.  The result
# of each is written to DIR/peers-status.tsv (peer, ok|failed, detail), which
# bench/peers.py reads to say why a peer is missing.  See bench/README.md.
set -u

here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
repo=$(dirname -- "$here")
venv=${QS_BENCH_VENV:-${QS_BENCH_DIR:-/tmp/qs-bench}/venv}
py=/usr/bin/python3

while [ $# -gt 0 ]; do
    case $1 in
        --venv) venv=$2; shift 2 ;;
        --venv=*) venv=${1#--venv=}; shift ;;
        --python) py=$2; shift 2 ;;
        --python=*) py=${1#--python=}; shift ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "setup-peers.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

case $(cd "$(dirname -- "$venv")" 2>/dev/null && pwd)/ in
    "$repo"/*) echo "setup-peers.sh: $venv is inside the repository; choose another --venv" >&2; exit 2 ;;
esac

if [ ! -x "$venv/bin/python" ]; then
    echo "setup-peers.sh: creating $venv with $py" >&2
    mkdir -p "$(dirname -- "$venv")" || exit 4
    if ! "$py" -m venv "$venv"; then
        echo "setup-peers.sh: '$py -m venv' failed (Debian: apt-get install python3-venv)" >&2
        exit 4
    fi
fi
vpy=$venv/bin/python
status=$venv/peers-status.tsv
log=$venv/setup.log
: > "$status.tmp"
: > "$log"

pip_install() {   # pip_install PEER PACKAGE...
    peer=$1; shift
    echo "setup-peers.sh: $peer: pip install $*" >&2
    if "$vpy" -m pip install --disable-pip-version-check -q "$@" >>"$log" 2>&1; then
        printf '%s\tok\t%s\n' "$peer" "$*" >> "$status.tmp"
        return 0
    fi
    why=$(grep -E 'ERROR|error:' "$log" | tail -n 1 | tr '\t' ' ' | cut -c1-300)
    echo "setup-peers.sh: $peer: install FAILED, skipped: $why (full log: $log)" >&2
    printf '%s\tfailed\tpip install %s: %s\n' "$peer" "$*" "$why" >> "$status.tmp"
    return 1
}

# The base every peer script needs: numpy, scipy (sparse matrices), and
# scikit-learn's LETOR/libsvm reader for peers without a text reader.
pip_install base numpy scipy scikit-learn || {
    mv "$status.tmp" "$status"
    echo "setup-peers.sh: numpy/scipy/scikit-learn did not install; no peer can run" >&2
    exit 1
}
pip_install lightgbm lightgbm
# lleaves 1.3 uses llvmlite's legacy pass manager, which llvmlite 0.45 removed.
pip_install lleaves lleaves 'llvmlite<0.45'
pip_install xgboost 'xgboost>=3'
pip_install onnxruntime onnxruntime onnx
pip_install onnxmltools onnxmltools onnxconverter-common
# tl2cgen 1.0.0 carries treelite 4.1.2 inside: the same treelite loads the models.
pip_install tl2cgen 'treelite==4.1.2' 'tl2cgen==1.0.0'
pip_install catboost catboost
# XGBoost-FastForest (the C++ library) is not on PyPI; the PyPI package named
# "fastforest" is an unrelated Rust project.  It is not installed.
printf '%s\tfailed\t%s\n' fastforest \
    'not pip-installable: XGBoost-FastForest is a C++ library (CMake) with no PyPI package' >> "$status.tmp"
mv "$status.tmp" "$status"

echo "setup-peers.sh: versions:" >&2
"$vpy" - >&2 <<'EOF'
import importlib.metadata as md
for m in ('numpy', 'scipy', 'scikit-learn', 'lightgbm', 'lleaves', 'llvmlite', 'xgboost',
          'onnxruntime', 'onnx', 'onnxmltools', 'treelite', 'tl2cgen', 'catboost'):
    try:
        print('  %-12s %s' % (m, md.version(m)))
    except Exception:  # a peer that failed to install
        print('  %-12s (not installed)' % m)
EOF
echo "setup-peers.sh: $status" >&2
echo "$venv"
