# test_helper.bash: loaded by every tests/*.bats file.
# Puts the freshly built tools first on PATH, finds the shared reference data
# (../shared/data beside the checkout, or $QS_SHARED_DATA), and loads
# bats-support / bats-assert from Debian's packages.

QS_ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
export PATH="$QS_ROOT/bin:$PATH"
UNIT="$QS_ROOT/bin/unit"
FIX="$QS_ROOT/tests/fixtures"
SHARED="${QS_SHARED_DATA:-$QS_ROOT/../shared/data}"

for lib in bats-support bats-assert; do
    for d in /usr/lib/bats /usr/lib/bats-core /usr/share/bats; do
        if [ -f "$d/$lib/load.bash" ]; then
            load "$d/$lib/load.bash"
            break
        fi
    done
done

# Skip (with the reason) when the shared reference data is not there.
require_shared() {
    [ -d "$SHARED" ] || skip "reference data not found at $SHARED (set QS_SHARED_DATA)"
}

# Decompress a .zst file (or copy a plain one) into $BATS_TEST_TMPDIR; prints the path.
plain() {
    local src="$1" dst="$BATS_TEST_TMPDIR/$(basename "${1%.zst}")"
    if [ ! -f "$dst" ]; then
        case "$src" in
            *.zst) zstd -q -d -c "$src" > "$dst" ;;
            *) cp "$src" "$dst" ;;
        esac
    fi
    printf '%s\n' "$dst"
}

# compare_scores GOT WANT: every value (every tab-separated column) equal as
# doubles; prints the first differences and fails otherwise.
compare_scores() {
    local n_got n_want got="$1" want="$2"
    # Pipes (process substitution) can be read once: keep a copy.
    if [ ! -f "$got" ]; then cat "$got" > "$BATS_TEST_TMPDIR/cmp.got"; got="$BATS_TEST_TMPDIR/cmp.got"; fi
    if [ ! -f "$want" ]; then cat "$want" > "$BATS_TEST_TMPDIR/cmp.want"; want="$BATS_TEST_TMPDIR/cmp.want"; fi
    set -- "$got" "$want"
    n_got=$(wc -l < "$1"); n_want=$(wc -l < "$2")
    if [ "$n_got" != "$n_want" ]; then
        echo "line counts differ: got $n_got, want $n_want"
        return 1
    fi
    paste "$1" "$2" | awk -F'\t' '
        { n = NF / 2
          for (i = 1; i <= n; i++)
              if (($i + 0) != ($(i + n) + 0)) {
                  bad++
                  if (bad <= 5) printf "line %d col %d: got %s want %s\n", NR, i, $i, $(i + n)
              } }
        END { if (bad) { printf "%d values differ\n", bad; exit 1 } }'
}

# A QS_BACKEND left in the environment would narrow every test silently:
# tests that want one set it themselves.
unset QS_BACKEND

# Every back end this build knows (the suite checks that --list-backends
# names each one).
QS_KNOWN_BACKENDS="walk qs vqs vqs-avx2 vqs-avx512 struct vpred oblivious"

# Back ends every conformance test runs: `auto` and every back end that
# `qs-score --list-backends` says this machine runs (QS_BACKEND, set by a
# test, forces one).  With QS_TEST_LAYOUT_ONLY=1 (the per-SIMD-level passes
# of `make check`), auto and the back ends that read the QuickScorer layout.
backends() {
    if [ -n "${QS_BACKEND:-}" ]; then echo "$QS_BACKEND"; return; fi
    local list
    list=$(qs-score --list-backends) || { echo "qs-score --list-backends failed" >&2; return 1; }
    [ -n "$list" ] || { echo "qs-score --list-backends is empty" >&2; return 1; }
    echo auto
    if [ "${QS_TEST_LAYOUT_ONLY:-0}" = 1 ]; then
        printf '%s\n' "$list" | awk -F'\t' '$2 == "yes" && $3 !~ /reference|baseline/ { print $1 }'
    else
        printf '%s\n' "$list" | awk -F'\t' '$2 == "yes" { print $1 }'
    fi
}

# score_all QSM DOCS WANT [qs-score options...]: score with every back end
# (one that refuses the model as unsupported, exit 3, is skipped) and compare.
score_all() {
    local qsm="$1" docs="$2" want="$3"; shift 3
    local b rc list
    list=$(backends) || return 1
    [ -n "$list" ] || { echo "no back ends to test"; return 1; }
    for b in $list; do
        rc=0
        QS_BACKEND= qs-score --backend "$b" "$@" "$qsm" < "$docs" > "$BATS_TEST_TMPDIR/got.$b" || rc=$?
        if [ "$rc" = 3 ] && [ "$b" = oblivious ]; then continue; fi
        [ "$rc" = 0 ] || { echo "qs-score --backend $b failed ($rc)"; return 1; }
        compare_scores "$BATS_TEST_TMPDIR/got.$b" "$want" || { echo "back end $b differs"; return 1; }
    done
}

# layout_backends QSM DOCS WANT [options]: score_all with the back ends that
# read the QuickScorer layout (qs, and vqs-* where this CPU runs them).
layout_backends() {
    local b list
    list=$(backends) || return 1
    for b in $list; do
        case "$b" in
            auto | qs | vqs | vqs-*) QS_BACKEND="$b" score_all "$@" || return 1 ;;
        esac
    done
}

# conform MODEL DOCS ORACLE [qs-score options...]: convert, compile (cached per
# file), then score DOCS with every back end and compare with ORACLE bit for
# bit; then again with another layout (every tree reversed, small tree and
# document blocks, another Δ), which must not change a bit either.
conform() {
    local model="$1" docs="$2" oracle="$3"; shift 3
    [ -f "$model" ] || skip "missing $model"
    local key qsm
    key=$(printf '%s' "$model" | cksum | cut -d' ' -f1)
    qsm="$BATS_FILE_TMPDIR/$key.qsm"
    if [ ! -f "$qsm" ]; then
        qs-convert "$model" > "$BATS_FILE_TMPDIR/$key.txt" || { echo "qs-convert failed"; return 1; }
        qs-compile -o "$qsm" "$BATS_FILE_TMPDIR/$key.txt" || { echo "qs-compile failed"; return 1; }
        qs-compile --reverse-all --tree-block 37 --doc-block 5 --delta 3 -o "$qsm.alt" \
            "$BATS_FILE_TMPDIR/$key.txt" || { echo "qs-compile (reversed layout) failed"; return 1; }
    fi
    score_all "$qsm" "$docs" "$oracle" "$@" || return 1
    layout_backends "$qsm.alt" "$docs" "$oracle" "$@" || { echo "(reversed layout)"; return 1; }
    conform_threads "$qsm" "$docs" "$@" || return 1
}

# conform_threads QSM DOCS [qs-score options...]: --threads 2 and 3, with
# chunks of 4 KiB (so chunk boundaries fall inside queries), write the bytes
# of --threads 1.
conform_threads() {
    local qsm="$1" docs="$2" t; shift 2
    qs-score --threads 1 "$@" "$qsm" < "$docs" > "$BATS_TEST_TMPDIR/thr.1" || { echo "--threads 1 failed"; return 1; }
    for t in 2 3; do
        QS_CHUNK_BYTES=4096 qs-score --threads $t "$@" "$qsm" < "$docs" > "$BATS_TEST_TMPDIR/thr.$t" ||
            { echo "--threads $t failed"; return 1; }
        cmp "$BATS_TEST_TMPDIR/thr.1" "$BATS_TEST_TMPDIR/thr.$t" ||
            { echo "--threads $t differs from --threads 1"; return 1; }
    done
}
