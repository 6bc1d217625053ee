#!/usr/bin/env bats
# Documents as qs-score reads them: feature ids beyond the model, long number
# tokens, zstd-compressed input; what qs-score and qs-convert say about a
# file of the wrong kind.

load test_helper
bats_require_minimum_version 1.5.0

setup() {
    T="$BATS_TEST_TMPDIR"
    D="$FIX/xgb-tiny/docs.letor"
    qs-convert "$FIX/xgb-tiny/model.json" > "$T/m.txt"
    qs-compile -o "$T/m.qsm" "$T/m.txt"
}

@test "feature ids beyond the model: one warning naming the first line; --strict-features refuses" {
    # Lines 2 and 4 carry ids the 47-feature model does not have (47 is the
    # first id beyond it; ids are literal, 0-based).
    printf '1 qid:1 3:1 40:0.5\n0 qid:1 3:1 40:0.5 47:2 900:1\n\n2 qid:2 46:1 1:2\n0 qid:2 48:1 46:1 1:2\n' > "$T/x.letor"
    printf '1 qid:1 3:1 40:0.5\n0 qid:1 3:1 40:0.5\n\n2 qid:2 46:1 1:2\n0 qid:2 46:1 1:2\n' > "$T/y.letor"
    run bash -c "qs-score -o '$T/out' '$T/m.qsm' '$T/x.letor' 2> '$T/err'"
    assert_success
    run cat "$T/err"
    assert_output "qs-score: $T/x.letor:2: feature id 900 is beyond the model's 47 features (ids 0..46): ignored, here and on any later line (--strict-features refuses it)"
    # The same first line, whatever the threads and chunk boundaries.
    run bash -c "QS_CHUNK_BYTES=16 qs-score --threads 3 '$T/m.qsm' '$T/x.letor' 2>&1 >/dev/null"
    assert_success
    assert_output "$(cat "$T/err")"
    run bash -c "QS_CHUNK_BYTES=16 qs-score --threads 3 --strict-features '$T/m.qsm' '$T/x.letor' 2>&1 >/dev/null"
    assert_failure 1
    assert_output --partial "$T/x.letor:2: feature id 900"
    # The extra ids change nothing.
    qs-score "$T/m.qsm" "$T/y.letor" > "$T/want"
    cmp "$T/out" "$T/want"
    # Within the model's ids: no warning.
    run bash -c "qs-score '$T/m.qsm' '$T/y.letor' 2>&1 >/dev/null"
    assert_success
    assert_output ""
    run qs-score --strict-features -o "$T/out2" "$T/m.qsm" "$T/x.letor"
    assert_failure 1
    assert_output "qs-score: $T/x.letor:2: feature id 900 is beyond the model's 47 features (ids 0..46; --strict-features)"
    [ ! -e "$T/out2" ]
    run bash -c "ls '$T' | grep tmp || true"
    assert_output ""
    run qs-score --strict-features "$T/m.qsm" "$T/y.letor"
    assert_success
    # A QuickRank model counts only the features its trees use: ids beyond
    # are normal there, and not warned about (--strict-features still applies).
    qs-convert "$FIX/qr-oblivious/model.xml.zst" | qs-compile -o "$T/q.qsm" -
    run bash -c "qs-score '$T/q.qsm' '$FIX/qr-oblivious/docs.letor' 2>&1 >/dev/null"
    assert_success
    assert_output ""
    run qs-score --strict-features "$T/q.qsm" "$FIX/qr-oblivious/docs.letor"
    assert_failure 1
    assert_output --partial "--strict-features"
}

@test "qs-score reads zstd-compressed documents, streamed in bounded memory" {
    qs-score "$T/m.qsm" "$D" > "$T/want"
    zstd -q -c "$D" > "$T/d.zst"
    run qs-score -o "$T/got" "$T/m.qsm" "$T/d.zst"
    assert_success
    cmp "$T/got" "$T/want"
    run bash -c "qs-score '$T/m.qsm' < '$T/d.zst' > '$T/got'"
    assert_success
    cmp "$T/got" "$T/want"
    # Several frames, many threads, chunk boundaries everywhere.
    cat "$T/d.zst" "$T/d.zst" > "$T/dd.zst"
    run bash -c "QS_CHUNK_BYTES=64 qs-score --threads 3 '$T/m.qsm' '$T/dd.zst' > '$T/got'"
    assert_success
    cmp "$T/got" <(cat "$T/want" "$T/want")
    # Truncated or corrupt: exit 1, the file and what zstd says; no output file.
    head -c 500 "$T/d.zst" > "$T/t.zst"
    run qs-score -o "$T/out" "$T/m.qsm" "$T/t.zst"
    assert_failure 1
    assert_output "qs-score: $T/t.zst: zstd: truncated zstd stream"
    cp "$T/d.zst" "$T/c.zst"
    printf 'XXXXXXXX' | dd of="$T/c.zst" bs=1 seek=100 conv=notrunc 2> /dev/null
    run qs-score -o "$T/out" "$T/m.qsm" "$T/c.zst"
    assert_failure 1
    assert_output --regexp "^qs-score: $T/c.zst: zstd: "
    [ ! -e "$T/out" ]
    # 2 million documents (52 MB of text in a 5 KB file) in a few MB.
    command -v /usr/bin/time > /dev/null || skip "no /usr/bin/time"
    yes "1 qid:1 1:0.5 3:1 7:0.25" | head -2000000 | zstd -q -c > "$T/big.zst"
    run bash -c "/usr/bin/time -f %M -o '$T/rss' qs-score --threads 1 '$T/m.qsm' '$T/big.zst' | uniq -c"
    assert_success
    assert_output --regexp "^ *2000000 0.794156253$"
    echo "peak RSS: $(cat "$T/rss") KB"
    [ "$(cat "$T/rss")" -lt $((16384 + $(san_rss qs-score))) ]
}

@test "LETOR numbers of 128 bytes and more: read exactly when zero-padded, as format/letor.md says" {
    z=$(printf '0%.0s' $(seq 200))
    # Every label and value padded with 200 leading zeros: the same scores.
    sed -E "s/(^| |:)([0-9])/\1$z\2/g" "$D" > "$T/padded"
    grep -q "1:${z}0" "$T/padded"
    qs-score "$T/m.qsm" "$D" > "$T/want"
    run qs-score -o "$T/got" "$T/m.qsm" "$T/padded"
    assert_success
    cmp "$T/got" "$T/want"
    # A double model too (LightGBM), where the fast path reads doubles.
    qs-convert "$FIX/lgb-l8/model.txt.zst" | qs-compile -o "$T/l.qsm" -
    sed -E "s/(^| |:)([0-9])/\1$z\2/g" "$FIX/lgb-l8/docs.letor" > "$T/lpadded"
    qs-score "$T/l.qsm" "$FIX/lgb-l8/docs.letor" > "$T/lwant"
    run qs-score -o "$T/lgot" "$T/l.qsm" "$T/lpadded"
    assert_success
    cmp "$T/lgot" "$T/lwant"
    # Outside the fast path (201 significant digits) the 127-byte limit holds.
    printf '1 qid:1 3:0.5%s1\n' "$z" > "$T/long"
    run qs-score "$T/m.qsm" "$T/long"
    assert_failure 1
    assert_output --partial "$T/long:1: bad feature value in '3:0.50000"
}

@test "LETOR numbers: the reader's fast paths equal strtod and strtof bit for bit (tests/unit/test_number.c)" {
    # 2,000,000 generated tokens and the adversarial list, four ways each:
    # qs_parse_number, the inline fast path (Clinger, then Eisel-Lemire), and
    # qs_letor_parse with the token first on a line (SIMD window in place) and
    # last (the padded copy of the line's end), float32 and double.
    run "$UNIT/test_number"
    assert_success
    assert_output --regexp "^[0-9]+ tokens, [0-9]+ checks, 0 failures$"
}

@test "LETOR numbers: the Eisel-Lemire table is the one its generator writes (scripts/gen_pow10_128.py)" {
    command -v python3 > /dev/null || skip "python3 not found"
    python3 "$BATS_TEST_DIRNAME/../scripts/gen_pow10_128.py" > "$T/pow10.inc"
    cmp "$T/pow10.inc" "$BATS_TEST_DIRNAME/../lib/common/pow10_128.inc"
    # 10^0 and 10^-1 by hand: 1 is 2^127 / 2^127; 0.1 is 0xCCCC... rounded down.
    grep -qx '{ 0x0000000000000000ULL, 0x8000000000000000ULL }, /\* 1e0 \*/' "$T/pow10.inc"
    grep -qx '{ 0xCCCCCCCCCCCCCCCCULL, 0xCCCCCCCCCCCCCCCCULL }, /\* 1e-1 \*/' "$T/pow10.inc"
}

@test "qs-score scores any model qs-compile reads (converted and compiled in memory: the bytes of its .qsm's scores)" {
    zstd -q -d -c "$FIX/lgb-l8/model.txt.zst" > "$T/lgb.txt"
    local m d
    for m in "$FIX/xgb-tiny/model.json" "$T/m.txt" "$FIX/lgb-l8/model.txt.zst" "$T/lgb.txt"; do
        d="$FIX/xgb-tiny/docs.letor"
        [[ "$m" == *lgb* ]] && d="$FIX/lgb-l8/docs.letor"
        qs-compile -o "$T/c.qsm" "$m"
        qs-score -o "$T/want" "$T/c.qsm" "$d"
        run qs-score -o "$T/got" "$m" "$d"
        assert_success
        assert_output ""
        cmp "$T/got" "$T/want"
        # and the same from standard input, and with the options that lay it out
        qs-score --tree-block 2 --backend walk - "$d" < "$m" | cmp - "$T/want"
    done
    cmp "$T/got" "$FIX/lgb-l8/expected.txt"
    # each library's own predictions (the fixtures' oracles)
    run qs-score "$FIX/xgb-tiny/model.json" "$FIX/xgb-tiny/docs.letor"
    assert_output "$(cat "$FIX/xgb-tiny/expected.txt")"
}

@test "a model that does not convert, or two models: qs-score says what, writes nothing" {
    head -c 100 "$FIX/xgb-tiny/model.json" > "$T/short.json"
    run qs-score -o "$T/out" "$T/short.json" "$D"
    assert_failure 1
    assert_output --regexp "^qs-score: $T/short.json: byte [0-9]+: json: "
    [ ! -e "$T/out" ]
    # refused by its reader (no exact score): qs-convert's message and exit 3
    run qs-score -o "$T/out" "$FIX/catboost/categorical.json" "$D"
    assert_failure 3
    assert_output "qs-score: $(qs-convert "$FIX/catboost/categorical.json" 2>&1 >/dev/null | sed 's/^qs-convert: //')"
    assert_output --partial "categorical features are not supported"
    [ ! -e "$T/out" ]
    run qs-score -o "$T/out" "$FIX/xgb-tiny/model.json" "$T/m.qsm"
    assert_failure 1
    assert_output "qs-score: $T/m.qsm: this is a compiled .qsm model, not documents (qs-score MODEL.qsm DOCS)"
    [ ! -e "$T/out" ]
    run qs-score -o "$T/out" "$D" "$T/m.qsm"
    assert_failure 2
    assert_line --index 0 "qs-score: $D is not a model but $T/m.qsm is: the model comes first (qs-score $T/m.qsm $D)"
    [ ! -e "$T/out" ]
}

@test "a model of the wrong kind: qs-convert and qs-compile say what it is and what to run" {
    run qs-convert -o "$T/out" "$T/m.qsm"
    assert_failure 1
    assert_output "qs-convert: $T/m.qsm: this is a compiled .qsm model, which qs-convert does not read (it is already compiled: score it with qs-score)"
    run qs-compile -o "$T/out" "$T/m.qsm"
    assert_failure 1
    assert_output "qs-compile: $T/m.qsm: this is a compiled .qsm model already (score it with qs-score)"
    [ ! -e "$T/out" ]
}

@test "scripts/setup.sh installs every command the tests skip without" {
    want=$(sed -n 's/^\(build\|test\)_pkgs="\(.*\)"$/ \2 /p' "$BATS_TEST_DIRNAME/../scripts/setup.sh" | tr '\n' ' ')
    [ -n "$want" ]
    # command -v NAME ... || skip: NAME's Debian package must be in the list.
    for cmd in $(grep -ho 'command -v [a-z/][^ )"]*' "$BATS_TEST_DIRNAME"/*.bats | awk '{ print $3 }' | sort -u); do
        case "$cmd" in
            /usr/bin/time) pkg=time ;;
            taskset) continue ;; # util-linux: essential, always installed
            qs-*) continue ;;    # built here
            script) continue ;;  # bsdutils: essential, always installed
            nvcc) continue ;;    # the installed CUDA toolkit, not a Debian package (doc/gpu.md)
            pkg-config) pkg=pkg-config ;;
            man) pkg=man-db ;;
            groff) pkg=groff-base ;;
            *) pkg=$cmd ;;
        esac
        case "$want" in
            *" $pkg "*) ;;
            *) echo "tests need $cmd, but setup.sh does not install $pkg"; return 1 ;;
        esac
    done
}

@test "scripts/setup.sh: demo asks for the build's packages only, test for the tests' too" {
    # Every package missing (dpkg-query finds none) and not root: setup.sh
    # names what it would install, and stops.
    mkdir -p "$T/fake"
    printf '#!/bin/sh\nexit 1\n' > "$T/fake/dpkg-query"
    printf '#!/bin/sh\necho 1000\n' > "$T/fake/id"
    chmod +x "$T/fake/dpkg-query" "$T/fake/id"
    PATH="$T/fake:$PATH" run "$QS_ROOT/scripts/setup.sh" demo
    assert_failure 4
    assert_output --partial "missing Debian packages: gcc make "
    assert_output --partial " libzstd-dev "
    local p
    for p in openssh-server openssh-client bats parallel rsync jq; do
        if [[ "$output " == *" $p "* ]]; then echo "demo would install $p"; return 1; fi
    done
    PATH="$T/fake:$PATH" run "$QS_ROOT/scripts/setup.sh" test
    assert_failure 4
    assert_output --partial " libzstd-dev "
    for p in openssh-server bats parallel; do
        [[ "$output " == *" $p "* ]] || { echo "test would not install $p"; return 1; }
    done
    PATH="$T/fake:$PATH" run "$QS_ROOT/scripts/setup.sh" nothing
    assert_failure 2
}

@test "qs-score: files in the wrong order, a .qsm as documents, CSV or TSV read as LETOR, a terminal on stdin: what to type" {
    # stderr_is STATUS MESSAGE COMMAND...: the exit status and the whole of
    # standard error (scores before a bad line go to standard output)
    stderr_is() {
        local want_status="$1" want="$2"; shift 2
        run --separate-stderr "$@"
        [ "$status" = "$want_status" ] || { echo "$*: exit $status: $stderr"; return 1; }
        [ "$stderr" = "$want" ] || { printf '%s:\n got: %s\nwant: %s\n' "$*" "$stderr" "$want"; return 1; }
    }
    # (and no warning about a tuning record before it)
    stderr_is 2 "qs-score: $D is not a model but $T/m.qsm is: the model comes first (qs-score $T/m.qsm $D)"$'\n'"Try 'qs-score --help' for more information." \
        qs-score "$D" "$T/m.qsm"
    stderr_is 1 "qs-score: $T/m.qsm: this is a compiled .qsm model, not documents (qs-score MODEL.qsm DOCS)" \
        qs-score "$T/m.qsm" "$T/m.qsm"
    stderr_is 1 "qs-score: (stdin): this is a compiled .qsm model, not documents (qs-score MODEL.qsm DOCS)" \
        bash -c "qs-score '$T/m.qsm' < '$T/m.qsm'"
    printf '1,0.5,0.25\n' > "$T/d.csv"
    stderr_is 1 "qs-score: $T/d.csv:1: bad label '1,0.5,0.25' (expected a number); comma-separated values? (--input csv; --header when the first row names the columns)" \
        qs-score "$T/m.qsm" "$T/d.csv"
    printf 'label\tf1\n1\t0.5\n' > "$T/h.tsv"
    stderr_is 1 "qs-score: $T/h.tsv:1: bad label 'label' (expected a number); a header row? (--input csv or tsv with --header)" \
        qs-score "$T/m.qsm" "$T/h.tsv"
    printf '1\t0.5\t0.25\n' > "$T/d.tsv"
    stderr_is 1 "qs-score: $T/d.tsv:1: bad feature token '0.5' (expected INDEX:VALUE); columns without INDEX:? (--input tsv or csv)" \
        qs-score "$T/m.qsm" "$T/d.tsv"
    # A bad label further down is not a header.
    printf '1 qid:1 1:0.5\nx qid:1 1:0.5\n' > "$T/x.letor"
    stderr_is 1 "qs-score: $T/x.letor:2: bad label 'x' (expected a number)" qs-score "$T/m.qsm" "$T/x.letor"
    # A terminal on standard input: refused at once instead of waiting.
    command -v script > /dev/null || skip "script (bsdutils) is not installed"
    run script -qec "qs-score '$T/m.qsm'; echo \"exit \$?\"" /dev/null
    assert_output --partial "qs-score: refusing to read documents from a terminal: give DOCS, or pipe them in (qs-score $T/m.qsm DOCS, or ... | qs-score $T/m.qsm)"
    assert_output --partial "exit 2"
}
