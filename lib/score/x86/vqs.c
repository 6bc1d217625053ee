/* vqs.c: the vQS kernels (AVX2 and AVX-512) and the back ends `vqs`,
 * `vqs-avx2` and `vqs-avx512`.  Built without -march: each kernel carries
 * its own target attribute and runs only where qs_cpu_simd() (common/cpu.c:
 * CPUID, and XGETBV for the vector registers being saved on context switch)
 * allows it. */
#include "score/x86/vqs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The AND byte of plane j for a multi-word node clearing leaves [lo, hi). */
static uint8_t range_byte(uint32_t lo, uint32_t hi, uint32_t j)
{
    const uint32_t b0 = 8 * j;
    if (hi <= b0 || lo >= b0 + 8)
        return 0xFF;
    const uint32_t a = lo > b0 ? lo - b0 : 0, b = hi < b0 + 8 ? hi - b0 : 8;
    return (uint8_t)~(((1u << b) - 1) & ~((1u << a) - 1));
}

/* The operations of entry i (xop): its first plane, the planes between
 * (all their leaves cleared: byte 0), its last; none for an entry that
 * changes nothing (an all-ones AND byte or a zero OR byte on one plane).
 * Writes at most (ob - oa) / 64 + 1. */
static inline uint32_t plan_ops(const qs_vqs_plan *P, int omega, uint64_t i, uint32_t *out,
                                uint8_t *outb)
{
    const uint32_t oa = (uint32_t)P->off[i], ob = (uint32_t)(P->off[i] >> 32);
    const uint32_t ba = P->bytes[i] & 0xFF, bb = P->bytes[i] >> 8;
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
    const uint32_t oa = (uint32_t)P->off[i], ob = (uint32_t)(P->off[i] >> 32);
    if (oa == ob) {
        const uint32_t ba = P->bytes[i] & 0xFF, bb = P->bytes[i] >> 8;
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

/* The per-plane operations of every entry (xidx, xop, xbyte): the count of
 * each part of the entries, then each part written from its offset (the
 * parts side by side with threads > 1; the arrays are the same). */
static int plan_expand(const qs_layout *L, qs_vqs_plan *P, unsigned threads)
{
    const uint64_t N = L->nentries;
    P->xidx = malloc((N + 1) * sizeof *P->xidx);
    /* each entry's block kind: 0 not on byte planes, 1 QS, 2 QS-Ω */
    unsigned char *kind = calloc(N ? N : 1, 1);
    if (!P->xidx || !kind) {
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
    P->xop = malloc((at[parts] ? at[parts] : 1) * sizeof *P->xop);
    P->xbyte = malloc(at[parts] ? at[parts] : 1);
    if (!P->xop || !P->xbyte) {
        free(kind);
        return -1;
    }
#if QS_HAVE_OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(qs_team(parts)) if (parts > 1)
#endif
    for (unsigned p = 0; p < parts; p++) {
        uint64_t n = at[p];
        for (uint64_t i = N * p / parts; i < N * (p + 1) / parts; i++) {
            P->xidx[i] = n;
            if (kind[i])
                n += plan_ops(P, kind[i] == 2, i, P->xop + n, P->xbyte + n);
        }
    }
    P->xidx[N] = at[parts];
    free(kind);
    return 0;
}

/* The byte-plane plan of every entry of the blocks the kernel takes. */
int qs_vqs_plan_build(const qs_layout *L, qs_vqs_plan *P, unsigned threads)
{
    P->off = calloc(L->nentries ? L->nentries : 1, sizeof *P->off);
    P->bytes = calloc(L->nentries ? L->nentries : 1, sizeof *P->bytes);
    P->feats = calloc(L->ngroups ? L->ngroups : 1, sizeof *P->feats);
    P->feat_off = calloc((size_t)L->nblocks + 1, sizeof *P->feat_off);
    P->grow = calloc(L->ngroups ? L->ngroups : 1, sizeof *P->grow);
    if (!P->off || !P->bytes || !P->feats || !P->feat_off || !P->grow) {
        qs_vqs_plan_free(P);
        return -1;
    }
    /* Each block's features, in the order of its groups (sorted by
     * feature, so a document's values are read in address order). */
    uint64_t nf = 0;
    P->max_feats = 0;
    for (uint32_t k = 0; k < L->nblocks; k++) {
        const qs_block *B = &L->blocks[k];
        P->feat_off[k] = nf;
        for (uint32_t g = B->group_begin; g < B->group_end; g++) {
            const uint32_t f = L->groups[g].feature;
            uint64_t r = nf > P->feat_off[k] && P->feats[nf - 1] == f ? nf - 1 : P->feat_off[k];
            while (r < nf && P->feats[r] != f)
                r++;
            if (r == nf)
                P->feats[nf++] = f;
            P->grow[g] = (uint32_t)(r - P->feat_off[k]);
        }
        if (nf - P->feat_off[k] > P->max_feats)
            P->max_feats = (uint32_t)(nf - P->feat_off[k]);
    }
    P->feat_off[L->nblocks] = nf;
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
                        P->off[i] = base | base << 32;
                        P->bytes[i] = omega ? 0 : 0xFFFF;
                        continue;
                    }
                    uint32_t a, b;
                    if (wide) {
                        a = lo >> 3;
                        b = (hi - 1) >> 3;
                        P->bytes[i] = (uint16_t)(range_byte(lo, hi, a) | range_byte(lo, hi, b) << 8);
                    } else {
                        a = (uint32_t)__builtin_ctzll(nm) >> 3;
                        b = (63u - (uint32_t)__builtin_clzll(nm)) >> 3;
                        P->bytes[i] = (uint16_t)(((mk >> (8 * a)) & 0xFF) | ((mk >> (8 * b)) & 0xFF) << 8);
                    }
                    P->off[i] = (base + a * 64u) | (base + b * 64u) << 32;
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

/* Doubles from one row of the byte-plane kernel's feature values (64
 * documents) to the next: 64 and a spare line, so that a document's
 * column does not fall into a few cache sets. */
#define BP_XROW 72u
/* Rows of feature values the kernels hold at once (the block's next
 * features, refilled as its groups move on), so that the scratch stays
 * small for a block of many features. */
#define BP_XROWS 256u

static size_t vqs_xrow_bytes(const qs_vqs_plan *P)
{
    return P ? (size_t)(P->max_feats < BP_XROWS ? P->max_feats : BP_XROWS) * BP_XROW *
                   sizeof(double)
             : 0;
}

/* The row of the 64 documents' values of the block's feature r (feats[r])
 * in xT, which holds rows *c0 .. *c0 + BP_XROWS - 1: filled from xs with
 * the rows from r on when r is not among them.  The groups of a block are
 * sorted by feature, so each row is filled once. */
static inline __attribute__((always_inline)) double *
bp_row(const uint32_t *feats, uint32_t nfe, double *xT, uint32_t *c0, uint32_t r,
       const double *const *xs)
{
    if (r < *c0 || r - *c0 >= BP_XROWS) {
        const uint32_t n = nfe - r < BP_XROWS ? nfe - r : BP_XROWS;
        for (unsigned l = 0; l < 64; l++) {
            const double *x = xs[l];
            for (uint32_t k = 0; k < n; k++)
                xT[(size_t)k * BP_XROW + l] = x[feats[r + k]];
        }
        *c0 = r;
    }
    return xT + (size_t)(r - *c0) * BP_XROW;
}

/* Bytes of the accumulators the byte-plane kernel keeps for K classes
 * (64 documents x K, double and float, class-major), at the start of its
 * scratch. */
static size_t vqs_acc_bytes(uint32_t K)
{
    return ((size_t)K * 64 * (sizeof(double) + sizeof(float)) + 63) & ~(size_t)63;
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
    P->om_ok = calloc(L->nblocks, 1);
    P->om_sp = calloc(L->ngroups ? L->ngroups : 1, sizeof *P->om_sp);
    P->om_level = malloc(sizeof *P->om_level * T * QS_OMEGA_MAX_DEPTH);
    P->om_bits = malloc(sizeof *P->om_bits * T * QS_OMEGA_MAX_DEPTH);
    P->om_depth = calloc(T ? T : 1, 1);
    uint32_t most = 1;
    for (uint32_t g = 0; g < L->ngroups; g++)
        if (L->groups[g].sp_end - L->groups[g].sp_begin > most)
            most = L->groups[g].sp_end - L->groups[g].sp_begin;
    uint64_t *tmp = malloc(sizeof *tmp * 2 * most);
    P->om_uoff = malloc(sizeof *P->om_uoff * ((size_t)L->ngroups + 1));
    P->om_u = malloc(sizeof *P->om_u * (L->nentries ? L->nentries : 1));
    if (!P->om_ok || !P->om_sp || !P->om_level || !P->om_bits || !P->om_depth || !tmp ||
        !P->om_uoff || !P->om_u) {
        free(tmp);
        return -1;
    }
    /* The blocks' groups are consecutive (qs_layout_check), so om_uoff
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
            P->om_uoff[g] = nu;
            P->om_sp[g] = 0;
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
                    P->om_u[nu++] = L->thr[k];
                const uint32_t urank = nu - 1 - P->om_uoff[g];
                if (k - G->begin + 1 == ns)
                    P->om_sp[g] = (uint16_t)(urank + 1);
                const uint64_t i = L->etree[k];
                ok = ok && i < nt && L->emask[k] <= 0xFFFFu &&
                     P->om_depth[t0 + i] < QS_OMEGA_MAX_DEPTH;
                if (ok) {
                    const uint64_t slot = (t0 + i) * QS_OMEGA_MAX_DEPTH + P->om_depth[t0 + i]++;
                    P->om_level[slot] = (g - B->group_begin) << 16 | urank;
                    P->om_bits[slot] = (uint16_t)L->emask[k];
                }
            }
        }
        P->om_ok[b] = (uint8_t)ok;
    }
    P->om_uoff[L->ngroups] = nu;
    free(tmp);
    return 0;
}

void qs_vqs_plan_free(qs_vqs_plan *P)
{
    free(P->off);
    free(P->bytes);
    free(P->feats);
    free(P->feat_off);
    free(P->grow);
    free(P->xidx);
    free(P->xop);
    free(P->xbyte);
    free(P->leavesf);
    free(P->om_ok);
    free(P->om_sp);
    free(P->om_uoff);
    free(P->om_u);
    P->om_uoff = NULL;
    P->om_u = NULL;
    free(P->om_level);
    free(P->om_bits);
    free(P->om_depth);
    P->om_ok = NULL;
    P->om_sp = NULL;
    P->om_level = NULL;
    P->om_bits = NULL;
    P->om_depth = NULL;
    P->leavesf = NULL;
    P->xidx = NULL;
    P->xop = NULL;
    P->xbyte = NULL;
    P->off = NULL;
    P->bytes = NULL;
    P->feats = NULL;
    P->feat_off = NULL;
    P->grow = NULL;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* Categorical nodes, lane by lane (no order to scan). */
static void lanes_categorical(const qs_model *m, const qs_layout *L, const qs_block *B,
                              uint64_t *v, const double *const *xs, unsigned lanes)
{
    for (uint32_t c = B->cat_begin; c < B->cat_end; c++) {
        const qs_catnode *C = &L->cats[c];
        const qs_node *n = &m->nodes[C->node];
        uint64_t *row = v + (uint64_t)(C->tree & ~QS_CAT_REVERSED) * lanes;
        for (unsigned l = 0; l < lanes; l++)
            if (qs_node_goes_left(m, n, xs[l][n->feature]) == !!(C->tree & QS_CAT_REVERSED))
                row[l] &= C->mask;
    }
}

/* Exit leaves and accumulation, lane by lane (any class count and mode). */
static void lanes_leaves(const qs_model *m, const qs_layout *L, const qs_block *B,
                         const uint64_t *v, const double *const *xs, unsigned lanes,
                         unsigned nreal, double *acc, float *accf)
{
    const uint32_t K = m->num_classes;
    const uint32_t nt = (uint32_t)(B->tree_end - B->tree_begin);
    for (uint32_t i = 0; i < nt; i++) {
        uint64_t t = B->tree_begin + i;
        uint32_t nl = L->nleaves[t];
        const uint64_t *row = v + (uint64_t)i * lanes;
        for (unsigned l = 0; l < nreal; l++) {
            uint64_t leaf = (uint64_t)__builtin_ctzll(row[l] | (1ull << (nl - 1)));
            qs_layout_add_leaf(m, L, t, leaf, xs[l], acc + (size_t)l * K, accf + (size_t)l * K);
        }
    }
}

/* The lanes' false runs of a group, found together: a branch-free binary
 * search per lane for the first entry PRED(threshold, x) fails on (a
 * lane's false nodes are a prefix of the group), the lanes in lockstep so
 * their loads overlap. */
#define RUN_ENDS(PRED)                                                                         \
    do {                                                                                       \
        uint32_t n = G->end - G->begin;                                                        \
        while (n > 1) {                                                                        \
            const uint32_t half = n / 2;                                                       \
            for (unsigned l = 0; l < lanes; l++)                                               \
                e[l] = PRED(thr[e[l] + half - 1], x[l]) ? e[l] + half : e[l];                  \
            n -= half;                                                                         \
        }                                                                                      \
        if (n == 1)                                                                            \
            for (unsigned l = 0; l < lanes; l++)                                               \
                e[l] += PRED(thr[e[l]], x[l]);                                                 \
    } while (0)

#define P_LT(t, x) ((t) < (x))
#define P_LE(t, x) ((t) <= (x))
#define P_GT(t, x) ((t) > (x))
#define P_GE(t, x) ((t) >= (x))

/* For each lane: whether it takes the group's special-value list (returned
 * as a bit set; its run is then empty), else where its false run ends.
 * Ascending groups hold the nodes x goes right of (t < x for x <= t,
 * t <= x for x < t), descending ones (reversed trees) those x goes left
 * of. */
static inline __attribute__((always_inline)) unsigned long long lanes_ends(const qs_layout *L, const qs_group *G, const double *const *xs,
                                  unsigned lanes, int lt, uint32_t *e)
{
    unsigned long long sp = 0;
    double x[64];
    const double *thr = L->thr;
    for (unsigned l = 0; l < lanes; l++) {
        double xl = xs[l][G->feature];
        if (qs_group_special(G, &xl)) {
            sp |= 1ull << l;
            xl = 0.0; /* any value: the lane's run is emptied below */
        }
        x[l] = xl;
        e[l] = G->begin;
    }
    if (G->rule & QS_GROUP_DESC) {
        if (lt)
            RUN_ENDS(P_GT);
        else
            RUN_ENDS(P_GE);
    } else {
        if (lt)
            RUN_ENDS(P_LE);
        else
            RUN_ENDS(P_LT);
    }
    for (unsigned l = 0; l < lanes; l++)
        if (sp & (1ull << l))
            e[l] = G->begin;
    return sp;
}

/* ------------------------------------------------------------ AVX-512 */


#define T512 __attribute__((target("avx512f,avx512dq,avx512cd,avx512vl,avx512bw,avx2,fma,bmi,bmi2,lzcnt")))

/* The false nodes of one group for the lanes in mask k, entries [i, end). */
#define APPLY512(OP, k, i0, end)                                                               \
    for (uint32_t i = (i0); i < (end); i++) {                                                  \
        __m512i *p = (__m512i *)(v + (size_t)etree[i] * 8);                                    \
        *p = OP(*p, (__mmask8)(k), *p, _mm512_set1_epi64((long long)emask[i]));                \
    }

/* Every group of the block, LANES documents: the lanes' runs end at e[];
 * the entries before the nearest end go to every lane still running, then
 * the next segment to the fewer that remain, and so on, so no entry is
 * compared per lane and most updates are whole vectors.  APPLY(OP, lanes,
 * from, to) combines the entries' masks into the lanes' rows. */
#define GROUPS(LANES, APPLY, OP)                                                               \
    for (uint32_t g = B->group_begin; g < B->group_end; g++) {                                 \
        const qs_group *G = &L->groups[g];                                                     \
        uint32_t e[LANES];                                                                     \
        const unsigned sp = (unsigned)lanes_ends(L, G, xs, LANES, lt, e);                      \
        if (sp)                                                                                \
            APPLY(OP, sp, G->sp_begin, G->sp_end);                                             \
        for (uint32_t cur = G->begin;;) {                                                      \
            unsigned k = 0;                                                                    \
            uint32_t next = UINT32_MAX;                                                        \
            for (unsigned l = 0; l < (LANES); l++)                                             \
                if (e[l] > cur) {                                                              \
                    k |= 1u << l;                                                              \
                    next = e[l] < next ? e[l] : next;                                          \
                }                                                                              \
            if (!k)                                                                            \
                break;                                                                         \
            APPLY(OP, k, cur, next);                                                           \
            cur = next;                                                                        \
        }                                                                                      \
    }

T512 static void block512(const qs_model *m, const qs_layout *L, const qs_block *B, uint64_t *v,
                          const double *const *xs, unsigned nreal, double *acc, float *accf)
{
    const int lt = m->cmp == QS_CMP_LT;
    const uint32_t nt = (uint32_t)(B->tree_end - B->tree_begin);
    const uint32_t *etree = L->etree;
    const uint64_t *emask = L->emask;
    for (uint32_t i = 0; i < nt; i++)
        _mm512_store_si512((__m512i *)(v + (size_t)i * 8), _mm512_set1_epi64(-1));
    GROUPS(8, APPLY512, _mm512_mask_and_epi64)
    lanes_categorical(m, L, B, v, xs, 8);
    if (m->num_classes != 1 || m->node_linear) {
        lanes_leaves(m, L, B, v, xs, 8, nreal, acc, accf);
        return;
    }
    /* One class: the 8 documents' sums side by side, each in tree order. */
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

/* ---------------------------------------------- AVX-512, byte planes
 *
 * 64 documents at once, the leaf vectors stored as byte planes (as
 * RapidScorer does): plane j of a tree holds byte j (leaves 8j..8j+7) of
 * the 64 documents' vectors, one byte per document, so one 512-bit
 * operation updates 64 documents.  A QS node's mask clears one contiguous
 * leaf range (its left subtree), which touches only the planes that range
 * spans: usually one.  The planes a tree has are those of the block's mask
 * width (width / 8), or 8 per word of a multi-word block.  A QS-Ω tree has
 * two planes, the low and the high byte of the 64 documents' leaf indexes,
 * into which each false level ORs its bit. */

#define BP_LANES 64u

#define BP_INLINE static inline __attribute__((always_inline))

T512 BP_INLINE void bp_apply(const qs_vqs_plan *P, uint8_t *v, uint64_t k, uint32_t i0,
                             uint32_t end)
{
    const __m512i ones = _mm512_set1_epi8(-1);
    for (uint32_t i = i0; i < end; i++) {
        const uint64_t o = P->off[i];
        const uint32_t oa = (uint32_t)o, ob = (uint32_t)(o >> 32), by = P->bytes[i];
        /* The first and the last plane unconditionally (the same one,
         * twice, for most nodes: AND is idempotent), so the loop has no
         * data-dependent branch; planes between them, rarely, after. */
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

/* QS-Ω: each entry ORs its level's bit into the lanes of k (the low or the
 * high byte plane; both for a mask spanning the two, which a layout of
 * one bit per level never has). */
T512 BP_INLINE void bp_apply_or(const qs_vqs_plan *P, uint8_t *v, uint64_t k, uint32_t i0,
                                uint32_t end)
{
    for (uint32_t i = i0; i < end; i++) {
        const uint64_t o = P->off[i];
        const uint32_t oa = (uint32_t)o, ob = (uint32_t)(o >> 32), by = P->bytes[i];
        __m512i *pa = (__m512i *)(v + oa);
        *pa = _mm512_or_si512(*pa, _mm512_maskz_set1_epi8(k, (char)by));
        if (__builtin_expect(ob != oa, 0)) { /* never, for the layouts qs builds */
            __m512i *pb = (__m512i *)(v + ob);
            *pb = _mm512_or_si512(*pb, _mm512_maskz_set1_epi8(k, (char)(by >> 8)));
        }
    }
}

/* Lowest set bit of each byte (8 for a zero byte). */
T512 static inline __m512i bp_ctz8(__m512i p)
{
    const __m512i tz4 = _mm512_broadcast_i32x4(
        _mm_setr_epi8(8, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0));
    const __m512i lo = _mm512_and_si512(p, _mm512_set1_epi8(0x0F));
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(p, 4), _mm512_set1_epi8(0x0F));
    return _mm512_min_epu8(_mm512_shuffle_epi8(tz4, lo),
                           _mm512_add_epi8(_mm512_shuffle_epi8(tz4, hi), _mm512_set1_epi8(4)));
}

/* Groups of at most this many sorted entries are scanned by comparing
 * each entry with the 64 documents' values at once; longer ones by a
 * binary search per document.  (Measured: the scan is 5x faster on
 * oblivious models, whose groups are short; 128 to 8192 tie on 1,000 x 64
 * leaves; 2048 best on 1,000 x 256.) */
#define BP_SCAN_MAX 2048u

#define BP_SCAN(CMP)                                                                           \
    do {                                                                                       \
        const double *thr = L->thr;                                                            \
        for (uint32_t i = G->begin; i < G->end; i++) {                                         \
            const __m512d t = _mm512_set1_pd(thr[i]);                                          \
            const uint64_t k =                                                                 \
                ((uint64_t)_mm512_cmp_pd_mask(t, xv[0], CMP) |                                 \
                 (uint64_t)_mm512_cmp_pd_mask(t, xv[1], CMP) << 8 |                            \
                 (uint64_t)_mm512_cmp_pd_mask(t, xv[2], CMP) << 16 |                           \
                 (uint64_t)_mm512_cmp_pd_mask(t, xv[3], CMP) << 24 |                           \
                 (uint64_t)_mm512_cmp_pd_mask(t, xv[4], CMP) << 32 |                           \
                 (uint64_t)_mm512_cmp_pd_mask(t, xv[5], CMP) << 40 |                           \
                 (uint64_t)_mm512_cmp_pd_mask(t, xv[6], CMP) << 48 |                           \
                 (uint64_t)_mm512_cmp_pd_mask(t, xv[7], CMP) << 56) & ~sp;                     \
            if (!k)                                                                            \
                break;                                                                         \
            if (omega)                                                                         \
                bp_apply_or(P, v, k, i, i + 1);                                                \
            else                                                                               \
                bp_apply(P, v, k, i, i + 1);                                                   \
        }                                                                                      \
    } while (0)

/* The lanes of q-th group of 8 that hold real documents. */
/* The byte-plane kernels' scratch v, carved: the 64 documents' sums for K
 * classes, class-major (*accT[c][l], *accTf); the rows of the block's
 * feature values (*xT, a row of 64 per feature feats[0 .. nfe), up to
 * BP_XROWS at a time from row *c0; all filled now when they fit, the
 * usual case); then the planes, plane_bytes set to the block kind's start
 * (QS-Omega 0, QS all ones), returned. */
static inline __attribute__((always_inline)) uint8_t *
bp_scratch(const qs_vqs_plan *P, const qs_layout *L, const qs_block *B, uint8_t *v, uint32_t K,
           int omega, size_t plane_bytes, const double *const *xs, double **accT, float **accTf,
           double **xT, const uint32_t **feats, uint32_t *nfe, uint32_t *c0)
{
    *accT = (double *)(void *)v;
    *accTf = (float *)(void *)(*accT + (size_t)K * BP_LANES);
    v += vqs_acc_bytes(K);
    const uint32_t bi = (uint32_t)(B - L->blocks);
    *feats = P->feats + P->feat_off[bi];
    *nfe = (uint32_t)(P->feat_off[bi + 1] - P->feat_off[bi]);
    *xT = (double *)(void *)v;
    *c0 = UINT32_MAX;
    v += vqs_xrow_bytes(P);
    if (*nfe <= BP_XROWS)
        bp_row(*feats, *nfe, *xT, c0, 0, xs);
    memset(v, omega ? 0 : 0xFF, plane_bytes);
    return v;
}

/* Categorical nodes on byte planes (both kernels): for each lane whose
 * document the node sends the other way, its mask's bytes (narrow trees)
 * or its leaf range (multi-word trees) cleared in the tree's planes.
 * Inlined: a call from the kernels costs their vector registers (~8% on
 * MQ2008 1,000 x 64). */
static inline __attribute__((always_inline)) void
bp_categorical(const qs_model *m, const qs_layout *L, const qs_block *B, uint8_t *v,
                           size_t row, uint32_t planes, const double *const *xs)
{
    for (uint32_t c = B->cat_begin; c < B->cat_end; c++) {
        const qs_catnode *C = &L->cats[c];
        const qs_node *n = &m->nodes[C->node];
        uint8_t *r = v + (size_t)(C->tree & ~QS_CAT_REVERSED) * row;
        const uint32_t lo = (uint32_t)(C->mask >> 32), hi = (uint32_t)C->mask;
        for (unsigned l = 0; l < BP_LANES; l++)
            if (qs_node_goes_left(m, n, xs[l][n->feature]) == !!(C->tree & QS_CAT_REVERSED))
                for (uint32_t j = 0; j < planes; j++)
                    r[(size_t)j * 64 + l] &= B->width ? (uint8_t)(C->mask >> (8 * j))
                                                      : range_byte(lo, hi, j);
    }
}

static inline __mmask8 bp_real(unsigned q, unsigned nreal)
{
    const unsigned r0 = q * 8;
    return r0 >= nreal ? 0 : nreal - r0 >= 8 ? 0xFF : (__mmask8)((1u << (nreal - r0)) - 1);
}


T512 static void block512bp(const qs_model *m, const qs_layout *L, const qs_vqs_plan *P,
                            const qs_block *B, uint8_t *v,
                            const double *const *xs, unsigned nreal, double *acc, float *accf)
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
    const uint32_t *grow = P->grow;
    for (uint32_t g = B->group_begin; g < B->group_end; g++) {
        const qs_group *G = &L->groups[g];
        const double *xr = bp_row(feats, nfe, xT, &c0, grow[g], xs);
        /* The group's value rule, 8 lanes at a time: sp, the lanes that
         * take its special-value list; the others' NaN read as 0.0. */
        uint64_t sp = 0;
        __m512d xv[8];
        const unsigned rule = G->rule & QS_RULE_MASK;
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
            xv[q] = x;
        }
        if (sp) {
            if (omega)
                bp_apply_or(P, v, sp, G->sp_begin, G->sp_end);
            else
                bp_apply(P, v, sp, G->sp_begin, G->sp_end);
        }
        const int desc = (G->rule & QS_GROUP_DESC) != 0;
        if (G->end - G->begin <= BP_SCAN_MAX) {
            /* A short group: each entry compared with the 64 values at
             * once, its mask applied to the lanes it is false for, until
             * an entry is false for none (a lane's false entries are a
             * prefix of the group). */
            if (desc) {
                if (lt)
                    BP_SCAN(_CMP_GT_OQ);
                else
                    BP_SCAN(_CMP_GE_OQ);
            } else {
                if (lt)
                    BP_SCAN(_CMP_LE_OQ);
                else
                    BP_SCAN(_CMP_LT_OQ);
            }
            continue;
        }
        /* A long one: each lane's run end by binary search (the lanes in
         * lockstep), then the entries before the nearest lane's end go to
         * every lane still running, and so on: each segment one lane
         * set. */
        uint32_t e[BP_LANES];
        {
            double x[BP_LANES];
            const double *thr = L->thr;
            for (unsigned q = 0; q < 8; q++)
                _mm512_storeu_pd(x + 8 * q, xv[q]);
            const unsigned lanes = BP_LANES;
            for (unsigned l = 0; l < BP_LANES; l++)
                e[l] = G->begin;
            if (desc) {
                if (lt)
                    RUN_ENDS(P_GT);
                else
                    RUN_ENDS(P_GE);
            } else {
                if (lt)
                    RUN_ENDS(P_LE);
                else
                    RUN_ENDS(P_LT);
            }
            for (unsigned l = 0; l < BP_LANES; l++)
                if (sp & (1ull << l))
                    e[l] = G->begin;
        }
        const __m512i E0 = _mm512_loadu_si512(e), E1 = _mm512_loadu_si512(e + 16),
                      E2 = _mm512_loadu_si512(e + 32), E3 = _mm512_loadu_si512(e + 48);
        const __m512i none = _mm512_set1_epi32(-1);
        for (uint32_t cur = G->begin;;) {
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
            if (omega)
                bp_apply_or(P, v, k, cur, next);
            else
                bp_apply(P, v, k, cur, next);
            cur = next;
        }
    }
    bp_categorical(m, L, B, v, row, planes, xs);
    /* Exit leaves, per document: QS, the lowest set bit over the planes,
     * the tree's last leaf forced on (as the scalar kernels do), as its
     * plane (b1) and its bit there (b0); QS-Ω, the index's high (b1) and
     * low (b0) byte, masked to the tree's leaves.  Then 8 documents at a
     * time their contributions gathered and added, each document's sums in
     * tree order. */
    const uint32_t *nl = L->nleaves + B->tree_begin;
    const uint64_t *off = L->leaf_off + B->tree_begin;
    const int mode = m->float_accumulate;
    /* Lane by lane (qs_layout_add_leaf) for linear leaves; else 8
     * documents' sums side by side, in registers for one class, in accT
     * for several. */
    const int gather = !m->node_linear;
    const __m512i shift = _mm512_set1_epi64(omega ? 8 : 3);
    __m512d a[8];
    __m256 af[8];
    if (gather && K == 1)
        for (unsigned q = 0; q < 8; q++) {
            a[q] = _mm512_maskz_loadu_pd(bp_real(q, nreal), acc + q * 8);
            af[q] = _mm256_maskz_loadu_ps(bp_real(q, nreal), accf + q * 8);
        }
    else if (gather)
        for (uint32_t c = 0; c < K; c++)
            for (unsigned l = 0; l < BP_LANES; l++) {
                accT[(size_t)c * BP_LANES + l] = l < nreal ? acc[(size_t)l * K + c] : 0.0;
                accTf[(size_t)c * BP_LANES + l] = l < nreal ? accf[(size_t)l * K + c] : 0.0f;
            }
    for (uint32_t i = 0; i < nt; i++) {
        uint8_t *r = v + (size_t)i * row;
        __m512i b0, b1;
        __m512i lmask = _mm512_set1_epi64(-1);
        if (omega) {
            b0 = _mm512_load_si512((const __m512i *)r);
            b1 = _mm512_load_si512((const __m512i *)(r + 64));
            lmask = _mm512_set1_epi64((long long)(nl[i] - 1));
        } else {
            const uint32_t last = nl[i] - 1;
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
        /* The leaf in one byte where it fits: an Ω tree of at most 256
         * leaves, a QS tree of at most 32 planes (b1 < 32, so the 16-bit
         * shift moves no bit across a byte). */
        const uint32_t nli = nl[i];
        const int one = omega ? nli <= 256 : planes <= 32;
        if (one && !omega)
            b0 = _mm512_add_epi8(b0, _mm512_slli_epi16(b1, 3));
        uint8_t lb0[BP_LANES] __attribute__((aligned(64))), lb1[BP_LANES] __attribute__((aligned(64)));
        _mm512_store_si512((__m512i *)lb0, b0);
        if (!one)
            _mm512_store_si512((__m512i *)lb1, b1);
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
        const __m512i o = _mm512_set1_epi64((long long)off[i]);
        const uint32_t cls = m->trees[B->tree_begin + i].class_id;
        /* Trees of at most 16 leaves: their values in two registers, each
         * document's picked by a permutation (of the index's low 4 bits);
         * else gathered. */
        const __m512d T0 = _mm512_maskz_loadu_pd(nli >= 8 ? 0xFF : (__mmask8)((1u << nli) - 1),
                                                 L->leaves + off[i]);
        const __m512d T1 =
            nli <= 8 ? T0
                     : _mm512_maskz_loadu_pd(nli >= 16 ? 0xFF : (__mmask8)((1u << (nli - 8)) - 1),
                                             L->leaves + off[i] + 8);
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
            if (K == 1) {
                switch (mode) {
                case QS_ACC_DOUBLE: a[q] = _mm512_add_pd(a[q], c); break;
                case QS_ACC_FLOAT: af[q] = _mm256_add_ps(af[q], _mm512_cvtpd_ps(c)); break;
                default: af[q] = _mm512_cvtpd_ps(_mm512_add_pd(_mm512_cvtps_pd(af[q]), c)); break;
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
    if (gather && K == 1)
        for (unsigned q = 0; q < 8; q++) {
            _mm512_mask_storeu_pd(acc + q * 8, bp_real(q, nreal), a[q]);
            _mm256_mask_storeu_ps(accf + q * 8, bp_real(q, nreal), af[q]);
        }
    else if (gather)
        for (unsigned l = 0; l < nreal; l++)
            for (uint32_t c = 0; c < K; c++) {
                acc[(size_t)l * K + c] = accT[(size_t)c * BP_LANES + l];
                accf[(size_t)l * K + c] = accTf[(size_t)c * BP_LANES + l];
            }
}

/* ------------------------------------------------------------ AVX2 */

#define T256 __attribute__((target("avx2,fma,bmi,bmi2")))

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

#define APPLY256(OP, k, i0, end)                                                               \
    do {                                                                                       \
        const __m256i km = _mm256_load_si256((const __m256i *)lane_masks4[k]);                 \
        for (uint32_t i = (i0); i < (end); i++) {                                              \
            __m256i *p = (__m256i *)(v + (size_t)etree[i] * 4);                                \
            *p = OP(*p, km, _mm256_set1_epi64x((long long)emask[i]));                          \
        }                                                                                      \
    } while (0)

T256 static void block256(const qs_model *m, const qs_layout *L, const qs_block *B, uint64_t *v,
                          const double *const *xs, unsigned nreal, double *acc, float *accf)
{
    const int lt = m->cmp == QS_CMP_LT;
    const uint32_t nt = (uint32_t)(B->tree_end - B->tree_begin);
    const uint32_t *etree = L->etree;
    const uint64_t *emask = L->emask;
    for (uint32_t i = 0; i < nt; i++)
        _mm256_store_si256((__m256i *)(v + (size_t)i * 4), _mm256_set1_epi64x(-1));
    GROUPS(4, APPLY256, OP256_AND)
    lanes_categorical(m, L, B, v, xs, 4);
    lanes_leaves(m, L, B, v, xs, 4, nreal, acc, accf);
}

/* ---------------------------------------------- AVX2, byte planes
 *
 * The AVX-512 kernel's 64 documents, byte planes, plan and feature rows,
 * each 512-bit operation done as two 256-bit ones, and the lane sets, for
 * want of mask registers, as byte vectors (0xFF for a lane in the set).
 * The sums always go through the class-major accumulators. */

/* 32 lanes' bits -> their bytes (byte i: 0xFF when bit i of k is set). */
T256 BP_INLINE __m256i bp2_bytes(uint32_t k)
{
    const __m256i sel = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
                                         2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bits = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)k), sel);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bits), bits);
}

/* Plane p (64 bytes) &= the byte by in the lanes of K0:K1. */
T256 BP_INLINE void bp2_and(uint8_t *p, __m256i K0, __m256i K1, uint32_t by)
{
    const __m256i c = _mm256_set1_epi8((char)by);
    __m256i *q = (__m256i *)p;
    q[0] = _mm256_andnot_si256(_mm256_andnot_si256(c, K0), q[0]);
    q[1] = _mm256_andnot_si256(_mm256_andnot_si256(c, K1), q[1]);
}

T256 BP_INLINE void bp2_apply(const qs_vqs_plan *P, uint8_t *v, __m256i K0, __m256i K1,
                              uint32_t i0, uint32_t end)
{
    for (uint32_t i = i0; i < end; i++) {
        const uint64_t o = P->off[i];
        const uint32_t oa = (uint32_t)o, ob = (uint32_t)(o >> 32), by = P->bytes[i];
        bp2_and(v + oa, K0, K1, by & 0xFF);
        bp2_and(v + ob, K0, K1, by >> 8);
        for (uint32_t j = oa + 64; j < ob; j += 64)
            bp2_and(v + j, K0, K1, 0);
    }
}

T256 BP_INLINE void bp2_apply_or(const qs_vqs_plan *P, uint8_t *v, __m256i K0, __m256i K1,
                                 uint32_t i0, uint32_t end)
{
    for (uint32_t i = i0; i < end; i++) {
        const uint64_t o = P->off[i];
        const uint32_t oa = (uint32_t)o, ob = (uint32_t)(o >> 32), by = P->bytes[i];
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
T256 BP_INLINE void bp2_xapply(const qs_vqs_plan *P, uint8_t *v, __m256i K0, __m256i K1,
                               uint32_t i0, uint32_t end, int omega)
{
    const uint32_t *op = P->xop;
    const uint8_t *ob = P->xbyte;
    const uint64_t j1 = P->xidx[end];
    if (omega) {
        for (uint64_t j = P->xidx[i0]; j < j1; j++) {
            __m256i *q = (__m256i *)(v + op[j]);
            const __m256i c = _mm256_set1_epi8((char)ob[j]);
            q[0] = _mm256_or_si256(q[0], _mm256_and_si256(K0, c));
            q[1] = _mm256_or_si256(q[1], _mm256_and_si256(K1, c));
        }
        return;
    }
#pragma GCC unroll 4
    for (uint64_t j = P->xidx[i0]; j < j1; j++) {
        __m256i *q = (__m256i *)(v + op[j]);
        const __m256i c = _mm256_set1_epi8((char)ob[j]);
        q[0] = _mm256_andnot_si256(_mm256_andnot_si256(c, K0), q[0]);
        q[1] = _mm256_andnot_si256(_mm256_andnot_si256(c, K1), q[1]);
    }
}

/* Lowest set bit of each byte (8 for a zero byte). */
T256 BP_INLINE __m256i bp2_ctz8(__m256i p)
{
    const __m256i tz4 = _mm256_setr_epi8(8, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0, 8, 0, 1, 0,
                                         2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0);
    const __m256i lo = _mm256_and_si256(p, _mm256_set1_epi8(0x0F));
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(p, 4), _mm256_set1_epi8(0x0F));
    return _mm256_min_epu8(_mm256_shuffle_epi8(tz4, lo),
                           _mm256_add_epi8(_mm256_shuffle_epi8(tz4, hi), _mm256_set1_epi8(4)));
}

/* The lanes where entry PRED(t, x) holds, 4 per compare. */
/* The entries [i, end) to the lanes K0:K1: one operation per plane where
 * the plan has them, else per entry (first and last plane). */
#define BP2_APPLY(K0, K1, i, end)                                                              \
    do {                                                                                       \
        if (P->xop)                                                                            \
            bp2_xapply(P, v, K0, K1, i, end, omega);                                           \
        else if (omega)                                                                        \
            bp2_apply_or(P, v, K0, K1, i, end);                                                \
        else                                                                                   \
            bp2_apply(P, v, K0, K1, i, end);                                                   \
    } while (0)

#define BP2_SCAN(CMP)                                                                          \
    do {                                                                                       \
        const double *thr = L->thr;                                                            \
        for (uint32_t i = G->begin; i < G->end; i++) {                                         \
            const __m256d t = _mm256_set1_pd(thr[i]);                                          \
            uint64_t k = 0;                                                                    \
            for (unsigned q = 0; q < 16; q++)                                                  \
                k |= (uint64_t)_mm256_movemask_pd(                                             \
                         _mm256_cmp_pd(t, _mm256_load_pd(xc + 4 * q), CMP))                    \
                     << (4 * q);                                                               \
            k &= ~sp;                                                                          \
            if (!k)                                                                            \
                break;                                                                         \
            const __m256i K0 = bp2_bytes((uint32_t)k), K1 = bp2_bytes((uint32_t)(k >> 32));    \
            BP2_APPLY(K0, K1, i, i + 1);                                                       \
        }                                                                                      \
    } while (0)

/* Groups longer than BP2_SCAN_MAX entries and at most BP2_ENDS16_MAX:
 * each lane's run end found first (binary search, the 64 lanes in
 * lockstep so that their loads overlap), as 16-bit offsets from the
 * group's start, then the entries applied segment by segment, each
 * segment's lanes (those whose run goes past its start) found by 4 vector
 * compares of the ends; the scan costs 16 double compares per entry
 * instead.  Shorter groups are scanned; longer ones keep 32-bit ends. */
#define BP2_SCAN_MAX 8u
#define BP2_ENDS16_MAX 32767u

/* The entries of a group (from entry `base`) for runs ending at e16[l]
 * (entries base .. base + e16[l] - 1 are false for lane l): from each end
 * to the next, the lanes still running, as byte masks. */
T256 BP_INLINE void bp2_segments(const qs_vqs_plan *P, uint8_t *v, const uint16_t *e16,
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
        BP2_APPLY(K0, K1, base + cur, base + next);
        cur = next;
    }
}

/* A group's value rule on 64 documents' values x (qs_group_special): the
 * values to compare into out (NaN read as 0.0 unless the rule is NaN's;
 * out may be x), and the documents that take the special-value list. */
T256 BP_INLINE uint64_t bp2_rule64(unsigned rule, const double *x, double *out)
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

T256 static void block256bp(const qs_model *m, const qs_layout *L, const qs_vqs_plan *P,
                            const qs_block *B, uint8_t *v,
                            const double *const *xs, unsigned nreal, double *acc, float *accf)
{
    const int lt = m->cmp == QS_CMP_LT;
    const int omega = B->kind == QS_BLOCK_OMEGA;
    const uint32_t nt = (uint32_t)(B->tree_end - B->tree_begin);
    const uint32_t planes = qs_vqs_planes(B);
    const size_t row = (size_t)planes * 64;
    const uint32_t K = m->num_classes;
    double *accT, *xT;
    float *accTf;
    const uint32_t *feats;
    uint32_t nfe, c0;
    v = bp_scratch(P, L, B, v, K, omega, row * nt, xs, &accT, &accTf, &xT, &feats, &nfe, &c0);
    for (uint32_t g = B->group_begin; g < B->group_end; g++) {
        const qs_group *G = &L->groups[g];
        const double *xr = bp_row(feats, nfe, xT, &c0, P->grow[g], xs);
        double xc[BP_LANES] __attribute__((aligned(32)));
        const uint64_t sp = bp2_rule64(G->rule & QS_RULE_MASK, xr, xc);
        if (sp) {
            const __m256i K0 = bp2_bytes((uint32_t)sp), K1 = bp2_bytes((uint32_t)(sp >> 32));
            BP2_APPLY(K0, K1, G->sp_begin, G->sp_end);
        }
        const int desc = (G->rule & QS_GROUP_DESC) != 0;
        if (G->end - G->begin <= BP2_SCAN_MAX) {
            if (desc) {
                if (lt)
                    BP2_SCAN(_CMP_GT_OQ);
                else
                    BP2_SCAN(_CMP_GE_OQ);
            } else {
                if (lt)
                    BP2_SCAN(_CMP_LE_OQ);
                else
                    BP2_SCAN(_CMP_LT_OQ);
            }
            continue;
        }
        /* Each lane's run end by binary search (RUN_ENDS, the lanes in
         * lockstep), then one lane set per segment between consecutive
         * ends. */
        uint32_t e[BP_LANES];
        {
            const double *x = xc, *thr = L->thr;
            const unsigned lanes = BP_LANES;
            for (unsigned l = 0; l < BP_LANES; l++)
                e[l] = G->begin;
            if (desc) {
                if (lt)
                    RUN_ENDS(P_GT);
                else
                    RUN_ENDS(P_GE);
            } else {
                if (lt)
                    RUN_ENDS(P_LE);
                else
                    RUN_ENDS(P_LT);
            }
            for (unsigned l = 0; l < BP_LANES; l++)
                if (sp & (1ull << l))
                    e[l] = G->begin;
        }
        if (G->end - G->begin <= BP2_ENDS16_MAX) {
            uint16_t e16[BP_LANES] __attribute__((aligned(32)));
            for (unsigned l = 0; l < BP_LANES; l++)
                e16[l] = (uint16_t)(e[l] - G->begin);
            bp2_segments(P, v, e16, G->begin, omega);
            continue;
        }
        for (uint32_t cur = G->begin;;) {
            uint64_t k = 0;
            uint32_t next = UINT32_MAX;
            for (unsigned l = 0; l < BP_LANES; l++)
                if (e[l] > cur) {
                    k |= 1ull << l;
                    next = e[l] < next ? e[l] : next;
                }
            if (!k)
                break;
            const __m256i K0 = bp2_bytes((uint32_t)k), K1 = bp2_bytes((uint32_t)(k >> 32));
            BP2_APPLY(K0, K1, cur, next);
            cur = next;
        }
    }
    bp_categorical(m, L, B, v, row, planes, xs);
    /* Exit leaves as the AVX-512 kernel finds them, 32 lanes at a time;
     * sums 4 documents at a time, class-major. */
    const uint32_t *nl = L->nleaves + B->tree_begin;
    const uint64_t *off = L->leaf_off + B->tree_begin;
    const int mode = m->float_accumulate;
    const int gather = !m->node_linear;
    if (gather)
        for (uint32_t c = 0; c < K; c++)
            for (unsigned l = 0; l < BP_LANES; l++) {
                accT[(size_t)c * BP_LANES + l] = l < nreal ? acc[(size_t)l * K + c] : 0.0;
                accTf[(size_t)c * BP_LANES + l] = l < nreal ? accf[(size_t)l * K + c] : 0.0f;
            }
    for (uint32_t i = 0; i < nt; i++) {
        uint8_t *r = v + (size_t)i * row;
        const uint32_t nli = nl[i];
        const int one = omega ? nli <= 256 : planes <= 32;
        uint8_t lb0[BP_LANES] __attribute__((aligned(32))), lb1[BP_LANES] __attribute__((aligned(32)));
        if (omega) {
            memcpy(lb0, r, BP_LANES);
            memcpy(lb1, r + 64, BP_LANES);
        } else {
            const uint32_t last = nli - 1;
            uint8_t *lp = r + (size_t)(last >> 3) * 64;
            for (unsigned h = 0; h < 2; h++) {
                __m256i *q = (__m256i *)(lp + 32 * h);
                *q = _mm256_or_si256(*q, _mm256_set1_epi8((char)(1u << (last & 7))));
            }
            for (unsigned h = 0; h < 2; h++) {
                /* the lowest nonzero plane up to the last leaf's (which
                 * has that leaf's bit), from the top down: each nonzero
                 * plane replaces the one above it; then its lowest bit */
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
        const uint32_t cls = m->trees[B->tree_begin + i].class_id;
        if (P->leavesf) {
            /* float sums: 8 lanes per gather from the float32 table */
            const __m256i o8 = _mm256_set1_epi32((int)off[i]);
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
            continue;
        }
        const __m256i o = _mm256_set1_epi64x((long long)off[i]);
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
    if (gather)
        for (unsigned l = 0; l < nreal; l++)
            for (uint32_t c = 0; c < K; c++) {
                acc[(size_t)l * K + c] = accT[(size_t)c * BP_LANES + l];
                accf[(size_t)l * K + c] = accTf[(size_t)c * BP_LANES + l];
            }
}

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
T256 BP_INLINE void om_store16(int16_t *p, __m256i c0, __m256i c1, __m256i c2, __m256i c3)
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

/* QS-Ω by ranks (qs_vqs_plan, om_*), 64 documents.  First each
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
T256 static void block256om(const qs_model *m, const qs_layout *L, const qs_vqs_plan *P,
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
        const double *u = P->om_u + P->om_uoff[g];
        const uint32_t nu = P->om_uoff[g + 1] - P->om_uoff[g];
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
            row[__builtin_ctzll(sp)] = (int16_t)P->om_sp[g];
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
        const uint32_t *lv = P->om_level + t * QS_OMEGA_MAX_DEPTH;
        const uint16_t *bits = P->om_bits + t * QS_OMEGA_MAX_DEPTH;
        __m256i i0 = _mm256_setzero_si256(), i1 = i0, i2 = i0, i3 = i0;
        for (unsigned l = 0; l < P->om_depth[t]; l++) {
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

static void kernel_block(const qs_simd_kernel *k, unsigned lanes, const qs_model *m,
                         const qs_layout *L, const qs_block *B, uint64_t *v,
                         const double *const *xs, unsigned nreal, double *acc, float *accf)
{
    const qs_vqs_plan *P = k->data;
    if (k->level == QS_SIMD_AVX2 && lanes == BP_LANES && P && P->om_ok && P->om_ok[B - L->blocks])
        block256om(m, L, P, B, (uint8_t *)v, xs, nreal, acc, accf);
    else if (k->level == QS_SIMD_AVX512 && lanes == BP_LANES && qs_vqs_planes(B) && P && P->off)
        block512bp(m, L, P, B, (uint8_t *)v, xs, nreal, acc, accf);
    else if (lanes == BP_LANES && qs_vqs_planes(B) && P && P->off)
        block256bp(m, L, P, B, (uint8_t *)v, xs, nreal, acc, accf);
    else if (k->level == QS_SIMD_AVX512)
        block512(m, L, B, v, xs, nreal, acc, accf);
    else
        block256(m, L, B, v, xs, nreal, acc, accf);
}

#define HAVE_KERNELS 1
#else /* not x86-64 with GCC or Clang: no SIMD kernels, and the probe says so */
#define HAVE_KERNELS 0
#endif

/* ------------------------------------------------------------ back ends */

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
    if (!HAVE_KERNELS) {
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

/* The float32 leaf table, for models that add (float)c in float32 (the
 * conversion is the one the kernel made per lane), leaf offsets within 31
 * bits. */
static int vqs_leaves_float(const qs_scorer *s, qs_vqs_plan *P)
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

/* The state: the byte-plane plan (AVX-512 and AVX2). */
static int vqs_prepare(const qs_backend_def *d, const qs_scorer *s, void **state,
                       qs_error *err)
{
    *state = NULL;
    if (!level_of(d))
        return 0;
    qs_vqs_plan *P = calloc(1, sizeof *P);
    if (!P || qs_vqs_plan_build(s->L, P, s->build_threads) != 0 || vqs_leaves_float(s, P) != 0 ||
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
    const size_t bytes = qs_bwqs_vec_bytes(s, tree_bytes) + vqs_acc_bytes(s->m->num_classes) +
                         vqs_xrow_bytes(P);
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
#if HAVE_KERNELS
    const qs_simd_kernel k = {
        .level = level_of(d),
        .data = state,
        .takes = qs_vqs_block_ok,
        .lanes = qs_vqs_lanes,
        .block = kernel_block,
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
