/* model.h: the in-memory canonical ensemble shared by the readers, the text
 * format, the layout and the back ends, with its reference semantics (one
 * node's decision, the tree walk).  Internal to libqs; depends on common/. */
#ifndef QS_MODEL_H
#define QS_MODEL_H

#include "common/common.h"
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>

/* Documented limits (format/ensemble-text.md, README "Limits"). */
#define QS_MAX_FEATURES   (1u << 24)   /* feature ids 0 .. 2^24-1 */
#define QS_MAX_CLASSES    4096u
#define QS_MAX_TREES      (1u << 22)
#define QS_MAX_TREE_NODES (1u << 20)   /* nodes (internal + leaves) per tree */
#define QS_MAX_LEAVES     ((QS_MAX_TREE_NODES + 1u) / 2u)
/* 32-bit words per categorical bitset: categories 0 .. 2^31 - 1, LightGBM's
 * own range (Tree::CategoricalDecision casts the value to int; its
 * cat_boundaries are ints).  Memory stays bounded by the model's total,
 * QS_MAX_MODEL_CAT_WORDS (256 MiB), and readers grow a set as its
 * categories need, never to the limit at once. */
#define QS_MAX_CAT_WORDS  (1u << 26)
#define QS_MAX_MODEL_CAT_WORDS (1u << 26)   /* bitset words of every set of a model */

/* LightGBM's kZeroThreshold is declared `const double kZeroThreshold = 1e-35f`:
 * a float literal widened to double, so the band edge is float32(1e-35). */
#define QS_ZERO_BAND ((double)1e-35f)

/* Whether a model's library reads dense input (CSV, TSV, a dense matrix)
 * with the zero band dropped: LightGBM's CSV and TSV parsers
 * (src/io/parser.hpp: a value is kept only if `std::fabs(val) >
 * kZeroThreshold || std::isnan(val)`) and its C API's dense-matrix rows
 * (src/c_api.cpp: RowPairFunctionFromDenseMatric and ...DenseRows, the same
 * test) leave such a value out, and
 * an absent value is 0.0; its LibSVM parser and CSR input keep every value.
 * ONNX Runtime, scoring the same model exported to ONNX, does not. */
static inline int qs_model_dense_zero_band(const qs_model *m);

/* v as LightGBM's dense readers read it: +0.0 when |v| <= QS_ZERO_BAND
 * (-0.0, denormals, ±(double)1e-35f included), else v (NaN too). */
static inline double qs_zero_band(double v)
{
    return v >= -QS_ZERO_BAND && v <= QS_ZERO_BAND ? 0.0 : v;
}

enum qs_cmp { QS_CMP_LE = 0, QS_CMP_LT = 1 };   /* goes left iff x <= t / x < t */

/* Accumulation of the per-tree contributions c = weight * leaf, in tree order
 * from the base margin. */
enum qs_accum {
    QS_ACC_DOUBLE = 0,      /* acc += c in double (LightGBM, QuickRank) */
    QS_ACC_FLOAT = 1,       /* acc = acc + (float)c in float32 (XGBoost; weight 1) */
    QS_ACC_FLOAT_DOUBLE = 2 /* acc = (float)((double)acc + c): Java's `float += double` (RankLib) */
};

/* What a numerical node does with special values (LightGBM's missing types;
 * XGBoost and QuickRank use QS_MISS_NAN). */
enum qs_miss {
    QS_MISS_NONE = 0,  /* NaN is replaced by 0.0, then compared */
    QS_MISS_ZERO = 1,  /* NaN -> 0.0; then |x| <= QS_ZERO_BAND goes to the default side */
    QS_MISS_NAN = 2    /* NaN goes to the default side */
};

enum qs_node_kind { QS_NODE_LEAF = 0, QS_NODE_NUM = 1, QS_NODE_CAT = 2 };

/* Categorical rule flags (qs_node.flags). */
#define QS_CAT_MEMBERS_LEFT 0x1u  /* members of the set go left (LightGBM); else right (XGBoost) */
#define QS_CAT_NEG_STRICT   0x2u  /* a value < 0 is invalid (XGBoost); else trunc(x) < 0 (LightGBM) */

/* One node.  Leaves: value = leaf output.  NUM: value = threshold.
 * CAT: the category set is cat_words[cat_off .. cat_off+cat_nwords) of the
 * model, bit c%32 of word c/32 set for category c.  A NaN input follows
 * `miss` (QS_MISS_NAN: default side; otherwise it is treated as 0.0); a
 * value that is not a valid category (negative, or beyond the bitset) goes
 * to the non-member side. */
typedef struct qs_node {
    uint8_t kind;          /* enum qs_node_kind */
    uint8_t miss;          /* enum qs_miss */
    uint8_t default_left;  /* 1: special values go left */
    uint8_t flags;         /* QS_CAT_* */
    uint32_t feature;
    int32_t left, right;   /* indices within the tree's node array */
    uint32_t cat_off, cat_nwords;
    double value;
} qs_node;

/* A linear leaf (LightGBM linear_tree): its output for a document x is
 * konst + coeff[0] * x[feature[0]] + coeff[1] * x[feature[1]] + ... in
 * double, left to right, each product and each sum rounded (no fused
 * multiply-add); if any of those x values is NaN, the leaf's plain value
 * (qs_node.value) instead.  The terms are lin_feature[term_off ..
 * term_off + nterms) and lin_coeff[...] of the model. */
typedef struct qs_linear {
    uint64_t node;          /* global index of its leaf in qs_model.nodes */
    double konst;
    uint64_t term_off;
    uint32_t nterms;
} qs_linear;

#define QS_MAX_LINEAR_TERMS (1u << 20)  /* terms of one linear leaf */

typedef struct qs_tree {
    uint32_t class_id;
    double weight;          /* contribution = weight * leaf value (1.0: none) */
    uint64_t node_off;      /* into qs_model.nodes; the root is the first node */
    uint32_t num_nodes;
} qs_tree;

struct qs_model {
    qs_source source;
    int cmp;                /* enum qs_cmp */
    int float_precision;    /* values and thresholds are float32 */
    int float_accumulate;   /* enum qs_accum: how scores are summed */
    int absent_missing;     /* absent sparse feature = missing (XGBoost) */
    uint32_t num_features;
    uint32_t num_classes;
    double *base;           /* [num_classes] initial margin per class */
    char objective[64];     /* informational, as the source wrote it */
    char transform[16];     /* "none" "sigmoid" "softmax" "exp" "ova-sigmoid" "hinge" ... */
    double transform_param; /* sigmoid scale (LightGBM `sigmoid:`), else 1 */
    uint32_t transform_average; /* N > 0: the transform applies to each sum / N
                                   (LightGBM random forest, N iterations); 0: none */
    /* Output affine (CatBoost's scale_and_bias): with out_affine set, each raw
     * score is out_scale * s[c] + out_bias[c] in double, applied once to the
     * finished sum (qs_model_finish_scores).  Off (0, 1, zeros) for the other
     * sources, whose scores it then leaves untouched. */
    int out_affine;
    double out_scale;
    uint32_t out_divide;    /* N > 1: the sum is first divided by N in the
                               accumulation's precision (ONNX Runtime's
                               AVERAGE: sum / n_trees + base); 0, 1: none */
    double *out_bias;       /* [num_classes] */
    int out_float;          /* 1: the output affine's result is rounded to
                               float32 (ONNX Runtime's opset-1/3 ensembles
                               with a double input: float32(double sum +
                               base)); needs out_affine and accumulate double */
    /* Trees per iteration of the source library (what --trees N counts:
     * N iterations are the first N * iter_trees trees); 0: one per class
     * (num_classes), the trees of class i mod K.  XGBoost's boosted random
     * forests: num_parallel_tree x output groups. */
    uint32_t iter_trees;

    qs_tree *trees;    uint64_t num_trees,  cap_trees;
    qs_node *nodes;    uint64_t num_nodes,  cap_nodes;
    uint32_t *cat_words; uint64_t num_cat_words, cap_cat_words;

    /* The shape found by the last qs_model_validate_shape, for
     * qs_model_get_info (which would otherwise scan every tree again);
     * believed only while the tree and node counts are still these. */
    int shape_known;
    uint64_t shape_trees, shape_nodes;
    uint32_t shape_leaves, shape_depth;
    /* Linear leaves, in increasing node order (none: num_linear 0), and
     * node_linear, derived from them by qs_model_link_linear: per node, 0
     * or 1 + its index in linear[] (NULL without linear leaves). */
    qs_linear *linear; uint64_t num_linear, cap_linear;
    uint32_t *lin_feature; double *lin_coeff; uint64_t num_lin_terms, cap_lin_terms;
    uint32_t *node_linear;
};

static inline int qs_model_dense_zero_band(const qs_model *m)
{
    const qs_source_info *r = qs_source_get(m->source);
    return r && r->dense == QS_DENSE_ZERO_BAND;
}


/* qs_model_validate, remembering the largest leaf count and depth for
 * qs_model_get_info; with threads > 1 the trees are checked side by side
 * (the same result and, for a bad model, the same first error). */
int qs_model_validate_shape(qs_model *m, unsigned threads, qs_error *err);

/* ---- construction helpers (return 0, or -1 with err set to NOMEM/LIMIT) */
qs_model *qs_model_new(qs_source src, qs_error *err);
int qs_model_set_classes(qs_model *m, uint32_t k, qs_error *err);
/* Start a new tree; nodes added next belong to it. */
int qs_model_add_tree(qs_model *m, uint32_t class_id, double weight, qs_error *err);
/* Append `n` nodes to the current tree; returns the index of the first one
 * within the tree (nodes are zero-initialised), or -1. */
int64_t qs_model_add_nodes(qs_model *m, uint32_t n, qs_error *err);
/* Pointer to node `i` of the current (last) tree. */
qs_node *qs_model_cur_node(qs_model *m, uint32_t i);
/* Append a category bitset (w NULL: n zero words, for the caller to fill
 * at the returned offset); returns its offset or -1. */
int64_t qs_model_add_cat_words(qs_model *m, const uint32_t *w, uint32_t n, qs_error *err);

/* Append a linear model to leaf `node` (global index; nodes must come in
 * increasing order); 0 or -1 with err (NOMEM/LIMIT). */
int qs_model_add_linear(qs_model *m, uint64_t node, double konst, uint32_t nterms,
                        const uint32_t *feature, const double *coeff, qs_error *err);
/* Build node_linear from linear[] (after every leaf was added, before
 * qs_model_validate); checks that each names a leaf, in increasing order. */
int qs_model_link_linear(qs_model *m, qs_error *err);
/* Keep the first `ntrees` trees only (and their linear leaves).  Nothing
 * is freed: restoring num_trees, num_nodes, num_linear and num_lin_terms
 * undoes it. */
void qs_model_truncate(qs_model *m, uint64_t ntrees);

/* Output of leaf `node` (global index) for document x: its value, or its
 * linear model's value (qs_linear).  Never inlined into SIMD-targeted code:
 * its arithmetic is the plain double one of the linear rule. */
double qs_leaf_output(const qs_model *m, uint64_t node, const double *x);

/* The library's own number of every node of tree t that is a leaf, into
 * ids[0 .. num_nodes - 1] (local indexes), as the source library's
 * pred_leaf prints it: XGBoost's node id (the canonical index); for every
 * other source the leaf's rank among the tree's leaves in node order
 * (LightGBM's leaf index). */
void qs_model_leaf_ids(const qs_model *m, uint64_t t, uint32_t *ids);

/* ---- reference semantics: one node's decision and a whole-tree walk */
static inline int qs_node_goes_left(const qs_model *m, const qs_node *n, double x)
{
    if (n->kind == QS_NODE_NUM) {
        if (isnan(x)) {
            if (n->miss == QS_MISS_NAN)
                return n->default_left;
            x = 0.0;
        }
        if (n->miss == QS_MISS_ZERO && x >= -QS_ZERO_BAND && x <= QS_ZERO_BAND)
            return n->default_left;
        return m->cmp == QS_CMP_LE ? x <= n->value : x < n->value;
    }
    /* categorical */
    const int members_left = (n->flags & QS_CAT_MEMBERS_LEFT) != 0;
    if (isnan(x)) {
        if (n->miss == QS_MISS_NAN)
            return n->default_left;
        x = 0.0;
    }
    if ((n->flags & QS_CAT_NEG_STRICT) ? x < 0.0 : x <= -1.0)
        return !members_left;
    double c = trunc(x);
    if (!(c < (double)n->cat_nwords * 32.0))
        return !members_left;
    uint32_t ci = (uint32_t)c;
    int member = (m->cat_words[n->cat_off + ci / 32] >> (ci % 32)) & 1u;
    return member ? members_left : !members_left;
}

/* Index (within the tree) of the leaf that `x` reaches. */
static inline uint32_t qs_tree_walk(const qs_model *m, const qs_tree *t, const double *x)
{
    const qs_node *nodes = m->nodes + t->node_off;
    uint32_t i = 0;
    while (nodes[i].kind != QS_NODE_LEAF)
        i = (uint32_t)(qs_node_goes_left(m, &nodes[i], x[nodes[i].feature])
                       ? nodes[i].left : nodes[i].right);
    return i;
}

/* Raw scores of one dense document by walking every tree in order, with the
 * model's accumulation rules and then its output affine: the reference
 * semantics.  out[] has num_classes entries.  The model must have passed
 * qs_model_validate. */
void qs_model_walk_score(const qs_model *m, const double *x, double *out);

/* The same sum without the output affine: what every back end computes
 * (the `walk` back end calls this); qs_score_batch then applies the affine
 * once, for every back end, with qs_model_finish_scores. */
void qs_model_walk_sum(const qs_model *m, const double *x, double *out);

/* Apply the output affine to n documents' scores out[d * K + c] in place:
 * out = out_scale * s, rounded to double, then + out_bias[c], rounded to
 * double (two roundings, never a fused multiply-add), then to float32 with
 * out_float; with out_divide N, s is first s / N (in float32 with
 * accumulate float).  Nothing when out_affine is off. */
void qs_model_finish_scores(const qs_model *m, double *out, size_t n);

/* Whether tree t is oblivious: complete, and every node of a level tests the
 * same feature with the same threshold and special-value rules.  *depth_out
 * receives its depth (0 for a single leaf). */
int qs_tree_is_oblivious(const qs_model *m, const qs_tree *t, uint32_t *depth_out);

/* Whether `name` is one of the output transforms qs knows. */
int qs_transform_known(const char *name);

#endif
