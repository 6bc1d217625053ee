/* transform.c: the objectives' output functions (sigmoid, softmax, exp,
 * hinge) with each source library's arithmetic. */
#include "score/score.h"

#include <string.h>

/* ------------------------------------------------------------ transforms */

void qs_transform(const qs_scorer *s, double *y)
{
    const qs_model *m = s->m;
    const uint32_t k = m->num_classes;
    const double a = m->transform_param;
    const int f = m->float_accumulate == QS_ACC_FLOAT; /* XGBoost computes its transforms in float32 */
    if (strcmp(m->transform, "sigmoid") == 0 || strcmp(m->transform, "ova-sigmoid") == 0) {
        for (uint32_t c = 0; c < k; c++)
            y[c] = f ? (double)(1.0f / (1.0f + expf(-(float)a * (float)y[c])))
                     : 1.0 / (1.0 + exp(-a * y[c]));
    } else if (strcmp(m->transform, "exp") == 0) {
        for (uint32_t c = 0; c < k; c++)
            y[c] = f ? (double)expf((float)y[c]) : exp(y[c]);
    } else if (strcmp(m->transform, "hinge") == 0) {
        for (uint32_t c = 0; c < k; c++)
            y[c] = y[c] > 0.0 ? 1.0 : 0.0;
    } else if (strcmp(m->transform, "softmax") == 0) {
        double mx = y[0];
        for (uint32_t c = 1; c < k; c++)
            if (y[c] > mx)
                mx = y[c];
        if (f) {
            float sum = 0.0f;
            for (uint32_t c = 0; c < k; c++) {
                y[c] = (double)expf((float)y[c] - (float)mx);
                sum += (float)y[c];
            }
            for (uint32_t c = 0; c < k; c++)
                y[c] = (double)((float)y[c] / sum);
        } else {
            double sum = 0.0;
            for (uint32_t c = 0; c < k; c++) {
                y[c] = exp(y[c] - mx);
                sum += y[c];
            }
            for (uint32_t c = 0; c < k; c++)
                y[c] /= sum;
        }
    }
}

