#!/bin/sh
# demo.sh: the whole pipeline on the bundled example (a LightGBM LambdaMART
# model and 120 documents of LightGBM's ranking example), ending with NDCG@10.
set -eu
cd "$(dirname "$0")/.."
B=bin
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ex=tests/fixtures/lgb-l8
echo "\$ qs-convert $ex/model.txt.zst | qs-compile -o model.qsm"
$B/qs-convert $ex/model.txt.zst | $B/qs-compile -o "$T/model.qsm"
echo "\$ qs-score model.qsm < $ex/docs.letor > scores   (first 5 of $(wc -l < $ex/docs.letor))"
$B/qs-score "$T/model.qsm" < $ex/docs.letor > "$T/scores"
head -5 "$T/scores"
if cmp -s "$T/scores" $ex/expected.txt || [ "$(paste "$T/scores" $ex/expected.txt | awk '$1 != $2' | wc -l)" = 0 ]; then
    echo "all $(wc -l < "$T/scores") scores equal LightGBM's own, bit for bit"
else
    echo "scores differ from LightGBM's" >&2; exit 1
fi
echo "\$ qs-score --annotate model.qsm < $ex/docs.letor | qs-eval -k 1,3,5,10"
$B/qs-score --annotate "$T/model.qsm" < $ex/docs.letor | $B/qs-eval -k 1,3,5,10
