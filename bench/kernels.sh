#!/usr/bin/env bash
# kernels.sh: which vQS kernel is fastest on this CPU, per model: vqs-avx2,
# vqs-avx512 and auto (and anything in KERNELS) on the matrix view
# (build/bench/qs-matrix, one thread, pinned), in interleaved rounds; every
# kernel's scores compared byte for byte with the first kernel's.
#
#   bench/kernels.sh [--rounds N] [--reps R] [--jobs J] OUT-DIR LIST
#
# LIST: one model a line, tab-separated: name, model (.qsm), documents
# (LETOR text, plain or .zst), absent features as `nan` or `zero` (as the
# model's library means them), at most this many documents.  The documents
# become a dense float64 matrix once (column j = feature id j; OUT-DIR/mat).
# J models are timed at a time, each pinned to its own physical core (one
# logical CPU per core; J = 1 by default); a model's kernels always run in
# turn on the same core, so they meet the same neighbours.
#
# Each call: one untimed warm-up, then R timed calls (default 3); the best
# call's process CPU time (steadier than wall time on a shared machine)
# counts.  Written to OUT-DIR: runs.tsv (every call), kernels.tsv (medians
# over the rounds, in µs per document; auto / best), kernels.md (the same
# as a markdown table) and cpu.txt (what CPU this is).
#
# Environment: QS_BIN (directory of qs-score and qs-matrix: build/bin and
# build/bench by default), KERNELS (default "vqs-avx2 vqs-avx512 auto").
set -uo pipefail
rounds=5 reps=3 jobs=1
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -?*) echo "kernels.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -eq 2 ] || { echo "usage: bench/kernels.sh [--rounds N] [--reps R] [--jobs J] OUT-DIR LIST" >&2; exit 2; }
out=$1 list=$2
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
if [ -n "${QS_BIN:-}" ]; then
    score=$QS_BIN/qs-score matrix=$QS_BIN/qs-matrix
else
    score=$repo/build/bin/qs-score matrix=$repo/build/bench/qs-matrix
fi
[ -x "$score" ] && [ -x "$matrix" ] || { echo "kernels.sh: no $score or $matrix (make)" >&2; exit 4; }
kernels=${KERNELS:-vqs-avx2 vqs-avx512 auto}
mkdir -p "$out/mat" "$out/scores"

# the CPU, and one logical CPU per physical core that this process may use
{
    grep -m1 'model name' /proc/cpuinfo
    grep -m1 'cpu family' /proc/cpuinfo
    grep -m1 '^model[[:space:]]' /proc/cpuinfo
    echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512bw|avx512vl|avx512_vbmi|avx512_vbmi2|avx512vnni)$' | tr '\n' ' ')"
    "$score" --version -v 2>&1 | grep -E '^(auto|cpu|default):'
    nproc
} > "$out/cpu.txt"
mapfile -t cores < <(python3 - <<'EOF'
import os, glob
seen = set()
allowed = sorted(os.sched_getaffinity(0))
for c in allowed:
    try:
        sib = open('/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list' % c).read().strip()
    except OSError:
        sib = str(c)
    if sib not in seen:
        seen.add(sib)
        print(c)
EOF
)
[ "${#cores[@]}" -ge 1 ] || cores=(0)
[ "$jobs" -le "${#cores[@]}" ] || jobs=${#cores[@]}
echo "cores used: ${cores[*]:0:$jobs} (of ${#cores[@]} physical)" >> "$out/cpu.txt"

# the matrices
tofloat() { # DOCS FILL LIMIT -> prints "path rows cols"
    local key
    key=$(printf '%s %s %s' "$1" "$2" "$3" | cksum | cut -d' ' -f1)
    local f="$out/mat/$key.f64"
    if [ ! -f "$f.shape" ]; then
        python3 - "$1" "$2" "$3" "$f" <<'EOF' || return 1
import array, sys, subprocess
path, fill, limit, dst = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if path.endswith('.zst'):
    text = subprocess.run(['zstd', '-dc', path], check=True, capture_output=True).stdout.decode()
else:
    text = open(path).read()
rows = []
cols = 0
for line in text.splitlines():
    line = line.split('#', 1)[0].split()
    if not line:
        continue
    r = {}
    for tok in line[1:]:
        k, v = tok.split(':', 1)
        if k == 'qid':
            continue
        r[int(k)] = float(v)
        cols = max(cols, int(k) + 1)
    rows.append(r)
    if len(rows) == limit:
        break
fv = float('nan') if fill == 'nan' else 0.0
a = array.array('d', [fv]) * (len(rows) * cols)
for i, r in enumerate(rows):
    for k, v in r.items():
        a[i * cols + k] = v
with open(dst, 'wb') as f:
    a.tofile(f)
with open(dst + '.shape', 'w') as f:
    f.write('%d %d\n' % (len(rows), cols))
EOF
    fi
    printf '%s %s\n' "$f" "$(cat "$f.shape")"
}

names=() models=() mats=()
: > "$out/auto.txt"
while IFS=$'\t' read -r name model docs fill limit; do
    case $name in '' | '#'*) continue ;; esac
    m=$(tofloat "$docs" "$fill" "$limit") || { echo "kernels.sh: $name: cannot read $docs" >&2; exit 4; }
    names+=("$name") models+=("$model") mats+=("$m")
    printf '%s\t%s\n' "$name" "$("$score" -v "$model" < /dev/null 2>&1 | sed -n 's/.*: auto runs //p' | head -n 1)" >> "$out/auto.txt"
done < "$list"

printf 'round\tmodel\tkernel\tran_as\tdocs\tcpu_s_best\twall_s_best\tcheck\n' > "$out/runs.tsv"
# one model's kernels, in turn, on CPU $2, round $3
one() {
    local i=$1 cpu=$2 r=$3 k first= mp rows cols line ran cs ws check
    read -r mp rows cols <<< "${mats[$i]}"
    for k in $kernels; do
        line=$(taskset -c "$cpu" "$matrix" --backend "$k" --threads 1 --reps "$reps" "${models[$i]}" "$mp" "$rows" "$cols" \
            "$out/scores/${names[$i]}.$k.f64" 2>> "$out/errors.txt") || { echo "${names[$i]} $k: failed" >> "$out/errors.txt"; continue; }
        read -r ran cs ws < <(python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(j.get("ran_as", j["backend"]), min(j["cpu_times_s"]), min(j["times_s"]))' "$line")
        check=same
        if [ -z "$first" ]; then first=$k check=reference
        elif ! cmp -s "$out/scores/${names[$i]}.$first.f64" "$out/scores/${names[$i]}.$k.f64"; then check=DIFFERS
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "${names[$i]}" "$k" "$ran" "$rows" "$cs" "$ws" "$check"
    done
}
for r in $(seq "$rounds"); do
    i=0
    while [ $i -lt ${#names[@]} ]; do
        for j in $(seq 0 $((jobs - 1))); do
            [ $((i + j)) -lt ${#names[@]} ] || break
            one $((i + j)) "${cores[$j]}" "$r" > "$out/part.$j" &
        done
        wait
        cat "$out"/part.* >> "$out/runs.tsv" 2> /dev/null
        rm -f "$out"/part.*
        i=$((i + jobs))
    done
done

python3 - "$out" "$kernels" <<'EOF'
import csv, statistics, sys
out, kernels = sys.argv[1], sys.argv[2].split()
runs = list(csv.DictReader(open(out + '/runs.tsv'), delimiter='\t'))
auto = dict(l.rstrip('\n').split('\t', 1) for l in open(out + '/auto.txt') if '\t' in l)
order = []
for r in runs:
    if r['model'] not in order:
        order.append(r['model'])
tsv = ['model\tdocs\t' + '\t'.join(kernels) + '\tauto ran as\tauto / best\tscores']
md = ['| model | docs | ' + ' | '.join(kernels) + ' | auto ran as | auto / best | scores |',
      '|---|---:|' + '---:|' * len(kernels) + '---|---:|---|']
for m in order:
    rs = [r for r in runs if r['model'] == m]
    docs = int(rs[0]['docs'])
    med = {}
    for k in kernels:
        v = [float(r['cpu_s_best']) for r in rs if r['kernel'] == k]
        if v:
            med[k] = statistics.median(v) / docs * 1e6
    named = [med[k] for k in kernels if k in med and k != 'auto']
    ratio = '%.2f' % (med['auto'] / min(named)) if 'auto' in med and named else '-'
    ran = sorted({r['ran_as'] for r in rs if r['kernel'] == 'auto'})
    why = auto.get(m, '')
    if ran == ['vqs'] and why.startswith('vqs ('):
        ran = ['vqs: ' + why[5:].split(' ', 1)[0]]
    check = 'DIFFER' if any(r['check'] == 'DIFFERS' for r in rs) else 'identical'
    cells = ['%.3g' % med[k] if k in med else '-' for k in kernels]
    tsv.append('\t'.join([m, str(docs)] + cells + ['/'.join(ran), ratio, check]))
    md.append('| %s | %d | %s | %s | %s | %s |' % (m, docs, ' | '.join(cells), '/'.join(ran), ratio, check))
open(out + '/kernels.tsv', 'w').write('\n'.join(tsv) + '\n')
open(out + '/kernels.md', 'w').write('\n'.join(md) + '\n')
print('\n'.join(md))
EOF
