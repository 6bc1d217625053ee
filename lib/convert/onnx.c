/* onnx.c: converts an ONNX model holding one ai.onnx.ml tree ensemble
 * (TreeEnsembleRegressor and TreeEnsembleClassifier of opsets 1 and 3,
 * TreeEnsemble of opset 5) into the canonical ensemble, reproducing ONNX
 * Runtime's output of that node bit for bit.  The protobuf is parsed by
 * protobuf-c, with the parser protoc-c generates from onnx.proto (the part of
 * ONNX's onnx.proto read here).
 *
 * Facts this file relies on, from ONNX Runtime's CPU kernels
 * (onnxruntime/core/providers/cpu/ml/tree_ensemble_common.h,
 * tree_ensemble_aggregator.h, tree_ensemble_attribute.h, ml_common.h):
 *  - For a float input tensor, thresholds and leaf weights are float32 and
 *    each row's score is summed in float32 from 0, tree by tree in the order
 *    of the trees' first nodes; base values are added once at the end, in
 *    float32.  TreeEnsembleRegressor of opsets 1/3 with a double input sums
 *    in double (the float32 thresholds, weights and base values widened)
 *    and writes float32(sum + base).  (With several threads and more than 50 rows ONNX Runtime sums
 *    per-thread partial sums instead; qs reproduces the single-thread order,
 *    which is also what every batch of at most 50 rows gets.)
 *  - A node sends x to its true child iff `x MODE threshold` holds, or x is
 *    NaN and nodes_missing_value_tracks_true is 1; NaN compares false except
 *    under BRANCH_NEQ, where it is always true.
 *  - Opsets 1/3: a tree is a run of nodes with one nodes_treeids value, its
 *    root the run's first node; children are found by (tree id, node id); a
 *    leaf adds its weights (the target_ or class_ arrays, sorted by tree and node)
 *    to their targets; with one target only its first weight.  One target:
 *    + base_values[0] when base_values has one value; N targets: + base_values
 *    when it has N, but a target no reached leaf adds to is written 0
 *    (checked against ONNX Runtime 1.32: such models are refused unless the
 *    target is reached by every path of some tree, or by none).
 *  - TreeEnsembleClassifier: a class without a weight in the leaves reached
 *    keeps the base value alone; two classes with weights for one class only
 *    ("binary case") write [1 - s, s] or [-s, s]: qs gives the one column s.
 *  - Opset 5: nodes and leaves in separate arrays (nodes_trueleafs says
 *    which), BRANCH_MEMBER unrolled into a chain of BRANCH_EQ nodes (its
 *    values are membership_values, sets separated by NaN); tree_roots name
 *    nodes (older ONNX Runtime releases took a root whose two child ids are
 *    equal for the leaf of that id; 1.32 does not, and neither does qs); no
 *    base values; the output has the input's type (double in, double sums
 *    out).
 *  - post_transform (LOGISTIC, SOFTMAX, SOFTMAX_ZERO, PROBIT) is computed with
 *    float32 library calls (std::exp, and MLAS kernels for batches): not
 *    reproducible bit for bit, so the canonical transform is "unsupported"
 *    (--transform refused) and the raw scores are the output with NONE.
 *
 * In the canonical model every node goes left (true) iff x <= t: x < t is
 * x <= the float32 (or double) just below t, GTE and GT swap the children,
 * and EQ / NEQ become two nodes with a copy of one subtree.  Shared subtrees
 * are unfolded into copies; cycles are refused. */
#include "convert/convert.h"
#include "convert/onnx.pb-c.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ limits */

/* Unfolding copies subtrees (set tests, shared subtrees): a canonical tree
 * holds at most QS_MAX_TREE_NODES nodes, and the model at most NODES_PER_BYTE
 * nodes per byte of input (plus 2^20), and never more than QS_ONNX_MAX_NODES,
 * so a small file cannot unfold into gigabytes. */
#define NODES_PER_BYTE 64u
#define QS_ONNX_MAX_NODES (1ull << 25)

/* ------------------------------------------------------ parse budget */

/* protobuf-c allocates as it parses; the total is bounded by a multiple of
 * the input's size whatever the message claims. */
/* What protobuf-c allocates while parsing, its parse tree held whole, is
 * charged to a budget of ONNX_PARSE_RATIO times the file's size plus
 * ONNX_PARSE_BASE bytes.  Each allocation costs its size plus
 * ONNX_PARSE_CHUNK (malloc's header and rounding), so many tiny elements
 * are charged what they cost: an empty attribute is 2 bytes of file and a
 * message struct in memory (5,000,000 of them, 10 MB, took 1 GB before the
 * budget counted them).  A real tree ensemble needs about 4 to 9 times its
 * size (its repeated numbers and mode strings). */
#define ONNX_PARSE_RATIO 16u
#define ONNX_PARSE_BASE ((size_t)16 << 20)
#define ONNX_PARSE_CHUNK 32u
typedef struct budget {
    size_t used, limit, peak;
    int over, oom;
} budget;

static void *budget_alloc(void *ud, size_t size)
{
    budget *b = ud;
    if (size > b->limit || size + ONNX_PARSE_CHUNK > b->limit - b->used) {
        b->over = 1;
        return NULL;
    }
    void *p = malloc(size);
    if (!p) {
        b->oom = 1;
        return NULL;
    }
    b->used += size + ONNX_PARSE_CHUNK;
    return p;
}

static void budget_free(void *ud, void *p)
{
    (void)ud;
    free(p);
}

/* ------------------------------------------------------------ nodes */

enum {
    M_LEQ = 0, M_LT = 1, M_GTE = 2, M_GT = 3, M_EQ = 4, M_NEQ = 5, M_MEMBER = 6, M_LEAF = 7
};
static const char *const mode_names[] = { "BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT",
                                          "BRANCH_EQ", "BRANCH_NEQ", "BRANCH_MEMBER", "LEAF" };

typedef struct onode {
    uint8_t mode;
    uint8_t track;         /* missing value tracks true */
    uint8_t color;         /* cycle check: 0 new, 1 on the path, 2 done */
    uint32_t feature;
    double thr;
    size_t t, f;           /* children (indices into nodes) */
    size_t w0, nw;         /* leaves: weights[w0 .. w0 + nw) */
    size_t m0, nm;         /* BRANCH_MEMBER: members[m0 .. m0 + nm) */
} onode;

typedef struct oweight {
    uint32_t target;
    double value;
} oweight;

/* Unfolding work: an ONNX node to emit, or (range) a part of a set test:
 * intervals lo .. hi of the 2n + 1 that the n sorted values cut the line
 * into (even: between values, odd: a value). */
typedef struct task {
    size_t o;              /* ONNX node (range: the subtree of a leaf interval is chosen below) */
    int32_t parent;        /* canonical node to patch, -1: the root */
    int side;              /* 0: parent's left, 1: its right */
    int range;             /* 1: a set test's intervals */
    int neq;               /* range: members go to fchild, the others to tchild */
    size_t lo, hi, nan_iv; /* range: intervals, and the one NaN goes to */
    size_t soff, sn;       /* range: the sorted values, setvals[soff .. soff + sn) */
    size_t tchild, fchild; /* range: the true and false subtrees */
} task;

typedef struct frame {
    size_t o;
    int next;              /* children visited: 0, 1, 2 */
} frame;

typedef struct conv {
    qs_error *err;
    qs_model *m;
    const Onnx__NodeProto *node;
    const char *op;
    int v5;                /* TreeEnsemble (opset 5) */
    int classifier;
    int dbl;               /* double input: double thresholds and sums */
    int average;           /* aggregate_function AVERAGE: sums divided by the tree count */

    onode *nodes;
    size_t nn;
    oweight *w;
    size_t nw;
    double *members;
    size_t nmem;
    size_t *roots;
    size_t nroots;

    uint32_t K;            /* output columns */
    int binary_col;        /* classifier, binary case: the one class with weights, else -1 */
    double *bias;          /* [K] base values added at the end, NULL: none */

    double *setvals;       /* set tests' values while unfolding a tree */
    size_t nsetvals, setvals_cap;
    size_t *dfs;
    frame *frames;
    size_t dfs_cap;
    task *tasks;
    size_t ntasks, tasks_cap;
    uint8_t *used;         /* targets present in a tree */
    uint64_t node_budget;  /* canonical nodes the model may have */
    uint32_t *lcount;      /* per target: the reached leaves of a tree adding to it */
    uint8_t *ever, *always;
} conv;

static int nomem(conv *c)
{
    return qs_fail(c->err, QS_ERR_NOMEM, 0, "out of memory");
}

static const char *str(const char *s)
{
    return s ? s : "";
}

/* ------------------------------------------------------------ attributes */

static const Onnx__AttributeProto *attr(conv *c, const char *name)
{
    for (size_t i = 0; i < c->node->n_attribute; i++) {
        const Onnx__AttributeProto *a = c->node->attribute[i];
        if (a && strcmp(str(a->name), name) == 0)
            return a;
    }
    return NULL;
}

/* Attribute `name` must have type `type` when present. */
static const Onnx__AttributeProto *typed(conv *c, const char *name, int type, const char *tname,
                                         int *bad)
{
    const Onnx__AttributeProto *a = attr(c, name);
    *bad = 0;
    if (a && (!a->has_type || (int)a->type != type)) {
        *bad = 1;
        qs_fail(c->err, QS_ERR_FORMAT, 0, "%s: attribute %s should be %s", c->op, name, tname);
        return NULL;
    }
    return a;
}

static int get_ints(conv *c, const char *name, const int64_t **v, size_t *n)
{
    int bad;
    const Onnx__AttributeProto *a = typed(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS,
                                          "a list of integers", &bad);
    *v = a ? a->ints : NULL;
    *n = a ? a->n_ints : 0;
    return bad ? -1 : 0;
}

static int get_floats(conv *c, const char *name, const float **v, size_t *n)
{
    int bad;
    const Onnx__AttributeProto *a = typed(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS,
                                          "a list of floats", &bad);
    *v = a ? a->floats : NULL;
    *n = a ? a->n_floats : 0;
    return bad ? -1 : 0;
}

static int get_int(conv *c, const char *name, int64_t def, int64_t *out)
{
    int bad;
    const Onnx__AttributeProto *a = typed(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT,
                                          "an integer", &bad);
    *out = a ? a->i : def;
    return bad ? -1 : 0;
}

static int get_string(conv *c, const char *name, const char *def, char *out, size_t cap)
{
    int bad;
    const Onnx__AttributeProto *a = typed(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING,
                                          "a string", &bad);
    if (bad)
        return -1;
    if (!a) {
        snprintf(out, cap, "%s", def);
        return 0;
    }
    size_t n = a->has_s ? a->s.len : 0;
    if (n >= cap || (n && memchr(a->s.data, 0, n)))
        return qs_fail(c->err, QS_ERR_FORMAT, 0, "%s: attribute %s is not a known value", c->op,
                       name);
    if (n)
        memcpy(out, a->s.data, n);
    out[n] = 0;
    return 0;
}

enum { T_FLOAT = 1, T_UINT8 = 2, T_INT32 = 6, T_DOUBLE = 11 };

static double rd_le(const uint8_t *p, int bytes)
{
    uint64_t u = 0;
    for (int i = bytes - 1; i >= 0; i--)
        u = (u << 8) | p[i];
    if (bytes == 4) {
        uint32_t u32 = (uint32_t)u;
        float f;
        memcpy(&f, &u32, 4);
        return f;
    }
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* A tensor attribute's values as doubles (float32 values for a float tensor);
 * *type receives its element type (0 when absent).  *out is malloc'ed. */
static int get_tensor(conv *c, const char *name, double **out, size_t *n, int *type)
{
    int bad;
    const Onnx__AttributeProto *a = typed(c, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR,
                                          "a tensor", &bad);
    *out = NULL;
    *n = 0;
    *type = 0;
    if (bad)
        return -1;
    if (!a)
        return 0;
    const Onnx__TensorProto *t = a->t;
    if (!t)
        return qs_fail(c->err, QS_ERR_FORMAT, 0, "%s: attribute %s holds no tensor", c->op, name);
    if (t->has_data_location && t->data_location != 0)
        return qs_fail(c->err, QS_ERR_UNSUPPORTED, 0,
                       "%s: attribute %s keeps its data in an external file: not supported",
                       c->op, name);
    int dt = t->has_data_type ? t->data_type : 0;
    int bytes = dt == T_FLOAT ? 4 : dt == T_DOUBLE ? 8 : dt == T_UINT8 ? 1 : 0;
    if (!bytes)
        return qs_fail(c->err, QS_ERR_UNSUPPORTED, 0,
                       "%s: attribute %s has element type %d (expected float, double or uint8)",
                       c->op, name, dt);
    size_t cnt;
    if (t->has_raw_data) {
        if (t->raw_data.len % (size_t)bytes)
            return qs_fail(c->err, QS_ERR_FORMAT, 0,
                           "%s: attribute %s: raw data of %zu bytes is not whole elements", c->op,
                           name, t->raw_data.len);
        cnt = t->raw_data.len / (size_t)bytes;
    } else {
        cnt = dt == T_FLOAT ? t->n_float_data : dt == T_DOUBLE ? t->n_double_data : t->n_int32_data;
    }
    /* the shape, when given, must hold exactly these elements */
    if (t->n_dims) {
        uint64_t prod = 1;
        for (size_t i = 0; i < t->n_dims; i++) {
            if (t->dims[i] < 0 || (t->dims[i] > 0 && prod > UINT64_MAX / (uint64_t)t->dims[i]))
                return qs_fail(c->err, QS_ERR_FORMAT, 0, "%s: attribute %s has a bad shape",
                               c->op, name);
            prod *= (uint64_t)t->dims[i];
        }
        if (prod != cnt)
            return qs_fail(c->err, QS_ERR_FORMAT, 0,
                           "%s: attribute %s: shape says %llu elements, data holds %zu", c->op,
                           name, (unsigned long long)prod, cnt);
    }
    double *v = malloc((cnt ? cnt : 1) * sizeof *v);
    if (!v)
        return nomem(c);
    for (size_t i = 0; i < cnt; i++) {
        if (t->has_raw_data) {
            const uint8_t *p = t->raw_data.data + i * (size_t)bytes;
            v[i] = bytes == 1 ? (double)p[0] : rd_le(p, bytes);
        } else if (dt == T_FLOAT) {
            v[i] = t->float_data[i];
        } else if (dt == T_DOUBLE) {
            v[i] = t->double_data[i];
        } else {
            if (t->int32_data[i] < 0 || t->int32_data[i] > 255) {
                free(v);
                return qs_fail(c->err, QS_ERR_FORMAT, 0, "%s: attribute %s: %d is not a uint8",
                               c->op, name, (int)t->int32_data[i]);
            }
            v[i] = t->int32_data[i];
        }
    }
    *out = v;
    *n = cnt;
    *type = dt;
    return 0;
}

/* A float or double value array: from the float list `name`, or the tensor
 * `tname` (NULL: none).  Fills *out (malloc'ed), *n, *given. */
static int get_values(conv *c, const char *name, const char *tname, double **out, size_t *n,
                      int *given)
{
    const float *f;
    size_t nf;
    double *t = NULL;
    size_t nt = 0;
    int tt = 0;
    *out = NULL;
    *n = 0;
    *given = 0;
    if (name && get_floats(c, name, &f, &nf) != 0)
        return -1;
    if (!name)
        nf = 0, f = NULL;
    if (tname && get_tensor(c, tname, &t, &nt, &tt) != 0)
        return -1;
    int has_f = name && attr(c, name) != NULL, has_t = tname && attr(c, tname) != NULL;
    if (has_f && has_t) {
        free(t);
        return qs_fail(c->err, QS_ERR_FORMAT, 0, "%s: both %s and %s are given", c->op, name,
                       tname);
    }
    if (has_t) {
        if (tt != (c->dbl ? T_DOUBLE : T_FLOAT)) {
            free(t);
            return qs_fail(c->err, QS_ERR_FORMAT, 0,
                           "%s: %s is a %s tensor for a %s input: onnx runtime reads it as %s "
                           "only (and refuses the model)", c->op, tname,
                           tt == T_DOUBLE ? "double" : tt == T_FLOAT ? "float" : "uint8",
                           c->dbl ? "double" : "float", c->dbl ? "double" : "float");
        }
        *out = t;
        *n = nt;
        *given = 1;
        return 0;
    }
    if (has_f) {
        double *v = malloc((nf ? nf : 1) * sizeof *v);
        if (!v)
            return nomem(c);
        for (size_t i = 0; i < nf; i++)
            v[i] = f[i];
        *out = v;
        *n = nf;
        *given = 1;
    }
    return 0;
}

/* ------------------------------------------------------ opsets 1 and 3 */

typedef struct key {
    int64_t tree, node;
    size_t i;
} key;

static int key_cmp(const void *a, const void *b)
{
    const key *x = a, *y = b;
    if (x->tree != y->tree)
        return x->tree < y->tree ? -1 : 1;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static const key *find_key(const key *k, size_t n, int64_t tree, int64_t node)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k[mid].tree < tree || (k[mid].tree == tree && k[mid].node < node))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && k[lo].tree == tree && k[lo].node == node ? &k[lo] : NULL;
}

static int mode_from_name(const ProtobufCBinaryData *s)
{
    for (int i = 0; i < 8; i++)
        if (s->len == strlen(mode_names[i]) && memcmp(s->data, mode_names[i], s->len) == 0)
            return i == M_MEMBER ? -1 : i;
    return -1;
}

static int read_v3(conv *c)
{
    qs_error *err = c->err;
    const int64_t *treeids, *nodeids, *featids, *tids, *fids, *track, *wt, *wn, *wi;
    size_t ntree, nnode, nfeat, nt, nf, ntrack, nwt, nwn, nwi;
    const char *pfx = c->classifier ? "class" : "target";
    char wtn[32], wnn[32], win[32], wwn[32], wwt[48];
    snprintf(wtn, sizeof wtn, "%s_treeids", pfx);
    snprintf(wnn, sizeof wnn, "%s_nodeids", pfx);
    snprintf(win, sizeof win, "%s_ids", pfx);
    snprintf(wwn, sizeof wwn, "%s_weights", pfx);
    snprintf(wwt, sizeof wwt, "%s_weights_as_tensor", pfx);
    if (get_ints(c, "nodes_treeids", &treeids, &ntree) || get_ints(c, "nodes_nodeids", &nodeids, &nnode) ||
        get_ints(c, "nodes_featureids", &featids, &nfeat) ||
        get_ints(c, "nodes_truenodeids", &tids, &nt) || get_ints(c, "nodes_falsenodeids", &fids, &nf) ||
        get_ints(c, "nodes_missing_value_tracks_true", &track, &ntrack) ||
        get_ints(c, wtn, &wt, &nwt) || get_ints(c, wnn, &wn, &nwn) || get_ints(c, win, &wi, &nwi))
        return -1;
    const Onnx__AttributeProto *modes = attr(c, "nodes_modes");
    if (modes && (!modes->has_type || modes->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS))
        return qs_fail(err, QS_ERR_FORMAT, 0, "%s: nodes_modes should be a list of strings", c->op);
    size_t nmodes = modes ? modes->n_strings : 0;
    double *values = NULL, *weights = NULL;
    size_t nvalues, nweights;
    int gv, gw;
    if (get_values(c, "nodes_values", "nodes_values_as_tensor", &values, &nvalues, &gv) != 0)
        return -1;
    if (get_values(c, wwn, wwt, &weights, &nweights, &gw) != 0) {
        free(values);
        return -1;
    }
    int rc = -1;
    key *keys = NULL, *wkeys = NULL;
    size_t n = ntree;
    if (n == 0) {
        qs_fail(err, QS_ERR_FORMAT, 0, "%s: the ensemble has no nodes", c->op);
        goto out;
    }
    if (nnode != n || nfeat != n || nt != n || nf != n || nmodes != n || nvalues != n ||
        (ntrack != 0 && ntrack != n)) {
        qs_fail(err, QS_ERR_FORMAT, 0,
                "%s: the node arrays differ in length (treeids %zu, nodeids %zu, featureids %zu, "
                "modes %zu, values %zu, truenodeids %zu, falsenodeids %zu, "
                "missing_value_tracks_true %zu)", c->op, n, nnode, nfeat, nmodes, nvalues, nt, nf,
                ntrack);
        goto out;
    }
    if (nwn != nwt || nwi != nwt || nweights != nwt) {
        qs_fail(err, QS_ERR_FORMAT, 0, "%s: %s has %zu entries, %s %zu, %s %zu, weights %zu", c->op,
                wtn, nwt, wnn, nwn, win, nwi, nweights);
        goto out;
    }
    if (n > QS_ONNX_MAX_NODES || nwt > QS_ONNX_MAX_NODES) {
        qs_fail(err, QS_ERR_LIMIT, 0, "%s: more than %llu nodes or weights (limit)", c->op,
                (unsigned long long)QS_ONNX_MAX_NODES);
        goto out;
    }
    c->nodes = calloc(n, sizeof *c->nodes);
    keys = malloc(n * sizeof *keys);
    c->w = malloc((nwt ? nwt : 1) * sizeof *c->w);
    wkeys = malloc((nwt ? nwt : 1) * sizeof *wkeys);
    c->roots = malloc(n * sizeof *c->roots);
    if (!c->nodes || !keys || !c->w || !wkeys || !c->roots) {
        nomem(c);
        goto out;
    }
    c->nn = n;
    for (size_t i = 0; i < n; i++) {
        int md = mode_from_name(&modes->strings[i]);
        if (md < 0) {
            qs_fail(err, QS_ERR_FORMAT, 0, "%s: node %zu: unknown mode '%.*s'", c->op, i,
                    (int)(modes->strings[i].len > 40 ? 40 : modes->strings[i].len),
                    (const char *)modes->strings[i].data);
            goto out;
        }
        onode *o = &c->nodes[i];
        o->mode = (uint8_t)md;
        o->thr = values[i];
        o->track = ntrack && track[i] == 1;
        if (md != M_LEAF) {
            if (featids[i] < 0 || featids[i] >= (int64_t)QS_MAX_FEATURES) {
                qs_fail(err, featids[i] < 0 ? QS_ERR_FORMAT : QS_ERR_LIMIT, 0,
                        "%s: node %zu: feature id %lld is out of range (limit %u)", c->op, i,
                        (long long)featids[i], QS_MAX_FEATURES);
                goto out;
            }
            o->feature = (uint32_t)featids[i];
        }
        keys[i].tree = treeids[i];
        keys[i].node = nodeids[i];
        keys[i].i = i;
        /* trees are runs of one tree id; a tree id may not come back */
        if (i == 0 || treeids[i] != treeids[i - 1])
            c->roots[c->nroots++] = i;
    }
    qsort(keys, n, sizeof *keys, key_cmp);
    for (size_t i = 1; i < n; i++)
        if (keys[i].tree == keys[i - 1].tree && keys[i].node == keys[i - 1].node) {
            qs_fail(err, QS_ERR_FORMAT, 0, "%s: node %lld of tree %lld is given twice", c->op,
                    (long long)keys[i].node, (long long)keys[i].tree);
            goto out;
        }
    /* a tree id that comes back after another tree */
    {
        size_t runs = 0;
        for (size_t i = 0; i < n; i++)
            if (i == 0 || keys[i].tree != keys[i - 1].tree)
                runs++;
        if (runs != c->nroots) {
            qs_fail(err, QS_ERR_FORMAT, 0,
                    "%s: the nodes of a tree are not contiguous in nodes_treeids (%zu tree ids, "
                    "%zu runs)", c->op, runs, c->nroots);
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++) {
        onode *o = &c->nodes[i];
        if (o->mode == M_LEAF)
            continue;
        const key *kt = find_key(keys, n, treeids[i], tids[i]);
        const key *kf = find_key(keys, n, treeids[i], fids[i]);
        if (!kt || !kf) {
            qs_fail(err, QS_ERR_FORMAT, 0, "%s: tree %lld node %lld: child %lld is not a node of "
                    "the tree", c->op, (long long)treeids[i], (long long)nodeids[i],
                    (long long)(kt ? fids[i] : tids[i]));
            goto out;
        }
        o->t = kt->i;
        o->f = kf->i;
    }
    /* weights, in onnx runtime's order: by tree, node, then position */
    for (size_t j = 0; j < nwt; j++) {
        wkeys[j].tree = wt[j];
        wkeys[j].node = wn[j];
        wkeys[j].i = j;
    }
    qsort(wkeys, nwt, sizeof *wkeys, key_cmp);
    for (size_t j = 0; j < nwt; j++) {
        const key *k = find_key(keys, n, wkeys[j].tree, wkeys[j].node);
        if (!k) {
            qs_fail(err, QS_ERR_FORMAT, 0, "%s: weight %zu names node %lld of tree %lld, which "
                    "does not exist", c->op, wkeys[j].i, (long long)wkeys[j].node,
                    (long long)wkeys[j].tree);
            goto out;
        }
        onode *o = &c->nodes[k->i];
        if (o->mode != M_LEAF)
            continue;   /* onnx runtime ignores weights on branch nodes */
        int64_t id = wi[wkeys[j].i];
        if (id < 0 || id >= (int64_t)c->K) {
            qs_fail(err, QS_ERR_FORMAT, 0, "%s: weight %zu: %s %lld is out of range (%u outputs)",
                    c->op, wkeys[j].i, win, (long long)id, c->K);
            goto out;
        }
        if (o->nw == 0)
            o->w0 = c->nw;
        o->nw++;
        c->w[c->nw].target = (uint32_t)id;
        c->w[c->nw].value = weights[wkeys[j].i];
        c->nw++;
    }
    for (size_t i = 0; i < n; i++)
        if (c->nodes[i].mode == M_LEAF && c->nodes[i].nw == 0) {
            qs_fail(err, QS_ERR_FORMAT, 0, "%s: leaf %lld of tree %lld has no weight", c->op,
                    (long long)nodeids[i], (long long)treeids[i]);
            goto out;
        }
    rc = 0;
out:
    free(values);
    free(weights);
    free(keys);
    free(wkeys);
    return rc;
}

/* ------------------------------------------------------------ opset 5 */

static int read_v5(conv *c)
{
    qs_error *err = c->err;
    const int64_t *featids, *tids, *fids, *tleaf, *fleaf, *track, *roots, *ltgt;
    size_t nfeat, nt, nf, ntl, nfl, ntrack, nroots, nltgt;
    if (get_ints(c, "nodes_featureids", &featids, &nfeat) ||
        get_ints(c, "nodes_truenodeids", &tids, &nt) || get_ints(c, "nodes_falsenodeids", &fids, &nf) ||
        get_ints(c, "nodes_trueleafs", &tleaf, &ntl) || get_ints(c, "nodes_falseleafs", &fleaf, &nfl) ||
        get_ints(c, "nodes_missing_value_tracks_true", &track, &ntrack) ||
        get_ints(c, "tree_roots", &roots, &nroots) || get_ints(c, "leaf_targetids", &ltgt, &nltgt))
        return -1;
    double *modes = NULL, *splits = NULL, *lw = NULL, *mem = NULL;
    size_t nmodes, nsplits, nlw, nmem;
    int tm, gs, gw, gm, rc = -1;
    if (get_tensor(c, "nodes_modes", &modes, &nmodes, &tm) ||
        get_values(c, NULL, "nodes_splits", &splits, &nsplits, &gs) ||
        get_values(c, NULL, "leaf_weights", &lw, &nlw, &gw) ||
        get_values(c, NULL, "membership_values", &mem, &nmem, &gm))
        goto out;
    size_t n = nfeat;
    if (tm != 0 && tm != T_UINT8) {
        qs_fail(err, QS_ERR_FORMAT, 0, "%s: nodes_modes should be a uint8 tensor", c->op);
        goto out;
    }
    if (nt != n || nf != n || ntl != n || nfl != n || nmodes != n || nsplits != n ||
        (ntrack != 0 && ntrack != n)) {
        qs_fail(err, QS_ERR_FORMAT, 0,
                "%s: the node arrays differ in length (featureids %zu, modes %zu, splits %zu, "
                "truenodeids %zu, falsenodeids %zu, trueleafs %zu, falseleafs %zu, "
                "missing_value_tracks_true %zu)", c->op, n, nmodes, nsplits, nt, nf, ntl, nfl,
                ntrack);
        goto out;
    }
    if (nltgt != nlw) {
        qs_fail(err, QS_ERR_FORMAT, 0, "%s: leaf_targetids has %zu entries, leaf_weights %zu",
                c->op, nltgt, nlw);
        goto out;
    }
    if (nroots == 0 || nlw == 0) {
        qs_fail(err, QS_ERR_FORMAT, 0, "%s: the ensemble has no trees or no leaves", c->op);
        goto out;
    }
    if (n > QS_ONNX_MAX_NODES || nlw > QS_ONNX_MAX_NODES || nroots > QS_MAX_TREES) {
        qs_fail(err, QS_ERR_LIMIT, 0, "%s: too many nodes, leaves or trees (limit)", c->op);
        goto out;
    }
    /* nodes first, then the leaves: leaf j is node n + j */
    c->nn = n + nlw;
    c->nodes = calloc(c->nn, sizeof *c->nodes);
    c->w = malloc(nlw * sizeof *c->w);
    c->roots = malloc(nroots * sizeof *c->roots);
    c->members = malloc((nmem ? nmem : 1) * sizeof *c->members);
    if (!c->nodes || !c->w || !c->roots || !c->members) {
        nomem(c);
        goto out;
    }
    size_t mpos = 0;
    for (size_t i = 0; i < n; i++) {
        onode *o = &c->nodes[i];
        int md = (int)modes[i];
        if (md < M_LEQ || md > M_MEMBER) {
            qs_fail(err, QS_ERR_FORMAT, 0, "%s: node %zu: unknown mode %d", c->op, i, md);
            goto out;
        }
        o->mode = (uint8_t)md;
        o->thr = splits[i];
        o->track = ntrack && track[i] == 1;
        if (featids[i] < 0 || featids[i] >= (int64_t)QS_MAX_FEATURES) {
            qs_fail(err, featids[i] < 0 ? QS_ERR_FORMAT : QS_ERR_LIMIT, 0,
                    "%s: node %zu: feature id %lld is out of range (limit %u)", c->op, i,
                    (long long)featids[i], QS_MAX_FEATURES);
            goto out;
        }
        o->feature = (uint32_t)featids[i];
        size_t lim[2] = { tleaf[i] ? nlw : n, fleaf[i] ? nlw : n };
        int64_t ch[2] = { tids[i], fids[i] };
        for (int s = 0; s < 2; s++)
            if (ch[s] < 0 || (uint64_t)ch[s] >= lim[s]) {
                qs_fail(err, QS_ERR_FORMAT, 0, "%s: node %zu: %s child %lld is out of range "
                        "(%zu %s)", c->op, i, s ? "false" : "true", (long long)ch[s], lim[s],
                        (s ? fleaf[i] : tleaf[i]) ? "leaves" : "nodes");
                goto out;
            }
        o->t = tleaf[i] ? n + (size_t)tids[i] : (size_t)tids[i];
        o->f = fleaf[i] ? n + (size_t)fids[i] : (size_t)fids[i];
        if (md == M_MEMBER) {
            o->m0 = c->nmem;
            while (mpos < nmem && !isnan(mem[mpos]))
                c->members[c->nmem++] = mem[mpos++];
            mpos++;
            o->nm = c->nmem - o->m0;
            if (o->nm == 0) {
                qs_fail(err, QS_ERR_FORMAT, 0, "%s: node %zu: BRANCH_MEMBER with an empty set "
                        "(membership_values has too few values)", c->op, i);
                goto out;
            }
            /* ONNX Runtime 1.32 tests a set holding a negative value otherwise
             * (1.5 is then a member of {-1, 1}, as if truncated); sets of
             * values >= 0 are tested for equality, as here */
            for (size_t j = 0; j < o->nm; j++)
                if (signbit(c->members[o->m0 + j])) {
                    qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                            "%s: node %zu: BRANCH_MEMBER set with the negative value %.17g: onnx "
                            "runtime does not test such sets for equality; not supported", c->op,
                            i, c->members[o->m0 + j]);
                    goto out;
                }
        }
    }
    for (size_t j = 0; j < nlw; j++) {
        if (ltgt[j] < 0 || ltgt[j] >= (int64_t)c->K) {
            qs_fail(err, QS_ERR_FORMAT, 0, "%s: leaf %zu: target %lld is out of range (%u outputs)",
                    c->op, j, (long long)ltgt[j], c->K);
            goto out;
        }
        onode *o = &c->nodes[n + j];
        o->mode = M_LEAF;
        o->w0 = j;
        o->nw = 1;
        c->w[j].target = (uint32_t)ltgt[j];
        c->w[j].value = lw[j];
    }
    c->nw = nlw;
    for (size_t r = 0; r < nroots; r++) {
        int64_t x = roots[r];
        if (x < 0 || (uint64_t)x >= n) {
            qs_fail(err, QS_ERR_FORMAT, 0, "%s: tree_roots[%zu] = %lld is out of range (%zu nodes)",
                    c->op, r, (long long)x, n);
            goto out;
        }
        c->roots[r] = (size_t)x;   /* a root is always a node (ONNX Runtime 1.32) */
    }
    c->nroots = nroots;
    rc = 0;
out:
    free(modes);
    free(splits);
    free(lw);
    free(mem);
    return rc;
}

/* ------------------------------------------------------------ unfolding */

/* Reset the colours of the nodes reachable from root (after check_tree). */
static void clear_tree(conv *c, size_t root)
{
    size_t sp = 0;
    c->dfs[sp++] = root;
    c->nodes[root].color = 0;
    while (sp) {
        onode *x = &c->nodes[c->dfs[--sp]];
        if (x->mode == M_LEAF)
            continue;
        size_t ch[2] = { x->t, x->f };
        for (int s = 0; s < 2; s++)
            if (c->nodes[ch[s]].color != 0) {
                c->nodes[ch[s]].color = 0;
                c->dfs[sp++] = ch[s];
            }
    }
}

/* The targets the leaves of the tree at `root` add to (c->used) and how
 * many leaves add to each (c->lcount); returns the tree's leaf count.  The
 * tree has passed check_tree: it is left as clear_tree leaves it. */
static uint32_t tree_targets(conv *c, size_t root)
{
    memset(c->used, 0, c->K);
    memset(c->lcount, 0, c->K * sizeof *c->lcount);
    uint32_t nleaves = 0;
    size_t sp = 0;
    c->dfs[sp++] = root;
    c->nodes[root].color = 4;
    while (sp) {
        const onode *x = &c->nodes[c->dfs[--sp]];
        if (x->mode == M_LEAF) {
            nleaves++;
            for (size_t j = 0; j < x->nw; j++) {
                c->used[c->w[x->w0 + j].target] = 1;
                c->lcount[c->w[x->w0 + j].target]++;
            }
            continue;
        }
        size_t ch[2] = { x->t, x->f };
        for (int s = 0; s < 2; s++)
            if (c->nodes[ch[s]].color != 4) {
                c->nodes[ch[s]].color = 4;
                c->dfs[sp++] = ch[s];
            }
    }
    clear_tree(c, root);
    return nleaves;
}

/* Every node reachable from `root`; a cycle is an error.  Returns the count
 * of reachable nodes, or 0 after an error.  Leaves the reached nodes with
 * colour 2 (clear_tree resets them). */
static size_t check_tree(conv *c, size_t ti, size_t root)
{
    if (c->dfs_cap < c->nn + 1) {
        free(c->dfs);
        free(c->frames);
        c->dfs = malloc((c->nn + 1) * sizeof *c->dfs);
        c->frames = malloc((c->nn + 1) * sizeof *c->frames);
        c->dfs_cap = 0;
        if (!c->dfs || !c->frames) {
            nomem(c);
            return 0;
        }
        c->dfs_cap = c->nn + 1;
    }
    /* iterative depth-first search; colour 1 marks the nodes on the path */
    size_t sp = 0, count = 1;
    c->frames[sp].o = root;
    c->frames[sp++].next = 0;
    c->nodes[root].color = 1;
    while (sp) {
        frame *f = &c->frames[sp - 1];
        onode *x = &c->nodes[f->o];
        if (x->mode == M_LEAF || f->next == 2) {
            x->color = 2;
            sp--;
            continue;
        }
        size_t ch = f->next++ == 0 ? x->t : x->f;
        onode *y = &c->nodes[ch];
        if (y->color == 1) {
            qs_fail(c->err, QS_ERR_FORMAT, 0, "%s: tree %zu has a cycle (through node %zu)",
                    c->op, ti, ch);
            clear_tree(c, root);
            return 0;
        }
        if (y->color == 0) {
            y->color = 1;
            count++;
            c->frames[sp].o = ch;
            c->frames[sp++].next = 0;
        }
    }
    return count;
}

/* The largest value below t in the model's precision. */
static double below(const conv *c, double t)
{
    return c->dbl ? nextafter(t, -INFINITY) : (double)nextafterf((float)t, -INFINITY);
}

static int push_task(conv *c, const task *t)
{
    if (qs_vec_reserve((void **)&c->tasks, &c->tasks_cap, c->ntasks, sizeof *c->tasks) != 0)
        return nomem(c);
    c->tasks[c->ntasks++] = *t;
    return 0;
}

static int push(conv *c, size_t o, int32_t parent, int side)
{
    task t;
    memset(&t, 0, sizeof t);
    t.o = o;
    t.parent = parent;
    t.side = side;
    return push_task(c, &t);
}

/* A new canonical node; patches its parent.  Returns its index or -1. */
static int32_t new_node(conv *c, const task *tk, size_t *count, size_t limit, size_t ti)
{
    if (*count >= limit) {
        qs_fail(c->err, QS_ERR_LIMIT, 0,
                "%s: tree %zu unfolds into more than %zu nodes (equality tests and shared "
                "subtrees are copied; limit: %u per tree, %u per byte of the file)", c->op, ti,
                limit, QS_MAX_TREE_NODES, NODES_PER_BYTE);
        return -1;
    }
    int64_t i = qs_model_add_nodes(c->m, 1, c->err);
    if (i < 0)
        return -1;
    (*count)++;
    if (tk->parent >= 0) {
        qs_node *p = qs_model_cur_node(c->m, (uint32_t)tk->parent);
        if (tk->side)
            p->right = (int32_t)i;
        else
            p->left = (int32_t)i;
    }
    return (int32_t)i;
}

static void set_num(qs_node *nd, uint32_t feature, double t, int default_left)
{
    nd->kind = QS_NODE_NUM;
    nd->miss = QS_MISS_NAN;
    nd->feature = feature;
    nd->value = t;
    nd->default_left = (uint8_t)(default_left != 0);
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int add_setval(conv *c, double v)
{
    if (qs_vec_reserve((void **)&c->setvals, &c->setvals_cap, c->nsetvals, sizeof *c->setvals) != 0)
        return nomem(c);
    c->setvals[c->nsetvals++] = v;
    return 0;
}

/* The set test that starts at node o (EQ, MEMBER or NEQ) as a range task: a
 * chain of EQ / MEMBER nodes on one feature with one true child and one
 * missing rule (onnx runtime's unrolled BRANCH_MEMBER, or a converter's
 * chain of BRANCH_EQ) is one membership test, so the subtrees are copied
 * once per interval, not once per link. */
static int set_task(conv *c, const task *tk, task *out)
{
    const onode *o = &c->nodes[tk->o];
    *out = *tk;
    out->range = 1;
    out->neq = o->mode == M_NEQ;
    out->soff = c->nsetvals;
    out->tchild = o->t;
    size_t cur = tk->o;
    for (;;) {
        const onode *x = &c->nodes[cur];
        if (x->mode == M_MEMBER) {
            for (size_t j = 0; j < x->nm; j++)
                if (add_setval(c, c->members[x->m0 + j]) != 0)
                    return -1;
        } else if (add_setval(c, x->thr) != 0) {
            return -1;
        }
        size_t f = x->f;
        const onode *y = &c->nodes[f];
        if (out->neq || (y->mode != M_EQ && y->mode != M_MEMBER) || y->feature != o->feature ||
            y->t != o->t || y->track != o->track) {
            out->fchild = f;
            break;
        }
        cur = f;
    }
    double *v = c->setvals + out->soff;
    size_t n = c->nsetvals - out->soff, u = 0;
    qsort(v, n, sizeof *v, dbl_cmp);
    for (size_t j = 0; j < n; j++)
        if (u == 0 || v[j] != v[u - 1])
            v[u++] = v[j];
    c->nsetvals = out->soff + u;
    out->sn = u;
    out->lo = 0;
    out->hi = 2 * u;
    /* NaN: BRANCH_NEQ always true (interval 0, a non-member); EQ and MEMBER
     * true when tracked (interval 1, a member), else false (interval 0) */
    out->nan_iv = !out->neq && o->track ? 1 : 0;
    return 0;
}

/* Canonical tree for ONNX tree ti, output column `col` (target `target`). */
static int emit_tree(conv *c, size_t ti, size_t root, uint32_t col, uint32_t target, size_t reach)
{
    (void)reach;
    size_t limit = QS_MAX_TREE_NODES;
    if (c->m->num_nodes >= c->node_budget)
        return qs_fail(c->err, QS_ERR_LIMIT, 0, "%s: the model unfolds into more than %llu nodes "
                       "(limit: %u per byte of the file, at most %llu)", c->op,
                       (unsigned long long)c->node_budget, NODES_PER_BYTE,
                       (unsigned long long)QS_ONNX_MAX_NODES);
    if (limit > c->node_budget - c->m->num_nodes)
        limit = (size_t)(c->node_budget - c->m->num_nodes);
    if (qs_model_add_tree(c->m, col, 1.0, c->err) != 0)
        return -1;
    size_t count = 0;
    c->ntasks = 0;
    c->nsetvals = 0;
    if (push(c, root, -1, 0) != 0)
        return -1;
    while (c->ntasks) {
        task tk = c->tasks[--c->ntasks];
        if (tk.range && tk.lo == tk.hi) {
            /* one interval: odd ones are the set's values */
            int member = (tk.lo & 1) != 0;
            if (push(c, member != tk.neq ? tk.tchild : tk.fchild, tk.parent, tk.side) != 0)
                return -1;
            continue;
        }
        const onode *o = &c->nodes[tk.o];
        if (!tk.range && (o->mode == M_EQ || o->mode == M_NEQ || o->mode == M_MEMBER)) {
            task st;
            if (set_task(c, &tk, &st) != 0 || push_task(c, &st) != 0)
                return -1;
            continue;
        }
        int32_t a = new_node(c, &tk, &count, limit, ti);
        if (a < 0)
            return -1;
        qs_node *nd = qs_model_cur_node(c->m, (uint32_t)a);
        if (tk.range) {
            /* split between intervals mid and mid + 1: after an even one,
             * x <= below(v); after an odd one, x <= v */
            size_t mid = tk.lo + (tk.hi - tk.lo) / 2;
            double v = c->setvals[tk.soff + mid / 2];
            set_num(nd, o->feature, (mid & 1) ? v : below(c, v), tk.nan_iv <= mid);
            task l = tk, r = tk;
            l.hi = mid;
            l.parent = r.parent = a;
            l.side = 0;
            r.lo = mid + 1;
            r.side = 1;
            if (push_task(c, &r) != 0 || push_task(c, &l) != 0)
                return -1;
            continue;
        }
        if (o->mode == M_LEAF) {
            nd->kind = QS_NODE_LEAF;
            nd->value = 0.0;   /* no weight for this target: adds +0 */
            for (size_t j = 0; j < o->nw; j++)
                if (c->w[o->w0 + j].target == target) {
                    nd->value = c->w[o->w0 + j].value;
                    break;
                }
            continue;
        }
        switch (o->mode) {
        case M_LEQ:   /* x <= t: true left */
        case M_LT:    /* x < t  <=>  x <= below(t) */
            set_num(nd, o->feature, o->mode == M_LT ? below(c, o->thr) : o->thr, o->track);
            if (push(c, o->f, a, 1) || push(c, o->t, a, 0))
                return -1;
            break;
        case M_GTE:   /* x >= t  <=>  !(x <= below(t)): true right */
        case M_GT:    /* x > t   <=>  !(x <= t) */
            set_num(nd, o->feature, o->mode == M_GTE ? below(c, o->thr) : o->thr, !o->track);
            if (push(c, o->t, a, 1) || push(c, o->f, a, 0))
                return -1;
            break;
        default:
            return qs_fail(c->err, QS_ERR_FORMAT, 0, "%s: bad node mode", c->op);
        }
    }
    return 0;
}

/* Thresholds qs can write as x <= t: finite or +inf, not NaN; -inf only
 * under BRANCH_LEQ and BRANCH_GT (x <= -inf is x == -inf). */
static int check_thresholds(conv *c)
{
    for (size_t i = 0; i < c->nn; i++) {
        const onode *o = &c->nodes[i];
        if (o->mode == M_LEAF)
            continue;
        size_t nv = o->mode == M_MEMBER ? o->nm : 1;
        for (size_t j = 0; j < nv; j++) {
            double t = o->mode == M_MEMBER ? c->members[o->m0 + j] : o->thr;
            if (isnan(t))
                return qs_fail(c->err, QS_ERR_UNSUPPORTED, 0,
                               "%s: node %zu: threshold NaN is not supported", c->op, i);
            if (t == -INFINITY && o->mode != M_LEQ && o->mode != M_GT)
                return qs_fail(c->err, QS_ERR_UNSUPPORTED, 0,
                               "%s: node %zu: %s -inf has no x <= t form: not supported", c->op, i,
                               mode_names[o->mode]);
        }
    }
    return 0;
}

/* ------------------------------------------------------------ the node */

static int is_tree_op(const Onnx__NodeProto *n)
{
    const char *op = str(n->op_type), *dom = str(n->domain);
    return strcmp(dom, "ai.onnx.ml") == 0 &&
           (strcmp(op, "TreeEnsembleRegressor") == 0 || strcmp(op, "TreeEnsembleClassifier") == 0 ||
            strcmp(op, "TreeEnsemble") == 0);
}

static int convert_node(conv *c, const Onnx__ModelProto *mp)
{
    qs_error *err = c->err;
    const Onnx__GraphProto *g = mp->graph;
    const Onnx__NodeProto *nd = c->node;
    c->op = str(nd->op_type);
    c->v5 = strcmp(c->op, "TreeEnsemble") == 0;
    c->classifier = strcmp(c->op, "TreeEnsembleClassifier") == 0;
    int64_t mlver = -1;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *os = mp->opset_import[i];
        if (os && strcmp(str(os->domain), "ai.onnx.ml") == 0 && os->has_version)
            mlver = os->version;
    }
    if (mlver < 1)
        return qs_fail(err, QS_ERR_FORMAT, 0, "the model does not import the ai.onnx.ml opset");
    if (c->v5 && mlver < 5)
        return qs_fail(err, QS_ERR_FORMAT, 0, "TreeEnsemble needs ai.onnx.ml opset 5 (the model "
                       "imports %lld)", (long long)mlver);
    /* attribute names: each at most once */
    for (size_t i = 0; i < nd->n_attribute; i++)
        for (size_t j = 0; j < i; j++)
            if (nd->attribute[i] && nd->attribute[j] &&
                strcmp(str(nd->attribute[i]->name), str(nd->attribute[j]->name)) == 0)
                return qs_fail(err, QS_ERR_FORMAT, 0, "%s: attribute %.64s is given twice", c->op,
                               str(nd->attribute[i]->name));
    for (size_t i = 0; i < nd->n_attribute; i++)
        if (nd->attribute[i] && nd->attribute[i]->ref_attr_name)
            return qs_fail(err, QS_ERR_UNSUPPORTED, 0, "%s: attribute references (ref_attr_name) "
                           "are not supported", c->op);

    /* the input: a graph input of float or double elements */
    if (nd->n_input < 1 || !nd->input[0])
        return qs_fail(err, QS_ERR_FORMAT, 0, "%s has no input", c->op);
    int elem = -1;
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        if (vi && strcmp(str(vi->name), nd->input[0]) == 0) {
            elem = vi->type && vi->type->tensor_type && vi->type->tensor_type->has_elem_type
                       ? vi->type->tensor_type->elem_type : 0;
            break;
        }
    }
    if (elem == -1)
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                       "%s: its input '%.64s' is not a graph input (computed by other nodes): "
                       "not supported", c->op, nd->input[0]);
    if (elem != T_FLOAT && elem != T_DOUBLE)
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                       "%s: input elements of type %d: only float and double inputs are supported",
                       c->op, elem);
    c->dbl = elem == T_DOUBLE;
    /* Opsets 1/3 with a double input: ONNX Runtime's TreeEnsembleRegressor
     * sums in double (TreeEnsembleCommon<double, double, float>) and writes
     * float32(sum + base): the output affine rounded to float32.  The
     * classifier's double path was not checked against ONNX Runtime. */
    if (c->dbl && !c->v5 && c->classifier)
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                       "%s with a double input: not supported (not checked against ONNX "
                       "Runtime; TreeEnsembleRegressor with a double input is read)", c->op);

    /* outputs, aggregation, transform */
    char agg[32], post[32];
    int64_t ntargets = 0;
    if (c->v5) {
        int64_t a, p;
        if (get_int(c, "aggregate_function", 1, &a) || get_int(c, "post_transform", 0, &p) ||
            get_int(c, "n_targets", 0, &ntargets))
            return -1;
        static const char *const aggs[] = { "AVERAGE", "SUM", "MIN", "MAX" };
        static const char *const posts[] = { "NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO",
                                             "PROBIT" };
        if (a < 0 || a > 3)
            return qs_fail(err, QS_ERR_FORMAT, 0, "%s: aggregate_function %lld is unknown", c->op,
                           (long long)a);
        if (p < 0 || p > 4)
            return qs_fail(err, QS_ERR_FORMAT, 0, "%s: post_transform %lld is unknown", c->op,
                           (long long)p);
        snprintf(agg, sizeof agg, "%s", aggs[a]);
        snprintf(post, sizeof post, "%s", posts[p]);
    } else {
        if (get_string(c, "aggregate_function", "SUM", agg, sizeof agg) ||
            get_string(c, "post_transform", "NONE", post, sizeof post))
            return -1;
        if (strcmp(agg, "SUM") && strcmp(agg, "AVERAGE") && strcmp(agg, "MIN") && strcmp(agg, "MAX"))
            return qs_fail(err, QS_ERR_FORMAT, 0, "%s: aggregate_function '%s' is unknown", c->op,
                           agg);
        if (strcmp(post, "NONE") && strcmp(post, "SOFTMAX") && strcmp(post, "LOGISTIC") &&
            strcmp(post, "SOFTMAX_ZERO") && strcmp(post, "PROBIT"))
            return qs_fail(err, QS_ERR_FORMAT, 0, "%s: post_transform '%s' is unknown", c->op, post);
        if (c->classifier) {
            const int64_t *li;
            size_t nli;
            if (get_ints(c, "classlabels_int64s", &li, &nli) != 0)
                return -1;
            const Onnx__AttributeProto *ls = attr(c, "classlabels_strings");
            if (ls && (!ls->has_type || ls->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS))
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "%s: classlabels_strings should be a list of strings", c->op);
            ntargets = ls && ls->n_strings ? (int64_t)ls->n_strings : (int64_t)nli;
        } else if (get_int(c, "n_targets", 0, &ntargets) != 0) {
            return -1;
        }
    }
    /* AVERAGE: ONNX Runtime divides each output's sum by the number of
     * trees, in the input's precision, before adding the base value
     * (TreeAggregatorAverage): the output affine's divisor */
    if (strcmp(agg, "SUM") != 0 && strcmp(agg, "AVERAGE") != 0)
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                       "%s: aggregate_function %s is not supported (only SUM and AVERAGE)", c->op,
                       agg);
    c->average = strcmp(agg, "AVERAGE") == 0;
    if (c->average && c->dbl)
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                       "%s: aggregate_function AVERAGE with a double input is not supported (not "
                       "checked against ONNX Runtime)", c->op);
    if (ntargets < 1 || (c->classifier && ntargets < 2))
        return qs_fail(err, QS_ERR_FORMAT, 0, "%s: %lld %s", c->op, (long long)ntargets,
                       c->classifier ? "class labels (at least 2 needed)" : "targets (n_targets)");
    if (ntargets > (int64_t)QS_MAX_CLASSES)
        return qs_fail(err, QS_ERR_LIMIT, 0, "%s: %lld outputs, beyond the limit of %u", c->op,
                       (long long)ntargets, QS_MAX_CLASSES);
    c->K = (uint32_t)ntargets;

    if ((c->v5 ? read_v5(c) : read_v3(c)) != 0)
        return -1;
    if (check_thresholds(c) != 0)
        return -1;
    /* a leaf adds at most one weight to each output (onnx runtime would add
     * several one after the other, which one canonical leaf cannot) */
    {
        uint32_t *stamp = calloc(c->K, sizeof *stamp);
        if (!stamp)
            return nomem(c);
        uint32_t gen = 0;
        for (size_t i = 0; i < c->nn; i++) {
            const onode *o = &c->nodes[i];
            if (o->mode != M_LEAF || o->nw < 2)
                continue;
            if (++gen == 0) {
                memset(stamp, 0, c->K * sizeof *stamp);
                gen = 1;
            }
            for (size_t j = 0; j < o->nw; j++) {
                uint32_t t = c->w[o->w0 + j].target;
                if (stamp[t] == gen) {
                    free(stamp);
                    return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                                   "%s: a leaf has several weights for output %u: not supported",
                                   c->op, t);
                }
                stamp[t] = gen;
            }
        }
        free(stamp);
    }
    for (size_t i = 0; i < c->nw; i++) {
        double v = c->w[i].value;
        if (!isfinite(v))
            return qs_fail(err, QS_ERR_UNSUPPORTED, 0, "%s: leaf weight %.17g is not finite",
                           c->op, v);
    }

    /* base values */
    double *base = NULL;
    size_t nbase = 0;
    int gb = 0;
    if (!c->v5 && get_values(c, "base_values", "base_values_as_tensor", &base, &nbase, &gb) != 0)
        return -1;
    c->bias = calloc(c->K, sizeof *c->bias);
    if (!c->bias) {
        free(base);
        return nomem(c);
    }
    for (size_t i = 0; i < nbase; i++)
        if (!isfinite(base[i])) {
            double b = base[i];
            free(base);
            return qs_fail(err, QS_ERR_UNSUPPORTED, 0, "%s: base value %.17g is not finite", c->op,
                           b);
        }
    c->binary_col = -1;
    if (!c->classifier) {
        if (c->K == 1) {
            /* one target: each leaf's first weight; + base_values[0] when
             * there is exactly one */
            for (size_t i = 0; i < c->nn; i++)
                if (c->nodes[i].mode == M_LEAF && c->nodes[i].nw > 1) {
                    free(base);
                    return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                                   "%s: a leaf with %zu weights for one target: onnx runtime "
                                   "adds only the first; not supported", c->op, c->nodes[i].nw);
                }
            if (nbase == 1)
                c->bias[0] = base[0];
        } else if (nbase == c->K) {
            for (uint32_t k = 0; k < c->K; k++)
                c->bias[k] = base[k];
        }
    } else {
        /* classes with weights; base values must not be -0 (a class with no
         * weight reached keeps the base value itself, others add it to +0) */
        for (size_t i = 0; i < nbase; i++)
            if (base[i] == 0.0 && signbit(base[i])) {
                free(base);
                return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                               "%s: base value -0 is not supported", c->op);
            }
        if (nbase > c->K) {
            free(base);
            return qs_fail(err, QS_ERR_FORMAT, 0, "%s: %zu base values for %u classes", c->op,
                           nbase, c->K);
        }
        if (c->K > 2) {
            for (size_t k = 0; k < nbase; k++)
                c->bias[k] = base[k];
        } else {
            int has[2] = { 0, 0 };
            for (size_t j = 0; j < c->nw; j++)
                has[c->w[j].target] = 1;
            /* every leaf with a weight for class 1? */
            int all1 = 1;
            for (size_t i = 0; i < c->nn && all1; i++) {
                const onode *o = &c->nodes[i];
                if (o->mode != M_LEAF)
                    continue;
                int h = 0;
                for (size_t j = 0; j < o->nw; j++)
                    h |= c->w[o->w0 + j].target == 1;
                all1 = h;
            }
            if (has[0] && !has[1]) {
                /* binary case, class 0: one score s0 (+ base[0]), written [.., s] */
                if (nbase == 2) {
                    free(base);
                    return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                                   "%s: two classes, weights for class 0 only and two base "
                                   "values: onnx runtime writes the second base value, not the "
                                   "trees' score; not supported", c->op);
                }
                c->binary_col = 0;
                if (nbase == 1)
                    c->bias[0] = base[0];
            } else if (!all1 || nbase == 2) {
                free(base);
                return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                               "%s: two classes with %s: onnx runtime's binary rules make the "
                               "output depend on which leaves are reached; not supported",
                               c->op, nbase == 2 ? "two base values" :
                               "leaves without a weight for class 1");
            } else if (!has[0]) {
                c->binary_col = 1;   /* written [base[0] or 0, s1] */
            } else {
                if (nbase == 1)
                    c->bias[0] = base[0];
            }
        }
    }
    free(base);

    /* the canonical model */
    qs_model *m = c->m;
    uint32_t K = c->binary_col >= 0 ? 1 : c->K;
    if (qs_model_set_classes(m, K, err) != 0)
        return -1;
    c->used = calloc(c->K, 1);
    /* regressors with several targets: onnx runtime writes 0, not the base
     * value, for a target no reached leaf adds to.  ever[t]: some leaf adds
     * to t; always[t]: in some tree every reachable leaf does. */
    uint32_t *lcount = c->lcount = calloc(c->K, sizeof *lcount);
    uint8_t *ever = c->ever = calloc(c->K, 1), *always = c->always = calloc(c->K, 1);
    if (!c->used || !lcount || !ever || !always)
        return nomem(c);
    uint64_t maxf = 0;
    for (size_t i = 0; i < c->nn; i++)
        if (c->nodes[i].mode != M_LEAF && (uint64_t)c->nodes[i].feature + 1 > maxf)
            maxf = (uint64_t)c->nodes[i].feature + 1;
    /* AVERAGE divides by the count of ONNX trees: --trees N (the first N
     * iterations) keeps a whole number of them only when every ONNX tree
     * unfolds into as many trees as every other, in class order.  Each
     * does when it writes to one target (a regressor, a classifier's tree
     * per class) or to all; otherwise every one is unfolded into a tree
     * per output column, +0 where it writes nothing (x + +0 is x for every
     * sum, which starts at +0 and so is never -0): qs_scorer_truncate then
     * counts the ONNX trees kept as the trees kept over the columns. */
    int pad = 0;
    if (c->average && c->nroots > 1) {
        int all_one = 1, all_k = 1;
        for (size_t r = 0; r < c->nroots; r++) {
            if (!check_tree(c, r, c->roots[r]))
                return -1;
            tree_targets(c, c->roots[r]);
            uint32_t n = 0;
            for (uint32_t k = 0; k < c->K; k++)
                n += c->used[k] && (c->binary_col < 0 || (int)k == c->binary_col);
            all_one &= n == 1;
            all_k &= n == K;
        }
        pad = !all_one && !all_k;
    }
    for (size_t r = 0; r < c->nroots; r++) {
        size_t reach = check_tree(c, r, c->roots[r]);
        if (!reach)
            return -1;
        /* the targets this tree's leaves add to, in order */
        const uint32_t nleaves = tree_targets(c, c->roots[r]);
        for (uint32_t k = 0; k < c->K; k++) {
            ever[k] |= c->used[k];
            always[k] |= lcount[k] == nleaves;
        }
        for (uint32_t k = 0; k < c->K; k++) {
            if (!c->used[k] && !pad)
                continue;
            if (c->binary_col >= 0 && (int)k != c->binary_col)
                continue;
            if (m->num_trees >= QS_MAX_TREES)
                return qs_fail(err, QS_ERR_LIMIT, 0, "%s: more than %u trees (limit)", c->op,
                               QS_MAX_TREES);
            if (emit_tree(c, r, c->roots[r], c->binary_col >= 0 ? 0 : k, k, reach) != 0)
                return -1;
        }
    }
    if (!c->classifier && c->K > 1)
        for (uint32_t k = 0; k < c->K; k++) {
            if (c->bias[k] == 0.0 || always[k])
                continue;
            if (!ever[k]) {
                c->bias[k] = 0.0;   /* never a score: onnx runtime writes 0 */
                continue;
            }
            return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                           "%s: target %u has a base value, and only some leaves add to it: "
                           "onnx runtime then writes 0 or the base value plus the sum depending "
                           "on the leaves reached; not supported", c->op, k);
        }

    m->num_features = (uint32_t)maxf;
    m->cmp = QS_CMP_LE;
    m->float_precision = !c->dbl;
    m->float_accumulate = c->dbl ? QS_ACC_DOUBLE : QS_ACC_FLOAT;
    m->absent_missing = 0;
    for (uint32_t k = 0; k < K; k++)
        m->base[k] = 0.0;
    int any_bias = 0;
    for (uint32_t k = 0; k < K; k++) {
        double b = c->bias[c->binary_col >= 0 ? 0 : k];
        if (c->binary_col == 1)
            b = 0.0;
        m->out_bias[k] = b;
        any_bias |= b != 0.0;
    }
    if (any_bias || (c->average && c->nroots > 1) || (c->dbl && !c->v5)) {
        m->out_affine = 1;
        m->out_scale = 1.0;
        m->out_divide = c->average && c->nroots > 1 ? (uint32_t)c->nroots : 0;
        m->out_float = c->dbl && !c->v5;   /* float32(double sum + base) */
    }
    snprintf(m->objective, sizeof m->objective, "%s", c->op);
    snprintf(m->transform, sizeof m->transform, "%s",
             strcmp(post, "NONE") == 0 ? "none" : "unsupported");
    return qs_model_validate(m, err);
}

qs_model *qs_convert_onnx(const char *buf, size_t len, qs_error *err)
{
    if (!buf && len) {
        qs_fail(err, QS_ERR_ARG, 0, "no input buffer");
        return NULL;
    }
    budget bud = { 0, len > (SIZE_MAX - ONNX_PARSE_BASE) / ONNX_PARSE_RATIO
                          ? SIZE_MAX : len * ONNX_PARSE_RATIO + ONNX_PARSE_BASE, 0, 0, 0 };
    ProtobufCAllocator alloc = { budget_alloc, budget_free, &bud };
    Onnx__ModelProto *mp = onnx__model_proto__unpack(&alloc, len, (const uint8_t *)buf);
    if (!mp) {
        if (bud.oom)
            qs_fail(err, QS_ERR_NOMEM, 0, "out of memory parsing the onnx protobuf (%zu bytes "
                    "so far)", bud.used);
        else if (bud.over)
            qs_fail(err, QS_ERR_LIMIT, 0, "onnx: parsing the protobuf needs more than %zu bytes "
                    "of memory (the limit: %u times the file's size, plus %zu MiB)", bud.limit,
                    ONNX_PARSE_RATIO, ONNX_PARSE_BASE >> 20);
        else
            qs_fail(err, QS_ERR_FORMAT, 0, "not an onnx model: the protobuf is malformed or "
                    "truncated");
        return NULL;
    }
    conv c;
    memset(&c, 0, sizeof c);
    c.err = err;
    c.node_budget = len > (QS_ONNX_MAX_NODES - (1u << 20)) / NODES_PER_BYTE
                        ? QS_ONNX_MAX_NODES : (uint64_t)len * NODES_PER_BYTE + (1u << 20);
    const Onnx__GraphProto *g = mp->graph;
    size_t found = 0;
    if (!g) {
        qs_fail(err, QS_ERR_FORMAT, 0, "not an onnx model: no graph");
        goto done;
    }
    for (size_t i = 0; i < g->n_node; i++)
        if (g->node[i] && is_tree_op(g->node[i])) {
            if (!c.node)
                c.node = g->node[i];
            found++;
        }
    if (found == 0) {
        qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                "the onnx graph holds no ai.onnx.ml tree ensemble (TreeEnsembleRegressor, "
                "TreeEnsembleClassifier or TreeEnsemble)");
        goto done;
    }
    if (found > 1) {
        qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                "the onnx graph holds %zu tree ensembles: only one is supported", found);
        goto done;
    }
    c.m = qs_model_new(QS_SRC_ONNX, err);
    if (!c.m)
        goto done;
    if (convert_node(&c, mp) != 0) {
        qs_model_free(c.m);
        c.m = NULL;
    }
done:
    onnx__model_proto__free_unpacked(mp, &alloc);
    free(c.nodes);
    free(c.w);
    free(c.members);
    free(c.roots);
    free(c.bias);
    free(c.dfs);
    free(c.frames);
    free(c.setvals);
    free(c.tasks);
    free(c.used);
    free(c.lcount);
    free(c.ever);
    free(c.always);
    return c.m;
}
