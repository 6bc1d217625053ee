/* baselines.c: the comparison back ends of the QuickScorer papers, STRUCT+,
 * VPRED and OBLIVIOUS, built from the canonical model and bit-identical to
 * qs_model_walk_score (same comparisons, special values, tree order and
 * accumulation). */
#include "baselines.h"

#include <string.h>

/* ------------------------------------------------------------ node words
 *
 * Every compact node carries one 32-bit word `fx`: the feature id in the low
 * 24 bits (QS_MAX_FEATURES is 2^24) and the special-value rules above it, so
 * a node is one threshold and one word, and the rules cost no extra load.
 *
 *   FX_NANL  a NaN input goes left.  Precomputed per node from the rules:
 *            QS_MISS_NAN -> default_left; QS_MISS_NONE -> where 0.0 goes;
 *            QS_MISS_ZERO -> default_left (NaN becomes 0.0, inside the band).
 *            Every comparison with NaN is false, so `x cmp t` alone sends NaN
 *            right and one AND/OR with this bit fixes it without a branch.
 *   FX_ZERO  QS_MISS_ZERO: |x| <= QS_ZERO_BAND goes to the default side.
 *   FX_DL    the default side is left (read with FX_ZERO).
 *   FX_CAT   categorical: the node's threshold slot holds the global index
 *            of the original node and qs_node_goes_left decides.
 * Leaves carry no flags and feature 0. */
#define FX_FEAT 0x00FFFFFFu
#define FX_ZERO_SHIFT 24
#define FX_DL_SHIFT 25
#define FX_CAT (1u << 26)
#define FX_NANL_SHIFT 31

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* VPRED's interleaving factor: v documents walk a tree side by side so the
 * v independent load chains overlap.  Measured on an XGBoost MQ2008 model
 * (1000 trees, 64 leaves) at -O2: v = 8 and 16 are close; 16 won slightly. */
#ifndef VPRED_V
#define VPRED_V 16
#endif
/* The OBLIVIOUS baseline scores documents in blocks of this size, so each
 * level's (feature, threshold) is loaded once per block. */
#define OBL_V 16

/* STRUCT+: internal nodes only; a negative child ~k is leaf k of the tree. */
typedef struct {
    double t;       /* threshold, or the original node index (FX_CAT) */
    uint32_t fx;
    int32_t left, right;
} sp_node;

/* VPRED: every node, breadth first, so the two children of a node are
 * adjacent and the next node is `cb + goes_right` (the `children[cmp]` idiom
 * without a second index).  A leaf has a NaN threshold, so it always "goes
 * right", and cb = own index - 1: it points to itself and extra steps are
 * harmless.  The NaN's payload holds the leaf's ordinal in the tree, so the
 * leaf values need no array parallel to the nodes. */
typedef struct {
    double t;
    uint32_t fx;
    uint32_t cb;
} vp_node;

typedef struct {
    uint64_t sp_off;    /* first internal node in sp[] */
    uint64_t vp_off;    /* first node in vp[] */
    uint64_t leaf_off;  /* first leaf in leaf[] (breadth-first order) */
    int32_t sp_root;    /* 0, or ~0 for a tree that is a single leaf */
    uint32_t depth;     /* longest root-to-leaf path, in edges */
    uint32_t cls;
} bl_tree;

/* OBLIVIOUS: per tree, one (threshold, word) per level; the 2^depth leaves
 * are the tree's leaves in leaf[] (breadth-first order is level order for a
 * complete tree, i.e. the order of the leaf index built root bit first). */
typedef struct {
    uint64_t lev_off;   /* into ob_t[] / ob_fx[] */
    uint64_t leaf_off;
    uint32_t depth;
    uint32_t cls;
} ob_tree;

struct qs_baselines {
    const qs_model *m;  /* for categorical nodes and the base margins; must outlive us */
    uint64_t ntrees;
    uint32_t K;
    int acc;            /* enum qs_accum */
    int lt;             /* QS_CMP_LT */
    int has_zero, has_cat;
    bl_tree *trees;
    sp_node *sp;
    vp_node *vp;
    double *leaf;       /* weight * leaf value, per tree breadth first */
    int obl;            /* every tree is oblivious: ob_* are built */
    ob_tree *ot;
    double *ob_t;
    uint32_t *ob_fx;
};

static const uint64_t LEAF_NAN = 0x7FF8000000000000ull;  /* quiet NaN, payload = ordinal */

static double leaf_nan(uint32_t ordinal)
{
    uint64_t u = LEAF_NAN | ordinal;
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static ALWAYS_INLINE uint32_t leaf_ordinal(double t)
{
    uint64_t u;
    memcpy(&u, &t, sizeof u);
    return (uint32_t)u;
}

/* ------------------------------------------------------------ decisions */

/* A numerical node, branch-free: 1 if x goes left.  `lt` and `zero` are
 * compile-time constants in every caller. */
static ALWAYS_INLINE uint32_t num_left(double v, double t, uint32_t fx, int lt, int zero)
{
    uint32_t l = (uint32_t)(lt ? v < t : v <= t) | ((uint32_t)(v != v) & (fx >> FX_NANL_SHIFT));
    if (zero) {
        /* fabs(NaN) <= band is false; NaN was settled by FX_NANL above. */
        uint32_t inb = (uint32_t)(fabs(v) <= QS_ZERO_BAND) & (fx >> FX_ZERO_SHIFT);
        uint32_t dl = (fx >> FX_DL_SHIFT) & 1u;
        l ^= (l ^ dl) & inb & 1u;
    }
    return l;
}

static uint32_t cat_left(const qs_model *m, double orig, double v)
{
    return (uint32_t)qs_node_goes_left(m, &m->nodes[(uint64_t)orig], v);
}

/* STRUCT+'s decision, written the plain way with branches. */
static ALWAYS_INLINE int sp_left(const qs_model *m, const sp_node *q, double v, int lt)
{
    uint32_t fx = q->fx;
    if (fx & (FX_CAT | (1u << FX_ZERO_SHIFT))) {
        if (fx & FX_CAT)
            return (int)cat_left(m, q->t, v);
        if (!(fabs(v) > QS_ZERO_BAND))  /* inside the band, or NaN (read as 0.0) */
            return (int)((fx >> FX_DL_SHIFT) & 1u);
    }
    if (lt ? v < q->t : v <= q->t)
        return 1;
    return v != v && (fx >> FX_NANL_SHIFT);
}

/* ---------------------------------------------------------- accumulation */

static ALWAYS_INLINE void init_rows(const qs_baselines *b, double *out, uint32_t n)
{
    for (uint32_t d = 0; d < n; d++)
        for (uint32_t c = 0; c < b->K; c++)
            out[(size_t)d * b->K + c] = b->m->base[c];  /* float-exact in float modes */
}

/* Add contribution c to an accumulator held in a double.  In the float modes
 * the double always holds a float32 value exactly, so these are the very
 * operations of qs_model_walk_score on its float accumulator. */
static ALWAYS_INLINE void acc_add(int mode, double *o, double c)
{
    if (mode == QS_ACC_DOUBLE)
        *o += c;
    else if (mode == QS_ACC_FLOAT)
        *o = (double)((float)*o + (float)c);
    else
        *o = (double)(float)(*o + c);
}

/* ---------------------------------------------------------------- STRUCT+ */

static ALWAYS_INLINE void struct_run(const qs_baselines *b, const double *const *x, uint32_t n,
                                     double *out, int lt)
{
    const uint32_t K = b->K;
    init_rows(b, out, n);
    for (uint32_t d = 0; d < n; d++) {
        const double *xd = x[d];
        double *o = out + (size_t)d * K;
        for (uint64_t ti = 0; ti < b->ntrees; ti++) {
            const bl_tree *tr = &b->trees[ti];
            const sp_node *nd = b->sp + tr->sp_off;
            int32_t i = tr->sp_root;
            while (i >= 0) {
                const sp_node *q = &nd[i];
                i = sp_left(b->m, q, xd[q->fx & FX_FEAT], lt) ? q->left : q->right;
            }
            acc_add(b->acc, &o[tr->cls], b->leaf[tr->leaf_off + (uint32_t)~i]);
        }
    }
}

static void struct_le(const qs_baselines *b, const double *const *x, uint32_t n, double *out)
{
    struct_run(b, x, n, out, 0);
}

static void struct_lt(const qs_baselines *b, const double *const *x, uint32_t n, double *out)
{
    struct_run(b, x, n, out, 1);
}

void qs_struct_score(const qs_baselines *b, const double *const *x, uint32_t n, double *out)
{
    (b->lt ? struct_lt : struct_le)(b, x, n, out);
}

/* ------------------------------------------------------------------ VPRED */

/* V documents through every tree: `depth` branch-free steps each (the
 * tree's own depth, so shallow trees of a deep model stay cheap), V
 * independent chains per step. */
static ALWAYS_INLINE void vpred_block(const qs_baselines *b, const double *const *x, double *out,
                                      int V, int lt, int zero, int cat)
{
    const uint32_t K = b->K;
    const double *xs[VPRED_V];
    uint32_t idx[VPRED_V];
    for (int j = 0; j < V; j++)
        xs[j] = x[j];
    init_rows(b, out, (uint32_t)V);
    for (uint64_t ti = 0; ti < b->ntrees; ti++) {
        const bl_tree *tr = &b->trees[ti];
        const vp_node *nd = b->vp + tr->vp_off;
        for (int j = 0; j < V; j++)
            idx[j] = 0;
        for (uint32_t s = 0; s < tr->depth; s++) {
            for (int j = 0; j < V; j++) {
                const vp_node *q = &nd[idx[j]];
                double v = xs[j][q->fx & FX_FEAT];
                uint32_t l = num_left(v, q->t, q->fx, lt, zero);
                if (cat && (q->fx & FX_CAT))
                    l = cat_left(b->m, q->t, v);
                idx[j] = q->cb + 1u - l;
            }
        }
        const double *lf = b->leaf + tr->leaf_off;
        double *o = out + tr->cls;
        for (int j = 0; j < V; j++)
            acc_add(b->acc, &o[(size_t)j * K], lf[leaf_ordinal(nd[idx[j]].t)]);
    }
}

static ALWAYS_INLINE void vpred_run(const qs_baselines *b, const double *const *x, uint32_t n,
                                    double *out, int lt, int zero, int cat)
{
    uint32_t d = 0;
    for (; n - d >= VPRED_V; d += VPRED_V)
        vpred_block(b, x + d, out + (size_t)d * b->K, VPRED_V, lt, zero, cat);
    for (; n - d >= 4; d += 4)
        vpred_block(b, x + d, out + (size_t)d * b->K, 4, lt, zero, cat);
    for (; d < n; d++)
        vpred_block(b, x + d, out + (size_t)d * b->K, 1, lt, zero, cat);
}

typedef void (*score_fn)(const qs_baselines *, const double *const *, uint32_t, double *);

#define VPRED_FN(LT, Z, C)                                                                  \
    static void vpred_##LT##Z##C(const qs_baselines *b, const double *const *x, uint32_t n, \
                                 double *out)                                               \
    {                                                                                       \
        vpred_run(b, x, n, out, LT, Z, C);                                                  \
    }
VPRED_FN(0, 0, 0)
VPRED_FN(0, 0, 1)
VPRED_FN(0, 1, 0)
VPRED_FN(0, 1, 1)
VPRED_FN(1, 0, 0)
VPRED_FN(1, 0, 1)
VPRED_FN(1, 1, 0)
VPRED_FN(1, 1, 1)

void qs_vpred_score(const qs_baselines *b, const double *const *x, uint32_t n, double *out)
{
    static const score_fn fns[8] = { vpred_000, vpred_001, vpred_010, vpred_011,
                                     vpred_100, vpred_101, vpred_110, vpred_111 };
    fns[(b->lt << 2) | (b->has_zero << 1) | b->has_cat](b, x, n, out);
}

/* -------------------------------------------------------------- OBLIVIOUS */

static ALWAYS_INLINE void obl_block(const qs_baselines *b, const double *const *x, double *out,
                                    int V, int lt, int zero)
{
    const uint32_t K = b->K;
    const double *xs[OBL_V];
    uint32_t idx[OBL_V];
    for (int j = 0; j < V; j++)
        xs[j] = x[j];
    init_rows(b, out, (uint32_t)V);
    for (uint64_t ti = 0; ti < b->ntrees; ti++) {
        const ob_tree *tr = &b->ot[ti];
        const double *tt = b->ob_t + tr->lev_off;
        const uint32_t *ff = b->ob_fx + tr->lev_off;
        for (int j = 0; j < V; j++)
            idx[j] = 0;
        /* One comparison per level, root bit first: the leaf index is the
         * path read as a binary number (1 = right). */
        for (uint32_t l = 0; l < tr->depth; l++) {
            const double t = tt[l];
            const uint32_t fx = ff[l], f = fx & FX_FEAT;
            for (int j = 0; j < V; j++)
                idx[j] = (idx[j] << 1) | (1u ^ num_left(xs[j][f], t, fx, lt, zero));
        }
        const double *lf = b->leaf + tr->leaf_off;
        double *o = out + tr->cls;
        for (int j = 0; j < V; j++)
            acc_add(b->acc, &o[(size_t)j * K], lf[idx[j]]);
    }
}

static ALWAYS_INLINE void obl_run(const qs_baselines *b, const double *const *x, uint32_t n,
                                  double *out, int lt, int zero)
{
    uint32_t d = 0;
    for (; n - d >= OBL_V; d += OBL_V)
        obl_block(b, x + d, out + (size_t)d * b->K, OBL_V, lt, zero);
    for (; d < n; d++)
        obl_block(b, x + d, out + (size_t)d * b->K, 1, lt, zero);
}

#define OBL_FN(LT, Z)                                                                      \
    static void obl_##LT##Z(const qs_baselines *b, const double *const *x, uint32_t n,     \
                            double *out)                                                   \
    {                                                                                      \
        obl_run(b, x, n, out, LT, Z);                                                      \
    }
OBL_FN(0, 0)
OBL_FN(0, 1)
OBL_FN(1, 0)
OBL_FN(1, 1)

/* Assumes qs_baselines_has_oblivious(b); on any other model it scores with
 * STRUCT+ instead, so a wrong call is slow but never wrong or unsafe. */
void qs_oblivious_score(const qs_baselines *b, const double *const *x, uint32_t n, double *out)
{
    static const score_fn fns[4] = { obl_00, obl_01, obl_10, obl_11 };
    if (!b->obl) {
        qs_struct_score(b, x, n, out);
        return;
    }
    fns[(b->lt << 1) | b->has_zero](b, x, n, out);
}

int qs_baselines_has_oblivious(const qs_baselines *b) { return b->obl; }

/* ------------------------------------------------------------------ build */

static void *alloc_array(uint64_t n, size_t size)
{
    if (n == 0)
        n = 1;
    if (n > SIZE_MAX / size)
        return NULL;
    return malloc((size_t)n * size);
}

void qs_baselines_free(qs_baselines *b)
{
    if (!b)
        return;
    free(b->trees);
    free(b->sp);
    free(b->vp);
    free(b->leaf);
    free(b->ot);
    free(b->ob_t);
    free(b->ob_fx);
    free(b);
}

/* The word of an internal node (see FX_* above). */
static uint32_t node_word(const qs_model *m, const qs_node *nd)
{
    uint32_t fx = nd->feature;
    uint32_t dl = nd->default_left ? 1u : 0u;
    if (nd->kind == QS_NODE_CAT)
        return fx | FX_CAT;
    uint32_t nanl;
    if (nd->miss == QS_MISS_NONE)
        nanl = (uint32_t)(m->cmp == QS_CMP_LE ? 0.0 <= nd->value : 0.0 < nd->value);
    else
        nanl = dl;  /* QS_MISS_NAN, and QS_MISS_ZERO where NaN is 0.0, inside the band */
    if (nd->miss == QS_MISS_ZERO)
        fx |= (1u << FX_ZERO_SHIFT) | (dl << FX_DL_SHIFT);
    return fx | (nanl << FX_NANL_SHIFT);
}

/* Lay out one tree breadth first into vp[] (all nodes), sp[] (internal
 * nodes) and leaf[] (contributions).  queue[] (num_nodes entries) receives
 * the original index of each breadth-first position, ord[] its ordinal: an
 * sp[] index, or ~k for leaf k.  Ordinals are given at
 * enqueue time, which is also dequeue order, so internal nodes and leaves
 * are each numbered breadth first. */
static int layout_tree(qs_baselines *b, uint64_t ti, uint32_t *queue, int32_t *ord, uint64_t *sp_next,
                       uint64_t *leaf_next, qs_error *err)
{
    const qs_model *m = b->m;
    const qs_tree *t = &m->trees[ti];
    const qs_node *nodes = m->nodes + t->node_off;
    const uint32_t n = t->num_nodes;
    bl_tree *bt = &b->trees[ti];
    unsigned long long tl = (unsigned long long)ti;
    if (n == 0 || t->class_id >= b->K)
        return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu: empty or bad class", tl);
    bt->cls = t->class_id;
    bt->vp_off = t->node_off;
    bt->sp_off = *sp_next;
    bt->leaf_off = *leaf_next;
    vp_node *vp = b->vp + t->node_off;
    sp_node *sp = b->sp + *sp_next;
    double *leaf = b->leaf + *leaf_next;
    uint32_t n_int = 0, n_leaf = 0;
    queue[0] = 0;
    ord[0] = nodes[0].kind == QS_NODE_LEAF ? ~(int32_t)n_leaf++ : (int32_t)n_int++;
    bt->sp_root = ord[0];
    uint32_t q = 1, depth = 0, level_end = 1;
    for (uint32_t p = 0; p < q; p++) {
        if (p == level_end) {
            depth++;
            level_end = q;
        }
        const qs_node *x = &nodes[queue[p]];
        if (x->kind == QS_NODE_LEAF) {
            int32_t k = ~ord[p];
            leaf[k] = t->weight * x->value;
            vp[p].t = leaf_nan((uint32_t)k);
            vp[p].fx = 0;
            vp[p].cb = p - 1u;  /* wraps for p = 0; cb + 1 is p again */
            continue;
        }
        if (x->feature >= m->num_features || (x->kind != QS_NODE_NUM && x->kind != QS_NODE_CAT) ||
            x->left < 0 || (uint32_t)x->left >= n || x->right < 0 || (uint32_t)x->right >= n ||
            (uint64_t)q + 2 > n)
            return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu: invalid node %u", tl, queue[p]);
        uint32_t fx = node_word(m, x);
        double th = x->kind == QS_NODE_CAT ? (double)(t->node_off + queue[p]) : x->value;
        int32_t c[2];
        for (int k = 0; k < 2; k++) {
            uint32_t o = (uint32_t)(k ? x->right : x->left);
            queue[q + (uint32_t)k] = o;
            c[k] = nodes[o].kind == QS_NODE_LEAF ? ~(int32_t)n_leaf++ : (int32_t)n_int++;
            ord[q + (uint32_t)k] = c[k];
        }
        vp[p].t = th;
        vp[p].fx = fx;
        vp[p].cb = q;
        sp_node *s = &sp[ord[p]];
        s->t = th;
        s->fx = fx;
        s->left = c[0];
        s->right = c[1];
        q += 2;
        if (fx & FX_CAT)
            b->has_cat = 1;
        if (fx & (1u << FX_ZERO_SHIFT))
            b->has_zero = 1;
    }
    if (q != n)
        return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu: unreachable nodes", tl);
    bt->depth = depth;
    *sp_next += n_int;
    *leaf_next += n_leaf;
    return 0;
}

/* Count the oblivious levels and leaves; 0 if some tree is not oblivious. */
static int count_oblivious(const qs_model *m, uint64_t *levels, uint64_t *leaves)
{
    uint64_t lv = 0, lf = 0;
    for (uint64_t ti = 0; ti < m->num_trees; ti++) {
        uint32_t d = 0;
        if (!qs_tree_is_oblivious(m, &m->trees[ti], &d))
            return 0;
        lv += d;
        lf += (uint64_t)1 << d;
    }
    *levels = lv;
    *leaves = lf;
    return 1;
}

/* The levels of oblivious tree ti: node 2^l - 1 of the breadth-first layout
 * is the leftmost node of level l, and every node of a level tests the same. */
static void layout_oblivious(qs_baselines *b, uint64_t ti, uint64_t *lev_next)
{
    const bl_tree *bt = &b->trees[ti];
    ob_tree *o = &b->ot[ti];
    const vp_node *vp = b->vp + bt->vp_off;
    o->lev_off = *lev_next;
    o->leaf_off = bt->leaf_off;
    o->depth = bt->depth;
    o->cls = bt->cls;
    for (uint32_t l = 0; l < bt->depth; l++) {
        b->ob_t[*lev_next + l] = vp[(1u << l) - 1u].t;
        b->ob_fx[*lev_next + l] = vp[(1u << l) - 1u].fx;
    }
    *lev_next += bt->depth;
}

qs_baselines *qs_baselines_build(const qs_model *m, qs_error *err)
{
    qs_baselines *b = calloc(1, sizeof *b);
    if (!b) {
        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        return NULL;
    }
    b->m = m;
    b->ntrees = m->num_trees;
    b->K = m->num_classes;
    b->acc = m->float_accumulate;
    b->lt = m->cmp == QS_CMP_LT;
    uint32_t maxn = 1;
    for (uint64_t ti = 0; ti < m->num_trees; ti++)
        if (m->trees[ti].num_nodes > maxn)
            maxn = m->trees[ti].num_nodes;
    uint32_t *queue = NULL;
    int32_t *ord = NULL;
    if (maxn > QS_MAX_TREE_NODES || m->num_features > QS_MAX_FEATURES ||
        (m->float_accumulate != QS_ACC_DOUBLE && m->float_accumulate != QS_ACC_FLOAT &&
         m->float_accumulate != QS_ACC_FLOAT_DOUBLE)) {
        qs_fail(err, QS_ERR_LIMIT, 0, "model outside the baselines' limits");
        goto fail;
    }
    /* Internal nodes and leaves are each at most num_nodes: size by that
     * rather than count twice. */
    b->trees = alloc_array(m->num_trees, sizeof *b->trees);
    b->vp = alloc_array(m->num_nodes, sizeof *b->vp);
    b->sp = alloc_array(m->num_nodes, sizeof *b->sp);
    b->leaf = alloc_array(m->num_nodes, sizeof *b->leaf);
    queue = alloc_array(maxn, sizeof *queue);
    ord = alloc_array(maxn, sizeof *ord);
    if (!b->trees || !b->vp || !b->sp || !b->leaf || !queue || !ord) {
        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        goto fail;
    }
    uint64_t sp_next = 0, leaf_next = 0;
    for (uint64_t ti = 0; ti < m->num_trees; ti++) {
        if (m->trees[ti].node_off + m->trees[ti].num_nodes > m->num_nodes) {
            qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu: bad node range", (unsigned long long)ti);
            goto fail;
        }
        if (layout_tree(b, ti, queue, ord, &sp_next, &leaf_next, err) != 0)
            goto fail;
    }
    free(queue);
    free(ord);
    queue = NULL;
    ord = NULL;
    uint64_t levels = 0, leaves = 0;
    if (count_oblivious(m, &levels, &leaves)) {
        b->ot = alloc_array(m->num_trees, sizeof *b->ot);
        b->ob_t = alloc_array(levels, sizeof *b->ob_t);
        b->ob_fx = alloc_array(levels, sizeof *b->ob_fx);
        if (!b->ot || !b->ob_t || !b->ob_fx) {
            qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
            goto fail;
        }
        uint64_t lev_next = 0;
        for (uint64_t ti = 0; ti < m->num_trees; ti++)
            layout_oblivious(b, ti, &lev_next);
        b->obl = 1;
    }
    return b;
fail:
    free(queue);
    free(ord);
    qs_baselines_free(b);
    return NULL;
}
