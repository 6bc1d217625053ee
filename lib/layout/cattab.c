/* cattab.c: the categorical tables of a layout (layout.h, qs_catfeat).
 *
 * A categorical node's test depends on its value x only through trunc(x)
 * for x >= 0 (qs_node_goes_left: NaN and negative values aside, a value is
 * truncated and looked up in the node's category bit set, and every value at
 * or beyond the set's last word goes the not-a-member way).  So for one
 * feature of one block the nodes a value makes false, and the AND of their
 * masks per tree, are a function of trunc(x) below R = the largest set's
 * range, and one more row for x >= R.  Each row is built by asking
 * qs_node_goes_left itself at the row's value, so the table agrees with the
 * nodes by construction; values it cannot stand for (NaN, negative) are
 * left to the nodes.  Equal rows are one class (most values of a feature
 * are in no node's set and share the last row's list).
 *
 * Bounds: a feature whose domain is too large (more than CAT_MAX_ROWS rows,
 * or more than CAT_MAX_EVALS tests to build) keeps its nodes, and all tables
 * of a layout hold at most CAT_MAX_ENTRIES entries (12 bytes each): what
 * does not fit keeps its nodes too. */
#include "layout/layout.h"

#include <string.h>

#define CAT_MAX_ROWS 65536u
#define CAT_MAX_EVALS (1u << 24)
#define CAT_MAX_ENTRIES (1u << 22)

typedef struct {
    uint32_t *etree;
    uint64_t *emask;
    uint64_t n, cap;
} entries;

static int ent_push(entries *E, uint32_t t, uint64_t mask)
{
    if (E->n == E->cap) {
        uint64_t cap = E->cap ? E->cap * 2 : 1024;
        uint32_t *a = realloc(E->etree, cap * sizeof *a);
        if (!a)
            return -1;
        E->etree = a;
        uint64_t *b = realloc(E->emask, cap * sizeof *b);
        if (!b)
            return -1;
        E->emask = b;
        E->cap = cap;
    }
    E->etree[E->n] = t;
    E->emask[E->n] = mask;
    E->n++;
    return 0;
}

static int same_rows(const entries *E, uint32_t b0, uint32_t e0, uint32_t b1, uint32_t e1)
{
    if (e0 - b0 != e1 - b1)
        return 0;
    if (e0 == b0) /* empty (the arrays may not exist yet) */
        return 1;
    return !memcmp(E->etree + b0, E->etree + b1, (size_t)(e0 - b0) * sizeof *E->etree) &&
           !memcmp(E->emask + b0, E->emask + b1, (size_t)(e0 - b0) * sizeof *E->emask);
}

static uint64_t row_hash(const entries *E, uint32_t b, uint32_t e)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (e - b);
    for (uint32_t i = b; i < e; i++) {
        h = (h ^ E->etree[i]) * 0x100000001B3ull;
        h = (h ^ E->emask[i]) * 0x100000001B3ull;
        h ^= h >> 29;
    }
    return h;
}

static uint32_t cat_feature(const qs_layout *L, const qs_model *m, uint32_t c)
{
    return m->nodes[L->cats[c].node].feature;
}

/* Sort a block's catnode indices by (feature, index): a bottom-up merge
 * sort (no qsort_r, whose context argument is not portable). */
static int sort_cats(uint32_t *a, uint32_t n, const qs_layout *L, const qs_model *m)
{
    if (n < 2)
        return 0;
    uint32_t *tmp = malloc((size_t)n * sizeof *tmp);
    if (!tmp)
        return -1;
    for (uint32_t w = 1; w < n; w *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * w) {
            uint32_t mid = n - lo > w ? lo + w : n, hi = n - lo > 2 * w ? lo + 2 * w : n;
            uint32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                uint32_t fu = cat_feature(L, m, a[i]), fv = cat_feature(L, m, a[j]);
                tmp[k++] = (fu < fv || (fu == fv && a[i] < a[j])) ? a[i++] : a[j++];
            }
            while (i < mid)
                tmp[k++] = a[i++];
            while (j < hi)
                tmp[k++] = a[j++];
        }
        memcpy(a, tmp, (size_t)n * sizeof *a);
        if (w > n / 2)
            break;
    }
    free(tmp);
    return 0;
}

typedef struct {
    entries E;
    uint32_t *crow;            /* (begin, end) per class */
    uint64_t ncrow, capcrow;
    uint64_t *acc;             /* per block tree */
    uint32_t *touched;
    uint8_t *seen;
} builder;

/* One feature's table: its values' rows 0 .. R (row R: x >= R), each mapped
 * to a class (cls[r]), the classes' lists appended to b->E and b->crow.
 * 0; 1 when it does not fit the bounds (nothing kept); -1: out of memory. */
static int build_table(const qs_layout *L, const qs_model *m, const qs_block *B,
                       const uint32_t *nodes, uint32_t nn, uint32_t R, builder *bd,
                       uint32_t *cls, uint32_t *nclass)
{
    entries *E = &bd->E;
    const uint64_t wmask = B->width >= 64 ? ~0ull : (1ull << B->width) - 1;
    const uint64_t n0 = E->n, c0 = bd->ncrow;
    uint32_t hcap = 16;
    while (hcap < 2 * (R + 1))
        hcap *= 2;
    uint32_t *slot = malloc((size_t)hcap * sizeof *slot);
    uint64_t *hval = malloc(((size_t)R + 1) * sizeof *hval);
    int rc = 0;
    if (!slot || !hval) {
        rc = -1;
        goto out;
    }
    memset(slot, 0xFF, (size_t)hcap * sizeof *slot);
    uint32_t nc = 0;
    for (uint32_t r = 0; r <= R; r++) {
        const double x = (double)r;
        uint32_t nt = 0;
        for (uint32_t i = 0; i < nn; i++) {
            const qs_catnode *C = &L->cats[nodes[i]];
            if (qs_node_goes_left(m, &m->nodes[C->node], x) != !!(C->tree & QS_CAT_REVERSED))
                continue;
            const uint32_t t = C->tree & ~QS_CAT_REVERSED;
            if (!bd->seen[t]) {
                bd->seen[t] = 1;
                bd->acc[t] = ~0ull;
                bd->touched[nt++] = t;
            }
            bd->acc[t] &= C->mask;
        }
        const uint32_t b = (uint32_t)E->n;
        for (uint32_t i = 0; i < nt; i++) {
            const uint32_t t = bd->touched[i];
            bd->seen[t] = 0;
            if (rc == 0 && (bd->acc[t] & wmask) != wmask && ent_push(E, t, bd->acc[t]) != 0)
                rc = -1;
        }
        if (rc != 0)
            goto out;
        const uint32_t e = (uint32_t)E->n;
        if (E->n > CAT_MAX_ENTRIES) {
            rc = 1;
            goto out;
        }
        const uint64_t h = row_hash(E, b, e);
        uint32_t k = (uint32_t)h & (hcap - 1), c;
        while ((c = slot[k]) != UINT32_MAX) {
            const uint32_t *p = bd->crow + c0 + 2 * (uint64_t)c;
            if (hval[c] == h && same_rows(E, p[0], p[1], b, e))
                break;
            k = (k + 1) & (hcap - 1);
        }
        if (c == UINT32_MAX) { /* a new class */
            if (bd->ncrow + 2 > bd->capcrow) {
                uint64_t cap = bd->capcrow ? bd->capcrow * 2 : 256;
                uint32_t *q = realloc(bd->crow, cap * sizeof *q);
                if (!q) {
                    rc = -1;
                    goto out;
                }
                bd->crow = q;
                bd->capcrow = cap;
            }
            c = nc++;
            slot[k] = c;
            hval[c] = h;
            bd->crow[bd->ncrow] = b;
            bd->crow[bd->ncrow + 1] = e;
            bd->ncrow += 2;
        } else {
            E->n = b; /* the same list as class c */
        }
        cls[r] = c;
    }
    *nclass = nc;
out:
    if (rc != 0) {
        E->n = n0;
        bd->ncrow = c0;
    }
    free(slot);
    free(hval);
    return rc;
}

static void cattab_clear(qs_layout *L)
{
    free(L->block_catfeat);
    free(L->catfeats);
    free(L->cat_order);
    free(L->cat_cls);
    free(L->cat_row);
    free(L->cat_etree);
    free(L->cat_emask);
    L->block_catfeat = L->cat_order = L->cat_cls = L->cat_row = L->cat_etree = NULL;
    L->catfeats = NULL;
    L->cat_emask = NULL;
    L->ncatfeats = 0;
    L->ncatent = 0;
}

int qs_layout_cattab(qs_layout *L, const qs_model *m)
{
    cattab_clear(L);
    L->block_catfeat = calloc((size_t)L->nblocks + 1, sizeof *L->block_catfeat);
    L->cat_order = malloc(((size_t)L->ncat + 1) * sizeof *L->cat_order);
    if (!L->block_catfeat || !L->cat_order)
        goto fail;
    for (uint32_t c = 0; c < L->ncat; c++)
        L->cat_order[c] = c;

    /* One catfeat per (narrow QS block, feature). */
    uint64_t nf = 0, maxtrees = 0;
    for (uint32_t b = 0; b < L->nblocks; b++) {
        const qs_block *B = &L->blocks[b];
        L->block_catfeat[b] = (uint32_t)nf;
        if (B->kind != QS_BLOCK_QS || B->width == 0 || B->cat_begin == B->cat_end)
            continue;
        uint32_t *a = L->cat_order + B->cat_begin;
        const uint32_t n = B->cat_end - B->cat_begin;
        if (sort_cats(a, n, L, m) != 0)
            goto fail;
        for (uint32_t i = 0; i < n; i++)
            if (i == 0 || cat_feature(L, m, a[i]) != cat_feature(L, m, a[i - 1]))
                nf++;
        if (B->tree_end - B->tree_begin > maxtrees)
            maxtrees = B->tree_end - B->tree_begin;
    }
    L->block_catfeat[L->nblocks] = (uint32_t)nf;
    if (nf == 0)
        return 0;

    builder bd = {0};
    uint32_t *cls = NULL;
    uint64_t ncls = 0, capcls = 0;
    int rc = -1;
    L->catfeats = calloc(nf, sizeof *L->catfeats);
    bd.acc = malloc(maxtrees * sizeof *bd.acc);
    bd.touched = malloc(maxtrees * sizeof *bd.touched);
    bd.seen = calloc(maxtrees, 1);
    if (!L->catfeats || !bd.acc || !bd.touched || !bd.seen)
        goto out;

    uint32_t f = 0;
    for (uint32_t b = 0; b < L->nblocks; b++) {
        const qs_block *B = &L->blocks[b];
        if (B->kind != QS_BLOCK_QS || B->width == 0)
            continue;
        for (uint32_t i = B->cat_begin; i < B->cat_end;) {
            const uint32_t feat = cat_feature(L, m, L->cat_order[i]);
            uint32_t j = i;
            uint64_t R = 0;
            while (j < B->cat_end && cat_feature(L, m, L->cat_order[j]) == feat) {
                const uint64_t r = (uint64_t)m->nodes[L->cats[L->cat_order[j]].node].cat_nwords * 32u;
                if (r > R)
                    R = r;
                j++;
            }
            qs_catfeat *F = &L->catfeats[f++];
            F->feature = feat;
            F->node_begin = i;
            F->node_end = j;
            if (R <= CAT_MAX_ROWS && (R + 1) * (j - i) <= CAT_MAX_EVALS) {
                if (ncls + R + 1 > capcls) {
                    uint64_t cap = capcls ? capcls : 256;
                    while (cap < ncls + R + 1)
                        cap *= 2;
                    uint32_t *p = realloc(cls, cap * sizeof *p);
                    if (!p)
                        goto out;
                    cls = p;
                    capcls = cap;
                }
                const uint64_t crow0 = bd.ncrow;
                uint32_t nclass = 0;
                int t = build_table(L, m, B, L->cat_order + i, j - i, (uint32_t)R, &bd, cls + ncls,
                                    &nclass);
                if (t < 0)
                    goto out;
                if (t == 0) {
                    F->table = 1;
                    F->rows = (uint32_t)R;
                    F->nclass = nclass;
                    F->cls_off = ncls;
                    F->row_off = crow0;
                    ncls += R + 1;
                }
            }
            i = j;
        }
    }
    L->ncatfeats = f;
    L->cat_cls = cls ? cls : malloc(sizeof *L->cat_cls);
    L->cat_row = bd.crow ? bd.crow : malloc(sizeof *L->cat_row);
    L->cat_etree = bd.E.etree ? bd.E.etree : malloc(sizeof *L->cat_etree);
    L->cat_emask = bd.E.emask ? bd.E.emask : malloc(sizeof *L->cat_emask);
    L->ncatent = bd.E.n;
    cls = NULL;
    bd.crow = NULL;
    bd.E.etree = NULL;
    bd.E.emask = NULL;
    rc = L->cat_cls && L->cat_row && L->cat_etree && L->cat_emask ? 0 : -1;
out:
    free(cls);
    free(bd.crow);
    free(bd.E.etree);
    free(bd.E.emask);
    free(bd.acc);
    free(bd.touched);
    free(bd.seen);
    if (rc != 0)
        cattab_clear(L);
    return rc;
fail:
    cattab_clear(L);
    return -1;
}
