/* fuzz_qsm.c: libFuzzer target for the .qsm loader (qs_scorer_load, and with two threads, which must agree); a file that loads is scored on fixed documents by every available back end, which must agree bit for bit with the walk back end, and its model must round-trip as text and compile again. */
#include "fuzz_common.h"
#include "qsm_pack.h"

static void load_and_check(const unsigned char *buf, size_t len)
{
    qs_error err;
    qs_error_clear(&err);
    qs_scorer *s = qs_scorer_load(buf, len, &err);
    /* Two threads decompress TREE and QSLY at once: the outcome, and any
     * error's code, offset and message, must be one thread's. */
    if (fuzz_takes(5, 0, 2)) { /* libFuzzer: one input in two (a thread start each) */
        qs_error err2;
        qs_error_clear(&err2);
        qs_scorer *s2 = qs_scorer_load_threads(buf, len, 2, &err2);
        if (!s != !s2 || (!s && (err.code != err2.code || err.offset != err2.offset ||
                                strcmp(err.msg, err2.msg) != 0)))
            FUZZ_FAIL("qs_scorer_load_threads(2) differs from one thread: '%s' against '%s'",
                      s2 ? "loaded" : err2.msg, s ? "loaded" : err.msg);
        qs_scorer_free(s2);
    }
    if (!s) {
        fuzz_check_err(&err, "qs_scorer_load");
        return;
    }
    const qs_model *m = qs_scorer_model(s);
    if (qs_model_validate(m, &err) != 0)
        FUZZ_FAIL("a loaded model fails qs_model_validate: %s", err.msg);
    /* What the loader accepts, the text format and the compiler must too. */
    fuzz_text_round_trip(m);
    unsigned char *img = NULL;
    size_t n = 0;
    qs_error_clear(&err);
    if (qs_compile(m, NULL, &img, &n, &err) != 0) {
        fuzz_check_err(&err, "qs_compile");
        if (err.code != QS_ERR_NOMEM)
            FUZZ_FAIL("qs_compile refused a model qs_scorer_load accepted: %s", err.msg);
    }
    free(img);
    fuzz_check_scorer(s);
    qs_scorer_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_begin(data, size);
    load_and_check(data, size);
    /* The same bytes with the file size and every checksum recomputed, so a
     * plain mutation still reaches the section readers. */
    if (size >= QSMP_HEADER && size <= ((size_t)1 << 24)) {
        unsigned char *copy = malloc(size);
        if (copy) {
            memcpy(copy, data, size);
            if (qsmp_fix(copy, size) && memcmp(copy, data, size) != 0)
                load_and_check(copy, size);
            free(copy);
        }
    }
    return 0;
}

#ifdef QS_LIBFUZZER
/* libFuzzer only: mutate the records, not the compressed bytes.  Most of the
 * time one section is unpacked (stored, uncompressed), mutated and the
 * container rebuilt with right sizes and checksums; otherwise the whole file
 * is mutated and, usually, its checksums recomputed. */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    qsmp_section sec[QSMP_MAX_SECTIONS];
    int n = seed % 8 == 0 ? -1 : qsmp_split(data, size, sec);
    if (n > 0) {
        int k = (int)((seed / 8) % (unsigned)n);
        unsigned char *body = malloc(max_size ? max_size : 1);
        unsigned char *out = malloc(max_size ? max_size : 1);
        size_t len = 0;
        if (body && out && sec[k].n <= max_size) {
            memcpy(body, sec[k].p, sec[k].n);
            size_t bn = LLVMFuzzerMutate(body, sec[k].n, max_size);
            sec[k].p = body;
            sec[k].n = bn;
            len = qsmp_join(sec, n, out, max_size);
            if (len)
                memcpy(data, out, len);
        }
        qsmp_free(sec, n);
        free(body);
        free(out);
        if (len)
            return len;
    }
    size_t r = LLVMFuzzerMutate(data, size, max_size);
    if (seed % 16 != 0)
        qsmp_fix(data, r);
    return r;
}
#endif
