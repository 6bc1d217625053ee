/* fuzz_xgboost.c: libFuzzer target for the XGBoost converter (qs_convert_xgboost), JSON and UBJSON alike (the converter tells them apart by the first bytes); a model it accepts must validate, round-trip as text, compile, load and score identically on every back end. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_begin(data, size);
    const char *buf = (const char *)data;
    (void)qs_detect_format(buf, size);
    qs_error err;
    qs_error_clear(&err);
    qs_model *m = qs_convert_xgboost(buf, size, &err);
    fuzz_converted(m, &err, "qs_convert_xgboost");
    return 0;
}
