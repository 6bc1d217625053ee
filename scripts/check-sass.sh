#!/bin/sh
# check-sass.sh OBJECT LOG: the SASS gates of the GPU kernels (run by make
# after nvcc builds lib/score/cuda/kernels.cu).  With cuobjdump at hand
# ($CUOBJDUMP, on PATH, beside nvcc, or the one scripts/sass-tools.sh puts in
# build/sass-tools), every kernel of OBJECT, for every target, must have:
#   - no ATOMS.CAST.SPIN (a shared-memory atomic the hardware lacks, done as a
#     compare-and-swap loop: what a 64-bit shared atomicAnd compiles to);
#   - no generic-address atomic (ATOM.*: an atomic on a pointer whose memory
#     space the compiler did not know) and no address-space test (QSPC);
#   - the shared-memory reductions of GPU-QS's mask phase (ATOMS.AND).
# Writes "passed: ...", "FAILED: ..." or "skipped: <why>" as the last line
# of LOG; exits 1 only when a gate fails.
set -u
obj=$1 log=$2
here=$(cd "$(dirname "$0")/.." && pwd)
cu=${CUOBJDUMP:-}
if [ -z "$cu" ]; then
    for c in "$(command -v cuobjdump 2>/dev/null)" "$(dirname "${NVCC:-/nonexistent/x}")/cuobjdump" \
        /usr/local/cuda/bin/cuobjdump "$here"/build/sass-tools/venv/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump; do
        [ -n "$c" ] && [ -x "$c" ] && { cu=$c; break; }
    done
fi
if [ -z "$cu" ]; then
    echo "skipped: no cuobjdump (scripts/sass-tools.sh installs one from PyPI into build/sass-tools)" > "$log"
    exit 0
fi
sass=$("$cu" -sass "$obj" 2>&1) || {
    printf 'skipped: %s -sass failed: %s\n' "$cu" "$(printf '%s' "$sass" | head -n 2 | tr '\n' ' ')" > "$log"
    exit 0
}
kernels=$(printf '%s\n' "$sass" | grep -c 'Function :')
spin=$(printf '%s\n' "$sass" | grep -c 'ATOMS\.CAST\.SPIN')
generic=$(printf '%s\n' "$sass" | grep -Ec '[[:space:]]ATOM\.')
qspc=$(printf '%s\n' "$sass" | grep -c 'QSPC')
shared=$(printf '%s\n' "$sass" | grep -c 'ATOMS\.AND')
{
    printf '%s\n' "$sass" | grep -oE '(ATOMS|ATOMG|ATOM|REDG|RED|QSPC)[A-Z0-9._]*' | sort | uniq -c
    if [ "$kernels" -eq 0 ]; then
        echo "FAILED: no kernel in $obj"
    elif [ "$spin" -ne 0 ] || [ "$generic" -ne 0 ] || [ "$qspc" -ne 0 ]; then
        echo "FAILED: $spin ATOMS.CAST.SPIN, $generic generic ATOM, $qspc QSPC in $kernels kernel(s) of $obj"
    elif [ "$shared" -eq 0 ] && [ "${SASS_NEED_SHARED:-1}" = 1 ]; then
        echo "FAILED: no ATOMS.AND (the shared reductions of GPU-QS) in $obj"
    else
        echo "passed: $kernels kernels (every target), 0 ATOMS.CAST.SPIN, 0 generic ATOM, 0 QSPC, $shared ATOMS.AND ($cu)"
    fi
} > "$log"
tail -n 1 "$log" | grep -q '^FAILED' && { cat "$log" >&2; exit 1; }
exit 0
