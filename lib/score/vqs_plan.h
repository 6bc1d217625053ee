/* vqs_plan.h: the ISA-neutral half of vQS, QuickScorer over several
 * documents per SIMD instruction (64 documents on byte planes for QS blocks
 * of up to 2048 leaves per tree and QS-Ω blocks, AVX-512 or AVX2; with AVX2
 * most QS-Ω blocks by ranks instead, see om below; small batches 8 or 4
 * with one 64-bit leaf vector per lane): which blocks and batches the
 * kernels take, and the plan they read, built once per layout
 * (vqs_plan.c).  The kernels themselves are in score/x86/, one file per
 * ISA compiled from one template (score/x86/vqs_kernel.h). */
#ifndef QS_VQS_PLAN_H
#define QS_VQS_PLAN_H

#include "score/score.h"


/* Planes per tree of the byte-plane kernels for block B (plane j:
 * byte j of 64 documents' leaf vectors, 64 bytes), or 0 when it does not
 * take B.  QS blocks: width/8 planes, or 8 per word of a multi-word block
 * of at most 32 words (2048 leaves); QS-Ω blocks: 2 (the low and the high
 * byte of the leaf index, depth <= 16).  The planes of a block must stay
 * within 32-bit offsets. */
static inline uint32_t qs_vqs_planes(const qs_block *B)
{
    uint32_t p = B->kind == QS_BLOCK_OMEGA ? 2u
                 : B->kind != QS_BLOCK_QS  ? 0u
                 : B->width                ? B->width / 8
                 : B->words <= 32          ? B->words * 8
                                           : 0u;
    if ((B->tree_end - B->tree_begin) * (uint64_t)p * 64u > 0xFFFFFFFFull)
        return 0;
    return p;
}

/* Whether a block can go through the SIMD kernels at a level: every block
 * the byte-plane kernels take, and QS blocks of at most 64 leaves per tree
 * (8 or 4 lanes of 64-bit vectors). */
static inline int qs_vqs_block_ok(unsigned level, const qs_block *B)
{
    (void)level;
    return qs_vqs_planes(B) || (B->kind == QS_BLOCK_QS && B->width != 0);
}

/* Lanes (documents per call) for a batch of n documents through block B,
 * for an ISA whose small-batch kernel takes `narrow` lanes (its
 * VQS_NARROW: 8 with AVX-512, 4 with AVX2): 64 on byte planes (AVX-512,
 * or AVX2 two halves at a time), narrow QS blocks only when the batch
 * fills at least half of them (else `narrow` at a time).  QS-Ω blocks go only 64 at a time (on
 * byte planes, or by ranks with AVX2):
 * 8 or 4 lanes of 64-bit vectors were slower than scalar QS-Ω (0.8x and
 * 0.64x on QuickRank's 1,000 oblivious trees).  (The driver scores a block
 * scalar when a batch fills under half of its lanes, unless the back end
 * was named.) */
#define QS_VQS_NARROW_BELOW 32u
static inline unsigned qs_vqs_lanes(unsigned narrow, const qs_block *B, uint32_t n)
{
    if (!qs_vqs_planes(B))
        return narrow;
    return n >= QS_VQS_NARROW_BELOW || B->kind != QS_BLOCK_QS || B->width == 0 ? 64u : narrow;
}

/* The plan: what the kernels read instead of the layout's entries, built
 * once per layout (vqs_plan.c), one group of arrays per kernel or part of
 * one, each documented where it is declared.  A group the model has no
 * use for stays NULL (its arrays) and 0 (its counts). */
typedef struct qs_vqs_plan {
    /* Byte planes, per layout entry (block_bp): instead of its tree id and
     * mask, the byte offsets of the first and the last plane the node's
     * mask touches (low and high 32 bits of off[i]) and the mask's bytes
     * there (low and high 8 bits of bytes[i]): AND bytes for QS blocks
     * (planes between the two are cleared), OR bytes for QS-Ω blocks. */
    struct qs_vqs_bp {
        uint64_t *off;
        uint16_t *bytes;
    } bp;
    /* The rows of feature values (every 64-document kernel): the features
     * a block's groups test, each once (feats[off[b]] .. feats[off[b + 1]
     * - 1]), and each group's row among them (grow[g]): the kernel copies
     * the 64 documents' values of those features into rows of 64 once per
     * block; max: most features of a block. */
    struct qs_vqs_rows {
        uint32_t *feats;
        uint64_t *off;
        uint32_t *grow;
        uint32_t max;
    } rows;
    /* The byte planes' masks as one operation per plane touched (block_bp;
     * block_rk's lists are made from them): entry i's are off[idx[i]] ..
     * off[idx[i + 1] - 1], each the plane's byte offset in the block's
     * planes, with its AND (QS) or OR (QS-Ω) byte in byte[] at the same
     * index; entries that change nothing have none.  NULL where some
     * block's planes pass 2^32 bytes. */
    struct qs_vqs_xop {
        uint64_t *idx;
        uint32_t *off;
        uint8_t *byte;
    } xop;
    /* The leaf table as float32 (the AVX2 kernel, for models that add
     * (float)c in float32: the same rounding, 8 lanes per gather), or
     * NULL. */
    float *leavesf;
    /* QS-Ω by ranks (an ISA's block_om, VQS_OM: AVX2; no linear leaves):
     * in a block's ascending group the entries that fire for a value are
     * those of the distinct thresholds it passes, a prefix, so a
     * document's value is read once per group as how many it passes (its
     * count), and each level of a tree fires when the count passes the
     * rank of its entry's threshold among them.  ok[b]: block b goes this
     * way (else on byte planes); sp[g]: the count of a special value of
     * group g (its special entries are those of the first sp[g]
     * thresholds); each group's distinct thresholds, u[uoff[g] .. uoff[g +
     * 1]); level[t * QS_OMEGA_MAX_DEPTH + l]: tree t's level l, its
     * group's row in the block (high 16 bits) and its threshold's rank
     * (low 16), with its OR bits in bits[] and its level count in
     * depth[t]. */
    struct qs_vqs_om {
        uint8_t *ok;
        uint16_t *sp;
        uint32_t *uoff;
        double *u;
        uint32_t *level;
        uint16_t *bits;
        uint8_t *depth;
    } om;
    /* Categorical features as byte lookups (the byte-plane kernels, narrow
     * QS blocks; x86/vqs_kernel.h, cat_bp): for layout catfeat f with
     * nq[f] > 0, the trees its table touches, tree[toff[f] .. toff[f +
     * 1]), and per tree and plane j a table of nq[f] * 16 bytes at tab +
     * boff[f] + (k * planes + j) * nq[f] * 16: byte c + 1 is byte j of
     * class c's AND mask for the tree, byte 0 is 0xFF (the lanes whose
     * values take the nodes one by one).  nq[f] 0 (or nq NULL): the
     * feature goes lane by lane through its table rows. */
    struct qs_vqs_cv {
        uint8_t *nq;
        uint64_t *toff;
        uint32_t *tree;
        uint64_t *boff;
        uint8_t *tab;
    } cv;
    /* QS blocks by ranks (block_rk, every ISA; trees of at most 64 leaves,
     * no categorical node, no reversed tree, no linear leaf, every group
     * of at most 255 distinct thresholds): a document's value is read once
     * per group and batch as its count, how many of the group's distinct
     * thresholds (u[uoff[g] .. uoff[g + 1])) it passes, a byte; an entry
     * whose threshold has rank r among them is false for the documents
     * whose count passes r.  The block then goes tree by tree, each plane
     * of 64 documents built in a register from its operations and turned
     * into exit leaves there: no plane is stored.  ok[b]: block b goes so;
     * tree t's operations are op[opoff[t] .. opoff[t + 1]), its planes
     * from the top (its last leaf's) down, for its k-th plane from the top
     * pn[t * 8 + k] of its sorted entries then ps[t * 8 + k] of its
     * special ones (each an even count: a spare operation changes
     * nothing), so that a batch without a special value skips the latter.
     * An operation: the row of counts it reads, times 8 (bits 0-15; the
     * row: a group's in its block, or the block's group count plus it for
     * a special entry, whose row marks the special list's documents: the
     * row's byte offset is 8 times the field, an address's scale), the
     * rank (bits 16-23) and the complement of its AND byte (bits 24-31);
     * ranks and counts biased by 0x80 (signed bytes).  maxg: most groups
     * of a block by ranks.
     *
     * The same operations for an ISA with a table of masks (VQS_RK_TABLE:
     * AVX-512), which looks up each one's documents in a table made per
     * batch (a block's table: for each group, the documents whose count
     * passes each rank, tb[g] + rank, then its special list's documents,
     * tb[g] + its distinct thresholds): mt[], the mask's index (bits 0-23)
     * and the complement of the AND byte (bits 24-31).  ok[b] 2: block b's
     * table fits QS_VQS_RK_TABLE masks (else 1: compares); maxtn: most
     * masks of a block's table. */
    struct qs_vqs_rk {
        uint8_t *ok;
        uint32_t *opoff;
        uint8_t *pn;
        uint8_t *ps;
        uint32_t *op;
        uint32_t *uoff;
        double *u;
        uint32_t maxg;
        uint32_t *tb;
        uint32_t *mt;
        uint32_t maxtn;
    } rk;
} qs_vqs_plan;

/* Bytes of scratch per group of a block by ranks: two rows of 64 counts
 * (its sorted entries', its special list's). */
#define QS_VQS_RK_ROW 128u
/* Most masks of a block's table (8 bytes each: 64 KiB); a block of more
 * compares instead (a build may set it: 0, the compares always). */
#ifndef QS_VQS_RK_TABLE
#define QS_VQS_RK_TABLE 8192u
#endif

/* The AND byte of plane j for a multi-word node clearing leaves [lo, hi). */
static inline uint8_t qs_vqs_range_byte(uint32_t lo, uint32_t hi, uint32_t j)
{
    const uint32_t b0 = 8 * j;
    if (hi <= b0 || lo >= b0 + 8)
        return 0xFF;
    const uint32_t a = lo > b0 ? lo - b0 : 0, b = hi < b0 + 8 ? hi - b0 : 8;
    return (uint8_t)~(((1u << b) - 1) & ~((1u << a) - 1));
}

/* 0, or -1 when out of memory. */
int qs_vqs_plan_build(const qs_layout *L, qs_vqs_plan *P, unsigned threads);
/* The QS-Ω-by-ranks tables of the blocks that can go that way for model m
 * (none is not an error); 0, or -1 when out of memory. */
int qs_vqs_omega_ranks(const qs_model *m, const qs_layout *L, qs_vqs_plan *P);
/* The by-ranks lists (rk) of the blocks that can go that way for
 * model m (none is not an error); after qs_vqs_plan_build.  0, or -1 when
 * out of memory. */
int qs_vqs_rank_build(const qs_model *m, const qs_layout *L, qs_vqs_plan *P);
/* Whether block B of model m goes by ranks (qs_vqs_rank_build's
 * test). */
int qs_vqs_rank_ok(const qs_model *m, const qs_layout *L, const qs_block *B);
/* The float32 leaf table (leavesf) where scorer s's model adds (float)c
 * in float32; 0, or -1 when out of memory. */
int qs_vqs_leaves_float(const qs_scorer *s, qs_vqs_plan *P);
void qs_vqs_plan_free(qs_vqs_plan *P);
/* The byte lookups of the layout's categorical tables (above); 0, or -1
 * when out of memory (a feature too large to hold goes lane by lane: not
 * an error). */
int qs_vqs_cat_build(const qs_layout *L, qs_vqs_plan *P);

/* Bytes of scratch per tree of a block that the kernels need (AVX-512
 * byte planes: 8 planes x 64 documents per 64 leaves, 2 planes for QS-Ω;
 * 8 or 4 lanes x 8 bytes else). */
#define QS_VQS_TREE_BYTES 512u

/* Documents of the byte-plane kernels. */
#define QS_VQS_LANES 64u
/* Doubles from one row of the byte-plane kernels' feature values (64
 * documents) to the next: 64 and a spare line, so that a document's
 * column does not fall into a few cache sets. */
#define QS_VQS_XROW 72u
/* Rows of feature values the kernels hold at once (the block's next
 * features, refilled as its groups move on), so that the scratch stays
 * small for a block of many features. */
#define QS_VQS_XROWS 256u

/* Bytes of the rows of feature values in the byte-plane kernels' scratch
 * (after the accumulators, before the planes). */
static inline size_t qs_vqs_xrow_bytes(const qs_vqs_plan *P)
{
    return P ? (size_t)(P->rows.max < QS_VQS_XROWS ? P->rows.max : QS_VQS_XROWS) *
                   QS_VQS_XROW * sizeof(double)
             : 0;
}

/* Bytes of the counts of the blocks by ranks (after the rows of feature
 * values, before the planes). */
static inline size_t qs_vqs_rk_bytes(const qs_vqs_plan *P)
{
    return P ? (((size_t)P->rk.maxg * QS_VQS_RK_ROW + (size_t)P->rk.maxtn * 8 + 63) & ~(size_t)63)
             : 0;
}

/* Bytes of the accumulators the byte-plane kernels keep for K classes
 * (64 documents x K, double and float, class-major), at the start of their
 * scratch. */
static inline size_t qs_vqs_acc_bytes(uint32_t K)
{
    return ((size_t)K * QS_VQS_LANES * (sizeof(double) + sizeof(float)) + 63) & ~(size_t)63;
}

#endif
