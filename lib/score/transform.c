/* transform.c: the objectives' output functions (sigmoid, softmax, exp,
 * hinge, log1p-exp, ...) with each source library's arithmetic. */
#include "score/score.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ CatBoost's exp */

/* CatBoost computes its Exponent and MultiClass Probability with
 * FastExpInplace (library/cpp/fast_exp, called from CalcExponent and
 * CalcSoftmax in catboost/libs/model/eval_processing.h), which on x86-64 is
 * fmath's expd_v (contrib/libs/fmath/fmath.hpp; fast_exp_avx2.cpp and
 * fast_exp_sse2.cpp call it): a table of 2^(i/2048) and a cubic, not the C
 * library's exp.  Of an array of n values, the first n & ~3 (AVX2; n & ~1
 * with SSE2 only) take the vector loop, the rest fmath's scalar expd; the
 * two compute the same arithmetic (each step rounded: the intrinsics are
 * not fused, and fusing y * C2 - t changes nothing, t being below 2^-12)
 * and differ only in their range checks: the loop clamps x to
 * [-708.39641853226408, 709.78272569338397] (NaN becomes the upper bound),
 * expd gives 0 at or below the lower bound and inf at or above
 * 709.78271289338397. */
static const uint64_t fmath_exp2[2048] = {
#include "score/fmath_exp2.inc"
};

static double fmath_core(double x)
{
    const double a = 0x1.71547652b82fep+11;   /* 2048 / log(2.0) */
    const double ra = 0x1.62e42fefa39efp-12;  /* 1 / a */
    const double b = 0x1.8p+52;                /* 3 << 51 */
    const double c1 = 1.0, c2 = 0.16666666685227835064, c3 = 3.0000000027955394;
    double d = x * a;
    d = d + b;
    uint64_t di;
    memcpy(&di, &d, sizeof di);
    double t = d - b;
    t = t * ra;
    t = t - x;
    uint64_t u = (((di + (((uint64_t)1 << 21) - ((uint64_t)1 << 11))) >> 11) << 52) |
                 fmath_exp2[di & 2047u];
    double tt = t * t;
    double y = c3 - t;
    y = y * tt;
    y = y * c2;
    y = y - t;
    y = y + c1;
    double p;
    memcpy(&p, &u, sizeof p);
    return y * p;
}

/* fmath's expd_v loop (x86-64, AVX2 or SSE2). */
static double catboost_exp(double x)
{
    x = x < 709.78272569338397 ? x : 709.78272569338397;   /* _mm_min_pd: NaN -> the bound */
    x = x > -708.39641853226408 ? x : -708.39641853226408;
    return fmath_core(x);
}

/* fmath's scalar expd, for the last n & 3 values of an array. */
static double catboost_exp_tail(double x)
{
    if (x <= -708.39641853226408)
        return 0.0;
    if (x >= 709.78271289338397)
        return INFINITY;
    return fmath_core(x);
}

static const char *source_library(qs_source src)
{
    const qs_source_info *r = qs_source_get(src);
    return r ? r->library : "the source library";
}

int qs_scorer_set_transform(qs_scorer *s, const char *name, qs_error *err)
{
    qs_model *m = s->m;
    if (!name || strlen(name) >= sizeof m->transform || !qs_transform_known(name) ||
        strcmp(name, "unsupported") == 0)
        return qs_fail(err, QS_ERR_ARG, 0,
                       "unknown transform '%s' (expected none, sigmoid, softmax, exp, "
                       "ova-sigmoid, hinge, argmax, signed-square, log1p-exp, fmath-exp or "
                       "fmath-softmax)",
                       name ? name : "");
    if (strcmp(name, m->transform) == 0)
        return 0;
    /* A library that picks the prediction type at predict time (the
     * source table's picked_transforms: CatBoost's Probability, Exponent
     * with its own exp, exp) does so for a one-output model. */
    const qs_source_info *src = qs_source_get(m->source);
    const int picked = src && m->num_classes == 1 && strcmp(m->transform, "unsupported") != 0 &&
                       qs_source_picks(src, name);
    /* "none": the raw sums, exact for every model (LightGBM's random-forest
     * average stays). */
    if (strcmp(name, "none") != 0 && !picked) {
        if (strcmp(m->transform, "unsupported") == 0)
            return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                           "transform '%s' is not exact for this model: its output function "
                           "cannot be reproduced exactly ('none' gives the raw scores)", name);
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                       "transform '%s' is not exact for this model: %s computes '%s' for it "
                       "(%s%s%s'none' gives the raw scores)%s%s%s", name,
                       source_library(m->source), m->transform, m->objective[0] ? "objective '" : "",
                       m->objective, m->objective[0] ? "'; " : "",
                       src && src->picked_transforms[0] ? "; " : "",
                       src && src->picked_transforms[0] ? source_library(m->source) : "",
                       src && src->picked_transforms[0] ? "'s sigmoid and exp apply to "
                                                          "one-output models" : "");
    }
    snprintf(m->transform, sizeof m->transform, "%s", name);
    if (picked)
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
    } else if (strcmp(m->transform, "fmath-exp") == 0) {
        /* CatBoost's Exponent: FastExpInplace over the batch's scores, the
         * vector loop's value (a document among the last n & 3 of CatBoost's
         * batch differs only where |y| > 708: README) */
        for (uint32_t c = 0; c < k; c++)
            y[c] = catboost_exp(y[c]);
    } else if (strcmp(m->transform, "fmath-softmax") == 0) {
        /* CatBoost's CalcSoftmax: y - max, FastExpInplace over the K values
         * (the first K & ~3 by the AVX2 loop, the rest by expd), their sum
         * in double in class order, each divided by it */
        double mx = y[0], sum = 0.0;
        for (uint32_t c = 1; c < k; c++)
            if (y[c] > mx)
                mx = y[c];
        for (uint32_t c = 0; c < k; c++) {
            const double z = y[c] - mx;
            y[c] = c < (k & ~3u) ? catboost_exp(z) : catboost_exp_tail(z);
        }
        for (uint32_t c = 0; c < k; c++)
            sum += y[c];
        for (uint32_t c = 0; c < k; c++)
            y[c] /= sum;
    } else if (strcmp(m->transform, "hinge") == 0) {
        for (uint32_t c = 0; c < k; c++)
            y[c] = y[c] > 0.0 ? 1.0 : 0.0;
    } else if (strcmp(m->transform, "log1p-exp") == 0) {
        /* LightGBM cross_entropy_lambda (CrossEntropyLambda::ConvertOutput):
         * std::log1p(std::exp(x)) in double, the C library's functions */
        for (uint32_t c = 0; c < k; c++)
            y[c] = log1p(exp(y[c]));
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

