/* vqs_cat.c: categorical features on the byte-plane kernels' 64 documents.
 *
 * The layout's tables (layout/cattab.c) map a value to a class: a list of
 * (tree, AND mask).  Here each class becomes one byte of a lookup per tree
 * and plane, so the 64 documents' classes, found once per feature, fetch
 * their mask bytes with byte shuffles (vpshufb, 16 entries per shuffle; up
 * to 4 shuffles for 63 classes), and one AND per plane applies them to all
 * 64 documents at once.  Class numbers are shifted by one: entry 0 is 0xFF
 * (nothing), for the documents whose value (NaN, negative) the table does
 * not stand for; those take the feature's nodes afterwards, one by one.  An
 * AND is order-free, so the leaf vectors are those of the nodes one by one,
 * bit for bit.  The lookups are built with the plan (score/vqs_plan.c,
 * qs_vqs_cat_build). */
#include "score/x86/vqs.h"

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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2")))
#define T256 __attribute__((target("avx2")))

/* One feature's lookups applied to the 64 documents' planes: idx the
 * documents' shuffle indices (lane_classes), tr[0 .. nt) its trees, tab
 * their tables (planes of nq * 16 bytes each). */
typedef void (*cat_apply_fn)(const uint8_t idx[4][64], uint32_t nq, const uint32_t *tr,
                             uint64_t nt, const uint8_t *tab, uint8_t *v, size_t row,
                             uint32_t planes);

/* A narrow block's categorical features: the lookups where the plan has
 * them, then the documents they cannot stand for; the rows or nodes lane by
 * lane elsewhere. */
static inline __attribute__((always_inline)) void
cat_bp(const qs_model *m, const qs_layout *L, const qs_vqs_plan *P, const qs_block *B, uint8_t *v,
       size_t row, uint32_t planes, const double *const *xs, cat_apply_fn apply)
{
    const uint32_t bi = (uint32_t)(B - L->blocks);
    for (uint32_t f = L->block_catfeat[bi]; f < L->block_catfeat[bi + 1]; f++) {
        const qs_catfeat *F = &L->catfeats[f];
        const uint32_t nq = P->cv_nq ? P->cv_nq[f] : 0;
        if (!nq) {
            lanes_rest(m, L, F, v, row, planes, xs, ~0ull);
            continue;
        }
        uint8_t idx[4][64] __attribute__((aligned(64)));
        uint64_t fb;
        lane_classes(L, F, nq, xs, idx, &fb);
        apply((const uint8_t(*)[64])idx, nq, P->cv_tree + P->cv_toff[f],
              P->cv_toff[f + 1] - P->cv_toff[f], P->cv_tab + P->cv_boff[f], v, row, planes);
        if (fb)
            lanes_rest(m, L, F, v, row, planes, xs, fb);
    }
}

T512 static void apply512(const uint8_t idx[4][64], uint32_t nq, const uint32_t *tr, uint64_t nt,
                          const uint8_t *tab, uint8_t *v, size_t row, uint32_t planes)
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

T256 static void apply256(const uint8_t idx[4][64], uint32_t nq, const uint32_t *tr, uint64_t nt,
                          const uint8_t *tab, uint8_t *v, size_t row, uint32_t planes)
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

void qs_vqs_cat_bp_avx512(const qs_model *m, const qs_layout *L, const qs_vqs_plan *P,
                          const qs_block *B, uint8_t *v, size_t row, uint32_t planes,
                          const double *const *xs)
{
    cat_bp(m, L, P, B, v, row, planes, xs, apply512);
}

void qs_vqs_cat_bp_avx2(const qs_model *m, const qs_layout *L, const qs_vqs_plan *P,
                        const qs_block *B, uint8_t *v, size_t row, uint32_t planes,
                        const double *const *xs)
{
    cat_bp(m, L, P, B, v, row, planes, xs, apply256);
}
#endif
