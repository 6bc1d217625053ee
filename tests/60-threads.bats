#!/usr/bin/env bats
bats_require_minimum_version 1.5.0
# qs-score with threads: every thread count writes the same bytes as one
# thread, errors are reported as one thread reports them, memory stays
# bounded; qs_score_matrix; NUMA replicas; GNU parallel as the scale-out.

load test_helper

# The tests of the load with several threads set QS_PARSE_AHEAD=0: with it
# on, LETOR text is read ahead while one thread loads the model alone.

# compiled FIXTURE MODEL: the fixture's .qsm (cached per test)
compiled() {
    local q="$BATS_TEST_TMPDIR/$1.qsm"
    if [ ! -f "$q" ]; then
        qs-convert "$FIX/$1/$2" > "$BATS_TEST_TMPDIR/$1.txt"
        qs-compile -o "$q" "$BATS_TEST_TMPDIR/$1.txt"
    fi
    echo "$q"
}

# same_bytes QSM DOCS [qs-score options]: --threads 1, 2, 3 and 5 with
# chunks of 300 bytes (boundaries inside every query) write the same bytes.
same_bytes() {
    local qsm="$1" docs="$2" t; shift 2
    qs-score --threads 1 "$@" "$qsm" < "$docs" > "$BATS_TEST_TMPDIR/t1"
    [ -s "$BATS_TEST_TMPDIR/t1" ]
    for t in 2 3 5; do
        QS_CHUNK_BYTES=300 qs-score --threads $t "$@" "$qsm" < "$docs" > "$BATS_TEST_TMPDIR/t$t"
        cmp "$BATS_TEST_TMPDIR/t1" "$BATS_TEST_TMPDIR/t$t" || { echo "--threads $t $* differs"; return 1; }
    done
}

@test "--threads 1, 2, 3, 5: the same bytes on every fixture, every option" {
    local q
    q=$(compiled lgb-l8 model.txt.zst)
    same_bytes "$q" "$FIX/lgb-l8/docs.letor"
    cmp "$BATS_TEST_TMPDIR/t1" "$FIX/lgb-l8/expected.txt"
    same_bytes "$q" "$FIX/lgb-l8/docs.letor" --annotate
    q=$(compiled lgb-multiclass model.txt.zst)
    same_bytes "$q" "$FIX/lgb-multiclass/docs.letor"
    same_bytes "$q" "$FIX/lgb-multiclass/docs.letor" --transform
    q=$(compiled xgb-agaricus model.json.zst)
    same_bytes "$q" "$FIX/xgb-agaricus/docs.letor" --transform
    cmp "$BATS_TEST_TMPDIR/t1" "$FIX/xgb-agaricus/expected.prob.txt"
    same_bytes "$q" "$FIX/xgb-agaricus/docs.letor" --absent zero
    q=$(compiled qr-oblivious model.xml.zst)
    local b
    for b in $(backends); do
        same_bytes "$q" "$FIX/qr-oblivious/docs.letor" --backend "$b"
    done
}

@test "--threads with -o: the file appears complete, the same bytes" {
    local q
    q=$(compiled lgb-l8 model.txt.zst)
    QS_CHUNK_BYTES=500 qs-score --threads 3 -o "$BATS_TEST_TMPDIR/out" "$q" "$FIX/lgb-l8/docs.letor"
    cmp "$BATS_TEST_TMPDIR/out" "$FIX/lgb-l8/expected.txt"
    run ls "$BATS_TEST_TMPDIR"
    refute_output --partial ".tmp"
}

@test "a bad line with threads: everything before it is written, the same message and exit code" {
    local q
    q=$(compiled lgb-l8 model.txt.zst)
    { head -n 120 "$FIX/lgb-l8/docs.letor"; echo "1 qid:9 abc:1"; tail -n +121 "$FIX/lgb-l8/docs.letor"; } \
        > "$BATS_TEST_TMPDIR/bad.letor"
    local t
    for t in 1 2 3; do
        run --separate-stderr env QS_CHUNK_BYTES=400 qs-score --threads $t "$q" "$BATS_TEST_TMPDIR/bad.letor"
        [ "$status" = 1 ]
        [ "$stderr" = "qs-score: $BATS_TEST_TMPDIR/bad.letor:121: bad feature token 'abc:1' (expected INDEX:VALUE)" ]
        # the 120 documents before it, exactly
        [ "$output" = "$(head -n 120 "$FIX/lgb-l8/expected.txt")" ]
    done
    # With -o nothing appears.
    run env QS_CHUNK_BYTES=400 qs-score --threads 3 -o "$BATS_TEST_TMPDIR/o" "$q" "$BATS_TEST_TMPDIR/bad.letor"
    assert_failure 1
    [ ! -e "$BATS_TEST_TMPDIR/o" ]
}

@test "a regular file read by the threads themselves (a range each): the same bytes at every chunk size, every line shape" {
    local q d="$BATS_TEST_TMPDIR" t cb f
    q=$(compiled lgb-l8 model.txt.zst)
    head -n 200 "$FIX/lgb-l8/docs.letor" > "$d/plain"
    # no newline at the end; CRLF; blank lines and comments; one line far
    # longer than a chunk (feature ids past the model's are ignored)
    head -c -1 "$d/plain" > "$d/nonl"
    sed 's/$/\r/' "$d/plain" > "$d/crlf"
    awk '{ print; if (NR % 7 == 0) print ""; if (NR % 11 == 0) print "# a comment" }' "$d/plain" > "$d/blank"
    { head -n 50 "$d/plain"
      awk 'BEGIN { printf "0 qid:1"; for (i = 1; i <= 3000; i++) printf " %d:0.5", i; print "" }'
      tail -n +51 "$d/plain"; } > "$d/long"
    for f in plain nonl crlf blank long; do
        QS_CHUNK_BYTES=1000000 qs-score --threads 1 "$q" "$d/$f" > "$d/$f.1" 2> "$d/err"
        [ -s "$d/$f.1" ]
        QS_READ_STREAM=1 QS_CHUNK_BYTES=300 qs-score --threads 3 "$q" "$d/$f" > "$d/$f.s" 2> "$d/err"
        cmp "$d/$f.1" "$d/$f.s" || { echo "$f: read through one reader differs"; return 1; }
        for t in 2 3 5; do
            for cb in 1 2 7 300 4096; do
                QS_CHUNK_BYTES=$cb qs-score --threads $t "$q" "$d/$f" > "$d/$f.$t" 2> "$d/err" ||
                    { echo "$f --threads $t, chunks of $cb: failed: $(cat "$d/err")"; return 1; }
                cmp "$d/$f.1" "$d/$f.$t" || { echo "$f --threads $t, chunks of $cb: differs"; return 1; }
            done
        done
    done
    cmp "$d/plain.1" <(head -n 200 "$FIX/lgb-l8/expected.txt")
    run --separate-stderr env QS_READ_STREAM=yes qs-score --threads 2 "$q" "$d/plain"
    assert_failure 2
    [ "${stderr%%$'\n'*}" = "qs-score: bad QS_READ_STREAM 'yes' (expected 0 or 1)" ]
    # empty, and only newlines: nothing written
    : > "$d/empty"
    printf '\n\n\n' > "$d/nl"
    for f in empty nl; do
        run --separate-stderr env QS_CHUNK_BYTES=1 qs-score --threads 3 "$q" "$d/$f"
        assert_success
        [ -z "$output" ] && [ -z "$stderr" ]
    done
}

@test "standard input that is a regular file: read by ranges from where it stands, and left at its end" {
    local q d="$BATS_TEST_TMPDIR" t
    q=$(compiled lgb-l8 model.txt.zst)
    # the first line read by the shell before: the rest is scored, and a
    # reader after qs-score finds nothing left
    (read -r _; qs-score --threads 1 "$q" -; echo "after: $(wc -c)") < "$FIX/lgb-l8/docs.letor" > "$d/one"
    [ "$(tail -n 1 "$d/one")" = "after: 0" ]
    cmp <(head -n -1 "$d/one") <(tail -n +2 "$FIX/lgb-l8/expected.txt")
    for t in 2 3; do
        (read -r _; QS_CHUNK_BYTES=500 qs-score --threads $t "$q" -; echo "after: $(wc -c)") < "$FIX/lgb-l8/docs.letor" > "$d/t$t"
        cmp "$d/one" "$d/t$t"
    done
}

@test "read by ranges: a bad line, a line over 256 MiB: what comes before is written, then the error, as one thread" {
    local q d="$BATS_TEST_TMPDIR" t
    q=$(compiled lgb-l8 model.txt.zst)
    { head -n 120 "$FIX/lgb-l8/docs.letor"; echo "1 qid:9 abc:1"; tail -n +121 "$FIX/lgb-l8/docs.letor"; } > "$d/bad"
    for t in 1 2 3 5; do
        run --separate-stderr env QS_CHUNK_BYTES=37 qs-score --threads $t "$q" "$d/bad"
        [ "$status" = 1 ]
        [ "$stderr" = "qs-score: $d/bad:121: bad feature token 'abc:1' (expected INDEX:VALUE)" ]
        [ "$output" = "$(head -n 120 "$FIX/lgb-l8/expected.txt")" ]
    done
    # 30 documents, then one line longer than the limit, then more
    { head -n 30 "$FIX/lgb-l8/docs.letor"; head -c 270000000 /dev/zero | tr '\0' 1; echo; head -n 5 "$FIX/lgb-l8/docs.letor"; } > "$d/huge"
    # (one thread reads it through one reader: 62-inputs checks that path)
    for t in 3; do
        run --separate-stderr env QS_CHUNK_BYTES=65536 qs-score --threads $t "$q" "$d/huge"
        [ "$status" = 1 ]
        [ "$stderr" = "qs-score: $d/huge:31: line longer than 256 MiB" ]
        [ "$output" = "$(head -n 30 "$FIX/lgb-l8/expected.txt")" ]
    done
    rm -f "$d/huge"
}

@test "--threads and QS_THREADS: range checked; the default is the CPUs this process may run on" {
    local q
    q=$(compiled lgb-l8 model.txt.zst)
    run qs-score --threads 0 "$q" /dev/null
    assert_failure 2
    assert_output --partial "bad --threads '0'"
    run env QS_THREADS=x qs-score "$q" /dev/null
    assert_failure 2
    QS_THREADS=3 QS_CHUNK_BYTES=300 qs-score "$q" < "$FIX/lgb-l8/docs.letor" | cmp - "$FIX/lgb-l8/expected.txt"
    # taskset limits the default to one CPU: the same bytes
    if command -v taskset >/dev/null; then
        taskset -c 0 qs-score "$q" < "$FIX/lgb-l8/docs.letor" | cmp - "$FIX/lgb-l8/expected.txt"
    fi
    run qs-score --version -v
    assert_output --regexp "threads: default [0-9]+"
    # the testing knobs are range checked too, and nothing is written
    run env QS_CHUNK_BYTES=0 qs-score -o "$BATS_TEST_TMPDIR/o1" "$q" "$FIX/lgb-l8/docs.letor"
    assert_failure 2
    assert_output --partial "bad QS_CHUNK_BYTES '0'"
    run env QS_NUMA_REPLICAS=abc qs-score --threads 2 -o "$BATS_TEST_TMPDIR/o2" "$q" "$FIX/lgb-l8/docs.letor"
    assert_failure 2
    assert_output --partial "bad QS_NUMA_REPLICAS 'abc'"
    [ ! -e "$BATS_TEST_TMPDIR/o1" ] && [ ! -e "$BATS_TEST_TMPDIR/o2" ]
}

@test "NUMA: forced replicas (QS_NUMA_REPLICAS) score the same; --numa is checked" {
    local q
    q=$(compiled lgb-multiclass model.txt.zst)
    QS_NUMA_REPLICAS=1 qs-score --threads 1 "$q" < "$FIX/lgb-multiclass/docs.letor" > "$BATS_TEST_TMPDIR/one"
    QS_NUMA_REPLICAS=3 QS_CHUNK_BYTES=300 qs-score --threads 4 "$q" < "$FIX/lgb-multiclass/docs.letor" > "$BATS_TEST_TMPDIR/three"
    cmp "$BATS_TEST_TMPDIR/one" "$BATS_TEST_TMPDIR/three"
    cmp "$BATS_TEST_TMPDIR/one" "$FIX/lgb-multiclass/expected.txt"
    QS_NUMA_REPLICAS=2 qs-score --threads 2 --numa off "$q" < "$FIX/lgb-multiclass/docs.letor" | cmp - "$BATS_TEST_TMPDIR/one"
    run qs-score --numa sometimes "$q" /dev/null
    assert_failure 2
    assert_output --partial "bad --numa 'sometimes'"
}

@test "NUMA: one replica per node on a machine of two nodes or more" {
    command -v numactl >/dev/null || skip "numactl is not installed (apt-get install numactl)"
    local nodes
    nodes=$(numactl --hardware 2>/dev/null | sed -n 's/^available: \([0-9]*\) nodes.*/\1/p')
    [ "${nodes:-1}" -ge 2 ] || skip "this machine has ${nodes:-1} NUMA node(s); the per-node replicas need two"
    local q
    q=$(compiled lgb-l8 model.txt.zst)
    QS_CHUNK_BYTES=300 qs-score --threads 4 --numa on "$q" < "$FIX/lgb-l8/docs.letor" | cmp - "$FIX/lgb-l8/expected.txt"
}

# A unit test program (MODEL.qsm DOCS) on four fixtures; its output must
# match the regular expression $2.
unit_on_fixtures() {
    local q f
    for f in "lgb-l8 model.txt.zst" "lgb-multiclass model.txt.zst" "xgb-agaricus model.json.zst" "qr-oblivious model.xml.zst"; do
        set -- "$1" "$2" $f
        q=$(compiled "$3" "$4")
        run "$UNIT/$1" "$q" "$FIX/$3/docs.letor"
        assert_success
        assert_output --regexp "$2"
    done
}

@test "qs_score_matrix: 1, 2, 3, 7 and the default threads equal qs_score_doc bit for bit" {
    unit_on_fixtures test_matrix "[1-9][0-9]* documents, 30 checks, 0 failures"
}

@test "qs_letor_parse_row, qs_qsm_get_row_format, qs_score_rows: the vectors, messages and bits of the workspace path" {
    unit_on_fixtures test_rows "[1-9][0-9]* documents, [0-9]+ checks, 0 failures"
}

@test "bounded memory: a 1 GB stream (64 MB under sanitizers) through --threads 2, the same bytes as one thread" {
    local q size=$((1 << 30))
    [ -n "${SANITIZE:-}" ] && size=$((64 << 20))
    q=$(compiled lgb-l8 model.txt.zst)
    # the fixture's documents over and over (whole copies, so whole lines):
    # a block of 96 copies (about 8 MB) repeated up to SIZE
    local blk="$BATS_TEST_TMPDIR/block" i n
    for i in $(seq 96); do cat "$FIX/lgb-l8/docs.letor"; done > "$blk"
    n=$((size / $(stat -c %s "$blk")))
    [ "$n" -ge 1 ] || n=1
    stream() { for i in $(seq "$n"); do cat "$blk"; done; }
    local one two rss
    one=$(stream | qs-score --threads 1 "$q" | md5sum)
    # the most memory: 12 chunks read and parsed ahead before the model loads
    two=$( { stream | QS_PARSE_AHEAD=wait /usr/bin/time -f '%M' -o "$BATS_TEST_TMPDIR/rss" qs-score --threads 2 "$q"; } | md5sum)
    [ "$one" = "$two" ]
    rss=$(tail -n 1 "$BATS_TEST_TMPDIR/rss")
    echo "peak RSS ${rss} KB"
    # README: 3 chunks of 1 MiB per thread in and out, 12 more read ahead
    # (text and values, 2 MiB each at most), plus the model and one
    # workspace per thread; 64 MB is above that and far below the input.
    [ -n "${SANITIZE:-}" ] || [ "$rss" -lt 65536 ]
}

@test "one block of every tree, built at load by several threads (trees gathered side by side, the vQS plan in parts): the layout qs-compile builds, the same scores" {
    # τ above the tree count: one block, so the threads share its trees
    # (and the byte-plane plan's entries) instead of taking whole blocks.
    local name src t b
    for name in lgb-l8 lgb-multiclass qr-oblivious; do
        src=$(ls "$FIX/$name"/model.*)
        qs-convert "$src" > "$BATS_TEST_TMPDIR/$name.txt"
        qs-compile --tree-block 100000 --reverse-all -o "$BATS_TEST_TMPDIR/$name.qsm" "$BATS_TEST_TMPDIR/$name.txt"
        run qs-compile --info "$BATS_TEST_TMPDIR/$name.qsm"
        assert_output --partial "blocks: 1;"
        for b in auto qs; do
            for t in 1 2 3 5; do
                QS_PARSE_AHEAD=0 run qs-score --backend "$b" --threads $t "$BATS_TEST_TMPDIR/$name.qsm" "$FIX/$name/docs.letor"
                assert_success
                cmp <(echo "$output") "$FIX/$name/expected.txt"
            done
        done
    done
}

@test "one block of 40 lone leaves, built at load by several threads (no records to gather)" {
    local T="$BATS_TEST_TMPDIR" i t
    {
        printf 'qs-ensemble 1\nsource lightgbm\nobjective regression\ncompare le\nprecision double\n'
        printf 'accumulate double\nabsent zero\nfeatures 6\nclasses 1\ntransform none 0x1p+0\n'
        printf 'base 0 0x0p+0\ntrees 40\n'
        for i in $(seq 0 39); do printf 'tree %d class 0 weight 0x1p+0 nodes 1\n0 leaf %d\n' $i $i; done
        printf 'end\n'
    } > "$T/leaves.txt"
    qs-compile --tree-block 100000 -o "$T/leaves.qsm" "$T/leaves.txt"
    printf '0 qid:1 1:0.5\n1 qid:1 3:-2\n' > "$T/d.letor"
    for t in 1 2 3; do
        QS_PARSE_AHEAD=0 run qs-score --threads $t "$T/leaves.qsm" "$T/d.letor"
        assert_success
        assert_output "$(printf '780\n780')"
    done
}

@test "a .qsm with two bad trees, checked at load by several threads: the first bad tree's error, as with one thread" {
    command -v python3 > /dev/null || skip "python3 is not installed"
    local T="$BATS_TEST_TMPDIR" t
    qs-convert "$FIX/lgb-l8/model.txt.zst" | qs-compile -o "$T/m.qsm"
    # TREE's bytes, then classes out of range in trees 30 and 80 (of 100),
    # which the threads check in different parts
    qsm_section "$T/m.qsm" TREE "$T/tree"
    python3 - "$T/tree" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
for t, c in ((30, 5), (80, 7)):
    struct.pack_into("<I", b, 24 + 16 * t, c)
open(sys.argv[1], "wb").write(b)
PY
    zstd -q -f "$T/tree" -o "$T/bad.zst"
    python3 "$BATS_TEST_DIRNAME/tools/qsm_forge.py" "$T/m.qsm" TREE "$T/bad.zst" "$T/bad.qsm"
    for t in 1 2 3 8; do
        QS_PARSE_AHEAD=0 run qs-score --threads $t "$T/bad.qsm" "$FIX/lgb-l8/docs.letor"
        assert_failure 1
        assert_output --partial "tree 30: class 5 out of range"
        refute_output --partial "tree 80"
    done
}

@test "GNU parallel --pipe -k: the same bytes as one qs-score" {
    command -v parallel >/dev/null || skip "GNU parallel is not installed (apt-get install parallel)"
    local q
    q=$(compiled lgb-l8 model.txt.zst)
    for i in 1 2 3 4 5 6 7 8; do cat "$FIX/lgb-l8/docs.letor"; done > "$BATS_TEST_TMPDIR/docs"
    qs-score --threads 1 "$q" < "$BATS_TEST_TMPDIR/docs" > "$BATS_TEST_TMPDIR/want"
    parallel --will-cite --pipe --block 20k -k -j 3 qs-score --threads 1 "$q" \
        < "$BATS_TEST_TMPDIR/docs" > "$BATS_TEST_TMPDIR/got"
    cmp "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got"
}

@test "a layout built at load by several threads is the one qs-compile builds (checked field by field)" {
    # With a τ stored, the loader rebuilds the layout (with --threads N, its
    # blocks in parallel) and refuses the file unless every field equals the
    # stored one: so loading is the test.  Many small blocks, reversed trees.
    qs-convert "$FIX/lgb-l8/model.txt.zst" > "$BATS_TEST_TMPDIR/m.txt"
    for tb in 1 3 7; do
        qs-compile --tree-block $tb --reverse-all -o "$BATS_TEST_TMPDIR/m$tb.qsm" "$BATS_TEST_TMPDIR/m.txt"
        for t in 1 2 3; do
            QS_PARSE_AHEAD=0 run qs-score --threads $t "$BATS_TEST_TMPDIR/m$tb.qsm" "$FIX/lgb-l8/docs.letor"
            assert_success
            cmp <(echo "$output") "$FIX/lgb-l8/expected.txt"
        done
    done
}

# ahead_bytes QSM DOCS [qs-score options]: with the model loaded only once
# the reading ahead has stopped (QS_PARSE_AHEAD=wait), --threads 2 and 3,
# chunks of 300 bytes (one row parsed ahead per chunk, the rest after the
# load), 4,000 bytes and the default, write what one thread writes.
ahead_bytes() {
    local qsm="$1" docs="$2" t cb; shift 2
    qs-score --threads 1 "$@" "$qsm" < "$docs" > "$BATS_TEST_TMPDIR/a1"
    [ -s "$BATS_TEST_TMPDIR/a1" ]
    for t in 2 3; do
        for cb in 300 4000 ""; do
            QS_CHUNK_BYTES=$cb QS_PARSE_AHEAD=wait qs-score --threads $t "$@" "$qsm" < "$docs" \
                > "$BATS_TEST_TMPDIR/a$t"
            cmp "$BATS_TEST_TMPDIR/a1" "$BATS_TEST_TMPDIR/a$t" ||
                { echo "--threads $t, chunks of ${cb:-default} bytes, $*: differs"; return 1; }
        done
    done
    QS_PARSE_AHEAD=0 qs-score --threads 2 "$@" "$qsm" < "$docs" > "$BATS_TEST_TMPDIR/a0"
    cmp "$BATS_TEST_TMPDIR/a1" "$BATS_TEST_TMPDIR/a0"
}

@test "documents read and parsed while the model loads: the same bytes as one thread" {
    local q b
    q=$(compiled lgb-l8 model.txt.zst)
    for i in 1 2 3 4 5 6 7 8; do cat "$FIX/lgb-l8/docs.letor"; done > "$BATS_TEST_TMPDIR/docs8"
    ahead_bytes "$q" "$BATS_TEST_TMPDIR/docs8" --annotate
    q=$(compiled lgb-multiclass model.txt.zst)
    ahead_bytes "$q" "$FIX/lgb-multiclass/docs.letor" --transform
    q=$(compiled xgb-agaricus model.json.zst)
    ahead_bytes "$q" "$FIX/xgb-agaricus/docs.letor" --transform
    cmp "$BATS_TEST_TMPDIR/a1" "$FIX/xgb-agaricus/expected.prob.txt"
    ahead_bytes "$q" "$FIX/xgb-agaricus/docs.letor" --absent zero
    ahead_bytes "$q" "$FIX/xgb-agaricus/docs.letor" --absent missing
    q=$(compiled qr-oblivious model.xml.zst)
    for b in $(backends); do
        ahead_bytes "$q" "$FIX/qr-oblivious/docs.letor" --backend "$b"
    done
}

@test "read ahead: the first bad line, an extra id's warning and --strict-features as with one thread" {
    local q t cb
    q=$(compiled lgb-l8 model.txt.zst)
    { head -n 120 "$FIX/lgb-l8/docs.letor"; echo "1 qid:9 abc:1"; tail -n +121 "$FIX/lgb-l8/docs.letor"; } \
        > "$BATS_TEST_TMPDIR/bad.letor"
    { head -n 30 "$FIX/lgb-l8/docs.letor"; echo "1 qid:9 1:1 900:2"; tail -n +31 "$FIX/lgb-l8/docs.letor"; } \
        > "$BATS_TEST_TMPDIR/extra.letor"
    for t in 2 3; do
        for cb in 300 4000 ""; do
            run --separate-stderr env QS_CHUNK_BYTES=$cb QS_PARSE_AHEAD=wait qs-score --threads $t "$q" "$BATS_TEST_TMPDIR/bad.letor"
            [ "$status" = 1 ]
            [ "$stderr" = "qs-score: $BATS_TEST_TMPDIR/bad.letor:121: bad feature token 'abc:1' (expected INDEX:VALUE)" ]
            [ "$output" = "$(head -n 120 "$FIX/lgb-l8/expected.txt")" ]
            run --separate-stderr env QS_CHUNK_BYTES=$cb QS_PARSE_AHEAD=wait qs-score --threads $t "$q" "$BATS_TEST_TMPDIR/extra.letor"
            [ "$status" = 0 ]
            [ "$stderr" = "qs-score: $BATS_TEST_TMPDIR/extra.letor:31: feature id 900 is beyond the model's 301 features (ids 0..300): ignored, here and on any later line (--strict-features refuses it)" ]
            [ "$(printf '%s\n' "$output" | wc -l)" = 121 ]
            run --separate-stderr env QS_CHUNK_BYTES=$cb QS_PARSE_AHEAD=wait qs-score --threads $t --strict-features "$q" "$BATS_TEST_TMPDIR/extra.letor"
            [ "$status" = 1 ]
            [ "$stderr" = "qs-score: $BATS_TEST_TMPDIR/extra.letor:31: feature id 900 is beyond the model's 301 features (ids 0..300; --strict-features)" ]
            [ "$output" = "$(head -n 30 "$FIX/lgb-l8/expected.txt")" ]
        done
    done
}

@test "read ahead: a model that fails to load past its INFO section is reported at once, even on endless input" {
    local q
    q=$(compiled lgb-l8 model.txt.zst)
    cp "$q" "$BATS_TEST_TMPDIR/bad.qsm"
    # one byte of the last section changed: INFO reads, the load fails
    local size
    size=$(stat -c %s "$BATS_TEST_TMPDIR/bad.qsm")
    printf '\x55' | dd of="$BATS_TEST_TMPDIR/bad.qsm" bs=1 seek=$((size - 2)) conv=notrunc 2>/dev/null
    run --separate-stderr qs-score --threads 1 "$BATS_TEST_TMPDIR/bad.qsm" "$FIX/lgb-l8/docs.letor"
    [ "$status" = 1 ]
    local want="$stderr"
    [[ "$want" == *"checksum mismatch"* ]]
    # the reading thread waits on a pipe that stays open for 30 s
    mkfifo "$BATS_TEST_TMPDIR/fifo"
    ( cat "$FIX/lgb-l8/docs.letor"; exec sleep 30 ) > "$BATS_TEST_TMPDIR/fifo" 2>/dev/null 3>&- 4>&- &
    local writer=$!
    SECONDS=0
    run --separate-stderr timeout 20 qs-score --threads 2 "$BATS_TEST_TMPDIR/bad.qsm" < "$BATS_TEST_TMPDIR/fifo"
    kill "$writer" 2>/dev/null || true
    echo "exit $status after $SECONDS s"
    [ "$status" = 1 ]
    [ "$SECONDS" -lt 15 ]
    [ "$stderr" = "${want//$FIX\/lgb-l8\/docs.letor/(stdin)}" ]
    [ -z "$output" ]
}

@test "read ahead: a model refused at load while another thread is inside a read ends cleanly (never a crash)" {
    local q i bad=0 busy1 busy2
    q=$(compiled lgb-l8 model.txt.zst)
    for i in $(seq 60); do cat "$FIX/lgb-l8/docs.letor"; done > "$BATS_TEST_TMPDIR/big.letor"
    # The oblivious back end refuses this model at the end of its load,
    # while the other thread reads standard input.  exit() tore stdio down
    # under the reading thread (a crash in 1 run of 6 to 20 with two busy loops
    # competing for the CPUs, as here, and rarely on an idle machine).
    ( while :; do :; done ) 3>&- & busy1=$!
    ( while :; do :; done ) 3>&- & busy2=$!
    for i in $(seq 100); do
        qs-score --threads 2 --backend oblivious "$q" < "$BATS_TEST_TMPDIR/big.letor" \
            > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err" && bad=1
        local rc=$?
        [ "$rc" = 3 ] && [ ! -s "$BATS_TEST_TMPDIR/out" ] &&
            grep -q "back end 'oblivious' scores only models whose trees are all oblivious" "$BATS_TEST_TMPDIR/err" ||
            { echo "run $i: exit $rc"; cat "$BATS_TEST_TMPDIR/err"; bad=1; break; }
    done
    kill "$busy1" "$busy2"
    [ "$bad" = 0 ]
}

@test "threads that cannot start: --threads 4096 under an address-space limit runs with fewer and says so (same bytes), or fails with exit 4; never the OpenMP runtime's exit 1" {
    # (not under the sanitizers, which reserve terabytes of address space)
    if ldd "$(command -v qs-score)" | grep -q libasan; then skip "ulimit -v under AddressSanitizer"; fi
    qs-score --version -v | grep -q "threads: default" || skip "built without OpenMP"
    local q
    q=$(compiled lgb-l8 model.txt.zst)
    for v in 2000000 500000; do
        run --separate-stderr bash -c "ulimit -v $v; qs-score --threads 4096 -o '$BATS_TEST_TMPDIR/o' '$q' '$FIX/lgb-l8/docs.letor'"
        echo "ulimit -v $v: exit $status: $stderr"
        if [ "$status" = 0 ]; then
            [[ "$stderr" =~ ^qs-score:\ only\ [0-9]+\ of\ 4096\ threads\ could\ start\ \(.*\):\ running\ with\ [0-9]+$ ]]
            cmp "$BATS_TEST_TMPDIR/o" "$FIX/lgb-l8/expected.txt"
        else
            [ "$status" = 4 ]
            [[ "$stderr" == *"qs-score: "* ]]
            [ ! -e "$BATS_TEST_TMPDIR/o" ]
        fi
        [[ "$stderr" != *libgomp* ]]
        rm -f "$BATS_TEST_TMPDIR/o"
    done
    # qs-blocktune --threads too
    cat "$FIX/lgb-l8/docs.letor" "$FIX/lgb-l8/docs.letor" "$FIX/lgb-l8/docs.letor" > "$BATS_TEST_TMPDIR/s.letor"
    run --separate-stderr bash -c "ulimit -v 1000000; qs-blocktune --budget 0.2 --repeat 1 --threads 4096 -o '$BATS_TEST_TMPDIR/t.qsm' '$q' '$BATS_TEST_TMPDIR/s.letor'"
    echo "qs-blocktune: exit $status: $stderr"
    [[ "$stderr" != *libgomp* ]]
    [ "$status" = 0 ] || [ "$status" = 4 ]
    [ "$status" = 4 ] || [[ "$stderr" == *"threads could start"* ]]
}

@test "bench/threads.sh: --threads N against N independent processes, one row, every output the one thread's bytes" {
    local t="$BATS_TEST_TMPDIR"
    qs-compile -o "$t/m.qsm" "$FIX/lgb-l8/model.txt.zst"
    for i in 1 2 3; do cat "$FIX/lgb-l8/docs.letor"; done > "$t/docs"
    run --separate-stderr "$QS_ROOT/bench/threads.sh" --model "$t/m.qsm" --docs "$t/docs" --rounds 2 --threads 3 --dir "$t/b"
    assert_success
    assert_line --index 0 "| threads | one thread ms | 3 independent processes ms | --threads 3 ms | team speed-up | independent speed-up | team / independent | scores |"
    assert_line --regexp '^\| 3 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| same bytes \|$'
    [ "$(grep -c '^|' <<< "$output")" = 3 ]
    # each round on standard error, and the machine and method
    [ "$(grep -c '^round [12]: one [0-9]* us, 3 independent [0-9]* us, --threads 3 [0-9]* us$' <<< "$stderr")" = 2 ]
    grep -q "^threads: .*, model m.qsm, $(wc -l < "$t/docs") documents" <<< "$stderr"
    run "$QS_ROOT/bench/threads.sh" --threads 1
    assert_failure 2
    run "$QS_ROOT/bench/threads.sh" --bogus
    assert_failure 2
}
