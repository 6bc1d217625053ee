#!/usr/bin/env bats
# Progress, as zstd and dd give it: a line redrawn on standard error when it
# is a terminal (--progress forces it, --no-progress turns it off), and one
# line on SIGUSR1 whatever the mode, the work going on to its exact end.

load test_helper
bats_require_minimum_version 1.5.0

setup() {
    T="$BATS_TEST_TMPDIR"
    qs-convert "$FIX/xgb-tiny/model.json" > "$T/m.txt"
    qs-compile -o "$T/m.qsm" "$T/m.txt"
    for i in 1 2 3 4 5 6 7 8; do cat "$FIX/xgb-tiny/docs.letor"; done > "$T/docs"
    qs-score "$T/m.qsm" "$T/docs" > "$T/want"
}

# on_terminal COMMAND: run COMMAND (a shell line) with a pseudo-terminal as
# standard input, output and error (script(1)); $output is what the terminal
# showed.
on_terminal() {
    command -v script > /dev/null || skip "script (bsdutils) is not installed"
    run script -qec "$1" /dev/null
}

@test "qs-score: progress on a terminal (documents, MB of the input's size, rate), cleared at the end; --no-progress" {
    local n
    n=$(wc -l < "$T/want")
    on_terminal "qs-score '$T/m.qsm' '$T/docs' > '$T/got'; echo \"exit \$?\""
    assert_output --partial "exit 0"
    assert_output --regexp $'\r'"qs-score: [0-9]+ documents, [0-9.]+ [kM]?B of [0-9.]+ [kM]B \([0-9]+%\), [0-9.]+ [kMG]?B/s, [0-9.]+ s"
    # and the line is cleared at the end
    assert_output --partial $'\r\033[K'
    cmp "$T/got" "$T/want"
    on_terminal "qs-score --no-progress '$T/m.qsm' '$T/docs' > '$T/got'; echo \"exit \$?\""
    assert_output "exit 0"$'\r'
    cmp "$T/got" "$T/want"
    # Scores on the terminal itself: no progress line among them.
    on_terminal "qs-score '$T/m.qsm' '$FIX/xgb-tiny/docs.letor'"
    refute_output --partial "documents,"
    # Not a terminal: nothing, unless --progress (a line a second, and the last).
    run --separate-stderr qs-score "$T/m.qsm" "$T/docs"
    [ -z "$stderr" ]
    run --separate-stderr qs-score --progress "$T/m.qsm" "$T/docs"
    assert_success
    [[ "$stderr" == *"qs-score: $n documents, "*" of "*"(100%)"* ]] || { echo "$stderr"; return 1; }
    # zstd input: the size is not known beforehand
    zstd -q -c "$T/docs" > "$T/docs.zst"
    run --separate-stderr qs-score --progress "$T/m.qsm" "$T/docs.zst"
    assert_success
    [[ "$stderr" == *"qs-score: $n documents, "* ]] || { echo "$stderr"; return 1; }
    [[ "$stderr" != *" of "* ]] || { echo "$stderr"; return 1; }
}

# usr1_run FIFO PID-FILE: helpers for the SIGUSR1 tests.
# caught PID: whether PID has a handler for SIGUSR1 (bit 10 of SigCgt).
caught() {
    local mask
    mask=$(awk '/^SigCgt:/ { print $2 }' "/proc/$1/status" 2> /dev/null) || return 1
    [ -n "$mask" ] && (( (16#$mask >> 9) & 1 ))
}

@test "qs-score: SIGUSR1 prints one progress line and the scoring goes on: the output complete and exact" {
    [ -d /proc/self ] || skip "no /proc here"
    local t
    for t in 1 3; do
        rm -f "$T/fifo" "$T/got" "$T/err"
        mkfifo "$T/fifo"
        qs-score --threads $t -o "$T/got" "$T/m.qsm" < "$T/fifo" 2> "$T/err" &
        local pid=$!
        exec 8> "$T/fifo"
        # half of the documents, then two signals, then the rest
        head -n 1000 "$T/docs" >&8
        local i=0
        until caught "$pid"; do
            sleep 0.05
            i=$((i + 1))
            [ "$i" -lt 200 ] || { echo "qs-score never installed its SIGUSR1 handler"; exec 8>&-; return 1; }
        done
        kill -USR1 "$pid"
        i=0
        until [ "$(wc -l < "$T/err")" -ge 1 ]; do
            sleep 0.05
            i=$((i + 1))
            [ "$i" -lt 200 ] || { echo "no line after SIGUSR1"; exec 8>&-; return 1; }
        done
        kill -USR1 "$pid"
        i=0
        until [ "$(wc -l < "$T/err")" -ge 2 ]; do
            sleep 0.05
            i=$((i + 1))
            [ "$i" -lt 200 ] || { echo "no second line after SIGUSR1"; exec 8>&-; return 1; }
        done
        tail -n +1001 "$T/docs" >&8
        exec 8>&-
        wait "$pid"
        cmp "$T/got" "$T/want"
        run cat "$T/err"
        [ "${#lines[@]}" = 2 ] || { echo "threads $t: $output"; return 1; }
        assert_line --index 0 --regexp "^qs-score: [0-9]+ documents, (starting|[0-9.]+ [kM]?B, [0-9.]+ [kMG]?B/s, [0-9.]+ s)$"
        assert_line --index 1 --regexp "^qs-score: [0-9]+ documents, (starting|[0-9.]+ [kM]?B, [0-9.]+ [kMG]?B/s, [0-9.]+ s)$"
    done
}

@test "SIGUSR1 before any work: a line, not a death" {
    [ -d /proc/self ] || skip "no /proc here"
    rm -f "$T/fifo"
    mkfifo "$T/fifo"
    qs-score -o "$T/got" "$T/m.qsm" < "$T/fifo" 2> "$T/err" &
    local pid=$! i=0
    exec 8> "$T/fifo"
    until caught "$pid"; do
        sleep 0.05
        i=$((i + 1))
        [ "$i" -lt 200 ] || { exec 8>&-; return 1; }
    done
    kill -USR1 "$pid"
    sleep 0.2
    cat "$T/docs" >&8
    exec 8>&-
    wait "$pid"
    cmp "$T/got" "$T/want"
    run cat "$T/err"
    assert_output --regexp "^qs-score: 0 documents, starting$"
}

@test "qs-compile and qs-eval: progress on a terminal and on SIGUSR1" {
    on_terminal "qs-compile --progress -o '$T/p.qsm' '$T/m.txt'; echo \"exit \$?\""
    assert_output --partial "exit 0"
    assert_output --partial "qs-compile: reading $T/m.txt"
    assert_output --partial "qs-compile: laying out"
    cmp "$T/p.qsm" "$T/m.qsm"
    run --separate-stderr qs-compile --progress -o "$T/p.qsm" "$T/m.txt"
    assert_success
    [[ "$stderr" == *"qs-compile: writing $T/p.qsm"* ]] || { echo "$stderr"; return 1; }
    qs-score --annotate "$T/m.qsm" "$T/docs" > "$T/ann"
    qs-eval "$T/ann" > "$T/eval.want"
    on_terminal "qs-eval '$T/ann' > '$T/eval.got'; echo \"exit \$?\""
    assert_output --partial "exit 0"
    assert_output --regexp "qs-eval: [0-9]+ lines, "
    cmp "$T/eval.got" "$T/eval.want"
    # SIGUSR1 to qs-eval reading a pipe
    [ -d /proc/self ] || skip "no /proc here"
    rm -f "$T/fifo"
    mkfifo "$T/fifo"
    qs-eval - < "$T/fifo" > "$T/eval.got" 2> "$T/err" &
    local pid=$! i=0
    exec 8> "$T/fifo"
    head -n 1000 "$T/ann" >&8
    until caught "$pid"; do
        sleep 0.05
        i=$((i + 1))
        [ "$i" -lt 200 ] || { exec 8>&-; return 1; }
    done
    kill -USR1 "$pid"
    until [ -s "$T/err" ]; do
        sleep 0.05
        i=$((i + 1))
        [ "$i" -lt 400 ] || { exec 8>&-; return 1; }
    done
    tail -n +1001 "$T/ann" >&8
    exec 8>&-
    wait "$pid"
    cmp "$T/eval.got" "$T/eval.want"
    run cat "$T/err"
    assert_output --regexp "^qs-eval: [0-9]+ lines, (starting|[0-9.]+ [kM]?B, )"
}
