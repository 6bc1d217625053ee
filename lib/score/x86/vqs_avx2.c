/* vqs_avx2.c: the vQS kernels with AVX2 (and FMA, BMI1, BMI2): the
 * template vqs_kernel.h with each 512-bit step of the byte planes done as
 * two 256-bit ones and the document sets, for want of mask registers, as
 * byte vectors (0xFF for a document in the set); the sums always go
 * through the class-major accumulators.  Also QS-Ω by ranks (block_om),
 * which AVX2 runs instead of the byte planes where the plan has it. */
#include "score/x86/vqs.h"

#if QS_VQS_HAVE_KERNELS
#include "score/x86/vqs_common.h"

#include <immintrin.h>

#define VQS_ATTR __attribute__((target("avx2,fma,bmi,bmi2")))
#define VQS_FN(name) name##_avx2

/* ---- small batches: 4 lanes of 64-bit leaf vectors */

/* AVX2 has no mask registers: the lanes to update are all-ones words c;
 * AND: row &= ~(c & ~mask). */
#define OP256_AND(row, c, mk) _mm256_andnot_si256(_mm256_andnot_si256(mk, c), row)

/* Lane bit set -> all-ones 64-bit lanes. */
static const int64_t lane_masks4[16][4] __attribute__((aligned(32))) = {
    { 0, 0, 0, 0 },    { -1, 0, 0, 0 },    { 0, -1, 0, 0 },    { -1, -1, 0, 0 },
    { 0, 0, -1, 0 },   { -1, 0, -1, 0 },   { 0, -1, -1, 0 },   { -1, -1, -1, 0 },
    { 0, 0, 0, -1 },   { -1, 0, 0, -1 },   { 0, -1, 0, -1 },   { -1, -1, 0, -1 },
    { 0, 0, -1, -1 },  { -1, 0, -1, -1 },  { 0, -1, -1, -1 },  { -1, -1, -1, -1 },
};

#define VQS_NARROW_APPLY(OP, k, i0, end)                                                               \
    do {                                                                                       \
        const __m256i km = _mm256_load_si256((const __m256i *)lane_masks4[k]);                 \
        for (uint32_t i = (i0); i < (end); i++) {                                              \
            __m256i *p = (__m256i *)(v + (size_t)etree[i] * 4);                                \
            *p = OP(*p, km, _mm256_set1_epi64x((long long)emask[i]));                          \
        }                                                                                      \
    } while (0)

#define VQS_NARROW 4u
#define VQS_NARROW_ONES(p) _mm256_store_si256((__m256i *)(p), _mm256_set1_epi64x(-1))
#define VQS_NARROW_AND OP256_AND

VQS_ATTR BP_INLINE void narrow_sums_avx2(const qs_model *m, const qs_layout *L, const qs_block *B,
                                         const uint64_t *v, const double *const *xs,
                                         unsigned nreal, double *acc, float *accf)
{
    lanes_leaves(m, L, B, v, xs, 4, nreal, acc, accf);
}

/* ---- byte planes: a set of documents is two byte vectors */

/* 32 lanes' bits -> their bytes (byte i: 0xFF when bit i of k is set). */
VQS_ATTR BP_INLINE __m256i bp2_bytes(uint32_t k)
{
    const __m256i sel = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
                                         2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bits = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)k), sel);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bits), bits);
}

/* Plane p (64 bytes) &= the byte by in the lanes of K0:K1. */
VQS_ATTR BP_INLINE void bp2_and(uint8_t *p, __m256i K0, __m256i K1, uint32_t by)
{
    const __m256i c = _mm256_set1_epi8((char)by);
    __m256i *q = (__m256i *)p;
    q[0] = _mm256_andnot_si256(_mm256_andnot_si256(c, K0), q[0]);
    q[1] = _mm256_andnot_si256(_mm256_andnot_si256(c, K1), q[1]);
}

VQS_ATTR BP_INLINE void bp2_apply(const qs_vqs_plan *P, uint8_t *v, __m256i K0, __m256i K1,
                              uint32_t i0, uint32_t end)
{
    for (uint32_t i = i0; i < end; i++) {
        const uint64_t o = P->bp.off[i];
        const uint32_t oa = (uint32_t)o, ob = (uint32_t)(o >> 32), by = P->bp.bytes[i];
        bp2_and(v + oa, K0, K1, by & 0xFF);
        bp2_and(v + ob, K0, K1, by >> 8);
        for (uint32_t j = oa + 64; j < ob; j += 64)
            bp2_and(v + j, K0, K1, 0);
    }
}

VQS_ATTR BP_INLINE void bp2_apply_or(const qs_vqs_plan *P, uint8_t *v, __m256i K0, __m256i K1,
                                 uint32_t i0, uint32_t end)
{
    for (uint32_t i = i0; i < end; i++) {
        const uint64_t o = P->bp.off[i];
        const uint32_t oa = (uint32_t)o, ob = (uint32_t)(o >> 32), by = P->bp.bytes[i];
        __m256i *q = (__m256i *)(v + oa), c = _mm256_set1_epi8((char)by);
        q[0] = _mm256_or_si256(q[0], _mm256_and_si256(K0, c));
        q[1] = _mm256_or_si256(q[1], _mm256_and_si256(K1, c));
        if (__builtin_expect(ob != oa, 0)) {
            q = (__m256i *)(v + ob);
            c = _mm256_set1_epi8((char)(by >> 8));
            q[0] = _mm256_or_si256(q[0], _mm256_and_si256(K0, c));
            q[1] = _mm256_or_si256(q[1], _mm256_and_si256(K1, c));
        }
    }
}

/* Entries [i0, end) through their per-plane operations (xop): AND
 * clears, in the lanes of K0:K1, the bits the operation's byte lacks; OR
 * sets those it has. */
VQS_ATTR BP_INLINE void bp2_xapply(const qs_vqs_plan *P, uint8_t *v, __m256i K0, __m256i K1,
                               uint32_t i0, uint32_t end, int omega)
{
    const uint32_t *op = P->xop.off;
    const uint8_t *ob = P->xop.byte;
    const uint64_t j1 = P->xop.idx[end];
    if (omega) {
        for (uint64_t j = P->xop.idx[i0]; j < j1; j++) {
            __m256i *q = (__m256i *)(v + op[j]);
            const __m256i c = _mm256_set1_epi8((char)ob[j]);
            q[0] = _mm256_or_si256(q[0], _mm256_and_si256(K0, c));
            q[1] = _mm256_or_si256(q[1], _mm256_and_si256(K1, c));
        }
        return;
    }
#pragma GCC unroll 4
    for (uint64_t j = P->xop.idx[i0]; j < j1; j++) {
        __m256i *q = (__m256i *)(v + op[j]);
        const __m256i c = _mm256_set1_epi8((char)ob[j]);
        q[0] = _mm256_andnot_si256(_mm256_andnot_si256(c, K0), q[0]);
        q[1] = _mm256_andnot_si256(_mm256_andnot_si256(c, K1), q[1]);
    }
}

/* Lowest set bit of each byte (8 for a zero byte). */
VQS_ATTR BP_INLINE __m256i bp2_ctz8(__m256i p)
{
    const __m256i tz4 = _mm256_setr_epi8(8, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0, 8, 0, 1, 0,
                                         2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0);
    const __m256i lo = _mm256_and_si256(p, _mm256_set1_epi8(0x0F));
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(p, 4), _mm256_set1_epi8(0x0F));
    return _mm256_min_epu8(_mm256_shuffle_epi8(tz4, lo),
                           _mm256_add_epi8(_mm256_shuffle_epi8(tz4, hi), _mm256_set1_epi8(4)));
}

typedef struct {
    __m256i k0, k1; /* documents 0-31, 32-63 */
} vqs_set_avx2;
#define VQS_SET vqs_set_avx2

VQS_ATTR BP_INLINE vqs_set_avx2 bp_set_avx2(uint64_t k)
{
    const vqs_set_avx2 s = { bp2_bytes((uint32_t)k), bp2_bytes((uint32_t)(k >> 32)) };
    return s;
}

/* The entries [i0, end) to the set's documents: one operation per plane
 * where the plan has them, else per entry (first and last plane). */
VQS_ATTR BP_INLINE void bp_apply_avx2(const qs_vqs_plan *P, uint8_t *v, vqs_set_avx2 s, uint32_t i0,
                                      uint32_t end, int omega)
{
    if (P->xop.off)
        bp2_xapply(P, v, s.k0, s.k1, i0, end, omega);
    else if (omega)
        bp2_apply_or(P, v, s.k0, s.k1, i0, end);
    else
        bp2_apply(P, v, s.k0, s.k1, i0, end);
}

/* Groups longer than VQS_SCAN_MAX entries and at most BP2_ENDS16_MAX:
 * each lane's run end found first (binary search, the 64 lanes in
 * lockstep so that their loads overlap), as 16-bit offsets from the
 * group's start, then the entries applied segment by segment, each
 * segment's lanes (those whose run goes past its start) found by 4 vector
 * compares of the ends; the scan costs 16 double compares per entry
 * instead.  Shorter groups are scanned; longer ones keep 32-bit ends. */
#define VQS_SCAN_MAX 8u
#define BP2_ENDS16_MAX 32767u

/* The entries of a group (from entry `base`) for runs ending at e16[l]
 * (entries base .. base + e16[l] - 1 are false for lane l): from each end
 * to the next, the lanes still running, as byte masks. */
VQS_ATTR BP_INLINE void bp2_segments(const qs_vqs_plan *P, uint8_t *v, const uint16_t *e16,
                                 uint32_t base, int omega)
{
    const __m256i E0 = _mm256_load_si256((const __m256i *)e16),
                  E1 = _mm256_load_si256((const __m256i *)(e16 + 16)),
                  E2 = _mm256_load_si256((const __m256i *)(e16 + 32)),
                  E3 = _mm256_load_si256((const __m256i *)(e16 + 48));
    for (uint32_t cur = 0;;) {
        const __m256i c = _mm256_set1_epi16((short)cur);
        const __m256i g0 = _mm256_cmpgt_epi16(E0, c), g1 = _mm256_cmpgt_epi16(E1, c),
                      g2 = _mm256_cmpgt_epi16(E2, c), g3 = _mm256_cmpgt_epi16(E3, c);
        const __m256i any = _mm256_or_si256(_mm256_or_si256(g0, g1), _mm256_or_si256(g2, g3));
        if (_mm256_testz_si256(any, any))
            break;
        /* the nearest end past cur: the others (and the ended lanes, as
         * 0xFFFF) out of the unsigned minimum */
        const __m256i m = _mm256_min_epu16(
            _mm256_min_epu16(_mm256_or_si256(E0, _mm256_xor_si256(g0, _mm256_set1_epi8(-1))),
                             _mm256_or_si256(E1, _mm256_xor_si256(g1, _mm256_set1_epi8(-1)))),
            _mm256_min_epu16(_mm256_or_si256(E2, _mm256_xor_si256(g2, _mm256_set1_epi8(-1))),
                             _mm256_or_si256(E3, _mm256_xor_si256(g3, _mm256_set1_epi8(-1)))));
        const __m128i m8 = _mm_min_epu16(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
        const uint32_t next = (uint32_t)_mm_cvtsi128_si32(_mm_minpos_epu16(m8)) & 0xFFFFu;
        /* 16-bit lanes -> bytes, in lane order (packs interleaves the
         * 128-bit halves) */
        const __m256i K0 = _mm256_permute4x64_epi64(_mm256_packs_epi16(g0, g1), 0xD8),
                      K1 = _mm256_permute4x64_epi64(_mm256_packs_epi16(g2, g3), 0xD8);
        const vqs_set_avx2 s = { K0, K1 };
        bp_apply_avx2(P, v, s, base + cur, base + next, omega);
        cur = next;
    }
}

/* A long group's segments: with 16-bit ends (bp2_segments) where they fit,
 * else the lanes still running found one by one. */
VQS_ATTR BP_INLINE void bp_segments_avx2(const qs_vqs_plan *P, uint8_t *v, const uint32_t *e,
                                         uint32_t begin, uint32_t n, int omega)
{
    if (n <= BP2_ENDS16_MAX) {
        uint16_t e16[BP_LANES] __attribute__((aligned(32)));
        for (unsigned l = 0; l < BP_LANES; l++)
            e16[l] = (uint16_t)(e[l] - begin);
        bp2_segments(P, v, e16, begin, omega);
        return;
    }
    for (uint32_t cur = begin;;) {
        uint64_t k = 0;
        uint32_t next = UINT32_MAX;
        for (unsigned l = 0; l < BP_LANES; l++)
            if (e[l] > cur) {
                k |= 1ull << l;
                next = e[l] < next ? e[l] : next;
            }
        if (!k)
            break;
        bp_apply_avx2(P, v, bp_set_avx2(k), cur, next, omega);
        cur = next;
    }
}

/* A group's value rule on 64 documents' values x (qs_group_special): the
 * values to compare into out (NaN read as 0.0 unless the rule is NaN's;
 * out may be x), and the documents that take the special-value list. */
VQS_ATTR BP_INLINE uint64_t bp2_rule64(unsigned rule, const double *x, double *out)
{
    uint64_t sp = 0;
    for (unsigned q = 0; q < 16; q++) {
        __m256d v = _mm256_load_pd(x + 4 * q);
        const __m256d nan = _mm256_cmp_pd(v, v, _CMP_UNORD_Q);
        if (rule == QS_RULE_NAN) {
            sp |= (uint64_t)_mm256_movemask_pd(nan) << (4 * q);
        } else {
            v = _mm256_andnot_pd(nan, v);
            if (rule == QS_RULE_ZERO)
                sp |= (uint64_t)_mm256_movemask_pd(_mm256_and_pd(
                          _mm256_cmp_pd(v, _mm256_set1_pd(-QS_ZERO_BAND), _CMP_GE_OQ),
                          _mm256_cmp_pd(v, _mm256_set1_pd(QS_ZERO_BAND), _CMP_LE_OQ)))
                      << (4 * q);
        }
        _mm256_store_pd(out + 4 * q, v);
    }
    return sp;
}

/* A group's 64 values, as bp2_rule64 leaves them. */
typedef struct {
    double x[BP_LANES] __attribute__((aligned(32)));
} vqs_xv_avx2;
#define VQS_XV vqs_xv_avx2

VQS_ATTR BP_INLINE uint64_t bp_rule_avx2(unsigned rule, const double *xr, vqs_xv_avx2 *xv)
{
    return bp2_rule64(rule, xr, xv->x);
}

VQS_ATTR BP_INLINE const double *bp_values_avx2(const vqs_xv_avx2 *xv, double *buf)
{
    (void)buf;
    return xv->x;
}

/* The documents for which CMP(t, x) holds, 4 per compare. */
#define VQS_CMP64(t, xv, CMP)                                                                  \
    __extension__({                                                                            \
        const __m256d t_ = _mm256_set1_pd(t);                                                  \
        uint64_t k_ = 0;                                                                       \
        for (unsigned q_ = 0; q_ < 16; q_++)                                                   \
            k_ |= (uint64_t)_mm256_movemask_pd(                                                \
                      _mm256_cmp_pd(t_, _mm256_load_pd((xv)->x + 4 * q_), CMP))                \
                  << (4 * q_);                                                                 \
        k_;                                                                                    \
    })

/* No sums in registers: always the class-major accumulators. */
typedef struct {
    int none;
} vqs_acc_avx2;
#define VQS_ACC vqs_acc_avx2

VQS_ATTR BP_INLINE int bp_acc_load_avx2(vqs_acc_avx2 *A, uint32_t K, const double *acc,
                                        const float *accf, unsigned nreal)
{
    (void)A, (void)K, (void)acc, (void)accf, (void)nreal;
    return 0;
}

VQS_ATTR BP_INLINE void bp_acc_store_avx2(const vqs_acc_avx2 *A, double *acc, float *accf,
                                          unsigned nreal)
{
    (void)A, (void)acc, (void)accf, (void)nreal;
}

/* A tree's exit leaves, 32 documents at a time: QS, the lowest nonzero
 * plane up to the last leaf's (which has that leaf's bit), from the top
 * down, each nonzero plane replacing the one above it, then its lowest
 * bit; QS-Ω, the two planes as they are. */
VQS_ATTR BP_INLINE void bp_exit_avx2(uint8_t *r, int omega, uint32_t nli, uint32_t planes, int one,
                                     uint8_t *lb0, uint8_t *lb1)
{
    (void)planes;
    if (omega) {
        memcpy(lb0, r, BP_LANES);
        memcpy(lb1, r + 64, BP_LANES);
        return;
    }
    const uint32_t last = nli - 1;
    uint8_t *lp = r + (size_t)(last >> 3) * 64;
    for (unsigned h = 0; h < 2; h++) {
        __m256i *q = (__m256i *)(lp + 32 * h);
        *q = _mm256_or_si256(*q, _mm256_set1_epi8((char)(1u << (last & 7))));
    }
    for (unsigned h = 0; h < 2; h++) {
        __m256i sel = _mm256_setzero_si256(), b1 = _mm256_setzero_si256();
        for (uint32_t j = (last >> 3) + 1; j-- > 0;) {
            const __m256i p = _mm256_load_si256((const __m256i *)(r + (size_t)j * 64 + 32 * h));
            const __m256i zero = _mm256_cmpeq_epi8(p, _mm256_setzero_si256());
            sel = _mm256_blendv_epi8(p, sel, zero);
            b1 = _mm256_blendv_epi8(_mm256_set1_epi8((char)j), b1, zero);
        }
        __m256i b0 = bp2_ctz8(sel);
        if (one)
            b0 = _mm256_add_epi8(b0, _mm256_slli_epi16(b1, 3));
        _mm256_store_si256((__m256i *)(lb0 + 32 * h), b0);
        _mm256_store_si256((__m256i *)(lb1 + 32 * h), b1);
    }
}

/* Tree t's contributions: float sums 8 lanes per gather from the float32
 * table; else 4 documents a vector operation, their leaves loaded one by
 * one. */
VQS_ATTR BP_INLINE void bp_sum_avx2(const qs_model *m, const qs_layout *L, const qs_vqs_plan *P,
                                    uint64_t t, int omega, int one, const uint8_t *lb0,
                                    const uint8_t *lb1, vqs_acc_avx2 *A, int regs, double *accT,
                                    float *accTf)
{
    (void)A, (void)regs;
    const uint32_t nli = L->nleaves[t];
    const uint64_t off = L->leaf_off[t];
    const int mode = m->float_accumulate;
    const uint32_t cls = m->trees[t].class_id;
    if (P->leavesf) {
        const __m256i o8 = _mm256_set1_epi32((int)off);
        const __m256i lm8 = _mm256_set1_epi32(omega ? (int)(nli - 1) : -1);
        const __m128i sh8 = _mm_cvtsi32_si128(omega ? 8 : 3);
        float *pf0 = accTf + (size_t)cls * BP_LANES;
        for (unsigned q = 0; q < 8; q++) {
            __m256i leaf = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(lb0 + 8 * q)));
            if (!one)
                leaf = _mm256_add_epi32(
                    _mm256_sll_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(lb1 + 8 * q))),
                                     sh8),
                    leaf);
            const __m256 c =
                _mm256_i32gather_ps(P->leavesf, _mm256_add_epi32(o8, _mm256_and_si256(leaf, lm8)), 4);
            _mm256_store_ps(pf0 + 8 * q, _mm256_add_ps(_mm256_load_ps(pf0 + 8 * q), c));
        }
        return;
    }
    const __m256i o = _mm256_set1_epi64x((long long)off);
    const __m256i lmask = _mm256_set1_epi64x(omega ? (long long)(nli - 1) : -1ll);
    const __m256i shift = _mm256_set1_epi64x(omega ? 8 : 3);
    double *pa0 = accT + (size_t)cls * BP_LANES;
    float *pf0 = accTf + (size_t)cls * BP_LANES;
    for (unsigned q = 0; q < 16; q++) {
        int32_t w0, w1;
        memcpy(&w0, lb0 + 4 * q, 4);
        __m256i leaf = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(w0));
        if (!one) {
            memcpy(&w1, lb1 + 4 * q, 4);
            leaf = _mm256_add_epi64(
                _mm256_sllv_epi64(_mm256_cvtepu8_epi64(_mm_cvtsi32_si128(w1)), shift), leaf);
        }
        /* loaded one by one, not gathered: 2-30% faster on Zen 3
         * (LightGBM's 1,000 x 64, double sums) */
        uint64_t li[4] __attribute__((aligned(32)));
        _mm256_store_si256((__m256i *)li, _mm256_add_epi64(o, _mm256_and_si256(leaf, lmask)));
        const __m256d c = _mm256_setr_pd(L->leaves[li[0]], L->leaves[li[1]], L->leaves[li[2]],
                                         L->leaves[li[3]]);
        double *pa = pa0 + 4 * q;
        float *pf = pf0 + 4 * q;
        switch (mode) {
        case QS_ACC_DOUBLE: _mm256_store_pd(pa, _mm256_add_pd(_mm256_load_pd(pa), c)); break;
        case QS_ACC_FLOAT: _mm_store_ps(pf, _mm_add_ps(_mm_load_ps(pf), _mm256_cvtpd_ps(c))); break;
        default:
            _mm_store_ps(pf, _mm256_cvtpd_ps(_mm256_add_pd(_mm256_cvtps_pd(_mm_load_ps(pf)), c)));
            break;
        }
    }
}

/* By ranks: a tree's exit leaves (its leaf index, a byte a document, to
 * lb0) from its operations op (vqs_plan.h, rk.op), pn[k] then ps[k] of
 * them for its k-th plane from the top (the latter, of special entries,
 * only when spany), and the rows of counts cnt; returns the next
 * tree's operations.  Each plane in two registers: all ones, less, for
 * each operation, its byte's complement in the documents whose count
 * passes its rank (the top plane then gets the last leaf's bit, as the
 * scalar kernels do); the lowest nonzero plane kept as it comes (sel, and
 * its number b1). */
VQS_ATTR BP_INLINE const uint32_t *rk_tree_avx2(const uint8_t *cnt, const uint32_t *op,
                                                const uint8_t *pn, const uint8_t *ps, int spany,
                                                uint32_t nl, uint8_t *lb0)
{
    const uint32_t last = nl - 1, np = last / 8 + 1;
    const __m256i zero = _mm256_setzero_si256();
    __m256i sel0 = zero, sel1 = zero, b10 = zero, b11 = zero;
    for (uint32_t k = 0; k < np; k++) {
        __m256i a0 = _mm256_set1_epi8(-1), a1 = a0, a2 = a0, a3 = a0;
        const uint8_t *ob = (const uint8_t *)op, *end = ob + 4 * (pn[k] + (spany ? ps[k] : 0));
        for (; ob != end; ob += 8) {
            const __m256i *C = (const __m256i *)(cnt + (size_t)(*(const qs_vqs_u16a *)(const void *)ob) * 8);
            const __m256i r = _mm256_set1_epi8((char)ob[2]), nb = _mm256_set1_epi8((char)ob[3]);
            a0 = _mm256_andnot_si256(_mm256_and_si256(_mm256_cmpgt_epi8(_mm256_load_si256(C), r), nb), a0);
            a1 = _mm256_andnot_si256(_mm256_and_si256(_mm256_cmpgt_epi8(_mm256_load_si256(C + 1), r), nb), a1);
            const __m256i *C2 = (const __m256i *)(cnt + (size_t)(*(const qs_vqs_u16a *)(const void *)(ob + 4)) * 8);
            const __m256i r2 = _mm256_set1_epi8((char)ob[6]), nb2 = _mm256_set1_epi8((char)ob[7]);
            a2 = _mm256_andnot_si256(_mm256_and_si256(_mm256_cmpgt_epi8(_mm256_load_si256(C2), r2), nb2), a2);
            a3 = _mm256_andnot_si256(_mm256_and_si256(_mm256_cmpgt_epi8(_mm256_load_si256(C2 + 1), r2), nb2), a3);
        }
        a0 = _mm256_and_si256(a0, a2);
        a1 = _mm256_and_si256(a1, a3);
        op += pn[k] + ps[k];
        if (k == 0) {
            const __m256i bit = _mm256_set1_epi8((char)(1u << (last & 7)));
            a0 = _mm256_or_si256(a0, bit);
            a1 = _mm256_or_si256(a1, bit);
        }
        const __m256i j = _mm256_set1_epi8((char)(np - 1 - k));
        const __m256i z0 = _mm256_cmpeq_epi8(a0, zero), z1 = _mm256_cmpeq_epi8(a1, zero);
        sel0 = _mm256_blendv_epi8(a0, sel0, z0);
        sel1 = _mm256_blendv_epi8(a1, sel1, z1);
        b10 = _mm256_blendv_epi8(j, b10, z0);
        b11 = _mm256_blendv_epi8(j, b11, z1);
    }
    _mm256_store_si256((__m256i *)lb0, _mm256_add_epi8(bp2_ctz8(sel0), _mm256_slli_epi16(b10, 3)));
    _mm256_store_si256((__m256i *)(lb0 + 32),
                       _mm256_add_epi8(bp2_ctz8(sel1), _mm256_slli_epi16(b11, 3)));
    return op;
}

/* ---- categorical features: one feature's lookups (vqs_plan.h, cv)
 * applied to the 64 documents' planes: idx the documents' shuffle indices
 * (vqs_common.h, lane_classes), tr[0 .. nt) its trees, tab their tables
 * (planes of nq * 16 bytes each); two vpshufb a quarter of the lookup for
 * the 64 documents (32 each), the quarters ORed, one AND a plane. */
VQS_ATTR static void cat_apply_avx2(const uint8_t idx[4][64], uint32_t nq, const uint32_t *tr,
                                    uint64_t nt, const uint8_t *tab, uint8_t *v, size_t row,
                                    uint32_t planes)
{
    __m256i ia[4], ib[4];
    for (uint32_t q = 0; q < 4; q++) {
        ia[q] = _mm256_load_si256((const __m256i *)(const void *)idx[q]);
        ib[q] = _mm256_load_si256((const __m256i *)(const void *)(idx[q] + 32));
    }
    const size_t step = (size_t)nq * 16;
    for (uint64_t k = 0; k < nt; k++) {
        uint8_t *p = v + (size_t)tr[k] * row;
        for (uint32_t j = 0; j < planes; j++, tab += step) {
            __m256i t = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)tab));
            __m256i ga = _mm256_shuffle_epi8(t, ia[0]), gb = _mm256_shuffle_epi8(t, ib[0]);
            for (uint32_t q = 1; q < nq; q++) {
                t = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(tab + 16 * q)));
                ga = _mm256_or_si256(ga, _mm256_shuffle_epi8(t, ia[q]));
                gb = _mm256_or_si256(gb, _mm256_shuffle_epi8(t, ib[q]));
            }
            __m256i *qa = (__m256i *)(void *)(p + (size_t)j * 64), *qb = qa + 1;
            _mm256_store_si256(qa, _mm256_and_si256(_mm256_load_si256(qa), ga));
            _mm256_store_si256(qb, _mm256_and_si256(_mm256_load_si256(qb), gb));
        }
    }
}

/* ---- QS-Ω by ranks */

/* How many of the ascending thresholds a[0 .. n) (n >= 1) each of the four
 * values x[0 .. 3] passes (t <= x for <, t < x for <=), as the scans' run
 * ends, by bisection: four searches side by side, whose steps do not wait
 * for one another. */
static inline __attribute__((always_inline)) void om_bisect4(const double *a, uint32_t n,
                                                             const double *x, int16_t *out,
                                                             int lt)
{
    const double *b0 = a, *b1 = a, *b2 = a, *b3 = a;
    const double x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];
#define OM_PASS(t, v) (lt ? (t) <= (v) : (t) < (v))
    while (n > 1) {
        const uint32_t h = n / 2;
        b0 = OM_PASS(b0[h], x0) ? b0 + h : b0;
        b1 = OM_PASS(b1[h], x1) ? b1 + h : b1;
        b2 = OM_PASS(b2[h], x2) ? b2 + h : b2;
        b3 = OM_PASS(b3[h], x3) ? b3 + h : b3;
        n -= h;
    }
    out[0] = (int16_t)((b0 - a) + OM_PASS(*b0, x0));
    out[1] = (int16_t)((b1 - a) + OM_PASS(*b1, x1));
    out[2] = (int16_t)((b2 - a) + OM_PASS(*b2, x2));
    out[3] = (int16_t)((b3 - a) + OM_PASS(*b3, x3));
#undef OM_PASS
}

/* Groups of at most this many distinct thresholds are counted by compares
 * against every one (16 documents at a time), larger ones by bisection. */
#define OM_LINEAR_MAX 48u

/* Four 64-bit counts in each of c0 .. c3 (below 2^15) as 16 int16 at p. */
VQS_ATTR BP_INLINE void om_store16(int16_t *p, __m256i c0, __m256i c1, __m256i c2, __m256i c3)
{
    const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    const __m128i a = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(c0, even)),
                  b = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(c1, even)),
                  c = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(c2, even)),
                  d = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(c3, even));
    _mm_store_si128((__m128i *)p, _mm_packs_epi32(a, b));
    _mm_store_si128((__m128i *)(p + 8), _mm_packs_epi32(c, d));
}

/* A group's distinct thresholds passed by 16 values (x0 .. x3): compared
 * with every one, t <= x for < (CMP _CMP_GE_OQ) or t < x for <= (GT); a
 * NaN passes none (its count is replaced). */
#define OM_COUNT16(CMP)                                                                        \
    for (uint32_t k = 0; k < nu; k++) {                                                        \
        const __m256d t = _mm256_broadcast_sd(u + k);                                          \
        c0 = _mm256_sub_epi64(c0, _mm256_castpd_si256(_mm256_cmp_pd(x0, t, CMP)));             \
        c1 = _mm256_sub_epi64(c1, _mm256_castpd_si256(_mm256_cmp_pd(x1, t, CMP)));             \
        c2 = _mm256_sub_epi64(c2, _mm256_castpd_si256(_mm256_cmp_pd(x2, t, CMP)));             \
        c3 = _mm256_sub_epi64(c3, _mm256_castpd_si256(_mm256_cmp_pd(x3, t, CMP)));             \
    }

/* QS-Ω by ranks (qs_vqs_plan, om), 64 documents.  First each
 * group's counts (16 bits a document, 128 bytes a group at the start of the
 * scratch): the 64 values of its feature read once, its special-value rule
 * applied as qs_group_special does, then the distinct thresholds each
 * passes counted (compares with all of them, or bisection for many, four
 * documents side by side).  Then
 * tree by tree: each level's compare of the counts with its threshold's
 * rank ORs its bits into 64 leaf indexes, and each document adds its exit
 * leaf's contribution, in tree order, with the IEEE operation of
 * qs_layout_add_leaf (four documents a vector operation; their leaves
 * loaded one by one, which beats a gather on Zen 3). */
VQS_ATTR static void block_om_avx2(const qs_model *m, const qs_layout *L, const qs_vqs_plan *P,
                            const qs_block *B, uint8_t *v, const double *const *xs,
                            unsigned nreal, double *acc, float *accf)
{
    const int lt = m->cmp == QS_CMP_LT;
    const uint32_t ng = B->group_end - B->group_begin;
    int16_t *R = (int16_t *)(void *)v;
    double xr[BP_LANES] __attribute__((aligned(32)));
    for (uint32_t r = 0; r < ng; r++) {
        const uint32_t g = B->group_begin + r;
        const qs_group *G = &L->groups[g];
        const uint32_t f = G->feature, rule = G->rule & QS_RULE_MASK;
        const double *u = P->om.u + P->om.uoff[g];
        const uint32_t nu = P->om.uoff[g + 1] - P->om.uoff[g];
        int16_t *row = R + (size_t)r * BP_LANES;
        for (unsigned j = 0; j < BP_LANES; j++)
            xr[j] = xs[j][f];
        uint64_t sp = bp2_rule64(rule, xr, xr);
        if (nu <= OM_LINEAR_MAX) {
            for (unsigned c = 0; c < BP_LANES; c += 16) {
                const __m256d x0 = _mm256_load_pd(xr + c), x1 = _mm256_load_pd(xr + c + 4),
                              x2 = _mm256_load_pd(xr + c + 8), x3 = _mm256_load_pd(xr + c + 12);
                __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;
                if (lt)
                    OM_COUNT16(_CMP_GE_OQ)
                else
                    OM_COUNT16(_CMP_GT_OQ)
                om_store16(row + c, c0, c1, c2, c3);
            }
        } else if (lt) {
            for (unsigned j = 0; j < BP_LANES; j += 4)
                om_bisect4(u, nu, xr + j, row + j, 1);
        } else {
            for (unsigned j = 0; j < BP_LANES; j += 4)
                om_bisect4(u, nu, xr + j, row + j, 0);
        }
        for (; sp; sp &= sp - 1)
            row[__builtin_ctzll(sp)] = (int16_t)P->om.sp[g];
    }
    const int mode = m->float_accumulate;
    /* the sums, class-major, after the counts: 64 doubles, then 64 floats,
     * a class (lanes past nreal sum a copy of lane 0's, never written back) */
    const uint32_t K = m->num_classes;
    double *A = (double *)(void *)(v + (size_t)ng * 128);
    float *AF = (float *)(void *)(A + (size_t)K * BP_LANES);
    for (uint32_t c = 0; c < K; c++)
        for (unsigned j = 0; j < BP_LANES; j++) {
            A[(size_t)c * BP_LANES + j] = acc[(size_t)(j < nreal ? j : 0) * K + c];
            AF[(size_t)c * BP_LANES + j] = accf[(size_t)(j < nreal ? j : 0) * K + c];
        }
    uint16_t ix[BP_LANES] __attribute__((aligned(32)));
    for (uint64_t t = B->tree_begin; t < B->tree_end; t++) {
        const uint32_t cls = m->trees[t].class_id;
        double *a = A + (size_t)cls * BP_LANES;
        float *af = AF + (size_t)cls * BP_LANES;
        const uint32_t *lv = P->om.level + t * QS_OMEGA_MAX_DEPTH;
        const uint16_t *bits = P->om.bits + t * QS_OMEGA_MAX_DEPTH;
        __m256i i0 = _mm256_setzero_si256(), i1 = i0, i2 = i0, i3 = i0;
        for (unsigned l = 0; l < P->om.depth[t]; l++) {
            const __m256i *row = (const __m256i *)(R + (size_t)(lv[l] >> 16) * BP_LANES);
            const __m256i rk = _mm256_set1_epi16((short)(lv[l] & 0xFFFF));
            const __m256i bt = _mm256_set1_epi16((short)bits[l]);
            i0 = _mm256_or_si256(i0, _mm256_and_si256(bt, _mm256_cmpgt_epi16(_mm256_load_si256(row), rk)));
            i1 = _mm256_or_si256(i1, _mm256_and_si256(bt, _mm256_cmpgt_epi16(_mm256_load_si256(row + 1), rk)));
            i2 = _mm256_or_si256(i2, _mm256_and_si256(bt, _mm256_cmpgt_epi16(_mm256_load_si256(row + 2), rk)));
            i3 = _mm256_or_si256(i3, _mm256_and_si256(bt, _mm256_cmpgt_epi16(_mm256_load_si256(row + 3), rk)));
        }
        const __m256i lm = _mm256_set1_epi16((short)(L->nleaves[t] - 1));
        _mm256_store_si256((__m256i *)ix, _mm256_and_si256(i0, lm));
        _mm256_store_si256((__m256i *)(ix + 16), _mm256_and_si256(i1, lm));
        _mm256_store_si256((__m256i *)(ix + 32), _mm256_and_si256(i2, lm));
        _mm256_store_si256((__m256i *)(ix + 48), _mm256_and_si256(i3, lm));
        const double *leaf = L->leaves + L->leaf_off[t];
        if (mode == QS_ACC_DOUBLE)
            for (unsigned j = 0; j < BP_LANES; j += 4) {
                const __m256d c = _mm256_setr_pd(leaf[ix[j]], leaf[ix[j + 1]], leaf[ix[j + 2]],
                                                 leaf[ix[j + 3]]);
                _mm256_store_pd(a + j, _mm256_add_pd(_mm256_load_pd(a + j), c));
            }
        else if (mode == QS_ACC_FLOAT)
            for (unsigned j = 0; j < BP_LANES; j += 4) {
                const __m128 c = _mm256_cvtpd_ps(_mm256_setr_pd(leaf[ix[j]], leaf[ix[j + 1]],
                                                                leaf[ix[j + 2]], leaf[ix[j + 3]]));
                _mm_store_ps(af + j, _mm_add_ps(_mm_load_ps(af + j), c));
            }
        else
            for (unsigned j = 0; j < BP_LANES; j += 4) {
                const __m256d c = _mm256_setr_pd(leaf[ix[j]], leaf[ix[j + 1]], leaf[ix[j + 2]],
                                                 leaf[ix[j + 3]]);
                _mm_store_ps(af + j,
                             _mm256_cvtpd_ps(_mm256_add_pd(_mm256_cvtps_pd(_mm_load_ps(af + j)), c)));
            }
    }
    for (uint32_t c = 0; c < K; c++)
        for (unsigned j = 0; j < nreal; j++) {
            acc[(size_t)j * K + c] = A[(size_t)c * BP_LANES + j];
            accf[(size_t)j * K + c] = AF[(size_t)c * BP_LANES + j];
        }
}

/* the template's entry sends the blocks the plan has by QS-Ω ranks here */
#define VQS_OM 1

#include "score/x86/vqs_kernel.h"

#endif /* QS_VQS_HAVE_KERNELS */
