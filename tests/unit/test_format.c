/* qs_format_score equals snprintf("%.*g") byte for byte: random bit
 * patterns; random values in score ranges ([-100, 100], log-uniform from
 * 1e-25 to 1e20), as doubles and as float32 values; a strided sample of
 * every float32 bit pattern; exact halfway cases (values whose exact
 * decimal expansion has a 5 and nothing more right after the P-th digit,
 * fractions and integers, each checked to be one before it is used);
 * powers of ten and their neighbours (where %g switches notation and where
 * rounding carries into a new digit); zeros, infinities, NaNs, subnormals,
 * the extremes; every precision 1 .. 17 on a sample.
 *
 * QS_FORMAT_EXHAUSTIVE=1 also checks all 2^32 float32 bit patterns at 9
 * digits (OpenMP threads where the build has them; minutes).
 *
 * Prints "N checks, 0 failures" and exits 0, or the first failures and 1. */
#include "qs.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if QS_HAVE_OPENMP
#include <omp.h>
#endif

static unsigned long long checks, fails;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double unit(void) /* [0, 1) */
{
    return (double)(rnd() >> 11) * 0x1p-53;
}

/* 0 when equal; else prints (the first 20) and counts. */
static int check(double v, int digits)
{
    char want[64], got[QS_FORMAT_SCORE_MAX + 8];
    memset(got, 'X', sizeof got);
    int wn = snprintf(want, sizeof want, "%.*g", digits, v);
    size_t gn = qs_format_score(got, v, digits);
    checks++;
    /* and nothing written past QS_FORMAT_SCORE_MAX bytes */
    if ((size_t)wn == gn && memcmp(want, got, gn + 1) == 0 &&
        memcmp(got + QS_FORMAT_SCORE_MAX, "XXXXXXXX", 8) == 0)
        return 0;
    if (fails++ < 20) {
        uint64_t b;
        memcpy(&b, &v, sizeof b);
        got[sizeof got - 1] = 0;
        printf("%%.%dg of %a (bits %016llx): snprintf '%s' (%d), qs_format_score '%.*s' (%zu)\n",
               digits, v, (unsigned long long)b, want, wn, (int)(gn < 40 ? gn : 40), got, gn);
    }
    return 1;
}

static void check_both_signs(double v, int digits)
{
    check(v, digits);
    check(-v, digits);
}

static double from_bits(uint64_t b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}
static float f_from_bits(uint32_t b)
{
    float v;
    memcpy(&v, &b, sizeof v);
    return v;
}

static int ndigits_u128(unsigned __int128 x)
{
    int n = 1;
    while (x >= 10) {
        x /= 10;
        n++;
    }
    return n;
}

/* Exact ties at P digits.  j odd, t >= 1: j * 2^-t = j * 5^t * 10^-t,
 * whose significant digits are those of j * 5^t, the last a 5; with P + 1
 * of them, the value is exactly halfway between two P-digit numbers.
 * Scaled by 10^k where that stays exact (only powers of two are), so the
 * fractions cover 2^-t; integers a * 2^u whose decimal ends in 5 followed
 * by zeros are checked digit by digit.  Returns the ties checked. */
static unsigned long long halfway(int P, int mant_bits, int count)
{
    unsigned long long ties = 0;
    const uint64_t jmax = 1ull << mant_bits;
    for (int t = 1; t <= 50; t++) {
        unsigned __int128 p5 = 1;
        for (int i = 0; i < t; i++)
            p5 *= 5;
        unsigned __int128 lo = 1, hi = 1; /* j * 5^t in [10^P, 10^(P+1)) */
        for (int i = 0; i < P; i++)
            lo *= 10;
        hi = lo * 10;
        unsigned __int128 jlo = (lo + p5 - 1) / p5, jhi = (hi - 1) / p5;
        if (jlo >= jmax || jhi < 1)
            continue;
        if (jhi >= jmax)
            jhi = jmax - 1;
        for (int i = 0; i < count; i++) {
            uint64_t span = (uint64_t)(jhi - jlo) + 1;
            uint64_t j = (uint64_t)jlo + rnd() % span;
            j |= 1;
            if (j > jhi)
                j -= 2;
            if (j < jlo || j > jhi)
                continue;
            if (ndigits_u128((unsigned __int128)j * p5) != P + 1)
                continue;
            double v = ldexp((double)j, -t);
            if (mant_bits == 24 && (double)(float)v != v)
                continue;
            check_both_signs(v, P);
            ties++;
        }
    }
    /* Integers: a odd, v = a * 2^u < 2^63; a tie when the digits after the
     * first P are 5 then zeros. */
    for (int i = 0; i < count * 200; i++) {
        int u = 1 + (int)(rnd() % 40);
        uint64_t a = (rnd() >> (64 - mant_bits)) | 1;
        if (a >> (63 - u))
            continue;
        uint64_t v = a << u;
        /* test the digits */
        int nd = ndigits_u128(v);
        if (nd <= P)
            continue;
        uint64_t p10 = 1;
        for (int k = 0; k < nd - P; k++)
            p10 *= 10;
        if (v % p10 != p10 / 2)
            continue;
        check_both_signs((double)v, P);
        ties++;
    }
    /* Integers made to be ties: (2D + 1) * 5^s * 2^(s-1) = (10D + 5) * 10^(s-1). */
    for (int s = 1; s <= 25; s++) {
        uint64_t p5 = 1;
        int over = 0;
        for (int k = 0; k < s; k++) {
            if (p5 > (jmax >> 2) / 5)
                over = 1;
            p5 *= 5;
        }
        if (over)
            break;
        for (int i = 0; i < count; i++) {
            uint64_t a = (1 + rnd() % (jmax / p5)) | 1; /* a * 5^s < 2^mant_bits */
            if (a * p5 >= jmax)
                continue;
            unsigned __int128 v = (unsigned __int128)(a * p5) << (s - 1);
            if (v >> 63)
                continue;
            int nd = ndigits_u128(v);
            uint64_t p10 = 1;
            for (int k = 0; k < nd - P && k < 19; k++)
                p10 *= 10;
            if (nd <= P || nd - P > 19 || (uint64_t)v % p10 != p10 / 2)
                continue;
            check_both_signs((double)(uint64_t)v, P);
            ties++;
        }
    }
    return ties;
}

static void exhaustive_f32(void)
{
    unsigned long long xf = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : xf)
    for (long long hi = 0; hi < 65536; hi++) {
        char want[64], got[QS_FORMAT_SCORE_MAX];
        for (uint32_t lo = 0; lo < 65536; lo++) {
            double v = (double)f_from_bits((uint32_t)hi << 16 | lo);
            int wn = snprintf(want, sizeof want, "%.9g", v);
            size_t gn = qs_format_score(got, v, 9);
            if ((size_t)wn != gn || memcmp(want, got, gn + 1) != 0) {
                if (xf++ < 5) {
#pragma omp critical
                    printf("exhaustive: %.9g (%a): got '%s'\n", v, v, got);
                }
            }
        }
    }
    checks += 1ull << 32;
    fails += xf;
    printf("all 2^32 float32 patterns at 9 digits: %llu failures\n", xf);
}

int main(void)
{
    static const int both[2] = {9, 17};
    /* Specials and extremes. */
    const double special[] = {0.0, INFINITY, NAN, DBL_MAX, DBL_MIN, DBL_TRUE_MIN,
                              FLT_MAX, FLT_MIN, FLT_TRUE_MIN, 0x1p-1022 - 0x1p-1074,
                              0x1p-75, 0x1p-75 - 0x1p-128, 0x1p63, 0x1p63 - 1024, 0x1p62,
                              0x1p53, 0x1p53 + 2, 0x1p52, 0x1p52 + 1, 0x1p53 - 1, 1.0, 0.5,
                              0.1, 0.2, 0.3, 1.0 / 3, 2.0 / 3, 123456789.0, 999999999.5,
                              99999999.5, 9999999.95, 0.00001, 0.0001, 0.001,
                              1e16, 1e17, 1e18, 1e19, 9.2e18, 1e-6, 1e-7, 1e-14, 1e-15};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        for (int P = 1; P <= 17; P++)
            check_both_signs(special[i], P);
    check(-NAN, 9);
    check(-NAN, 17);
    check(from_bits(0x7ff0000000000001ull), 17);
    check(from_bits(0xfff8000000000001ull), 9);
    /* Precisions outside 1 .. 17 go to printf (and stay within the buffer). */
    check(1.5, 0);
    check(1.5, -1);
    check(M_PI, 20);
    check(1e-300, 25);

    /* Powers of ten and their neighbours, as doubles and as floats. */
    for (int k = -325; k <= 308; k++) {
        char t[16];
        snprintf(t, sizeof t, "1e%d", k);
        double p = strtod(t, NULL);
        float pf = strtof(t, NULL);
        for (int b = 0; b < 2; b++) {
            double up = p, down = p;
            float fup = pf, fdown = pf;
            check_both_signs(p, both[b]);
            check_both_signs((double)pf, both[b]);
            for (int s = 0; s < 6; s++) {
                up = nextafter(up, INFINITY);
                down = nextafter(down, 0);
                fup = nextafterf(fup, INFINITY);
                fdown = nextafterf(fdown, 0);
                check_both_signs(up, both[b]);
                check_both_signs(down, both[b]);
                check_both_signs((double)fup, both[b]);
                check_both_signs((double)fdown, both[b]);
            }
        }
        /* 9.99..95 x 10^k at every precision: rounding carries into the
         * next power (and may switch notation). */
        for (int P = 1; P <= 17; P++) {
            char n9[48];
            snprintf(n9, sizeof n9, "%.*s5e%d", P, "99999999999999999", k - 1);
            double v = strtod(n9, NULL);
            check_both_signs(v, P);
            check_both_signs(nextafter(v, 0), P);
            check_both_signs(nextafter(v, INFINITY), P);
            check_both_signs((double)strtof(n9, NULL), P);
        }
    }

    /* Exact ties. */
    unsigned long long ties = 0;
    ties += halfway(17, 53, 400);
    ties += halfway(9, 24, 400);
    ties += halfway(9, 53, 200);
    for (int P = 1; P <= 16; P++)
        ties += halfway(P, 53, 20);
    if (ties < 20000) {
        printf("only %llu halfway cases were made\n", ties);
        fails++;
    }

    /* Random bit patterns (every magnitude, subnormals, NaN payloads). */
    for (int i = 0; i < 200000; i++) {
        double v = from_bits(rnd());
        check(v, 17);
        check(v, 9);
        check((double)(float)v, 9);
    }
    /* Subnormals. */
    for (int i = 0; i < 20000; i++) {
        double v = from_bits(rnd() >> 12);
        check(v, 17);
        check((double)f_from_bits((uint32_t)(rnd() >> 41)), 9);
    }
    /* Score-like values: [-100, 100]. */
    for (int i = 0; i < 700000; i++) {
        double v = unit() * 200 - 100;
        check(v, 17);
        check(v, 9);
        check((double)(float)v, 9);
    }
    /* Log-uniform magnitudes from 1e-25 to 1e20, both signs. */
    for (int i = 0; i < 500000; i++) {
        double v = pow(10, unit() * 45 - 25);
        if (rnd() & 1)
            v = -v;
        check(v, 17);
        check(v, 9);
        check((double)(float)v, 9);
    }
    /* Near integers and short decimals: many trailing zeros. */
    for (int i = 0; i < 200000; i++) {
        double v = (double)(int64_t)(rnd() % 2000001 - 1000000) / (double)(1 + rnd() % 1000);
        check(v, 17);
        check(v, 9);
        check((double)(float)v, 9);
        v = (double)(rnd() >> (rnd() % 64));
        check(v, 17);
        check(v, 9);
    }
    /* Every precision on a sample. */
    for (int i = 0; i < 100000; i++) {
        double v = pow(10, unit() * 30 - 15) * (rnd() & 1 ? -1 : 1);
        int P = 1 + (int)(rnd() % 17);
        check(v, P);
        check((double)(float)v, P);
    }
    /* float32 bit patterns, a strided sample (a prime stride). */
    for (uint64_t b = rnd() % 4099; b < (1ull << 32); b += 4099)
        check((double)f_from_bits((uint32_t)b), 9);

    const char *ex = getenv("QS_FORMAT_EXHAUSTIVE");
    if (ex && strcmp(ex, "1") == 0)
        exhaustive_f32();

    printf("%llu checks (%llu halfway cases), %llu failures\n", checks, ties, fails);
    return fails != 0;
}
