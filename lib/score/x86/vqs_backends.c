/* vqs_backends.c: the back ends `vqs`, `vqs-avx2` and `vqs-avx512`: which
 * level each runs, its probe, its state (the plan, score/vqs_plan.c), its
 * scratch, and the kernel set it hands the BWQS driver (the ISA's entry,
 * vqs_avx2.c or vqs_avx512.c). */
#include "score/x86/vqs.h"

#include <stdio.h>
#include <stdlib.h>

/* d->param: the level (0: the widest this CPU runs). */
static unsigned level_of(const qs_backend_def *d)
{
    unsigned have = qs_cpu_simd();
    if (d->param)
        return have & d->param;
    return (have & QS_SIMD_AVX512) ? QS_SIMD_AVX512 : (have & QS_SIMD_AVX2) ? QS_SIMD_AVX2 : 0;
}

static int vqs_probe(const qs_backend_def *d, char *why, size_t cap)
{
    if (!QS_VQS_HAVE_KERNELS) {
        snprintf(why, cap, "built without the x86-64 SIMD kernels");
        return 0;
    }
    if (level_of(d))
        return 1;
    unsigned want = d->param ? d->param : QS_SIMD_AVX2;
    const char *name = want == QS_SIMD_AVX512
                           ? "AVX-512 (F, DQ, CD, VL, BW, with AVX2, FMA, BMI1, BMI2, LZCNT)"
                           : "AVX2 (with FMA, BMI1, BMI2)";
    if (qs_cpu_simd_detected() & want)
        snprintf(why, cap, "%s disabled by QS_DISABLE_CPU_FEATURES", name);
    else
        snprintf(why, cap, "this CPU (or its operating system) lacks %s", name);
    return 0;
}

/* The state: the byte-plane plan (AVX-512 and AVX2). */
static int vqs_prepare(const qs_backend_def *d, const qs_scorer *s, void **state,
                       qs_error *err)
{
    *state = NULL;
    if (!level_of(d))
        return 0;
    qs_vqs_plan *P = calloc(1, sizeof *P);
    if (!P || qs_vqs_plan_build(s->L, P, s->build_threads) != 0 || qs_vqs_leaves_float(s, P) != 0 ||
        qs_vqs_omega_ranks(s->m, s->L, P) != 0) {
        if (P)
            qs_vqs_plan_free(P);
        free(P);
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (vQS plan of %llu entries)",
                       (unsigned long long)s->L->nentries);
    }
    *state = P;
    return 0;
}

static void vqs_release(void *state)
{
    if (state)
        qs_vqs_plan_free(state);
    free(state);
}

static int vqs_ws_init(const qs_backend_def *d, const qs_scorer *s, const void *state,
                       void **scratch, qs_error *err)
{
    /* Byte planes: 512 bytes per tree per word of a multi-word block;
     * before them the accumulators of several classes and the documents'
     * values of a block's features (AVX-512). */
    size_t tree_bytes = QS_VQS_TREE_BYTES;
    for (uint32_t b = 0; b < s->L->nblocks; b++)
        if ((size_t)qs_vqs_planes(&s->L->blocks[b]) * 64 > tree_bytes)
            tree_bytes = (size_t)qs_vqs_planes(&s->L->blocks[b]) * 64;
    const qs_vqs_plan *P = state;
    const size_t bytes = qs_bwqs_vec_bytes(s, tree_bytes) + qs_vqs_acc_bytes(s->m->num_classes) +
                         qs_vqs_xrow_bytes(P);
    *scratch = aligned_alloc(64, bytes);
    if (!*scratch)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (leaf vectors of %llu trees)",
                       (unsigned long long)s->max_block_trees);
    return 0;
}

static int vqs_score(const qs_backend_def *d, const qs_scorer *s, const void *state,
                     qs_workspace *w, void *scratch, uint32_t n, double *out, unsigned how,
                     qs_error *err)
{
#if QS_VQS_HAVE_KERNELS
    const unsigned level = level_of(d);
    const qs_simd_kernel k = {
        .level = level,
        .data = state,
        .takes = qs_vqs_block_ok,
        .lanes = qs_vqs_lanes,
        .block = level == QS_SIMD_AVX512 ? qs_vqs_block_avx512 : qs_vqs_block_avx2,
    };
    if (!k.level)
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0, "back end '%s' cannot run on this CPU",
                       d->name);
    qs_bwqs_score(s, w, scratch, n, out, &k, (how & QS_HOW_NAMED) != 0);
    return 0;
#else
    return qs_fail(err, QS_ERR_UNSUPPORTED, 0, "back end '%s' is not built", d->name);
#endif
}

#define VQS_FUNCS                                                                        \
    .probe = vqs_probe, .prepare = vqs_prepare, .release = vqs_release,                  \
    .ws_init = vqs_ws_init, .ws_free = qs_bwqs_ws_free, .score = vqs_score

const qs_backend_def qs_backend_vqs = {
    .name = "vqs",
    .summary = "vQS: QuickScorer over several documents per SIMD instruction, the widest "
               "this CPU runs (AVX-512: 64 documents, AVX2: 32)",
    .flags = QS_BACKEND_F_SIMD | QS_BACKEND_F_ALIAS,
    .param = 0,
    VQS_FUNCS,
};

const qs_backend_def qs_backend_vqs_avx2 = {
    .name = "vqs-avx2",
    .summary = "vQS with AVX2 (64 documents on byte planes, 32 per instruction; 4 for "
               "small batches)",
    .flags = QS_BACKEND_F_SIMD,
    .auto_rank = 2,
    .param = QS_SIMD_AVX2,
    VQS_FUNCS,
};

const qs_backend_def qs_backend_vqs_avx512 = {
    .name = "vqs-avx512",
    .summary = "vQS with AVX-512 (64 documents per instruction on byte planes, every "
               "block kind)",
    .flags = QS_BACKEND_F_SIMD,
    .auto_rank = 3,
    .param = QS_SIMD_AVX512,
    VQS_FUNCS,
};
