/* vqs_kernel.h: the vQS kernels, one template for every ISA (as libdeflate
 * builds its per-ISA variants): vqs_avx2.c and vqs_avx512.c each define
 * their ISA's primitives and macros, then include this file once, which
 * compiles the kernels and the ISA's entries under its target attribute.
 * What does not depend on the ISA is in vqs_common.h; which ISA runs is
 * chosen once, from the CPU's features, by the table in vqs_backends.c
 * (lib/README.md, "Adding an ISA").
 *
 * An ISA file includes vqs.h and vqs_common.h, then defines, before
 * including this file (S: its suffix, _avx2):
 *
 *   VQS_ATTR           the target attribute of its functions (every
 *                      always_inline primitive below carries it too: GCC
 *                      inlines one only into a caller of the same target)
 *   VQS_FN(name)       name##S
 *   VQS_SCAN_MAX       longest group the byte-plane kernel scans (longer:
 *                      run ends by binary search)
 *   VQS_SET            a set of the 64 documents, as the planes' operations
 *                      take it (a mask, or byte vectors), and
 *                      bp_set##S(uint64_t bits)
 *   bp_apply##S        entries [i0, end) to a set's documents' planes (AND,
 *                      or the OR of QS-Ω)
 *   VQS_XV             a group's 64 values as the ISA holds them;
 *                      bp_rule##S (the group's value rule: the values to
 *                      compare, and the documents that take the special
 *                      list), bp_values##S (them as 64 doubles), and
 *                      VQS_CMP64(t, xv, CMP) (the documents for which
 *                      CMP(t, x) holds, a bit each)
 *   bp_segments##S     a long group's entries to the documents whose runs
 *                      end at e[]
 *   VQS_ACC, bp_acc_load##S, bp_acc_store##S
 *                      sums held in registers across a block's trees (where
 *                      the ISA does so; else load returns 0)
 *   bp_exit##S         a tree's 64 exit leaves from its planes (lb0, lb1)
 *   bp_sum##S          their contributions added, in tree order
 *   cat_apply##S       categorical features: one feature's byte lookups
 *                      (vqs_plan.h, cv) ANDed into the 64 documents' planes
 *                      from their shuffle indices (vqs_common.h,
 *                      lane_classes)
 *   VQS_NARROW, VQS_NARROW_ONES, VQS_NARROW_APPLY, VQS_NARROW_AND,
 *   narrow_sums##S     the small-batch kernel's lanes (also its entry's
 *                      lanes for small batches), its all-ones rows, its
 *                      masked AND and its sums
 *   rk_tree##S         by ranks: a tree's exit leaves from its operations
 *                      and the counts
 *
 * and may define, for kernels or steps of its own:
 *
 *   VQS_RK_TABLE       rk_table##S (a block's table of masks from the
 *                      counts) and rk_tree_mt##S (a tree's exit leaves
 *                      from it)
 *   VQS_RK_SUM         rk_sum##S (a tree's sums in the registers of
 *                      VQS_ACC)
 *   VQS_OM             block_om##S, a kernel for QS-Ω blocks by ranks
 *                      (vqs_plan.h, om), which the entry runs for the
 *                      blocks the plan has that way
 *
 * It gets the kernels VQS_FN(block_narrow), VQS_FN(block_bp),
 * VQS_FN(block_rk) and VQS_FN(cat_bp) (static), and the ISA's two entries
 * for its row of the ISA table, declared in vqs.h: VQS_FN(qs_vqs_block)
 * (qs_simd_kernel.block: a block to the kernel that takes it) and
 * VQS_FN(qs_vqs_lanes) (qs_simd_kernel.lanes).  No include guard: one
 * inclusion per ISA file. */

#if !defined(VQS_ATTR) || !defined(VQS_FN)
#error "vqs_kernel.h: define the ISA's primitives first (see the top of this file)"
#endif

/* Small batches: VQS_NARROW documents, one 64-bit leaf vector each, the
 * lanes' false runs found by binary search (lanes_ends) and applied
 * segment by segment (GROUPS). */
VQS_ATTR static void VQS_FN(block_narrow)(const qs_model *m, const qs_layout *L, const qs_block *B,
                                          uint64_t *v, const double *const *xs, unsigned nreal,
                                          double *acc, float *accf)
{
    const int lt = m->cmp == QS_CMP_LT;
    const uint32_t nt = (uint32_t)(B->tree_end - B->tree_begin);
    const uint32_t *etree = L->etree;
    const uint64_t *emask = L->emask;
    for (uint32_t i = 0; i < nt; i++)
        VQS_NARROW_ONES(v + (size_t)i * VQS_NARROW);
    GROUPS(VQS_NARROW, VQS_NARROW_APPLY, VQS_NARROW_AND)
    lanes_categorical(m, L, B, v, xs, VQS_NARROW);
    VQS_FN(narrow_sums)(m, L, B, v, xs, nreal, acc, accf);
}

/* A short group: each entry compared with the 64 values at once, its mask
 * applied to the lanes it is false for, until an entry is false for none
 * (a lane's false entries are a prefix of the group). */
#define VQS_BP_SCAN(CMP)                                                                       \
    do {                                                                                       \
        const double *thr = L->thr;                                                            \
        for (uint32_t i = G->begin; i < G->end; i++) {                                         \
            const uint64_t k = VQS_CMP64(thr[i], &xv, CMP) & ~sp;                              \
            if (!k)                                                                            \
                break;                                                                         \
            VQS_FN(bp_apply)(P, v, VQS_FN(bp_set)(k), i, i + 1, omega);                        \
        }                                                                                      \
    } while (0)

/* ---- categorical features by byte lookups (vqs_common.h, lane_classes)
 *
 * A narrow block's categorical features on 64 documents' byte planes (row:
 * bytes per tree, `planes` per tree): the plan's lookups (vqs_plan.h, cv)
 * through the ISA's cat_apply where it has them, then the documents they
 * cannot stand for; the rows or nodes lane by lane elsewhere.  Not inlined
 * into block_bp: its vector registers stay the scan's. */
VQS_ATTR static __attribute__((noinline)) void
VQS_FN(cat_bp)(const qs_model *m, const qs_layout *L, const qs_vqs_plan *P, const qs_block *B,
               uint8_t *v, size_t row, uint32_t planes, const double *const *xs)
{
    const uint32_t bi = (uint32_t)(B - L->blocks);
    for (uint32_t f = L->block_catfeat[bi]; f < L->block_catfeat[bi + 1]; f++) {
        const qs_catfeat *F = &L->catfeats[f];
        const uint32_t nq = P->cv.nq ? P->cv.nq[f] : 0;
        if (!nq) {
            lanes_rest(m, L, F, v, row, planes, xs, ~0ull);
            continue;
        }
        uint8_t idx[4][64] __attribute__((aligned(64)));
        uint64_t fb;
        lane_classes(L, F, nq, xs, idx, &fb);
        VQS_FN(cat_apply)((const uint8_t(*)[64])idx, nq, P->cv.tree + P->cv.toff[f],
                          P->cv.toff[f + 1] - P->cv.toff[f], P->cv.tab + P->cv.boff[f], v, row,
                          planes);
        if (fb)
            lanes_rest(m, L, F, v, row, planes, xs, fb);
    }
}

/* ---- byte planes
 *
 * 64 documents at once, the leaf vectors stored as byte planes (as
 * RapidScorer does): plane j of a tree holds byte j (leaves 8j..8j+7) of
 * the 64 documents' vectors, one byte per document, so one 512-bit
 * operation (two 256-bit ones with AVX2) updates 64 documents.  A QS
 * node's mask clears one contiguous leaf range (its left subtree), which
 * touches only the planes that range spans: usually one.  The planes a
 * tree has are those of the block's mask width (width / 8), or 8 per word
 * of a multi-word block.  A QS-Ω tree has two planes, the low and the high
 * byte of the 64 documents' leaf indexes, into which each false level ORs
 * its bit. */
VQS_ATTR static void VQS_FN(block_bp)(const qs_model *m, const qs_layout *L, const qs_vqs_plan *P,
                                      const qs_block *B, uint8_t *v, const double *const *xs,
                                      unsigned nreal, double *acc, float *accf)
{
    const int lt = m->cmp == QS_CMP_LT;
    const int omega = B->kind == QS_BLOCK_OMEGA;
    const uint32_t nt = (uint32_t)(B->tree_end - B->tree_begin);
    const uint32_t planes = qs_vqs_planes(B);
    const size_t row = (size_t)planes * 64;
    const uint32_t K = m->num_classes;
    /* Several classes: the 64 documents' sums class-major (accT[c][l]) at
     * the start of the scratch, the planes after. */
    double *accT, *xT;
    float *accTf;
    const uint32_t *feats;
    uint32_t nfe, c0;
    v = bp_scratch(P, L, B, v, K, omega, row * nt, xs, &accT, &accTf, &xT, &feats, &nfe, &c0);
    const uint32_t *grow = P->rows.grow;
    for (uint32_t g = B->group_begin; g < B->group_end; g++) {
        const qs_group *G = &L->groups[g];
        const double *xr = bp_row(feats, nfe, xT, &c0, grow[g], xs);
        /* The group's value rule: sp, the lanes that take its
         * special-value list; the others' NaN read as 0.0. */
        VQS_XV xv;
        const uint64_t sp = VQS_FN(bp_rule)(G->rule & QS_RULE_MASK, xr, &xv);
        if (sp)
            VQS_FN(bp_apply)(P, v, VQS_FN(bp_set)(sp), G->sp_begin, G->sp_end, omega);
        if (G->end - G->begin <= VQS_SCAN_MAX) {
            if (G->rule & QS_GROUP_DESC) {
                if (lt)
                    VQS_BP_SCAN(_CMP_GT_OQ);
                else
                    VQS_BP_SCAN(_CMP_GE_OQ);
            } else {
                if (lt)
                    VQS_BP_SCAN(_CMP_LE_OQ);
                else
                    VQS_BP_SCAN(_CMP_LT_OQ);
            }
            continue;
        }
        /* A long one: each lane's run end by binary search (the lanes in
         * lockstep), then the entries before the nearest lane's end go to
         * every lane still running, and so on: each segment one lane
         * set. */
        uint32_t e[BP_LANES] __attribute__((aligned(64)));
        {
            double xb[BP_LANES] __attribute__((aligned(64)));
            bp_run_ends(L, G, VQS_FN(bp_values)(&xv, xb), sp, lt, e);
        }
        VQS_FN(bp_segments)(P, v, e, G->begin, G->end - G->begin, omega);
    }
    if (B->width && B->cat_begin != B->cat_end) /* narrow: the tables' byte lookups */
        VQS_FN(cat_bp)(m, L, P, B, v, row, planes, xs);
    else
        bp_categorical(m, L, B, v, row, planes, xs);
    /* Exit leaves, per document (QS, the lowest set bit over the planes,
     * the tree's last leaf forced on, as the scalar kernels do; QS-Ω, the
     * index's two bytes), as its plane (lb1) and its bit there (lb0), or
     * in one byte (lb0) where it fits: an Ω tree of at most 256 leaves, a
     * QS tree of at most 32 planes.  Then their contributions added, each
     * document's sums in tree order: lane by lane (qs_layout_add_leaf)
     * for linear leaves; else side by side, in registers where the ISA
     * holds them (VQS_ACC), else in accT. */
    const uint32_t *nl = L->nleaves + B->tree_begin;
    const int gather = !m->node_linear;
    VQS_ACC A;
    const int regs = gather && VQS_FN(bp_acc_load)(&A, K, acc, accf, nreal);
    if (gather && !regs)
        bp_acc_rows(K, acc, accf, nreal, accT, accTf);
    for (uint32_t i = 0; i < nt; i++) {
        const uint32_t nli = nl[i];
        const int one = omega ? nli <= 256 : planes <= 32;
        uint8_t lb0[BP_LANES] __attribute__((aligned(64))), lb1[BP_LANES] __attribute__((aligned(64)));
        VQS_FN(bp_exit)(v + (size_t)i * row, omega, nli, planes, one, lb0, lb1);
        if (!gather) {
            for (unsigned l = 0; l < nreal; l++) {
                uint32_t leaf = omega ? ((one ? 0u : (uint32_t)lb1[l] << 8) | lb0[l]) & (nli - 1)
                                : one ? lb0[l]
                                      : (uint32_t)lb1[l] * 8 + lb0[l];
                qs_layout_add_leaf(m, L, B->tree_begin + i, leaf, xs[l], acc + (size_t)l * K,
                                   accf + (size_t)l * K);
            }
            continue;
        }
        VQS_FN(bp_sum)(m, L, P, B->tree_begin + i, omega, one, lb0, lb1, &A, regs, accT, accTf);
    }
    if (regs)
        VQS_FN(bp_acc_store)(&A, acc, accf, nreal);
    else if (gather)
        bp_acc_unrows(K, acc, accf, nreal, accT, accTf);
}

/* ---- QS blocks by ranks (vqs_plan.h, rk)
 *
 * Each group's 64 values read once, as counts (how many of the group's
 * distinct thresholds each passes; a row of 64 signed bytes), then the
 * block tree by tree: each of the tree's planes built in a register from
 * its operations, from the top plane down (an operation: the documents
 * whose count passes its entry's rank, one compare of 64 bytes, lose the
 * leaves its byte clears), and the lowest nonzero plane kept as it goes:
 * the exit leaves without storing a plane.  Then the sums, as block_bp's,
 * each document's in tree order. */
VQS_ATTR static void VQS_FN(block_rk)(const qs_model *m, const qs_layout *L, const qs_vqs_plan *P,
                                      const qs_block *B, uint8_t *v, const double *const *xs,
                                      unsigned nreal, double *acc, float *accf)
{
    const int lt = m->cmp == QS_CMP_LT;
    const uint32_t nt = (uint32_t)(B->tree_end - B->tree_begin);
    const uint32_t K = m->num_classes;
    const uint32_t ng = B->group_end - B->group_begin;
    double *accT, *xT;
    float *accTf;
    const uint32_t *feats;
    uint32_t nfe, c0;
    /* no planes to clear: after the feature rows, the counts (rows 0 ..
     * ng - 1; special lists ng ..) and the ISA's table of masks */
    uint8_t *cnt = bp_scratch(P, L, B, v, K, 0, 0, xs, &accT, &accTf, &xT, &feats, &nfe, &c0);
    const uint32_t *grow = P->rows.grow;
    uint64_t spany = 0; /* the documents that take a special list somewhere */
    for (uint32_t g = B->group_begin; g < B->group_end; g++) {
        const qs_group *G = &L->groups[g];
        const uint32_t r = g - B->group_begin;
        const double *xr = bp_row(feats, nfe, xT, &c0, grow[g], xs);
        VQS_XV xv;
        const uint64_t sp = VQS_FN(bp_rule)(G->rule & QS_RULE_MASK, xr, &xv);
        if (G->sp_end > G->sp_begin)
            spany |= sp;
        double xb[BP_LANES] __attribute__((aligned(64)));
        rk_counts(P->rk.u + P->rk.uoff[g], P->rk.uoff[g + 1] - P->rk.uoff[g],
                  VQS_FN(bp_values)(&xv, xb), sp, lt, cnt + (size_t)r * 64);
        if (G->sp_end > G->sp_begin)
            for (unsigned l = 0; l < BP_LANES; l++)
                cnt[(size_t)(ng + r) * 64 + l] = (uint8_t)(0x80u | ((sp >> l) & 1));
    }
#ifdef VQS_RK_TABLE /* the ISA's table of masks, where it keeps one */
    qs_vqs_u64a *tab = (qs_vqs_u64a *)(void *)(cnt + (size_t)P->rk.maxg * QS_VQS_RK_ROW);
    const int table = VQS_FN(rk_table)(P, L, B, cnt, tab);
#else
    const int table = 0;
#endif
    VQS_ACC A;
    const int regs = VQS_FN(bp_acc_load)(&A, K, acc, accf, nreal);
    if (!regs)
        bp_acc_rows(K, acc, accf, nreal, accT, accTf);
    const uint32_t *nl = L->nleaves + B->tree_begin;
    const uint32_t *op = (table ? P->rk.mt : P->rk.op) + P->rk.opoff[B->tree_begin];
    for (uint32_t i = 0; i < nt; i++) {
        uint8_t lb0[BP_LANES] __attribute__((aligned(64)));
        const uint64_t t8 = (B->tree_begin + i) * 8;
#ifdef VQS_RK_TABLE
        if (table)
            op = VQS_FN(rk_tree_mt)(tab, op, P->rk.pn + t8, P->rk.ps + t8, spany != 0, nl[i], lb0);
        else
#endif
            op = VQS_FN(rk_tree)(cnt, op, P->rk.pn + t8, P->rk.ps + t8, spany != 0, nl[i], lb0);
#ifdef VQS_RK_SUM
        if (regs) {
            VQS_FN(rk_sum)(m, L, B->tree_begin + i, lb0, &A);
            continue;
        }
#endif
        VQS_FN(bp_sum)(m, L, P, B->tree_begin + i, 0, 1, lb0, lb0, &A, regs, accT, accTf);
    }
    if (regs)
        VQS_FN(bp_acc_store)(&A, acc, accf, nreal);
    else
        bp_acc_unrows(K, acc, accf, nreal, accT, accTf);
}

#undef VQS_BP_SCAN

/* ---- the ISA's entry (vqs.h: qs_vqs_block_avx2, ...; qs_simd_kernel.block)
 *
 * A block of `lanes` documents to the kernel that takes it: with 64
 * lanes, the ISA's own kernel where it has one (VQS_OM: QS-Ω blocks by
 * ranks, where the plan has them), then by ranks, then on byte planes;
 * else, and for blocks the planes do not take, the small-batch kernel.
 * The plan is the back end's (k->data; NULL: no byte planes). */
void VQS_FN(qs_vqs_block)(const qs_simd_kernel *k, unsigned lanes, const qs_model *m,
                          const qs_layout *L, const qs_block *B, uint64_t *v,
                          const double *const *xs, unsigned nreal, double *acc, float *accf)
{
    const qs_vqs_plan *P = k->data;
#ifdef VQS_OM
    if (lanes == BP_LANES && P && P->om.ok && P->om.ok[B - L->blocks]) {
        VQS_FN(block_om)(m, L, P, B, (uint8_t *)v, xs, nreal, acc, accf);
        return;
    }
#endif
    if (lanes == BP_LANES && P && P->rk.ok && P->rk.ok[B - L->blocks])
        VQS_FN(block_rk)(m, L, P, B, (uint8_t *)v, xs, nreal, acc, accf);
    else if (lanes == BP_LANES && qs_vqs_planes(B) && P && P->bp.off)
        VQS_FN(block_bp)(m, L, P, B, (uint8_t *)v, xs, nreal, acc, accf);
    else
        VQS_FN(block_narrow)(m, L, B, v, xs, nreal, acc, accf);
}

/* The lanes of a batch of n documents through block B (vqs.h:
 * qs_vqs_lanes_avx2, ...; qs_simd_kernel.lanes): VQS_NARROW where the
 * batch is small. */
unsigned VQS_FN(qs_vqs_lanes)(unsigned level, const qs_block *B, uint32_t n)
{
    (void)level;
    return qs_vqs_lanes(VQS_NARROW, B, n);
}
