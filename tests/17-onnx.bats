#!/usr/bin/env bats
# ONNX-ML tree ensembles (TreeEnsembleRegressor / TreeEnsembleClassifier of
# ai.onnx.ml opsets 1 and 3, TreeEnsemble of opset 5): every fixture against
# ONNX Runtime's own output (tests/fixtures/onnx/README.md), every back end,
# a second layout and the threaded paths; the models that must be refused,
# and malformed protobuf.

load test_helper

O="$BATS_TEST_DIRNAME/fixtures/onnx"

onnx_conform() { # onnx_conform NAME [qs-score options]
    conform "$O/$1.onnx" "$O/docs.letor" "$O/$1.pred" "${@:2}"
}

@test "onnx: scikit-learn GradientBoostingRegressor (base value added last, in float32)" {
    onnx_conform sk-gbr
}

@test "onnx: scikit-learn RandomForestRegressor" { onnx_conform sk-rfr; }

@test "onnx: scikit-learn GradientBoostingClassifier, binary: one column, the score s of [1 - s, s]" {
    onnx_conform sk-gbc2
}

@test "onnx: scikit-learn GradientBoostingClassifier, 3 classes (one tree per class and round)" {
    onnx_conform sk-gbc3
}

@test "onnx: scikit-learn RandomForestClassifier, 2 and 3 classes (a weight per class in every leaf)" {
    onnx_conform sk-rfc3
    onnx_conform sk-rfc2
}

@test "onnx: LightGBM through onnxmltools: missing values tracked, categorical BRANCH_EQ chains" {
    onnx_conform lgb-reg
    onnx_conform lgb-cat
    # a chain of BRANCH_EQ on one feature is one set test, not a subtree copied per link
    qs-convert "$O/lgb-cat.onnx" > "$BATS_TEST_TMPDIR/c.txt"
    run grep -c ' leaf ' "$BATS_TEST_TMPDIR/c.txt"
    [ "$output" -lt 400 ] || { echo "lgb-cat unfolds into $output leaves"; return 1; }
}

@test "onnx: XGBoost through onnxmltools: BRANCH_LT, missing values tracked, base value added last" {
    onnx_conform xgb-reg
}

@test "onnx: hand-made opset 3: every comparison mode, missing tracking, a DAG, two targets, base values" {
    onnx_conform h3-modes
    onnx_conform h3-tensor
}

@test "onnx: hand-made opset 5 TreeEnsemble: BRANCH_MEMBER, leaves apart, float and double" {
    onnx_conform h5-member
    onnx_conform h5-double
    run qs-convert "$O/h5-double.onnx"
    assert_success
    assert_line --index 4 "precision double"
    assert_line --index 5 "accumulate double"
}

@test "onnx: post_transform is not claimed exact: raw scores are, --transform is refused" {
    local m
    for m in h3-one sk-gbc2 sk-gbc3; do
        qs-convert "$O/$m.onnx" > "$BATS_TEST_TMPDIR/m.txt"
        run grep '^transform ' "$BATS_TEST_TMPDIR/m.txt"
        assert_output "transform unsupported 0x1p+0"
        qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" "$BATS_TEST_TMPDIR/m.txt"
        run qs-score --transform "$BATS_TEST_TMPDIR/m.qsm" < "$O/docs.letor"
        assert_failure 3
    done
    onnx_conform h3-one
    qs-convert "$O/h3-modes.onnx" > "$BATS_TEST_TMPDIR/m.txt"
    run grep '^transform ' "$BATS_TEST_TMPDIR/m.txt"
    assert_output "transform none 0x1p+0"
}

@test "onnx: detected without --from, text round trip, and --from onnx on other formats" {
    run qs-convert "$O/sk-gbr.onnx"
    assert_success
    assert_line --index 0 "qs-ensemble 2"
    assert_line --index 1 "source onnx"
    assert_line --index 2 "objective TreeEnsembleRegressor"
    printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/a.txt"
    qs-convert "$BATS_TEST_TMPDIR/a.txt" > "$BATS_TEST_TMPDIR/b.txt"
    cmp "$BATS_TEST_TMPDIR/a.txt" "$BATS_TEST_TMPDIR/b.txt"
    run qs-convert --from onnx "$FIX/xgb-tiny/model.json"
    assert_failure 1
    assert_output --partial "not an onnx model"
    # qs-compile takes the ONNX model directly too
    qs-compile -o "$BATS_TEST_TMPDIR/d.qsm" "$O/sk-gbr.onnx"
    qs-score "$BATS_TEST_TMPDIR/d.qsm" < "$O/docs.letor" > "$BATS_TEST_TMPDIR/got"
    compare_scores "$BATS_TEST_TMPDIR/got" "$O/sk-gbr.pred"
}

@test "onnx: malformed ensembles are refused with exit 1 and a message" {
    local pair
    for pair in "bad-cycle:has a cycle" "bad-cycle5:has a cycle" "bad-child:is not a node of the tree" \
        "bad-leafweight:has no weight" "bad-arrays:the node arrays differ in length" \
        "bad-member:BRANCH_MEMBER with an empty set" \
        "bad-double-tensor:double tensor for a float input" \
        "bad-unfold:unfolds into more than"; do
        run qs-convert "$O/${pair%%:*}.onnx"
        assert_failure 1
        assert_output --partial "${pair#*:}"
    done
}

@test "onnx: TreeEnsembleRegressor of opsets 1 and 3 with a double input: float32(double sum + base), as ONNX Runtime" {
    local D="$BATS_TEST_DIRNAME/fixtures/onnx-double" i
    for i in 000 001 002 003 004 005 006 007 008 009 010 011; do
        conform "$D/dbl$i.onnx" "$D/docs.letor" "$D/dbl$i.pred"
    done
    run qs-convert "$D/dbl003.onnx"
    assert_success
    assert_line "precision double"
    assert_line "accumulate double"
    assert_line --regexp "^out-scale 0x1p\+0 float$"
    # the old refusal's fixture: read now (0.5 goes left to leaf 1, 0.6 to 2)
    qs-convert "$O/unsup-double-in.onnx" > "$BATS_TEST_TMPDIR/d.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/d.qsm" "$BATS_TEST_TMPDIR/d.txt"
    run qs-score "$BATS_TEST_TMPDIR/d.qsm" <<< $'0 0:0.5\n0 0:0.5000000000000001\n0 0:nan'
    assert_output $'1\n2\n2'
    # the canonical text's rule: 'float' ends the out-scale line, with accumulate double only
    qs-convert "$D/dbl003.onnx" > "$BATS_TEST_TMPDIR/t.txt"
    qs-convert "$BATS_TEST_TMPDIR/t.txt" | cmp - "$BATS_TEST_TMPDIR/t.txt"
    sed 's/^out-scale 0x1p+0 float$/out-scale 0x1p+0/' "$BATS_TEST_TMPDIR/t.txt" > "$BATS_TEST_TMPDIR/nf.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/nf.qsm" "$BATS_TEST_TMPDIR/nf.txt"
    run bash -c "qs-score '$BATS_TEST_TMPDIR/nf.qsm' '$D/docs.letor' | cmp -s - '$D/dbl003.pred'"
    assert_failure   # the rounding is what makes these scores ONNX Runtime's
    for bad in 'out-scale 0x1p+0 floats' 'out-scale 0x1p+0 float float' 'out-scale 0x1p+0 float divide 2'; do
        sed "s/^out-scale 0x1p+0 float$/$bad/" "$BATS_TEST_TMPDIR/t.txt" > "$BATS_TEST_TMPDIR/b.txt"
        run qs-convert "$BATS_TEST_TMPDIR/b.txt"
        assert_failure 1
        assert_output --partial "'out-scale' takes 1 field, then optionally 'divide N', then optionally 'float'"
    done
    sed 's/^accumulate double$/accumulate float/; s/^precision double$/precision float/' \
        "$BATS_TEST_TMPDIR/t.txt" > "$BATS_TEST_TMPDIR/b.txt"
    run qs-convert "$BATS_TEST_TMPDIR/b.txt"
    assert_failure 1
    assert_output --partial "an output rounded to float32 needs the output affine and accumulate double"
    # still refused: the classifier and AVERAGE with a double input
    run qs-convert "$D/unsup-classifier.onnx"
    assert_failure 3
    assert_output --partial "TreeEnsembleClassifier with a double input: not supported"
    run qs-convert "$D/unsup-average.onnx"
    assert_failure 3
    assert_output --partial "aggregate_function AVERAGE with a double input is not supported"
}

@test "onnx: models that cannot be scored exactly are refused with exit 3" {
    local pair
    for pair in "unsup-notree:no ai.onnx.ml tree ensemble" "unsup-two:2 tree ensembles" \
        "unsup-partial-base:only some leaves add to it"; do
        run qs-convert "$O/${pair%%:*}.onnx"
        assert_failure 3
        assert_output --partial "${pair#*:}"
    done
}

@test "onnx: truncated and corrupt protobuf is refused cleanly, no output file" {
    local n T="$BATS_TEST_TMPDIR"
    for n in 3 40 300 2000 9000 17000; do
        head -c $n "$O/sk-gbr.onnx" > "$T/t.onnx"
        run qs-convert --from onnx -o "$T/out.txt" "$T/t.onnx"
        assert_failure 1
        assert_output --partial "malformed or truncated"
        [ ! -e "$T/out.txt" ]
    done
    # a length field claiming 2^62 bytes
    printf '\010\010\072\200\200\200\200\200\200\200\200\100' > "$T/huge.onnx"
    run qs-convert "$T/huge.onnx"
    assert_failure 1
    assert_output --partial "malformed or truncated"
}

@test "onnx: a huge graph of empty nodes is refused in bounded memory (the parse budget)" {
    local T="$BATS_TEST_TMPDIR"
    # ir_version, then a graph holding 400,000 empty NodeProtos (2 bytes each)
    {
        printf '\010\010\072\200\352\060\n'
        yes | head -n 400000 | tr y '\0' | head -c 799999
    } > "$T/nodes.onnx"
    [ "$(wc -c < "$T/nodes.onnx")" = 800006 ]
    # (each empty node costs a message struct: 400,000 of them are more than
    # the budget; until each allocation was charged its overhead too, they
    # were parsed, and the graph refused for holding no tree ensemble)
    run /usr/bin/time -f %M -o "$T/rss" qs-convert "$T/nodes.onnx"
    assert_failure 1
    assert_output --partial "onnx: parsing the protobuf needs more than"
    [ "$(tail -n 1 "$T/rss")" -lt $((262144 + $(san_rss qs-convert))) ]
}

@test "onnx: a node of a million empty attributes is refused at the parse budget (16x the file + 16 MiB, each allocation charged what it costs), not after 100x the file; out of memory is exit 4" {
    local T="$BATS_TEST_TMPDIR"
    # ModelProto.graph { node { op_type, domain, 1,000,000 x attribute {} } }:
    # 2 MB of file, a message struct each in memory
    python3 - "$T/attrs.onnx" <<'PY'
import sys
def v(n):
    b = bytearray()
    while True:
        x, n = n & 0x7f, n >> 7
        b.append(x | (0x80 if n else 0))
        if not n:
            return bytes(b)
f = lambda k, p: v(k << 3 | 2) + v(len(p)) + p
node = f(4, b"TreeEnsembleRegressor") + f(7, b"ai.onnx.ml") + f(5, b"") * 1000000
open(sys.argv[1], "wb").write(f(7, f(1, node)))
PY
    run /usr/bin/time -f %M -o "$T/rss" qs-convert --from onnx -o "$T/out" "$T/attrs.onnx"
    assert_failure 1
    assert_output --regexp "onnx: parsing the protobuf needs more than [0-9]+ bytes of memory \(the limit: 16 times the file's size, plus 16 MiB\)"
    [ ! -e "$T/out" ]
    echo "peak RSS $(tail -n 1 "$T/rss") KiB for a $(wc -c < "$T/attrs.onnx")-byte file"
    [ "$(tail -n 1 "$T/rss")" -lt $((81920 + $(san_rss qs-convert))) ]
    # out of memory while parsing: exit 4, said so (not "malformed")
    if ldd "$(command -v qs-convert)" | grep -q libasan; then return 0; fi
    run bash -c "ulimit -v 40000; qs-convert --from onnx '$T/attrs.onnx'"
    assert_failure 4
    assert_output --partial "out of memory parsing the onnx protobuf"
}

# Random TreeEnsembleRegressor models with aggregate_function AVERAGE
# (tests/fixtures/onnx-average/make.py): ONNX Runtime 1.32 divides each sum
# by the tree count in float32, then adds the base value.
A="$BATS_TEST_DIRNAME/fixtures/onnx-average"

@test "onnx: AVERAGE, 12 random models against ONNX Runtime (sum / (float)trees + base, float32)" {
    local i
    for i in $(seq -f %03g 0 11); do
        conform "$A/avg$i.onnx" "$A/docs.letor" "$A/avg$i.pred" || { echo "(avg$i)"; return 1; }
    done
    # the divisor is in the canonical text and in the .qsm (AFFN)
    qs-convert "$A/avg001.onnx" | grep -q '^out-scale 0x1p+0 divide [0-9]*$'
    # one tree: nothing to divide (the old unsup-average fixture)
    run qs-convert "$O/unsup-average.onnx"
    assert_success
}

# cut_text TEXT N D OUT: canonical text TEXT cut to its first N trees, its
# divisor D (no divide below 2): the model cut as ONNX Runtime would read it
cut_text() {
    awk -v n="$2" -v d="$3" '
        /^out-scale / { print "out-scale " $2 (d > 1 ? " divide " d : ""); next }
        /^trees / { print "trees " n; next }
        /^tree / { skip = $2 >= n }
        /^end$/ { skip = 0 }
        !skip' "$1" > "$4"
}

# biased_multi ONNX: a regressor of several targets with a base value
biased_multi() {
    qs-convert "$1" | awk '/^classes / { k = $2 } /^out-bias / && $3 != "0x0p+0" { b = 1 }
                           END { exit !(k > 1 && b) }'
}

# trees_or_refused ONNX PRED N: qs-score --trees N is ONNX Runtime's output
# of the first N trees, or, for a regressor of several targets with base
# values (whose first trees' output qs cannot know exactly), refused (exit 3)
trees_or_refused() {
    if biased_multi "$1"; then
        run qs-score --trees "$3" "$(compiled "$1")" "$A/docs.letor"
        [ "$status" = 3 ] || { echo "$1 --trees $3: exit $status"; return 1; }
        [[ "$output" == *"an ONNX regressor of "*" targets with base values: ONNX Runtime adds target "* ]] ||
            { echo "$output"; return 1; }
        return 0
    fi
    conform "$1" "$A/docs.letor" "$2" --trees "$3"
}

# compiled ONNX: its .qsm (made once)
compiled() {
    local q="$BATS_TEST_TMPDIR/$(basename "$1").qsm"
    [ -f "$q" ] || qs-convert "$1" | qs-compile -o "$q" -
    printf '%s\n' "$q"
}

@test "onnx: AVERAGE, --trees N is ONNX Runtime's own output of the first N trees (the average of those)" {
    local i n f q t="$BATS_TEST_TMPDIR"
    # ONNX Runtime on the 12 models cut to 1 and to half their trees
    # (fixtures/onnx-average/make_trees.py), every back end, both layouts
    for f in "$A"/avg0*.t*.pred; do
        i=${f%.t*.pred}
        n=${f%.pred}
        n=${n##*.t}
        trees_or_refused "$i.onnx" "$f" "$n" || { echo "($f)"; return 1; }
    done
    # every cut of every model against the model cut in its canonical text,
    # divided by the trees kept (a multi-target regressor's ONNX tree is one
    # tree per target: its trees kept over the targets)
    for i in $(seq -f %03g 0 11); do
        qs-convert "$A/avg$i.onnx" > "$t/m.txt"
        qs-compile -o "$t/m.qsm" "$t/m.txt"
        local K T D
        K=$(sed -n 's/^classes //p' "$t/m.txt")
        T=$(sed -n 's/^trees //p' "$t/m.txt")
        D=$(sed -n 's/^out-scale .* divide //p' "$t/m.txt")
        [ -n "$D" ] || continue   # one tree: nothing to cut
        ! biased_multi "$A/avg$i.onnx" || continue
        [ "$T" = $((D * K)) ] || { echo "avg$i: $T trees, $D ONNX trees, $K targets"; return 1; }
        local cuts
        cuts=$(seq 1 $((D - 1)))
        # the sanitizer pass: the first and the last cut (the same code
        # for the others)
        [ -z "${SANITIZE:-}" ] || cuts=$(printf '%s\n' $cuts | sed -n '1p;$p' | sort -un)
        for n in $cuts; do
            cut_text "$t/m.txt" $((n * K)) "$n" "$t/cut.txt"
            qs-compile -o "$t/cut.qsm" "$t/cut.txt"
            qs-score "$t/cut.qsm" "$A/docs.letor" > "$t/want"
            qs-score --trees "$n" "$t/m.qsm" "$A/docs.letor" > "$t/got"
            compare_scores "$t/got" "$t/want" || { echo "(avg$i --trees $n)"; return 1; }
        done
    done
}

@test "onnx: AVERAGE over trees that write to different targets (one, every one, by turns): each unfolded into a tree per target, whole and cut, as ONNX Runtime" {
    local k f n
    for k in 0 1 2; do
        conform "$A/uneven$k.onnx" "$A/docs.letor" "$A/uneven$k.pred" || { echo "(uneven$k)"; return 1; }
        for f in "$A"/uneven$k.t*.pred; do
            n=${f%.pred}
            n=${n##*.t}
            trees_or_refused "$A/uneven$k.onnx" "$f" "$n" || { echo "($f)"; return 1; }
        done
        # six ONNX trees, each a tree per target
        qs-convert "$A/uneven$k.onnx" > "$BATS_TEST_TMPDIR/u.txt"
        grep -q "^trees $((6 * $(sed -n 's/^classes //p' "$BATS_TEST_TMPDIR/u.txt")))$" "$BATS_TEST_TMPDIR/u.txt"
        grep -q "^out-scale 0x1p+0 divide 6$" "$BATS_TEST_TMPDIR/u.txt"
    done
    # a .qsm whose trees do not unfold evenly (an older reader's, or written
    # by hand) is refused for --trees, never averaged wrongly
    qs-convert "$A/uneven2.onnx" > "$BATS_TEST_TMPDIR/u.txt"
    awk '/^trees / { print "trees 11"; next } /^tree 11 / { skip = 1 } /^end$/ { skip = 0 } !skip' \
        "$BATS_TEST_TMPDIR/u.txt" > "$BATS_TEST_TMPDIR/odd.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/odd.qsm" "$BATS_TEST_TMPDIR/odd.txt"
    run qs-score --trees 2 "$BATS_TEST_TMPDIR/odd.qsm" "$A/docs.letor"
    assert_failure 3
    assert_output --partial "averaged over 6 ONNX trees, which unfold unevenly into these 11 trees"
}

@test "canonical text: 'divide N' on the out-scale line, 2 or more, with the affine only" {
    local A1="$BATS_TEST_DIRNAME/fixtures/onnx-average/avg001.onnx" t="$BATS_TEST_TMPDIR"
    qs-convert "$A1" > "$t/m.txt"
    sed 's/^\(out-scale 0x1p+0\) divide [0-9]*$/\1 divide 1/' "$t/m.txt" > "$t/bad.txt"
    run qs-compile -o "$t/bad.qsm" "$t/bad.txt"
    assert_failure 1
    assert_output --partial "'divide' takes a count of 2 or more"
    qs-compile -o "$t/m.qsm" "$t/m.txt"
    qs-compile --info "$t/m.qsm" > /dev/null
}
