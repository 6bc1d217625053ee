/* test_devopt.c: the GPU back ends' tunables from the library
 * (qs_scorer_set_device_option) and what they plan (qs_scorer_backend_plan),
 * through the emulated device: a bad name or value is refused with the rule
 * (QS_ERR_ARG), the scorer unchanged; a kernel that cannot take the model is
 * QS_ERR_UNSUPPORTED with the reason; each kernel asked for scores a matrix
 * as walk does, bit for bit; a float32 model's matrix holding values that
 * are not float32 (sent as double then) and one whose values all are (sent
 * as float32) both score as walk does.
 * Usage: test_devopt MODEL.qsm */
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurp.h"

static int failures;

#define CHECK(cond, ...)                                                                         \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            failures++;                                                                          \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                 \
            fprintf(stderr, __VA_ARGS__);                                                        \
            fputc('\n', stderr);                                                                 \
        }                                                                                        \
    } while (0)

static void refused(qs_scorer *s, const char *name, const char *value, const char *want)
{
    qs_error err;
    qs_error_clear(&err);
    int rc = qs_scorer_set_device_option(s, name, value, &err);
    CHECK(rc == -1 && err.code == QS_ERR_ARG && strstr(err.msg, want),
          "option %s='%s': rc %d code %d '%s' (want ARG with '%s')", name, value, rc, err.code,
          err.msg, want);
}

/* Score x with back end b and compare with want; 1 when equal. */
static int same(qs_scorer *s, qs_backend b, const double *x, size_t n, uint32_t F,
                const double *want, uint32_t K, const char *what)
{
    qs_error err;
    double *out = malloc(sizeof(double) * n * K);
    int ok = out && qs_score_matrix(s, b, x, n, F, out, 1, &err) == 0;
    if (!ok) {
        CHECK(0, "%s: %s", what, out ? err.msg : "out of memory");
        free(out);
        return 0;
    }
    ok = memcmp(out, want, sizeof(double) * n * K) == 0;
    CHECK(ok, "%s: scores differ from walk", what);
    free(out);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_devopt MODEL.qsm\n");
        return 2;
    }
    size_t len;
    unsigned char *img = slurp(argv[1], &len);
    if (!img) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    qs_error err;
    qs_scorer *s = qs_scorer_load(img, len, &err);
    if (!s) {
        fprintf(stderr, "load: %s\n", err.msg);
        return 2;
    }
    const qs_backend emu = qs_backend_find("cuda-emu"), walk = qs_backend_find("walk");
    qs_model_info info;
    qs_model_get_info(qs_scorer_model(s), &info);
    const uint32_t F = info.num_features ? info.num_features : 1, K = info.num_classes;

    /* refusals: the rule named, nothing changed */
    refused(s, "bogus", "1", "unknown device option 'bogus'");
    refused(s, "db", "+32", "expected a multiple of 32 in 32..512");
    refused(s, "db", " 32", "expected a multiple of 32");
    refused(s, "db", "33", "expected a multiple of 32");
    refused(s, "db", "1024", "expected a multiple of 32 in 32..512");
    refused(s, "threads", "-0", "expected a multiple of 32");
    refused(s, "streams", "0", "expected a whole number in 1..4");
    refused(s, "streams", "99999999999999999999999", "expected a whole number in 1..4");
    refused(s, "sub", "", "expected a whole number");
    refused(s, "kernel", "fast", "expected qs, rank, lanes, walk or auto");
    refused(s, "pivots", "binary", "expected search, rank or auto");
    refused(s, "f32", "2", "expected a whole number in 0..1");
    char plan[512];
    CHECK(qs_scorer_backend_plan(s, emu, plan, sizeof plan, &err) == 0 && strstr(plan, "kernel "),
          "plan: %s", plan);
    CHECK(strstr(plan, "estimated") != NULL, "auto's choice not said to be an estimate: %s", plan);

    /* the documents: the model's thresholds, a step either side, specials */
    const size_t n = 240;
    double *x = calloc(n * F, sizeof(double)), *want = malloc(sizeof(double) * n * K);
    uint64_t r = 0x9E3779B97F4A7C15ull;
    for (size_t d = 0; d < n; d++)
        for (uint32_t f = 0; f < F; f++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            static const double sp[] = { 0.0, -0.0, NAN, 1e-36, -1e-36, INFINITY, -INFINITY,
                                         0.5, 1.0, 2.0, 0.1, 0.3, 7.25, -3.5 };
            x[d * F + f] = sp[r % (sizeof sp / sizeof *sp)] * (double)((r >> 20) % 5);
            if ((r >> 40) % 3 == 0)
                x[d * F + f] = sp[r % (sizeof sp / sizeof *sp)];
        }
    if (!x || !want || qs_scorer_prepare(s, walk, &err) != 0 ||
        qs_score_matrix(s, walk, x, n, F, want, 1, &err) != 0) {
        fprintf(stderr, "walk: %s\n", x && want ? err.msg : "out of memory");
        return 2;
    }
    static const char *const kernels[] = { "qs", "rank", "lanes", "walk", "auto" };
    for (size_t k = 0; k < sizeof kernels / sizeof *kernels; k++) {
        qs_error_clear(&err);
        int rc = qs_scorer_set_device_option(s, "kernel", kernels[k], &err);
        if (rc == 0)
            rc = qs_scorer_prepare(s, emu, &err);
        if (rc != 0) {
            /* only a kernel that cannot take this model may refuse, saying why */
            CHECK(err.code == QS_ERR_UNSUPPORTED && strstr(err.msg, "cannot score this model"),
                  "kernel %s: code %d '%s'", kernels[k], err.code, err.msg);
            printf("kernel %s: refused: %s\n", kernels[k], err.msg);
            continue;
        }
        CHECK(qs_scorer_backend_plan(s, emu, plan, sizeof plan, &err) == 0, "plan: %s", err.msg);
        if (strcmp(kernels[k], "auto") != 0) {
            char want_k[64];
            snprintf(want_k, sizeof want_k, "kernel %s: asked for", kernels[k]);
            CHECK(strstr(plan, want_k) != NULL, "kernel %s: plan '%s'", kernels[k], plan);
        }
        /* float32 rows and double rows, and another geometry */
        int ok = same(s, emu, x, n, F, want, K, kernels[k]);
        CHECK(qs_scorer_set_device_option(s, "f32", "0", &err) == 0, "f32=0: %s", err.msg);
        ok &= same(s, emu, x, n, F, want, K, kernels[k]);
        CHECK(qs_scorer_set_device_option(s, "threads", "64", &err) == 0 &&
                  qs_scorer_set_device_option(s, "sub", "7", &err) == 0 &&
                  qs_scorer_set_device_option(s, "streams", "3", &err) == 0,
              "geometry: %s", err.msg);
        ok &= same(s, emu, x, n, F, want, K, kernels[k]);
        CHECK(qs_scorer_set_device_option(s, "f32", "1", &err) == 0 &&
                  qs_scorer_set_device_option(s, "threads", "128", &err) == 0 &&
                  qs_scorer_set_device_option(s, "sub", "16384", &err) == 0 &&
                  qs_scorer_set_device_option(s, "streams", "2", &err) == 0,
              "geometry back: %s", err.msg);
        printf("kernel %s: %s (%s)\n", kernels[k], ok ? "the bits of walk" : "DIFFERS", plan);
    }
    /* a float32 model's rows holding doubles just below its thresholds: a
     * float32 copy would round them onto the thresholds, so they go as
     * double (and score as walk); then rows that are all float32: sent so */
    if (info.float_precision) {
        const qs_model *m = qs_scorer_model(s);
        for (size_t d = 0; d < n; d++)
            for (uint32_t f = 0; f < F; f++) {
                r ^= r << 13, r ^= r >> 7, r ^= r << 17;
                const qs_node *nd = &m->nodes[r % m->num_nodes];
                if (nd->kind == QS_NODE_NUM && nd->feature == f)
                    x[d * F + f] = nextafter(nd->value, -INFINITY);
                else if (nd->kind == QS_NODE_NUM)
                    x[d * F + nd->feature] = nextafter(nd->value, -INFINITY);
            }
        CHECK(qs_score_matrix(s, walk, x, n, F, want, 1, &err) == 0, "walk: %s", err.msg);
        CHECK(qs_scorer_set_device_option(s, "kernel", "walk", &err) == 0, "walk: %s", err.msg);
        same(s, emu, x, n, F, want, K, "double rows of a float32 model");
    }
    /* a float32 model's rows that are all float32: sent so */
    if (info.float_precision) {
        for (size_t i = 0; i < n * F; i++)
            x[i] = (double)(float)x[i];
        CHECK(qs_score_matrix(s, walk, x, n, F, want, 1, &err) == 0, "walk: %s", err.msg);
        same(s, emu, x, n, F, want, K, "float32 rows");
    }
    free(x);
    free(want);
    qs_scorer_free(s);
    free(img);
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
