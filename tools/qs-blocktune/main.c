/* qs-blocktune: measure the blocking of a .qsm on this machine (traversal
 * order, scorers and documents per inner block, τ, Δ, back end, threads)
 * with the guided sampling of Jin, Yang and Tang (SIGIR 2016), and write
 * the model again with the winner in its tuning record (TUNE section). */
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIN_SAMPLE 128u     /* documents: twice the 64-document kernel's batch */
#define MIN_PASS_NS 2e6     /* a timed measurement lasts at least 2 ms */
#define BATCH 4096u         /* the batch (the paper's n) of the order search */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: qs-blocktune [options] MODEL.qsm [SAMPLE|-] -o TUNED.qsm\n"
            "       qs-blocktune --time MODEL.qsm [DOCS|-]\n"
            "\n"
            "Measures, on this machine and the LETOR documents of SAMPLE (a file, or standard\n"
            "input), the traversal order of BWQS (DSD, SDS, DSDS, SDSD and the special cases\n"
            "DS and SD), the scorers (s) and documents (d) per inner block, the trees per\n"
            "block (τ), the scan skip (Δ) and the back end, and writes MODEL again to\n"
            "TUNED.qsm with the fastest setting in its tuning record; qs-score uses it on a\n"
            "machine with the same fingerprint.  Guided sampling (Jin et al.): the range\n"
            "cases that the cache sizes and the footprints of one scorer and one document\n"
            "leave possible, a few points in each (µ = 1, 0.75, 0.5, 0.25 of the range),\n"
            "then a refinement around the best.  Every setting gives the same scores.\n"
            "A report of every point tried goes to standard output.\n"
            "\n"
            "  -o, --output FILE      the tuned model (required; written whole, then renamed)\n"
            "  --budget SECONDS       time for the search (default 20; about that for a\n"
            "                         1,000-tree model and a 10,000-document sample)\n"
            "  --exhaustive           the full grid over the same space instead (slow; for\n"
            "                         measuring the guided search)\n"
            "  --sample-docs N        a reproducible random subsample of N documents\n"
            "  --seed N               its seed (default 1)\n"
            "  --repeat N             timed runs per point, the median kept (default 3)\n"
            "  --backend NAME         measure this back end only (default: every exact back\n"
            "                         end this machine runs for the model, but aliases,\n"
            "                         devices and whole batches)\n"
            "  --threads N            also try the winner with 2..N threads (default: one\n"
            "                         thread; the record then leaves threads to qs-score)\n"
            "  --absent zero|missing  what an absent feature means (default: the source\n"
            "                         library's)\n"
            "  --plot FILE.svg        heat maps of the time over (d, s), one per blocked\n"
            "                         order, with a colour bar (ns/doc/tree) marking the\n"
            "                         defaults and the winner\n"
            "  --time                 no search: print the ns per document per tree of\n"
            "                         MODEL's setting (its tuning record applied) on DOCS\n"
            "  -h, --help             this help\n"
            "  -V, --version          version\n"
            "\n"
            "Progress goes to standard error when it is a terminal.\n"
            "exit: 0 ok, 1 bad model or document, 2 usage (also: a sample of fewer than 128\n"
            "documents, too small to measure), 3 unsupported, 4 system error, 5 the GPU\n"
            "(--backend cuda: no driver or device, out of device memory, a failed launch)\n");
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* ------------------------------------------------------------ the sample */

typedef struct sample {
    double *x;      /* n rows of F values */
    size_t n, F;
} sample;

static void release_workspace(void *w) { qs_workspace_free(w); }

static void read_sample(const qs_scorer *s, const char *path, qs_absent absent, sample *S)
{
    qs_error err;
    qs_error_clear(&err);
    qs_workspace *w = tool_hold(qs_workspace_new(s, &err), release_workspace);
    if (!w)
        tool_die_err(NULL, &err);
    const qs_model *m = qs_scorer_model(s);
    qs_model_info mi;
    qs_model_get_info(m, &mi);
    S->F = mi.num_features ? mi.num_features : 1;
    size_t cap = 0;
    S->n = 0;
    S->x = NULL;
    tool_reader r;
    tool_reader_open(&r, path);
    const char *line;
    size_t len;
    while (tool_reader_line(&r, &line, &len)) {
        qs_letor_line ll;
        int is_doc;
        if (qs_letor_parse(s, w, absent, line, len, &ll, &is_doc, &err) != 0) {
            err.line = r.line;
            tool_die_err(r.name, &err);
        }
        if (!is_doc)
            continue;
        if (S->n == cap) {
            cap = cap ? cap * 2 : 1024;
            double *x = realloc(S->x, cap * S->F * sizeof *S->x);
            if (!x)
                tool_die(EXIT_SYSTEM, "out of memory (sample of %zu documents)", cap);
            S->x = x;
        }
        memcpy(S->x + S->n * S->F, qs_doc_values(w), mi.num_features * sizeof *S->x);
        S->n++;
    }
    tool_reader_close(&r);
    tool_release(w);
}

/* A reproducible subsample of k rows (partial Fisher-Yates on the row
 * indices, xorshift64*), in their original order. */
static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static void subsample(sample *S, size_t k, uint64_t seed)
{
    if (k >= S->n)
        return;
    size_t *idx = tool_hold(malloc(S->n * sizeof *idx), free);
    double *y = tool_hold(malloc(k * S->F * sizeof *y), free);
    if (!idx || !y)
        tool_die(EXIT_SYSTEM, "out of memory");
    for (size_t i = 0; i < S->n; i++)
        idx[i] = i;
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < k; i++) {
        st ^= st >> 12;
        st ^= st << 25;
        st ^= st >> 27;
        size_t j = i + (size_t)((st * 0x2545F4914F6CDD1Dull) % (S->n - i));
        size_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
    qsort(idx, k, sizeof *idx, cmp_size);
    for (size_t i = 0; i < k; i++)
        memcpy(y + i * S->F, S->x + idx[i] * S->F, S->F * sizeof *y);
    free(S->x);
    tool_release(idx);
    tool_unhold(y);
    S->x = y;
    S->n = k;
}

/* ------------------------------------------------------------ settings */

typedef struct setting {
    qs_backend backend;
    uint32_t tau, delta, batch;
    int order;
    uint32_t s, d;
} setting;

enum { STAGE_PROBED = 6, PROBE_DOCS = 512 };

typedef struct point {
    setting st;
    double ns;          /* ns per document per tree (median) */
    char rc[12];        /* range case, "DSD2S1" */
    int stage;          /* 0 defaults, 1 back end, 2 τ/Δ, 3 sampled, 4 refined, 5 grid,
                           6 a back end probed on a few documents only, far
                           slower than the defaults (never a candidate) */
} point;

typedef struct tuner {
    const unsigned char *qsm;
    size_t qsm_len;
    sample S;
    uint64_t ntrees;
    unsigned repeat;
    double budget_ns, t0;
    int progress;
    qs_scorer *sc;        /* laid out for cur_tau, cur_delta */
    uint32_t cur_tau, cur_delta;
    double *out, *ref;    /* scores of a run, of the defaults */
    size_t K;
    point *pts;
    size_t npts, cap;
    unsigned inner;       /* passes per timed measurement */
    uint64_t cache[3];
} tuner;

/* Release function for tool_hold. */
static void release_tuner(void *p)
{
    tuner *T = p;
    qs_scorer_free(T->sc);
    free(T->S.x);
    free(T->out);
    free(T->ref);
    free(T->pts);
}

static void die_err(const qs_error *e) { tool_die_err(NULL, e); }

static void layout(tuner *T, uint32_t tau, uint32_t delta)
{
    qs_error err;
    qs_error_clear(&err);
    if (T->sc && tau == T->cur_tau && delta == T->cur_delta)
        return;
    if (!T->sc) {
        T->sc = qs_scorer_load(T->qsm, T->qsm_len, &err);
        if (!T->sc)
            die_err(&err);
        qs_scorer_get_blocks(T->sc, &T->cur_tau, NULL, &T->cur_delta, NULL);
        return; /* the stored layout */
    }
    if ((tau != T->cur_tau || delta != T->cur_delta) &&
        qs_scorer_relayout(T->sc, tau == T->cur_tau ? QS_KEEP : tau,
                           QS_KEEP, delta == T->cur_delta ? QS_KEEP : delta, &err) != 0)
        die_err(&err);
    T->cur_tau = tau;
    T->cur_delta = delta;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One pass over the sample with setting st; ns. */
static double run_once(tuner *T, const setting *st, unsigned threads)
{
    qs_error err;
    qs_error_clear(&err);
    double t = now_ns();
    for (unsigned i = 0; i < T->inner; i++)
        if (qs_score_matrix(T->sc, st->backend, T->S.x, T->S.n, T->S.F, T->out, threads, &err) != 0)
            die_err(&err);
    return now_ns() - t;
}

static void apply(tuner *T, const setting *st)
{
    qs_error err;
    qs_error_clear(&err);
    layout(T, st->tau, st->delta);
    uint32_t batch;
    qs_scorer_get_blocks(T->sc, NULL, &batch, NULL, NULL);
    if ((batch != st->batch && qs_scorer_relayout(T->sc, QS_KEEP, st->batch, QS_KEEP, &err) != 0) ||
        qs_scorer_set_order(T->sc, (qs_order)st->order, st->s, st->d, &err) != 0 ||
        qs_scorer_prepare(T->sc, st->backend, &err) != 0)
        die_err(&err);
}

/* Median ns per document per tree of setting st (warm: one pass first). */
static double measure_threads(tuner *T, const setting *st, unsigned threads)
{
    apply(T, st);
    run_once(T, st, threads);
    if (T->ref && memcmp(T->out, T->ref, T->S.n * T->K * sizeof *T->out) != 0)
        tool_die(EXIT_DATA, "internal error: %s s=%u d=%u τ=%u gives other scores than the "
                            "defaults", qs_order_name((qs_order)st->order), st->s, st->d, st->tau);
    double v[64];
    unsigned r = T->repeat < 64 ? T->repeat : 64;
    for (unsigned i = 0; i < r; i++)
        v[i] = run_once(T, st, threads);
    qsort(v, r, sizeof v[0], cmp_double);
    double med = r % 2 ? v[r / 2] : (v[r / 2 - 1] + v[r / 2]) / 2;
    return med / T->inner / (double)T->S.n / (double)(T->ntrees ? T->ntrees : 1);
}

static const char *range_case(tuner *T, const setting *st, char *buf, size_t cap)
{
    qs_footprint fp;
    apply(T, st);
    qs_scorer_get_footprint(T->sc, st->backend, &fp);
    int ls, ld;
    uint32_t s = st->s ? st->s : 1, d = st->d ? st->d : st->batch;
    if (st->order == QS_ORDER_SD)
        s = 1, d = st->batch;
    if (st->order == QS_ORDER_DS)
        d = fp.lanes;
    qs_range_case(&fp, T->cache, (qs_order)st->order, s, d, &ls, &ld);
    const char *o = qs_order_name((qs_order)st->order);
    switch (st->order) {
    case QS_ORDER_DSD: snprintf(buf, cap, "DSD%d", ld); break;
    case QS_ORDER_SDS: snprintf(buf, cap, "SDS%d", ls); break;
    case QS_ORDER_DSDS: snprintf(buf, cap, "DSD%dS%d", ld, ls); break;
    case QS_ORDER_SDSD: snprintf(buf, cap, "SDS%dD%d", ls, ld); break;
    default: snprintf(buf, cap, "%s", o); break;
    }
    return buf;
}

/* Whether back end b reads the QuickScorer layout (qs, the vqs kernels):
 * the orders, τ and Δ are its settings. */
static int reads_layout(qs_backend b)
{
    qs_backend_info bi;
    return qs_backend_get_info(b, &bi) == 0 &&
           !(bi.flags & (QS_BACKEND_F_REFERENCE | QS_BACKEND_F_BASELINE | QS_BACKEND_F_BATCH |
                         QS_BACKEND_F_DEVICE));
}

static int over_budget(const tuner *T) { return now_ns() - T->t0 > T->budget_ns; }

static point *find(tuner *T, const setting *st)
{
    for (size_t i = 0; i < T->npts; i++)
        if (memcmp(&T->pts[i].st, st, sizeof *st) == 0)
            return &T->pts[i];
    return NULL;
}

static point *new_point(tuner *T, const setting *st, int stage)
{
    /* Allocated once (points are referred to by address): the grids stay
     * far below (6 τ x 4 orders x 64 x 64 at most). */
    if (!T->pts) {
        T->cap = (size_t)1 << 17;
        T->pts = malloc(T->cap * sizeof *T->pts);
        if (!T->pts)
            tool_die(EXIT_SYSTEM, "out of memory");
    }
    if (T->npts == T->cap)
        tool_die(EXIT_SYSTEM, "more than %zu points to measure", T->cap);
    point *p = &T->pts[T->npts];
    memset(p, 0, sizeof *p);
    p->st = *st;
    p->stage = stage;
    return p;
}

static point *measure(tuner *T, const setting *st, int stage)
{
    point *p = find(T, st);
    if (p)
        return p;
    p = new_point(T, st, stage);
    range_case(T, st, p->rc, sizeof p->rc);
    p->ns = measure_threads(T, st, 1);
    T->npts++;
    if (T->progress)
        fprintf(stderr, "\r%s: %zu points, %.0f s ", tool_name(), T->npts,
                (now_ns() - T->t0) / 1e9);
    return p;
}

static point *best_point(tuner *T)
{
    point *b = NULL;
    for (size_t i = 0; i < T->npts; i++)
        if (T->pts[i].stage != STAGE_PROBED && (!b || T->pts[i].ns < b->ns))
            b = &T->pts[i];
    return b;
}

/* A back end that does not read the layout, before it is measured: one
 * pass over the sample's first PROBE_DOCS documents (its scores checked
 * against the defaults').  Slower than `limit` ns/doc/tree, it is recorded
 * as probed (a walk of thousands of trees would spend the budget on the
 * whole sample) and 1 is returned; else 0 and it is measured in full. */
static int probed_slow(tuner *T, const setting *st, double limit)
{
    const size_t n = T->S.n < PROBE_DOCS ? T->S.n : PROBE_DOCS;
    qs_error err;
    qs_error_clear(&err);
    apply(T, st);
    double t = now_ns();
    if (qs_score_matrix(T->sc, st->backend, T->S.x, n, T->S.F, T->out, 1, &err) != 0)
        die_err(&err);
    double ns = (now_ns() - t) / (double)n / (double)(T->ntrees ? T->ntrees : 1);
    if (memcmp(T->out, T->ref, n * T->K * sizeof *T->out) != 0)
        tool_die(EXIT_DATA, "internal error: back end %s gives other scores than the defaults",
                 qs_backend_name(st->backend));
    if (ns <= limit)
        return 0;
    point *p = new_point(T, st, STAGE_PROBED);
    snprintf(p->rc, sizeof p->rc, "probe");
    p->ns = ns;
    T->npts++;
    return 1;
}

/* ------------------------------------------------------------ the search */

static uint32_t round_up(uint32_t v, uint32_t unit)
{
    if (unit > 1 && v % unit)
        v += unit - v % unit;
    return v;
}

/* The values of a scorer count (s) or document count (d) whose footprint
 * falls in cache level lev (half of it each; 4 = beyond L3): (lo, hi]. */
static int level_range(const uint64_t cache[3], uint64_t unit_bytes, int lev, uint64_t most,
                       uint64_t *lo, uint64_t *hi)
{
    uint64_t below = lev == 1 ? 0 : cache[lev - 2] / 2 / (unit_bytes ? unit_bytes : 1);
    uint64_t top = lev == 4 ? most : cache[lev - 1] / 2 / (unit_bytes ? unit_bytes : 1);
    if (top > most)
        top = most;
    *lo = below;
    *hi = top;
    return top > below && top >= 1;
}

/* v as a multiple of the SIMD unit inside (lo, hi] where one exists
 * (rounded down first, so that the point stays in its range case). */
static uint32_t fit_unit(uint64_t v, uint64_t lo, uint64_t hi, uint32_t unit)
{
    if (unit <= 1)
        return (uint32_t)v;
    uint64_t down = v / unit * unit;
    if (down > lo && down >= unit)
        return (uint32_t)down;
    return round_up((uint32_t)v, unit) <= hi ? round_up((uint32_t)v, unit) : (uint32_t)v;
}

static const double MU[4] = { 1.0, 0.75, 0.5, 0.25 };

/* µ of the way into (lo, hi]: the point µ·hi, kept above lo. */
static uint64_t at_mu(uint64_t lo, uint64_t hi, double mu)
{
    uint64_t v = (uint64_t)(mu * (double)hi);
    if (v <= lo)
        v = lo + 1;
    if (v > hi)
        v = hi;
    return v ? v : 1;
}

/* Guided sampling over the orders for back end, τ and Δ fixed. */
static void guided_orders(tuner *T, setting base)
{
    qs_footprint fp;
    apply(T, &base);
    qs_scorer_get_footprint(T->sc, base.backend, &fp);
    const uint64_t nb = fp.nscorers ? fp.nscorers : 1, nd = BATCH < T->S.n ? BATCH : T->S.n;
    const uint32_t unit = fp.lanes;
    /* Proposition 1 (Jin et al.): one document and one scorer in L1 and
     * the orders whose inner loops reach memory ruled out, the lowest cost
     * is among DSD2, DSD2S1, SDS2D2, SDS2D1 (and SDS3D1, SDS3D2 when a
     * scorer is large, over an eighth of L1). */
    const int prop1 = T->cache[0] && fp.doc_bytes <= T->cache[0] / 2 &&
                      fp.max_scorer_bytes <= T->cache[0] / 2;
    const int big = fp.scorer_bytes > T->cache[0] / 8;
    base.batch = (uint32_t)nd;
    for (int o = QS_ORDER_DSD; o <= QS_ORDER_SDSD; o++) {
        for (int i = 1; i <= 4; i++) {
            for (int j = 1; j <= (o == QS_ORDER_DSD || o == QS_ORDER_SDS ? 1 : i); j++) {
                /* DSDiSj: d in level i, s in level j; SDSiDj: s in i, d in j */
                int dl = 0, sl = 0;
                switch (o) {
                case QS_ORDER_DSD: dl = i; break;
                case QS_ORDER_SDS: sl = i; break;
                case QS_ORDER_DSDS: dl = i, sl = j; break;
                default: sl = i, dl = j; break;
                }
                if (prop1) {
                    int keep = (o == QS_ORDER_DSD && dl == 2) ||
                               (o == QS_ORDER_DSDS && dl == 2 && sl == 1) ||
                               (o == QS_ORDER_SDSD && sl == 2 && dl <= 2) ||
                               (big && o == QS_ORDER_SDSD && sl == 3 && dl <= 2);
                    if (!keep)
                        continue;
                }
                uint64_t slo = 0, shi = 1, dlo = 0, dhi = 1;
                if (sl && !level_range(T->cache, fp.scorer_bytes, sl, nb, &slo, &shi))
                    continue;
                if (dl && !level_range(T->cache, fp.doc_bytes, dl, nd, &dlo, &dhi))
                    continue;
                if (dl && round_up((uint32_t)(dlo + 1), unit) > dhi && dhi < nd)
                    continue; /* no multiple of the SIMD unit in the range */
                for (int k = 0; k < 4; k++) {
                    if (over_budget(T))
                        return;
                    setting st = base;
                    st.order = o;
                    st.s = sl ? (uint32_t)at_mu(slo, shi, MU[k]) : 0;
                    st.d = dl ? fit_unit(at_mu(dlo, dhi, MU[k]), dlo, dhi, unit) : 0;
                    if (st.d > nd)
                        st.d = (uint32_t)nd;
                    if (o == QS_ORDER_DSD)
                        st.s = 0;
                    if (o == QS_ORDER_SDS)
                        st.d = 0;
                    measure(T, &st, 3);
                }
            }
        }
    }
    /* Refine around the best: s and d halved, ×0.75, ×1.5, doubled. */
    point *b = best_point(T);
    if (!b || b->st.order < QS_ORDER_DSD)
        return;
    setting c = b->st;
    static const double f[4] = { 0.5, 0.75, 1.5, 2.0 };
    for (int k = 0; k < 4 && !over_budget(T); k++) {
        setting st = c;
        if (st.d) {
            st.d = round_up((uint32_t)(c.d * f[k]), unit);
            if (st.d < 1)
                st.d = unit;
            if (st.d > nd)
                st.d = (uint32_t)nd;
            measure(T, &st, 4);
        }
        st = c;
        if (st.s) {
            uint32_t v = (uint32_t)(c.s * f[k] + 0.5);
            st.s = v < 1 ? 1 : v > nb ? (uint32_t)nb : v;
            measure(T, &st, 4);
        }
    }
}

/* The full grid: every order, s and d on a geometric grid. */
static void grid_orders(tuner *T, setting base)
{
    qs_footprint fp;
    apply(T, &base);
    qs_scorer_get_footprint(T->sc, base.backend, &fp);
    const uint32_t nb = fp.nscorers ? fp.nscorers : 1;
    const uint32_t nd = (uint32_t)(BATCH < T->S.n ? BATCH : T->S.n), unit = fp.lanes;
    uint32_t sv[64], dv[64];
    int ns = 0, ndv = 0;
    for (double v = 1; v < nb && ns < 62; v = ceil(v * 1.5))
        sv[ns++] = (uint32_t)v;
    sv[ns++] = nb;
    for (double v = unit; v < nd && ndv < 62; v = ceil(v * 1.5))
        dv[ndv++] = round_up((uint32_t)v, unit);
    dv[ndv++] = nd;
    base.batch = nd;
    setting st = base;
    st.order = QS_ORDER_SD;
    measure(T, &st, 5);
    st.order = QS_ORDER_DS;
    measure(T, &st, 5);
    for (int o = QS_ORDER_DSD; o <= QS_ORDER_SDSD; o++)
        for (int i = 0; i < ns; i++)
            for (int j = 0; j < ndv; j++) {
                if ((o == QS_ORDER_DSD && i) || (o == QS_ORDER_SDS && j))
                    continue;
                st = base;
                st.order = o;
                st.s = o == QS_ORDER_DSD ? 0 : sv[i];
                st.d = o == QS_ORDER_SDS ? 0 : dv[j];
                measure(T, &st, 5);
            }
}

/* ------------------------------------------------------------ the plot */

/* A colour for t in [0, 1]: a ramp from dark blue (fast) through teal and
 * green to yellow (slow), like viridis, readable in grey too. */
static void ramp(double t, int *r, int *g, int *b)
{
    static const int stop[5][3] = { { 68, 1, 84 }, { 59, 82, 139 }, { 33, 145, 140 },
                                    { 94, 201, 98 }, { 253, 231, 37 } };
    if (!(t >= 0))
        t = 0;
    if (t > 1)
        t = 1;
    double x = t * 4;
    int k = (int)x;
    if (k > 3)
        k = 3;
    double f = x - k;
    *r = (int)(stop[k][0] + f * (stop[k + 1][0] - stop[k][0]) + 0.5);
    *g = (int)(stop[k][1] + f * (stop[k + 1][1] - stop[k][1]) + 0.5);
    *b = (int)(stop[k][2] + f * (stop[k + 1][2] - stop[k][2]) + 0.5);
}

static const char *setting_str(const setting *st, char *buf, size_t cap);

/* Sorted distinct values of v[0 .. n), in place; their count. */
static size_t distinct_u32(uint32_t *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            uint32_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || v[m - 1] != v[i])
            v[m++] = v[i];
    return m;
}

static size_t index_u32(const uint32_t *v, size_t n, uint32_t x)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == x)
            return i;
    return 0;
}

/* --plot: one heat map per blocked traversal order (DSD, SDS, DSDS, SDSD),
 * d (documents per inner block) across, s (scorers per inner block) up,
 * each cell the fastest setting measured there (any τ, Δ, δ, back end); one
 * colour scale for all panels, from the fastest to the slowest point
 * measured, with a colour bar in ns per document per tree on which the
 * defaults (order SD, not on a panel) and the winner are marked. */
static void plot(tuner *T, const char *path, const point *win, const point *def)
{
    tool_out so;
    tool_out_open(&so, path, 0);
    FILE *f = so.fp;
    const int PW = 330, PH = 250, ML = 70, MT = 70, GX = 110, GY = 80, CB = 60;
    const int W = ML + 2 * PW + GX + CB + 190, H = MT + 2 * PH + GY + 130;
    double lo = def->ns, hi = def->ns;
    for (size_t i = 0; i < T->npts; i++) {
        if (T->pts[i].ns < lo)
            lo = T->pts[i].ns;
        if (T->pts[i].ns > hi)
            hi = T->pts[i].ns;
    }
    if (!(hi > lo))
        hi = lo * 1.001 + 1e-9;
    /* a logarithmic scale when the times span more than a factor of 3 (a few
     * slow settings would otherwise squeeze the fast ones into one colour) */
    const int logscale = lo > 0 && hi / lo > 3;
#define SCALE(v) (logscale ? log((v) / lo) / log(hi / lo) : ((v) - lo) / (hi - lo))
    uint32_t *ds = malloc((T->npts + 1) * sizeof *ds), *ss = malloc((T->npts + 1) * sizeof *ss);
    const point **best = NULL;
    if (!ds || !ss) {
        free(ds);
        free(ss);
        tool_die(EXIT_SYSTEM, "out of memory (plot)");
    }
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%d\" y=\"24\" font-size=\"16\" font-weight=\"bold\">qs-blocktune: "
               "time per document per tree over the inner block, by traversal order</text>\n",
            ML);
    fprintf(f, "<text x=\"%d\" y=\"44\">each cell: the fastest setting measured at (d, s), over "
               "the tree blocks, Δ, document batches and back ends tried; grey: not measured; "
               "%zu points</text>\n", ML, T->npts);
    for (int o = QS_ORDER_DSD; o <= QS_ORDER_SDSD; o++) {
        const int col = (o - QS_ORDER_DSD) % 2, row = (o - QS_ORDER_DSD) / 2;
        const int x0 = ML + col * (PW + GX), y0 = MT + row * (PH + GY);
        size_t nd = 0, ns = 0;
        for (size_t i = 0; i < T->npts; i++)
            if (T->pts[i].st.order == o) {
                ds[nd++] = T->pts[i].st.d;
                ss[ns++] = T->pts[i].st.s;
            }
        nd = distinct_u32(ds, nd);
        ns = distinct_u32(ss, ns);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">%s</text>\n",
                x0, y0 - 8, qs_order_name((qs_order)o));
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#d9d9d9\" "
                   "stroke=\"#555\"/>\n", x0, y0, PW, PH);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">d: documents per inner block"
                   "</text>\n", x0 + PW / 2, y0 + PH + 32);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 %d %d)\">"
                   "s: scorers per inner block</text>\n",
                x0 - 45, y0 + PH / 2, x0 - 45, y0 + PH / 2);
        if (nd == 0 || ns == 0) {
            fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">not measured</text>\n",
                    x0 + PW / 2, y0 + PH / 2);
            continue;
        }
        const double cw = (double)PW / (double)nd, ch = (double)PH / (double)ns;
        const point **nb = realloc(best, nd * ns * sizeof *best);
        if (!nb) {
            free(best);
            free(ds);
            free(ss);
            tool_die(EXIT_SYSTEM, "out of memory (plot)");
        }
        best = nb;
        for (size_t k = 0; k < nd * ns; k++)
            best[k] = NULL;
        for (size_t i = 0; i < T->npts; i++) {
            const point *p = &T->pts[i];
            if (p->st.order != o)
                continue;
            size_t k = index_u32(ss, ns, p->st.s) * nd + index_u32(ds, nd, p->st.d);
            if (!best[k] || p->ns < best[k]->ns)
                best[k] = p;
        }
        for (size_t a = 0; a < ns; a++)
            for (size_t b = 0; b < nd; b++) {
                const point *p = best[a * nd + b];
                if (!p)
                    continue;
                int r, g, bl;
                ramp(SCALE(p->ns), &r, &g, &bl);
                char st[160];
                fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                           "fill=\"rgb(%d,%d,%d)\"><title>%s: %.4f ns</title></rect>\n",
                        x0 + b * cw, y0 + PH - (a + 1) * ch, cw, ch, r, g, bl,
                        setting_str(&p->st, st, sizeof st), p->ns);
                if (p == win)
                    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                               "fill=\"none\" stroke=\"red\" stroke-width=\"3\"/>\n"
                               "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"red\" "
                               "font-weight=\"bold\">winner</text>\n",
                            x0 + b * cw + 1.5, y0 + PH - (a + 1) * ch + 1.5, cw - 3, ch - 3,
                            x0 + b * cw + cw / 2, y0 + PH - (a + 1) * ch + ch / 2 + 4);
            }
        /* axes: a tick per value, labels thinned to fit */
        const size_t dstep = nd > 12 ? (nd + 11) / 12 : 1, sstep = ns > 10 ? (ns + 9) / 10 : 1;
        for (size_t b = 0; b < nd; b += dstep)
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%u</text>\n",
                    x0 + b * cw + cw / 2, y0 + PH + 15, ds[b]);
        for (size_t a = 0; a < ns; a += sstep)
            fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%u</text>\n", x0 - 5,
                    y0 + PH - a * ch - ch / 2 + 4, ss[a]);
    }
    /* the colour bar, fast at the bottom */
    const int bx = ML + 2 * PW + GX + 10, by = MT, bh = 2 * PH + GY, bw = 24;
    for (int i = 0; i < 100; i++) {
        int r, g, b;
        ramp((i + 0.5) / 100.0, &r, &g, &b);
        fprintf(f, "<rect x=\"%d\" y=\"%.2f\" width=\"%d\" height=\"%.2f\" fill=\"rgb(%d,%d,%d)\"/>\n",
                bx, by + bh - (i + 1) * bh / 100.0, bw, bh / 100.0 + 0.5, r, g, b);
    }
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#555\"/>\n",
            bx, by, bw, bh);
    for (int i = 0; i <= 4; i++) {
        double v = logscale ? lo * pow(hi / lo, i / 4.0) : lo + (hi - lo) * i / 4.0;
        double y = by + bh - bh * i / 4.0;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#555\"/>\n"
                   "<text x=\"%d\" y=\"%.1f\">%.3g</text>\n",
                bx + bw, y, bx + bw + 5, y, bx + bw + 8, y + 4, v);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 %d %d)\">"
               "ns per document per tree (lower is faster%s)</text>\n",
            bx + bw + 120, by + bh / 2, bx + bw + 120, by + bh / 2,
            logscale ? "; logarithmic" : "");
    const struct { const point *p; const char *name, *colour; } mark[2] = {
        { def, "defaults", "black" }, { win, "winner", "red" } };
    for (int m = 0; m < 2; m++) {
        double y = by + bh - bh * SCALE(mark[m].p->ns);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"3\"/>\n<text x=\"%d\" y=\"%.1f\" fill=\"%s\" "
                   "font-weight=\"bold\">%s %.3g</text>\n",
                bx - 4, y, bx + bw + 4, y, mark[m].colour, bx + bw + 58, y + (m ? 14 : -4),
                mark[m].colour, mark[m].name, mark[m].p->ns);
    }
    char b1[160], b2[160];
    fprintf(f, "<text x=\"%d\" y=\"%d\">defaults (black on the bar; order SD, on no panel): "
               "%s, %.4f ns</text>\n", ML, H - 70, setting_str(&def->st, b1, sizeof b1), def->ns);
    fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"red\">winner (red: ringed%s): %s, %.4f ns, "
               "%.2fx the defaults' speed</text>\n", ML, H - 48,
            win->st.order >= QS_ORDER_DSD ? " on its panel" : "; its order has no panel",
            setting_str(&win->st, b2, sizeof b2), win->ns, win->ns > 0 ? def->ns / win->ns : 0);
    fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#555\">colour: one %s scale for every "
               "panel, from the fastest point measured (%.4f ns) to the slowest (%.4f ns)</text>\n",
            ML, H - 26, logscale ? "logarithmic" : "linear", lo, hi);
    fprintf(f, "</svg>\n");
#undef SCALE
    free(best);
    free(ds);
    free(ss);
    tool_out_commit(&so);
}

/* ------------------------------------------------------------ main */

static const char *setting_str(const setting *st, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s s=%u d=%u tau=%u delta=%u batch=%u %s",
             qs_order_name((qs_order)st->order), st->s, st->d, st->tau, st->delta, st->batch,
             qs_backend_name(st->backend));
    return buf;
}

int main(int argc, char **argv)
{
    tool_init(argv[0]);
    static const struct option opts[] = {
        { "output", required_argument, 0, 'o' },
        { "budget", required_argument, 0, 'B' },
        { "exhaustive", no_argument, 0, 'E' },
        { "sample-docs", required_argument, 0, 'n' },
        { "seed", required_argument, 0, 's' },
        { "repeat", required_argument, 0, 'r' },
        { "backend", required_argument, 0, 'b' },
        { "threads", required_argument, 0, 'j' },
        { "absent", required_argument, 0, 'a' },
        { "plot", required_argument, 0, 'P' },
        { "time", no_argument, 0, 'T' },
        { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, 'V' },
        { 0, 0, 0, 0 },
    };
    const char *outpath = NULL, *plotpath = NULL, *bname = NULL;
    double budget = 20;
    int exhaustive = 0, time_only = 0;
    uint32_t sample_docs = 0, seed = 1, repeat = 3, max_threads = 1;
    qs_absent absent = QS_ABSENT_DEFAULT;
    int c;
    opterr = 0; /* our own one-line messages (tool_bad_option) */
    while ((c = getopt_long(argc, argv, ":o:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'o': outpath = optarg; break;
        case 'B': {
            char *e;
            errno = 0;
            budget = strtod(optarg, &e);
            if (!*optarg || *e || errno || !(budget > 0) || budget > 1e6)
                tool_die(EXIT_USAGE, "bad --budget '%s' (expected seconds, > 0)", optarg);
            break;
        }
        case 'E': exhaustive = 1; break;
        case 'n': sample_docs = tool_parse_u32(optarg, "--sample-docs", 1, UINT32_MAX); break;
        case 's': seed = tool_parse_u32(optarg, "--seed", 0, UINT32_MAX); break;
        case 'r': repeat = tool_parse_u32(optarg, "--repeat", 1, 64); break;
        case 'b': bname = optarg; break;
        case 'j': max_threads = tool_parse_u32(optarg, "--threads", 1, 4096); break;
        case 'a':
            if (strcmp(optarg, "zero") == 0)
                absent = QS_ABSENT_ZERO;
            else if (strcmp(optarg, "missing") == 0)
                absent = QS_ABSENT_MISSING;
            else
                tool_die(EXIT_USAGE, "bad --absent '%s' (expected zero or missing)", optarg);
            break;
        case 'P': plotpath = optarg; break;
        case 'T': time_only = 1; break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': printf("qs-blocktune %s\n", QS_VERSION_STRING); return EXIT_OK;
        default: tool_bad_option(c, argv, opts);
        }
    }
    if (argc - optind < 1)
        tool_die(EXIT_USAGE, "missing MODEL.qsm (qs-blocktune [options] MODEL.qsm [SAMPLE|-])");
    if (argc - optind > 2)
        tool_die(EXIT_USAGE, "too many arguments: one model and at most one sample file");
    if (!time_only && !outpath)
        tool_die(EXIT_USAGE, "missing -o TUNED.qsm (the tuned model)");
    if (time_only && (outpath || exhaustive || plotpath))
        tool_die(EXIT_USAGE, "--time measures only: it takes no -o, --exhaustive or --plot");
    qs_backend only = QS_BACKEND_UNKNOWN;
    if (bname) {
        only = qs_backend_find(bname);
        if (only == QS_BACKEND_UNKNOWN || only == QS_BACKEND_AUTO)
            tool_die(EXIT_USAGE, "unknown back end '%s' (see qs-score --list-backends)", bname);
    }
    tool_check_env();
    const char *mpath = argv[optind];
    const char *dpath = optind + 1 < argc ? argv[optind + 1] : "-";
    /* Every block is held (tool_hold) until freed, so that each exit frees
     * it.  The model: the library's one open path (as qs-score's and the
     * Python binding's), recognised, not converted (a .qsm is tuned). */
    qs_opened mo;
    const qs_open_options oo = { QS_FMT_UNKNOWN, QS_OPEN_NO_CONVERT | QS_OPEN_IGNORE_TUNING,
                                 0, 0, 0, 0 };
    tool_open_model(mpath, &oo, &mo);
    if (!mo.is_qsm)
        tool_die(EXIT_DATA, "%s: %s%s, not a .qsm: compile it first (qs-compile -o MODEL.qsm)",
                 mpath, mo.kind[0] ? "this is " : "", mo.kind[0] ? mo.kind : "unknown format");
    const unsigned char *mbuf = mo.qsm;
    const size_t mlen = mo.qsm_len;
    if (strcmp(dpath, "-") == 0)
        tool_check_stdin();
    /* A TUNED.qsm given as MODEL: tune from its stored defaults (the old
     * record is replaced), or (--time) time it with its record. */
    qs_error err;
    qs_error_clear(&err);
    tuner T;
    memset(&T, 0, sizeof T);
    tool_hold(&T, release_tuner);
    T.qsm = mbuf;
    T.qsm_len = mlen;
    T.repeat = repeat;
    T.progress = isatty(2) && !time_only;
    for (int i = 0; i < 3; i++)
        T.cache[i] = qs_cache_bytes(i + 1);
    layout(&T, 0, 0);
    qs_scorer_get_blocks(T.sc, &T.cur_tau, NULL, &T.cur_delta, NULL);
    qs_model_info mi;
    qs_model_get_info(qs_scorer_model(T.sc), &mi);
    T.ntrees = mi.num_trees;
    T.K = mi.num_classes;
    read_sample(T.sc, dpath, absent, &T.S);
    if (sample_docs)
        subsample(&T.S, sample_docs, seed);
    if (T.S.n < MIN_SAMPLE)
        tool_die(EXIT_USAGE, "%s: the sample has %zu document%s: too small to measure the "
                             "orders (at least %u: twice the 64-document batch of the widest "
                             "kernel)", strcmp(dpath, "-") ? dpath : "(stdin)", T.S.n,
                 T.S.n == 1 ? "" : "s", MIN_SAMPLE);
    T.out = malloc(T.S.n * T.K * sizeof *T.out);
    if (!T.out)
        tool_die(EXIT_SYSTEM, "out of memory");

    /* The defaults: what qs-score does with the stored values. */
    uint32_t def_tau, def_batch, def_delta;
    qs_scorer_get_blocks(T.sc, &def_tau, &def_batch, &def_delta, NULL);
    setting def = { .backend = qs_scorer_auto_backend(T.sc, NULL, 0), .tau = def_tau,
                    .delta = def_delta, .batch = def_batch, .order = QS_ORDER_SD };
    if (time_only) {
        qs_tuning tr;
        int have = qs_qsm_get_tuning(T.qsm, T.qsm_len, &tr, &err);
        if (have < 0)
            tool_die_err(mpath, &err);
        if (have && qs_tuning_matches(&tr)) {
            def.tau = tr.tree_block;
            def.delta = tr.delta ? tr.delta : def.delta;
            def.batch = tr.doc_block ? tr.doc_block : def.batch;
            def.order = (int)tr.order;
            def.s = tr.inner_s;
            def.d = tr.inner_d;
            if (tr.backend[0] && qs_backend_find(tr.backend) >= 0)
                def.backend = qs_backend_find(tr.backend);
        }
        /* Calibrate: passes per measurement. */
        T.inner = 1;
        apply(&T, &def);
        double one = run_once(&T, &def, 1);
        T.inner = one >= MIN_PASS_NS ? 1 : (unsigned)(MIN_PASS_NS / (one > 1 ? one : 1)) + 1;
        double ns = measure_threads(&T, &def, 1);
        char b[160];
        printf("%.4f\t%s\n", ns, setting_str(&def, b, sizeof b));
        tool_close_stdout();
        tool_release(&T);
        tool_release(&mo);
        return EXIT_OK;
    }

    T.inner = 1;
    apply(&T, &def);
    double one = run_once(&T, &def, 1);
    T.inner = one >= MIN_PASS_NS ? 1 : (unsigned)(MIN_PASS_NS / (one > 1 ? one : 1)) + 1;
    /* The budget covers the confirmation too: 4 points x 5 rounds x 2 passes. */
    T.budget_ns = budget * 1e9 - 40.0 * one * T.inner;
    if (T.budget_ns < budget * 1e9 * 0.2)
        T.budget_ns = budget * 1e9 * 0.2;
    T.t0 = now_ns();
    point *pd = measure(&T, &def, 0);
    const double def_ns = pd->ns;
    T.ref = malloc(T.S.n * T.K * sizeof *T.ref);
    if (!T.ref)
        tool_die(EXIT_SYSTEM, "out of memory");
    memcpy(T.ref, T.out, T.S.n * T.K * sizeof *T.ref);

    /* 1. Back ends: every exact back end this machine runs for the model
     * (not an alias of another, not a device's or a whole batch's),
     * measured with the defaults: those that read the QuickScorer layout
     * (qs, the vqs kernels), whose orders, τ and Δ are searched next, and
     * the others (vpred, struct, walk; oblivious for oblivious models),
     * which may win on their own (trees of thousands of leaves). */
    setting base = def;
    for (qs_backend b = 0; b < qs_backend_count(); b++) {
        qs_backend_info bi;
        if (qs_backend_get_info(b, &bi) != 0 || !bi.available ||
            (bi.flags & (QS_BACKEND_F_ALIAS | QS_BACKEND_F_DEVICE | QS_BACKEND_F_BATCH)))
            continue;
        if (only != QS_BACKEND_UNKNOWN && b != only)
            continue;
        qs_error perr;
        qs_error_clear(&perr);
        if (qs_scorer_prepare(T.sc, b, &perr) != 0) {
            if (perr.code == QS_ERR_UNSUPPORTED)
                continue; /* not for this model (oblivious only, say) */
            tool_die_err(mpath, &perr);
        }
        setting st = def;
        st.backend = b;
        /* (three times the defaults' time cannot win) */
        if (only == QS_BACKEND_UNKNOWN && !reads_layout(b) && !find(&T, &st) &&
            probed_slow(&T, &st, 3 * def_ns))
            continue;
        measure(&T, &st, 1);
    }
    int search = 1; /* the layout's settings are searched */
    {
        point *b = NULL;
        int found = 0;
        for (size_t i = 0; i < T.npts; i++) {
            const point *p = &T.pts[i];
            if ((p->stage > 1 && p->stage != STAGE_PROBED) ||
                (only != QS_BACKEND_UNKNOWN && p->st.backend != only))
                continue;
            found = 1;
            if (reads_layout(p->st.backend) && (!b || p->ns < b->ns))
                b = &T.pts[i];
        }
        if (b)
            base.backend = b->st.backend;
        else if (only != QS_BACKEND_UNKNOWN && !found)
            tool_die(EXIT_UNSUPPORTED, "back end '%s' is not measured here (a device's or a "
                                       "whole batch's, one this machine does not run, or one "
                                       "that cannot score this model): nothing to tune", bname);
        else
            search = 0; /* (--backend vpred, say: the back end is the setting) */
    }
    /* 2. τ: the default, halves and doubles of it, one block; then Δ. */
    if (search) {
        uint64_t T0 = def_tau ? def_tau : T.ntrees;
        uint32_t taus[8];
        int nt = 0;
        static const double f[] = { 0.25, 0.5, 1, 2, 4 };
        for (int i = 0; i < 5; i++) {
            uint64_t v = (uint64_t)(T0 * f[i]);
            if (v >= 1 && v < T.ntrees)
                taus[nt++] = (uint32_t)v;
        }
        taus[nt++] = 0;
        point *bt = NULL;
        for (int i = 0; i < nt && (exhaustive || !over_budget(&T)); i++) {
            setting st = base;
            st.tau = taus[i];
            point *p = measure(&T, &st, 2);
            if (!bt || p->ns < bt->ns)
                bt = p;
        }
        /* Documents per call of plain BWQS (δ, the batch: the rank and
         * byte-plane kernels take 64 at a time, and a block's data stays
         * in cache over the batch): 2, 4 and 8 times the default, at the
         * best τ. */
        for (uint32_t k = 2; bt && k <= 8 && (exhaustive || !over_budget(&T)); k *= 2) {
            setting st = base;
            st.tau = bt->st.tau;
            st.batch = def_batch * k;
            if (st.batch <= BATCH && st.batch < T.S.n)
                measure(&T, &st, 2);
        }
        if (exhaustive) {
            /* every τ gets the full grid */
            for (int i = 0; i < nt; i++) {
                setting st = base;
                st.tau = taus[i];
                grid_orders(&T, st);
            }
        } else {
            /* (a budget spent before any τ was measured keeps the base's) */
            if (bt)
                base.tau = bt->st.tau;
            guided_orders(&T, base);
        }
    }
    point *win = best_point(&T);
    double def_ns_confirmed = def_ns, win_confirmed = 0;
    char confirm[1200] = "";
    /* Δ around the winner. */
    {
        static const uint32_t deltas[] = { 4, 16 };
        setting cw = win->st;
        for (int i = 0; search && reads_layout(cw.backend) && i < 2; i++) {
            if (!exhaustive && over_budget(&T))
                break;
            setting st = cw;
            st.delta = deltas[i];
            if (st.delta != cw.delta)
                measure(&T, &st, 2);
        }
        win = best_point(&T);
    }
    /* Confirmation: the best few points and the defaults again, in
     * interleaved rounds (A B C D A B C D ...), medians: a point that was
     * fast by chance once does not win.  The winner must then beat the
     * defaults beyond noise: its median by 2%, and in at least 4 of the 5
     * rounds (each round measures both under the same conditions), else
     * the defaults are kept. */
    {
        enum { NC = 4, ROUNDS = 5 };
        point *cand[NC];
        int nc = 0;
        cand[nc++] = pd;
        for (int k = 0; k < NC - 1; k++) {
            point *b = NULL;
            for (size_t i = 0; i < T.npts; i++) {
                point *p = &T.pts[i];
                int taken = 0;
                for (int j = 0; j < nc; j++)
                    taken |= cand[j] == p;
                if (!taken && p->stage != STAGE_PROBED && (!b || p->ns < b->ns))
                    b = p;
            }
            if (b)
                cand[nc++] = b;
        }
        double v[NC][ROUNDS];
        int wins[NC] = { 0 }; /* rounds in which each was faster than the defaults */
        for (int r = 0; r < ROUNDS; r++)
            for (int j = 0; j < nc; j++) {
                apply(&T, &cand[j]->st);
                run_once(&T, &cand[j]->st, 1); /* warm after the switch */
                v[j][r] = run_once(&T, &cand[j]->st, 1) / T.inner / (double)T.S.n /
                          (double)(T.ntrees ? T.ntrees : 1);
                wins[j] += j > 0 && v[j][r] < v[0][r];
            }
        double med[NC];
        for (int j = 0; j < nc; j++) {
            qsort(v[j], ROUNDS, sizeof v[j][0], cmp_double);
            med[j] = v[j][ROUNDS / 2];
        }
        int w = 0;
        for (int j = 1; j < nc; j++)
            if (med[j] < med[w] && wins[j] >= ROUNDS - 1)
                w = j;
        size_t k = (size_t)snprintf(confirm, sizeof confirm,
                                    "confirmation (%d interleaved rounds, medians):", ROUNDS);
        for (int j = 0; j < nc && k < sizeof confirm; j++) {
            char b[200];
            k += (size_t)snprintf(confirm + k, sizeof confirm - k, "%s %s %.4f", j ? ";" : "",
                                  setting_str(&cand[j]->st, b, sizeof b), med[j]);
            if (j && k < sizeof confirm)
                k += (size_t)snprintf(confirm + k, sizeof confirm - k, " (faster in %d of %d)",
                                      wins[j], ROUNDS);
        }
        def_ns_confirmed = med[0];
        win = med[w] < med[0] * 0.98 ? cand[w] : pd;
        win_confirmed = win == pd ? med[0] : med[w];
    }
    /* Threads. */
    unsigned best_threads = 0;
    double win_ns_threads = win_confirmed;
    if (max_threads > 1)
        max_threads = tool_threads(max_threads); /* as many as can start */
    if (max_threads > 1) {
        for (unsigned t = 2; t <= max_threads; t = t < max_threads && t * 2 > max_threads ? max_threads : t * 2) {
            double ns = measure_threads(&T, &win->st, t);
            printf("threads %u\t%.4f\n", t, ns);
            if (ns < win_ns_threads * 0.95) {
                win_ns_threads = ns;
                best_threads = t;
            }
            if (t == max_threads)
                break;
        }
        if (!best_threads)
            best_threads = 1;
    }
    if (T.progress)
        fprintf(stderr, "\n");

    /* The report. */
    printf("# qs-blocktune %s: %zu documents, %llu trees; L1d %llu, L2 %llu, L3 %llu bytes\n",
           QS_VERSION_STRING, T.S.n, (unsigned long long)T.ntrees,
           (unsigned long long)T.cache[0], (unsigned long long)T.cache[1],
           (unsigned long long)T.cache[2]);
    printf("case\torder\ts\td\ttau\tdelta\tbatch\tbackend\tns/doc/tree\n");
    for (size_t i = 0; i < T.npts; i++) {
        const point *p = &T.pts[i];
        printf("%s\t%s\t%u\t%u\t%u\t%u\t%u\t%s\t%.4f%s\n", p->rc,
               qs_order_name((qs_order)p->st.order), p->st.s, p->st.d, p->st.tau, p->st.delta,
               p->st.batch, qs_backend_name(p->st.backend), p->ns,
               p == pd ? "\t(defaults)" : p == win ? "\t(winner)" : "");
    }
    char buf[200];
    printf("%s\n", confirm);
    printf("defaults: %s: %.4f ns/doc/tree\n", setting_str(&pd->st, buf, sizeof buf),
           def_ns_confirmed);
    printf("winner: %s%s: %.4f ns/doc/tree (%s)\n", setting_str(&win->st, buf, sizeof buf),
           win == pd ? " (the defaults)" : "", win_confirmed, win->rc);
    if (best_threads > 1)
        printf("threads: %u (%.4f ns/doc/tree)\n", best_threads, win_ns_threads);
    printf("gain over the defaults: %.3fx\n", def_ns_confirmed / win_confirmed);
    printf("points: %zu, search time %.1f s%s\n", T.npts, (now_ns() - T.t0) / 1e9,
           exhaustive ? " (exhaustive)" : "");

    /* The tuned model. */
    qs_tuning tr;
    memset(&tr, 0, sizeof tr);
    qs_tuning_fingerprint(&tr);
    tr.order = (uint32_t)win->st.order;
    tr.inner_s = win->st.s;
    tr.inner_d = win->st.d;
    tr.tree_block = win->st.tau;
    tr.doc_block = win->st.batch;
    tr.delta = win->st.delta;
    tr.threads = best_threads;
    snprintf(tr.backend, sizeof tr.backend, "%s",
             win->st.backend == qs_scorer_auto_backend(T.sc, NULL, 0) ? ""
                                                               : qs_backend_name(win->st.backend));
    tr.default_ns = def_ns_confirmed;
    tr.tuned_ns = win_confirmed;
    unsigned char *img;
    size_t ilen;
    if (qs_qsm_set_tuning(T.qsm, T.qsm_len, &tr, &img, &ilen, &err) != 0)
        tool_die_err(mpath, &err);
    tool_hold(img, free);
    if (plotpath)
        plot(&T, plotpath, win, pd);
    tool_out o;
    tool_out_open(&o, outpath, 1);
    tool_out_write(&o, img, ilen);
    tool_out_commit(&o);
    tool_release(img);
    tool_close_stdout();
    tool_release(&T);
    tool_release(&mo);
    return EXIT_OK;
}
