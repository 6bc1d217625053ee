/* vqs.h: vQS, QuickScorer over several documents per SIMD instruction
 * (64 documents on byte planes for QS blocks of up to 2048 leaves per tree
 * and QS-Ω blocks, AVX-512 or AVX2; with AVX2 most QS-Ω blocks by ranks
 * instead, see om_* below; small batches 8 or 4 with one 64-bit leaf
 * vector per lane), picked at run time from CPUID and XGETBV.
 *
 * The kernels only change how the false nodes' masks reach the leaf
 * vectors: an AND (or the OR of QS-Ω) is order-free, so each document's
 * exit leaves are those of scalar QS, and every document still adds its
 * trees' contributions in tree order with the same IEEE operations.  The
 * scores are bit-identical to the scalar back end by construction, and the
 * test suite checks it on every oracle file. */
#ifndef QS_VQS_H
#define QS_VQS_H

#include "score/score.h"

#include <stdio.h>

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

/* Lanes (documents per call) for a batch of n documents through block B:
 * 64 on byte planes (AVX-512, or AVX2 two halves at a time), narrow QS
 * blocks only when the batch fills at least half of them (else 8 at a
 * time with AVX-512, 4 with AVX2).  QS-Ω blocks go only 64 at a time (on
 * byte planes, or by ranks with AVX2):
 * 8 or 4 lanes of 64-bit vectors were slower than scalar QS-Ω (0.8x and
 * 0.64x on QuickRank's 1,000 oblivious trees).  (The driver scores a block
 * scalar when a batch fills under half of its lanes, unless the back end
 * was named.) */
static inline unsigned qs_vqs_lanes(unsigned level, const qs_block *B, uint32_t n)
{
    const unsigned narrow = level == QS_SIMD_AVX512 ? 8u : 4u;
    if (!qs_vqs_planes(B))
        return narrow;
    return n >= 32 || B->kind != QS_BLOCK_QS || B->width == 0 ? 64u : narrow;
}

/* What the byte-plane kernel reads per layout entry instead of its tree id
 * and mask: the byte offsets of the first and the last plane the node's
 * mask touches (low and high 32 bits of off) and the mask's bytes there
 * (low and high 8 bits of bytes): AND bytes for QS blocks (planes between
 * the two are cleared), OR bytes for QS-Ω blocks.  Built from a layout
 * once. */
typedef struct qs_vqs_plan {
    uint64_t *off;
    uint16_t *bytes;
    /* The features a block's groups test, each once (feats[feat_off[b]]
     * .. feats[feat_off[b + 1] - 1]), and each group's row among them: the
     * kernel copies the 64 documents' values of those features into rows
     * of 64 once per block. */
    uint32_t *feats;
    uint64_t *feat_off;
    uint32_t *grow;
    uint32_t max_feats;
    /* The same masks as one operation per plane touched (the AVX2
     * kernel): entry i's are xop[xidx[i]] .. xop[xidx[i + 1] - 1], each the
     * plane's byte offset in the block's planes, with its AND (QS) or OR
     * (QS-Ω) byte in xbyte at the same index; entries that change nothing
     * have none.  NULL where some block's planes pass 2^32 bytes. */
    uint64_t *xidx;
    uint32_t *xop;
    uint8_t *xbyte;
    /* The leaf table as float32 (the AVX2 kernel, for models that add
     * (float)c in float32: the same rounding, 8 lanes per gather), or
     * NULL. */
    float *leavesf;
    /* QS-Ω by ranks (the AVX2 kernel, no linear leaves): in a
     * block's ascending group the entries that fire for a value are those
     * of the distinct thresholds it passes, a prefix, so a document's value
     * is read once per group as how many it passes (its count), and each
     * level of a tree fires when the count passes the rank of its entry's
     * threshold among them.  om_ok[b]: block b goes this way (else on byte
     * planes); om_sp[g]: the count of a special value of group g (its
     * special entries are those of the first om_sp[g] thresholds);
     * om_level[t * QS_OMEGA_MAX_DEPTH + l]: tree t's level l, its group's
     * row in the block (high 16 bits) and its threshold's rank (low 16),
     * with its OR bits in om_bits and its level count in om_depth[t]. */
    uint8_t *om_ok;
    uint16_t *om_sp;
    /* Each group's distinct thresholds, om_u[om_uoff[g] .. om_uoff[g + 1]). */
    uint32_t *om_uoff;
    double *om_u;
    uint32_t *om_level;
    uint16_t *om_bits;
    uint8_t *om_depth;
    /* Categorical features as byte lookups (the byte-plane kernels, narrow
     * QS blocks; vqs_cat.c): for layout catfeat f with cv_nq[f] > 0, the
     * trees its table touches, cv_tree[cv_toff[f] .. cv_toff[f + 1]), and
     * per tree and plane j a table of cv_nq[f] * 16 bytes at cv_tab +
     * cv_boff[f] + (k * planes + j) * cv_nq[f] * 16: byte c + 1 is byte j
     * of class c's AND mask for the tree, byte 0 is 0xFF (the lanes whose
     * values take the nodes one by one).  cv_nq[f] 0: the feature goes
     * lane by lane through its table rows. */
    uint8_t *cv_nq;
    uint64_t *cv_toff;
    uint32_t *cv_tree;
    uint64_t *cv_boff;
    uint8_t *cv_tab;
} qs_vqs_plan;

/* 0, or -1 when out of memory. */
int qs_vqs_plan_build(const qs_layout *L, qs_vqs_plan *P, unsigned threads);
/* The QS-Ω-by-ranks tables of the blocks that can go that way for model m
 * (none is not an error); 0, or -1 when out of memory. */
int qs_vqs_omega_ranks(const qs_model *m, const qs_layout *L, qs_vqs_plan *P);
void qs_vqs_plan_free(qs_vqs_plan *P);
/* The byte lookups of the categorical tables (above); 0, or -1 when out of
 * memory (none, for a feature too large to hold, is not an error). */
int qs_vqs_cat_build(const qs_layout *L, qs_vqs_plan *P);
/* A narrow block's categorical features on 64 documents' byte planes v
 * (row: bytes per tree, planes per tree), with AVX-512 or AVX2. */
void qs_vqs_cat_bp512(const qs_model *m, const qs_layout *L, const qs_vqs_plan *P,
                      const qs_block *B, uint8_t *v, size_t row, uint32_t planes,
                      const double *const *xs);
void qs_vqs_cat_bp256(const qs_model *m, const qs_layout *L, const qs_vqs_plan *P,
                      const qs_block *B, uint8_t *v, size_t row, uint32_t planes,
                      const double *const *xs);

/* Bytes of scratch per tree of a block that the kernels need (AVX-512
 * byte planes: 8 planes x 64 documents per 64 leaves, 2 planes for QS-Ω;
 * 8 or 4 lanes x 8 bytes else). */
#define QS_VQS_TREE_BYTES 512u

#endif
