/* tables.c: the GPU back end's tunables, its choice of kernel and the
 * device image of a scorer (tables.h). */
#include "score/cuda/tables.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ tunables */

const char *const qs_cu_kernel_names[QS_CU_NKERNELS + 2] = { "qs", "rank", "lanes", "walk",
                                                             "auto", NULL };
static const char *const pivot_names[4] = { "search", "rank", "auto", NULL };

const qs_cu_tunable qs_cu_tunables[QS_CU_NOPT] = {
    [QS_CU_OPT_KERNEL] = { "kernel", "QS_CUDA_KERNEL", QS_CU_NKERNELS, QS_CU_NKERNELS, 1,
                           QS_CU_NKERNELS, qs_cu_kernel_names,
                           "the kernel: auto (by the model), qs, rank, lanes or walk" },
    [QS_CU_OPT_THREADS] = { "threads", "QS_CUDA_THREADS", 32, QS_CU_MAX_THREADS, 32, 0, NULL,
                            "threads per thread-block (rank, lanes, walk: its documents; "
                            "default 128; qs: 256, at most 512)" },
    [QS_CU_OPT_DB] = { "db", "QS_CUDA_DB", 32, QS_CU_MAX_THREADS_QS, 32, QS_CU_DEFAULT_DB, NULL,
                       "qs: documents per thread-block" },
    [QS_CU_OPT_TAU] = { "tau", "QS_CUDA_TAU", 1, 1u << 22, 1, 0, NULL,
                        "qs: most trees per tree block (default: as many as the shared "
                        "budget holds)" },
    [QS_CU_OPT_SHARED] = { "shared", "QS_CUDA_SHARED", 1024, QS_CU_MAX_SHARED, 1,
                           QS_CU_DEFAULT_SHARED, NULL,
                           "shared-memory bytes per thread-block (capped at the device's "
                           "limit)" },
    [QS_CU_OPT_SUB] = { "sub", "QS_CUDA_SUB", 1, 1u << 24, 1, QS_CU_DEFAULT_SUB, NULL,
                        "most documents per transfer and launch" },
    [QS_CU_OPT_STREAMS] = { "streams", "QS_CUDA_STREAMS", 1, 4, 1, QS_CU_DEFAULT_STREAMS, NULL,
                            "streams, each with its own buffers: copies overlap kernels" },
    [QS_CU_OPT_F32] = { "f32", "QS_CUDA_F32", 0, 1, 1, 1, NULL,
                        "1: a float32 model's documents travel as float32 when every value of a "
                        "transfer is one; 0: always as double" },
    [QS_CU_OPT_PIVOTS] = { "pivots", "QS_CUDA_PIVOTS", 2, 2, 1, 2, pivot_names,
                           "qs: how a lane finds its false run: rank (the document's ranks staged "
                           "once, a table load per group), search (a binary search per group), "
                           "auto (rank where its tables fit)" },
    [QS_CU_OPT_WARM] = { "warm", "QS_CUDA_WARM", 0, 1, 1, 1, NULL,
                         "1: a device back end named to qs-score (qs_backend_warm_up) starts "
                         "its device at once, beside loading and parsing; 0: at prepare" },
};

int qs_cu_tunable_find(const char *name)
{
    for (int i = 0; i < QS_CU_NOPT; i++)
        if (strcmp(qs_cu_tunables[i].name, name) == 0)
            return i;
    return -1;
}

int qs_cu_param_parse(qs_cu_params *p, int i, const char *value, const char *what,
                      qs_error *err)
{
    const qs_cu_tunable *T = &qs_cu_tunables[i];
    char q[48];
    qs_quote(q, sizeof q, value, strlen(value));
    if (T->names) {
        for (uint32_t k = 0; T->names[k]; k++)
            if (strcmp(T->names[k], value) == 0) {
                p->v[i] = k;
                p->set |= 1u << i;
                return 0;
            }
        char list[96] = "";
        size_t n = 0;
        for (uint32_t k = 0; T->names[k]; k++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
                                  k == 0 ? "" : T->names[k + 1] ? ", " : " or ", T->names[k]);
        return qs_fail(err, QS_ERR_ARG, 0, "%s='%s': expected %s", what, q, list);
    }
    uint64_t v;
    if (qs_parse_count(value, T->lo, T->hi, &v) != 0 || v % T->multiple != 0) {
        if (T->multiple > 1)
            return qs_fail(err, QS_ERR_ARG, 0,
                           "%s='%s': expected a multiple of %u in %u..%u (decimal digits only)",
                           what, q, T->multiple, T->lo, T->hi);
        return qs_fail(err, QS_ERR_ARG, 0,
                       "%s='%s': expected a whole number in %u..%u (decimal digits only)", what,
                       q, T->lo, T->hi);
    }
    p->v[i] = (uint32_t)v;
    p->set |= 1u << i;
    return 0;
}

int qs_cu_emu_fail_parse(const char *v, int *what, uint64_t *n, qs_error *err)
{
    static const char *const whats[5] = { "alloc", "put", "launch", "get", "wait" };
    *what = 0;
    *n = 1;
    if (!v || !*v)
        return 0;
    for (int i = 0; i < 5; i++) {
        const size_t k = strlen(whats[i]);
        if (strncmp(v, whats[i], k) != 0 || (v[k] != '\0' && v[k] != ':'))
            continue;
        if (v[k] == ':' && qs_parse_count(v + k + 1, 1, UINT64_MAX, n) != 0)
            break;
        *what = i + 1;
        return 0;
    }
    char q[48];
    qs_quote(q, sizeof q, v, strlen(v));
    return qs_fail(err, QS_ERR_ARG, 0,
                   "QS_CUDA_EMU_FAIL='%s': expected alloc, put, launch, get or wait, with :N "
                   "(N >= 1) for the N-th call",
                   q);
}

int qs_cu_params_env(qs_cu_params *p, qs_error *err)
{
    for (int i = 0; i < QS_CU_NOPT; i++) {
        const char *v = getenv(qs_cu_tunables[i].env);
        if (v && *v && qs_cu_param_parse(p, i, v, qs_cu_tunables[i].env, err) != 0)
            return -1;
    }
    int what;
    uint64_t n;
    return qs_cu_emu_fail_parse(getenv("QS_CUDA_EMU_FAIL"), &what, &n, err);
}

int qs_cu_check_option(const char *name, const char *value, qs_error *err)
{
    const int i = qs_cu_tunable_find(name);
    if (i < 0)
        return qs_fail(err, QS_ERR_ARG, 0,
                       "unknown device option '%s' (expected kernel, threads, db, tau, shared, "
                       "pivots, sub, streams, f32 or warm)",
                       name);
    qs_cu_params p = { { 0 }, 0 };
    char what[64];
    snprintf(what, sizeof what, "device option %s", name);
    return qs_cu_param_parse(&p, i, value, what, err);
}

int qs_cu_params_for(const qs_scorer *s, qs_cu_params *p, qs_error *err)
{
    memset(p, 0, sizeof *p);
    if (qs_cu_params_env(p, err) != 0)
        return -1;
    for (uint32_t k = 0; k < s->ndevopts; k++) {
        const int i = qs_cu_tunable_find(s->devopts[k].name);
        char what[64];
        snprintf(what, sizeof what, "device option %s", s->devopts[k].name);
        if (i < 0 || qs_cu_param_parse(p, i, s->devopts[k].value, what, err) != 0)
            return i < 0 ? qs_cu_check_option(s->devopts[k].name, "", err) : -1;
    }
    return 0;
}

/* Value of tunable i: given, or its default. */
static uint32_t opt(const qs_cu_params *p, int i)
{
    return (p->set >> i) & 1u ? p->v[i] : qs_cu_tunables[i].def;
}

/* ------------------------------------------------------------ model facts */

/* The model's used features as sorted device columns. */
typedef struct cols {
    uint32_t *feat;       /* column -> feature */
    uint32_t n;
} cols;

static int cmp_u32(const void *a, const void *b)
{
    const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int cols_build(const qs_model *m, cols *c)
{
    const uint64_t n = m->num_nodes + m->num_lin_terms;
    uint32_t *f = malloc(sizeof(uint32_t) * (n ? n : 1));
    if (!f)
        return -1;
    uint64_t k = 0;
    for (uint64_t i = 0; i < m->num_nodes; i++)
        if (m->nodes[i].kind != QS_NODE_LEAF)
            f[k++] = m->nodes[i].feature;
    for (uint64_t i = 0; i < m->num_lin_terms; i++)
        f[k++] = m->lin_feature[i];
    qsort(f, k, sizeof *f, cmp_u32);
    uint32_t u = 0;
    for (uint64_t i = 0; i < k; i++)
        if (u == 0 || f[u - 1] != f[i])
            f[u++] = f[i];
    c->feat = f;
    c->n = u;
    return 0;
}

static uint32_t col_of(const cols *c, uint32_t feature)
{
    uint32_t b = 0, e = c->n;
    while (b < e) {
        const uint32_t mid = b + (e - b) / 2;
        if (c->feat[mid] < feature)
            b = mid + 1;
        else
            e = mid;
    }
    return b;
}

/* The rank tables: (feature, rule) pairs and each feature's distinct
 * thresholds. */
typedef struct ranks {
    qs_cu_vf *vf;         /* sorted by (feature's column, rule) */
    uint32_t nvf;
    double *thr;          /* each feature's distinct thresholds, ascending */
    uint64_t nthr;
    uint32_t *fthr_off, *fthr_n; /* per column */
    char why[160];        /* when they cannot be built: why */
} ranks;

typedef struct fv {
    uint32_t col;
    double v;
} fv;

static int cmp_fv(const void *a, const void *b)
{
    const fv *x = a, *y = b;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return x->v < y->v ? -1 : x->v > y->v;
}

static void ranks_free(ranks *r)
{
    free(r->vf);
    free(r->thr);
    free(r->fthr_off);
    free(r->fthr_n);
    memset(r, 0, sizeof *r);
}

/* 0, or 1 with r->why when the model cannot be ranked, or -1 (memory). */
static int ranks_build(const qs_model *m, const cols *c, int skip_cat, ranks *r)
{
    memset(r, 0, sizeof *r);
    uint64_t nnum = 0;
    for (uint64_t i = 0; i < m->num_nodes; i++) {
        const qs_node *n = &m->nodes[i];
        if (n->kind == QS_NODE_CAT && !skip_cat) {
            snprintf(r->why, sizeof r->why, "categorical nodes are not ranked");
            return 1;
        }
        if (n->kind == QS_NODE_NUM) {
            if (n->value != n->value) {
                snprintf(r->why, sizeof r->why, "a NaN threshold cannot be ranked");
                return 1;
            }
            nnum++;
        }
    }
    fv *p = malloc(sizeof(fv) * (nnum ? nnum : 1));
    r->fthr_off = calloc(c->n ? c->n : 1, sizeof(uint32_t));
    r->fthr_n = calloc(c->n ? c->n : 1, sizeof(uint32_t));
    uint8_t *rules = calloc(c->n ? c->n : 1, 1);
    if (!p || !r->fthr_off || !r->fthr_n || !rules) {
        free(p);
        free(rules);
        ranks_free(r);
        return -1;
    }
    uint64_t k = 0;
    for (uint64_t i = 0; i < m->num_nodes; i++) {
        const qs_node *n = &m->nodes[i];
        if (n->kind != QS_NODE_NUM)
            continue;
        const uint32_t col = col_of(c, n->feature);
        p[k++] = (fv){ col, n->value };
        rules[col] |= (uint8_t)(1u << n->miss);
    }
    qsort(p, k, sizeof *p, cmp_fv);
    /* distinct thresholds per column (-0.0 and +0.0 are one: every value
     * compares alike against them) */
    uint64_t u = 0;
    for (uint64_t i = 0; i < k; i++)
        if (u == 0 || p[u - 1].col != p[i].col || !(p[u - 1].v == p[i].v))
            p[u++] = p[i];
    r->thr = malloc(sizeof(double) * (u ? u : 1));
    if (!r->thr) {
        free(p);
        free(rules);
        ranks_free(r);
        return -1;
    }
    for (uint64_t i = 0; i < u; i++) {
        r->thr[i] = p[i].v;
        if (r->fthr_n[p[i].col]++ == 0)
            r->fthr_off[p[i].col] = (uint32_t)i;
    }
    r->nthr = u;
    free(p);
    uint32_t nvf = 0, most = 0;
    for (uint32_t col = 0; col < c->n; col++) {
        for (uint32_t rule = 0; rule < 3; rule++)
            nvf += (rules[col] >> rule) & 1u;
        most = r->fthr_n[col] > most ? r->fthr_n[col] : most;
    }
    if (most > QS_CU_RANK_MAX || nvf > 0xFFFFu || u > UINT32_MAX) {
        snprintf(r->why, sizeof r->why,
                 "%u distinct thresholds of one feature and %u (feature, missing rule) pairs "
                 "(ranks take at most %u and 65535)",
                 most, nvf, QS_CU_RANK_MAX);
        free(rules);
        return 1;
    }
    r->vf = malloc(sizeof(qs_cu_vf) * (nvf ? nvf : 1));
    if (!r->vf) {
        free(rules);
        ranks_free(r);
        return -1;
    }
    for (uint32_t col = 0; col < c->n; col++)
        for (uint32_t rule = 0; rule < 3; rule++)
            if ((rules[col] >> rule) & 1u)
                r->vf[r->nvf++] = (qs_cu_vf){ col, rule, r->fthr_off[col], r->fthr_n[col] };
    free(rules);
    return 0;
}

static uint32_t vf_of(const ranks *r, uint32_t col, uint32_t miss)
{
    uint32_t b = 0, e = r->nvf;
    while (b < e) {
        const uint32_t mid = b + (e - b) / 2;
        const qs_cu_vf *V = &r->vf[mid];
        if (V->col < col || (V->col == col && V->miss < miss))
            b = mid + 1;
        else
            e = mid;
    }
    return b;
}

/* The rank of threshold v among its column's distinct thresholds. */
static uint32_t rank_of(const ranks *r, uint32_t col, double v)
{
    const double *t = r->thr + r->fthr_off[col];
    uint32_t b = 0, e = r->fthr_n[col];
    while (b < e) {
        const uint32_t mid = b + (e - b) / 2;
        if (t[mid] < v)
            b = mid + 1;
        else
            e = mid;
    }
    return b;
}

/* Per tree: its leaves' positions in the layout's leaf order by node (pos),
 * and its internal nodes' compact numbers (idx). */
typedef struct treemap {
    uint32_t *pos, *idx;
    uint32_t cap;
} treemap;

static int treemap_fill(treemap *tm, const qs_model *m, const qs_layout *L, uint64_t t,
                        uint32_t *ninternal)
{
    const qs_tree *T = &m->trees[t];
    if (T->num_nodes > tm->cap) {
        free(tm->pos);
        free(tm->idx);
        tm->pos = malloc(sizeof(uint32_t) * T->num_nodes);
        tm->idx = malloc(sizeof(uint32_t) * T->num_nodes);
        tm->cap = tm->pos && tm->idx ? T->num_nodes : 0;
        if (!tm->cap)
            return -1;
    }
    const qs_node *nd = m->nodes + T->node_off;
    uint32_t ni = 0;
    for (uint32_t i = 0; i < T->num_nodes; i++) {
        tm->pos[i] = UINT32_MAX;
        tm->idx[i] = nd[i].kind == QS_NODE_LEAF ? UINT32_MAX : ni++;
    }
    for (uint32_t k = 0; k < L->nleaves[t]; k++) {
        const uint32_t node = L->leaf_node[L->leaf_off[t] + k];
        if (node < T->num_nodes && tm->pos[node] == UINT32_MAX)
            tm->pos[node] = k;
    }
    *ninternal = ni;
    return 0;
}

/* ------------------------------------------------------------ the choice */

/* Whether the ranks of s's model fit the shared budget: the threads per
 * thread-block they allow (0: none). */
static uint32_t rank_threads(uint32_t nvf, const qs_cu_params *p, uint32_t shared_max)
{
    uint32_t budget = opt(p, QS_CU_OPT_SHARED);
    if (shared_max && budget > shared_max)
        budget = shared_max;
    uint32_t th = (p->set >> QS_CU_OPT_THREADS) & 1u ? p->v[QS_CU_OPT_THREADS]
                                                       : QS_CU_DEFAULT_THREADS_WALK;
    const uint64_t per = (uint64_t)(nvf ? nvf : 1) * 2u;
    if ((uint64_t)th * per > budget)
        th = (uint32_t)(budget / per) / 32u * 32u;
    /* fewer than 64 threads a thread-block would leave an SM nearly idle:
     * the walk comparing doubles then does better */
    return th >= 64 ? th : 0;
}

typedef struct facts {
    int cat, linear, nan_thr;
    uint32_t most_leaves, most_nodes;
} facts;

static void model_facts(const qs_scorer *s, facts *f)
{
    const qs_model *m = s->m;
    memset(f, 0, sizeof *f);
    for (uint64_t i = 0; i < m->num_nodes; i++) {
        f->cat |= m->nodes[i].kind == QS_NODE_CAT;
        f->nan_thr |= m->nodes[i].kind == QS_NODE_NUM && m->nodes[i].value != m->nodes[i].value;
    }
    f->linear = m->num_linear > 0;
    for (uint64_t t = 0; t < m->num_trees; t++) {
        f->most_leaves = s->L->nleaves[t] > f->most_leaves ? s->L->nleaves[t] : f->most_leaves;
        f->most_nodes = m->trees[t].num_nodes > f->most_nodes ? m->trees[t].num_nodes
                                                               : f->most_nodes;
    }
}

/* What the choice needs of the rank tables (built once: ranks_build with
 * categorical nodes left out). */
typedef struct rankinfo {
    int rc;               /* ranks_build's: 0, or 1 with why */
    uint32_t nvf, most_thr;
    char why[160];
} rankinfo;

static void rank_info(const ranks *r, int rc, rankinfo *ri)
{
    memset(ri, 0, sizeof *ri);
    ri->rc = rc;
    if (rc) {
        snprintf(ri->why, sizeof ri->why, "%s", r->why);
        return;
    }
    ri->nvf = r->nvf;
    for (uint32_t i = 0; i < r->nvf; i++)
        ri->most_thr = r->vf[i].nthr > ri->most_thr ? r->vf[i].nthr : ri->most_thr;
}

static int takes(uint32_t k, const qs_cu_params *p, const facts *f, const rankinfo *ri, char *why,
                 size_t cap)
{
    if (k == QS_CU_K_QS || k == QS_CU_K_WALK)
        return 1;
    if (f->cat) {
        snprintf(why, cap, "categorical nodes (the rank kernels compare ranks of numerical "
                           "thresholds only)");
        return 0;
    }
    if (f->most_nodes > 2u * QS_CU_RANK_MAX) {
        snprintf(why, cap, "trees of up to %u nodes (the rank kernels' nodes number at most "
                           "%u leaves and internal nodes)",
                 f->most_nodes, QS_CU_RANK_MAX);
        return 0;
    }
    if (k == QS_CU_K_LANES && f->most_leaves > 64) {
        snprintf(why, cap, "trees of up to %u leaves (lanes: at most 64)", f->most_leaves);
        return 0;
    }
    if (ri->rc) {
        snprintf(why, cap, "%s", ri->why);
        return 0;
    }
    if (!rank_threads(ri->nvf, p, 0)) {
        snprintf(why, cap, "the ranks of %u (feature, missing rule) pairs do not fit the "
                           "shared budget for 64 documents a thread-block",
                 ri->nvf);
        return 0;
    }
    return 1;
}

static uint32_t pick(const qs_cu_params *p, const facts *f, const rankinfo *ri, char *why,
                     size_t cap)
{
    char no[160] = "";
    if (!takes(QS_CU_K_RANK, p, f, ri, no, sizeof no)) {
        snprintf(why, cap, "walk: %s (auto's rule, estimated: not yet measured on a device)", no);
        return QS_CU_K_WALK;
    }
    if (f->most_leaves <= 16) {
        snprintf(why, cap, "lanes: trees of <= 16 leaves (auto's rule, estimated: not yet "
                           "measured on a device)");
        return QS_CU_K_LANES;
    }
    snprintf(why, cap, "rank: trees of up to %u leaves (auto's rule, estimated: not yet "
                       "measured on a device)",
             f->most_leaves);
    return QS_CU_K_RANK;
}

/* The facts and the rank summary of s's model (the ranks freed). */
static int choice_facts(const qs_scorer *s, facts *f, rankinfo *ri)
{
    model_facts(s, f);
    cols c;
    ranks r;
    if (cols_build(s->m, &c) != 0)
        return -1;
    const int rc = ranks_build(s->m, &c, 1, &r);
    free(c.feat);
    if (rc < 0)
        return -1;
    rank_info(&r, rc, ri);
    ranks_free(&r);
    return 0;
}

int qs_cu_kernel_takes(const qs_scorer *s, uint32_t k, const qs_cu_params *p, char *why,
                       size_t cap)
{
    facts f;
    rankinfo ri;
    if (choice_facts(s, &f, &ri) != 0) {
        snprintf(why, cap, "out of memory");
        return 0;
    }
    return takes(k, p, &f, &ri, why, cap);
}

uint32_t qs_cu_pick_kernel(const qs_scorer *s, const qs_cu_params *p, char *why, size_t cap)
{
    facts f;
    rankinfo ri;
    if (choice_facts(s, &f, &ri) != 0) {
        snprintf(why, cap, "walk: out of memory for the rank tables");
        return QS_CU_K_WALK;
    }
    return pick(p, &f, &ri, why, cap);
}

/* ------------------------------------------------------------ the image */

/* Bytes of one tree's leaf vector in block B. */
static uint32_t slot_of(const qs_block *B)
{
    if (B->kind == QS_BLOCK_OMEGA)
        return 4;
    if (B->width == 0)
        return 8u * B->words;
#if QS_CU_MUTATION == 3
    if (B->width == 16)
        return 1;
#endif
    return B->width / 8u;
}

static uint32_t kind_of(const qs_block *B)
{
    return B->kind == QS_BLOCK_OMEGA ? QS_CU_OMEGA : B->width == 0 ? QS_CU_WIDE : QS_CU_NARROW;
}

enum {
    P_TREES, P_LEAVES, P_LEAFLIN, P_LINEAR, P_LINCOL, P_LINCOEFF, P_BASE, P_CATWORDS, P_BLOCKS,
    P_GROUPS, P_THR, P_ETREE, P_EMASK, P_CATS, P_VFS, P_VTHR, P_GEND, P_NODES
};
_Static_assert(P_NODES + 1 == QS_CU_NPTR, "QS_CU_NPTR");

static const void **field(qs_cu_model *M, int i)
{
    switch (i) {
    case P_TREES: return (const void **)&M->trees;
    case P_LEAVES: return (const void **)&M->leaves;
    case P_LEAFLIN: return (const void **)&M->leaf_lin;
    case P_LINEAR: return (const void **)&M->linear;
    case P_LINCOL: return (const void **)&M->lin_col;
    case P_LINCOEFF: return (const void **)&M->lin_coeff;
    case P_BASE: return (const void **)&M->base;
    case P_CATWORDS: return (const void **)&M->cat_words;
    case P_BLOCKS: return (const void **)&M->blocks;
    case P_GROUPS: return (const void **)&M->groups;
    case P_THR: return (const void **)&M->thr;
    case P_ETREE: return (const void **)&M->etree;
    case P_EMASK: return (const void **)&M->emask;
    case P_CATS: return (const void **)&M->cats;
    case P_VFS: return (const void **)&M->vfs;
    case P_VTHR: return (const void **)&M->vthr;
    case P_GEND: return (const void **)&M->gend;
    default: return (const void **)&M->nodes;
    }
}

void qs_cu_image_model_at(const qs_cu_image *im, const void *base, qs_cu_model *out)
{
    *out = im->model;
    for (int i = 0; i < QS_CU_NPTR; i++)
        *field(out, i) = im->off[i] == SIZE_MAX ? NULL : (const unsigned char *)base + im->off[i];
}

void qs_cu_image_free(qs_cu_image *im)
{
    if (!im)
        return;
    free(im->blob);
    free(im->col_feature);
    qs_layout_free(im->L);
    memset(im, 0, sizeof *im);
}

uint32_t qs_cu_grid(const qs_cu_image *im, uint32_t n)
{
    const uint32_t per = im->kernel == QS_CU_K_QS ? im->db : im->threads;
    uint64_t g = ((uint64_t)n + per - 1) / per;
    if (im->vec_block) {
        uint64_t most = QS_CU_GLOBAL_VEC_BUDGET / im->vec_block;
        if (most < 1)
            most = 1;
        if (g > most)
            g = most;
    }
    if (g > 0x7FFFFFFFu)
        g = 0x7FFFFFFFu;
    return (uint32_t)(g ? g : 1);
}

/* The widest leaf vector of one tree in layout L. */
static uint32_t max_slot(const qs_layout *L)
{
    uint32_t most = 1;
    for (uint32_t b = 0; b < L->nblocks; b++) {
        const uint32_t sl = slot_of(&L->blocks[b]);
        most = sl > most ? sl : most;
    }
    return most;
}

/* A section of the image: NULL for an empty one (no offset: SIZE_MAX),
 * never a pointer computed past the blob. */
static unsigned char *sect(qs_cu_image *im, int i)
{
    return im->off[i] == SIZE_MAX ? NULL : im->blob + im->off[i];
}

/* Copy n bytes into section i (nothing for an empty section). */
static void put_sect(qs_cu_image *im, int i, const void *src, uint64_t n)
{
    if (n)
        memcpy(sect(im, i), src, (size_t)n);
}

static int nomem(qs_error *err, uint64_t bytes)
{
    return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (GPU tables of %llu bytes)",
                   (unsigned long long)bytes);
}

/* qs: the geometry and the GPU's own layout (τ for the shared budget). */
static int qs_geometry(const qs_scorer *s, const qs_cu_params *p, uint32_t budget,
                       uint32_t rank_vf, qs_cu_image *im, const qs_layout **Lout, qs_error *err)
{
    const qs_model *m = s->m;
    const uint32_t db = opt(p, QS_CU_OPT_DB);
    uint32_t threads = (p->set >> QS_CU_OPT_THREADS) & 1u ? p->v[QS_CU_OPT_THREADS]
                                                            : QS_CU_DEFAULT_THREADS_QS;
    if (threads < db)
        threads = db;
    if (threads > QS_CU_MAX_THREADS_QS)
        return qs_fail(err, QS_ERR_ARG, 0, "the qs kernel takes at most %u threads a "
                       "thread-block (QS_CUDA_THREADS=%u)", QS_CU_MAX_THREADS_QS, threads);
    const uint32_t slot = max_slot(s->L);
    /* the chunk's values, then (pivots by rank) the documents' ranks */
    const uint64_t vals = (uint64_t)QS_CU_CHUNK * db * sizeof(double) +
                          (((uint64_t)rank_vf * db * 2u + 15u) & ~(uint64_t)15u);
    uint64_t tau;
    int global = 0;
    if (budget <= vals || (budget - vals) / db < slot) {
        /* one tree's vectors of db documents do not fit: global memory */
        global = 1;
        tau = (p->set >> QS_CU_OPT_TAU) & 1u ? p->v[QS_CU_OPT_TAU] : 1;
    } else {
        tau = (budget - vals) / db / 4u * 4u / slot;
        if (tau == 0)
            tau = 1;
        if ((p->set >> QS_CU_OPT_TAU) & 1u && p->v[QS_CU_OPT_TAU] < tau)
            tau = p->v[QS_CU_OPT_TAU];
    }
    if (tau > m->num_trees)
        tau = m->num_trees ? m->num_trees : 1;
    /* Tree order and reversal are the scorer's; only the blocks differ. */
    const qs_layout *L = s->L;
    if (L->tree_block == 0 || L->tree_block != tau) {
        im->L = qs_layout_build_mt(m, L->delta, (uint32_t)tau, L->treeflags, s->build_threads,
                                   err);
        if (!im->L)
            return -1;
        L = im->L;
    }
    uint64_t words = 1;
    for (uint32_t b = 0; b < L->nblocks; b++) {
        const qs_block *B = &L->blocks[b];
        const uint64_t w = ((B->tree_end - B->tree_begin) * (uint64_t)slot_of(B) + 3u) / 4u;
        words = w > words ? w : words;
    }
    if (words * db * 4u > UINT32_MAX / 2)
        return qs_fail(err, QS_ERR_LIMIT, 0, "a block's leaf vectors (%llu bytes a document) "
                       "are beyond the GPU back end's limit",
                       (unsigned long long)(words * 4u));
    im->db = db;
    im->threads = threads;
    im->tau = (uint32_t)tau;
    im->model.vec_words = (uint32_t)words;
    im->model.chunk = QS_CU_CHUNK;
    if (global) {
        im->vec_block = words * db * 4u;
        im->shared = (uint32_t)vals;
    } else {
        im->vec_block = 0;
        im->shared = (uint32_t)(words * db * 4u + vals);
    }
    *Lout = L;
    return 0;
}

int qs_cu_image_build(const qs_scorer *s, const qs_cu_params *p, uint32_t shared_max,
                      qs_cu_image *im, qs_error *err)
{
    memset(im, 0, sizeof *im);
    const qs_model *m = s->m;
    if (m->num_trees > UINT32_MAX - 1)
        return qs_fail(err, QS_ERR_LIMIT, 0, "%llu trees: beyond the GPU back end's limit",
                       (unsigned long long)m->num_trees);
    /* the model's columns and rank tables (categorical nodes left out),
     * built once: for the choice, the rank kernels and qs's pivots */
    cols c = { 0 };
    ranks r = { 0 };
    treemap tm = { 0 };
    facts f;
    rankinfo ri;
    model_facts(s, &f);
    if (cols_build(m, &c) != 0)
        return nomem(err, (uint64_t)m->num_nodes * 4u);
    const int rrc = ranks_build(m, &c, 1, &r);
    if (rrc < 0) {
        free(c.feat);
        return nomem(err, (uint64_t)m->num_nodes * 16u);
    }
    rank_info(&r, rrc, &ri);
    /* the kernel */
    uint32_t k = opt(p, QS_CU_OPT_KERNEL);
    if (k >= QS_CU_NKERNELS) {
        k = pick(p, &f, &ri, im->why, sizeof im->why);
    } else {
        char no[160] = "";
        if (!takes(k, p, &f, &ri, no, sizeof no)) {
            qs_fail(err, QS_ERR_UNSUPPORTED, 0, "the %s kernel, asked for, cannot score this "
                    "model: %s", qs_cu_kernel_names[k], no);
            goto fail;
        }
        snprintf(im->why, sizeof im->why, "%s: asked for (QS_CUDA_KERNEL or the device "
                 "option kernel)", qs_cu_kernel_names[k]);
    }
    im->kernel = k;
    im->f32_ok = opt(p, QS_CU_OPT_F32) != 0;
    uint32_t budget = opt(p, QS_CU_OPT_SHARED);
    if (shared_max && budget > shared_max)
        budget = shared_max;

    const qs_layout *L = s->L;
    uint64_t ngend = 0;
    int pivots = 0;
    if (k == QS_CU_K_QS) {
        /* pivots by rank: asked for (1), or where they fit (auto, 2) */
        const uint32_t want = opt(p, QS_CU_OPT_PIVOTS);
        char no[160] = "";
        if (want) {
            pivots = rrc == 0;
            if (rrc > 0)
                snprintf(no, sizeof no, "%s", r.why);
            else if ((uint64_t)r.nvf * opt(p, QS_CU_OPT_DB) * 2u > budget / 4u) {
                snprintf(no, sizeof no, "the ranks of %u (feature, missing rule) pairs take over "
                         "a quarter of the shared budget", r.nvf);
                pivots = 0;
            }
        }
        if (qs_geometry(s, p, budget, pivots ? r.nvf : 0, im, &L, err) != 0)
            goto fail;
        if (pivots) {
            /* the tables: each group's false-run end for each rank */
            for (uint32_t g = 0; g < L->ngroups; g++) {
                const qs_group *G = &L->groups[g];
                ngend += r.fthr_n[col_of(&c, G->feature)] + 1u;
            }
            if (ngend > ((uint64_t)1 << 24)) {
                snprintf(no, sizeof no, "their tables would hold %llu entries (at most 2^24)",
                         (unsigned long long)ngend);
                pivots = 0;
                ngend = 0;
                qs_layout_free(im->L);
                im->L = NULL;
                L = s->L;
                if (qs_geometry(s, p, budget, 0, im, &L, err) != 0)
                    goto fail;
            }
        }
        if (want == 1 && !pivots) {
            qs_fail(err, QS_ERR_UNSUPPORTED, 0, "the qs kernel cannot find its pivots by rank "
                    "(QS_CUDA_PIVOTS=rank) for this model: %s", no);
            goto fail;
        }
        if (!pivots)
            ranks_free(&r);
        snprintf(im->pivots, sizeof im->pivots, "%s", pivots ? "rank" : "search");
    } else {
        im->db = 0;
        if (k == QS_CU_K_WALK) {
            im->threads = opt(p, QS_CU_OPT_THREADS) ? opt(p, QS_CU_OPT_THREADS)
                                                    : QS_CU_DEFAULT_THREADS_WALK;
            im->shared = 0;
            ranks_free(&r);
        } else {
            /* (takes() checked the ranks) */
            im->threads = rank_threads(r.nvf, p, shared_max);
            if (!im->threads) {
                qs_fail(err, QS_ERR_UNSUPPORTED, 0, "the %s kernel cannot score this model: "
                        "the ranks of %u features do not fit %u bytes of shared memory for 64 "
                        "documents", qs_cu_kernel_names[k], r.nvf, budget);
                goto fail;
            }
            im->shared = r.nvf * im->threads * 2u;
            im->shared = (im->shared + 15u) & ~15u;
        }
        im->db = im->threads;
    }
    if (!L->leaf_node) {
        qs_fail(err, QS_ERR_ARG, 0, "the layout has no leaf map (not built or verified)");
        goto fail;
    }

    /* Sizes of the tables. */
    const int linear = m->node_linear && m->num_linear;
    uint64_t nint = 0;
    if (k != QS_CU_K_QS) {
        for (uint64_t i = 0; i < m->num_nodes; i++)
            nint += m->nodes[i].kind != QS_NODE_LEAF;
        if (nint > UINT32_MAX - 1) {
            qs_fail(err, QS_ERR_LIMIT, 0, "%llu nodes: beyond the GPU back end's limit",
                    (unsigned long long)nint);
            goto fail;
        }
    }
    const size_t node_size = k == QS_CU_K_RANK    ? sizeof(qs_cu_rnode)
                             : k == QS_CU_K_LANES ? sizeof(qs_cu_lnode)
                                                  : sizeof(qs_cu_dnode);
    const int qs = k == QS_CU_K_QS;
    uint64_t size[QS_CU_NPTR] = {
        [P_TREES] = sizeof(qs_cu_tree) * m->num_trees,
        [P_LEAVES] = sizeof(double) * L->nleafvals,
        [P_LEAFLIN] = linear ? sizeof(uint32_t) * L->nleafvals : 0,
        [P_LINEAR] = linear ? sizeof(qs_cu_linear) * m->num_linear : 0,
        [P_LINCOL] = linear ? sizeof(uint32_t) * m->num_lin_terms : 0,
        [P_LINCOEFF] = linear ? sizeof(double) * m->num_lin_terms : 0,
        [P_BASE] = sizeof(double) * m->num_classes,
        [P_CATWORDS] = (qs || k == QS_CU_K_WALK) ? sizeof(uint32_t) * m->num_cat_words : 0,
        [P_BLOCKS] = qs ? sizeof(qs_cu_block) * (uint64_t)L->nblocks : 0,
        [P_GROUPS] = qs ? sizeof(qs_cu_group) * (uint64_t)L->ngroups : 0,
        [P_THR] = qs ? sizeof(double) * L->nentries : 0,
        [P_ETREE] = qs ? sizeof(uint32_t) * L->nentries : 0,
        [P_EMASK] = qs ? sizeof(uint64_t) * L->nentries : 0,
        [P_CATS] = qs ? sizeof(qs_cu_cat) * (uint64_t)L->ncat : 0,
        [P_VFS] = r.vf ? sizeof(qs_cu_vf) * r.nvf : 0,
        [P_VTHR] = r.vf ? sizeof(double) * r.nthr : 0,
        [P_GEND] = sizeof(uint32_t) * ngend,
        [P_NODES] = qs ? 0 : node_size * nint,
    };
    uint64_t total = 0;
    for (int i = 0; i < QS_CU_NPTR; i++) {
        if (size[i] == 0 && i != P_TREES && i != P_LEAVES && i != P_BASE) {
            im->off[i] = SIZE_MAX;
            continue;
        }
        im->off[i] = (size_t)total;
        total += (size[i] + 15) & ~(uint64_t)15;
    }
    if (total > SIZE_MAX / 2 || !(im->blob = calloc(1, (size_t)(total ? total : 16)))) {
        nomem(err, total);
        goto fail;
    }
    im->bytes = (size_t)total;
    qs_cu_model *M = &im->model;
    const uint32_t vec_words = M->vec_words, chunk = M->chunk;
    qs_cu_image_model_at(im, im->blob, M);
    M->kernel = k;
    M->ntrees = (uint32_t)m->num_trees;
    M->num_classes = m->num_classes;
    M->cmp_lt = m->cmp == QS_CMP_LT;
    M->acc_mode = m->float_accumulate == QS_ACC_FLOAT          ? QS_CU_ACC_FLOAT
                  : m->float_accumulate == QS_ACC_FLOAT_DOUBLE ? QS_CU_ACC_FLOAT_DOUBLE
                                                               : QS_CU_ACC_DOUBLE;
    M->ncols = c.n;
    M->nblocks = qs ? L->nblocks : 0;
    M->vec_words = vec_words;
    M->chunk = chunk;
    M->nvf = r.nvf;
    M->pivots = (uint32_t)pivots;

    /* every kernel: trees, leaves, linear leaves, base, categories */
    qs_cu_tree *trees = (qs_cu_tree *)sect(im, P_TREES);
    for (uint64_t t = 0; t < m->num_trees; t++)
        trees[t] = (qs_cu_tree){ .leaf_off = L->leaf_off[t], .nleaves = L->nleaves[t],
                                 .cls = m->trees[t].class_id };
    if (L->nleafvals)
        put_sect(im, P_LEAVES, L->leaves, size[P_LEAVES]);
    if (linear) {
        uint32_t *leaf_lin = (uint32_t *)sect(im, P_LEAFLIN);
        for (uint64_t t = 0; t < L->ntrees; t++)
            for (uint32_t j = 0; j < L->nleaves[t]; j++) {
                const uint64_t li = L->leaf_off[t] + j;
                leaf_lin[li] = m->node_linear[m->trees[t].node_off + L->leaf_node[li]];
            }
        qs_cu_linear *lin = (qs_cu_linear *)sect(im, P_LINEAR);
        for (uint64_t i = 0; i < m->num_linear; i++) {
            const qs_linear *l = &m->linear[i];
            lin[i] = (qs_cu_linear){ .konst = l->konst, .plain = m->nodes[l->node].value,
                                     .term_off = l->term_off, .nterms = l->nterms };
        }
        uint32_t *lc = (uint32_t *)sect(im, P_LINCOL);
        for (uint64_t i = 0; i < m->num_lin_terms; i++)
            lc[i] = col_of(&c, m->lin_feature[i]);
        if (m->num_lin_terms)
            put_sect(im, P_LINCOEFF, m->lin_coeff, size[P_LINCOEFF]);
    }
    put_sect(im, P_BASE, m->base, size[P_BASE]);
    if (size[P_CATWORDS])
        put_sect(im, P_CATWORDS, m->cat_words, size[P_CATWORDS]);
    /* the rank tables (rank, lanes; qs with pivots by rank) */
    /* (a model without a split has rank tables of no entry: an empty
     * section has no offset, fuzz/README.md F8) */
    if (size[P_VFS])
        put_sect(im, P_VFS, r.vf, size[P_VFS]);
    if (size[P_VTHR])
        put_sect(im, P_VTHR, r.thr, size[P_VTHR]);

    if (qs) {
        qs_cu_block *blocks = (qs_cu_block *)sect(im, P_BLOCKS);
        for (uint32_t b = 0; b < L->nblocks; b++) {
            const qs_block *B = &L->blocks[b];
            blocks[b] = (qs_cu_block){
                .kind = kind_of(B), .slot = slot_of(B),
                .ntrees = (uint32_t)(B->tree_end - B->tree_begin),
                .tree0 = (uint32_t)B->tree_begin, .group_begin = B->group_begin,
                .group_end = B->group_end, .cat_begin = B->cat_begin, .cat_end = B->cat_end,
            };
        }
        qs_cu_group *groups = (qs_cu_group *)sect(im, P_GROUPS);
        uint32_t *gend = pivots ? (uint32_t *)sect(im, P_GEND) : NULL;
        uint64_t tab = 0;
        for (uint32_t g = 0; g < L->ngroups; g++) {
            const qs_group *G = &L->groups[g];
            const uint32_t col = col_of(&c, G->feature);
            groups[g] = (qs_cu_group){ col, G->rule, G->begin, G->end, G->sp_begin, G->sp_end,
                                       0, 0 };
            if (!pivots)
                continue;
            /* rank r: the run of false entries ends at the first entry
             * whose threshold's rank k stops the scan: k >= r ascending,
             * k < r descending (tables.h; phases.h's qs_cu_search) */
            const uint32_t nthr = r.fthr_n[col];
            const int desc = (G->rule & QS_GROUP_DESC) != 0;
            groups[g].vf = vf_of(&r, col, G->rule & QS_RULE_MASK);
            groups[g].tab = (uint32_t)tab;
            uint32_t i = G->begin;
            if (!desc) {
                /* ascending: the run grows with the rank */
                for (uint32_t rr = 0; rr <= nthr; rr++) {
                    while (i < G->end && rank_of(&r, col, L->thr[i]) < rr)
                        i++;
                    gend[tab + rr] = i;
                }
            } else {
                /* descending: it shrinks */
                for (uint32_t rr = nthr + 1u; rr-- > 0;) {
                    while (i < G->end && rank_of(&r, col, L->thr[i]) >= rr)
                        i++;
                    gend[tab + rr] = i;
                }
            }
            tab += nthr + 1u;
        }
        if (L->nentries) {
            put_sect(im, P_THR, L->thr, size[P_THR]);
            put_sect(im, P_ETREE, L->etree, size[P_ETREE]);
            put_sect(im, P_EMASK, L->emask, size[P_EMASK]);
        }
        qs_cu_cat *cats = (qs_cu_cat *)sect(im, P_CATS);
        for (uint32_t i = 0; i < L->ncat; i++) {
            const qs_catnode *C = &L->cats[i];
            const qs_node *n = &m->nodes[C->node];
            cats[i] = (qs_cu_cat){
                .mask = C->mask, .tree = C->tree, .col = col_of(&c, n->feature),
                .cat_off = n->cat_off, .cat_nwords = n->cat_nwords, .miss = n->miss,
                .default_left = n->default_left, .flags = n->flags,
            };
        }
    } else {
        unsigned char *nodes = sect(im, P_NODES);
        uint64_t at = 0;
        for (uint64_t t = 0; t < m->num_trees; t++) {
            const qs_tree *T = &m->trees[t];
            const qs_node *nd = m->nodes + T->node_off;
            uint32_t ni;
            if (treemap_fill(&tm, m, L, t, &ni) != 0) {
                nomem(err, (uint64_t)T->num_nodes * 8u);
                goto fail;
            }
            for (uint32_t i = 0; i < T->num_nodes; i++)
                if (nd[i].kind == QS_NODE_LEAF && tm.pos[i] == UINT32_MAX) {
                    qs_fail(err, QS_ERR_ARG, 0, "tree %llu: leaf %u is not in the layout's "
                            "leaf map", (unsigned long long)t, i);
                    goto fail;
                }
            const uint32_t leafbit = k == QS_CU_K_RANK ? QS_CU_LEAF16 : QS_CU_LEAF32;
#define CODE(i) (nd[i].kind == QS_NODE_LEAF ? (tm.pos[i] | leafbit) : tm.idx[i])
            trees[t].node_off = (uint32_t)at;
            trees[t].root = CODE(0);
            if (k == QS_CU_K_LANES) {
                /* each node's first child's leaves: contiguous and first in
                 * the layout's order (checked: the exit is the lowest bit) */
                const int rev = L->treeflags && (L->treeflags[t] & QS_TREE_REVERSED);
                trees[t].root = ni | (rev ? QS_CU_LANES_REV : 0u);
                qs_cu_lnode *ln = nodes ? (qs_cu_lnode *)nodes + at : NULL;
                for (uint32_t i = 0; i < T->num_nodes; i++) {
                    if (nd[i].kind == QS_NODE_LEAF)
                        continue;
                    /* leaves under each child, by a walk of the subtree */
                    uint64_t sub[2] = { 0, 0 };
                    for (int side = 0; side < 2; side++) {
                        uint32_t stack[128], sp = 0;
                        stack[sp++] = (uint32_t)(side ? nd[i].right : nd[i].left);
                        while (sp) {
                            const uint32_t j = stack[--sp];
                            if (nd[j].kind == QS_NODE_LEAF) {
                                sub[side] |= 1ull << (tm.pos[j] & 63u);
                            } else if (sp + 2 <= 128) {
                                stack[sp++] = (uint32_t)nd[j].left;
                                stack[sp++] = (uint32_t)nd[j].right;
                            }
                        }
                    }
                    const uint64_t first = sub[rev ? 1 : 0], second = sub[rev ? 0 : 1];
                    /* first's bits contiguous and below every bit of second */
                    const uint64_t run = first + (first & (~first + 1u));
                    if (!first || !second || (run & first) ||
                        63 - __builtin_clzll(first) >= __builtin_ctzll(second)) {
                        qs_fail(err, QS_ERR_UNSUPPORTED, 0, "the lanes kernel cannot score "
                                "this model: tree %llu's leaves are not in QuickScorer order",
                                (unsigned long long)t);
                        goto fail;
                    }
                    const uint32_t col = col_of(&c, nd[i].feature);
                    ln[tm.idx[i]] = (qs_cu_lnode){
                        .vf = (uint16_t)vf_of(&r, col, nd[i].miss),
                        .k = (uint16_t)(rank_of(&r, col, nd[i].value) |
                                        (nd[i].default_left ? QS_CU_DL : 0u)),
                        .mask = ~first,
                    };
                }
            } else if (k == QS_CU_K_RANK) {
                qs_cu_rnode *rn = nodes ? (qs_cu_rnode *)nodes + at : NULL;
                for (uint32_t i = 0; i < T->num_nodes; i++) {
                    if (nd[i].kind == QS_NODE_LEAF)
                        continue;
                    const uint32_t col = col_of(&c, nd[i].feature);
                    rn[tm.idx[i]] = (qs_cu_rnode){
                        .vf = (uint16_t)vf_of(&r, col, nd[i].miss),
                        .k = (uint16_t)(rank_of(&r, col, nd[i].value) |
                                        (nd[i].default_left ? QS_CU_DL : 0u)),
                        .left = (uint16_t)CODE(nd[i].left), .right = (uint16_t)CODE(nd[i].right),
                    };
                }
            } else {
                qs_cu_dnode *dn = nodes ? (qs_cu_dnode *)nodes + at : NULL;
                for (uint32_t i = 0; i < T->num_nodes; i++) {
                    if (nd[i].kind == QS_NODE_LEAF)
                        continue;
                    const qs_node *n = &nd[i];
                    uint32_t info = col_of(&c, n->feature) | ((uint32_t)n->miss << QS_CU_D_MISS_SHIFT) |
                                    (n->default_left ? QS_CU_D_DL : 0u);
                    double v = n->value;
                    uint32_t cat_off = 0;
                    if (n->kind == QS_NODE_CAT) {
                        info |= QS_CU_D_CAT;
                        info |= (n->flags & QS_CAT_MEMBERS_LEFT) ? QS_CU_D_MEMBERS_LEFT : 0u;
                        info |= (n->flags & QS_CAT_NEG_STRICT) ? QS_CU_D_NEG_STRICT : 0u;
                        v = (double)n->cat_nwords * 32.0;
                        cat_off = n->cat_off;
                    }
                    dn[tm.idx[i]] = (qs_cu_dnode){ .v = v, .info = info, .left = CODE(n->left),
                                                   .right = CODE(n->right), .cat_off = cat_off };
                }
            }
#undef CODE
            at += ni;
        }
    }
    /* the host's column map, for packing rows */
    im->col_feature = c.feat;
    c.feat = NULL;
    ranks_free(&r);
    free(tm.pos);
    free(tm.idx);
    return 0;
fail:
    free(c.feat);
    ranks_free(&r);
    free(tm.pos);
    free(tm.idx);
    qs_cu_image_free(im);
    return -1;
}
