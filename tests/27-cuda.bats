#!/usr/bin/env bats
# GPU-QS without a GPU.  The kernel's phases (lib/score/cuda/phases.h) run by
# the emulator over the device tables (tables.c), against the reference walk
# bit for bit (tests/unit/test_cuda_emu.c): on the fixtures, on the generated
# block models (every block kind, rule, accumulation mode, linear leaves,
# categorical nodes, several classes; each also with every tree reversed),
# and on every conformance model of the reference data, each with documents
# made to sit exactly on its thresholds, one float step either side, on the
# zero band, NaN, ±inf and denormals.  Three mutant builds of the emulator
# must fail.  The `cuda-emu` back end (the whole host driver over the
# emulated device) is also in every list of back ends the other test files
# score with; here its sub-batches, streams and error paths.  Then what a
# machine without a GPU says of `cuda`.

load test_helper

setup_file() {
    local d="$BATS_FILE_TMPDIR/gen" f n
    command -v python3 > /dev/null || return 0
    python3 "$BATS_TEST_DIRNAME/tools/gen_block_models.py" "$d" > /dev/null || return 1
    for f in "$d"/*.txt; do
        n="${f%.txt}"
        qs-compile -o "$n.qsm" "$f" || return 1
        qs-compile --reverse-all --tree-block 5 --delta 3 -o "$n.alt.qsm" "$f" || return 1
    done
}

# emu [-q] QSM [DOCS|-] [EDGE]: the emulator test, its output shown on failure.
emu() {
    run "$UNIT/test_cuda_emu" "$@"
    if [ "$status" -ne 0 ]; then
        echo "test_cuda_emu $* exited $status:"
        printf '%s\n' "$output" | grep -v ' 0 of ' | head -20
        return 1
    fi
    # every geometry ran, and compared documents
    printf '%s\n' "$output" | grep -q ' 0 of [1-9]' || { echo "nothing compared: $output"; return 1; }
}

# The fixtures: model and documents, a line each.
FIXTURES="xgb-tiny/model.json xgb-tiny/docs.letor
xgb-agaricus/model.json.zst xgb-agaricus/docs.letor
xgboost/categorical.json xgboost/categorical.docs.txt
lgb-l8/model.txt.zst lgb-l8/docs.letor
lgb-multiclass/model.txt.zst lgb-multiclass/docs.letor
lightgbm/mixed.model.txt lightgbm/mixed.docs.letor
linear/binary.txt.zst linear/binary.docs.letor
qr-oblivious/model.xml.zst qr-oblivious/docs.letor
catboost/tiny.json catboost/tiny.letor
catboost/multi.json catboost/multi.letor
catboost-nonsym/depthwise.json.zst catboost-nonsym/docs.letor"

# fixture_qsm NAME [MODEL]: NAME.qsm and NAME.alt.qsm (every tree reversed,
# blocks of 3 trees) in the test's folder.
fixture_qsm() {
    local name="$1" m="${2:-}"
    [ -n "$m" ] || m=$(ls "$FIX/$name"/model.* | head -n 1)
    qs-convert "$m" > "$BATS_TEST_TMPDIR/$name.txt" || return 1
    qs-compile -o "$BATS_TEST_TMPDIR/$name.qsm" "$BATS_TEST_TMPDIR/$name.txt" || return 1
    qs-compile --reverse-all --tree-block 3 -o "$BATS_TEST_TMPDIR/$name.alt.qsm" \
        "$BATS_TEST_TMPDIR/$name.txt" || return 1
}

@test "emulator: the fixtures, both layouts, every geometry, edge documents" {
    local model docs name n=0
    while read -r model docs; do
        name=$(printf '%s' "$model" | tr '/.' '__')
        fixture_qsm "$name" "$FIX/$model" || { echo "cannot compile fixture $model"; return 1; }
        emu "$BATS_TEST_TMPDIR/$name.qsm" "$FIX/$docs" 200 || return 1
        emu "$BATS_TEST_TMPDIR/$name.alt.qsm" "$FIX/$docs" 200 || return 1
        n=$((n + 1))
    done <<< "$FIXTURES"
    [ "$n" -eq 11 ]
}

@test "emulator: generated block models (multi-word, QS-Omega, linear, categorical; reversed)" {
    command -v python3 > /dev/null || skip "python3 not found"
    local d="$BATS_FILE_TMPDIR/gen" q docs
    for q in "$d"/*.qsm; do
        docs="$d/docs.letor"
        case "$q" in */many-*) docs="$d/many-docs.letor" ;; esac
        head -n 65 "$docs" > "$BATS_TEST_TMPDIR/docs"
        emu "$q" "$BATS_TEST_TMPDIR/docs" 100 || return 1
    done
}

# The model and documents of every conform line of the oracle test files.
conformance_pairs() {
    local f
    for f in "$BATS_TEST_DIRNAME"/20-conformance.bats "$BATS_TEST_DIRNAME"/16-catboost.bats \
        "$BATS_TEST_DIRNAME"/22-linear.bats; do
        grep -o 'conform "[^"]*" "[^"]*"' "$f" | sed 's/^conform //'
    done | sort -u
}

@test "emulator: every conformance model, with its documents and edge documents" {
    require_oracle
    # The emulator's own memory use is the fixtures' and block models' (above);
    # the sanitizer pass leaves the conformance models to the plain pass.
    [ -z "${SANITIZE:-}" ] || skip "the plain pass runs this (sanitizer build: the fixtures and block models above)"
    local n=0 model docs key line
    while IFS= read -r line; do
        eval "set -- $line"
        model="$1" docs="$2"
        case "$model" in *'$'*) continue ;; esac
        [ -f "$model" ] || continue
        key=$(printf '%s' "$model" | cksum | cut -d' ' -f1)
        qs-convert "$model" > "$BATS_TEST_TMPDIR/$key.txt" || { echo "qs-convert $model failed"; return 1; }
        qs-compile -o "$BATS_TEST_TMPDIR/$key.qsm" "$BATS_TEST_TMPDIR/$key.txt" || return 1
        if [ "${docs%.zst}" != "$docs" ]; then zstdcat "$docs"; else cat "$docs"; fi |
            head -n 100 > "$BATS_TEST_TMPDIR/docs"
        emu -q "$BATS_TEST_TMPDIR/$key.qsm" "$BATS_TEST_TMPDIR/docs" 100 ||
            { echo "($model)"; return 1; }
        n=$((n + 1))
    done < <(ORACLE="$ORACLE" C="$ORACLE/catboost/models" L="$ORACLE/lightgbm/models" \
        conformance_pairs | while IFS= read -r l; do eval "echo $l"; done)
    [ "$n" -ge 40 ] || { echo "only $n conformance models found"; return 1; }
}

@test "emulator: each of the three mutations is caught" {
    local k q caught
    fixture_qsm xgb-tiny && fixture_qsm lgb-l8 && fixture_qsm lgb-multiclass || return 1
    # (1) the search compares <= for <, (2) a block's trees summed last to
    # first, (3) 16-bit leaf vectors given 8 bits
    for k in 1 2 3; do
        caught=
        for q in "$BATS_TEST_TMPDIR"/{lgb-l8,xgb-tiny,lgb-multiclass}.qsm; do
            if ! "$UNIT/test_cuda_emu_mut$k" "$q" - 200 > /dev/null 2>&1; then caught=$q; break; fi
        done
        [ -n "$caught" ] || { echo "mutation $k was not caught"; return 1; }
        # the unmutated build passes on the same model
        "$UNIT/test_cuda_emu" "$caught" - 200 > /dev/null || { echo "test_cuda_emu fails on $caught"; return 1; }
    done
}

@test "cuda-emu through qs-score: whole batches, sub-batches over 1, 2 and 3 streams, threads: the bytes of walk" {
    fixture_qsm lgb-multiclass && fixture_qsm xgb-agaricus || return 1
    local f s sub gb t
    for f in lgb-multiclass xgb-agaricus; do
        qs-score --backend walk "$BATS_TEST_TMPDIR/$f.qsm" < "$FIX/$f/docs.letor" > "$BATS_TEST_TMPDIR/want"
        for s in 1 2 3; do
            for sub in 1 7 64; do
                for gb in 5 1000; do
                    for t in 1 2; do
                        QS_CUDA_STREAMS=$s QS_CUDA_SUB=$sub QS_CUDA_DB=5 QS_CUDA_THREADS=64 \
                            qs-score --backend cuda-emu --gpu-batch $gb --threads $t \
                            "$BATS_TEST_TMPDIR/$f.qsm" < "$FIX/$f/docs.letor" > "$BATS_TEST_TMPDIR/got" ||
                            { echo "$f: streams $s, sub $sub, --gpu-batch $gb, --threads $t failed"; return 1; }
                        cmp "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got" ||
                            { echo "$f: streams $s, sub $sub, --gpu-batch $gb, --threads $t differ"; return 1; }
                    done
                done
            done
        done
    done
    # the library's matrix entry hands the back end every row at once
    # (tests/unit/test_matrix.c runs every batch back end there)
}

@test "cuda-emu: --device names the emulator's one device; another is a device error" {
    fixture_qsm xgb-tiny || return 1
    run qs-score --backend cuda-emu --device 0 "$BATS_TEST_TMPDIR/xgb-tiny.qsm" "$FIX/xgb-tiny/docs.letor"
    [ "$status" -eq 0 ]
    run qs-score --backend cuda-emu --device 1 "$BATS_TEST_TMPDIR/xgb-tiny.qsm" "$FIX/xgb-tiny/docs.letor"
    [ "$status" -eq 5 ]
    [[ "$output" == *"device 1: the emulator has one device (0), not 1"* ]] || { echo "$output"; return 1; }
}

@test "cuda-emu: a device error at any step fails with exit 5 and the device's message" {
    fixture_qsm xgb-tiny || return 1
    local what
    for what in alloc alloc:3 put put:2 launch launch:2 get wait:2; do
        QS_CUDA_EMU_FAIL=$what QS_CUDA_SUB=16 run qs-score --backend cuda-emu \
            "$BATS_TEST_TMPDIR/xgb-tiny.qsm" "$FIX/xgb-tiny/docs.letor"
        [ "$status" -eq 5 ] || { echo "QS_CUDA_EMU_FAIL=$what: exit $status"; return 1; }
        [[ "$output" == *"emulated device error in ${what%%:*} call"* ]] ||
            { echo "QS_CUDA_EMU_FAIL=$what: $output"; return 1; }
    done
    # a malformed tunable is a usage error
    QS_CUDA_THREADS=100 run qs-score --backend cuda-emu "$BATS_TEST_TMPDIR/xgb-tiny.qsm" "$FIX/xgb-tiny/docs.letor"
    [ "$status" -eq 2 ]
    [[ "$output" == *"QS_CUDA_THREADS=100: expected a multiple of 32"* ]]
}

@test "cuda without a GPU: listed with the reason, --backend cuda exits 5 and says why" {
    fixture_qsm xgb-tiny || return 1
    run qs-score --list-backends
    [ "$status" -eq 0 ]
    local line
    line=$(printf '%s\n' "$output" | awk -F'\t' '$1 == "cuda"')
    [ -n "$line" ] || { echo "cuda is not listed"; return 1; }
    if printf '%s\n' "$line" | grep -q '	yes	'; then
        skip "this machine has a CUDA device"
    fi
    if qs-score --version -v | grep -q 'cuda=1'; then
        # built with CUDA: the runtime's own reason (no driver, no device)
        [[ "$line" == *"no: cuda"* || "$line" == *"no: no CUDA device"* ]] || { echo "$line"; return 1; }
    else
        [[ "$line" == *"no: built without CUDA"* ]] || { echo "$line"; return 1; }
    fi
    run qs-score --backend cuda "$BATS_TEST_TMPDIR/xgb-tiny.qsm" "$FIX/xgb-tiny/docs.letor"
    [ "$status" -eq 5 ]
    [[ "$output" == *"back end 'cuda' is not available: "* ]]
    [ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ]
}

@test "cuda build: ptxas reports no spills and no local memory; libqs.so exports no CUDA symbol" {
    local b="${QS_BUILD_DIR:-$BATS_TEST_DIRNAME/../build$([ -n "${SANITIZE:-}" ] && echo -san)}"
    qs-score --version -v | grep -q 'cuda=1' || skip "built without CUDA (no nvcc)"
    [ -f "$b/cuda/ptxas.log" ] || { echo "no $b/cuda/ptxas.log"; return 1; }
    grep -c 'spill stores' "$b/cuda/ptxas.log" | grep -qx 2 || { cat "$b/cuda/ptxas.log"; return 1; }
    ! grep 'spill' "$b/cuda/ptxas.log" | grep -v ' 0 bytes spill stores, 0 bytes spill loads' ||
        { cat "$b/cuda/ptxas.log"; return 1; }
    ! grep -q 'bytes lmem' "$b/cuda/ptxas.log" || { cat "$b/cuda/ptxas.log"; return 1; }
    if [ -f "$b/libqs.so" ]; then
        ! nm -D --defined-only "$b/libqs.so" | grep -i 'cuda' || { echo "CUDA symbols exported"; return 1; }
    fi
}
