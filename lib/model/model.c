/* model.c: canonical ensemble construction, validation and the reference
 * tree-walk scorer that every other back end is tested against. */
#include "model/model.h"

#include <errno.h>
#include <float.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ building */

qs_model *qs_model_new(qs_source src, qs_error *err)
{
    qs_model *m = calloc(1, sizeof *m);
    if (!m) {
        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        return NULL;
    }
    m->source = src;
    /* the library's defaults (common/source.c); a reader sets what its
     * model says */
    const qs_source_info *r = qs_source_get(src);
    m->float_precision = r && r->float_bits == 32;
    m->absent_missing = r && r->absent == QS_ABSENT_MISSING;
    m->transform_param = 1.0;
    m->out_scale = 1.0;
    strcpy(m->transform, "none");
    if (qs_model_set_classes(m, 1, err) != 0) {
        free(m);
        return NULL;
    }
    return m;
}

void qs_model_free(qs_model *m)
{
    if (!m)
        return;
    free(m->base);
    free(m->out_bias);
    free(m->trees);
    free(m->nodes);
    free(m->cat_words);
    free(m->linear);
    free(m->lin_feature);
    free(m->lin_coeff);
    free(m->node_linear);
    free(m);
}

int qs_model_set_classes(qs_model *m, uint32_t k, qs_error *err)
{
    if (k == 0 || k > QS_MAX_CLASSES)
        return qs_fail(err, QS_ERR_LIMIT, 0, "number of classes %u is out of range (1..%u)",
                       k, QS_MAX_CLASSES);
    double *b = calloc(k, sizeof *b), *ob = calloc(k, sizeof *ob);
    if (!b || !ob) {
        free(b);
        free(ob);
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    }
    free(m->base);
    free(m->out_bias);
    m->base = b;
    m->out_bias = ob;
    m->num_classes = k;
    return 0;
}

/* Grow an array to hold at least `need` elements of `size` bytes. */
static int grow(void **p, uint64_t *cap, uint64_t need, size_t size, qs_error *err)
{
    if (need <= *cap)
        return 0;
    uint64_t nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    if (nc > SIZE_MAX / size)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    void *q = realloc(*p, (size_t)(nc * size));
    if (!q)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    *p = q;
    *cap = nc;
    return 0;
}

int qs_model_add_tree(qs_model *m, uint32_t class_id, double weight, qs_error *err)
{
    if (m->num_trees >= QS_MAX_TREES)
        return qs_fail(err, QS_ERR_LIMIT, 0, "more than %u trees", QS_MAX_TREES);
    if (grow((void **)&m->trees, &m->cap_trees, m->num_trees + 1, sizeof *m->trees, err))
        return -1;
    qs_tree *t = &m->trees[m->num_trees++];
    t->class_id = class_id;
    t->weight = weight;
    t->node_off = m->num_nodes;
    t->num_nodes = 0;
    return 0;
}

int64_t qs_model_add_nodes(qs_model *m, uint32_t n, qs_error *err)
{
    if (m->num_trees == 0) {
        qs_fail(err, QS_ERR_ARG, 0, "node added before any tree");
        return -1;
    }
    qs_tree *t = &m->trees[m->num_trees - 1];
    if ((uint64_t)t->num_nodes + n > QS_MAX_TREE_NODES) {
        qs_fail(err, QS_ERR_LIMIT, 0, "tree %llu has more than %u nodes",
                (unsigned long long)(m->num_trees - 1), QS_MAX_TREE_NODES);
        return -1;
    }
    if (grow((void **)&m->nodes, &m->cap_nodes, m->num_nodes + n, sizeof *m->nodes, err))
        return -1;
    memset(m->nodes + m->num_nodes, 0, (size_t)n * sizeof *m->nodes);
    m->num_nodes += n;
    int64_t first = t->num_nodes;
    t->num_nodes += n;
    return first;
}

qs_node *qs_model_cur_node(qs_model *m, uint32_t i)
{
    qs_tree *t = &m->trees[m->num_trees - 1];
    return &m->nodes[t->node_off + i];
}

int64_t qs_model_add_cat_words(qs_model *m, const uint32_t *w, uint32_t n, qs_error *err)
{
    if (n > QS_MAX_CAT_WORDS) {
        qs_fail(err, QS_ERR_LIMIT, 0, "categorical bitset of %u words (limit %u)", n,
                QS_MAX_CAT_WORDS);
        return -1;
    }
    if ((uint64_t)m->num_cat_words + n > QS_MAX_MODEL_CAT_WORDS) {
        qs_fail(err, QS_ERR_LIMIT, 0,
                "the categorical sets need more than %u bitset words in all (256 MiB)",
                QS_MAX_MODEL_CAT_WORDS);
        return -1;
    }
    if (grow((void **)&m->cat_words, &m->cap_cat_words, m->num_cat_words + n,
             sizeof *m->cat_words, err))
        return -1;
    if (n && w)
        memcpy(m->cat_words + m->num_cat_words, w, (size_t)n * sizeof *w);
    else if (n)
        memset(m->cat_words + m->num_cat_words, 0, (size_t)n * sizeof *m->cat_words);
    int64_t off = (int64_t)m->num_cat_words;
    m->num_cat_words += n;
    return off;
}

int qs_model_add_linear(qs_model *m, uint64_t node, double konst, uint32_t nterms,
                        const uint32_t *feature, const double *coeff, qs_error *err)
{
    if (nterms > QS_MAX_LINEAR_TERMS)
        return qs_fail(err, QS_ERR_LIMIT, 0, "linear leaf with %u terms (limit %u)", nterms,
                       QS_MAX_LINEAR_TERMS);
    if (m->num_linear >= UINT32_MAX - 1 || m->num_lin_terms + nterms > UINT32_MAX)
        return qs_fail(err, QS_ERR_LIMIT, 0, "too many linear leaves or terms");
    if (grow((void **)&m->linear, &m->cap_linear, m->num_linear + 1, sizeof *m->linear, err))
        return -1;
    uint64_t cap = m->cap_lin_terms;
    if (grow((void **)&m->lin_feature, &cap, m->num_lin_terms + nterms, sizeof *m->lin_feature,
             err))
        return -1;
    cap = m->cap_lin_terms;
    if (grow((void **)&m->lin_coeff, &cap, m->num_lin_terms + nterms, sizeof *m->lin_coeff, err))
        return -1;
    m->cap_lin_terms = cap;
    qs_linear *l = &m->linear[m->num_linear++];
    l->node = node;
    l->konst = konst;
    l->term_off = m->num_lin_terms;
    l->nterms = nterms;
    if (nterms) {
        memcpy(m->lin_feature + m->num_lin_terms, feature, (size_t)nterms * sizeof *feature);
        memcpy(m->lin_coeff + m->num_lin_terms, coeff, (size_t)nterms * sizeof *coeff);
    }
    m->num_lin_terms += nterms;
    return 0;
}

int qs_model_link_linear(qs_model *m, qs_error *err)
{
    free(m->node_linear);
    m->node_linear = NULL;
    if (m->num_linear == 0)
        return 0;
    m->node_linear = calloc(m->num_nodes ? m->num_nodes : 1, sizeof *m->node_linear);
    if (!m->node_linear)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    for (uint64_t i = 0; i < m->num_linear; i++) {
        uint64_t nd = m->linear[i].node;
        if (nd >= m->num_nodes || m->nodes[nd].kind != QS_NODE_LEAF ||
            (i > 0 && nd <= m->linear[i - 1].node))
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "linear model %llu: node %llu is not a leaf of the model, or out of "
                           "order",
                           (unsigned long long)i, (unsigned long long)nd);
        m->node_linear[nd] = (uint32_t)(i + 1);
    }
    return 0;
}

void qs_model_truncate(qs_model *m, uint64_t ntrees)
{
    if (ntrees >= m->num_trees)
        return;
    m->num_trees = ntrees;
    m->num_nodes = ntrees ? m->trees[ntrees - 1].node_off + m->trees[ntrees - 1].num_nodes : 0;
    uint64_t k = 0;
    while (k < m->num_linear && m->linear[k].node < m->num_nodes)
        k++;
    m->num_linear = k;
    m->num_lin_terms = k ? m->linear[k - 1].term_off + m->linear[k - 1].nterms : 0;
}

double qs_leaf_output(const qs_model *m, uint64_t node, const double *x)
{
    const qs_node *n = &m->nodes[node];
    uint32_t li = m->node_linear ? m->node_linear[node] : 0;
    if (!li)
        return n->value;
    const qs_linear *l = &m->linear[li - 1];
    const uint32_t *f = m->lin_feature + l->term_off;
    const double *c = m->lin_coeff + l->term_off;
    double out = l->konst;
    for (uint32_t j = 0; j < l->nterms; j++) {
        double v = x[f[j]];
        if (isnan(v))
            return n->value;
        double p = c[j] * v; /* rounded before the sum: no fused multiply-add */
        out += p;
    }
    return out;
}

void qs_model_leaf_ids(const qs_model *m, uint64_t t, uint32_t *ids)
{
    const qs_tree *tr = &m->trees[t];
    const qs_node *nd = m->nodes + tr->node_off;
    const qs_source_info *r = qs_source_get(m->source);
    const int by_node = r && r->leaves == QS_LEAVES_BY_NODE;
    uint32_t k = 0;
    for (uint32_t i = 0; i < tr->num_nodes; i++) {
        ids[i] = by_node ? i : k;
        k += nd[i].kind == QS_NODE_LEAF;
    }
}

/* ---------------------------------------------------------- validation */

/* Linear leaves: each on a leaf (node_linear agrees), in node order, with
 * its own run of terms, features in range; only in trees of weight 1 and
 * with accumulate double (a linear value is computed in double). */
static int check_linear(const qs_model *m, qs_error *err)
{
    if (m->num_linear == 0)
        return 0;
    if (!m->node_linear)
        return qs_fail(err, QS_ERR_FORMAT, 0, "linear leaves are not linked to their nodes");
    if (m->float_accumulate != QS_ACC_DOUBLE)
        return qs_fail(err, QS_ERR_FORMAT, 0, "linear leaves need accumulate double");
    uint64_t t = 0, terms = 0;
    for (uint64_t i = 0; i < m->num_linear; i++) {
        const qs_linear *l = &m->linear[i];
        unsigned long long li = (unsigned long long)i;
        if (l->node >= m->num_nodes || m->nodes[l->node].kind != QS_NODE_LEAF ||
            m->node_linear[l->node] != i + 1 || (i > 0 && l->node <= m->linear[i - 1].node))
            return qs_fail(err, QS_ERR_FORMAT, 0, "linear model %llu: not on a leaf, or out of order",
                           li);
        if (l->term_off != terms || l->nterms > QS_MAX_LINEAR_TERMS ||
            terms + l->nterms > m->num_lin_terms)
            return qs_fail(err, QS_ERR_FORMAT, 0, "linear model %llu: bad term range", li);
        terms += l->nterms;
        while (m->trees[t].node_off + m->trees[t].num_nodes <= l->node)
            t++;
        if (m->trees[t].weight != 1.0)
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "tree %llu: a tree with linear leaves must have weight 1",
                           (unsigned long long)t);
        for (uint32_t j = 0; j < l->nterms; j++)
            if (m->lin_feature[l->term_off + j] >= m->num_features)
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "tree %llu: linear leaf uses feature %u, out of range (model has %u)",
                               (unsigned long long)t, m->lin_feature[l->term_off + j],
                               m->num_features);
    }
    if (terms != m->num_lin_terms)
        return qs_fail(err, QS_ERR_FORMAT, 0, "linear terms do not add up");
    return 0;
}


static int is_float_exact(double v)
{
    return isnan(v) || (double)(float)v == v;
}

/* The common case in one pass over the nodes in index order: every child
 * after its parent, each node but the root reached once, and every node
 * passes the checks of check_tree.  Then the tree is valid (every node is
 * reached from the root, by induction on the index) with these leaves and
 * depth; 0 means "not shown": check_tree's walk decides, and finds the
 * same first error as ever.  dep and seen hold n entries. */
static int tree_ok_fast(const qs_model *m, const qs_node *nd, uint32_t n, uint32_t *leaves_out,
                        uint32_t *depth_out, uint32_t *dep, uint8_t *seen)
{
    memset(seen, 0, n);
    dep[0] = 0;
    uint32_t leaves = 0, maxd = 0;
    const uint32_t nf = m->num_features;
    for (uint32_t i = 0; i < n; i++) {
        const qs_node *x = &nd[i];
        if (i > 0 && !seen[i])
            return 0;
        const uint32_t d = dep[i];
        maxd = d > maxd ? d : maxd;
        if (x->kind == QS_NODE_LEAF) {
            if (m->float_accumulate && !is_float_exact(x->value))
                return 0;
            leaves++;
            continue;
        }
        if (x->feature >= nf || x->miss > QS_MISS_NAN || x->default_left > 1)
            return 0;
        if (x->kind == QS_NODE_NUM) {
            if (isnan(x->value) || (m->float_precision && !is_float_exact(x->value)))
                return 0;
        } else if (x->kind != QS_NODE_CAT || x->cat_nwords > QS_MAX_CAT_WORDS ||
                   (uint64_t)x->cat_off + x->cat_nwords > m->num_cat_words) {
            return 0;
        }
        /* Children after the node, in range, distinct, not reached before. */
        const uint32_t l = (uint32_t)x->left, r = (uint32_t)x->right;
        if (l - i - 1 >= n - i - 1 || r - i - 1 >= n - i - 1 || l == r || seen[l] || seen[r])
            return 0;
        seen[l] = seen[r] = 1;
        dep[l] = dep[r] = d + 1;
    }
    if (leaves > QS_MAX_LEAVES)
        return 0;
    if (leaves_out)
        *leaves_out = leaves;
    if (depth_out)
        *depth_out = maxd;
    return 1;
}

/* Iterative depth-first check of one tree; also reports leaves and depth. */
static int check_tree(const qs_model *m, uint64_t ti, uint32_t *leaves_out,
                      uint32_t *depth_out, uint32_t *stack, uint32_t *depth,
                      uint8_t *seen, qs_error *err)
{
    const qs_tree *t = &m->trees[ti];
    const qs_node *nd = m->nodes + t->node_off;
    uint32_t n = t->num_nodes;
    unsigned long long tl = (unsigned long long)ti;
    if (n == 0)
        return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu has no nodes", tl);
    if (t->class_id >= m->num_classes)
        return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu: class %u out of range (model has %u)",
                       tl, t->class_id, m->num_classes);
    if (!isfinite(t->weight))
        return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu: weight is not finite", tl);
    if (m->float_accumulate == QS_ACC_FLOAT_DOUBLE && !is_float_exact(t->weight))
        return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu: weight is not a float32 value", tl);
    if (m->float_accumulate == QS_ACC_FLOAT && t->weight != 1.0)
        return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                       "tree %llu: per-tree weights are not supported with float32 accumulation", tl);
    if (tree_ok_fast(m, nd, n, leaves_out, depth_out, depth, seen))
        return 0;
    memset(seen, 0, n);
    uint32_t sp = 0, leaves = 0, maxd = 0;
    stack[sp] = 0;
    depth[sp++] = 0;
    seen[0] = 1;
    while (sp) {
        sp--;
        uint32_t i = stack[sp], d = depth[sp];
        const qs_node *x = &nd[i];
        if (d > maxd)
            maxd = d;
        if (x->kind == QS_NODE_LEAF) {
            if (m->float_accumulate && !is_float_exact(x->value))
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "tree %llu node %u: leaf value is not a float32 value", tl, i);
            leaves++;
            continue;
        }
        if (x->kind != QS_NODE_NUM && x->kind != QS_NODE_CAT)
            return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu node %u: bad node kind", tl, i);
        if (x->feature >= m->num_features)
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "tree %llu node %u: feature %u out of range (model has %u)",
                           tl, i, x->feature, m->num_features);
        if (x->miss > QS_MISS_NAN || x->default_left > 1)
            return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu node %u: bad missing rule", tl, i);
        if (x->kind == QS_NODE_NUM) {
            if (isnan(x->value))
                return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu node %u: threshold is NaN", tl, i);
            if (m->float_precision && !is_float_exact(x->value))
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "tree %llu node %u: threshold is not a float32 value", tl, i);
        } else {
            if (x->cat_nwords > QS_MAX_CAT_WORDS ||
                (uint64_t)x->cat_off + x->cat_nwords > m->num_cat_words)
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "tree %llu node %u: category set out of range", tl, i);
        }
        int32_t c[2] = { x->left, x->right };
        for (int k = 0; k < 2; k++) {
            if (c[k] < 0 || (uint32_t)c[k] >= n)
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "tree %llu node %u: child %d out of range (tree has %u nodes)",
                               tl, i, c[k], n);
            if (seen[c[k]])
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "tree %llu node %u: node %d is reached twice (cycle or shared node)",
                               tl, i, c[k]);
            seen[c[k]] = 1;
            stack[sp] = (uint32_t)c[k];
            depth[sp++] = d + 1;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        if (!seen[i])
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "tree %llu: node %u is not reachable from the root", tl, i);
    if (leaves > QS_MAX_LEAVES)
        return qs_fail(err, QS_ERR_LIMIT, 0, "tree %llu has %u leaves (limit %u)", tl, leaves,
                       QS_MAX_LEAVES);
    if (leaves_out)
        *leaves_out = leaves;
    if (depth_out)
        *depth_out = maxd;
    return 0;
}

/* Trees per validating thread below which one thread checks them all. */
#define SCAN_MIN_TREES 16
#define SCAN_MAX_PARTS 64

static int model_scan(const qs_model *m, uint32_t *max_leaves, uint32_t *max_depth,
                      unsigned threads, qs_error *err)
{
    if (m->num_classes == 0 || m->num_classes > QS_MAX_CLASSES || !m->base || !m->out_bias)
        return qs_fail(err, QS_ERR_FORMAT, 0, "bad number of classes");
    if (m->num_features > QS_MAX_FEATURES)
        return qs_fail(err, QS_ERR_LIMIT, 0, "%u features (limit %u)", m->num_features,
                       QS_MAX_FEATURES);
    if (m->cmp != QS_CMP_LE && m->cmp != QS_CMP_LT)
        return qs_fail(err, QS_ERR_FORMAT, 0, "bad comparison");
    if (m->float_accumulate < QS_ACC_DOUBLE || m->float_accumulate > QS_ACC_FLOAT_DOUBLE)
        return qs_fail(err, QS_ERR_FORMAT, 0, "bad accumulation mode");
    if (!isfinite(m->transform_param))
        return qs_fail(err, QS_ERR_FORMAT, 0, "transform parameter is not finite");
    if (!qs_transform_known(m->transform))
        return qs_fail(err, QS_ERR_FORMAT, 0, "unknown transform '%.16s'", m->transform);
    for (uint32_t c = 0; c < m->num_classes; c++) {
        if (!isfinite(m->base[c]))
            return qs_fail(err, QS_ERR_FORMAT, 0, "base score of class %u is not finite", c);
        if (m->float_accumulate && !is_float_exact(m->base[c]))
            return qs_fail(err, QS_ERR_FORMAT, 0, "base score of class %u is not a float32 value", c);
    }
    if (!m->out_affine && m->out_divide > 1)
        return qs_fail(err, QS_ERR_FORMAT, 0, "an output divisor needs the output affine");
    if (m->out_float != 0 && (m->out_float != 1 || !m->out_affine ||
                              m->float_accumulate != QS_ACC_DOUBLE))
        return qs_fail(err, QS_ERR_FORMAT, 0,
                       "an output rounded to float32 needs the output affine and accumulate "
                       "double");
    if (m->iter_trees > QS_MAX_TREES)
        return qs_fail(err, QS_ERR_FORMAT, 0, "%u trees per iteration (limit %u)",
                       m->iter_trees, QS_MAX_TREES);
    if (m->out_affine != 0 && m->out_affine != 1)
        return qs_fail(err, QS_ERR_FORMAT, 0, "bad output affine flag");
    if (m->out_affine) {
        if (m->float_accumulate == QS_ACC_FLOAT_DOUBLE)
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "an output scale and bias need accumulate double or float");
        if (!isfinite(m->out_scale))
            return qs_fail(err, QS_ERR_FORMAT, 0, "output scale is not finite");
        if (m->out_divide > QS_MAX_TREES)
            return qs_fail(err, QS_ERR_FORMAT, 0, "output divisor %u beyond the limit %u",
                           m->out_divide, QS_MAX_TREES);
        /* accumulate float: one float32 addition of the bias (ONNX Runtime's
         * base values), so the scale is 1 and the biases float32 values */
        if (m->float_accumulate == QS_ACC_FLOAT && m->out_scale != 1.0)
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "with accumulate float the output scale must be 1");
        for (uint32_t c = 0; c < m->num_classes; c++) {
            if (!isfinite(m->out_bias[c]))
                return qs_fail(err, QS_ERR_FORMAT, 0, "output bias of class %u is not finite", c);
            if (m->float_accumulate == QS_ACC_FLOAT && !is_float_exact(m->out_bias[c]))
                return qs_fail(err, QS_ERR_FORMAT, 0,
                               "output bias of class %u is not a float32 value", c);
        }
    }
    uint32_t maxn = 1;
    uint64_t total = 0;
    for (uint64_t t = 0; t < m->num_trees; t++) {
        if (m->trees[t].node_off != total)
            return qs_fail(err, QS_ERR_FORMAT, 0, "tree %llu: bad node offset",
                           (unsigned long long)t);
        total += m->trees[t].num_nodes;
        if (m->trees[t].num_nodes > maxn)
            maxn = m->trees[t].num_nodes;
    }
    if (total != m->num_nodes)
        return qs_fail(err, QS_ERR_FORMAT, 0, "node count mismatch");
    if (maxn > QS_MAX_TREE_NODES)
        return qs_fail(err, QS_ERR_LIMIT, 0, "tree with %u nodes (limit %u)", maxn,
                       QS_MAX_TREE_NODES);
    /* The trees in contiguous parts (side by side with threads > 1), each
     * stopping at its first bad tree: the first part that failed holds the
     * first bad tree, whose error is the one a single pass reports. */
    unsigned parts = qs_work_parts(m->num_trees, SCAN_MIN_TREES, threads, SCAN_MAX_PARTS);
    /* one error record per part: on the heap with threads (they are 0.5 KiB
     * each), and one thread when there is no room for them */
    qs_error one, *perr = &one;
    if (parts > 1 && !(perr = malloc(parts * sizeof *perr))) {
        perr = &one;
        parts = 1;
    }
    uint32_t pl[SCAN_MAX_PARTS], pd[SCAN_MAX_PARTS];
    int prc[SCAN_MAX_PARTS];
#if QS_HAVE_OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(qs_team(parts)) if (parts > 1)
#endif
    for (unsigned p = 0; p < parts; p++) {
        uint32_t *stack = malloc((size_t)maxn * 2 * sizeof *stack);
        uint8_t *seen = malloc(maxn);
        uint32_t ml = 0, md = 0;
        int r = 0;
        qs_error_clear(&perr[p]);
        if (!stack || !seen) {
            r = qs_fail(&perr[p], QS_ERR_NOMEM, 0, "out of memory");
        } else {
            const uint64_t t1 = m->num_trees * (p + 1) / parts;
            for (uint64_t t = m->num_trees * p / parts; t < t1 && r == 0; t++) {
                uint32_t l = 0, d = 0;
                r = check_tree(m, t, &l, &d, stack, stack + maxn, seen, &perr[p]);
                if (r == 0) {
                    if (l > ml)
                        ml = l;
                    if (d > md)
                        md = d;
                }
            }
        }
        free(stack);
        free(seen);
        prc[p] = r;
        pl[p] = ml;
        pd[p] = md;
    }
    uint32_t ml = 0, md = 0;
    int rc = 0;
    for (unsigned p = 0; p < parts && rc == 0; p++) {
        if ((rc = prc[p]) != 0) {
            if (err)
                *err = perr[p];
            break;
        }
        if (pl[p] > ml)
            ml = pl[p];
        if (pd[p] > md)
            md = pd[p];
    }
    if (perr != &one)
        free(perr);
    if (rc == 0)
        rc = check_linear(m, err);
    if (max_leaves)
        *max_leaves = ml;
    if (max_depth)
        *max_depth = md;
    return rc;
}

int qs_model_validate(const qs_model *m, qs_error *err)
{
    return model_scan(m, NULL, NULL, 1, err);
}

int qs_model_validate_shape(qs_model *m, unsigned threads, qs_error *err)
{
    uint32_t l = 0, d = 0;
    m->shape_known = 0;
    if (model_scan(m, &l, &d, threads, err) != 0)
        return -1;
    m->shape_known = 1;
    m->shape_trees = m->num_trees;
    m->shape_nodes = m->num_nodes;
    m->shape_leaves = l;
    m->shape_depth = d;
    return 0;
}

void qs_model_get_info(const qs_model *m, qs_model_info *info)
{
    memset(info, 0, sizeof *info);
    info->source = m->source;
    info->num_features = m->num_features;
    info->num_classes = m->num_classes;
    info->num_trees = m->num_trees;
    info->float_precision = m->float_precision;
    info->float_accumulate = m->float_accumulate;
    info->absent_is_missing = m->absent_missing;
    info->transform = m->transform;
    uint32_t l = 0, d = 0;
    qs_error e;
    if (m->shape_known && m->shape_trees == m->num_trees && m->shape_nodes == m->num_nodes) {
        info->max_leaves = m->shape_leaves;
        info->max_depth = m->shape_depth;
    } else if (model_scan(m, &l, &d, 1, &e) == 0) {
        info->max_leaves = l;
        info->max_depth = d;
    }
    int obl = m->num_trees > 0;
    for (uint64_t t = 0; t < m->num_trees && obl; t++)
        obl = qs_tree_is_oblivious(m, &m->trees[t], NULL);
    info->oblivious = obl;
}

int qs_transform_known(const char *name)
{
    static const char *const names[] = { "none", "sigmoid", "softmax", "exp",
                                         "ova-sigmoid", "hinge", "argmax", "signed-square",
                                         "fmath-exp", "fmath-softmax", "log1p-exp",
                                         "unsupported" };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strncmp(name, names[i], 16) == 0)
            return 1;
    return 0;
}

/* ------------------------------------------------------------- oblivious */

static int same_test(const qs_node *a, const qs_node *b)
{
    return a->kind == QS_NODE_NUM && b->kind == QS_NODE_NUM && a->feature == b->feature &&
           a->value == b->value && a->miss == b->miss && a->default_left == b->default_left;
}

int qs_tree_is_oblivious(const qs_model *m, const qs_tree *t, uint32_t *depth_out)
{
    const qs_node *nd = m->nodes + t->node_off;
    uint32_t n = t->num_nodes;
    /* A complete tree of depth d has 2^(d+1)-1 nodes. */
    uint32_t d = 0;
    while (d < 31 && ((2u << d) - 1u) < n)
        d++;
    if (((2u << d) - 1u) != n || d > 16)
        return 0;
    /* Depth first on a stack of at most two nodes per level (no
     * allocation, so the answer never depends on memory): every node of a
     * level tests what the level's first one tests, and depth d is leaves. */
    const qs_node *first[16];
    uint32_t stk[2 * 17 + 2];
    uint8_t lev_of[2 * 17 + 2];
    unsigned sp = 0;
    stk[sp] = 0;
    lev_of[sp++] = 0;
    for (uint32_t l = 0; l < d; l++)
        first[l] = NULL;
    int ok = 1;
    while (sp > 0 && ok) {
        sp--;
        const uint32_t k = stk[sp], lev = lev_of[sp];
        if (k >= n) {
            ok = 0;
            break;
        }
        const qs_node *x = &nd[k];
        if (lev == d) {
            ok = x->kind == QS_NODE_LEAF;
            continue;
        }
        if (!first[lev])
            first[lev] = x;
        if (!same_test(first[lev], x) || sp + 2 > sizeof stk / sizeof stk[0]) {
            ok = 0;
            break;
        }
        stk[sp] = (uint32_t)x->right;
        lev_of[sp++] = (uint8_t)(lev + 1);
        stk[sp] = (uint32_t)x->left;
        lev_of[sp++] = (uint8_t)(lev + 1);
    }
    if (ok && depth_out)
        *depth_out = d;
    return ok;
}

/* ------------------------------------------------------------- scoring */

void qs_model_finish_scores(const qs_model *m, double *out, size_t n)
{
    if (!m->out_affine)
        return;
    const uint32_t K = m->num_classes;
    if (m->float_accumulate == QS_ACC_FLOAT) {
        /* A float32 sum plus a float32 bias (scale 1), rounded to float32:
         * the double sum of two float32 values rounded to float32 is their
         * float32 sum (53 >= 2 * 24 + 2: the double rounding is innocuous). */
        /* With a divisor: ONNX Runtime's AVERAGE, score / n_trees in
         * float32 (the count converted to float), then + base. */
        const float nd = (float)m->out_divide;
        for (size_t d = 0; d < n; d++)
            for (uint32_t c = 0; c < K; c++) {
                float s = (float)out[d * K + c];
                if (m->out_divide > 1)
                    s = s / nd;
                out[d * K + c] = (float)((double)s + m->out_bias[c]);
            }
        return;
    }
    for (size_t d = 0; d < n; d++)
        for (uint32_t c = 0; c < K; c++) {
            /* Two statements: the product is rounded before the sum (no
             * contraction into a fused multiply-add). */
            double s = out[d * K + c];
            if (m->out_divide > 1)
                s = s / (double)m->out_divide;
            double p = m->out_scale * s;
            double r = p + m->out_bias[c];
            out[d * K + c] = m->out_float ? (double)(float)r : r;
        }
}

void qs_model_walk_score(const qs_model *m, const double *x, double *out)
{
    qs_model_walk_sum(m, x, out);
    qs_model_finish_scores(m, out, 1);
}

void qs_model_walk_sum(const qs_model *m, const double *x, double *out)
{
    if (m->float_accumulate) {
        float acc[QS_MAX_CLASSES > 64 ? 64 : QS_MAX_CLASSES];
        float *a = m->num_classes <= 64 ? acc : malloc(sizeof(float) * m->num_classes);
        if (!a) {
            for (uint32_t c = 0; c < m->num_classes; c++)
                out[c] = NAN;
            return;
        }
        for (uint32_t c = 0; c < m->num_classes; c++)
            a[c] = (float)m->base[c];
        for (uint64_t t = 0; t < m->num_trees; t++) {
            const qs_tree *tr = &m->trees[t];
            uint32_t leaf = qs_tree_walk(m, tr, x);
            double c = tr->weight * m->nodes[tr->node_off + leaf].value;  /* no linear leaves here */
            if (m->float_accumulate == QS_ACC_FLOAT_DOUBLE)
                a[tr->class_id] = (float)((double)a[tr->class_id] + c);
            else
                a[tr->class_id] = a[tr->class_id] + (float)c;
        }
        for (uint32_t c = 0; c < m->num_classes; c++)
            out[c] = a[c];
        if (a != acc)
            free(a);
        return;
    }
    for (uint32_t c = 0; c < m->num_classes; c++)
        out[c] = m->base[c];
    for (uint64_t t = 0; t < m->num_trees; t++) {
        const qs_tree *tr = &m->trees[t];
        uint32_t leaf = qs_tree_walk(m, tr, x);
        out[tr->class_id] += tr->weight * qs_leaf_output(m, tr->node_off + leaf, x);
    }
}
