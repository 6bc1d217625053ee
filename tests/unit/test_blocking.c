/* test_blocking.c: the traversal orders' names, the range cases of
 * (order, s, d) for given footprints and caches, and the .qsm tuning record:
 * written, read back field by field, replaced, still loadable, and refused
 * when damaged.  Usage: test_blocking MODEL.qsm */
#include "score/score.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slurp.h"

static int checks, failures;

#define CHECK(c)                                                                 \
    do {                                                                         \
        checks++;                                                                \
        if (!(c)) {                                                              \
            failures++;                                                          \
            fprintf(stderr, "test_blocking: %s:%d: %s\n", __FILE__, __LINE__, #c); \
        }                                                                        \
    } while (0)

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_blocking MODEL.qsm\n");
        return 2;
    }
    /* names */
    for (int o = 0; o < QS_ORDER_COUNT; o++)
        CHECK(qs_order_find(qs_order_name((qs_order)o)) == o);
    CHECK(qs_order_find("sdsd") == QS_ORDER_SDSD);
    CHECK(qs_order_find("XSD") == -1);
    CHECK(qs_order_name((qs_order)6) == NULL);

    /* range cases: 1 KiB scorers, 100-byte documents; caches 32K, 1M, 32M */
    const uint64_t cache[3] = { 32768, 1 << 20, 32u << 20 };
    qs_footprint fp = { .scorer_bytes = 1024, .max_scorer_bytes = 1024, .doc_bytes = 100,
                        .nscorers = 1000, .lanes = 1 };
    int ls, ld;
    qs_range_case(&fp, cache, QS_ORDER_DSDS, 16, 100, &ls, &ld); /* 16K, 10K: L1, L1 */
    CHECK(ls == 1 && ld == 1);
    qs_range_case(&fp, cache, QS_ORDER_SDSD, 17, 164, &ls, &ld); /* 17K > 16K; 16.4K > 16K */
    CHECK(ls == 2 && ld == 2);
    qs_range_case(&fp, cache, QS_ORDER_SDSD, 513, 4000, &ls, &ld); /* 513K > 512K: L3 */
    CHECK(ls == 3 && ld == 2);
    qs_range_case(&fp, cache, QS_ORDER_DSD, 99999, 150000, &ls, &ld); /* 15M: L3; s ignored */
    CHECK(ls == 0 && ld == 3);
    qs_range_case(&fp, cache, QS_ORDER_SDS, 16000, 1, &ls, &ld); /* 16.4M: L3 */
    CHECK(ls == 3 && ld == 0);
    qs_range_case(&fp, cache, QS_ORDER_SDS, 20000000, 1, &ls, &ld); /* beyond L3 */
    CHECK(ls == 4);

    /* the tuning record */
    size_t len;
    unsigned char *img = slurp(argv[1], &len);
    if (!img) {
        fprintf(stderr, "test_blocking: cannot read %s\n", argv[1]);
        return 2;
    }
    qs_error err;
    qs_tuning t, u;
    CHECK(qs_qsm_get_tuning(img, len, &u, &err) == 0);
    memset(&t, 0, sizeof t);
    qs_tuning_fingerprint(&t);
    t.order = QS_ORDER_SDSD;
    t.inner_s = 3;
    t.inner_d = 256;
    t.tree_block = 7;
    t.doc_block = 1024;
    t.delta = 4;
    t.threads = 2;
    snprintf(t.backend, sizeof t.backend, "qs");
    t.default_ns = 5.25;
    t.tuned_ns = 3.5;
    unsigned char *a = NULL, *b = NULL;
    size_t alen = 0, blen = 0;
    CHECK(qs_qsm_set_tuning(img, len, &t, &a, &alen, &err) == 0);
    CHECK(qs_qsm_get_tuning(a, alen, &u, &err) == 1);
    CHECK(u.order == t.order && u.inner_s == 3 && u.inner_d == 256 && u.tree_block == 7 &&
          u.doc_block == 1024 && u.delta == 4 && u.threads == 2);
    CHECK(strcmp(u.backend, "qs") == 0 && strcmp(u.cpu_model, t.cpu_model) == 0);
    CHECK(memcmp(u.cache, t.cache, sizeof u.cache) == 0 && u.cores == t.cores);
    CHECK(strcmp(u.version, QS_VERSION_STRING) == 0 && u.date == t.date);
    CHECK(u.default_ns == 5.25 && u.tuned_ns == 3.5);
    CHECK(qs_tuning_matches(&u));
    qs_qsm_file_info fi;
    CHECK(qs_qsm_get_file_info(a, alen, &fi, &err) == 0 && fi.tuning == 1 && fi.minor == 4);
    /* loads, and applies */
    qs_scorer *s = qs_scorer_load(a, alen, &err);
    CHECK(s != NULL);
    if (s) {
        /* the footprint's lanes: 64 documents a call for every vQS kernel
         * (byte planes on each ISA), 1 for the scalar back ends */
        static const struct { const char *name; uint32_t lanes; } fl[] = {
            { "vqs", 64 }, { "vqs-avx2", 64 }, { "vqs-avx512", 64 }, { "qs", 1 }, { "walk", 1 }
        };
        for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) {
            qs_footprint fpb;
            qs_scorer_get_footprint(s, qs_backend_find(fl[i].name), &fpb);
            CHECK(fpb.lanes == fl[i].lanes);
        }
        CHECK(qs_scorer_apply_tuning(s, &u, &err) == 0);
        uint32_t tau, batch, delta;
        qs_order o;
        uint32_t is, id;
        qs_scorer_get_blocks(s, &tau, &batch, &delta, NULL);
        qs_scorer_get_order(s, &o, &is, &id);
        CHECK(tau == 7 && batch == 1024 && delta == 4 && o == QS_ORDER_SDSD && is == 3 &&
              id == 256);
        qs_scorer_free(s);
    }
    /* τ and Δ given at load: the layout qs_scorer_relayout gives after a
     * plain load, field by field, and the same scores */
    {
        qs_scorer *p = qs_scorer_load_threads(img, len, 2, &err);
        qs_scorer *q = qs_scorer_load_layout(img, len, 2, 3, 5, &err);
        qs_scorer *r = qs_scorer_load_layout(img, len, 1, QS_KEEP, QS_KEEP, &err);
        CHECK(p && q && r);
        if (p && q && r) {
            CHECK(qs_scorer_relayout(p, 3, QS_KEEP, 5, &err) == 0);
            uint32_t t1, b1, d1, t2, b2, d2, t3, d3;
            qs_scorer_get_blocks(p, &t1, &b1, &d1, NULL);
            qs_scorer_get_blocks(q, &t2, &b2, &d2, NULL);
            qs_scorer_get_blocks(r, &t3, NULL, &d3, NULL);
            CHECK(t1 == 3 && t2 == 3 && d1 == 5 && d2 == 5 && b1 == b2);
            CHECK(t3 != 3 || d3 != 5);
            /* q's layout is the one the trees give for τ 3, Δ 5 */
            CHECK(qs_layout_verify(q->L, q->m, 1, &err) == 0);
            CHECK(p->L->nentries == q->L->nentries && p->L->nblocks == q->L->nblocks);
            const qs_model *m = qs_scorer_model(p);
            qs_model_info info;
            qs_model_get_info(m, &info);
            enum { N = 37 };
            double *x = calloc((size_t)N * info.num_features, sizeof *x);
            double *sp = calloc((size_t)N * info.num_classes, sizeof *sp);
            double *sq = calloc((size_t)N * info.num_classes, sizeof *sq);
            CHECK(x && sp && sq);
            if (x && sp && sq) {
                for (size_t i = 0; i < (size_t)N * info.num_features; i++)
                    x[i] = (double)((i * 2654435761u) % 1000) / 500.0 - 0.5;
                CHECK(qs_score_matrix(p, QS_BACKEND_AUTO, x, N, info.num_features, sp, 1, &err) == 0);
                CHECK(qs_score_matrix(q, QS_BACKEND_AUTO, x, N, info.num_features, sq, 1, &err) == 0);
                CHECK(memcmp(sp, sq, sizeof(double) * N * info.num_classes) == 0);
            }
            free(x);
            free(sp);
            free(sq);
        }
        qs_scorer_free(p);
        qs_scorer_free(q);
        qs_scorer_free(r);
    }
    /* replaced, not added */
    t.order = QS_ORDER_DS;
    CHECK(qs_qsm_set_tuning(a, alen, &t, &b, &blen, &err) == 0);
    CHECK(blen == alen);
    CHECK(qs_qsm_get_tuning(b, blen, &u, &err) == 1 && u.order == QS_ORDER_DS);
    CHECK(qs_qsm_get_file_info(b, blen, &fi, &err) == 0);
    int n = 0;
    for (uint32_t i = 0; i < fi.nsections; i++)
        n += memcmp(fi.sections[i].id, "TUNE", 4) == 0;
    CHECK(n == 1);
    /* another machine */
    snprintf(u.cpu_model, sizeof u.cpu_model, "not this CPU");
    CHECK(!qs_tuning_matches(&u));
    /* a damaged record: its checksum fails the file */
    b[blen - 1] ^= 1;
    CHECK(qs_qsm_get_tuning(b, blen, &u, &err) == -1);
    CHECK(qs_scorer_load(b, blen, &err) == NULL);
    free(a);
    free(b);
    free(img);
    printf("test_blocking: %d checks, %d failures\n", checks, failures);
    return failures != 0;
}
