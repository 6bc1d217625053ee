#!/usr/bin/env bash
# fixtures.sh: makes a fixture folder of tests/fixtures again with the
# training libraries themselves, at the versions its requirements files pin,
# and compares what they wrote with the folder's files.
#
#   scripts/fixtures.sh NAME     NAME: a folder of tests/fixtures with a
#                                make.py and a requirements.txt (e.g.
#                                xgboost-binary)
#
# Every requirements file of the folder gets a throw-away virtual
# environment (Debian's python3-venv; packages from PyPI): requirements.txt
# runs make.py (in a copy of the folder, beside a copy of edge_docs.py);
# each other requirements-TAG.txt is named to it by QS_FIXTURE_PY_TAG, its
# Python (TAG with every character other than a letter or digit as _:
# requirements-1.0.txt is QS_FIXTURE_PY_1_0).  Then every file the folder
# holds is compared with the one made (NAME.zst with the file decompressed):
# "same", "DIFFERENT" or "missing" (not made), and files made that the
# folder does not keep are listed as "not kept".  The tests never run it.
#
# QS_FIXTURE_VENV=DIR: keep the virtual environments under DIR (made once,
# reused) instead of throw-away ones.  Exit status: 0 every file the same,
# 1 a file differs or is missing, or a step failed, 2 usage.
set -u -o pipefail
cd "$(dirname "$0")/.."

die() { echo "fixtures.sh: $*" >&2; exit 1; }
[ $# = 1 ] || { echo "usage: scripts/fixtures.sh NAME (a folder of tests/fixtures)" >&2; exit 2; }
name=${1%/}
src=tests/fixtures/$name
[ -f "$src/make.py" ] && [ -f "$src/requirements.txt" ] ||
    die "$src has no make.py and requirements.txt"
command -v zstd > /dev/null || die "zstd not found (apt-get install zstd)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/qs-fixtures.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$tmp"' EXIT

# venv REQ: a virtual environment with REQ installed; prints its python.
venv() {
    local req=$1 dir
    if [ -n "${QS_FIXTURE_VENV:-}" ]; then
        dir="$QS_FIXTURE_VENV/$name-$(basename "$req" .txt)"
    else
        dir="$tmp/venv-$(basename "$req" .txt)"
    fi
    if [ ! -x "$dir/bin/python" ]; then
        python3 -m venv "$dir" >&2 || die "python3 -m venv failed (apt-get install python3-venv)"
        "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$req" >&2 ||
            { rm -rf "$dir"; die "pip install -r $req failed"; }
    fi
    echo "$dir/bin/python"
}

py=$(venv "$src/requirements.txt") || exit 1
for req in "$src"/requirements-*.txt; do
    [ -f "$req" ] || continue
    tag=$(basename "$req" .txt)
    tag=${tag#requirements-}
    other=$(venv "$req") || exit 1
    export "QS_FIXTURE_PY_${tag//[^A-Za-z0-9]/_}=$other"
done

mkdir -p "$tmp/out/$name"
cp tests/fixtures/edge_docs.py "$tmp/out/" || die "cannot copy edge_docs.py"
cp "$src/make.py" "$src"/requirements*.txt "$tmp/out/$name/" || die "cannot copy $src"
(cd "$tmp/out/$name" && "$py" make.py) || die "make.py failed"

same=0 differ=0
for f in "$src"/*; do
    base=$(basename "$f")
    case $base in make.py | requirements*.txt | README.md) continue ;; esac
    made="$tmp/out/$name/${base%.zst}"
    if [ ! -f "$made" ]; then
        echo "missing    $base"
        differ=$((differ + 1))
    elif { [ "$base" != "${base%.zst}" ] && zstd -q -d -c "$f" | cmp -s - "$made"; } ||
         { [ "$base" = "${base%.zst}" ] && cmp -s "$f" "$made"; }; then
        echo "same       $base"
        same=$((same + 1))
    else
        echo "DIFFERENT  $base"
        differ=$((differ + 1))
    fi
done
for f in "$tmp/out/$name"/*; do
    base=$(basename "$f")
    [ -e "$src/$base" ] || [ -e "$src/$base.zst" ] || echo "not kept   $base"
done
echo "fixtures.sh: $name: $same files made again byte for byte, $differ different or missing"
[ "$differ" = 0 ] && [ "$same" -gt 0 ]
