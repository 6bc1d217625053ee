/* fuzz_text.c: libFuzzer target for the canonical ensemble text reader (qs_model_from_text); a model that parses must write back with qs_model_to_text and re-parse to the same text, and compile, load and score identically on every back end. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_begin(data, size);
    const char *buf = (const char *)data;
    (void)qs_detect_format(buf, size);
    qs_error err;
    qs_error_clear(&err);
    qs_model *m = qs_model_from_text(buf, size, &err);
    if (m && err.code != QS_OK)
        FUZZ_FAIL("qs_model_from_text returned a model and an error: %s", err.msg);
    fuzz_converted(m, &err, "qs_model_from_text");
    return 0;
}
