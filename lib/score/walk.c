/* walk.c: the `walk` back end, the reference tree walk of model/ (every
 * other back end is tested against it), and `walk-batch`, the same walk
 * behind the whole-batch entry (score_rows), so that the path a device
 * back end takes is exercised on every machine.  Like every back end they
 * return the sum; the caller applies the model's output affine. */
#include "score/score.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static int walk_score(const qs_backend_def *d, const qs_scorer *s, const void *state,
                      qs_workspace *w, void *scratch, uint32_t n, double *out, unsigned how,
                      qs_error *err)
{
    const qs_model *m = s->m;
    for (uint32_t i = 0; i < n; i++)
        qs_model_walk_sum(m, w->xs[i], out + (size_t)i * m->num_classes);
    return 0;
}

const qs_backend_def qs_backend_walk = {
    .name = "walk",
    .summary = "plain tree walk, the internal reference",
    .flags = QS_BACKEND_F_REFERENCE,
    .score = walk_score,
};

/* Rows [begin, end) of r; buf: the model's features, for a row read as a
 * dense matrix (r->zero_band). */
static void walk_share(const qs_model *m, const qs_rows *r, size_t begin, size_t end,
                       double *buf, double *out)
{
    const size_t K = m->num_classes;
    for (size_t i = begin; i < end; i++)
        qs_model_walk_sum(m, qs_rows_read(r, i, m->num_features, buf), out + i * K);
}

/* Every row of r, over `threads` OpenMP threads (0: OpenMP's default),
 * contiguous shares; each row's sum is the walk's, so the thread count
 * changes no bit. */
static int walk_rows(const qs_backend_def *d, const qs_scorer *s, void *state, const qs_rows *r,
                     double *out, unsigned threads, unsigned how, qs_error *err)
{
    const qs_model *m = s->m;
    const size_t n = r->n, nf = m->num_features ? m->num_features : 1;
#ifdef _OPENMP
    if (threads == 0)
        threads = (unsigned)omp_get_max_threads();
    if (threads > 1 && n > 1) {
        int failed = 0;
#pragma omp parallel num_threads(qs_team(threads))
        {
            const size_t t = (size_t)omp_get_thread_num(), T = (size_t)omp_get_num_threads();
            double *buf = r->zero_band ? malloc(sizeof(double) * nf) : NULL;
            if (r->zero_band && !buf)
                __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
            else
                walk_share(m, r, n * t / T, n * (t + 1) / T, buf, out);
            free(buf);
        }
        if (failed)
            return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        return 0;
    }
#endif
    double *buf = r->zero_band ? malloc(sizeof(double) * nf) : NULL;
    if (r->zero_band && !buf)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    walk_share(m, r, 0, n, buf, out);
    free(buf);
    return 0;
}

const qs_backend_def qs_backend_walk_batch = {
    .name = "walk-batch",
    .summary = "the reference walk over whole batches (score_rows: every row in one call, "
               "OpenMP over the rows); checks the whole-batch entry",
    .flags = QS_BACKEND_F_BATCH | QS_BACKEND_F_THREADS,
    .score_rows = walk_rows,
};
