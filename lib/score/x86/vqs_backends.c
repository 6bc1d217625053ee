/* vqs_backends.c: the ISA table (the kernel sets of vqs_avx2.c and
 * vqs_avx512.c, the widest first) and the back ends `vqs`, `vqs-avx2` and
 * `vqs-avx512`: which row each runs, its probe, its state (the plan,
 * score/vqs_plan.c), its scratch, and the kernel set it hands the BWQS
 * driver (its row's entries). */
#include "score/x86/vqs.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- the ISA table
 *
 * The kernel sets of this build, one a row, the widest first: the level
 * qs_cpu_simd() must enable for it (common/cpu.c: CPUID, XGETBV for the
 * registers the operating system saves, less QS_DISABLE_CPU_FEATURES),
 * those features in words, and what its file compiles from the template
 * (vqs_kernel.h): the block entry and the lanes of a batch.  A back end
 * picks its rows once, when a scorer is prepared (vqs_prepare): the first
 * row the CPU runs, as libdeflate's arch_select_*_func picks the best
 * implementation the CPU's features allow.  The auto rule (vqs_rule)
 * chooses among the rows per CPU class; every row gives the same bits. */
typedef struct vqs_isa {
    unsigned level;    /* QS_SIMD_*: the features it needs, all of them */
    const char *needs; /* them in words, for the probe's refusal */
    void (*block)(const qs_simd_kernel *k, unsigned lanes, const qs_model *m,
                  const qs_layout *L, const qs_block *B, uint64_t *v,
                  const double *const *xs, unsigned nreal, double *acc, float *accf);
    unsigned (*lanes)(unsigned level, const qs_block *B, uint32_t n);
} vqs_isa;

#if QS_VQS_HAVE_KERNELS
#define VQS_ISA_FN(fn) fn
#else /* the rows stay, for the probe's words; nothing runs them */
#define VQS_ISA_FN(fn) NULL
#endif

static const vqs_isa vqs_isas[] = {
    { QS_SIMD_AVX512, "AVX-512 (F, DQ, CD, VL, BW, with AVX2, FMA, BMI1, BMI2, LZCNT)",
      VQS_ISA_FN(qs_vqs_block_avx512), VQS_ISA_FN(qs_vqs_lanes_avx512) },
    { QS_SIMD_AVX2, "AVX2 (with FMA, BMI1, BMI2)", VQS_ISA_FN(qs_vqs_block_avx2),
      VQS_ISA_FN(qs_vqs_lanes_avx2) },
};
#define VQS_NISA (sizeof vqs_isas / sizeof vqs_isas[0])

/* The row of a level, or NULL. */
static const vqs_isa *isa_of(unsigned level)
{
    for (size_t i = 0; i < VQS_NISA; i++)
        if (vqs_isas[i].level == level)
            return &vqs_isas[i];
    return NULL;
}

/* d->param: the level (0: the first row this CPU runs, the widest). */
static unsigned level_of(const qs_backend_def *d)
{
    unsigned have = qs_cpu_simd();
    if (d->param)
        return have & d->param;
    for (size_t i = 0; i < VQS_NISA; i++)
        if ((have & vqs_isas[i].level) == vqs_isas[i].level)
            return vqs_isas[i].level;
    return 0;
}

/* Trees of at most this many leaves: their leaf values in two registers
 * (vqs-avx512's sums, by permutation instead of a gather). */
#define VQS_SMALL_TREE 16u

/* The rule of vqs_rule and vqs_auto_pick below for this CPU class, in
 * words (AVX-512 enabled; within qs_backend_info's 160 bytes). */
static void vqs_rule_text(char *why, size_t cap)
{
    const unsigned cls = qs_cpu_class();
    if (cls == QS_CPU_GENERIC)
        snprintf(why, cap, "auto: vqs-avx512 for every model (generic CPU: %s)",
                 qs_cpu_class_source());
    else if (cls == QS_CPU_INTEL)
        snprintf(why, cap,
                 "auto: vqs, AVX-512 for batches < %u docs or >= 50%% of leaves in QS-Omega, "
                 "rank blocks, 1-%u or 65+ leaf trees, else AVX2 (%s: %s)",
                 QS_VQS_NARROW_BELOW, VQS_SMALL_TREE, qs_cpu_class_name(cls), qs_cpu_class_source());
    else if (cls == QS_CPU_ZEN5)
        snprintf(why, cap,
                 "auto: vqs, AVX-512 for batches < %u docs or >= 50%% of leaves in QS-Omega, "
                 "<= %u-leaf trees or rank blocks, else AVX2 (%s: %s)",
                 QS_VQS_NARROW_BELOW, VQS_SMALL_TREE, qs_cpu_class_name(cls), qs_cpu_class_source());
    else
        snprintf(why, cap,
                 "auto: vqs, AVX-512 for batches < %u docs or models with >= 50%% of leaves in "
                 "QS-Omega or <= %u-leaf trees, else AVX2 (%s: %s)",
                 QS_VQS_NARROW_BELOW, VQS_SMALL_TREE, qs_cpu_class_name(cls), qs_cpu_class_source());
}

static int vqs_probe(const qs_backend_def *d, char *why, size_t cap)
{
    if (!QS_VQS_HAVE_KERNELS) {
        snprintf(why, cap, "built without the x86-64 SIMD kernels");
        return 0;
    }
    if (level_of(d)) {
        /* available: how auto chooses among the kernels (vqs_rule), on the
         * lines of `vqs` and of the kernel that wins auto's ranks */
        if ((qs_cpu_simd() & QS_SIMD_AVX512) && d->param != QS_SIMD_AVX2)
            vqs_rule_text(why, cap);
        return 1;
    }
    /* `vqs` wants at least the last row, the most generic */
    const unsigned want = d->param ? d->param : vqs_isas[VQS_NISA - 1].level;
    const char *name = isa_of(want)->needs;
    if (qs_cpu_simd_detected() & want)
        snprintf(why, cap, "%s disabled by QS_DISABLE_CPU_FEATURES", name);
    else
        snprintf(why, cap, "this CPU (or its operating system) lacks %s", name);
    return 0;
}

/* The level that runs scorer s's model fastest on this CPU, by the rule
 * of its class (qs_cpu_class), with why in why[cap]: measured on AMD Zen 5
 * (bench/README.md, "Which kernel auto runs"), vqs-avx512 is 1.4-2x
 * faster than vqs-avx2 on QS-Ω blocks and on trees of at most 16 leaves
 * (their sums by permutation), and 1.15-1.45x slower on trees of 32 leaves
 * or more; so AVX-512 where at least half the model's leaves are in such
 * blocks or trees, else AVX2.  Zen 4 (AVX-512 as two 256-bit halves) takes
 * the same rule: AVX2 was measured 1.4-1.6x faster there on 1,000 trees of
 * 64 leaves.  Intel (family 6) too: on an Emerald Rapids Xeon (model CFh)
 * AVX-512 was 1.1-1.8x faster on QS-Ω blocks and trees of up to 16 leaves,
 * AVX2 1.2-1.6x faster on 1,000 trees of 32 or 64 leaves and within 5% on
 * 5,000 and 20,000 trees of 64 and 1,000 of 256 (the README's table).
 * Other CPUs: the widest level, unmeasured otherwise.  A pure
 * function of the CPU class and the layout: the same model gets the same
 * kernel on every run, and both kernels give the same bits. */
static unsigned vqs_rule(const qs_scorer *s, char *why, size_t cap)
{
    const unsigned have = qs_cpu_simd();
    if (!(have & QS_SIMD_AVX512)) {
        snprintf(why, cap, "AVX2, the widest level enabled on this CPU");
        return have & QS_SIMD_AVX2;
    }
    const unsigned cls = qs_cpu_class();
    if (cls == QS_CPU_GENERIC) {
        snprintf(why, cap, "AVX-512, the widest level (CPU class generic: %s)",
                 qs_cpu_class_source());
        return QS_SIMD_AVX512;
    }
    /* Zen 5: blocks by ranks too (AVX-512 1.16-1.77x faster than AVX2 on
     * every one measured, trees of 8 to 64 leaves, 1,000 and 5,000 trees;
     * README.md).  Intel (full-width 512-bit units, whose two kernels
     * measured the shape of Zen 5's before the rank kernels) takes the
     * same side, unmeasured since; Zen 4 (AVX-512 as two 256-bit halves)
     * keeps the rule measured before them. */
    const int ranks = cls == QS_CPU_ZEN5 || cls == QS_CPU_INTEL;
    /* Intel: trees of more than 64 leaves (multi-word masks, 16 planes or
     * more) on the AVX-512 side too: measured 1.04-1.09x faster than AVX2
     * on an Emerald Rapids Xeon (bench/auto-grid.sh, one thread: 1,000
     * trees of 128 leaves, 512 of 256, 256 of 512; and before the rank
     * kernels 1,000 x 256 and 20,000 x 64, 1.04x).  Not measured on Zen. */
    const int multi = cls == QS_CPU_INTEL;
    const qs_layout *L = s->L;
    uint64_t small = 0, all = 0;
    for (uint32_t b = 0; b < L->nblocks; b++) {
        const qs_block *B = &L->blocks[b];
        if (!qs_vqs_planes(B))
            continue;
        const int rk = ranks && qs_vqs_rank_ok(s->m, L, B);
        for (uint64_t t = B->tree_begin; t < B->tree_end; t++) {
            all += L->nleaves[t];
            if (rk || B->kind == QS_BLOCK_OMEGA || L->nleaves[t] <= VQS_SMALL_TREE ||
                (multi && B->kind == QS_BLOCK_QS && B->width == 0))
                small += L->nleaves[t];
        }
    }
    const int wide = all && 2 * small >= all;
    if (multi)
        snprintf(why, cap, "%s (%llu%% of leaves in rank blocks, QS-Omega, 1-%u or 65+ leaf trees)",
                 wide ? "AVX-512" : "AVX2", all ? (unsigned long long)(100 * small / all) : 0ull,
                 VQS_SMALL_TREE);
    else if (ranks)
        snprintf(why, cap, "%s (%llu%% of leaves in rank blocks, QS-Omega or <= %u-leaf trees)",
                 wide ? "AVX-512" : "AVX2", all ? (unsigned long long)(100 * small / all) : 0ull,
                 VQS_SMALL_TREE);
    else
        snprintf(why, cap, "%s (%llu%% of the leaves in QS-Omega or <= %u-leaf trees)",
                 wide ? "AVX-512" : "AVX2", all ? (unsigned long long)(100 * small / all) : 0ull,
                 VQS_SMALL_TREE);
    return wide ? QS_SIMD_AVX512 : QS_SIMD_AVX2;
}

/* What auto runs for s, where vQS wins the registry's ranks: on a CPU
 * class with a rule, `vqs`, which runs vqs_rule's level for batches of
 * QS_VQS_NARROW_BELOW documents or more and AVX-512 for smaller ones (the
 * small-batch kernels: 8 lanes against AVX2's 4, 1.5x faster on Zen 5
 * whatever the trees); elsewhere the kernel of highest rank itself. */
/* Trees of this many leaves or more on average: auto runs vpred, not vqs.
 * vQS's multi-word planes grow with the leaves; measured on an Intel Xeon
 * (Emerald Rapids class, one thread, 5,000 MQ2008 documents, 1,000
 * synthetic XGBoost-like trees, bench/gen_forest.py): vqs / vpred = 0.26 at
 * 64 leaves, 0.35 at 256, 0.59 at 512, 1.3 at 768, 1.4 at 1,024, 3.5 at
 * 2,048 and 50 at 4,096 (vqs 42 s, vpred 0.82 s), every score the same; on
 * Zen 5 a 4,096-leaf model measured vqs 25x slower than vpred.  Oblivious
 * trees (QS-Omega blocks) stay with vQS at any size: 14x faster than vpred
 * on 45 of 1 to 4,096 leaves. */
#define VQS_HUGE_TREE 640u

static const char *vqs_auto_pick(const qs_backend_def *d, const qs_scorer *s, char *why,
                                 size_t cap)
{
    (void)d;
    /* the leaves of trees on planes (QS blocks: QS-Omega's oblivious trees
     * stay fast at any size), over every tree */
    const qs_layout *L = s->L;
    uint64_t planes = 0;
    for (uint32_t b = 0; b < L->nblocks; b++)
        if (L->blocks[b].kind == QS_BLOCK_QS)
            for (uint64_t t = L->blocks[b].tree_begin; t < L->blocks[b].tree_end; t++)
                planes += L->nleaves[t];
    if (L->ntrees && planes >= (uint64_t)VQS_HUGE_TREE * L->ntrees) {
        snprintf(why, cap, "vpred: trees of %llu leaves on average (>= %u: vQS's planes lose "
                           "to the branch-free walk there)",
                 (unsigned long long)(planes / L->ntrees), VQS_HUGE_TREE);
        return "vpred";
    }
    const unsigned cls = qs_cpu_class();
    char rule[112];
    vqs_rule(s, rule, sizeof rule);
    if (!(qs_cpu_simd() & QS_SIMD_AVX512) || cls == QS_CPU_GENERIC) {
        snprintf(why, cap, "%s", rule);
        return NULL;
    }
    snprintf(why, cap, "%s for batches >= %u docs, AVX-512 below (%s rule: %s)", rule,
             QS_VQS_NARROW_BELOW, qs_cpu_class_name(cls), qs_cpu_class_source());
    return "vqs";
}

/* The state: the byte-plane plan (every ISA; the kernels read it as their
 * data) and the rows of the ISA table this back end runs for the scorer,
 * picked once (`vqs`: vqs_rule's, and the widest for small batches). */
typedef struct vqs_state {
    qs_vqs_plan plan;      /* first: the kernels' data */
    const vqs_isa *isa;    /* for batches of QS_VQS_NARROW_BELOW documents or more */
    const vqs_isa *small;  /* for smaller ones */
} vqs_state;

static int vqs_prepare(const qs_backend_def *d, const qs_scorer *s, void **state,
                       qs_error *err)
{
    *state = NULL;
    if (!level_of(d))
        return 0;
    vqs_state *st = calloc(1, sizeof *st);
    qs_vqs_plan *P = st ? &st->plan : NULL;
    if (!P || qs_vqs_plan_build(s->L, P, s->build_threads) != 0 || qs_vqs_leaves_float(s, P) != 0 ||
        qs_vqs_omega_ranks(s->m, s->L, P) != 0 || qs_vqs_cat_build(s->L, P) != 0 ||
        qs_vqs_rank_build(s->m, s->L, P) != 0) {
        if (P)
            qs_vqs_plan_free(P);
        free(st);
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (vQS plan of %llu entries)",
                       (unsigned long long)s->L->nentries);
    }
    char why[160];
    st->isa = isa_of(d->param ? level_of(d) : vqs_rule(s, why, sizeof why));
    st->small = d->param ? st->isa : isa_of(level_of(d));
    *state = st;
    return 0;
}

static void vqs_release(void *state)
{
    vqs_state *st = state;
    if (st)
        qs_vqs_plan_free(&st->plan);
    free(st);
}

static int vqs_ws_init(const qs_backend_def *d, const qs_scorer *s, const void *state,
                       void **scratch, qs_error *err)
{
    /* Byte planes: 512 bytes per tree per word of a multi-word block;
     * before them the accumulators of several classes and the documents'
     * values of a block's features (rows of 64, vqs_common.h: bp_scratch). */
    size_t tree_bytes = QS_VQS_TREE_BYTES;
    for (uint32_t b = 0; b < s->L->nblocks; b++)
        if ((size_t)qs_vqs_planes(&s->L->blocks[b]) * 64 > tree_bytes)
            tree_bytes = (size_t)qs_vqs_planes(&s->L->blocks[b]) * 64;
    const qs_vqs_plan *P = state ? &((const vqs_state *)state)->plan : NULL;
    const size_t bytes = qs_bwqs_vec_bytes(s, tree_bytes) + qs_vqs_acc_bytes(s->m->num_classes) +
                         qs_vqs_xrow_bytes(P) + qs_vqs_rk_bytes(P);
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
    const vqs_state *st = state;
    const vqs_isa *I = !st ? NULL : n < QS_VQS_NARROW_BELOW ? st->small : st->isa;
    if (!I)
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0, "back end '%s' cannot run on this CPU",
                       d->name);
    const qs_simd_kernel k = {
        .level = I->level,
        .data = &st->plan,
        .takes = qs_vqs_block_ok,
        .lanes = I->lanes,
        .block = I->block,
    };
    qs_bwqs_score(s, w, scratch, n, out, &k, (how & QS_HOW_NAMED) != 0);
    return 0;
#else
    return qs_fail(err, QS_ERR_UNSUPPORTED, 0, "back end '%s' is not built", d->name);
#endif
}

#define VQS_FUNCS                                                                        \
    .probe = vqs_probe, .prepare = vqs_prepare, .release = vqs_release,                  \
    .ws_init = vqs_ws_init, .ws_free = qs_bwqs_ws_free, .score = vqs_score,              \
    .auto_pick = vqs_auto_pick

const qs_backend_def qs_backend_vqs = {
    .name = "vqs",
    .summary = "vQS: QuickScorer over several documents per SIMD instruction, the kernel "
               "(vqs-avx512 or vqs-avx2) that is fastest for this CPU, model and batch",
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
