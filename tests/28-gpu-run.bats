#!/usr/bin/env bats
# The device run, prepared here: scripts/gpu-pack.sh makes the pack (with
# nvcc), and scripts/gpu-run.sh runs against the emulator (QS_GPU_BACKEND=
# cuda-emu, QS_GPU_SMALL=1: small sizes, a few conformance models) -- a dry
# run that checks the script, its steps and their comparisons, not a GPU.

load test_helper

setup_file() {
    [ -z "${SANITIZE:-}" ] || return 0
    qs-score --version -v | grep -q 'cuda=1' || return 0
    [ -f "$ORACLE/lightgbm/MANIFEST.tsv" ] || return 0
    # the pack of the plain build, quickly (no first kernel's build, zstd -3)
    QS_GPU_V1=none QS_GPU_PACK_LEVEL=3 "$QS_ROOT/scripts/gpu-pack.sh" "$BATS_FILE_TMPDIR/pack" \
        > "$BATS_FILE_TMPDIR/pack.log" 2>&1 || { cat "$BATS_FILE_TMPDIR/pack.log"; return 1; }
}

need_pack() {
    [ -z "${SANITIZE:-}" ] || skip "the plain pass runs this (the pack is built from build/)"
    qs-score --version -v | grep -q 'cuda=1' || skip "built without CUDA (no nvcc): no pack"
    require_oracle
    [ -d "$BATS_FILE_TMPDIR/pack" ] || { cat "$BATS_FILE_TMPDIR/pack.log"; return 1; }
}

@test "gpu-pack.sh: binaries, libraries, every conformance model with documents and the CPU's scores, under 64 MiB" {
    need_pack
    local p="$BATS_FILE_TMPDIR/pack" b
    for b in qs-score qs-compile qs-convert cuda-kernel cuda-atomics cuda-host qs-matrix zstd zstdcat; do
        [ -x "$p/bin/$b" ] || { echo "no bin/$b"; return 1; }
    done
    [ "$(wc -l < "$p/conform/list.tsv")" -ge 60 ] || { cat "$p/conform/list.tsv"; return 1; }
    [ "$(du -sm "$p" | cut -f1)" -le 64 ]
    grep -q 'QS_GPU_V1=none: no cuda-kernel-v1' "$BATS_FILE_TMPDIR/pack.log"
}

@test "gpu-run.sh dry run against the emulator: info, diag, conform, host, scale; every comparison made" {
    need_pack
    local o="$BATS_TEST_TMPDIR/out"
    QS_GPU_BACKEND=cuda-emu QS_GPU_SMALL=1 QS_GPU_STEPS=info,diag,conform,host,scale \
        run "$QS_ROOT/scripts/gpu-run.sh" "$BATS_FILE_TMPDIR/pack" "$o"
    [ "$status" -eq 0 ] || { echo "$output"; return 1; }
    [[ "$output" == *"every step asked for passed"* ]]
    # diag: every kernel, exact
    local k
    for k in qs rank lanes walk; do
        grep -q "^$k, defaults	$k	.*	exact\$" "$o/diag.tsv" || { cat "$o/diag.tsv"; return 1; }
    done
    # conform: runs compared, none bad, every kernel among them
    grep -q 'conform: [1-9][0-9]* of [0-9]* runs byte-identical to the CPU, [0-9]* refused (a kernel that cannot take the model), 0 bad' "$o/summary.txt"
    for k in qs rank lanes walk; do
        grep -q "^same	.*	$k	" "$o/conform.tsv" || { echo "no $k run"; cat "$o/conform.tsv"; return 1; }
    done
    # host and scale: every row the text scores' bytes
    ! grep -q DIFFERS "$o/host.tsv" "$o/scale.tsv"
    [ "$(grep -c 'same$' "$o/host.tsv")" -eq 4 ] || { cat "$o/host.tsv"; return 1; }
}

@test "gpu-run.sh: a difference is caught (a CPU score changed in the pack), and the budget stops later steps" {
    need_pack
    local p="$BATS_TEST_TMPDIR/pack" o="$BATS_TEST_TMPDIR/out" key
    cp -r "$BATS_FILE_TMPDIR/pack" "$p"
    key=$(head -n 1 "$p/conform/list.tsv" | cut -f1)
    zstdcat "$p/conform/$key.cpu.zst" | awk 'NR == 1 { $0 = ($0 == "0.5" ? "0.25" : "0.5") } 1' |
        zstd -q -f -o "$p/conform/$key.cpu.zst"
    QS_GPU_BACKEND=cuda-emu QS_GPU_SMALL=1 QS_GPU_STEPS=info,conform,scale QS_GPU_BUDGET=0 \
        run "$QS_ROOT/scripts/gpu-run.sh" "$p" "$o"
    # a budget of 0 s: no step after info runs, and each says so
    [ "$status" -eq 0 ] || { echo "$output"; return 1; }
    [[ "$output" == *"conform: not run: past the budget of 0 s"* ]]
    QS_GPU_BACKEND=cuda-emu QS_GPU_SMALL=1 QS_GPU_STEPS=info,conform run "$QS_ROOT/scripts/gpu-run.sh" "$p" "$o"
    [ "$status" -eq 1 ] || { echo "$output"; return 1; }
    [[ "$output" == *"FAILED: conform"* ]]
    grep -q "^BAD	$key	.*differs" "$o/conform.tsv"
}
