#!/usr/bin/env bats
# Memory bounds: a .qsm section may only be as large as the counts read
# before it allow (checked before anything is decompressed, or as its records
# arrive), and whole-file inputs stop at a documented, configurable limit.

load test_helper

setup() {
    T="$BATS_TEST_TMPDIR"
    qs-convert "$FIX/xgb-tiny/model.json" > "$T/m.txt"
    qs-compile -o "$T/m.qsm" "$T/m.txt"
    command -v python3 > /dev/null || skip "python3 not found"
    command -v /usr/bin/time > /dev/null || skip "no /usr/bin/time"
}

forge() { # forge SECTION FRAME: m.qsm with SECTION replaced by the zstd FRAME -> h.qsm
    python3 "$BATS_TEST_DIRNAME/tools/qsm_forge.py" "$T/m.qsm" "$1" "$2" "$T/h.qsm"
}

# refused_small EXPECTED-MESSAGE-REGEXP: qs-score refuses h.qsm with exit 1,
# the message, and a peak RSS under 64 MB.
refused_small() {
    # (Under AddressSanitizer, freed buffers would wait in its quarantine.)
    run env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0" \
        /usr/bin/time -f %M -o "$T/rss" qs-score -o "$T/out" "$T/h.qsm" /dev/null
    assert_failure 1
    assert_output --regexp "^qs-score: $T/h.qsm: $1"
    [ ! -e "$T/out" ]
    echo "peak RSS: $(tail -n 1 "$T/rss") KB"
    [ "$(tail -n 1 "$T/rss")" -lt $((65536 + $(san_rss qs-score))) ]
}

@test ".qsm: a section that is a valid 1 GiB zstd frame is refused before decompressing" {
    head -c 1G /dev/zero | zstd -q -3 --stream-size=1073741824 -c > "$T/z.zst"
    forge INFO "$T/z.zst"
    refused_small "byte [0-9]+: section 0: raw size 1073741824 is more than its counts allow \(32896\)"
    forge TREE "$T/z.zst"
    refused_small "TREE section has the wrong size"
    forge QSLY "$T/z.zst"
    refused_small "byte [0-9]+: section 2: raw size 1073741824 is more than its counts allow \([0-9]+\)"
}

@test ".qsm: a frame header that claims 64 GiB asks for nothing" {
    printf '\x28\xb5\x2f\xfd\xe0\x00\x00\x00\x00\x10\x00\x00\x00\x01\x00\x00' > "$T/claim.zst"
    forge TREE "$T/claim.zst"
    refused_small "TREE section is truncated"
    forge QSLY "$T/claim.zst"
    refused_small "byte [0-9]+: section 2: raw size 68719476736 is more than its counts allow"
}

@test ".qsm: a TREE section with consistent counts and garbage records stops at the first bad record" {
    # 2^20 trees of 16 nodes each (the header and tree records agree), then
    # 512 MiB of zero node records: a 1 MB-class file that the old loader
    # decompressed whole (1.1 GB) before refusing.
    python3 -c "
import struct, sys
sys.stdout.buffer.write(struct.pack('<QQQ', 1 << 20, 1 << 24, 0) + struct.pack('<IId', 0, 16, 1.0) * (1 << 20))" > "$T/hdr"
    sz=$((24 + 16 * (1 << 20) + 32 * (1 << 24)))
    { cat "$T/hdr"; head -c $((sz - $(stat -c %s "$T/hdr"))) /dev/zero; } |
        zstd -q -3 --stream-size=$sz -c > "$T/tree.zst"
    forge TREE "$T/tree.zst"
    refused_small "TREE section: a tree whose leaves and splits do not match"
    # Zero tree records: the first one is refused.
    python3 -c "
import struct, sys
sys.stdout.buffer.write(struct.pack('<QQQ', 1 << 20, 1 << 24, 0))" > "$T/hdr0"
    { cat "$T/hdr0"; head -c $((sz - 24)) /dev/zero; } | zstd -q -3 --stream-size=$sz -c > "$T/tree0.zst"
    forge TREE "$T/tree0.zst"
    refused_small "TREE section: a tree with no nodes or beyond the node limit"
}

@test "whole-file inputs: refused beyond QS_MAX_INPUT (exit 1, the file named); /dev/zero fails cleanly" {
    size=$(stat -c %s "$T/m.txt")
    run env QS_MAX_INPUT=$((size - 1)) qs-compile -o "$T/out.qsm" "$T/m.txt"
    assert_failure 1
    assert_output "qs-compile: $T/m.txt: input larger than the limit of $((size - 1)) bytes (set QS_MAX_INPUT to raise it)"
    [ ! -e "$T/out.qsm" ]
    run env QS_MAX_INPUT=$size qs-compile -o "$T/out.qsm" "$T/m.txt"
    assert_success
    # A .zst-wrapped .qsm: the decompressed size counts.
    zstd -q -c "$T/m.qsm" > "$T/m.qsm.zst"
    qsz=$(stat -c %s "$T/m.qsm")
    run env QS_MAX_INPUT=$((qsz - 1)) qs-score "$T/m.qsm.zst" /dev/null
    assert_failure 1
    assert_output "qs-score: $T/m.qsm.zst: decompressed content larger than the limit of $((qsz - 1)) bytes (set QS_MAX_INPUT to raise it)"
    run env QS_MAX_INPUT=$qsz qs-score "$T/m.qsm.zst" /dev/null
    assert_success
    # The reversal sample is a whole-file read too.
    run env QS_MAX_INPUT=1K qs-compile --reverse-sample "$FIX/xgb-tiny/docs.letor" -o "$T/r.qsm" "$T/m.txt"
    assert_failure 1
    assert_output "qs-compile: $FIX/xgb-tiny/docs.letor: input larger than the limit of 1024 bytes (set QS_MAX_INPUT to raise it)"
    # An endless input stops at the limit, in bounded memory: one that starts
    # as a model does, or any with --from (the reader takes what it is given).
    run env QS_MAX_INPUT=16M /usr/bin/time -f %M -o "$T/rss" qs-convert --from lightgbm /dev/zero
    assert_failure 1
    assert_output "qs-convert: /dev/zero: input larger than the limit of 16777216 bytes (set QS_MAX_INPUT to raise it)"
    [ "$(tail -n 1 "$T/rss")" -lt $((65536 + $(san_rss qs-convert))) ]
    run bash -c "yes tree | QS_MAX_INPUT=16M /usr/bin/time -f %M -o '$T/rss' qs-convert"
    assert_failure 1
    assert_output "qs-convert: (stdin): input larger than the limit of 16777216 bytes (set QS_MAX_INPUT to raise it)"
    [ "$(tail -n 1 "$T/rss")" -lt $((65536 + $(san_rss qs-convert))) ]
    run env QS_MAX_INPUT=lots qs-convert "$T/m.txt"
    assert_failure 2
    assert_output --partial "bad QS_MAX_INPUT 'lots'"
}

@test "model files: the read stops at the first wrong header (/dev/zero in every tool: 64 KiB, not the limit) and at the size a .qsm header records" {
    # every reader of a model, with the default limit (1 GiB): refused at once,
    # as the first bytes already show, in little memory
    local c rss
    for c in "qs-convert /dev/zero" "qs-compile -o $T/o.qsm /dev/zero" "qs-compile --info /dev/zero" \
        "qs-score /dev/zero /dev/null" "qs-blocktune --time /dev/zero /dev/null" \
        "qs-eval --like-model /dev/zero /dev/null /dev/null"; do
        run timeout 60 /usr/bin/time -f %M -o "$T/rss" $c
        [ "$status" = 1 ] || { echo "$c: exit $status: $output"; return 1; }
        rss=$(tail -n 1 "$T/rss")
        [ "$rss" -lt $((32768 + $(san_rss ${c%% *}))) ] || { echo "$c: $rss KB"; return 1; }
    done
    run qs-score /dev/zero /dev/null
    assert_output "qs-score: /dev/zero: byte 0: not a .qsm file (bad magic number)"
    run qs-eval --like-model /dev/zero /dev/null /dev/null
    assert_output "qs-eval: /dev/zero: byte 0: not a .qsm file (bad magic number)"
    run qs-convert /dev/zero
    assert_output --partial "qs-convert: /dev/zero: unrecognised model format"
    run qs-compile --info /dev/zero
    assert_output --partial "qs-compile: /dev/zero: not a model qs reads"
    [ ! -e "$T/o.qsm" ]
    # leading blank space is read past (a model may start later)
    { printf '\n\n   \n'; cat "$T/m.txt"; } > "$T/blank.txt"
    qs-compile -o "$T/b.qsm" "$T/blank.txt"
    cmp "$T/b.qsm" "$T/m.qsm"
    # qs-eval --like-model reads as the other tools: QS_MAX_INPUT, zstd
    run env QS_MAX_INPUT=100 qs-eval --like-model "$T/m.qsm" /dev/null /dev/null
    assert_failure 1
    assert_output --partial "qs-eval: $T/m.qsm: input larger than the limit of 100 bytes"
    zstd -q -c "$T/m.qsm" > "$T/m.qsm.zst"
    printf '1 qid:1 1:1\n0 qid:1 1:2\n' > "$T/d.letor"
    printf '0.5\n0.25\n' > "$T/d.scores"
    qs-eval --like-model "$T/m.qsm.zst" "$T/d.letor" "$T/d.scores" | grep -q 'as --like xgboost'
    # a .qsm is read to the size its header records: bytes after it are
    # refused as padding, and a header that records more than the file holds
    # costs no buffer of that size
    { cat "$T/m.qsm"; head -c 100000000 /dev/zero; } > "$T/padded.qsm"
    run /usr/bin/time -f %M -o "$T/rss" qs-score "$T/padded.qsm" /dev/null
    assert_failure 1
    assert_output "qs-score: $T/padded.qsm: byte 24: the file is longer than the $(stat -c %s "$T/m.qsm") bytes its header records (padded)"
    [ "$(tail -n 1 "$T/rss")" -lt $((32768 + $(san_rss qs-score))) ]
    python3 - "$T/m.qsm" "$T/big.qsm" <<'PY'
import struct, sys
q = bytearray(open(sys.argv[1], 'rb').read())
struct.pack_into('<Q', q, 24, 1 << 40)
T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    T.append(c)
c = 0xFFFFFFFF
for x in q[:60]:
    c = T[(c ^ x) & 0xFF] ^ (c >> 8)
struct.pack_into('<I', q, 60, c ^ 0xFFFFFFFF)
open(sys.argv[2], 'wb').write(q)
PY
    run env QS_MAX_INPUT=1024G /usr/bin/time -f %M -o "$T/rss" qs-score "$T/big.qsm" /dev/null
    assert_failure 1
    assert_output --partial "differs from the recorded 1099511627776 (truncated or padded)"
    [ "$(tail -n 1 "$T/rss")" -lt $((32768 + $(san_rss qs-score))) ]
}

# qsly FILE.qsm OUT: the raw (decompressed) QSLY section of FILE.qsm
qsly() { qsm_section "$1" QSLY "$2"; }

# patch_qsly RAW WHAT OUT.zst: damage the layout RAW (thr: the first
# threshold; flags: tree 0's flags byte) and compress it to OUT.zst
patch_qsly() {
    python3 - "$1" "$2" << 'PY'
import struct, sys
p, what = sys.argv[1], sys.argv[2]
b = bytearray(open(p, "rb").read())
_, _, B, G, C, _, E, T, L = struct.unpack_from("<IIIIIIQQQ", b, 0)
if what == "thr":
    struct.pack_into("<d", b, 48 + 48 * B + 24 * G, -1e300)
else:
    b[48 + 48 * B + 24 * G + 20 * E + 16 * C + 4 * T] = 0x4
open(p, "wb").write(b)
PY
    zstd -q -c "$1" > "$3"
}

@test ".qsm: a layout stored without τ is rebuilt from the trees; one built with a τ must equal theirs" {
    qs-score "$T/m.qsm" "$FIX/xgb-tiny/docs.letor" > "$T/want"
    # τ = 0 (qs-compile's default): damaged thresholds are never read.
    qsly "$T/m.qsm" "$T/raw"
    patch_qsly "$T/raw" thr "$T/bad.zst"
    forge QSLY "$T/bad.zst"
    for b in $(QS_TEST_LAYOUT_ONLY=1 backends); do
        run qs-score --backend "$b" "$T/h.qsm" "$FIX/xgb-tiny/docs.letor"
        assert_success
        cmp <(echo "$output") "$T/want"
    done
    # Its tree flags are still checked.
    qsly "$T/m.qsm" "$T/raw"
    patch_qsly "$T/raw" flags "$T/bad.zst"
    forge QSLY "$T/bad.zst"
    run qs-score "$T/h.qsm" /dev/null
    assert_failure 1
    assert_output "qs-score: $T/h.qsm: layout: tree 0 has unknown flags"
    # A size that disagrees with the counts.
    qsly "$T/m.qsm" "$T/raw"
    printf 'x' >> "$T/raw"
    zstd -q -c "$T/raw" > "$T/bad.zst"
    forge QSLY "$T/bad.zst"
    run qs-score "$T/h.qsm" /dev/null
    assert_failure 1
    assert_output --partial "QSLY section has the wrong size"
    # τ given: the stored layout is used, so it must match the trees.
    qs-compile --tree-block 2 -o "$T/m.qsm" "$T/m.txt"
    qsly "$T/m.qsm" "$T/raw"
    patch_qsly "$T/raw" thr "$T/bad.zst"
    forge QSLY "$T/bad.zst"
    run qs-score "$T/h.qsm" /dev/null
    assert_failure 1
    assert_output --partial "does not match the trees"
}
