/* number.h: the decimal fast path of qs_parse_number, inline so that the
 * LETOR reader (score/workspace.c) parses a value where it finds it, without
 * a call per token.  Internal to libqs. */
#ifndef QS_COMMON_NUMBER_H
#define QS_COMMON_NUMBER_H

#include "common/common.h"

#include <float.h>
#include <stdint.h>
#include <string.h>

/* Tokens at least this long skip the fast path of qs_dec_fast and go to
 * qs_parse_number, which keeps its own rule for them (format/letor.md,
 * "Numbers": strtod/strtof read at most 127 bytes). */
#define QS_NUMBER_SHORT 128

extern const double qs_pow10_exact[23]; /* 1e0 .. 1e22, exact doubles */
extern const float qs_pow10f_exact[11]; /* 1e0 .. 1e10, exact floats */

/* m x 10^e10 (m > 0, with the sign neg) correctly rounded to float32 (or
 * double), by the Eisel-Lemire algorithm: 1 with *out, or 0 when it does
 * not decide (rare: the caller asks strtod/strtof).  number.c. */
int qs_eisel_lemire(int float_precision, uint64_t m, int e10, int neg, double *out);

#if FLT_EVAL_METHOD == 0
/* m x 10^k (m < 10^19, with the sign neg) correctly rounded in the
 * precision asked: 1 with *out, or 0 (not decided here: the caller asks
 * strtod/strtof).
 *
 *   float32, m < 2^24, |k| <= 10:  one float multiply or divide of exact
 *                                  floats (Clinger), so strtof's result;
 *   m <= 2^53, |k| <= 22:          one double multiply or divide of exact
 *                                  doubles (Clinger); for float32 that
 *                                  double rounded to float, unless it lies
 *                                  exactly halfway between two floats;
 *   otherwise, and at such a
 *   halfway point:                 qs_eisel_lemire, which decides all but
 *                                  rare cases (and subnormal or infinite
 *                                  results).
 *
 * Clinger's results never overflow nor are subnormal: m <= 2^53 x 10^22 is
 * below FLT_MAX and m / 10^22 >= 10^-22 a normal float.  Only where float
 * and double operations round to their own precision (FLT_EVAL_METHOD 0:
 * SSE, AArch64): x87 extended precision would round twice. */
static inline __attribute__((always_inline)) int
qs_dec_value(int float_precision, uint64_t m, int k, int neg, double *out)
{
    double v;
    if (float_precision && m < (1u << 24) && k >= -10 && k <= 10) {
        float f = (float)(int32_t)m;
        v = k > 0 ? f * qs_pow10f_exact[k] : f / qs_pow10f_exact[-k];
    } else if (m <= ((uint64_t)1 << 53) && k >= -22 && k <= 22) {
        v = (double)(int64_t)m;
        v = k > 0 ? v * qs_pow10_exact[k] : v / qs_pow10_exact[-k];
        if (float_precision) {
            uint64_t bits;
            memcpy(&bits, &v, sizeof bits);
            /* 29 bits below float's 24-bit significand: 1 then 28 zeros is
             * a float midpoint. */
            if ((bits & 0x1FFFFFFFu) == 0x10000000u)
                return qs_eisel_lemire(1, m, k, neg, out);
            v = (double)(float)v;
        }
    } else {
        return qs_eisel_lemire(float_precision, m, k, neg, out);
    }
    *out = neg ? -v : v;
    return 1;
}

/* A run of decimal digits from *p (not past e) into *m; *nz and *sig
 * count the significant digits (from the first nonzero one: not "m != 0",
 * as m may wrap to 0 past 19 digits). */
static inline __attribute__((always_inline)) void
qs_dec_digits(const char **p, const char *e, uint64_t *m, unsigned *nz, size_t *sig)
{
    const char *q = *p;
    while (q < e && (unsigned char)(*q - '0') < 10) {
        unsigned d = (unsigned char)(*q++ - '0');
        *m = *m * 10 + d;
        *nz |= d;
        *sig += *nz != 0;
    }
    *p = q;
}
#endif

/* The exact fast path of the decimal readers.  Reads from p (not past e)
 * the longest prefix of the form [+-] digits [. digits] [(e|E) [+-] digits]
 * (at least one significand digit, an exponent at least one digit), and
 * when its value is exactly m x 10^k with m < 10^19 (19 significant digits
 * at most, leading zeros not counted) gives it correctly rounded in the
 * precision asked: +-0 for m = 0 (the sign kept), else qs_dec_value.
 * Returns 1 with *out and *stop (the first byte not read), or 0 (not
 * decided here: the caller asks strtod/strtof). */
static inline __attribute__((always_inline)) int
qs_dec_fast(int float_precision, const char *p, const char *e, const char **stop, double *out)
{
#if FLT_EVAL_METHOD == 0
    int neg = 0;
    if (p < e && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    uint64_t m = 0;
    size_t sig = 0;
    unsigned nz = 0;
    const char *d0 = p;
    qs_dec_digits(&p, e, &m, &nz, &sig);
    size_t digits = (size_t)(p - d0);
    int frac = 0;
    if (p < e && *p == '.') {
        const char *f0 = ++p;
        qs_dec_digits(&p, e, &m, &nz, &sig);
        frac = (int)(p - f0);
        digits += (size_t)frac;
    }
    if (digits == 0 || sig > 19) /* no digit, or m may have wrapped */
        return 0;
    int ex = 0;
    if (p < e && (*p | 0x20) == 'e') {
        p++;
        int eneg = 0;
        if (p < e && (*p == '-' || *p == '+'))
            eneg = *p++ == '-';
        const char *x0 = p;
        for (; p < e && (unsigned char)(*p - '0') < 10; p++)
            if (ex < 10000)
                ex = ex * 10 + (*p - '0');
        if (p == x0)
            return 0;
        if (eneg)
            ex = -ex;
    }
    *stop = p;
    if (m == 0) {
        *out = neg ? -0.0 : 0.0;
        return 1;
    }
    return qs_dec_value(float_precision, m, ex - frac, neg, out);
#else
    (void)float_precision, (void)p, (void)e, (void)stop, (void)out;
    return 0;
#endif
}

#endif
