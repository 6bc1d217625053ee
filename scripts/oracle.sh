#!/usr/bin/env bash
# oracle.sh: the oracle data of the conformance tests (tests/oracle/: the
# models, documents and training libraries' own predictions, zstd-compressed,
# with the checksums of every file unpacked in SHA256SUMS).
#
#   scripts/oracle.sh unpack [DIR]   unpack the core set into DIR (default
#                                    build/oracle; make all does it) and
#                                    check every checksum
#   scripts/oracle.sh check [DIR]    check DIR against SHA256SUMS (every file)
#                                    and SHA256SUMS.large (the files present)
#   scripts/oracle.sh regen NAME...  train NAME again with the pinned libraries
#                                    (tests/oracle/requirements.txt, from PyPI
#                                    into a throw-away virtual environment) and
#                                    compare every file the library made with
#                                    the checksums; NAME: a model folder, e.g.
#                                    xgboost/mq2008-tiny-d2-t3
#   scripts/oracle.sh large          make the models left out of the
#                                    repository (SHA256SUMS.large: the 5,000-
#                                    tree models and four 1,000-tree ones) with
#                                    regen, and put them into build/oracle when
#                                    every checksum matches (4 minutes of
#                                    CPU, plus the pinned wheels' download)
#
# QS_ORACLE_VENV=DIR: use (or make, and keep) the virtual environment DIR
# instead of a throw-away one.  Exit status: 0 all good, 1 a checksum
# differs or a step failed, 2 usage.
set -u -o pipefail
cd "$(dirname "$0")/.."
src=tests/oracle

die() { echo "oracle.sh: $*" >&2; exit 1; }
usage() {
    echo "usage: scripts/oracle.sh unpack [DIR] | check [DIR] | regen NAME... | large" >&2
    exit 2
}

# unpack DIR: every file of SHA256SUMS from tests/oracle (NAME.zst
# decompressed, or NAME as it is), each written beside its place and renamed
# into it, then checked.
unpack() {
    local out="$1" sum name f
    command -v zstd > /dev/null || die "zstd not found (apt-get install zstd)"
    mkdir -p "$out" || die "cannot make $out"
    while read -r sum name; do
        f="$out/$name"
        mkdir -p "$(dirname "$f")" || die "cannot make $(dirname "$f")"
        if [ -f "$src/$name.zst" ]; then
            zstd -q -d -c "$src/$name.zst" > "$f.tmp" || die "$src/$name.zst: cannot decompress"
        elif [ -f "$src/$name" ]; then
            cp "$src/$name" "$f.tmp" || die "cannot copy $src/$name"
        else
            die "$src/$name(.zst) is missing (SHA256SUMS lists it)"
        fi
        mv -f "$f.tmp" "$f" || die "cannot write $f"
    done < "$src/SHA256SUMS"
    check "$out" core
}

# check DIR [core]: SHA256SUMS must hold for every file; SHA256SUMS.large for
# those present (unless only the core is asked for).
check() {
    local out="$1" what="${2:-all}" bad
    [ -d "$out" ] || die "$out: no such folder (make oracle, or scripts/oracle.sh unpack)"
    bad=$(cd "$out" && sha256sum -c --quiet "$OLDPWD/$src/SHA256SUMS" 2>&1) ||
        die "$out differs from $src/SHA256SUMS:"$'\n'"$bad"
    if [ "$what" = all ]; then
        local sum name n=0
        while read -r sum name; do
            [ -f "$out/$name" ] || continue
            n=$((n + 1))
            echo "$sum  $name" | (cd "$out" && sha256sum -c --quiet -) > /dev/null 2>&1 ||
                die "$out/$name differs from $src/SHA256SUMS.large"
        done < "$src/SHA256SUMS.large"
        echo "oracle.sh: $out: $(wc -l < "$src/SHA256SUMS") core files and $n of $(wc -l < "$src/SHA256SUMS.large") large ones match their checksums"
    fi
}

# venv: the pinned libraries in a virtual environment; prints its python.
venv() {
    local dir="${QS_ORACLE_VENV:-}"
    if [ -z "$dir" ]; then
        dir=$(mktemp -d "${TMPDIR:-/tmp}/qs-oracle-venv.XXXXXX") || die "mktemp failed"
        echo "$dir" >> "$tmp/venvs"
    fi
    if [ ! -x "$dir/bin/python" ]; then
        python3 -m venv "$dir" >&2 ||
            die "python3 -m venv failed (apt-get install python3-venv)"
        "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$src/requirements.txt" >&2 ||
            die "pip install -r $src/requirements.txt failed"
    fi
    echo "$dir/bin/python"
}

# regen OUT NAME...: regen.py into OUT, then every file it made that a
# checksum list names is compared; prints "same"/"DIFFERENT" per file.
regen() {
    local out="$1" py name f rel sum want same=0 diff=0 other=0
    shift
    [ -d build/oracle ] || unpack build/oracle > /dev/null
    py=$(venv) || exit 1
    "$py" "$src/regen.py" --data build/oracle --out "$out" "$@" || die "regen.py failed"
    for name in "$@"; do
        name=${name%/}
        while IFS= read -r -d '' f; do
            rel=${f#"$out"/}
            want=$(awk -v n="$rel" '$2 == n { print $1 }' "$src/SHA256SUMS" "$src/SHA256SUMS.large")
            if [ -z "$want" ] || [ "$rel" != "${rel%info.json}" ] || [ "$rel" != "${rel%cmd.txt}" ]; then
                other=$((other + 1))
                continue
            fi
            sum=$(sha256sum < "$f" | cut -d' ' -f1)
            if [ "$sum" = "$want" ]; then
                echo "same       $rel"
                same=$((same + 1))
            else
                echo "DIFFERENT  $rel"
                diff=$((diff + 1))
            fi
        done < <(find "$out/$name" -type f -print0 | sort -z)
    done
    echo "oracle.sh: $same files made again byte for byte, $diff different ($other descriptive files not compared)"
    [ "$diff" = 0 ] && [ "$same" -gt 0 ]
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/qs-oracle.XXXXXX") || die "mktemp failed"
cleanup() {
    if [ -f "$tmp/venvs" ]; then
        while read -r d; do rm -rf "$d"; done < "$tmp/venvs"
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

case "${1:-}" in
unpack)
    [ $# -le 2 ] || usage
    unpack "${2:-build/oracle}"
    ;;
check)
    [ $# -le 2 ] || usage
    check "${2:-build/oracle}"
    ;;
regen)
    [ $# -ge 2 ] || usage
    shift
    regen "$tmp/out" "$@"
    ;;
large)
    [ $# = 1 ] || usage
    mapfile -t names < <(awk '{ n = $2; sub(/\/[^\/]*$/, "", n); print n }' "$src/SHA256SUMS.large" | sort -u)
    regen "$tmp/out" "${names[@]}" || die "not installed: a file differs from SHA256SUMS.large"
    while read -r sum name; do
        mkdir -p "build/oracle/$(dirname "$name")"
        cp "$tmp/out/$name" "build/oracle/$name.tmp" && mv -f "build/oracle/$name.tmp" "build/oracle/$name" ||
            die "cannot install build/oracle/$name"
    done < "$src/SHA256SUMS.large"
    check build/oracle
    ;;
*) usage ;;
esac
