/* transform.c: the objectives' output functions (sigmoid, softmax, exp,
 * hinge) with each source library's arithmetic. */
#include "score/score.h"

#include <stdio.h>

#include <string.h>

static const char *source_library(qs_source src)
{
    switch (src) {
    case QS_SRC_LIGHTGBM: return "LightGBM";
    case QS_SRC_XGBOOST: return "XGBoost";
    case QS_SRC_QUICKRANK: return "QuickRank/RankLib";
    case QS_SRC_CATBOOST: return "CatBoost";
    case QS_SRC_ONNX: return "ONNX Runtime";
    default: return "the source library";
    }
}

int qs_scorer_set_transform(qs_scorer *s, const char *name, qs_error *err)
{
    qs_model *m = s->m;
    if (!name || strlen(name) >= sizeof m->transform || !qs_transform_known(name) ||
        strcmp(name, "unsupported") == 0)
        return qs_fail(err, QS_ERR_ARG, 0,
                       "unknown transform '%s' (expected none, sigmoid, softmax, exp, "
                       "ova-sigmoid, hinge, argmax or signed-square)", name ? name : "");
    if (strcmp(name, m->transform) == 0)
        return 0;
    const int catboost_pick = m->source == QS_SRC_CATBOOST && m->num_classes == 1 &&
                              strcmp(m->transform, "unsupported") != 0 &&
                              (strcmp(name, "sigmoid") == 0 || strcmp(name, "exp") == 0);
    /* "none": the raw sums, exact for every model (LightGBM's random-forest
     * average stays). */
    if (strcmp(name, "none") != 0 && !catboost_pick) {
        if (strcmp(m->transform, "unsupported") == 0)
            return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                           "transform '%s' is not exact for this model: its output function "
                           "cannot be reproduced exactly ('none' gives the raw scores)", name);
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                       "transform '%s' is not exact for this model: %s computes '%s' for it "
                       "(%s%s%s'none' gives the raw scores)%s", name,
                       source_library(m->source), m->transform, m->objective[0] ? "objective '" : "",
                       m->objective, m->objective[0] ? "'; " : "",
                       m->source == QS_SRC_CATBOOST ? "; CatBoost's sigmoid and exp apply to "
                                                      "one-output models" : "");
    }
    snprintf(m->transform, sizeof m->transform, "%s", name);
    if (catboost_pick)
        m->transform_param = 1.0;
    return 0;
}

/* ------------------------------------------------------------ transforms */

uint32_t qs_transform_columns(const qs_scorer *s)
{
    return strcmp(s->m->transform, "argmax") == 0 ? 1 : s->m->num_classes;
}

void qs_transform(const qs_scorer *s, double *y)
{
    const qs_model *m = s->m;
    const uint32_t k = m->num_classes;
    const double a = m->transform_param;
    const int f = m->float_accumulate == QS_ACC_FLOAT; /* XGBoost computes its transforms in float32 */
    if (m->transform_average)
        for (uint32_t c = 0; c < k; c++)
            y[c] /= (double)m->transform_average;
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
    } else if (strcmp(m->transform, "argmax") == 0) {
        /* XGBoost multi:softmax: the class of the largest margin, the first
         * on ties (FindMaxIndex), into y[0]; qs_transform_columns says 1. */
        uint32_t best = 0;
        for (uint32_t c = 1; c < k; c++)
            if (y[c] > y[best])
                best = c;
        y[0] = (double)best;
    } else if (strcmp(m->transform, "signed-square") == 0) {
        /* LightGBM reg_sqrt: Common::Sign(x) * x * x, left to right. */
        for (uint32_t c = 0; c < k; c++) {
            const double x = y[c];
            y[c] = (double)((x > 0.0) - (x < 0.0)) * x * x;
        }
    } else if (strcmp(m->transform, "softmax") == 0) {
        double mx = y[0];
        for (uint32_t c = 1; c < k; c++)
            if (y[c] > mx)
                mx = y[c];
        if (f) {
            /* XGBoost's common::Softmax (1.x and 2.x): the maximum and each
             * expf(x - max) in float32, their sum in double, each divided
             * by that sum rounded to float32. */
            float wmax = (float)y[0];
            for (uint32_t c = 1; c < k; c++)
                wmax = fmaxf((float)y[c], wmax);
            double wsum = 0.0;
            for (uint32_t c = 0; c < k; c++) {
                float e = expf((float)y[c] - wmax);
                y[c] = (double)e;
                wsum += e;
            }
            for (uint32_t c = 0; c < k; c++)
                y[c] = (double)((float)y[c] / (float)wsum);
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

