/* vqs_plan.c: what the vQS kernels read instead of the layout's entries,
 * built once per layout by the back ends' prepare (score/x86/
 * vqs_backends.c): the byte-plane plan (each entry's planes and mask
 * bytes, and its per-plane operations), each block's features, the QS-Ω
 * rank tables and the float32 leaf table.  ISA-neutral: plain C, built
 * without any target attribute; the kernels are in score/x86/. */
#include "score/vqs_plan.h"

#include <stdlib.h>
#include <string.h>

/* The operations of entry i (xop): its first plane, the planes between
 * (all their leaves cleared: byte 0), its last; none for an entry that
 * changes nothing (an all-ones AND byte or a zero OR byte on one plane).
 * Writes at most (ob - oa) / 64 + 1. */
static inline uint32_t plan_ops(const qs_vqs_plan *P, int omega, uint64_t i, uint32_t *out,
                                uint8_t *outb)
{
    const uint32_t oa = (uint32_t)P->bp.off[i], ob = (uint32_t)(P->bp.off[i] >> 32);
    const uint32_t ba = P->bp.bytes[i] & 0xFF, bb = P->bp.bytes[i] >> 8;
    uint32_t n = 0;
    if (oa == ob) {
        const uint32_t by = omega ? ba | bb : ba & bb;
        if (by == (omega ? 0u : 0xFFu))
            return 0;
        out[0] = oa, outb[0] = (uint8_t)by;
        return 1;
    }
    for (uint32_t o = oa; o <= ob; o += 64, n++)
        out[n] = o, outb[n] = (uint8_t)(o == oa ? ba : o == ob ? bb : 0u);
    return n;
}

/* A group's scan and special entries. */
static inline uint64_t group_entries(const qs_group *G)
{
    return (uint64_t)(G->end > G->begin ? G->end - G->begin : 0) +
           (G->sp_end > G->sp_begin ? G->sp_end - G->sp_begin : 0);
}

/* How many operations plan_ops gives entry i. */
static inline uint32_t plan_count(const qs_vqs_plan *P, int omega, uint64_t i)
{
    const uint32_t oa = (uint32_t)P->bp.off[i], ob = (uint32_t)(P->bp.off[i] >> 32);
    if (oa == ob) {
        const uint32_t ba = P->bp.bytes[i] & 0xFF, bb = P->bp.bytes[i] >> 8;
        const uint32_t by = omega ? ba | bb : ba & bb;
        return by != (omega ? 0u : 0xFFu);
    }
    return (ob - oa) / 64 + 1;
}

/* Threads that share a pass over the entries (at most PLAN_MAX_PARTS; one
 * below PLAN_MIN_ENTRIES entries). */
#define PLAN_MIN_ENTRIES 512u
#define PLAN_MAX_PARTS 64u

static unsigned plan_parts(uint64_t n, unsigned threads)
{
    return qs_work_parts(n, PLAN_MIN_ENTRIES, threads, PLAN_MAX_PARTS);
}

/* The per-plane operations of every entry (xop: idx, off, byte): the count of
 * each part of the entries, then each part written from its offset (the
 * parts side by side with threads > 1; the arrays are the same). */
static int plan_expand(const qs_layout *L, qs_vqs_plan *P, unsigned threads)
{
    const uint64_t N = L->nentries;
    P->xop.idx = malloc((N + 1) * sizeof *P->xop.idx);
    /* each entry's block kind: 0 not on byte planes, 1 QS, 2 QS-Ω */
    unsigned char *kind = calloc(N ? N : 1, 1);
    if (!P->xop.idx || !kind) {
        free(kind);
        return -1;
    }
    for (uint32_t k = 0; k < L->nblocks; k++) {
        const qs_block *B = &L->blocks[k];
        if (!qs_vqs_planes(B))
            continue;
        const unsigned char kd = B->kind == QS_BLOCK_OMEGA ? 2 : 1;
        for (uint32_t g = B->group_begin; g < B->group_end; g++) {
            const qs_group *G = &L->groups[g];
            if (G->end > G->begin)
                memset(kind + G->begin, kd, G->end - G->begin);
            if (G->sp_end > G->sp_begin)
                memset(kind + G->sp_begin, kd, G->sp_end - G->sp_begin);
        }
    }
    const unsigned parts = plan_parts(N, threads);
    uint64_t at[PLAN_MAX_PARTS + 1] = { 0 };
#if QS_HAVE_OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(qs_team(parts)) if (parts > 1)
#endif
    for (unsigned p = 0; p < parts; p++) {
        uint64_t n = 0;
        for (uint64_t i = N * p / parts; i < N * (p + 1) / parts; i++)
            if (kind[i])
                n += plan_count(P, kind[i] == 2, i);
        at[p + 1] = n;
    }
    for (unsigned p = 0; p < parts; p++)
        at[p + 1] += at[p];
    P->xop.off = malloc((at[parts] ? at[parts] : 1) * sizeof *P->xop.off);
    P->xop.byte = malloc(at[parts] ? at[parts] : 1);
    if (!P->xop.off || !P->xop.byte) {
        free(kind);
        return -1;
    }
#if QS_HAVE_OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(qs_team(parts)) if (parts > 1)
#endif
    for (unsigned p = 0; p < parts; p++) {
        uint64_t n = at[p];
        for (uint64_t i = N * p / parts; i < N * (p + 1) / parts; i++) {
            P->xop.idx[i] = n;
            if (kind[i])
                n += plan_ops(P, kind[i] == 2, i, P->xop.off + n, P->xop.byte + n);
        }
    }
    P->xop.idx[N] = at[parts];
    free(kind);
    return 0;
}

/* The byte-plane plan of every entry of the blocks the kernel takes. */
int qs_vqs_plan_build(const qs_layout *L, qs_vqs_plan *P, unsigned threads)
{
    P->bp.off = calloc(L->nentries ? L->nentries : 1, sizeof *P->bp.off);
    P->bp.bytes = calloc(L->nentries ? L->nentries : 1, sizeof *P->bp.bytes);
    P->rows.feats = calloc(L->ngroups ? L->ngroups : 1, sizeof *P->rows.feats);
    P->rows.off = calloc((size_t)L->nblocks + 1, sizeof *P->rows.off);
    P->rows.grow = calloc(L->ngroups ? L->ngroups : 1, sizeof *P->rows.grow);
    if (!P->bp.off || !P->bp.bytes || !P->rows.feats || !P->rows.off || !P->rows.grow) {
        qs_vqs_plan_free(P);
        return -1;
    }
    /* Each block's features, in the order of its groups (sorted by
     * feature, so a document's values are read in address order). */
    uint64_t nf = 0;
    P->rows.max = 0;
    for (uint32_t k = 0; k < L->nblocks; k++) {
        const qs_block *B = &L->blocks[k];
        P->rows.off[k] = nf;
        for (uint32_t g = B->group_begin; g < B->group_end; g++) {
            const uint32_t f = L->groups[g].feature;
            uint64_t r = nf > P->rows.off[k] && P->rows.feats[nf - 1] == f ? nf - 1 : P->rows.off[k];
            while (r < nf && P->rows.feats[r] != f)
                r++;
            if (r == nf)
                P->rows.feats[nf++] = f;
            P->rows.grow[g] = (uint32_t)(r - P->rows.off[k]);
        }
        if (nf - P->rows.off[k] > P->rows.max)
            P->rows.max = (uint32_t)(nf - P->rows.off[k]);
    }
    P->rows.off[L->nblocks] = nf;
    int expand = 1;
    for (uint32_t k = 0; k < L->nblocks; k++) {
        const qs_block *B = &L->blocks[k];
        const uint32_t planes = qs_vqs_planes(B);
        if (!planes)
            continue;
        const uint64_t row = (uint64_t)planes * 64, nt = B->tree_end - B->tree_begin;
        if (row * nt > 0xFFFFFFFFull)
            expand = 0;
        const int omega = B->kind == QS_BLOCK_OMEGA, wide = !omega && B->width == 0;
        const uint64_t wmask = omega ? 0xFFFF : B->width == 64 || wide ? ~0ull : (1ull << B->width) - 1;
        /* With threads, contiguous runs of the groups, of about as many
         * entries each, side by side. */
        uint64_t nent = 0;
        for (uint32_t g = B->group_begin; g < B->group_end; g++)
            nent += group_entries(&L->groups[g]);
        const unsigned gparts = plan_parts(nent, threads);
        uint32_t gb[PLAN_MAX_PARTS + 1];
        gb[0] = B->group_begin;
        uint64_t acc = 0;
        for (uint32_t p = 1, g = B->group_begin; p <= gparts; p++) {
            const uint64_t goal = p == gparts ? nent : nent * p / gparts;
            while (g < B->group_end && acc < goal)
                acc += group_entries(&L->groups[g]), g++;
            gb[p] = p == gparts ? B->group_end : g;
        }
#if QS_HAVE_OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(qs_team(gparts)) if (gparts > 1)
#endif
        for (uint32_t p = 0; p < gparts; p++)
        for (uint32_t g = gb[p]; g < gb[p + 1]; g++) {
            const qs_group *G = &L->groups[g];
            for (int part = 0; part < 2; part++) {
                uint32_t i0 = part ? G->sp_begin : G->begin, i1 = part ? G->sp_end : G->end;
                for (uint32_t i = i0; i < i1; i++) {
                    const uint64_t mk = L->emask[i], base = (uint64_t)L->etree[i] * row;
                    /* QS: the leaves the mask clears; Ω: the bits it sets. */
                    const uint64_t nm = omega ? mk & wmask : wide ? 1 : ~mk & wmask;
                    const uint32_t lo = (uint32_t)(mk >> 32), hi = (uint32_t)mk;
                    if (!nm || L->etree[i] >= nt || (wide && (lo >= hi || hi > planes * 8u))) {
                        /* changes nothing: plane 0, with all-ones (AND) or zero (OR) bytes */
                        P->bp.off[i] = base | base << 32;
                        P->bp.bytes[i] = omega ? 0 : 0xFFFF;
                        continue;
                    }
                    uint32_t a, b;
                    if (wide) {
                        a = lo >> 3;
                        b = (hi - 1) >> 3;
                        P->bp.bytes[i] = (uint16_t)(qs_vqs_range_byte(lo, hi, a) | qs_vqs_range_byte(lo, hi, b) << 8);
                    } else {
                        a = (uint32_t)__builtin_ctzll(nm) >> 3;
                        b = (63u - (uint32_t)__builtin_clzll(nm)) >> 3;
                        P->bp.bytes[i] = (uint16_t)(((mk >> (8 * a)) & 0xFF) | ((mk >> (8 * b)) & 0xFF) << 8);
                    }
                    P->bp.off[i] = (base + a * 64u) | (base + b * 64u) << 32;
                }
            }
        }
    }
    if (expand && plan_expand(L, P, threads) != 0) {
        qs_vqs_plan_free(P);
        return -1;
    }
    return 0;
}

/* Whether the special entries of group G are its first |special| sorted
 * entries (the same trees and bits, in any order among equal ones): then a
 * special value fires exactly that prefix. */
static int special_is_prefix(const qs_layout *L, const qs_group *G, uint64_t *tmp)
{
    const uint32_t ns = G->sp_end - G->sp_begin;
    if (ns > G->end - G->begin)
        return 0;
    for (uint32_t i = 0; i < ns; i++) {
        tmp[i] = (uint64_t)L->etree[G->begin + i] << 32 | (uint32_t)L->emask[G->begin + i];
        tmp[ns + i] = (uint64_t)L->etree[G->sp_begin + i] << 32 | (uint32_t)L->emask[G->sp_begin + i];
    }
    /* as multisets: sort both (insertion sort: groups are small, and this
     * runs once per load) */
    for (int h = 0; h < 2; h++) {
        uint64_t *a = tmp + (size_t)h * ns;
        for (uint32_t i = 1; i < ns; i++) {
            uint64_t v = a[i];
            uint32_t j = i;
            for (; j > 0 && a[j - 1] > v; j--)
                a[j] = a[j - 1];
            a[j] = v;
        }
    }
    return memcmp(tmp, tmp + ns, sizeof *tmp * ns) == 0;
}

int qs_vqs_omega_ranks(const qs_model *m, const qs_layout *L, qs_vqs_plan *P)
{
    if (m->node_linear || L->nblocks == 0)
        return 0;
    const uint64_t K = m->num_classes;
    int any = 0;
    for (uint32_t b = 0; b < L->nblocks; b++)
        any |= L->blocks[b].kind == QS_BLOCK_OMEGA;
    if (!any)
        return 0;
    const uint64_t T = L->ntrees;
    P->om.ok = calloc(L->nblocks, 1);
    P->om.sp = calloc(L->ngroups ? L->ngroups : 1, sizeof *P->om.sp);
    P->om.level = malloc(sizeof *P->om.level * T * QS_OMEGA_MAX_DEPTH);
    P->om.bits = malloc(sizeof *P->om.bits * T * QS_OMEGA_MAX_DEPTH);
    P->om.depth = calloc(T ? T : 1, 1);
    uint32_t most = 1;
    for (uint32_t g = 0; g < L->ngroups; g++)
        if (L->groups[g].sp_end - L->groups[g].sp_begin > most)
            most = L->groups[g].sp_end - L->groups[g].sp_begin;
    uint64_t *tmp = malloc(sizeof *tmp * 2 * most);
    P->om.uoff = malloc(sizeof *P->om.uoff * ((size_t)L->ngroups + 1));
    P->om.u = malloc(sizeof *P->om.u * (L->nentries ? L->nentries : 1));
    if (!P->om.ok || !P->om.sp || !P->om.level || !P->om.bits || !P->om.depth || !tmp ||
        !P->om.uoff || !P->om.u) {
        free(tmp);
        return -1;
    }
    /* The blocks' groups are consecutive (qs_layout_check), so om.uoff
     * runs up through them; only QS-Ω blocks' groups have thresholds. */
    uint32_t nu = 0;
    for (uint32_t b = 0; b < L->nblocks; b++) {
        const qs_block *B = &L->blocks[b];
        const uint64_t t0 = B->tree_begin, nt = B->tree_end - B->tree_begin;
        const uint32_t ng = B->group_end - B->group_begin;
        const int omega = B->kind == QS_BLOCK_OMEGA;
        /* The counts of a batch take 128 bytes a group and the sums 768
         * bytes a class (64 doubles and 64 floats), within the scratch's
         * QS_VQS_TREE_BYTES a tree. */
        int ok = omega && B->cat_begin == B->cat_end && ng <= 0xFFFFu &&
                 (uint64_t)ng * 128 + K * 768 <= nt * QS_VQS_TREE_BYTES;
        for (uint64_t i = 0; ok && i < nt; i++)
            ok = L->nleaves[t0 + i] >= 1 && L->nleaves[t0 + i] <= (1u << QS_OMEGA_MAX_DEPTH);
        for (uint32_t g = B->group_begin; g < B->group_end; g++) {
            const qs_group *G = &L->groups[g];
            const uint32_t n = G->end - G->begin, ns = G->sp_end - G->sp_begin;
            P->om.uoff[g] = nu;
            P->om.sp[g] = 0;
            if (!omega)
                continue;
            /* A special value must fire the entries of whole thresholds:
             * the group's first ns, up to a change of threshold. */
            ok = ok && !(G->rule & QS_GROUP_DESC) && n <= 0x7FFFu && special_is_prefix(L, G, tmp) &&
                 (ns == 0 || ns == n || L->thr[G->begin + ns] != L->thr[G->begin + ns - 1]);
            /* Each entry's rank is its threshold's among the distinct ones:
             * the entries of one threshold fire together. */
            for (uint32_t k = G->begin; k < G->end; k++) {
                if (k == G->begin || L->thr[k] != L->thr[k - 1])
                    P->om.u[nu++] = L->thr[k];
                const uint32_t urank = nu - 1 - P->om.uoff[g];
                if (k - G->begin + 1 == ns)
                    P->om.sp[g] = (uint16_t)(urank + 1);
                const uint64_t i = L->etree[k];
                ok = ok && i < nt && L->emask[k] <= 0xFFFFu &&
                     P->om.depth[t0 + i] < QS_OMEGA_MAX_DEPTH;
                if (ok) {
                    const uint64_t slot = (t0 + i) * QS_OMEGA_MAX_DEPTH + P->om.depth[t0 + i]++;
                    P->om.level[slot] = (g - B->group_begin) << 16 | urank;
                    P->om.bits[slot] = (uint16_t)L->emask[k];
                }
            }
        }
        P->om.ok[b] = (uint8_t)ok;
    }
    P->om.uoff[L->ngroups] = nu;
    free(tmp);
    return 0;
}

/* The categorical lookups (cv), freed and cleared. */
static void cv_free(qs_vqs_plan *P)
{
    free(P->cv.nq);
    free(P->cv.toff);
    free(P->cv.tree);
    free(P->cv.boff);
    free(P->cv.tab);
    memset(&P->cv, 0, sizeof P->cv);
}

static void rk_free(qs_vqs_plan *P);

void qs_vqs_plan_free(qs_vqs_plan *P)
{
    rk_free(P);
    cv_free(P);
    free(P->bp.off);
    free(P->bp.bytes);
    free(P->rows.feats);
    free(P->rows.off);
    free(P->rows.grow);
    free(P->xop.idx);
    free(P->xop.off);
    free(P->xop.byte);
    free(P->leavesf);
    free(P->om.ok);
    free(P->om.sp);
    free(P->om.uoff);
    free(P->om.u);
    free(P->om.level);
    free(P->om.bits);
    free(P->om.depth);
    memset(P, 0, sizeof *P);
}

/* The float32 leaf table, for models that add (float)c in float32 (the
 * conversion is the one the kernel made per lane), leaf offsets within 31
 * bits. */
int qs_vqs_leaves_float(const qs_scorer *s, qs_vqs_plan *P)
{
    const qs_layout *L = s->L;
    if (s->m->float_accumulate != QS_ACC_FLOAT || s->m->node_linear || L->nleafvals == 0 ||
        L->nleafvals > 0x7FFFFFFFu)
        return 0;
    P->leavesf = malloc(L->nleafvals * sizeof *P->leavesf);
    if (!P->leavesf)
        return -1;
    for (uint64_t i = 0; i < L->nleafvals; i++)
        P->leavesf[i] = (float)L->leaves[i];
    return 0;
}

/* ---- categorical features as byte lookups (vqs_plan.h: cv), for
 * x86/vqs_kernel.h, cat_bp: each class of a feature's table (layout/cattab.c) one
 * byte of a lookup per tree and plane. */
#define CV_MAX_BYTES (64u << 20) /* all lookups of a plan */

int qs_vqs_cat_build(const qs_layout *L, qs_vqs_plan *P)
{
    P->cv.nq = NULL;
    if (!L->ncatfeats)
        return 0;
    const uint32_t nf = L->ncatfeats;
    uint64_t maxtrees = 0;
    for (uint32_t b = 0; b < L->nblocks; b++)
        if (L->blocks[b].tree_end - L->blocks[b].tree_begin > maxtrees)
            maxtrees = L->blocks[b].tree_end - L->blocks[b].tree_begin;
    P->cv.nq = calloc(nf, 1);
    P->cv.toff = calloc((size_t)nf + 1, sizeof *P->cv.toff);
    P->cv.boff = calloc((size_t)nf + 1, sizeof *P->cv.boff);
    int32_t *pos = malloc(maxtrees * sizeof *pos);
    if (!P->cv.nq || !P->cv.toff || !P->cv.boff || !pos)
        goto nomem;
    for (uint64_t t = 0; t < maxtrees; t++)
        pos[t] = -1;

    /* Sizes: each feature's trees (the union over its classes). */
    uint64_t ntree = 0, nbytes = 0;
    for (uint32_t b = 0; b < L->nblocks; b++) {
        const qs_block *B = &L->blocks[b];
        const uint32_t planes = qs_vqs_planes(B);
        for (uint32_t f = L->block_catfeat[b]; f < L->block_catfeat[b + 1]; f++) {
            const qs_catfeat *F = &L->catfeats[f];
            P->cv.toff[f] = ntree;
            P->cv.boff[f] = nbytes;
            if (!F->table || !planes || F->nclass + 1 > 64)
                continue;
            uint64_t nt = 0;
            for (uint32_t c = 0; c < F->nclass; c++) {
                const uint32_t *r = L->cat_row + F->row_off + 2 * (uint64_t)c;
                for (uint32_t i = r[0]; i < r[1]; i++)
                    if (pos[L->cat_etree[i]] < 0) {
                        pos[L->cat_etree[i]] = 0;
                        nt++;
                    }
            }
            for (uint32_t c = 0; c < F->nclass; c++) {
                const uint32_t *r = L->cat_row + F->row_off + 2 * (uint64_t)c;
                for (uint32_t i = r[0]; i < r[1]; i++)
                    pos[L->cat_etree[i]] = -1;
            }
            const uint32_t nq = (F->nclass + 1 + 15) / 16;
            const uint64_t bytes = nt * planes * nq * 16u;
            if (nbytes + bytes > CV_MAX_BYTES)
                continue; /* lane by lane */
            P->cv.nq[f] = (uint8_t)nq;
            ntree += nt;
            nbytes += bytes;
        }
    }
    P->cv.toff[nf] = ntree;
    P->cv.boff[nf] = nbytes;
    P->cv.tree = malloc((ntree ? ntree : 1) * sizeof *P->cv.tree);
    P->cv.tab = aligned_alloc(64, ((nbytes + 63) / 64 + 1) * 64);
    if (!P->cv.tree || !P->cv.tab)
        goto nomem;
    memset(P->cv.tab, 0xFF, nbytes);

    for (uint32_t b = 0; b < L->nblocks; b++) {
        const qs_block *B = &L->blocks[b];
        const uint32_t planes = qs_vqs_planes(B);
        for (uint32_t f = L->block_catfeat[b]; f < L->block_catfeat[b + 1]; f++) {
            const qs_catfeat *F = &L->catfeats[f];
            const uint32_t nq = P->cv.nq[f];
            if (!nq)
                continue;
            uint32_t *tr = P->cv.tree + P->cv.toff[f];
            uint32_t nt = 0;
            /* the trees in ascending order (a mark, then a sweep) */
            for (uint32_t c = 0; c < F->nclass; c++) {
                const uint32_t *r = L->cat_row + F->row_off + 2 * (uint64_t)c;
                for (uint32_t i = r[0]; i < r[1]; i++)
                    pos[L->cat_etree[i]] = 0;
            }
            for (uint64_t t = 0; t < B->tree_end - B->tree_begin; t++)
                if (pos[t] == 0) {
                    pos[t] = (int32_t)nt;
                    tr[nt++] = (uint32_t)t;
                }
            const size_t tab = (size_t)nq * 16;
            uint8_t *base = P->cv.tab + P->cv.boff[f];
            for (uint32_t c = 0; c < F->nclass; c++) {
                const uint32_t *r = L->cat_row + F->row_off + 2 * (uint64_t)c;
                for (uint32_t i = r[0]; i < r[1]; i++) {
                    const uint32_t k = (uint32_t)pos[L->cat_etree[i]];
                    const uint64_t mk = L->cat_emask[i];
                    for (uint32_t j = 0; j < planes; j++)
                        base[((size_t)k * planes + j) * tab + c + 1] = (uint8_t)(mk >> (8 * j));
                }
            }
            for (uint32_t k = 0; k < nt; k++)
                pos[tr[k]] = -1;
        }
    }
    free(pos);
    return 0;
nomem:
    free(pos);
    cv_free(P);
    return -1;
}


/* ---- QS blocks by ranks (vqs_plan.h: rk) */

/* Whether block B can go by ranks: a QS block of narrow trees (at most 64
 * leaves), no categorical node, no reversed tree, each group of at most
 * 255 distinct thresholds, at most 4095 groups (two rows of counts each,
 * their offsets in 64-byte rows times 8 within 16 bits). */
static int rk_block_ok(const qs_layout *L, const qs_block *B)
{
    if (B->kind != QS_BLOCK_QS || B->width == 0 || B->width > 64 || B->cat_begin != B->cat_end ||
        !qs_vqs_planes(B) || B->group_end - B->group_begin > 0xFFFu)
        return 0;
    for (uint32_t g = B->group_begin; g < B->group_end; g++) {
        const qs_group *G = &L->groups[g];
        if (G->rule & QS_GROUP_DESC)
            return 0;
        uint32_t nu = 0;
        for (uint32_t k = G->begin; k < G->end; k++)
            if ((k == G->begin || L->thr[k] != L->thr[k - 1]) && ++nu > 255)
                return 0;
    }
    return 1;
}

int qs_vqs_rank_ok(const qs_model *m, const qs_layout *L, const qs_block *B)
{
    return !m->node_linear && rk_block_ok(L, B);
}

/* The by-ranks lists (rk), freed and cleared. */
static void rk_free(qs_vqs_plan *P)
{
    free(P->rk.ok);
    free(P->rk.opoff);
    free(P->rk.pn);
    free(P->rk.ps);
    free(P->rk.op);
    free(P->rk.uoff);
    free(P->rk.u);
    free(P->rk.tb);
    free(P->rk.mt);
    memset(&P->rk, 0, sizeof P->rk);
}

/* Where operation j of block B (planes of row bytes a tree) goes: its
 * tree (*t) and its plane's slot counted from the tree's top plane, its
 * last leaf's (*k); 0 for a plane above that one, which the exit leaves
 * never read. */
static inline int rk_slot(const qs_layout *L, const qs_vqs_plan *P, const qs_block *B,
                          uint64_t row, uint64_t j, uint64_t *t, uint32_t *k)
{
    *t = B->tree_begin + P->xop.off[j] / row;
    const uint32_t pl = (uint32_t)(P->xop.off[j] % row) / 64;
    const uint32_t np = ((L->nleaves[*t] ? L->nleaves[*t] : 1) - 1) / 8 + 1;
    *k = np - 1 - pl;
    return pl < np;
}

int qs_vqs_rank_build(const qs_model *m, const qs_layout *L, qs_vqs_plan *P)
{
    if (m->node_linear || !P->xop.off || L->nblocks == 0)
        return 0;
    int any = 0;
    for (uint32_t b = 0; b < L->nblocks && !any; b++)
        any = rk_block_ok(L, &L->blocks[b]);
    if (!any)
        return 0;
    const uint64_t N = L->nentries, T = L->ntrees;
    P->rk.ok = calloc(L->nblocks, 1);
    P->rk.opoff = calloc(T + 1, sizeof *P->rk.opoff);
    P->rk.pn = calloc(T ? T * 8 : 1, 1);
    P->rk.ps = calloc(T ? T * 8 : 1, 1);
    P->rk.uoff = calloc((size_t)L->ngroups + 1, sizeof *P->rk.uoff);
    P->rk.u = malloc((N ? N : 1) * sizeof *P->rk.u);
    P->rk.tb = calloc(L->ngroups ? L->ngroups : 1, sizeof *P->rk.tb);
    uint8_t *rho = malloc(N ? N : 1);
    if (!P->rk.ok || !P->rk.opoff || !P->rk.pn || !P->rk.ps || !P->rk.uoff || !P->rk.u || !P->rk.tb ||
        !rho)
        goto nomem;
    /* first: which blocks, each group's distinct thresholds and each
     * entry's rank, the operations per tree and plane */
    uint32_t nu = 0;
    uint64_t nops = 0;
    for (uint32_t b = 0; b < L->nblocks; b++) {
        const qs_block *B = &L->blocks[b];
        for (uint32_t g = B->group_begin; g < B->group_end; g++)
            P->rk.uoff[g] = nu;
        if (!rk_block_ok(L, B))
            continue;
        P->rk.ok[b] = 1;
        uint32_t tn = 0;
        const uint32_t ng = B->group_end - B->group_begin;
        if (ng > P->rk.maxg)
            P->rk.maxg = ng;
        const uint64_t row = (uint64_t)qs_vqs_planes(B) * 64;
        for (uint32_t g = B->group_begin; g < B->group_end; g++) {
            const qs_group *G = &L->groups[g];
            P->rk.uoff[g] = nu;
            for (uint32_t k = G->begin; k < G->end; k++) {
                if (k == G->begin || L->thr[k] != L->thr[k - 1])
                    P->rk.u[nu++] = L->thr[k];
                rho[k] = (uint8_t)(nu - 1 - P->rk.uoff[g]);
            }
            /* its masks in the block's table: one a rank, then one for
             * its special list */
            P->rk.tb[g] = tn;
            tn += nu - P->rk.uoff[g] + 1;
            for (int part = 0; part < 2; part++) {
                const uint32_t i0 = part ? G->sp_begin : G->begin, i1 = part ? G->sp_end : G->end;
                for (uint32_t i = i0; i < i1; i++)
                    for (uint64_t j = P->xop.idx[i]; j < P->xop.idx[i + 1]; j++) {
                        uint64_t t;
                        uint32_t k;
                        if (rk_slot(L, P, B, row, j, &t, &k) &&
                            (part ? P->rk.ps : P->rk.pn)[t * 8 + k]++ == 254)
                            goto nomem; /* never: at most 63 entries of each kind a tree */
                    }
            }
        }
        if (tn <= QS_VQS_RK_TABLE) {
            P->rk.ok[b] = 2;
            if (tn > P->rk.maxtn)
                P->rk.maxtn = tn;
        }
    }
    for (uint64_t t = 0; t < T; t++) {
        P->rk.opoff[t] = (uint32_t)nops;
        for (unsigned k = 0; k < 8; k++) {
            /* an even count: the kernels take two at a time (the spare
             * one changes nothing: its byte's complement is 0) */
            P->rk.pn[t * 8 + k] += P->rk.pn[t * 8 + k] & 1;
            P->rk.ps[t * 8 + k] += P->rk.ps[t * 8 + k] & 1;
            nops += P->rk.pn[t * 8 + k] + P->rk.ps[t * 8 + k];
        }
        if (nops >= UINT32_MAX) { /* past 32-bit offsets: the whole planes instead */
            free(rho);
            rk_free(P);
            return 0;
        }
    }
    P->rk.opoff[T] = (uint32_t)nops;
    P->rk.uoff[L->ngroups] = nu; /* the last group's end, read below */
    P->rk.op = calloc(nops ? nops : 1, sizeof *P->rk.op);
    P->rk.mt = calloc(nops ? nops : 1, sizeof *P->rk.mt);
    uint32_t *at = malloc((T ? T * 8 : 1) * sizeof *at), *ats = malloc((T ? T * 8 : 1) * sizeof *ats);
    if (!P->rk.op || !P->rk.mt || !at || !ats) {
        free(at);
        free(ats);
        goto nomem;
    }
    for (uint64_t t = 0, n = 0; t < T; t++)
        for (unsigned k = 0; k < 8; k++) {
            at[t * 8 + k] = (uint32_t)n;
            n += P->rk.pn[t * 8 + k];
            ats[t * 8 + k] = (uint32_t)n;
            n += P->rk.ps[t * 8 + k];
        }
    /* then each operation: its counts' row (a sorted entry: its group's
     * row; a special one: ng + the row, the lanes of the special list),
     * its rank (0 for special) and its AND byte's complement; the counts
     * and ranks biased by 0x80, as signed bytes */
    for (uint32_t b = 0; b < L->nblocks; b++) {
        const qs_block *B = &L->blocks[b];
        if (!P->rk.ok[b])
            continue;
        const uint32_t ng = B->group_end - B->group_begin;
        const uint64_t row = (uint64_t)qs_vqs_planes(B) * 64;
        for (uint32_t g = B->group_begin; g < B->group_end; g++) {
            const qs_group *G = &L->groups[g];
            for (int part = 0; part < 2; part++) {
                const uint32_t i0 = part ? G->sp_begin : G->begin, i1 = part ? G->sp_end : G->end;
                const uint32_t crow = part ? ng + (g - B->group_begin) : g - B->group_begin;
                for (uint32_t i = i0; i < i1; i++)
                    for (uint64_t j = P->xop.idx[i]; j < P->xop.idx[i + 1]; j++) {
                        uint64_t t;
                        uint32_t k;
                        if (!rk_slot(L, P, B, row, j, &t, &k))
                            continue;
                        const uint32_t r = (part ? 0u : rho[i]) ^ 0x80u;
                        const uint32_t nb = (uint32_t)(uint8_t)~P->xop.byte[j] << 24;
                        const uint32_t mi = P->rk.tb[g] + (part ? P->rk.uoff[g + 1] - P->rk.uoff[g] : rho[i]);
                        const uint32_t pos = (part ? ats : at)[t * 8 + k]++;
                        P->rk.mt[pos] = mi | nb;
                        P->rk.op[pos] = crow * 8 | r << 16 | nb;
                    }
            }
        }
    }
    free(at);
    free(ats);
    free(rho);
    return 0;
nomem:
    free(rho);
    rk_free(P);
    return -1;
}
