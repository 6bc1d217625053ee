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

@test "auto runs the vQS kernel of the CPU class's rule for each model (QS_CPU_CLASS), vqs the same" {
    require_oracle
    qs-score --list-backends | grep -q '^vqs-avx512	yes	' ||
        skip "this CPU lacks AVX-512 (auto has one vQS kernel to choose)"
    local t="$BATS_TEST_TMPDIR" cls
    qs-convert "$FIX/lgb-l8/model.txt.zst" | qs-compile -o "$t/small.qsm" -
    qs-convert "$FIX/qr-oblivious/model.xml.zst" | qs-compile -o "$t/obl.qsm" -
    qs-convert "$ORACLE/xgboost/mq2008-ndcg-lg64-t1000/model.json" | qs-compile -o "$t/large.qsm" -
    # AMD Zen 4: vqs, AVX-512 where most leaves are in trees of <= 16
    # leaves or QS-Omega blocks, else AVX2, and AVX-512 for batches under
    # 32 documents (README.md: measured on Zen 5 and Emerald Rapids before
    # the rank kernels).
    for cls in zen4; do
        run env QS_CPU_CLASS=$cls qs-score -v "$t/small.qsm" < /dev/null
        assert_success
        assert_output --partial "auto runs vqs (AVX-512 (100% of the leaves in QS-Omega or <= 16-leaf trees) for batches >= 32 docs, AVX-512 below"
        run env QS_CPU_CLASS=$cls qs-score -v "$t/obl.qsm" < /dev/null
        assert_output --partial "auto runs vqs (AVX-512 (100% of the leaves"
        run env QS_CPU_CLASS=$cls qs-score -v "$t/large.qsm" < /dev/null
        assert_output --partial "auto runs vqs (AVX2 ("
        assert_output --partial "rule: QS_CPU_CLASS))"
    done
    # Zen 5 (and Intel): blocks read by ranks count on the AVX-512 side too
    # (measured faster on Zen 5 on every one); a layout of reversed trees
    # has none.
    qs-convert "$ORACLE/xgboost/mq2008-ndcg-lg64-t1000/model.json" |
        qs-compile --reverse-all -o "$t/large-rev.qsm" -
    for cls in zen5 amd-zen5 intel; do
        run env QS_CPU_CLASS=$cls qs-score -v "$t/small.qsm" < /dev/null
        assert_success
        assert_output --regexp "auto runs vqs \(AVX-512 \(100% of leaves in rank blocks, QS-Omega(,| or) [^)]*\) for batches >= 32 docs, AVX-512 below"
        run env QS_CPU_CLASS=$cls qs-score -v "$t/obl.qsm" < /dev/null
        assert_output --partial "auto runs vqs (AVX-512 (100% of leaves"
        run env QS_CPU_CLASS=$cls qs-score -v "$t/large.qsm" < /dev/null
        assert_output --partial "auto runs vqs (AVX-512 (100% of leaves in rank blocks"
        run env QS_CPU_CLASS=$cls qs-score -v "$t/large-rev.qsm" < /dev/null
        assert_output --partial "auto runs vqs (AVX2 (0% of leaves in rank blocks"
        assert_output --partial "rule: QS_CPU_CLASS))"
    done
    # Intel alone: trees of more than 64 leaves (multi-word masks) count on
    # the AVX-512 side too (measured 1.04-1.09x faster there)
    python3 "$QS_ROOT/bench/gen_forest.py" 20 128 "$FIX/lgb-l8/docs.letor" 3 | qs-compile -o "$t/wide.qsm" -
    run env QS_CPU_CLASS=intel qs-score -v "$t/wide.qsm" < /dev/null
    assert_output --partial "auto runs vqs (AVX-512 (100% of leaves in rank blocks, QS-Omega, 1-16 or 65+ leaf trees)"
    run env QS_CPU_CLASS=zen5 qs-score -v "$t/wide.qsm" < /dev/null
    assert_output --partial "auto runs vqs (AVX2 (0% of leaves in rank blocks, QS-Omega or <= 16-leaf trees)"
    run env QS_CPU_CLASS=intel qs-score --version -v
    assert_output --partial "auto: vqs, AVX-512 for batches < 32 docs or >= 50% of leaves in QS-Omega, rank blocks, 1-16 or 65+ leaf trees, else AVX2 (intel: QS_CPU_CLASS)"
    # Other CPUs: the widest level for every model.
    run env QS_CPU_CLASS=generic qs-score -v "$t/large.qsm" < /dev/null
    assert_output --partial "auto runs vqs-avx512 (AVX-512, the widest level (CPU class generic: QS_CPU_CLASS))"
    # a name that is no class's (nor the tail of one) is not taken: refused
    run env QS_CPU_CLASS=l qs-score -v "$t/large.qsm" < /dev/null
    assert_failure 2
    assert_output --partial "unknown CPU class 'l' in QS_CPU_CLASS"
    refute_output --partial "auto runs"
    run env QS_CPU_CLASS=generic qs-score -v "$t/large.qsm" < /dev/null
    assert_output --partial "auto runs vqs-avx512 (AVX-512, the widest level (CPU class generic: QS_CPU_CLASS))"
    # AVX-512 disabled: AVX2 whatever the rule.
    run env QS_CPU_CLASS=zen5 QS_DISABLE_CPU_FEATURES=avx512 qs-score -v "$t/small.qsm" < /dev/null
    assert_output --partial "auto runs vqs-avx2"
    # --version -v and --list-backends state the rule in force.
    run env QS_CPU_CLASS=zen5 qs-score --version -v
    assert_output --partial "auto: vqs, AVX-512 for batches < 32 docs or >= 50% of leaves in QS-Omega, <= 16-leaf trees or rank blocks, else AVX2 (amd-zen5: QS_CPU_CLASS)"
    run env QS_CPU_CLASS=zen4 qs-score --version -v
    assert_output --partial "auto: vqs, AVX-512 for batches < 32 docs or models with >= 50% of leaves in QS-Omega or <= 16-leaf trees, else AVX2 (amd-zen4: QS_CPU_CLASS)"
    run env QS_CPU_CLASS=zen5 qs-score --list-backends
    assert_output --regexp $'\nvqs\tyes\t[^\t]*\t[^\n]*; auto: vqs, AVX-512 for batches'
    # vqs runs the same kernel as auto; every choice gives the same bits.
    for cls in zen5 intel generic; do
        QS_CPU_CLASS=$cls qs-score --backend vqs "$t/small.qsm" < "$FIX/lgb-l8/docs.letor" > "$t/got"
        compare_scores "$t/got" "$FIX/lgb-l8/expected.txt"
        QS_CPU_CLASS=$cls qs-score "$t/small.qsm" < "$FIX/lgb-l8/docs.letor" > "$t/got"
        compare_scores "$t/got" "$FIX/lgb-l8/expected.txt"
    done
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

@test "bench/kernels.sh: each kernel's time per model, auto / best, every kernel's scores compared" {
    command -v python3 > /dev/null || skip "python3 not installed"
    [ -x "$QS_ROOT/build/bench/qs-matrix" ] || skip "build/bench/qs-matrix not built"
    local t="$BATS_TEST_TMPDIR"
    qs-convert "$FIX/lgb-l8/model.txt.zst" | qs-compile -o "$t/m.qsm" -
    printf 'small\t%s\t%s\tzero\t50\n' "$t/m.qsm" "$FIX/lgb-l8/docs.letor" > "$t/list"
    run env KERNELS="walk qs auto" "$QS_ROOT/bench/kernels.sh" --rounds 2 --reps 1 "$t/out" "$t/list"
    assert_success
    assert_output --partial "| model | docs | walk | qs | auto | auto ran as | auto / best | scores |"
    assert_output --regexp '\| small \| 50 \| [0-9.e+-]+ \| [0-9.e+-]+ \| [0-9.e+-]+ \| [A-Za-z0-9: -]+ \| [0-9.]+ \| identical \|'
    [ "$(grep -c $'\tsmall\t' "$t/out/runs.tsv")" = 6 ]
    # the scores written are the model's (the fixture's oracle, numerically)
    python3 - "$t/out/scores/small.auto.f64" "$FIX/lgb-l8/expected.txt" <<'PY'
import array, sys
a = array.array('d')
a.frombytes(open(sys.argv[1], 'rb').read())
want = [float(l) for l in open(sys.argv[2])][:50]
assert len(a) == 50 and list(a) == want, (len(a), a[:3], want[:3])
PY
}

@test "bench/auto-grid.sh: auto against every exact back end, one row a model" {
    command -v python3 > /dev/null || skip "python3 not installed"
    local t="$BATS_TEST_TMPDIR"
    for i in 1 2 3; do cat "$FIX/lgb-l8/docs.letor"; done > "$t/docs"
    run --separate-stderr "$QS_ROOT/bench/auto-grid.sh" --docs "$t/docs" --repeat 1 --dir "$t/g" --only forest-8,oblivious-d6
    assert_success
    assert_line --index 0 --partial "| model | trees x leaves | auto runs | auto ns/doc/tree | fastest |"
    assert_line --regexp '^\| forest-8 \| 1000 x 8 \| [a-z0-9-]+ \| [0-9.]+ \| [a-z0-9-]+ \| [0-9.]+ \| [0-9.]+ \| .*walk [0-9.]+.*vpred [0-9.]+'
    assert_line --regexp '^\| oblivious-d6 \| 1000 x 64 \| [a-z0-9-]+ \| .*oblivious [0-9.]+'
    [ "$(grep -c '^|' <<< "$output")" = 4 ]
    # the models are what the grid says
    qs-compile --info "$t/g/oblivious-d6.qsm" | grep -q '^oblivious: yes (1000 of 1000 trees)'
    run "$QS_ROOT/bench/auto-grid.sh" --bogus
    assert_failure 2
}

@test "auto on trees of >= 640 leaves on average runs vpred (vQS's planes lose there), below them vqs; oblivious trees stay with vqs" {
    command -v python3 > /dev/null || skip "python3 not installed"
    qs-score --version -v | grep -q '^default: auto = vqs' || skip "auto is not vqs on this machine"
    local t="$BATS_TEST_TMPDIR" d="$FIX/lgb-l8/docs.letor" l
    for l in 512 768; do
        python3 "$QS_ROOT/bench/gen_forest.py" 12 "$l" "$d" 3 | qs-compile -o "$t/f$l.qsm" - || return 1
    done
    run qs-score -v "$t/f768.qsm" "$d"
    assert_success
    assert_output --partial "auto runs vpred (vpred: trees of 768 leaves on average (>= 640"
    qs-score "$t/f768.qsm" "$d" > "$t/auto" 2> /dev/null
    qs-score --backend walk "$t/f768.qsm" "$d" > "$t/walk" 2> /dev/null
    cmp "$t/auto" "$t/walk"
    run qs-score -v "$t/f512.qsm" "$d"
    assert_success
    assert_output --partial "auto runs vqs ("
    # oblivious trees of up to 4,096 leaves (QS-Omega blocks): vqs
    python3 "$BATS_TEST_DIRNAME/tools/gen_block_models.py" "$t/gen" > /dev/null
    qs-compile -o "$t/obl.qsm" "$t/gen/obl-le-double.txt"
    run qs-score -v "$t/obl.qsm" "$t/gen/docs.letor"
    assert_success
    assert_output --partial "auto runs vqs ("
}
