/* vqs_common.h: what the vQS kernels of every ISA share and that does not
 * depend on the ISA (plain C, no intrinsics): the lane-by-lane parts of the
 * small-batch kernels (categorical nodes, exit leaves, run ends) and the
 * byte-plane kernels' scratch, feature rows, categorical nodes, the lane
 * parts of the categorical lookups (each document's class, the documents
 * the lookups leave out) and run ends.  Included by each ISA's file (vqs_avx2.c, vqs_avx512.c) before its
 * primitives and the template (vqs_kernel.h). */
#ifndef QS_VQS_COMMON_H
#define QS_VQS_COMMON_H

#include "score/x86/vqs.h"

#include <stdlib.h>
#include <string.h>

#define BP_LANES QS_VQS_LANES
#define BP_XROW QS_VQS_XROW
#define BP_XROWS QS_VQS_XROWS

#define BP_INLINE static inline __attribute__((always_inline))

/* The scratch's table of masks (vqs_kernel.h, block_rk): its memory is
 * the same buffer's that holds other types, so it may alias them. */
typedef uint64_t qs_vqs_u64a __attribute__((may_alias));
/* An operation's low 16 bits, read in place. */
typedef uint16_t qs_vqs_u16a __attribute__((may_alias));

/* Categorical nodes, lane by lane (no order to scan): the narrow block's
 * tables (layout.h, QS_CATS_FOR_DOC). */
static void lanes_categorical(const qs_model *m, const qs_layout *L, const qs_block *B,
                              uint64_t *v, const double *const *xs, unsigned lanes)
{
    if (B->cat_begin == B->cat_end)
        return;
    for (unsigned l = 0; l < lanes; l++) {
#define LANE_AND_(t, mask) (v[(uint64_t)(t) * lanes + l] &= (mask))
        QS_CATS_FOR_DOC(L, m, B, xs[l], LANE_AND_);
#undef LANE_AND_
    }
}

/* Exit leaves and accumulation, lane by lane (any class count and mode). */
static void lanes_leaves(const qs_model *m, const qs_layout *L, const qs_block *B,
                         const uint64_t *v, const double *const *xs, unsigned lanes,
                         unsigned nreal, double *acc, float *accf)
{
    const uint32_t K = m->num_classes;
    const uint32_t nt = (uint32_t)(B->tree_end - B->tree_begin);
    for (uint32_t i = 0; i < nt; i++) {
        uint64_t t = B->tree_begin + i;
        uint32_t nl = L->nleaves[t];
        const uint64_t *row = v + (uint64_t)i * lanes;
        for (unsigned l = 0; l < nreal; l++) {
            uint64_t leaf = (uint64_t)__builtin_ctzll(row[l] | (1ull << (nl - 1)));
            qs_layout_add_leaf(m, L, t, leaf, xs[l], acc + (size_t)l * K, accf + (size_t)l * K);
        }
    }
}

/* The lanes' false runs of a group, found together: a branch-free binary
 * search per lane for the first entry PRED(threshold, x) fails on (a
 * lane's false nodes are a prefix of the group), the lanes in lockstep so
 * their loads overlap. */
#define RUN_ENDS(PRED)                                                                         \
    do {                                                                                       \
        uint32_t n = G->end - G->begin;                                                        \
        while (n > 1) {                                                                        \
            const uint32_t half = n / 2;                                                       \
            for (unsigned l = 0; l < lanes; l++)                                               \
                e[l] = PRED(thr[e[l] + half - 1], x[l]) ? e[l] + half : e[l];                  \
            n -= half;                                                                         \
        }                                                                                      \
        if (n == 1)                                                                            \
            for (unsigned l = 0; l < lanes; l++)                                               \
                e[l] += PRED(thr[e[l]], x[l]);                                                 \
    } while (0)

/* RUN_ENDS with the comparison of group G (descending groups: reversed
 * trees) and of the model (lt: compare <). */
#define RUN_ENDS_OF(G, lt)                                                                     \
    do {                                                                                       \
        if ((G)->rule & QS_GROUP_DESC) {                                                       \
            if (lt)                                                                            \
                RUN_ENDS(P_GT);                                                                \
            else                                                                               \
                RUN_ENDS(P_GE);                                                                \
        } else {                                                                               \
            if (lt)                                                                            \
                RUN_ENDS(P_LE);                                                                \
            else                                                                               \
                RUN_ENDS(P_LT);                                                        \
        }                                                                                      \
    } while (0)
#define P_LT(t, x) ((t) < (x))
#define P_LE(t, x) ((t) <= (x))
#define P_GT(t, x) ((t) > (x))
#define P_GE(t, x) ((t) >= (x))

/* For each lane: whether it takes the group's special-value list (returned
 * as a bit set; its run is then empty), else where its false run ends.
 * Ascending groups hold the nodes x goes right of (t < x for x <= t,
 * t <= x for x < t), descending ones (reversed trees) those x goes left
 * of. */
static inline __attribute__((always_inline)) unsigned long long lanes_ends(const qs_layout *L, const qs_group *G, const double *const *xs,
                                  unsigned lanes, int lt, uint32_t *e)
{
    unsigned long long sp = 0;
    double x[64];
    const double *thr = L->thr;
    for (unsigned l = 0; l < lanes; l++) {
        double xl = xs[l][G->feature];
        if (qs_group_special(G, &xl)) {
            sp |= 1ull << l;
            xl = 0.0; /* any value: the lane's run is emptied below */
        }
        x[l] = xl;
        e[l] = G->begin;
    }
    RUN_ENDS_OF(G, lt);
    for (unsigned l = 0; l < lanes; l++)
        if (sp & (1ull << l))
            e[l] = G->begin;
    return sp;
}

/* Every group of the block, LANES documents: the lanes' runs end at e[];
 * the entries before the nearest end go to every lane still running, then
 * the next segment to the fewer that remain, and so on, so no entry is
 * compared per lane and most updates are whole vectors.  APPLY(OP, lanes,
 * from, to) combines the entries' masks into the lanes' rows. */
#define GROUPS(LANES, APPLY, OP)                                                               \
    for (uint32_t g = B->group_begin; g < B->group_end; g++) {                                 \
        const qs_group *G = &L->groups[g];                                                     \
        uint32_t e[LANES];                                                                     \
        const unsigned sp = (unsigned)lanes_ends(L, G, xs, LANES, lt, e);                      \
        if (sp)                                                                                \
            APPLY(OP, sp, G->sp_begin, G->sp_end);                                             \
        for (uint32_t cur = G->begin;;) {                                                      \
            unsigned k = 0;                                                                    \
            uint32_t next = UINT32_MAX;                                                        \
            for (unsigned l = 0; l < (LANES); l++)                                             \
                if (e[l] > cur) {                                                              \
                    k |= 1u << l;                                                              \
                    next = e[l] < next ? e[l] : next;                                          \
                }                                                                              \
            if (!k)                                                                            \
                break;                                                                         \
            APPLY(OP, k, cur, next);                                                           \
            cur = next;                                                                        \
        }                                                                                      \
    }

/* The row of the 64 documents' values of the block's feature r (feats[r])
 * in xT, which holds rows *c0 .. *c0 + BP_XROWS - 1: filled from xs with
 * the rows from r on when r is not among them.  The groups of a block are
 * sorted by feature, so each row is filled once. */
static inline __attribute__((always_inline)) double *
bp_row(const uint32_t *feats, uint32_t nfe, double *xT, uint32_t *c0, uint32_t r,
       const double *const *xs)
{
    if (r < *c0 || r - *c0 >= BP_XROWS) {
        const uint32_t n = nfe - r < BP_XROWS ? nfe - r : BP_XROWS;
        for (unsigned l = 0; l < 64; l++) {
            const double *x = xs[l];
            for (uint32_t k = 0; k < n; k++)
                xT[(size_t)k * BP_XROW + l] = x[feats[r + k]];
        }
        *c0 = r;
    }
    return xT + (size_t)(r - *c0) * BP_XROW;
}

/* The byte-plane kernels' scratch v, carved: the 64 documents' sums for K
 * classes, class-major (*accT[c][l], *accTf); the rows of the block's
 * feature values (*xT, a row of 64 per feature feats[0 .. nfe), up to
 * BP_XROWS at a time from row *c0; all filled now when they fit, the
 * usual case); then the planes, plane_bytes set to the block kind's start
 * (QS-Omega 0, QS all ones), returned. */
static inline __attribute__((always_inline)) uint8_t *
bp_scratch(const qs_vqs_plan *P, const qs_layout *L, const qs_block *B, uint8_t *v, uint32_t K,
           int omega, size_t plane_bytes, const double *const *xs, double **accT, float **accTf,
           double **xT, const uint32_t **feats, uint32_t *nfe, uint32_t *c0)
{
    *accT = (double *)(void *)v;
    *accTf = (float *)(void *)(*accT + (size_t)K * BP_LANES);
    v += qs_vqs_acc_bytes(K);
    const uint32_t bi = (uint32_t)(B - L->blocks);
    *feats = P->rows.feats + P->rows.off[bi];
    *nfe = (uint32_t)(P->rows.off[bi + 1] - P->rows.off[bi]);
    *xT = (double *)(void *)v;
    *c0 = UINT32_MAX;
    v += qs_vqs_xrow_bytes(P);
    if (*nfe <= BP_XROWS)
        bp_row(*feats, *nfe, *xT, c0, 0, xs);
    memset(v, omega ? 0 : 0xFF, plane_bytes);
    return v;
}

/* The 64 documents' sums of K classes into the class-major accumulators
 * (the lanes past nreal 0), and back. */
static inline __attribute__((always_inline)) void
bp_acc_rows(uint32_t K, const double *acc, const float *accf, unsigned nreal, double *accT,
            float *accTf)
{
    for (uint32_t c = 0; c < K; c++)
        for (unsigned l = 0; l < BP_LANES; l++) {
            accT[(size_t)c * BP_LANES + l] = l < nreal ? acc[(size_t)l * K + c] : 0.0;
            accTf[(size_t)c * BP_LANES + l] = l < nreal ? accf[(size_t)l * K + c] : 0.0f;
        }
}

static inline __attribute__((always_inline)) void
bp_acc_unrows(uint32_t K, double *acc, float *accf, unsigned nreal, const double *accT,
              const float *accTf)
{
    for (unsigned l = 0; l < nreal; l++)
        for (uint32_t c = 0; c < K; c++) {
            acc[(size_t)l * K + c] = accT[(size_t)c * BP_LANES + l];
            accf[(size_t)l * K + c] = accTf[(size_t)c * BP_LANES + l];
        }
}

/* Categorical nodes on byte planes (both kernels; narrow blocks go through
 * the tables instead, vqs_kernel.h: cat_bp): for each lane whose document the node
 * sends the other way, its mask's bytes (narrow trees)
 * or its leaf range (multi-word trees) cleared in the tree's planes.
 * Inlined: a call from the kernels costs their vector registers (~8% on
 * MQ2008 1,000 x 64). */
static inline __attribute__((always_inline)) void
bp_categorical(const qs_model *m, const qs_layout *L, const qs_block *B, uint8_t *v, size_t row,
               uint32_t planes, const double *const *xs)
{
    for (uint32_t c = B->cat_begin; c < B->cat_end; c++) {
        const qs_catnode *C = &L->cats[c];
        const qs_node *n = &m->nodes[C->node];
        uint8_t *r = v + (size_t)(C->tree & ~QS_CAT_REVERSED) * row;
        const uint32_t lo = (uint32_t)(C->mask >> 32), hi = (uint32_t)C->mask;
        for (unsigned l = 0; l < BP_LANES; l++)
            if (qs_node_goes_left(m, n, xs[l][n->feature]) == !!(C->tree & QS_CAT_REVERSED))
                for (uint32_t j = 0; j < planes; j++)
                    r[(size_t)j * 64 + l] &= B->width ? (uint8_t)(C->mask >> (8 * j))
                                                      : qs_vqs_range_byte(lo, hi, j);
    }
}

/* Categorical features of narrow blocks on byte planes (vqs_kernel.h,
 * cat_bp): the layout's tables (layout/cattab.c) map a value to a class, a
 * list of (tree, AND mask); the plan (score/vqs_plan.c, qs_vqs_cat_build)
 * turns each class into one byte of a lookup per tree and plane, so the 64
 * documents' classes, found once per feature, fetch their mask bytes with
 * byte shuffles (16 entries per shuffle, up to 4 shuffles for 63 classes),
 * and one AND per plane applies them to the 64 documents at once.  Class
 * numbers are shifted by one: entry 0 is 0xFF (nothing), for the documents
 * whose value (NaN, negative) the table does not stand for; those take the
 * feature's nodes afterwards, one by one.  An AND is order-free, so the
 * leaf vectors are those of the nodes one by one, bit for bit. */

/* The 64 documents' shuffle indices for feature F: per quarter q of the
 * lookup, byte l is (class + 1) - 16q where that falls in 0 .. 15, else
 * 0x80 (vpshufb then gives 0, and the quarters are ORed); *fb gets the
 * documents that take the nodes. */
static inline uint32_t lane_classes(const qs_layout *L, const qs_catfeat *F, uint32_t nq,
                                    const double *const *xs, uint8_t idx[4][64], uint64_t *fb)
{
    uint64_t f = 0;
    for (unsigned l = 0; l < 64; l++) {
        const double x = xs[l][F->feature];
        uint32_t c = 0;
        if (x >= 0.0) {
            const uint32_t r = x < (double)F->rows ? (uint32_t)x : F->rows;
            c = L->cat_cls[F->cls_off + r] + 1;
        } else {
            f |= 1ull << l;
        }
        for (uint32_t q = 0; q < nq; q++)
            idx[q][l] = (c >> 4) == q ? (uint8_t)(c & 15) : 0x80;
    }
    *fb = f;
    return nq;
}

/* The documents in fb, and every document of a feature without lookups:
 * through the feature's table rows or nodes, a byte at a time. */
static void lanes_rest(const qs_model *m, const qs_layout *L, const qs_catfeat *F, uint8_t *v,
                       size_t row, uint32_t planes, const double *const *xs, uint64_t lanes)
{
    for (; lanes; lanes &= lanes - 1) {
        const unsigned l = (unsigned)__builtin_ctzll(lanes);
#define BP_AND_(t, mask)                                                                       \
    do {                                                                                       \
        uint8_t *r_ = v + (size_t)(t) * row + l;                                               \
        const uint64_t mk_ = (mask);                                                           \
        for (uint32_t j = 0; j < planes; j++)                                                  \
            r_[(size_t)j * 64] &= (uint8_t)(mk_ >> (8 * j));                                   \
    } while (0)
        QS_CATFEAT_FOR_DOC(L, m, F, xs[l], BP_AND_);
#undef BP_AND_
    }
}

/* A group's run ends for the values x[] of its 64 documents (the lanes of
 * sp take the special list: their runs are empty). */
BP_INLINE void bp_run_ends(const qs_layout *L, const qs_group *G, const double *x, uint64_t sp,
                           int lt, uint32_t *e)
{
    const double *thr = L->thr;
    const unsigned lanes = BP_LANES;
    for (unsigned l = 0; l < BP_LANES; l++)
        e[l] = G->begin;
    RUN_ENDS_OF(G, lt);
    for (unsigned l = 0; l < BP_LANES; l++)
        if (sp & (1ull << l))
            e[l] = G->begin;
}

/* The counts of a group by ranks (vqs_plan.h, rk): for each of the 64
 * values x[], how many of the group's nu >= 1 ascending distinct
 * thresholds u[] it passes (t < x for <=, t <= x for <: those whose
 * entries are false for it), by bisection, the lanes in lockstep; the
 * lanes of sp (the special-value list's) count 0, which no entry passes.
 * Written biased by 0x80 (as signed bytes). */
BP_INLINE void rk_counts(const double *u, uint32_t nu, const double *x, uint64_t sp, int lt,
                         uint8_t *c)
{
    /* RUN_ENDS over u[0 .. nu), as a group of nu entries from 0 */
    uint32_t e[BP_LANES];
    for (unsigned l = 0; l < BP_LANES; l++)
        e[l] = 0;
    const double *thr = u;
    const qs_group G_ = { .begin = 0, .end = nu }, *G = &G_;
    const unsigned lanes = BP_LANES;
    if (lt)
        RUN_ENDS(P_LE);
    else
        RUN_ENDS(P_LT);
    for (unsigned l = 0; l < BP_LANES; l++)
        c[l] = (uint8_t)(((sp >> l) & 1 ? 0 : e[l]) ^ 0x80u);
}

#endif
