/* workspace.c: per-thread workspaces (document slots, accumulators, each
 * prepared back end's scratch), filling documents, the LETOR reader, and
 * node outcome counts for tree reversal. */
#include "score/score.h"

#include <string.h>

qs_workspace *qs_workspace_new(const qs_scorer *s, qs_error *err)
{
    qs_workspace *w = calloc(1, sizeof *w);
    if (!w)
        goto nomem;
    w->s = s;
    const qs_model *m = s->m;
    /* Document slots are dense vectors: keep slots x features within
     * QS_WORKSPACE_VALUES doubles (32 MiB), down to one slot for models with
     * millions of features, so neither can make a workspace huge. */
    uint64_t nf = m->num_features ? m->num_features : 1;
    w->nslots = s->doc_block;
    if ((uint64_t)w->nslots * nf > QS_WORKSPACE_VALUES)
        w->nslots = (uint32_t)(QS_WORKSPACE_VALUES / nf > 0 ? QS_WORKSPACE_VALUES / nf : 1);
    w->slot = calloc(w->nslots, sizeof *w->slot);
    w->xs = calloc(w->nslots, sizeof *w->xs);
    w->acc = malloc(sizeof(double) * m->num_classes * w->nslots);
    w->accf = malloc(sizeof(float) * m->num_classes * w->nslots);
    if (!w->slot || !w->xs || !w->acc || !w->accf)
        goto nomem;
    for (uint32_t i = 0; i < w->nslots; i++) {
        qs_slot *sl = &w->slot[i];
        sl->x = malloc(sizeof(double) * (m->num_features ? m->num_features : 1));
        sl->cap_touched = 256;
        sl->touched = malloc(sizeof(uint32_t) * sl->cap_touched);
        if (!sl->x || !sl->touched)
            goto nomem;
        sl->all_dirty = 1;
        w->xs[i] = sl->x;
    }
    /* Scratch for every back end prepared for the scorer. */
    for (unsigned b = 0; b < qs_backend_table_len; b++) {
        const qs_backend_def *d = qs_backend_table[b];
        if (!s->prepared[b])
            continue;
        if (d->ws_init && d->ws_init(d, s, s->state[b], &w->scratch[b], err) != 0) {
            qs_workspace_free(w);
            return NULL;
        }
        w->ready[b] = 1;
    }
    return w;
nomem:
    qs_workspace_free(w);
    qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    return NULL;
}

void qs_workspace_free(qs_workspace *w)
{
    if (!w)
        return;
    for (uint32_t i = 0; w->slot && i < w->nslots; i++) {
        free(w->slot[i].x);
        free(w->slot[i].touched);
    }
    free(w->slot);
    free(w->xs);
    for (unsigned b = 0; b < qs_backend_table_len; b++)
        if (w->ready[b] && qs_backend_table[b]->ws_free)
            qs_backend_table[b]->ws_free(w->scratch[b]);
    free(w->acc);
    free(w->accf);
    free(w);
}

uint32_t qs_workspace_slots(const qs_workspace *w) { return w->nslots; }

void qs_workspace_select(qs_workspace *w, uint32_t slot)
{
    w->cur = slot < w->nslots ? slot : w->nslots - 1;
}

void qs_doc_reset(qs_workspace *w, qs_absent absent)
{
    const qs_model *m = w->s->m;
    qs_slot *sl = &w->slot[w->cur];
    int missing = absent == QS_ABSENT_MISSING || (absent == QS_ABSENT_DEFAULT && m->absent_missing);
    double fill = missing ? NAN : 0.0;
    /* Refill only what the last document touched, unless the fill changed. */
    if (sl->all_dirty || !sl->filled || (isnan(fill) != isnan(sl->fill))) {
        for (uint32_t f = 0; f < m->num_features; f++)
            sl->x[f] = fill;
    } else {
        for (uint32_t i = 0; i < sl->ntouched; i++)
            sl->x[sl->touched[i]] = fill;
    }
    sl->fill = fill;
    sl->filled = 1;
    sl->all_dirty = 0;
    sl->ntouched = 0;
}

void qs_doc_set(qs_workspace *w, uint32_t id, double value)
{
    qs_slot *sl = &w->slot[w->cur];
    if (id >= w->s->m->num_features)
        return;
    sl->x[id] = value;
    if (sl->all_dirty)
        return;
    if (sl->ntouched == sl->cap_touched) {
        /* Past this many ids a full refill is as cheap as the list. */
        if (sl->cap_touched >= w->s->m->num_features) {
            sl->all_dirty = 1;
            return;
        }
        uint32_t nc = sl->cap_touched * 2;
        uint32_t *q = realloc(sl->touched, sizeof *q * nc);
        if (!q) {
            sl->all_dirty = 1;
            return;
        }
        sl->touched = q;
        sl->cap_touched = nc;
    }
    sl->touched[sl->ntouched++] = id;
}

void qs_count_node_outcomes(const qs_scorer *s, const qs_workspace *w, uint64_t *false_nodes,
                            uint64_t *true_nodes)
{
    const qs_model *m = s->m;
    const double *x = w->slot[w->cur].x;
    for (uint64_t t = 0; t < m->num_trees; t++) {
        const qs_tree *tr = &m->trees[t];
        for (uint32_t i = 0; i < tr->num_nodes; i++) {
            const qs_node *n = &m->nodes[tr->node_off + i];
            if (n->kind == QS_NODE_LEAF)
                continue;
            if (qs_node_goes_left(m, n, x[n->feature]))
                true_nodes[t]++;
            else
                false_nodes[t]++;
        }
    }
}

/* ------------------------------------------------------------ parsing */

int qs_parse_value(const qs_scorer *s, const char *tok, size_t len, double *out)
{
    return qs_parse_number(s->m->float_precision, tok, len, out);
}

int qs_letor_parse(const qs_scorer *s, qs_workspace *w, qs_absent absent, const char *line,
                   size_t len, qs_letor_line *out, int *is_doc, qs_error *err)
{
    const char *p = line, *end = line + len;
    char show[64];
    memset(out, 0, sizeof *out);
    out->max_id = -1;
    *is_doc = 0;
    /* A comment runs to the end of the line. */
    const char *hash = memchr(line, '#', len);
    if (hash)
        end = hash;
    while (end > p && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p == end)
        return 0;
    qs_doc_reset(w, absent);
    const char *t = p;
    while (p < end && *p != ' ' && *p != '\t')
        p++;
    double lab;
    if (qs_parse_number(0, t, (size_t)(p - t), &lab) != 0 || isnan(lab)) {
        qs_quote(show, sizeof show, t, (size_t)(p - t));
        return qs_fail(err, QS_ERR_FORMAT, 0, "bad label '%s' (expected a number)", show);
    }
    out->label = t;
    out->label_len = (size_t)(p - t);
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (p == end)
            break;
        t = p;
        while (p < end && *p != ' ' && *p != '\t')
            p++;
        size_t n = (size_t)(p - t);
        if (n > 4 && memcmp(t, "qid:", 4) == 0) {
            if (out->qid)
                return qs_fail(err, QS_ERR_FORMAT, 0, "more than one qid on a line");
            out->qid = t + 4;
            out->qid_len = n - 4;
            continue;
        }
        const char *colon = memchr(t, ':', n);
        uint64_t id = 0;
        const char *d = t;
        while (d < t + n && *d >= '0' && *d <= '9') {
            if (id <= UINT32_MAX) /* saturates: any longer id is out of range */
                id = id * 10 + (uint64_t)(*d - '0');
            d++;
        }
        if (!colon || d != colon || colon == t) {
            qs_quote(show, sizeof show, t, n);
            return qs_fail(err, QS_ERR_FORMAT, 0, "bad feature token '%s' (expected INDEX:VALUE)",
                           show);
        }
        if (id > UINT32_MAX) {
            qs_quote(show, sizeof show, t, n);
            return qs_fail(err, QS_ERR_FORMAT, 0, "feature id in '%s' is out of range", show);
        }
        double v;
        if (qs_parse_value(s, colon + 1, (size_t)(t + n - colon - 1), &v) != 0) {
            qs_quote(show, sizeof show, t, n);
            return qs_fail(err, QS_ERR_FORMAT, 0, "bad feature value in '%s' (expected a number)",
                           show);
        }
        qs_doc_set(w, (uint32_t)id, v);
        if ((long long)id > out->max_id)
            out->max_id = (long long)id;
    }
    *is_doc = 1;
    return 0;
}
