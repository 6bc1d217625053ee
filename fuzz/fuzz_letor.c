/* fuzz_letor.c: libFuzzer target for the LETOR/SVMLight document reader (qs_letor_parse), run on every line of the input against two small fixed models compiled once at start-up; documents are scored with the incremental slot refill and with a freshly refilled slot, which must agree, and values must parse exactly as strtod/strtof would. */
#include "fuzz_common.h"
#include "score/score.h"

#include <errno.h>
#include <stdarg.h>

#define NMODELS 2
#define NABSENT 3

/* Model 0: XGBoost-like (compare lt, float32 values and sums, absent =
 * missing, NaN rules), 200 features: few enough that a line of libFuzzer's
 * length (a few KB) can set every one, so a long line outgrows the slot's list
 * of touched ids.  Model 1: LightGBM-like (compare le, doubles, absent =
 * zero, zero-band and none rules, categorical nodes), 3 classes. */
typedef struct fixture {
    qs_scorer *s;
    qs_workspace *w[NABSENT]; /* 2 slots each, reused line after line */
    qs_workspace *ref;        /* refilled completely before every line */
    int absent_missing;
    int float_precision;
} fixture;

static fixture fx[NMODELS];
static int ready;

/* Append to a growing text buffer (start-up only; failure aborts). */
static void put(char **b, size_t *n, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char **b, size_t *n, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(*b ? *b + *n : NULL, *b ? *cap - *n : 0, fmt, ap);
        va_end(ap);
        if (k < 0)
            abort();
        if (*b && *n + (size_t)k < *cap) {
            *n += (size_t)k;
            return;
        }
        *cap = (*cap + (size_t)k + 1) * 2;
        if (!(*b = realloc(*b, *cap)))
            abort();
    }
}

/* Depth-2 trees over features spread from 0 up (LETOR files use small ids)
 * to the last one. */
static char *model_text(int which, size_t *len)
{
    static const char *const thr[] = { "0x1p-1", "-0x1p-1", "0x0p+0", "0x1p+0", "0x1.4p+1",
                                       "0x1.99999ap-4", "0x1p+4", "-0x1p+0" };
    const unsigned nf = which == 0 ? 200 : 120, ntrees = 24, K = which == 0 ? 1 : 3;
    char *b = NULL;
    size_t n = 0, cap = 0;
    put(&b, &n, &cap,
        "qs-ensemble 1\nsource %s\nobjective fuzz\ncompare %s\nprecision %s\naccumulate %s\n"
        "absent %s\nfeatures %u\nclasses %u\ntransform %s 0x1p+0\n",
        which == 0 ? "xgboost" : "lightgbm", which == 0 ? "lt" : "le",
        which == 0 ? "float" : "double", which == 0 ? "float" : "double",
        which == 0 ? "missing" : "zero", nf, K, which == 0 ? "sigmoid" : "softmax");
    for (unsigned c = 0; c < K; c++)
        put(&b, &n, &cap, "base %u 0x1p-%u\n", c, c + 1);
    put(&b, &n, &cap, "trees %u\n", ntrees);
    for (unsigned t = 0; t < ntrees; t++) {
        put(&b, &n, &cap, "tree %u class %u weight 0x1p+0 nodes 7\n", t, t % K);
        for (unsigned i = 0; i < 3; i++) {
            unsigned f = t < ntrees / 2 ? (t * 3 + i) % 50 : (t * 37 + i * 101 + 7) % nf;
            const char *v = thr[(t + i) % 8];
            unsigned l = 2 * i + 1, r = 2 * i + 2;
            if (which == 0) {
                put(&b, &n, &cap, "%u num %u %s nan %s %u %u\n", i, f, v,
                    (t + i) % 2 ? "left" : "right", l, r);
            } else if ((t + i) % 5 == 0) {
                put(&b, &n, &cap, "%u cat %u %s %s none right %u %u %s\n", i, f,
                    t % 2 ? "left" : "right", t % 3 ? "trunc" : "strict", l, r,
                    t % 4 ? "0,2,3,33" : "1");
            } else {
                put(&b, &n, &cap, "%u num %u %s %s %s %u %u\n", i, f, v,
                    (t + i) % 3 == 0 ? "zero" : (t + i) % 3 == 1 ? "none" : "nan",
                    (t + i) % 2 ? "left" : "right", l, r);
            }
        }
        for (unsigned i = 3; i < 7; i++)
            put(&b, &n, &cap, "%u leaf %s0x%u.%up-%u\n", i, (t + i) % 3 ? "" : "-", 1 + (t % 7),
                i, 3 + i);
    }
    put(&b, &n, &cap, "end\n");
    *len = n;
    return b;
}

static void setup(void)
{
    qs_error err;
    for (int k = 0; k < NMODELS; k++) {
        size_t len;
        char *text = model_text(k, &len);
        qs_error_clear(&err);
        qs_model *m = qs_model_from_text(text, len, &err);
        free(text);
        if (!m)
            FUZZ_FAIL("fixed model %d: line %ld: %s", k, err.line, err.msg);
        /* Two slots: each line's slot was last filled two lines before, so
         * the incremental refill of touched ids is what gets exercised. */
        qs_compile_options o = { .delta = 0, .tree_block = 0, .doc_block = 2, .reverse = NULL };
        unsigned char *img;
        size_t n;
        if (qs_compile(m, &o, &img, &n, &err) != 0)
            FUZZ_FAIL("fixed model %d: %s", k, err.msg);
        fx[k].absent_missing = m->absent_missing;
        fx[k].float_precision = m->float_precision;
        qs_model_free(m);
        fx[k].s = qs_scorer_load(img, n, &err);
        free(img);
        if (!fx[k].s)
            FUZZ_FAIL("fixed model %d: %s", k, err.msg);
        if (qs_scorer_prepare(fx[k].s, qs_backend_find("qs"), &err) != 0 ||
            qs_scorer_prepare(fx[k].s, qs_backend_find("walk"), &err) != 0)
            FUZZ_FAIL("fixed model %d: %s", k, err.msg);
        for (int a = 0; a < NABSENT; a++)
            if (!(fx[k].w[a] = qs_workspace_new(fx[k].s, &err)))
                FUZZ_FAIL("fixed model %d: %s", k, err.msg);
        if (!(fx[k].ref = qs_workspace_new(fx[k].s, &err)))
            FUZZ_FAIL("fixed model %d: %s", k, err.msg);
    }
    ready = 1;
}

/* The value of `tok` the way the format says to read it: strtof or strtod of
 * the whole token.  Returns 0 when it is a number. */
static int reference_value(int float_precision, const char *tok, size_t n, double *out)
{
    char buf[128];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, tok, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    *out = float_precision ? (double)strtof(buf, &end) : strtod(buf, &end);
    return end == buf + n ? 0 : -1;
}

/* Every "id:value" token's value through qs_parse_value against strtod /
 * strtof (the reader's decimal fast path must round exactly as they do). */
static void check_values(const qs_scorer *s, int float_precision, const char *line, size_t len)
{
    size_t i = 0;
    while (i < len) {
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        size_t b = i;
        while (i < len && line[i] != ' ' && line[i] != '\t')
            i++;
        const char *colon = memchr(line + b, ':', i - b);
        const char *v = colon ? colon + 1 : line + b;
        size_t vn = (size_t)(line + i - v);
        if (vn == 0 || vn >= 128)
            continue;
        double got, want;
        int rg = qs_parse_value(s, v, vn, &got), rw = reference_value(float_precision, v, vn, &want);
        if ((rg == 0) != (rw == 0))
            FUZZ_FAIL("qs_parse_value('%.*s') %s, strto%s %s", (int)vn, v,
                      rg == 0 ? "accepts" : "refuses", float_precision ? "f" : "d",
                      rw == 0 ? "accepts" : "refuses");
        if (rg == 0 && !fuzz_same(got, want))
            FUZZ_FAIL("qs_parse_value('%.*s') = %a, strto%s says %a", (int)vn, v, got,
                      float_precision ? "f" : "d", want);
    }
}

/* After a line parsed as a document: every feature it sets holds the value
 * strtod/strtof give its token (the last token of a repeated id wins),
 * whichever path of the reader read it. */
static void check_slot(const fixture *F, const qs_workspace *w, const char *line, size_t len)
{
    enum { MAXF = 4096 };
    static uint32_t gen[MAXF], cur;
    static const char *vp[MAXF];
    static size_t vn[MAXF];
    const uint32_t nf = qs_scorer_model(F->s)->num_features;
    if (nf > MAXF)
        return;
    cur++;
    const char *hash = memchr(line, '#', len);
    size_t end = hash ? (size_t)(hash - line) : len, i = 0;
    while (end > 0 && (line[end - 1] == '\r' || line[end - 1] == ' ' || line[end - 1] == '\t'))
        end--;
    int label = 1;
    while (i < end) {
        while (i < end && (line[i] == ' ' || line[i] == '\t'))
            i++;
        size_t b = i;
        while (i < end && line[i] != ' ' && line[i] != '\t')
            i++;
        if (b == i)
            break;
        if (label) {
            label = 0;
            continue;
        }
        if (i - b > 4 && memcmp(line + b, "qid:", 4) == 0)
            continue;
        uint64_t id = 0;
        size_t c = b;
        while (c < i && line[c] >= '0' && line[c] <= '9' && id < MAXF)
            id = id * 10 + (uint64_t)(line[c++] - '0');
        while (c < i && line[c] >= '0' && line[c] <= '9')
            c++;
        if (c == i || line[c] != ':' || id >= nf)
            continue;
        gen[id] = cur;
        vp[id] = line + c + 1;
        vn[id] = i - c - 1;
    }
    const double *x = w->slot[w->cur].x;
    for (uint32_t f = 0; f < nf; f++) {
        double want;
        if (gen[f] != cur || reference_value(F->float_precision, vp[f], vn[f], &want) != 0)
            continue;
        if (!fuzz_same(x[f], want))
            FUZZ_FAIL("feature %u = %a after qs_letor_parse, strto%s('%.*s') = %a", f, x[f],
                      F->float_precision ? "f" : "d", (int)vn[f], vp[f], want);
    }
}

static void check_pointers(const char *line, size_t len, const qs_letor_line *out)
{
    if (!out->label || out->label < line || out->label_len == 0 ||
        out->label_len > (size_t)(line + len - out->label))
        FUZZ_FAIL("label token outside the line");
    if (out->qid && (out->qid < line || out->qid_len > (size_t)(line + len - out->qid)))
        FUZZ_FAIL("qid token outside the line");
}

static void one_line(const char *line, size_t len, unsigned lineno)
{
    for (int k = 0; k < NMODELS; k++) {
        if (!fuzz_takes(6, (uint32_t)k, NMODELS)) /* libFuzzer: one model an input */
            continue;
        fixture *F = &fx[k];
        const uint32_t K = qs_scorer_model(F->s)->num_classes;
        double got[4], want[4], walk[4];
        check_values(F->s, F->float_precision, line, len);
        for (int a = 0; a < NABSENT; a++) {
            if (!fuzz_takes(3, (uint32_t)a, NABSENT))
                continue;
            qs_letor_line o1, o2;
            int d1 = -1, d2 = -1;
            qs_error e1, e2;
            qs_error_clear(&e1);
            qs_error_clear(&e2);
            qs_workspace_select(F->w[a], lineno % 2);
            int r1 = qs_letor_parse(F->s, F->w[a], (qs_absent)a, line, len, &o1, &d1, &e1);
            /* Reference slot: a reset with the other fill forces the next
             * reset (inside qs_letor_parse) to refill every feature. */
            int missing = a == QS_ABSENT_MISSING || (a == QS_ABSENT_DEFAULT && F->absent_missing);
            qs_doc_reset(F->ref, missing ? QS_ABSENT_ZERO : QS_ABSENT_MISSING);
            int r2 = qs_letor_parse(F->s, F->ref, (qs_absent)a, line, len, &o2, &d2, &e2);
            if (r1 != r2 || (r1 == 0 && d1 != d2))
                FUZZ_FAIL("the same line parsed twice gave different results");
            if (r1 != 0) {
                fuzz_check_err(&e1, "qs_letor_parse");
                if (strcmp(e1.msg, e2.msg) != 0)
                    FUZZ_FAIL("the same line gave two messages: '%s' / '%s'", e1.msg, e2.msg);
                continue;
            }
            if (d1 != 0 && d1 != 1)
                FUZZ_FAIL("is_doc is %d", d1);
            if (!d1)
                continue;
            check_pointers(line, len, &o1);
            check_slot(F, F->w[a], line, len);
            if (qs_score_doc(F->s, F->w[a], qs_backend_find("qs"), got, NULL) != 0 ||
                qs_score_doc(F->s, F->ref, qs_backend_find("qs"), want, NULL) != 0 ||
                qs_score_doc(F->s, F->ref, qs_backend_find("walk"), walk, NULL) != 0)
                FUZZ_FAIL("scoring refused");
            for (uint32_t c = 0; c < K; c++) {
                if (!fuzz_same(want[c], walk[c]))
                    FUZZ_FAIL("model %d absent %d class %u: qs %a, walk %a", k, a, c, want[c],
                              walk[c]);
                if (!fuzz_same(got[c], want[c]))
                    FUZZ_FAIL("model %d absent %d class %u: reused slot %a, fresh slot %a "
                              "(stale feature values after qs_doc_reset?)",
                              k, a, c, got[c], want[c]);
            }
            qs_transform(F->s, got);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ready)
        setup();
    fuzz_begin(data, size);
    const char *p = (const char *)data, *end = p + size;
    unsigned lineno = 0;
    while (p < end || (p == end && size == 0 && lineno == 0)) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        /* Each line in a buffer of its own exact size: reading past the
         * line is then an ASan report, not a silent read of the next one. */
        char *line = malloc(n ? n : 1);
        if (!line)
            return 0;
        memcpy(line, p, n);
        one_line(line, n, lineno++);
        free(line);
        if (!nl)
            break;
        p = nl + 1;
    }
    return 0;
}
