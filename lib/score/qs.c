/* qs.c: scalar QuickScorer (Δ-skip scans; 8/16/32/64-bit and multi-word
 * leaf masks; QS-Ω for oblivious blocks), the BWQS driver that the SIMD back
 * ends share, and the `qs` back end. */
#include "score/score.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ kernels */

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

static inline void accumulate(const qs_scorer *s, uint64_t t, uint32_t leaf, const double *x,
                              double *acc, float *accf)
{
    qs_layout_add_leaf(s->m, s->L, t, leaf, x, acc, accf);
}

/* One class summed in double (LightGBM, QuickRank rankers) and no linear
 * leaves: the common case gets a loop without the per-tree class and mode
 * lookups. */
static inline int single_double(const qs_scorer *s)
{
    return s->m->num_classes == 1 && s->m->float_accumulate == QS_ACC_DOUBLE &&
           !s->m->node_linear;
}

/* One QS block with T-bit leaf vectors, for one document.  The last leaf's
 * bit is OR-ed in before taking the lowest set bit: for a valid layout the
 * exit leaf's bit is always set and no higher than that, so it changes
 * nothing, and a corrupt layout can never index past the tree's leaves. */
/* A categorical table entry or false node on a narrow vector v. */
#define QS_NARROW_AND_(t, mask) (v[(t)] &= (__typeof__(v[0]))(mask))

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
        QS_CATS_FOR_DOC(L, m, B, x, QS_NARROW_AND_);                                      \
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
            accumulate(s, B->tree_begin + i, (uint32_t)CTZ(vv), x, acc, accf);            \
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
        accumulate(s, t, leaf, x, acc, accf);
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
        accumulate(s, B->tree_begin + i, v[i] & (nl[i] - 1), x, acc, accf);
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

/* ------------------------------------------------------------ BWQS */

/* One scorer (block b) over documents [d0, d1) of the batch.  With a SIMD
 * kernel set k, the blocks it takes go `lanes` documents at a time, unless
 * (not forced) the range fills under half of its lanes: 8 lanes for one
 * document would cost more than the scalar kernel.  A short last group
 * repeats its last document in the spare lanes. */
static inline void bwqs_apply(const qs_scorer *s, qs_workspace *w, void *vec, uint32_t b,
                              uint32_t d0, uint32_t d1, const qs_simd_kernel *k, int forced)
{
    const qs_model *m = s->m;
    const uint32_t K = m->num_classes, n = d1 - d0;
    const qs_block *B = &s->L->blocks[b];
    if (k && k->takes(k->level, B) && (forced || (uint64_t)n * 2 >= k->lanes(k->level, B, n))) {
        const unsigned lanes = k->lanes(k->level, B, n);
        const double *xl[QS_SIMD_MAX_LANES];
        for (uint32_t d = d0; d < d1; d += lanes) {
            unsigned nreal = d1 - d < lanes ? d1 - d : lanes;
            for (unsigned l = 0; l < lanes; l++)
                xl[l] = w->xs[d + (l < nreal ? l : nreal - 1)];
            k->block(k, lanes, m, s->L, B, vec, xl, nreal, w->acc + (size_t)d * K,
                     w->accf + (size_t)d * K);
        }
        return;
    }
    block_fn fn = block_kernel(B);
    for (uint32_t d = d0; d < d1; d++)
        fn(s, B, vec, w->xs[d], w->acc + (size_t)d * K, w->accf + (size_t)d * K);
}

void qs_order_params(const qs_scorer *s, uint32_t n, unsigned unit, uint32_t *ps, uint32_t *pd)
{
    const uint32_t nb = s->L->nblocks ? s->L->nblocks : 1;
    uint32_t is = s->order_s, id = s->order_d;
    switch ((qs_order)s->order) {
    case QS_ORDER_SD: is = 1; id = n; break;
    case QS_ORDER_DS: is = nb; id = unit; break;
    case QS_ORDER_DSD: is = 1; break;
    case QS_ORDER_SDS: id = unit; break;
    default: break;
    }
    if (is == 0)
        is = nb < 4 ? nb : 4;
    if (id == 0)
        id = 64;
    if (is > nb)
        is = nb;
    if (unit > 1 && id % unit)
        id += unit - id % unit;
    if (id > n)
        id = n;
    if (id == 0)
        id = 1;
    *ps = is;
    *pd = id;
}

/* BWQS in the scorer's order (qs_order).  In every order the scorers reach
 * each document in ascending block order, so each document's sum keeps the
 * source's tree order whatever the order: the loops below only choose
 * which (block, document range) pairs run when.  The default order SD
 * (every block over the whole batch) is plain BWQS. */
void qs_bwqs_score(const qs_scorer *s, qs_workspace *w, void *vec, uint32_t n, double *out,
                   const qs_simd_kernel *k, int forced)
{
    const qs_model *m = s->m;
    const uint32_t K = m->num_classes, nb = s->L->nblocks;
    for (uint32_t d = 0; d < n; d++)
        for (uint32_t c = 0; c < K; c++) {
            w->acc[d * K + c] = m->base[c];
            w->accf[d * K + c] = (float)m->base[c];
        }
    /* The document unit of the inner loops: a SIMD call's documents. */
    const unsigned unit = k && nb ? k->lanes(k->level, &s->L->blocks[0], n) : 1;
    uint32_t is, id;
    qs_order_params(s, n, unit ? unit : 1, &is, &id);
    switch ((qs_order)s->order) {
    case QS_ORDER_SD:
    default:
        for (uint32_t b = 0; b < nb; b++)
            bwqs_apply(s, w, vec, b, 0, n, k, forced);
        break;
    case QS_ORDER_DS:
    case QS_ORDER_DSD:
    case QS_ORDER_DSDS:
        /* d documents at a time; s scorers at a time over them, each
         * document (unit) through those s scorers. */
        for (uint32_t d0 = 0; d0 < n; d0 += id) {
            const uint32_t d1 = n - d0 < id ? n : d0 + id;
            for (uint32_t b0 = 0; b0 < nb; b0 += is) {
                const uint32_t b1 = nb - b0 < is ? nb : b0 + is;
                if (b1 - b0 == 1) {
                    bwqs_apply(s, w, vec, b0, d0, d1, k, forced);
                    continue;
                }
                for (uint32_t u = d0; u < d1; u += unit) {
                    const uint32_t u1 = d1 - u < unit ? d1 : u + unit;
                    for (uint32_t b = b0; b < b1; b++)
                        bwqs_apply(s, w, vec, b, u, u1, k, forced);
                }
            }
        }
        break;
    case QS_ORDER_SDS:
    case QS_ORDER_SDSD:
        /* s scorers at a time; d documents at a time; each scorer over
         * those d documents. */
        for (uint32_t b0 = 0; b0 < nb; b0 += is) {
            const uint32_t b1 = nb - b0 < is ? nb : b0 + is;
            for (uint32_t d0 = 0; d0 < n; d0 += id) {
                const uint32_t d1 = n - d0 < id ? n : d0 + id;
                for (uint32_t b = b0; b < b1; b++)
                    bwqs_apply(s, w, vec, b, d0, d1, k, forced);
            }
        }
        break;
    }
    for (uint32_t d = 0; d < n; d++)
        for (uint32_t c = 0; c < K; c++)
            out[d * K + c] = m->float_accumulate ? (double)w->accf[d * K + c] : w->acc[d * K + c];
}

/* ------------------------------------------------------------ exit leaves */

/* The leaf vectors of one block for one document, as the kernels above
 * build them (narrow vectors in 64 bits: the masks' bits above a block's
 * width are ones, so the lowest set bit is the same), and each tree's exit
 * leaf as its source number. */
static void block_leaves(const qs_scorer *s, const qs_block *B, uint64_t *v, const double *x,
                         uint32_t *out)
{
    const qs_layout *L = s->L;
    const qs_model *m = s->m;
    const int lt = m->cmp == QS_CMP_LT;
    const uint32_t nt = (uint32_t)(B->tree_end - B->tree_begin);
    const int omega = B->kind == QS_BLOCK_OMEGA, wide = !omega && B->width == 0;
    const uint32_t W = wide ? B->words : 1;
    for (uint64_t i = 0; i < (uint64_t)nt * W; i++)
        v[i] = omega ? 0 : ~0ull;
    for (uint32_t g = B->group_begin; g < B->group_end; g++) {
        const qs_group *G = &L->groups[g];
        uint32_t b, e;
        group_range(L, G, x[G->feature], lt, &b, &e);
        for (; b < e; b++) {
            if (omega)
                v[L->etree[b]] |= L->emask[b];
            else if (wide)
                clear_range(v + (uint64_t)L->etree[b] * W, (uint32_t)(L->emask[b] >> 32),
                            (uint32_t)L->emask[b]);
            else
                v[L->etree[b]] &= L->emask[b];
        }
    }
    for (uint32_t c = B->cat_begin; c < B->cat_end; c++) {
        const qs_catnode *C = &L->cats[c];
        const qs_node *n = &m->nodes[C->node];
        const uint32_t ti = C->tree & ~QS_CAT_REVERSED;
        if (qs_node_goes_left(m, n, x[n->feature]) != !!(C->tree & QS_CAT_REVERSED))
            continue;
        if (wide)
            clear_range(v + (uint64_t)ti * W, (uint32_t)(C->mask >> 32), (uint32_t)C->mask);
        else
            v[ti] &= C->mask;
    }
    for (uint32_t i = 0; i < nt; i++) {
        const uint64_t t = B->tree_begin + i;
        const uint32_t nl = L->nleaves[t];
        uint32_t leaf;
        if (omega) {
            leaf = (uint32_t)(v[i] & (nl - 1));
        } else if (wide) {
            const uint64_t *vt = v + (uint64_t)i * W;
            leaf = nl - 1;
            for (uint32_t k = 0; k < W; k++)
                if (vt[k]) {
                    uint32_t cand = k * 64 + (uint32_t)__builtin_ctzll(vt[k]);
                    if (cand < leaf)
                        leaf = cand;
                    break;
                }
        } else {
            leaf = (uint32_t)__builtin_ctzll(v[i] | 1ull << (nl - 1));
        }
        out[t] = L->leaf_id[L->leaf_off[t] + leaf];
    }
}

int qs_bwqs_leaves(const qs_scorer *s, qs_workspace *w, uint32_t n, uint32_t *out, qs_error *err)
{
    const uint64_t T = s->m->num_trees;
    uint64_t *v = aligned_alloc(64, qs_bwqs_vec_bytes(s, 8));
    if (!v)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (leaf vectors of %llu trees)",
                       (unsigned long long)s->max_block_trees);
    for (uint32_t b = 0; b < s->L->nblocks; b++)
        for (uint32_t d = 0; d < n; d++)
            block_leaves(s, &s->L->blocks[b], v, w->xs[d], out + (size_t)d * T);
    free(v);
    return 0;
}

size_t qs_bwqs_vec_bytes(const qs_scorer *s, size_t tree_bytes)
{
    /* Leaf vectors of one block: one document's (multi-word trees), or a
     * SIMD kernel's several documents' side by side. */
    uint64_t per_tree = s->max_words ? (uint64_t)s->max_words * 8 : 8;
    if (per_tree < tree_bytes)
        per_tree = tree_bytes;
    uint64_t bytes = (s->max_block_trees ? s->max_block_trees : 1) * per_tree;
    return (size_t)((bytes + 63) & ~(uint64_t)63);
}

int qs_bwqs_ws_alloc(const qs_scorer *s, size_t tree_bytes, void **scratch, qs_error *err)
{
    *scratch = aligned_alloc(64, qs_bwqs_vec_bytes(s, tree_bytes));
    if (!*scratch)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (leaf vectors of %llu trees)",
                       (unsigned long long)s->max_block_trees);
    return 0;
}

void qs_bwqs_ws_free(void *scratch) { free(scratch); }

/* ------------------------------------------------------------ back end */

static int qs_ws_init(const qs_backend_def *d, const qs_scorer *s, const void *state,
                      void **scratch, qs_error *err)
{
    return qs_bwqs_ws_alloc(s, 0, scratch, err);
}

static int qs_score(const qs_backend_def *d, const qs_scorer *s, const void *state,
                    qs_workspace *w, void *scratch, uint32_t n, double *out, unsigned how,
                    qs_error *err)
{
    qs_bwqs_score(s, w, scratch, n, out, NULL, 0);
    return 0;
}

const qs_backend_def qs_backend_qs = {
    .name = "qs",
    .summary = "scalar QuickScorer: blockwise (BWQS), delta-skip scans, tree reversal, "
               "QS-Omega on oblivious blocks, 8/16/32/64-bit and multi-word leaf masks",
    .flags = 0,
    .auto_rank = 1,
    .ws_init = qs_ws_init,
    .ws_free = qs_bwqs_ws_free,
    .score = qs_score,
};
