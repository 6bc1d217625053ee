#!/usr/bin/env bats
# qs-eval: query groups from a sidecar file (LightGBM's DOCS.query, XGBoost's
# DOCS.group), the warning for one huge query, gains that overflow, and the
# streamed --group=block mode in bounded memory.

load test_helper

setup() {
    T="$BATS_TEST_TMPDIR"
    # Three queries of 3, 2 and 4 documents, once with qid: tokens and once
    # without (the groups then come from a sidecar file).
    printf '%s\n' '2 qid:1 1:0.1' '0 qid:1 1:0.2' '1 qid:1 1:0.3' \
        '0 qid:2 1:0.1' '1 qid:2 1:0.2' \
        '3 qid:3 1:0.1' '0 qid:3 1:0.2' '2 qid:3 1:0.3' '1 qid:3 1:0.4' > "$T/q.letor"
    sed 's/ qid:[0-9]*//' "$T/q.letor" > "$T/docs.letor"
    printf '%s\n' 0.1 0.9 0.5 0.3 0.2 0.1 0.7 0.3 0.2 > "$T/scores"
    printf '3\n2\n4\n' > "$T/groups"
}

@test "qs-eval --group-file: the queries of a sidecar file, as if the lines had qids" {
    qs-eval --per-query -k 1,3,0 "$T/q.letor" "$T/scores" > "$T/want"
    run qs-eval --per-query -k 1,3,0 --group-file "$T/groups" "$T/docs.letor" "$T/scores"
    assert_success
    assert_output "$(cat "$T/want")"
    # The three queries are not one: NDCG@3 of the single query would differ.
    run qs-eval -k 3 "$T/docs.letor" "$T/scores"
    assert_success
    refute_output "$(grep ^mean "$T/want" | cut -f1,3 | sed 's/^/qid\tndcg@3\n/')"
    # The annotated form takes --group-file too.
    paste <(cut -d' ' -f1 "$T/docs.letor") <(yes '' | head -9) "$T/scores" > "$T/ann"
    run qs-eval --per-query -k 1,3,0 --group-file "$T/groups" "$T/ann"
    assert_success
    assert_output "$(cat "$T/want")"
}

@test "qs-eval: DOCS.query or DOCS.group beside the LETOR file is read as LightGBM does" {
    qs_eval_rows --per-query "$T/q.letor" "$T/scores" > "$T/want"
    cp "$T/groups" "$T/docs.letor.query"
    run qs_eval_rows --per-query "$T/docs.letor" "$T/scores"
    assert_success
    assert_output "$(cat "$T/want")"
    mv "$T/docs.letor.query" "$T/docs.letor.group"
    run qs_eval_rows --per-query "$T/docs.letor" "$T/scores"
    assert_success
    assert_output "$(cat "$T/want")"
    # An explicit --group-file wins over the sidecar.
    printf '9\n' > "$T/one"
    run qs_eval_rows --per-query --group-file "$T/one" "$T/docs.letor" "$T/scores"
    assert_success
    assert_equal "${#lines[@]}" 3
}

@test "qs-eval --group-file: sizes that do not add up, or are not sizes, are errors" {
    printf '3\n2\n' > "$T/short"
    run qs-eval --group-file "$T/short" "$T/docs.letor" "$T/scores"
    assert_failure 1
    assert_output "qs-eval: $T/docs.letor:6: more documents than the group file $T/short holds (5 in 2 groups)"
    printf '3\n2\n4\n1\n' > "$T/long"
    run qs-eval --group-file "$T/long" "$T/docs.letor" "$T/scores"
    assert_failure 1
    assert_output "qs-eval: $T/long: the group sizes add up to 10 documents, but $T/docs.letor has 9"
    printf '3\n0\n6\n' > "$T/zero"
    run qs-eval --group-file "$T/zero" "$T/docs.letor" "$T/scores"
    assert_failure 1
    assert_output "qs-eval: $T/zero:2: bad group size '0' (expected a whole number >= 1)"
    printf '3\n2x\n4\n' > "$T/bad"
    run qs-eval --group-file "$T/bad" "$T/docs.letor" "$T/scores"
    assert_failure 1
    assert_output --partial "$T/bad:2: bad group size '2x'"
    run qs-eval --group-file "$T/nonexistent" "$T/docs.letor" "$T/scores"
    assert_failure 4
    # a sign, a space or a count past 2^64 is no size either
    for v in +2 ' 2' 18446744073709551616 99999999999999999999999; do
        printf '3\n%s\n4\n' "$v" > "$T/bad"
        run qs-eval --group-file "$T/bad" "$T/docs.letor" "$T/scores"
        assert_failure 1
        assert_output "qs-eval: $T/bad:2: bad group size '$v' (expected a whole number >= 1)"
    done
}

@test "qs-eval --group-file: sizes whose sum wraps past 2^64 are an error, not the document count" {
    # 2^63-1 + 2^63-1 + 11 = 2^64 + 9: modulo 2^64 exactly the 9 documents
    printf '9223372036854775807\n9223372036854775807\n11\n' > "$T/wrap"
    run qs-eval --group-file "$T/wrap" "$T/docs.letor" "$T/scores"
    assert_failure 1
    assert_output "qs-eval: $T/wrap:3: the group sizes add up to more than 18446744073709551615 documents"
    # the largest sum there is, one group: the documents are too few
    printf '18446744073709551615\n' > "$T/max"
    run qs-eval --group-file "$T/max" "$T/docs.letor" "$T/scores"
    assert_failure 1
    assert_output "qs-eval: $T/max: the group sizes add up to 18446744073709551615 documents, but $T/docs.letor has 9"
}

@test "qs-eval: many lines with neither qids nor groups: a warning, once" {
    awk 'BEGIN { for (i = 0; i < 1500; i++) print i % 3 " 1:0.5" }' > "$T/many.letor"
    awk 'BEGIN { for (i = 0; i < 1500; i++) print i % 7 }' > "$T/many.scores"
    run bash -c "qs-eval '$T/many.letor' '$T/many.scores' 2>&1 >/dev/null"
    assert_success
    assert_output "qs-eval: $T/many.letor: 1500 documents without qid: and no group file: they are evaluated as one query (give --group-file FILE, or put the group sizes in $T/many.letor.query)"
    # With qids, or with groups, or with few lines: no warning.
    sed 's/ / qid:1 /' "$T/many.letor" > "$T/many.qid"
    run bash -c "qs-eval '$T/many.qid' '$T/many.scores' 2>&1 >/dev/null"
    assert_output ""
    printf '1500\n' > "$T/many.letor.query"
    run bash -c "qs-eval '$T/many.letor' '$T/many.scores' 2>&1 >/dev/null"
    assert_output ""
    run bash -c "qs-eval '$T/docs.letor' '$T/scores' 2>&1 >/dev/null"
    assert_output ""
}

@test "qs-eval --gain=linear: gains whose sum overflows are refused with the line, never dropped" {
    printf '%s\n' '1 qid:a' '0 qid:a' '1e308 qid:b' '0 qid:b' '1.5e308 qid:b' '1 qid:c' > "$T/big.letor"
    printf '%s\n' 1 2 3 4 5 6 > "$T/big.scores"
    # (--per-query rows of the queries before are already written.)
    run bash -c "qs-eval --gain=linear --per-query '$T/big.letor' '$T/big.scores' 2>&1 >/dev/null"
    assert_failure 1
    assert_output "qs-eval: $T/big.letor:5: label '1.5e308': the gains of query 'b' add up beyond the largest double, so its DCG cannot be computed"
    run qs_eval_rows --gain=linear --group=qid "$T/big.letor" "$T/big.scores"
    assert_failure 1
    assert_output --partial "$T/big.letor:5: label '1.5e308'"
    # A large label whose sums stay finite is fine, and counted: the mean
    # is over all three queries (1/log2(3) for a and b, 1 for c).
    sed -i '5d' "$T/big.letor"
    sed -i '5d' "$T/big.scores"
    run qs_eval_rows --gain=linear --per-query -k 0 "$T/big.letor" "$T/big.scores"
    assert_success
    assert_output "$(printf 'qid\tndcg\na\t0.630929753571\nb\t0.630929753571\nc\t1.000000000000\nmean\t0.753953169048')"
}

@test "qs-eval --group=block streams: 4 million one-document queries in under 16 MB" {
    command -v /usr/bin/time > /dev/null || skip "no /usr/bin/time"
    # Labels i % 3, so a query is relevant (NDCG 1) unless i % 3 == 0.
    run bash -c "awk 'BEGIN { for (i = 1; i <= 4000000; i++) printf \"%d\\tq%d\\t0.5\\n\", i % 3, i }' |
        /usr/bin/time -f %M -o '$T/rss' qs-eval --per-query > '$T/out'"
    assert_success
    run wc -l < "$T/out"
    assert_output 4000003
    run sed -n '3p;4000002,$p' "$T/out"
    assert_output "$(printf 'q1\t1.000000000000\nq4000000\t1.000000000000\nmean\t0.666666750000')"
    rss=$(cat "$T/rss")
    echo "peak RSS: $rss KB"
    [ "$rss" -lt $((16384 + $(san_rss qs-eval))) ]
}
