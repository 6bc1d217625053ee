/* fuzz_lightgbm.c: libFuzzer target for the LightGBM text converter (qs_convert_lightgbm); a model it accepts must validate, round-trip as text, compile, load and score identically on every back end. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_begin(data, size);
    const char *buf = (const char *)data;
    (void)qs_detect_format(buf, size);
    qs_error err;
    qs_error_clear(&err);
    qs_model *m = qs_convert_lightgbm(buf, size, &err);
    fuzz_converted(m, &err, "qs_convert_lightgbm");
    return 0;
}
