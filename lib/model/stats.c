/* stats.c: facts about a model for inspection (qs_model_get_stats): node,
 * leaf and feature counts, the trees' leaf-count and depth histograms. */
#include "model/model.h"

#include <string.h>

/* Add one to value v of a histogram held as counts[0 .. n) (grown). */
static int bump(uint64_t **counts, size_t *n, uint64_t v)
{
    if (v >= *n) {
        size_t nn = (size_t)v + 1;
        uint64_t *c = realloc(*counts, nn * sizeof *c);
        if (!c)
            return -1;
        memset(c + *n, 0, (nn - *n) * sizeof *c);
        *counts = c;
        *n = nn;
    }
    (*counts)[v]++;
    return 0;
}

/* The non-empty bins of counts[0 .. n), ascending. */
static int bins(const uint64_t *counts, size_t n, qs_hist_bin **out, size_t *nout)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += counts[i] != 0;
    *out = calloc(k ? k : 1, sizeof **out);
    if (!*out)
        return -1;
    k = 0;
    for (size_t i = 0; i < n; i++)
        if (counts[i])
            (*out)[k].value = i, (*out)[k++].count = counts[i];
    *nout = k;
    return 0;
}

void qs_model_stats_free(qs_model_stats *st)
{
    if (!st)
        return;
    free(st->leaves_hist);
    free(st->depth_hist);
    st->leaves_hist = st->depth_hist = NULL;
    st->n_leaves_hist = st->n_depth_hist = 0;
}

int qs_model_get_stats(const qs_model *m, qs_model_stats *st, qs_error *err)
{
    memset(st, 0, sizeof *st);
    st->objective = m->objective;
    st->compare = m->cmp == QS_CMP_LT ? "lt" : "le";
    st->max_feature_used = -1;
    uint8_t *used = calloc(m->num_features ? m->num_features : 1, 1);
    uint32_t *depth = NULL, *stack = NULL;
    uint64_t *lc = NULL, *dc = NULL;
    size_t nlc = 0, ndc = 0;
    uint32_t cap = 0;
    if (!used)
        goto nomem;
    for (uint64_t t = 0; t < m->num_trees; t++) {
        const qs_tree *tr = &m->trees[t];
        const qs_node *nodes = m->nodes + tr->node_off;
        if (tr->num_nodes > cap) {
            cap = tr->num_nodes;
            free(depth);
            free(stack);
            depth = malloc(sizeof *depth * cap);
            stack = malloc(sizeof *stack * cap);
            if (!depth || !stack)
                goto nomem;
        }
        /* Depth of every node from the root (a validated tree reaches each
         * node once, so the stack holds at most num_nodes entries). */
        uint32_t sp = 0, leaves = 0, maxd = 0;
        if (tr->num_nodes) {
            depth[0] = 0;
            stack[sp++] = 0;
        }
        while (sp) {
            uint32_t i = stack[--sp];
            const qs_node *n = &nodes[i];
            if (n->kind == QS_NODE_LEAF) {
                leaves++;
                if (depth[i] > maxd)
                    maxd = depth[i];
                continue;
            }
            if (n->kind == QS_NODE_CAT)
                st->cat_nodes++;
            if (n->feature < m->num_features && !used[n->feature]) {
                used[n->feature] = 1;
                st->features_used++;
                if ((int64_t)n->feature > st->max_feature_used)
                    st->max_feature_used = n->feature;
            }
            int32_t ch[2] = { n->left, n->right };
            for (int k = 0; k < 2; k++) {
                if (ch[k] < 0 || (uint32_t)ch[k] >= tr->num_nodes || sp >= cap)
                    continue; /* not a validated model: count what can be reached */
                depth[ch[k]] = depth[i] + 1;
                stack[sp++] = (uint32_t)ch[k];
            }
        }
        st->nodes += tr->num_nodes;
        st->leaves += leaves;
        if (qs_tree_is_oblivious(m, tr, NULL))
            st->oblivious_trees++;
        if (bump(&lc, &nlc, leaves) != 0 || bump(&dc, &ndc, maxd) != 0)
            goto nomem;
    }
    if (bins(lc, nlc, &st->leaves_hist, &st->n_leaves_hist) != 0 ||
        bins(dc, ndc, &st->depth_hist, &st->n_depth_hist) != 0)
        goto nomem;
    free(used);
    free(depth);
    free(stack);
    free(lc);
    free(dc);
    return 0;
nomem:
    free(used);
    free(depth);
    free(stack);
    free(lc);
    free(dc);
    qs_model_stats_free(st);
    return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (model statistics)");
}
