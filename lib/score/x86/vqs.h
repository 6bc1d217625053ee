/* vqs.h: the vQS kernels' entries, one per ISA, for the back ends
 * (vqs_backends.c).  vqs_avx2.c and vqs_avx512.c each compile the kernel
 * template (vqs_kernel.h) with their ISA's target attribute and
 * primitives, which gives the ISA's entries below; the plan they read is
 * ISA-neutral (score/vqs_plan.h).  Built without -march: a kernel runs
 * only where qs_cpu_simd() (common/cpu.c: CPUID, and XGETBV for the vector
 * registers being saved on context switch) allows it, which the ISA table
 * in vqs_backends.c checks once, when a back end is prepared.
 *
 * The kernels only change how the false nodes' masks reach the leaf
 * vectors: an AND (or the OR of QS-Ω) is order-free, so each document's
 * exit leaves are those of scalar QS, and every document still adds its
 * trees' contributions in tree order with the same IEEE operations.  The
 * scores are bit-identical to the scalar back end by construction, and the
 * test suite checks it on every oracle file. */
#ifndef QS_VQS_H
#define QS_VQS_H

#include "score/vqs_plan.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QS_VQS_HAVE_KERNELS 1
#else /* no SIMD kernels, and the back ends' probe says so */
#define QS_VQS_HAVE_KERNELS 0
#endif

/* The ISAs' block functions (qs_simd_kernel.block; its data: the back
 * end's qs_vqs_plan), one per row of the ISA table: a block's `lanes`
 * documents through the ISA's kernels, by ranks or on byte planes for 64,
 * else VQS_NARROW lanes of 64-bit leaf vectors (AVX2: QS-Ω blocks by ranks
 * where the plan has them). */
void qs_vqs_block_avx2(const qs_simd_kernel *k, unsigned lanes, const qs_model *m,
                       const qs_layout *L, const qs_block *B, uint64_t *v,
                       const double *const *xs, unsigned nreal, double *acc, float *accf);
void qs_vqs_block_avx512(const qs_simd_kernel *k, unsigned lanes, const qs_model *m,
                         const qs_layout *L, const qs_block *B, uint64_t *v,
                         const double *const *xs, unsigned nreal, double *acc, float *accf);
/* Their lanes functions (qs_simd_kernel.lanes: qs_vqs_lanes with the
 * ISA's small-batch lanes). */
unsigned qs_vqs_lanes_avx2(unsigned level, const qs_block *B, uint32_t n);
unsigned qs_vqs_lanes_avx512(unsigned level, const qs_block *B, uint32_t n);

#endif
