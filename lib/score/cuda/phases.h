/* phases.h: the GPU back end's device logic, written once and compiled
 * twice: by nvcc as device code (kernels.cu) and by the C compiler for the
 * emulator (emu.c), which runs every phase for every thread of a
 * thread-block in turn, the threads of each phase in a shuffled order.
 *
 * Exactness is carried by one piece that every kernel feeds: the ordered,
 * per-document accumulation (qs_cu_acc_*: the base margin first, then each
 * tree's contribution in model order with the expression of
 * qs_layout_add_leaf, in registers for a thread's whole document).  How a
 * kernel finds the exit leaf of (document, tree) is free: exit leaves are
 * integers.  No floating-point value is ever shared or reduced across
 * threads.  The four kernels:
 *
 *   qs     GPU-QS.  A thread-block holds db documents (a multiple of 32),
 *          their leaf vectors in shared (or, for huge trees, global)
 *          memory as 32-bit words, document innermost: word w of document
 *          d at w * db + d, so the 32 lanes of a warp - 32 documents - touch
 *          32 banks.  Per tree block: init the vectors; warps take
 *          (32 documents, feature group) pairs, each lane finds its
 *          document's range of false nodes (a binary search that stops
 *          where the CPU's Δ-skip scan stops) and ANDs (QS-Ω: ORs) the
 *          entries' masks into the words they change with native 32-bit
 *          atomics (warps on other groups may touch the same words); then,
 *          a chunk of trees at a time, every thread finds exit leaves of
 *          (document, tree) pairs and fetches their contributions into
 *          shared memory, and thread d adds its document's in tree order.
 *   rank   the in-order walk over rank-encoded nodes: one document per
 *          thread; the document's value of each (feature, missing rule) as
 *          a rank (how many of the feature's distinct thresholds it passes,
 *          or SPECIAL for NaN / the zero band under that rule), staged in
 *          shared memory [feature][thread]; nodes of 8 bytes (rank
 *          threshold, default side, two child codes); a node goes left iff
 *          its threshold's rank >= the document's rank (or its default side
 *          for SPECIAL).
 *   lanes  branch-free QS on the same ranks: one document per thread, every
 *          node of a tree of <= 64 leaves evaluated, its mask ANDed into a
 *          64-bit vector in registers when it is false; exit = lowest bit.
 *   walk   the plain walk comparing doubles (any model: categorical nodes,
 *          linear leaves, trees of any size): the anchor.
 *
 * Plain C99 and CUDA C++ alike: fixed-width integers, no library calls but
 * trunc().  Device-only operations are the QS_CU_* macros below. */
#ifndef QS_CUDA_PHASES_H
#define QS_CUDA_PHASES_H

#include <stdint.h>

/* The emulator's bank recorder (emu.c; device.h). */
typedef struct qs_cu_rec qs_cu_rec;

#ifdef __CUDACC__
#define QS_CU_FN static __device__ __forceinline__
/* Native 32-bit reductions (no value returned) on shared memory, or on
 * global memory for the GPU-QS vectors that do not fit it: the address
 * space is a compile-time constant of each kernel, so neither a generic
 * atomic nor an address-space test is ever emitted. */
static __device__ __forceinline__ void qs_cu_red_and(uint32_t *p, uint32_t m, int global)
{
    if (global)
        asm volatile("red.relaxed.gpu.global.and.b32 [%0], %1;" ::"l"(p), "r"(m) : "memory");
    else
        asm volatile("red.shared.and.b32 [%0], %1;" ::"r"((unsigned)__cvta_generic_to_shared(p)),
                     "r"(m)
                     : "memory");
}
static __device__ __forceinline__ void qs_cu_red_or(uint32_t *p, uint32_t m, int global)
{
    if (global)
        asm volatile("red.relaxed.gpu.global.or.b32 [%0], %1;" ::"l"(p), "r"(m) : "memory");
    else
        asm volatile("red.shared.or.b32 [%0], %1;" ::"r"((unsigned)__cvta_generic_to_shared(p)),
                     "r"(m)
                     : "memory");
}
#define QS_CU_AND32(p, m, g) qs_cu_red_and((uint32_t *)(p), (uint32_t)(m), (g))
#define QS_CU_OR32(p, m, g) qs_cu_red_or((uint32_t *)(p), (uint32_t)(m), (g))
#define QS_CU_CTZ64(v) (__ffsll((long long)(v)) - 1)
#define QS_CU_CTZ32(v) (__ffs((int)(v)) - 1)
#define QS_CU_TRUNC(x) trunc(x)
#define QS_CU_UNROLL _Pragma("unroll")
/* No recorder on the device. */
#define QS_CU_TOUCH(rec, tid, step, word) ((void)0)
#else
#include <math.h>
#define QS_CU_FN static inline
#define QS_CU_AND32(p, m, g) ((void)(g), *(uint32_t *)(p) &= (uint32_t)(m))
#define QS_CU_OR32(p, m, g) ((void)(g), *(uint32_t *)(p) |= (uint32_t)(m))
#define QS_CU_CTZ64(v) __builtin_ctzll(v)
#define QS_CU_CTZ32(v) __builtin_ctz(v)
#define QS_CU_TRUNC(x) trunc(x)
#define QS_CU_UNROLL
/* The emulator's bank recorder (emu.c): thread tid touched 32-bit word
 * `word` of shared memory at step `step` of its warp's instruction stream. */
void qs_cu_rec_touch(qs_cu_rec *rec, uint32_t tid, uint64_t step, uint64_t word);
#define QS_CU_TOUCH(rec, tid, step, word)                                                       \
    do {                                                                                        \
        if (rec)                                                                                \
            qs_cu_rec_touch((qs_cu_rec *)(rec), (tid), (step), (word));                         \
    } while (0)
#endif

/* Mutations, for the test that shows the emulator catches them (built only
 * into the test's mutant copies; never set in the library), each applied
 * to every kernel:
 * 1: a comparison of a value with a threshold flips between < and <= (the
 *    qs search, the rank count, the walk's test);
 * 2: trees are added out of order (qs: a chunk's last to first; the walks:
 *    the model's last tree to first);
 * 3: a rule is lost: qs 16-bit leaf vectors get 8 bits (tables.c); rank and
 *    lanes send SPECIAL values right whatever the node's default side; the
 *    walk reads NaN as 0.0 under every missing rule. */
#ifndef QS_CU_MUTATION
#define QS_CU_MUTATION 0
#endif

#define QS_CU_WARP 32u
/* Most threads per thread-block (qs: fewer, for registers). */
#define QS_CU_MAX_THREADS 1024u
#define QS_CU_MAX_THREADS_QS 512u

/* The kernels (qs_cu_model.kernel). */
enum { QS_CU_K_QS = 0, QS_CU_K_RANK = 1, QS_CU_K_LANES = 2, QS_CU_K_WALK = 3, QS_CU_NKERNELS = 4 };

/* Block kinds (qs). */
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
/* Missing-value rules (model.h's qs_miss). */
#define QS_CU_MISS_NONE 0u
#define QS_CU_MISS_ZERO 1u
#define QS_CU_MISS_NAN 2u
/* Accumulation modes (model.h's qs_accum). */
#define QS_CU_ACC_DOUBLE 0u
#define QS_CU_ACC_FLOAT 1u
#define QS_CU_ACC_FLOAT_DOUBLE 2u
/* LightGBM's kZeroThreshold, (double)1e-35f (model.h's QS_ZERO_BAND). */
#define QS_CU_ZERO_BAND ((double)1e-35f)

/* Most classes whose accumulators live in registers; a model of more keeps
 * them in global memory (each row owned by its document's thread). */
#define QS_CU_KREG 4u

/* ------------------------------------------------------------ tables */

typedef struct qs_cu_tree {
    uint64_t leaf_off;    /* into leaves (the layout's leaf order) */
    uint32_t nleaves;
    uint32_t cls;
    uint32_t node_off;    /* rank, lanes, walk: the tree's first node */
    uint32_t root;        /* rank, walk: the root's child code; lanes: nodes
                             | QS_CU_LANES_REV when laid out reversed */
} qs_cu_tree;

/* Child codes: a node index within the tree, or a leaf (its position in the
 * layout's leaf order) with the leaf bit. */
#define QS_CU_LEAF16 0x8000u
#define QS_CU_LEAF32 0x80000000u
/* A rank that takes each node's default side (NaN, or the zero band, under
 * the rule of the ranked feature). */
#define QS_CU_SPECIAL 0xFFFFu
/* The default side's bit in a rank node's threshold (left when set). */
#define QS_CU_DL 0x8000u
#define QS_CU_RANK_MAX 0x7FFFu   /* most distinct thresholds of a feature */
#define QS_CU_LANES_REV 0x80000000u

/* One (feature, missing rule) the rank kernels rank: its column in the
 * device rows, the rule, and its feature's distinct thresholds, ascending,
 * at vthr[thr_off .. thr_off + nthr). */
typedef struct qs_cu_vf {
    uint32_t col, miss, thr_off, nthr;
} qs_cu_vf;

/* rank: 8 bytes a node. */
typedef struct qs_cu_rnode {
    uint16_t vf;          /* the ranked (feature, rule) */
    uint16_t k;           /* the threshold's rank | QS_CU_DL */
    uint16_t left, right; /* child codes (QS_CU_LEAF16) */
} qs_cu_rnode;

/* lanes: 16 bytes a node; mask clears the leaves the node excludes when it
 * is false (goes right; in a reversed tree, left). */
typedef struct qs_cu_lnode {
    uint16_t vf, k;
    uint32_t pad;
    uint64_t mask;
} qs_cu_lnode;

/* walk: 24 bytes a node. */
typedef struct qs_cu_dnode {
    double v;             /* threshold; categorical: 32 x its bitset's words */
    uint32_t info;        /* column | QS_CU_D_* */
    uint32_t left, right; /* child codes (QS_CU_LEAF32) */
    uint32_t cat_off;     /* categorical: the bitset in cat_words */
} qs_cu_dnode;
#define QS_CU_D_COL 0x00FFFFFFu
#define QS_CU_D_CAT 0x01000000u
#define QS_CU_D_MISS_SHIFT 25
#define QS_CU_D_DL 0x08000000u
#define QS_CU_D_MEMBERS_LEFT 0x10000000u
#define QS_CU_D_NEG_STRICT 0x20000000u

/* qs: blocks, groups, categorical nodes. */
typedef struct qs_cu_block {
    uint32_t kind;        /* QS_CU_* block kind */
    uint32_t slot;        /* bytes of one tree's vector: 1, 2, 4, 8 or 8 * words */
    uint32_t ntrees;
    uint32_t tree0;       /* first tree (global index) */
    uint32_t group_begin, group_end;
    uint32_t cat_begin, cat_end;
} qs_cu_block;

typedef struct qs_cu_group {
    uint32_t col, rule;
    uint32_t begin, end;       /* sorted entries */
    uint32_t sp_begin, sp_end; /* special-value entries */
    uint32_t vf;               /* pivots by rank: the ranked (feature, rule) */
    uint32_t tab;              /* ... and the end of the false run for each
                                  rank r at gend[tab + r] */
} qs_cu_group;

typedef struct qs_cu_cat {
    uint64_t mask;        /* AND mask (narrow), or leaf range lo << 32 | hi (wide) */
    uint32_t tree;        /* block-local tree | QS_CU_CAT_REVERSED */
    uint32_t col;
    uint32_t cat_off, cat_nwords;
    uint32_t miss, default_left, flags, pad;
} qs_cu_cat;

typedef struct qs_cu_linear {
    double konst;
    double plain;         /* the leaf's value when a term's input is NaN */
    uint64_t term_off;
    uint32_t nterms, pad;
} qs_cu_linear;

/* The model as the kernels read it: every pointer into one image (device
 * memory for the GPU, host memory for the emulator); the tables a kernel
 * does not use are NULL. */
typedef struct qs_cu_model {
    /* every kernel */
    const qs_cu_tree *trees;
    const double *leaves;      /* contribution per leaf */
    const uint32_t *leaf_lin;  /* per leaf: 0, or 1 + index into linear (NULL: none) */
    const qs_cu_linear *linear;
    const uint32_t *lin_col;
    const double *lin_coeff;
    const double *base;        /* per class */
    const uint32_t *cat_words;
    /* qs */
    const qs_cu_block *blocks;
    const qs_cu_group *groups;
    const double *thr;
    const uint32_t *etree;
    const uint64_t *emask;
    const qs_cu_cat *cats;
    /* rank, lanes; qs with pivots by rank */
    const qs_cu_vf *vfs;
    const double *vthr;
    const uint32_t *gend;      /* qs, pivots by rank: per group, per rank */
    /* rank, lanes, walk: that kernel's nodes */
    const void *nodes;
    uint32_t kernel;           /* QS_CU_K_* */
    uint32_t ntrees;
    uint32_t num_classes;
    uint32_t cmp_lt;           /* goes left iff x < t (else x <= t) */
    uint32_t acc_mode;         /* QS_CU_ACC_* */
    uint32_t ncols;            /* values per device row: the features the model uses */
    uint32_t nblocks;          /* qs */
    uint32_t vec_words;        /* qs: 32-bit words of one document's vectors (widest block) */
    uint32_t chunk;            /* qs: trees per exit-leaf chunk */
    uint32_t nvf;              /* rank, lanes; qs with pivots by rank */
    uint32_t pivots;           /* qs: 1 pivots by rank (ranks staged once a
                                  thread-block, each group's false run one load
                                  away), 0 by binary search */
} qs_cu_model;

/* One launch: documents 0 .. n - 1 of x (rows of `stride` values, float32
 * when f32 is set, else double), scores into out[i * K + c]; acc / accf
 * (n * K each) hold the accumulators of a model of more than QS_CU_KREG
 * classes, each row owned by its document's thread. */
typedef struct qs_cu_batch {
    const void *x;
    uint64_t stride;
    uint32_t n;
    uint32_t f32;
    uint32_t db;               /* documents per thread-block */
    uint32_t pad;
    double *acc;
    float *accf;
    double *out;
    uint32_t *vec_global;      /* qs: the leaf vectors in global memory, db *
                                  vec_words words per thread-block; NULL: shared */
} qs_cu_batch;

/* Value of column col of row `row`. */
QS_CU_FN double qs_cu_x(const qs_cu_batch *X, uint64_t row, uint32_t col, const int f32)
{
    if (f32)
        return (double)((const float *)X->x)[row * X->stride + col];
    return ((const double *)X->x)[row * X->stride + col];
}

/* ------------------------------------------------------------ accumulation */

/* A document's accumulators: registers for up to QS_CU_KREG classes. */
typedef struct qs_cu_acc {
    double d[QS_CU_KREG];
    float f[QS_CU_KREG];
} qs_cu_acc;

/* kr: QS_CU_KREG classes or fewer in registers (1: one class), 0: global
 * (a compile-time constant in each kernel). */
QS_CU_FN void qs_cu_acc_start(const qs_cu_model *M, const qs_cu_batch *X, qs_cu_acc *a,
                              uint64_t row, const uint32_t kr)
{
    const uint32_t K = M->num_classes;
    if (kr) {
        QS_CU_UNROLL
        for (uint32_t k = 0; k < QS_CU_KREG; k++) {
            const double b = k < K && k < kr ? M->base[k] : 0.0;
            a->d[k] = b;
            a->f[k] = (float)b;
        }
        return;
    }
    for (uint32_t c = 0; c < K; c++) {
        X->acc[row * K + c] = M->base[c];
        X->accf[row * K + c] = (float)M->base[c];
    }
}

/* The one expression of qs_layout_add_leaf, for each mode. */
#define QS_CU_ADD(mode, accd, accf, c)                                                          \
    do {                                                                                        \
        if ((mode) == QS_CU_ACC_DOUBLE)                                                         \
            (accd) += (c);                                                                      \
        else if ((mode) == QS_CU_ACC_FLOAT)                                                     \
            (accf) = (accf) + (float)(c);                                                       \
        else                                                                                    \
            (accf) = (float)((double)(accf) + (c));                                             \
    } while (0)

/* Add contribution c of a tree of class cls. */
QS_CU_FN void qs_cu_acc_add(const qs_cu_model *M, const qs_cu_batch *X, qs_cu_acc *a,
                            uint64_t row, uint32_t cls, double c, const uint32_t kr)
{
    const uint32_t mode = M->acc_mode;
    if (kr == 1) {
        QS_CU_ADD(mode, a->d[0], a->f[0], c);
    } else if (kr) {
        QS_CU_UNROLL
        for (uint32_t k = 0; k < QS_CU_KREG; k++)
            if (k == cls)
                QS_CU_ADD(mode, a->d[k], a->f[k], c);
    } else {
        const uint64_t i = row * M->num_classes + cls;
        QS_CU_ADD(mode, X->acc[i], X->accf[i], c);
    }
}

QS_CU_FN void qs_cu_acc_finish(const qs_cu_model *M, const qs_cu_batch *X, const qs_cu_acc *a,
                               uint64_t row, const uint32_t kr)
{
    const uint32_t K = M->num_classes;
    const int f = M->acc_mode != QS_CU_ACC_DOUBLE;
    if (kr) {
        QS_CU_UNROLL
        for (uint32_t k = 0; k < QS_CU_KREG; k++)
            if (k < K && k < kr)
                X->out[row * K + k] = f ? (double)a->f[k] : a->d[k];
        return;
    }
    for (uint32_t c = 0; c < K; c++)
        X->out[row * K + c] = f ? (double)X->accf[row * K + c] : X->acc[row * K + c];
}

/* A linear leaf's output (qs_leaf_output): left to right, each product and
 * each sum rounded (built without contraction into fused multiply-adds). */
QS_CU_FN double qs_cu_linear_out(const qs_cu_model *M, const qs_cu_linear *l,
                                 const qs_cu_batch *X, uint64_t row, const int f32)
{
    double out = l->konst;
    for (uint32_t j = 0; j < l->nterms; j++) {
        const double v = qs_cu_x(X, row, M->lin_col[l->term_off + j], f32);
        if (v != v)
            return l->plain;
        const double p = M->lin_coeff[l->term_off + j] * v;
        out += p;
    }
    return out;
}

/* The contribution of leaf `leaf` (layout order) of tree T for a row. */
QS_CU_FN double qs_cu_contrib(const qs_cu_model *M, const qs_cu_tree *T, uint32_t leaf,
                              const qs_cu_batch *X, uint64_t row, const int f32)
{
    const uint64_t li = T->leaf_off + leaf;
    if (M->leaf_lin && M->leaf_lin[li])
        return qs_cu_linear_out(M, &M->linear[M->leaf_lin[li] - 1u], X, row, f32);
    return M->leaves[li];
}

/* ------------------------------------------------------------ decisions */

/* qs_node_goes_left for a categorical node. */
QS_CU_FN int qs_cu_cat_left(const uint32_t *cat_words, uint32_t miss, uint32_t default_left,
                            uint32_t flags, uint32_t cat_off, uint32_t cat_nwords, double x)
{
    const int members_left = (flags & QS_CU_CAT_MEMBERS_LEFT) != 0;
    if (x != x) {
        if (miss == QS_CU_MISS_NAN)
            return (int)default_left;
        x = 0.0;
    }
    if ((flags & QS_CU_CAT_NEG_STRICT) ? x < 0.0 : x <= -1.0)
        return !members_left;
    const double c = QS_CU_TRUNC(x);
    if (!(c < (double)cat_nwords * 32.0))
        return !members_left;
    const uint32_t ci = (uint32_t)c;
    const int member = (int)((cat_words[cat_off + ci / 32u] >> (ci % 32u)) & 1u);
    return member ? members_left : !members_left;
}

/* The rank of value x under (feature, rule) V: how many of the feature's
 * distinct thresholds t the value passes (t < x when nodes go left iff
 * x <= t; t <= x when iff x < t), so that a node whose threshold has rank k
 * goes left iff k >= the rank; or QS_CU_SPECIAL for NaN under QS_CU_MISS_NAN
 * and for the zero band (NaN read as 0.0) under QS_CU_MISS_ZERO. */
QS_CU_FN uint32_t qs_cu_rank(const qs_cu_vf *V, const double *vthr, double x, int lt)
{
    if (x != x) {
        if (V->miss == QS_CU_MISS_NAN)
            return QS_CU_SPECIAL;
        x = 0.0;
    }
    if (V->miss == QS_CU_MISS_ZERO && x >= -QS_CU_ZERO_BAND && x <= QS_CU_ZERO_BAND)
        return QS_CU_SPECIAL;
    const double *t = vthr + V->thr_off;
    uint32_t b = 0, e = V->nthr;
    while (b < e) {
        const uint32_t mid = b + (e - b) / 2u;
#if QS_CU_MUTATION == 1
        const int pass = lt ? t[mid] <= x : t[mid] <= x;
#else
        const int pass = lt ? t[mid] <= x : t[mid] < x;
#endif
        if (pass)
            b = mid + 1u;
        else
            e = mid;
    }
    return b;
}

/* Whether a rank node (threshold rank | default side `k`) sends a document
 * of rank r left. */
QS_CU_FN int qs_cu_rank_left(uint32_t k, uint32_t r)
{
#if QS_CU_MUTATION == 3
    if (r == QS_CU_SPECIAL)
        return 0;
#else
    if (r == QS_CU_SPECIAL)
        return (k & QS_CU_DL) != 0;
#endif
    return (k & ~QS_CU_DL) >= r;
}

/* Whether a walk node sends value x left (qs_node_goes_left). */
QS_CU_FN int qs_cu_dnode_left(const qs_cu_model *M, const qs_cu_dnode *n, double x)
{
    const uint32_t info = n->info;
    const uint32_t miss = (info >> QS_CU_D_MISS_SHIFT) & 3u;
    const uint32_t dl = (info & QS_CU_D_DL) != 0;
    if (info & QS_CU_D_CAT)
        return qs_cu_cat_left(M->cat_words, miss, dl,
                              ((info & QS_CU_D_MEMBERS_LEFT) ? QS_CU_CAT_MEMBERS_LEFT : 0u) |
                                  ((info & QS_CU_D_NEG_STRICT) ? QS_CU_CAT_NEG_STRICT : 0u),
                              n->cat_off, (uint32_t)(n->v / 32.0), x);
    if (x != x) {
#if QS_CU_MUTATION != 3
        if (miss == QS_CU_MISS_NAN)
            return (int)dl;
#endif
        x = 0.0;
    }
    if (miss == QS_CU_MISS_ZERO && x >= -QS_CU_ZERO_BAND && x <= QS_CU_ZERO_BAND)
        return (int)dl;
#if QS_CU_MUTATION == 1
    return M->cmp_lt ? x < n->v : x < n->v;
#else
    return M->cmp_lt ? x < n->v : x <= n->v;
#endif
}

/* ------------------------------------------------------------ rank, lanes, walk */

/* Tree t's tree index in the order a walk visits them. */
QS_CU_FN uint32_t qs_cu_walk_tree(const qs_cu_model *M, uint32_t i)
{
#if QS_CU_MUTATION == 2
    return M->ntrees - 1u - i;
#else
    (void)M;
    return i;
#endif
}

/* Stage the ranks of row `row` in the thread's column of shared memory:
 * ranks[v * nthreads + tid] (16 bits; a warp's 32 lanes read 16 words of one
 * row of banks). */
QS_CU_FN void qs_cu_stage_ranks(const qs_cu_model *M, const qs_cu_batch *X, uint16_t *ranks,
                                uint64_t row, uint32_t tid, uint32_t nthreads, void *rec,
                                const int f32)
{
    for (uint32_t v = 0; v < M->nvf; v++) {
        const qs_cu_vf *V = &M->vfs[v];
        const double x = qs_cu_x(X, row, V->col, f32);
        ranks[(uint64_t)v * nthreads + tid] = (uint16_t)qs_cu_rank(V, M->vthr, x, (int)M->cmp_lt);
        QS_CU_TOUCH(rec, tid, v, ((uint64_t)v * nthreads + tid) / 2u);
    }
}

/* The exit leaf of tree T by the rank walk. */
QS_CU_FN uint32_t qs_cu_rank_exit(const qs_cu_model *M, const qs_cu_tree *T,
                                  const uint16_t *ranks, uint32_t tid, uint32_t nthreads,
                                  void *rec, uint64_t step)
{
    const qs_cu_rnode *base = (const qs_cu_rnode *)M->nodes;
    const uint32_t off = T->node_off;   /* (base is NULL for a model without a split) */
    uint32_t code = T->root;
    uint32_t level = 0;
    while (!(code & QS_CU_LEAF16)) {
        const qs_cu_rnode n = base[off + code];
        const uint64_t at = (uint64_t)n.vf * nthreads + tid;
        QS_CU_TOUCH(rec, tid, step + level, at / 2u);
        const uint32_t r = ranks[at];
        code = qs_cu_rank_left(n.k, r) ? n.left : n.right;
        level++;
    }
    return code & ~QS_CU_LEAF16;
}

/* The exit leaf of tree T by branch-free QS over ranks (<= 64 leaves). */
QS_CU_FN uint32_t qs_cu_lanes_exit(const qs_cu_model *M, const qs_cu_tree *T,
                                   const uint16_t *ranks, uint32_t tid, uint32_t nthreads,
                                   void *rec, uint64_t step)
{
    const qs_cu_lnode *base = (const qs_cu_lnode *)M->nodes;
    const uint32_t off = T->node_off;   /* (base is NULL for a model without a split) */
    const uint32_t nn = T->root & ~QS_CU_LANES_REV;
    const int rev = (T->root & QS_CU_LANES_REV) != 0;
    uint64_t v = ~0ull;
    for (uint32_t j = 0; j < nn; j++) {
        const qs_cu_lnode n = base[off + j];
        const uint64_t at = (uint64_t)n.vf * nthreads + tid;
        QS_CU_TOUCH(rec, tid, step + j, at / 2u);
        const int left = qs_cu_rank_left(n.k, ranks[at]);
        v &= left == rev ? n.mask : ~0ull;
    }
    /* The last leaf's bit, as the CPU kernels OR it in: a corrupt table can
     * never index past the tree's leaves. */
    v |= 1ull << (T->nleaves - 1u);
    return (uint32_t)QS_CU_CTZ64(v);
}

/* The exit leaf of tree T by the double-compare walk. */
QS_CU_FN uint32_t qs_cu_walk_exit(const qs_cu_model *M, const qs_cu_tree *T,
                                  const qs_cu_batch *X, uint64_t row, const int f32)
{
    const qs_cu_dnode *base = (const qs_cu_dnode *)M->nodes;
    const uint32_t off = T->node_off;   /* (base is NULL for a model without a split) */
    uint32_t code = T->root;
    while (!(code & QS_CU_LEAF32)) {
        const qs_cu_dnode *n = &base[off + code];
        const double x = qs_cu_x(X, row, n->info & QS_CU_D_COL, f32);
        code = qs_cu_dnode_left(M, n, x) ? n->left : n->right;
    }
    return code & ~QS_CU_LEAF32;
}

/* One thread's document through every tree, by kernel M->kernel (rank,
 * lanes or walk): each exit leaf found, then added in model order.  The
 * next tree's contribution is loaded before the current one is added (the
 * sums stay in order; only the load's latency is hidden).  ranks: the
 * thread-block's shared ranks (rank, lanes).  rec: the emulator's recorder
 * (NULL on the device). */
QS_CU_FN void qs_cu_walk_doc(const qs_cu_model *M, const qs_cu_batch *X, uint16_t *ranks,
                             uint64_t row, uint32_t tid, uint32_t nthreads, void *rec,
                             const uint32_t kernel, const uint32_t kr, const int f32)
{
    qs_cu_acc a;
    qs_cu_acc_start(M, X, &a, row, kr);
    if (kernel != QS_CU_K_WALK)
        qs_cu_stage_ranks(M, X, ranks, row, tid, nthreads, rec, f32);
    const uint32_t nt = M->ntrees;
    uint32_t cls = 0;
    double c = 0.0;
    for (uint32_t i = 0; i <= nt; i++) {
        uint32_t cls_next = 0;
        double c_next = 0.0;
        if (i < nt) {
            const qs_cu_tree *T = &M->trees[qs_cu_walk_tree(M, i)];
            uint32_t leaf;
            if (kernel == QS_CU_K_RANK)
                leaf = qs_cu_rank_exit(M, T, ranks, tid, nthreads, rec, ((uint64_t)i + 1u) << 20);
            else if (kernel == QS_CU_K_LANES)
                leaf = qs_cu_lanes_exit(M, T, ranks, tid, nthreads, rec, ((uint64_t)i + 1u) << 20);
            else
                leaf = qs_cu_walk_exit(M, T, X, row, f32);
            c_next = qs_cu_contrib(M, T, leaf, X, row, f32);
            cls_next = T->cls;
        }
        if (i > 0)
            qs_cu_acc_add(M, X, &a, row, cls, c, kr);
        c = c_next;
        cls = cls_next;
    }
    qs_cu_acc_finish(M, X, &a, row, kr);
}

/* ------------------------------------------------------------ qs */

/* The end of the run of false nodes of a group for a value x that is not
 * special (the CPU's scan_end / scan_end_desc): the first entry whose
 * threshold stops the scan.  Thresholds are sorted, so the predicate "the
 * scan goes on" is true on a prefix and a binary search finds its end. */
QS_CU_FN uint32_t qs_cu_search(const double *thr, uint32_t b, uint32_t e, double x, int lt,
                               int desc)
{
    while (b < e) {
        const uint32_t mid = b + (e - b) / 2u;
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
            b = mid + 1u;
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
        special = rule == QS_CU_RULE_ZERO && x >= -QS_CU_ZERO_BAND && x <= QS_CU_ZERO_BAND;
    }
    if (special) {
        *b = G->sp_begin;
        *e = G->sp_end;
        return;
    }
    *b = G->begin;
    *e = qs_cu_search(M->thr, G->begin, G->end, x, (int)M->cmp_lt, (G->rule & QS_CU_DESC) != 0);
}

/* The first 32-bit word of block-local tree ti's vector in a document's
 * column, and the bit offset of the vector in it (narrow slots of 1 or 2
 * bytes share a word). */
QS_CU_FN uint32_t qs_cu_word(const qs_cu_block *B, uint32_t ti, uint32_t *shift)
{
    const uint32_t byte = ti * B->slot;
    *shift = (byte & 3u) * 8u;
    return byte / 4u;
}

/* AND / OR one entry's mask into document d's vector of tree ti: vec is
 * the thread-block's words (w * db + d).  Native 32-bit atomics, only on
 * the words the mask changes. */
QS_CU_FN void qs_cu_apply(const qs_cu_block *B, uint32_t *vec, uint32_t db, uint32_t d,
                          uint32_t ti, uint64_t mask, uint32_t tid, void *rec, uint64_t step,
                          const int gvec)
{
    uint32_t shift;
    const uint32_t w = qs_cu_word(B, ti, &shift);
    if (B->kind == QS_CU_OMEGA) {
        QS_CU_TOUCH(rec, tid, step, (uint64_t)w * db + d);
        QS_CU_OR32(&vec[(uint64_t)w * db + d], (uint32_t)mask, gvec);
        return;
    }
    if (B->kind == QS_CU_WIDE) {
        /* clear leaves [lo, hi) (the CPU's clear_range), a word at a time */
        const uint32_t lo = (uint32_t)(mask >> 32), hi = (uint32_t)mask;
        const uint32_t a = lo >> 5, b = (hi - 1u) >> 5;
        for (uint32_t k = a; k <= b; k++) {
            uint32_t keep = 0;
            if (k == a)
                keep |= (1u << (lo & 31u)) - 1u;
            if (k == b && ((hi - 1u) & 31u) != 31u)
                keep |= ~0u << (((hi - 1u) & 31u) + 1u);
            QS_CU_TOUCH(rec, tid, step + (k - a), (uint64_t)(w + k) * db + d);
            QS_CU_AND32(&vec[(uint64_t)(w + k) * db + d], keep, gvec);
        }
        return;
    }
    if (B->slot == 8) {
        const uint32_t lo = (uint32_t)mask, hi = (uint32_t)(mask >> 32);
        if (lo != 0xFFFFFFFFu) {
            QS_CU_TOUCH(rec, tid, step, (uint64_t)w * db + d);
            QS_CU_AND32(&vec[(uint64_t)w * db + d], lo, gvec);
        }
        if (hi != 0xFFFFFFFFu) {
            QS_CU_TOUCH(rec, tid, step + 1u, (uint64_t)(w + 1u) * db + d);
            QS_CU_AND32(&vec[(uint64_t)(w + 1u) * db + d], hi, gvec);
        }
        return;
    }
    const uint32_t width = B->slot * 8u;
    const uint32_t keep = width == 32u ? 0xFFFFFFFFu : ((1u << width) - 1u);
    const uint32_t clear = (~(uint32_t)mask) & keep;
    QS_CU_TOUCH(rec, tid, step, (uint64_t)w * db + d);
    QS_CU_AND32(&vec[(uint64_t)w * db + d], ~(clear << shift), gvec);
}

/* init: every word of the block's vectors of the thread-block's documents. */
QS_CU_FN void qs_cu_qs_init(const qs_cu_block *B, uint32_t *vec, uint32_t db, uint32_t tid,
                            uint32_t nthreads)
{
    const uint64_t words = ((uint64_t)B->ntrees * B->slot + 3u) / 4u * db;
    const uint32_t fill = B->kind == QS_CU_OMEGA ? 0u : 0xFFFFFFFFu;
    for (uint64_t i = tid; i < words; i += nthreads)
        vec[i] = fill;
}

/* pivots by rank: the ranks of the thread-block's documents, staged once
 * for every tree block: ranks[v * db + d] (16 bits: two lanes a word). */
QS_CU_FN void qs_cu_qs_ranks(const qs_cu_model *M, const qs_cu_batch *X, uint16_t *ranks,
                             uint32_t doc0, uint32_t nd, uint32_t tid, uint32_t nthreads,
                             const int f32)
{
    const uint32_t db = X->db;
    const uint64_t n = (uint64_t)M->nvf * nd;
    for (uint64_t q = tid; q < n; q += nthreads) {
        const uint32_t v = (uint32_t)(q / nd), d = (uint32_t)(q % nd);
        const qs_cu_vf *V = &M->vfs[v];
        ranks[(uint64_t)v * db + d] =
            (uint16_t)qs_cu_rank(V, M->vthr, qs_cu_x(X, (uint64_t)doc0 + d, V->col, f32),
                                 (int)M->cmp_lt);
    }
}

/* mask: warps take (32 documents, group) pairs and (32 documents,
 * categorical node) pairs; lane l takes document 32 * k + l of the
 * thread-block.  The lanes' range loops share their iteration count j, so
 * the recorder's step of an entry is (pair, j).  ranks: the staged ranks
 * (pivots by rank; else NULL). */
QS_CU_FN void qs_cu_qs_mask(const qs_cu_model *M, const qs_cu_block *B, const qs_cu_batch *X,
                            uint32_t *vec, const uint16_t *ranks, uint32_t doc0, uint32_t nd,
                            uint32_t tid, uint32_t nthreads, void *rec, const int f32,
                            const int gvec)
{
    const uint32_t db = X->db;
    const uint32_t warp = tid / QS_CU_WARP, lane = tid % QS_CU_WARP;
    const uint32_t nwarps = nthreads / QS_CU_WARP;
    const uint32_t ndw = (nd + QS_CU_WARP - 1u) / QS_CU_WARP;
    const uint32_t ng = B->group_end - B->group_begin;
    const uint64_t pairs = (uint64_t)ng * ndw;
    uint64_t iter = 0;
    for (uint64_t p = warp; p < pairs; p += nwarps, iter++) {
        const uint32_t d = (uint32_t)(p % ndw) * QS_CU_WARP + lane;
        if (d >= nd)
            continue;
        const qs_cu_group *G = &M->groups[B->group_begin + p / ndw];
        uint32_t b, e;
        if (ranks) {
            const uint64_t at = (uint64_t)G->vf * db + d;
            QS_CU_TOUCH(rec, tid, iter << 40, at / 2u);
            const uint32_t r = ranks[at];
            if (r == QS_CU_SPECIAL) {
                b = G->sp_begin;
                e = G->sp_end;
            } else {
                b = G->begin;
                e = M->gend[G->tab + r];
            }
        } else {
            qs_cu_range(M, G, qs_cu_x(X, (uint64_t)doc0 + d, G->col, f32), &b, &e);
        }
        for (uint32_t i = b; i < e; i++)
            qs_cu_apply(B, vec, db, d, M->etree[i], M->emask[i], tid, rec,
                        (iter << 40) | ((uint64_t)(i - b + 1u) << 8), gvec);
    }
    const uint32_t nc = B->cat_end - B->cat_begin;
    const uint64_t cpairs = (uint64_t)nc * ndw;
    for (uint64_t p = warp; p < cpairs; p += nwarps, iter++) {
        const uint32_t d = (uint32_t)(p % ndw) * QS_CU_WARP + lane;
        if (d >= nd)
            continue;
        const qs_cu_cat *C = &M->cats[B->cat_begin + p / ndw];
        const double x = qs_cu_x(X, (uint64_t)doc0 + d, C->col, f32);
        if (qs_cu_cat_left(M->cat_words, C->miss, C->default_left, C->flags, C->cat_off,
                           C->cat_nwords, x) == ((C->tree & QS_CU_CAT_REVERSED) != 0))
            qs_cu_apply(B, vec, db, d, C->tree & ~QS_CU_CAT_REVERSED, C->mask, tid, rec,
                        iter << 40, gvec);
    }
}

/* The exit leaf of block-local tree ti of document d (0 .. nl - 1). */
QS_CU_FN uint32_t qs_cu_qs_exit(const qs_cu_block *B, const uint32_t *vec, uint32_t db, uint32_t d,
                                uint32_t ti, uint32_t nl)
{
    uint32_t shift;
    const uint32_t w = qs_cu_word(B, ti, &shift);
    if (B->kind == QS_CU_OMEGA)
        return vec[(uint64_t)w * db + d] & (nl - 1u);
    if (B->kind == QS_CU_WIDE) {
        const uint32_t nw = B->slot / 4u;
        for (uint32_t k = 0; k < nw; k++) {
            const uint32_t v = vec[(uint64_t)(w + k) * db + d];
            if (v) {
                const uint32_t cand = k * 32u + (uint32_t)QS_CU_CTZ32(v);
                return cand < nl - 1u ? cand : nl - 1u;
            }
        }
        return nl - 1u;
    }
    uint64_t v;
    if (B->slot == 8)
        v = (uint64_t)vec[(uint64_t)w * db + d] | (uint64_t)vec[(uint64_t)(w + 1u) * db + d] << 32;
    else if (B->slot == 4)
        v = vec[(uint64_t)w * db + d];
    else
        v = (vec[(uint64_t)w * db + d] >> shift) & ((1u << (B->slot * 8u)) - 1u);
    /* The last leaf's bit, as the CPU kernels OR it in. */
    v |= 1ull << (nl - 1u);
    return (uint32_t)QS_CU_CTZ64(v);
}

/* fetch: every thread takes (tree, document) pairs of trees c0 .. c0 + nc - 1
 * of the block: the exit leaf, then its contribution into vals[t * db + d]. */
QS_CU_FN void qs_cu_qs_fetch(const qs_cu_model *M, const qs_cu_block *B, const qs_cu_batch *X,
                             const uint32_t *vec, double *vals, uint32_t doc0, uint32_t nd,
                             uint32_t c0, uint32_t nc, uint32_t tid, uint32_t nthreads,
                             const int f32)
{
    const uint32_t db = X->db;
    const uint32_t pairs = nc * db;
    for (uint32_t q = tid; q < pairs; q += nthreads) {
        const uint32_t t = q / db, d = q % db;
        if (d >= nd)
            continue;
        const qs_cu_tree *T = &M->trees[B->tree0 + c0 + t];
        const uint32_t leaf = qs_cu_qs_exit(B, vec, db, d, c0 + t, T->nleaves);
        vals[q] = qs_cu_contrib(M, T, leaf, X, (uint64_t)doc0 + d, f32);
    }
}

/* add: thread d < nd adds its document's contributions of those trees in
 * tree order. */
QS_CU_FN void qs_cu_qs_add(const qs_cu_model *M, const qs_cu_block *B, const qs_cu_batch *X,
                           const double *vals, qs_cu_acc *a, uint32_t doc0, uint32_t nd,
                           uint32_t c0, uint32_t nc, uint32_t tid, const uint32_t kr)
{
    if (tid >= nd)
        return;
    const uint32_t db = X->db;
#if QS_CU_MUTATION == 2
    for (uint32_t k = nc; k-- > 0;) {
        const uint32_t t = k;
#else
    for (uint32_t t = 0; t < nc; t++) {
#endif
        const uint32_t cls = M->trees[B->tree0 + c0 + t].cls;
        qs_cu_acc_add(M, X, a, (uint64_t)doc0 + tid, cls, vals[t * db + tid], kr);
    }
}

#endif
