#!/usr/bin/env bats
# Oracle conformance: every LightGBM, XGBoost and QuickRank model in the shared
# reference data, converted, compiled and scored by every back end, must give
# the training library's own scores bit for bit.  (Generated list; one test per
# model so a failure names it.)

load test_helper

setup() { require_shared; }

@test "lightgbm binary_l31_t200" {
    conform "$SHARED/lightgbm/models/binary_l31_t200/model.txt" "$SHARED/lightgbm/data/binary.test.letor" "$SHARED/lightgbm/models/binary_l31_t200/pred_raw.txt"
}

@test "lightgbm categorical_l31_t200" {
    conform "$SHARED/lightgbm/models/categorical_l31_t200/model.txt" "$SHARED/lightgbm/data/rank_cat.test.letor" "$SHARED/lightgbm/models/categorical_l31_t200/pred_raw.txt"
}

@test "lightgbm lambdarank_l16_t100" {
    conform "$SHARED/lightgbm/models/lambdarank_l16_t100/model.txt" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/lightgbm/models/lambdarank_l16_t100/pred_raw.txt"
}

@test "lightgbm lambdarank_l16_t1000" {
    conform "$SHARED/lightgbm/models/lambdarank_l16_t1000/model.txt" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/lightgbm/models/lambdarank_l16_t1000/pred_raw.txt"
}

@test "lightgbm lambdarank_l16_t5000" {
    conform "$SHARED/lightgbm/models/lambdarank_l16_t5000/model.txt.zst" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/lightgbm/models/lambdarank_l16_t5000/pred_raw.txt"
}

@test "lightgbm lambdarank_l32_t100" {
    conform "$SHARED/lightgbm/models/lambdarank_l32_t100/model.txt" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/lightgbm/models/lambdarank_l32_t100/pred_raw.txt"
}

@test "lightgbm lambdarank_l32_t1000" {
    conform "$SHARED/lightgbm/models/lambdarank_l32_t1000/model.txt" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/lightgbm/models/lambdarank_l32_t1000/pred_raw.txt"
}

@test "lightgbm lambdarank_l32_t5000" {
    conform "$SHARED/lightgbm/models/lambdarank_l32_t5000/model.txt.zst" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/lightgbm/models/lambdarank_l32_t5000/pred_raw.txt"
}

@test "lightgbm lambdarank_l64_t100" {
    conform "$SHARED/lightgbm/models/lambdarank_l64_t100/model.txt" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/lightgbm/models/lambdarank_l64_t100/pred_raw.txt"
}

@test "lightgbm lambdarank_l64_t1000" {
    conform "$SHARED/lightgbm/models/lambdarank_l64_t1000/model.txt.zst" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/lightgbm/models/lambdarank_l64_t1000/pred_raw.txt"
}

@test "lightgbm lambdarank_l64_t5000" {
    conform "$SHARED/lightgbm/models/lambdarank_l64_t5000/model.txt.zst" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/lightgbm/models/lambdarank_l64_t5000/pred_raw.txt"
}

@test "lightgbm lambdarank_l8_t100" {
    conform "$SHARED/lightgbm/models/lambdarank_l8_t100/model.txt" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/lightgbm/models/lambdarank_l8_t100/pred_raw.txt"
}

@test "lightgbm lambdarank_l8_t1000" {
    conform "$SHARED/lightgbm/models/lambdarank_l8_t1000/model.txt" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/lightgbm/models/lambdarank_l8_t1000/pred_raw.txt"
}

@test "lightgbm lambdarank_l8_t5000" {
    conform "$SHARED/lightgbm/models/lambdarank_l8_t5000/model.txt.zst" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/lightgbm/models/lambdarank_l8_t5000/pred_raw.txt"
}

@test "lightgbm multiclass_k5_l15_t20" {
    conform "$SHARED/lightgbm/models/multiclass_k5_l15_t20/model.txt" "$SHARED/lightgbm/data/multiclass.test.letor" "$SHARED/lightgbm/models/multiclass_k5_l15_t20/pred_raw.txt"
}

@test "lightgbm nan_nantype_l31_t300" {
    conform "$SHARED/lightgbm/models/nan_nantype_l31_t300/model.txt" "$SHARED/lightgbm/data/rank_nan.test.letor" "$SHARED/lightgbm/models/nan_nantype_l31_t300/pred_raw.txt"
}

@test "lightgbm nan_usemissingfalse_l31_t300" {
    conform "$SHARED/lightgbm/models/nan_usemissingfalse_l31_t300/model.txt" "$SHARED/lightgbm/data/rank_nan.test.letor" "$SHARED/lightgbm/models/nan_usemissingfalse_l31_t300/pred_raw.txt"
}

@test "lightgbm nan_zeroasmissing_l31_t300" {
    conform "$SHARED/lightgbm/models/nan_zeroasmissing_l31_t300/model.txt" "$SHARED/lightgbm/data/rank_nan.test.letor" "$SHARED/lightgbm/models/nan_zeroasmissing_l31_t300/pred_raw.txt"
}

@test "lightgbm regression_l31_t300" {
    conform "$SHARED/lightgbm/models/regression_l31_t300/model.txt" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/lightgbm/models/regression_l31_t300/pred_raw.txt"
}

@test "lightgbm lineartree_l15_t20 is refused, not scored wrongly" {
    [ -f "$SHARED/lightgbm/models/lineartree_l15_t20/model.txt" ] || skip "missing model"
    run qs-convert "$SHARED/lightgbm/models/lineartree_l15_t20/model.txt"
    assert_failure 3
    assert_output --partial "linear"
}

@test "quickrank qr_lambdamart_l16_t500" {
    conform "$SHARED/quickrank/models/qr_lambdamart_l16_t500/model.xml" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/quickrank/models/qr_lambdamart_l16_t500/scores.txt"
}

@test "quickrank qr_lambdamart_l32_t1000" {
    conform "$SHARED/quickrank/models/qr_lambdamart_l32_t1000/model.xml.zst" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/quickrank/models/qr_lambdamart_l32_t1000/scores.txt"
}

@test "quickrank qr_lambdamart_l64_t1000" {
    conform "$SHARED/quickrank/models/qr_lambdamart_l64_t1000/model.xml.zst" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/quickrank/models/qr_lambdamart_l64_t1000/scores.txt"
}

@test "quickrank qr_lambdamart_l8_t100" {
    conform "$SHARED/quickrank/models/qr_lambdamart_l8_t100/model.xml" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/quickrank/models/qr_lambdamart_l8_t100/scores.txt"
}

@test "quickrank qr_oblivious_d3_t100" {
    conform "$SHARED/quickrank/models/qr_oblivious_d3_t100/model.xml" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/quickrank/models/qr_oblivious_d3_t100/scores.txt"
}

@test "quickrank qr_oblivious_d4_t500" {
    conform "$SHARED/quickrank/models/qr_oblivious_d4_t500/model.xml" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/quickrank/models/qr_oblivious_d4_t500/scores.txt"
}

@test "quickrank qr_oblivious_d5_t1000" {
    conform "$SHARED/quickrank/models/qr_oblivious_d5_t1000/model.xml" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/quickrank/models/qr_oblivious_d5_t1000/scores.txt"
}

@test "quickrank qr_oblivious_d6_t1000" {
    conform "$SHARED/quickrank/models/qr_oblivious_d6_t1000/model.xml" "$SHARED/lightgbm/data/rank.test.letor" "$SHARED/quickrank/models/qr_oblivious_d6_t1000/scores.txt"
}

@test "xgboost agaricus-logistic-d4-t50 (absent = missing)" {
    conform "$SHARED/xgboost/agaricus-logistic-d4-t50/model.json" "$SHARED/svmlight/agaricus/test.txt" "$SHARED/xgboost/agaricus-logistic-d4-t50/test.pred.missing.txt"
}

@test "xgboost agaricus-logistic-d4-t50 (--absent zero)" {
    conform "$SHARED/xgboost/agaricus-logistic-d4-t50/model.json" "$SHARED/svmlight/agaricus/test.txt" "$SHARED/xgboost/agaricus-logistic-d4-t50/test.pred.dense.txt" --absent zero
}

@test "xgboost higgs-logistic-lg32-t500 (absent = missing)" {
    conform "$SHARED/xgboost/higgs-logistic-lg32-t500/model.json" "$SHARED/svmlight/higgs/test.txt" "$SHARED/xgboost/higgs-logistic-lg32-t500/test.pred.missing.txt"
}

@test "xgboost higgs-logistic-lg32-t500 (--absent zero)" {
    conform "$SHARED/xgboost/higgs-logistic-lg32-t500/model.json" "$SHARED/svmlight/higgs/test.txt" "$SHARED/xgboost/higgs-logistic-lg32-t500/test.pred.dense.txt" --absent zero
}

@test "xgboost higgsmbb-regression-lg32-t500 (absent = missing)" {
    conform "$SHARED/xgboost/higgsmbb-regression-lg32-t500/model.json" "$SHARED/svmlight/higgs-mbb/test.txt" "$SHARED/xgboost/higgsmbb-regression-lg32-t500/test.pred.missing.txt"
}

@test "xgboost higgsmbb-regression-lg32-t500 (--absent zero)" {
    conform "$SHARED/xgboost/higgsmbb-regression-lg32-t500/model.json" "$SHARED/svmlight/higgs-mbb/test.txt" "$SHARED/xgboost/higgsmbb-regression-lg32-t500/test.pred.dense.txt" --absent zero
}

@test "xgboost lgbmrank-ndcg-lg16-t100 (absent = missing)" {
    conform "$SHARED/xgboost/lgbmrank-ndcg-lg16-t100/model.json" "$SHARED/letor/lgbm-rank/test.txt" "$SHARED/xgboost/lgbmrank-ndcg-lg16-t100/test.pred.missing.txt"
}

@test "xgboost lgbmrank-ndcg-lg16-t100 (--absent zero)" {
    conform "$SHARED/xgboost/lgbmrank-ndcg-lg16-t100/model.json" "$SHARED/letor/lgbm-rank/test.txt" "$SHARED/xgboost/lgbmrank-ndcg-lg16-t100/test.pred.dense.txt" --absent zero
}

@test "xgboost lgbmrank-ndcg-lg32-t1000 (absent = missing)" {
    conform "$SHARED/xgboost/lgbmrank-ndcg-lg32-t1000/model.json" "$SHARED/letor/lgbm-rank/test.txt" "$SHARED/xgboost/lgbmrank-ndcg-lg32-t1000/test.pred.missing.txt"
}

@test "xgboost lgbmrank-ndcg-lg32-t1000 (--absent zero)" {
    conform "$SHARED/xgboost/lgbmrank-ndcg-lg32-t1000/model.json" "$SHARED/letor/lgbm-rank/test.txt" "$SHARED/xgboost/lgbmrank-ndcg-lg32-t1000/test.pred.dense.txt" --absent zero
}

@test "xgboost lgbmrank-pairwise-d5-t500 (absent = missing)" {
    conform "$SHARED/xgboost/lgbmrank-pairwise-d5-t500/model.json" "$SHARED/letor/lgbm-rank/test.txt" "$SHARED/xgboost/lgbmrank-pairwise-d5-t500/test.pred.missing.txt"
}

@test "xgboost lgbmrank-pairwise-d5-t500 (--absent zero)" {
    conform "$SHARED/xgboost/lgbmrank-pairwise-d5-t500/model.json" "$SHARED/letor/lgbm-rank/test.txt" "$SHARED/xgboost/lgbmrank-pairwise-d5-t500/test.pred.dense.txt" --absent zero
}

@test "xgboost mq2008-ndcg-d3-t100 (absent = missing)" {
    conform "$SHARED/xgboost/mq2008-ndcg-d3-t100/model.json" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-ndcg-d3-t100/test.pred.missing.txt"
}

@test "xgboost mq2008-ndcg-d3-t100 (--absent zero)" {
    conform "$SHARED/xgboost/mq2008-ndcg-d3-t100/model.json" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-ndcg-d3-t100/test.pred.dense.txt" --absent zero
}

@test "xgboost mq2008-ndcg-d6-t1000 (absent = missing)" {
    conform "$SHARED/xgboost/mq2008-ndcg-d6-t1000/model.json.zst" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-ndcg-d6-t1000/test.pred.missing.txt"
}

@test "xgboost mq2008-ndcg-d6-t1000 (--absent zero)" {
    conform "$SHARED/xgboost/mq2008-ndcg-d6-t1000/model.json.zst" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-ndcg-d6-t1000/test.pred.dense.txt" --absent zero
}

@test "xgboost mq2008-ndcg-lg16-t1000 (absent = missing)" {
    conform "$SHARED/xgboost/mq2008-ndcg-lg16-t1000/model.json" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-ndcg-lg16-t1000/test.pred.missing.txt"
}

@test "xgboost mq2008-ndcg-lg16-t1000 (--absent zero)" {
    conform "$SHARED/xgboost/mq2008-ndcg-lg16-t1000/model.json" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-ndcg-lg16-t1000/test.pred.dense.txt" --absent zero
}

@test "xgboost mq2008-ndcg-lg32-t1000 (absent = missing)" {
    conform "$SHARED/xgboost/mq2008-ndcg-lg32-t1000/model.json" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-ndcg-lg32-t1000/test.pred.missing.txt"
}

@test "xgboost mq2008-ndcg-lg32-t1000 (--absent zero)" {
    conform "$SHARED/xgboost/mq2008-ndcg-lg32-t1000/model.json" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-ndcg-lg32-t1000/test.pred.dense.txt" --absent zero
}

@test "xgboost mq2008-ndcg-lg64-t1000 (absent = missing)" {
    conform "$SHARED/xgboost/mq2008-ndcg-lg64-t1000/model.json.zst" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-ndcg-lg64-t1000/test.pred.missing.txt"
}

@test "xgboost mq2008-ndcg-lg64-t1000 (--absent zero)" {
    conform "$SHARED/xgboost/mq2008-ndcg-lg64-t1000/model.json.zst" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-ndcg-lg64-t1000/test.pred.dense.txt" --absent zero
}

@test "xgboost mq2008-ndcg-lg64-t5000 (absent = missing)" {
    conform "$SHARED/xgboost/mq2008-ndcg-lg64-t5000/model.json.zst" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-ndcg-lg64-t5000/test.pred.missing.txt"
}

@test "xgboost mq2008-ndcg-lg64-t5000 (--absent zero)" {
    conform "$SHARED/xgboost/mq2008-ndcg-lg64-t5000/model.json.zst" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-ndcg-lg64-t5000/test.pred.dense.txt" --absent zero
}

@test "xgboost mq2008-ndcg-lg8-t100 (absent = missing)" {
    conform "$SHARED/xgboost/mq2008-ndcg-lg8-t100/model.json" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-ndcg-lg8-t100/test.pred.missing.txt"
}

@test "xgboost mq2008-ndcg-lg8-t100 (--absent zero)" {
    conform "$SHARED/xgboost/mq2008-ndcg-lg8-t100/model.json" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-ndcg-lg8-t100/test.pred.dense.txt" --absent zero
}

@test "xgboost mq2008-pairwise-lg32-t1000 (absent = missing)" {
    conform "$SHARED/xgboost/mq2008-pairwise-lg32-t1000/model.json" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-pairwise-lg32-t1000/test.pred.missing.txt"
}

@test "xgboost mq2008-pairwise-lg32-t1000 (--absent zero)" {
    conform "$SHARED/xgboost/mq2008-pairwise-lg32-t1000/model.json" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-pairwise-lg32-t1000/test.pred.dense.txt" --absent zero
}

@test "xgboost mq2008-tiny-d2-t3 (absent = missing)" {
    conform "$SHARED/xgboost/mq2008-tiny-d2-t3/model.json" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-tiny-d2-t3/test.pred.missing.txt"
}

@test "xgboost mq2008-tiny-d2-t3 (--absent zero)" {
    conform "$SHARED/xgboost/mq2008-tiny-d2-t3/model.json" "$SHARED/letor/mq2008/test.txt" "$SHARED/xgboost/mq2008-tiny-d2-t3/test.pred.dense.txt" --absent zero
}

@test "xgboost mq2008missing-ndcg-lg32-t1000 (absent = missing)" {
    conform "$SHARED/xgboost/mq2008missing-ndcg-lg32-t1000/model.json" "$SHARED/letor/mq2008-missing/test.txt" "$SHARED/xgboost/mq2008missing-ndcg-lg32-t1000/test.pred.missing.txt"
}

@test "xgboost mq2008missing-ndcg-lg32-t1000 (--absent zero)" {
    conform "$SHARED/xgboost/mq2008missing-ndcg-lg32-t1000/model.json" "$SHARED/letor/mq2008-missing/test.txt" "$SHARED/xgboost/mq2008missing-ndcg-lg32-t1000/test.pred.dense.txt" --absent zero
}
