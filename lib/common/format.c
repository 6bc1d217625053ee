/* format.c: qs_format_score, a score printed as printf's "%.*g" would print
 * it (glibc, default rounding mode), without printf on the common path.
 *
 * v = m * 2^e exactly (m the 53-bit significand).  With X the decimal
 * exponent of v and P the significant digits, the P digits are
 * round(v * 10^(P-1-X)), an integer below 10^P: with q = P-1-X it is
 * m * 10^q * 2^e, computed as a quotient num / den of 128-bit integers
 * (num = m * 10^max(q,0) * 2^max(e,0), den = 10^max(-q,0) * 2^max(-e,0))
 * whose remainder decides the rounding exactly: above half up, below half
 * down, exactly half to the even digit (what glibc does in the default
 * rounding mode).  When den is a power of two (the usual case) that is a
 * shift and a mask.  The fast path covers 2^-75 <= |v| < 2^63 where
 * q <= 22 (so num < 2^127), that is every value of at least 1e-6 and below
 * 9.2e18 for 17 digits, and of at least 1e-14 for 9; zeros are written
 * here too.  Everything else (subnormals, tiny and huge values, inf, nan,
 * digits outside 1 .. 17, a compiler without unsigned __int128) goes to
 * snprintf.
 *
 * Then %g's layout: exponent form when X < -4 or X >= P (X after rounding,
 * which may carry into a new digit), fixed form otherwise; trailing zeros
 * and a trailing '.' removed; the exponent with at least two digits. */
#include "common/common.h"

#include <stdio.h>
#include <string.h>

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static size_t format_slow(char *out, double v, int digits)
{
    int n = snprintf(out, QS_FORMAT_SCORE_MAX, "%.*g", digits, v);
    if (n < 0)
        n = 0;
    return (size_t)n < QS_FORMAT_SCORE_MAX ? (size_t)n : QS_FORMAT_SCORE_MAX - 1;
}

#if defined(__SIZEOF_INT128__)

typedef unsigned __int128 u128;

static const uint64_t pow10_u64[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
    100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
    10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
    100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull,
};

static inline u128 pow10_u128(int k) /* 0 <= k <= 22 */
{
    if (k < 20)
        return pow10_u64[k];
    return (u128)pow10_u64[k - 19] * pow10_u64[19];
}

/* Write the 8 decimal digits of x < 10^8 at p (32-bit arithmetic). */
static inline void put8(char *p, uint32_t x)
{
    const uint32_t a = x / 10000, b = x % 10000;
    memcpy(p, digit_pairs + 2 * (a / 100), 2);
    memcpy(p + 2, digit_pairs + 2 * (a % 100), 2);
    memcpy(p + 4, digit_pairs + 2 * (b / 100), 2);
    memcpy(p + 6, digit_pairs + 2 * (b % 100), 2);
}

/* Write the P decimal digits of d (d < 10^P, leading zeros kept) at p:
 * 9 and 17 digits (the scores' precisions) in 8-digit pieces. */
static inline void put_digits(char *p, uint64_t d, int P)
{
    if (P == 9) {
        p[0] = (char)('0' + d / 100000000);
        put8(p + 1, (uint32_t)(d % 100000000));
        return;
    }
    if (P == 17) {
        const uint64_t hi = d / 100000000; /* < 10^9 */
        p[0] = (char)('0' + hi / 100000000);
        put8(p + 1, (uint32_t)(hi % 100000000));
        put8(p + 9, (uint32_t)(d % 100000000));
        return;
    }
    int i = P;
    while (i >= 2) {
        const uint64_t r = d % 100;
        d /= 100;
        i -= 2;
        memcpy(p + i, digit_pairs + 2 * r, 2);
    }
    if (i)
        p[0] = (char)('0' + d);
}

size_t qs_format_score(char *out, double v, int digits)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    const int neg = (int)(bits >> 63);
    const int bexp = (int)(bits >> 52) & 0x7ff;
    const uint64_t frac = bits & ((1ull << 52) - 1);
    const int P = digits;
    if (P < 1 || P > 17)
        return format_slow(out, v, digits);
    char *o = out;
    if (bexp == 0 && frac == 0) { /* "0", "-0" */
        if (neg)
            *o++ = '-';
        *o++ = '0';
        *o = 0;
        return (size_t)(o - out);
    }
    /* 2^-75 <= |v| < 2^63 */
    if (bexp < 1023 - 75 || bexp >= 1023 + 63)
        return format_slow(out, v, digits);
    const uint64_t m = frac | (1ull << 52);
    const int e = bexp - 1075;
    const int b = bexp - 1023; /* floor(log2 |v|) */
    /* floor(b * log10(2)): X is this or one more */
    int X = (b * 78913) >> 18;
    const int q = P - 1 - X;
    if (q > 22)
        return format_slow(out, v, digits);
    /* D = floor(|v| * 10^q), below 10^(P+1); the rest as a comparison with
     * half of den: cmp < 0 below half, 0 half, > 0 above. */
    uint64_t D;
    int cmp;
    int rest_nonzero;
    if (e < 0 && q >= 0) {
        const int s = -e;
        const u128 num = (u128)m * pow10_u128(q);
        /* s <= 75 + 52 = 127 */
        D = (uint64_t)(num >> s);
        /* the bits below the point, at the top: half is 2^127 */
        const u128 r = num << (128 - s);
        const uint64_t rh = (uint64_t)(r >> 64), rl = (uint64_t)r;
        const uint64_t H = 1ull << 63;
        cmp = rh > H || (rh == H && rl) ? 1 : rh == H ? 0 : -1;
        rest_nonzero = r != 0;
    } else if (e < 0) { /* q < 0: |v| < 2^53, so -q <= 15 and den < 2^103 */
        const u128 den = (u128)pow10_u64[-q] << -e;
        D = (uint64_t)(m / den);
        const u128 r = m - (u128)D * den;
        const u128 other = den - r;
        cmp = r > other ? 1 : r == other ? 0 : -1;
        rest_nonzero = r != 0;
    } else { /* e >= 0: |v| < 2^63 is an integer, and q <= 1 */
        const uint64_t num = m << e;
        if (q >= 0) {
            D = num * pow10_u64[q];
            cmp = -1;
            rest_nonzero = 0;
        } else {
            const uint64_t den = pow10_u64[-q];
            D = num / den;
            const uint64_t r = num - D * den;
            const uint64_t other = den - r;
            cmp = r > other ? 1 : r == other ? 0 : -1;
            rest_nonzero = r != 0;
        }
    }
    if (D >= pow10_u64[P]) { /* X was one more: drop a digit */
        const uint64_t d0 = D % 10;
        D /= 10;
        X++;
        cmp = d0 > 5 ? 1 : d0 < 5 ? -1 : rest_nonzero ? 1 : 0;
    }
    if (cmp > 0 || (cmp == 0 && (D & 1))) {
        D++;
        if (D == pow10_u64[P]) {
            D = pow10_u64[P - 1];
            X++;
        }
    }
    char d[40] = {0}; /* copied in fixed sizes below: up to d + 17 + 16 */
    put_digits(d, D, P);
    int n = P; /* significant digits without trailing zeros */
    while (n > 1 && d[n - 1] == '0')
        n--;
    if (neg)
        *o++ = '-';
    /* Copies of fixed size where they stay within QS_FORMAT_SCORE_MAX
     * bytes of out (what follows the text there is then overwritten). */
    if (X >= -4 && X < P) {
        if (X >= 0) {
            memcpy(o, d, 17); /* zeros of d fill the integer part */
            o += X + 1;
            if (n > X + 1) {
                *o++ = '.';
                if (o - out + 16 <= QS_FORMAT_SCORE_MAX - 1)
                    memcpy(o, d + X + 1, 16);
                else
                    memcpy(o, d + X + 1, (size_t)(n - X - 1));
                o += n - X - 1;
            }
        } else {
            memcpy(o, "0.000000", 8); /* "0." and -X-1 zeros */
            o += 1 - X;
            memcpy(o, d, 17);
            o += n;
        }
    } else {
        *o++ = d[0];
        if (n > 1) {
            *o++ = '.';
            memcpy(o, d + 1, 16);
            o += n - 1;
        }
        *o++ = 'e';
        *o++ = X < 0 ? '-' : '+';
        const int ax = X < 0 ? -X : X; /* < 100 here */
        memcpy(o, digit_pairs + 2 * ax, 2);
        o += 2;
    }
    *o = 0;
    return (size_t)(o - out);
}

#else /* no 128-bit integers: printf */

size_t qs_format_score(char *out, double v, int digits)
{
    return format_slow(out, v, digits);
}

#endif
