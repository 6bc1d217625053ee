/* phases.h: GPU-QS, the per-thread logic of each phase of the kernel,
 * written once and compiled twice: by nvcc as device code (kernels.cu) and
 * by the C compiler for the emulator (emu.c), which runs every phase for
 * every thread of a thread-block in turn, the threads of each phase in a
 * shuffled order.
 *
 * A thread-block holds `db` documents (doc0 .. doc0+nd-1 of the batch) and
 * loops over the model's tree blocks; for each block:
 *
 *   init  the block's leaf vectors of its documents to ones (QS) or zeros
 *         (QS-Ω), vector of (tree t, document d) at slot t * db + d;
 *   mask  warps take (document, feature group) pairs: every lane finds the
 *         group's range of false nodes for the document's value (a binary
 *         search, which stops where the CPU's Δ-skip scan stops), and the
 *         lanes stride the range, AND-ing masks (QS) or OR-ing bits (QS-Ω)
 *         into the vectors with integer atomics; categorical nodes one
 *         thread per (document, node);
 *   sum   thread d < nd adds, for its document, the exit leaf of each tree
 *         of the block, in tree order, with the expression of
 *         qs_layout_add_leaf for the model's accumulation mode.
 *
 * Threads share only the leaf vectors, and only through AND and OR, which
 * commute: every interleaving gives the same bits, so the emulator's
 * sequential (shuffled) runs are a faithful model of the mask phase.  No
 * floating-point value is ever shared or reduced across threads.
 *
 * Plain C99 and CUDA C++ alike: fixed-width integers, no library calls but
 * trunc().  Device-only operations are the QS_CU_* macros below. */
#ifndef QS_CUDA_PHASES_H
#define QS_CUDA_PHASES_H

#include <stdint.h>

#ifdef __CUDACC__
#define QS_CU_FN static __device__ __forceinline__
#define QS_CU_AND32(p, m) atomicAnd((unsigned int *)(p), (unsigned int)(m))
#define QS_CU_OR32(p, m) atomicOr((unsigned int *)(p), (unsigned int)(m))
#define QS_CU_AND64(p, m) atomicAnd((unsigned long long *)(p), (unsigned long long)(m))
#define QS_CU_CTZ64(v) (__ffsll((long long)(v)) - 1)
#define QS_CU_TRUNC(x) trunc(x)
#else
#include <math.h>
#define QS_CU_FN static inline
#define QS_CU_AND32(p, m) (*(uint32_t *)(p) &= (uint32_t)(m))
#define QS_CU_OR32(p, m) (*(uint32_t *)(p) |= (uint32_t)(m))
#define QS_CU_AND64(p, m) (*(uint64_t *)(p) &= (uint64_t)(m))
#define QS_CU_CTZ64(v) __builtin_ctzll(v)
#define QS_CU_TRUNC(x) trunc(x)
#endif

/* Mutations, for the test that shows the emulator catches them (built
 * only into the test's mutant copies; never set in the library):
 * 1: the search compares <= where it should compare <; 2: a block's trees
 * are summed last to first; 3: 16-bit blocks get 8-bit leaf vectors. */
#ifndef QS_CU_MUTATION
#define QS_CU_MUTATION 0
#endif

#define QS_CU_WARP 32u

/* Block kinds. */
enum { QS_CU_NARROW = 0, QS_CU_OMEGA = 1, QS_CU_WIDE = 2 };
/* Group rules (layout.h's qs_group_rule and QS_GROUP_DESC). */
#define QS_CU_RULE_PLAIN 0u
#define QS_CU_RULE_ZERO 1u
#define QS_CU_RULE_NAN 2u
#define QS_CU_RULE_MASK 0xFFu
#define QS_CU_DESC 0x100u
#define QS_CU_CAT_REVERSED 0x80000000u
/* Categorical flags (model.h). */
#define QS_CU_CAT_MEMBERS_LEFT 0x1u
#define QS_CU_CAT_NEG_STRICT 0x2u
#define QS_CU_MISS_NAN 2u
/* Accumulation modes (model.h's qs_accum). */
#define QS_CU_ACC_DOUBLE 0u
#define QS_CU_ACC_FLOAT 1u
#define QS_CU_ACC_FLOAT_DOUBLE 2u

typedef struct qs_cu_block {
    uint32_t kind;        /* QS_CU_* */
    uint32_t slot;        /* bytes of one tree's leaf vector: 1, 2, 4, 8, or 8 * words */
    uint32_t words;       /* QS_CU_WIDE: 64-bit words per vector */
    uint32_t ntrees;
    uint64_t tree0;       /* first tree (global index) */
    uint32_t group_begin, group_end;
    uint32_t cat_begin, cat_end;
} qs_cu_block;

typedef struct qs_cu_group {
    uint32_t feature, rule;
    uint32_t begin, end;       /* sorted entries */
    uint32_t sp_begin, sp_end; /* special-value entries */
} qs_cu_group;

typedef struct qs_cu_cat {
    uint64_t mask;        /* AND mask (narrow), or leaf range lo << 32 | hi (wide) */
    uint32_t tree;        /* block-local tree | QS_CU_CAT_REVERSED */
    uint32_t feature;
    uint32_t cat_off, cat_nwords;
    uint32_t miss, default_left, flags, pad;
} qs_cu_cat;

typedef struct qs_cu_linear {
    double konst;
    double plain;         /* the leaf's value when a term's input is NaN */
    uint64_t term_off;
    uint32_t nterms, pad;
} qs_cu_linear;

/* The model as the kernel reads it: every pointer into one image (device
 * memory for the GPU, host memory for the emulator). */
typedef struct qs_cu_model {
    const qs_cu_block *blocks;
    const qs_cu_group *groups;
    const double *thr;
    const uint32_t *etree;
    const uint64_t *emask;
    const qs_cu_cat *cats;
    const uint32_t *cat_words;
    const uint64_t *leaf_off;  /* per tree */
    const uint32_t *nleaves;   /* per tree */
    const uint32_t *tclass;    /* per tree */
    const double *leaves;      /* contribution per leaf */
    const uint32_t *leaf_lin;  /* per leaf: 0, or 1 + index into linear (NULL: none) */
    const qs_cu_linear *linear;
    const uint32_t *lin_feature;
    const double *lin_coeff;
    const double *base;        /* per class */
    uint32_t nblocks;
    uint32_t num_classes;
    uint32_t cmp_lt;           /* goes left iff x < t (else x <= t) */
    uint32_t acc_mode;         /* QS_CU_ACC_* */
    uint32_t vec_bytes;        /* leaf-vector bytes of the widest block for one
                                  document, rounded up to 4 */
    uint32_t pad;
} qs_cu_model;

/* One launch: documents doc0 .. doc0 + n - 1 of x (rows of `stride`
 * values), scores into out[i * num_classes + c] (i from 0), accumulators
 * acc / accf (n * num_classes each) owned by the thread of their document. */
typedef struct qs_cu_batch {
    const double *x;
    uint64_t stride;
    uint32_t n;
    uint32_t db;               /* documents per thread-block */
    double *acc;
    float *accf;
    double *out;
    unsigned char *vec_global; /* when the vectors live in global memory:
                                  db * vec_bytes per thread-block; NULL: shared */
} qs_cu_batch;

/* ------------------------------------------------------------ search */

/* The end of the run of false nodes of a group for a value x that is not
 * special (the CPU's scan_end / scan_end_desc): the first entry whose
 * threshold stops the scan.  Thresholds are sorted, so the predicate
 * "the scan goes on" is true on a prefix and a binary search finds its
 * end. */
QS_CU_FN uint32_t qs_cu_search(const double *thr, uint32_t b, uint32_t e, double x, int lt,
                               int desc)
{
    while (b < e) {
        const uint32_t mid = b + (e - b) / 2;
        const double t = thr[mid];
        int go;
        if (!desc) {
#if QS_CU_MUTATION == 1
            go = lt ? t <= x : t <= x;
#else
            go = lt ? t <= x : t < x;
#endif
        } else {
            go = lt ? t > x : t >= x;
        }
        if (go)
            b = mid + 1;
        else
            e = mid;
    }
    return b;
}

/* The group's entry range for value x (qs_group_special, then the search). */
QS_CU_FN void qs_cu_range(const qs_cu_model *M, const qs_cu_group *G, double x, uint32_t *b,
                          uint32_t *e)
{
    const uint32_t rule = G->rule & QS_CU_RULE_MASK;
    int special;
    if (rule == QS_CU_RULE_NAN) {
        special = x != x;
    } else {
        if (x != x)
            x = 0.0;
        special = rule == QS_CU_RULE_ZERO && x >= -(double)1e-35f && x <= (double)1e-35f;
    }
    if (special) {
        *b = G->sp_begin;
        *e = G->sp_end;
        return;
    }
    *b = G->begin;
    *e = qs_cu_search(M->thr, G->begin, G->end, x, (int)M->cmp_lt, (G->rule & QS_CU_DESC) != 0);
}

/* qs_node_goes_left for a categorical node. */
QS_CU_FN int qs_cu_cat_left(const qs_cu_model *M, const qs_cu_cat *C, double x)
{
    const int members_left = (C->flags & QS_CU_CAT_MEMBERS_LEFT) != 0;
    if (x != x) {
        if (C->miss == QS_CU_MISS_NAN)
            return (int)C->default_left;
        x = 0.0;
    }
    if ((C->flags & QS_CU_CAT_NEG_STRICT) ? x < 0.0 : x <= -1.0)
        return !members_left;
    const double c = QS_CU_TRUNC(x);
    if (!(c < (double)C->cat_nwords * 32.0))
        return !members_left;
    const uint32_t ci = (uint32_t)c;
    const int member = (int)((M->cat_words[C->cat_off + ci / 32u] >> (ci % 32u)) & 1u);
    return member ? members_left : !members_left;
}

/* ------------------------------------------------------------ vectors */

/* AND `mask` into the narrow vector at byte address p of `slot` bytes
 * (1, 2, 4 or 8): narrow slots share 32-bit words, so the mask is placed
 * at the slot's bytes with ones around it. */
QS_CU_FN void qs_cu_and_narrow(unsigned char *p, uint32_t slot, uint64_t mask)
{
    if (slot == 8) {
        QS_CU_AND64(p, mask);
        return;
    }
    const uintptr_t a = (uintptr_t)p;
    unsigned char *w = (unsigned char *)(a & ~(uintptr_t)3);
    const uint32_t shift = (uint32_t)(a & 3u) * 8u;
    const uint32_t width = slot * 8u;
    const uint32_t keep = width == 32u ? 0xFFFFFFFFu : ((1u << width) - 1u);
    const uint32_t clear = (~(uint32_t)mask) & keep;
    QS_CU_AND32(w, ~(clear << shift));
}

/* Clear leaves [lo, hi) of a multi-word vector (the CPU's clear_range). */
QS_CU_FN void qs_cu_clear_range(unsigned char *v, uint32_t lo, uint32_t hi)
{
    const uint32_t a = lo >> 6, b = (hi - 1u) >> 6;
    const uint64_t lom = ~0ull << (lo & 63u), him = ~0ull >> (63u - ((hi - 1u) & 63u));
    if (a == b) {
        QS_CU_AND64(v + (uint64_t)a * 8u, ~(lom & him));
        return;
    }
    QS_CU_AND64(v + (uint64_t)a * 8u, ~lom);
    for (uint32_t k = a + 1u; k < b; k++)
        QS_CU_AND64(v + (uint64_t)k * 8u, 0ull);
    QS_CU_AND64(v + (uint64_t)b * 8u, ~him);
}

/* Apply entry (tree ti, mask) to document d's vector of that tree. */
QS_CU_FN void qs_cu_apply(const qs_cu_block *B, unsigned char *vec, uint32_t db, uint32_t d,
                          uint32_t ti, uint64_t mask)
{
    unsigned char *p = vec + ((uint64_t)ti * db + d) * B->slot;
    if (B->kind == QS_CU_OMEGA)
        QS_CU_OR32(p, mask);
    else if (B->kind == QS_CU_WIDE)
        qs_cu_clear_range(p, (uint32_t)(mask >> 32), (uint32_t)mask);
    else
        qs_cu_and_narrow(p, B->slot, mask);
}

/* ------------------------------------------------------------ phases */

/* Before the first block: thread d < nd sets its document's accumulators
 * to the base margin. */
QS_CU_FN void qs_cu_phase_start(const qs_cu_model *M, const qs_cu_batch *X, uint32_t doc0,
                                uint32_t nd, uint32_t tid)
{
    if (tid >= nd)
        return;
    const uint32_t K = M->num_classes;
    const uint64_t i = (uint64_t)(doc0 + tid) * K;
    for (uint32_t c = 0; c < K; c++) {
        X->acc[i + c] = M->base[c];
        X->accf[i + c] = (float)M->base[c];
    }
}

/* init: every vector of the block's nd documents' trees. */
QS_CU_FN void qs_cu_phase_init(const qs_cu_block *B, unsigned char *vec, uint32_t db,
                               uint32_t tid, uint32_t nthreads)
{
    const uint64_t bytes = (uint64_t)B->ntrees * db * B->slot;
    const uint64_t words = (bytes + 3u) / 4u;
    const uint32_t fill = B->kind == QS_CU_OMEGA ? 0u : 0xFFFFFFFFu;
    for (uint64_t i = tid; i < words; i += nthreads)
        *(uint32_t *)(vec + i * 4u) = fill;
}

/* mask: (document, group) pairs by warps, the range by the warp's lanes;
 * then categorical nodes by threads. */
QS_CU_FN void qs_cu_phase_mask(const qs_cu_model *M, const qs_cu_block *B, const qs_cu_batch *X,
                               unsigned char *vec, uint32_t doc0, uint32_t nd, uint32_t tid,
                               uint32_t nthreads)
{
    const uint32_t db = X->db;
    const uint32_t warp = tid / QS_CU_WARP, lane = tid % QS_CU_WARP;
    const uint32_t nwarps = nthreads / QS_CU_WARP;
    const uint64_t ng = B->group_end - B->group_begin;
    const uint64_t pairs = ng * nd;
    for (uint64_t p = warp; p < pairs; p += nwarps) {
        const uint32_t d = (uint32_t)(p % nd);
        const qs_cu_group *G = &M->groups[B->group_begin + p / nd];
        const double x = X->x[(uint64_t)(doc0 + d) * X->stride + G->feature];
        uint32_t b, e;
        qs_cu_range(M, G, x, &b, &e);
        for (uint32_t i = b + lane; i < e; i += QS_CU_WARP)
            qs_cu_apply(B, vec, db, d, M->etree[i], M->emask[i]);
    }
    const uint64_t cats = (uint64_t)(B->cat_end - B->cat_begin) * nd;
    for (uint64_t c = tid; c < cats; c += nthreads) {
        const uint32_t d = (uint32_t)(c % nd);
        const qs_cu_cat *C = &M->cats[B->cat_begin + c / nd];
        const double x = X->x[(uint64_t)(doc0 + d) * X->stride + C->feature];
        if (qs_cu_cat_left(M, C, x) == ((C->tree & QS_CU_CAT_REVERSED) != 0))
            qs_cu_apply(B, vec, db, d, C->tree & ~QS_CU_CAT_REVERSED, C->mask);
    }
}

/* The exit leaf of block-local tree ti for document d (0 .. nleaves-1). */
QS_CU_FN uint32_t qs_cu_exit_leaf(const qs_cu_block *B, const unsigned char *vec, uint32_t db,
                                  uint32_t d, uint32_t ti, uint32_t nl)
{
    const unsigned char *p = vec + ((uint64_t)ti * db + d) * B->slot;
    if (B->kind == QS_CU_OMEGA)
        return *(const uint32_t *)p & (nl - 1u);
    if (B->kind == QS_CU_WIDE) {
        uint32_t leaf = nl - 1u;
        for (uint32_t k = 0; k < B->words; k++) {
            const uint64_t w = *(const uint64_t *)(p + (uint64_t)k * 8u);
            if (w) {
                const uint32_t cand = k * 64u + (uint32_t)QS_CU_CTZ64(w);
                if (cand < leaf)
                    leaf = cand;
                break;
            }
        }
        return leaf;
    }
    uint64_t v;
    switch (B->slot) {
    case 1: v = *p; break;
    case 2: v = *(const uint16_t *)p; break;
    case 4: v = *(const uint32_t *)p; break;
    default: v = *(const uint64_t *)p; break;
    }
    /* The last leaf's bit, as the CPU kernels OR it in: a corrupt table can
     * never index past the tree's leaves. */
    v |= 1ull << (nl - 1u);
    return (uint32_t)QS_CU_CTZ64(v);
}

/* A linear leaf's output (qs_leaf_output): left to right, each product and
 * each sum rounded (built without contraction into fused multiply-adds). */
QS_CU_FN double qs_cu_linear_out(const qs_cu_model *M, const qs_cu_linear *l, const double *x)
{
    double out = l->konst;
    for (uint32_t j = 0; j < l->nterms; j++) {
        const double v = x[M->lin_feature[l->term_off + j]];
        if (v != v)
            return l->plain;
        const double p = M->lin_coeff[l->term_off + j] * v;
        out += p;
    }
    return out;
}

/* sum: thread d < nd adds its document's exit leaves of the block's trees
 * in tree order (qs_layout_add_leaf). */
QS_CU_FN void qs_cu_phase_sum(const qs_cu_model *M, const qs_cu_block *B, const qs_cu_batch *X,
                              const unsigned char *vec, uint32_t doc0, uint32_t nd, uint32_t tid)
{
    if (tid >= nd)
        return;
    const uint32_t K = M->num_classes, db = X->db;
    const uint64_t row = doc0 + tid;
    const double *x = X->x + row * X->stride;
    double *acc = X->acc + row * K;
    float *accf = X->accf + row * K;
    const uint32_t mode = M->acc_mode;
    const uint32_t nt = B->ntrees;
#if QS_CU_MUTATION == 2
    for (uint32_t k = nt; k-- > 0;) {
        const uint32_t i = k;
#else
    for (uint32_t i = 0; i < nt; i++) {
#endif
        const uint64_t t = B->tree0 + i;
        const uint32_t leaf = qs_cu_exit_leaf(B, vec, db, tid, i, M->nleaves[t]);
        const uint64_t li = M->leaf_off[t] + leaf;
        double c = M->leaves[li];
        if (M->leaf_lin && M->leaf_lin[li])
            c = qs_cu_linear_out(M, &M->linear[M->leaf_lin[li] - 1u], x);
        const uint32_t cls = M->tclass[t];
        if (mode == QS_CU_ACC_DOUBLE)
            acc[cls] += c;
        else if (mode == QS_CU_ACC_FLOAT)
            accf[cls] = accf[cls] + (float)c;
        else
            accf[cls] = (float)((double)accf[cls] + c);
    }
}

/* After the last block: thread d < nd writes its document's scores. */
QS_CU_FN void qs_cu_phase_finish(const qs_cu_model *M, const qs_cu_batch *X, uint32_t doc0,
                                 uint32_t nd, uint32_t tid)
{
    if (tid >= nd)
        return;
    const uint32_t K = M->num_classes;
    const uint64_t i = (uint64_t)(doc0 + tid) * K;
    for (uint32_t c = 0; c < K; c++)
        X->out[i + c] = M->acc_mode != QS_CU_ACC_DOUBLE ? (double)X->accf[i + c] : X->acc[i + c];
}

#endif
