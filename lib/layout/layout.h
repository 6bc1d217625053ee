/* layout.h: the QuickScorer layout of a model (blocks of trees, per-feature
 * sorted threshold lists with tree ids and masks, leaf tables), built by
 * qs_compile, stored in the .qsm and used by the QS / QS-Ω back ends. */
#ifndef QS_LAYOUT_H
#define QS_LAYOUT_H

#include "model/model.h"

enum qs_block_kind { QS_BLOCK_QS = 0, QS_BLOCK_OMEGA = 1 };

/* Feature groups: the nodes of one block that test one feature under one
 * special-value rule, so the scan of a group is uniform. */
enum qs_group_rule {
    QS_RULE_PLAIN = 0,  /* NaN -> 0.0, then scan (LightGBM None) */
    QS_RULE_ZERO = 1,   /* NaN -> 0.0; |x| <= band -> special list; else scan */
    QS_RULE_NAN = 2     /* NaN -> special list; else scan */
};
#define QS_RULE_MASK 0xFFu
/* Set in qs_group.rule for the groups of reversed trees: thresholds are
 * sorted descending and a node is false when the value goes left
 * (x <= t, or x < t), so the scan runs while t >= x (or t > x). */
#define QS_GROUP_DESC 0x100u
/* Set in qs_catnode.tree for a node of a reversed tree (false = goes left). */
#define QS_CAT_REVERSED 0x80000000u
/* qs_layout.treeflags */
#define QS_TREE_REVERSED 0x1u

typedef struct qs_group {
    uint32_t feature;
    uint32_t rule;             /* enum qs_group_rule, | QS_GROUP_DESC */
    uint32_t begin, end;       /* sorted entries [begin, end) */
    uint32_t sp_begin, sp_end; /* special-value entries: nodes that go right */
} qs_group;

/* A categorical node, evaluated directly (no order to scan). */
typedef struct qs_catnode {
    uint32_t tree;             /* block-local tree index */
    uint32_t node;             /* global index into model->nodes */
    uint64_t mask;             /* AND mask (width <= 64) or leaf range lo<<32|hi */
} qs_catnode;

/* A narrow QS block's categorical nodes on one feature, as a table (derived
 * from the trees when a layout is built or verified, never stored): a value
 * x >= 0 takes row trunc(x), or row R when x >= R (every node of the
 * feature then goes its not-a-member way); a row is one of the feature's
 * classes, the distinct lists, per tree, of the AND of the masks of the
 * nodes a value makes false, so a document pays one AND per tree instead of
 * one test per node.  NaN and negative values, and every value where table
 * is 0 (a domain too large to tabulate), take the nodes one by one:
 * L->cats[L->cat_order[node_begin .. node_end)]. */
typedef struct qs_catfeat {
    uint32_t feature;
    uint32_t table;            /* 1: what follows is valid */
    uint32_t rows;             /* R: values' rows 0 .. R */
    uint32_t nclass;           /* distinct rows */
    uint32_t node_begin, node_end;
    uint64_t cls_off;          /* into cat_cls: R + 1 class numbers */
    uint64_t row_off;          /* into cat_row: nclass (begin, end) pairs */
} qs_catfeat;

typedef struct qs_block {
    uint32_t kind;             /* enum qs_block_kind */
    uint32_t width;            /* 8/16/32/64 bits per tree; 0 = multi-word */
    uint32_t words;            /* 64-bit words per tree when width == 0 */
    uint64_t tree_begin, tree_end;
    uint32_t group_begin, group_end;
    uint32_t cat_begin, cat_end;
} qs_block;

typedef struct qs_layout {
    uint32_t delta;            /* Δ of the Δ-skip scan */
    uint32_t tree_block;       /* τ the layout was built with (0 = whole model) */
    uint32_t doc_block;        /* δ: documents scored per pass (0 = default) */
    uint32_t nblocks;
    qs_block *blocks;
    uint32_t ngroups;
    qs_group *groups;
    uint64_t nentries;         /* scan entries (sorted) and special entries */
    double *thr;               /* threshold per entry (special entries: unused) */
    uint32_t *etree;           /* block-local tree index per entry */
    uint64_t *emask;           /* AND mask / OR bits / leaf range lo<<32|hi */
    uint32_t ncat;
    qs_catnode *cats;
    /* per tree (global order) */
    uint64_t ntrees;
    uint64_t *leaf_off;        /* into leaves[] */
    uint32_t *nleaves;         /* leaves of a QS tree; 2^depth of an Ω tree */
    uint8_t *treeflags;        /* QS_TREE_REVERSED: laid out mirrored (tree reversal) */
    uint64_t nleafvals;
    double *leaves;            /* contribution = weight * leaf value, leaf order */
    /* A sketch (qsm_read of a QSLY with τ = 0, which the scorer rebuilds
     * from the trees anyway): only Δ, τ, δ, ntrees, nleafvals, treeflags and
     * sketch_scan (the scan entries, for choosing τ) are set; no blocks,
     * groups or entries.  Nothing may score with it. */
    int sketch;
    uint64_t sketch_scan;
    /* Derived from the trees (never stored in a .qsm; built by
     * qs_layout_build, and taken over by qs_layout_verify), per leaf in
     * leaf order: its node (local index in its tree) and the source
     * library's number for it (qs_model_leaf_ids). */
    uint32_t *leaf_node;
    uint32_t *leaf_id;
    /* Derived as well: the categorical tables (qs_catfeat) of the narrow
     * QS blocks; block b's are catfeats[block_catfeat[b] .. [b + 1]).
     * Other blocks (multi-word, QS-Ω) have none and test their nodes. */
    uint32_t *block_catfeat;   /* nblocks + 1 */
    uint32_t ncatfeats;
    qs_catfeat *catfeats;
    uint32_t *cat_order;       /* ncat: catnode indices grouped by feature */
    uint32_t *cat_cls;         /* per feature: value row -> class */
    uint32_t *cat_row;         /* per class: (begin, end) into cat_etree/cat_emask */
    uint32_t *cat_etree;       /* block-local tree */
    uint64_t *cat_emask;       /* AND mask */
    uint64_t ncatent;
} qs_layout;

/* Build the layout of a validated model. */
/* reverse: per tree, nonzero to lay the tree out reversed (NULL: none);
 * ignored for oblivious trees. */
qs_layout *qs_layout_build(const qs_model *m, uint32_t delta, uint32_t tree_block,
                           const uint8_t *reverse, qs_error *err);
/* The same layout, its blocks built by up to `threads` OpenMP threads. */
qs_layout *qs_layout_build_mt(const qs_model *m, uint32_t delta, uint32_t tree_block,
                              const uint8_t *reverse, unsigned threads, qs_error *err);
/* Structural check of a layout read from a file, against its model. */
int qs_layout_check(const qs_layout *L, const qs_model *m, qs_error *err);
/* Rebuild the layout from the model (same Δ, τ and reversal flags) and
 * compare: a file whose QuickScorer data disagrees with its trees is
 * refused, so every back end scores a loaded model alike. */
int qs_layout_verify(qs_layout *L, const qs_model *m, unsigned threads, qs_error *err);
void qs_layout_free(qs_layout *L);
/* Build L's categorical tables (above) from the model; 0, or -1 when out of
 * memory.  qs_layout_build and qs_layout_verify call it. */
int qs_layout_cattab(qs_layout *L, const qs_model *m);

/* The row of value x in F's table: 1 with its entries [*b, *e), or 0 when
 * x takes the nodes one by one. */
static inline int qs_catfeat_row(const qs_layout *L, const qs_catfeat *F, double x, uint32_t *b,
                                 uint32_t *e)
{
    if (!F->table || !(x >= 0.0))
        return 0;
    const uint32_t r = x < (double)F->rows ? (uint32_t)x : F->rows;
    const uint32_t *p = L->cat_row + F->row_off + 2 * (uint64_t)L->cat_cls[F->cls_off + r];
    *b = p[0];
    *e = p[1];
    return 1;
}

/* One categorical feature F of a narrow QS block for one document (feature
 * values xv): APPLY(tree, mask) for every tree whose leaf vector must be
 * ANDed with mask: F's table row, or F's nodes one by one. */
#define QS_CATFEAT_FOR_DOC(L, m, F, xv, APPLY)                                                 \
    do {                                                                                       \
        const double qs_x_ = (xv)[(F)->feature];                                               \
        uint32_t qs_b_, qs_e_;                                                                 \
        if (qs_catfeat_row((L), (F), qs_x_, &qs_b_, &qs_e_)) {                                 \
            for (; qs_b_ < qs_e_; qs_b_++)                                                     \
                APPLY((L)->cat_etree[qs_b_], (L)->cat_emask[qs_b_]);                           \
        } else {                                                                               \
            for (uint32_t qs_k_ = (F)->node_begin; qs_k_ < (F)->node_end; qs_k_++) {           \
                const qs_catnode *qs_C_ = &(L)->cats[(L)->cat_order[qs_k_]];                   \
                if (qs_node_goes_left((m), &(m)->nodes[qs_C_->node], qs_x_) ==                 \
                    !!(qs_C_->tree & QS_CAT_REVERSED))                                         \
                    APPLY(qs_C_->tree & ~QS_CAT_REVERSED, qs_C_->mask);                        \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* All of a narrow QS block's categorical features for one document.  B must
 * be one of L->blocks. */
#define QS_CATS_FOR_DOC(L, m, B, xv, APPLY)                                                    \
    do {                                                                                       \
        const uint32_t qs_bi_ = (uint32_t)((B) - (L)->blocks);                                 \
        for (uint32_t qs_f_ = (L)->block_catfeat[qs_bi_];                                      \
             qs_f_ < (L)->block_catfeat[qs_bi_ + 1]; qs_f_++)                                  \
            QS_CATFEAT_FOR_DOC(L, m, &(L)->catfeats[qs_f_], xv, APPLY);                        \
    } while (0)

/* A group's value rule for feature value *x: returns 1 when the value takes
 * the group's special-value list (NaN under QS_RULE_NAN; the zero band,
 * NaN included, under QS_RULE_ZERO), else 0 with *x ready for the sorted
 * scan (NaN read as 0.0). */
static inline int qs_group_special(const qs_group *g, double *x)
{
    switch (g->rule & QS_RULE_MASK) {
    case QS_RULE_NAN:
        return isnan(*x);
    case QS_RULE_ZERO:
        if (isnan(*x))
            *x = 0.0;
        return *x >= -QS_ZERO_BAND && *x <= QS_ZERO_BAND;
    default:
        if (isnan(*x))
            *x = 0.0;
        return 0;
    }
}

/* Add leaf `leaf` of tree t (global index) to one document's accumulators
 * in the model's accumulation mode: every back end that reads the layout
 * sums with this.  x: the document (read by linear leaves only). */
static inline void qs_layout_add_leaf(const qs_model *m, const qs_layout *L, uint64_t t,
                                      uint64_t leaf, const double *x, double *acc, float *accf)
{
    const uint64_t li = L->leaf_off[t] + leaf;
    double c = L->leaves[li];
    if (m->node_linear && L->leaf_node) {
        /* A linear leaf's value depends on the document (its tree has
         * weight 1, and the model accumulates in double). */
        const uint64_t g = m->trees[t].node_off + L->leaf_node[li];
        if (m->node_linear[g])
            c = qs_leaf_output(m, g, x);
    }
    uint32_t cls = m->trees[t].class_id;
    switch (m->float_accumulate) {
    case QS_ACC_DOUBLE: acc[cls] += c; break;
    case QS_ACC_FLOAT: accf[cls] = accf[cls] + (float)c; break;
    default: accf[cls] = (float)((double)accf[cls] + c); break;
    }
}

#define QS_DEFAULT_DELTA 8u /* measured best (8..16 tie) on MQ2008 1000-5000 trees here */
#define QS_DEFAULT_DOC_BLOCK 64u
#define QS_MAX_DOC_BLOCK 4096u
/* Most doubles the document slots of one workspace may hold. */
#define QS_WORKSPACE_VALUES ((uint64_t)1 << 22)
#define QS_MAX_DELTA 64u
/* Ω trees deeper than this are laid out as plain QS trees. */
#define QS_OMEGA_MAX_DEPTH 16u

#endif
