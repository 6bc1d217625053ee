#!/usr/bin/env bats
# Every block kind through every back end: synthetic models
# (tests/tools/gen_block_models.py) whose layouts hold multi-word QS blocks
# (trees of 65 to 2100 leaves, categorical nodes among them), QS-Ω blocks
# (oblivious trees of depth 1 to 12, lone leaves; with one missing rule and
# default side per feature, which the AVX2 kernel reads by ranks) and narrow
# ones, linear
# leaves, one to three classes, every compare, precision and accumulation
# mode, blocks of 700 features, groups of over 32,767 entries, and narrow
# trees read by ranks (groups of up to 255 distinct thresholds, and 256).  Batches of 1, 7, 63, 64, 65 and 130 documents (so the 64-document
# kernels see full, ragged and one-document groups), two layouts; every
# back end must write the bytes of `walk` and `qs`.

load test_helper

setup_file() {
    command -v python3 > /dev/null || return 0
    local d="$BATS_FILE_TMPDIR/gen" f n
    python3 "$BATS_TEST_DIRNAME/tools/gen_block_models.py" "$d" || return 1
    for f in "$d"/*.txt; do
        n="${f%.txt}"
        case "$n" in
        # one block whatever this machine's cache: groups of over 32,767 entries
        */long-*) qs-compile --tree-block 2000 -o "$n.qsm" "$f" || return 1 ;;
        *) qs-compile -o "$n.qsm" "$f" || return 1 ;;
        esac
        qs-compile --reverse-all --tree-block 5 --delta 3 -o "$n.alt.qsm" "$f" || return 1
    done
}

# same NAME [DOCS]: every back end (and auto) on model NAME, both layouts,
# each batch size as one batch (--doc-block N) and in the default batches,
# the same bytes as walk and qs.
same() {
    command -v python3 > /dev/null || skip "python3 not found"
    local d="$BATS_FILE_TMPDIR/gen" t="$BATS_TEST_TMPDIR" q n b list docs="${2:-docs.letor}"
    [ -f "$d/$1.qsm" ] || { echo "model $1 was not generated"; return 1; }
    list=$(backends) || return 1
    for q in "$d/$1.qsm" "$d/$1.alt.qsm"; do
        for n in 1 7 63 64 65 130; do
            head -n "$n" "$d/$docs" > "$t/docs"
            qs-score --backend walk "$q" < "$t/docs" > "$t/walk" || return 1
            qs-score --backend qs --doc-block "$n" "$q" < "$t/docs" > "$t/qs" || return 1
            cmp "$t/walk" "$t/qs" || { echo "qs differs from walk ($q, $n documents)"; return 1; }
            for b in $list; do
                qs-score --backend "$b" --doc-block "$n" "$q" < "$t/docs" > "$t/got" 2> "$t/err" || {
                    grep -q "scores only models whose trees are all oblivious" "$t/err" && continue
                    echo "--backend $b failed ($q, $n documents):"; cat "$t/err"; return 1
                }
                cmp "$t/walk" "$t/got" ||
                    { echo "$b --doc-block $n differs from walk ($q)"; return 1; }
            done
        done
        for b in $list; do
            qs-score --backend "$b" "$q" < "$t/docs" > "$t/got" 2> /dev/null || continue
            cmp "$t/walk" "$t/got" || { echo "$b differs from walk ($q, 130 documents)"; return 1; }
        done
    done
}

@test "multi-word trees (65..2100 leaves), compare le, accumulate double" {
    same wide-le-double
    note_missing_kernels "the block kinds"
}
@test "multi-word trees, float32 thresholds, accumulate float, 3 classes" { same wide-lt-float; }
@test "multi-word trees, accumulate float-double (RankLib), 2 classes, absent zero" { same wide-le-fd; }
@test "oblivious trees of depth 1..12, accumulate double" { same obl-le-double; }
@test "oblivious trees, compare lt, accumulate float, 3 classes" { same obl-lt-float; }
@test "oblivious trees, accumulate float-double, 2 classes" { same obl-le-fd; }
@test "oblivious trees read by ranks (AVX2), compare le, accumulate double" { same oblr-le-double; }
@test "oblivious trees read by ranks (AVX2), compare lt, float32, accumulate float, 3 classes" { same oblr-lt-float; }
@test "oblivious trees read by ranks (AVX2), accumulate float-double, absent zero, 2 classes" { same oblr-le-fd; }
@test "oblivious trees read by ranks (AVX2), groups of hundreds of distinct thresholds" { same oblr-many-lt-double; }
@test "linear leaves on multi-word, narrow and oblivious trees" { same lin-double; }
@test "linear leaves on oblivious trees, 2 classes" { same lin-obl; }
@test "700 features in one block (the kernels' feature rows refilled)" { same many-le-double many-docs.letor; }
@test "700 features, float32, accumulate float, 2 classes" { same many-lt-float many-docs.letor; }

# rank_share NAME PERCENT: auto's Zen 5 rule counts PERCENT% of model NAME's
# leaves in blocks the kernels read by ranks (or QS-Omega, or small trees):
# which blocks take that path (stated only where AVX-512 runs).
rank_share() {
    qs-score --list-backends | grep -q '^vqs-avx512	yes	' || return 0
    run env QS_CPU_CLASS=zen5 qs-score -v "$BATS_FILE_TMPDIR/gen/$1.qsm" < /dev/null
    assert_output --partial "($2% of leaves in rank blocks"
}

@test "narrow trees by ranks (every missing rule: special lists), compare le, accumulate double" {
    same rank-le-double
    rank_share rank-le-double 100
}
@test "narrow trees by ranks, float32 thresholds, accumulate float, 3 classes" {
    same rank-lt-float
    rank_share rank-lt-float 100
}
@test "narrow trees by ranks, accumulate float-double, absent zero, 2 classes" {
    same rank-le-fd
    rank_share rank-le-fd 100
}
@test "narrow trees by ranks: a group of 255 distinct thresholds (counts up to 255), and of 256 (whole planes)" {
    same rank-255-le-double
    rank_share rank-255-le-double 100
    same rank-256-le-double
    rank_share rank-256-le-double 0
}
@test "narrow trees by ranks: more distinct thresholds in a block than AVX-512's table of masks (compares instead)" {
    same rank-bigtable-le-double many-docs.letor
    rank_share rank-bigtable-le-double 100
}

# same_long NAME: the one-block layout only, 63 and 130 documents, every
# back end against walk (the group is what is tested, not the batching).
same_long() {
    command -v python3 > /dev/null || skip "python3 not found"
    local d="$BATS_FILE_TMPDIR/gen" t="$BATS_TEST_TMPDIR" n b list q="$BATS_FILE_TMPDIR/gen/$1.qsm"
    [ -f "$q" ] || { echo "model $1 was not generated"; return 1; }
    list=$(backends) || return 1
    for n in 63 130; do
        head -n "$n" "$d/docs.letor" > "$t/docs"
        qs-score --backend walk "$q" < "$t/docs" > "$t/walk" || return 1
        for b in $list; do
            qs-score --backend "$b" --doc-block 64 "$q" < "$t/docs" > "$t/got" 2> "$t/err" || {
                grep -q "scores only models whose trees are all oblivious" "$t/err" && continue
                echo "--backend $b failed ($n documents):"; cat "$t/err"; return 1
            }
            cmp "$t/walk" "$t/got" || { echo "$b differs from walk ($n documents)"; return 1; }
        done
    done
}

@test "groups of over 32,767 entries in one block, float32 sums" { same_long long-le-float; }
@test "groups of over 32,767 entries in one block, compare lt, double sums, absent zero" {
    same_long long-lt-double
}

@test "every block kind with AVX-512 disabled (auto and vqs on AVX2)" {
    command -v python3 > /dev/null || skip "python3 not found"
    local cpu m
    cpu=$(qs-score --version -v | sed -n 's/^cpu: \([a-z0-9,]*\).*/\1/p')
    case ",$cpu," in *",avx512,"*) ;; *) skip "this CPU lacks AVX-512" ;; esac
    for m in wide-le-double wide-lt-float obl-lt-float lin-double rank-le-double rank-lt-float; do
        QS_DISABLE_CPU_FEATURES=avx512 same "$m" || { echo "(with avx512 disabled)"; return 1; }
    done
    QS_DISABLE_CPU_FEATURES=avx512 same_long long-le-float || { echo "(with avx512 disabled)"; return 1; }
}
