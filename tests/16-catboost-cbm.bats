#!/usr/bin/env bats
# CatBoost's binary models (.cbm, save_model's default): CatBoost 1.2.10's
# own predictions of each model loaded back from its .cbm
# (tests/fixtures/catboost-cbm, made by its make.py), edge documents
# included, on every back end; the models that must be refused (exit 3) and
# malformed ones (exit 1), written by tests/tools/cbm_forge.py.

load test_helper

# CatBoost prints its predictions with Python's formatting: compare values.
SCORE_COMPARE=values

M="$BATS_TEST_DIRNAME/fixtures/catboost-cbm"
FORGE="$BATS_TEST_DIRNAME/tools/cbm_forge.py"

# cbm NAME [DOCS]: the model raw against NAME.raw.txt, then with its own
# prediction type against NAME.out.txt where there is one: every back end,
# a second layout, the threaded paths (conform).
cbm() {
    local docs="${2:-$M/docs.letor.zst}"
    conform "$M/$1.cbm.zst" "$docs" "$(plain "$M/$1.raw.txt.zst")" || return 1
    if [ -f "$M/$1.out.txt.zst" ]; then
        conform "$M/$1.cbm.zst" "$docs" "$(plain "$M/$1.out.txt.zst")" --transform || return 1
    fi
}

# forge NAME SPEC: write $BATS_TEST_TMPDIR/NAME.cbm from the JSON SPEC.
forge() {
    printf '%s\n' "$2" > "$BATS_TEST_TMPDIR/$1.json"
    python3 "$FORGE" "$BATS_TEST_TMPDIR/$1.json" "$BATS_TEST_TMPDIR/$1.cbm"
}

# A small valid model: two float features, an oblivious tree of depth 2.
OK='"float": [{"flat": 0, "borders": [0.5, 1.5], "has_nans": true, "nan": 2}, {"flat": 2, "borders": [-1.0]}], "splits": [0, 2], "sizes": [2], "leaves": [1, 2, 3, 4]'

@test "cbm: oblivious RMSE, 1,024 borders a feature (past 254 a bucket), NaN as Min, every back end" {
    cbm rmse
}

@test "cbm: oblivious Logloss, NaN as Max: raw and Probability" {
    cbm logloss
}

@test "cbm: oblivious depth 10 (1,024 leaves)" {
    cbm deep
}

@test "cbm: non-symmetric trees, Depthwise with NaN as Min" {
    cbm depthwise
}

@test "cbm: non-symmetric trees, Lossguide Poisson with NaN as Max: raw and Exponent (CatBoost's exp)" {
    cbm lossguide
}

@test "cbm: MultiClass, 3 classes: raw and Probability (CatBoost's softmax)" {
    cbm multiclass
}

@test "cbm: non-symmetric MultiClass (Depthwise), 4 classes" {
    cbm multidepth
}

@test "cbm: MultiRMSE, 2 outputs, scale and one bias per output (MultiBias)" {
    cbm multirmse
    qs-convert "$M/multirmse.cbm.zst" > "$BATS_TEST_TMPDIR/m.txt"
    run grep -E '^out-(scale|bias)' "$BATS_TEST_TMPDIR/m.txt"
    assert_output "out-scale 0x1p-1
out-bias 0 0x1.8p+0
out-bias 1 -0x1.2p+1"
}

@test "cbm: scale and bias set on a Logloss model (set_scale_and_bias): raw and Probability" {
    cbm scaled
}

@test "cbm: a categorical feature no tree uses is passed over (its column stays)" {
    cbm catunused "$M/catunused.docs.letor.zst"
    run qs-convert "$M/catunused.cbm.zst"
    assert_success
}

@test "cbm: the edge documents are in the fixture (thresholds and a step either side, ±0, denormals, ±inf, NaN)" {
    local d
    d=$(plain "$M/docs.letor.zst")
    [ "$(wc -l < "$d")" -ge 400 ]
    grep -q ':nan' "$d"
    grep -q ':inf' "$d"
    grep -q ':-inf' "$d"
    grep -q ':-0.0' "$d"
    grep -q ':1e-45' "$d"
    # the models' borders, exactly and one float step either side
    for m in rmse logloss deep depthwise lossguide multiclass multidepth multirmse; do
        qs-convert "$M/$m.cbm.zst" | awk '$2 == "num" { print $4 }'
    done | sort -u > "$BATS_TEST_TMPDIR/t"
    python3 - "$BATS_TEST_TMPDIR/t" "$d" << 'PY'
import struct, sys
vals = set()
for line in open(sys.argv[2]):
    for tok in line.split()[1:]:
        vals.add(struct.unpack('<f', struct.pack('<f', float(tok.split(':')[1])))[0])
def step(t, d):
    f = struct.unpack('<i', struct.pack('<f', t))[0]
    return struct.unpack('<f', struct.pack('<i', f + (d if t > 0 else -d)))[0]
n = 0
for line in open(sys.argv[1]):
    t = float.fromhex(line)
    n += t in vals and step(t, 1) in vals and step(t, -1) in vals
assert n >= 40, n
PY
}

@test "cbm: detected without --from; --from catboost-cbm and cbm; --info names it and CatBoost's version" {
    qs-convert "$M/rmse.cbm.zst" > "$BATS_TEST_TMPDIR/a.txt"
    qs-convert --from catboost-cbm "$M/rmse.cbm.zst" > "$BATS_TEST_TMPDIR/b.txt"
    qs-convert --from cbm "$M/rmse.cbm.zst" > "$BATS_TEST_TMPDIR/c.txt"
    cmp "$BATS_TEST_TMPDIR/a.txt" "$BATS_TEST_TMPDIR/b.txt"
    cmp "$BATS_TEST_TMPDIR/a.txt" "$BATS_TEST_TMPDIR/c.txt"
    grep -qx 'source catboost' "$BATS_TEST_TMPDIR/a.txt"
    run qs-compile --info "$M/rmse.cbm.zst"
    assert_success
    assert_line --partial "a CatBoost .cbm model"
    assert_line "source: catboost, version 1.2.10"
    assert_line "objective: RMSE"
    run qs-convert --help
    assert_output --partial "catboost-cbm"
    # a .cbm read as CatBoost JSON, and JSON read as .cbm: errors that say so
    run qs-convert --from catboost "$M/rmse.cbm.zst"
    assert_failure 1
    run qs-convert --from cbm "$BATS_TEST_DIRNAME/fixtures/catboost/tiny.json"
    assert_failure 1
    assert_output --partial 'not a catboost .cbm model: it should start with "CBM1"'
}

@test "cbm: the transforms follow the loss function (Poisson fmath-exp, MultiClass fmath-softmax, Logloss sigmoid, RMSE none)" {
    for m in lossguide:fmath-exp multiclass:fmath-softmax logloss:sigmoid rmse:none multirmse:unsupported; do
        qs-convert "$M/${m%%:*}.cbm.zst" | grep -qx "transform ${m#*:} 0x1p+0" || { echo "$m"; return 1; }
    done
}

@test "cbm: a .cbm scores the same as CatBoost's JSON of the same model read by the JSON reader" {
    # the forged model and its JSON twin, written by hand
    forge a "{$OK, \"scale\": 2.0, \"bias\": 0.5}"
    cat > "$BATS_TEST_TMPDIR/a.json" << 'J'
{"features_info": {"float_features": [
  {"feature_index": 0, "flat_feature_index": 0, "borders": [0.5, 1.5], "has_nans": true, "nan_value_treatment": "AsTrue"},
  {"feature_index": 1, "flat_feature_index": 2, "borders": [-1], "has_nans": false, "nan_value_treatment": "AsIs"}]},
 "oblivious_trees": [{"leaf_values": [1, 2, 3, 4], "splits": [
  {"border": 0.5, "float_feature_index": 0, "split_index": 0, "split_type": "FloatFeature"},
  {"border": -1, "float_feature_index": 1, "split_index": 2, "split_type": "FloatFeature"}]}],
 "scale_and_bias": [2, [0.5]]}
J
    qs-convert "$BATS_TEST_TMPDIR/a.cbm" | grep -v '^objective' > "$BATS_TEST_TMPDIR/a.cbm.txt"
    qs-convert "$BATS_TEST_TMPDIR/a.json" | grep -v '^objective' > "$BATS_TEST_TMPDIR/a.json.txt"
    diff "$BATS_TEST_TMPDIR/a.cbm.txt" "$BATS_TEST_TMPDIR/a.json.txt"
}

@test "cbm: NaN goes where CatBoost's substitute goes: -inf (AsFalse), +inf (AsTrue) only with HasNans, else left" {
    # one stump per treatment; a border of +inf keeps +inf (AsTrue) left
    forge n '{"float": [{"flat": 0, "borders": [0.0], "has_nans": true, "nan": 1},
                        {"flat": 1, "borders": [0.0], "has_nans": true, "nan": 2},
                        {"flat": 2, "borders": [0.0], "has_nans": false, "nan": 2},
                        {"flat": 3, "borders": [Infinity], "has_nans": true, "nan": 2}],
              "splits": [0, 1, 2, 3], "sizes": [1, 1, 1, 1], "leaves": [1, 2, 10, 20, 100, 200, 1000, 2000]}'
    qs-convert "$BATS_TEST_TMPDIR/n.cbm" | qs-compile -o "$BATS_TEST_TMPDIR/n.qsm" -
    printf '0 1:nan 2:nan 3:nan 4:nan\n0 1:1 2:1 3:1 4:inf\n' > "$BATS_TEST_TMPDIR/d"
    printf '1121\n1222\n' > "$BATS_TEST_TMPDIR/want"
    score_all "$BATS_TEST_TMPDIR/n.qsm" "$BATS_TEST_TMPDIR/d" "$BATS_TEST_TMPDIR/want"
}

@test "cbm: categorical, text and embedding features, CTRs, estimated features, model parts and other core versions are refused (exit 3) by name" {
    run qs-convert "$M/onehot.cbm.zst"
    assert_failure 3
    assert_output --partial "categorical features are not supported, only float features: the model uses categorical feature column 2, through one-hot splits"
    run qs-convert "$M/ctr.cbm.zst"
    assert_failure 3
    assert_output --partial "the model uses categorical feature column 2, through CTRs"
    run qs-convert "$M/text.cbm.zst"
    assert_failure 3
    assert_output --partial 'text features are not supported, only float features: the model uses text feature "txt" (column 2)'
    # the same through qs-compile and qs-score's model readers
    run qs-compile -o "$BATS_TEST_TMPDIR/x.qsm" "$M/ctr.cbm.zst"
    assert_failure 3
    [ ! -e "$BATS_TEST_TMPDIR/x.qsm" ]
    forge e '{"float": [{"flat": 0, "borders": [1.0]}], "embedding": [{"flat": 1, "id": "vec"}, {"flat": 2}], "splits": [0], "sizes": [1], "leaves": [1, 2]}'
    run qs-convert "$BATS_TEST_TMPDIR/e.cbm"
    assert_failure 3
    assert_output --partial 'embedding features are not supported, only float features: the model uses embedding feature "vec" (column 1) (and 1 more)'
    forge s '{"float": [{"flat": 0, "borders": [1.0]}], "estimated": 2, "splits": [0], "sizes": [1], "leaves": [1, 2]}'
    run qs-convert "$BATS_TEST_TMPDIR/s.cbm"
    assert_failure 3
    assert_output --partial "the model has 2 estimated text or embedding features (EstimatedFeatures)"
    forge c '{"float": [{"flat": 0, "borders": [1.0]}], "ctr": 1, "splits": [0], "sizes": [1], "leaves": [1, 2]}'
    run qs-convert "$BATS_TEST_TMPDIR/c.cbm"
    assert_failure 3
    assert_output --partial "the model has 1 CTR features (CtrFeatures)"
    forge p "{$OK, \"parts\": [\"static_provider_v1\"], \"trailing\": \"tables\"}"
    run qs-convert "$BATS_TEST_TMPDIR/p.cbm"
    assert_failure 3
    assert_output --partial 'the model has 1 model part ("static_provider_v1": CTR tables, text or embedding processing)'
    forge v "{$OK, \"format\": \"FlabuffersModel_v2\"}"
    run qs-convert "$BATS_TEST_TMPDIR/v.cbm"
    assert_failure 3
    assert_output --partial 'core format "FlabuffersModel_v2" is not supported (expected "FlabuffersModel_v1")'
    forge n "{$OK, \"float\": [{\"flat\": 0, \"borders\": [0.5, 1.5], \"nan\": 3}, {\"flat\": 2, \"borders\": [-1.0]}]}"
    run qs-convert "$BATS_TEST_TMPDIR/n.cbm"
    assert_failure 3
    assert_output --partial "NanValueTreatment 3 is not supported"
}

@test "cbm: hand-made models read as CatBoost lays them out: 64-bit core size, a tree of one leaf, a node with one leaf side, leaf weights" {
    forge a "{$OK, \"size64\": true, \"weights\": [1, 2, 3, 4]}"
    run qs-convert "$BATS_TEST_TMPDIR/a.cbm"
    assert_success
    forge l '{"splits": [0, 0], "sizes": [1, 1], "steps": [[0, 0], [0, 0]], "leafids": [0, 1], "leaves": [0.25, -0.75], "bias": 1.0}'
    qs-convert "$BATS_TEST_TMPDIR/l.cbm" | qs-compile -o "$BATS_TEST_TMPDIR/l.qsm" -
    printf '0 1:3\n' | qs-score "$BATS_TEST_TMPDIR/l.qsm" > "$BATS_TEST_TMPDIR/got"
    [ "$(cat "$BATS_TEST_TMPDIR/got")" = 0.5 ]
    # node 0: left ends there (its own leaf values), right goes on to node 1
    forge h '{"float": [{"flat": 0, "borders": [0.5, 1.5]}], "splits": [0, 1, 0], "sizes": [3],
              "steps": [[0, 1], [1, 0], [0, 0]], "leafids": [0, 1, 2], "leaves": [10, 20, 30], "weights": [1, 1, 1]}'
    qs-convert "$BATS_TEST_TMPDIR/h.cbm" | qs-compile -o "$BATS_TEST_TMPDIR/h.qsm" -
    printf '0 1:0\n0 1:1\n0 1:2\n' > "$BATS_TEST_TMPDIR/d"
    printf '10\n30\n20\n' > "$BATS_TEST_TMPDIR/want"
    score_all "$BATS_TEST_TMPDIR/h.qsm" "$BATS_TEST_TMPDIR/d" "$BATS_TEST_TMPDIR/want"
}

# bad SPEC MESSAGE: the forged model is an error (exit 1) whose message has MESSAGE.
bad() {
    forge b "$1"
    run qs-convert "$BATS_TEST_TMPDIR/b.cbm"
    [ "$status" -eq 1 ] || { echo "exit $status for $1: $output"; return 1; }
    [[ "$output" == *"$2"* ]] || { echo "for $1: $output"; return 1; }
    [[ "$output" =~ b\.cbm:\ (byte\ [0-9]+:\ )?catboost\ \.cbm:\  ]] || { echo "for $1: $output"; return 1; }
}

@test "cbm: malformed models are errors (exit 1) that say what is wrong" {
    bad "{$OK, \"splits\": [0, 3]}" "split 1 is binary feature 3, but the model has 3"
    bad "{$OK, \"leaves\": [1, 2, 3]}" "tree 0 needs 4 leaf values, 3 are left"
    bad "{$OK, \"leaves\": [1, 2, 3, 4, 5]}" "the trees take 4 of the 5 leaf values"
    bad "{$OK, \"weights\": [1, 2]}" "2 leaf weights for 4 leaves"
    bad "{$OK, \"starts\": [1]}" "tree 0: size 2 from 1, expected the next of the 2 splits from 0"
    bad "{$OK, \"sizes\": [3]}" "tree 0: size 3 from 0, expected the next of the 2 splits"
    bad "{$OK, \"dim\": 0}" "ApproxDimension 0 is out of range"
    bad "{$OK, \"multibias\": [1, 2]}" "2 biases (MultiBias) for 1 outputs"
    bad "{$OK, \"dim\": 2, \"leaves\": [1, 2, 3, 4, 5, 6, 7, 8], \"bias\": 1.5}" "one bias 1.5 for 2 outputs (CatBoost requires MultiBias)"
    bad "{$OK, \"scale\": NaN}" "the scale is not finite"
    bad "{$OK, \"multibias\": [Infinity]}" "bias 0 is not finite"
    bad '{"float": [{"flat": 0, "borders": [1.5, 0.5]}], "splits": [0], "sizes": [1], "leaves": [1, 2]}' "borders 0 and 1 (1.5, 0.5) are not in increasing order"
    bad '{"float": [{"flat": 0, "borders": [NaN]}], "splits": [0], "sizes": [1], "leaves": [1, 2]}' "border 0 is NaN"
    bad '{"float": [{"flat": 0, "borders": [1]}, {"flat": 0, "borders": [2]}], "splits": [0], "sizes": [1], "leaves": [1, 2]}' "float features 0 and 1 are both column 0"
    bad '{"float": [{"flat": -1, "borders": [1]}], "splits": [0], "sizes": [1], "leaves": [1, 2]}' "float feature 0 has no column (FlatIndex -1)"
    bad "{$OK, \"trailing\": \"xyz\"}" "3 bytes after the model"
    bad "{$OK, \"size\": 100000}" "byte 4: catboost .cbm: the core's size 100000 runs past the end"
    bad "{$OK, \"format\": null}" 'the core has no format version (expected "FlabuffersModel_v1")'
    # non-symmetric trees that are not trees, or step out of theirs
    local F='"float": [{"flat": 0, "borders": [0.5, 1.5]}]'
    bad "{$F, \"splits\": [0, 1, 0], \"sizes\": [3], \"steps\": [[1, 1], [1, 1], [0, 0]], \"leafids\": [0, 0, 0], \"leaves\": [1]}" "is reached twice (not a tree)"
    bad "{$F, \"splits\": [0, 0, 0], \"sizes\": [3], \"steps\": [[2, 2], [0, 0], [0, 0]], \"leafids\": [0, 0, 1], \"leaves\": [1, 2]}" "node 2 is reached twice"
    bad "{$F, \"splits\": [0, 0, 0], \"sizes\": [3], \"steps\": [[0, 1], [0, 0], [0, 0]], \"leafids\": [0, 1, 2], \"leaves\": [1, 2, 3]}" "node 2 is not reached from the root"
    bad "{$F, \"splits\": [0, 0], \"sizes\": [2], \"steps\": [[1, 2], [0, 0]], \"leafids\": [0, 1], \"leaves\": [1, 2]}" "node 0 steps past the tree's 2 nodes"
    bad "{$F, \"splits\": [0, 0, 0], \"sizes\": [3], \"steps\": [[1, 2], [0, 0], [0, 0]], \"leafids\": [0, 1, 1], \"leaves\": [1, 2]}" "its leaves do not take the next 2 leaf values once each"
    bad "{$F, \"splits\": [0, 0, 0], \"sizes\": [3], \"steps\": [[1, 2], [0, 0], [0, 0]], \"leafids\": [0, 5, 1], \"leaves\": [1, 2]}" "node 1's leaf values start at 5"
    bad "{$F, \"splits\": [0, 0], \"sizes\": [1, 1], \"steps\": [[0, 0], [0, 0]], \"leafids\": [1, 0], \"leaves\": [1, 2]}" "tree 0: node 0's leaf values start at 1"
    bad "{$F, \"splits\": [0], \"sizes\": [1], \"steps\": [[0, 0]], \"leafids\": [0, 0], \"leaves\": [1]}" "1 tree splits, 1 step nodes and 2 leaf ids"
    bad "{$F, \"splits\": [0], \"sizes\": [1], \"leafids\": [0], \"leaves\": [1, 2]}" "leaf ids without the step nodes"
    bad "{$F, \"splits\": [], \"sizes\": [0], \"steps\": [], \"leafids\": [], \"leaves\": []}" "tree 0 needs 1 leaf values, 0 are left"
}

@test "cbm: hostile lengths, offsets and sizes are refused before anything is allocated for them" {
    # vectors that claim more elements than the file holds
    for f in leaves splits sizes starts weights; do
        forge h "{$OK, \"weights\": [1, 1, 1, 1], \"lens\": {\"$f\": 1073741823}}"
        run qs-convert "$BATS_TEST_TMPDIR/h.cbm"
        assert_failure 1
        assert_output --partial "a vector runs past the end of the model"
    done
    # depth 17 (CatBoost's limit is 16): out of limits (exit 1)
    forge d '{"float": [{"flat": 0, "borders": [1]}], "splits": [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0], "sizes": [17], "leaves": [1]}'
    run qs-convert "$BATS_TEST_TMPDIR/d.cbm"
    assert_failure 1
    assert_output --partial "tree 0 has depth 17 (limit 16)"
    # every prefix of a real model is refused, never read past its end
    local m
    m=$(plain "$M/multidepth.cbm.zst")
    local n
    n=$(wc -c < "$m")
    for k in 0 3 4 7 8 9 12 40 200 1000 $((n / 2)) $((n - 1)); do
        head -c "$k" "$m" > "$BATS_TEST_TMPDIR/cut.cbm"
        run qs-convert --from cbm "$BATS_TEST_TMPDIR/cut.cbm"
        [ "$status" -eq 1 ] || { echo "prefix $k: exit $status: $output"; return 1; }
    done
    # an offset out of the core: the root's, then a table's vtable
    python3 - "$m" "$BATS_TEST_TMPDIR" << 'PY'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
r = bytearray(b); struct.pack_into('<I', r, 8, 0x7fffffff)
open(sys.argv[2] + '/root.cbm', 'wb').write(r)
root = 8 + struct.unpack_from('<I', b, 8)[0]
v = bytearray(b); struct.pack_into('<i', v, root, -0x7fffffff)
open(sys.argv[2] + '/vtable.cbm', 'wb').write(v)
PY
    run qs-convert "$BATS_TEST_TMPDIR/root.cbm"
    assert_failure 1
    assert_output --partial "byte 8: catboost .cbm: an offset points outside the model"
    run qs-convert "$BATS_TEST_TMPDIR/vtable.cbm"
    assert_failure 1
    assert_output --partial "a table's vtable lies outside the model"
}
