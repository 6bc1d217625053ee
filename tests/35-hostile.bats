#!/usr/bin/env bats
# Hostile input, class by class: every reader refuses it with a message that
# says where and what, a documented exit code, and leaves no output file.

load test_helper

setup() { T="$BATS_TEST_TMPDIR"; }

# refuse CODE PATTERN TOOL ARGS...: run TOOL with -o "$T/out" and check the
# exit code, the message and that neither the output nor a temporary is left.
refuse() {
    local code="$1" pattern="$2"; shift 2
    local tool="$1"; shift
    run "$tool" -o "$T/out" "$@"
    assert_failure "$code"
    assert_output --regexp "^$tool: .*$pattern"
    [ ! -e "$T/out" ] || { echo "output file left behind"; return 1; }
    run bash -c "ls '$T' | grep -c 'tmp' || true"
    assert_output "0"
}

@test "lightgbm text: wrong counts, bad children, huge num_leaves, garbage" {
    zstd -dc "$FIX/lgb-l8/model.txt.zst" > "$T/m.txt"
    sed '0,/^left_child=/s/^left_child=\([^ ]*\) /left_child=/' "$T/m.txt" > "$T/a.txt"
    refuse 1 "left_child" qs-convert "$T/a.txt"
    sed '0,/^num_leaves=8/s//num_leaves=99999999999999/' "$T/m.txt" > "$T/b.txt"
    refuse 1 "num_leaves" qs-convert "$T/b.txt"
    sed '0,/^right_child=/s/^right_child=[^ ]*/right_child=77/' "$T/m.txt" > "$T/c.txt"
    refuse 1 "" qs-convert "$T/c.txt"
    { head -c 2000 "$T/m.txt"; head -c 3000 /dev/urandom; } > "$T/d.txt"
    refuse 1 "" qs-convert --from lightgbm "$T/d.txt"
}

@test "xgboost json and ubjson: truncation, garbage, bad arrays" {
    head -c 2000 "$FIX/xgb-tiny/model.json" > "$T/t.json"
    refuse 1 "byte [0-9]+" qs-convert "$T/t.json"
    printf '{"learner": nul}' > "$T/n.json"
    refuse 1 "byte [0-9]+" qs-convert "$T/n.json"
    head -c 300 "$BATS_TEST_DIRNAME/fixtures/xgboost/real-softprob.ubj" > "$T/t.ubj"
    refuse 1 "" qs-convert "$T/t.ubj"
    sed 's/"right_children":\[2,/"right_children":[9999,/' "$FIX/xgb-tiny/model.json" > "$T/r.json"
    refuse 1 "" qs-convert "$T/r.json"
}

@test "quickrank xml: 200,000-level nesting, entity bomb, garbage" {
    Q="$BATS_TEST_DIRNAME/fixtures/quickrank"
    refuse 1 "neither <output> nor <feature>" qs-convert "$Q/bad_deep_200k.xml.zst"
    refuse 3 "" qs-convert "$Q/bad_entity_bomb.xml"
    refuse 1 "" qs-convert --from quickrank "$Q/bad_garbage.bin"
}

@test "canonical text: overflowing counts and ids, binary garbage" {
    qs-convert "$FIX/xgb-tiny/model.json" > "$T/m.txt"
    sed 's/^trees 3/trees 99999999999999999999999/' "$T/m.txt" > "$T/a.txt"
    refuse 1 ":12: bad tree count" qs-compile "$T/a.txt"
    sed 's/^tree 0 class 0 weight 0x1p+0 nodes 7/tree 0 class 0 weight 0x1p+0 nodes 4294967297/' "$T/m.txt" > "$T/b.txt"
    refuse 1 "node count" qs-compile "$T/b.txt"
    { head -c 200 "$T/m.txt"; printf '\0\0\0'; head -c 500 /dev/urandom; } > "$T/c.txt"
    refuse 1 "" qs-compile "$T/c.txt"
}

@test ".qsm: every single-byte corruption of the header and section table is refused" {
    set -o pipefail
    qs-convert "$FIX/xgb-tiny/model.json" | qs-compile -o "$T/m.qsm" -
    local n end off tried=0
    n=$(od -An -tu4 -j20 -N4 "$T/m.qsm" | tr -d ' ')
    [ "$n" -ge 1 ] && [ "$n" -le 64 ]
    end=$((64 + 48 * n))
    for off in $(seq 0 $((end - 1))); do
        cp "$T/m.qsm" "$T/f.qsm"
        printf '\xff' | dd of="$T/f.qsm" bs=1 seek="$off" conv=notrunc 2>/dev/null
        cmp -s "$T/m.qsm" "$T/f.qsm" && continue
        tried=$((tried + 1))
        run qs-score -o "$T/out" "$T/f.qsm" "$FIX/xgb-tiny/docs.letor"
        # The major version (bytes 8-9) is unsupported (exit 3); any other
        # change is damage (exit 1): the magic, a checksum, or the version
        # check before it.
        case "$off" in
            8 | 9) [ "$status" -eq 3 ] && [[ "$output" == *"version"*"is not supported"* ]] ;;
            *) [ "$status" -eq 1 ] && [[ "$output" =~ byte\ [0-9]+:\ (not\ a\ .qsm\ file|.*checksum\ mismatch) ]] ;;
        esac || { echo "offset $off: status $status: $output"; return 1; }
        [ ! -e "$T/out" ]
    done
    echo "$tried corruptions"
    [ "$tried" -ge $((end - 8)) ]
}

@test "documents: binary garbage, NUL bytes, megabyte tokens, id overflow, no output file" {
    set -o pipefail
    qs-convert "$FIX/xgb-tiny/model.json" | qs-compile -o "$T/m.qsm" -
    head -c 20000 /dev/urandom > "$T/g"
    refuse 1 "$T/g:[0-9]+: " qs-score "$T/m.qsm" "$T/g"
    printf '1 qid:1 5:0.5\0 6:1\n' > "$T/nul"
    refuse 1 "$T/nul:1: " qs-score "$T/m.qsm" "$T/nul"
    awk 'BEGIN { printf "1 qid:1 5:"; for (i = 0; i < 2000000; i++) printf "1"; print "" }' > "$T/long"
    refuse 1 "$T/long:1: bad feature value" qs-score "$T/m.qsm" "$T/long"
    printf '1 qid:1 18446744073709551617:1\n' > "$T/ovf"
    refuse 1 "out of range" qs-score "$T/m.qsm" "$T/ovf"
    head -3 "$FIX/xgb-tiny/docs.letor" > "$T/ok"
    printf '1 qid:1 5\n' >> "$T/ok"
    refuse 1 "$T/ok:4: bad feature token '5'" qs-score "$T/m.qsm" "$T/ok"
}

@test "qs-eval inputs: garbage and mismatched files" {
    printf '1 qid:1 1:0\n0 qid:1 1:1\n' > "$T/l"
    printf '0.5\n' > "$T/s"
    run qs-eval "$T/l" "$T/s"
    assert_failure 1
    assert_output --partial "qs-eval: "
    head -c 5000 /dev/urandom > "$T/g"
    run qs-eval "$T/g" "$T/s"
    assert_failure 1
}

@test "memory stays bounded while streaming: 200x the documents, same peak RSS" {
    [ -x /usr/bin/time ] || skip "/usr/bin/time (Debian package time) not installed"
    set -o pipefail
    qs-convert "$FIX/lgb-l8/model.txt.zst" | qs-compile -o "$T/m.qsm" -
    for i in $(seq 10); do cat "$FIX/lgb-l8/docs.letor"; done > "$T/small"
    # One thread: its one chunk is the whole working set (threads keep 3
    # chunks each in flight; tests/60-threads.bats bounds that).
    /usr/bin/time -f '%M' -o "$T/rss.small" qs-score --threads 1 "$T/m.qsm" "$T/small" > /dev/null
    # 240,000 documents (164 MiB) streamed through a pipe, and 4.7 MiB of
    # scores: the allowance below is a fifth of the output alone, so neither
    # the input nor the output can be held.
    for i in $(seq 200); do cat "$T/small"; done |
        /usr/bin/time -f '%M' -o "$T/rss.large" qs-score --threads 1 "$T/m.qsm" | wc -c > "$T/bytes"
    small=$(tail -1 "$T/rss.small"); large=$(tail -1 "$T/rss.large")
    echo "peak RSS: $small KiB for 1,200 documents, $large KiB for 240,000 ($(cat "$T/bytes") bytes of scores)"
    [ "$(cat "$T/bytes")" -gt 4000000 ]
    [ "$large" -le $((small + 1024)) ]
}

@test "xgboost: a category near the limit (2^31) costs its bitset once (256 MiB), not twice (fuzz finding F7)" {
    [ -x /usr/bin/time ] || skip "/usr/bin/time (Debian package time) not installed"
    if ldd "$(command -v qs-convert)" | grep -q libasan; then skip "peak RSS under AddressSanitizer"; fi
    python3 - "$FIX/xgboost/categorical.json" "$T/big.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["learner"]["gradient_booster"]["model"]["trees"][0]["categories"][-1] = 2**31 - 100
json.dump(m, open(sys.argv[2], "w"))
PY
    /usr/bin/time -f %M -o "$T/rss" qs-convert -o "$T/big.txt" "$T/big.json"
    grep -q "2147483548" "$T/big.txt"
    echo "peak RSS $(tail -n 1 "$T/rss") KiB"
    # the model's 2^26 words are 262,144 KiB; a scratch copy made it 524,288
    [ "$(tail -n 1 "$T/rss")" -lt 400000 ]
}

@test "a model with 2^24 features and a 4096-document block keeps a bounded workspace (fuzz finding F4)" {
    [ -x /usr/bin/time ] || skip "/usr/bin/time (Debian package time) not installed"
    qs-compile --doc-block 4096 -o "$T/big.qsm" "$BATS_TEST_DIRNAME/../fuzz/corpus/text/min-F4-huge-workspace.txt"
    yes '1 1:1' | head -4096 > "$T/d"
    /usr/bin/time -f '%M' -o "$T/rss" qs-score "$T/big.qsm" "$T/d" > "$T/out"
    assert_equal "$(wc -l < "$T/out")" 4096
    rss=$(tail -1 "$T/rss")
    echo "peak RSS $rss KiB"
    [ "$rss" -lt 400000 ]
}
