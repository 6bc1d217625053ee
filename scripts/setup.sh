#!/bin/sh
# setup.sh: install the Debian packages qs needs (when missing), build, then
# run the demo or the test suite.  Usage: scripts/setup.sh demo|test
set -eu
cd "$(dirname "$0")/.."

want="gcc make libc6-dev libzstd-dev zstd libexpat1-dev libprotobuf-c-dev protobuf-c-compiler bats bats-support bats-assert time pkg-config binutils libnuma-dev numactl parallel openssh-server openssh-client rsync iproute2 jq python3 man-db groff-base"
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
    apt-get install -y -q --no-install-recommends $missing >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $missing >/dev/null; }
fi

case "${1:-}" in
demo) make -s demo ;;
test)
    # The whole suite, then once more built with ASan and UBSan.
    make -s check
    make -s check SANITIZE=address,undefined
    make -s >/dev/null  # leave bin/ pointing at the normal build
    ;;
*) echo "usage: scripts/setup.sh demo|test" >&2; exit 2 ;;
esac
