/* vqs_avx512.c: the vQS kernels with AVX-512 (F, DQ, CD, VL, BW, with AVX2,
 * FMA, BMI1, BMI2, LZCNT): the template vqs_kernel.h on 512-bit vectors and
 * mask registers (one operation per byte plane of 64 documents, a set of
 * documents a __mmask64), and its primitives. */
#include "score/x86/vqs.h"

#if QS_VQS_HAVE_KERNELS
#include "score/x86/vqs_common.h"

#include <immintrin.h>

#define VQS_ATTR                                                                               \
    __attribute__((target("avx512f,avx512dq,avx512cd,avx512vl,avx512bw,avx2,fma,bmi,bmi2,lzcnt")))
#define VQS_FN(name) name##_avx512

/* ---- small batches: 8 lanes of 64-bit leaf vectors */

#define VQS_NARROW 8u
#define VQS_NARROW_ONES(p) _mm512_store_si512((__m512i *)(p), _mm512_set1_epi64(-1))
#define VQS_NARROW_AND _mm512_mask_and_epi64
/* The false nodes of one group for the lanes in mask k, entries [i, end). */
#define VQS_NARROW_APPLY(OP, k, i0, end)                                                       \
    for (uint32_t i = (i0); i < (end); i++) {                                                  \
        __m512i *p = (__m512i *)(v + (size_t)etree[i] * 8);                                    \
        *p = OP(*p, (__mmask8)(k), *p, _mm512_set1_epi64((long long)emask[i]));                \
    }

/* The sums: one class, the 8 documents side by side, each in tree order;
 * else lane by lane. */
VQS_ATTR BP_INLINE void narrow_sums_avx512(const qs_model *m, const qs_layout *L,
                                           const qs_block *B, const uint64_t *v,
                                           const double *const *xs, unsigned nreal, double *acc,
                                           float *accf)
{
    if (m->num_classes != 1 || m->node_linear) {
        lanes_leaves(m, L, B, v, xs, 8, nreal, acc, accf);
        return;
    }
    const uint32_t nt = (uint32_t)(B->tree_end - B->tree_begin);
    const __mmask8 real = (__mmask8)((1u << nreal) - 1);
    const uint32_t *nl = L->nleaves + B->tree_begin;
    const uint64_t *off = L->leaf_off + B->tree_begin;
    const int mode = m->float_accumulate;
    __m512d a = _mm512_maskz_loadu_pd(real, acc);
    __m256 af = _mm256_maskz_loadu_ps(real, accf);
    for (uint32_t i = 0; i < nt; i++) {
        __m512i r = _mm512_load_si512((const __m512i *)(v + (size_t)i * 8)), idx;
        r = _mm512_or_si512(r, _mm512_set1_epi64((long long)(1ull << (nl[i] - 1))));
        __m512i low = _mm512_and_si512(r, _mm512_sub_epi64(_mm512_setzero_si512(), r));
        idx = _mm512_sub_epi64(_mm512_set1_epi64(63), _mm512_lzcnt_epi64(low));
        idx = _mm512_add_epi64(idx, _mm512_set1_epi64((long long)off[i]));
        __m512d c = _mm512_i64gather_pd(idx, L->leaves, 8);
        switch (mode) {
        case QS_ACC_DOUBLE: a = _mm512_add_pd(a, c); break;
        case QS_ACC_FLOAT: af = _mm256_add_ps(af, _mm512_cvtpd_ps(c)); break;
        default: af = _mm512_cvtpd_ps(_mm512_add_pd(_mm512_cvtps_pd(af), c)); break;
        }
    }
    _mm512_mask_storeu_pd(acc, real, a);
    _mm256_mask_storeu_ps(accf, real, af);
}

/* ---- byte planes: a set of documents is a mask register */

#define VQS_SET uint64_t
/* Groups of at most this many sorted entries are scanned by comparing
 * each entry with the 64 documents' values at once; longer ones by a
 * binary search per document.  (Measured: the scan is 5x faster on
 * oblivious models, whose groups are short; 128 to 8192 tie on 1,000 x 64
 * leaves; 2048 best on 1,000 x 256.) */
#define VQS_SCAN_MAX 2048u

VQS_ATTR BP_INLINE uint64_t bp_set_avx512(uint64_t k)
{
    return k;
}

/* The entries [i0, end) to the lanes of k: one masked AND (QS) or OR
 * (QS-Ω) per plane an entry changes, from the plan's per-plane operations
 * (xop; 10-15% faster than per entry on Zen 5, 1,000 x 8 and x 64 leaves:
 * no entry updates one plane twice, a store-to-load dependency).  Else per
 * entry: QS, its first and last plane ANDed unconditionally (the same one,
 * twice, for most nodes: AND is idempotent), so the loop has no
 * data-dependent branch, planes between them, rarely, after; QS-Ω, its
 * level's bit ORed into the low or the high byte plane (both for a mask
 * spanning the two, which a layout of one bit per level never has). */
VQS_ATTR BP_INLINE void bp_apply_avx512(const qs_vqs_plan *P, uint8_t *v, uint64_t k, uint32_t i0,
                                        uint32_t end, int omega)
{
    if (P->xop.off) {
        const uint32_t *op = P->xop.off;
        const uint8_t *ob = P->xop.byte;
        const uint64_t j1 = P->xop.idx[end];
        if (omega) {
            for (uint64_t j = P->xop.idx[i0]; j < j1; j++) {
                __m512i *q = (__m512i *)(v + op[j]);
                *q = _mm512_or_si512(*q, _mm512_maskz_set1_epi8(k, (char)ob[j]));
            }
            return;
        }
        const __m512i ones = _mm512_set1_epi8(-1);
        for (uint64_t j = P->xop.idx[i0]; j < j1; j++) {
            __m512i *q = (__m512i *)(v + op[j]);
            *q = _mm512_and_si512(*q, _mm512_mask_set1_epi8(ones, k, (char)ob[j]));
        }
        return;
    }
    if (omega) {
        for (uint32_t i = i0; i < end; i++) {
            const uint64_t o = P->bp.off[i];
            const uint32_t oa = (uint32_t)o, ob = (uint32_t)(o >> 32), by = P->bp.bytes[i];
            __m512i *pa = (__m512i *)(v + oa);
            *pa = _mm512_or_si512(*pa, _mm512_maskz_set1_epi8(k, (char)by));
            if (__builtin_expect(ob != oa, 0)) { /* never, for the layouts qs builds */
                __m512i *pb = (__m512i *)(v + ob);
                *pb = _mm512_or_si512(*pb, _mm512_maskz_set1_epi8(k, (char)(by >> 8)));
            }
        }
        return;
    }
    const __m512i ones = _mm512_set1_epi8(-1);
    for (uint32_t i = i0; i < end; i++) {
        const uint64_t o = P->bp.off[i];
        const uint32_t oa = (uint32_t)o, ob = (uint32_t)(o >> 32), by = P->bp.bytes[i];
        __m512i *pa = (__m512i *)(v + oa);
        *pa = _mm512_and_si512(*pa, _mm512_mask_set1_epi8(ones, k, (char)by));
        __m512i *pb = (__m512i *)(v + ob);
        *pb = _mm512_and_si512(*pb, _mm512_mask_set1_epi8(ones, k, (char)(by >> 8)));
        for (uint32_t j = oa + 64; j < ob; j += 64) {
            __m512i *p = (__m512i *)(v + j);
            *p = _mm512_and_si512(*p, _mm512_mask_set1_epi8(ones, k, 0));
        }
    }
}

/* A group's 64 values in 8 registers. */
typedef struct {
    __m512d q[8];
} vqs_xv_avx512;
#define VQS_XV vqs_xv_avx512

/* The group's value rule, 8 lanes at a time. */
VQS_ATTR BP_INLINE uint64_t bp_rule_avx512(unsigned rule, const double *xr, VQS_XV *xv)
{
    uint64_t sp = 0;
    for (unsigned q = 0; q < 8; q++) {
        __m512d x = _mm512_load_pd(xr + 8 * q);
        const __mmask8 nan = _mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q);
        if (rule == QS_RULE_NAN) {
            sp |= (uint64_t)nan << (8 * q);
        } else {
            x = _mm512_mask_mov_pd(x, nan, _mm512_setzero_pd());
            if (rule == QS_RULE_ZERO)
                sp |= (uint64_t)(_mm512_cmp_pd_mask(x, _mm512_set1_pd(-QS_ZERO_BAND), _CMP_GE_OQ) &
                                 _mm512_cmp_pd_mask(x, _mm512_set1_pd(QS_ZERO_BAND), _CMP_LE_OQ))
                      << (8 * q);
        }
        xv->q[q] = x;
    }
    return sp;
}

VQS_ATTR BP_INLINE const double *bp_values_avx512(const VQS_XV *xv, double *buf)
{
    for (unsigned q = 0; q < 8; q++)
        _mm512_storeu_pd(buf + 8 * q, xv->q[q]);
    return buf;
}

#define VQS_CMP64(t, xv, CMP)                                                                  \
    ((uint64_t)_mm512_cmp_pd_mask(_mm512_set1_pd(t), (xv)->q[0], CMP) |                        \
     (uint64_t)_mm512_cmp_pd_mask(_mm512_set1_pd(t), (xv)->q[1], CMP) << 8 |                   \
     (uint64_t)_mm512_cmp_pd_mask(_mm512_set1_pd(t), (xv)->q[2], CMP) << 16 |                  \
     (uint64_t)_mm512_cmp_pd_mask(_mm512_set1_pd(t), (xv)->q[3], CMP) << 24 |                  \
     (uint64_t)_mm512_cmp_pd_mask(_mm512_set1_pd(t), (xv)->q[4], CMP) << 32 |                  \
     (uint64_t)_mm512_cmp_pd_mask(_mm512_set1_pd(t), (xv)->q[5], CMP) << 40 |                  \
     (uint64_t)_mm512_cmp_pd_mask(_mm512_set1_pd(t), (xv)->q[6], CMP) << 48 |                  \
     (uint64_t)_mm512_cmp_pd_mask(_mm512_set1_pd(t), (xv)->q[7], CMP) << 56)

/* A long group's segments: the lanes still running past cur by 4 compares
 * of their 32-bit ends, the next end their minimum. */
VQS_ATTR BP_INLINE void bp_segments_avx512(const qs_vqs_plan *P, uint8_t *v, const uint32_t *e,
                                           uint32_t begin, uint32_t n, int omega)
{
    (void)n;
    const __m512i E0 = _mm512_loadu_si512(e), E1 = _mm512_loadu_si512(e + 16),
                  E2 = _mm512_loadu_si512(e + 32), E3 = _mm512_loadu_si512(e + 48);
    const __m512i none = _mm512_set1_epi32(-1);
    for (uint32_t cur = begin;;) {
        const __m512i c = _mm512_set1_epi32((int)cur);
        const __mmask16 k0 = _mm512_cmpgt_epu32_mask(E0, c), k1 = _mm512_cmpgt_epu32_mask(E1, c),
                        k2 = _mm512_cmpgt_epu32_mask(E2, c), k3 = _mm512_cmpgt_epu32_mask(E3, c);
        const uint64_t k = (uint64_t)k0 | (uint64_t)k1 << 16 | (uint64_t)k2 << 32 |
                           (uint64_t)k3 << 48;
        if (!k)
            break;
        const __m512i mn = _mm512_min_epu32(
            _mm512_min_epu32(_mm512_mask_mov_epi32(none, k0, E0), _mm512_mask_mov_epi32(none, k1, E1)),
            _mm512_min_epu32(_mm512_mask_mov_epi32(none, k2, E2), _mm512_mask_mov_epi32(none, k3, E3)));
        const uint32_t next = _mm512_reduce_min_epu32(mn);
        bp_apply_avx512(P, v, k, cur, next, omega);
        cur = next;
    }
}

/* One class: the 64 documents' sums in 8 + 8 registers across the block. */
typedef struct {
    __m512d a[8];
    __m256 af[8];
} vqs_acc_avx512;
#define VQS_ACC vqs_acc_avx512

/* The lanes of the q-th group of 8 that hold real documents. */
static inline __mmask8 bp_real(unsigned q, unsigned nreal)
{
    const unsigned r0 = q * 8;
    return r0 >= nreal ? 0 : nreal - r0 >= 8 ? 0xFF : (__mmask8)((1u << (nreal - r0)) - 1);
}

VQS_ATTR BP_INLINE int bp_acc_load_avx512(VQS_ACC *A, uint32_t K, const double *acc,
                                          const float *accf, unsigned nreal)
{
    if (K != 1)
        return 0;
    for (unsigned q = 0; q < 8; q++) {
        A->a[q] = _mm512_maskz_loadu_pd(bp_real(q, nreal), acc + q * 8);
        A->af[q] = _mm256_maskz_loadu_ps(bp_real(q, nreal), accf + q * 8);
    }
    return 1;
}

VQS_ATTR BP_INLINE void bp_acc_store_avx512(const VQS_ACC *A, double *acc, float *accf,
                                            unsigned nreal)
{
    for (unsigned q = 0; q < 8; q++) {
        _mm512_mask_storeu_pd(acc + q * 8, bp_real(q, nreal), A->a[q]);
        _mm256_mask_storeu_ps(accf + q * 8, bp_real(q, nreal), A->af[q]);
    }
}

/* Lowest set bit of each byte (8 for a zero byte). */
VQS_ATTR static inline __m512i bp_ctz8(__m512i p)
{
    const __m512i tz4 = _mm512_broadcast_i32x4(
        _mm_setr_epi8(8, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0));
    const __m512i lo = _mm512_and_si512(p, _mm512_set1_epi8(0x0F));
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(p, 4), _mm512_set1_epi8(0x0F));
    return _mm512_min_epu8(_mm512_shuffle_epi8(tz4, lo),
                           _mm512_add_epi8(_mm512_shuffle_epi8(tz4, hi), _mm512_set1_epi8(4)));
}

/* A tree's exit leaves: QS, each document's lowest nonzero plane (b1) and
 * its lowest bit there (b0), the planes in turn until every document has
 * one; QS-Ω, the two planes as they are. */
VQS_ATTR BP_INLINE void bp_exit_avx512(uint8_t *r, int omega, uint32_t nli, uint32_t planes, int one,
                                       uint8_t *lb0, uint8_t *lb1)
{
    __m512i b0, b1;
    if (omega) {
        b0 = _mm512_load_si512((const __m512i *)r);
        b1 = _mm512_load_si512((const __m512i *)(r + 64));
    } else {
        const uint32_t last = nli - 1;
        __m512i *lp = (__m512i *)(r + (size_t)(last >> 3) * 64);
        *lp = _mm512_or_si512(*lp, _mm512_set1_epi8((char)(1u << (last & 7))));
        b0 = b1 = _mm512_setzero_si512();
        __mmask64 done = 0;
        for (uint32_t j = 0; j < planes && done != ~0ull; j++) {
            const __m512i p = _mm512_load_si512((const __m512i *)(r + (size_t)j * 64));
            const __mmask64 nz = _mm512_test_epi8_mask(p, p) & ~done;
            b0 = _mm512_mask_mov_epi8(b0, nz, bp_ctz8(p));
            b1 = _mm512_mask_mov_epi8(b1, nz, _mm512_set1_epi8((char)j));
            done |= nz;
        }
    }
    /* b1 < 32 where one: the 16-bit shift moves no bit across a byte */
    if (one && !omega)
        b0 = _mm512_add_epi8(b0, _mm512_slli_epi16(b1, 3));
    _mm512_store_si512((__m512i *)lb0, b0);
    if (!one)
        _mm512_store_si512((__m512i *)lb1, b1);
}

/* Tree t's contributions, 8 documents at a time: trees of at most 16
 * leaves, their values in two registers, each document's picked by a
 * permutation (of the index's low 4 bits); else gathered. */
VQS_ATTR BP_INLINE void bp_sum_avx512(const qs_model *m, const qs_layout *L, const qs_vqs_plan *P,
                                      uint64_t t, int omega, int one, const uint8_t *lb0,
                                      const uint8_t *lb1, VQS_ACC *A, int regs, double *accT,
                                      float *accTf)
{
    (void)P;
    const uint32_t nli = L->nleaves[t];
    const uint64_t off = L->leaf_off[t];
    const int mode = m->float_accumulate;
    const __m512i shift = _mm512_set1_epi64(omega ? 8 : 3);
    const __m512i lmask = omega ? _mm512_set1_epi64((long long)(nli - 1)) : _mm512_set1_epi64(-1);
    const __m512i o = _mm512_set1_epi64((long long)off);
    const uint32_t cls = m->trees[t].class_id;
    const __m512d T0 = _mm512_maskz_loadu_pd(nli >= 8 ? 0xFF : (__mmask8)((1u << nli) - 1),
                                             L->leaves + off);
    const __m512d T1 =
        nli <= 8 ? T0
                 : _mm512_maskz_loadu_pd(nli >= 16 ? 0xFF : (__mmask8)((1u << (nli - 8)) - 1),
                                         L->leaves + off + 8);
#pragma GCC unroll 8
    for (unsigned q = 0; q < 8; q++) {
        __m512i leaf = _mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *)(lb0 + 8 * q)));
        __m512d c;
        if (nli <= 16) {
            c = _mm512_permutex2var_pd(T0, leaf, T1);
        } else {
            if (!one)
                leaf = _mm512_add_epi64(
                    _mm512_sllv_epi64(
                        _mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *)(lb1 + 8 * q))), shift),
                    leaf);
            c = _mm512_i64gather_pd(_mm512_add_epi64(o, _mm512_and_si512(leaf, lmask)), L->leaves, 8);
        }
        if (regs) {
            switch (mode) {
            case QS_ACC_DOUBLE: A->a[q] = _mm512_add_pd(A->a[q], c); break;
            case QS_ACC_FLOAT: A->af[q] = _mm256_add_ps(A->af[q], _mm512_cvtpd_ps(c)); break;
            default: A->af[q] = _mm512_cvtpd_ps(_mm512_add_pd(_mm512_cvtps_pd(A->af[q]), c)); break;
            }
            continue;
        }
        double *pa = accT + (size_t)cls * BP_LANES + q * 8;
        float *pf = accTf + (size_t)cls * BP_LANES + q * 8;
        switch (mode) {
        case QS_ACC_DOUBLE: _mm512_store_pd(pa, _mm512_add_pd(_mm512_load_pd(pa), c)); break;
        case QS_ACC_FLOAT:
            _mm256_store_ps(pf, _mm256_add_ps(_mm256_load_ps(pf), _mm512_cvtpd_ps(c)));
            break;
        default:
            _mm256_store_ps(pf, _mm512_cvtpd_ps(_mm512_add_pd(_mm512_cvtps_pd(_mm256_load_ps(pf)), c)));
            break;
        }
    }
}

/* By ranks, the end of plane k of np from the top (a: its bits): the top
 * plane gets the last leaf's bit, as the scalar kernels do; the lowest
 * nonzero plane so far is kept (sel, and its number b1). */
VQS_ATTR BP_INLINE void rk_fold_avx512(__m512i a, uint32_t k, uint32_t np, uint32_t last,
                                       __m512i *sel, __m512i *b1)
{
    if (k == 0)
        a = _mm512_or_si512(a, _mm512_set1_epi8((char)(1u << (last & 7))));
    const __mmask64 nz = _mm512_test_epi8_mask(a, a);
    *sel = _mm512_mask_mov_epi8(*sel, nz, a);
    *b1 = _mm512_mask_mov_epi8(*b1, nz, _mm512_set1_epi8((char)(np - 1 - k)));
}

/* By ranks, the exit leaves: the lowest bit of the lowest nonzero plane
 * (b1 < 8: the 16-bit shift moves no bit across a byte). */
VQS_ATTR BP_INLINE void rk_exit_avx512(__m512i sel, __m512i b1, uint8_t *lb0)
{
    _mm512_store_si512((__m512i *)lb0, _mm512_add_epi8(bp_ctz8(sel), _mm512_slli_epi16(b1, 3)));
}

/* By ranks: block B's table of masks (vqs_plan.h: rk.tb, rk.mt) from the
 * counts, where the plan has one: for each group, the documents whose
 * count passes each rank, and those of its special list.  1 when made. */
VQS_ATTR BP_INLINE int rk_table_avx512(const qs_vqs_plan *P, const qs_layout *L, const qs_block *B,
                                       const uint8_t *cnt, qs_vqs_u64a *tab)
{
    if (P->rk.ok[B - L->blocks] != 2)
        return 0;
    const uint32_t ng = B->group_end - B->group_begin;
    for (uint32_t g = B->group_begin; g < B->group_end; g++) {
        const uint32_t r = g - B->group_begin, nu = P->rk.uoff[g + 1] - P->rk.uoff[g];
        const __m512i C = _mm512_load_si512((const __m512i *)(cnt + (size_t)r * 64));
        qs_vqs_u64a *t = tab + P->rk.tb[g];
        for (uint32_t k = 0; k < nu; k++)
            t[k] = _mm512_cmpgt_epi8_mask(C, _mm512_set1_epi8((char)(k ^ 0x80u)));
        const __m512i S = _mm512_load_si512((const __m512i *)(cnt + (size_t)(ng + r) * 64));
        t[nu] = L->groups[g].sp_end > L->groups[g].sp_begin
                    ? _mm512_cmpgt_epi8_mask(S, _mm512_set1_epi8((char)0x80))
                    : 0;
    }
    return 1;
}

/* By ranks, with the table: a tree's exit leaves as rk_tree_avx512's, each
 * operation's documents the table's mask at its index (bits 0-23). */
VQS_ATTR BP_INLINE const uint32_t *rk_tree_mt_avx512(const qs_vqs_u64a *tab, const uint32_t *op,
                                                     const uint8_t *pn, const uint8_t *ps, int spany,
                                                     uint32_t nl, uint8_t *lb0)
{
    const uint32_t last = nl - 1, np = last / 8 + 1;
    __m512i sel = _mm512_setzero_si512(), b1 = _mm512_setzero_si512();
    for (uint32_t k = 0; k < np; k++) {
        __m512i a = _mm512_set1_epi8(-1), a2 = a;
        /* the sorted entries', then (when a document takes a special
         * list) the special ones', two at a time */
        const uint32_t *o = op, *end = op + pn[k] + (spany ? ps[k] : 0);
        for (; o != end; o += 2) {
            const __mmask64 f = _cvtu64_mask64(tab[o[0] & 0xFFFFFFu]),
                            f2 = _cvtu64_mask64(tab[o[1] & 0xFFFFFFu]);
            a = _mm512_andnot_si512(_mm512_maskz_set1_epi8(f, (char)((const uint8_t *)o)[3]), a);
            a2 = _mm512_andnot_si512(_mm512_maskz_set1_epi8(f2, (char)((const uint8_t *)o)[7]), a2);
        }
        a = _mm512_and_si512(a, a2);
        op += pn[k] + ps[k];
        rk_fold_avx512(a, k, np, last, &sel, &b1);
    }
    rk_exit_avx512(sel, b1, lb0);
    return op;
}

/* By ranks: a tree's exit leaves (its leaf index, a byte a document, to
 * lb0) from its operations op (vqs_plan.h, rk.op), pn[k] then ps[k] of
 * them for its k-th plane from the top (the latter, of special entries,
 * only when spany), and the rows of counts cnt; returns the next
 * tree's operations.  Each plane in a register: all ones, less, for each
 * operation, its byte's complement in the documents whose count passes
 * its rank (the top plane then gets the last leaf's bit, as the scalar
 * kernels do); the lowest nonzero plane kept as it comes (sel, and its
 * number b1). */
VQS_ATTR BP_INLINE const uint32_t *rk_tree_avx512(const uint8_t *cnt, const uint32_t *op,
                                                  const uint8_t *pn, const uint8_t *ps, int spany,
                                                  uint32_t nl, uint8_t *lb0)
{
    const uint32_t last = nl - 1, np = last / 8 + 1;
    __m512i sel = _mm512_setzero_si512(), b1 = _mm512_setzero_si512();
    for (uint32_t k = 0; k < np; k++) {
        __m512i a = _mm512_set1_epi8(-1), a2 = a;
        const uint8_t *ob = (const uint8_t *)op, *end = ob + 4 * (pn[k] + (spany ? ps[k] : 0));
        for (; ob != end; ob += 8) {
            const __m512i C = _mm512_load_si512((const __m512i *)(cnt + (size_t)(*(const qs_vqs_u16a *)(const void *)ob) * 8)),
                          C2 = _mm512_load_si512((const __m512i *)(cnt + (size_t)(*(const qs_vqs_u16a *)(const void *)(ob + 4)) * 8));
            const __mmask64 f = _mm512_cmplt_epi8_mask(_mm512_set1_epi8((char)ob[2]), C),
                            f2 = _mm512_cmplt_epi8_mask(_mm512_set1_epi8((char)ob[6]), C2);
            a = _mm512_andnot_si512(_mm512_maskz_set1_epi8(f, (char)ob[3]), a);
            a2 = _mm512_andnot_si512(_mm512_maskz_set1_epi8(f2, (char)ob[7]), a2);
        }
        a = _mm512_and_si512(a, a2);
        op += pn[k] + ps[k];
        rk_fold_avx512(a, k, np, last, &sel, &b1);
    }
    rk_exit_avx512(sel, b1, lb0);
    return op;
}

/* By ranks, one class: tree t's contributions (exit leaves lb0, leaf
 * index bytes) added to the sums in registers, 8 documents at a time,
 * each picked from the tree's leaf values held in registers by
 * permutations (16 values a permutation, then blends on the index's bits
 * 4 and 5) instead of a gather; the accumulation mode's one IEEE
 * operation, as qs_layout_add_leaf's. */
#define RK_SUM_LOOP(ACC)                                                                       \
    for (unsigned q = 0; q < 8; q++) {                                                         \
        const __m512i ix = _mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *)(lb0 + 8 * q))); \
        __m512d c = _mm512_permutex2var_pd(T[0], ix, T[1]);                                    \
        if (nq > 1) {                                                                          \
            const __mmask8 b4 = _mm512_test_epi64_mask(ix, _mm512_set1_epi64(16));             \
            c = _mm512_mask_blend_pd(b4, c, _mm512_permutex2var_pd(T[2], ix, T[3]));           \
            if (nq > 2) {                                                                      \
                __m512d d = _mm512_mask_blend_pd(b4, _mm512_permutex2var_pd(T[4], ix, T[5]),   \
                                                 _mm512_permutex2var_pd(T[6], ix, T[7]));      \
                c = _mm512_mask_blend_pd(_mm512_test_epi64_mask(ix, _mm512_set1_epi64(32)), c, \
                                         d);                                                   \
            }                                                                                  \
        }                                                                                      \
        ACC;                                                                                   \
    }

VQS_ATTR BP_INLINE void rk_sum_avx512(const qs_model *m, const qs_layout *L, uint64_t t,
                                      const uint8_t *lb0, VQS_ACC *A)
{
    const uint32_t nli = L->nleaves[t];
    const double *lv = L->leaves + L->leaf_off[t];
    __m512d T[8];
    for (unsigned j = 0; j < 8; j++) {
        const uint32_t have = nli > 8 * j ? nli - 8 * j : 0;
        T[j] = _mm512_maskz_loadu_pd(have >= 8 ? 0xFF : (__mmask8)((1u << have) - 1), lv + 8 * j);
    }
    /* tables of 16 values: 1, 2 or 4 (the blends pick among them) */
    const unsigned nq = nli <= 16 ? 1 : nli <= 32 ? 2 : 4;
    switch (m->float_accumulate) {
    case QS_ACC_DOUBLE: RK_SUM_LOOP(A->a[q] = _mm512_add_pd(A->a[q], c)) break;
    case QS_ACC_FLOAT: RK_SUM_LOOP(A->af[q] = _mm256_add_ps(A->af[q], _mm512_cvtpd_ps(c))) break;
    default:
        RK_SUM_LOOP(A->af[q] = _mm512_cvtpd_ps(_mm512_add_pd(_mm512_cvtps_pd(A->af[q]), c)))
        break;
    }
}
#undef RK_SUM_LOOP
/* ---- categorical features: one feature's lookups (vqs_plan.h, cv)
 * applied to the 64 documents' planes: idx the documents' shuffle indices
 * (vqs_common.h, lane_classes), tr[0 .. nt) its trees, tab their tables
 * (planes of nq * 16 bytes each); one vpshufb a quarter of the lookup for
 * the 64 documents, the quarters ORed, one AND a plane. */
VQS_ATTR static void cat_apply_avx512(const uint8_t idx[4][64], uint32_t nq, const uint32_t *tr,
                                      uint64_t nt, const uint8_t *tab, uint8_t *v, size_t row,
                                      uint32_t planes)
{
    const __m512i i0 = _mm512_load_si512(idx[0]), i1 = _mm512_load_si512(idx[1]),
                  i2 = _mm512_load_si512(idx[2]), i3 = _mm512_load_si512(idx[3]);
    const size_t step = (size_t)nq * 16;
#define LOOKUP512(q, iq)                                                                       \
    _mm512_shuffle_epi8(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(tab + 16 * (q)))), iq)
    for (uint64_t k = 0; k < nt; k++) {
        uint8_t *p = v + (size_t)tr[k] * row;
        for (uint32_t j = 0; j < planes; j++, tab += step) {
            __m512i g = LOOKUP512(0, i0);
            if (nq > 1)
                g = _mm512_or_si512(g, LOOKUP512(1, i1));
            if (nq > 2)
                g = _mm512_or_si512(g, LOOKUP512(2, i2));
            if (nq > 3)
                g = _mm512_or_si512(g, LOOKUP512(3, i3));
            __m512i *q = (__m512i *)(void *)(p + (size_t)j * 64);
            _mm512_store_si512(q, _mm512_and_si512(_mm512_load_si512(q), g));
        }
    }
#undef LOOKUP512
}

#define VQS_RK_SUM 1
#define VQS_RK_TABLE 1

#include "score/x86/vqs_kernel.h"

#endif /* QS_VQS_HAVE_KERNELS */
