/* number.c: decimal and hex number tokens, parsed with a model's precision
 * (strtod for double models, strtof for float32 ones, never through a
 * double first), after an exact fast path for short decimals
 * (common/number.h). */
#include "common/number.h"

#include <errno.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

const double qs_pow10_exact[23] = { 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                    1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
const float qs_pow10f_exact[11] = { 1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f,
                                     1e6f, 1e7f, 1e8f, 1e9f, 1e10f };

/* 10^q, q = QS_EL_QMIN .. 347: the top 128 bits of the significand,
 * rounded down, {low, high}. */
#define QS_EL_QMIN (-348)
#define QS_EL_QMAX 347
#ifdef __SIZEOF_INT128__
static const uint64_t pow10_128[QS_EL_QMAX - QS_EL_QMIN + 1][2] = {
#include "common/pow10_128.inc"
};
#endif

#ifdef __SIZEOF_INT128__
/* The high and low 64 bits of a * b. */
static inline void mul128(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
    unsigned __int128 r = (unsigned __int128)a * b;
    *hi = (uint64_t)(r >> 64);
    *lo = (uint64_t)r;
}
#endif

/* The Eisel-Lemire conversion (Daniel Lemire, "Number parsing at a
 * gigabyte per second", 2021; in the form Nigel Tao wrote for Wuffs and
 * Go): the float or double nearest to m x 10^e10, m != 0, from m times
 * the rounded-down 128-bit significand of 10^e10.  The product is exact
 * enough to round unless its bits below the result's lie where the
 * truncations could carry into them, or exactly halfway: then, and for a
 * result that is subnormal, infinite or out of the table, it returns 0
 * (not decided: the caller asks strtod/strtof).  Written here: no C
 * library of it is packaged in Debian. */
int qs_eisel_lemire(int float_precision, uint64_t m, int e10, int neg, double *out)
{
#ifndef __SIZEOF_INT128__
    (void)float_precision, (void)m, (void)e10, (void)neg, (void)out;
    return 0; /* no 64 x 64 -> 128-bit multiply: strtod decides */
#else
    if (m == 0 || e10 < QS_EL_QMIN || e10 > QS_EL_QMAX)
        return 0;
    const uint64_t *t = pow10_128[e10 - QS_EL_QMIN];
    int clz = __builtin_clzll(m);
    m <<= clz;
    /* bits below the result: 64 - 54 + 1 = 9 (or 38 for float) */
    const uint64_t low = float_precision ? 0x3FFFFFFFFFull : 0x1FFull;
    const int bias = float_precision ? 127 : 1023;
    uint64_t exp2 = (uint64_t)(((217706 * e10) >> 16) + 64 + bias) - (uint64_t)clz;
    uint64_t xh, xl;
    mul128(m, t[1], &xh, &xl);
    if ((xh & low) == low && xl + m < m) {
        /* the low word of 10^e10 could carry into those bits */
        uint64_t yh, yl;
        mul128(m, t[0], &yh, &yl);
        uint64_t mh = xh, ml = xl + yh;
        if (ml < xl)
            mh++;
        if ((mh & low) == low && ml + 1 == 0 && yl + m < m)
            return 0;
        xh = mh;
        xl = ml;
    }
    uint64_t msb = xh >> 63;
    int keep = float_precision ? 25 : 54; /* the result's bits and one more */
    uint64_t r = xh >> (msb + 64 - keep - 1);
    exp2 -= 1 ^ msb;
    if (xl == 0 && (xh & low) == 0 && (r & 3) == 1)
        return 0; /* exactly halfway, maybe: strtod decides */
    r += r & 1;
    r >>= 1;
    if (r >> (keep - 1)) {
        r >>= 1;
        exp2++;
    }
    if (float_precision) {
        if (exp2 - 1 >= 0xFF - 1) /* subnormal, or inf */
            return 0;
        uint32_t bits = (uint32_t)(exp2 << 23 | (r & 0x7FFFFF)) | (uint32_t)neg << 31;
        float f;
        memcpy(&f, &bits, sizeof f);
        *out = f;
        return 1;
    }
    if (exp2 - 1 >= 0x7FF - 1)
        return 0;
    uint64_t bits = exp2 << 52 | (r & 0xFFFFFFFFFFFFFull) | (uint64_t)neg << 63;
    memcpy(out, &bits, sizeof bits);
    return 1;
#endif
}

/* The fast path for tokens of QS_NUMBER_SHORT bytes or more, which
 * strtod/strtof are not asked about (format/letor.md, "Numbers"): it
 * decides which of them are accepted, so it stays as it was when that rule
 * was written.  Clinger's: a decimal whose digits fit the significand
 * exactly and whose power of ten is exact is correctly rounded by one IEEE
 * multiply or divide; anything else returns 0 (refused). */
static int parse_fast_long(int float_precision, const char *p, size_t n, double *out)
{
    const char *e = p + n;
    int neg = 0;
    if (p < e && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    uint64_t m = 0;
    int frac = 0, digits = 0, dot = 0;
    for (; p < e; p++) {
        if (*p >= '0' && *p <= '9') {
            if (m > (UINT64_MAX - 9) / 10)
                return 0;
            m = m * 10 + (uint64_t)(*p - '0');
            frac += dot;
            digits++;
        } else if (*p == '.' && !dot) {
            dot = 1;
        } else {
            break;
        }
    }
    if (digits == 0)
        return 0;
    int ex = 0;
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        int eneg = 0, ed = 0;
        if (p < e && (*p == '-' || *p == '+'))
            eneg = *p++ == '-';
        for (; p < e && *p >= '0' && *p <= '9'; p++, ed++)
            if (ex < 10000)
                ex = ex * 10 + (*p - '0');
        if (ed == 0)
            return 0;
        if (eneg)
            ex = -ex;
    }
    if (p != e)
        return 0;
    int e10 = ex - frac;
    if (m == 0) {
        *out = neg ? -0.0 : 0.0;
        return 1;
    }
    if (float_precision) {
        if (m > (1u << 24) || e10 < -10 || e10 > 10)
            return 0;
        float f = (float)m;
        f = e10 >= 0 ? f * qs_pow10f_exact[e10] : f / qs_pow10f_exact[-e10];
        *out = neg ? -(double)f : (double)f;
        return 1;
    }
    if (m > ((uint64_t)1 << 53) || e10 < -22 || e10 > 22)
        return 0;
    double d = (double)m;
    d = e10 >= 0 ? d * qs_pow10_exact[e10] : d / qs_pow10_exact[-e10];
    *out = neg ? -d : d;
    return 1;
}

int qs_parse_number(int float_precision, const char *tok, size_t len, double *out)
{
    char buf[QS_NUMBER_SHORT];
    if (len == 0)
        return -1;
    if (len >= sizeof buf) {
#if FLT_EVAL_METHOD == 0
        /* Only where float and double operations round to their own
         * precision (SSE, AArch64): x87 extended precision would round
         * twice.  Tokens of any length (format/letor.md: zero padding is
         * fine). */
        if (parse_fast_long(float_precision, tok, len, out))
            return 0;
#endif
        return -1;
    }
    /* Correctly rounded, so the value strtod/strtof give; a token it does
     * not decide, or that goes on after the number, goes to them. */
    const char *stop;
    if (qs_dec_fast(float_precision, tok, tok + len, &stop, out) && stop == tok + len)
        return 0;
    memcpy(buf, tok, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    if (float_precision) {
        float f = strtof(buf, &end);
        *out = f;
    } else {
        *out = strtod(buf, &end);
    }
    /* ERANGE is fine: overflow gives inf and underflow a correctly rounded
     * subnormal or zero, as the training libraries read them. */
    return (end == buf + len) ? 0 : -1;
}

int qs_parse_count(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!s || !*s)
        return -1;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        const unsigned d = (unsigned char)(*p - '0');
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int qs_parse_bytes(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!s)
        return -1;
    size_t n = strlen(s);
    unsigned shift = 0;
    if (n > 0) {
        switch (s[n - 1]) {
        case 'K': case 'k': shift = 10; break;
        case 'M': case 'm': shift = 20; break;
        case 'G': case 'g': shift = 30; break;
        default: break;
        }
    }
    if (shift == 0)
        return qs_parse_count(s, lo, hi, out);
    /* the digits before the suffix (more than 40 are beyond any count) */
    char digits[48];
    uint64_t v;
    if (n - 1 >= sizeof digits)
        return -1;
    memcpy(digits, s, n - 1);
    digits[n - 1] = '\0';
    if (qs_parse_count(digits, 0, UINT64_MAX >> shift, &v) != 0)
        return -1;
    v <<= shift;
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}
