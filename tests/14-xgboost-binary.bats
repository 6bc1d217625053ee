#!/usr/bin/env bats
# XGBoost's binary model format (what XGBoost 1.0 to 1.7 write by default:
# save_model("m.model")), read by qs-convert without --from: every model of
# tests/fixtures/xgboost-binary against XGBoost 1.7.6's predictions of the
# file (edge documents included), on every back end, a second layout and
# the threaded paths; boosted random forests' --trees against XGBoost's
# iteration_range; the same models as JSON give the same text; what is
# refused, and truncated or damaged files.

load test_helper

B="$BATS_TEST_DIRNAME/fixtures/xgboost-binary"

model() { # model NAME: the fixture's path (.model, or .model.zst)
    if [ -f "$B/$1.model" ]; then echo "$B/$1.model"; else echo "$B/$1.model.zst"; fi
}

bin_conform() { # bin_conform NAME [qs-score options]
    conform "$(model "$1")" "$B/docs.letor" "$B/$1.raw.txt" "${@:2}"
}

@test "xgboost binary: regression, logistic, poisson, pairwise (the objectives' base_score links)" {
    bin_conform reg
    bin_conform logistic
    bin_conform poisson
    bin_conform pairwise
}

@test "xgboost binary: multi:softprob, 3 classes" { bin_conform softprob; }

@test "xgboost binary: pruned trees (deleted nodes left in the arrays)" {
    bin_conform pruned
}

@test "xgboost binary: dart (weight_drop), one and three classes" {
    bin_conform dart
    bin_conform dart-softprob
}

@test "xgboost binary: boosted random forests (num_parallel_tree 5, 4 x 3 classes, 3)" {
    bin_conform forest
    bin_conform forest-softprob
    bin_conform forest-logistic
}

@test "xgboost binary: models of XGBoost 1.0.2 (no 'binf'), as XGBoost 1.7.6 reads them" {
    local n
    for n in reg logistic softprob dart forest; do
        bin_conform "$n-1.0"
    done
    run qs-compile --info "$(model reg-1.0)"
    assert_success
    assert_line "source: xgboost, version 1.0"
}

@test "xgboost binary: detected without --from; --from xgboost reads it too; the JSON twin gives the same text" {
    local n
    qs-convert "$(model reg)" > "$BATS_TEST_TMPDIR/a.txt"
    qs-convert --from xgboost "$(model reg)" | cmp - "$BATS_TEST_TMPDIR/a.txt"
    zstd -q -d -c "$(model reg)" | qs-convert - | cmp - "$BATS_TEST_TMPDIR/a.txt"
    for n in forest forest-softprob forest-logistic; do
        qs-convert "$B/$n.json.zst" > "$BATS_TEST_TMPDIR/j.txt"
        qs-convert "$(model $n)" | cmp - "$BATS_TEST_TMPDIR/j.txt"
    done
    run qs-compile --info "$(model softprob)"
    assert_success
    assert_line "source: xgboost, version 1.7"
    assert_line --partial "file: $(model softprob): an XGBoost model"
}

@test "xgboost binary: --trees N is N iterations of a boosted random forest (iteration_range), binary and JSON" {
    local n it q
    for n in forest:1 forest:7 forest:10 forest-softprob:1 forest-softprob:2 forest-softprob:5 \
             forest-logistic:2 reg:3 softprob:4 dart:5 dart-softprob:3; do
        it=${n#*:}
        n=${n%:*}
        conform "$(model "$n")" "$B/docs.letor" "$B/$n.iter$it.txt" --trees "$it"
    done
    for n in forest forest-softprob; do
        qs-convert "$B/$n.json.zst" > "$BATS_TEST_TMPDIR/$n.txt"
        qs-compile -o "$BATS_TEST_TMPDIR/$n.qsm" "$BATS_TEST_TMPDIR/$n.txt"
        score_all "$BATS_TEST_TMPDIR/$n.qsm" "$B/docs.letor" "$B/$n.iter1.txt" --trees 1
    done
    # the canonical text and the .qsm record the trees of an iteration
    run grep '^trees' "$BATS_TEST_TMPDIR/forest-softprob.txt"
    assert_output "trees 72 per-iteration 12"
    # qs-compile --info says what --trees counts
    run qs-compile --info "$(model forest-softprob)"
    assert_line "iterations: 6 of 12 trees each (--trees N keeps N of them)"
    run qs-compile --info "$(model softprob)"
    refute_line --partial "iterations:"
    [ "$(qs-compile --info --json "$(model forest)" | jq .iterations)" = 10 ]
    # --leaves counts the same way
    q="$BATS_TEST_TMPDIR/forest.qsm"
    run qs-score --leaves --trees 7 "$q" "$B/docs.letor"
    assert_success
    [ "$(head -n 1 <<< "$output" | awk -F'\t' '{print NF}')" = 35 ]
}

@test "xgboost binary: refused with exit 3 naming what: version 0, version 2, gblinear, base64" {
    run qs-convert "$B/refuse-v0.model"
    assert_failure 3
    assert_output --partial "xgboost binary model of version 0 (written by XGBoost before 1.0"
    run qs-convert "$B/refuse-v2.model"
    assert_failure 3
    assert_output --partial "xgboost binary model of version 2.0: not supported (qs reads the binary format of XGBoost 1.0 to 1.7)"
    run qs-convert "$B/seed-linear.model"
    assert_failure 3
    assert_output --partial "gblinear models are linear models, not tree ensembles"
    # the base64 form of XGBoost before 1.0, detected and named
    printf 'bs64%s' "$(head -c 300 "$B/seed-reg.model" | base64 -w0)" > "$BATS_TEST_TMPDIR/b.model"
    run qs-convert "$BATS_TEST_TMPDIR/b.model"
    assert_failure 3
    assert_output --partial 'xgboost model in the base64 form ("bs64", written by XGBoost before 1.0'
}

@test "xgboost binary: truncated, padded or damaged files are format errors (exit 1), never a crash" {
    local f="$B/seed-softprob.model" n len
    len=$(wc -c < "$f")
    for n in 4 20 140 150 170 200 340 400 $((len - 4)) $((len - 1)); do
        head -c "$n" "$f" > "$BATS_TEST_TMPDIR/t.model"
        run qs-convert --from xgboost "$BATS_TEST_TMPDIR/t.model"
        assert_failure 1
        [ -z "$(grep -i 'sanitizer\|core dumped' <<< "$output")" ]
    done
    run qs-convert "$BATS_TEST_TMPDIR/t.model"
    assert_failure 1
    assert_output --partial "xgboost binary model: an attribute's value (byte"
    head -c 1000 "$f" > "$BATS_TEST_TMPDIR/t.model"
    run qs-convert "$BATS_TEST_TMPDIR/t.model"
    assert_failure 1
    assert_output --regexp "xgboost binary model: truncated in tree [0-9]+ \\(byte"
    { cat "$f"; printf 'x'; } > "$BATS_TEST_TMPDIR/p.model"
    run qs-convert "$BATS_TEST_TMPDIR/p.model"
    assert_failure 1
    assert_output --partial "1 bytes after the model"
    # a tree of 2^31 - 1 nodes in a small file: refused before any allocation
    python3 - "$f" "$BATS_TEST_TMPDIR/big.model" << 'PY'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
p = 4 + 136
for _ in range(2):
    n = struct.unpack_from('<Q', b, p)[0]
    p += 8 + n
p += 160                              # the booster's parameters; tree 0's next
struct.pack_into('<i', b, p + 4, 2**31 - 1)
open(sys.argv[2], 'wb').write(b)
PY
    run qs-convert "$BATS_TEST_TMPDIR/big.model"
    assert_failure
    assert_output --partial "nodes (limit"
}
