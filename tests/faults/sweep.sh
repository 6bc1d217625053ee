#!/usr/bin/env bash
# sweep.sh: one fault at each point of a run, in turn (tests/faults/qsfault.c).
#
#   tests/faults/sweep.sh [-k alloc|thread|read] [-s STEP] NAME EXPECTED -- CMD...
#   (EXPECTED "": any output will do, as long as there is one)
#   -m MAX: past MAX points, only 20 more, spread evenly over the rest (a
#   run of too many points to take each: qs-blocktune's measurements)
#
# A first run counts the points (allocations by qs, thread starts by qs,
# bytes read) and must write EXPECTED; then CMD runs once per point N = 1,
# 2, ... (every STEP-th with -s, the first and last ones always; for read,
# the byte offsets 0 .. B), the fault at N.  @OUT@ in CMD is the output file;
# without it, standard output is.  Each faulted run must either succeed with
# the same output (a fault the program works around: a buffer it can do
# without, fewer threads) or fail with exit 4 and a message saying what ran
# out ("out of memory"; for read: the system's "Input/output error"; for
# thread: "thread"), leave no output file and no temporary file (nothing on
# standard output, when that is the output), and end without a signal or a
# sanitizer report.  Prints one summary line; exit 1
# with the failing points listed when any failed.
#   env: QS_FAULT_SO (the injector; default bin/unit/libqsfault.so),
#   QS_FAULT_PRELOAD (more objects to preload after it: AddressSanitizer's
#   runtime, for an instrumented extension in an interpreter that is not)
set -u
kind=alloc
step=1
max=0
while [ $# -gt 0 ]; do
    case $1 in
    -k) kind=$2; shift 2 ;;
    -s) step=$2; shift 2 ;;
    -m) max=$2; shift 2 ;;
    *) break ;;
    esac
done
name=$1 expected=$2
shift 2
[ "$1" = -- ] && shift
root=$(cd "$(dirname "$0")/../.." && pwd)
so=${QS_FAULT_SO:-$root/bin/unit/libqsfault.so}
[ -f "$so" ] || { echo "sweep: no injector at $so (make)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/qs-sweep.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/o"

# run ENV...: CMD with the injector and ENV; sets rc; output in $work/o/out
# (or its stdout copy), stderr in $work/err
run() {
    local args=() uses_out=0 a
    for a in "${cmd[@]}"; do
        if [ "$a" = @OUT@ ]; then args+=("$work/o/out"); uses_out=1; else args+=("$a"); fi
    done
    rm -f "$work/o/"* "$work/stdout"
    if [ $uses_out = 1 ]; then
        env LD_PRELOAD="$so${QS_FAULT_PRELOAD:+ $QS_FAULT_PRELOAD}" ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0" \
            "$@" "${args[@]}" > "$work/stdout" 2> "$work/err" < /dev/null
        rc=$?
    else
        env LD_PRELOAD="$so${QS_FAULT_PRELOAD:+ $QS_FAULT_PRELOAD}" ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0" \
            "$@" "${args[@]}" > "$work/stdout" 2> "$work/err" < /dev/null
        rc=$?
        [ $rc = 0 ] && cp "$work/stdout" "$work/o/out"
    fi
}
cmd=("$@")
: > "$work/report"
run QS_FAULT_REPORT="$work/report"
same() { # the output is the expected one (EXPECTED empty: there is one)
    if [ -z "$expected" ]; then [ -s "$work/o/out" ]; else cmp -s "$work/o/out" "$expected"; fi
}
if [ $rc != 0 ] || ! same; then
    echo "sweep $name: the run without a fault failed (exit $rc) or wrote other output:" >&2
    cat "$work/err" >&2
    exit 1
fi
read -r _ allocs _ threads _ bytes < "$work/report"
case $kind in
alloc) points=$allocs var=QS_FAULT_ALLOC first=1 last=$allocs want="out of memory" ;;
thread) points=$threads var=QS_FAULT_THREAD first=1 last=$threads want="thread" ;;
read) points=$((bytes + 1)) var=QS_FAULT_READ first=0 last=$bytes want="Input/output error" ;;
*) echo "sweep: unknown kind $kind" >&2; exit 2 ;;
esac
ran=0 failed=0 ok0=0 ok4=0
bad=
spread=0
if [ "$max" -gt 0 ] && [ "$last" -gt "$max" ]; then
    spread=$(((last - max) / 20 + 1))
fi
for ((n = first; n <= last; n++)); do
    if [ $spread -gt 0 ] && [ $n -gt "$max" ]; then
        if [ $(((n - max) % spread)) != 0 ] && [ $n != "$last" ]; then
            continue
        fi
    elif [ "$step" -gt 1 ] && [ $n -gt $((first + 2)) ] && [ $n -lt $((last - 2)) ] &&
        [ $(((n - first) % step)) != 0 ]; then
        continue
    fi
    ran=$((ran + 1))
    run "$var=$n"
    why=
    if [ $rc = 0 ]; then
        same && ok0=$((ok0 + 1)) || why="exit 0 with other output"
    elif [ $rc = 4 ]; then
        if ! grep -q -- "$want" "$work/err"; then
            why="exit 4 without '$want'"
        elif [ -n "$(ls -A "$work/o")" ]; then
            why="exit 4, left $(ls "$work/o")"
        elif [ -s "$work/stdout" ] && ! printf '%s\n' "${cmd[@]}" | grep -qx @OUT@; then
            why="exit 4 after writing $(stat -c %s "$work/stdout") bytes to standard output"
        else
            ok4=$((ok4 + 1))
        fi
    else
        why="exit $rc"
    fi
    if [ -n "$why" ]; then
        failed=$((failed + 1))
        [ $failed -le 20 ] && bad="$bad
  $var=$n: $why: $(head -c 300 "$work/err" | tr '\n' ' ')"
    fi
done
printf 'sweep %s: %s points (%s), %s run: %s exit 0 with the same output, %s exit 4, %s failed\n' \
    "$name" "$points" "$kind" "$ran" "$ok0" "$ok4" "$failed"
if [ $failed != 0 ]; then
    printf '%s\n' "$bad" >&2
    exit 1
fi
