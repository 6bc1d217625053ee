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

/* Every row of r, over `threads` OpenMP threads (0: OpenMP's default);
 * each row's sum is the walk's, so the thread count changes no bit. */
static int walk_rows(const qs_backend_def *d, const qs_scorer *s, void *state, const qs_rows *r,
                     double *out, unsigned threads, unsigned how, qs_error *err)
{
    const qs_model *m = s->m;
    const size_t K = m->num_classes, n = r->n;
#ifdef _OPENMP
    if (threads == 0)
        threads = (unsigned)omp_get_max_threads();
    if (threads > 1 && n > 1) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (size_t i = 0; i < n; i++)
            qs_model_walk_sum(m, qs_rows_at(r, i), out + i * K);
        return 0;
    }
#endif
    for (size_t i = 0; i < n; i++)
        qs_model_walk_sum(m, qs_rows_at(r, i), out + i * K);
    return 0;
}

const qs_backend_def qs_backend_walk_batch = {
    .name = "walk-batch",
    .summary = "the reference walk over whole batches (score_rows: every row in one call, "
               "OpenMP over the rows); checks the whole-batch entry",
    .flags = QS_BACKEND_F_BATCH | QS_BACKEND_F_THREADS,
    .score_rows = walk_rows,
};
