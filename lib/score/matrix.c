/* matrix.c: how rows reach a back end (qs_backend_score_rows): a back end
 * with a whole-batch entry gets them all at once; the others get them a
 * workspace at a time, over several threads (OpenMP), each with its own
 * workspace, the scorer shared read-only.  qs_score_matrix and
 * qs_score_rows. */
#include "score/score.h"

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

/* Score rows [begin, end) of r with workspace w, a batch of its slots at
 * a time; the slots point straight at the rows, or, where a row read as a
 * dense matrix changes (qs_rows_read), at a copy in the slot's own vector
 * (refilled at its next reset). */
static int score_share(const qs_scorer *s, qs_workspace *w, qs_backend b, const qs_rows *r,
                       size_t begin, size_t end, double *out, qs_error *err)
{
    const uint32_t K = s->m->num_classes;
    for (size_t d = begin; d < end;) {
        uint32_t n = (uint32_t)(end - d < w->nslots ? end - d : w->nslots);
        for (uint32_t j = 0; j < n; j++) {
            qs_slot *sl = &w->slot[j];
            w->xs[j] = qs_rows_read(r, d + j, s->m->num_features, sl->x);
            if (w->xs[j] == sl->x)
                sl->all_dirty = 1;
        }
        if (score_pointed(s, w, b, n, out + d * K, err) != 0)
            return -1;
        d += n;
    }
    return 0;
}

int qs_backend_score_rows(const qs_scorer *s, qs_backend b, const qs_rows *r, double *out,
                          unsigned threads, qs_error *err)
{
    unsigned how = QS_HOW_NAMED;
    if (b == QS_BACKEND_AUTO) {
        b = s->auto_backend;
        how = 0;
    }
    if (b < 0 || (unsigned)b >= qs_backend_table_len)
        return qs_fail(err, QS_ERR_ARG, 0, "no back end number %d", b);
    const qs_backend_def *d = qs_backend_table[b];
    if (!s->prepared[b])
        return qs_fail(err, QS_ERR_ARG, 0,
                       "back end '%s' was not prepared for this scorer (qs_scorer_prepare)",
                       d->name);
    if (r->n == 0)
        return 0;
    if (d->score_rows) {
        /* Every row in one call: the back end owns its parallelism. */
        if (d->score_rows(d, s, s->state[b], r, out, threads, how, err) != 0)
            return -1;
        qs_model_finish_scores(s->m, out, r->n);
        return 0;
    }
    const size_t ndocs = r->n;
#ifdef _OPENMP
    if (threads == 0)
        threads = (unsigned)omp_get_max_threads();
#endif
    if (threads <= 1 || ndocs < 2) {
        qs_workspace *w = qs_workspace_new(s, err);
        if (!w)
            return -1;
        int rc = score_share(s, w, b, r, 0, ndocs, out, err);
        qs_workspace_free(w);
        return rc;
    }
#ifdef _OPENMP
    int failed = 0;
    qs_error first;
    qs_error_clear(&first);
    /* Rows claimed in chunks of whole workspace batches by whichever thread
     * is free (about 8 chunks a thread): a thread slowed by another process
     * or by harder rows no longer holds the call up, as one fixed share a
     * thread did.  Each row's score is its own: the order changes no bit. */
    size_t next = 0;
    if (threads > ndocs)
        threads = (unsigned)ndocs;
#pragma omp parallel num_threads(qs_team(threads))
    {
        const size_t T = (size_t)omp_get_num_threads();
        qs_error e;
        qs_error_clear(&e);
        qs_workspace *w = qs_workspace_new(s, &e);
        int rc = !w;
        if (w) {
            const size_t batch = w->nslots ? w->nslots : 1;
            const size_t batches = (ndocs + batch - 1) / batch;
            const size_t per = (batches + 8 * T - 1) / (8 * T);
            const size_t chunk = batch * (per ? per : 1);
            for (;;) {
                const size_t begin = __atomic_fetch_add(&next, chunk, __ATOMIC_RELAXED);
                if (begin >= ndocs)
                    break;
                const size_t end = ndocs - begin < chunk ? ndocs : begin + chunk;
                if (score_share(s, w, b, r, begin, end, out, &e) != 0) {
                    rc = 1;
                    /* the others stop at their next claim */
                    __atomic_store_n(&next, ndocs, __ATOMIC_RELAXED);
                    break;
                }
            }
        }
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

/* qs_score_matrix and qs_score_matrix_as_read: the rows read as a dense
 * matrix (zero_band: LightGBM's rule) or as they are. */
static int score_matrix(const qs_scorer *s, qs_backend b, const double *x, size_t ndocs,
                        size_t stride, double *out, unsigned threads, int zero_band,
                        qs_error *err)
{
    if (stride < s->m->num_features)
        return qs_fail(err, QS_ERR_ARG, 0, "row stride %zu is less than the model's %u features",
                       stride, s->m->num_features);
    if (!qs_scorer_prepared(s, b))
        return qs_fail(err, QS_ERR_ARG, 0,
                       "back end '%s' was not prepared for this scorer (qs_scorer_prepare)",
                       qs_backend_name(b));
    const qs_rows r = { x, stride, NULL, ndocs, zero_band };
    return qs_backend_score_rows(s, b, &r, out, threads, err);
}

int qs_score_matrix(const qs_scorer *s, qs_backend b, const double *x, size_t ndocs,
                    size_t stride, double *out, unsigned threads, qs_error *err)
{
    return score_matrix(s, b, x, ndocs, stride, out, threads, qs_model_dense_zero_band(s->m),
                        err);
}

int qs_score_matrix_as_read(const qs_scorer *s, qs_backend b, const double *x, size_t ndocs,
                            size_t stride, double *out, unsigned threads, qs_error *err)
{
    return score_matrix(s, b, x, ndocs, stride, out, threads, 0, err);
}
