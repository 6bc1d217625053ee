/* test_matrix.c: qs_score_matrix with 1, 2, 3 and the default number of
 * threads gives the same bits as qs_score_doc, document by document (the
 * document read as a dense matrix is: for a LightGBM model, its values
 * with |x| <= 1e-35f made 0 by qs_doc_zero_band, the matrix left as read);
 * so do the back ends with only the whole-batch entry (walk-batch,
 * cuda-emu) through qs_score_matrix (every row in one call) and
 * qs_score_doc, qs_score_batch and qs_score_rows (the workspace's slots as
 * rows), as walk gives them; qs_scorer_set_device refuses a negative device.
 * Usage: test_matrix MODEL.qsm DOCS.letor */
#include "score/score.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slurp.h"

int main(int argc, char **argv)
{
    size_t mlen, dlen;
    unsigned char *img, *docs;
    qs_scorer *s = load_model_docs(argc, argv, "test_matrix", &img, &mlen, &docs, &dlen);
    qs_error err;
    const uint32_t F = s->m->num_features ? s->m->num_features : 1, K = s->m->num_classes;
    qs_workspace *w = qs_workspace_new(s, &err);
    size_t cap = 1024, n = 0;
    double *x = malloc(sizeof(double) * F * cap), *ref = malloc(sizeof(double) * K * cap);
    const char *p = (const char *)docs, *end = p + dlen;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        qs_letor_line meta;
        int is_doc;
        qs_workspace_select(w, 0);
        if (qs_letor_parse(s, w, QS_ABSENT_DEFAULT, p, len, &meta, &is_doc, &err) != 0) {
            fprintf(stderr, "parse: %s\n", err.msg);
            return 2;
        }
        p = nl ? nl + 1 : end;
        if (!is_doc)
            continue;
        if (n == cap) {
            cap *= 2;
            x = realloc(x, sizeof(double) * F * cap);
            ref = realloc(ref, sizeof(double) * K * cap);
        }
        memcpy(x + n * F, w->slot[0].x, sizeof(double) * s->m->num_features);
        if (qs_scorer_zero_band(s))
            qs_doc_zero_band(w);
        if (qs_score_doc(s, w, QS_BACKEND_AUTO, ref + n * K, &err) != 0) {
            fprintf(stderr, "score: %s\n", err.msg);
            return 2;
        }
        n++;
    }
    long checks = 0, failures = 0;
    double *got = malloc(sizeof(double) * K * (n ? n : 1));
    const unsigned counts[] = { 1, 2, 3, 7, 0 };   /* 7: more threads than chunks */
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        memset(got, 0xff, sizeof(double) * K * n);
        checks++;
        if (qs_score_matrix(s, QS_BACKEND_AUTO, x, n, F, got, counts[i], &err) != 0) {
            printf("threads %u: %s\n", counts[i], err.msg);
            failures++;
            continue;
        }
        checks++;
        if (memcmp(got, ref, sizeof(double) * K * n) != 0) {
            printf("threads %u: scores differ from qs_score_doc\n", counts[i]);
            failures++;
        }
    }
    /* A back end that was not prepared, and a stride too short, are refused. */
    checks += 2;
    if (qs_score_matrix(s, qs_backend_find("struct"), x, n, F, got, 2, &err) == 0 ||
        err.code != QS_ERR_ARG)
        failures++, printf("an unprepared back end was not refused\n");
    if (s->m->num_features > 1 &&
        (qs_score_matrix(s, QS_BACKEND_AUTO, x, n, F - 1, got, 2, &err) == 0 || err.code != QS_ERR_ARG))
        failures++, printf("a short stride was not refused\n");
    /* The whole-batch back ends (walk-batch; cuda-emu, the GPU back end's
     * driver over its emulated device): the same bits as walk, whatever
     * the thread count. */
    static const char *const batch_names[] = { "walk-batch", "cuda-emu" };
    for (size_t bi = 0; bi < sizeof batch_names / sizeof batch_names[0]; bi++) {
        const char *bname = batch_names[bi];
        const qs_backend walk = qs_backend_find("walk"), wb = qs_backend_find(bname);
        checks++;
        if (walk < 0 || wb < 0 || qs_scorer_prepare(s, walk, &err) != 0 ||
            qs_scorer_prepare(s, wb, &err) != 0) {
            printf("walk, %s: not found or not prepared\n", bname);
            failures++;
        } else {
            double *wref = malloc(sizeof(double) * K * (n ? n : 1));
            checks++;
            if (qs_score_matrix(s, walk, x, n, F, wref, 1, &err) != 0 ||
                memcmp(wref, ref, sizeof(double) * K * n) != 0) {
                printf("walk differs from auto\n");
                failures++;
            }
            /* Batches that grow and shrink: cuda-emu sizes its lanes by
             * the first batch and grows them (16, 32, ... rows). */
            const size_t lens[] = { 1, 3, 20, 70, 200, 5, 1000, 2 };
            for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
                size_t len = lens[i] < n ? lens[i] : n;
                memset(got, 0xff, sizeof(double) * K * n);
                if (qs_score_matrix(s, wb, x, len, F, got, 1, &err) != 0 ||
                    memcmp(got, wref, sizeof(double) * K * len) != 0) {
                    printf("%s, the first %zu rows alone: differ from walk\n", bname, len);
                    failures++;
                    break;
                }
            }
            const unsigned wcounts[] = { 1, 2, 3, 7, 0 };
            for (size_t i = 0; i < sizeof wcounts / sizeof wcounts[0]; i++) {
                memset(got, 0xff, sizeof(double) * K * n);
                checks++;
                if (qs_score_matrix(s, wb, x, n, F, got, wcounts[i], &err) != 0 ||
                    memcmp(got, wref, sizeof(double) * K * n) != 0) {
                    printf("%s, threads %u: differs from walk\n", bname, wcounts[i]);
                    failures++;
                }
            }
            /* Through a workspace: one document, a batch of slots, rows;
             * the slots hold the values as read (no dense-matrix reading),
             * so walk through the same workspace is the reference. */
            qs_workspace *w2 = qs_workspace_new(s, &err);
            const uint32_t ns = w2 ? qs_workspace_slots(w2) : 0;
            const double **rp = malloc(sizeof *rp * (ns ? ns : 1));
            double *want = malloc(sizeof(double) * K * (ns ? ns : 1));
            long bad = !w2 || !rp || !want;
            for (size_t d = 0; !bad && d < n; d += ns) {
                uint32_t m = n - d < ns ? (uint32_t)(n - d) : ns;
                for (uint32_t j = 0; j < m; j++) {
                    rp[j] = x + (d + j) * F;
                    qs_workspace_select(w2, j);
                    qs_doc_reset(w2, QS_ABSENT_DEFAULT);
                    for (uint32_t f = 0; f < s->m->num_features; f++)
                        qs_doc_set(w2, f, rp[j][f]);
                }
                bad |= qs_score_batch(s, w2, walk, m, want, &err) != 0;
                bad |= qs_score_batch(s, w2, wb, m, got, &err) != 0 ||
                       memcmp(got, want, sizeof(double) * K * m) != 0;
                bad |= qs_score_rows(s, w2, wb, m, rp, got, &err) != 0 ||
                       memcmp(got, want, sizeof(double) * K * m) != 0;
                qs_workspace_select(w2, m - 1);
                bad |= qs_score_doc(s, w2, wb, got, &err) != 0 ||
                       memcmp(got, want + (size_t)(m - 1) * K, sizeof(double) * K) != 0;
            }
            free(want);
            checks++;
            if (bad) {
                printf("%s through a workspace differs from walk\n", bname);
                failures++;
            }
            free(rp);
            qs_workspace_free(w2);
            free(wref);
        }
    }
    /* The device: an ordinal, 0 or more. */
    checks += 2;
    if (qs_scorer_set_device(s, -1, &err) == 0 || err.code != QS_ERR_ARG ||
        !strstr(err.msg, "ordinal"))
        failures++, printf("a negative device was not refused\n");
    if (qs_scorer_set_device(s, 1, &err) != 0 || qs_scorer_set_device(s, 0, &err) != 0)
        failures++, printf("device 1, then 0, was refused: %s\n", err.msg);
    printf("%zu documents, %ld checks, %ld failures\n", n, checks, failures);
    free(got);
    free(x);
    free(ref);
    free(img);
    free(docs);
    qs_workspace_free(w);
    qs_scorer_free(s);
    return failures != 0;
}
