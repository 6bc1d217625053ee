/* cbm.c: converts a CatBoost binary model (.cbm, what save_model writes by
 * default) into the canonical ensemble, reproducing CatBoost's raw scores
 * bit for bit, or refuses it.
 *
 * The file: the four bytes "CBM1", the size of the model core (a 32-bit
 * little-endian count; 0xFFFFFFFF is followed by a 64-bit one), then the
 * core: a FlatBuffers buffer whose root is CatBoost's TModelCore
 * (catboost/libs/model/flatbuffers/model.fbs, features.fbs); then, only for
 * models that need them, the parts TModelCore.ModelPartIds names (CTR
 * tables, text and embedding processing), which are refused.  The few
 * tables this reader needs are read here, every offset, length and vtable
 * checked against the buffer: no FlatBuffers library is involved.
 *
 * What decides the scores (TModelCore.ModelTrees, a TModelTrees; field ids
 * in the order of model.fbs):
 *  - ApproxDimension K (outputs), Scale (default 1), Bias (default 0) and
 *    MultiBias (K biases, else Bias for every output, which must then be 0
 *    when K > 1, as CatBoost's loader requires): raw[c] = Scale * (sum of
 *    the trees' leaf values in tree order, in double) + bias[c], the
 *    model's output affine, as for CatBoost JSON (catboost.c).
 *  - FloatFeatures: per float feature its FlatIndex (its column: canonical
 *    feature FlatIndex + 1, CatBoost's libsvm numbering), its Borders
 *    (float32, strictly increasing), HasNans and NanValueTreatment.  The
 *    binary features are every border of every float feature that has
 *    borders, feature by feature in file order; TreeSplits holds indexes
 *    into that list.  CatBoost quantizes x (float32) to the count of
 *    borders below it, so a split on border b goes right exactly when
 *    x > b in float32; with HasNans, a NaN is first replaced by -inf
 *    (AsFalse) or +inf (AsTrue), else it is below every border (left).
 *  - Oblivious trees (no NonSymmetricStepNodes): tree t has TreeSizes[t]
 *    splits from TreeStartOffsets[t]; split i sets bit i of the leaf index;
 *    its 2^d * K leaf values follow the previous tree's, leaf-major.
 *  - Non-symmetric trees: TreeSizes[t] step nodes from TreeStartOffsets[t]
 *    (one per TreeSplits entry); from a node, a document moves
 *    RightSubtreeDiff nodes on when it goes right and LeftSubtreeDiff when
 *    it goes left; a move of 0 ends at that node, whose leaf values are
 *    LeafValues[NonSymmetricNodeIdToLeafId[node] ...+K].
 *  - LeafWeights (the training weight of each leaf) do not change the
 *    scores; their count is checked.
 * The loss function (InfoMap "params", or "loss_function") picks the
 * transform as for CatBoost JSON (qs_catboost_loss_transform).
 *
 * Refused as unsupported (exit 3), naming what the model uses: categorical
 * features (one-hot splits, CTRs), text and embedding features (estimated
 * features), model parts, another core format version than
 * "FlabuffersModel_v1".  Categorical, text and embedding features the model
 * declares but never uses (CatBoost keeps their columns) change no score
 * and are passed over.
 *
 * Stricter than CatBoost's loader, so that the canonical model means what
 * CatBoost computes: a tree must be a tree (every step node reached once,
 * within its tree), each tree's leaves take the next leaf values in order
 * (CatBoost's writer lays them out so), borders strictly increase and are
 * not NaN, no bytes follow the model. */
#include "convert/convert.h"
#include "convert/json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CBM_MAX_DEPTH 16u     /* CatBoost's limit on an oblivious tree's depth */
#define CBM_CORE_FORMAT "FlabuffersModel_v1"

/* ---------------------------------------------------------- FlatBuffers */

/* The core buffer; every read is checked against n. */
typedef struct fbuf {
    const unsigned char *b;
    size_t n;
    qs_error *err;
    size_t base;   /* the core's offset in the file, for messages */
} fbuf;

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int bad(const fbuf *f, size_t at, const char *what)
{
    return qs_fail_at(f->err, QS_ERR_FORMAT, (long long)(f->base + at), "catboost .cbm: %s",
                      what);
}

/* A table at pos: its field `id`'s position (0: absent, its default), or
 * (size_t)-1 with err filled.  `size` is the field's inline size, which must
 * lie inside the table. */
static size_t field(const fbuf *f, size_t pos, unsigned id, size_t size)
{
    if (pos > f->n || f->n - pos < 4) {
        bad(f, pos, "a table lies outside the model");
        return (size_t)-1;
    }
    int64_t vt = (int64_t)pos - (int64_t)(int32_t)le32(f->b + pos);
    if (vt < 0 || (uint64_t)vt > f->n || f->n - (size_t)vt < 4) {
        bad(f, pos, "a table's vtable lies outside the model");
        return (size_t)-1;
    }
    const size_t v = (size_t)vt;
    const unsigned vsize = (unsigned)f->b[v] | (unsigned)f->b[v + 1] << 8;
    const unsigned tsize = (unsigned)f->b[v + 2] | (unsigned)f->b[v + 3] << 8;
    if (vsize < 4 || (vsize & 1) || f->n - v < vsize || tsize < 4 || f->n - pos < tsize) {
        bad(f, pos, "a table's vtable is malformed");
        return (size_t)-1;
    }
    if (4 + 2 * (size_t)id + 2 > vsize)
        return 0;
    const unsigned off = (unsigned)f->b[v + 4 + 2 * id] | (unsigned)f->b[v + 5 + 2 * id] << 8;
    if (off == 0)
        return 0;
    if (off < 4 || off + size > tsize) {
        bad(f, pos, "a table's field lies outside the table");
        return (size_t)-1;
    }
    return pos + off;
}

/* Scalar fields: 0 (the value, or the default when absent) or -1. */
static int get_i32(const fbuf *f, size_t tab, unsigned id, int32_t dflt, int32_t *out)
{
    size_t p = field(f, tab, id, 4);
    if (p == (size_t)-1)
        return -1;
    *out = p ? (int32_t)le32(f->b + p) : dflt;
    return 0;
}

static int get_u8(const fbuf *f, size_t tab, unsigned id, unsigned dflt, unsigned *out)
{
    size_t p = field(f, tab, id, 1);
    if (p == (size_t)-1)
        return -1;
    *out = p ? f->b[p] : dflt;
    return 0;
}

static int get_f64(const fbuf *f, size_t tab, unsigned id, double dflt, double *out)
{
    size_t p = field(f, tab, id, 8);
    if (p == (size_t)-1)
        return -1;
    if (p) {
        uint64_t u = le64(f->b + p);
        memcpy(out, &u, sizeof *out);
    } else {
        *out = dflt;
    }
    return 0;
}

/* Follow the offset stored at p (a reference to a table, vector or
 * string): its target, or (size_t)-1. */
static size_t deref(const fbuf *f, size_t p)
{
    uint32_t d = le32(f->b + p);
    if (d == 0 || d > f->n - p || f->n - p - d < 4) {
        bad(f, p, "an offset points outside the model");
        return (size_t)-1;
    }
    return p + d;
}

/* A vector field: *len elements of `esize` bytes from *data (0 and 0 when
 * absent); 0, or -1. */
typedef struct fvec {
    size_t data, len;
} fvec;

static int get_vec(const fbuf *f, size_t tab, unsigned id, size_t esize, fvec *out)
{
    out->data = out->len = 0;
    size_t p = field(f, tab, id, 4);
    if (p == (size_t)-1)
        return -1;
    if (!p)
        return 0;
    size_t v = deref(f, p);
    if (v == (size_t)-1)
        return -1;
    uint32_t len = le32(f->b + v);
    if ((uint64_t)len * esize > f->n - v - 4)
        return bad(f, v, "a vector runs past the end of the model");
    out->data = v + 4;
    out->len = len;
    return 0;
}

/* Element i of a vector of tables: the table's position, or (size_t)-1. */
static size_t vec_table(const fbuf *f, const fvec *v, size_t i)
{
    return deref(f, v->data + 4 * i);
}

/* A string field: its bytes and length (NULL when absent); 0 or -1.  The
 * FlatBuffers string ends with a NUL byte after its length. */
static int get_str(const fbuf *f, size_t tab, unsigned id, const char **s, size_t *len)
{
    fvec v;
    *s = NULL;
    *len = 0;
    size_t p = field(f, tab, id, 4);
    if (p == (size_t)-1)
        return -1;
    if (!p)
        return 0;
    if (get_vec(f, tab, id, 1, &v) != 0)
        return -1;
    if (v.len >= f->n - v.data || f->b[v.data + v.len] != 0)
        return bad(f, v.data, "a string is not terminated");
    *s = (const char *)f->b + v.data;
    *len = v.len;
    return 0;
}

/* --------------------------------------------------------------- model */

/* TModelCore fields */
enum { CORE_FORMAT = 0, CORE_TREES = 1, CORE_INFO = 2, CORE_PARTS = 3 };
/* TModelTrees fields */
enum {
    T_DIM = 0, T_SPLITS = 1, T_SIZES = 2, T_STARTS = 3, T_CAT = 4, T_FLOAT = 5, T_ONEHOT = 6,
    T_CTR = 7, T_LEAVES = 8, T_WEIGHTS = 9, T_STEPS = 10, T_LEAFIDS = 11, T_TEXT = 12,
    T_ESTIMATED = 13, T_SCALE = 14, T_BIAS = 15, T_MULTIBIAS = 16, T_EMBEDDING = 18
};
/* TFloatFeature fields */
enum { FF_HASNANS = 0, FF_INDEX = 1, FF_FLAT = 2, FF_BORDERS = 3, FF_ID = 4, FF_NAN = 5 };
enum { NAN_ASIS = 0, NAN_ASFALSE = 1, NAN_ASTRUE = 2 };

typedef struct cfeat {
    uint32_t id;           /* canonical feature: FlatIndex + 1 */
    int nan_right;         /* a NaN goes right of every finite border (HasNans, AsTrue) */
    int nan_inf;           /* a NaN is replaced by +-inf (HasNans, AsFalse or AsTrue) */
} cfeat;

/* A binary feature: a border of a float feature. */
typedef struct cbin {
    uint32_t feat;         /* index into the float features */
    float border;
} cbin;

/* A node of a non-symmetric tree in canonical preorder. */
typedef struct cnode {
    int leaf;
    uint32_t bin;          /* split: its binary feature */
    size_t leaf_off;       /* leaf: its first value in LeafValues */
    int32_t left, right;
} cnode;

typedef struct conv {
    fbuf f;
    qs_error *err;
    qs_model *m;
    size_t trees;          /* the TModelTrees table */
    uint32_t K;
    cfeat *ff; size_t nff;
    cbin *bins; size_t nbins;
    fvec splits, sizes, starts, leaves, weights, steps, leafids;
    cnode *cn; size_t ncn, capcn;
    size_t *stack; size_t capstack;
    unsigned char *seen; size_t capseen;
    char loss[64];
    int has_loss;
} conv;

static int nomem(conv *c)
{
    return qs_fail(c->err, QS_ERR_NOMEM, 0, "out of memory");
}

static double leaf_value(const conv *c, size_t i)
{
    double v;
    uint64_t u = le64(c->f.b + c->leaves.data + 8 * i);
    memcpy(&v, &u, sizeof v);
    return v;
}

static int32_t vec_i32(const conv *c, const fvec *v, size_t i)
{
    return (int32_t)le32(c->f.b + v->data + 4 * i);
}

/* A feature's name for messages: its FeatureId, else its column. */
static void feature_name(const conv *c, size_t tab, unsigned id_field, int32_t flat, char *out,
                         size_t cap)
{
    const char *s;
    size_t n;
    char q[64];
    if (get_str(&c->f, tab, id_field, &s, &n) == 0 && s && n > 0)
        snprintf(out, cap, "\"%s\" (column %lld)", qs_quote(q, sizeof q, s, n), (long long)flat);
    else
        snprintf(out, cap, "column %lld", (long long)flat);
    qs_error_clear(c->err);
}

/* Categorical, text or embedding features (TCatFeature, TTextFeature,
 * TEmbeddingFeature: Index, FlatIndex, FeatureId, [Dimension,] UsedInModel):
 * refused when the model uses one.  Fields: FlatIndex 1, FeatureId 2,
 * UsedInModel `used_field`. */
static int refuse_used(conv *c, unsigned vec_field, unsigned used_field, const char *kind,
                       const char *how)
{
    fvec v;
    if (get_vec(&c->f, c->trees, vec_field, 4, &v) != 0)
        return -1;
    size_t used = 0, first = 0;
    for (size_t i = 0; i < v.len; i++) {
        size_t t = vec_table(&c->f, &v, i);
        unsigned u;
        if (t == (size_t)-1 || get_u8(&c->f, t, used_field, 1, &u) != 0)
            return -1;
        if (u && used++ == 0)
            first = t;
    }
    if (!used)
        return 0;
    int32_t flat;
    if (get_i32(&c->f, first, 1, -1, &flat) != 0)
        return -1;
    char name[96];
    feature_name(c, first, 2, flat, name, sizeof name);
    char more[48] = "";
    if (used > 1)
        snprintf(more, sizeof more, " (and %zu more)", used - 1);
    return qs_fail(c->err, QS_ERR_UNSUPPORTED, 0,
                   "catboost .cbm: %s features are not supported, only float features: the "
                   "model uses %s feature %s%s, through %s", kind, kind, name, more, how);
}

/* How the model uses its categorical features: one-hot splits, CTRs. */
static const char *cat_how(conv *c)
{
    fvec oh, ctr;
    if (get_vec(&c->f, c->trees, T_ONEHOT, 4, &oh) != 0 ||
        get_vec(&c->f, c->trees, T_CTR, 4, &ctr) != 0) {
        qs_error_clear(c->err);
        return "one-hot splits or CTRs";
    }
    return oh.len && ctr.len ? "one-hot splits and CTRs"
                             : oh.len ? "one-hot splits" : "CTRs (target statistics)";
}

static int read_features(conv *c)
{
    /* what the model uses besides float features */
    if (refuse_used(c, T_CAT, 3, "categorical", cat_how(c)) != 0 ||
        refuse_used(c, T_TEXT, 3, "text", "estimated features") != 0 ||
        refuse_used(c, T_EMBEDDING, 4, "embedding", "estimated features") != 0)
        return -1;
    static const struct { unsigned field; const char *what; } other[] = {
        { T_ONEHOT, "one-hot categorical splits (OneHotFeatures)" },
        { T_CTR, "CTR features (CtrFeatures)" },
        { T_ESTIMATED, "estimated text or embedding features (EstimatedFeatures)" },
    };
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        fvec v;
        if (get_vec(&c->f, c->trees, other[i].field, 4, &v) != 0)
            return -1;
        if (v.len)
            return qs_fail(c->err, QS_ERR_UNSUPPORTED, 0,
                           "catboost .cbm: the model has %zu %s: only float features are "
                           "supported", v.len, other[i].what);
    }

    fvec fv;
    if (get_vec(&c->f, c->trees, T_FLOAT, 4, &fv) != 0)
        return -1;
    c->nff = fv.len;
    c->ff = calloc(fv.len ? fv.len : 1, sizeof *c->ff);
    if (!c->ff)
        return nomem(c);
    /* the binary features: every border, at most (n - 4) / 4 of them */
    size_t nb = 0;
    for (size_t i = 0; i < fv.len; i++) {
        size_t t = vec_table(&c->f, &fv, i);
        fvec bv;
        if (t == (size_t)-1 || get_vec(&c->f, t, FF_BORDERS, 4, &bv) != 0)
            return -1;
        nb += bv.len;
    }
    c->bins = malloc((nb ? nb : 1) * sizeof *c->bins);
    if (!c->bins)
        return nomem(c);
    uint32_t *flats = malloc((fv.len ? fv.len : 1) * sizeof *flats);
    if (!flats)
        return nomem(c);
    int rc = -1;
    for (size_t i = 0; i < fv.len; i++) {
        size_t t = vec_table(&c->f, &fv, i);
        int32_t flat;
        unsigned has_nans, nan;
        fvec bv;
        if (t == (size_t)-1 || get_i32(&c->f, t, FF_FLAT, -1, &flat) != 0 ||
            get_u8(&c->f, t, FF_HASNANS, 0, &has_nans) != 0 ||
            get_u8(&c->f, t, FF_NAN, NAN_ASIS, &nan) != 0 ||
            get_vec(&c->f, t, FF_BORDERS, 4, &bv) != 0)
            goto out;
        if (flat < 0) {
            qs_fail(c->err, QS_ERR_FORMAT, 0,
                    "catboost .cbm: float feature %zu has no column (FlatIndex %d)", i, flat);
            goto out;
        }
        if ((uint32_t)flat >= QS_MAX_FEATURES - 1) {
            qs_fail(c->err, QS_ERR_LIMIT, 0,
                    "catboost .cbm: float feature %zu is column %d, beyond the limit of %u "
                    "features", i, flat, QS_MAX_FEATURES);
            goto out;
        }
        if (nan > NAN_ASTRUE) {
            qs_fail(c->err, QS_ERR_UNSUPPORTED, 0,
                    "catboost .cbm: float feature %zu: NanValueTreatment %u is not supported "
                    "(expected 0 AsIs, 1 AsFalse or 2 AsTrue)", i, nan);
            goto out;
        }
        for (size_t j = 0; j < i; j++)
            if (flats[j] == (uint32_t)flat) {
                qs_fail(c->err, QS_ERR_FORMAT, 0,
                        "catboost .cbm: float features %zu and %zu are both column %d", j, i,
                        flat);
                goto out;
            }
        flats[i] = (uint32_t)flat;
        c->ff[i].id = (uint32_t)flat + 1;
        c->ff[i].nan_inf = has_nans && nan != NAN_ASIS;
        c->ff[i].nan_right = has_nans && nan == NAN_ASTRUE;
        for (size_t j = 0; j < bv.len; j++) {
            uint32_t u = le32(c->f.b + bv.data + 4 * j);
            float b;
            memcpy(&b, &u, sizeof b);
            if (isnan(b)) {
                qs_fail(c->err, QS_ERR_FORMAT, 0,
                        "catboost .cbm: float feature %zu (column %d): border %zu is NaN", i,
                        flat, j);
                goto out;
            }
            if (j > 0 && !(c->bins[c->nbins - 1].border < b)) {
                qs_fail(c->err, QS_ERR_FORMAT, 0,
                        "catboost .cbm: float feature %zu (column %d): borders %zu and %zu "
                        "(%.9g, %.9g) are not in increasing order", i, flat, j - 1, j,
                        (double)c->bins[c->nbins - 1].border, (double)b);
                goto out;
            }
            c->bins[c->nbins].feat = (uint32_t)i;
            c->bins[c->nbins++].border = b;
        }
    }
    uint64_t nf = 0;
    for (size_t i = 0; i < fv.len; i++)
        if ((uint64_t)flats[i] + 2 > nf)
            nf = (uint64_t)flats[i] + 2;
    c->m->num_features = (uint32_t)nf;
    rc = 0;
out:
    free(flats);
    return rc;
}

/* A canonical split node for binary feature `bin`: left when !(x > border)
 * in float32; a NaN goes where CatBoost's substitute (+-inf, or NaN
 * itself, below every border) goes. */
static void set_split(const conv *c, qs_node *n, uint32_t bin, int32_t left, int32_t right)
{
    const cbin *b = &c->bins[bin];
    const cfeat *f = &c->ff[b->feat];
    n->kind = QS_NODE_NUM;
    n->feature = f->id;
    n->value = (double)b->border;
    n->miss = QS_MISS_NAN;
    n->default_left = f->nan_right ? !((float)INFINITY > b->border) : 1;
    n->left = left;
    n->right = right;
}

static int check_split(conv *c, size_t t, size_t i, int32_t s)
{
    if (s < 0 || (size_t)s >= c->nbins)
        return qs_fail(c->err, QS_ERR_FORMAT, 0,
                       "catboost .cbm: tree %zu: split %zu is binary feature %d, but the model "
                       "has %zu (the borders of its float features)", t, i, s, c->nbins);
    return 0;
}

static int oblivious_tree(conv *c, size_t t, size_t start, size_t d, size_t *loff)
{
    const uint32_t K = c->K;
    const size_t leaves = (size_t)1 << d;
    if (c->leaves.len - *loff < leaves * K)
        return qs_fail(c->err, QS_ERR_FORMAT, 0,
                       "catboost .cbm: tree %zu needs %zu leaf values, %zu are left", t,
                       leaves * K, c->leaves.len - *loff);
    for (size_t i = 0; i < d; i++)
        if (check_split(c, t, i, vec_i32(c, &c->splits, start + i)) != 0)
            return -1;
    for (uint32_t cl = 0; cl < K; cl++) {
        if (qs_model_add_tree(c->m, cl, 1.0, c->err) != 0 ||
            qs_model_add_nodes(c->m, (uint32_t)(2 * leaves - 1), c->err) < 0)
            return -1;
        /* heap order: node i has children 2i+1, 2i+2; level L tests split
         * d-1-L; leaf p (left to right) is node leaves-1+p */
        for (size_t lev = 0; lev < d; lev++) {
            uint32_t bin = (uint32_t)vec_i32(c, &c->splits, start + d - 1 - lev);
            for (size_t i = ((size_t)1 << lev) - 1; i < ((size_t)2 << lev) - 1; i++)
                set_split(c, qs_model_cur_node(c->m, (uint32_t)i), bin, (int32_t)(2 * i + 1),
                          (int32_t)(2 * i + 2));
        }
        for (size_t p = 0; p < leaves; p++) {
            qs_node *n = qs_model_cur_node(c->m, (uint32_t)(leaves - 1 + p));
            n->kind = QS_NODE_LEAF;
            n->value = leaf_value(c, *loff + p * K + cl);
        }
    }
    *loff += leaves * K;
    return 0;
}

static int push(conv *c, size_t *sp, size_t item)
{
    if (qs_vec_reserve((void **)&c->stack, &c->capstack, *sp, sizeof *c->stack) != 0)
        return nomem(c);
    c->stack[(*sp)++] = item;
    return 0;
}

/* A non-symmetric tree: its step nodes [start, start + size) into the
 * canonical preorder c->cn, then one canonical tree per output.  Stack
 * items: 2 * node (the subtree at a step node) or 2 * node + 1 (the leaf
 * values of a step node); the parent's canonical index and side are kept in
 * a second slot. */
static int nonsym_tree(conv *c, size_t t, size_t start, size_t size, size_t *loff)
{
    const uint32_t K = c->K;
    if (size == 0)
        return qs_fail(c->err, QS_ERR_FORMAT, 0, "catboost .cbm: tree %zu has no nodes", t);
    if (qs_vec_reserve((void **)&c->seen, &c->capseen, size, 1) != 0)
        return nomem(c);
    memset(c->seen, 0, size);
    c->ncn = 0;
    size_t sp = 0, values = 0;
    /* item: (what << 32 is not portable for size_t on 32-bit; two slots) */
    if (push(c, &sp, 0) != 0 || push(c, &sp, (size_t)-1) != 0)
        return -1;
    while (sp > 0) {
        const size_t parent = c->stack[--sp];
        const size_t item = c->stack[--sp];
        const size_t i = item >> 1;   /* within the tree */
        const size_t g = start + i;
        if (qs_vec_reserve((void **)&c->cn, &c->capcn, c->ncn, sizeof *c->cn) != 0)
            return nomem(c);
        if (c->ncn >= QS_MAX_TREE_NODES)
            return qs_fail(c->err, QS_ERR_LIMIT, 0,
                           "catboost .cbm: tree %zu has more than %u nodes", t,
                           QS_MAX_TREE_NODES);
        const size_t self = c->ncn++;
        if (parent != (size_t)-1) {
            cnode *p = &c->cn[parent >> 1];
            if (parent & 1)
                p->right = (int32_t)self;
            else
                p->left = (int32_t)self;
        }
        cnode *n = &c->cn[self];
        memset(n, 0, sizeof *n);
        const unsigned char *st = c->f.b + c->steps.data + 4 * g;
        const unsigned ld = (unsigned)st[0] | (unsigned)st[1] << 8;
        const unsigned rd = (unsigned)st[2] | (unsigned)st[3] << 8;
        if (!(item & 1)) {
            if (c->seen[i])
                return qs_fail(c->err, QS_ERR_FORMAT, 0,
                               "catboost .cbm: tree %zu: node %zu is reached twice (not a tree)",
                               t, i);
            c->seen[i] = 1;
        }
        if ((item & 1) || (ld == 0 && rd == 0)) {
            /* the leaf values of node i */
            uint32_t id = le32(c->f.b + c->leafids.data + 4 * g);
            n->leaf = 1;
            n->leaf_off = id;
            values++;
            if (id % K != 0 || id < *loff || (id - *loff) / K >= size ||
                c->leaves.len < K || id > c->leaves.len - K)
                return qs_fail(c->err, QS_ERR_FORMAT, 0,
                               "catboost .cbm: tree %zu: node %zu's leaf values start at %u, "
                               "expected one of the tree's own (from %zu, %u a leaf, %zu in "
                               "all)", t, i, id, *loff, K, c->leaves.len);
            continue;
        }
        const int32_t s = vec_i32(c, &c->splits, g);
        if (check_split(c, t, i, s) != 0)
            return -1;
        if ((ld && ld >= size - i) || (rd && rd >= size - i))
            return qs_fail(c->err, QS_ERR_FORMAT, 0,
                           "catboost .cbm: tree %zu: node %zu steps past the tree's %zu nodes",
                           t, i, size);
        n->bin = (uint32_t)s;
        /* right first, so that the left subtree comes next (preorder) */
        if (push(c, &sp, rd ? 2 * (i + rd) : 2 * i + 1) != 0 || push(c, &sp, 2 * self + 1) != 0 ||
            push(c, &sp, ld ? 2 * (i + ld) : 2 * i + 1) != 0 || push(c, &sp, 2 * self) != 0)
            return -1;
    }
    for (size_t i = 0; i < size; i++)
        if (!c->seen[i])
            return qs_fail(c->err, QS_ERR_FORMAT, 0,
                           "catboost .cbm: tree %zu: node %zu is not reached from the root", t,
                           i);
    /* the tree's leaves take the next `values` leaf slots, each once */
    if (values > (c->leaves.len - *loff) / K)
        return qs_fail(c->err, QS_ERR_FORMAT, 0,
                       "catboost .cbm: tree %zu has %zu leaves, %zu leaf values are left", t,
                       values, c->leaves.len - *loff);
    if (qs_vec_reserve((void **)&c->seen, &c->capseen, values, 1) != 0)
        return nomem(c);
    memset(c->seen, 0, values);
    for (size_t j = 0; j < c->ncn; j++) {
        if (!c->cn[j].leaf)
            continue;
        size_t slot = (c->cn[j].leaf_off - *loff) / K;
        if (slot >= values || c->seen[slot])
            return qs_fail(c->err, QS_ERR_FORMAT, 0,
                           "catboost .cbm: tree %zu: its leaves do not take the next %zu leaf "
                           "values once each", t, values * K);
        c->seen[slot] = 1;
    }
    for (uint32_t cl = 0; cl < K; cl++) {
        if (qs_model_add_tree(c->m, cl, 1.0, c->err) != 0 ||
            qs_model_add_nodes(c->m, (uint32_t)c->ncn, c->err) < 0)
            return -1;
        for (size_t j = 0; j < c->ncn; j++) {
            const cnode *cn = &c->cn[j];
            qs_node *n = qs_model_cur_node(c->m, (uint32_t)j);
            if (cn->leaf) {
                n->kind = QS_NODE_LEAF;
                n->value = leaf_value(c, cn->leaf_off + cl);
            } else {
                set_split(c, n, cn->bin, cn->left, cn->right);
            }
        }
    }
    *loff += values * K;
    return 0;
}

static int read_trees(conv *c)
{
    const fbuf *f = &c->f;
    if (get_vec(f, c->trees, T_SPLITS, 4, &c->splits) != 0 ||
        get_vec(f, c->trees, T_SIZES, 4, &c->sizes) != 0 ||
        get_vec(f, c->trees, T_STARTS, 4, &c->starts) != 0 ||
        get_vec(f, c->trees, T_LEAVES, 8, &c->leaves) != 0 ||
        get_vec(f, c->trees, T_WEIGHTS, 8, &c->weights) != 0 ||
        get_vec(f, c->trees, T_STEPS, 4, &c->steps) != 0 ||
        get_vec(f, c->trees, T_LEAFIDS, 4, &c->leafids) != 0)
        return -1;
    const size_t nt = c->sizes.len;
    const int nonsym = c->steps.len > 0;
    if ((uint64_t)nt * c->K > QS_MAX_TREES)
        return qs_fail(c->err, QS_ERR_LIMIT, 0,
                       "catboost .cbm: %zu trees of %u outputs: more than %u trees", nt, c->K,
                       QS_MAX_TREES);
    if (c->starts.len != nt && !(c->starts.len == 0 && nt == 0))
        return qs_fail(c->err, QS_ERR_FORMAT, 0,
                       "catboost .cbm: %zu tree sizes but %zu tree start offsets", nt,
                       c->starts.len);
    if (nonsym && (c->steps.len != c->splits.len || c->leafids.len != c->splits.len))
        return qs_fail(c->err, QS_ERR_FORMAT, 0,
                       "catboost .cbm: %zu tree splits, %zu step nodes and %zu leaf ids "
                       "(one each per node)", c->splits.len, c->steps.len, c->leafids.len);
    if (!nonsym && c->leafids.len)
        return qs_fail(c->err, QS_ERR_FORMAT, 0,
                       "catboost .cbm: leaf ids without the step nodes of non-symmetric trees");
    size_t at = 0, loff = 0, nleaves = 0;
    for (size_t t = 0; t < nt; t++) {
        const int32_t size = vec_i32(c, &c->sizes, t), st = vec_i32(c, &c->starts, t);
        if (size < 0 || st < 0 || (size_t)st != at || (size_t)size > c->splits.len - at)
            return qs_fail(c->err, QS_ERR_FORMAT, 0,
                           "catboost .cbm: tree %zu: size %d from %d, expected the next of "
                           "the %zu splits from %zu", t, size, st, c->splits.len, at);
        if (!nonsym && (size_t)size > CBM_MAX_DEPTH)
            return qs_fail(c->err, QS_ERR_LIMIT, 0,
                           "catboost .cbm: tree %zu has depth %d (limit %u)", t, size,
                           CBM_MAX_DEPTH);
        const size_t before = loff;
        if (nonsym ? nonsym_tree(c, t, at, (size_t)size, &loff)
                   : oblivious_tree(c, t, at, (size_t)size, &loff))
            return -1;
        nleaves += (loff - before) / c->K;
        at += (size_t)size;
    }
    if (at != c->splits.len)
        return qs_fail(c->err, QS_ERR_FORMAT, 0,
                       "catboost .cbm: the trees take %zu of the %zu splits", at, c->splits.len);
    if (loff != c->leaves.len)
        return qs_fail(c->err, QS_ERR_FORMAT, 0,
                       "catboost .cbm: the trees take %zu of the %zu leaf values", loff,
                       c->leaves.len);
    if (c->weights.len != 0 && c->weights.len != nleaves)
        return qs_fail(c->err, QS_ERR_FORMAT, 0,
                       "catboost .cbm: %zu leaf weights for %zu leaves", c->weights.len,
                       nleaves);
    return 0;
}

/* The loss function's name from a JSON text: `obj` is {"loss_function":
 * {"type": NAME, ...}, ...} (params), or `obj` is {"type": NAME} itself. */
static int loss_from_json(conv *c, const char *s, size_t n, int nested)
{
    qs_json_reader r;
    qs_json_token t, k;
    qs_error e;
    qs_json_init(&r, s, n, 0, QS_JSON_NONFINITE);
    if (qs_json_next(&r, &t, &e) != 0 || t.type != QS_JSON_OBJECT)
        return 0;
    if (nested) {
        for (;;) {
            if (qs_json_next(&r, &k, &e) != 0 || k.type != QS_JSON_KEY)
                return 0;
            if (qs_json_str_eq(&k, "loss_function")) {
                if (qs_json_next(&r, &t, &e) != 0 || t.type != QS_JSON_OBJECT)
                    return 0;
                break;
            }
            if (qs_json_skip(&r, &k, &e) != 0)
                return 0;
        }
    }
    for (;;) {
        if (qs_json_next(&r, &k, &e) != 0 || k.type != QS_JSON_KEY)
            return 0;
        if (qs_json_str_eq(&k, "type")) {
            if (qs_json_next(&r, &t, &e) != 0 || t.type != QS_JSON_STRING ||
                qs_json_str_decode(&t, c->loss, sizeof c->loss) < 0)
                return 0;
            c->has_loss = 1;
            return 1;
        }
        if (qs_json_skip(&r, &k, &e) != 0)
            return 0;
    }
}

/* InfoMap (TKeyValue: Key 0, Value 1): the loss function, from "params"
 * (which CatBoost prefers) or "loss_function". */
static int read_info(conv *c, size_t core)
{
    fvec v;
    if (get_vec(&c->f, core, CORE_INFO, 4, &v) != 0)
        return -1;
    const char *lf = NULL;
    size_t lfn = 0;
    for (size_t i = 0; i < v.len; i++) {
        size_t t = vec_table(&c->f, &v, i);
        const char *k, *s;
        size_t kn, sn;
        if (t == (size_t)-1 || get_str(&c->f, t, 0, &k, &kn) != 0 ||
            get_str(&c->f, t, 1, &s, &sn) != 0)
            return -1;
        if (!k || !s)
            return bad(&c->f, t, "an InfoMap entry without its key or value");
        if (kn == 6 && memcmp(k, "params", 6) == 0 && loss_from_json(c, s, sn, 1))
            return 0;
        if (kn == 13 && memcmp(k, "loss_function", 13) == 0) {
            lf = s;
            lfn = sn;
        }
    }
    if (lf)
        loss_from_json(c, lf, lfn, 0);
    return 0;
}

/* The header: "CBM1", the core's size; the core's offset and size. */
static int header(const char *buf, size_t len, size_t *off, size_t *size, qs_error *err)
{
    const unsigned char *b = (const unsigned char *)buf;
    if (len < 8 || memcmp(b, "CBM1", 4) != 0)
        return qs_fail(err, QS_ERR_FORMAT, 0,
                       "not a catboost .cbm model: it should start with \"CBM1\" and the size "
                       "of its core");
    uint64_t n = le32(b + 4);
    *off = 8;
    if (n == 0xFFFFFFFFu) {
        if (len < 16)
            return qs_fail_at(err, QS_ERR_FORMAT, 8,
                              "catboost .cbm: the core's 64-bit size is cut short");
        n = le64(b + 8);
        *off = 16;
    }
    if (n > len - *off)
        return qs_fail_at(err, QS_ERR_FORMAT, 4,
                          "catboost .cbm: the core's size %llu runs past the end of the "
                          "%zu-byte file", (unsigned long long)n, len);
    if (n < 8)
        return qs_fail_at(err, QS_ERR_FORMAT, 4,
                          "catboost .cbm: the core's size %llu is too small",
                          (unsigned long long)n);
    *size = (size_t)n;
    return 0;
}

qs_model *qs_read_catboost_cbm(const char *buf, size_t len, qs_error *err)
{
    if (!buf && len) {
        qs_fail(err, QS_ERR_ARG, 0, "no input buffer");
        return NULL;
    }
    size_t off, size;
    if (header(buf, len, &off, &size, err) != 0)
        return NULL;
    conv c;
    memset(&c, 0, sizeof c);
    c.err = err;
    c.f.b = (const unsigned char *)buf + off;
    c.f.n = size;
    c.f.err = err;
    c.f.base = off;
    c.m = qs_model_new(QS_SRC_CATBOOST, err);
    if (!c.m)
        return NULL;
    int rc = -1;
    const fbuf *f = &c.f;
    size_t core = deref(f, 0);
    if (core == (size_t)-1)
        goto done;
    const char *s;
    size_t n;
    if (get_str(f, core, CORE_FORMAT, &s, &n) != 0)
        goto done;
    if (!s) {
        qs_fail(err, QS_ERR_FORMAT, 0,
                "catboost .cbm: the core has no format version (expected \"%s\")",
                CBM_CORE_FORMAT);
        goto done;
    }
    if (n != sizeof CBM_CORE_FORMAT - 1 || memcmp(s, CBM_CORE_FORMAT, n) != 0) {
        char q[64];
        qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                "catboost .cbm: core format \"%s\" is not supported (expected \"%s\")",
                qs_quote(q, sizeof q, s, n), CBM_CORE_FORMAT);
        goto done;
    }
    size_t p = field(f, core, CORE_TREES, 4);
    if (p == (size_t)-1)
        goto done;
    if (p == 0) {
        qs_fail(err, QS_ERR_FORMAT, 0, "catboost .cbm: the model has no trees (ModelTrees)");
        goto done;
    }
    if ((c.trees = deref(f, p)) == (size_t)-1)
        goto done;
    int32_t dim;
    double scale, bias;
    fvec mb;
    if (get_i32(f, c.trees, T_DIM, 0, &dim) != 0 || get_f64(f, c.trees, T_SCALE, 1.0, &scale) ||
        get_f64(f, c.trees, T_BIAS, 0.0, &bias) != 0 ||
        get_vec(f, c.trees, T_MULTIBIAS, 8, &mb) != 0)
        goto done;
    if (dim < 1 || (uint32_t)dim > QS_MAX_CLASSES) {
        qs_fail(err, QS_ERR_FORMAT, 0,
                "catboost .cbm: ApproxDimension %d is out of range (1..%u outputs)", dim,
                QS_MAX_CLASSES);
        goto done;
    }
    c.K = (uint32_t)dim;
    if (qs_model_set_classes(c.m, c.K, err) != 0)
        goto done;
    if (mb.len != 0 && mb.len != c.K) {
        qs_fail(err, QS_ERR_FORMAT, 0, "catboost .cbm: %zu biases (MultiBias) for %u outputs",
                mb.len, c.K);
        goto done;
    }
    if (mb.len == 0 && c.K > 1 && bias != 0.0) {
        qs_fail(err, QS_ERR_FORMAT, 0,
                "catboost .cbm: one bias %.17g for %u outputs (CatBoost requires MultiBias)",
                bias, c.K);
        goto done;
    }
    c.m->out_affine = 1;
    c.m->out_scale = scale;
    for (uint32_t j = 0; j < c.K; j++) {
        if (mb.len) {
            uint64_t u = le64(f->b + mb.data + 8 * j);
            memcpy(&c.m->out_bias[j], &u, sizeof u);
        } else {
            c.m->out_bias[j] = bias;
        }
        if (!isfinite(c.m->out_bias[j])) {
            qs_fail(err, QS_ERR_FORMAT, 0, "catboost .cbm: bias %u is not finite", j);
            goto done;
        }
    }
    if (!isfinite(scale)) {
        qs_fail(err, QS_ERR_FORMAT, 0, "catboost .cbm: the scale is not finite");
        goto done;
    }
    if (read_features(&c) != 0)
        goto done;
    /* model parts after the core: CTR tables, text or embedding processing */
    fvec parts;
    if (get_vec(f, core, CORE_PARTS, 4, &parts) != 0)
        goto done;
    if (parts.len) {
        size_t t = deref(f, parts.data);
        char q[64] = "";
        if (t != (size_t)-1 && le32(f->b + t) < f->n - t - 4)
            qs_quote(q, sizeof q, (const char *)f->b + t + 4, le32(f->b + t));
        qs_error_clear(err);
        qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                "catboost .cbm: the model has %zu model part%s (\"%s\": CTR tables, text or "
                "embedding processing): only float features are supported", parts.len,
                parts.len == 1 ? "" : "s", q);
        goto done;
    }
    if (off + size != len) {
        qs_fail_at(err, QS_ERR_FORMAT, (long long)(off + size),
                   "catboost .cbm: %zu bytes after the model", len - off - size);
        goto done;
    }
    if (read_trees(&c) != 0 || read_info(&c, core) != 0)
        goto done;
    c.m->cmp = QS_CMP_LE;
    c.m->float_precision = 1;
    c.m->float_accumulate = QS_ACC_DOUBLE;
    c.m->absent_missing = 0;
    snprintf(c.m->objective, sizeof c.m->objective, "%s", c.has_loss ? c.loss : "");
    snprintf(c.m->transform, sizeof c.m->transform, "%s",
             qs_catboost_loss_transform(c.has_loss ? c.loss : NULL));
    rc = qs_model_validate(c.m, err);
done:
    free(c.ff);
    free(c.bins);
    free(c.cn);
    free(c.stack);
    free(c.seen);
    if (rc != 0) {
        qs_model_free(c.m);
        return NULL;
    }
    return c.m;
}

/* The version of CatBoost that wrote the model: InfoMap
 * "catboost_version_info" holds "Branch: tags/v1.2.10". */
int qs_version_catboost_cbm(const char *buf, size_t len, char *out, size_t cap)
{
    size_t off, size;
    qs_error e;
    if (header(buf, len, &off, &size, &e) != 0)
        return -1;
    fbuf f = { (const unsigned char *)buf + off, size, &e, off };
    size_t core = deref(&f, 0);
    fvec v;
    if (core == (size_t)-1 || get_vec(&f, core, CORE_INFO, 4, &v) != 0)
        return -1;
    for (size_t i = 0; i < v.len; i++) {
        size_t t = vec_table(&f, &v, i);
        const char *k, *s;
        size_t kn, sn;
        if (t == (size_t)-1 || get_str(&f, t, 0, &k, &kn) != 0 || get_str(&f, t, 1, &s, &sn) != 0)
            return -1;
        if (!k || !s || kn != 21 || memcmp(k, "catboost_version_info", 21) != 0)
            continue;
        static const char tag[] = "tags/v";
        for (size_t j = 0; j + sizeof tag - 1 < sn; j++) {
            if (memcmp(s + j, tag, sizeof tag - 1) != 0)
                continue;
            size_t a = j + sizeof tag - 1, q = 0;
            while (a + q < sn && q < 16 && ((s[a + q] >= '0' && s[a + q] <= '9') || s[a + q] == '.'))
                q++;
            if (q == 0 || q >= cap)
                return -1;
            memcpy(out, s + a, q);
            out[q] = '\0';
            return 0;
        }
        return -1;
    }
    return -1;
}
