/* score.c: loading a .qsm into a scorer, per-thread workspaces, documents,
 * and the back ends: the reference walk, scalar QuickScorer (Δ-skip) with
 * 8/16/32/64-bit and multi-word masks, QS-Ω for oblivious blocks, and the
 * dispatch of blocks to the vQS kernels (vqs.c). */
#include "baselines.h"
#include "layout.h"
#include "qsm.h"
#include "vqs.h"

#include <stdio.h>
#include <string.h>

struct qs_scorer {
    qs_model *m;
    qs_layout *L;
    qs_baselines *base;       /* STRUCT+/VPRED/OBLIVIOUS data, built on first use */
    uint64_t max_block_trees; /* largest block, for the workspace's vectors */
    uint32_t max_words;       /* widest multi-word block */
    uint32_t doc_block;       /* δ: documents scored together */
    qs_vqs_plan plan;         /* AVX-512 byte-plane offsets (only where the CPU has it) */
};

/* One document slot: a dense vector and what was set since its reset. */
typedef struct qs_slot {
    double *x;                /* num_features values */
    uint32_t *touched;        /* ids set since the last reset */
    uint32_t ntouched, cap_touched;
    int all_dirty;            /* x must be refilled entirely */
    int filled;
    double fill;              /* the absent value x was last filled with */
} qs_slot;

struct qs_workspace {
    const qs_scorer *s;
    uint32_t nslots, cur;
    qs_slot *slot;
    const double **xs;        /* slot vectors, for the batch back ends */
    void *vec;                /* leaf bitvectors of one block, one document */
    double *acc;              /* nslots * num_classes */
    float *accf;
};

/* ------------------------------------------------------------ loading */

/* The AVX-512 kernel's per-entry plan, for the current layout. */
static int scorer_plan(qs_scorer *s, qs_error *err)
{
    qs_vqs_plan_free(&s->plan);
    if (!(qs_cpu_simd() & QS_SIMD_AVX512))
        return 0;
    if (qs_vqs_plan_build(s->L, &s->plan) != 0)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    return 0;
}

static void scorer_sizes(qs_scorer *s)
{
    s->max_block_trees = 0;
    s->max_words = 0;
    for (uint32_t b = 0; b < s->L->nblocks; b++) {
        const qs_block *B = &s->L->blocks[b];
        uint64_t n = B->tree_end - B->tree_begin;
        if (n > s->max_block_trees)
            s->max_block_trees = n;
        if (B->kind == QS_BLOCK_QS && B->width == 0 && B->words > s->max_words)
            s->max_words = B->words;
    }
    s->doc_block = s->L->doc_block ? s->L->doc_block : QS_DEFAULT_DOC_BLOCK;
}

/* Size in bytes of this machine's level-`level` data cache (sysfs), or 0. */
static uint64_t cache_size(int level)
{
    char path[96], b[32];
    for (int i = 0; i < 8; i++) {
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        int lev = fgets(b, sizeof b, f) ? atoi(b) : 0;
        fclose(f);
        if (lev != level)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if ((f = fopen(path, "r"))) {
            int instr = fgets(b, sizeof b, f) && strncmp(b, "Instruction", 11) == 0;
            fclose(f);
            if (instr)
                continue;
        }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!(f = fopen(path, "r")))
            continue;
        char *e;
        uint64_t v = fgets(b, sizeof b, f) ? strtoull(b, &e, 10) : 0;
        fclose(f);
        if (v && (*e == 'K' || *e == 'k'))
            v <<= 10;
        else if (v && (*e == 'M' || *e == 'm'))
            v <<= 20;
        return v;
    }
    return 0;
}

/* τ when the .qsm stores none: blocks whose QuickScorer data (entries and
 * leaves) fill about half of the L2 cache, measured best on the bench
 * workloads; 0 (one block) when the whole model fits. */
static uint32_t auto_tree_block(const qs_layout *L)
{
    uint64_t l2 = cache_size(2);
    if (l2 == 0)
        l2 = (uint64_t)1 << 20;
    /* Scan entries only: special-value lists are read for NaN inputs alone. */
    uint64_t scan = 0;
    for (uint32_t g = 0; g < L->ngroups; g++)
        scan += L->groups[g].end - L->groups[g].begin;
    uint64_t bytes = scan * (8 + 4 + 8) + L->nleafvals * 8;
    if (L->ntrees == 0 || bytes <= l2)
        return 0;
    uint64_t per_tree = bytes / L->ntrees + 1;
    uint64_t tau = (l2 / 2) / per_tree;
    return (uint32_t)(tau < 1 ? 1 : tau > UINT32_MAX - 1 ? UINT32_MAX - 1 : tau);
}

qs_scorer *qs_scorer_load(const unsigned char *buf, size_t len, qs_error *err)
{
    qs_scorer *s = calloc(1, sizeof *s);
    if (!s) {
        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        return NULL;
    }
    if (qsm_read(buf, len, &s->m, &s->L, err) != 0) {
        free(s);
        return NULL;
    }
    /* Either the layout is rebuilt from the trees for this machine's cache,
     * or the stored one must equal what the trees give: a forged QSLY can
     * then never make the back ends disagree. */
    uint32_t tau = s->L->tree_block == 0 ? auto_tree_block(s->L) : 0;
    if (tau ? qs_scorer_relayout(s, tau, QS_KEEP, QS_KEEP, err) != 0
            : qs_layout_verify(s->L, s->m, err) != 0) {
        qs_scorer_free(s);
        return NULL;
    }
    scorer_sizes(s);
    if (scorer_plan(s, err) != 0) {
        qs_scorer_free(s);
        return NULL;
    }
    return s;
}

int qs_scorer_relayout(qs_scorer *s, uint32_t tree_block, uint32_t doc_block, uint32_t delta,
                       qs_error *err)
{
    if (doc_block != QS_KEEP && doc_block > QS_MAX_DOC_BLOCK)
        return qs_fail(err, QS_ERR_ARG, 0, "document block %u is out of range (1..%u)", doc_block,
                       QS_MAX_DOC_BLOCK);
    if (tree_block != QS_KEEP || delta != QS_KEEP) {
        qs_layout *L = qs_layout_build(s->m, delta == QS_KEEP ? s->L->delta : delta,
                                       tree_block == QS_KEEP ? s->L->tree_block : tree_block,
                                       s->L->treeflags, err);
        if (!L)
            return -1;
        L->doc_block = s->L->doc_block;
        qs_layout_free(s->L);
        s->L = L;
    }
    if (doc_block != QS_KEEP && doc_block != 0)
        s->L->doc_block = doc_block;
    scorer_sizes(s);
    return scorer_plan(s, err);
}

void qs_scorer_get_blocks(const qs_scorer *s, uint32_t *tree_block, uint32_t *doc_block,
                          uint32_t *delta, uint32_t *nblocks)
{
    if (tree_block)
        *tree_block = s->L->tree_block;
    if (doc_block)
        *doc_block = s->doc_block;
    if (delta)
        *delta = s->L->delta;
    if (nblocks)
        *nblocks = s->L->nblocks;
}

void qs_scorer_free(qs_scorer *s)
{
    if (!s)
        return;
    qs_model_free(s->m);
    qs_layout_free(s->L);
    qs_baselines_free(s->base);
    qs_vqs_plan_free(&s->plan);
    free(s);
}

const qs_model *qs_scorer_model(const qs_scorer *s) { return s->m; }

int qs_score_digits(const qs_scorer *s) { return s->m->float_accumulate ? 9 : 17; }

/* ------------------------------------------------------------ back ends */

static const char *const backend_names[QS_BACKEND_COUNT_] = {
    "auto", "walk", "qs", "struct", "vpred", "oblivious", "vqs", "vqs-avx2", "vqs-avx512"
};

const char *qs_backend_name(qs_backend b)
{
    return (unsigned)b < QS_BACKEND_COUNT_ ? backend_names[b] : "?";
}

qs_backend qs_backend_from_name(const char *name)
{
    for (int i = 0; i < QS_BACKEND_COUNT_; i++)
        if (strcmp(name, backend_names[i]) == 0)
            return (qs_backend)i;
    return QS_BACKEND_COUNT_;
}

/* The baselines' structures are built once, on first use (the scorer is
 * otherwise immutable; call qs_backend_available before sharing a scorer
 * between threads). */
static const qs_baselines *baselines(const qs_scorer *s)
{
    qs_scorer *ms = (qs_scorer *)s;
    if (!ms->base)
        ms->base = qs_baselines_build(s->m, NULL);
    return ms->base;
}

int qs_backend_available(const qs_scorer *s, qs_backend b)
{
    switch (b) {
    case QS_BACKEND_AUTO:
    case QS_BACKEND_WALK:
    case QS_BACKEND_QS:
        return 1;
    case QS_BACKEND_STRUCT:
    case QS_BACKEND_VPRED:
        return !s || baselines(s) != NULL;
    case QS_BACKEND_OBLIVIOUS:
        return !s || (baselines(s) != NULL && qs_baselines_has_oblivious(baselines(s)));
    case QS_BACKEND_VQS: return qs_cpu_simd() != 0;
    case QS_BACKEND_VQS_AVX2: return (qs_cpu_simd() & QS_SIMD_AVX2) != 0;
    case QS_BACKEND_VQS_AVX512: return (qs_cpu_simd() & QS_SIMD_AVX512) != 0;
    default:
        return 0;
    }
}

/* The SIMD level back end b runs with (0: scalar). */
static unsigned simd_level(qs_backend b)
{
    unsigned have = qs_cpu_simd();
    switch (b) {
    case QS_BACKEND_AUTO:
    case QS_BACKEND_VQS:
        return (have & QS_SIMD_AVX512) ? QS_SIMD_AVX512 : (have & QS_SIMD_AVX2) ? QS_SIMD_AVX2 : 0;
    case QS_BACKEND_VQS_AVX2: return have & QS_SIMD_AVX2;
    case QS_BACKEND_VQS_AVX512: return have & QS_SIMD_AVX512;
    default: return 0;
    }
}

const char *qs_backend_resolve(qs_backend b)
{
    switch (simd_level(b)) {
    case QS_SIMD_AVX512: return backend_names[QS_BACKEND_VQS_AVX512];
    case QS_SIMD_AVX2: return backend_names[QS_BACKEND_VQS_AVX2];
    default: return b == QS_BACKEND_AUTO ? backend_names[QS_BACKEND_QS] : qs_backend_name(b);
    }
}

/* ------------------------------------------------------------ workspace */

qs_workspace *qs_workspace_new(const qs_scorer *s, qs_error *err)
{
    qs_workspace *w = calloc(1, sizeof *w);
    if (!w)
        goto nomem;
    w->s = s;
    const qs_model *m = s->m;
    /* Leaf vectors of one block: one document's (multi-word trees), or
     * vQS's several documents' side by side, 64-byte aligned. */
    uint64_t per_tree = s->max_words ? (uint64_t)s->max_words * 8 : 8;
    if (per_tree < QS_VQS_TREE_BYTES)
        per_tree = QS_VQS_TREE_BYTES;
    /* Document slots are dense vectors: keep slots x features within
     * QS_WORKSPACE_VALUES doubles (32 MiB), down to one slot for models with
     * millions of features, so neither can make a workspace huge. */
    uint64_t nf = m->num_features ? m->num_features : 1;
    w->nslots = s->doc_block;
    if ((uint64_t)w->nslots * nf > QS_WORKSPACE_VALUES)
        w->nslots = (uint32_t)(QS_WORKSPACE_VALUES / nf > 0 ? QS_WORKSPACE_VALUES / nf : 1);
    w->slot = calloc(w->nslots, sizeof *w->slot);
    w->xs = calloc(w->nslots, sizeof *w->xs);
    w->vec = aligned_alloc(64, (size_t)((s->max_block_trees ? s->max_block_trees : 1) * per_tree));
    w->acc = malloc(sizeof(double) * m->num_classes * w->nslots);
    w->accf = malloc(sizeof(float) * m->num_classes * w->nslots);
    if (!w->slot || !w->xs || !w->vec || !w->acc || !w->accf)
        goto nomem;
    for (uint32_t i = 0; i < w->nslots; i++) {
        qs_slot *sl = &w->slot[i];
        sl->x = malloc(sizeof(double) * (m->num_features ? m->num_features : 1));
        sl->cap_touched = 256;
        sl->touched = malloc(sizeof(uint32_t) * sl->cap_touched);
        if (!sl->x || !sl->touched)
            goto nomem;
        sl->all_dirty = 1;
        w->xs[i] = sl->x;
    }
    return w;
nomem:
    qs_workspace_free(w);
    qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    return NULL;
}

void qs_workspace_free(qs_workspace *w)
{
    if (!w)
        return;
    for (uint32_t i = 0; w->slot && i < w->nslots; i++) {
        free(w->slot[i].x);
        free(w->slot[i].touched);
    }
    free(w->slot);
    free(w->xs);
    free(w->vec);
    free(w->acc);
    free(w->accf);
    free(w);
}

uint32_t qs_workspace_slots(const qs_workspace *w) { return w->nslots; }

void qs_workspace_select(qs_workspace *w, uint32_t slot)
{
    w->cur = slot < w->nslots ? slot : w->nslots - 1;
}

void qs_doc_reset(qs_workspace *w, qs_absent absent)
{
    const qs_model *m = w->s->m;
    qs_slot *sl = &w->slot[w->cur];
    int missing = absent == QS_ABSENT_MISSING || (absent == QS_ABSENT_DEFAULT && m->absent_missing);
    double fill = missing ? NAN : 0.0;
    /* Refill only what the last document touched, unless the fill changed. */
    if (sl->all_dirty || !sl->filled || (isnan(fill) != isnan(sl->fill))) {
        for (uint32_t f = 0; f < m->num_features; f++)
            sl->x[f] = fill;
    } else {
        for (uint32_t i = 0; i < sl->ntouched; i++)
            sl->x[sl->touched[i]] = fill;
    }
    sl->fill = fill;
    sl->filled = 1;
    sl->all_dirty = 0;
    sl->ntouched = 0;
}

void qs_doc_set(qs_workspace *w, uint32_t id, double value)
{
    qs_slot *sl = &w->slot[w->cur];
    if (id >= w->s->m->num_features)
        return;
    sl->x[id] = value;
    if (sl->all_dirty)
        return;
    if (sl->ntouched == sl->cap_touched) {
        /* Past this many ids a full refill is as cheap as the list. */
        if (sl->cap_touched >= w->s->m->num_features) {
            sl->all_dirty = 1;
            return;
        }
        uint32_t nc = sl->cap_touched * 2;
        uint32_t *q = realloc(sl->touched, sizeof *q * nc);
        if (!q) {
            sl->all_dirty = 1;
            return;
        }
        sl->touched = q;
        sl->cap_touched = nc;
    }
    sl->touched[sl->ntouched++] = id;
}

/* ------------------------------------------------------------ QS */

/* End of the run of "false" nodes of a group for value x: the nodes whose
 * threshold sends x right (t < x for <=, t <= x for <).  Δ-skip: test every
 * Δ-th threshold first, then finish one by one. */
static inline uint32_t scan_end(const double *thr, uint32_t i, uint32_t end, double x, int lt,
                                uint32_t delta)
{
    if (lt) {
        while (i + delta <= end && thr[i + delta - 1] <= x)
            i += delta;
        while (i < end && thr[i] <= x)
            i++;
    } else {
        while (i + delta <= end && thr[i + delta - 1] < x)
            i += delta;
        while (i < end && thr[i] < x)
            i++;
    }
    return i;
}

/* The same for the descending groups of reversed trees: false nodes are
 * those that send x left (x <= t: t >= x; x < t: t > x). */
static inline uint32_t scan_end_desc(const double *thr, uint32_t i, uint32_t end, double x,
                                     int lt, uint32_t delta)
{
    if (lt) {
        while (i + delta <= end && thr[i + delta - 1] > x)
            i += delta;
        while (i < end && thr[i] > x)
            i++;
    } else {
        while (i + delta <= end && thr[i + delta - 1] >= x)
            i += delta;
        while (i < end && thr[i] >= x)
            i++;
    }
    return i;
}

/* For group g and value x, the entry range whose masks apply. */
static inline __attribute__((always_inline)) void group_range(const qs_layout *L, const qs_group *g, double x, int lt,
                               uint32_t *b, uint32_t *e)
{
    if (qs_group_special(g, &x)) {
        *b = g->sp_begin;
        *e = g->sp_end;
        return;
    }
    *b = g->begin;
    *e = (g->rule & QS_GROUP_DESC) ? scan_end_desc(L->thr, g->begin, g->end, x, lt, L->delta)
                                   : scan_end(L->thr, g->begin, g->end, x, lt, L->delta);
}

static inline void accumulate(const qs_scorer *s, uint64_t t, uint32_t leaf, double *acc,
                              float *accf)
{
    qs_layout_add_leaf(s->m, s->L, t, leaf, acc, accf);
}

/* One class summed in double (LightGBM, QuickRank rankers): the common case
 * gets a loop without the per-tree class and mode lookups. */
static inline int single_double(const qs_scorer *s)
{
    return s->m->num_classes == 1 && s->m->float_accumulate == QS_ACC_DOUBLE;
}

/* One QS block with T-bit leaf vectors, for one document.  The last leaf's
 * bit is OR-ed in before taking the lowest set bit: for a valid layout the
 * exit leaf's bit is always set and no higher than that, so it changes
 * nothing, and a corrupt layout can never index past the tree's leaves. */
#define DEFINE_QS_NARROW(NAME, T, CTZ)                                                    \
    static void NAME(const qs_scorer *s, const qs_block *B, void *vec, const double *x,  \
                     double *acc, float *accf)                                           \
    {                                                                                     \
        const qs_layout *L = s->L;                                                        \
        const qs_model *m = s->m;                                                         \
        const int lt = m->cmp == QS_CMP_LT;                                               \
        T *v = vec;                                                                       \
        const uint32_t nt = (uint32_t)(B->tree_end - B->tree_begin);                      \
        for (uint32_t i = 0; i < nt; i++)                                                 \
            v[i] = (T)~(T)0;                                                              \
        for (uint32_t g = B->group_begin; g < B->group_end; g++) {                        \
            const qs_group *G = &L->groups[g];                                            \
            uint32_t b, e;                                                                \
            group_range(L, G, x[G->feature], lt, &b, &e);                                 \
            for (; b < e; b++)                                                            \
                v[L->etree[b]] &= (T)L->emask[b];                                         \
        }                                                                                 \
        for (uint32_t c = B->cat_begin; c < B->cat_end; c++) {                            \
            const qs_catnode *C = &L->cats[c];                                            \
            const qs_node *n = &m->nodes[C->node];                                        \
            if (qs_node_goes_left(m, n, x[n->feature]) == !!(C->tree & QS_CAT_REVERSED))  \
                v[C->tree & ~QS_CAT_REVERSED] &= (T)C->mask;                              \
        }                                                                                 \
        const uint32_t *nl = L->nleaves + B->tree_begin;                                 \
        const uint64_t *off = L->leaf_off + B->tree_begin;                                \
        if (single_double(s)) {                                                           \
            double a = acc[0];                                                            \
            for (uint32_t i = 0; i < nt; i++) {                                           \
                T vv = (T)(v[i] | (T)((T)1 << (nl[i] - 1)));                              \
                a += L->leaves[off[i] + (uint32_t)CTZ(vv)];                               \
            }                                                                             \
            acc[0] = a;                                                                   \
            return;                                                                       \
        }                                                                                 \
        for (uint32_t i = 0; i < nt; i++) {                                               \
            T vv = (T)(v[i] | (T)((T)1 << (nl[i] - 1)));                                  \
            accumulate(s, B->tree_begin + i, (uint32_t)CTZ(vv), acc, accf);               \
        }                                                                                 \
    }

DEFINE_QS_NARROW(qs_block8, uint8_t, __builtin_ctz)
DEFINE_QS_NARROW(qs_block16, uint16_t, __builtin_ctz)
DEFINE_QS_NARROW(qs_block32, uint32_t, __builtin_ctz)
DEFINE_QS_NARROW(qs_block64, uint64_t, __builtin_ctzll)

/* Multi-word leaf vectors (trees of more than 64 leaves): a node's mask is
 * the range [lo, hi) of its left subtree's leaves, cleared word by word. */
static inline void clear_range(uint64_t *v, uint32_t lo, uint32_t hi)
{
    uint32_t a = lo >> 6, b = (hi - 1) >> 6;
    uint64_t lom = ~0ull << (lo & 63), him = ~0ull >> (63 - ((hi - 1) & 63));
    if (a == b) {
        v[a] &= ~(lom & him);
        return;
    }
    v[a] &= ~lom;
    for (uint32_t k = a + 1; k < b; k++)
        v[k] = 0;
    v[b] &= ~him;
}

static void qs_block_wide(const qs_scorer *s, const qs_block *B, void *vec, const double *x,
                          double *acc, float *accf)
{
    const qs_layout *L = s->L;
    const qs_model *m = s->m;
    const int lt = m->cmp == QS_CMP_LT;
    const uint32_t W = B->words, nt = (uint32_t)(B->tree_end - B->tree_begin);
    uint64_t *v = vec;
    for (uint64_t i = 0; i < (uint64_t)nt * W; i++)
        v[i] = ~0ull;
    for (uint32_t g = B->group_begin; g < B->group_end; g++) {
        const qs_group *G = &L->groups[g];
        uint32_t b, e;
        group_range(L, G, x[G->feature], lt, &b, &e);
        for (; b < e; b++)
            clear_range(v + (uint64_t)L->etree[b] * W, (uint32_t)(L->emask[b] >> 32),
                        (uint32_t)L->emask[b]);
    }
    for (uint32_t c = B->cat_begin; c < B->cat_end; c++) {
        const qs_catnode *C = &L->cats[c];
        const qs_node *n = &m->nodes[C->node];
        if (qs_node_goes_left(m, n, x[n->feature]) == !!(C->tree & QS_CAT_REVERSED))
            clear_range(v + (uint64_t)(C->tree & ~QS_CAT_REVERSED) * W, (uint32_t)(C->mask >> 32),
                        (uint32_t)C->mask);
    }
    for (uint32_t i = 0; i < nt; i++) {
        uint64_t t = B->tree_begin + i;
        const uint64_t *vt = v + (uint64_t)i * W;
        uint32_t nl = L->nleaves[t], leaf = nl - 1;
        for (uint32_t k = 0; k < W; k++)
            if (vt[k]) {
                uint32_t cand = k * 64 + (uint32_t)__builtin_ctzll(vt[k]);
                if (cand < leaf)
                    leaf = cand;
                break;
            }
        accumulate(s, t, leaf, acc, accf);
    }
}

/* QS-Ω: an oblivious tree's exit leaf is the OR of one bit per level whose
 * test is false, so each entry ORs its level's bit. */
static void qs_block_omega(const qs_scorer *s, const qs_block *B, void *vec, const double *x,
                           double *acc, float *accf)
{
    const qs_layout *L = s->L;
    const int lt = s->m->cmp == QS_CMP_LT;
    uint32_t *v = vec;
    const uint32_t nt = (uint32_t)(B->tree_end - B->tree_begin);
    memset(v, 0, sizeof *v * nt);
    for (uint32_t g = B->group_begin; g < B->group_end; g++) {
        const qs_group *G = &L->groups[g];
        uint32_t b, e;
        group_range(L, G, x[G->feature], lt, &b, &e);
        for (; b < e; b++)
            v[L->etree[b]] |= (uint32_t)L->emask[b];
    }
    const uint32_t *nl = L->nleaves + B->tree_begin;
    const uint64_t *off = L->leaf_off + B->tree_begin;
    if (single_double(s)) {
        double a = acc[0];
        for (uint32_t i = 0; i < nt; i++)
            a += L->leaves[off[i] + (v[i] & (nl[i] - 1))];
        acc[0] = a;
        return;
    }
    for (uint32_t i = 0; i < nt; i++)
        accumulate(s, B->tree_begin + i, v[i] & (nl[i] - 1), acc, accf);
}

typedef void (*block_fn)(const qs_scorer *, const qs_block *, void *, const double *, double *,
                         float *);

static block_fn block_kernel(const qs_block *B)
{
    if (B->kind == QS_BLOCK_OMEGA)
        return qs_block_omega;
    switch (B->width) {
    case 8: return qs_block8;
    case 16: return qs_block16;
    case 32: return qs_block32;
    case 64: return qs_block64;
    default: return qs_block_wide;
    }
}

/* BWQS: for each block of trees (kept in cache), every document of the
 * batch; blocks in tree order, so each document's sum keeps the source's
 * order. */
/* simd: the vQS level (0: scalar); forced: use it even for batches too
 * small to fill half of its lanes (auto scores those scalar: 8 lanes
 * for one document would cost more than the scalar kernel). */
static void qs_score_slots(const qs_scorer *s, qs_workspace *w, uint32_t n, double *out,
                           unsigned simd, int forced)
{
    const qs_model *m = s->m;
    const uint32_t K = m->num_classes;
    for (uint32_t d = 0; d < n; d++)
        for (uint32_t c = 0; c < K; c++) {
            w->acc[d * K + c] = m->base[c];
            w->accf[d * K + c] = (float)m->base[c];
        }
    for (uint32_t k = 0; k < s->L->nblocks; k++) {
        const qs_block *B = &s->L->blocks[k];
        if (simd && qs_vqs_block_ok(B) && (forced || (uint64_t)n * 2 >= qs_vqs_lanes(simd, B, n))) {
            /* vQS: the batch `lanes` documents at a time; a short last
             * group repeats its last document in the spare lanes. */
            const unsigned lanes = qs_vqs_lanes(simd, B, n);
            const double *xl[QS_VQS_MAX_LANES];
            for (uint32_t d = 0; d < n; d += lanes) {
                unsigned nreal = n - d < lanes ? n - d : lanes;
                for (unsigned l = 0; l < lanes; l++)
                    xl[l] = w->xs[d + (l < nreal ? l : nreal - 1)];
                qs_vqs_block(simd, lanes, m, s->L, &s->plan, B, w->vec, xl, nreal, w->acc + (size_t)d * K,
                             w->accf + (size_t)d * K);
            }
            continue;
        }
        block_fn fn = block_kernel(B);
        for (uint32_t d = 0; d < n; d++)
            fn(s, B, w->vec, w->xs[d], w->acc + (size_t)d * K, w->accf + (size_t)d * K);
    }
    for (uint32_t d = 0; d < n; d++)
        for (uint32_t c = 0; c < K; c++)
            out[d * K + c] = m->float_accumulate ? (double)w->accf[d * K + c] : w->acc[d * K + c];
}

int qs_score_batch(const qs_scorer *s, qs_workspace *w, qs_backend b, uint32_t n, double *out)
{
    const qs_model *m = s->m;
    if (n == 0)
        return 0;
    if (n > w->nslots)
        return -1;
    switch (b) {
    case QS_BACKEND_WALK:
        for (uint32_t d = 0; d < n; d++)
            qs_model_walk_score(m, w->xs[d], out + (size_t)d * m->num_classes);
        return 0;
    case QS_BACKEND_AUTO:
    case QS_BACKEND_QS:
        qs_score_slots(s, w, n, out, simd_level(b), 0);
        return 0;
    case QS_BACKEND_VQS:
    case QS_BACKEND_VQS_AVX2:
    case QS_BACKEND_VQS_AVX512:
        if (!simd_level(b))
            return -1;
        qs_score_slots(s, w, n, out, simd_level(b), 1);
        return 0;
    case QS_BACKEND_STRUCT:
    case QS_BACKEND_VPRED:
    case QS_BACKEND_OBLIVIOUS:
        if (!qs_backend_available(s, b))
            return -1;
        if (b == QS_BACKEND_STRUCT)
            qs_struct_score(baselines(s), w->xs, n, out);
        else if (b == QS_BACKEND_VPRED)
            qs_vpred_score(baselines(s), w->xs, n, out);
        else
            qs_oblivious_score(baselines(s), w->xs, n, out);
        return 0;
    default:
        return -1;
    }
}

int qs_score_doc(const qs_scorer *s, qs_workspace *w, qs_backend b, double *out)
{
    /* The current slot alone: swap it into position 0 of the batch. */
    const double *save = w->xs[0];
    w->xs[0] = w->slot[w->cur].x;
    int rc = qs_score_batch(s, w, b, 1, out);
    w->xs[0] = save;
    return rc;
}

void qs_count_node_outcomes(const qs_scorer *s, const qs_workspace *w, uint64_t *false_nodes,
                            uint64_t *true_nodes)
{
    const qs_model *m = s->m;
    const double *x = w->slot[w->cur].x;
    for (uint64_t t = 0; t < m->num_trees; t++) {
        const qs_tree *tr = &m->trees[t];
        for (uint32_t i = 0; i < tr->num_nodes; i++) {
            const qs_node *n = &m->nodes[tr->node_off + i];
            if (n->kind == QS_NODE_LEAF)
                continue;
            if (qs_node_goes_left(m, n, x[n->feature]))
                true_nodes[t]++;
            else
                false_nodes[t]++;
        }
    }
}

/* ------------------------------------------------------------ transforms */

void qs_transform(const qs_scorer *s, double *y)
{
    const qs_model *m = s->m;
    const uint32_t k = m->num_classes;
    const double a = m->transform_param;
    const int f = m->float_accumulate == QS_ACC_FLOAT; /* XGBoost computes its transforms in float32 */
    if (strcmp(m->transform, "sigmoid") == 0 || strcmp(m->transform, "ova-sigmoid") == 0) {
        for (uint32_t c = 0; c < k; c++)
            y[c] = f ? (double)(1.0f / (1.0f + expf(-(float)a * (float)y[c])))
                     : 1.0 / (1.0 + exp(-a * y[c]));
    } else if (strcmp(m->transform, "exp") == 0) {
        for (uint32_t c = 0; c < k; c++)
            y[c] = f ? (double)expf((float)y[c]) : exp(y[c]);
    } else if (strcmp(m->transform, "hinge") == 0) {
        for (uint32_t c = 0; c < k; c++)
            y[c] = y[c] > 0.0 ? 1.0 : 0.0;
    } else if (strcmp(m->transform, "softmax") == 0) {
        double mx = y[0];
        for (uint32_t c = 1; c < k; c++)
            if (y[c] > mx)
                mx = y[c];
        if (f) {
            float sum = 0.0f;
            for (uint32_t c = 0; c < k; c++) {
                y[c] = (double)expf((float)y[c] - (float)mx);
                sum += (float)y[c];
            }
            for (uint32_t c = 0; c < k; c++)
                y[c] = (double)((float)y[c] / sum);
        } else {
            double sum = 0.0;
            for (uint32_t c = 0; c < k; c++) {
                y[c] = exp(y[c] - mx);
                sum += y[c];
            }
            for (uint32_t c = 0; c < k; c++)
                y[c] /= sum;
        }
    }
}

/* ------------------------------------------------------------ parsing */

int qs_parse_value(const qs_scorer *s, const char *tok, size_t len, double *out)
{
    return qs_parse_number(s->m->float_precision, tok, len, out);
}

int qs_letor_parse(const qs_scorer *s, qs_workspace *w, qs_absent absent, const char *line,
                   size_t len, qs_letor_line *out, int *is_doc, qs_error *err)
{
    const char *p = line, *end = line + len;
    char show[64];
    memset(out, 0, sizeof *out);
    out->max_id = -1;
    *is_doc = 0;
    /* A comment runs to the end of the line. */
    const char *hash = memchr(line, '#', len);
    if (hash)
        end = hash;
    while (end > p && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p == end)
        return 0;
    qs_doc_reset(w, absent);
    const char *t = p;
    while (p < end && *p != ' ' && *p != '\t')
        p++;
    double lab;
    if (qs_parse_number(0, t, (size_t)(p - t), &lab) != 0 || isnan(lab)) {
        qs_quote(show, sizeof show, t, (size_t)(p - t));
        return qs_fail(err, QS_ERR_FORMAT, 0, "bad label '%s' (expected a number)", show);
    }
    out->label = t;
    out->label_len = (size_t)(p - t);
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (p == end)
            break;
        t = p;
        while (p < end && *p != ' ' && *p != '\t')
            p++;
        size_t n = (size_t)(p - t);
        if (n > 4 && memcmp(t, "qid:", 4) == 0) {
            if (out->qid)
                return qs_fail(err, QS_ERR_FORMAT, 0, "more than one qid on a line");
            out->qid = t + 4;
            out->qid_len = n - 4;
            continue;
        }
        const char *colon = memchr(t, ':', n);
        uint64_t id = 0;
        const char *d = t;
        while (d < t + n && *d >= '0' && *d <= '9') {
            if (id <= UINT32_MAX) /* saturates: any longer id is out of range */
                id = id * 10 + (uint64_t)(*d - '0');
            d++;
        }
        if (!colon || d != colon || colon == t) {
            qs_quote(show, sizeof show, t, n);
            return qs_fail(err, QS_ERR_FORMAT, 0, "bad feature token '%s' (expected INDEX:VALUE)",
                           show);
        }
        if (id > UINT32_MAX) {
            qs_quote(show, sizeof show, t, n);
            return qs_fail(err, QS_ERR_FORMAT, 0, "feature id in '%s' is out of range", show);
        }
        double v;
        if (qs_parse_value(s, colon + 1, (size_t)(t + n - colon - 1), &v) != 0) {
            qs_quote(show, sizeof show, t, n);
            return qs_fail(err, QS_ERR_FORMAT, 0, "bad feature value in '%s' (expected a number)",
                           show);
        }
        qs_doc_set(w, (uint32_t)id, v);
        if ((long long)id > out->max_id)
            out->max_id = (long long)id;
    }
    *is_doc = 1;
    return 0;
}
