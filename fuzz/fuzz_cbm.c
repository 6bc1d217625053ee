/* fuzz_cbm.c: libFuzzer target for the CatBoost binary model reader (.cbm:
 * "CBM1", the core's size, a FlatBuffers TModelCore) and the format
 * detection in front of it; a model it accepts must validate, round-trip as
 * text (version 2, with the output affine), compile (.qsm with AFFN), load
 * and score identically on every back end. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_begin(data, size);
    const char *buf = (const char *)data;
    (void)qs_detect_format(buf, size);
    char version[32];
    (void)qs_source_version(buf, size, version, sizeof version);
    qs_error err;
    qs_error_clear(&err);
    qs_model *m = qs_convert(QS_FMT_CATBOOST_CBM, buf, size, &err);
    fuzz_converted(m, &err, "qs_convert(QS_FMT_CATBOOST_CBM)");
    return 0;
}
