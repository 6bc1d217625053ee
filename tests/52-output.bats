#!/usr/bin/env bats
# Output files and system errors: failed flush or rename, devices and FIFOs
# as targets, closed standard descriptors, signals, long names, messages that
# name the file.

load test_helper

setup() {
    T="$BATS_TEST_TMPDIR"
    D="$FIX/xgb-tiny/docs.letor"
    qs-convert "$FIX/xgb-tiny/model.json" > "$T/m.txt"
    qs-compile -o "$T/m.qsm" "$T/m.txt"
    mkdir "$T/w"
}

no_tmp() { # no temporary file left in $T/w
    run bash -c "ls -A '$T/w' | grep tmp || true"
    assert_output ""
}

@test "a failing final flush: exit 4 naming the file, no temporary file" {
    for i in $(seq 20); do cat "$D"; done > "$T/docs"
    # The output (about 28 KB) exceeds a 4 KiB file size limit; with SIGXFSZ
    # ignored, the write fails with EFBIG when the buffer is flushed.
    run bash -c "trap '' XFSZ; ulimit -f 4; qs-score -o '$T/w/out' '$T/m.qsm' '$T/docs'"
    assert_failure 4
    assert_output "qs-score: $T/w/out: write error: File too large"
    [ ! -e "$T/w/out" ]
    no_tmp
    run bash -c "trap '' XFSZ; ulimit -f 4; qs-compile -o '$T/w/out.qsm' '$T/m.txt'"
    assert_success # the model is small: the limit is not reached
    rm "$T/w/out.qsm"
}

@test "a failing rename: exit 4 naming the file, no temporary file" {
    mkfifo "$T/in"
    # The destination becomes a directory while qs-score waits for input.
    qs-score -o "$T/w/out" "$T/m.qsm" < "$T/in" > "$T/stdout" 2> "$T/stderr" &
    pid=$!
    exec 7> "$T/in"
    for _ in $(seq 400); do ls "$T/w" | grep -q tmp && break; sleep 0.05; done
    mkdir "$T/w/out"
    cat "$D" >&7
    exec 7>&-
    rc=0
    wait $pid || rc=$?
    assert_equal "$rc" 4
    run cat "$T/stderr"
    assert_output --regexp "^qs-score: $T/w/out: cannot rename the temporary file to it: "
    no_tmp
}

@test "-o a directory or an empty name: refused, exit 4, nothing created" {
    run qs-score -o "$T/w" "$T/m.qsm" "$D"
    assert_failure 4
    assert_output "qs-score: $T/w: cannot write: Is a directory"
    no_tmp
    run qs-convert -o "$T/w/" "$T/m.txt"
    assert_failure 4
    assert_output --partial "Is a directory"
    no_tmp
    cd "$T/w"
    run qs-compile -o "" "$T/m.txt"
    assert_failure 4
    assert_output "qs-compile: '': cannot create: No such file or directory"
    no_tmp
    run ls -A "$T/w"
    assert_output ""
}

@test "-o a FIFO or a character device: written in place, not replaced" {
    mkfifo "$T/w/fifo"
    cat "$T/w/fifo" > "$T/got" &
    pid=$!
    run qs-score -o "$T/w/fifo" "$T/m.qsm" "$D"
    assert_success
    wait $pid
    [ -p "$T/w/fifo" ]
    qs-score "$T/m.qsm" "$D" > "$T/want"
    cmp "$T/got" "$T/want"
    no_tmp
    # /dev/stdout is a link to this process's standard output.
    run bash -c "qs-score -o /dev/stdout '$T/m.qsm' '$D' > '$T/got2'"
    assert_success
    cmp "$T/got2" "$T/want"
    [ -w /dev/full ] || skip "no /dev/full"
    run qs-score -o /dev/full "$T/m.qsm" "$D"
    assert_failure 4
    assert_output "qs-score: /dev/full: write error: No space left on device"
    [ -c /dev/full ]
}

@test "closed standard input: an error, never the output's own temporary file" {
    run bash -c "qs-score -o '$T/w/out' '$T/m.qsm' <&-"
    assert_failure 4
    assert_output "qs-score: (stdin): cannot read: standard input is closed"
    [ ! -e "$T/w/out" ]
    no_tmp
    run bash -c "qs-convert -o '$T/w/out' <&-"
    assert_failure 4
    assert_output "qs-convert: (stdin): cannot read: standard input is closed"
    no_tmp
    run bash -c "qs-eval <&-"
    assert_failure 4
    assert_output "qs-eval: (stdin): cannot read: standard input is closed"
    # A closed standard output is not a place to write scores to either.
    run bash -c "qs-score '$T/m.qsm' '$D' >&-"
    assert_failure 4
    assert_output "qs-score: (stdout): cannot write: standard output is closed"
    # With standard error closed, the temporary file does not become fd 2.
    run bash -c "qs-score -o '$T/w/out' '$T/m.qsm' '$D' 2>&-"
    assert_success
    cmp "$T/w/out" <(qs-score "$T/m.qsm" "$D")
}

@test "signals remove the temporary file (SIGUSR1 too, in a tool without progress)" {
    # A signal ignored at start stays ignored (a shell starts background
    # jobs with SIGINT ignored; a test runner may ignore others, such as
    # ALRM): env --default-signal gives qs-score every signal at its default.
    # (SIGUSR1 asks qs-score for a progress line: tests/57-progress.bats)
    for sig in TERM HUP PIPE XFSZ ALRM USR2; do
        rm -f "$T/in"
        mkfifo "$T/in"
        env --default-signal qs-score -o "$T/w/out" "$T/m.qsm" < "$T/in" 2> /dev/null &
        pid=$!
        exec 7> "$T/in"
        for _ in $(seq 400); do ls "$T/w" | grep -q tmp && break; sleep 0.05; done
        run bash -c "ls '$T/w' | grep -c tmp"
        assert_output 1
        kill -s "$sig" $pid
        rc=0
        wait $pid || rc=$?
        exec 7>&-
        echo "signal $sig: status $rc"
        [ "$rc" -gt 128 ]
        no_tmp
        [ ! -e "$T/w/out" ]
    done
}

@test "a 250-byte output name works (the temporary name fits in 255 bytes)" {
    name=$(printf 'n%.0s' $(seq 250))
    run qs-score -o "$T/w/$name" "$T/m.qsm" "$D"
    assert_success
    cmp "$T/w/$name" <(qs-score "$T/m.qsm" "$D")
    run qs-compile -o "$T/w/$name.qsm" "$T/m.txt" # 254 bytes
    assert_success
    cmp "$T/w/$name.qsm" "$T/m.qsm"
    no_tmp
}

@test "read errors and memory errors name the file" {
    run qs-score "$T/m.qsm" "$T/w"
    assert_failure 4
    assert_output "qs-score: $T/w: read error: Is a directory"
    run qs-score "$T/m.qsm" < "$T/w"
    assert_failure 4
    assert_output "qs-score: (stdin): read error: Is a directory"
    run qs-convert "$T/w"
    assert_failure 4
    assert_output "qs-convert: $T/w: read error: Is a directory"
    # A zstd frame that claims 64 GiB: refused by size before any allocation
    # (the limit on whole inputs), naming the file.
    printf '\x28\xb5\x2f\xfd\xe0\x00\x00\x00\x00\x10\x00\x00\x00\x01\x00\x00' > "$T/claim.zst"
    run qs-convert "$T/claim.zst"
    assert_failure 1
    assert_output --regexp "^qs-convert: $T/claim.zst: decompressed content larger than the limit"
    # Memory exhaustion while reading names the input and its size so far
    # (not under the sanitizers, which reserve terabytes of address space).
    if ldd "$(command -v qs-convert)" | grep -q libasan; then return 0; fi
    head -c 40000000 /dev/zero | tr '\0' ' ' > "$T/spaces"
    run bash -c "ulimit -v 60000; qs-convert '$T/spaces'"
    assert_failure 4
    assert_output --regexp "^qs-convert: $T/spaces: out of memory \(reading, [0-9]+ bytes so far\)$"
}

@test "scores printed without printf: qs_format_score equals snprintf %.9g and %.17g byte for byte (tests/unit/test_format.c)" {
    # Random doubles and float32 values, score ranges, exact halfway cases,
    # powers of ten and their neighbours, zeros, inf, nan, subnormals, every
    # precision 1 .. 17 on a sample, every 4099th float32 bit pattern.
    # QS_FORMAT_EXHAUSTIVE=1 adds all 2^32 float32 patterns (minutes).
    run "$UNIT/test_format"
    assert_success
    assert_output --regexp "^[0-9]+ checks \([0-9]+ halfway cases\), 0 failures$"
}

@test "--annotate writes label, qid and score" {
    set -o pipefail
    qs-convert "$FIX/xgb-tiny/model.json" | qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" -
    qs-score --annotate "$BATS_TEST_TMPDIR/m.qsm" < "$FIX/xgb-tiny/docs.letor" > "$BATS_TEST_TMPDIR/out"
    run head -2 "$BATS_TEST_TMPDIR/out"
    assert_line --index 0 "$(printf '0\t1\t1.01585567')"
    run awk -F'\t' 'NF != 3' "$BATS_TEST_TMPDIR/out"
    assert_output ""
}
