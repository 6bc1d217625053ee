#!/usr/bin/env bats
# The installed library: make install, the pkg-config file, the example
# program built against it, and what the shared library exports.

load test_helper

setup_file() {
    export PREFIX_DIR="$BATS_FILE_TMPDIR/prefix"
    # The build the suite tests (plain, or sanitizers when SANITIZE is set).
    make -s -C "$QS_ROOT" install PREFIX="$PREFIX_DIR" SANITIZE="${SANITIZE:-}" >/dev/null
}

@test "make install puts the tools, their manual pages, libqs.a, libqs.so (with its soname), qs.h and qs.pc in PREFIX" {
    local f
    for f in bin/qs-convert bin/qs-compile bin/qs-score bin/qs-eval bin/qs-blocktune lib/libqs.a \
             lib/libqs.so lib/libqs.so.0 include/qs.h lib/pkgconfig/qs.pc \
             share/man/man1/qs-convert.1 share/man/man1/qs-compile.1 \
             share/man/man1/qs-score.1 share/man/man1/qs-eval.1 share/man/man1/qs-blocktune.1; do
        [ -e "$PREFIX_DIR/$f" ] || { echo "missing $f"; return 1; }
    done
    run readelf -d "$PREFIX_DIR/lib/libqs.so"
    assert_output --partial "Library soname: [libqs.so.0]"
    run env PKG_CONFIG_PATH="$PREFIX_DIR/lib/pkgconfig" pkg-config --modversion qs
    assert_output "$(sed -n 's/^#define QS_VERSION_STRING "\(.*\)"/\1/p' "$QS_ROOT/include/qs.h")"
    run env PKG_CONFIG_PATH="$PREFIX_DIR/lib/pkgconfig" pkg-config --cflags --libs qs
    assert_output --partial "-I$PREFIX_DIR/include"
    assert_output --partial "-lqs"
}

@test "examples/score.c builds against the installed library with pkg-config and scores exactly" {
    command -v pkg-config >/dev/null || skip "pkg-config is not installed"
    local flags san=""
    flags=$(PKG_CONFIG_PATH="$PREFIX_DIR/lib/pkgconfig" pkg-config --cflags --libs qs)
    [ -n "${SANITIZE:-}" ] && san="-fsanitize=$SANITIZE"
    cc -std=c11 -D_GNU_SOURCE -Wall -Werror $san "$QS_ROOT/examples/score.c" $flags \
        -o "$BATS_TEST_TMPDIR/score"
    # It links the shared library.
    run env LD_LIBRARY_PATH="$PREFIX_DIR/lib" ldd "$BATS_TEST_TMPDIR/score"
    assert_output --partial "$PREFIX_DIR/lib/libqs.so.0"
    qs-convert "$FIX/lgb-l8/model.txt.zst" > "$BATS_TEST_TMPDIR/m.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" "$BATS_TEST_TMPDIR/m.txt"
    LD_LIBRARY_PATH="$PREFIX_DIR/lib" "$BATS_TEST_TMPDIR/score" "$BATS_TEST_TMPDIR/m.qsm" \
        < "$FIX/lgb-l8/docs.letor" > "$BATS_TEST_TMPDIR/got"
    cmp "$BATS_TEST_TMPDIR/got" "$FIX/lgb-l8/expected.txt"
}

@test "man finds the installed pages" {
    command -v man > /dev/null || skip "man (Debian's man-db) is not installed"
    local t
    for t in qs-convert qs-compile qs-score qs-eval qs-blocktune; do
        run env MANPATH="$PREFIX_DIR/share/man" man -w "$t"
        assert_success
        assert_output "$PREFIX_DIR/share/man/man1/$t.1"
        cmp "$PREFIX_DIR/share/man/man1/$t.1" "$QS_ROOT/man/$t.1"
    done
    run env MANPATH="$PREFIX_DIR/share/man" MANWIDTH=80 man qs-score
    assert_success
    assert_output --partial "--input FORMAT"
}

@test "libqs.so exports only qs_ symbols" {
    run nm -D --defined-only "$PREFIX_DIR/lib/libqs.so"
    assert_success
    local names
    names=$(echo "$output" | awk '{ print $NF }')
    [ -n "$names" ]
    echo "$names" | grep -q '^qs_scorer_load$'
    echo "$names" | grep -q '^qs_backend_count$'
    local extra
    # (AddressSanitizer adds an __odr_asan.NAME twin of each exported object.)
    extra=$(echo "$names" | grep -v '^qs_' | grep -v '^__odr_asan\.qs_' || true)
    [ -z "$extra" ] || { echo "exported beyond the API: $extra"; return 1; }
    # Internal helpers stay hidden.
    ! echo "$names" | grep -q '^qs_fail$'
}

@test "make uninstall removes what make install put there" {
    make -s -C "$QS_ROOT" uninstall PREFIX="$PREFIX_DIR" SANITIZE="${SANITIZE:-}" >/dev/null
    run find "$PREFIX_DIR" -type f -o -type l
    assert_output ""
    make -s -C "$QS_ROOT" install PREFIX="$PREFIX_DIR" SANITIZE="${SANITIZE:-}" >/dev/null
}
