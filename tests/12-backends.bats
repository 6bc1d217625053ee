#!/usr/bin/env bats
# The back ends: the registry (--list-backends, --version -v, auto), the
# baselines and the vQS kernels against the reference walk on the fixtures,
# and turning SIMD levels off (QS_DISABLE_CPU_FEATURES).

load test_helper
bats_require_minimum_version 1.5.0

@test "qs-score --version -v lists the back ends; unknown back end is a usage error" {
    run qs-score --version -v
    assert_success
    assert_output --partial "walk"
    assert_output --partial "qs "
    assert_output --regexp "build: library [0-9.]+, openmp=[01] numa=[01] cuda=[01]"
    run qs-score --backend nosuch /dev/null
    assert_failure 2
    assert_output --partial "unknown back end 'nosuch'"
    run env QS_BACKEND=nosuch qs-score /dev/null
    assert_failure 2
}

@test "baselines (STRUCT+, VPRED, OBLIVIOUS) and QS/vQS on random and fixture models equal the reference walk bit for bit" {
    run "$UNIT/test_baselines" "$FIX"
    assert_success
    assert_output --regexp "[0-9]+ checks, 0 failures"
    # All 12 fixture models it lists are found and converted (the dart model
    # with weight_drop too, since dart is read).
    assert_line "real fixture models: 12 found under $FIX"
    run grep -c "not converted" <<< "$output"
    assert_output 0
    note_missing_kernels "test_baselines"
}

# vqs_fixtures BACKEND: every fixture through BACKEND, on the compiled layout
# and on a reversed one with small blocks (δ = 3 leaves part-filled lanes).
vqs_fixtures() {
    local b="$1" f
    for f in "lgb-l8 model.txt.zst expected.txt" "lgb-multiclass model.txt.zst expected.txt" \
             "qr-oblivious model.xml.zst expected.txt" "xgb-tiny model.json expected.txt" \
             "xgb-agaricus model.json.zst expected.txt"; do
        set -- $f
        QS_BACKEND="$b" pipeline "$@"
    done
}

# cpu_lacks BACKEND REASON: when this CPU cannot run BACKEND, check that it
# is refused (exit 3, named) and skip with REASON.
cpu_lacks() {
    if ! qs-score --list-backends | grep -q "^$1	yes	"; then
        qs-convert "$FIX/lgb-l8/model.txt.zst" > "$BATS_TEST_TMPDIR/m.txt"
        qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" "$BATS_TEST_TMPDIR/m.txt"
        run qs-score --backend "$1" "$BATS_TEST_TMPDIR/m.qsm" < "$FIX/lgb-l8/docs.letor"
        assert_failure 3
        assert_output --partial "back end '$1' is not available"
        skip "$2 (checked only that --backend $1 is refused with exit 3)"
    fi
}

@test "vQS with AVX-512 (64 documents per instruction) equals the reference on every fixture" {
    cpu_lacks vqs-avx512 "this CPU lacks AVX-512 F/DQ/CD/VL/BW"
    vqs_fixtures vqs-avx512
}

@test "vQS with AVX2 (64 documents on byte planes) equals the reference on every fixture" {
    cpu_lacks vqs-avx2 "this CPU lacks AVX2"
    vqs_fixtures vqs-avx2
}

@test "the default back end is the widest vQS this CPU runs, or scalar QS" {
    local list want
    list=$(qs-score --list-backends)
    if echo "$list" | grep -q '^vqs-avx512	yes	'; then want=vqs-avx512
    elif echo "$list" | grep -q '^vqs-avx2	yes	'; then want=vqs-avx2
    else want=qs; fi
    run qs-score --version -v
    assert_output --partial "default: auto = $want"
    # --list-backends marks the same one, and only it.
    [ "$(echo "$list" | awk -F'\t' '$3 ~ /(^|,)auto(,|$)/ { print $1 }')" = "$want" ]
}

@test "QS_DISABLE_CPU_FEATURES turns SIMD levels off: auto falls back, a disabled back end is refused" {
    local list
    list=$(QS_DISABLE_CPU_FEATURES=avx512,avx2 qs-score --list-backends)
    [ "$(echo "$list" | awk -F'\t' '$3 ~ /(^|,)auto(,|$)/ { print $1 }')" = qs ]
    run env QS_DISABLE_CPU_FEATURES=avx512,avx2 qs-score --version -v
    assert_output --partial "default: auto = qs"
    qs-convert "$FIX/lgb-l8/model.txt.zst" > "$BATS_TEST_TMPDIR/m.txt"
    qs-compile -o "$BATS_TEST_TMPDIR/m.qsm" "$BATS_TEST_TMPDIR/m.txt"
    run env QS_DISABLE_CPU_FEATURES=avx2 qs-score --backend vqs-avx2 "$BATS_TEST_TMPDIR/m.qsm" < "$FIX/lgb-l8/docs.letor"
    assert_failure 3
    assert_output --partial "back end 'vqs-avx2' is not available"
    # auto without SIMD still scores exactly.
    QS_DISABLE_CPU_FEATURES=all qs-score "$BATS_TEST_TMPDIR/m.qsm" < "$FIX/lgb-l8/docs.letor" > "$BATS_TEST_TMPDIR/got"
    compare_scores "$BATS_TEST_TMPDIR/got" "$FIX/lgb-l8/expected.txt"
}

@test "--list-backends: one tab-separated line per back end, every known back end listed" {
    run qs-score --list-backends
    assert_success
    local b
    for b in walk qs vqs vqs-avx2 vqs-avx512 struct vpred oblivious walk-batch cuda cuda-emu; do
        echo "$output" | grep -q "^$b	" || { echo "back end $b missing"; return 1; }
    done
    # four fields, the second yes or "no: reason", the third flags or -
    echo "$output" | awk -F'\t' 'NF != 4 || ($2 != "yes" && $2 !~ /^no: ./) || $3 == "" { bad = 1; print "bad line: " $0 } END { exit bad }'
    echo "$output" | grep -q '^walk	yes	reference[,	]'
    echo "$output" | grep -q '^struct	yes	baseline[,	]'
    echo "$output" | grep -q '^oblivious	yes	baseline,oblivious-only[,	]'
    echo "$output" | grep -q '^walk-batch	yes	threads,batch	'
    echo "$output" | grep -q '^cuda-emu	yes	batch,threads	'
    echo "$output" | grep -q '^cuda	[^	]*	device,batch,threads	'
}
