# maxlen.sh: sourced by run.sh, long.sh and merge.sh: fuzz_maxlen NAME prints the
# libFuzzer flag that bounds target NAME's inputs (FUZZ_MAX_LEN overrides).
# A model target's cost grows with the model an input describes, so its
# inputs stay within 8 KB (lightgbm, a 30 s run: twice the executions of
# 20 KB, the same coverage), 4 KB for the text, XGBoost, CatBoost and
# QuickRank readers (a few trees: their larger seeds still replay in the
# suite), 8 KB for CatBoost's .cbm (CatBoost's own InfoMap alone is 6 KB); .qsm inputs within 16 KB (at 32 KB, a campaign's corpus
# filled with 32 KB models and the rate fell from 5,600 to 2,100 a second
# in 11 minutes); eval's within 4 KB (a hundred lines: its cost grows with
# the lines, its largest seed is 24 KB); letor and dsv keep libFuzzer's own
# bound (their largest seed, 4 KB and 1 KB).
fuzz_maxlen() {
    if [ -n "${FUZZ_MAX_LEN:-}" ]; then
        echo "-max_len=$FUZZ_MAX_LEN"
        return
    fi
    case $1 in
    qsm) echo "-max_len=16384" ;;
    lightgbm | onnx | cbm) echo "-max_len=8192" ;;
    xgboost | xgboost_bin | catboost | quickrank | text | eval | cats) echo "-max_len=4096" ;;
    esac
}
