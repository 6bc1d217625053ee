/* test_cuda_emu: the GPU-QS kernel's phases (lib/score/cuda/phases.h), run
 * by the emulator over the device tables (tables.c), against the reference
 * walk, bit for bit.
 *
 *   test_cuda_emu [-q] MODEL.qsm [DOCS.letor] [EDGE-DOCS [SEED]]
 *
 * Scores DOCS (if given, "-" for none) and EDGE-DOCS (default 300)
 * documents made from the model itself: each feature's values sit exactly
 * on one of the model's thresholds for it, one float step (in the model's
 * precision) either side, on ±0, ±the zero band and a step beyond, NaN,
 * ±inf, denormals, huge values, and around the categories of categorical
 * nodes.  Each set is scored with several launch geometries (documents per
 * thread-block, threads, τ, the shared budget, global-memory vectors) and
 * two shuffles of each phase's threads (-q: three geometries, one shuffle,
 * for the conformance models).  Prints one line per geometry;
 * exits 1 on any difference, 2 on a usage or load error. */
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
    const qs_layout *L = s->L;
    cand *c = calloc(nf, sizeof *c);
    double *x = malloc(sizeof(double) * (size_t)n * nf);
    if (!c || !x) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    for (uint32_t g = 0; g < L->ngroups; g++) {
        const qs_group *G = &L->groups[g];
        for (uint32_t i = G->begin; i < G->end; i++)
            if (c[G->feature].n < 4096)
                add_around(&c[G->feature], m, L->thr[i]);
    }
    for (uint32_t k = 0; k < L->ncat; k++) {
        const qs_node *nd = &m->nodes[L->cats[k].node];
        cand *cf = &c[nd->feature];
        for (uint32_t v = 0; v < nd->cat_nwords * 32u + 2 && v < 300; v++)
            add(cf, (double)v);
        add(cf, -1.0);
        add(cf, -0.5);
        add(cf, 0.5);
        add(cf, 2.5);
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

/* Emulate the kernel for x[0 .. n) with geometry p and shuffle seed;
 * returns the number of documents whose scores differ from want. */
static long emulate(const qs_scorer *s, const qs_cu_params *p, const double *x, uint32_t n,
                    uint32_t nf, const double *want, uint64_t seed, const char *what)
{
    qs_cu_image im;
    qs_error err;
    if (qs_cu_image_build(s, p, &im, &err) != 0) {
        fprintf(stderr, "image: %s\n", err.msg);
        exit(2);
    }
    const uint32_t K = s->m->num_classes;
    double *acc = malloc(sizeof(double) * (size_t)n * K);
    float *accf = malloc(sizeof(float) * (size_t)n * K);
    double *out = malloc(sizeof(double) * (size_t)n * K);
    const uint32_t grid = qs_cu_grid(&im, n);
    unsigned char *vec = NULL, *gvec = NULL;
    if (im.shared)
        vec = aligned_alloc(64, (im.shared + 63) & ~(size_t)63);
    else
        gvec = aligned_alloc(64, ((size_t)im.vec_block * grid + 63) & ~(size_t)63);
    if (!acc || !accf || !out || (!vec && !gvec)) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    qs_cu_batch X = { .x = x, .stride = nf, .n = n, .db = im.db, .acc = acc, .accf = accf,
                      .out = out, .vec_global = gvec };
    qs_cu_emulate(&im.model, &X, grid, im.threads, vec, seed);
    long bad = 0;
    for (uint32_t d = 0; d < n; d++)
        if (memcmp(out + (size_t)d * K, want + (size_t)d * K, sizeof(double) * K) != 0) {
            if (bad < 3)
                fprintf(stderr, "  %s: document %u: %.17g, the walk %.17g\n", what, d,
                        out[(size_t)d * K], want[(size_t)d * K]);
            bad++;
        }
    printf("%s db=%u threads=%u tau=%u blocks=%u %s: %ld of %u documents differ\n", what, im.db,
           im.threads, im.tau, im.model.nblocks, im.shared ? "shared" : "global", bad, n);
    free(acc);
    free(accf);
    free(out);
    free(vec);
    free(gvec);
    qs_cu_image_free(&im);
    return bad;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "-q") == 0;
    if (quick) {
        argv++;
        argc--;
    }
    if (argc < 2 || argc > 5) {
        fprintf(stderr, "usage: test_cuda_emu MODEL.qsm [DOCS.letor|-] [EDGE-DOCS [SEED]]\n");
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
    const qs_cu_params geoms[] = {
        { 0, 0, 0, 0 },            /* the defaults */
        { 1, 32, 0, 0 },           /* one document, one warp */
        { 5, 64, 3, 0 },           /* ragged thread-blocks, three trees a block */
        { 32, 32, 1, 0 },          /* more documents than a warp covers twice */
        { 7, 96, 0, 4096 },        /* a small shared budget */
        { 3, 64, 0, 1024 },        /* a small budget */
        { 3, 64, 0, 64 },          /* a budget a multi-word tree does not fit: global vectors */
    };
    static const int quick_geoms[] = { 0, 2, 6 };
    long bad = 0;
    for (int set = 0; set < 2; set++) {
        uint32_t n = 0;
        double *x;
        const char *what;
        if (set == 0) {
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
        double *want = malloc(sizeof(double) * (size_t)n * K);
        if (!want) {
            fprintf(stderr, "out of memory\n");
            return 2;
        }
        for (uint32_t d = 0; d < n; d++)
            qs_model_walk_sum(m, x + (size_t)d * nf, want + (size_t)d * K);
        if (quick)
            for (size_t g = 0; g < sizeof quick_geoms / sizeof quick_geoms[0]; g++)
                bad += emulate(s, &geoms[quick_geoms[g]], x, n, nf, want, 0x9E3779B97F4A7C15ull,
                               what);
        else
            for (size_t g = 0; g < sizeof geoms / sizeof geoms[0]; g++)
                for (uint64_t seed = 1; seed <= 2; seed++)
                    bad += emulate(s, &geoms[g], x, n, nf, want, seed * 0x9E3779B97F4A7C15ull,
                                   what);
        free(want);
        free(x);
    }
    qs_scorer_free(s);
    free(img);
    return bad ? 1 : 0;
}
