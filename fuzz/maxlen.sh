# maxlen.sh: sourced by run.sh, long.sh and merge.sh: fuzz_maxlen NAME prints the
# libFuzzer flag that bounds target NAME's inputs (FUZZ_MAX_LEN overrides).
# A model target's cost grows with the model an input describes, so its
# inputs stay within 8 KB (a 30 s run: twice the executions of 20 KB, the
# same coverage); .qsm inputs within 16 KB (at 32 KB, a campaign's corpus
# filled with 32 KB models and the rate fell from 5,600 to 2,100 a second
# in 11 minutes); the line-based targets keep
# libFuzzer's own bound (their largest seed).
fuzz_maxlen() {
    if [ -n "${FUZZ_MAX_LEN:-}" ]; then
        echo "-max_len=$FUZZ_MAX_LEN"
        return
    fi
    case $1 in
    qsm) echo "-max_len=16384" ;;
    lightgbm | xgboost | catboost | onnx | quickrank | text) echo "-max_len=8192" ;;
    esac
}
