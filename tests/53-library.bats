#!/usr/bin/env bats
# The C library through its public header: loading a .qsm from a file, the
# version macros (tests/unit/test_loadfile.c), the one open path
# (tests/unit/test_open.c).

load test_helper

@test "qs_scorer_load_file: the same scorer as from memory; errors name the file (IO, format); version macros" {
    local T="$BATS_TEST_TMPDIR"
    qs-convert "$FIX/xgb-tiny/model.json" | qs-compile -o "$T/m.qsm" -
    printf 'not a model at all, but long enough to have a header of sixty-four bytes.....' > "$T/x.qsm"
    mkdir "$T/dir"
    run "$UNIT/test_loadfile" "$T/m.qsm" "$T/x.qsm" "$T/missing.qsm" "$T/dir"
    assert_success
    assert_output "ok"
    # and it can fail: a model that is not the one loaded from memory
    run "$UNIT/test_loadfile" "$T/x.qsm" "$T/x.qsm" "$T/missing.qsm" "$T/dir"
    assert_failure
    assert_output --partial "FAIL"
}

@test "qs_scorer_load_file: the read stops at a wrong header (/dev/zero: 64 bytes, not 16 GiB) and at the size a right one records" {
    local T="$BATS_TEST_TMPDIR"
    qs-convert "$FIX/xgb-tiny/model.json" | qs-compile -o "$T/m.qsm" -
    printf 'not a model at all, but long enough to have a header of sixty-four bytes.....' > "$T/x.qsm"
    mkdir "$T/dir"
    { cat "$T/m.qsm"; printf 'x'; } > "$T/padded.qsm"
    run timeout 60 /usr/bin/time -f %M -o "$T/rss" "$UNIT/test_loadfile" "$T/m.qsm" "$T/x.qsm" \
        "$T/missing.qsm" "$T/dir" "$T/padded.qsm=longer than the" \
        "/dev/zero=not a .qsm file (bad magic number)"
    assert_success
    assert_output "ok"
    [ "$(tail -n 1 "$T/rss")" -lt $((40000 + $(san_rss "$UNIT/test_loadfile"))) ]
    # a header that records more than the file holds: refused as truncated,
    # without a buffer of the recorded size
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
    run /usr/bin/time -f %M -o "$T/rss" "$UNIT/test_loadfile" "$T/m.qsm" "$T/x.qsm" \
        "$T/missing.qsm" "$T/dir" "$T/big.qsm=differs from the recorded 1099511627776 (truncated"
    assert_success
    [ "$(tail -n 1 "$T/rss")" -lt $((40000 + $(san_rss "$UNIT/test_loadfile"))) ]
}

@test "qs_open and qs_open_file: a stream opens as its path does (qs-compile's image); NO_CONVERT, UNNAMED, errno (tests/unit/test_open.c)" {
    local T="$BATS_TEST_TMPDIR" m
    zstd -q -d -c "$FIX/lgb-l8/model.txt.zst" > "$T/lgb.txt"
    qs-convert "$FIX/xgb-tiny/model.json" > "$T/canon.txt"
    for m in "$FIX/xgb-tiny/model.json" "$T/lgb.txt" "$T/canon.txt" "$FIX/catboost/tiny.json"; do
        qs-compile -o "$T/m.qsm" "$m"
        run "$UNIT/test_open" "$m" "$T/m.qsm" "$T/missing"
        assert_success
        assert_output "ok"
    done
}

@test "the source libraries' table and the readers' table: every row gives every field, every source and format has its row (tests/unit/test_tables.c)" {
    run "$UNIT/test_tables"
    assert_success
    assert_output --regexp '^[0-9]+ checks, 0 failures$'
    # the Python binding's and qs-convert's lists of formats are the table's
    run qs-convert --from nosuch /dev/null
    assert_failure 2
    assert_output --partial "catboost-cbm (cbm)"
    grep -q 'qs_reader_list(.*QS_READERS_EVERY_NAME)' "$QS_ROOT"/python/src/qs_toolkit/c-ext/model.c
    grep -q 'qs_reader_list(' "$QS_ROOT"/tools/common/tool.c
    ! grep -q '"unknown model format .* (expected lightgbm' "$QS_ROOT"/python/src/qs_toolkit/c-ext/*.c
    # no part of qs names a source library outside the tables but where a
    # reader or a source-specific rule lives
    run grep -n 'QS_SRC_\(LIGHTGBM\|XGBOOST\|QUICKRANK\|CATBOOST\|ONNX\)' \
        "$QS_ROOT"/lib/model/*.c "$QS_ROOT"/lib/score/transform.c "$QS_ROOT"/lib/eval/*.c \
        "$QS_ROOT"/lib/layout/*.c "$QS_ROOT"/tools/*/*.c "$QS_ROOT"/python/src/qs_toolkit/c-ext/*.c
    assert_output ""
}
