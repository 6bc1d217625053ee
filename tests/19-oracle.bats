#!/usr/bin/env bats
# The oracle data (tests/oracle): the unpacked copy the conformance files read
# (build/oracle) matches the checksums of SHA256SUMS, every file of
# tests/oracle is listed, a changed byte is caught, and the regeneration's
# libraries are pinned.

load test_helper

setup() { require_oracle; }

@test "oracle: build/oracle matches tests/oracle/SHA256SUMS, every file" {
    [ -n "${QS_ORACLE_DATA:-}" ] && skip "QS_ORACLE_DATA points elsewhere"
    run "$QS_ROOT/scripts/oracle.sh" check
    assert_success
    assert_output --regexp "^oracle.sh: build/oracle: [0-9]+ core files and [0-9]+ of [0-9]+ large ones match their checksums$"
    [ "$(wc -l < "$QS_ROOT/tests/oracle/SHA256SUMS")" -ge 390 ]
}

@test "oracle: every file of tests/oracle is listed in SHA256SUMS (or is the folder's own)" {
    local f rel n=0
    while IFS= read -r -d '' f; do
        rel=${f#"$QS_ROOT/tests/oracle/"}
        case "$rel" in
            SHA256SUMS | SHA256SUMS.large | README.md | requirements.txt | regen.py) continue ;;
        esac
        grep -q "  ${rel%.zst}\$" "$QS_ROOT/tests/oracle/SHA256SUMS" || { echo "not in SHA256SUMS: $rel"; return 1; }
        n=$((n + 1))
    done < <(find "$QS_ROOT/tests/oracle" -type f -print0)
    [ "$n" = "$(wc -l < "$QS_ROOT/tests/oracle/SHA256SUMS")" ] || { echo "$n files for $(wc -l < "$QS_ROOT/tests/oracle/SHA256SUMS") lines"; return 1; }
    # no file is both in the repository and among the large ones
    ! awk '{ print $2 }' "$QS_ROOT/tests/oracle/SHA256SUMS" | grep -qxFf <(awk '{ print $2 }' "$QS_ROOT/tests/oracle/SHA256SUMS.large")
}

@test "oracle: one changed byte of an unpacked file is caught" {
    local t="$BATS_TEST_TMPDIR/o"
    mkdir -p "$t"
    cp -r "$ORACLE"/. "$t"
    printf '9' | dd of="$t/xgboost/mq2008-tiny-d2-t3/test.pred.missing.txt" bs=1 seek=3 conv=notrunc 2> /dev/null
    run "$QS_ROOT/scripts/oracle.sh" check "$t"
    assert_failure 1
    assert_output --partial "xgboost/mq2008-tiny-d2-t3/test.pred.missing.txt: FAILED"
}

@test "oracle: the regeneration's libraries are pinned (name==version), its script refuses what it cannot make" {
    local l
    while IFS= read -r l; do
        [[ "$l" =~ ^[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*$ ]] || { echo "not pinned: $l"; return 1; }
    done < "$QS_ROOT/tests/oracle/requirements.txt"
    grep -qx 'xgboost==1.7.4' "$QS_ROOT/tests/oracle/requirements.txt"
    grep -qx 'lightgbm==4.6.0' "$QS_ROOT/tests/oracle/requirements.txt"
    run "$QS_ROOT/scripts/oracle.sh" regen
    assert_failure 2
    assert_output --partial "usage: scripts/oracle.sh"
}
