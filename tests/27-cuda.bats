#!/usr/bin/env bats
# The GPU back end without a GPU.  Its four kernels (lib/score/cuda/phases.h:
# qs, rank, lanes, walk) run by the emulator over the device tables
# (tables.c), against the reference walk bit for bit
# (tests/unit/test_cuda_emu.c): on the fixtures, on the generated block
# models (every block kind, rule, accumulation mode, linear leaves,
# categorical nodes, several classes; each also with every tree reversed),
# and on every conformance model of the oracle, each with documents made to
# sit exactly on its thresholds, one float step either side, on the zero
# band, NaN, ±inf and denormals, with float32 and double rows.  Three mutant
# builds of the emulator must fail for every kernel.  Every launch records
# the shared-memory words of each warp step: no step may load a bank more
# than 4 times.  The `cuda-emu` back end (the whole host driver over the
# emulated device) is also in every list of back ends the other test files
# score with; here its kernels, sub-batches, streams, tunables (environment
# and library), plans and error paths.  Then what a machine without a GPU
# says of `cuda`, and the build's gates (ptxas, SASS).

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

KERNELS="qs rank lanes walk"

# emu [-q] [-k K] QSM [DOCS|-] [EDGE]: the emulator test with every warp
# step's bank load held to 4, its output shown on failure.
emu() {
    run "$UNIT/test_cuda_emu" -B 4 "$@"
    if [ "$status" -ne 0 ]; then
        echo "test_cuda_emu $* exited $status:"
        printf '%s\n' "$output" | grep -v ' 0 of ' | head -20
        return 1
    fi
    # every geometry ran, and compared documents
    printf '%s\n' "$output" | grep -q ' 0 of [1-9]' || { echo "nothing compared: $output"; return 1; }
}

# ran KERNEL: the last emu run compared documents with KERNEL.
ran() {
    printf '%s\n' "$output" | grep -q "^[a-z]* $1 .* 0 of [1-9]" ||
        { echo "kernel $1 did not run: $(printf '%s\n' "$output" | grep " $1 " | head -3)"; return 1; }
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

@test "emulator: the fixtures, both layouts, every kernel and geometry, edge documents, bank loads <= 4" {
    local model docs name n=0 k
    while read -r model docs; do
        name=$(printf '%s' "$model" | tr '/.' '__')
        fixture_qsm "$name" "$FIX/$model" || { echo "cannot compile fixture $model"; return 1; }
        emu "$BATS_TEST_TMPDIR/$name.qsm" "$FIX/$docs" 200 || return 1
        # categorical nodes: qs and walk; otherwise every kernel
        case "$model" in
        *categorical* | *mixed*) ran qs && ran walk || return 1 ;;
        *) for k in $KERNELS; do ran "$k" || { echo "($model)"; return 1; }; done ;;
        esac
        emu "$BATS_TEST_TMPDIR/$name.alt.qsm" "$FIX/$docs" 200 || return 1
        n=$((n + 1))
    done <<< "$FIXTURES"
    [ "$n" -eq 11 ]
}

@test "emulator: the bank recorder sees the first kernel's 32-way conflict (the <= 4 check can fail)" {
    run "$UNIT/test_cuda_emu" -R
    [ "$status" -eq 0 ] || { echo "$output"; return 1; }
    [[ "$output" == *"the old layout (t * 16 + d) * 8 bytes: stride 32 words: load 32"* ]]
    # and -B fails a run whose load is over the limit: the rank walk's
    # 16-bit ranks put two lanes on one bank (load 2)
    fixture_qsm lgb-l8 || return 1
    run "$UNIT/test_cuda_emu" -q -k rank -B 1 "$BATS_TEST_TMPDIR/lgb-l8.qsm" - 50
    [ "$status" -eq 1 ] || { echo "-B 1 passed: $output"; return 1; }
    [[ "$output" == *"loads one bank with 2 words (at most 1 asked)"* ]]
}

@test "emulator: generated block models (multi-word, QS-Omega, linear, categorical; reversed), every kernel" {
    command -v python3 > /dev/null || skip "python3 not found"
    local d="$BATS_FILE_TMPDIR/gen" q docs i=0
    for q in "$d"/*.qsm; do
        # the sanitizer pass (a memory check, slower): each model
        # in one of its two layouts (NAME.alt.qsm, NAME.qsm), by turns
        i=$((i + 1))
        [ -z "${SANITIZE:-}" ] || [ $((i % 2)) = $(((i + 1) / 2 % 2)) ] || continue
        docs="$d/docs.letor"
        case "$q" in */many-*) docs="$d/many-docs.letor" ;; esac
        head -n 65 "$docs" > "$BATS_TEST_TMPDIR/docs"
        emu "$q" "$BATS_TEST_TMPDIR/docs" 100 || return 1
        ran qs && ran walk || { echo "($q)"; return 1; }
    done
    # the rank kernels ran on the plain-tree models
    emu -q "$d/rank-le-double.qsm" - 100 && ran rank && ran lanes
}

# The model and documents of every conform line of the oracle test files.
conformance_pairs() {
    local f
    for f in "$BATS_TEST_DIRNAME"/20-conformance.bats "$BATS_TEST_DIRNAME"/21-conformance-large.bats \
        "$BATS_TEST_DIRNAME"/16-catboost.bats "$BATS_TEST_DIRNAME"/22-linear.bats; do
        grep -o 'conform "[^"]*" "[^"]*"' "$f" | sed 's/^conform //'
    done | sort -u
}

@test "emulator: every conformance model, every kernel, with its documents and edge documents" {
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
            head -n 60 > "$BATS_TEST_TMPDIR/docs"
        emu -q "$BATS_TEST_TMPDIR/$key.qsm" "$BATS_TEST_TMPDIR/docs" 60 ||
            { echo "($model)"; return 1; }
        ran qs && ran walk || { echo "($model)"; return 1; }
        n=$((n + 1))
    done < <(ORACLE="$ORACLE" C="$ORACLE/catboost/models" L="$ORACLE/lightgbm/models" \
        conformance_pairs | while IFS= read -r l; do eval "echo $l"; done)
    [ "$n" -ge 30 ] || { echo "only $n conformance models found"; return 1; }
}

@test "emulator: each of the three mutations is caught, for every kernel" {
    local k m q caught
    fixture_qsm xgb-tiny && fixture_qsm lgb-l8 && fixture_qsm lgb-multiclass || return 1
    # (1) a comparison flips between < and <=, (2) trees added out of order,
    # (3) a rule lost (qs: 16-bit vectors given 8 bits; rank, lanes: the
    # default side of NaN and the zero band; walk: NaN's default side)
    for m in 1 2 3; do
        for k in $KERNELS; do
            caught=
            for q in "$BATS_TEST_TMPDIR"/{lgb-l8,xgb-tiny,lgb-multiclass}.qsm \
                "$BATS_FILE_TMPDIR/gen/rank-le-double.qsm"; do
                [ -f "$q" ] || continue
                if ! "$UNIT/test_cuda_emu_mut$m" -q -k "$k" "$q" - 200 > /dev/null 2>&1; then
                    caught=$q
                    break
                fi
            done
            [ -n "$caught" ] || { echo "mutation $m was not caught by kernel $k"; return 1; }
            # the unmutated build passes on the same model
            "$UNIT/test_cuda_emu" -q -k "$k" "$caught" - 200 > /dev/null ||
                { echo "test_cuda_emu -k $k fails on $caught"; return 1; }
        done
    done
}

@test "cuda-emu through qs-score: every kernel; whole batches, sub-batches over 1, 2 and 3 streams, threads: the bytes of walk" {
    fixture_qsm lgb-multiclass && fixture_qsm xgb-agaricus || return 1
    local f k s sub gb t
    for f in lgb-multiclass xgb-agaricus; do
        qs-score --backend walk "$BATS_TEST_TMPDIR/$f.qsm" < "$FIX/$f/docs.letor" > "$BATS_TEST_TMPDIR/want"
        for k in $KERNELS; do
            for s in 1 3; do
                for sub in 1 64; do
                    for gb in 5 1000; do
                        t=$(( (s + sub) % 2 + 1 ))
                        QS_CUDA_KERNEL=$k QS_CUDA_STREAMS=$s QS_CUDA_SUB=$sub QS_CUDA_THREADS=64 \
                            qs-score --backend cuda-emu --gpu-batch $gb --threads $t \
                            "$BATS_TEST_TMPDIR/$f.qsm" < "$FIX/$f/docs.letor" > "$BATS_TEST_TMPDIR/got" ||
                            { echo "$f $k: streams $s, sub $sub, --gpu-batch $gb, --threads $t failed"; return 1; }
                        cmp "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got" ||
                            { echo "$f $k: streams $s, sub $sub, --gpu-batch $gb, --threads $t differ"; return 1; }
                    done
                done
            done
            # rows as double instead of float32 (a float32 model)
            QS_CUDA_KERNEL=$k QS_CUDA_F32=0 qs-score --backend cuda-emu "$BATS_TEST_TMPDIR/$f.qsm" \
                < "$FIX/$f/docs.letor" | cmp - "$BATS_TEST_TMPDIR/want" || { echo "$f $k: f32=0"; return 1; }
        done
    done
}

@test "cuda-emu from the library: device options checked, each kernel asked for scores as walk, float32 rows only where exact" {
    local f
    fixture_qsm xgb-tiny && fixture_qsm lgb-multiclass && fixture_qsm lgb-l8 || return 1
    for f in xgb-tiny lgb-multiclass lgb-l8; do
        run "$UNIT/test_devopt" "$BATS_TEST_TMPDIR/$f.qsm"
        [ "$status" -eq 0 ] || { echo "$f: $output"; return 1; }
    done
    run "$UNIT/test_devopt" "$BATS_FILE_TMPDIR/gen/wide-le-double.qsm"
    [ "$status" -eq 0 ] || { echo "$output"; return 1; }
    [[ "$output" == *"kernel lanes: refused: the lanes kernel, asked for, cannot score this model"* ]]
}

@test "cuda-emu: -v says which kernel runs and why (auto's rule an estimate); a kernel that cannot take the model is exit 3" {
    fixture_qsm lgb-l8 && fixture_qsm xgb-tiny || return 1
    local m="$BATS_TEST_TMPDIR/lgb-l8.qsm" d="$FIX/lgb-l8/docs.letor"
    run qs-score -v --backend cuda-emu "$m" "$d"
    [ "$status" -eq 0 ]
    [[ "$output" == *"cuda-emu runs kernel lanes: trees of <= 16 leaves (auto's rule, estimated: not yet measured on a device)"* ]] ||
        { echo "$output" | head -3; return 1; }
    QS_CUDA_KERNEL=qs QS_CUDA_DB=64 run qs-score -v --backend cuda-emu "$m" "$d"
    [ "$status" -eq 0 ]
    [[ "$output" == *"cuda-emu runs kernel qs: asked for"*"256 threads and 64 documents a thread-block"* ]] ||
        { echo "$output" | head -3; return 1; }
    # qs's pivots: by rank where they fit, by search when asked
    QS_CUDA_KERNEL=qs run qs-score -v --backend cuda-emu "$m" "$d"
    [[ "$output" == *"pivots by rank"* ]] || { echo "$output" | head -3; return 1; }
    QS_CUDA_KERNEL=qs QS_CUDA_PIVOTS=search run qs-score -v --backend cuda-emu "$m" "$d"
    [[ "$output" == *"pivots by search"* ]] || { echo "$output" | head -3; return 1; }
    # a budget the ranks do not fit: asked for, refused with the reason (exit 3)
    QS_CUDA_KERNEL=qs QS_CUDA_PIVOTS=rank QS_CUDA_SHARED=8192 run qs-score --backend cuda-emu "$m" "$d"
    [ "$status" -eq 3 ] || { echo "$output"; return 1; }
    [[ "$output" == *"cannot find its pivots by rank (QS_CUDA_PIVOTS=rank) for this model: the ranks of"* ]]
    # categorical nodes: the rank kernels refuse, saying why (exit 3)
    fixture_qsm categorical "$FIX/xgboost/categorical.json" || return 1
    QS_CUDA_KERNEL=rank run qs-score --backend cuda-emu "$BATS_TEST_TMPDIR/categorical.qsm" \
        "$FIX/xgboost/categorical.docs.txt"
    [ "$status" -eq 3 ]
    [[ "$output" == *"the rank kernel, asked for, cannot score this model: categorical nodes"* ]]
    run qs-score -v --backend cuda-emu "$BATS_TEST_TMPDIR/categorical.qsm" "$FIX/xgboost/categorical.docs.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"runs kernel walk: categorical nodes"* ]]
    # qs-compile --info says it too, without a device (text and JSON)
    run qs-compile --info "$m"
    [ "$status" -eq 0 ]
    [[ "$output" == *"gpu: the cuda back end would run kernel lanes: trees of <= 16 leaves (auto's rule, estimated: not yet measured on a device)"* ]] ||
        { echo "$output" | grep gpu; return 1; }
    qs-compile --info --json "$m" | jq -e '.gpu | startswith("the cuda back end would run kernel lanes")' > /dev/null
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
    local what k
    for k in qs rank; do
        for what in alloc alloc:3 put put:2 launch launch:2 get wait:2; do
            QS_CUDA_KERNEL=$k QS_CUDA_EMU_FAIL=$what QS_CUDA_SUB=16 run qs-score --backend cuda-emu \
                "$BATS_TEST_TMPDIR/xgb-tiny.qsm" "$FIX/xgb-tiny/docs.letor"
            [ "$status" -eq 5 ] || { echo "$k QS_CUDA_EMU_FAIL=$what: exit $status"; return 1; }
            [[ "$output" == *"emulated device error in ${what%%:*} call"* ]] ||
                { echo "QS_CUDA_EMU_FAIL=$what: $output"; return 1; }
        done
    done
}

@test "the GPU tunables: one rule, every variable; a malformed value is a usage error (exit 2) naming it" {
    fixture_qsm xgb-tiny || return 1
    local m="$BATS_TEST_TMPDIR/xgb-tiny.qsm" d="$FIX/xgb-tiny/docs.letor" v bad
    for v in QS_CUDA_THREADS QS_CUDA_DB QS_CUDA_TAU QS_CUDA_SHARED QS_CUDA_SUB QS_CUDA_STREAMS QS_CUDA_F32 \
        QS_CUDA_WARM QS_CUDA_PIVOTS QS_CUDA_KERNEL; do
        for bad in '+1' '-0' ' 1' '1 ' '0x10' '1e3' '99999999999999999999999' 'abc'; do
            local rc=0
            env "$v=$bad" qs-score --backend cuda-emu "$m" "$d" > "$BATS_TEST_TMPDIR/out" \
                2> "$BATS_TEST_TMPDIR/err" || rc=$?
            [ "$rc" -eq 2 ] || { echo "$v='$bad': exit $rc"; return 1; }
            grep -q "$v='" "$BATS_TEST_TMPDIR/err" || { echo "$v='$bad': $(cat "$BATS_TEST_TMPDIR/err")"; return 1; }
            [ ! -s "$BATS_TEST_TMPDIR/out" ] || { echo "$v='$bad': wrote scores"; return 1; }
        done
    done
    # ranges and multiples
    QS_CUDA_THREADS=100 run qs-score --backend cuda-emu "$m" "$d"
    [ "$status" -eq 2 ]
    [[ "$output" == *"QS_CUDA_THREADS='100': expected a multiple of 32 in 32..1024"* ]]
    QS_CUDA_STREAMS=5 run qs-score --backend cuda-emu "$m" "$d"
    [ "$status" -eq 2 ]
    [[ "$output" == *"QS_CUDA_STREAMS='5': expected a whole number in 1..4"* ]]
    QS_CUDA_KERNEL=fast run qs-score --backend cuda-emu "$m" "$d"
    [ "$status" -eq 2 ]
    [[ "$output" == *"QS_CUDA_KERNEL='fast': expected qs, rank, lanes, walk or auto"* ]]
    QS_CUDA_PIVOTS=binary run qs-score --backend cuda-emu "$m" "$d"
    [ "$status" -eq 2 ]
    [[ "$output" == *"QS_CUDA_PIVOTS='binary': expected search, rank or auto"* ]]
    QS_CUDA_KERNEL=qs QS_CUDA_THREADS=1024 run qs-score --backend cuda-emu "$m" "$d"
    [ "$status" -eq 2 ]
    [[ "$output" == *"the qs kernel takes at most 512 threads"* ]]
    # the emulator's fault injection: a malformed count injects nothing and is refused
    for bad in 'alloc:abc' 'alloc:' ':0' 'alloc:0' 'alloc:-1' 'alloc:99999999999999999999999' 'alloc=1' 'free'; do
        QS_CUDA_EMU_FAIL=$bad run qs-score --backend cuda-emu "$m" "$d"
        [ "$status" -eq 2 ] || { echo "QS_CUDA_EMU_FAIL='$bad': exit $status: $output"; return 1; }
        [[ "$output" == *"QS_CUDA_EMU_FAIL='"*"': expected alloc, put, launch, get or wait"* ]] ||
            { echo "$output"; return 1; }
    done
    # an empty value counts as unset
    QS_CUDA_DB= QS_CUDA_EMU_FAIL= run qs-score --backend cuda-emu "$m" "$d"
    [ "$status" -eq 0 ]
    # refused whatever the back end (qs_env_check), as QS_CPU_CLASS and QS_BACKEND are
    QS_CUDA_STREAMS=' 2' run qs-score --backend walk "$m" "$d"
    [ "$status" -eq 2 ]
    [[ "$output" == *"QS_CUDA_STREAMS=' 2': expected a whole number in 1..4"* ]]
    QS_CUDA_KERNEL=fast run qs-blocktune --help
    [ "$status" -eq 0 ]
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
    # the summary says auto's choice of kernel is an estimate
    [[ "$line" == *"not yet measured on a device"* ]] || { echo "$line"; return 1; }
    run qs-score --backend cuda "$BATS_TEST_TMPDIR/xgb-tiny.qsm" "$FIX/xgb-tiny/docs.letor"
    [ "$status" -eq 5 ]
    [[ "$output" == *"back end 'cuda' is not available: "* ]]
    [ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ]
}

@test "cuda build: ptxas reports no spills and no local memory; libqs.so exports no CUDA symbol" {
    local b="${QS_BUILD_DIR:-$BATS_TEST_DIRNAME/../build$([ -n "${SANITIZE:-}" ] && echo -san)}"
    qs-score --version -v | grep -q 'cuda=1' || skip "built without CUDA (no nvcc)"
    [ -f "$b/cuda/ptxas.log" ] || { echo "no $b/cuda/ptxas.log"; return 1; }
    # every kernel, every target
    [ "$(grep -c 'spill stores' "$b/cuda/ptxas.log")" -ge 8 ] || { cat "$b/cuda/ptxas.log"; return 1; }
    ! grep 'spill' "$b/cuda/ptxas.log" | grep -v ' 0 bytes spill stores, 0 bytes spill loads' ||
        { cat "$b/cuda/ptxas.log"; return 1; }
    ! grep -q 'bytes lmem' "$b/cuda/ptxas.log" || { cat "$b/cuda/ptxas.log"; return 1; }
    if [ -f "$b/libqs.so" ]; then
        ! nm -D --defined-only "$b/libqs.so" | grep -i 'cuda' || { echo "CUDA symbols exported"; return 1; }
    fi
}

@test "cuda build: the SASS gates passed (no compare-and-swap loop for a shared atomic, no generic atomic, no address-space test), and they can fail" {
    local b="${QS_BUILD_DIR:-$BATS_TEST_DIRNAME/../build$([ -n "${SANITIZE:-}" ] && echo -san)}"
    qs-score --version -v | grep -q 'cuda=1' || skip "built without CUDA (no nvcc)"
    [ -f "$b/cuda/sass.log" ] || { echo "no $b/cuda/sass.log: the gates did not run"; return 1; }
    local last
    last=$(tail -n 1 "$b/cuda/sass.log")
    case "$last" in
    skipped:*) skip "SASS gates ${last}" ;;
    passed:*) ;;
    *) echo "$last"; return 1 ;;
    esac
    # the gates fail the first kernel's shape (tests/tools/sass_bad.cu)
    local nvcc
    nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    [ -x "$nvcc" ] || skip "no nvcc to build the bad kernel"
    "$nvcc" -O3 -gencode arch=compute_90,code=sm_90 -c "$BATS_TEST_DIRNAME/tools/sass_bad.cu" \
        -o "$BATS_TEST_TMPDIR/bad.o" || return 1
    run env NVCC="$nvcc" "$BATS_TEST_DIRNAME/../scripts/check-sass.sh" "$BATS_TEST_TMPDIR/bad.o" "$BATS_TEST_TMPDIR/bad.log"
    [ "$status" -eq 1 ] || { echo "the gates passed the bad kernel: $output"; return 1; }
    grep -q '^FAILED: 1 ATOMS.CAST.SPIN, 1 generic ATOM, 1 QSPC' "$BATS_TEST_TMPDIR/bad.log"
}
