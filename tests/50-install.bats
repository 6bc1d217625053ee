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
             share/man/man1/qs-score.1 share/man/man1/qs-eval.1 share/man/man1/qs-blocktune.1 \
             share/man/man3/libqs.3 share/doc/qs/format/qsm.md share/doc/qs/format/ensemble-text.md \
             share/doc/qs/format/letor.md share/doc/qs/format/dense.md; do
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
    run env MANPATH="$PREFIX_DIR/share/man" man -w 3 libqs
    assert_output "$PREFIX_DIR/share/man/man3/libqs.3"
    run env MANPATH="$PREFIX_DIR/share/man" MANWIDTH=80 man 3 libqs
    assert_output --partial "ABI POLICY"
    assert_output --partial "qs_scorer_load_file"
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

@test "CPPFLAGS reaches every compile (Debian's hardening flags); the tools are compiled without lib/ on the include path" {
    cd "$QS_ROOT"
    run make -n -B V=1 CPPFLAGS=-DQS_PROBE_CPPFLAGS=7 build/lib/common/error.o build/tools/qs-convert/main.o
    assert_success
    local lib tool
    lib=$(printf '%s\n' "$output" | grep -- ' -c lib/common/error.c')
    tool=$(printf '%s\n' "$output" | grep -- ' -c tools/qs-convert/main.c')
    [[ "$lib" == *" -DQS_PROBE_CPPFLAGS=7 "* ]] || { echo "no CPPFLAGS: $lib"; return 1; }
    [[ "$tool" == *" -DQS_PROBE_CPPFLAGS=7 "* ]] || { echo "no CPPFLAGS: $tool"; return 1; }
    [[ " $lib " == *" -Ilib "* ]] || { echo "library compile without -Ilib: $lib"; return 1; }
    [[ " $tool " != *" -Ilib "* ]] || { echo "tool compile with -Ilib: $tool"; return 1; }
    # so a tool that includes one of the library's own headers does not compile
    printf '#include "qs.h"\n#include "tool.h"\nint main(void) { return 0; }\n' > "$BATS_TEST_TMPDIR/ok.c"
    printf '#include "qs.h"\n#include "common/common.h"\nint main(void) { return 0; }\n' > "$BATS_TEST_TMPDIR/bad.c"
    local cmd=${tool%% -c *}
    cmd=${cmd/-MMD -MP/}
    run bash -c "$cmd -c '$BATS_TEST_TMPDIR/ok.c' -o '$BATS_TEST_TMPDIR/ok.o'"
    assert_success
    run bash -c "$cmd -c '$BATS_TEST_TMPDIR/bad.c' -o '$BATS_TEST_TMPDIR/bad.o'"
    assert_failure
    assert_output --partial "common/common.h"
}

@test "make READERS=0 lib: the library without the model readers scores a .qsm exactly, needs neither libexpat nor protobuf-c, and refuses foreign models" {
    [ -z "${SANITIZE:-}" ] || skip "built once, by the plain pass"
    cd "$QS_ROOT"
    run make -s -j"$(nproc)" READERS=0 lib
    assert_success
    local so=build-scoring/libqs.so.0
    [ -e "$so" ]
    run ldd "$so"
    refute_output --partial "expat"
    refute_output --partial "protobuf"
    run ldd build/libqs.so.0
    assert_output --partial "expat"
    # the same scoring API: examples/score.c against it
    cc -std=c11 -D_GNU_SOURCE -Wall -Werror -Iinclude examples/score.c -Lbuild-scoring -lqs \
        -o "$BATS_TEST_TMPDIR/score"
    qs-convert "$FIX/lgb-l8/model.txt.zst" | qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" -
    LD_LIBRARY_PATH=build-scoring "$BATS_TEST_TMPDIR/score" "$BATS_TEST_TMPDIR/m.qsm" \
        < "$FIX/lgb-l8/docs.letor" > "$BATS_TEST_TMPDIR/got"
    cmp "$BATS_TEST_TMPDIR/got" "$FIX/lgb-l8/expected.txt"
    # a foreign model: refused, saying why; canonical text still read
    cat > "$BATS_TEST_TMPDIR/conv.c" << 'C'
#include <qs.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    FILE *f = fopen(argv[1], "rb");
    static char buf[1 << 20];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    qs_error err;
    qs_error_clear(&err);
    qs_model *m = qs_convert(QS_FMT_UNKNOWN, buf, n, &err);
    if (!m) {
        printf("%d %s\n", (int)err.code, err.msg);
        return 1;
    }
    qs_model_free(m);
    printf("ok\n");
    return 0;
}
C
    cc -std=c11 -Iinclude "$BATS_TEST_TMPDIR/conv.c" -Lbuild-scoring -lqs -o "$BATS_TEST_TMPDIR/conv"
    run env LD_LIBRARY_PATH=build-scoring "$BATS_TEST_TMPDIR/conv" "$FIX/xgb-tiny/model.json"
    assert_failure 1
    assert_output "2 this libqs is built without the model readers (make READERS=0): it reads canonical ensemble text and .qsm files only, not XGBoost JSON, UBJSON or binary; convert the model where qs-convert reads it"
    # every foreign row of the table is refused by its description (a .cbm too)
    run env LD_LIBRARY_PATH=build-scoring "$BATS_TEST_TMPDIR/conv" "$(plain "$FIX/catboost-cbm/rmse.cbm.zst")"
    assert_failure 1
    assert_output "2 this libqs is built without the model readers (make READERS=0): it reads canonical ensemble text and .qsm files only, not CatBoost binary (.cbm); convert the model where qs-convert reads it"
    qs-convert "$FIX/xgb-tiny/model.json" > "$BATS_TEST_TMPDIR/x.txt"
    run env LD_LIBRARY_PATH=build-scoring "$BATS_TEST_TMPDIR/conv" "$BATS_TEST_TMPDIR/x.txt"
    assert_success
    assert_output "ok"
}
