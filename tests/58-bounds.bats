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
    refused_small "byte [0-9]+: section 0: raw size 1073741824 is more than its counts allow \(32888\)"
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
    # An endless input stops at the limit, in bounded memory.
    run env QS_MAX_INPUT=16M /usr/bin/time -f %M -o "$T/rss" qs-convert /dev/zero
    assert_failure 1
    assert_output "qs-convert: /dev/zero: input larger than the limit of 16777216 bytes (set QS_MAX_INPUT to raise it)"
    [ "$(tail -n 1 "$T/rss")" -lt $((65536 + $(san_rss qs-convert))) ]
    run env QS_MAX_INPUT=lots qs-convert "$T/m.txt"
    assert_failure 2
    assert_output --partial "bad QS_MAX_INPUT 'lots'"
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
