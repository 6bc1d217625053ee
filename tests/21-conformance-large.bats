#!/usr/bin/env bats
# Oracle conformance of the models left out of the repository for their size
# (tests/oracle/SHA256SUMS.large: LightGBM's 5,000-tree grid and two of its
# 1,000-tree models, XGBoost's 5,000-tree model and two 1,000-tree ones):
# each test skips, saying so, until `scripts/oracle.sh large` has made them
# with the pinned libraries (checked against the recorded checksums); then
# the same checks as 20-conformance.bats.

load test_helper

setup() { require_oracle; }

@test "lightgbm lambdarank_l16_t5000" {
    require_large "$ORACLE/lightgbm/models/lambdarank_l16_t5000/model.txt" "$ORACLE/lightgbm/models/lambdarank_l16_t5000/pred_raw.txt"
    conform "$ORACLE/lightgbm/models/lambdarank_l16_t5000/model.txt" "$ORACLE/lightgbm/data/rank.test.letor" "$ORACLE/lightgbm/models/lambdarank_l16_t5000/pred_raw.txt"
}

@test "lightgbm lambdarank_l32_t1000" {
    require_large "$ORACLE/lightgbm/models/lambdarank_l32_t1000/model.txt" "$ORACLE/lightgbm/models/lambdarank_l32_t1000/pred_raw.txt"
    conform "$ORACLE/lightgbm/models/lambdarank_l32_t1000/model.txt" "$ORACLE/lightgbm/data/rank.test.letor" "$ORACLE/lightgbm/models/lambdarank_l32_t1000/pred_raw.txt"
}

@test "lightgbm lambdarank_l32_t5000" {
    require_large "$ORACLE/lightgbm/models/lambdarank_l32_t5000/model.txt" "$ORACLE/lightgbm/models/lambdarank_l32_t5000/pred_raw.txt"
    conform "$ORACLE/lightgbm/models/lambdarank_l32_t5000/model.txt" "$ORACLE/lightgbm/data/rank.test.letor" "$ORACLE/lightgbm/models/lambdarank_l32_t5000/pred_raw.txt"
}

@test "lightgbm lambdarank_l64_t1000" {
    require_large "$ORACLE/lightgbm/models/lambdarank_l64_t1000/model.txt" "$ORACLE/lightgbm/models/lambdarank_l64_t1000/pred_raw.txt"
    conform "$ORACLE/lightgbm/models/lambdarank_l64_t1000/model.txt" "$ORACLE/lightgbm/data/rank.test.letor" "$ORACLE/lightgbm/models/lambdarank_l64_t1000/pred_raw.txt"
}

@test "lightgbm lambdarank_l64_t5000" {
    require_large "$ORACLE/lightgbm/models/lambdarank_l64_t5000/model.txt" "$ORACLE/lightgbm/models/lambdarank_l64_t5000/pred_raw.txt"
    conform "$ORACLE/lightgbm/models/lambdarank_l64_t5000/model.txt" "$ORACLE/lightgbm/data/rank.test.letor" "$ORACLE/lightgbm/models/lambdarank_l64_t5000/pred_raw.txt"
}

@test "lightgbm lambdarank_l8_t5000" {
    require_large "$ORACLE/lightgbm/models/lambdarank_l8_t5000/model.txt" "$ORACLE/lightgbm/models/lambdarank_l8_t5000/pred_raw.txt"
    conform "$ORACLE/lightgbm/models/lambdarank_l8_t5000/model.txt" "$ORACLE/lightgbm/data/rank.test.letor" "$ORACLE/lightgbm/models/lambdarank_l8_t5000/pred_raw.txt"
}

@test "xgboost mq2008-ndcg-lg32-t1000 (absent = missing)" {
    require_large "$ORACLE/xgboost/mq2008-ndcg-lg32-t1000/model.json" "$ORACLE/xgboost/mq2008-ndcg-lg32-t1000/test.pred.missing.txt"
    conform "$ORACLE/xgboost/mq2008-ndcg-lg32-t1000/model.json" "$ORACLE/letor/mq2008/test.txt" "$ORACLE/xgboost/mq2008-ndcg-lg32-t1000/test.pred.missing.txt"
}

@test "xgboost mq2008-ndcg-lg32-t1000 (--absent zero)" {
    require_large "$ORACLE/xgboost/mq2008-ndcg-lg32-t1000/model.json" "$ORACLE/xgboost/mq2008-ndcg-lg32-t1000/test.pred.dense.txt"
    conform "$ORACLE/xgboost/mq2008-ndcg-lg32-t1000/model.json" "$ORACLE/letor/mq2008/test.txt" "$ORACLE/xgboost/mq2008-ndcg-lg32-t1000/test.pred.dense.txt" --absent zero
}

@test "xgboost mq2008-ndcg-lg64-t5000 (absent = missing)" {
    require_large "$ORACLE/xgboost/mq2008-ndcg-lg64-t5000/model.json" "$ORACLE/xgboost/mq2008-ndcg-lg64-t5000/test.pred.missing.txt"
    conform "$ORACLE/xgboost/mq2008-ndcg-lg64-t5000/model.json" "$ORACLE/letor/mq2008/test.txt" "$ORACLE/xgboost/mq2008-ndcg-lg64-t5000/test.pred.missing.txt"
}

@test "xgboost mq2008-ndcg-lg64-t5000 (--absent zero)" {
    require_large "$ORACLE/xgboost/mq2008-ndcg-lg64-t5000/model.json" "$ORACLE/xgboost/mq2008-ndcg-lg64-t5000/test.pred.dense.txt"
    conform "$ORACLE/xgboost/mq2008-ndcg-lg64-t5000/model.json" "$ORACLE/letor/mq2008/test.txt" "$ORACLE/xgboost/mq2008-ndcg-lg64-t5000/test.pred.dense.txt" --absent zero
}

@test "xgboost mq2008-pairwise-lg32-t1000 (absent = missing)" {
    require_large "$ORACLE/xgboost/mq2008-pairwise-lg32-t1000/model.json" "$ORACLE/xgboost/mq2008-pairwise-lg32-t1000/test.pred.missing.txt"
    conform "$ORACLE/xgboost/mq2008-pairwise-lg32-t1000/model.json" "$ORACLE/letor/mq2008/test.txt" "$ORACLE/xgboost/mq2008-pairwise-lg32-t1000/test.pred.missing.txt"
}

@test "xgboost mq2008-pairwise-lg32-t1000 (--absent zero)" {
    require_large "$ORACLE/xgboost/mq2008-pairwise-lg32-t1000/model.json" "$ORACLE/xgboost/mq2008-pairwise-lg32-t1000/test.pred.dense.txt"
    conform "$ORACLE/xgboost/mq2008-pairwise-lg32-t1000/model.json" "$ORACLE/letor/mq2008/test.txt" "$ORACLE/xgboost/mq2008-pairwise-lg32-t1000/test.pred.dense.txt" --absent zero
}
