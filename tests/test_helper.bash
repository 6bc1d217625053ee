# test_helper.bash: loaded by every tests/*.bats file.
# Puts the freshly built tools first on PATH, finds the oracle data (the
# repository's tests/oracle, unpacked by make into build/oracle, or
# $QS_ORACLE_DATA), and loads bats-support / bats-assert from Debian's
# packages.

QS_ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
export PATH="$QS_ROOT/bin:$PATH"
UNIT="$QS_ROOT/bin/unit"
FIX="$QS_ROOT/tests/fixtures"
ORACLE="${QS_ORACLE_DATA:-$QS_ROOT/build/oracle}"

for lib in bats-support bats-assert; do
    for d in /usr/lib/bats /usr/lib/bats-core /usr/share/bats; do
        if [ -f "$d/$lib/load.bash" ]; then
            load "$d/$lib/load.bash"
            break
        fi
    done
done

# Peak RSS allowance (KB) beyond a test's limit: 0 in a normal build; under
# AddressSanitizer, what the tool needs to start at all (shadow memory), so
# that the limit still bounds what the input costs.
san_rss() {
    if ldd "$(command -v "$1")" 2> /dev/null | grep -q libasan; then
        /usr/bin/time -f %M -o "$BATS_TEST_TMPDIR/rss.base" "$1" --version > /dev/null
        tail -n 1 "$BATS_TEST_TMPDIR/rss.base"
    else
        echo 0
    fi
}

# The oracle data is part of the repository: its absence fails the test
# (saying how to unpack it), it never skips.
require_oracle() {
    [ -f "$ORACLE/lightgbm/MANIFEST.tsv" ] ||
        fail "oracle data not unpacked at $ORACLE (make oracle, or scripts/oracle.sh unpack)"
}

# require_large FILE...: a file of the models left out of the repository
# (tests/oracle/SHA256SUMS.large) skips its test, saying how to make it.
require_large() {
    local f
    for f in "$@"; do
        [ -f "$f" ] || skip "${f#"$ORACLE"/} is not in the repository: scripts/oracle.sh large makes it (trains it with the pinned libraries)"
    done
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

# A QS_BACKEND left in the environment would narrow every test to one back
# end: only a test that sets it (for one command) gets one.
unset QS_BACKEND

# keep_file PATH NAME: PATH itself when it is a regular file, else (a pipe from
# process substitution, which can be read once) a copy in $BATS_TEST_TMPDIR.
keep_file() {
    if [ -f "$1" ]; then
        printf '%s\n' "$1"
    else
        cat "$1" > "$BATS_TEST_TMPDIR/cmp.$2"
        printf '%s\n' "$BATS_TEST_TMPDIR/cmp.$2"
    fi
}

# compare_scores GOT WANT: GOT must equal WANT byte for byte.  Every oracle
# and fixture score file is written the way qs-score writes (%.17g of a double
# sum, %.9g of a float32 one, tab-separated columns; checked when this helper
# was written), so equal bytes mean equal bits, NaN only equal to NaN and the
# sign of zero kept, and the documented output format at once.  On a
# difference, prints the first differing values and fails.
compare_scores() {
    # A test file whose oracles are written by another program's formatting
    # sets SCORE_COMPARE=values: the values are then compared bit for bit.
    if [ "${SCORE_COMPARE:-bytes}" = values ]; then
        compare_values "$1" "$2"
        return
    fi
    local got want
    got=$(keep_file "$1" got) && want=$(keep_file "$2" want) || return 1
    cmp -s "$got" "$want" && return 0
    echo "scores differ from $2 (byte comparison):"
    if [ -x "$UNIT/cmpscores" ]; then
        if "$UNIT/cmpscores" "$got" "$want"; then
            echo "(the values are the same bits: only the formatting differs)"
        fi
    else
        cmp "$got" "$want" || true
    fi
    return 1
}

# compare_values [--float] GOT WANT: for an oracle written with other
# formatting than qs-score's: every value parsed (strtod, or strtof with
# --float) and compared bit for bit by tests/unit/cmpscores.c (NaN equals only
# NaN, -0 is not 0, same line and column counts).
compare_values() {
    local opt=
    if [ "$1" = --float ]; then opt=--float; shift; fi
    local got want
    got=$(keep_file "$1" got) && want=$(keep_file "$2" want) || return 1
    [ -x "$UNIT/cmpscores" ] || { echo "$UNIT/cmpscores not built"; return 1; }
    "$UNIT/cmpscores" $opt "$got" "$want"
}

# A QS_BACKEND left in the environment would narrow every test silently:
# tests that want one set it themselves.
unset QS_BACKEND

# Every back end this build knows (the suite checks that --list-backends
# names each one).
QS_KNOWN_BACKENDS="walk qs vqs vqs-avx2 vqs-avx512 struct vpred oblivious walk-batch cuda cuda-emu"

# Back ends every conformance test runs: `auto` and every back end that
# `qs-score --list-backends` says this machine runs (QS_BACKEND, set by a
# test, forces one).  With QS_TEST_LAYOUT_ONLY=1 (the per-SIMD-level passes
# of `make check`), auto and the back ends that read the QuickScorer layout
# (not walk-batch, the reference walk behind the whole-batch entry).
backends() {
    if [ -n "${QS_BACKEND:-}" ]; then echo "$QS_BACKEND"; return; fi
    local list
    list=$(qs-score --list-backends) || { echo "qs-score --list-backends failed" >&2; return 1; }
    [ -n "$list" ] || { echo "qs-score --list-backends is empty" >&2; return 1; }
    echo auto
    if [ "${QS_TEST_LAYOUT_ONLY:-0}" = 1 ]; then
        printf '%s\n' "$list" | awk -F'\t' '$2 == "yes" && $3 !~ /reference|baseline/ && $1 != "walk-batch" && $1 != "cuda-emu" { print $1 }'
    else
        printf '%s\n' "$list" | awk -F'\t' '$2 == "yes" { print $1 }'
    fi
}

# score_all QSM DOCS WANT [qs-score options...]: score with every back end
# and compare.  The list must not be empty and, unless QS_BACKEND picks one,
# must hold the back ends every build has.  `oblivious` refuses a model with a
# tree that is not oblivious (exit 3, with its message): a test scoring an
# oblivious model says so with OBLIVIOUS=yes, and there a refusal fails.
score_all() {
    local qsm="$1" docs="$2" want="$3"; shift 3
    local b rc list all err="$BATS_TEST_TMPDIR/score_all.err"
    list=$(backends) || { echo "cannot list the back ends"; return 1; }
    [ -n "$list" ] || { echo "the list of back ends is empty"; return 1; }
    if [ -z "${QS_BACKEND:-}" ]; then
        # every back end this build knows is listed, available or not
        all=$(qs-score --list-backends | cut -f1)
        for b in $QS_KNOWN_BACKENDS; do
            printf '%s\n' $all | grep -qx -- "$b" ||
                { echo "back end $b is missing from --list-backends:" $all; return 1; }
        done
        if [ "${QS_TEST_LAYOUT_ONLY:-0}" != 1 ]; then
            for b in walk qs struct vpred oblivious walk-batch cuda-emu; do
                printf '%s\n' $list | grep -qx -- "$b" ||
                    { echo "back end $b is missing from the list:" $list; return 1; }
            done
        fi
    fi
    for b in $list; do
        rc=0
        QS_BACKEND= qs-score --backend "$b" "$@" "$qsm" < "$docs" > "$BATS_TEST_TMPDIR/got.$b" 2> "$err" || rc=$?
        if [ "$rc" = 3 ] && [ "$b" = oblivious ] && [ "${OBLIVIOUS:-no}" != yes ] &&
            grep -q "back end 'oblivious' scores only models whose trees are all oblivious" "$err"; then
            continue
        fi
        [ "$rc" = 0 ] || { echo "qs-score --backend $b $* failed ($rc):"; cat "$err"; return 1; }
        [ ! -s "$err" ] || { echo "qs-score --backend $b $* wrote to standard error:"; cat "$err"; return 1; }
        compare_scores "$BATS_TEST_TMPDIR/got.$b" "$want" || { echo "back end $b differs ($*)"; return 1; }
    done
}

# layout_backends QSM DOCS WANT [options]: score_all with the back ends that
# read the QuickScorer layout (qs, and vqs-* where this CPU runs them).  The
# sanitizer pass leaves out auto and vqs: each runs one of the kernels
# named here, whose code the pass checks under its own name.
layout_backends() {
    local b list
    list=$(backends) || return 1
    for b in $list; do
        case "$b" in
            auto | vqs) [ -z "${SANITIZE:-}" ] || continue
                QS_BACKEND="$b" score_all "$@" || return 1 ;;
            qs | vqs-*) QS_BACKEND="$b" score_all "$@" || return 1 ;;
        esac
    done
}

# conform MODEL DOCS ORACLE [qs-score options...]: convert, compile (cached per
# file), then score DOCS with every back end and compare with ORACLE bit for
# bit; then again with another layout (every tree reversed, small tree and
# document blocks, another Δ), which must not change a bit either, and with
# that layout scored in batches of 64 documents (qs-score --doc-block 64), so
# that every vQS kernel runs, the 64-document byte planes included (they take
# batches of at least 32).  Under the sanitizers, the first 1,000 documents.
conform() {
    local model="$1" docs="$2" oracle="$3"; shift 3
    local f
    for f in "$model" "$docs" "$oracle"; do
        [ -f "$f" ] || { echo "missing $f (the reference data is incomplete)"; return 1; }
    done
    local key qsm
    key=$(printf '%s' "$model" | cksum | cut -d' ' -f1)
    qsm="$BATS_FILE_TMPDIR/$key.qsm"
    if [ ! -f "$qsm" ]; then
        qs-convert "$model" > "$BATS_FILE_TMPDIR/$key.txt" || { echo "qs-convert failed"; return 1; }
        qs-compile -o "$qsm" "$BATS_FILE_TMPDIR/$key.txt" || { echo "qs-compile failed"; return 1; }
        qs-compile --reverse-all --tree-block 37 --doc-block 5 --delta 3 -o "$qsm.alt" \
            "$BATS_FILE_TMPDIR/$key.txt" || { echo "qs-compile (reversed layout) failed"; return 1; }
    fi
    # Under the sanitizers (a memory check, ~5x slower), the first
    # QS_SAN_DOCS documents (default 1000) of a longer plain-text file, when
    # the oracle has a line per document: every code path, less repetition.
    local n="${QS_SAN_DOCS:-1000}"
    if [ -n "${SANITIZE:-}" ] && [ "${docs%.zst}" = "$docs" ] &&
        [ "$(wc -l < "$docs")" -gt "$n" ] && [ "$(wc -l < "$docs")" = "$(wc -l < "$oracle")" ]; then
        head -n "$n" "$docs" > "$BATS_TEST_TMPDIR/san.docs"
        head -n "$n" "$oracle" > "$BATS_TEST_TMPDIR/san.oracle"
        docs="$BATS_TEST_TMPDIR/san.docs"
        oracle="$BATS_TEST_TMPDIR/san.oracle"
    fi
    score_all "$qsm" "$docs" "$oracle" "$@" || return 1
    layout_backends "$qsm.alt" "$docs" "$oracle" "$@" || { echo "(reversed layout)"; return 1; }
    layout_backends "$qsm.alt" "$docs" "$oracle" --doc-block 64 "$@" ||
        { echo "(reversed layout, --doc-block 64)"; return 1; }
    conform_threads "$qsm" "$docs" "$@" || return 1
}

# conform_threads QSM DOCS [qs-score options...]: --threads 2 and 3, with
# chunks of 4 KiB (so chunk boundaries fall inside queries), write the bytes
# of --threads 1: 2 threads with the model loaded first (by both threads),
# 3 with the documents read ahead while it loads (for LETOR text; the
# load waits until the reading ahead stops, so that it always happens).
conform_threads() {
    local qsm="$1" docs="$2" t; shift 2
    qs-score --threads 1 "$@" "$qsm" < "$docs" > "$BATS_TEST_TMPDIR/thr.1" || { echo "--threads 1 failed"; return 1; }
    for t in 2 3; do
        QS_PARSE_AHEAD=$([ $t = 2 ] && echo 0 || echo wait) \
        QS_CHUNK_BYTES=4096 qs-score --threads $t "$@" "$qsm" < "$docs" > "$BATS_TEST_TMPDIR/thr.$t" ||
            { echo "--threads $t failed"; return 1; }
        cmp "$BATS_TEST_TMPDIR/thr.1" "$BATS_TEST_TMPDIR/thr.$t" ||
            { echo "--threads $t differs from --threads 1"; return 1; }
    done
}

# missing_kernels: the vQS kernels (vqs-avx2, vqs-avx512) that are not among
# the back ends this CPU runs, one per line.
missing_kernels() {
    local k list
    list=$(QS_BACKEND= backends)
    for k in vqs-avx2 vqs-avx512; do
        printf '%s\n' $list | grep -qx -- "$k" || echo "$k"
    done
}

# note_missing_kernels WHAT: say on the TAP stream (fd 3) which vQS kernels
# WHAT did not cover on this CPU, so that their absence is not silent.
note_missing_kernels() {
    local k
    for k in $(missing_kernels); do
        echo "# note: $1 ran without $k: this CPU does not run it" >&3
    done
}

# qsm_section FILE.qsm ID OUT: the raw (decompressed) bytes of section ID
# (INFO, TREE, QSLY, ...) of FILE.qsm, into OUT (needs python3 and zstd).
qsm_section() {
    python3 - "$1" "$2" "$3.zst" << 'PY' && zstd -q -d -c "$3.zst" > "$3"
import struct, sys
q = open(sys.argv[1], "rb").read()
for s in range(struct.unpack_from("<I", q, 20)[0]):
    sid, flags, off, stored = struct.unpack_from("<IIQQ", q, 64 + 48 * s)
    if sid == struct.unpack("<I", sys.argv[2].encode())[0]:
        open(sys.argv[3], "wb").write(q[off:off + stored])
        sys.exit(0)
sys.exit("no section " + sys.argv[2])
PY
}

# pipeline FIXTURE_DIR MODEL_FILE WANT [qs-score options]: a fixture of
# tests/fixtures/ converted, compiled and scored with every back end
# (score_all), then on a second layout (every tree reversed, small blocks)
# with the layout back ends; the scores of the last back end in
# $BATS_TEST_TMPDIR/out.
pipeline() {
    local dir="$FIX/$1" model="$2" want="$FIX/$1/$3"; shift 3
    qs-convert "$dir/$model" > "$BATS_TEST_TMPDIR/m.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" "$BATS_TEST_TMPDIR/m.txt"
    qs-compile --reverse-all --tree-block 9 --doc-block 3 -o "$BATS_TEST_TMPDIR/r.qsm" "$BATS_TEST_TMPDIR/m.txt"
    score_all "$BATS_TEST_TMPDIR/m.qsm" "$dir/docs.letor" "$want" "$@"
    layout_backends "$BATS_TEST_TMPDIR/r.qsm" "$dir/docs.letor" "$want" "$@"
    cp "$BATS_TEST_TMPDIR/got.${QS_BACKEND:-qs}" "$BATS_TEST_TMPDIR/out"
}

# qs_eval_rows ARGS...: qs-eval's output without its first line, the '#'
# line naming the convention (tests/eval.bats checks that line itself).
qs_eval_rows() {
    qs-eval "$@" > "$BATS_TEST_TMPDIR/qs_eval_rows.out"
    local rc=$?
    sed '1{/^# /d}' "$BATS_TEST_TMPDIR/qs_eval_rows.out"
    return $rc
}
