/* walk.c: the `walk` back end, the reference tree walk of model/ (every
 * other back end is tested against it).  Like every back end it returns the
 * sum; qs_score_batch applies the model's output affine. */
#include "score/score.h"

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
