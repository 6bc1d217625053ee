#!/usr/bin/env bats
# Documented claims that no other test checks: binary output refused on a
# terminal, the option ranges of qs-compile and qs-score (the limit accepted,
# one past it refused with exit 2), the --transform refusal (exit 3), the rows
# of the README's Limits table that can be tested cheaply, and the .qsm
# version rules (a newer minor version is read, a newer major is refused).

load test_helper
bats_require_minimum_version 1.5.0

setup() {
    T="$BATS_TEST_TMPDIR"
    qs-convert "$FIX/xgb-tiny/model.json" > "$T/m.txt"
    qs-compile -o "$T/m.qsm" "$T/m.txt"
}

# header FEATURES CLASSES [SOURCE COMPARE PRECISION ACCUMULATE]: the header
# lines of a canonical ensemble text, up to (not including) `base`.
header() {
    printf 'qs-ensemble 1\nsource %s\nobjective limits\ncompare %s\nprecision %s\naccumulate %s\nabsent zero\nfeatures %s\nclasses %s\ntransform none 0x1p+0\n' \
        "${3:-lightgbm}" "${4:-le}" "${5:-double}" "${6:-double}" "$1" "$2"
}

@test "qs-compile refuses to write a .qsm to a terminal (exit 2), and writes nothing there" {
    command -v script > /dev/null || skip "script (util-linux/bsdutils) not installed: no pseudo-terminal to test with"
    run script -qec "qs-compile '$T/m.txt'" /dev/null
    assert_failure 2
    assert_output --partial "qs-compile: refusing to write binary output to a terminal (use -o FILE)"
    refute_output --partial "QSM"
    # The same command with a file on standard output works.
    run script -qec "qs-compile '$T/m.txt' > '$T/tty.qsm'" /dev/null
    assert_success
    cmp "$T/m.qsm" "$T/tty.qsm"
}

# range TOOL OPTION LOW HIGH: LOW and HIGH accepted (scores unchanged, for
# qs-score; the same scores from the compiled file, for qs-compile), LOW - 1
# and HIGH + 1 refused with exit 2 and the range in the message.
range() {
    local tool="$1" opt="$2" low="$3" high="$4" v bad
    for v in "$low" "$high"; do
        if [ "$tool" = qs-score ]; then
            run --separate-stderr qs-score "$opt" "$v" "$T/m.qsm" "$FIX/xgb-tiny/docs.letor"
            assert_success
            printf '%s\n' "$output" > "$T/got"
        else
            run qs-compile "$opt" "$v" -o "$T/r.qsm" "$T/m.txt"
            assert_success
            qs-score "$T/r.qsm" "$FIX/xgb-tiny/docs.letor" > "$T/got"
        fi
        compare_scores "$T/got" "$FIX/xgb-tiny/expected.txt"
    done
    for bad in $((low - 1)) $((high + 1)); do
        if [ "$tool" = qs-score ]; then
            run qs-score "$opt" "$bad" "$T/m.qsm" "$FIX/xgb-tiny/docs.letor"
        else
            run qs-compile "$opt" "$bad" -o "$T/bad.qsm" "$T/m.txt"
            [ ! -e "$T/bad.qsm" ]
        fi
        assert_failure 2
        assert_output --partial "'$bad' (expected $low..$high)"
    done
}

@test "qs-score --tree-block 0..2^32-2, --doc-block 1..4096, --delta 1..64: limits accepted, one past refused (exit 2)" {
    range qs-score --tree-block 0 4294967294
    range qs-score --doc-block 1 4096
    range qs-score --delta 1 64
}

@test "qs-compile --tree-block 0..2^32-2, --doc-block 1..4096, --delta 1..64: limits accepted, one past refused (exit 2)" {
    range qs-compile --tree-block 0 4294967294
    range qs-compile --doc-block 1 4096
    range qs-compile --delta 1 64
}

@test "--transform on a model whose transform cannot be reproduced exactly: refused (exit 3) before any output; raw scores still fine" {
    sed 's/^transform none 0x1p+0$/transform unsupported 0x1p+0/' "$T/m.txt" > "$T/u.txt"
    grep -q '^transform unsupported' "$T/u.txt"
    qs-compile -o "$T/u.qsm" "$T/u.txt"
    run --separate-stderr qs-score --transform "$T/u.qsm" "$FIX/xgb-tiny/docs.letor"
    assert_failure 3
    [ -z "$output" ]
    [[ "$stderr" == *"transform cannot be reproduced exactly"* ]]
    run qs-score --transform -o "$T/out" "$T/u.qsm" "$FIX/xgb-tiny/docs.letor"
    assert_failure 3
    [ ! -e "$T/out" ]
    qs-score "$T/u.qsm" "$FIX/xgb-tiny/docs.letor" > "$T/got"
    compare_scores "$T/got" "$FIX/xgb-tiny/expected.txt"
    # `none` is the identity under --transform.
    qs-score --transform "$T/m.qsm" "$FIX/xgb-tiny/docs.letor" > "$T/got"
    compare_scores "$T/got" "$FIX/xgb-tiny/expected.txt"
}

@test "limits: feature ids 0..2^24-1 in a model (2^24 refused); in documents ids up to 2^32-1 ignored, 2^32 an error" {
    { header 16777216 1
      printf 'base 0 0x0p+0\ntrees 1\ntree 0 class 0 weight 0x1p+0 nodes 3\n'
      printf '0 num 16777215 0x1p-1 nan right 1 2\n1 leaf 0x1p+0\n2 leaf 0x1p+1\nend\n'; } > "$T/f.txt"
    qs-compile -o "$T/f.qsm" "$T/f.txt"
    # Feature 2^24-1 decides; 2^24 and 2^32-1 are beyond the model: absent (0).
    printf '0 16777215:0\n0 16777215:1\n0 16777216:1\n0 4294967295:1\n0 1:1 16777215:7 4294967295:0\n' > "$T/d"
    printf '1\n2\n1\n1\n2\n' > "$T/want"
    # Ignored with one warning naming the first such line (tests/56-documents.bats).
    for b in $(backends); do
        qs-score --backend "$b" "$T/f.qsm" "$T/d" > "$T/got" 2> "$T/err"
        compare_scores "$T/got" "$T/want" || { echo "back end $b differs"; return 1; }
        grep -q "^qs-score: $T/d:3: feature id 16777216 is beyond the model's 16777216 features" "$T/err"
    done
    sed 's/^features 16777216$/features 16777217/' "$T/f.txt" > "$T/f2.txt"
    run qs-compile -o "$T/f2.qsm" "$T/f2.txt"
    assert_failure 1
    assert_output --partial "feature count 16777217 is beyond the limit 16777216"
    printf '0 4294967296:1\n' > "$T/d2"
    run qs-score "$T/f.qsm" "$T/d2"
    assert_failure 1
    assert_output --partial "feature id in '4294967296:1' is out of range"
}

@test "limits: 4096 classes (one column each) accepted, 4097 refused" {
    { header 3 4096
      for c in $(seq 0 4095); do echo "base $c 0x0p+0"; done
      printf 'trees 2\ntree 0 class 4095 weight 0x1p+0 nodes 3\n0 num 1 0x1p-1 nan right 1 2\n1 leaf 0x1p+0\n2 leaf 0x1p+1\n'
      printf 'tree 1 class 0 weight 0x1p+0 nodes 1\n0 leaf 0x1.8p+1\nend\n'; } > "$T/c.txt"
    qs-compile -o "$T/c.qsm" "$T/c.txt"
    printf '0 1:0\n0 1:1\n' > "$T/d"
    awk 'BEGIN { for (d = 1; d <= 2; d++) { printf "3"; for (c = 1; c < 4095; c++) printf "\t0"; printf "\t%d\n", d } }' > "$T/want"
    score_all "$T/c.qsm" "$T/d" "$T/want"
    { header 3 4097
      for c in $(seq 0 4096); do echo "base $c 0x0p+0"; done
      printf 'trees 1\ntree 0 class 0 weight 0x1p+0 nodes 1\n0 leaf 0x1p+0\nend\n'; } > "$T/c2.txt"
    run qs-compile -o "$T/c2.qsm" "$T/c2.txt"
    assert_failure 1
    assert_output --partial "class count 4097 is beyond the limit 4096"
}

@test "limits: category 8,225,567 (257,049 bitset words) accepted and scored, 2^31 refused" {
    # The limit is LightGBM's own: categories are ints (2^31 - 1, 2^26
    # words); a set at the limit is 256 MiB, so the test stays below it.
    { header 3 1
      printf 'base 0 0x0p+0\ntrees 1\ntree 0 class 0 weight 0x1p+0 nodes 3\n'
      printf '0 cat 1 left trunc nan right 1 2 3,8225567\n1 leaf 0x1p+0\n2 leaf 0x1p+1\nend\n'; } > "$T/k.txt"
    qs-compile -o "$T/k.qsm" "$T/k.txt"
    printf '0 1:8225567\n0 1:8225566\n0 1:3\n0 1:8225568\n0 1:8225567.9\n' > "$T/d"
    printf '1\n2\n1\n2\n1\n' > "$T/want"
    score_all "$T/k.qsm" "$T/d" "$T/want"
    sed 's/3,8225567$/3,2147483648/' "$T/k.txt" > "$T/k2.txt"
    run qs-compile -o "$T/k2.qsm" "$T/k2.txt"
    assert_failure 1
    assert_output --partial "category 2147483648 beyond the limit 2147483647"
}

@test "limits: counts of 2^22 trees and 2^20 nodes per tree pass the reader's check, one more is refused" {
    # Whole models that size are not built here (hundreds of MiB of text):
    # the count at the limit must get past its own line (the error comes
    # later, from the missing trees or nodes); one more stops at that line.
    sed 's/^trees 3$/trees 4194304/' "$T/m.txt" > "$T/t.txt"
    run qs-compile -o "$T/t.qsm" "$T/t.txt"
    assert_failure 1
    refute_output --partial "beyond the limit"
    sed 's/^trees 3$/trees 4194305/' "$T/m.txt" > "$T/t.txt"
    run qs-compile -o "$T/t.qsm" "$T/t.txt"
    assert_failure 1
    assert_output --partial ":12: tree count 4194305 is beyond the limit 4194304"
    sed '0,/ nodes 7$/s// nodes 1048576/' "$T/m.txt" > "$T/n.txt"
    run qs-compile -o "$T/n.qsm" "$T/n.txt"
    assert_failure 1
    refute_output --partial "beyond the limit"
    sed '0,/ nodes 7$/s// nodes 1048577/' "$T/m.txt" > "$T/n.txt"
    run qs-compile -o "$T/n.qsm" "$T/n.txt"
    assert_failure 1
    assert_output --partial ":13: node count 1048577 is beyond the limit 1048576"
}

# oblivious_tree DEPTH: one complete oblivious tree, level d testing feature d
# (x <= 0.5 goes left), leaf i (left to right) worth i.
oblivious_tree() {
    awk -v D="$1" 'BEGIN {
        n = 2 ^ (D + 1) - 1; first_leaf = 2 ^ D - 1
        printf "qs-ensemble 1\nsource quickrank\nobjective limits\ncompare le\nprecision float\naccumulate double\nabsent zero\nfeatures %d\nclasses 1\ntransform none 0x1p+0\nbase 0 0x0p+0\ntrees 1\ntree 0 class 0 weight 0x1p+0 nodes %d\n", D, n
        level = 0; next_level = 1
        for (i = 0; i < n; i++) {
            if (i == next_level) { level++; next_level = 2 * next_level + 1 }
            if (i < first_leaf) printf "%d num %d 0x1p-1 nan right %d %d\n", i, level, 2 * i + 1, 2 * i + 2
            else printf "%d leaf %d\n", i, i - first_leaf
        }
        print "end" }'
}

@test "limits: an oblivious tree of depth 16 (QS-Omega) and of depth 17 (plain QS) score exactly" {
    local D
    for D in 16 17; do
        oblivious_tree "$D" > "$T/o.txt"
        qs-compile -o "$T/o.qsm" "$T/o.txt"
        qs-compile --reverse-all --doc-block 5 -o "$T/or.qsm" "$T/o.txt"
        # 100 documents; the leaf reached is the binary number of the
        # features (1 for x > 0.5), most significant first; every seventh
        # document sits on the threshold or just above it.
        awk -v D="$D" -v W="$T/want" 'BEGIN { srand(17 + D); for (k = 0; k < 100; k++) {
                leaf = 0; printf "0"
                for (f = 0; f < D; f++) {
                    b = rand() < 0.5; x = b ? "0.75" : "0.25"
                    if (k % 7 == 0) x = b ? "0.500001" : "0.5"
                    printf " %d:%s", f, x; leaf = 2 * leaf + b }
                printf "\n"; print leaf > W } }' > "$T/d"
        if [ "$D" -le 16 ]; then
            OBLIVIOUS=yes score_all "$T/o.qsm" "$T/d" "$T/want"
        else
            score_all "$T/o.qsm" "$T/d" "$T/want"
        fi
        layout_backends "$T/or.qsm" "$T/d" "$T/want"
        layout_backends "$T/or.qsm" "$T/d" "$T/want" --doc-block 64
    done
}

@test ".qsm versions: a newer minor version is read (same scores), a newer major is refused (exit 3)" {
    [ -x "$UNIT/qsm_setversion" ] || { echo "$UNIT/qsm_setversion not built"; return 1; }
    # Writing back 1.0 must give the very same bytes: the helper's CRC-32C
    # agrees with the writer's.
    cp "$T/m.qsm" "$T/v.qsm"
    "$UNIT/qsm_setversion" "$T/v.qsm" 1 0
    cmp "$T/m.qsm" "$T/v.qsm"
    for minor in 1 65535; do
        "$UNIT/qsm_setversion" "$T/v.qsm" 1 "$minor"
        run cmp -s "$T/m.qsm" "$T/v.qsm"
        assert_failure
        score_all "$T/v.qsm" "$FIX/xgb-tiny/docs.letor" "$FIX/xgb-tiny/expected.txt"
    done
    for major in 2 0; do
        "$UNIT/qsm_setversion" "$T/v.qsm" "$major" 0
        run qs-score -o "$T/out" "$T/v.qsm" "$FIX/xgb-tiny/docs.letor"
        assert_failure 3
        assert_output --partial ".qsm version $major is not supported"
        [ ! -e "$T/out" ]
    done
}
