#!/bin/sh
# merge.sh: after a campaign (make fuzz-long), keep in fuzz/corpus/<target>/
# the campaign's inputs that add coverage to the repository's corpus
# (libFuzzer -merge=1 into a copy of it), those of at most FUZZ_MERGE_MAX
# bytes (1024), as cov-<12 hex digits of their SHA-1>: the corpus stays
# small and replays in the suite (tests/40-fuzz-corpus.bats).
# Usage: fuzz/merge.sh BUILD_DIR TARGET...   (env: FUZZ_WORK, FUZZ_MERGE_MAX)
set -u
build=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/fuzz/maxlen.sh"
base=${FUZZ_WORK:-/tmp/qs-fuzz}
max=${FUZZ_MERGE_MAX:-1024}
for name in "$@"; do
    src="$base/$name/corpus"
    [ -d "$src" ] || { echo "merge: $name: no campaign corpus in $src" >&2; continue; }
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/qs-merge.XXXXXX")
    cp "$root/fuzz/corpus/$name/"* "$tmp/" 2>/dev/null
    before=$(ls "$tmp" | wc -l)
    maxlen=$(fuzz_maxlen "$name")
    # shellcheck disable=SC2086
    nice -n "${FUZZ_NICE:-19}" "$build/bin/fuzz_$name" -merge=1 -timeout=25 -rss_limit_mb=2048 \
        $maxlen "$tmp" "$src" > "$tmp.log" 2>&1 || { echo "merge: $name failed (log $tmp.log)" >&2; continue; }
    added=0
    for f in "$tmp"/*; do
        b=$(basename "$f")
        [ -e "$root/fuzz/corpus/$name/$b" ] && continue
        [ "$(wc -c < "$f")" -le "$max" ] || continue
        h=$(sha1sum "$f" | cut -c1-12)
        cp "$f" "$root/fuzz/corpus/$name/cov-$h"
        added=$((added + 1))
    done
    echo "merge: $name: $before inputs, $added added (<= $max bytes) from $(ls "$src" | wc -l) of the campaign"
    rm -rf "$tmp" "$tmp.log"
done
