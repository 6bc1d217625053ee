#!/bin/sh
# setup.sh: install the Debian packages a command needs (when missing),
# build with every core, then run the demo or the test suite.
#   scripts/setup.sh demo   the build's packages; make demo
#   scripts/setup.sh test   the build's and the tests' packages; make check-all
set -eu
cd "$(dirname "$0")/.."

# What the build needs (compiler, libzstd, libexpat, protobuf-c, libnuma; the
# zstd program unpacks the oracle data of tests/oracle).
build_pkgs="gcc make libc6-dev pkg-config libzstd-dev libexpat1-dev libprotobuf-c-dev protobuf-c-compiler libnuma-dev zstd"
# What only the tests need: bats, GNU parallel (files side by side), the zstd
# and python3 commands, /usr/bin/time, binutils (nm, the exported symbols),
# numactl, ssh, rsync and iproute2 (tests/61-hosts.bats: GNU parallel over
# two ssh hosts), jq, man-db and groff-base (the manual pages); the Python
# binding's build and tests (tests/70-python.bats: python3-dev, pip and
# setuptools for pip install ./python, NumPy, SciPy, pytest, Dask with
# distributed and pandas, XGBoost for its live comparison); python3-venv for
# the routes that use a virtual environment (python/README.md's pip install
# into a venv, scripts/oracle.sh regen).
test_pkgs="bats bats-support bats-assert parallel python3 time binutils numactl openssh-server openssh-client rsync iproute2 jq man-db groff-base python3-dev python3-pip python3-setuptools python3-wheel python3-numpy python3-scipy python3-pytest python3-pandas python3-dask python3-distributed python3-xgboost python3-venv"

case "${1:-}" in
demo) want=$build_pkgs ;;
test) want="$build_pkgs $test_pkgs" ;;
*) echo "usage: scripts/setup.sh demo|test" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "setup.sh: missing Debian packages:$missing (run as root, or apt-get install them)" >&2
        exit 4
    fi
    echo "setup.sh: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    # openssh-server, for the tests: no SSH daemon is started or enabled
    # by the installation (policy-rc.d refuses service starts meanwhile).
    policy=/usr/sbin/policy-rc.d
    added_policy=""
    case " $missing " in
    *" openssh-server "*)
        if [ ! -e "$policy" ]; then
            printf '#!/bin/sh\nexit 101\n' > "$policy"
            chmod 755 "$policy"
            added_policy=1
        fi
        ;;
    esac
    rc=0
    apt-get install -y --no-install-recommends $missing || {
        echo "setup.sh: apt-get install failed; updating the package lists and trying again"
        apt-get update && apt-get install -y --no-install-recommends $missing
    } || rc=$?
    [ -z "$added_policy" ] || rm -f "$policy"
    [ "$rc" = 0 ] || exit "$rc"
fi

jobs=$(nproc 2>/dev/null || echo 1)
echo "setup.sh: building with $jobs jobs"
case "$1" in
demo)
    make -s -j"$jobs" all
    make -s demo
    ;;
test)
    # The whole suite and the SIMD-off passes, then the sanitizer build and
    # its pass; a summary of every part at the end (scripts/check-all.sh).
    # With nvcc, the build's SASS gates want cuobjdump: NVIDIA's wheel from
    # PyPI in a virtual environment (build/sass-tools); without it (no
    # network) the gates are skipped with the reason, nothing fails.
    if command -v nvcc > /dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
        scripts/sass-tools.sh > /dev/null ||
            echo "setup.sh: no cuobjdump for the SASS gates (scripts/sass-tools.sh): they are skipped"
    fi
    make -s -j"$jobs" all
    make -s -j"$jobs" check-all
    ;;
esac
