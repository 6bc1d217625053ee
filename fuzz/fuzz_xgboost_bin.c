/* fuzz_xgboost_bin.c: libFuzzer target for the XGBoost binary-format reader (qs_convert_xgboost on models of XGBoost 1.0-1.7's binary format): an input that is not one already is read as one ("binf" put in front), so every input reaches the binary reader; a model it accepts must validate, round-trip as text, compile, load and score identically on every back end. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_begin(data, size);
    const char *in = (const char *)data;
    char *buf = NULL;
    size_t len = size;
    if (!(size >= 4 && memcmp(data, "binf", 4) == 0) &&
        qs_detect_format(in, size) != QS_FMT_XGBOOST) {
        /* a buffer of exactly its bytes: a read past it is an ASan report */
        buf = malloc(size + 4);
        if (!buf)
            return 0;
        memcpy(buf, "binf", 4);
        if (size)
            memcpy(buf + 4, data, size);
        len = size + 4;
        in = buf;
    }
    if (qs_detect_format(in, len) != QS_FMT_XGBOOST)
        FUZZ_FAIL("a binary XGBoost model ('binf' first) is not detected as XGBoost");
    char ver[32];
    if (qs_source_version(in, len, ver, sizeof ver) == 0 && strlen(ver) >= sizeof ver)
        FUZZ_FAIL("qs_source_version wrote past its buffer");
    qs_error err;
    qs_error_clear(&err);
    qs_model *m = qs_convert_xgboost(in, len, &err);
    fuzz_converted(m, &err, "qs_convert_xgboost (binary)");
    free(buf);
    return 0;
}
