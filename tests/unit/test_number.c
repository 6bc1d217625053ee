/* test_number.c: the number parser against strtod and strtof, bit for bit.
 *
 *   test_number [COUNT [SEED [SECONDS]]]   (or QS_NUMBER_TEST_COUNT in the environment)
 *
 * SECONDS bounds a long run by time (it stops after that many seconds and
 * reports the tokens it checked); a run of more than 10,000,000 tokens
 * reports its progress on standard error every 10,000,000.
 *
 * Every token (fixed adversarial ones, then COUNT generated ones, 2,000,000
 * by default) is read four ways and compared with the C library's reading
 * of the whole token (strtod for double, strtof for float32, the format's
 * definition: format/letor.md, "Numbers"), for acceptance and for the bits
 * of the value (the sign of zero, NaN only as NaN):
 *
 *  1. qs_parse_number, both precisions;
 *  2. qs_dec_fast (common/number.h), the inline fast path: when it decides
 *     a prefix, its value is strtod/strtof of that prefix, and the prefix
 *     is the longest decimal the grammar allows;
 *  3. qs_letor_parse (one token in 8), as `0 1:TOKEN ...` with the token
 *     first (the SIMD window read in place), then last on the line (read
 *     from the padded copy of the line's end), for a float32 and a double
 *     model: feature 1 holds the reference value, or the line fails with
 *     the format's message for a bad value.  Tokens the SIMD reader
 *     declines (long, with an exponent, a float midpoint) take the scalar
 *     path in both places.
 *
 * Tokens: LETOR-like short decimals, 15-25 digit mantissas, exact
 * halfway points between floats and between doubles (printed in full, and
 * cut to 17-21 digits, and nudged by one in the last digit), extreme
 * exponents, subnormals, overflow and underflow, signed zeros, leading
 * zeros, and malformed or odd syntax (".5", "5.", "1e", "1e+", hex, inf,
 * nan, stray bytes).  Prints "N checks, 0 failures" on success. */
#include "common/number.h"
#include "layout/layout.h"
#include "score/score.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long checks, failures;

#define FAIL(...)                                                              \
    do {                                                                       \
        if (failures++ < 20) {                                                 \
            fprintf(stderr, "FAIL: ");                                         \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
        }                                                                      \
    } while (0)

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}
static unsigned below(unsigned n) { return (unsigned)(rnd() % n); }

static int same(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof a) == 0;
}

/* strtod / strtof of the whole token (the format's definition). */
static int reference(int fp, const char *tok, size_t n, double *out)
{
    char buf[QS_NUMBER_SHORT];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, tok, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    *out = fp ? (double)strtof(buf, &end) : strtod(buf, &end);
    return end == buf + n ? 0 : -1;
}

/* The longest prefix of the decimal grammar of qs_dec_fast, or 0. */
static size_t grammar_prefix(const char *p, size_t n)
{
    size_t i = 0, d = 0;
    if (i < n && (p[i] == '-' || p[i] == '+'))
        i++;
    while (i < n && p[i] >= '0' && p[i] <= '9')
        i++, d++;
    if (i < n && p[i] == '.') {
        i++;
        while (i < n && p[i] >= '0' && p[i] <= '9')
            i++, d++;
    }
    if (d == 0)
        return 0;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        size_t j = i + 1;
        if (j < n && (p[j] == '-' || p[j] == '+'))
            j++;
        size_t e0 = j;
        while (j < n && p[j] >= '0' && p[j] <= '9')
            j++;
        if (j > e0)
            i = j;
    }
    return i;
}

/* ------------------------------------------------------------ models */

static qs_scorer *model(int float_precision)
{
    qs_model *m = qs_model_new(float_precision ? QS_SRC_XGBOOST : QS_SRC_LIGHTGBM, NULL);
    m->num_features = 4;
    m->cmp = float_precision ? QS_CMP_LT : QS_CMP_LE;
    m->float_precision = m->float_accumulate = (uint8_t)float_precision;
    qs_model_add_tree(m, 0, 1.0, NULL);
    qs_model_add_nodes(m, 3, NULL);
    qs_node *n = qs_model_cur_node(m, 0);
    n->kind = QS_NODE_NUM;
    n->feature = 1;
    n->value = 0.5;
    n->left = 1;
    n->right = 2;
    qs_model_cur_node(m, 1)->value = 1.0;
    qs_model_cur_node(m, 2)->value = 2.0;
    unsigned char *img;
    size_t len;
    qs_error err;
    if (qs_compile(m, NULL, &img, &len, &err) != 0) {
        fprintf(stderr, "compile: %s\n", err.msg);
        exit(2);
    }
    qs_model_free(m);
    qs_scorer *s = qs_scorer_load(img, len, &err);
    free(img);
    if (!s) {
        fprintf(stderr, "load: %s\n", err.msg);
        exit(2);
    }
    return s;
}

static qs_scorer *S[2];
static qs_workspace *W[2];

/* ------------------------------------------------------------ checks */

static void check_letor(int fp, const char *tok, size_t n, int rr, double want)
{
    static const char *pad = " 2:0.25 3:1 2:7.5 3:-0.125 2:0";
    char line[512], expect[256];
    for (int last = 0; last < 2; last++) {
        int len = last ? snprintf(line, sizeof line, "1 qid:3%s 1:%.*s", pad, (int)n, tok)
                       : snprintf(line, sizeof line, "1 1:%.*s%s", (int)n, tok, pad);
        qs_letor_line meta;
        int is_doc;
        qs_error err;
        qs_error_clear(&err);
        int r = qs_letor_parse(S[fp], W[fp], QS_ABSENT_ZERO, line, (size_t)len, &meta, &is_doc, &err);
        checks++;
        if (rr == 0) {
            double got = W[fp]->slot[W[fp]->cur].x[1];
            if (r != 0 || !is_doc || !same(got, want) || meta.max_id != 3)
                FAIL("qs_letor_parse('%s', %s): %s, x[1] = %a, want %a", line,
                     fp ? "float" : "double", r ? err.msg : "ok", got, want);
        } else {
            char show[64];
            qs_quote(show, sizeof show, line + (last ? len - (int)n - 2 : 2), n + 2);
            snprintf(expect, sizeof expect, "bad feature value in '%s' (expected a number)", show);
            if (r == 0 || strcmp(err.msg, expect) != 0)
                FAIL("qs_letor_parse('%s', %s) should fail with \"%s\", got %s", line,
                     fp ? "float" : "double", expect, r ? err.msg : "success");
        }
    }
}

static void check_token(const char *tok, size_t n, int letor)
{
    for (int fp = 0; fp < 2; fp++) {
        double want = 0, got = 0;
        int rr = reference(fp, tok, n, &want);
        int rg = qs_parse_number(fp, tok, n, &got);
        checks++;
        if (n < QS_NUMBER_SHORT && (rr != rg || (rr == 0 && !same(got, want))))
            FAIL("qs_parse_number('%.*s', %s) = %s %a, strto%s: %s %a", (int)n, tok,
                 fp ? "float" : "double", rg ? "refused" : "ok", got, fp ? "f" : "d",
                 rr ? "refused" : "ok", want);
        /* the inline fast path on its own */
        const char *stop = NULL;
        double v;
        if (qs_dec_fast(fp, tok, tok + n, &stop, &v)) {
            size_t pre = grammar_prefix(tok, n);
            double pw;
            checks++;
            if ((size_t)(stop - tok) != pre || reference(fp, tok, pre, &pw) != 0 || !same(v, pw))
                FAIL("qs_dec_fast('%.*s', %s) = %a after %d bytes", (int)n, tok,
                     fp ? "float" : "double", v, (int)(stop - tok));
        }
        if (letor && n < 100 && !memchr(tok, ' ', n) && !memchr(tok, '\t', n) &&
            !memchr(tok, '#', n) && !memchr(tok, '\r', n) && !memchr(tok, '\n', n) &&
            !memchr(tok, '\0', n))
            check_letor(fp, tok, n, rr, want);
    }
}

static void check_str(const char *tok, int letor) { check_token(tok, strlen(tok), letor); }

/* Ids of every length around the fast path's limits (8 digits), and the
 * separators and line ends around a token, on both paths. */
static void check_ids_and_blanks(void)
{
    static const char *ids[] = { "0", "1", "00000001", "3", "0003", "4", "12345678", "012345678",
                                 "123456789", "4294967295", "4294967296", "9999999999",
                                 "00000000001", "99999999999999999999" };
    static const char *pad = " 2:0.25 3:1 2:7.5 3:-0.125 2:0";
    char line[256], expect[128], show[64];
    for (int fp = 0; fp < 2; fp++)
        for (size_t i = 0; i < sizeof ids / sizeof *ids; i++)
            for (int last = 0; last < 2; last++) {
                unsigned long long id = strtoull(ids[i], NULL, 10);
                int len = last ? snprintf(line, sizeof line, "1%s %s:-0.5", pad, ids[i])
                               : snprintf(line, sizeof line, "1 %s:-0.5%s", ids[i], pad);
                qs_letor_line meta;
                int is_doc;
                qs_error err;
                qs_error_clear(&err);
                int r = qs_letor_parse(S[fp], W[fp], QS_ABSENT_ZERO, line, (size_t)len, &meta,
                                       &is_doc, &err);
                checks++;
                if (id > UINT32_MAX || strlen(ids[i]) > 18) {
                    snprintf(expect, sizeof expect, "feature id in '%s' is out of range",
                             qs_quote(show, sizeof show, line + (last ? len - 5 - (int)strlen(ids[i]) : 2),
                                      strlen(ids[i]) + 5));
                    if (r == 0 || strcmp(err.msg, expect) != 0)
                        FAIL("'%s': want \"%s\", got %s", line, expect, r ? err.msg : "success");
                    continue;
                }
                const double *x = W[fp]->slot[W[fp]->cur].x;
                long long want_max = (long long)id > 3 ? (long long)id : 3;
                if (r != 0 || meta.max_id != want_max || (id < 4 && id != 2 && id != 3 && x[id] != -0.5))
                    FAIL("'%s': %s, max_id %lld", line, r ? err.msg : "ok", meta.max_id);
            }
    /* blanks, tabs, comments, CR at the end */
    static const struct {
        const char *line;
        double x1, x2, x3;
    } cases[] = {
        { "1 1:0.5\t2:0.25  3:-1.5 # c 1:9", 0.5, 0.25, -1.5 },
        { "1 1:0.5#c", 0.5, 0, 0 },
        { "1\t1:0.5\t\t3:+2.\t", 0.5, 0, 2 },
        { "1 3:4 1:0.5 2:0.25 1:0.75 2:.5 3:1e1 1:2.0\r", 2, 0.5, 10 },
        { "1 qid:7 1:00000000.10000000 2:99999999.99999999 3:12345678.1234567 # x", 0.1,
          99999999.99999999, 12345678.1234567 },
        { "  0  1:-0.000  2:-0  3:0.  ", -0.0, -0.0, 0 },
    };
    for (int fp = 0; fp < 2; fp++)
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            qs_letor_line meta;
            int is_doc;
            qs_error err;
            int r = qs_letor_parse(S[fp], W[fp], QS_ABSENT_ZERO, cases[i].line, strlen(cases[i].line),
                                   &meta, &is_doc, &err);
            const double *x = W[fp]->slot[W[fp]->cur].x;
            double w1 = fp ? (float)cases[i].x1 : cases[i].x1, w2 = fp ? (float)cases[i].x2 : cases[i].x2,
                   w3 = fp ? (float)cases[i].x3 : cases[i].x3;
            checks++;
            if (r != 0 || !is_doc || !same(x[1], w1) || !same(x[2], w2) || !same(x[3], w3))
                FAIL("'%s' (%s): %s, x = %a %a %a", cases[i].line, fp ? "float" : "double",
                     r ? err.msg : "ok", x[1], x[2], x[3]);
        }
}

/* ------------------------------------------------------------ generators */

static int gen_digits(char *b, int n, int first_nonzero)
{
    for (int i = 0; i < n; i++)
        b[i] = (char)('0' + (i == 0 && first_nonzero ? 1 + below(9) : below(10)));
    return n;
}

/* LETOR-like: [sign] 0-10 digits [. 0-10 digits] [exponent] */
static int gen_decimal(char *b, int maxint, int maxfrac)
{
    int j = 0;
    unsigned r = below(16);
    if (r == 0)
        b[j++] = '-';
    else if (r == 1)
        b[j++] = '+';
    int ni = (int)below((unsigned)maxint + 1), nf = (int)below((unsigned)maxfrac + 1);
    j += gen_digits(b + j, ni, 0);
    if (below(4) != 0 || ni == 0) {
        b[j++] = '.';
        j += gen_digits(b + j, nf, 0);
    }
    if (below(5) == 0) {
        b[j++] = below(2) ? 'e' : 'E';
        unsigned s = below(3);
        if (s == 1)
            b[j++] = '-';
        else if (s == 2)
            b[j++] = '+';
        j += snprintf(b + j, 16, "%u", below(4) ? below(40) : below(400));
    }
    b[j] = '\0';
    return j;
}

/* A float32 or double halfway point printed exactly, or cut or nudged. */
static int gen_halfway(char *b)
{
    long double mid;
    if (below(2)) {
        uint32_t u;
        do
            u = (uint32_t)rnd() & 0x7FFFFFFEu;
        while ((u >> 23) == 0xFF);
        float lo, hi;
        uint32_t u2 = u + 1;
        memcpy(&lo, &u, 4);
        memcpy(&hi, &u2, 4);
        mid = ((long double)lo + (long double)hi) / 2;
    } else {
        uint64_t u;
        do
            u = rnd() & 0x7FFFFFFFFFFFFFFEull;
        while ((u >> 52) == 0x7FF);
        /* mostly moderate exponents, where the exact form is short */
        if (below(2))
            u = (u & 0x800FFFFFFFFFFFFFull) | ((uint64_t)(1023 - 30 + below(90)) << 52);
        double lo, hi;
        uint64_t u2 = u + 1;
        memcpy(&lo, &u, 8);
        memcpy(&hi, &u2, 8);
        mid = ((long double)lo + (long double)hi) / 2;
    }
    int digits = below(3) ? 17 + (int)below(5) : 40 + (int)below(30);
    int n = snprintf(b, 120, "%.*Le", digits - 1, mid);
    if (n >= 120)
        n = snprintf(b, 120, "%.20Le", mid);
    if (below(3) == 0) { /* nudge the last mantissa digit */
        char *e = strchr(b, 'e');
        if (e && e > b && e[-1] >= '0' && e[-1] <= '9')
            e[-1] = e[-1] == '9' ? '8' : (char)(e[-1] + 1);
    }
    return n;
}

static int gen_long_mantissa(char *b)
{
    int j = 0;
    if (below(4) == 0)
        b[j++] = '-';
    int nd = 15 + (int)below(11), dot = (int)below((unsigned)nd + 1);
    for (int i = 0; i < nd; i++) {
        if (i == dot)
            b[j++] = '.';
        b[j++] = (char)('0' + below(10));
    }
    if (below(2))
        j += snprintf(b + j, 16, "e%d", (int)below(80) - 40);
    b[j] = '\0';
    return j;
}

static int gen_extreme(char *b)
{
    static const char *mant[] = { "1", "2.2250738585072014", "4.9406564584124654", "2.47",
                                  "2.4703282292062327", "2.4703282292062328", "1.7976931348623157",
                                  "1.7976931348623159", "3.4028235", "3.40282357", "1.4012984",
                                  "7.006492", "7.0064923216240862", "1.1754944", "9.999999" };
    int e = below(2) ? 280 + (int)below(60) : 30 + (int)below(20);
    if (below(2))
        e = -e - (below(2) ? 0 : 15);
    return snprintf(b, 120, "%s%se%d", below(4) ? "" : "-", mant[below(15)], e);
}

/* Bytes from a small alphabet: the grammar's pieces and their neighbours. */
static int gen_junk(char *b)
{
    static const char alpha[] = "0123456789012345.eE+-xXpPaAbfinINFtyu:/\v\f";
    int n = 1 + (int)below(12);
    for (int i = 0; i < n; i++)
        b[i] = alpha[below(sizeof alpha - 1)];
    b[n] = '\0';
    return n;
}

/* A valid decimal with one edit: a byte dropped, doubled or replaced. */
static int gen_mutant(char *b)
{
    int n = gen_decimal(b, 4, 8);
    if (n == 0)
        return n;
    int at = (int)below((unsigned)n);
    static const char alpha[] = "0.eE+-x9";
    switch (below(3)) {
    case 0:
        memmove(b + at, b + at + 1, (size_t)(n - at));
        return n - 1;
    case 1:
        memmove(b + at + 1, b + at, (size_t)(n - at + 1));
        return n + 1;
    default:
        b[at] = alpha[below(sizeof alpha - 1)];
        return n;
    }
}

static const char *fixed[] = {
    "0", "-0", "+0", "-0.0", "-.0", "-0e5", "0e99999", "-0.000e-400", "0.974510", "1.000000", "2",
    "+2.50", "1e-3", "0.1", "0.2", "0.3", "16777216", "16777217", "16777218", "16777219",
    "33554433", "33554435", "9007199254740992", "9007199254740993", "9007199254740994",
    "9007199254740995", "1e22", "1e23", "9007199254740993e-22", "0.86", "3.4028235e38",
    "3.4028236e38", "3.40282357e38", "3.5e38", "1e39", "1.5e-45", "1e-45", "7e-46", "7.1e-46",
    "1.17549435e-38", "1.1754942e-38", "123456789012345678901", "7.038531e-26", "1E5", "1e+5",
    "1e-5", ".5", "5.", "-.5", "+5.", "0.000001", "4.9406564584124654e-324", "2.4703282292062327e-324",
    "2.4703282292062328e-324", "1e-400", "-1e-400", "1e400", "-1e400", "1.7976931348623157e308",
    "1.7976931348623158e308", "1.7976931348623159e308", "2.2250738585072011e-308",
    "2.2250738585072012e-308", "0000000000000000000000000000000000001", "0000.5000", "00.00e0",
    "000000000000000000000000000000000000000000000000000000000000000000001.25",
    "1.0000000000000000000000000000000000000000000000000000000000001",
    "0.000000000000000000000000000000000000000000000000000000000000001",
    "1e0000000000000000000000005", "1e-0000000000000000000000005", "1e99999999999999999999",
    "1e-99999999999999999999", "12345678", "123456789", "1234567890123456", "12345678901234567",
    "0.12345678", "0.123456789", "12345678.12345678", "1234567.1234567", "99999999.99999999",
    "", ".", "-", "+", "e", "e5", "1e", "1e+", "1e-", "1E", "1.e", "1.5.5", "1..5", "--1", "+-1",
    "-+1", "1e5e5", "1e5.5", "1-", "1+", "0x1p3", "0x1.8p1", "0X10", "0x", "0xg", "0x1p", "inf",
    "-inf", "+inf", "INF", "infinity", "Infinity", "infin", "nan", "NaN", "-nan", "nan(123)",
    "nan(", "nanx", "1,5", "1_0", "\v1", "\f1.5", "1\v", "1:2", ":", "1/2", "1.5f", "1d",
    "1.5e3x", "9.14132e-06", "1.00685e-06", "0.0205988", "0.000000", "100",
    /* 20 significant digits whose integer wraps a 64-bit count to 0 (the
     * fuzzer's find: 18446744073709551616 = 2^64), and others past 19 */
    "1844674407370955161.6", "18446744073709551616", "-1844674407370955161.6e-3",
    "36893488147419103232", "0.00018446744073709551616", "1844674407370955161.5",
    "0.097022300000000006", "9.702230000000000560e-02", "0.00000000000000000012345678901234567"
};

/* qs_parse_count: the whole-number rule of options and environment variables. */
static void check_count(const char *s, uint64_t lo, uint64_t hi, int want_rc, uint64_t want)
{
    uint64_t v = 12345;
    int rc = qs_parse_count(s, lo, hi, &v);
    checks++;
    if (rc != want_rc || (rc == 0 && v != want) || (rc != 0 && v != 12345)) {
        failures++;
        fprintf(stderr, "qs_parse_count('%s', %llu, %llu): rc %d value %llu, want rc %d value %llu\n",
                s, (unsigned long long)lo, (unsigned long long)hi, rc, (unsigned long long)v,
                want_rc, (unsigned long long)want);
    }
}

static void check_counts(void)
{
    check_count("0", 0, 10, 0, 0);
    check_count("007", 0, 10, 0, 7);
    check_count("10", 0, 10, 0, 10);
    check_count("11", 0, 10, -1, 0);
    check_count("0", 1, 10, -1, 0);
    check_count("18446744073709551615", 0, UINT64_MAX, 0, UINT64_MAX);
    check_count("18446744073709551616", 0, UINT64_MAX, -1, 0);
    check_count("99999999999999999999999", 0, UINT64_MAX, -1, 0);
    check_count("000000000000000000000000000001", 0, UINT64_MAX, 0, 1);
    static const char *bad[] = { "", "+0", "-0", " 1", "1 ", "1\n", "\t1", "0x10", "1e3",
                                 "1.0", "1K", "--1", "+", "-", "abc", "1,000", "\xd9\xa1" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        check_count(bad[i], 0, UINT64_MAX, -1, 0);
    check_count(NULL, 0, UINT64_MAX, -1, 0);
}

/* qs_parse_bytes: the same rule, one binary suffix allowed. */
static void check_bytes(const char *s, uint64_t lo, uint64_t hi, int want_rc, uint64_t want)
{
    uint64_t v = 12345;
    int rc = qs_parse_bytes(s, lo, hi, &v);
    checks++;
    if (rc != want_rc || (rc == 0 && v != want) || (rc != 0 && v != 12345)) {
        failures++;
        fprintf(stderr, "qs_parse_bytes('%s', %llu, %llu): rc %d value %llu, want rc %d value %llu\n",
                s ? s : "(null)", (unsigned long long)lo, (unsigned long long)hi, rc,
                (unsigned long long)v, want_rc, (unsigned long long)want);
    }
}

static void check_byte_counts(void)
{
    check_bytes("1000000", 1, UINT64_MAX, 0, 1000000);
    check_bytes("64K", 1, UINT64_MAX, 0, 65536);
    check_bytes("64k", 1, UINT64_MAX, 0, 65536);
    check_bytes("512M", 1, UINT64_MAX, 0, 512ull << 20);
    check_bytes("2G", 1, UINT64_MAX, 0, 2ull << 30);
    check_bytes("0K", 1, UINT64_MAX, -1, 0);
    check_bytes("0", 0, 10, 0, 0);
    check_bytes("2G", 1, (2ull << 30) - 1, -1, 0);
    check_bytes("17179869183G", 1, UINT64_MAX, 0, 17179869183ull << 30);
    check_bytes("17179869184G", 1, UINT64_MAX, -1, 0);   /* 2^64: wraps */
    check_bytes("99999999999999999999999K", 1, UINT64_MAX, -1, 0);
    static const char *bad[] = { "", "K", "G", "1KK", "1 K", " 1K", "+1K", "-1K", "1T", "1KB",
                                 "1.5G", "0x10K", "1K ", "1e3", "1\n" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        check_bytes(bad[i], 0, UINT64_MAX, -1, 0);
    check_bytes(NULL, 0, UINT64_MAX, -1, 0);
}

int main(int argc, char **argv)
{
    long count = 2000000;
    const char *env = getenv("QS_NUMBER_TEST_COUNT");
    if (argc > 1)
        count = atol(argv[1]);
    else if (env)
        count = atol(env);
    if (argc > 2)
        rng_state = strtoull(argv[2], NULL, 0) | 1;
    double seconds = argc > 3 ? atof(argv[3]) : 0;
    time_t t0 = time(NULL);
    for (int fp = 0; fp < 2; fp++) {
        qs_error err;
        S[fp] = model(fp);
        if (!(W[fp] = qs_workspace_new(S[fp], &err))) {
            fprintf(stderr, "workspace: %s\n", err.msg);
            return 2;
        }
    }
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        check_str(fixed[i], 1);
    check_ids_and_blanks();
    check_counts();
    check_byte_counts();
    /* integers around 2^24 and 2^53, and float halfway integers times powers of ten */
    char b[256];
    for (int i = -40; i <= 40; i++) {
        snprintf(b, sizeof b, "%lld", (1LL << 24) + i);
        check_str(b, 1);
        snprintf(b, sizeof b, "%lld", (1LL << 53) + i);
        check_str(b, 1);
        snprintf(b, sizeof b, "%llde-%d", (1LL << 25) + 2 * i + 1, (int)below(23));
        check_str(b, 1);
    }
    long k;
    for (k = 0; k < count; k++) {
        if (k % 1000000 == 0 && k > 0) {
            if (seconds > 0 && difftime(time(NULL), t0) >= seconds)
                break;
            if (count > 10000000 && k % 10000000 == 0)
                fprintf(stderr, "%ld tokens, %ld failures\n", k, failures);
        }
        int n;
        switch (k % 10) {
        case 0: case 1: case 2: case 3:
            n = gen_decimal(b, 3, 8);
            break;
        case 4:
            n = gen_decimal(b, 10, 12);
            break;
        case 5:
            n = gen_long_mantissa(b);
            break;
        case 6:
            n = gen_halfway(b);
            break;
        case 7:
            n = gen_extreme(b);
            break;
        case 8:
            n = gen_mutant(b);
            break;
        default:
            n = gen_junk(b);
            break;
        }
        check_token(b, (size_t)n, (k & 7) == 0);
    }
    printf("%ld tokens, %ld checks, %ld failures\n",
           k + (long)(sizeof fixed / sizeof *fixed) + 3 * 81, checks, failures);
    for (int fp = 0; fp < 2; fp++) {
        qs_workspace_free(W[fp]);
        qs_scorer_free(S[fp]);
    }
    return failures ? 1 : 0;
}
