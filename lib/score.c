/* score.c: loading a .qsm into a scorer, per-thread workspaces, documents,
 * and the back ends: the reference walk, scalar QuickScorer (Δ-skip) with
 * 8/16/32/64-bit and multi-word masks, and QS-Ω for oblivious blocks. */
#include "layout.h"
#include "qsm.h"

#include <string.h>

struct qs_scorer {
    qs_model *m;
    qs_layout *L;
    uint64_t max_block_trees; /* largest block, for the workspace's vectors */
    uint32_t max_words;       /* widest multi-word block */
};

struct qs_workspace {
    const qs_scorer *s;
    double *x;                /* dense document, num_features values */
    uint32_t *touched;        /* ids set since the last reset */
    uint32_t ntouched, cap_touched;
    int all_dirty;            /* x must be refilled entirely */
    double fill;              /* the absent value x was last filled with */
    int filled;
    void *vec;                /* leaf bitvectors of one block */
    double *acc;
    float *accf;
};

/* ------------------------------------------------------------ loading */

qs_scorer *qs_scorer_load(const unsigned char *buf, size_t len, qs_error *err)
{
    qs_scorer *s = calloc(1, sizeof *s);
    if (!s) {
        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        return NULL;
    }
    if (qsm_read(buf, len, &s->m, &s->L, err) != 0) {
        free(s);
        return NULL;
    }
    for (uint32_t b = 0; b < s->L->nblocks; b++) {
        const qs_block *B = &s->L->blocks[b];
        uint64_t n = B->tree_end - B->tree_begin;
        if (n > s->max_block_trees)
            s->max_block_trees = n;
        if (B->kind == QS_BLOCK_QS && B->width == 0 && B->words > s->max_words)
            s->max_words = B->words;
    }
    return s;
}

void qs_scorer_free(qs_scorer *s)
{
    if (!s)
        return;
    qs_model_free(s->m);
    qs_layout_free(s->L);
    free(s);
}

const qs_model *qs_scorer_model(const qs_scorer *s) { return s->m; }

int qs_score_digits(const qs_scorer *s) { return s->m->float_accumulate ? 9 : 17; }

/* ------------------------------------------------------------ back ends */

static const char *const backend_names[QS_BACKEND_COUNT_] = { "auto", "walk", "qs" };

const char *qs_backend_name(qs_backend b)
{
    return (unsigned)b < QS_BACKEND_COUNT_ ? backend_names[b] : "?";
}

qs_backend qs_backend_from_name(const char *name)
{
    for (int i = 0; i < QS_BACKEND_COUNT_; i++)
        if (strcmp(name, backend_names[i]) == 0)
            return (qs_backend)i;
    return QS_BACKEND_COUNT_;
}

int qs_backend_available(const qs_scorer *s, qs_backend b)
{
    (void)s;
    return (unsigned)b < QS_BACKEND_COUNT_;
}

/* ------------------------------------------------------------ workspace */

qs_workspace *qs_workspace_new(const qs_scorer *s, qs_error *err)
{
    qs_workspace *w = calloc(1, sizeof *w);
    if (!w)
        goto nomem;
    w->s = s;
    const qs_model *m = s->m;
    uint64_t per_tree = s->max_words ? (uint64_t)s->max_words * 8 : 8;
    w->x = malloc(sizeof(double) * (m->num_features ? m->num_features : 1));
    w->cap_touched = 256;
    w->touched = malloc(sizeof(uint32_t) * w->cap_touched);
    w->vec = malloc((size_t)((s->max_block_trees ? s->max_block_trees : 1) * per_tree));
    w->acc = malloc(sizeof(double) * m->num_classes);
    w->accf = malloc(sizeof(float) * m->num_classes);
    if (!w->x || !w->touched || !w->vec || !w->acc || !w->accf)
        goto nomem;
    w->all_dirty = 1;
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
    free(w->x);
    free(w->touched);
    free(w->vec);
    free(w->acc);
    free(w->accf);
    free(w);
}

void qs_doc_reset(qs_workspace *w, qs_absent absent)
{
    const qs_model *m = w->s->m;
    int missing = absent == QS_ABSENT_MISSING || (absent == QS_ABSENT_DEFAULT && m->absent_missing);
    double fill = missing ? NAN : 0.0;
    /* Refill only what the last document touched, unless the fill changed. */
    if (w->all_dirty || !w->filled || (isnan(fill) != isnan(w->fill))) {
        for (uint32_t f = 0; f < m->num_features; f++)
            w->x[f] = fill;
    } else {
        for (uint32_t i = 0; i < w->ntouched; i++)
            w->x[w->touched[i]] = fill;
    }
    w->fill = fill;
    w->filled = 1;
    w->all_dirty = 0;
    w->ntouched = 0;
}

void qs_doc_set(qs_workspace *w, uint32_t id, double value)
{
    if (id >= w->s->m->num_features)
        return;
    w->x[id] = value;
    if (w->all_dirty)
        return;
    if (w->ntouched == w->cap_touched) {
        /* Past this many ids a full refill is as cheap as the list. */
        if (w->cap_touched >= w->s->m->num_features) {
            w->all_dirty = 1;
            return;
        }
        uint32_t nc = w->cap_touched * 2;
        uint32_t *q = realloc(w->touched, sizeof *q * nc);
        if (!q) {
            w->all_dirty = 1;
            return;
        }
        w->touched = q;
        w->cap_touched = nc;
    }
    w->touched[w->ntouched++] = id;
}

/* ------------------------------------------------------------ QS */

/* End of the run of "false" nodes of a group for value x: the nodes whose
 * threshold sends x right (t < x for <=, t <= x for <).  Δ-skip: test every
 * Δ-th threshold first, then finish one by one. */
static inline uint32_t scan_end(const double *thr, uint32_t i, uint32_t end, double x, int lt,
                                uint32_t delta)
{
    if (lt) {
        while (i + delta <= end && thr[i + delta - 1] <= x)
            i += delta;
        while (i < end && thr[i] <= x)
            i++;
    } else {
        while (i + delta <= end && thr[i + delta - 1] < x)
            i += delta;
        while (i < end && thr[i] < x)
            i++;
    }
    return i;
}

/* For group g and value x, the entry range whose masks apply. */
static inline void group_range(const qs_layout *L, const qs_group *g, double x, int lt,
                               uint32_t *b, uint32_t *e)
{
    switch (g->rule) {
    case QS_RULE_NAN:
        if (isnan(x)) {
            *b = g->sp_begin;
            *e = g->sp_end;
            return;
        }
        break;
    case QS_RULE_ZERO:
        if (isnan(x))
            x = 0.0;
        if (x >= -QS_ZERO_BAND && x <= QS_ZERO_BAND) {
            *b = g->sp_begin;
            *e = g->sp_end;
            return;
        }
        break;
    default:
        if (isnan(x))
            x = 0.0;
        break;
    }
    *b = g->begin;
    *e = scan_end(L->thr, g->begin, g->end, x, lt, L->delta);
}

static inline void accumulate(const qs_scorer *s, uint64_t t, uint32_t leaf, qs_workspace *w)
{
    const qs_layout *L = s->L;
    double c = L->leaves[L->leaf_off[t] + leaf];
    uint32_t cls = s->m->trees[t].class_id;
    switch (s->m->float_accumulate) {
    case QS_ACC_DOUBLE: w->acc[cls] += c; break;
    case QS_ACC_FLOAT: w->accf[cls] = w->accf[cls] + (float)c; break;
    default: w->accf[cls] = (float)((double)w->accf[cls] + c); break;
    }
}

/* One QS block with T-bit leaf vectors.  The last leaf's bit is OR-ed in
 * before taking the lowest set bit: for a valid layout the exit leaf's bit is
 * always set and no higher than that, so it changes nothing, and a corrupt
 * layout can never index past the tree's leaves. */
#define DEFINE_QS_NARROW(NAME, T, CTZ)                                                    \
    static void NAME(const qs_scorer *s, const qs_block *B, qs_workspace *w)             \
    {                                                                                     \
        const qs_layout *L = s->L;                                                        \
        const qs_model *m = s->m;                                                         \
        const int lt = m->cmp == QS_CMP_LT;                                               \
        T *v = w->vec;                                                                    \
        const uint32_t nt = (uint32_t)(B->tree_end - B->tree_begin);                      \
        for (uint32_t i = 0; i < nt; i++)                                                 \
            v[i] = (T)~(T)0;                                                              \
        for (uint32_t g = B->group_begin; g < B->group_end; g++) {                        \
            const qs_group *G = &L->groups[g];                                            \
            uint32_t b, e;                                                                \
            group_range(L, G, w->x[G->feature], lt, &b, &e);                              \
            for (; b < e; b++)                                                            \
                v[L->etree[b]] &= (T)L->emask[b];                                         \
        }                                                                                 \
        for (uint32_t c = B->cat_begin; c < B->cat_end; c++) {                            \
            const qs_catnode *C = &L->cats[c];                                            \
            const qs_node *n = &m->nodes[C->node];                                        \
            if (!qs_node_goes_left(m, n, w->x[n->feature]))                               \
                v[C->tree] &= (T)C->mask;                                                 \
        }                                                                                 \
        for (uint32_t i = 0; i < nt; i++) {                                               \
            uint64_t t = B->tree_begin + i;                                               \
            T vv = (T)(v[i] | (T)((T)1 << (L->nleaves[t] - 1)));                          \
            accumulate(s, t, (uint32_t)CTZ(vv), w);                                       \
        }                                                                                 \
    }

DEFINE_QS_NARROW(qs_block8, uint8_t, __builtin_ctz)
DEFINE_QS_NARROW(qs_block16, uint16_t, __builtin_ctz)
DEFINE_QS_NARROW(qs_block32, uint32_t, __builtin_ctz)
DEFINE_QS_NARROW(qs_block64, uint64_t, __builtin_ctzll)

/* Multi-word leaf vectors (trees of more than 64 leaves): a node's mask is
 * the range [lo, hi) of its left subtree's leaves, cleared word by word. */
static inline void clear_range(uint64_t *v, uint32_t lo, uint32_t hi)
{
    uint32_t a = lo >> 6, b = (hi - 1) >> 6;
    uint64_t lom = ~0ull << (lo & 63), him = ~0ull >> (63 - ((hi - 1) & 63));
    if (a == b) {
        v[a] &= ~(lom & him);
        return;
    }
    v[a] &= ~lom;
    for (uint32_t k = a + 1; k < b; k++)
        v[k] = 0;
    v[b] &= ~him;
}

static void qs_block_wide(const qs_scorer *s, const qs_block *B, qs_workspace *w)
{
    const qs_layout *L = s->L;
    const qs_model *m = s->m;
    const int lt = m->cmp == QS_CMP_LT;
    const uint32_t W = B->words, nt = (uint32_t)(B->tree_end - B->tree_begin);
    uint64_t *v = w->vec;
    for (uint64_t i = 0; i < (uint64_t)nt * W; i++)
        v[i] = ~0ull;
    for (uint32_t g = B->group_begin; g < B->group_end; g++) {
        const qs_group *G = &L->groups[g];
        uint32_t b, e;
        group_range(L, G, w->x[G->feature], lt, &b, &e);
        for (; b < e; b++)
            clear_range(v + (uint64_t)L->etree[b] * W, (uint32_t)(L->emask[b] >> 32),
                        (uint32_t)L->emask[b]);
    }
    for (uint32_t c = B->cat_begin; c < B->cat_end; c++) {
        const qs_catnode *C = &L->cats[c];
        const qs_node *n = &m->nodes[C->node];
        if (!qs_node_goes_left(m, n, w->x[n->feature]))
            clear_range(v + (uint64_t)C->tree * W, (uint32_t)(C->mask >> 32), (uint32_t)C->mask);
    }
    for (uint32_t i = 0; i < nt; i++) {
        uint64_t t = B->tree_begin + i;
        const uint64_t *vt = v + (uint64_t)i * W;
        uint32_t nl = L->nleaves[t], leaf = nl - 1;
        for (uint32_t k = 0; k < W; k++)
            if (vt[k]) {
                uint32_t cand = k * 64 + (uint32_t)__builtin_ctzll(vt[k]);
                if (cand < leaf)
                    leaf = cand;
                break;
            }
        accumulate(s, t, leaf, w);
    }
}

/* QS-Ω: an oblivious tree's exit leaf is the OR of one bit per level whose
 * test is false, so each entry ORs its level's bit. */
static void qs_block_omega(const qs_scorer *s, const qs_block *B, qs_workspace *w)
{
    const qs_layout *L = s->L;
    const int lt = s->m->cmp == QS_CMP_LT;
    uint32_t *v = w->vec;
    const uint32_t nt = (uint32_t)(B->tree_end - B->tree_begin);
    memset(v, 0, sizeof *v * nt);
    for (uint32_t g = B->group_begin; g < B->group_end; g++) {
        const qs_group *G = &L->groups[g];
        uint32_t b, e;
        group_range(L, G, w->x[G->feature], lt, &b, &e);
        for (; b < e; b++)
            v[L->etree[b]] |= (uint32_t)L->emask[b];
    }
    for (uint32_t i = 0; i < nt; i++) {
        uint64_t t = B->tree_begin + i;
        accumulate(s, t, v[i] & (L->nleaves[t] - 1), w);
    }
}

int qs_score_doc(const qs_scorer *s, qs_workspace *w, qs_backend b, double *out)
{
    const qs_model *m = s->m;
    if (b == QS_BACKEND_WALK) {
        qs_model_walk_score(m, w->x, out);
        return 0;
    }
    if (b != QS_BACKEND_AUTO && b != QS_BACKEND_QS)
        return -1;
    for (uint32_t c = 0; c < m->num_classes; c++) {
        w->acc[c] = m->base[c];
        w->accf[c] = (float)m->base[c];
    }
    /* Blocks in tree order, so the sum keeps the source's order. */
    for (uint32_t k = 0; k < s->L->nblocks; k++) {
        const qs_block *B = &s->L->blocks[k];
        if (B->kind == QS_BLOCK_OMEGA)
            qs_block_omega(s, B, w);
        else
            switch (B->width) {
            case 8: qs_block8(s, B, w); break;
            case 16: qs_block16(s, B, w); break;
            case 32: qs_block32(s, B, w); break;
            case 64: qs_block64(s, B, w); break;
            default: qs_block_wide(s, B, w); break;
            }
    }
    for (uint32_t c = 0; c < m->num_classes; c++)
        out[c] = m->float_accumulate ? (double)w->accf[c] : w->acc[c];
    return 0;
}

/* ------------------------------------------------------------ transforms */

void qs_transform(const qs_scorer *s, double *y)
{
    const qs_model *m = s->m;
    const uint32_t k = m->num_classes;
    const double a = m->transform_param;
    const int f = m->float_accumulate == QS_ACC_FLOAT; /* XGBoost computes its transforms in float32 */
    if (strcmp(m->transform, "sigmoid") == 0 || strcmp(m->transform, "ova-sigmoid") == 0) {
        for (uint32_t c = 0; c < k; c++)
            y[c] = f ? (double)(1.0f / (1.0f + expf(-(float)a * (float)y[c])))
                     : 1.0 / (1.0 + exp(-a * y[c]));
    } else if (strcmp(m->transform, "exp") == 0) {
        for (uint32_t c = 0; c < k; c++)
            y[c] = f ? (double)expf((float)y[c]) : exp(y[c]);
    } else if (strcmp(m->transform, "hinge") == 0) {
        for (uint32_t c = 0; c < k; c++)
            y[c] = y[c] > 0.0 ? 1.0 : 0.0;
    } else if (strcmp(m->transform, "softmax") == 0) {
        double mx = y[0];
        for (uint32_t c = 1; c < k; c++)
            if (y[c] > mx)
                mx = y[c];
        if (f) {
            float sum = 0.0f;
            for (uint32_t c = 0; c < k; c++) {
                y[c] = (double)expf((float)y[c] - (float)mx);
                sum += (float)y[c];
            }
            for (uint32_t c = 0; c < k; c++)
                y[c] = (double)((float)y[c] / sum);
        } else {
            double sum = 0.0;
            for (uint32_t c = 0; c < k; c++) {
                y[c] = exp(y[c] - mx);
                sum += y[c];
            }
            for (uint32_t c = 0; c < k; c++)
                y[c] /= sum;
        }
    }
}

/* ------------------------------------------------------------ parsing */

int qs_parse_value(const qs_scorer *s, const char *tok, size_t len, double *out)
{
    return qs_parse_number(s->m->float_precision, tok, len, out);
}

static void show_tok(char *dst, size_t cap, const char *t, size_t n)
{
    size_t k = 0, lim = n < cap - 4 ? n : cap - 4;
    for (size_t i = 0; i < lim; i++) {
        unsigned char c = (unsigned char)t[i];
        dst[k++] = (c < 0x20 || c > 0x7e) ? '?' : (char)c;
    }
    if (lim < n) {
        memcpy(dst + k, "...", 3);
        k += 3;
    }
    dst[k] = '\0';
}

int qs_letor_parse(const qs_scorer *s, qs_workspace *w, qs_absent absent, const char *line,
                   size_t len, qs_letor_line *out, int *is_doc, qs_error *err)
{
    const char *p = line, *end = line + len;
    char show[64];
    memset(out, 0, sizeof *out);
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
        show_tok(show, sizeof show, t, (size_t)(p - t));
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
            show_tok(show, sizeof show, t, n);
            return qs_fail(err, QS_ERR_FORMAT, 0, "bad feature token '%s' (expected INDEX:VALUE)",
                           show);
        }
        if (id > UINT32_MAX) {
            show_tok(show, sizeof show, t, n);
            return qs_fail(err, QS_ERR_FORMAT, 0, "feature id in '%s' is out of range", show);
        }
        double v;
        if (qs_parse_value(s, colon + 1, (size_t)(t + n - colon - 1), &v) != 0) {
            show_tok(show, sizeof show, t, n);
            return qs_fail(err, QS_ERR_FORMAT, 0, "bad feature value in '%s' (expected a number)",
                           show);
        }
        qs_doc_set(w, (uint32_t)id, v);
    }
    *is_doc = 1;
    return 0;
}
