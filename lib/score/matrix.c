/* matrix.c: scoring a dense matrix of documents with several threads
 * (OpenMP), each with its own workspace; the scorer is shared read-only. */
#include "score/score.h"

#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Score slots 0 .. n-1, whose vectors w->xs[0 .. n) the caller pointed at
 * its rows; the slots' own vectors are put back. */
static int score_pointed(const qs_scorer *s, qs_workspace *w, qs_backend b, uint32_t n,
                         double *out, qs_error *err)
{
    int rc = qs_score_batch(s, w, b, n, out, err);
    for (uint32_t j = 0; j < n; j++)
        w->xs[j] = w->slot[j].x;
    return rc;
}

int qs_score_rows(const qs_scorer *s, qs_workspace *w, qs_backend b, uint32_t n,
                  const double *const *rows, double *out, qs_error *err)
{
    if (n > w->nslots)
        return qs_fail(err, QS_ERR_ARG, 0, "batch of %u documents for a workspace of %u", n,
                       w->nslots);
    for (uint32_t j = 0; j < n; j++)
        w->xs[j] = rows[j];
    return score_pointed(s, w, b, n, out, err);
}

/* A matrix row as the back ends read it: the row itself, or, for a model
 * whose library reads a dense matrix with the zero band dropped (LightGBM)
 * and a row holding a value there other than +0.0, a copy in slot sl with
 * those values +0.0 (the slot is refilled at its next reset). */
static const double *dense_row(const qs_model *m, qs_slot *sl, const double *row)
{
    const uint32_t nf = m->num_features;
    uint32_t f = 0;
    if (!qs_model_dense_zero_band(m))
        return row;
    while (f < nf && (qs_zero_band(row[f]) == row[f] && !(row[f] == 0 && signbit(row[f]))))
        f++;
    if (f == nf)
        return row;
    memcpy(sl->x, row, sizeof *row * nf);
    for (; f < nf; f++)
        sl->x[f] = qs_zero_band(sl->x[f]);
    sl->all_dirty = 1;
    return sl->x;
}

/* Score rows [begin, end) with workspace w, a batch of its slots at a
 * time; the slots point straight at the rows (or at dense_row's copies). */
static int score_rows(const qs_scorer *s, qs_workspace *w, qs_backend b, const double *x,
                      size_t stride, size_t begin, size_t end, double *out, qs_error *err)
{
    const uint32_t K = s->m->num_classes;
    for (size_t d = begin; d < end;) {
        uint32_t n = (uint32_t)(end - d < w->nslots ? end - d : w->nslots);
        for (uint32_t j = 0; j < n; j++)
            w->xs[j] = dense_row(s->m, &w->slot[j], x + (d + j) * stride);
        if (score_pointed(s, w, b, n, out + d * K, err) != 0)
            return -1;
        d += n;
    }
    return 0;
}

int qs_score_matrix(const qs_scorer *s, qs_backend b, const double *x, size_t ndocs,
                    size_t stride, double *out, unsigned threads, qs_error *err)
{
    if (stride < s->m->num_features)
        return qs_fail(err, QS_ERR_ARG, 0, "row stride %zu is less than the model's %u features",
                       stride, s->m->num_features);
    if (!qs_scorer_prepared(s, b))
        return qs_fail(err, QS_ERR_ARG, 0,
                       "back end '%s' was not prepared for this scorer (qs_scorer_prepare)",
                       qs_backend_name(b));
    if (ndocs == 0)
        return 0;
#ifdef _OPENMP
    if (threads == 0)
        threads = (unsigned)omp_get_max_threads();
#endif
    if (threads <= 1 || ndocs < 2) {
        qs_workspace *w = qs_workspace_new(s, err);
        if (!w)
            return -1;
        int rc = score_rows(s, w, b, x, stride, 0, ndocs, out, err);
        qs_workspace_free(w);
        return rc;
    }
#ifdef _OPENMP
    int failed = 0;
    qs_error first;
    qs_error_clear(&first);
    /* Contiguous shares of whole rows, one per thread. */
#pragma omp parallel num_threads(threads)
    {
        const size_t t = (size_t)omp_get_thread_num(), T = (size_t)omp_get_num_threads();
        const size_t begin = ndocs * t / T, end = ndocs * (t + 1) / T;
        qs_error e;
        qs_error_clear(&e);
        qs_workspace *w = begin < end ? qs_workspace_new(s, &e) : NULL;
        int rc = begin < end && (!w || score_rows(s, w, b, x, stride, begin, end, out, &e) != 0);
        qs_workspace_free(w);
        /* The first failure's error (no named critical section: its lock
         * would be a global symbol of the shared library). */
        if (rc && __atomic_exchange_n(&failed, 1, __ATOMIC_ACQ_REL) == 0)
            first = e;
    }
    if (failed) {
        if (err)
            *err = first;
        return -1;
    }
    return 0;
#else
    return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                   "%u threads asked, but libqs is built without OpenMP", threads);
#endif
}
