#!/usr/bin/env bats
bats_require_minimum_version 1.5.0
# Faults of the machine, one at a time (tests/faults/): every allocation qs
# makes fails in turn, every thread start, a read error at every byte
# offset; a full device, a file-size limit, a closed pipe.  A faulted run
# either succeeds with the same output (a buffer it can do without, fewer
# threads) or fails with exit 4 and a message saying what ran out, leaving
# no output file, without a crash, a sanitizer report or a leak.  Here every
# QS_FAULT_STEP-th point (default 13, the reads under the sanitizers 3 times
# that; the first and last three always);
# `make check-faults` runs every point (tests/faults/all.sh).

load test_helper

setup() {
    T="$BATS_TEST_TMPDIR"
    SO="$UNIT/libqsfault.so"
    [ -f "$SO" ] || skip "no fault injector ($SO): make"
    STEP=${QS_FAULT_STEP:-13}
    # the injector is preloaded before AddressSanitizer's runtime
    export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}verify_asan_link_order=0"
}

sweep() { # all.sh's runs named $@, every STEP-th point
    run "$BATS_TEST_DIRNAME/faults/all.sh" -s "$STEP" "$@"
    printf '%s\n' "$output"
    assert_success
    assert_output --regexp "faults: [0-9]+ runs, [0-9]+ faulted runs \(step $STEP\), 0 failed"
}

@test "the fault injector: a failed allocation is seen, the points are counted, only in qs-*" {
    qs-convert "$FIX/xgb-tiny/model.json" | qs-compile -o "$T/m.qsm" -
    run env LD_PRELOAD="$SO" QS_FAULT_ALLOC=1 qs-score -o "$T/o" "$T/m.qsm" "$FIX/xgb-tiny/docs.letor"
    assert_failure 4
    assert_output --partial "out of memory"
    [ ! -e "$T/o" ]
    env LD_PRELOAD="$SO" QS_FAULT_REPORT="$T/r" qs-score -o "$T/o" "$T/m.qsm" "$FIX/xgb-tiny/docs.letor"
    cmp "$T/o" "$FIX/xgb-tiny/expected.txt"
    run cat "$T/r"
    assert_output --regexp '^allocs [1-9][0-9]+ threads [0-9]+ bytes [1-9][0-9]+$'
    # a shell or env on the way is not faulted
    LD_PRELOAD="$SO" QS_FAULT_ALLOC=1 bash -c "true"
}

@test "allocation failures: qs-convert, each format (LightGBM zstd, XGBoost JSON and UBJSON, CatBoost, ONNX, QuickRank)" {
    sweep convert
}

@test "allocation failures: qs-compile, qs-eval" {
    sweep compile eval
}

@test "allocation failures: qs-compile --info, JSON and text, a model with a category encoder and a tuned .qsm (nothing half-written, on a file or standard output)" {
    sweep info
}

@test "allocation failures: qs-score with each back end, and --threads 2" {
    sweep score
}

@test "allocation failures: qs-blocktune" {
    sweep blocktune
}

@test "thread starts that fail: qs-score --threads 2 and 3 (parse ahead; the model loaded on two threads, QSLY on its own), qs-blocktune --threads 4" {
    sweep thread
}

@test "read errors (EIO) at every byte offset: qs-score (model and documents), qs-convert (zstd), qs-eval" {
    # the sanitizer pass: every third of the plain pass's points (a read
    # fault takes the same error path at each byte; the plain pass runs
    # the denser sample)
    [ -z "${SANITIZE:-}" ] || STEP=$((STEP * 3))
    sweep read
}

@test "a full device, a file-size limit, a closed pipe: every tool; the documented exit code, nothing half-written" {
    qs-convert "$FIX/lgb-l8/model.txt.zst" > "$T/m.txt"
    qs-compile -o "$T/m.qsm" "$T/m.txt"
    qs-score --annotate "$T/m.qsm" "$FIX/lgb-l8/docs.letor" > "$T/ann"
    for i in 1 2 3 4; do cat "$FIX/lgb-l8/docs.letor"; done > "$T/sample"
    # TOOL ARGS... with standard output given by the caller
    cmds=("qs-convert $FIX/lgb-l8/model.txt.zst"
          "qs-compile $T/m.txt"
          "qs-score $T/m.qsm $FIX/lgb-l8/docs.letor"
          "qs-eval --per-query $T/ann")
    if [ -w /dev/full ]; then
        for c in "${cmds[@]}"; do
            run bash -c "$c > /dev/full"
            [ "$status" = 4 ] || { echo "$c > /dev/full: exit $status: $output"; return 1; }
            [[ "$output" == *"write error"* ]] || { echo "$c > /dev/full: $output"; return 1; }
        done
        # qs-blocktune -o /dev/full: a device is written in place
        run qs-blocktune --budget 0.05 --repeat 1 -o /dev/full "$T/m.qsm" "$T/sample"
        assert_failure 4
        assert_output --partial "write error"
    fi
    # a file-size limit of 1 KiB, SIGXFSZ as it comes (the process is
    # killed, 128 + 25) and ignored (EFBIG: exit 4); no file either way
    for c in "qs-convert -o $T/w/out $FIX/lgb-l8/model.txt.zst" "qs-compile -o $T/w/out $T/m.txt" \
             "qs-score -o $T/w/out $T/m.qsm $FIX/lgb-l8/docs.letor" \
             "qs-blocktune --budget 0.05 --repeat 1 -o $T/w/out $T/m.qsm $T/sample"; do
        for trap in "" "trap '' XFSZ;"; do
            mkdir -p "$T/w"
            run bash -c "$trap ulimit -f 1; $c"
            if [ -z "$trap" ]; then
                [ "$status" = 153 ] || [ "$status" = 4 ] || { echo "$c (ulimit -f 1): exit $status: $output"; return 1; }
            else
                [ "$status" = 4 ] || { echo "$c (ulimit -f 1, XFSZ ignored): exit $status: $output"; return 1; }
                [[ "$output" == *"File too large"* ]] || { echo "$c: $output"; return 1; }
            fi
            [ -z "$(ls -A "$T/w")" ] || { echo "$c left $(ls "$T/w")"; return 1; }
        done
    done
    # a closed pipe: a quiet stop (0, or killed by SIGPIPE), no message
    for i in $(seq 30); do cat "$FIX/lgb-l8/docs.letor"; done > "$T/many"
    for i in $(seq 30); do cat "$T/ann"; done > "$T/many.ann"
    for c in "qs-convert $FIX/lgb-l8/model.txt.zst" "qs-compile $T/m.txt" "qs-score $T/m.qsm $T/many" \
             "qs-score --threads 2 $T/m.qsm $T/many" "qs-eval --per-query --group=qid $T/many.ann"; do
        run bash -c "$c 2> '$T/err' | head -c 1 > /dev/null; echo \${PIPESTATUS[0]}"
        [ "$output" = 0 ] || [ "$output" = 141 ] || { echo "$c | head -c 1: exit $output: $(cat "$T/err")"; return 1; }
        [ ! -s "$T/err" ] || { echo "$c | head -c 1: $(cat "$T/err")"; return 1; }
    done
}
