#!/bin/sh
# probe-cuda.sh NVCC BUILD-DIR ARCH-FLAGS...: print 1 when NVCC compiles a
# one-line kernel for every target, else 0.  The answer is cached in
# BUILD-DIR/cuda/probe, keyed by nvcc's path, its version and the targets.
nvcc=$1 build=$2
shift 2
[ -x "$nvcc" ] || { echo 0; exit 0; }
key="$nvcc $("$nvcc" --version 2>/dev/null | tail -n 1) $*"
cache="$build/cuda/probe"
if [ -f "$cache" ] && [ "$(sed -n 1p "$cache")" = "$key" ]; then
    sed -n 2p "$cache"
    exit 0
fi
mkdir -p "$build/cuda" 2>/dev/null
dir=$(mktemp -d) || { echo 0; exit 0; }
printf '__global__ void qs_probe(int *p) { *p = 1; }\n' > "$dir/probe.cu"
if "$nvcc" "$@" -c "$dir/probe.cu" -o "$dir/probe.o" > /dev/null 2>&1; then r=1; else r=0; fi
rm -rf "$dir"
printf '%s\n%s\n' "$key" "$r" > "$cache" 2>/dev/null
echo "$r"
