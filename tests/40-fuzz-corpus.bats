#!/usr/bin/env bats
# Fuzz corpora as regression tests: every seed and minimised finding under
# fuzz/corpus/<target>/ goes through its target's replay driver (the fuzz
# target's LLVMFuzzerTestOneInput behind a plain main(), built by `make`), so
# the checks of fuzz/fuzz_common.h run in the normal and the sanitizer build.

load test_helper

# replay TARGET: run the driver on the whole corpus; every file must be
# replayed and none may abort or trip a sanitizer.
replay() {
    local bin="$QS_ROOT/bin/fuzz/replay_$1" dir="$QS_ROOT/fuzz/corpus/$1"
    [ -x "$bin" ] || skip "$bin not built (make builds \$(FUZZ_REPLAY_BIN) from fuzz/fuzz.mk)"
    [ -d "$dir" ] || skip "no corpus at $dir"
    local n
    n=$(find "$dir" -maxdepth 1 -type f ! -name '.*' | wc -l | tr -d ' ')
    [ "$n" -gt 0 ] || { echo "empty corpus $dir"; return 1; }
    run "$bin" "$dir"
    if [ "$status" -ne 0 ]; then
        printf '%s\n' "$output" | tail -n 40
        echo "replay_$1 failed with status $status"
        return 1
    fi
    assert_output --regexp "replay_$1: $n inputs? replayed"
}

@test "fuzz corpus: lightgbm converter" { replay lightgbm; }
@test "fuzz corpus: xgboost converter (json, ubjson)" { replay xgboost; }
@test "fuzz corpus: xgboost binary-format reader" { replay xgboost_bin; }
@test "fuzz corpus: catboost converter" { replay catboost; }
@test "fuzz corpus: catboost .cbm reader" { replay cbm; }
@test "fuzz corpus: onnx converter (protobuf)" { replay onnx; }
@test "fuzz corpus: quickrank converter" { replay quickrank; }
@test "fuzz corpus: canonical text reader and round trip" { replay text; }
@test "fuzz corpus: .qsm loader, every back end against the walk" { replay qsm; }
@test "fuzz corpus: letor document reader" { replay letor; }
@test "fuzz corpus: qs-eval parsers and evaluator" { replay eval; }
@test "fuzz corpus: csv/tsv document reader against its LETOR twin" { replay dsv; }
@test "fuzz corpus: XGBoost category encoders and the tools' JSON writer" { replay cats; }
@test "fuzz corpus: the Python binding's array checks and row copies (args.h)" { replay binding; }

@test "fuzz corpus: every fuzz target's corpus is replayed by a test above" {
    local t
    for t in $(sed -n 's/^FUZZ_TARGETS := //p' "$QS_ROOT/fuzz/fuzz.mk"); do
        grep -q "{ replay $t; }" "$BATS_TEST_FILENAME" || { echo "no replay test for $t"; return 1; }
        [ -d "$QS_ROOT/fuzz/corpus/$t" ] || { echo "no corpus for $t"; return 1; }
    done
}

@test "fuzz replay driver: refuses a missing input" {
    local bin="$QS_ROOT/bin/fuzz/replay_text"
    [ -x "$bin" ] || skip "$bin not built"
    run "$bin" "$BATS_TEST_TMPDIR/no-such-file"
    assert_failure 1
    assert_output --partial "no-such-file"
}
