#!/usr/bin/env bats
# Bad input: a clear `qs-TOOL: where: what` message, a documented exit code,
# no crash and no partial output file.

load test_helper
bats_require_minimum_version 1.5.0

setup() {
    T="$BATS_TEST_TMPDIR"
    qs-convert "$FIX/xgb-tiny/model.json" > "$T/m.txt"
    qs-compile -o "$T/m.qsm" "$T/m.txt"
}

no_leftovers() { # no output file and no temporary file in $T
    run bash -c "ls '$T' | grep -E '^out|tmp' || true"
    assert_output ""
}

@test "qs-convert: unknown format, garbage, truncated models" {
    printf 'hello world\n' > "$T/x"
    run qs-convert -o "$T/out" "$T/x"
    assert_failure 1
    assert_output --partial "qs-convert: $T/x: unrecognised model format"
    no_leftovers
    head -c 1500 "$FIX/xgb-tiny/model.json" > "$T/trunc.json"
    run qs-convert -o "$T/out" "$T/trunc.json"
    assert_failure 1
    assert_output --regexp "^qs-convert: $T/trunc.json"
    no_leftovers
    head -c 30000 <(zstd -dc "$FIX/lgb-l8/model.txt.zst") > "$T/trunc.txt"
    run qs-convert -o "$T/out" "$T/trunc.txt"
    assert_failure 1
    assert_output --regexp "^qs-convert: $T/trunc.txt"
    no_leftovers
    head -c 3000 <(zstd -dc "$FIX/qr-oblivious/model.xml.zst") > "$T/trunc.xml"
    run qs-convert -o "$T/out" "$T/trunc.xml"
    assert_failure 1
    assert_output --regexp "^qs-convert: $T/trunc.xml:[0-9]+: "
    no_leftovers
    # 100 bytes from inside a zstd frame (no magic number): fixed garbage.
    tail -c +1001 "$FIX/xgb-agaricus/model.json.zst" | head -c 100 > "$T/bin"
    run qs-convert --from xgboost "$T/bin"
    assert_failure 1
    assert_output --regexp "^qs-convert: $T/bin"
}

@test "qs-convert: missing file and bad options" {
    run qs-convert "$T/nonexistent"
    assert_failure 4
    assert_output --partial "cannot open"
    run qs-convert --from nosuch "$T/m.txt"
    assert_failure 2
    run qs-convert a b
    assert_failure 2
}

@test "canonical text: each malformed field is refused with its line" {
    check() { # check SED-EXPR EXPECTED-MESSAGE [EXIT-CODE, default 1]
        sed "$1" "$T/m.txt" > "$T/bad.txt"
        run qs-compile -o "$T/out.qsm" "$T/bad.txt"
        assert_failure "${3:-1}"
        assert_output --partial "$2"
        [ ! -e "$T/out.qsm" ]
    }
    check '1s/.*/qs-ensemble 9/' "version 9 is not supported" 3
    check 's/^compare lt/compare xx/' ":4: bad comparison 'xx'"
    check 's/^features 47/features -1/' "bad feature count '-1'"
    check 's/^features 47/features 99999999999/' "beyond the limit"
    check 's/^trees 3/trees 4/' ":37: expected 'tree'"
    check '/^tree 0/{n;s/ 1 2$/ 1 9/}' "child 9 out of range"
    check '/^tree 0/{n;s/ 1 2$/ 0 2/}' "reached twice"
    check '/^tree 0/{n;s/num 40/num 47/}' "feature 47 out of range"
    check '/^tree 0/{n;s/num 40 [^ ]*/num 40 abc/}' "bad threshold 'abc'"
    check '/^tree 0/{n;n;n;n;s/leaf .*/leaf 1.5.5/}' "bad leaf value '1.5.5'"
    check 's/^end$/end\nextra/' "text after 'end'"
    check '/^tree 1 /{n;s/^0 /7 /}' "expected node 0"
    check '/^tree 0/{n;s/ nan / maybe /}' "bad missing rule"
}

@test "qs-compile refuses foreign text and binary-looking input" {
    printf 'garbage\n' > "$T/g"
    run qs-compile -o "$T/out.qsm" "$T/g"
    assert_failure 1
    assert_output --partial "not canonical ensemble text"
    no_leftovers
}

@test ".qsm: truncated, bit-flipped, wrong magic, empty: refused" {
    size=$(stat -c %s "$T/m.qsm")
    head -c $((size - 1)) "$T/m.qsm" > "$T/t.qsm"
    run qs-score "$T/t.qsm" < "$FIX/xgb-tiny/docs.letor"
    assert_failure 1
    assert_output --partial "truncated"
    for off in 9 40 100 200 $((size - 3)); do
        cp "$T/m.qsm" "$T/f.qsm"
        printf '\x5a' | dd of="$T/f.qsm" bs=1 seek=$off conv=notrunc 2>/dev/null
        run qs-score "$T/f.qsm" < "$FIX/xgb-tiny/docs.letor"
        # A major version this build does not read is unsupported (3), the
        # rest is damage (1).
        if [ "$off" = 9 ]; then
            assert_failure 3
            assert_output --regexp "qs-score: $T/f.qsm: byte 8: .qsm version [0-9]+ is not supported"
        else
            assert_failure 1
            assert_output --regexp "qs-score: $T/f.qsm: byte [0-9]+: .*checksum mismatch"
        fi
    done
    printf 'not a model at all, but long enough to have a header of sixty-four bytes.....' > "$T/x.qsm"
    run qs-score "$T/x.qsm" < /dev/null
    assert_failure 1
    assert_output --partial "not a .qsm file"
    : > "$T/e.qsm"
    run qs-score "$T/e.qsm" < /dev/null
    assert_failure 1
}

@test "qs-score: bad feature lines name the file and line" {
    printf '1 qid:1 1:0.5\n0 qid:1 abc:1\n' > "$T/d"
    run qs-score -o "$T/out" "$T/m.qsm" "$T/d"
    assert_failure 1
    assert_output "qs-score: $T/d:2: bad feature token 'abc:1' (expected INDEX:VALUE)"
    no_leftovers
    run bash -c "printf '1 qid:1 3:0.5x\n' | qs-score '$T/m.qsm'"
    assert_failure 1
    assert_output "qs-score: (stdin):1: bad feature value in '3:0.5x' (expected a number)"
    run bash -c "printf 'x qid:1 3:0.5\n' | qs-score '$T/m.qsm'"
    assert_failure 1
    assert_output --partial "(stdin):1: bad label 'x'"
    run bash -c "printf '1 99999999999:1\n' | qs-score '$T/m.qsm'"
    assert_failure 1
    assert_output --partial "out of range"
    run bash -c "printf '1 qid:1 qid:2 3:1\n' | qs-score '$T/m.qsm'"
    assert_failure 1
    assert_output --partial "more than one qid"
    run bash -c "printf '1 3:1\0 4:2\n' | qs-score '$T/m.qsm'"
    assert_failure 1
    run bash -c "head -c 100000 /dev/urandom | qs-score '$T/m.qsm' > /dev/null"
    assert_failure 1
}

@test "qs-score: a line of megabytes is fine; ids beyond the model are ignored" {
    # The model has features 0..46: ids 47..300000 must change nothing.
    grep -q '^features 47$' "$T/m.txt"
    awk 'BEGIN { printf "1 qid:1"; for (i = 1; i <= 300000; i++) printf " %d:0.5", i; print "" }' > "$T/big"
    awk 'BEGIN { printf "1 qid:1"; for (i = 1; i <= 46; i++) printf " %d:0.5", i; print "" }' > "$T/small"
    [ "$(wc -c < "$T/big")" -gt 2000000 ]
    qs-score "$T/m.qsm" "$T/small" > "$T/want"
    qs-score "$T/m.qsm" "$T/big" > "$T/got" 2> "$T/err"
    # One warning names the first line with such ids (--strict-features refuses).
    run cat "$T/err"
    assert_output --partial "$T/big:1: feature id 300000 is beyond the model's 47 features"
    compare_scores "$T/got" "$T/want"
    # And the score of the 46 features is the model's, not a default: it
    # differs from the empty document's.
    printf '1 qid:1\n' > "$T/empty.letor"
    qs-score "$T/m.qsm" "$T/empty.letor" > "$T/empty"
    run cmp -s "$T/want" "$T/empty"
    assert_failure
}

@test "qs-score: a closed pipe is a quiet stop" {
    for i in $(seq 200); do cat "$FIX/xgb-tiny/docs.letor"; done > "$T/many"
    # qs-score's own status: 0, or killed by SIGPIPE (128 + 13), nothing else.
    run bash -c "qs-score '$T/m.qsm' < '$T/many' | head -1; s=\${PIPESTATUS[0]}; [ \$s = 0 ] || [ \$s = 141 ] || { echo \"qs-score exit \$s\"; exit 1; }"
    assert_success
    assert_output "1.01585567"
}

@test "qs-score: a full disk is an error, not a silent truncation" {
    [ -w /dev/full ] || skip "no /dev/full"
    run bash -c "qs-score '$T/m.qsm' < '$FIX/xgb-tiny/docs.letor' > /dev/full"
    assert_failure 4
    assert_output --partial "write error"
}

@test "qs-score: usage errors" {
    run qs-score
    assert_failure 2
    run qs-score --absent sometimes "$T/m.qsm"
    assert_failure 2
    assert_output --partial "bad --absent 'sometimes'"
    run qs-score "$T/nonexistent.qsm"
    assert_failure 4
}

@test "usage errors: one line naming the mistake, then Try 'TOOL --help' (every tool)" {
    # check TOOL EXPECTED-FIRST-LINE ARGS...: exit 2, nothing on stdout, two
    # lines on stderr: the mistake and the pointer to --help.
    check() {
        local tool="$1" want="$2"; shift 2
        run --separate-stderr "$tool" "$@"
        [ "$status" = 2 ] || { echo "$tool $*: exit $status"; return 1; }
        [ -z "$output" ] || { echo "$tool $*: wrote to stdout: $output"; return 1; }
        [ "$stderr" = "$tool: $want"$'\n'"Try '$tool --help' for more information." ] ||
            { printf '%s %s: stderr:\n%s\n' "$tool" "$*" "$stderr"; return 1; }
    }
    check qs-score "unknown option '-q'" -q "$T/m.qsm"
    check qs-score "unknown option '-T'" -T2 "$T/m.qsm"
    check qs-score "unknown option '--bogus'" --bogus=1 "$T/m.qsm"
    check qs-score "option '--input' needs a value" "$T/m.qsm" --input
    check qs-score "missing MODEL.qsm (qs-score MODEL.qsm [DOCS|-])"
    check qs-score "too many arguments: one model and at most one documents file (for several, concatenate them: cat A B | qs-score MODEL.qsm)" "$T/m.qsm" a b
    check qs-score "bad --absent 'sometimes' (expected zero or missing)" --absent sometimes "$T/m.qsm"
    check qs-convert "unknown option '-q'" -q
    check qs-convert "option '-f' needs a value" -f
    check qs-convert "unknown format 'nosuch' (expected lightgbm, xgboost, catboost, onnx, catboost-cbm (cbm) or quickrank (ranklib))" --from nosuch "$T/m.txt"
    check qs-convert "too many arguments: one model at a time" a b
    check qs-compile "unknown option '--bogus'" --bogus
    check qs-compile "too many arguments: one model at a time" a b
    check qs-compile "--json needs --info" --json "$T/m.txt"
    check qs-eval "unknown option '-x'" -x
    check qs-eval "option '--gain' needs a value" --gain
    check qs-eval "too many arguments" a b c
    check qs-blocktune "missing MODEL.qsm (qs-blocktune [options] MODEL.qsm [SAMPLE|-])"
    check qs-blocktune "unknown option '-q'" -q "$T/m.qsm"
    check qs-blocktune "too many arguments: one model and at most one sample file" a b c
}

@test "empty numbers: one rule in every tool (an option's empty value, a sign or a space is a usage error; a variable set to '' is unset)" {
    # bad OPTION-VALUE EXPECTED TOOL ARGS...: exit 2 and the message
    bad() {
        local want="$1"; shift
        run --separate-stderr "$@"
        [ "$status" = 2 ] || { echo "$*: exit $status"; return 1; }
        [[ "$stderr" == *"$want"* ]] || { echo "$*: $stderr"; return 1; }
    }
    for o in --threads --trees --tree-block --doc-block --delta --order-s --order-d --gpu-batch --device; do
        bad "bad $o ''" qs-score "$o=" "$T/m.qsm" /dev/null
    done
    bad "bad --features ''" qs-score --input f32 --features= "$T/m.qsm" /dev/null
    bad "bad --threads ' 2'" qs-score "--threads= 2" "$T/m.qsm" /dev/null
    bad "bad --threads '+2'" qs-score --threads=+2 "$T/m.qsm" /dev/null
    bad "bad --delta '4 '" qs-score "--delta=4 " "$T/m.qsm" /dev/null
    for o in --delta --tree-block --doc-block; do
        bad "bad " qs-compile "$o=" -o "$T/x.qsm" "$T/m.txt"
    done
    for o in --threads --sample-docs --seed --repeat --budget; do
        bad "bad $o ''" qs-blocktune "$o=" -o "$T/x.qsm" "$T/m.qsm" /dev/null
    done
    bad "bad -k ''" qs-eval -k ''
    bad "bad --column ''" qs-eval --column=
    [ ! -e "$T/x.qsm" ]
    # an empty variable is as if unset; a bad one is a usage error naming it
    QS_THREADS= qs-score "$T/m.qsm" /dev/null
    bad "bad QS_THREADS 'x'" env QS_THREADS=x qs-score "$T/m.qsm" /dev/null
    QS_MAX_INPUT= qs-score "$T/m.qsm" /dev/null
}

@test "numbers: a sign, a space or an overflow is a usage error in every option and variable (qs_parse_count)" {
    bad() { # bad EXPECTED TOOL ARGS...: exit 2 and the message
        local want="$1"; shift
        run --separate-stderr "$@"
        [ "$status" = 2 ] || { echo "$*: exit $status"; return 1; }
        [[ "$stderr" == *"$want"* ]] || { echo "$*: $stderr"; return 1; }
    }
    local v
    for v in -0 +0 ' 1' '1 ' 0x1 1e0 18446744073709551616; do
        bad "bad --device '$v' (expected a device ordinal, 0 or more)" qs-score --device "$v" "$T/m.qsm" /dev/null
        bad "bad --trees '$v'" qs-score --trees "$v" "$T/m.qsm" /dev/null
        bad "bad --threads '$v'" qs-score --threads "$v" "$T/m.qsm" /dev/null
        bad "bad QS_THREADS '$v'" env QS_THREADS="$v" qs-score "$T/m.qsm" /dev/null
        bad "bad QS_CHUNK_BYTES '$v'" env QS_CHUNK_BYTES="$v" qs-score "$T/m.qsm" /dev/null
        bad "bad QS_NUMA_REPLICAS '$v'" env QS_NUMA_REPLICAS="$v" qs-score "$T/m.qsm" /dev/null
        bad "bad QS_MAX_INPUT '$v'" env QS_MAX_INPUT="$v" qs-score "$T/m.qsm" /dev/null
        bad "bad -k '$v'" qs-eval -k "$v" /dev/null /dev/null
        bad "bad -k '1,$v'" qs-eval -k "1,$v" /dev/null /dev/null
        bad "bad --column '$v'" qs-eval --column "$v" /dev/null /dev/null
    done
    # (a column that is not all digits is a name)
    for v in 0 4294967296 18446744073709551616 99999999999999999999999; do
        bad "bad --label-col '$v'" qs-score --input csv --label-col "$v" "$T/m.qsm" /dev/null
        bad "bad --qid-col '$v'" qs-score --input csv --qid-col "$v" "$T/m.qsm" /dev/null
    done
    for v in 00 1 ' 0' WAIT; do
        bad "bad QS_PARSE_AHEAD '$v' (expected 0 or wait)" env QS_PARSE_AHEAD="$v" qs-score "$T/m.qsm" /dev/null
    done
    bad "bad QS_MAX_INPUT '+1K'" env QS_MAX_INPUT=+1K qs-convert "$T/m.txt"
    bad "bad QS_MAX_INPUT ' 1K'" env QS_MAX_INPUT=' 1K' qs-convert "$T/m.txt"
    bad "bad QS_MAX_INPUT '8589934592G'" env QS_MAX_INPUT=8589934592G qs-convert "$T/m.txt"
    # the largest count of iterations there is: the whole model
    qs-score --trees 18446744073709551615 "$T/m.qsm" "$FIX/xgb-tiny/docs.letor" > "$T/all"
    cmp "$T/all" "$FIX/xgb-tiny/expected.txt"
    qs-score --device 00 --label-col 01 --input csv "$T/m.qsm" /dev/null
}

@test "QS_CPU_CLASS: an unknown or wrongly cased class is a usage error listing the classes, as QS_BACKEND's" {
    local v
    for v in bogus ZEN5 Zen4 ' zen5' 'zen5 ' amd-ZEN4 generic,intel; do
        run --separate-stderr env QS_CPU_CLASS="$v" qs-score "$T/m.qsm" /dev/null
        [ "$status" = 2 ] || { echo "QS_CPU_CLASS='$v': exit $status"; return 1; }
        [ "$stderr" = "qs-score: unknown CPU class '$v' in QS_CPU_CLASS (expected generic, zen4, zen5 or intel)
Try 'qs-score --help' for more information." ] || { echo "$stderr"; return 1; }
        run --separate-stderr env QS_CPU_CLASS="$v" qs-blocktune --time "$T/m.qsm" /dev/null
        [ "$status" = 2 ] || { echo "qs-blocktune, QS_CPU_CLASS='$v': exit $status"; return 1; }
        [[ "$stderr" == *"unknown CPU class '$v' in QS_CPU_CLASS"* ]] || { echo "$stderr"; return 1; }
    done
    for v in generic zen4 zen5 intel amd-zen4 amd-zen5 ""; do
        QS_CPU_CLASS="$v" qs-score "$T/m.qsm" "$FIX/xgb-tiny/docs.letor" > "$T/got"
        cmp "$T/got" "$FIX/xgb-tiny/expected.txt"
    done
}

@test "--help goes to stdout with exit 0 for every tool" {
    for t in qs-convert qs-compile qs-score qs-eval; do
        run "$t" --help
        assert_success
        assert_output --partial "usage: $t"
    done
}

@test "an unknown long option near a real one: 'did you mean', one line, exit 2" {
    run qs-score --tree 5 "$FIX/lgb-l8/model.txt.zst"
    assert_failure 2
    assert_line --index 0 "qs-score: unknown option '--tree' (did you mean '--trees'?)"
    assert_line --index 1 "Try 'qs-score --help' for more information."
    run qs-convert --frm lightgbm x
    assert_failure 2
    assert_line --index 0 "qs-convert: unknown option '--frm' (did you mean '--from'?)"
    run qs-compile --revers x
    assert_failure 2
    assert_line --index 0 "qs-compile: unknown option '--revers' (did you mean '--reverse-sample' or '--reverse-all'?)"
    run qs-eval --lik x y
    assert_line --index 0 "qs-eval: unknown option '--lik' (did you mean '--like'?)"
    # nothing near: no suggestion
    run qs-score --zzzzzz x
    assert_line --index 0 "qs-score: unknown option '--zzzzzz'"
}

@test "qs-convert and qs-compile with no model and a terminal on standard input: say what to type, exit 2" {
    command -v script > /dev/null || skip "script (util-linux) not found"
    run script -qec "qs-convert" /dev/null
    assert_failure 2
    assert_output --partial "qs-convert: no model given, and standard input is a terminal: type qs-convert FILE, or pipe one in (qs-convert < FILE)"
    run script -qec "qs-compile -o '$BATS_TEST_TMPDIR/x.qsm'" /dev/null
    assert_failure 2
    assert_output --partial "qs-compile: no model given, and standard input is a terminal"
    [ ! -e "$BATS_TEST_TMPDIR/x.qsm" ]
    # a pipe is read as before
    qs-convert < "$FIX/lgb-l8/model.txt.zst" | qs-compile -o "$BATS_TEST_TMPDIR/y.qsm"
    [ -s "$BATS_TEST_TMPDIR/y.qsm" ]
}

@test "--help of the tools that can use the GPU names exit status 5" {
    local t
    for t in qs-score qs-blocktune; do
        run "$t" --help
        assert_success
        [[ "$output" == *"5 the GPU"* ]] || { echo "$t --help lacks exit status 5"; return 1; }
    done
}

@test "qs-eval with its two files the other way round: the message says which comes first" {
    printf '0 qid:1 1:0.5\n2 qid:1 1:0.2\n' > "$BATS_TEST_TMPDIR/l.letor"
    printf '0.1\n0.3\n' > "$BATS_TEST_TMPDIR/s.txt"
    run qs-eval "$BATS_TEST_TMPDIR/s.txt" "$BATS_TEST_TMPDIR/l.letor"
    assert_failure 1
    assert_output --partial "l.letor:1: bad score '0 qid:1 1:0.5' (a LETOR line, not a score: the labels file comes first, then the scores: qs-eval LABELS SCORES)"
    run qs-eval "$BATS_TEST_TMPDIR/l.letor" "$BATS_TEST_TMPDIR/s.txt"
    assert_success
}
