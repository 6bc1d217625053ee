/* test_cuda_emu: the GPU back end's kernels (lib/score/cuda/phases.h), run
 * by the emulator over the device tables (tables.c), against the reference
 * walk, bit for bit.
 *
 *   test_cuda_emu [-q] [-k KERNELS] [-B MAX] MODEL.qsm [DOCS.letor|-] [EDGE-DOCS [SEED]]
 *
 * Scores DOCS (if given, "-" for none) and EDGE-DOCS (default 300)
 * documents made from the model itself: each feature's values sit exactly
 * on one of the model's thresholds for it, one float step (in the model's
 * precision) either side, on ±0, ±the zero band and a step beyond, NaN,
 * ±inf, denormals, huge values, and around the categories of categorical
 * nodes.  Each set is scored by each kernel of KERNELS (a comma-separated
 * list of qs, rank, lanes, walk; default all four; a kernel that cannot
 * take the model says so and is left out) in several launch geometries,
 * with rows sent as double and, for a float32 model, as float32, and two
 * shuffles of each phase's threads (-q: two geometries, one shuffle, for
 * the conformance models).  The default geometry's first launch records
 * the shared-memory words each warp step touches: with -B MAX, a kernel
 * whose worst bank load (most distinct words of one bank in one step)
 * exceeds MAX fails.  Prints
 * one line per launch; exits 1 on any difference (or bank load over MAX),
 * 2 on a usage or load error. */
#include "score/cuda/device.h"
#include "score/cuda/tables.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "slurp.h"

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

typedef struct cand {
    double *v;
    uint32_t n, cap;
} cand;

static void add(cand *c, double v)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->v = realloc(c->v, sizeof(double) * c->cap);
        if (!c->v) {
            fprintf(stderr, "out of memory\n");
            exit(2);
        }
    }
    c->v[c->n++] = v;
}

/* A value in the model's precision. */
static double prec(const qs_model *m, double v) { return m->float_precision ? (double)(float)v : v; }

static double step(const qs_model *m, double v, int up)
{
    if (m->float_precision)
        return (double)nextafterf((float)v, up ? INFINITY : -INFINITY);
    return nextafter(v, up ? INFINITY : -INFINITY);
}

static void add_around(cand *c, const qs_model *m, double t)
{
    add(c, prec(m, t));
    add(c, step(m, prec(m, t), 0));
    add(c, step(m, prec(m, t), 1));
}

/* n documents of the model's features from the candidates. */
static double *edge_docs(const qs_scorer *s, uint32_t n, uint32_t nf)
{
    const qs_model *m = s->m;
    cand *c = calloc(nf, sizeof *c);
    double *x = xmalloc(sizeof(double) * (size_t)n * nf);
    if (!c) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    for (uint64_t i = 0; i < m->num_nodes; i++) {
        const qs_node *nd = &m->nodes[i];
        if (nd->kind == QS_NODE_NUM && c[nd->feature].n < 4096)
            add_around(&c[nd->feature], m, nd->value);
        if (nd->kind == QS_NODE_CAT) {
            cand *cf = &c[nd->feature];
            for (uint32_t v = 0; v < nd->cat_nwords * 32u + 2 && v < 300; v++)
                add(cf, (double)v);
            add(cf, -1.0);
            add(cf, -0.5);
            add(cf, 0.5);
            add(cf, 2.5);
        }
    }
    const double band = (double)1e-35f;
    const double special[] = { 0.0, -0.0, NAN, band, -band, 1e-40, -1e-40, 3e-35, INFINITY,
                               -INFINITY, 1e30, -1e30, 1.0, -1.0 };
    const uint32_t nsp = sizeof special / sizeof special[0];
    for (uint32_t d = 0; d < n; d++)
        for (uint32_t f = 0; f < nf; f++) {
            double v;
            uint64_t r = rnd();
            if (c[f].n && r % 8 < 6)
                v = c[f].v[(r >> 8) % c[f].n];
            else if (r % 8 == 6)
                v = special[(r >> 8) % nsp];
            else
                v = step(m, prec(m, special[(r >> 8) % nsp]), (r >> 40) & 1);
            x[(size_t)d * nf + f] = prec(m, v);
        }
    for (uint32_t f = 0; f < nf; f++)
        free(c[f].v);
    free(c);
    return x;
}

typedef struct geom {
    uint32_t threads, db, tau, shared;
    uint32_t pivots;        /* qs: 0 auto, 1 by search, 2 by rank */
} geom;

/* The launch geometries per kernel (0: the default). */
static const geom qs_geoms[] = {
    { 0, 0, 0, 0, 0 },          /* the defaults (pivots by rank where they fit) */
    { 32, 32, 3, 0, 1 },        /* one warp, three trees a block, pivots by search */
    { 96, 64, 0, 0, 0 },        /* two document warps, a ragged warp count */
    { 64, 32, 1, 0, 1 },        /* one tree a block, by search */
    { 128, 32, 0, 12288, 0 },   /* a small shared budget */
    { 64, 32, 0, 2048, 0 },     /* a budget no tree fits: vectors in global memory */
    { 0, 0, 0, 0, 1 },          /* the defaults, by search */
};
static const geom walk_geoms[] = {
    { 0, 0, 0, 0, 0 },      /* the defaults */
    { 64, 0, 0, 0, 0 },
    { 96, 0, 0, 0, 0 },     /* a ragged last warp */
    { 256, 0, 0, 0, 0 },
};

static void set(qs_cu_params *p, int i, uint32_t v)
{
    if (v) {
        p->v[i] = v;
        p->set |= 1u << i;
    }
}

static long bank_max = -1;
static uint32_t worst_seen[QS_CU_NKERNELS];

/* Emulate kernel k with geometry g for x[0 .. n) (rows of the model's nf
 * features) and shuffle seed; returns the number of documents whose scores
 * differ from want (or 1 more when the bank load is over -B). */
static long emulate(const qs_scorer *s, uint32_t k, const geom *g, int f32, const double *x,
                    uint32_t n, uint32_t nf, const double *want, uint64_t seed, const char *what,
                    int record)
{
    qs_cu_params p;
    memset(&p, 0, sizeof p);
    set(&p, QS_CU_OPT_KERNEL, k);
    p.set |= 1u << QS_CU_OPT_KERNEL;
    set(&p, QS_CU_OPT_THREADS, g->threads);
    set(&p, QS_CU_OPT_DB, g->db);
    set(&p, QS_CU_OPT_TAU, g->tau);
    set(&p, QS_CU_OPT_SHARED, g->shared);
    if (g->pivots) {
        p.v[QS_CU_OPT_PIVOTS] = g->pivots - 1u;
        p.set |= 1u << QS_CU_OPT_PIVOTS;
    }
    qs_cu_image im;
    qs_error err;
    if (qs_cu_image_build(s, &p, QS_CU_MAX_SHARED, &im, &err) != 0) {
        printf("%s %s threads=%u: cannot build: %s\n", what, qs_cu_kernel_names[k], g->threads,
               err.msg);
        return err.code == QS_ERR_UNSUPPORTED ? 0 : 1;
    }
    const uint32_t K = s->m->num_classes, nc = im.model.ncols ? im.model.ncols : 1;
    /* rows as the device's columns */
    void *rows = xmalloc((size_t)n * nc * (f32 ? sizeof(float) : sizeof(double)));
    for (uint32_t d = 0; d < n; d++)
        for (uint32_t c = 0; c < nc; c++) {
            const double v = im.model.ncols ? x[(size_t)d * nf + im.col_feature[c]] : 0.0;
            if (f32)
                ((float *)rows)[(size_t)d * nc + c] = (float)v;
            else
                ((double *)rows)[(size_t)d * nc + c] = v;
        }
    double *acc = xmalloc(sizeof(double) * (size_t)n * K);
    float *accf = xmalloc(sizeof(float) * (size_t)n * K);
    double *out = xmalloc(sizeof(double) * (size_t)n * K);
    for (size_t i = 0; i < (size_t)n * K; i++)
        out[i] = -12345.0;
    const uint32_t grid = qs_cu_grid(&im, n);
    uint32_t *gvec = NULL;
    if (im.vec_block)
        gvec = xmalloc((size_t)im.vec_block * grid);
    qs_cu_batch X = { .x = rows, .stride = nc, .n = n, .f32 = (uint32_t)f32, .db = im.db,
                      .acc = acc, .accf = accf, .out = out, .vec_global = gvec };
    qs_cu_rec *rec = record ? qs_cu_rec_new() : NULL;
    if ((record && !rec) || qs_cu_emulate(&im.model, &X, grid, im.threads, im.shared, seed, rec) != 0) {
        fprintf(stderr, "emulate: out of memory\n");
        exit(2);
    }
    long bad = 0;
    for (uint32_t d = 0; d < n; d++)
        if (memcmp(out + (size_t)d * K, want + (size_t)d * K, sizeof(double) * K) != 0) {
            if (bad < 3)
                fprintf(stderr, "  %s %s: document %u: %.17g, the walk %.17g\n", what,
                        qs_cu_kernel_names[k], d, out[(size_t)d * K], want[(size_t)d * K]);
            bad++;
        }
    uint32_t worst = 0;
    uint64_t steps = 0, mean = 0, lanes = 0;
    if (rec)
        qs_cu_rec_stats(rec, &worst, &steps, &mean, &lanes);
    if (worst > worst_seen[k])
        worst_seen[k] = worst;
    printf("%s %s threads=%u db=%u tau=%u shared=%u%s%s%s %s rows: %ld of %u documents differ",
           what, qs_cu_kernel_names[k], im.threads, im.db, im.tau, im.shared,
           im.vec_block ? " (global vectors)" : "", k == QS_CU_K_QS ? " pivots=" : "",
           k == QS_CU_K_QS ? im.pivots : "", f32 ? "float32" : "double", bad, n);
    if (rec)
        printf("; bank load worst %u, mean %.2f over %llu warp steps; %.1f of 32 lanes active "
               "(%.0f%%)",
               worst, mean / 1000.0, (unsigned long long)steps, lanes / 1000.0,
               lanes / 320.0);
    printf("\n");
    long fail = bad;
    if (bank_max >= 0 && worst > (uint32_t)bank_max) {
        printf("  %s: a warp step loads one bank with %u words (at most %ld asked)\n",
               qs_cu_kernel_names[k], worst, bank_max);
        fail++;
    }
    qs_cu_rec_free(rec);
    free(rows);
    free(acc);
    free(accf);
    free(out);
    free(gvec);
    qs_cu_image_free(&im);
    return fail;
}

/* -R: the recorder itself, on known patterns: 32 lanes on 32 words of one
 * bank load it 32 times (the first GPU-QS kernel's mask phase: one document,
 * 32 trees, vectors t * 16 + d of 8 bytes); on 32 banks, or one word, once. */
static int recorder_self_test(void)
{
    int bad = 0;
    static const struct {
        const char *what;
        uint64_t stride, expect;
    } pat[] = { { "32 lanes, one bank (stride 32 words)", 32, 32 },
                { "the old layout (t * 16 + d) * 8 bytes: stride 32 words", 32, 32 },
                { "32 lanes, 32 banks (stride 1)", 1, 1 },
                { "stride 2: two lanes a bank", 2, 2 },
                { "32 lanes, one word (a broadcast)", 0, 1 } };
    for (size_t i = 0; i < sizeof pat / sizeof *pat; i++) {
        qs_cu_rec *rec = qs_cu_rec_new();
        if (!rec)
            return 2;
        for (uint32_t lane = 0; lane < 32; lane++)
            qs_cu_rec_touch(rec, lane, 7, 1000 + lane * pat[i].stride);
        uint32_t worst;
        uint64_t steps, mean;
        qs_cu_rec_stats(rec, &worst, &steps, &mean, NULL);
        printf("recorder: %s: load %u (want %llu)\n", pat[i].what, worst,
               (unsigned long long)pat[i].expect);
        bad |= worst != pat[i].expect || steps != 1;
        qs_cu_rec_free(rec);
    }
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "-R") == 0)
        return recorder_self_test();
    int quick = 0;
    unsigned kmask = (1u << QS_CU_NKERNELS) - 1u;
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        if (strcmp(argv[i], "-q") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "-k") == 0 && i + 1 < argc) {
            kmask = 0;
            char *list = argv[++i], *save = NULL;
            for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                uint32_t k = 0;
                while (k < QS_CU_NKERNELS && strcmp(qs_cu_kernel_names[k], t) != 0)
                    k++;
                if (k == QS_CU_NKERNELS) {
                    fprintf(stderr, "unknown kernel '%s'\n", t);
                    return 2;
                }
                kmask |= 1u << k;
            }
        } else if (strcmp(argv[i], "-B") == 0 && i + 1 < argc) {
            bank_max = atol(argv[++i]);
        } else {
            break;
        }
    }
    argc -= i - 1;
    argv += i - 1;
    if (argc < 2 || argc > 5) {
        fprintf(stderr, "usage: test_cuda_emu [-q] [-k KERNELS] [-B MAX] MODEL.qsm "
                        "[DOCS.letor|-] [EDGE-DOCS [SEED]]\n");
        return 2;
    }
    size_t mlen;
    unsigned char *img = slurp(argv[1], &mlen);
    if (!img) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    qs_error err;
    qs_scorer *s = qs_scorer_load(img, mlen, &err);
    if (!s) {
        fprintf(stderr, "load: %s\n", err.msg);
        return 2;
    }
    const qs_model *m = s->m;
    const uint32_t nf = m->num_features ? m->num_features : 1, K = m->num_classes;
    uint32_t nedge = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 300;
    if (argc > 4)
        rng = strtoull(argv[4], NULL, 10) | 1;
    long bad = 0;
    for (int setno = 0; setno < 2; setno++) {
        uint32_t n = 0;
        double *x;
        const char *what;
        if (setno == 0) {
            if (argc < 3 || strcmp(argv[2], "-") == 0)
                continue;
            uint64_t rows;
            x = slurp_rows(s, argv[2], nf, &rows);
            n = (uint32_t)rows;
            what = "docs";
        } else {
            n = nedge;
            x = edge_docs(s, n, nf);
            what = "edge";
        }
        if (n == 0) {
            free(x);
            continue;
        }
        double *want = xmalloc(sizeof(double) * (size_t)n * K);
        for (uint32_t d = 0; d < n; d++)
            qs_model_walk_sum(m, x + (size_t)d * nf, want + (size_t)d * K);
        for (uint32_t k = 0; k < QS_CU_NKERNELS; k++) {
            if (!((kmask >> k) & 1u))
                continue;
            const geom *gs = k == QS_CU_K_QS ? qs_geoms : walk_geoms;
            const size_t ng = quick ? 2
                              : k == QS_CU_K_QS ? sizeof qs_geoms / sizeof *qs_geoms
                                                : sizeof walk_geoms / sizeof *walk_geoms;
            for (size_t g = 0; g < ng; g++)
                for (uint64_t seed = 1; seed <= (quick ? 1u : 2u); seed++)
                    for (int f32 = 0; f32 <= m->float_precision; f32++) {
                        if (quick && f32 != m->float_precision)
                            continue;
                        /* the bank recorder on the default geometry's first run */
                        bad += emulate(s, k, &gs[g], f32, x, n, nf, want,
                                       seed * 0x9E3779B97F4A7C15ull, what,
                                       g == 0 && seed == 1 && f32 == m->float_precision);
                    }
        }
        free(want);
        free(x);
    }
    for (uint32_t k = 0; k < QS_CU_NKERNELS; k++)
        if ((kmask >> k) & 1u)
            printf("bank load of %s: worst %u\n", qs_cu_kernel_names[k], worst_seen[k]);
    qs_scorer_free(s);
    free(img);
    return bad ? 1 : 0;
}
