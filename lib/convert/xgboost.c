/* xgboost.c: converts an XGBoost JSON or UBJSON model (Booster.save_model,
 * schema of XGBoost 1.7; later schemas where they differ only in fields read
 * exactly), or a model in XGBoost's binary format (1.0 to 1.7, "binf"; see
 * "binary format" below), into the canonical ensemble, reproducing XGBoost
 * 1.7.4's scores bit for bit.
 *
 * Facts this file relies on, from XGBoost's sources (v1.7.4 unless noted):
 *  - src/predictor/predict_fn.h GetNextNode: a missing value takes the default
 *    child; otherwise a numerical node goes to LeftChild() + !(x < cond), in
 *    float32.  Every version reads the right child as left + 1 there (2.x and
 *    3.x also for categorical nodes), so a tree whose right child is not
 *    left + 1 would be scored differently by different code paths: refused.
 *  - include/xgboost/tree_model.h: a node is a leaf iff its left child is -1;
 *    the leaf value is split_conditions[leaf].  Pruned ("deleted") nodes stay
 *    in the arrays, unreachable from the root; they are dropped here.
 *  - src/common/categorical.h Decision: a categorical node sends to the LEFT a
 *    value that is negative, >= 2^24, beyond the category bitset, or not in
 *    the set; the categories listed in the model go RIGHT.  NaN is missing.
 *  - src/gbm/gbtree_model.cc LoadModel: trees are placed by their "id";
 *    tree_info[i] is the output group of tree i.  Scores start at the base
 *    margin and add each leaf in float32, tree by tree.
 *  - src/learner.cc: base_score is stored in output space and turned into a
 *    margin by the objective's ProbToMargin, in float32:
 *    -logf(1/b - 1) for reg:logistic and binary:logistic
 *    (src/objective/regression_loss.h), logf(b) for count:poisson,
 *    survival:cox, reg:gamma, reg:tweedie (src/objective/regression_obj.cu)
 *    and survival:aft (src/objective/aft_obj.cu), identity otherwise.
 *    XGBoost 3.1 writes base_score as a JSON array in a string ("[5E-1]"),
 *    one value per output group.
 *  - XGBoost 2.0 and later: num_target > 1 with multi_strategy
 *    one_output_per_tree has one output group per target (tree_info names
 *    it), scored like classes; multi_output_tree trees have vector leaves
 *    (size_leaf_vector K > 1) whose value j goes to output j, in float32,
 *    tree by tree (2.x: in base_weights, K per node; 3.x: in leaf_weights,
 *    K per leaf, a leaf's right_children entry being its index): each
 *    becomes K canonical trees, one per output.  3.1's "cats" holds the training
 *    categories of data-frame inputs, which predict() re-codes: refused
 *    unless empty.
 *  - src/common/json.cc: XGBoost writes NaN, Infinity and -Infinity bare in
 *    JSON; its UBJSON holds float32 arrays ('d'), U8/I32/I64 arrays and
 *    strings, read here through the same tokens. */
#include "convert/json.h"
#include "convert/convert.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ vectors */

typedef struct i64vec {
    int64_t *v;
    size_t n, cap;
} i64vec;

typedef struct f32vec {
    float *v;
    size_t n, cap;
} f32vec;

/* ------------------------------------------------------ converter state */

/* The arrays of one tree, as read.  Fields are bits in `seen`. */
enum {
    F_LEFT, F_RIGHT, F_SPLIT_INDICES, F_SPLIT_CONDITIONS, F_DEFAULT_LEFT, F_SPLIT_TYPE,
    F_CATEGORIES, F_CATEGORIES_NODES, F_CATEGORIES_SEGMENTS, F_CATEGORIES_SIZES, F_ID,
    F_TREE_PARAM, F_BASE_WEIGHTS, F_LEAF_WEIGHTS, F_NFIELDS
};

static const char *const field_names[F_NFIELDS] = {
    "left_children", "right_children", "split_indices", "split_conditions", "default_left",
    "split_type", "categories", "categories_nodes", "categories_segments", "categories_sizes",
    "id", "tree_param", "base_weights", "leaf_weights"
};

typedef struct xtree {
    unsigned seen;
    i64vec arr[F_ID];        /* integer arrays by field (F_SPLIT_CONDITIONS unused) */
    f32vec cond;             /* split_conditions */
    f32vec bw, lw;           /* base_weights, leaf_weights (read for vector-leaf trees) */
    int64_t id;
    int64_t num_nodes;       /* tree_param.num_nodes, -1 when absent */
    int64_t leaf_vec;        /* tree_param.size_leaf_vector (0 or 1: scalar leaves) */
} xtree;

typedef struct conv {
    qs_json_reader r;
    qs_error *err;
    qs_model *m;
    const char *buf;

    /* learner */
    int has_learner;
    qs_json_token base_tok;  /* learner_model_param.base_score (a string token) */
    int has_base;
    int64_t num_feature, num_class, num_target;
    int has_num_feature, has_num_class;
    char objective[64];
    int has_objective;
    int base_binary;         /* base_score read from the binary format (base_f32) */
    float base_f32;

    /* gradient_booster */
    char booster[32];        /* outer "name" */
    char inner_booster[32];  /* dart: gbtree.name */
    int has_booster, has_inner;
    f32vec weight_drop;
    int has_weight_drop;
    int64_t num_trees_param; /* gbtree_model_param.num_trees, -1 when absent */
    int64_t num_parallel;    /* gbtree_model_param.num_parallel_tree (1 when absent) */
    i64vec indptr;           /* iteration_indptr (XGBoost 2.0 and later) */
    int has_indptr;
    i64vec tree_info;
    int has_tree_info, has_trees;
    i64vec tree_ids;         /* "id" of each tree, in file order */
    i64vec tree_first;       /* its first canonical tree */
    i64vec tree_nvec;        /* canonical trees made from it: 1, or K for vector leaves */
    uint64_t num_features;   /* max split index + 1 */

    /* scratch, reused across trees */
    xtree t;
    uint32_t *stack;
    int32_t *map;            /* original node id -> canonical index, -1: unreachable */
    int32_t *catidx;         /* node id -> index into categories_nodes, -1: none */
    size_t scratch_cap;
} conv;

static int nomem(conv *c)
{
    return qs_fail(c->err, QS_ERR_NOMEM, 0, "out of memory");
}

static int next(conv *c, qs_json_token *t)
{
    return qs_json_next(&c->r, t, c->err);
}

static int expect(conv *c, qs_json_token *t, qs_json_type type, const char *what)
{
    return qs_json_expect(&c->r, t, type, what, c->err);
}

static int duplicate(conv *c, const qs_json_token *k, const char *what)
{
    return qs_json_duplicate(k, what, c->err);
}

/* Parse a decimal integer held in a string (XGBoost writes its parameters as
 * strings, e.g. "num_feature":"47"); a bare number is accepted too. */
static int read_param_int(conv *c, const char *what, int64_t *out)
{
    qs_json_token t;
    if (next(c, &t) != 0)
        return -1;
    if (t.type == QS_JSON_STRING) {
        char tmp[32];
        qs_json_token n = t;
        if (qs_json_str_decode(&t, tmp, sizeof tmp) >= 0) {
            n.type = QS_JSON_NUMBER;
            n.text = tmp;
            n.len = strlen(tmp);
            if (qs_json_get_i64(&n, out) == 0)
                return 0;
        }
    } else if (t.type == QS_JSON_NUMBER && qs_json_get_i64(&t, out) == 0) {
        return 0;
    }
    return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)t.offset,
                      "%s should be an integer (byte %zu)", what, t.offset);
}

/* Read a string value into out[cap] (decoded). */
static int read_name(conv *c, const char *what, char *out, size_t cap)
{
    return qs_json_read_name(&c->r, what, out, cap, c->err);
}

/* What a token that is not a usable integer is, for messages. */
static const char *number_kind(const qs_json_token *t)
{
    if (t->type != QS_JSON_NUMBER)
        return qs_json_type_name(t->type);
    size_t i = t->len && t->text[0] == '-';
    for (; i < t->len; i++) {
        if (t->text[i] == 'N' || t->text[i] == 'I')
            return "NaN or Infinity";
        if (t->text[i] < '0' || t->text[i] > '9')
            return "a number with a fraction or exponent";
    }
    return "an integer beyond 64 bits";
}

/* Read an array of integers.  `bools`: true/false count as 1/0 (old models
 * wrote default_left as booleans).  At most `limit` entries. */
static int read_int_array(conv *c, const char *what, i64vec *out, int bools, size_t limit)
{
    qs_json_token t;
    if (expect(c, &t, QS_JSON_ARRAY, what) != 0)
        return -1;
    out->n = 0;
    for (;;) {
        if (next(c, &t) != 0)
            return -1;
        if (t.type == QS_JSON_ARRAY_END)
            return 0;
        int64_t v;
        if (bools && (t.type == QS_JSON_TRUE || t.type == QS_JSON_FALSE))
            v = t.type == QS_JSON_TRUE;
        else if (qs_json_get_i64(&t, &v) != 0)
            return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)t.offset,
                              "%s[%zu] should be an integer, found %s at byte %zu", what, out->n,
                              number_kind(&t), t.offset);
        if (out->n >= limit)
            return qs_fail_at(c->err, QS_ERR_LIMIT, (long long)t.offset,
                              "%s has more than %zu entries (limit)", what, limit);
        if (qs_vec_reserve((void **)&out->v, &out->cap, out->n, sizeof *out->v) != 0)
            return nomem(c);
        out->v[out->n++] = v;
    }
}

/* Read an array of numbers as float32 (strtof of each number's text). */
static int read_f32_array(conv *c, const char *what, f32vec *out, size_t limit)
{
    qs_json_token t;
    if (expect(c, &t, QS_JSON_ARRAY, what) != 0)
        return -1;
    out->n = 0;
    for (;;) {
        if (next(c, &t) != 0)
            return -1;
        if (t.type == QS_JSON_ARRAY_END)
            return 0;
        float v;
        if (qs_json_get_f32(&t, &v) != 0)
            return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)t.offset,
                              "%s[%zu] should be a number, found %s at byte %zu", what, out->n,
                              qs_json_type_name(t.type), t.offset);
        if (out->n >= limit)
            return qs_fail_at(c->err, QS_ERR_LIMIT, (long long)t.offset,
                              "%s has more than %zu entries (limit)", what, limit);
        if (qs_vec_reserve((void **)&out->v, &out->cap, out->n, sizeof *out->v) != 0)
            return nomem(c);
        out->v[out->n++] = v;
    }
}

/* ------------------------------------------------------------- one tree */

static int ensure_scratch(conv *c, size_t n)
{
    if (n <= c->scratch_cap)
        return 0;
    free(c->stack);
    free(c->map);
    free(c->catidx);
    c->stack = malloc(n * sizeof *c->stack);
    c->map = malloc(n * sizeof *c->map);
    c->catidx = malloc(n * sizeof *c->catidx);
    c->scratch_cap = 0;
    if (!c->stack || !c->map || !c->catidx)
        return nomem(c);
    c->scratch_cap = n;
    return 0;
}

/* Build canonical tree number `ti` (file order) from the arrays in c->t. */
static int build_tree(conv *c, uint64_t ti)
{
    xtree *t = &c->t;
    qs_error *err = c->err;
    unsigned long long tl = (unsigned long long)ti;
    static const int required[] = { F_LEFT, F_RIGHT, F_SPLIT_INDICES, F_SPLIT_CONDITIONS,
                                    F_DEFAULT_LEFT };
    for (size_t k = 0; k < sizeof required / sizeof required[0]; k++)
        if (!(t->seen & (1u << required[k])))
            return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu: %s is missing", tl,
                           field_names[required[k]]);

    size_t n = t->arr[F_LEFT].n;
    for (int f = F_RIGHT; f <= F_SPLIT_TYPE; f++) {
        if (!(t->seen & (1u << f)))
            continue;
        size_t nf = f == F_SPLIT_CONDITIONS ? t->cond.n : t->arr[f].n;
        if (nf != n)
            return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu: left_children has %zu entries, %s %zu",
                           tl, n, field_names[f], nf);
    }
    if (t->num_nodes >= 0 && (uint64_t)t->num_nodes != n)
        return qs_fail(err, QS_ERR_FORMAT, 0,
                       "tree %llu: tree_param.num_nodes is %lld, but left_children has %zu entries",
                       tl, (long long)t->num_nodes, n);
    if (n == 0)
        return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu has no nodes", tl);
    if (ensure_scratch(c, n) != 0)
        return -1;

    const int64_t *L = t->arr[F_LEFT].v, *R = t->arr[F_RIGHT].v;
    const int64_t *SI = t->arr[F_SPLIT_INDICES].v, *DL = t->arr[F_DEFAULT_LEFT].v;
    const int64_t *ST = (t->seen & (1u << F_SPLIT_TYPE)) ? t->arr[F_SPLIT_TYPE].v : NULL;
    const float *SC = t->cond.v;

    /* Walk from the root with an explicit stack: every node reached at most
     * once (a second visit means a cycle or a shared subtree). */
    for (size_t i = 0; i < n; i++)
        c->map[i] = -1;
    uint32_t sp = 0;
    c->stack[sp++] = 0;
    c->map[0] = 0;
    while (sp) {
        uint32_t i = c->stack[--sp];
        if (L[i] == -1)
            continue;   /* a leaf; its right_children entry is ignored, as XGBoost does */
        int64_t l = L[i], r = R[i];
        if (l < 0 || (uint64_t)l >= n || r < 0 || (uint64_t)r >= n)
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "tree %llu node %u: children %lld and %lld out of range (%zu nodes)",
                           tl, i, (long long)l, (long long)r, n);
        if (r != l + 1)
            return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                           "tree %llu node %u: right child %lld is not left child %lld + 1; "
                           "xgboost's predictors assume it is, so the tree's scores are ambiguous",
                           tl, i, (long long)r, (long long)l);
        int64_t ch[2] = { l, r };
        for (int k = 0; k < 2; k++) {
            if (c->map[ch[k]] != -1)
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "tree %llu node %u: node %lld is reached twice (cycle or shared node)",
                               tl, i, (long long)ch[k]);
            c->map[ch[k]] = 0;
            c->stack[sp++] = (uint32_t)ch[k];
        }
    }
    /* Keep XGBoost's node ids when no node is unreachable; otherwise number
     * the reachable ones in id order (root stays 0). */
    uint32_t count = 0;
    for (size_t i = 0; i < n; i++)
        if (c->map[i] != -1)
            c->map[i] = (int32_t)count++;

    /* Category sets: categories_nodes[k] is a node id, its categories are
     * categories[segments[k] .. segments[k] + sizes[k]). */
    const i64vec *cn = &t->arr[F_CATEGORIES_NODES], *cs = &t->arr[F_CATEGORIES_SEGMENTS],
                 *cz = &t->arr[F_CATEGORIES_SIZES], *cv = &t->arr[F_CATEGORIES];
    size_t ncat = (t->seen & (1u << F_CATEGORIES_NODES)) ? cn->n : 0;
    for (size_t i = 0; i < n; i++)
        c->catidx[i] = -1;
    if (ncat) {
        if (!ST)
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "tree %llu: categories_nodes is given but split_type is missing", tl);
        size_t ns = (t->seen & (1u << F_CATEGORIES_SEGMENTS)) ? cs->n : 0;
        size_t nz = (t->seen & (1u << F_CATEGORIES_SIZES)) ? cz->n : 0;
        if (ns != ncat || nz != ncat)
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "tree %llu: categories_nodes has %zu entries, categories_segments %zu, "
                           "categories_sizes %zu", tl, ncat, ns, nz);
        size_t ncv = (t->seen & (1u << F_CATEGORIES)) ? cv->n : 0;
        for (size_t k = 0; k < ncat; k++) {
            int64_t node = cn->v[k];
            if (node < 0 || (uint64_t)node >= n)
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "tree %llu: categories_nodes[%zu] = %lld is out of range (%zu nodes)",
                               tl, k, (long long)node, n);
            /* XGBoost matches the list against node ids in increasing order. */
            if (k > 0 && node <= cn->v[k - 1])
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "tree %llu: categories_nodes is not increasing at entry %zu", tl, k);
            if (ST[node] != 1 || L[node] == -1)
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "tree %llu: categories_nodes lists node %lld, which is not a "
                               "categorical split", tl, (long long)node);
            int64_t b = cs->v[k], z = cz->v[k];
            if (b < 0 || z <= 0 || (uint64_t)b > ncv || (uint64_t)z > ncv - (uint64_t)b)
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "tree %llu: category set %zu (segment %lld, size %lld) is outside "
                               "categories (%zu entries)", tl, k, (long long)b, (long long)z, ncv);
            c->catidx[node] = (int32_t)k;
        }
    }

    /* Vector leaves (multi_output_tree, size_leaf_vector K > 1): XGBoost
     * adds leaf value j to output j, each output in float32 in tree order,
     * so the tree becomes K canonical trees, one per output, each with the
     * same splits.  The values: 3.x "leaf_weights", K per leaf, the leaf's
     * right_children entry being its index; 2.x "base_weights", K per node. */
    uint32_t nvec = t->leaf_vec > 1 ? (uint32_t)t->leaf_vec : 1;
    const float *LW = NULL;
    size_t nlw = 0;
    int by_leaf = 0;
    if (nvec > 1) {
        if (t->seen & (1u << F_LEAF_WEIGHTS)) {
            LW = t->lw.v;
            nlw = t->lw.n;
            by_leaf = 1;
        } else if ((t->seen & (1u << F_BASE_WEIGHTS)) && t->bw.n == n * nvec) {
            LW = t->bw.v;
            nlw = t->bw.n;
        } else {
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "tree %llu: size_leaf_vector %u, but neither leaf_weights nor "
                           "base_weights (%zu entries for %zu nodes) holds the leaf vectors",
                           tl, nvec, (t->seen & (1u << F_BASE_WEIGHTS)) ? t->bw.n : 0, n);
        }
        if (c->m->num_trees + nvec > QS_MAX_TREES)
            return qs_fail(err, QS_ERR_LIMIT, 0, "more than %u trees (limit)", QS_MAX_TREES);
    }
    uint64_t first = c->m->num_trees;
    for (uint32_t vj = 0; vj < nvec; vj++) {
    if (qs_model_add_tree(c->m, 0, 1.0, err) != 0)
        return -1;
    if (qs_model_add_nodes(c->m, count, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (c->map[i] < 0)
            continue;
        uint32_t ci = (uint32_t)c->map[i];
        if (L[i] == -1) {
            float v = SC[i];
            if (nvec > 1) {
                uint64_t at = by_leaf ? (uint64_t)R[i] : (uint64_t)i;
                if (R[i] < 0 && by_leaf)
                    return qs_fail(err, QS_ERR_FORMAT, 0,
                                   "tree %llu node %zu: leaf index %lld is negative", tl, i,
                                   (long long)R[i]);
                if (at >= nlw / nvec)
                    return qs_fail(err, QS_ERR_FORMAT, 0,
                                   "tree %llu node %zu: leaf vector %llu is beyond the %zu "
                                   "values of the tree", tl, i, (unsigned long long)at, nlw);
                v = LW[at * nvec + vj];
            }
            qs_node *nd = qs_model_cur_node(c->m, ci);
            nd->kind = QS_NODE_LEAF;
            nd->value = v;
            continue;
        }
        if (SI[i] < 0)
            return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu node %zu: split index %lld is negative",
                           tl, i, (long long)SI[i]);
        if (SI[i] >= (int64_t)QS_MAX_FEATURES)
            return qs_fail(err, QS_ERR_LIMIT, 0,
                           "tree %llu node %zu: feature %lld is beyond the limit of %u features",
                           tl, i, (long long)SI[i], QS_MAX_FEATURES);
        if (DL[i] != 0 && DL[i] != 1)
            return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu node %zu: default_left is %lld, not 0 or 1",
                           tl, i, (long long)DL[i]);
        int64_t type = ST ? ST[i] : 0;
        if (type != 0 && type != 1)
            return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu node %zu: split_type is %lld, not 0 or 1",
                           tl, i, (long long)type);
        if ((uint64_t)SI[i] + 1 > c->num_features)
            c->num_features = (uint64_t)SI[i] + 1;
        int32_t lc = c->map[L[i]], rc = c->map[R[i]];
        uint32_t off = 0, nwords = 0;
        if (type == 1) {
            int32_t k = c->catidx[i];
            if (k < 0)
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "tree %llu node %zu: categorical split without a category set", tl, i);
            /* The set's bitset spans categories 0 .. max, as XGBoost sizes it:
             * a larger category falls outside and goes left. */
            size_t b = (size_t)cs->v[k], z = (size_t)cz->v[k];
            int64_t maxc = 0;
            for (size_t j = b; j < b + z; j++) {
                int64_t cat = cv->v[j];
                if (cat < 0)
                    return qs_fail(err, QS_ERR_FORMAT, 0,
                                   "tree %llu node %zu: category %lld is negative", tl, i,
                                   (long long)cat);
                if (cat >= (int64_t)QS_MAX_CAT_WORDS * 32)
                    return qs_fail(err, QS_ERR_LIMIT, 0,
                                   "tree %llu node %zu: category %lld is beyond the limit of %u",
                                   tl, i, (long long)cat, QS_MAX_CAT_WORDS * 32);
                if (cat > maxc)
                    maxc = cat;
            }
            nwords = (uint32_t)(maxc / 32 + 1);
            /* The set is built in the model's own words (zeroed), with no
             * scratch copy: a category near the limit then costs its
             * bitset once (256 MiB at most), not twice. */
            int64_t o = qs_model_add_cat_words(c->m, NULL, nwords, err);
            if (o < 0)
                return -1;
            off = (uint32_t)o;
            uint32_t *words = c->m->cat_words + off;
            for (size_t j = b; j < b + z; j++)
                words[cv->v[j] / 32] |= 1u << (cv->v[j] % 32);
        }
        qs_node *nd = qs_model_cur_node(c->m, ci);
        nd->feature = (uint32_t)SI[i];
        nd->left = lc;
        nd->right = rc;
        nd->default_left = (uint8_t)DL[i];
        nd->miss = QS_MISS_NAN;
        if (type == 1) {
            nd->kind = QS_NODE_CAT;
            nd->flags = QS_CAT_NEG_STRICT;   /* members go right; negative values go left */
            nd->cat_off = off;
            nd->cat_nwords = nwords;
        } else {
            nd->kind = QS_NODE_NUM;
            /* x < NaN is false for every x, which is what x < -inf gives. */
            nd->value = isnan(SC[i]) ? -INFINITY : (double)SC[i];
        }
    }
    }
    if (qs_vec_reserve((void **)&c->tree_ids.v, &c->tree_ids.cap, c->tree_ids.n,
                    sizeof *c->tree_ids.v) != 0 ||
        qs_vec_reserve((void **)&c->tree_first.v, &c->tree_first.cap, c->tree_first.n,
                    sizeof *c->tree_first.v) != 0 ||
        qs_vec_reserve((void **)&c->tree_nvec.v, &c->tree_nvec.cap, c->tree_nvec.n,
                    sizeof *c->tree_nvec.v) != 0)
        return nomem(c);
    c->tree_ids.v[c->tree_ids.n++] = (t->seen & (1u << F_ID)) ? t->id : (int64_t)ti;
    c->tree_first.v[c->tree_first.n++] = (int64_t)first;
    c->tree_nvec.v[c->tree_nvec.n++] = nvec;
    return 0;
}

/* tree_param: {"num_nodes": "7", "size_leaf_vector": "0", ...} */
static int parse_tree_param(conv *c, uint64_t ti)
{
    qs_json_token t;
    char what[96];
    if (expect(c, &t, QS_JSON_OBJECT, "tree_param") != 0)
        return -1;
    for (;;) {
        if (next(c, &t) != 0)
            return -1;
        if (t.type == QS_JSON_OBJECT_END)
            return 0;
        int64_t v;
        if (qs_json_str_eq(&t, "num_nodes")) {
            snprintf(what, sizeof what, "tree %llu: tree_param.num_nodes", (unsigned long long)ti);
            if (read_param_int(c, what, &v) != 0)
                return -1;
            if (v < 0)
                return qs_fail(c->err, QS_ERR_FORMAT, 0, "%s is negative", what);
            c->t.num_nodes = v;
        } else if (qs_json_str_eq(&t, "size_leaf_vector")) {
            snprintf(what, sizeof what, "tree %llu: tree_param.size_leaf_vector",
                     (unsigned long long)ti);
            if (read_param_int(c, what, &v) != 0)
                return -1;
            if (v < 0 || v > (int64_t)QS_MAX_CLASSES)
                return qs_fail(c->err, v < 0 ? QS_ERR_FORMAT : QS_ERR_LIMIT, 0,
                               "%s is %lld (limit %u)", what, (long long)v, QS_MAX_CLASSES);
            c->t.leaf_vec = v;
        } else if (qs_json_skip(&c->r, &t, c->err) != 0) {
            return -1;
        }
    }
}

static int parse_tree(conv *c, uint64_t ti)
{
    xtree *t = &c->t;
    qs_json_token k;
    char what[96];
    t->seen = 0;
    t->num_nodes = -1;
    t->leaf_vec = 0;
    t->id = 0;
    for (;;) {
        if (next(c, &k) != 0)
            return -1;
        if (k.type == QS_JSON_OBJECT_END)
            break;
        int f = -1;
        for (int j = 0; j < F_NFIELDS; j++)
            if (qs_json_str_eq(&k, field_names[j])) {
                f = j;
                break;
            }
        if (f < 0) {   /* base_weights, loss_changes, sum_hessian, parents, ... */
            if (qs_json_skip(&c->r, &k, c->err) != 0)
                return -1;
            continue;
        }
        snprintf(what, sizeof what, "tree %llu: %s", (unsigned long long)ti, field_names[f]);
        if (t->seen & (1u << f))
            return duplicate(c, &k, what);
        t->seen |= 1u << f;
        int rc;
        if (f == F_SPLIT_CONDITIONS)
            rc = read_f32_array(c, what, &t->cond, QS_MAX_TREE_NODES);
        else if (f == F_BASE_WEIGHTS || f == F_LEAF_WEIGHTS)
            rc = read_f32_array(c, what, f == F_BASE_WEIGHTS ? &t->bw : &t->lw,
                                (size_t)QS_MAX_TREE_NODES * QS_MAX_CLASSES);
        else if (f == F_ID)
            rc = read_param_int(c, what, &t->id);
        else if (f == F_TREE_PARAM)
            rc = parse_tree_param(c, ti);
        else
            rc = read_int_array(c, what, &t->arr[f], f == F_DEFAULT_LEFT,
                                f == F_CATEGORIES ? (size_t)SIZE_MAX / 16 : QS_MAX_TREE_NODES);
        if (rc != 0)
            return -1;
    }
    return build_tree(c, ti);
}

/* ------------------------------------------------------ booster objects */

/* gbtree_model_param, trees, tree_info (also the "model" of gblinear, which
 * has none of them and is refused later by name). */
static int parse_gbtree_model(conv *c)
{
    qs_json_token k, t;
    if (expect(c, &t, QS_JSON_OBJECT, "gradient_booster.model") != 0)
        return -1;
    for (;;) {
        if (next(c, &k) != 0)
            return -1;
        if (k.type == QS_JSON_OBJECT_END)
            return 0;
        if (qs_json_str_eq(&k, "trees")) {
            if (c->has_trees)
                return duplicate(c, &k, "trees");
            c->has_trees = 1;
            if (expect(c, &t, QS_JSON_ARRAY, "trees") != 0)
                return -1;
            for (uint64_t ti = 0;; ti++) {
                if (next(c, &t) != 0)
                    return -1;
                if (t.type == QS_JSON_ARRAY_END)
                    break;
                if (t.type != QS_JSON_OBJECT)
                    return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)t.offset,
                                      "trees[%llu] should be an object, found %s at byte %zu",
                                      (unsigned long long)ti, qs_json_type_name(t.type), t.offset);
                if (ti >= QS_MAX_TREES)
                    return qs_fail(c->err, QS_ERR_LIMIT, 0, "more than %u trees", QS_MAX_TREES);
                if (parse_tree(c, ti) != 0)
                    return -1;
            }
        } else if (qs_json_str_eq(&k, "tree_info")) {
            if (c->has_tree_info)
                return duplicate(c, &k, "tree_info");
            c->has_tree_info = 1;
            if (read_int_array(c, "tree_info", &c->tree_info, 0, QS_MAX_TREES) != 0)
                return -1;
        } else if (qs_json_str_eq(&k, "iteration_indptr")) {
            /* XGBoost 2.0 and later: iteration i is trees [indptr[i],
             * indptr[i+1]) (checked against num_parallel_tree in finish) */
            if (c->has_indptr)
                return duplicate(c, &k, "iteration_indptr");
            c->has_indptr = 1;
            if (read_int_array(c, "iteration_indptr", &c->indptr, 0, (size_t)QS_MAX_TREES + 1) != 0)
                return -1;
        } else if (qs_json_str_eq(&k, "cats")) {
            /* XGBoost 3.1: the categories seen in training, by feature ("enc"),
             * with which predict() re-codes a data frame's categories into
             * the training codes (their indices in these lists).  Numeric
             * input (numpy, DMatrix, LETOR, CSV) is taken as those codes
             * as it is: the trees hold codes, and qs scores them as
             * XGBoost scores numeric input.  The lists are for inspection
             * (qs_source_categories). */
            if (expect(c, &t, QS_JSON_OBJECT, "gradient_booster.model.cats") != 0)
                return -1;
            for (;;) {
                if (next(c, &k) != 0)
                    return -1;
                if (k.type == QS_JSON_OBJECT_END)
                    break;
                if (qs_json_skip(&c->r, &k, c->err) != 0) {
                    return -1;
                }
            }
        } else if (qs_json_str_eq(&k, "gbtree_model_param")) {
            if (expect(c, &t, QS_JSON_OBJECT, "gbtree_model_param") != 0)
                return -1;
            for (;;) {
                if (next(c, &k) != 0)
                    return -1;
                if (k.type == QS_JSON_OBJECT_END)
                    break;
                int64_t v;
                if (qs_json_str_eq(&k, "num_trees")) {
                    if (read_param_int(c, "gbtree_model_param.num_trees", &v) != 0)
                        return -1;
                    c->num_trees_param = v;
                } else if (qs_json_str_eq(&k, "num_parallel_tree")) {
                    /* boosted random forests: trees per output group per
                     * iteration (XGBoost 1.6 and later write it here) */
                    if (read_param_int(c, "gbtree_model_param.num_parallel_tree", &v) != 0)
                        return -1;
                    if (v < 1 || v > (int64_t)QS_MAX_TREES)
                        return qs_fail(c->err, v < 1 ? QS_ERR_FORMAT : QS_ERR_LIMIT, 0,
                                       "gbtree_model_param.num_parallel_tree is %lld (1 .. %u)",
                                       (long long)v, QS_MAX_TREES);
                    c->num_parallel = v;
                } else if (qs_json_str_eq(&k, "size_leaf_vector")) {
                    /* each tree says its own (tree_param) */
                    if (read_param_int(c, "gbtree_model_param.size_leaf_vector", &v) != 0)
                        return -1;
                } else if (qs_json_skip(&c->r, &k, c->err) != 0) {
                    return -1;
                }
            }
        } else if (qs_json_skip(&c->r, &k, c->err) != 0) {
            return -1;
        }
    }
}

/* gradient_booster: {"name": "gbtree", "model": {...}} or, for dart,
 * {"name": "dart", "gbtree": {"name": "gbtree", "model": {...}},
 *  "weight_drop": [...]}.  `nested` is 1 inside dart's "gbtree" (a fixed
 * depth of the code, not of the input). */
static int parse_booster(conv *c, int nested)
{
    qs_json_token k, t;
    if (expect(c, &t, QS_JSON_OBJECT, nested ? "gradient_booster.gbtree" : "gradient_booster") != 0)
        return -1;
    for (;;) {
        if (next(c, &k) != 0)
            return -1;
        if (k.type == QS_JSON_OBJECT_END)
            return 0;
        if (qs_json_str_eq(&k, "name")) {
            int *has = nested ? &c->has_inner : &c->has_booster;
            if (*has)
                return duplicate(c, &k, "gradient_booster.name");
            *has = 1;
            if (read_name(c, "gradient_booster.name", nested ? c->inner_booster : c->booster,
                          sizeof c->booster) != 0)
                return -1;
        } else if (qs_json_str_eq(&k, "model")) {
            if (parse_gbtree_model(c) != 0)
                return -1;
        } else if (!nested && qs_json_str_eq(&k, "gbtree")) {
            if (parse_booster(c, 1) != 0)
                return -1;
        } else if (!nested && qs_json_str_eq(&k, "weight_drop")) {
            if (c->has_weight_drop)
                return duplicate(c, &k, "weight_drop");
            c->has_weight_drop = 1;
            if (read_f32_array(c, "weight_drop", &c->weight_drop, QS_MAX_TREES) != 0)
                return -1;
        } else if (qs_json_skip(&c->r, &k, c->err) != 0) {
            return -1;
        }
    }
}

static int parse_learner(conv *c)
{
    qs_json_token k, t;
    if (expect(c, &t, QS_JSON_OBJECT, "learner") != 0)
        return -1;
    for (;;) {
        if (next(c, &k) != 0)
            return -1;
        if (k.type == QS_JSON_OBJECT_END)
            return 0;
        if (qs_json_str_eq(&k, "gradient_booster")) {
            if (c->has_booster || c->has_trees)
                return duplicate(c, &k, "gradient_booster");
            if (parse_booster(c, 0) != 0)
                return -1;
        } else if (qs_json_str_eq(&k, "learner_model_param")) {
            if (expect(c, &t, QS_JSON_OBJECT, "learner_model_param") != 0)
                return -1;
            for (;;) {
                if (next(c, &k) != 0)
                    return -1;
                if (k.type == QS_JSON_OBJECT_END)
                    break;
                if (qs_json_str_eq(&k, "base_score")) {
                    if (c->has_base)
                        return duplicate(c, &k, "base_score");
                    c->has_base = 1;
                    if (expect(c, &c->base_tok, QS_JSON_STRING, "base_score") != 0)
                        return -1;
                } else if (qs_json_str_eq(&k, "num_feature")) {
                    if (read_param_int(c, "num_feature", &c->num_feature) != 0)
                        return -1;
                    c->has_num_feature = 1;
                } else if (qs_json_str_eq(&k, "num_class")) {
                    if (read_param_int(c, "num_class", &c->num_class) != 0)
                        return -1;
                    c->has_num_class = 1;
                } else if (qs_json_str_eq(&k, "num_target")) {
                    if (read_param_int(c, "num_target", &c->num_target) != 0)
                        return -1;
                } else if (qs_json_skip(&c->r, &k, c->err) != 0) {
                    return -1;
                }
            }
        } else if (qs_json_str_eq(&k, "objective")) {
            if (expect(c, &t, QS_JSON_OBJECT, "objective") != 0)
                return -1;
            for (;;) {
                if (next(c, &k) != 0)
                    return -1;
                if (k.type == QS_JSON_OBJECT_END)
                    break;
                if (qs_json_str_eq(&k, "name")) {
                    if (c->has_objective)
                        return duplicate(c, &k, "objective.name");
                    c->has_objective = 1;
                    if (read_name(c, "objective.name", c->objective, sizeof c->objective) != 0)
                        return -1;
                } else if (qs_json_skip(&c->r, &k, c->err) != 0) {
                    return -1;
                }
            }
        } else if (qs_json_skip(&c->r, &k, c->err) != 0) {
            return -1;
        }
    }
}

/* ------------------------------------------------------------ finishing */

enum { LINK_IDENTITY, LINK_LOGIT, LINK_LOG };

static const struct objective_info {
    const char *name;
    int link;               /* ProbToMargin */
    const char *transform;  /* PredTransform */
} objectives[] = {
    { "reg:squarederror", LINK_IDENTITY, "none" },
    { "reg:linear", LINK_IDENTITY, "none" },
    { "reg:squaredlogerror", LINK_IDENTITY, "none" },
    { "reg:pseudohubererror", LINK_IDENTITY, "none" },
    { "reg:absoluteerror", LINK_IDENTITY, "none" },
    { "reg:quantileerror", LINK_IDENTITY, "none" },
    { "reg:logistic", LINK_LOGIT, "sigmoid" },
    { "binary:logistic", LINK_LOGIT, "sigmoid" },
    { "binary:logitraw", LINK_IDENTITY, "none" },
    { "binary:hinge", LINK_IDENTITY, "hinge" },
    { "count:poisson", LINK_LOG, "exp" },
    { "reg:gamma", LINK_LOG, "exp" },
    { "reg:tweedie", LINK_LOG, "exp" },
    { "survival:cox", LINK_LOG, "exp" },
    { "survival:aft", LINK_LOG, "exp" },
    { "multi:softmax", LINK_IDENTITY, "argmax" },
    { "multi:softprob", LINK_IDENTITY, "softmax" },
    { "rank:pairwise", LINK_IDENTITY, "none" },
    { "rank:ndcg", LINK_IDENTITY, "none" },
    { "rank:map", LINK_IDENTITY, "none" },
};

/* base_score is a string holding a JSON number ("5E-1"), or since XGBoost
 * 3.1 a JSON array of numbers ("[5E-1]", one per output).  Parsed with strtof
 * like every float32 in the model. */
static int parse_base_score(conv *c, float *vals, uint32_t k, uint32_t *count)
{
    const qs_json_token *bt = &c->base_tok;
    char small[256];
    char *s = small;
    size_t cap = sizeof small;
    if (bt->len >= cap) {
        cap = bt->len + 1;
        s = malloc(cap);
        if (!s)
            return nomem(c);
    }
    long long n = qs_json_str_decode(bt, s, cap);
    int rc = -1;
    qs_json_reader r;
    qs_json_token t;
    qs_error e;
    uint32_t got = 0;
    if (n < 0)
        goto bad;
    qs_json_init(&r, s, (size_t)n, 2, QS_JSON_NONFINITE);
    if (qs_json_next(&r, &t, &e) != 0)
        goto bad;
    if (t.type == QS_JSON_NUMBER) {
        if (qs_json_get_f32(&t, &vals[0]) != 0)
            goto bad;
        got = 1;
    } else if (t.type == QS_JSON_ARRAY) {
        for (;;) {
            if (qs_json_next(&r, &t, &e) != 0)
                goto bad;
            if (t.type == QS_JSON_ARRAY_END)
                break;
            if (got >= k) {
                rc = qs_fail(c->err, QS_ERR_FORMAT, 0,
                             "base_score has more than %u values for %u outputs", k, k);
                goto out;
            }
            if (qs_json_get_f32(&t, &vals[got]) != 0)
                goto bad;
            got++;
        }
        if (got == 0)
            goto bad;
    } else {
        goto bad;
    }
    if (qs_json_next(&r, &t, &e) != 0 || t.type != QS_JSON_END)
        goto bad;
    if (got != 1 && got != k) {
        rc = qs_fail(c->err, QS_ERR_FORMAT, 0, "base_score has %u values for %u outputs", got, k);
        goto out;
    }
    *count = got;
    rc = 0;
    goto out;
bad:
    rc = qs_fail_at(c->err, QS_ERR_FORMAT, (long long)bt->offset,
                    "base_score (byte %zu) is not a number or an array of numbers", bt->offset);
out:
    if (s != small)
        free(s);
    return rc;
}

/* Put the canonical trees in the order `order` (XGBoost's id order), when
 * the file lists them otherwise. */
static int reorder_trees(conv *c, const uint64_t *order)
{
    qs_model *m = c->m;
    qs_tree *nt = malloc((size_t)m->num_trees * sizeof *nt);
    qs_node *nn = malloc((size_t)(m->num_nodes ? m->num_nodes : 1) * sizeof *nn);
    if (!nt || !nn) {
        free(nt);
        free(nn);
        return nomem(c);
    }
    uint64_t off = 0;
    for (uint64_t k = 0; k < m->num_trees; k++) {
        const qs_tree *src = &m->trees[order[k]];
        nt[k] = *src;
        nt[k].node_off = off;
        memcpy(nn + off, m->nodes + src->node_off, (size_t)src->num_nodes * sizeof *nn);
        off += src->num_nodes;
    }
    free(m->trees);
    free(m->nodes);
    m->trees = nt;
    m->nodes = nn;
    m->cap_trees = m->num_trees;
    m->cap_nodes = m->num_nodes ? m->num_nodes : 1;
    return 0;
}

static int finish(conv *c)
{
    qs_model *m = c->m;
    qs_error *err = c->err;
    if (!c->has_learner)
        return qs_fail(err, QS_ERR_FORMAT, 0, "not an xgboost json model: no \"learner\" object");
    if (!c->has_booster)
        return qs_fail(err, QS_ERR_FORMAT, 0, "gradient_booster.name is missing");
    int dart = 0;
    if (strcmp(c->booster, "gblinear") == 0)
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                       "gblinear models are linear models, not tree ensembles: not supported");
    if (strcmp(c->booster, "dart") == 0) {
        dart = 1;
        if (c->has_inner && strcmp(c->inner_booster, "gbtree") != 0)
            return qs_fail(err, QS_ERR_UNSUPPORTED, 0, "dart booster around \"%s\" is not supported",
                           c->inner_booster);
    } else if (strcmp(c->booster, "gbtree") != 0) {
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0, "booster \"%s\" is not supported", c->booster);
    }
    if (!c->has_trees)
        return qs_fail(err, QS_ERR_FORMAT, 0, "gradient_booster.model.trees is missing");
    uint64_t nt = c->tree_ids.n;   /* XGBoost's trees; a vector-leaf tree is K canonical ones */
    if (c->num_trees_param >= 0 && (uint64_t)c->num_trees_param != nt)
        return qs_fail(err, QS_ERR_FORMAT, 0, "gbtree_model_param.num_trees is %lld, but trees has %llu",
                       (long long)c->num_trees_param, (unsigned long long)nt);
    if (!c->has_tree_info)
        return qs_fail(err, QS_ERR_FORMAT, 0, "gradient_booster.model.tree_info is missing");
    if (c->tree_info.n != nt)
        return qs_fail(err, QS_ERR_FORMAT, 0, "tree_info has %zu entries, trees %llu",
                       c->tree_info.n, (unsigned long long)nt);

    if (c->num_class < 0)
        return qs_fail(err, QS_ERR_FORMAT, 0, "num_class is negative");
    if (c->num_class > (int64_t)QS_MAX_CLASSES)
        return qs_fail(err, QS_ERR_LIMIT, 0, "num_class %lld is beyond the limit of %u",
                       (long long)c->num_class, QS_MAX_CLASSES);
    if (c->num_target < 0)
        return qs_fail(err, QS_ERR_FORMAT, 0, "num_target is negative");
    if (c->num_target > (int64_t)QS_MAX_CLASSES)
        return qs_fail(err, QS_ERR_LIMIT, 0, "num_target %lld is beyond the limit of %u",
                       (long long)c->num_target, QS_MAX_CLASSES);
    if (c->num_target > 1 && c->num_class > 1)
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                       "num_class %lld with num_target %lld: multi-target classifiers are not "
                       "supported", (long long)c->num_class, (long long)c->num_target);
    /* Output groups: one per class, or (XGBoost 2.0 and later, multi_strategy
     * one_output_per_tree) one per target; tree_info says which each tree adds to. */
    uint32_t k = c->num_class > 1 ? (uint32_t)c->num_class
               : c->num_target > 1 ? (uint32_t)c->num_target : 1;
    if (!c->has_num_feature)
        return qs_fail(err, QS_ERR_FORMAT, 0, "learner_model_param.num_feature is missing");
    if (c->num_feature < 0)
        return qs_fail(err, QS_ERR_FORMAT, 0, "num_feature is negative");
    if (c->num_feature > (int64_t)QS_MAX_FEATURES)
        return qs_fail(err, QS_ERR_LIMIT, 0, "num_feature %lld is beyond the limit of %u",
                       (long long)c->num_feature, QS_MAX_FEATURES);

    /* Dart scales tree i by weight_drop[i] (src/gbm/gbtree.cc,
     * Dart::PredictBatchImpl): each tree is predicted alone into a buffer
     * filled with 0, then `out += tree * w` in float32.  On x86-64 builds
     * (no fused multiply-add in the baseline instruction set) that is the
     * float32 product, rounded, then the float32 sum: the canonical tree's
     * leaves are (float)((0.0f + leaf) * w), weight 1, and the sum is the
     * gbtree sum.  Builds where the compiler fuses the multiply-add
     * (aarch64, CUDA) round once: the model does not say which build
     * predicts (README). */
    if (dart) {
        if (!c->has_weight_drop)
            return qs_fail(err, QS_ERR_FORMAT, 0, "dart booster without weight_drop");
        if (c->weight_drop.n != nt)
            return qs_fail(err, QS_ERR_FORMAT, 0, "weight_drop has %zu entries, trees %llu",
                           c->weight_drop.n, (unsigned long long)nt);
        if (m->num_trees != nt)
            return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                           "dart with vector-leaf trees is not supported");
        for (uint64_t t = 0; t < nt; t++) {
            const float w = c->weight_drop.v[t];
            if (!isfinite(w))
                return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                               "dart tree %llu has weight_drop %.9g: not supported",
                               (unsigned long long)t, (double)w);
            const qs_tree *tr = &m->trees[t];
            for (uint32_t i = 0; i < tr->num_nodes; i++) {
                qs_node *n = &m->nodes[tr->node_off + i];
                if (n->kind != QS_NODE_LEAF)
                    continue;
                volatile float leaf = 0.0f + (float)n->value;   /* the buffer's 0 + leaf */
                volatile float p = leaf * w;                     /* rounded: no fma */
                n->value = (double)p;
            }
        }
    }

    /* Objective: the base_score link and the output transform. */
    if (!c->has_objective)
        return qs_fail(err, QS_ERR_FORMAT, 0, "learner.objective.name is missing");
    const struct objective_info *obj = NULL;
    for (size_t i = 0; i < sizeof objectives / sizeof objectives[0]; i++)
        if (strcmp(c->objective, objectives[i].name) == 0)
            obj = &objectives[i];
    if (!obj)
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                       "objective \"%s\" is unknown: its base_score link cannot be reproduced",
                       c->objective);
    if (!c->has_base)
        return qs_fail(err, QS_ERR_FORMAT, 0, "learner_model_param.base_score is missing");
    float *bv = malloc((size_t)k * sizeof *bv);
    if (!bv)
        return nomem(c);
    uint32_t nb = 1;
    if (c->base_binary)
        bv[0] = c->base_f32;
    else if (parse_base_score(c, bv, k, &nb) != 0) {
        free(bv);
        return -1;
    }
    if (qs_model_set_classes(m, k, err) != 0) {
        free(bv);
        return -1;
    }
    for (uint32_t j = 0; j < k; j++) {
        float b = bv[nb == 1 ? 0 : j], margin;
        if (obj->link == LINK_LOGIT) {
            if (!(b > 0.0f && b < 1.0f)) {
                free(bv);
                return qs_fail(err, QS_ERR_FORMAT, 0, "base_score %.9g is not in (0,1) as %s needs",
                               (double)b, obj->name);
            }
            /* float32 throughout, as regression_loss.h writes it */
            float odds = 1.0f / b - 1.0f;
            margin = -logf(odds);
        } else if (obj->link == LINK_LOG) {
            if (!(b > 0.0f)) {
                free(bv);
                return qs_fail(err, QS_ERR_FORMAT, 0, "base_score %.9g is not positive as %s needs",
                               (double)b, obj->name);
            }
            margin = logf(b);
        } else {
            margin = b;
        }
        if (!isfinite(margin)) {
            free(bv);
            return qs_fail(err, QS_ERR_FORMAT, 0, "base_score %.9g gives a margin that is not finite",
                           (double)b);
        }
        m->base[j] = margin;
    }
    free(bv);

    /* Tree ids: a permutation of 0 .. nt-1, trees scored in id order. */
    uint64_t *pos_of_id = malloc((size_t)(nt ? nt : 1) * sizeof *pos_of_id);
    if (!pos_of_id)
        return nomem(c);
    for (uint64_t i = 0; i < nt; i++)
        pos_of_id[i] = UINT64_MAX;
    int identity = 1;
    for (uint64_t p = 0; p < nt; p++) {
        int64_t id = c->tree_ids.v[p];
        if (id < 0 || (uint64_t)id >= nt || pos_of_id[id] != UINT64_MAX) {
            free(pos_of_id);
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "tree %llu: id %lld is out of range or repeated (%llu trees)",
                           (unsigned long long)p, (long long)id, (unsigned long long)nt);
        }
        pos_of_id[id] = p;
        if ((uint64_t)id != p)
            identity = 0;
    }
    /* canonical trees in id order; vector-leaf trees add to outputs 0 .. K-1 */
    uint64_t *order = malloc((size_t)(m->num_trees ? m->num_trees : 1) * sizeof *order);
    if (!order) {
        free(pos_of_id);
        return nomem(c);
    }
    uint64_t q = 0;
    for (uint64_t id = 0; id < nt; id++) {
        uint64_t p = pos_of_id[id];
        uint64_t first = (uint64_t)c->tree_first.v[p], nv = (uint64_t)c->tree_nvec.v[p];
        int64_t g = c->tree_info.v[id];
        if (nv > 1) {
            if (nv != k) {
                free(order);
                free(pos_of_id);
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "tree %llu has leaf vectors of %llu values, but the model has %u "
                               "outputs", (unsigned long long)p, (unsigned long long)nv, k);
            }
        } else if (g < 0 || (uint64_t)g >= k) {
            free(order);
            free(pos_of_id);
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "tree_info[%llu] is %lld, but the model has %u output group%s",
                           (unsigned long long)id, (long long)g, k, k == 1 ? "" : "s");
        }
        for (uint64_t j = 0; j < nv; j++) {
            m->trees[first + j].class_id = nv > 1 ? (uint32_t)j : (uint32_t)g;
            order[q++] = first + j;
        }
    }
    if (!identity && reorder_trees(c, order) != 0) {
        free(order);
        free(pos_of_id);
        return -1;
    }
    free(order);
    free(pos_of_id);

    /* Iterations (--trees N: XGBoost's iteration_range=(0, N), trees [0,
     * N x num_parallel_tree x output groups), gbtree.h LayerToTree): a
     * boosted random forest's iteration is num_parallel_tree XGBoost trees
     * per output group (a vector-leaf tree serves every group), K canonical
     * trees each per group.  XGBoost 2.0 and later also list the
     * iterations' first trees (iteration_indptr), which must agree. */
    {
        int vec = 0;
        for (size_t i = 0; i < c->tree_nvec.n; i++)
            vec |= c->tree_nvec.v[i] > 1;
        const uint64_t P = (uint64_t)c->num_parallel;
        const uint64_t per_xgb = vec ? P : P * k;   /* XGBoost trees per iteration */
        if (c->has_indptr && c->indptr.n > 0) {
            for (size_t i = 0; i < c->indptr.n; i++) {
                uint64_t want = (uint64_t)i * per_xgb;
                if (c->indptr.v[i] < 0 || (uint64_t)c->indptr.v[i] != want || want > nt)
                    return qs_fail(err, QS_ERR_FORMAT, 0,
                                   "iteration_indptr[%zu] is %lld, but %llu trees per iteration "
                                   "(num_parallel_tree %llu, %u output group%s) give %llu",
                                   i, (long long)c->indptr.v[i], (unsigned long long)per_xgb,
                                   (unsigned long long)P, k, k == 1 ? "" : "s",
                                   (unsigned long long)want);
            }
            if ((uint64_t)c->indptr.v[c->indptr.n - 1] != nt)
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "iteration_indptr ends at tree %lld, but the model has %llu",
                               (long long)c->indptr.v[c->indptr.n - 1], (unsigned long long)nt);
        }
        if (P > 1) {
            if (P * k > QS_MAX_TREES)
                return qs_fail(err, QS_ERR_LIMIT, 0,
                               "num_parallel_tree %llu x %u output groups: more than %u trees "
                               "per iteration", (unsigned long long)P, k, QS_MAX_TREES);
            m->iter_trees = (uint32_t)(P * k);
        }
    }

    uint64_t nf = (uint64_t)c->num_feature;
    if (c->num_features > nf)
        nf = c->num_features;
    m->num_features = (uint32_t)nf;
    m->cmp = QS_CMP_LT;
    m->float_precision = 1;
    m->float_accumulate = 1;
    m->absent_missing = 1;
    snprintf(m->objective, sizeof m->objective, "%s", c->objective);
    snprintf(m->transform, sizeof m->transform, "%s", obj->transform);
    return qs_model_validate(m, err);
}

/* ------------------------------------------------------- binary format */

/* XGBoost's binary model (what 1.0 to 1.7 write by default with
 * save_model("m.model") or "m.bin", and save_raw()), as LearnerImpl::
 * SaveModel writes it (src/learner.cc, v1.7.6), little-endian:
 *   "binf"; LearnerModelParamLegacy (136 bytes: float base_score, u32
 *   num_feature, i32 num_class, i32 contain_extra_attrs, i32
 *   contain_eval_metrics, u32 major_version, u32 minor_version, u32
 *   num_target (1.6 and later; 0 before: 1), i32 boost_from_average,
 *   reserved); the objective's and the booster's names (u64 length,
 *   bytes); the booster; with contain_extra_attrs, the attributes (u64
 *   count, then key and value strings: "objective" holds the objective's
 *   JSON configuration, which does not change a prediction).
 * The booster (src/gbm/gbtree_model.cc GBTreeModel::Save): GBTreeModelParam
 * (160 bytes: i32 num_trees, i32 num_parallel_tree (1.6 and later; before,
 * a deprecated field written as 0 or 1, read as 1 tree), ...); each tree
 * (src/tree/tree_model.cc RegTree::Save): TreeParam (148 bytes: i32
 * num_roots, i32 num_nodes, i32 num_deleted, i32 max_depth, u32
 * num_feature, i32 size_leaf_vector, reserved), num_nodes Nodes (20 bytes:
 * i32 parent, i32 left, i32 right, u32 split index with the default-left
 * flag in bit 31 (all ones: a deleted node), float split condition or leaf
 * value), num_nodes RTreeNodeStats (16 bytes, statistics); then tree_info
 * (num_trees i32).  Dart adds weight_drop (u64 count, floats).  The binary
 * format holds no categorical splits (XGBoost refuses to write them) and
 * no leaf vectors.  base_score is in output space, turned into a margin by
 * the objective as in JSON; XGBoost before 1.0 stored it as a margin and
 * saved no objective configuration: refused, as is any other major
 * version. */
#define XB_LEARNER_PARAM 136u
#define XB_GBTREE_PARAM 160u
#define XB_TREE_PARAM 148u
#define XB_NODE 20u
#define XB_STAT 16u

typedef struct xbin {
    const unsigned char *p;
    size_t n, pos;
} xbin;

static uint32_t xb_u32_at(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static float xb_f32_at(const unsigned char *p)
{
    uint32_t u = xb_u32_at(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint64_t xb_u64_at(const unsigned char *p)
{
    return (uint64_t)xb_u32_at(p) | (uint64_t)xb_u32_at(p + 4) << 32;
}

/* The next `n` bytes, or NULL (with err) when the file ends first. */
static const unsigned char *xb_take(xbin *b, size_t n, const char *what, qs_error *err)
{
    if (n > b->n - b->pos) {
        qs_fail_at(err, QS_ERR_FORMAT, (long long)b->pos,
                   "xgboost binary model: truncated in %s (byte %zu: %zu bytes needed, %zu left)",
                   what, b->pos, n, b->n - b->pos);
        return NULL;
    }
    const unsigned char *q = b->p + b->pos;
    b->pos += n;
    return q;
}

/* A dmlc string (u64 length, bytes); *s points into the buffer. */
static int xb_string(xbin *b, const char *what, const char **s, size_t *n, qs_error *err)
{
    const unsigned char *q = xb_take(b, 8, what, err);
    if (!q)
        return -1;
    uint64_t len = xb_u64_at(q);
    if (len > b->n - b->pos)
        return qs_fail_at(err, QS_ERR_FORMAT, (long long)(b->pos - 8),
                          "xgboost binary model: %s (byte %zu) says %llu bytes, %zu are left",
                          what, b->pos - 8, (unsigned long long)len, b->n - b->pos);
    *s = (const char *)b->p + b->pos;
    *n = (size_t)len;
    b->pos += (size_t)len;
    return 0;
}

/* A name string into out[cap] (printable ASCII; longer ones cut, with
 * "..." so that no known name matches). */
static void xb_name(const char *s, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < cap; i++)
        out[k++] = s[i] > 0x20 && s[i] < 0x7f ? s[i] : '?';
    if (n >= cap && cap > 4)
        memcpy(out + cap - 4, "...", 4), k = cap - 1;
    out[k] = '\0';
}

/* One tree into c->t, then built as the JSON reader builds it. */
static int xb_tree(conv *c, xbin *b, uint64_t ti)
{
    char what[64];
    snprintf(what, sizeof what, "tree %llu's parameters", (unsigned long long)ti);
    const unsigned char *tp = xb_take(b, XB_TREE_PARAM, what, c->err);
    if (!tp)
        return -1;
    int32_t num_nodes = (int32_t)xb_u32_at(tp + 4), num_deleted = (int32_t)xb_u32_at(tp + 8);
    int32_t leaf_vec = (int32_t)xb_u32_at(tp + 20);
    unsigned long long tl = (unsigned long long)ti;
    if (num_nodes <= 0)
        return qs_fail(c->err, QS_ERR_FORMAT, 0, "tree %llu: num_nodes is %d", tl, num_nodes);
    if ((uint32_t)num_nodes > QS_MAX_TREE_NODES)
        return qs_fail(c->err, QS_ERR_LIMIT, 0, "tree %llu has %d nodes (limit %u)", tl,
                       num_nodes, QS_MAX_TREE_NODES);
    if (leaf_vec != 0)
        return qs_fail(c->err, QS_ERR_UNSUPPORTED, 0,
                       "tree %llu: size_leaf_vector %d in a binary model (XGBoost 1.x reads "
                       "no leaf vectors from it): not supported", tl, leaf_vec);
    const size_t n = (size_t)num_nodes;
    if ((uint64_t)n * (XB_NODE + XB_STAT) > b->n - b->pos)
        return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)b->pos,
                          "xgboost binary model: truncated in tree %llu (byte %zu: %d nodes "
                          "need %llu bytes, %zu left)", tl, b->pos, num_nodes,
                          (unsigned long long)n * (XB_NODE + XB_STAT), b->n - b->pos);
    const unsigned char *nd = b->p + b->pos;
    b->pos += n * (XB_NODE + XB_STAT);   /* the nodes, then their statistics (unused) */
    xtree *t = &c->t;
    static const int fields[] = { F_LEFT, F_RIGHT, F_SPLIT_INDICES, F_DEFAULT_LEFT };
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
        i64vec *v = &t->arr[fields[f]];
        if (qs_vec_reserve((void **)&v->v, &v->cap, n - 1, sizeof *v->v) != 0)
            return nomem(c);
        v->n = n;
    }
    if (qs_vec_reserve((void **)&t->cond.v, &t->cond.cap, n - 1, sizeof *t->cond.v) != 0)
        return nomem(c);
    t->cond.n = n;
    int32_t deleted = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *q = nd + i * XB_NODE;
        uint32_t sindex = xb_u32_at(q + 12);
        if (i > 0 && sindex == 0xFFFFFFFFu)
            deleted++;   /* unreachable: dropped with the others */
        t->arr[F_LEFT].v[i] = (int32_t)xb_u32_at(q + 4);
        t->arr[F_RIGHT].v[i] = (int32_t)xb_u32_at(q + 8);
        t->arr[F_SPLIT_INDICES].v[i] = sindex & 0x7FFFFFFFu;
        t->arr[F_DEFAULT_LEFT].v[i] = sindex >> 31;
        t->cond.v[i] = xb_f32_at(q + 16);
    }
    /* RegTree::Load checks the count (a mismatch: XGBoost refuses the file) */
    if (deleted != num_deleted)
        return qs_fail(c->err, QS_ERR_FORMAT, 0,
                       "tree %llu: num_deleted is %d, but %d nodes are marked deleted", tl,
                       num_deleted, deleted);
    t->seen = 1u << F_LEFT | 1u << F_RIGHT | 1u << F_SPLIT_INDICES | 1u << F_SPLIT_CONDITIONS |
              1u << F_DEFAULT_LEFT;
    t->num_nodes = num_nodes;
    t->leaf_vec = 0;
    t->id = (int64_t)ti;
    return build_tree(c, ti);
}

static int convert_binary(conv *c, const char *buf, size_t len, size_t at)
{
    qs_error *err = c->err;
    if (at == 4 && memcmp(buf, "bs64", 4) == 0)
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                       "xgboost model in the base64 form (\"bs64\", written by XGBoost before "
                       "1.0; XGBoost 1.x refuses it too): not supported; save it as JSON "
                       "(save_model(\"m.json\")) with the XGBoost that wrote it");
    xbin b = { (const unsigned char *)buf, len, at };   /* past "binf", if any */
    const unsigned char *lp = xb_take(&b, XB_LEARNER_PARAM, "the learner's parameters", err);
    if (!lp)
        return -1;
    const uint32_t major = xb_u32_at(lp + 20), minor = xb_u32_at(lp + 24);
    if (major == 0)
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                       "xgboost binary model of version 0 (written by XGBoost before 1.0: its "
                       "base_score is stored as a margin and its objective's parameters are not "
                       "saved): not supported; load it with XGBoost 1.x and save it as JSON "
                       "(save_model(\"m.json\"))");
    if (major != 1)
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                       "xgboost binary model of version %u.%u: not supported (qs reads the "
                       "binary format of XGBoost 1.0 to 1.7); save it as JSON "
                       "(save_model(\"m.json\"))", major, minor);
    c->has_learner = 1;
    c->base_binary = 1;
    c->has_base = 1;
    c->base_f32 = xb_f32_at(lp);
    c->num_feature = xb_u32_at(lp + 4);
    c->has_num_feature = 1;
    c->num_class = (int32_t)xb_u32_at(lp + 8);
    c->has_num_class = 1;
    const int32_t extra = (int32_t)xb_u32_at(lp + 12);
    const uint32_t ntarget = xb_u32_at(lp + 28);
    c->num_target = ntarget == 0 ? 1 : ntarget;   /* before 1.6: 0 */

    const char *s;
    size_t sn;
    if (xb_string(&b, "the objective's name", &s, &sn, err) != 0)
        return -1;
    xb_name(s, sn, c->objective, sizeof c->objective);
    c->has_objective = 1;
    if (xb_string(&b, "the booster's name", &s, &sn, err) != 0)
        return -1;
    xb_name(s, sn, c->booster, sizeof c->booster);
    c->has_booster = 1;
    if (strcmp(c->booster, "gbtree") != 0 && strcmp(c->booster, "dart") != 0)
        return finish(c);   /* gblinear and others: refused by name */

    const unsigned char *gp = xb_take(&b, XB_GBTREE_PARAM, "the booster's parameters", err);
    if (!gp)
        return -1;
    const int32_t ntrees = (int32_t)xb_u32_at(gp), npar = (int32_t)xb_u32_at(gp + 4);
    if (ntrees < 0)
        return qs_fail(err, QS_ERR_FORMAT, 0, "num_trees is %d", ntrees);
    if ((uint32_t)ntrees > QS_MAX_TREES)
        return qs_fail(err, QS_ERR_LIMIT, 0, "%d trees (limit %u)", ntrees, QS_MAX_TREES);
    if ((uint64_t)ntrees * (XB_TREE_PARAM + XB_NODE + XB_STAT + 4) > b.n - b.pos)
        return qs_fail_at(err, QS_ERR_FORMAT, (long long)b.pos,
                          "xgboost binary model: truncated: %d trees cannot fit in the %zu "
                          "bytes left", ntrees, b.n - b.pos);
    if (npar < 0)
        return qs_fail(err, QS_ERR_FORMAT, 0, "num_parallel_tree is %d", npar);
    c->num_parallel = npar == 0 ? 1 : npar;   /* before 1.6: not recorded */
    c->num_trees_param = ntrees;
    c->has_trees = 1;
    for (int32_t i = 0; i < ntrees; i++)
        if (xb_tree(c, &b, (uint64_t)i) != 0)
            return -1;
    c->has_tree_info = 1;
    if (ntrees > 0) {
        const unsigned char *q = xb_take(&b, (size_t)ntrees * 4, "tree_info", err);
        if (!q)
            return -1;
        if (qs_vec_reserve((void **)&c->tree_info.v, &c->tree_info.cap, (size_t)ntrees - 1,
                           sizeof *c->tree_info.v) != 0)
            return nomem(c);
        for (int32_t i = 0; i < ntrees; i++)
            c->tree_info.v[i] = (int32_t)xb_u32_at(q + 4 * (size_t)i);
        c->tree_info.n = (size_t)ntrees;
    }
    if (strcmp(c->booster, "dart") == 0 && ntrees > 0) {
        const unsigned char *q = xb_take(&b, 8, "weight_drop", err);
        if (!q)
            return -1;
        uint64_t nw = xb_u64_at(q);
        if (nw > (b.n - b.pos) / 4)
            return qs_fail_at(err, QS_ERR_FORMAT, (long long)(b.pos - 8),
                              "xgboost binary model: weight_drop (byte %zu) says %llu values, "
                              "%zu bytes are left", b.pos - 8, (unsigned long long)nw,
                              b.n - b.pos);
        if (nw > 0 && qs_vec_reserve((void **)&c->weight_drop.v, &c->weight_drop.cap,
                                     (size_t)nw - 1, sizeof *c->weight_drop.v) != 0)
            return nomem(c);
        for (uint64_t i = 0; i < nw; i++)
            c->weight_drop.v[i] = xb_f32_at(b.p + b.pos + 4 * i);
        c->weight_drop.n = (size_t)nw;
        b.pos += (size_t)nw * 4;
        c->has_weight_drop = 1;
    } else if (strcmp(c->booster, "dart") == 0) {
        c->has_weight_drop = 1;   /* no trees, no weights */
    }
    if (extra != 0) {
        const unsigned char *q = xb_take(&b, 8, "the attributes", err);
        if (!q)
            return -1;
        uint64_t na = xb_u64_at(q);
        if (na > (b.n - b.pos) / 16)
            return qs_fail_at(err, QS_ERR_FORMAT, (long long)(b.pos - 8),
                              "xgboost binary model: %llu attributes (byte %zu) cannot fit in "
                              "the %zu bytes left", (unsigned long long)na, b.pos - 8,
                              b.n - b.pos);
        for (uint64_t i = 0; i < na; i++)
            if (xb_string(&b, "an attribute's name", &s, &sn, err) != 0 ||
                xb_string(&b, "an attribute's value", &s, &sn, err) != 0)
                return -1;
    }
    if (b.pos != b.n)
        return qs_fail_at(err, QS_ERR_FORMAT, (long long)b.pos,
                          "xgboost binary model: %zu bytes after the model (byte %zu)",
                          b.n - b.pos, b.pos);
    return finish(c);
}

/* UBJSON (XGBoost's binary JSON, save_model("m.ubj")) starts with '{' and
 * then the length marker of the first key, where JSON has whitespace, a
 * quote or '}'; or with '{' followed by '$' or '#' (optimised object) or a
 * no-op 'N'. */
static int looks_like_ubjson(const char *buf, size_t len)
{
    if (len < 2 || buf[0] != '{')
        return 0;
    return buf[1] != '\0' && strchr("iUIlLN$#", buf[1]) != NULL;
}

qs_model *qs_convert_xgboost(const char *buf, size_t len, qs_error *err)
{
    if (!buf && len) {
        qs_fail(err, QS_ERR_ARG, 0, "no input buffer");
        return NULL;
    }
    conv c;
    memset(&c, 0, sizeof c);
    c.err = err;
    c.buf = buf;
    c.num_trees_param = -1;
    c.num_parallel = 1;
    c.m = qs_model_new(QS_SRC_XGBOOST, err);
    if (!c.m)
        return NULL;
    qs_json_init(&c.r, buf, len, 64,
                 QS_JSON_NONFINITE | (looks_like_ubjson(buf, len) ? QS_JSON_UBJSON : 0));

    int rc = -1;
    qs_json_token k, t;
    long bin_at = qs_xgboost_binary_at(buf, len);
    if (bin_at >= 0) {
        rc = convert_binary(&c, buf, len, (size_t)bin_at);
        goto done;
    }
    if (expect(&c, &t, QS_JSON_OBJECT, "an xgboost json model") != 0)
        goto done;
    for (;;) {
        if (next(&c, &k) != 0)
            goto done;
        if (k.type == QS_JSON_OBJECT_END)
            break;
        if (qs_json_str_eq(&k, "learner")) {
            if (c.has_learner) {
                duplicate(&c, &k, "learner");
                goto done;
            }
            c.has_learner = 1;
            if (parse_learner(&c) != 0)
                goto done;
        } else if (qs_json_skip(&c.r, &k, err) != 0) {   /* "version", ... */
            goto done;
        }
    }
    if (next(&c, &t) != 0)
        goto done;
    if (t.type != QS_JSON_END) {
        qs_fail_at(err, QS_ERR_FORMAT, (long long)t.offset, "json: data after the model at byte %zu",
                   t.offset);
        goto done;
    }
    rc = finish(&c);
done:
    for (int f = 0; f < F_ID; f++)
        free(c.t.arr[f].v);
    free(c.t.cond.v);
    free(c.weight_drop.v);
    free(c.tree_info.v);
    free(c.indptr.v);
    free(c.tree_ids.v);
    free(c.tree_first.v);
    free(c.tree_nvec.v);
    free(c.t.bw.v);
    free(c.t.lw.v);
    free(c.stack);
    free(c.map);
    free(c.catidx);
    if (rc != 0) {
        qs_model_free(c.m);
        return NULL;
    }
    return c.m;
}

/* ------------------------------------------------------------ categories */

/* One "enc" entry as read: string categories (offsets and the bytes), or
 * numeric ones (each as written). */
typedef struct enc_entry {
    int64_t *off, *val;
    size_t noff, nval;
    char (*num)[40];   /* numeric categories as written (entries without offsets) */
} enc_entry;

static void enc_free(enc_entry *e)
{
    free(e->off);
    free(e->val);
    free(e->num);
    memset(e, 0, sizeof *e);
}

/* One "enc" entry: {"offsets": [...], "values": [bytes]} (strings: category
 * i is values[offsets[i] .. offsets[i+1]), signed bytes of UTF-8), {"type":
 * T, "values": [numbers]} (numeric categories), or empty lists (not a
 * categorical feature), read into e and checked whole: the offsets start at
 * 0, never decrease and end at the bytes' count, every byte is one
 * (-128 .. 255), every string is UTF-8.  0, or -1 with err. */
static int read_enc_entry(qs_json_reader *r, uint32_t feature, enc_entry *e, qs_error *err)
{
    qs_json_token t, k;
    size_t cap_o = 0, cap_v = 0;
    for (;;) {
        if (qs_json_next(r, &k, err) != 0)
            return -1;
        if (k.type == QS_JSON_OBJECT_END)
            break;
        int is_off = qs_json_str_eq(&k, "offsets"), is_val = qs_json_str_eq(&k, "values");
        if (!is_off && !is_val) {
            if (qs_json_skip(r, &k, err) != 0)
                return -1;
            continue;
        }
        if ((is_off ? e->noff : e->nval) > 0)
            return qs_fail_at(err, QS_ERR_FORMAT, (long long)k.offset,
                              "cats.enc: feature %u: \"%s\" given twice", feature,
                              is_off ? "offsets" : "values");
        if (qs_json_next(r, &t, err) != 0 || t.type != QS_JSON_ARRAY)
            return qs_fail_at(err, QS_ERR_FORMAT, (long long)k.offset,
                              "cats.enc: feature %u: expected an array", feature);
        for (;;) {
            if (qs_json_next(r, &t, err) != 0)
                return -1;
            if (t.type == QS_JSON_ARRAY_END)
                break;
            int64_t v;
            if (t.type != QS_JSON_NUMBER)
                return qs_fail_at(err, QS_ERR_FORMAT, (long long)t.offset,
                                  "cats.enc: feature %u: expected a number", feature);
            size_t *n = is_off ? &e->noff : &e->nval, *cap = is_off ? &cap_o : &cap_v;
            int64_t **a = is_off ? &e->off : &e->val;
            if (*n == *cap) {
                size_t nc = *cap ? *cap * 2 : 64;
                int64_t *g = realloc(*a, nc * sizeof *g);
                if (!g)
                    return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
                *a = g;
                if (is_val) {
                    char (*gn)[40] = realloc(e->num, nc * sizeof *e->num);
                    if (!gn)
                        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
                    e->num = gn;
                }
                *cap = nc;
            }
            if (qs_json_get_i64(&t, &v) != 0) {
                double d;
                if (is_off || qs_json_get_f64(&t, &d) != 0)
                    return qs_fail_at(err, QS_ERR_FORMAT, (long long)t.offset,
                                      "cats.enc: feature %u: bad number", feature);
                v = INT64_MIN;   /* no byte: a numeric category only */
                snprintf(e->num[*n], sizeof e->num[*n], "%.17g", d);
            } else if (is_val) {
                snprintf(e->num[*n], sizeof e->num[*n], "%lld", (long long)v);
            }
            (*a)[(*n)++] = v;
        }
    }
    if (e->noff == 0)
        return 0;   /* numeric categories (or none) */
    /* string categories: the bytes, split by the offsets */
    if (e->off[0] != 0 || (uint64_t)e->off[e->noff - 1] != e->nval)
        return qs_fail(err, QS_ERR_FORMAT, 0, "cats.enc: feature %u: the offsets run from %lld to "
                       "%lld, not from 0 to the %zu bytes of the values", feature,
                       (long long)e->off[0], (long long)e->off[e->noff - 1], e->nval);
    for (size_t i = 0; i + 1 < e->noff; i++)
        if (e->off[i + 1] < e->off[i])
            return qs_fail(err, QS_ERR_FORMAT, 0, "cats.enc: feature %u: offset %zu (%lld) is "
                           "below the one before (%lld)", feature, i + 1,
                           (long long)e->off[i + 1], (long long)e->off[i]);
    for (size_t i = 0; i < e->nval; i++) {
        if (e->val[i] < -128 || e->val[i] > 255)
            return qs_fail(err, QS_ERR_FORMAT, 0, "cats.enc: feature %u: value %zu is no byte",
                           feature, i);
        e->val[i] &= 0xFF;
    }
    /* each string whole, as UTF-8 (a category's bytes; reported cut at a
     * character's end) */
    for (size_t i = 0; i + 1 < e->noff; i++) {
        unsigned char b[4];
        for (int64_t j = e->off[i]; j < e->off[i + 1];) {
            size_t have = 0;
            while (have < 4 && j + (int64_t)have < e->off[i + 1]) {
                b[have] = (unsigned char)e->val[j + (int64_t)have];
                have++;
            }
            size_t n = qs_json_utf8_len(b, have);
            if (n == 0)
                return qs_fail(err, QS_ERR_FORMAT, 0, "cats.enc: feature %u: category %zu is "
                               "not UTF-8 text (byte %lld)", feature, i,
                               (long long)(j - e->off[i]));
            j += (int64_t)n;
        }
    }
    return 0;
}

/* Report entry e's categories to fn (checked: nothing can fail here). */
static long long report_entry(const enc_entry *e, uint32_t feature, qs_category_fn fn,
                              void *ctx)
{
    long long count = 0;
    if (e->noff >= 2) {
        char buf[256];
        for (size_t i = 0; i + 1 < e->noff; i++, count++) {
            const int64_t a = e->off[i], b = e->off[i + 1];
            size_t L = (size_t)(b - a) < sizeof buf ? (size_t)(b - a) : sizeof buf;
            for (size_t j = 0; j < L; j++)
                buf[j] = (char)(unsigned char)e->val[a + (int64_t)j];
            /* a string cut at 256 bytes ends at its last whole character */
            if ((size_t)(b - a) > L) {
                size_t k = 0;
                for (size_t n; k < L && (n = qs_json_utf8_len((const unsigned char *)buf + k,
                                                              L - k)) > 0;)
                    k += n;
                L = k;
            }
            if (fn)
                fn(ctx, feature, (uint32_t)i, buf, L);
        }
    } else if (e->noff == 0) {
        for (size_t i = 0; i < e->nval; i++, count++)
            if (fn)
                fn(ctx, feature, (uint32_t)i, e->num[i], strlen(e->num[i]));
    }
    return count;
}

long long qs_source_list_categories(const char *buf, size_t len, qs_category_fn fn, void *ctx,
                                    qs_error *err)
{
    if (!buf || qs_detect_format(buf, len) != QS_FMT_XGBOOST)
        return 0;
    if (qs_xgboost_binary_at(buf, len) >= 0)
        return 0;   /* the binary format holds no categories */
    qs_json_reader r;
    qs_json_token t;
    qs_json_init(&r, buf, len, 0,
                 QS_JSON_NONFINITE | (looks_like_ubjson(buf, len) ? QS_JSON_UBJSON : 0));
    /* Every entry read and checked before the first is reported: a
     * malformed encoder reports nothing. */
    enc_entry *es = NULL;
    uint32_t *feat = NULL;
    size_t ne = 0, cap = 0;
    long long total = -1;
    int in_cats = 0;
    unsigned cats_depth = 0;
    for (;;) {
        if (qs_json_next(&r, &t, err) != 0)
            goto out;
        if (t.type == QS_JSON_END)
            break;
        if (in_cats && qs_json_depth(&r) < cats_depth)
            in_cats = 0;
        if (t.type != QS_JSON_KEY)
            continue;
        if (!in_cats && qs_json_str_eq(&t, "cats")) {
            in_cats = 1;
            cats_depth = qs_json_depth(&r) + 1;
            continue;
        }
        if (in_cats && qs_json_depth(&r) == cats_depth && qs_json_str_eq(&t, "enc")) {
            if (qs_json_next(&r, &t, err) != 0)
                goto out;
            if (t.type != QS_JSON_ARRAY) {
                qs_fail_at(err, QS_ERR_FORMAT, (long long)t.offset,
                           "cats.enc: expected an array");
                goto out;
            }
            for (uint32_t f = 0;; f++) {
                if (qs_json_next(&r, &t, err) != 0)
                    goto out;
                if (t.type == QS_JSON_ARRAY_END)
                    break;
                if (t.type != QS_JSON_OBJECT) {
                    qs_fail_at(err, QS_ERR_FORMAT, (long long)t.offset,
                               "cats.enc: feature %u: expected an object", f);
                    goto out;
                }
                if (ne == cap) {
                    size_t nc = cap ? cap * 2 : 16;
                    enc_entry *g = realloc(es, nc * sizeof *g);
                    if (!g) {
                        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
                        goto out;
                    }
                    es = g;
                    uint32_t *gf = realloc(feat, nc * sizeof *gf);
                    if (!gf) {
                        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
                        goto out;
                    }
                    feat = gf;
                    cap = nc;
                }
                memset(&es[ne], 0, sizeof es[ne]);
                feat[ne] = f;
                ne++;
                if (read_enc_entry(&r, f, &es[ne - 1], err) != 0)
                    goto out;
            }
        }
    }
    total = 0;
    for (size_t i = 0; i < ne; i++)
        total += report_entry(&es[i], feat[i], fn, ctx);
out:
    for (size_t i = 0; i < ne; i++)
        enc_free(&es[i]);
    free(es);
    free(feat);
    return total;
}

long long qs_source_categories(const char *buf, size_t len, qs_category_fn fn, void *ctx)
{
    return qs_source_list_categories(buf, len, fn, ctx, NULL);
}
