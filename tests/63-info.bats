#!/usr/bin/env bats
bats_require_minimum_version 1.5.0
# qs-compile --info [--json]: a model's facts, from a .qsm or any model the
# readers read; the counts and histograms are checked against the canonical
# text read independently (python3), the JSON with jq.

load test_helper

setup() { T="$BATS_TEST_TMPDIR"; }

# facts TEXT: the canonical text's counts, as JSON, computed apart from the
# library: trees, leaves, the leaf-count and depth histograms, the features
# used and the largest one.
facts() {
    python3 - "$1" <<'PY'
import json, sys
trees, cur = [], None
for line in open(sys.argv[1]):
    t = line.split()
    if not t:
        continue
    if t[0] == 'tree':
        cur = {}
        trees.append(cur)
    elif cur is not None and t[0].isdigit() and len(t) > 1 and t[1] in ('num', 'cat', 'leaf'):
        i = int(t[0])
        if t[1] == 'leaf':
            cur[i] = None
        else:
            l, r = (t[6], t[7]) if t[1] == 'num' else (t[7], t[8])
            cur[i] = (int(t[2]), int(l), int(r))
leaves_h, depth_h, used = {}, {}, set()
for tr in trees:
    depth, stack, nl, md = {0: 0}, [0], 0, 0
    while stack:
        i = stack.pop()
        n = tr[i]
        if n is None:
            nl += 1
            md = max(md, depth[i])
            continue
        used.add(n[0])
        for c in n[1:]:
            depth[c] = depth[i] + 1
            stack.append(c)
    leaves_h[nl] = leaves_h.get(nl, 0) + 1
    depth_h[md] = depth_h.get(md, 0) + 1
print(json.dumps({
    'trees': len(trees),
    'leaves': sum(k * v for k, v in leaves_h.items()),
    'leaves_histogram': [{'leaves': k, 'trees': leaves_h[k]} for k in sorted(leaves_h)],
    'depth_histogram': [{'depth': k, 'trees': depth_h[k]} for k in sorted(depth_h)],
    'used': len(used), 'max_used': max(used) if used else -1}, sort_keys=True))
PY
}

# check_facts MODEL [qs-compile options]: --json of MODEL (and of its .qsm)
# agrees with facts() of its canonical text.
check_facts() {
    local model="$1"; shift
    qs-convert "$model" > "$T/m.txt"
    facts "$T/m.txt" > "$T/want.json"
    qs-compile "$@" -o "$T/m.qsm" "$T/m.txt"
    local src
    for src in "$model" "$T/m.qsm"; do
        qs-compile --info --json "$@" "$src" > "$T/info.json"
        jq -S -c '{trees, leaves, leaves_histogram, depth_histogram, used: .features.used, max_used: .features.max_used}' \
            "$T/info.json" > "$T/got.json"
        diff "$T/got.json" <(jq -S -c . "$T/want.json") || { echo "($src)"; return 1; }
        # the JSON's own sums agree
        jq -e '(.leaves_histogram | map(.trees) | add // 0) == .trees and
               (.depth_histogram | map(.trees) | add // 0) == .trees and
               (.layout.blocks | map(.trees) | add // 0) == .trees and
               .max_leaves == (.leaves_histogram | map(.leaves) | max) and
               .max_depth == (.depth_histogram | map(.depth) | max) and
               .features.max_used < .features.count and .tuning == null' "$T/info.json" > /dev/null ||
            { echo "inconsistent JSON for $src:"; cat "$T/info.json"; return 1; }
    done
}

@test "--info --json: counts and histograms as the canonical text says, for every source" {
    check_facts "$FIX/lgb-l8/model.txt.zst"
    check_facts "$FIX/lgb-multiclass/model.txt.zst"
    check_facts "$FIX/xgb-agaricus/model.json.zst"
    check_facts "$FIX/qr-oblivious/model.xml.zst" --tree-block 30
    check_facts "$FIX/catboost/tiny.json"
    check_facts "$FIX/lightgbm/mixed.model.txt"
}

@test "--info: the text report of a .qsm" {
    qs-compile -o "$T/m.qsm" "$FIX/lgb-l8/model.txt.zst"
    run qs-compile --info "$T/m.qsm"
    assert_success
    assert_line "file: $T/m.qsm: a compiled .qsm model, $(stat -c %s "$T/m.qsm") bytes"
    assert_line "source: lightgbm, version not recorded"
    assert_line "objective: lambdarank"
    assert_line "transform: none"
    assert_line "arithmetic: double values and thresholds, double sums, goes left when x <= t"
    assert_line "absent features: zero"
    assert_line --regexp "^features: 301 \(ids 0..300\); used by splits: [0-9]+, largest id [0-9]+$"
    assert_line "classes: 1"
    assert_line --regexp "^trees: 100 \([0-9]+ nodes, 800 leaves, 0 categorical splits\)$"
    assert_line "leaves per tree: 8 x100 (leaves x trees)"
    assert_line --regexp "^depth per tree: [0-9]+ x[0-9]+"
    assert_line "oblivious: no (0 of 100 trees)"
    assert_line "layout: τ 0 (one block per run of trees of one kind), δ 64, Δ 8"
    assert_line --regexp "^  block 0: trees 0..99 \(100\), QS, 8-bit masks, [0-9]+ entries, 0 reversed$"
    assert_line "tuning: none (no tuning record)"
    assert_line "sections: 3 (.qsm version 1.0)"
    assert_line --regexp "^  INFO required,zstd +offset [0-9]+, stored [0-9]+ bytes, raw 128 bytes, crc32c [0-9a-f]{8}$"
    assert_line --regexp "^  TREE "
    assert_line --regexp "^  QSLY "
    # the sections tile the file after the header and table
    qs-compile --info --json "$T/m.qsm" |
        jq -e --argjson size "$(stat -c %s "$T/m.qsm")" '.qsm.sections | sort_by(.offset) |
            .[0].offset == 64 + 48 * length and
            (.[-1].offset + .[-1].stored_bytes) == $size' > /dev/null
}

@test "--info: foreign models, standard input, versions, layout options" {
    run qs-compile --info "$FIX/lgb-l8/model.txt.zst"
    assert_success
    assert_line "source: lightgbm, version v4"
    assert_line "sections: none (not a .qsm; the layout above is the one qs-compile would write)"
    run qs-compile --info --json - < "$FIX/xgb-tiny/model.json"
    assert_success
    [ "$(jq -r '.source + " " + .source_version + " " + .file.name + " " + .compare + " " + .absent' <<< "$output")" = \
        "xgboost 1.7.4 (stdin) lt missing" ]
    # QuickRank: oblivious, QS-Ω blocks of 30 trees
    qs-compile --info --json --tree-block 30 "$FIX/qr-oblivious/model.xml.zst" > "$T/q.json"
    jq -e '.oblivious and .oblivious_trees == .trees and .layout.tree_block == 30 and
           (.layout.blocks | length) == 4 and all(.layout.blocks[]; .kind == "qs-omega")' "$T/q.json"
    # reversal and Δ reach the layout; the .qsm keeps them
    qs-compile --reverse-all --delta 3 --doc-block 5 -o "$T/r.qsm" "$FIX/lgb-l8/model.txt.zst"
    qs-compile --info --json "$T/r.qsm" > "$T/r.json"
    jq -e '.layout.reversed_trees == 100 and .layout.delta == 3 and .layout.doc_block == 5 and
           .layout.blocks[0].reversed == 100 and .layout.blocks[0].mask_bits == 8' "$T/r.json"
    # mask widths follow the largest tree of a block: 15 leaves, 16 bits
    qs-compile --info --json "$FIX/lgb-multiclass/model.txt.zst" |
        jq -e '.classes == 5 and all(.layout.blocks[]; .mask_bits == 16)'
    # CatBoost: the output affine has its own section
    qs-compile -o "$T/c.qsm" "$FIX/catboost/tiny.json"
    qs-compile --info --json "$T/c.qsm" | jq -e '[.qsm.sections[].id] | sort == ["AFFN", "INFO", "QSLY", "TREE"]'
    # -o FILE: the report, written whole
    qs-compile --info -o "$T/report" "$T/c.qsm"
    grep -q '^sections: 4 ' "$T/report"
}

# cats_model IN OUT PYTHON: the XGBoost model IN (JSON) with its category
# encoder edited by PYTHON (c: the "cats" object)
cats_model() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = d['learner']['gradient_booster']['model']['cats']
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], 'w'))
PY
}

@test "--info: an XGBoost category encoder that is malformed is an error (exit 1) and nothing is written; names stay UTF-8" {
    zstd -q -d -c "$FIX/xgboost-cats/cats.json.zst" > "$T/cats.json"
    local name
    # offsets past the values, decreasing, not from 0; a value that is no
    # byte; a string that is not UTF-8 (0xff; a lone continuation byte; an
    # overlong form; a surrogate)
    local -A edit=(
        [past]="c['enc'][2].update({'offsets': [0, 1, 5], 'values': [1, 2, 3]})"
        [down]="c['enc'][0]['offsets'][2] = 3"
        [from1]="c['enc'][0]['offsets'][0] = 1"
        [short]="c['enc'][0]['offsets'].pop()"
        [notbyte]="c['enc'][0]['values'][3] = 300"
        [ff]="c['enc'][0]['values'][1] = -1"
        [cont]="c['enc'][0]['values'][0] = 0x80"
        [overlong]="c['enc'][0]['values'][0:2] = [0xc0, 0xaf]"
        [surrogate]="c['enc'][0]['values'][0:3] = [0xed, 0xa0, 0x80]"
    )
    local -A why=(
        [past]="feature 2: the offsets run from 0 to 5, not from 0 to the 3 bytes"
        [down]="feature 0: offset 2 (3) is below the one before (4)"
        [from1]="feature 0: the offsets run from 1 to 20"
        [short]="feature 0: the offsets run from 0 to 15, not from 0 to the 20 bytes"
        [notbyte]="feature 0: value 3 is no byte"
        [ff]="feature 0: category 0 is not UTF-8 text (byte 1)"
        [cont]="feature 0: category 0 is not UTF-8 text (byte 0)"
        [overlong]="feature 0: category 0 is not UTF-8 text (byte 0)"
        [surrogate]="feature 0: category 0 is not UTF-8 text (byte 0)"
    )
    for name in "${!edit[@]}"; do
        cats_model "$T/cats.json" "$T/$name.json" "${edit[$name]}"
        for json in --json ""; do
            run --separate-stderr qs-compile --info $json "$T/$name.json"
            [ "$status" = 1 ] || { echo "$name $json: exit $status"; return 1; }
            [ -z "$output" ] || { echo "$name $json: wrote $output"; return 1; }
            [ "$stderr" = "qs-compile: $T/$name.json: cats.enc: ${why[$name]}" ] ||
                [[ "$stderr" == "qs-compile: $T/$name.json: cats.enc: ${why[$name]}"* ]] ||
                { echo "$name: $stderr"; return 1; }
            run qs-compile --info $json -o "$T/$name.out" "$T/$name.json"
            assert_failure 1
            [ ! -e "$T/$name.out" ]
        done
        # the model itself still converts and scores: the encoder is for --info
        qs-convert "$T/$name.json" > /dev/null
    done
    # a name longer than 256 bytes is cut at its last whole character: 'a'
    # and 150 two-byte characters, cut to 'a' and 127 of them (255 bytes)
    cats_model "$T/cats.json" "$T/long.json" \
        "c['enc'][0].update({'offsets': [0, 301], 'values': list(('a' + chr(233) * 150).encode())})"
    qs-compile --info --json "$T/long.json" > "$T/long.out"
    jq -e --arg want "a$(printf '\xc3\xa9%.0s' $(seq 127))" '.categories."0" == [$want]' "$T/long.out"
    # every other name, UTF-8 of 1 to 4 bytes, quotes, backslashes and
    # control bytes: valid JSON, each name back as it was
    cats_model "$T/cats.json" "$T/utf.json" "
n = [chr(34) + 'q' + chr(92), 'tab' + chr(9) + 'here', chr(0x7f) + chr(1), chr(0x20ac), chr(0x1f600), chr(0x10ffff), '']
b = [list(x.encode()) for x in n]
offs = [0]
for x in b:
    offs.append(offs[-1] + len(x))
c['enc'][0].update({'offsets': offs, 'values': sum(b, [])})
open('$T/utf.want', 'w').write(json.dumps(n))"
    qs-compile --info --json "$T/utf.json" > "$T/utf.out"
    jq -e --slurpfile w "$T/utf.want" '.categories."0" == $w[0]' "$T/utf.out"
    qs-compile --info "$T/utf.json" | grep -qF 'categories of feature 0 (code: value): 0: "\"q\\" 1: "tab\u0009here" 2: "\u007f\u0001" 3: "€"'
}

@test "--info --json: names from the file and the tuning record stay valid JSON (U+FFFD for bytes that are not UTF-8, null for NaN)" {
    qs-compile -o "$T/m.qsm" "$FIX/xgb-tiny/model.json"
    head -n 200 "$FIX/xgb-tiny/docs.letor" > "$T/sample"
    qs-blocktune --budget 0.2 --repeat 1 -o "$T/t.qsm" "$T/m.qsm" "$T/sample" > /dev/null
    # the record's CPU model as bytes that are not UTF-8, its times NaN and inf
    python3 "$BATS_TEST_DIRNAME/tools/qsm_tune.py" "$T/t.qsm" "$T/x.qsm" raw 64 "41ff42c3004300"
    python3 "$BATS_TEST_DIRNAME/tools/qsm_tune.py" "$T/x.qsm" "$T/y.qsm" raw 184 "000000000000f87f000000000000f07f"
    cp "$T/y.qsm" "$T/$(printf 'n\xe9\x80.qsm')"
    qs-compile --info --json "$T/$(printf 'n\xe9\x80.qsm')" > "$T/y.json"
    jq -e '.tuning.cpu_model == "A\ufffdB\ufffd" and .tuning.default_ns == null and
           .tuning.tuned_ns == null and (.file.name | endswith("n\ufffd\ufffd.qsm"))' "$T/y.json"
}

@test "--info: errors" {
    run qs-compile --json "$FIX/xgb-tiny/model.json"
    assert_failure 2
    assert_output --partial "--json needs --info"
    printf 'garbage\n' > "$T/g"
    run qs-compile --info "$T/g"
    assert_failure 1
    assert_output --partial "$T/g: not a model qs reads"
    qs-compile -o "$T/m.qsm" "$FIX/xgb-tiny/model.json"
    cp "$T/m.qsm" "$T/bad.qsm"
    printf '\x00' | dd of="$T/bad.qsm" bs=1 seek=300 conv=notrunc 2> /dev/null
    run qs-compile --info "$T/bad.qsm"
    assert_failure 1
    assert_output --regexp "bad.qsm: byte [0-9]+: section [0-9] checksum mismatch"
    head -c 100 "$T/m.qsm" > "$T/short.qsm"
    run qs-compile --info "$T/short.qsm"
    assert_failure 1
    assert_output --partial "short.qsm: byte 24: file size 100 differs"
    # a model refused for exactness is refused here too (exit 3)
    run qs-compile --info "$FIX/quickrank/bad_random_forest.txt"
    assert_failure 3
    assert_output --partial "is not supported"
}

@test "--info: the back end auto runs on this machine and why; a tuning record measured here that names one says qs-score runs it" {
    command -v python3 > /dev/null || skip "python3 not installed"
    local T="$BATS_TEST_TMPDIR" d="$FIX/lgb-l8/docs.letor" want
    python3 "$QS_ROOT/bench/gen_forest.py" 12 768 "$d" 3 | qs-compile -o "$T/f.qsm" -
    # what qs-score -v says auto runs is what --info says
    want=$(qs-score -v "$T/f.qsm" /dev/null 2>&1 | sed -n 's/^qs-score: .*: auto runs \([a-z0-9-]*\) .*/\1/p')
    [ -n "$want" ]
    run qs-compile --info "$T/f.qsm"
    assert_success
    assert_line --regexp "^auto: runs $want on this machine \(.+\)$"
    [ "$(qs-compile --info --json "$T/f.qsm" | jq -r '.auto.backend + " " + .auto.qs_score_runs')" = "$want $want" ]
    if qs-score --version -v | grep -q '^default: auto = vqs'; then
        assert_line --partial "auto: runs vpred on this machine (vpred: trees of 768 leaves on average"
    fi
    # a record naming walk, measured here
    for i in 1 2 3; do cat "$d"; done > "$T/sample.letor"
    qs-blocktune --budget 0.2 --repeat 1 -o "$T/t.qsm" "$T/f.qsm" "$T/sample.letor" > /dev/null
    python3 "$BATS_TEST_DIRNAME/tools/qsm_tune.py" "$T/t.qsm" "$T/w.qsm" backend walk
    run qs-compile --info "$T/w.qsm"
    assert_success
    assert_line --regexp "^auto: runs $want on this machine \(.+\); qs-score runs walk here, as the tuning record says$"
    [ "$(qs-compile --info --json "$T/w.qsm" | jq -r .auto.qs_score_runs)" = walk ]
}
