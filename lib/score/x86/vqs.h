/* vqs.h: vQS, QuickScorer over several documents per SIMD instruction
 * (AVX-512: 64 documents on byte planes, or 8 with one 64-bit leaf vector
 * per lane; AVX2: 4), picked at run time from CPUID and XGETBV.
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

/* Whether the AVX-512 byte-plane kernel takes block B: a QS block whose
 * planes (trees x width/8 x 64 bytes) 32-bit offsets can address. */
static inline int qs_vqs_planes_ok(const qs_block *B)
{
    return B->kind == QS_BLOCK_QS && B->width != 0 &&
           (B->tree_end - B->tree_begin) * (uint64_t)B->width * 8u <= 0xFFFFFFFFull;
}

/* Lanes (documents per call) for a batch of n documents through block B:
 * AVX-512 scores QS blocks 64 documents at a time (byte planes) when the
 * batch fills at least half of them, else 8 at a time (also QS-Ω blocks);
 * AVX2 4 at a time. */
static inline unsigned qs_vqs_lanes(unsigned level, const qs_block *B, uint32_t n)
{
    if (level != QS_SIMD_AVX512)
        return 4u;
    return qs_vqs_planes_ok(B) && n >= 32 ? 64u : 8u;
}

/* What the byte-plane kernel reads per layout entry instead of its tree id
 * and mask: the byte offsets of the first and the last plane the node's
 * mask touches (low and high 32 bits of off) and the mask's bytes there
 * (low and high 8 bits of bytes).  Built from a layout once. */
typedef struct qs_vqs_plan {
    uint64_t *off;
    uint16_t *bytes;
} qs_vqs_plan;

/* 0, or -1 when out of memory. */
int qs_vqs_plan_build(const qs_layout *L, qs_vqs_plan *P);
void qs_vqs_plan_free(qs_vqs_plan *P);

/* Whether a block can go through the SIMD kernels: QS blocks of at most
 * 64 leaves per tree and QS-Ω blocks (wider trees stay scalar). */
static inline int qs_vqs_block_ok(const qs_block *B)
{
    return B->kind == QS_BLOCK_OMEGA || (B->kind == QS_BLOCK_QS && B->width != 0);
}

/* Bytes of scratch per tree of a block that qs_vqs_block needs (AVX-512
 * byte planes: 8 planes x 64 documents; 8 or 4 lanes x 8 bytes else). */
#define QS_VQS_TREE_BYTES 512u

#endif
