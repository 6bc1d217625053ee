#!/usr/bin/env bats
# LightGBM linear trees (linear_tree=true, is_linear=1): small models made
# with LightGBM itself (tests/fixtures/linear/README.md) scored by every back
# end, SIMD level and layout against LightGBM's own raw scores; the canonical
# text (version 3) and .qsm (version 1.3, section LINR); malformed linear
# fields refused.  The shared model lineartree_l15_t20 is in
# 20-conformance.bats.

load test_helper

L="$BATS_TEST_DIRNAME/fixtures/linear"

# Every back end, the alternative layouts and threads; then, where this CPU
# has AVX-512, the layout back ends again with AVX-512 disabled (vqs = AVX2).
linear_conform() {
    local name="$1"; shift
    conform "$L/$name.txt.zst" "$L/$name.docs.letor" "$L/$name.pred.txt" "$@" || return 1
    case ",$(qs-score --version -v | sed -n 's/^cpu: \([a-z0-9,]*\).*/\1/p')," in
        *,avx512,*)
            local qsm
            qsm="$BATS_FILE_TMPDIR/$(printf '%s' "$L/$name.txt.zst" | cksum | cut -d' ' -f1).qsm"
            QS_DISABLE_CPU_FEATURES=avx512 QS_TEST_LAYOUT_ONLY=1 \
                layout_backends "$qsm" "$L/$name.docs.letor" "$L/$name.pred.txt" "$@" ||
                { echo "(with AVX-512 disabled)"; return 1; }
            ;;
    esac
}

@test "linear trees: regression, 12 trees of 7 leaves, absent features = 0.0" {
    linear_conform regression
}

@test "linear trees: NaN inputs fall back to the plain leaf value" {
    linear_conform nan
}

@test "linear trees: binary objective (raw scores)" {
    linear_conform binary
}

@test "linear trees: stumps (oblivious: QS-Omega blocks and the oblivious back end)" {
    OBLIVIOUS=yes linear_conform stumps
}

@test "linear trees: the NaN rule matters in the fixture (a leaf's linear value differs)" {
    # Scored as if the leaves were plain, the nan fixture's scores differ:
    # the oracle really tests the linear part.
    zstd -q -d -c "$L/nan.txt.zst" | sed 's/^is_linear=1/is_linear=0/' > "$BATS_TEST_TMPDIR/plain.txt"
    qs-convert "$BATS_TEST_TMPDIR/plain.txt" | qs-compile -o "$BATS_TEST_TMPDIR/plain.qsm" -
    qs-score "$BATS_TEST_TMPDIR/plain.qsm" "$L/nan.docs.letor" > "$BATS_TEST_TMPDIR/plain.out"
    ! cmp -s "$BATS_TEST_TMPDIR/plain.out" "$L/nan.pred.txt"
}

@test "linear trees: canonical text version 3 round-trips, .qsm minor version 3 with LINR first" {
    local t="$BATS_TEST_TMPDIR"
    qs-convert "$L/regression.txt.zst" > "$t/a.txt"
    run head -n 1 "$t/a.txt"
    assert_output "qs-ensemble 3"
    grep -q '^[0-9]* linear ' "$t/a.txt"
    grep -q '^term [0-9]* ' "$t/a.txt"
    qs-convert "$t/a.txt" > "$t/b.txt"
    cmp "$t/a.txt" "$t/b.txt"
    qs-compile -o "$t/a.qsm" "$t/a.txt"
    # minor version (offset 10) 3; section 0's id (offset 64) LINR
    run od -An -tu2 -j10 -N2 "$t/a.qsm"
    assert_equal "$(echo $output)" 3
    run od -An -c -j64 -N4 "$t/a.qsm"
    assert_equal "$(echo $output | tr -d ' ')" LINR
    # a model without linear leaves keeps its version 1 text
    qs-convert "$FIX/lightgbm/mixed.model.txt" | head -n 1 | grep -qx 'qs-ensemble 1'
}

# lgb_edit AWK: the regression fixture edited by an awk program (which
# prints every line), converted; sets $output and $status.
lgb_edit() {
    zstd -q -d -c "$L/regression.txt.zst" | awk "$1" > "$BATS_TEST_TMPDIR/bad.txt"
    run qs-convert "$BATS_TEST_TMPDIR/bad.txt"
}

@test "linear trees: malformed linear fields are refused with the line" {
    lgb_edit '/^leaf_const=/ && !d { d = 1; next } { print }'
    assert_failure 1
    assert_output --partial "tree 0: missing field leaf_const"
    lgb_edit '/^num_features=/ && !d { d = 1; sub(/=[0-9]+ /, "=") } { print }'
    assert_failure 1
    assert_output --regexp ":[0-9]+: tree 0: num_features has 6 values, expected 7"
    lgb_edit '/^num_features=/ && !d { d = 1; sub(/=[0-9]+ /, "=9 ") } { print }'
    assert_failure 1
    assert_output --partial "leaf_features has"
    lgb_edit '/^leaf_features=[0-9]/ && !d { d = 1; sub(/=[0-9]+/, "=8") } { print }'
    assert_failure 1
    assert_output --regexp "leaf_features\[0\] = \"8\" is out of range \(the model has 8 features\)"
    lgb_edit '/^leaf_coeff=[-0-9]/ && !d { d = 1; sub(/=[^ ]+/, "=abc") } { print }'
    assert_failure 1
    assert_output --partial 'leaf_coeff[0] = "abc" is not a number'
    lgb_edit '/^leaf_coeff=[-0-9]/ && !d { d = 1; sub(/=[^ ]+ /, "=") } { print }'
    assert_failure 1
    assert_output --partial "leaf_coeff has"
    lgb_edit '/^num_features=/ && !d { d = 1; sub(/=[0-9]+ /, "=-1 ") } { print }'
    assert_failure 1
    assert_output --partial 'num_features[0] = "-1" is out of range'
    lgb_edit '/^leaf_const=/ && !d { d = 1; sub(/=[^ ]+ /, "=x ") } { print }'
    assert_failure 1
    assert_output --partial 'leaf_const[0] = "x" is not a number'
}

@test "linear trees: malformed canonical text is refused" {
    local t="$BATS_TEST_TMPDIR"
    qs-convert "$L/stumps.txt.zst" > "$t/a.txt"
    # linear lines need version 3
    sed '1s/3/1/' "$t/a.txt" > "$t/v1.txt"
    run qs-convert "$t/v1.txt"
    assert_failure 1
    assert_output --partial "node kind (expected leaf, num or cat)"
    # a term line missing
    awk '/^term / && !done { done = 1; next } { print }' "$t/a.txt" > "$t/short.txt"
    run qs-convert "$t/short.txt"
    assert_failure 1
    assert_output --partial "expected 'term FEATURE COEFFICIENT'"
    # a feature beyond the model's
    awk '/^term / && !done { done = 1; $2 = 99 } { print }' "$t/a.txt" > "$t/feat.txt"
    run qs-convert "$t/feat.txt"
    assert_failure 1
    assert_output --partial "linear leaf uses feature 99, out of range"
    # linear leaves need accumulate double, and weight 1
    sed 's/^accumulate double/accumulate float-double/' "$t/a.txt" > "$t/acc.txt"
    run qs-convert "$t/acc.txt"
    assert_failure 1
    assert_output --partial "linear leaves need accumulate double"
    awk '/^tree 0 / { $6 = "0x1p-1" } { print }' "$t/a.txt" > "$t/w.txt"
    run qs-convert "$t/w.txt"
    assert_failure 1
    assert_output --partial "must have weight 1"
}

@test "linear leaves in the library: the rule's arithmetic (no fused multiply-add), NaN, leaves, truncation, damaged .qsm records" {
    run "$UNIT/test_linear"
    assert_success
    assert_output --regexp '^test_linear: [0-9]+ checks, 0 failures$'
}
