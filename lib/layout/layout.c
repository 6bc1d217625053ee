/* layout.c: builds the QuickScorer layout of a model (format/qsm.md, section
 * QSLY) and checks one read from a file before any scorer touches it. */
#include "layout/layout.h"

#include <string.h>

void qs_layout_free(qs_layout *L)
{
    if (!L)
        return;
    free(L->blocks);
    free(L->groups);
    free(L->thr);
    free(L->etree);
    free(L->emask);
    free(L->cats);
    free(L->leaf_off);
    free(L->nleaves);
    free(L->treeflags);
    free(L->leaves);
    free(L->leaf_node);
    free(L->leaf_id);
    free(L->block_catfeat);
    free(L->catfeats);
    free(L->cat_order);
    free(L->cat_row);
    free(L->cat_cls);
    free(L->cat_etree);
    free(L->cat_emask);
    free(L);
}

/* Per-tree facts used to lay it out. */
typedef struct tinfo {
    uint32_t leaves;   /* QS leaves, or 2^depth for Ω */
    uint32_t depth;
    int omega;         /* laid out as an oblivious tree */
    int single;        /* a lone leaf: fits any block */
} tinfo;

/* Leaf ordinals (left to right) and, per internal node, the leaf range of
 * its left subtree, computed without recursion from a preorder listing. */
typedef struct tree_scratch {
    uint32_t *order, *cnt, *first, *stack;
    uint32_t cap;
} tree_scratch;

static int scratch_reserve(tree_scratch *s, uint32_t n)
{
    if (n <= s->cap)
        return 0;
    free(s->order);
    free(s->cnt);
    free(s->first);
    free(s->stack);
    s->order = malloc(sizeof(uint32_t) * n);
    s->cnt = malloc(sizeof(uint32_t) * n);
    s->first = malloc(sizeof(uint32_t) * n);
    s->stack = malloc(sizeof(uint32_t) * n);
    s->cap = n;
    return (s->order && s->cnt && s->first && s->stack) ? 0 : -1;
}

/* A reversed tree is laid out as its mirror image (children swapped), so
 * its leaves are numbered right to left and a node's mask covers the leaves
 * of its original right subtree. */
static inline uint32_t first_child(const qs_node *x, int mirror)
{
    return (uint32_t)(mirror ? x->right : x->left);
}
static inline uint32_t second_child(const qs_node *x, int mirror)
{
    return (uint32_t)(mirror ? x->left : x->right);
}

static void tree_ranges(const qs_node *nd, uint32_t n, tree_scratch *s, int mirror)
{
    /* Children numbered after their parent (the usual numbering): leaf
     * counts from the last node back, ranges from the root on, with no
     * walk.  Otherwise in preorder, below. */
    uint32_t q = n;
    while (q-- > 0) {
        const qs_node *x = &nd[q];
        if (x->kind == QS_NODE_LEAF) {
            s->cnt[q] = 1;
            continue;
        }
        const uint32_t l = (uint32_t)x->left, r = (uint32_t)x->right;
        if (l <= q || r <= q)
            break;
        s->cnt[q] = s->cnt[l] + s->cnt[r];
    }
    if (q == UINT32_MAX) {
        s->first[0] = 0;
        for (uint32_t i = 0; i < n; i++) {
            const qs_node *x = &nd[i];
            if (x->kind != QS_NODE_LEAF) {
                uint32_t a = first_child(x, mirror), b = second_child(x, mirror);
                s->first[a] = s->first[i];
                s->first[b] = s->first[i] + s->cnt[a];
            }
        }
        return;
    }
    uint32_t sp = 0, k = 0;
    s->stack[sp++] = 0;
    while (sp) {
        uint32_t i = s->stack[--sp];
        s->order[k++] = i;
        if (nd[i].kind != QS_NODE_LEAF) {
            s->stack[sp++] = second_child(&nd[i], mirror); /* the first is visited first */
            s->stack[sp++] = first_child(&nd[i], mirror);
        }
    }
    for (uint32_t j = n; j-- > 0;) {
        uint32_t i = s->order[j];
        s->cnt[i] = nd[i].kind == QS_NODE_LEAF ? 1 : s->cnt[nd[i].left] + s->cnt[nd[i].right];
    }
    s->first[0] = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t i = s->order[j];
        if (nd[i].kind != QS_NODE_LEAF) {
            uint32_t a = first_child(&nd[i], mirror), b = second_child(&nd[i], mirror);
            s->first[a] = s->first[i];
            s->first[b] = s->first[i] + s->cnt[a];
        }
    }
}

typedef struct rec {
    uint32_t feature, rule;    /* rule includes QS_GROUP_DESC for reversed trees */
    double thr;
    uint32_t tree;
    uint32_t special_false;    /* the special value makes this node false */
    uint64_t mask;
} rec;

/* The records of a block go in the order (feature, rule, threshold
 * ascending, or descending in the groups of reversed trees, tree, mask):
 * groups by (feature, rule, direction), each a sorted threshold list.  The
 * sort gives the permutation, from the gather order (trees ascending), in
 * three stable steps: by group (a counting sort on the group's rank, or
 * an LSD radix sort of the group key where the features are too many for
 * a table of counts); within each group by threshold key (an LSD radix
 * sort on the digits that differ within the group, an insertion sort for
 * short groups); then the ties of (group, threshold, tree), rare, in mask
 * order.  -0.0 and +0.0 are one threshold, as they compare equal. */
#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)
#define RADIX_DIGITS 6 /* per 64-bit key */

static uint64_t thr_key(double thr, uint32_t rule)
{
    uint64_t u;
    if (thr == 0.0)
        thr = 0.0;
    memcpy(&u, &thr, sizeof u);
    u = (u >> 63) ? ~u : u | (1ull << 63);
    return (rule & QS_GROUP_DESC) ? ~u : u;
}

static uint64_t group_key(const rec *r) { return (uint64_t)r->feature << 32 | r->rule; }

/* The indices a[0 .. n-1] in mask order of their records, stable (a
 * bottom-up merge sort through w[0 .. n-1]). */
static void mask_merge_sort(const rec *recs, uint32_t *a, uint32_t *w, uint64_t n)
{
    uint32_t *src = a, *dst = w;
    for (uint64_t width = 1; width < n; width *= 2) {
        for (uint64_t lo = 0; lo < n; lo += 2 * width) {
            uint64_t mid = lo + width < n ? lo + width : n;
            uint64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            uint64_t x = lo, y = mid, k = lo;
            while (x < mid && y < hi)
                dst[k++] = recs[src[y]].mask < recs[src[x]].mask ? src[y++] : src[x++];
            while (x < mid)
                dst[k++] = src[x++];
            while (y < hi)
                dst[k++] = src[y++];
        }
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
}

/* a[0 .. n-1] with their keys k[0 .. n-1], stably by key: an LSD radix
 * sort (through b and kb) on the digits that are not the same in all keys;
 * insertion for a few. */
static void sort_by_key(uint32_t *a, uint64_t *k, uint32_t *b, uint64_t *kb, uint64_t n,
                        uint32_t *hist)
{
    if (n <= 24) {
        for (uint64_t x = 1; x < n; x++) {
            uint32_t v = a[x];
            uint64_t kv = k[x], y = x;
            for (; y > 0 && k[y - 1] > kv; y--) {
                a[y] = a[y - 1];
                k[y] = k[y - 1];
            }
            a[y] = v;
            k[y] = kv;
        }
        return;
    }
    uint64_t any = 0, all = ~0ull;
    for (uint64_t i = 0; i < n; i++) {
        any |= k[i];
        all &= k[i];
    }
    const uint64_t vary = any ^ all;
    if (vary == 0)
        return;
    /* The bits that differ, [lo, hi], in as few digits of at most `most`
     * bits as they need, of equal width. */
    const unsigned lo = (unsigned)__builtin_ctzll(vary), hi = 63u - (unsigned)__builtin_clzll(vary);
    const unsigned most = n >= 4096 ? RADIX_BITS : n >= 512 ? 10 : 8;
    const unsigned span = hi - lo + 1, passes = (span + most - 1) / most;
    const unsigned bits = (span + passes - 1) / passes;
    const uint64_t size = (uint64_t)1 << bits, dmask = size - 1;
    uint32_t *sa = a, *da = b;
    uint64_t *sk = k, *dk = kb;
    for (unsigned shift = lo; shift <= hi; shift += bits) {
        if (((vary >> shift) & dmask) == 0)
            continue;
        memset(hist, 0, size * sizeof *hist);
        for (uint64_t i = 0; i < n; i++)
            hist[(sk[i] >> shift) & dmask]++;
        uint32_t sum = 0;
        for (uint64_t v = 0; v < size; v++) {
            uint32_t c = hist[v];
            hist[v] = sum;
            sum += c;
        }
        for (uint64_t i = 0; i < n; i++) {
            uint32_t at = hist[(sk[i] >> shift) & dmask]++;
            da[at] = sa[i];
            dk[at] = sk[i];
        }
        uint32_t *ta = sa;
        sa = da;
        da = ta;
        uint64_t *tk = sk;
        sk = dk;
        dk = tk;
    }
    if (sa != a) {
        memcpy(a, sa, n * sizeof *a);
        memcpy(k, sk, n * sizeof *k);
    }
}

/* Groups whose thresholds repeat (histogram-based learners split on at
 * most a few hundred bin edges a feature): the distinct keys are found
 * through a small hash table and sorted alone, and the group then takes
 * one stable counting pass by their rank. */
#define FEW_KEYS 512u
#define FEW_HASH 1024u /* a power of two, at least 2 * FEW_KEYS */
typedef struct few_scratch {
    uint64_t hkey[FEW_HASH];
    uint16_t hid[FEW_HASH];      /* id + 1 of the key in hkey; 0: empty */
    uint64_t dkey[FEW_KEYS], dkey2[FEW_KEYS];
    uint32_t didx[FEW_KEYS], didx2[FEW_KEYS];
    uint32_t rank[FEW_KEYS], pos[FEW_KEYS];
} few_scratch;

/* As sort_by_key, where the n keys hold at most FEW_KEYS values; 0 when
 * they hold more (nothing moved then). */
static int sort_few_keys(uint32_t *a, uint64_t *k, uint32_t *b, uint64_t *kb, uint64_t n,
                         uint32_t *hist, few_scratch *f)
{
    uint32_t d = 0;
    memset(f->hid, 0, sizeof f->hid);
    uint32_t *id = (uint32_t *)(void *)kb; /* n ids fit in kb's 8n bytes */
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t key = k[i];
        uint32_t h = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 54) & (FEW_HASH - 1);
        while (f->hid[h] && f->hkey[h] != key)
            h = (h + 1) & (FEW_HASH - 1);
        if (!f->hid[h]) {
            if (d == FEW_KEYS)
                return 0;
            f->hkey[h] = key;
            f->dkey[d] = key;
            f->didx[d] = d;
            f->pos[d] = 0;
            f->hid[h] = (uint16_t)++d;
        }
        id[i] = f->hid[h] - 1u;
        f->pos[id[i]]++;
    }
    /* The distinct keys in order; each id's rank, then its first place. */
    sort_by_key(f->didx, f->dkey, f->didx2, f->dkey2, d, hist);
    uint32_t at = 0;
    for (uint32_t r = 0; r < d; r++) {
        const uint32_t c = f->pos[f->didx[r]];
        f->rank[f->didx[r]] = at;
        at += c;
    }
    for (uint64_t i = 0; i < n; i++)
        b[f->rank[id[i]]++] = a[i];
    memcpy(a, b, n * sizeof *a);
    /* Keys by rank: rank[] now holds each id's end. */
    uint64_t j = 0;
    for (uint32_t r = 0; r < d; r++) {
        const uint32_t end = f->rank[f->didx[r]];
        for (; j < end; j++)
            k[j] = f->dkey[r];
    }
    return 1;
}

/* The rank of a group key in (feature, rule) order, where the rule is one
 * the layout makes (0, 1, 2, each with or without QS_GROUP_DESC); 6 ranks a
 * feature.  UINT32_MAX for any other rule. */
static uint32_t rule_rank(uint32_t rule)
{
    uint32_t low = rule & QS_RULE_MASK;
    if (low > QS_RULE_NAN || (rule & ~(QS_RULE_MASK | QS_GROUP_DESC)))
        return UINT32_MAX;
    return low + ((rule & QS_GROUP_DESC) ? 3 : 0);
}

/* The permutation *out of recs[0 .. n-1] into the block's order. */
static int sort_recs(const rec *recs, uint64_t n, uint32_t **out)
{
    *out = NULL;
    if (n >= UINT32_MAX)
        return -2;
    uint32_t *a = malloc((2 * n + 1) * sizeof *a);
    uint64_t *ka = malloc((2 * n + 1) * sizeof *ka);
    uint32_t *hist = malloc(RADIX_SIZE * sizeof *hist);
    uint32_t *cnt = NULL;
    few_scratch *few = malloc(sizeof *few);
    if (!a || !ka || !hist || !few)
        goto nomem;
    uint32_t *b = a + n;
    uint64_t *kb = ka + n;

    /* 1. By group, stably: a counting sort on the rank of (feature, rule)
     * where a table of ranks is small beside n (the ranks kept in b). */
    uint32_t fmax = 0;
    int ranked = 1;
    for (uint64_t i = 0; i < n; i++) {
        const uint32_t rr = rule_rank(recs[i].rule);
        if (recs[i].feature >= fmax)
            fmax = recs[i].feature + 1;
        ranked &= rr != UINT32_MAX;
        b[i] = recs[i].feature * 6u + rr;
    }
    const uint64_t nrank = (uint64_t)fmax * 6;
    if (ranked && fmax > 0 && nrank <= n + 65536) {
        if (!(cnt = calloc(nrank + 1, sizeof *cnt)))
            goto nomem;
        for (uint64_t i = 0; i < n; i++)
            cnt[b[i] + 1]++;
        for (uint64_t v = 1; v <= nrank; v++)
            cnt[v] += cnt[v - 1];
        for (uint64_t i = 0; i < n; i++)
            a[cnt[b[i]]++] = (uint32_t)i;
        free(cnt);
        cnt = NULL;
    } else {
        for (uint64_t i = 0; i < n; i++) {
            a[i] = (uint32_t)i;
            ka[i] = group_key(&recs[i]);
        }
        sort_by_key(a, ka, b, kb, n, hist);
    }

    /* 2. Each group's run by threshold key, stably. */
    for (uint64_t i = 0; i < n; i++)
        ka[i] = thr_key(recs[a[i]].thr, recs[a[i]].rule);
    for (uint64_t i = 0; i < n;) {
        const uint64_t g = group_key(&recs[a[i]]);
        uint64_t j = i + 1;
        while (j < n && group_key(&recs[a[j]]) == g)
            j++;
        if (j - i <= 64 || !sort_few_keys(a + i, ka + i, b, kb, j - i, hist, few))
            sort_by_key(a + i, ka + i, b, kb, j - i, hist);
        i = j;
    }

    /* 3. Equal group, threshold and tree: mask order. */
    for (uint64_t i = 0; i < n;) {
        const rec *ri = &recs[a[i]];
        uint64_t j = i + 1;
        while (j < n && ka[j] == ka[i] && recs[a[j]].tree == ri->tree &&
               recs[a[j]].feature == ri->feature && recs[a[j]].rule == ri->rule)
            j++;
        if (j - i > 32) {
            /* Long runs (a wide tree's level on one threshold): a stable
             * merge sort, the same order as the insertion sort. */
            mask_merge_sort(recs, a + i, b, j - i);
        } else {
            for (uint64_t x = i + 1; x < j; x++) {
                uint32_t v = a[x];
                uint64_t y = x;
                for (; y > i && recs[a[y - 1]].mask > recs[v].mask; y--)
                    a[y] = a[y - 1];
                a[y] = v;
            }
        }
        i = j;
    }
    free(ka);
    free(hist);
    free(few);
    *out = a;
    return 0;
nomem:
    free(a);
    free(ka);
    free(hist);
    free(cnt);
    free(few);
    return -1;
}

static uint32_t rule_of(const qs_node *n)
{
    return n->miss == QS_MISS_NONE ? QS_RULE_PLAIN : n->miss == QS_MISS_ZERO ? QS_RULE_ZERO : QS_RULE_NAN;
}

static uint64_t narrow_mask(uint32_t lo, uint32_t hi)
{
    uint64_t bits = (hi - lo >= 64 ? ~0ull : ((1ull << (hi - lo)) - 1)) << lo;
    return ~bits;
}

#define GROW(ptr, cnt, cap, need)                                                   \
    do {                                                                            \
        if ((need) > (cap)) {                                                       \
            uint64_t nc_ = (cap) ? (cap) : 256;                                     \
            while (nc_ < (need))                                                    \
                nc_ *= 2;                                                           \
            void *q_ = realloc((ptr), (size_t)nc_ * sizeof *(ptr));                 \
            if (!q_)                                                                \
                goto nomem;                                                         \
            (ptr) = q_;                                                             \
            (cap) = nc_;                                                            \
        }                                                                           \
    } while (0)

/* One block's groups, entries and categorical entries, built on their own
 * (group begin/end relative to the block's first entry), then appended to
 * the layout in block order: blocks can be built by several threads and
 * the layout is the same. */
typedef struct block_out {
    qs_group *groups;
    uint32_t ngroups;
    double *thr;
    uint32_t *etree;
    uint64_t *emask;
    uint64_t nent;
    qs_catnode *cats;
    uint64_t ncat;
    int fail; /* 0, 1 out of memory, 2 too large */
} block_out;

static void block_out_free(block_out *o)
{
    free(o->groups);
    free(o->thr);
    free(o->etree);
    free(o->emask);
    free(o->cats);
}

/* The node records of trees [u0, u1) of block B into recs (room for cap),
 * in tree order, and their categorical entries appended to *cats; the leaf
 * values and tree flags go straight into L (each tree owns its ranges).
 * Returns 0, or -1 out of memory. */
static int gather_trees(const qs_model *m, const tinfo *ti, const uint8_t *reverse, qs_layout *L,
                        const qs_block *B, uint64_t u0, uint64_t u1, rec *recs, uint64_t cap,
                        uint64_t *nrec_out, qs_catnode **cats, uint64_t *ncat, uint64_t *capcat)
{
    tree_scratch s = { 0 };
    uint64_t nrec = 0, capc = *capcat;
    const uint64_t b0 = B->tree_begin;
    for (uint64_t u = u0; u < u1; u++) {
        const qs_tree *tr = &m->trees[u];
        const qs_node *nd = m->nodes + tr->node_off;
        uint32_t lt = (uint32_t)(u - b0);
        double *lv = L->leaves + L->leaf_off[u];
        if (scratch_reserve(&s, tr->num_nodes))
            goto nomem;
        if (ti[u].omega) {
            /* Breadth-first: one record per level, leaves in index order. */
            uint32_t d = ti[u].depth, cnt = 1;
            uint32_t *cur = s.order, *nxt = s.stack;
            cur[0] = 0;
            for (uint32_t lev = 0; lev < d; lev++) {
                const qs_node *x = &nd[cur[0]];
                if (nrec >= cap)
                    goto nomem;
                recs[nrec++] = (rec){ x->feature, rule_of(x), x->value, lt,
                                      !x->default_left, 1ull << (d - 1 - lev) };
                for (uint32_t i = 0; i < cnt; i++) {
                    nxt[2 * i] = (uint32_t)nd[cur[i]].left;
                    nxt[2 * i + 1] = (uint32_t)nd[cur[i]].right;
                }
                uint32_t *tmp = cur;
                cur = nxt;
                nxt = tmp;
                cnt *= 2;
            }
            qs_model_leaf_ids(m, u, s.cnt);
            for (uint32_t i = 0; i < cnt; i++) {
                lv[i] = tr->weight * nd[cur[i]].value;
                L->leaf_node[L->leaf_off[u] + i] = cur[i];
                L->leaf_id[L->leaf_off[u] + i] = s.cnt[cur[i]];
            }
            continue;
        }
        /* A lone leaf has nothing to reverse, and may share an Ω block. */
        const int rev = reverse && reverse[u] && !ti[u].single;
        L->treeflags[u] = rev ? QS_TREE_REVERSED : 0;
        tree_ranges(nd, tr->num_nodes, &s, rev);
        uint32_t rank = 0;
        const double w = tr->weight;
        const int by_index = qs_source_get(m->source) &&
                             qs_source_get(m->source)->leaves == QS_LEAVES_BY_NODE;
        uint32_t *const lnode = L->leaf_node + L->leaf_off[u], *const lid = L->leaf_id + L->leaf_off[u];
        for (uint32_t i = 0; i < tr->num_nodes; i++) {
            const qs_node *x = &nd[i];
            if (x->kind == QS_NODE_LEAF) {
                const uint32_t at = s.first[i];
                lv[at] = w * x->value;
                lnode[at] = i;
                lid[at] = by_index ? i : rank;
                rank++;
                continue;
            }
            uint32_t fc = first_child(x, rev);
            uint32_t lo = s.first[fc], hi = lo + s.cnt[fc];
            uint64_t mask = B->width ? narrow_mask(lo, hi) : ((uint64_t)lo << 32 | hi);
            if (x->kind == QS_NODE_CAT) {
                GROW(*cats, *ncat, capc, *ncat + 1);
                (*cats)[(*ncat)++] = (qs_catnode){ lt | (rev ? QS_CAT_REVERSED : 0),
                                                   (uint32_t)(tr->node_off + i), mask };
                continue;
            }
            /* A node is "false" when its test sends the document away from
             * the first child: right in a plain tree, left in a reversed one. */
            if (nrec >= cap)
                goto nomem;
            recs[nrec++] = (rec){ x->feature, rule_of(x) | (rev ? QS_GROUP_DESC : 0), x->value,
                                  lt, rev ? x->default_left : !x->default_left, mask };
        }
    }
    *nrec_out = nrec;
    *capcat = capc;
    free(s.order);
    free(s.cnt);
    free(s.first);
    free(s.stack);
    return 0;
nomem:
    *nrec_out = nrec;
    *capcat = capc;
    free(s.order);
    free(s.cnt);
    free(s.first);
    free(s.stack);
    return -1;
}

/* Trees per gathering thread below which one thread gathers a block. */
#define GATHER_MIN_TREES 16
#define GATHER_MAX_PARTS 64

/* Gather block B's node records and leaf tables, sort the records and
 * emit its groups into o; the leaf values and tree flags go straight into
 * L (each block owns its trees' ranges).  With threads > 1, contiguous
 * ranges of the block's trees are gathered side by side and joined in
 * tree order: the records, and so the layout, are those of one thread. */
static void build_block(const qs_model *m, const tinfo *ti, const uint8_t *reverse,
                        qs_layout *L, const qs_block *B, block_out *o, unsigned threads)
{
    rec *recs = NULL;
    uint32_t *perm = NULL;
    uint64_t nrec = 0, caprec = 0, capgrp = 0;
    memset(o, 0, sizeof *o);
    const uint64_t b0 = B->tree_begin, t = B->tree_end;
    /* Room for every record at once: one per level of an Ω tree, at most
     * one per internal node (n / 2 of n nodes) of the others. */
#define TREE_CAP(u) (ti[u].omega ? ti[u].depth : m->trees[u].num_nodes / 2)
    for (uint64_t u = b0; u < t; u++)
        caprec += TREE_CAP(u);
    if (!(recs = malloc((size_t)(caprec ? caprec : 1) * sizeof *recs)))
        goto nomem;
    const unsigned parts = qs_work_parts(t - b0, GATHER_MIN_TREES, threads, GATHER_MAX_PARTS);
    if (parts == 1) {
        uint64_t capcat = 0;
        if (gather_trees(m, ti, reverse, L, B, b0, t, recs, caprec, &nrec, &o->cats, &o->ncat,
                         &capcat) != 0)
            goto nomem;
    } else {
        /* Part p: trees [ub[p], ub[p+1]), about caprec / parts records
         * each, written from rb[p] on; then moved together in order. */
        uint64_t ub[GATHER_MAX_PARTS + 1], rb[GATHER_MAX_PARTS + 1], got[GATHER_MAX_PARTS];
        uint64_t nc[GATHER_MAX_PARTS], capc[GATHER_MAX_PARTS];
        qs_catnode *pc[GATHER_MAX_PARTS];
        int pfail[GATHER_MAX_PARTS];
        uint64_t acc = 0, u = b0;
        ub[0] = b0;
        rb[0] = 0;
        for (unsigned p = 1; p < parts; p++) {
            const uint64_t goal = caprec / parts * p;
            while (u < t && acc < goal)
                acc += TREE_CAP(u), u++;
            ub[p] = u;
            rb[p] = acc;
        }
        ub[parts] = t;
        rb[parts] = caprec;
#if QS_HAVE_OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(qs_team(parts))
#endif
        for (unsigned p = 0; p < parts; p++) {
            pc[p] = NULL;
            nc[p] = capc[p] = got[p] = 0;
            pfail[p] = gather_trees(m, ti, reverse, L, B, ub[p], ub[p + 1], recs + rb[p],
                                    rb[p + 1] - rb[p], &got[p], &pc[p], &nc[p], &capc[p]);
        }
        int bad = 0;
        uint64_t ncat = 0;
        for (unsigned p = 0; p < parts; p++) {
            bad |= pfail[p];
            ncat += nc[p];
        }
        if (!bad && ncat && !(o->cats = malloc((size_t)ncat * sizeof *o->cats)))
            bad = 1;
        for (unsigned p = 0; p < parts; p++) {
            if (!bad) {
                memmove(recs + nrec, recs + rb[p], (size_t)got[p] * sizeof *recs);
                nrec += got[p];
                if (nc[p])
                    memcpy(o->cats + o->ncat, pc[p], (size_t)nc[p] * sizeof *o->cats);
                o->ncat += nc[p];
            }
            free(pc[p]);
        }
        if (bad)
            goto nomem;
    }
#undef TREE_CAP
    int sr = sort_recs(recs, nrec, &perm);
    if (sr == -2)
        goto toolarge;
    if (sr != 0)
        goto nomem;
#define SREC(k) (recs[perm[k]])

    /* Emit groups: sorted scan entries, then the special-value list.  Every
     * record is one scan entry and at most one special entry. */
    uint64_t nsp_all = 0;
    for (uint64_t k = 0; k < nrec; k++)
        nsp_all += (recs[k].rule & QS_RULE_MASK) != QS_RULE_PLAIN && recs[k].special_false;
    const uint64_t need = nrec + nsp_all;
    if (need > UINT32_MAX)
        goto toolarge;
    o->thr = malloc((need ? need : 1) * sizeof *o->thr);
    o->etree = malloc((need ? need : 1) * sizeof *o->etree);
    o->emask = malloc((need ? need : 1) * sizeof *o->emask);
    if (!o->thr || !o->etree || !o->emask)
        goto nomem;
    for (uint64_t i = 0; i < nrec;) {
        uint64_t j = i;
        while (j < nrec && SREC(j).feature == SREC(i).feature && SREC(j).rule == SREC(i).rule)
            j++;
        GROW(o->groups, o->ngroups, capgrp, (uint64_t)o->ngroups + 1);
        qs_group *g = &o->groups[o->ngroups++];
        g->feature = SREC(i).feature;
        g->rule = SREC(i).rule;
        g->begin = (uint32_t)o->nent;
        for (uint64_t k = i; k < j; k++) {
            o->thr[o->nent] = SREC(k).thr;
            o->etree[o->nent] = SREC(k).tree;
            o->emask[o->nent++] = SREC(k).mask;
        }
        g->end = g->sp_begin = (uint32_t)o->nent;
        if ((SREC(i).rule & QS_RULE_MASK) != QS_RULE_PLAIN)
            for (uint64_t k = i; k < j; k++)
                if (SREC(k).special_false) {
                    o->thr[o->nent] = 0.0;
                    o->etree[o->nent] = SREC(k).tree;
                    o->emask[o->nent++] = SREC(k).mask;
                }
        g->sp_end = (uint32_t)o->nent;
        i = j;
    }
#undef SREC
    free(recs);
    free(perm);
    return;
toolarge:
    o->fail = 2;
    goto out;
nomem:
    o->fail = 1;
out:
    free(recs);
    free(perm);
}

qs_layout *qs_layout_build(const qs_model *m, uint32_t delta, uint32_t tree_block,
                           const uint8_t *reverse, qs_error *err)
{
    return qs_layout_build_mt(m, delta, tree_block, reverse, 1, err);
}

qs_layout *qs_layout_build_mt(const qs_model *m, uint32_t delta, uint32_t tree_block,
                              const uint8_t *reverse, unsigned threads, qs_error *err)
{
    if (delta == 0)
        delta = QS_DEFAULT_DELTA;
    if (delta > QS_MAX_DELTA) {
        qs_fail(err, QS_ERR_ARG, 0, "delta %u is out of range (1..%u)", delta, QS_MAX_DELTA);
        return NULL;
    }
    qs_layout *L = calloc(1, sizeof *L);
    tinfo *ti = calloc(m->num_trees ? m->num_trees : 1, sizeof *ti);
    block_out *outs = NULL;
    uint64_t capblk = 0;
    int fail = 0;
    if (!L || !ti)
        goto nomem;
    L->delta = delta;
    L->tree_block = tree_block;
    L->ntrees = m->num_trees;
    L->leaf_off = calloc(m->num_trees + 1, sizeof *L->leaf_off);
    L->nleaves = calloc(m->num_trees + 1, sizeof *L->nleaves);
    L->treeflags = calloc(m->num_trees + 1, sizeof *L->treeflags);
    if (!L->leaf_off || !L->nleaves || !L->treeflags)
        goto nomem;

    /* Classify trees and count leaves. */
    uint64_t total_leaves = 0;
    for (uint64_t t = 0; t < m->num_trees; t++) {
        const qs_tree *tr = &m->trees[t];
        uint32_t d = 0;
        ti[t].single = tr->num_nodes == 1;
        ti[t].omega = !ti[t].single && qs_tree_is_oblivious(m, tr, &d) && d <= QS_OMEGA_MAX_DEPTH;
        ti[t].depth = d;
        ti[t].leaves = ti[t].omega ? (1u << d) : (tr->num_nodes + 1) / 2;
        L->leaf_off[t] = total_leaves;
        L->nleaves[t] = ti[t].leaves;
        total_leaves += ti[t].leaves;
    }
    L->nleafvals = total_leaves;
    L->leaves = malloc(sizeof(double) * (total_leaves ? total_leaves : 1));
    L->leaf_node = malloc(sizeof(uint32_t) * (total_leaves ? total_leaves : 1));
    L->leaf_id = malloc(sizeof(uint32_t) * (total_leaves ? total_leaves : 1));
    if (!L->leaves || !L->leaf_node || !L->leaf_id)
        goto nomem;

    /* The blocks: homogeneous runs of trees, one kind, narrow or multi-word
     * masks, at most tree_block trees.  Lone leaves join whatever block is
     * open. */
    for (uint64_t t = 0; t < m->num_trees;) {
        uint64_t b0 = t;
        int kind = -1, wide = -1;
        uint32_t maxl = 1;
        while (t < m->num_trees && (tree_block == 0 || t - b0 < tree_block)) {
            if (!ti[t].single) {
                int k = ti[t].omega ? QS_BLOCK_OMEGA : QS_BLOCK_QS;
                int w = !ti[t].omega && ti[t].leaves > 64;
                if (kind >= 0 && (k != kind || w != wide))
                    break;
                kind = k;
                wide = w;
            }
            if (ti[t].leaves > maxl)
                maxl = ti[t].leaves;
            t++;
        }
        if (kind < 0) {
            kind = QS_BLOCK_QS;
            wide = 0;
        }
        GROW(L->blocks, L->nblocks, capblk, (uint64_t)L->nblocks + 1);
        qs_block *B = &L->blocks[L->nblocks++];
        memset(B, 0, sizeof *B);
        B->kind = (uint32_t)kind;
        B->tree_begin = b0;
        B->tree_end = t;
        if (kind == QS_BLOCK_OMEGA)
            B->width = 32;
        else if (wide)
            B->width = 0, B->words = (maxl + 63) / 64;
        else
            B->width = maxl <= 8 ? 8 : maxl <= 16 ? 16 : maxl <= 32 ? 32 : 64;
    }

    /* Each block on its own (in parallel where asked), then in order. */
    outs = calloc(L->nblocks ? L->nblocks : 1, sizeof *outs);
    if (!outs)
        goto nomem;
    const int nb = (int)L->nblocks;
    if (nb == 1) {
        /* one block: the threads share its trees (no nested team) */
        build_block(m, ti, reverse, L, &L->blocks[0], &outs[0], threads);
    } else {
#if QS_HAVE_OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(qs_team(threads)) if (threads > 1)
#endif
        for (int k = 0; k < nb; k++)
            build_block(m, ti, reverse, L, &L->blocks[k], &outs[k], 1);
    }
    uint64_t ng = 0, ne = 0, nc = 0;
    for (int k = 0; k < nb; k++) {
        if (outs[k].fail && !fail)
            fail = outs[k].fail;
        ng += outs[k].ngroups;
        ne += outs[k].nent;
        nc += outs[k].ncat;
    }
    if (fail == 1)
        goto nomem;
    if (fail == 2 || ne > UINT32_MAX || ng > UINT32_MAX || nc > UINT32_MAX) {
        qs_fail(err, QS_ERR_LIMIT, 0, "model too large for one layout");
        goto fail;
    }
    if (nb == 1) {
        /* One block: its arrays are the layout's (offsets from 0 already). */
        block_out *o = &outs[0];
        if (!o->groups && !(o->groups = malloc(sizeof *o->groups)))
            goto nomem;
        if (!o->cats && !(o->cats = malloc(sizeof *o->cats)))
            goto nomem;
        L->blocks[0].group_begin = 0;
        L->blocks[0].group_end = L->ngroups = o->ngroups;
        L->blocks[0].cat_begin = 0;
        L->blocks[0].cat_end = L->ncat = (uint32_t)o->ncat;
        L->nentries = o->nent;
        L->groups = o->groups;
        L->thr = o->thr;
        L->etree = o->etree;
        L->emask = o->emask;
        L->cats = o->cats;
        memset(o, 0, sizeof *o);
        free(outs);
        outs = NULL;
        free(ti);
        ti = NULL;
        if (qs_layout_cattab(L, m) != 0)
            goto nomem;
        return L;
    }
    L->groups = malloc((ng ? ng : 1) * sizeof *L->groups);
    L->thr = malloc((ne ? ne : 1) * sizeof *L->thr);
    L->etree = malloc((ne ? ne : 1) * sizeof *L->etree);
    L->emask = malloc((ne ? ne : 1) * sizeof *L->emask);
    L->cats = malloc((nc ? nc : 1) * sizeof *L->cats);
    if (!L->groups || !L->thr || !L->etree || !L->emask || !L->cats)
        goto nomem;
    for (int k = 0; k < nb; k++) {
        qs_block *B = &L->blocks[k];
        const block_out *o = &outs[k];
        const uint32_t base = (uint32_t)L->nentries;
        B->group_begin = L->ngroups;
        for (uint32_t g = 0; g < o->ngroups; g++) {
            qs_group G = o->groups[g];
            G.begin += base;
            G.end += base;
            G.sp_begin += base;
            G.sp_end += base;
            L->groups[L->ngroups++] = G;
        }
        B->group_end = L->ngroups;
        if (o->nent) {
            memcpy(L->thr + base, o->thr, o->nent * sizeof *L->thr);
            memcpy(L->etree + base, o->etree, o->nent * sizeof *L->etree);
            memcpy(L->emask + base, o->emask, o->nent * sizeof *L->emask);
        }
        L->nentries += o->nent;
        B->cat_begin = L->ncat;
        if (o->ncat)
            memcpy(L->cats + L->ncat, o->cats, o->ncat * sizeof *L->cats);
        L->ncat += (uint32_t)o->ncat;
        B->cat_end = L->ncat;
    }
    for (int k = 0; k < nb; k++)
        block_out_free(&outs[k]);
    free(outs);
    outs = NULL;
    free(ti);
    ti = NULL;
    if (qs_layout_cattab(L, m) != 0)
        goto nomem;
    return L;
nomem:
    qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
fail:
    if (outs)
        for (uint32_t k = 0; k < L->nblocks; k++)
            block_out_free(&outs[k]);
    free(outs);
    free(ti);
    qs_layout_free(L);
    return NULL;
}

/* Everything a scorer indexes with is checked here, so a layout read from an
 * untrusted file can never make it read or write out of bounds. */
int qs_layout_check(const qs_layout *L, const qs_model *m, qs_error *err)
{
#define BAD(...) return qs_fail(err, QS_ERR_FORMAT, 0, "layout: " __VA_ARGS__)
    if (L->delta == 0 || L->delta > QS_MAX_DELTA)
        BAD("delta %u out of range", L->delta);
    if (L->doc_block > QS_MAX_DOC_BLOCK)
        BAD("document block %u out of range", L->doc_block);
    if (L->ntrees != m->num_trees)
        BAD("%llu trees, model has %llu", (unsigned long long)L->ntrees,
            (unsigned long long)m->num_trees);
    uint64_t leaves = 0;
    for (uint64_t t = 0; t < L->ntrees; t++) {
        if (L->leaf_off[t] != leaves || L->nleaves[t] == 0)
            BAD("bad leaf table of tree %llu", (unsigned long long)t);
        leaves += L->nleaves[t];
    }
    if (leaves != L->nleafvals)
        BAD("leaf count mismatch");
    uint64_t next = 0;
    for (uint32_t b = 0; b < L->nblocks; b++) {
        const qs_block *B = &L->blocks[b];
        if (B->tree_begin != next || B->tree_end <= B->tree_begin || B->tree_end > L->ntrees)
            BAD("block %u covers bad trees", b);
        next = B->tree_end;
        uint64_t ntr = B->tree_end - B->tree_begin;
        if (ntr > UINT32_MAX)
            BAD("block %u too large", b);
        if (B->kind == QS_BLOCK_QS) {
            if (B->width == 0) {
                if (B->words == 0 || B->words > (QS_MAX_LEAVES + 63) / 64)
                    BAD("block %u: bad word count", b);
            } else if (B->width != 8 && B->width != 16 && B->width != 32 && B->width != 64)
                BAD("block %u: bad mask width %u", b, B->width);
        } else if (B->kind == QS_BLOCK_OMEGA) {
            if (B->width != 32)
                BAD("block %u: bad width", b);
        } else
            BAD("block %u: unknown kind %u", b, B->kind);
        uint64_t cap = B->kind == QS_BLOCK_OMEGA ? (1ull << QS_OMEGA_MAX_DEPTH)
                       : B->width ? B->width : (uint64_t)B->words * 64;
        for (uint64_t t = B->tree_begin; t < B->tree_end; t++) {
            if (L->treeflags[t] & ~QS_TREE_REVERSED ||
                (B->kind == QS_BLOCK_OMEGA && L->treeflags[t]))
                BAD("tree %llu: bad flags", (unsigned long long)t);
            if (L->nleaves[t] > cap)
                BAD("tree %llu has more leaves than its block holds", (unsigned long long)t);
            if (B->kind == QS_BLOCK_OMEGA && (L->nleaves[t] & (L->nleaves[t] - 1)))
                BAD("oblivious tree %llu: leaf count is not a power of two", (unsigned long long)t);
            if (B->kind == QS_BLOCK_QS && L->nleaves[t] != (m->trees[t].num_nodes + 1) / 2)
                BAD("tree %llu: leaf count differs from the model", (unsigned long long)t);
        }
        if (B->group_begin > B->group_end || B->group_end > L->ngroups ||
            (b > 0 && B->group_begin != L->blocks[b - 1].group_end))
            BAD("block %u: bad group range", b);
        if (B->cat_begin > B->cat_end || B->cat_end > L->ncat ||
            (b > 0 && B->cat_begin != L->blocks[b - 1].cat_end))
            BAD("block %u: bad categorical range", b);
        if (B->kind == QS_BLOCK_OMEGA && B->cat_end != B->cat_begin)
            BAD("block %u: categorical node in an oblivious block", b);
        for (uint32_t g = B->group_begin; g < B->group_end; g++) {
            const qs_group *G = &L->groups[g];
            if (G->feature >= m->num_features || (G->rule & QS_RULE_MASK) > QS_RULE_NAN ||
                (G->rule & ~(QS_RULE_MASK | QS_GROUP_DESC)) ||
                (B->kind == QS_BLOCK_OMEGA && (G->rule & QS_GROUP_DESC)))
                BAD("group %u: bad feature or rule", g);
            const int desc = (G->rule & QS_GROUP_DESC) != 0;
            if (G->begin > G->end || G->end != G->sp_begin || G->sp_begin > G->sp_end ||
                G->sp_end > L->nentries)
                BAD("group %u: bad entry range", g);
            for (uint64_t e = G->begin; e < G->sp_end; e++) {
                if (L->etree[e] >= ntr)
                    BAD("entry %llu: tree out of range", (unsigned long long)e);
                if (e < G->end && (isnan(L->thr[e]) ||
                                   (e > G->begin && (desc ? L->thr[e] > L->thr[e - 1]
                                                          : L->thr[e] < L->thr[e - 1]))))
                    BAD("entry %llu: thresholds not sorted", (unsigned long long)e);
                if (((L->treeflags[B->tree_begin + L->etree[e]] & QS_TREE_REVERSED) != 0) != desc)
                    BAD("entry %llu: direction differs from its tree's", (unsigned long long)e);
                if (B->kind == QS_BLOCK_QS && B->width == 0) {
                    uint32_t lo = (uint32_t)(L->emask[e] >> 32), hi = (uint32_t)L->emask[e];
                    if (lo >= hi || hi > L->nleaves[B->tree_begin + L->etree[e]])
                        BAD("entry %llu: bad leaf range", (unsigned long long)e);
                }
            }
        }
        for (uint32_t c = B->cat_begin; c < B->cat_end; c++) {
            const qs_catnode *C = &L->cats[c];
            uint32_t ct = C->tree & ~QS_CAT_REVERSED;
            if (ct >= ntr || C->node >= m->num_nodes || m->nodes[C->node].kind != QS_NODE_CAT ||
                ((L->treeflags[B->tree_begin + ct] & QS_TREE_REVERSED) != 0) !=
                    ((C->tree & QS_CAT_REVERSED) != 0))
                BAD("categorical entry %u is bad", c);
            if (B->width == 0) {
                uint32_t lo = (uint32_t)(C->mask >> 32), hi = (uint32_t)C->mask;
                if (lo >= hi || hi > L->nleaves[B->tree_begin + ct])
                    BAD("categorical entry %u: bad leaf range", c);
            }
        }
    }
    if (next != L->ntrees)
        BAD("blocks do not cover every tree");
    return 0;
#undef BAD
}

/* Whether two layouts are identical, field by field. */
static int same_layout(const qs_layout *a, const qs_layout *b)
{
#define SAME(f) (a->f == b->f)
#define SAMEARR(p, n) ((n) == 0 || memcmp(a->p, b->p, (size_t)(n) * sizeof *a->p) == 0)
    if (!(SAME(delta) && SAME(tree_block) && SAME(nblocks) && SAME(ngroups) && SAME(nentries) &&
          SAME(ncat) && SAME(ntrees) && SAME(nleafvals)))
        return 0;
    for (uint32_t i = 0; i < a->nblocks; i++) {
        const qs_block *x = &a->blocks[i], *y = &b->blocks[i];
        if (x->kind != y->kind || x->width != y->width || x->words != y->words ||
            x->tree_begin != y->tree_begin || x->tree_end != y->tree_end ||
            x->group_begin != y->group_begin || x->group_end != y->group_end ||
            x->cat_begin != y->cat_begin || x->cat_end != y->cat_end)
            return 0;
    }
    for (uint32_t i = 0; i < a->ngroups; i++) {
        const qs_group *x = &a->groups[i], *y = &b->groups[i];
        if (x->feature != y->feature || x->rule != y->rule || x->begin != y->begin ||
            x->end != y->end || x->sp_begin != y->sp_begin || x->sp_end != y->sp_end)
            return 0;
    }
    for (uint32_t i = 0; i < a->ncat; i++)
        if (a->cats[i].tree != b->cats[i].tree || a->cats[i].node != b->cats[i].node ||
            a->cats[i].mask != b->cats[i].mask)
            return 0;
    /* Thresholds compare as bits: -0.0 and 0.0 must not pass for each other. */
    return SAMEARR(thr, a->nentries) && SAMEARR(etree, a->nentries) &&
           SAMEARR(emask, a->nentries) && SAMEARR(nleaves, a->ntrees) &&
           SAMEARR(treeflags, a->ntrees) && SAMEARR(leaves, a->nleafvals);
#undef SAME
#undef SAMEARR
}

int qs_layout_verify(qs_layout *L, const qs_model *m, unsigned threads, qs_error *err)
{
    qs_layout *R = qs_layout_build_mt(m, L->delta, L->tree_block, L->treeflags, threads, err);
    if (!R)
        return -1;
    int same = same_layout(L, R);
    if (same) {
        /* The derived per-leaf facts come from the trees, not the file. */
        free(L->leaf_node);
        free(L->leaf_id);
        L->leaf_node = R->leaf_node;
        L->leaf_id = R->leaf_id;
        R->leaf_node = R->leaf_id = NULL;
        /* and so do the categorical tables (the same blocks and nodes) */
#define TAKE(f) do { free(L->f); L->f = R->f; R->f = NULL; } while (0)
        TAKE(block_catfeat);
        TAKE(catfeats);
        TAKE(cat_order);
        TAKE(cat_row);
        TAKE(cat_cls);
        TAKE(cat_etree);
        TAKE(cat_emask);
#undef TAKE
        L->ncatfeats = R->ncatfeats;
        L->ncatent = R->ncatent;
    }
    qs_layout_free(R);
    if (!same)
        return qs_fail(err, QS_ERR_FORMAT, 0,
                       "layout: the QuickScorer data does not match the trees (a corrupt or "
                       "forged file; recompile it)");
    return 0;
}
