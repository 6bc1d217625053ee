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

/* Groups by (feature, rule, direction); ascending thresholds, or descending
 * in the groups of reversed trees. */
static int rec_cmp(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    if (x->feature != y->feature)
        return x->feature < y->feature ? -1 : 1;
    if (x->rule != y->rule)
        return x->rule < y->rule ? -1 : 1;
    if (x->thr != y->thr)
        return ((x->thr < y->thr) ^ ((x->rule & QS_GROUP_DESC) != 0)) ? -1 : 1;
    if (x->tree != y->tree)
        return x->tree < y->tree ? -1 : 1;
    return (x->mask > y->mask) - (x->mask < y->mask);
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

qs_layout *qs_layout_build(const qs_model *m, uint32_t delta, uint32_t tree_block,
                           const uint8_t *reverse, qs_error *err)
{
    if (delta == 0)
        delta = QS_DEFAULT_DELTA;
    if (delta > QS_MAX_DELTA) {
        qs_fail(err, QS_ERR_ARG, 0, "delta %u is out of range (1..%u)", delta, QS_MAX_DELTA);
        return NULL;
    }
    qs_layout *L = calloc(1, sizeof *L);
    tinfo *ti = calloc(m->num_trees ? m->num_trees : 1, sizeof *ti);
    tree_scratch s = { 0 };
    rec *recs = NULL;
    uint64_t nrec = 0, caprec = 0, capblk = 0, capgrp = 0, capent = 0, capcat = 0;
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

    uint64_t t = 0;
    while (t < m->num_trees) {
        /* Form a homogeneous block: one kind, narrow or multi-word masks, at
         * most tree_block trees.  Lone leaves join whatever block is open. */
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

        /* Gather the block's node records and leaf tables. */
        nrec = 0;
        B->cat_begin = L->ncat;
        for (uint64_t u = b0; u < t; u++) {
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
                    GROW(recs, nrec, caprec, nrec + 1);
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
                for (uint32_t i = 0; i < cnt; i++) {
                    lv[i] = tr->weight * nd[cur[i]].value;
                    L->leaf_node[L->leaf_off[u] + i] = cur[i];
                    L->leaf_id[L->leaf_off[u] + i] = qs_model_leaf_id(m, u, cur[i]);
                }
                continue;
            }
            /* A lone leaf has nothing to reverse, and may share an Ω block. */
            const int rev = reverse && reverse[u] && !ti[u].single;
            L->treeflags[u] = rev ? QS_TREE_REVERSED : 0;
            tree_ranges(nd, tr->num_nodes, &s, rev);
            uint32_t rank = 0;
            for (uint32_t i = 0; i < tr->num_nodes; i++) {
                const qs_node *x = &nd[i];
                if (x->kind == QS_NODE_LEAF) {
                    lv[s.first[i]] = tr->weight * x->value;
                    L->leaf_node[L->leaf_off[u] + s.first[i]] = i;
                    L->leaf_id[L->leaf_off[u] + s.first[i]] =
                        m->source == QS_SRC_XGBOOST ? i : rank;
                    rank++;
                    continue;
                }
                uint32_t fc = first_child(x, rev);
                uint32_t lo = s.first[fc], hi = lo + s.cnt[fc];
                uint64_t mask = B->width ? narrow_mask(lo, hi) : ((uint64_t)lo << 32 | hi);
                if (x->kind == QS_NODE_CAT) {
                    GROW(L->cats, L->ncat, capcat, (uint64_t)L->ncat + 1);
                    L->cats[L->ncat++] = (qs_catnode){ lt | (rev ? QS_CAT_REVERSED : 0),
                                                       (uint32_t)(tr->node_off + i), mask };
                    continue;
                }
                /* A node is "false" when its test sends the document away from
                 * the first child: right in a plain tree, left in a reversed one. */
                GROW(recs, nrec, caprec, nrec + 1);
                recs[nrec++] = (rec){ x->feature, rule_of(x) | (rev ? QS_GROUP_DESC : 0), x->value,
                                      lt, rev ? x->default_left : !x->default_left, mask };
            }
        }
        B->cat_end = L->ncat;
        if (nrec)
            qsort(recs, (size_t)nrec, sizeof *recs, rec_cmp);

        /* Emit groups: sorted scan entries, then the special-value list. */
        B->group_begin = L->ngroups;
        for (uint64_t i = 0; i < nrec;) {
            uint64_t j = i;
            while (j < nrec && recs[j].feature == recs[i].feature && recs[j].rule == recs[i].rule)
                j++;
            uint64_t nsp = 0;
            if ((recs[i].rule & QS_RULE_MASK) != QS_RULE_PLAIN)
                for (uint64_t k = i; k < j; k++)
                    nsp += recs[k].special_false;
            if (L->nentries + (j - i) + nsp > UINT32_MAX) {
                qs_fail(err, QS_ERR_LIMIT, 0, "model too large for one layout");
                goto fail;
            }
            GROW(L->groups, L->ngroups, capgrp, (uint64_t)L->ngroups + 1);
            uint64_t need = L->nentries + (j - i) + nsp;
            uint64_t c0 = capent, c1 = capent, c2 = capent;
            GROW(L->thr, L->nentries, c0, need);
            GROW(L->etree, L->nentries, c1, need);
            GROW(L->emask, L->nentries, c2, need);
            capent = c0;
            qs_group *g = &L->groups[L->ngroups++];
            g->feature = recs[i].feature;
            g->rule = recs[i].rule;
            g->begin = (uint32_t)L->nentries;
            for (uint64_t k = i; k < j; k++) {
                L->thr[L->nentries] = recs[k].thr;
                L->etree[L->nentries] = recs[k].tree;
                L->emask[L->nentries++] = recs[k].mask;
            }
            g->end = g->sp_begin = (uint32_t)L->nentries;
            if ((recs[i].rule & QS_RULE_MASK) != QS_RULE_PLAIN)
                for (uint64_t k = i; k < j; k++)
                    if (recs[k].special_false) {
                        L->thr[L->nentries] = 0.0;
                        L->etree[L->nentries] = recs[k].tree;
                        L->emask[L->nentries++] = recs[k].mask;
                    }
            g->sp_end = (uint32_t)L->nentries;
            i = j;
        }
        B->group_end = L->ngroups;
    }
    free(recs);
    free(ti);
    free(s.order);
    free(s.cnt);
    free(s.first);
    free(s.stack);
    return L;
nomem:
    qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
fail:
    free(recs);
    free(ti);
    free(s.order);
    free(s.cnt);
    free(s.first);
    free(s.stack);
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

int qs_layout_verify(qs_layout *L, const qs_model *m, qs_error *err)
{
    qs_layout *R = qs_layout_build(m, L->delta, L->tree_block, L->treeflags, err);
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
    }
    qs_layout_free(R);
    if (!same)
        return qs_fail(err, QS_ERR_FORMAT, 0,
                       "layout: the QuickScorer data does not match the trees (a corrupt or "
                       "forged file; recompile it)");
    return 0;
}
