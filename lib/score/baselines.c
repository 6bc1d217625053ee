/* baselines.c: the comparison back ends of the QuickScorer papers, STRUCT+,
 * VPRED and OBLIVIOUS, built from the canonical model and bit-identical to
 * qs_model_walk_score (same comparisons, special values, tree order and
 * accumulation). */
#include "score/baselines.h"

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
/* Unrolling the loop over the v interleaved documents keeps their node
 * indices in registers; -O2 alone leaves it rolled (measured ~7% slower). */
#define UNROLL_V _Pragma("GCC unroll 16")
#else
#define ALWAYS_INLINE inline
#define UNROLL_V
#endif

/* VPRED's interleaving factor: v documents walk a tree side by side so the
 * v independent load chains overlap.  Measured on an XGBoost MQ2008 model
 * (1000 trees, up to 64 leaves) at -O2, us/document: v=4 27.3, v=8 18.4,
 * v=16 16.6, v=32 no better.  Remainders go by 4, then 1. */
#ifndef VPRED_V
#define VPRED_V 16
#endif
#if VPRED_V < 4
#error "VPRED_V must be at least 4"
#endif
/* The OBLIVIOUS baseline scores documents in blocks of this size, so each
 * level's (feature, threshold) is loaded once per block. */
#define OBL_V 16

/* STRUCT+: internal nodes only, in preorder; a negative child ~k is leaf k
 * of the tree. */
typedef struct {
    double t;       /* threshold, or the original node index (FX_CAT) */
    uint32_t fx;
    int32_t left, right;
} sp_node;

/* VPRED: every node; the two children of a node are an adjacent pair
 * starting at cb, so the next node is `cb + goes_right` (the `children[cmp]` idiom
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
    uint64_t leaf_off;  /* first leaf in leaf[] (left to right) */
    int32_t sp_root;    /* 0, or ~0 for a tree that is a single leaf */
    uint32_t depth;     /* longest root-to-leaf path, in edges */
    uint32_t cls;
} bl_tree;

/* OBLIVIOUS: per tree, one (threshold, word) per level; the 2^depth leaves
 * are the tree's leaves in leaf[], left to right: the order of the leaf index
 * built root bit first. */
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
    double *leaf;       /* weight * leaf value, per tree left to right */
    uint64_t *lnode;    /* per leaf[] entry its global node, for linear leaves (else NULL) */
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

/* Contribution of leaf[k] for document x: its value, or a linear leaf's
 * value for x (model.h, qs_linear). */
static ALWAYS_INLINE double leaf_value(const qs_baselines *b, uint64_t k, const double *x)
{
    double c = b->leaf[k];
    if (b->lnode) {
        const uint64_t g = b->lnode[k];
        if (b->m->node_linear[g])
            c = qs_leaf_output(b->m, g, x);
    }
    return c;
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
            acc_add(b->acc, &o[tr->cls], leaf_value(b, tr->leaf_off + (uint32_t)~i, xd));
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

/* V documents through every tree: `depth` branch-free steps each, V
 * independent chains per step.  The tree's own depth, not the model's: on
 * the MQ2008 model above (depths up to 20) stepping every tree to the
 * model's depth cost 24.0 us/document against 16.6. */
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
            UNROLL_V for (int j = 0; j < V; j++) {
                const vp_node *q = &nd[idx[j]];
                double v = xs[j][q->fx & FX_FEAT];
                uint32_t l = num_left(v, q->t, q->fx, lt, zero);
                if (cat && (q->fx & FX_CAT))
                    l = cat_left(b->m, q->t, v);
                idx[j] = q->cb + 1u - l;
            }
        }
        double *o = out + tr->cls;
        for (int j = 0; j < V; j++)
            acc_add(b->acc, &o[(size_t)j * K],
                    leaf_value(b, tr->leaf_off + leaf_ordinal(nd[idx[j]].t), xs[j]));
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
            UNROLL_V for (int j = 0; j < V; j++)
                idx[j] = (idx[j] << 1) | (1u ^ num_left(xs[j][f], t, fx, lt, zero));
        }
        double *o = out + tr->cls;
        for (int j = 0; j < V; j++)
            acc_add(b->acc, &o[(size_t)j * K], leaf_value(b, tr->leaf_off + idx[j], xs[j]));
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
    free(b->lnode);
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

/* A pending node of the depth-first layout. */
typedef struct {
    uint32_t orig;    /* index in the model's tree */
    uint32_t pos;     /* its slot in the tree's vp[], allocated with its sibling */
    int32_t parent;   /* sp[] index of the parent, -1 for the root */
    uint32_t side;    /* 0: left child, 1: right child */
    uint32_t depth;
} pending;

/* Lay out one tree depth first, left child first, into vp[] (all nodes),
 * sp[] (internal nodes) and leaf[] (contributions).  Preorder keeps a node
 * and its left child close (STRUCT+'s next node is often the next struct);
 * VPRED allocates both children of a node as an adjacent pair when the node
 * is laid out, so the left spine stays packed too.  Leaves are numbered in
 * visiting order, i.e. left to right, which for an oblivious tree is the
 * order of the leaf index built root bit first.  Measured against a
 * breadth-first layout, us/document: STRUCT+ 48.6 -> 41.8 on a QuickRank
 * model (depths up to 42), 51.2 -> 47.1 on an XGBoost one; VPRED unchanged. */
static int layout_tree(qs_baselines *b, uint64_t ti, pending *stack, uint64_t *sp_next,
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
    uint32_t n_int = 0, n_leaf = 0, used = 1, sp_top = 0, depth = 0, visited = 0;
    stack[sp_top++] = (pending){ 0, 0, -1, 0, 0 };
    while (sp_top) {
        const pending e = stack[--sp_top];
        const qs_node *x = &nodes[e.orig];
        if (++visited > n)
            return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu: a node is reached twice", tl);
        if (e.depth > depth)
            depth = e.depth;
        int32_t code;
        if (x->kind == QS_NODE_LEAF) {
            code = ~(int32_t)n_leaf;
            leaf[n_leaf] = t->weight * x->value;
            if (b->lnode)
                b->lnode[*leaf_next + n_leaf] = t->node_off + e.orig;
            vp[e.pos].t = leaf_nan(n_leaf);
            vp[e.pos].fx = 0;
            vp[e.pos].cb = e.pos - 1u;  /* wraps for the root; cb + 1 is pos again */
            n_leaf++;
        } else {
            if (x->feature >= m->num_features ||
                (x->kind != QS_NODE_NUM && x->kind != QS_NODE_CAT) || x->left < 0 ||
                (uint32_t)x->left >= n || x->right < 0 || (uint32_t)x->right >= n ||
                (uint64_t)used + 2 > n)
                return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu: invalid node %u", tl, e.orig);
            code = (int32_t)n_int++;
            uint32_t fx = node_word(m, x);
            double th = x->kind == QS_NODE_CAT ? (double)(t->node_off + e.orig) : x->value;
            vp[e.pos].t = th;
            vp[e.pos].fx = fx;
            vp[e.pos].cb = used;
            sp[code].t = th;
            sp[code].fx = fx;
            /* Right pushed first so the left subtree is laid out next. */
            stack[sp_top++] = (pending){ (uint32_t)x->right, used + 1, code, 1, e.depth + 1 };
            stack[sp_top++] = (pending){ (uint32_t)x->left, used, code, 0, e.depth + 1 };
            used += 2;
            if (fx & FX_CAT)
                b->has_cat = 1;
            if (fx & (1u << FX_ZERO_SHIFT))
                b->has_zero = 1;
        }
        if (e.parent < 0)
            bt->sp_root = code;
        else if (e.side)
            sp[e.parent].right = code;
        else
            sp[e.parent].left = code;
    }
    if (used != n)
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

/* The levels of oblivious tree ti, read down the leftmost path: every node
 * of a level tests the same. */
static void layout_oblivious(qs_baselines *b, uint64_t ti, uint64_t *lev_next)
{
    const bl_tree *bt = &b->trees[ti];
    ob_tree *o = &b->ot[ti];
    const vp_node *vp = b->vp + bt->vp_off;
    o->lev_off = *lev_next;
    o->leaf_off = bt->leaf_off;
    o->depth = bt->depth;
    o->cls = bt->cls;
    uint32_t p = 0;
    for (uint32_t l = 0; l < bt->depth; l++) {
        b->ob_t[*lev_next + l] = vp[p].t;
        b->ob_fx[*lev_next + l] = vp[p].fx;
        p = vp[p].cb;
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
    pending *stack = NULL;
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
    if (m->node_linear && !(b->lnode = alloc_array(m->num_nodes, sizeof *b->lnode))) {
        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        goto fail;
    }
    /* The stack holds at most one pending sibling per level plus two: < maxn + 2. */
    stack = alloc_array((uint64_t)maxn + 2, sizeof *stack);
    if (!b->trees || !b->vp || !b->sp || !b->leaf || !stack) {
        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        goto fail;
    }
    uint64_t sp_next = 0, leaf_next = 0;
    for (uint64_t ti = 0; ti < m->num_trees; ti++) {
        if (m->trees[ti].node_off + m->trees[ti].num_nodes > m->num_nodes) {
            qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu: bad node range", (unsigned long long)ti);
            goto fail;
        }
        if (layout_tree(b, ti, stack, &sp_next, &leaf_next, err) != 0)
            goto fail;
    }
    free(stack);
    stack = NULL;
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
    free(stack);
    qs_baselines_free(b);
    return NULL;
}

/* ------------------------------------------------------------ back ends */

static int base_prepare(const qs_backend_def *d, const qs_scorer *s, void **state, qs_error *err)
{
    qs_baselines *b = qs_baselines_build(s->m, err);
    if (!b)
        return -1;
    if ((d->flags & QS_BACKEND_F_OBLIVIOUS_ONLY) && !qs_baselines_has_oblivious(b)) {
        qs_baselines_free(b);
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                       "back end '%s' scores only models whose trees are all oblivious",
                       d->name);
    }
    *state = b;
    return 0;
}

static void base_release(void *state) { qs_baselines_free(state); }

static int base_score(const qs_backend_def *d, const qs_scorer *s, const void *state,
                      qs_workspace *w, void *scratch, uint32_t n, double *out, unsigned how,
                      qs_error *err)
{
    switch (d->param) {
    case 0: qs_struct_score(state, w->xs, n, out); break;
    case 1: qs_vpred_score(state, w->xs, n, out); break;
    default: qs_oblivious_score(state, w->xs, n, out); break;
    }
    return 0;
}

#define BASE_FUNCS .prepare = base_prepare, .release = base_release, .score = base_score

const qs_backend_def qs_backend_struct = {
    .name = "struct",
    .summary = "baseline: naive pointer walk over node structs (STRUCT+)",
    .flags = QS_BACKEND_F_BASELINE,
    .param = 0,
    BASE_FUNCS,
};

const qs_backend_def qs_backend_vpred = {
    .name = "vpred",
    .summary = "baseline: branch-free walk unrolled by depth, 16 documents interleaved (VPRED)",
    .flags = QS_BACKEND_F_BASELINE,
    .param = 1,
    BASE_FUNCS,
};

const qs_backend_def qs_backend_oblivious = {
    .name = "oblivious",
    .summary = "baseline for oblivious models: each tree's leaf index computed bit by bit",
    .flags = QS_BACKEND_F_BASELINE | QS_BACKEND_F_OBLIVIOUS_ONLY,
    .param = 2,
    BASE_FUNCS,
};
