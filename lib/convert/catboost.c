/* catboost.c: converts a CatBoost JSON model (save_model(format="json"),
 * oblivious trees over float features) into the canonical ensemble,
 * reproducing CatBoost's raw scores bit for bit, or refuses it.
 *
 * What the file holds and how CatBoost scores it (checked against CatBoost
 * 1.2's own predictions, format/ensemble-text.md "Mapping"):
 *  - "oblivious_trees": tree t has splits[0 .. d-1] and 2^d * K leaf values.
 *    Level i sets bit i of the leaf index when x[feature] > border, compared
 *    in float32 (borders are float32 values, written as decimals that strtod
 *    reads exactly); splits[0] is the least significant bit.  Leaf k's
 *    values for the K outputs are leaf_values[k*K .. k*K+K-1].
 *  - NaN: per float feature, "nan_value_treatment": AsFalse and AsIs give
 *    bit 0 (NaN > border is false), AsTrue gives bit 1.
 *  - raw[c] = scale * (sum of the trees' leaf values, in file order, in
 *    double) + bias[c], from "scale_and_bias": [scale, [bias...]].
 * So each CatBoost tree becomes, per output, a complete binary tree whose
 * root tests splits[d-1] and whose bottom level tests splits[0]: its leaves
 * left to right are the leaf indexes 0 .. 2^d-1.  "Goes left when x <= t"
 * in float32 is !(x > t); a NaN goes left (bit 0) or right (bit 1) by the
 * feature's treatment.  The scale and bias become the model's output affine
 * (applied once after the sum), so the rounding is CatBoost's.
 *
 * Non-symmetric trees ("trees", grow_policy Depthwise or Lossguide) are
 * nested nodes {"split", "left", "right"} or leaves {"value": V or [V...]};
 * a document goes right when x > border (float32), NaN by the feature's
 * treatment, as above; each becomes one canonical tree per output, its
 * nodes in preorder.
 *
 * Feature ids: float feature j with flat index f (its column among all of
 * the model's features) is canonical feature f + 1: CatBoost's LETOR/libsvm
 * reader numbers columns from 1.  Absent features are 0.0, as in CatBoost's
 * libsvm and sparse inputs; a missing value is written as nan.
 *
 * Refused as unsupported (exit 3): categorical, text and embedding features,
 * CTRs, splits that are not FloatFeature,
 * unknown nan_value_treatment values, and any field this reader does not
 * know in the parts that decide the scores (top level, features_info, float
 * features, trees, splits): it might change them.  "model_info" is
 * informational except for the loss function, which picks the transform. */
#include "convert/json.h"
#include "convert/convert.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CB_MAX_DEPTH 16u   /* CatBoost's own limit; 2^16 leaves per tree */

enum { NAN_AS_FALSE = 0, NAN_AS_TRUE = 1 };

typedef struct ffeat {
    int seen;
    int64_t flat;          /* flat_feature_index */
    int nan_true;          /* AsTrue */
} ffeat;

typedef struct split {
    int64_t feature;       /* float_feature_index */
    double border;
} split;

typedef struct ctree {
    size_t split_off, depth;
    size_t leaf_off, nleaves;   /* leaf values, 2^depth * K */
    /* A non-symmetric tree ("trees"): nodes ns[ns_off .. ns_off+nns) in
     * preorder (the root first); depth and nleaves count its levels and
     * its leaf values. */
    int nonsym;
    size_t ns_off, nns;
} ctree;

/* A node of a non-symmetric tree: a split (sp[split], children by index
 * within the tree) or a leaf (K values at lv[leaf_off]). */
typedef struct nsnode {
    int leaf;
    size_t split, leaf_off, nvals;
    size_t left, right;
} nsnode;

typedef struct conv {
    qs_json_reader r;
    qs_error *err;
    qs_model *m;

    ffeat *ff;  size_t nff, capff;
    split *sp;  size_t nsp, capsp;
    double *lv; size_t nlv, caplv;
    ctree *tr;  size_t ntr, captr;
    nsnode *ns; size_t nns, capns;
    double *bias; size_t nbias, capbias;
    double scale;
    int has_features, has_trees, has_sab, bias_scalar;
    int has_ctr_data;         /* a non-empty ctr_data (refused with the features) */
    size_t ctr_data_at;
    char loss[64];
    int has_loss;
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

/* A field this reader does not know, in a part of the model that decides
 * the scores. */
static int unknown(conv *c, const qs_json_token *k, const char *where)
{
    char name[48];
    if (qs_json_str_decode(k, name, sizeof name) < 0)
        snprintf(name, sizeof name, "(a long name)");
    char q[64];
    return qs_fail_at(c->err, QS_ERR_UNSUPPORTED, (long long)k->offset,
                      "%s: unknown field \"%s\" (byte %zu) might change the scores; "
                      "not supported", where, qs_quote(q, sizeof q, name, strlen(name)),
                      k->offset);
}

static int read_int(conv *c, const char *what, int64_t *out)
{
    qs_json_token t;
    if (next(c, &t) != 0)
        return -1;
    if (qs_json_get_i64(&t, out) != 0)
        return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)t.offset,
                          "%s should be an integer, found %s at byte %zu", what,
                          qs_json_type_name(t.type), t.offset);
    return 0;
}

static int read_f64(conv *c, const char *what, double *out)
{
    qs_json_token t;
    if (next(c, &t) != 0)
        return -1;
    if (qs_json_get_f64(&t, out) != 0)
        return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)t.offset,
                          "%s should be a number, found %s at byte %zu", what,
                          qs_json_type_name(t.type), t.offset);
    return 0;
}

static int read_name(conv *c, const char *what, char *out, size_t cap)
{
    return qs_json_read_name(&c->r, what, out, cap, c->err);
}

/* An array that must be empty for the model to be supported (categorical
 * features, CTRs, ...).  null counts as empty. */
static int require_empty(conv *c, const char *what)
{
    qs_json_token t;
    if (next(c, &t) != 0)
        return -1;
    if (t.type == QS_JSON_NULL)
        return 0;
    if (t.type != QS_JSON_ARRAY && t.type != QS_JSON_OBJECT)
        return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)t.offset,
                          "%s should be an array, found %s at byte %zu", what,
                          qs_json_type_name(t.type), t.offset);
    qs_json_token e;
    if (next(c, &e) != 0)
        return -1;
    if (e.type == QS_JSON_ARRAY_END || e.type == QS_JSON_OBJECT_END)
        return 0;
    return qs_fail_at(c->err, QS_ERR_UNSUPPORTED, (long long)t.offset,
                      "%s (byte %zu): the model uses them; only float features are supported",
                      what, t.offset);
}

/* Skip a value that require_empty would check: null or an empty
 * array/object pass; a non-empty one is skipped (its refusal comes later). */
static int require_empty_or_skip(conv *c)
{
    qs_json_token t;
    if (next(c, &t) != 0)
        return -1;
    if (t.type == QS_JSON_NULL)
        return 0;
    if (t.type != QS_JSON_ARRAY && t.type != QS_JSON_OBJECT)
        return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)t.offset,
                          "CTR data (ctr_data) should be an object, found %s at byte %zu",
                          qs_json_type_name(t.type), t.offset);
    return qs_json_skip(&c->r, &t, c->err);
}

/* ------------------------------------------------------- features_info */

/* features_info.categorical_features: empty (or null), or refused naming
 * the first one (its feature_id, categorical and flat indexes) and how many
 * there are; CTRs (features_info.ctrs, ctr_data) are said with them. */
static int refuse_categorical(conv *c, int ctrs)
{
    qs_json_token t, k;
    if (next(c, &t) != 0)
        return -1;
    if (t.type == QS_JSON_NULL)
        return 0;
    if (t.type != QS_JSON_ARRAY)
        return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)t.offset,
                          "categorical features should be an array, found %s at byte %zu",
                          qs_json_type_name(t.type), t.offset);
    const size_t at = t.offset;
    size_t n = 0;
    char id[64] = "";
    int64_t idx = -1, flat = -1;
    for (;;) {
        if (next(c, &t) != 0)
            return -1;
        if (t.type == QS_JSON_ARRAY_END)
            break;
        if (t.type != QS_JSON_OBJECT) {
            if (qs_json_skip(&c->r, &t, c->err) != 0)
                return -1;
            n++;
            continue;
        }
        for (;;) {
            if (next(c, &k) != 0)
                return -1;
            if (k.type == QS_JSON_OBJECT_END)
                break;
            qs_json_token v;
            if (n == 0 && (qs_json_str_eq(&k, "feature_id") ||
                           qs_json_str_eq(&k, "feature_index") ||
                           qs_json_str_eq(&k, "flat_feature_index"))) {
                if (next(c, &v) != 0)
                    return -1;
                if (qs_json_str_eq(&k, "feature_id")) {
                    if (v.type == QS_JSON_STRING) {
                        char raw[48];
                        if (qs_json_str_decode(&v, raw, sizeof raw) < 0)
                            snprintf(raw, sizeof raw, "(a long name)");
                        qs_quote(id, sizeof id, raw, strlen(raw));
                    }
                } else if (v.type == QS_JSON_NUMBER) {
                    int64_t x;
                    if (qs_json_get_i64(&v, &x) == 0)
                        *(qs_json_str_eq(&k, "feature_index") ? &idx : &flat) = x;
                }
                if (v.type == QS_JSON_ARRAY || v.type == QS_JSON_OBJECT)
                    if (qs_json_skip(&c->r, &v, c->err) != 0)
                        return -1;
            } else if (qs_json_skip(&c->r, &k, c->err) != 0) {
                return -1;
            }
        }
        n++;
    }
    if (n == 0)
        return 0;
    char first[160];
    snprintf(first, sizeof first, "%s%s%s(categorical feature %lld, flat feature %lld)",
             id[0] ? "\"" : "", id, id[0] ? "\" " : "", (long long)idx, (long long)flat);
    return qs_fail_at(c->err, QS_ERR_UNSUPPORTED, (long long)at,
                      "categorical features are not supported: the model has %zu (byte %zu), "
                      "the first %s%s; CatBoost's one-hot and CTR splits on them are not read "
                      "(only float features are)", n, at, first,
                      ctrs ? ", with CTRs (ctr_data)" : "");
}

static int parse_float_feature(conv *c)
{
    qs_json_token t, k;
    if (expect(c, &t, QS_JSON_OBJECT, "features_info.float_features[]") != 0)
        return -1;
    int64_t idx = -1, flat = -1;
    int nan_true = -1;
    size_t at = t.offset;
    for (;;) {
        if (next(c, &k) != 0)
            return -1;
        if (k.type == QS_JSON_OBJECT_END)
            break;
        if (qs_json_str_eq(&k, "feature_index")) {
            if (read_int(c, "float feature feature_index", &idx) != 0)
                return -1;
        } else if (qs_json_str_eq(&k, "flat_feature_index")) {
            if (read_int(c, "float feature flat_feature_index", &flat) != 0)
                return -1;
        } else if (qs_json_str_eq(&k, "nan_value_treatment")) {
            char v[16];
            if (read_name(c, "nan_value_treatment", v, sizeof v) != 0)
                return -1;
            if (strcmp(v, "AsFalse") == 0 || strcmp(v, "AsIs") == 0)
                nan_true = 0;
            else if (strcmp(v, "AsTrue") == 0)
                nan_true = 1;
            else
                return qs_fail_at(c->err, QS_ERR_UNSUPPORTED, (long long)k.offset,
                                  "nan_value_treatment \"%s\" (byte %zu) is not supported "
                                  "(expected AsFalse, AsIs or AsTrue)", v, k.offset);
        } else if (qs_json_str_eq(&k, "borders") || qs_json_str_eq(&k, "feature_id") ||
                   qs_json_str_eq(&k, "has_nans")) {
            /* The splits carry their own borders; the rest is informational. */
            if (qs_json_skip(&c->r, &k, c->err) != 0)
                return -1;
        } else {
            return unknown(c, &k, "features_info.float_features");
        }
    }
    if (idx < 0 || flat < 0)
        return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)at,
                          "float feature at byte %zu: feature_index and flat_feature_index "
                          "should be non-negative integers", at);
    if (flat >= (int64_t)QS_MAX_FEATURES - 1 || idx >= (int64_t)QS_MAX_FEATURES)
        return qs_fail_at(c->err, QS_ERR_LIMIT, (long long)at,
                          "float feature at byte %zu: index beyond the limit of %u features",
                          at, QS_MAX_FEATURES);
    if (nan_true < 0)
        nan_true = 0;   /* absent: AsIs, NaN > border is false */
    while (c->nff <= (size_t)idx) {
        if (qs_vec_reserve((void **)&c->ff, &c->capff, c->nff, sizeof *c->ff) != 0)
            return nomem(c);
        memset(&c->ff[c->nff++], 0, sizeof *c->ff);
    }
    ffeat *f = &c->ff[idx];
    if (f->seen)
        return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)at,
                          "float feature %lld is described twice (byte %zu)", (long long)idx, at);
    f->seen = 1;
    f->flat = flat;
    f->nan_true = nan_true;
    return 0;
}

static int parse_features(conv *c)
{
    qs_json_token t, k;
    if (expect(c, &t, QS_JSON_OBJECT, "features_info") != 0)
        return -1;
    int has_float = 0;
    for (;;) {
        if (next(c, &k) != 0)
            return -1;
        if (k.type == QS_JSON_OBJECT_END)
            break;
        if (qs_json_str_eq(&k, "float_features")) {
            if (has_float)
                return duplicate(c, &k, "features_info.float_features");
            has_float = 1;
            if (expect(c, &t, QS_JSON_ARRAY, "features_info.float_features") != 0)
                return -1;
            for (;;) {
                /* Peek: an object, or the end of the array. */
                qs_json_reader save = c->r;
                if (next(c, &t) != 0)
                    return -1;
                if (t.type == QS_JSON_ARRAY_END)
                    break;
                c->r = save;
                if (parse_float_feature(c) != 0)
                    return -1;
            }
        } else if (qs_json_str_eq(&k, "categorical_features")) {
            if (refuse_categorical(c, c->has_ctr_data) != 0)
                return -1;
        } else if (qs_json_str_eq(&k, "cat_features_hash")) {
            /* the categories' hashes and names (CatBoost writes them when
             * the model is saved with its pool): informational, and a model
             * that has them has categorical features, refused above */
            if (qs_json_skip(&c->r, &k, c->err) != 0)
                return -1;
        } else if (qs_json_str_eq(&k, "text_features")) {
            if (require_empty(c, "text features") != 0)
                return -1;
        } else if (qs_json_str_eq(&k, "embedding_features")) {
            if (require_empty(c, "embedding features") != 0)
                return -1;
        } else if (qs_json_str_eq(&k, "ctrs")) {
            if (require_empty(c, "CTR features (features_info.ctrs)") != 0)
                return -1;
        } else {
            return unknown(c, &k, "features_info");
        }
    }
    return 0;
}

/* ------------------------------------------------------------- trees */

static int parse_split(conv *c, size_t ti)
{
    qs_json_token t, k;
    if (expect(c, &t, QS_JSON_OBJECT, "a split") != 0)
        return -1;
    int64_t feat = -1;
    double border = NAN;
    int has_border = 0, is_float = -1;
    qs_json_token unk;
    int has_unknown = 0;
    char type[64] = "";
    size_t at = t.offset;
    for (;;) {
        if (next(c, &k) != 0)
            return -1;
        if (k.type == QS_JSON_OBJECT_END)
            break;
        if (qs_json_str_eq(&k, "float_feature_index")) {
            if (read_int(c, "float_feature_index", &feat) != 0)
                return -1;
        } else if (qs_json_str_eq(&k, "border")) {
            if (read_f64(c, "border", &border) != 0)
                return -1;
            has_border = 1;
        } else if (qs_json_str_eq(&k, "split_type")) {
            if (read_name(c, "split_type", type, sizeof type) != 0)
                return -1;
            is_float = strcmp(type, "FloatFeature") == 0;
        } else if (qs_json_str_eq(&k, "split_index")) {
            if (qs_json_skip(&c->r, &k, c->err) != 0)   /* informational */
                return -1;
        } else {
            /* Decided after the whole split: a OneHotFeature or OnlineCtr
             * split has other fields, and its type says more. */
            if (!has_unknown) {
                unk = k;
                has_unknown = 1;
            }
            if (qs_json_skip(&c->r, &k, c->err) != 0)
                return -1;
        }
    }
    unsigned long long tl = (unsigned long long)ti;
    if (is_float == 0) {
        char q[48];
        return qs_fail_at(c->err, QS_ERR_UNSUPPORTED, (long long)at,
                          "tree %llu: split of type \"%s\" (byte %zu): only FloatFeature "
                          "splits are supported (categorical features and CTRs are not)",
                          tl, qs_quote(q, sizeof q, type, strlen(type)), at);
    }
    if (has_unknown)
        return unknown(c, &unk, "oblivious_trees[].splits[]");
    if (is_float < 0 || feat < 0 || !has_border)
        return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)at,
                          "tree %llu: split at byte %zu should have split_type, "
                          "float_feature_index (non-negative) and border", tl, at);
    if (isnan(border))
        return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)at,
                          "tree %llu: border (byte %zu) is NaN", tl, at);
    if ((double)(float)border != border)
        return qs_fail_at(c->err, QS_ERR_UNSUPPORTED, (long long)at,
                          "tree %llu: border %.17g (byte %zu) is not a float32 value; CatBoost "
                          "compares in float32 and writes float32 borders", tl, border, at);
    if (qs_vec_reserve((void **)&c->sp, &c->capsp, c->nsp, sizeof *c->sp) != 0)
        return nomem(c);
    c->sp[c->nsp].feature = feat;
    c->sp[c->nsp++].border = border;
    return 0;
}

static int parse_tree(conv *c)
{
    qs_json_token t, k;
    if (expect(c, &t, QS_JSON_OBJECT, "oblivious_trees[]") != 0)
        return -1;
    size_t ti = c->ntr;
    if (qs_vec_reserve((void **)&c->tr, &c->captr, c->ntr, sizeof *c->tr) != 0)
        return nomem(c);
    if (c->ntr >= QS_MAX_TREES)
        return qs_fail(c->err, QS_ERR_LIMIT, 0, "more than %u trees", QS_MAX_TREES);
    ctree *tr = &c->tr[c->ntr++];
    memset(tr, 0, sizeof *tr);
    int has_splits = 0, has_leaves = 0;
    size_t at = t.offset;
    for (;;) {
        if (next(c, &k) != 0)
            return -1;
        if (k.type == QS_JSON_OBJECT_END)
            break;
        if (qs_json_str_eq(&k, "splits")) {
            if (has_splits)
                return duplicate(c, &k, "splits");
            has_splits = 1;
            tr->split_off = c->nsp;
            if (expect(c, &t, QS_JSON_ARRAY, "splits") != 0)
                return -1;
            for (;;) {
                qs_json_reader save = c->r;
                if (next(c, &t) != 0)
                    return -1;
                if (t.type == QS_JSON_ARRAY_END)
                    break;
                c->r = save;
                if (c->nsp - tr->split_off >= CB_MAX_DEPTH)
                    return qs_fail_at(c->err, QS_ERR_LIMIT, (long long)t.offset,
                                      "tree %zu has more than %u splits (depth limit)", ti,
                                      CB_MAX_DEPTH);
                if (parse_split(c, ti) != 0)
                    return -1;
            }
            tr->depth = c->nsp - tr->split_off;
        } else if (qs_json_str_eq(&k, "leaf_values")) {
            if (has_leaves)
                return duplicate(c, &k, "leaf_values");
            has_leaves = 1;
            tr->leaf_off = c->nlv;
            if (expect(c, &t, QS_JSON_ARRAY, "leaf_values") != 0)
                return -1;
            for (;;) {
                if (next(c, &t) != 0)
                    return -1;
                if (t.type == QS_JSON_ARRAY_END)
                    break;
                double v;
                if (qs_json_get_f64(&t, &v) != 0)
                    return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)t.offset,
                                      "tree %zu: leaf_values[%zu] should be a number, found %s "
                                      "at byte %zu", ti, c->nlv - tr->leaf_off,
                                      qs_json_type_name(t.type), t.offset);
                if (c->nlv - tr->leaf_off >= ((size_t)QS_MAX_CLASSES << CB_MAX_DEPTH))
                    return qs_fail_at(c->err, QS_ERR_LIMIT, (long long)t.offset,
                                      "tree %zu: too many leaf values", ti);
                if (qs_vec_reserve((void **)&c->lv, &c->caplv, c->nlv, sizeof *c->lv) != 0)
                    return nomem(c);
                c->lv[c->nlv++] = v;
            }
            tr->nleaves = c->nlv - tr->leaf_off;
        } else if (qs_json_str_eq(&k, "leaf_weights")) {
            if (qs_json_skip(&c->r, &k, c->err) != 0)   /* training weights */
                return -1;
        } else {
            return unknown(c, &k, "oblivious_trees[]");
        }
    }
    if (!has_splits || !has_leaves)
        return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)at,
                          "tree %zu (byte %zu) should have splits and leaf_values", ti, at);
    return 0;
}

/* A node of a non-symmetric tree ("trees"): {"split": {...}, "left":
 * NODE, "right": NODE} or {"value": V or [V...], "weight": W}.  CatBoost
 * sends a document right when x > border (in float32), as in oblivious
 * trees; NaN by the feature's treatment.  Returns the node's index in the
 * tree, or (size_t)-1. */
static size_t parse_ns_node(conv *c, size_t ti, ctree *tr, unsigned depth)
{
    qs_json_token t, k;
    if (expect(c, &t, QS_JSON_OBJECT, "trees[] node") != 0)
        return (size_t)-1;
    if (depth > CB_MAX_DEPTH) {
        qs_fail_at(c->err, QS_ERR_LIMIT, (long long)t.offset,
                   "tree %zu is deeper than %u levels (byte %zu)", ti, CB_MAX_DEPTH, t.offset);
        return (size_t)-1;
    }
    if (depth + 1 > tr->depth)
        tr->depth = depth + 1;
    if (qs_vec_reserve((void **)&c->ns, &c->capns, c->nns, sizeof *c->ns) != 0) {
        nomem(c);
        return (size_t)-1;
    }
    const size_t self = c->nns++ - tr->ns_off;
    nsnode nd = { 0, 0, 0, 0, 0, 0 };
    int has_split = 0, has_left = 0, has_right = 0, has_value = 0;
    size_t at = t.offset;
    for (;;) {
        if (next(c, &k) != 0)
            return (size_t)-1;
        if (k.type == QS_JSON_OBJECT_END)
            break;
        if (qs_json_str_eq(&k, "split")) {
            if (has_split++)
                return duplicate(c, &k, "split"), (size_t)-1;
            nd.split = c->nsp;
            if (parse_split(c, ti) != 0)
                return (size_t)-1;
        } else if (qs_json_str_eq(&k, "left") || qs_json_str_eq(&k, "right")) {
            int left = qs_json_str_eq(&k, "left");
            if (left ? has_left++ : has_right++)
                return duplicate(c, &k, left ? "left" : "right"), (size_t)-1;
            size_t ch = parse_ns_node(c, ti, tr, depth + 1);
            if (ch == (size_t)-1)
                return ch;
            if (left)
                nd.left = ch;
            else
                nd.right = ch;
        } else if (qs_json_str_eq(&k, "value")) {
            if (has_value++)
                return duplicate(c, &k, "value"), (size_t)-1;
            nd.leaf_off = c->nlv;
            qs_json_reader save = c->r;
            if (next(c, &t) != 0)
                return (size_t)-1;
            int array = t.type == QS_JSON_ARRAY;
            if (!array)
                c->r = save;
            for (;;) {
                if (next(c, &t) != 0)
                    return (size_t)-1;
                if (array && t.type == QS_JSON_ARRAY_END)
                    break;
                double v;
                if (qs_json_get_f64(&t, &v) != 0) {
                    qs_fail_at(c->err, QS_ERR_FORMAT, (long long)t.offset,
                               "tree %zu: a leaf value should be a number, found %s at byte %zu",
                               ti, qs_json_type_name(t.type), t.offset);
                    return (size_t)-1;
                }
                if (c->nlv - nd.leaf_off >= QS_MAX_CLASSES) {
                    qs_fail_at(c->err, QS_ERR_LIMIT, (long long)t.offset,
                               "tree %zu: too many leaf values", ti);
                    return (size_t)-1;
                }
                if (qs_vec_reserve((void **)&c->lv, &c->caplv, c->nlv, sizeof *c->lv) != 0) {
                    nomem(c);
                    return (size_t)-1;
                }
                c->lv[c->nlv++] = v;
                if (!array)
                    break;
            }
            nd.nvals = c->nlv - nd.leaf_off;
        } else if (qs_json_str_eq(&k, "weight")) {
            if (qs_json_skip(&c->r, &k, c->err) != 0)   /* training weight */
                return (size_t)-1;
        } else {
            unknown(c, &k, "trees[] node");
            return (size_t)-1;
        }
    }
    if (has_value ? (has_split || has_left || has_right || nd.nvals == 0)
                  : !(has_split && has_left && has_right)) {
        qs_fail_at(c->err, QS_ERR_FORMAT, (long long)at,
                   "tree %zu: the node at byte %zu should be a split with left and right, or a "
                   "leaf with a value", ti, at);
        return (size_t)-1;
    }
    nd.leaf = has_value;
    c->ns[tr->ns_off + self] = nd;
    return self;
}

static int parse_ns_tree(conv *c)
{
    size_t ti = c->ntr;
    if (qs_vec_reserve((void **)&c->tr, &c->captr, c->ntr, sizeof *c->tr) != 0)
        return nomem(c);
    if (c->ntr >= QS_MAX_TREES)
        return qs_fail(c->err, QS_ERR_LIMIT, 0, "more than %u trees", QS_MAX_TREES);
    ctree *tr = &c->tr[c->ntr++];
    memset(tr, 0, sizeof *tr);
    tr->nonsym = 1;
    tr->ns_off = c->nns;
    if (parse_ns_node(c, ti, &c->tr[ti], 0) == (size_t)-1)
        return -1;
    tr = &c->tr[ti];
    tr->nns = c->nns - tr->ns_off;
    return 0;
}

/* ------------------------------------------------ scale_and_bias, info */

/* A canonical split node for CatBoost split s: left when !(x > border) in
 * float32, NaN by the feature's treatment. */
static void set_split(qs_node *n, const split *s, const ffeat *f, size_t left, size_t right)
{
    n->kind = QS_NODE_NUM;
    n->feature = (uint32_t)(f->flat + 1);
    n->value = s->border;
    n->miss = QS_MISS_NAN;
    n->default_left = f->nan_true ? 0 : 1;
    n->left = (int32_t)left;
    n->right = (int32_t)right;
}

static int parse_scale_and_bias(conv *c)
{
    qs_json_token t;
    if (expect(c, &t, QS_JSON_ARRAY, "scale_and_bias") != 0)
        return -1;
    if (read_f64(c, "scale_and_bias[0] (the scale)", &c->scale) != 0)
        return -1;
    if (next(c, &t) != 0)
        return -1;
    if (t.type == QS_JSON_NUMBER) {
        /* A single bias for every output. */
        c->bias_scalar = 1;
        if (qs_vec_reserve((void **)&c->bias, &c->capbias, 0, sizeof *c->bias) != 0)
            return nomem(c);
        if (qs_json_get_f64(&t, &c->bias[0]) != 0)
            return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)t.offset,
                              "scale_and_bias[1] (byte %zu) is not a number", t.offset);
        c->nbias = 1;
    } else if (t.type == QS_JSON_ARRAY) {
        for (;;) {
            if (next(c, &t) != 0)
                return -1;
            if (t.type == QS_JSON_ARRAY_END)
                break;
            if (c->nbias >= QS_MAX_CLASSES)
                return qs_fail_at(c->err, QS_ERR_LIMIT, (long long)t.offset,
                                  "scale_and_bias has more than %u biases", QS_MAX_CLASSES);
            if (qs_vec_reserve((void **)&c->bias, &c->capbias, c->nbias, sizeof *c->bias) != 0)
                return nomem(c);
            if (qs_json_get_f64(&t, &c->bias[c->nbias]) != 0)
                return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)t.offset,
                                  "scale_and_bias[1][%zu] should be a number, found %s at "
                                  "byte %zu", c->nbias, qs_json_type_name(t.type), t.offset);
            c->nbias++;
        }
        if (c->nbias == 0)
            return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)t.offset,
                              "scale_and_bias[1] is an empty list of biases");
    } else {
        return qs_fail_at(c->err, QS_ERR_FORMAT, (long long)t.offset,
                          "scale_and_bias should be [scale, [bias, ...]], found %s at byte %zu",
                          qs_json_type_name(t.type), t.offset);
    }
    return expect(c, &t, QS_JSON_ARRAY_END, "scale_and_bias (two entries)");
}

/* Enter the object that is the value of key `name` inside the current
 * object, skipping every other member; 1 when found, 0 when the object ends
 * first (consumed), -1 on error.  A value of another type is skipped. */
static int find_object(conv *c, const char *name)
{
    qs_json_token k, t;
    for (;;) {
        if (next(c, &k) != 0)
            return -1;
        if (k.type == QS_JSON_OBJECT_END)
            return 0;
        if (qs_json_str_eq(&k, name)) {
            if (next(c, &t) != 0)
                return -1;
            if (t.type == QS_JSON_OBJECT)
                return 1;
            if (qs_json_skip(&c->r, &t, c->err) != 0)
                return -1;
        } else if (qs_json_skip(&c->r, &k, c->err) != 0) {
            return -1;
        }
    }
}

/* Skip the rest of the current object (after a find_object that entered
 * it, `levels` objects deep). */
static int leave(conv *c, unsigned depth)
{
    qs_json_token t;
    while (qs_json_depth(&c->r) > depth)
        if (next(c, &t) != 0)
            return -1;
    return 0;
}

/* model_info is informational; params.loss_function.type names the loss. */
static int parse_model_info(conv *c)
{
    qs_json_token t;
    if (expect(c, &t, QS_JSON_OBJECT, "model_info") != 0)
        return -1;
    unsigned depth = qs_json_depth(&c->r) - 1;
    int rc = find_object(c, "params");
    if (rc == 1)
        rc = find_object(c, "loss_function");
    if (rc == 1) {
        qs_json_token k;
        for (;;) {
            if (next(c, &k) != 0)
                return -1;
            if (k.type == QS_JSON_OBJECT_END)
                break;
            if (qs_json_str_eq(&k, "type")) {
                if (next(c, &t) != 0)
                    return -1;
                if (t.type == QS_JSON_STRING &&
                    qs_json_str_decode(&t, c->loss, sizeof c->loss) >= 0)
                    c->has_loss = 1;
                else if (qs_json_skip(&c->r, &t, c->err) != 0)
                    return -1;
            } else if (qs_json_skip(&c->r, &k, c->err) != 0) {
                return -1;
            }
        }
    }
    if (rc < 0)
        return -1;
    return leave(c, depth);
}

/* ------------------------------------------------------------ finishing */

/* The loss function's output (CatBoost's prediction types): Logloss and
 * CrossEntropy give Probability = 1/(1+exp(-raw)) with the C library's exp
 * ("sigmoid": CalcSigmoid over a vector in eval_processing.h calls exp);
 * Poisson and Tweedie Exponent and MultiClass Probability (softmax) use
 * CatBoost's FastExpInplace, fmath's exp on x86-64 ("fmath-exp",
 * "fmath-softmax": transform.c); the regression and ranking losses the raw
 * value. */
static const struct loss_info {
    const char *name, *transform;
} losses[] = {
    { "Logloss", "sigmoid" },       { "CrossEntropy", "sigmoid" },
    { "Poisson", "fmath-exp" },     { "Tweedie", "fmath-exp" },
    { "MultiClass", "fmath-softmax" },
    { "RMSE", "none" },             { "MAE", "none" },
    { "Quantile", "none" },         { "Expectile", "none" },
    { "MAPE", "none" },             { "Lq", "none" },
    { "Huber", "none" },            { "YetiRank", "none" },
    { "YetiRankPairwise", "none" }, { "PairLogit", "none" },
    { "PairLogitPairwise", "none" }, { "QueryRMSE", "none" },
    { "QuerySoftMax", "none" },     { "LambdaMart", "none" },
    { "StochasticFilter", "none" }, { "StochasticRank", "none" },
};

const char *qs_catboost_loss_transform(const char *loss)
{
    for (size_t i = 0; loss && i < sizeof losses / sizeof losses[0]; i++)
        if (strcmp(loss, losses[i].name) == 0)
            return losses[i].transform;
    return "unsupported";
}

static int finish(conv *c)
{
    if (c->has_ctr_data)
        return qs_fail_at(c->err, QS_ERR_UNSUPPORTED, (long long)c->ctr_data_at,
                          "CTR data (ctr_data, byte %zu): the model uses CTRs, which are not "
                          "supported (only float features are)", c->ctr_data_at);
    qs_model *m = c->m;
    qs_error *err = c->err;
    if (!c->has_trees)
        return qs_fail(err, QS_ERR_FORMAT, 0,
                       "not a catboost json model: no \"oblivious_trees\" or \"trees\" list");
    if (!c->has_features)
        return qs_fail(err, QS_ERR_FORMAT, 0, "features_info is missing");

    /* Outputs: the biases say how many; without scale_and_bias (older
     * files), the first tree. */
    size_t K = 1;
    if (c->has_sab && !c->bias_scalar)
        K = c->nbias;
    else if (c->ntr > 0 && c->tr[0].nonsym) {
        K = c->ns[c->tr[0].ns_off + (c->tr[0].nns - 1)].nvals; /* the last node is a leaf */
    } else if (c->ntr > 0) {
        size_t leaves = (size_t)1 << c->tr[0].depth;
        if (c->tr[0].nleaves == 0 || c->tr[0].nleaves % leaves != 0)
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "tree 0: %zu leaf values for a tree of depth %zu", c->tr[0].nleaves,
                           c->tr[0].depth);
        K = c->tr[0].nleaves / leaves;
    }
    if (K == 0 || K > QS_MAX_CLASSES)
        return qs_fail(err, QS_ERR_LIMIT, 0, "%zu outputs (limit %u)", K, QS_MAX_CLASSES);
    if ((uint64_t)c->ntr * K > QS_MAX_TREES)
        return qs_fail(err, QS_ERR_LIMIT, 0, "%zu trees of %zu outputs: more than %u trees",
                       c->ntr, K, QS_MAX_TREES);
    if (qs_model_set_classes(m, (uint32_t)K, err) != 0)
        return -1;
    m->out_affine = 1;
    m->out_scale = c->has_sab ? c->scale : 1.0;
    for (size_t j = 0; j < K; j++)
        m->out_bias[j] = !c->has_sab ? 0.0 : c->bias_scalar ? c->bias[0] : c->bias[j];

    /* Features: canonical id = flat index + 1. */
    uint64_t nf = 0;
    for (size_t i = 0; i < c->nff; i++)
        if (c->ff[i].seen && (uint64_t)c->ff[i].flat + 2 > nf)
            nf = (uint64_t)c->ff[i].flat + 2;

    for (size_t ti = 0; ti < c->ntr; ti++) {
        const ctree *tr = &c->tr[ti];
        if (tr->nonsym) {
            const nsnode *nd = c->ns + tr->ns_off;
            for (size_t i = 0; i < tr->nns; i++) {
                if (nd[i].leaf && nd[i].nvals != K)
                    return qs_fail(err, QS_ERR_FORMAT, 0,
                                   "tree %zu: a leaf with %zu values, expected %zu outputs", ti,
                                   nd[i].nvals, K);
                if (!nd[i].leaf && ((uint64_t)c->sp[nd[i].split].feature >= c->nff ||
                                    !c->ff[c->sp[nd[i].split].feature].seen))
                    return qs_fail(err, QS_ERR_FORMAT, 0,
                                   "tree %zu: float feature %lld is not described in "
                                   "features_info.float_features",
                                   ti, (long long)c->sp[nd[i].split].feature);
            }
            if (tr->nns > QS_MAX_TREE_NODES)
                return qs_fail(err, QS_ERR_LIMIT, 0, "tree %zu has %zu nodes (limit %u)", ti,
                               tr->nns, QS_MAX_TREE_NODES);
            for (size_t cl = 0; cl < K; cl++) {
                if (qs_model_add_tree(m, (uint32_t)cl, 1.0, err) != 0 ||
                    qs_model_add_nodes(m, (uint32_t)tr->nns, err) < 0)
                    return -1;
                for (size_t i = 0; i < tr->nns; i++) {
                    qs_node *n = qs_model_cur_node(m, (uint32_t)i);
                    if (nd[i].leaf) {
                        n->kind = QS_NODE_LEAF;
                        n->value = c->lv[nd[i].leaf_off + cl];
                        continue;
                    }
                    const split *s = &c->sp[nd[i].split];
                    set_split(n, s, &c->ff[s->feature], nd[i].left, nd[i].right);
                }
            }
            continue;
        }
        const size_t d = tr->depth, leaves = (size_t)1 << d;
        if (tr->nleaves != leaves * K)
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "tree %zu: %zu leaf values, expected %zu (2^%zu leaves x %zu outputs)",
                           ti, tr->nleaves, leaves * K, d, K);
        const split *sp = c->sp + tr->split_off;
        for (size_t i = 0; i < d; i++)
            if ((uint64_t)sp[i].feature >= c->nff || !c->ff[sp[i].feature].seen)
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "tree %zu split %zu: float feature %lld is not described in "
                               "features_info.float_features", ti, i, (long long)sp[i].feature);
        for (size_t cl = 0; cl < K; cl++) {
            if (qs_model_add_tree(m, (uint32_t)cl, 1.0, err) != 0 ||
                qs_model_add_nodes(m, (uint32_t)(2 * leaves - 1), err) < 0)
                return -1;
            /* Heap order: node i has children 2i+1, 2i+2; level L tests
             * splits[d-1-L]; leaf p (left to right) is node leaves-1+p. */
            for (size_t lev = 0; lev < d; lev++) {
                const split *s = &sp[d - 1 - lev];
                const ffeat *f = &c->ff[s->feature];
                for (size_t i = ((size_t)1 << lev) - 1; i < ((size_t)2 << lev) - 1; i++)
                    set_split(qs_model_cur_node(m, (uint32_t)i), s, f, 2 * i + 1, 2 * i + 2);
            }
            for (size_t p = 0; p < leaves; p++) {
                qs_node *n = qs_model_cur_node(m, (uint32_t)(leaves - 1 + p));
                n->kind = QS_NODE_LEAF;
                n->value = c->lv[tr->leaf_off + p * K + cl];
            }
        }
    }

    m->num_features = (uint32_t)nf;
    m->cmp = QS_CMP_LE;
    m->float_precision = 1;
    m->float_accumulate = QS_ACC_DOUBLE;
    m->absent_missing = 0;
    const char *tf = qs_catboost_loss_transform(c->has_loss ? c->loss : NULL);
    snprintf(m->objective, sizeof m->objective, "%s", c->has_loss ? c->loss : "");
    snprintf(m->transform, sizeof m->transform, "%s", tf);
    if (!isfinite(m->out_scale))
        return qs_fail(err, QS_ERR_FORMAT, 0, "scale_and_bias: the scale is not finite");
    for (size_t j = 0; j < K; j++)
        if (!isfinite(m->out_bias[j]))
            return qs_fail(err, QS_ERR_FORMAT, 0, "scale_and_bias: bias %zu is not finite", j);
    return qs_model_validate(m, err);
}

qs_model *qs_convert_catboost(const char *buf, size_t len, qs_error *err)
{
    if (!buf && len) {
        qs_fail(err, QS_ERR_ARG, 0, "no input buffer");
        return NULL;
    }
    conv c;
    memset(&c, 0, sizeof c);
    c.err = err;
    c.scale = 1.0;
    c.m = qs_model_new(QS_SRC_CATBOOST, err);
    if (!c.m)
        return NULL;
    qs_json_init(&c.r, buf, len, 64, QS_JSON_NONFINITE);

    int rc = -1;
    qs_json_token k, t;
    if (expect(&c, &t, QS_JSON_OBJECT, "a catboost json model") != 0)
        goto done;
    for (;;) {
        if (next(&c, &k) != 0)
            goto done;
        if (k.type == QS_JSON_OBJECT_END)
            break;
        if (qs_json_str_eq(&k, "oblivious_trees") || qs_json_str_eq(&k, "trees")) {
            /* "trees": non-symmetric trees (grow_policy Depthwise or Lossguide). */
            const int ns = qs_json_str_eq(&k, "trees");
            const char *what = ns ? "trees" : "oblivious_trees";
            if (c.has_trees) {
                duplicate(&c, &k, what);
                goto done;
            }
            c.has_trees = 1;
            if (expect(&c, &t, QS_JSON_ARRAY, what) != 0)
                goto done;
            for (;;) {
                qs_json_reader save = c.r;
                if (next(&c, &t) != 0)
                    goto done;
                if (t.type == QS_JSON_ARRAY_END)
                    break;
                c.r = save;
                if ((ns ? parse_ns_tree(&c) : parse_tree(&c)) != 0)
                    goto done;
            }
        } else if (qs_json_str_eq(&k, "features_info")) {
            if (c.has_features) {
                duplicate(&c, &k, "features_info");
                goto done;
            }
            c.has_features = 1;
            if (parse_features(&c) != 0)
                goto done;
        } else if (qs_json_str_eq(&k, "scale_and_bias")) {
            if (c.has_sab) {
                duplicate(&c, &k, "scale_and_bias");
                goto done;
            }
            c.has_sab = 1;
            if (parse_scale_and_bias(&c) != 0)
                goto done;
        } else if (qs_json_str_eq(&k, "model_info")) {
            if (parse_model_info(&c) != 0)
                goto done;
        } else if (qs_json_str_eq(&k, "ctr_data")) {
            /* CatBoost writes it before features_info: refused there, with
             * the categorical features it is computed from, or after */
            qs_json_reader save = c.r;
            if (next(&c, &t) != 0)
                goto done;
            if (t.type == QS_JSON_OBJECT || t.type == QS_JSON_ARRAY) {
                qs_json_token e;
                if (next(&c, &e) != 0)
                    goto done;
                if (e.type != QS_JSON_OBJECT_END && e.type != QS_JSON_ARRAY_END) {
                    c.has_ctr_data = 1;
                    c.ctr_data_at = t.offset;
                }
            }
            c.r = save;
            if (require_empty_or_skip(&c) != 0)
                goto done;
        } else if (qs_json_str_eq(&k, "learner") || qs_json_str_eq(&k, "version")) {
            qs_fail_at(err, QS_ERR_FORMAT, (long long)k.offset,
                       "not a catboost json model: \"%s\" (byte %zu) is an XGBoost field "
                       "(expected features_info, oblivious_trees, scale_and_bias)",
                       qs_json_str_eq(&k, "learner") ? "learner" : "version", k.offset);
            goto done;
        } else {
            unknown(&c, &k, "catboost model");
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
    free(c.ff);
    free(c.sp);
    free(c.lv);
    free(c.tr);
    free(c.ns);
    free(c.bias);
    if (rc != 0) {
        qs_model_free(c.m);
        return NULL;
    }
    return c.m;
}
