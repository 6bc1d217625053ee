/* text.c: the canonical ensemble text (format/ensemble-text.md): writer and
 * a strict, bounds-checked reader. */
#include "model/model.h"

#include <stdio.h>
#include <string.h>

/* Version 2 is version 1 plus the output affine lines (`out-scale`,
 * `out-bias`); the writer uses it only for models that have one, so every
 * other model is written as version 1, byte for byte as before. */
#define TEXT_VERSION 1
#define TEXT_VERSION_AFFINE 2
/* Version 3 adds linear leaves (`linear` node lines and their `term`
 * lines), with the affine lines optional; written only for models with
 * linear leaves. */
#define TEXT_VERSION_LINEAR 3

/* ------------------------------------------------------------ writer */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        size_t nc = b->cap * 2 + (size_t)k + 64;
        char *q = realloc(b->p, nc);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = nc;
    }
}

static const char *miss_name(int m)
{
    return m == QS_MISS_NONE ? "none" : m == QS_MISS_ZERO ? "zero" : "nan";
}

/* Values are written as C99 hex floats: exact, and read back bit for bit. */
static void put_value(sbuf *b, double v)
{
    sb_printf(b, "%a", v);
}

int qs_model_to_text(const qs_model *m, char **out, size_t *out_len, qs_error *err)
{
    if (qs_model_validate(m, err) != 0)
        return -1;
    sbuf b = { malloc(1 << 16), 0, 1 << 16, 0 };
    if (!b.p)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    sb_printf(&b, "qs-ensemble %d\n", m->num_linear    ? TEXT_VERSION_LINEAR
                                      : m->out_affine ? TEXT_VERSION_AFFINE
                                                      : TEXT_VERSION);
    sb_printf(&b, "source %s\n", qs_source_name(m->source));
    /* The objective is free text from the source; keep it on one line. */
    char obj[sizeof m->objective + 1];
    size_t k = 0;
    for (size_t i = 0; i < sizeof m->objective && m->objective[i]; i++) {
        unsigned char c = (unsigned char)m->objective[i];
        obj[k++] = (c < 0x21 || c > 0x7e || c == '#') ? '_' : (char)c; /* '#' opens a comment */
    }
    obj[k] = '\0';
    sb_printf(&b, "objective %s\n", k ? obj : "-");
    sb_printf(&b, "compare %s\n", m->cmp == QS_CMP_LE ? "le" : "lt");
    sb_printf(&b, "precision %s\n", m->float_precision ? "float" : "double");
    sb_printf(&b, "accumulate %s\n", m->float_accumulate == QS_ACC_FLOAT ? "float"
                                      : m->float_accumulate == QS_ACC_FLOAT_DOUBLE ? "float-double"
                                                                                   : "double");
    sb_printf(&b, "absent %s\n", m->absent_missing ? "missing" : "zero");
    sb_printf(&b, "features %u\n", m->num_features);
    sb_printf(&b, "classes %u\n", m->num_classes);
    sb_printf(&b, "transform %s ", m->transform);
    put_value(&b, m->transform_param);
    if (m->transform_average)
        sb_printf(&b, " average %u", m->transform_average);
    sb_printf(&b, "\n");
    for (uint32_t c = 0; c < m->num_classes; c++) {
        sb_printf(&b, "base %u ", c);
        put_value(&b, m->base[c]);
        sb_printf(&b, "\n");
    }
    if (m->out_affine) {
        sb_printf(&b, "out-scale ");
        put_value(&b, m->out_scale);
        if (m->out_divide > 1)
            sb_printf(&b, " divide %u", m->out_divide);
        if (m->out_float)
            sb_printf(&b, " float");
        sb_printf(&b, "\n");
        for (uint32_t c = 0; c < m->num_classes; c++) {
            sb_printf(&b, "out-bias %u ", c);
            put_value(&b, m->out_bias[c]);
            sb_printf(&b, "\n");
        }
    }
    sb_printf(&b, "trees %llu", (unsigned long long)m->num_trees);
    if (m->iter_trees)
        sb_printf(&b, " per-iteration %u", m->iter_trees);
    sb_printf(&b, "\n");
    for (uint64_t t = 0; t < m->num_trees; t++) {
        const qs_tree *tr = &m->trees[t];
        sb_printf(&b, "tree %llu class %u weight ", (unsigned long long)t, tr->class_id);
        put_value(&b, tr->weight);
        sb_printf(&b, " nodes %u\n", tr->num_nodes);
        for (uint32_t i = 0; i < tr->num_nodes; i++) {
            const qs_node *n = &m->nodes[tr->node_off + i];
            sb_printf(&b, "%u ", i);
            uint32_t li = m->node_linear ? m->node_linear[tr->node_off + i] : 0;
            if (n->kind == QS_NODE_LEAF && li) {
                const qs_linear *l = &m->linear[li - 1];
                sb_printf(&b, "linear ");
                put_value(&b, n->value);
                sb_printf(&b, " ");
                put_value(&b, l->konst);
                sb_printf(&b, " %u", l->nterms);
                for (uint32_t j = 0; j < l->nterms; j++) {
                    sb_printf(&b, "\nterm %u ", m->lin_feature[l->term_off + j]);
                    put_value(&b, m->lin_coeff[l->term_off + j]);
                }
            } else if (n->kind == QS_NODE_LEAF) {
                sb_printf(&b, "leaf ");
                put_value(&b, n->value);
            } else if (n->kind == QS_NODE_NUM) {
                sb_printf(&b, "num %u ", n->feature);
                put_value(&b, n->value);
                sb_printf(&b, " %s %s %d %d", miss_name(n->miss),
                          n->default_left ? "left" : "right", n->left, n->right);
            } else {
                sb_printf(&b, "cat %u %s %s %s %s %d %d ", n->feature,
                          (n->flags & QS_CAT_MEMBERS_LEFT) ? "left" : "right",
                          (n->flags & QS_CAT_NEG_STRICT) ? "strict" : "trunc", miss_name(n->miss),
                          n->default_left ? "left" : "right", n->left, n->right);
                int any = 0;
                for (uint32_t w = 0; w < n->cat_nwords; w++) {
                    uint32_t word = m->cat_words[n->cat_off + w];
                    for (uint32_t bit = 0; bit < 32; bit++)
                        if (word >> bit & 1u) {
                            sb_printf(&b, "%s%u", any ? "," : "", w * 32 + bit);
                            any = 1;
                        }
                }
                if (!any)
                    sb_printf(&b, "-");
            }
            sb_printf(&b, "\n");
        }
    }
    sb_printf(&b, "end\n");
    if (b.oom) {
        free(b.p);
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    }
    *out = b.p;
    *out_len = b.n;
    return 0;
}

/* ------------------------------------------------------------ reader */

#define MAX_TOKS 16

typedef struct reader {
    const char *p, *end;
    long line;
    const char *tok[MAX_TOKS];
    size_t len[MAX_TOKS];
    int ntok;
    qs_error *err;
} reader;

/* Split the next non-empty, non-comment line into tokens.  Returns 0 at the
 * end of input. */
static int next_line(reader *r)
{
    while (r->p < r->end) {
        const char *s = r->p;
        const char *e = memchr(s, '\n', (size_t)(r->end - s));
        if (!e)
            e = r->end;
        r->p = e < r->end ? e + 1 : e;
        r->line++;
        if (e > s && e[-1] == '\r')
            e--;
        r->ntok = 0;
        const char *q = s;
        while (q < e) {
            while (q < e && (*q == ' ' || *q == '\t'))
                q++;
            if (q == e || *q == '#')
                break;
            const char *t = q;
            while (q < e && *q != ' ' && *q != '\t')
                q++;
            if (r->ntok == MAX_TOKS) {
                qs_fail(r->err, QS_ERR_FORMAT, r->line, "too many fields on one line");
                return -1;
            }
            r->tok[r->ntok] = t;
            r->len[r->ntok++] = (size_t)(q - t);
        }
        if (r->ntok)
            return 1;
    }
    return 0;
}

static int tok_is(const reader *r, int i, const char *s)
{
    size_t n = strlen(s);
    return i < r->ntok && r->len[i] == n && memcmp(r->tok[i], s, n) == 0;
}

static const char *tok_show(const reader *r, int i, char *buf, size_t cap)
{
    return qs_quote(buf, cap, r->tok[i], r->len[i]);
}

static int bad_tok(reader *r, int i, const char *what)
{
    char b[48];
    if (i >= r->ntok)
        return qs_fail(r->err, QS_ERR_FORMAT, r->line, "missing %s", what);
    return qs_fail(r->err, QS_ERR_FORMAT, r->line, "bad %s '%s'", what, tok_show(r, i, b, sizeof b));
}

static int get_u64(reader *r, int i, uint64_t max, uint64_t *out, const char *what)
{
    if (i >= r->ntok || r->len[i] == 0 || r->len[i] > 20)
        return bad_tok(r, i, what);
    uint64_t v = 0;
    for (size_t j = 0; j < r->len[i]; j++) {
        char c = r->tok[i][j];
        if (c < '0' || c > '9')
            return bad_tok(r, i, what);
        if (v > (UINT64_MAX - 9) / 10)
            return bad_tok(r, i, what);
        v = v * 10 + (uint64_t)(c - '0');
    }
    if (v > max) {
        char b[48];
        return qs_fail(r->err, QS_ERR_LIMIT, r->line, "%s %s is beyond the limit %llu", what,
                       tok_show(r, i, b, sizeof b), (unsigned long long)max);
    }
    *out = v;
    return 0;
}

static int get_u32(reader *r, int i, uint32_t max, uint32_t *out, const char *what)
{
    uint64_t v;
    if (get_u64(r, i, max, &v, what))
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int get_num(reader *r, int i, int as_float, double *out, const char *what)
{
    if (i >= r->ntok || qs_parse_number(as_float, r->tok[i], r->len[i], out) != 0)
        return bad_tok(r, i, what);
    return 0;
}

static int get_choice(reader *r, int i, const char *a, const char *b, int *out, const char *what)
{
    if (tok_is(r, i, a))
        *out = 0;
    else if (tok_is(r, i, b))
        *out = 1;
    else
        return bad_tok(r, i, what);
    return 0;
}

static int get_miss(reader *r, int i, uint8_t *out)
{
    if (tok_is(r, i, "none"))
        *out = QS_MISS_NONE;
    else if (tok_is(r, i, "zero"))
        *out = QS_MISS_ZERO;
    else if (tok_is(r, i, "nan"))
        *out = QS_MISS_NAN;
    else
        return bad_tok(r, i, "missing rule (expected none, zero or nan)");
    return 0;
}

static int get_child(reader *r, int i, uint32_t nodes, int32_t *out)
{
    uint32_t v;
    if (get_u32(r, i, QS_MAX_TREE_NODES, &v, "child index"))
        return -1;
    if (v >= nodes)
        return qs_fail(r->err, QS_ERR_FORMAT, r->line,
                       "child %u out of range (tree has %u nodes)", v, nodes);
    *out = (int32_t)v;
    return 0;
}

/* Expect a header line `key value...` with exactly `n` tokens. */
static int header(reader *r, const char *key, int n)
{
    int k = next_line(r);
    if (k < 0)
        return -1;
    if (k == 0)
        return qs_fail(r->err, QS_ERR_FORMAT, r->line, "unexpected end of input (expected '%s')", key);
    if (!tok_is(r, 0, key))
        return qs_fail(r->err, QS_ERR_FORMAT, r->line, "expected '%s'", key);
    if (n >= 0 && r->ntok != n)
        return qs_fail(r->err, QS_ERR_FORMAT, r->line, "'%s' takes %d field%s", key, n - 1,
                       n == 2 ? "" : "s");
    return 0;
}

/* Parse a category list "1,8,53" (or "-") into a bitset. */
static int read_cats(reader *r, int i, qs_model *m, qs_node *n_out_off)
{
    const char *s = r->tok[i], *e = s + r->len[i];
    uint32_t words[QS_MAX_CAT_WORDS > 4096 ? 4096 : QS_MAX_CAT_WORDS];
    uint32_t *w = words;
    size_t cap = sizeof words / sizeof *words;
    uint32_t nw = 0;
    int rc = -1;
    memset(words, 0, sizeof words);
    if (!(r->len[i] == 1 && *s == '-')) {
        while (s < e) {
            uint64_t v = 0;
            const char *d = s;
            for (; s < e && *s >= '0' && *s <= '9'; s++)
                if (v <= (uint64_t)QS_MAX_CAT_WORDS * 32) /* saturate: still too large */
                    v = v * 10 + (uint64_t)(*s - '0');
            if (s == d || (s < e && *s != ',')) {
                bad_tok(r, i, "category list");
                goto out;
            }
            if (v >= (uint64_t)QS_MAX_CAT_WORDS * 32) {
                qs_fail(r->err, QS_ERR_LIMIT, r->line, "category %llu beyond the limit %u",
                        (unsigned long long)v, QS_MAX_CAT_WORDS * 32 - 1);
                goto out;
            }
            uint32_t wi = (uint32_t)(v / 32);
            if (wi >= cap) {
                /* grow as the categories need (doubling), not to the limit */
                size_t nc = cap * 2 > (size_t)wi + 1 ? cap * 2 : (size_t)wi + 1;
                if (nc > (size_t)QS_MAX_CAT_WORDS)
                    nc = (size_t)QS_MAX_CAT_WORDS;
                uint32_t *big = calloc(nc, sizeof *big);
                if (!big) {
                    qs_fail(r->err, QS_ERR_NOMEM, r->line, "out of memory");
                    goto out;
                }
                memcpy(big, w, cap * sizeof *w);   /* calloc'd: the rest is 0 */
                if (w != words)
                    free(w);
                w = big;
                cap = nc;
            }
            w[wi] |= 1u << (v % 32);
            if (wi + 1 > nw)
                nw = wi + 1;
            if (s < e)
                s++;
            if (s == e && e[-1] == ',') {
                bad_tok(r, i, "category list");
                goto out;
            }
        }
    }
    int64_t off = qs_model_add_cat_words(m, w, nw, r->err);
    if (off < 0) {
        r->err->line = r->line;
        goto out;
    }
    n_out_off->cat_off = (uint32_t)off;
    n_out_off->cat_nwords = nw;
    rc = 0;
out:
    if (w != words)
        free(w);
    return rc;
}

/* The `term F COEFF` lines of a linear leaf. */
static int read_terms(reader *r, qs_model *m, uint64_t node, double konst, uint32_t nt)
{
    uint32_t *f = malloc(sizeof *f * (nt ? nt : 1));
    double *c = malloc(sizeof *c * (nt ? nt : 1));
    int rc = -1;
    if (!f || !c) {
        qs_fail(r->err, QS_ERR_NOMEM, r->line, "out of memory");
        goto out;
    }
    for (uint32_t j = 0; j < nt; j++) {
        int k = next_line(r);
        if (k < 0)
            goto out;
        if (k == 0) {
            qs_fail(r->err, QS_ERR_FORMAT, r->line, "unexpected end of input in a linear leaf");
            goto out;
        }
        if (!tok_is(r, 0, "term") || r->ntok != 3) {
            qs_fail(r->err, QS_ERR_FORMAT, r->line,
                    "expected 'term FEATURE COEFFICIENT' (%u of %u)", j + 1, nt);
            goto out;
        }
        if (get_u32(r, 1, QS_MAX_FEATURES - 1, &f[j], "feature id") ||
            get_num(r, 2, 0, &c[j], "coefficient"))
            goto out;
    }
    if (qs_model_add_linear(m, node, konst, nt, f, c, r->err) != 0) {
        r->err->line = r->line;
        goto out;
    }
    rc = 0;
out:
    free(f);
    free(c);
    return rc;
}

static int read_body(reader *r, qs_model *m)
{
    uint64_t ver;
    char b[48];
    if (header(r, "qs-ensemble", 2) || get_u64(r, 1, UINT64_MAX, &ver, "version"))
        return -1;
    if (ver != TEXT_VERSION && ver != TEXT_VERSION_AFFINE && ver != TEXT_VERSION_LINEAR)
        return qs_fail(r->err, QS_ERR_UNSUPPORTED, r->line,
                       "ensemble text version %llu is not supported (this build reads %d to %d)",
                       (unsigned long long)ver, TEXT_VERSION, TEXT_VERSION_LINEAR);
    if (header(r, "source", 2))
        return -1;
    if (qs_source_from_name(r->tok[1], r->len[1], &m->source) != 0)
        return bad_tok(r, 1, "source");
    if (header(r, "objective", 2))
        return -1;
    if (r->len[1] >= sizeof m->objective)
        return qs_fail(r->err, QS_ERR_LIMIT, r->line, "objective longer than %zu bytes",
                       sizeof m->objective - 1);
    if (!tok_is(r, 1, "-")) {
        memcpy(m->objective, r->tok[1], r->len[1]);
        m->objective[r->len[1]] = '\0';
    }
    int v;
    if (header(r, "compare", 2) || get_choice(r, 1, "le", "lt", &v, "comparison"))
        return -1;
    m->cmp = v ? QS_CMP_LT : QS_CMP_LE;
    if (header(r, "precision", 2) || get_choice(r, 1, "double", "float", &m->float_precision, "precision"))
        return -1;
    if (header(r, "accumulate", 2))
        return -1;
    if (tok_is(r, 1, "float-double"))
        m->float_accumulate = QS_ACC_FLOAT_DOUBLE;
    else if (get_choice(r, 1, "double", "float", &m->float_accumulate, "accumulation"))
        return -1;
    if (header(r, "absent", 2) || get_choice(r, 1, "zero", "missing", &m->absent_missing, "absent rule"))
        return -1;
    if (header(r, "features", 2) || get_u32(r, 1, QS_MAX_FEATURES, &m->num_features, "feature count"))
        return -1;
    uint32_t k;
    if (header(r, "classes", 2) || get_u32(r, 1, QS_MAX_CLASSES, &k, "class count"))
        return -1;
    if (k == 0)
        return qs_fail(r->err, QS_ERR_FORMAT, r->line, "a model needs at least one class");
    if (qs_model_set_classes(m, k, r->err))
        return -1;
    if (header(r, "transform", -1))
        return -1;
    if (r->ntok == 5 && tok_is(r, 3, "average")) {
        uint32_t n;
        if (get_u32(r, 4, QS_MAX_TREES, &n, "average count"))
            return -1;
        if (n == 0)
            return qs_fail(r->err, QS_ERR_FORMAT, r->line, "average count must be at least 1");
        m->transform_average = n;
    } else if (r->ntok != 3) {
        return qs_fail(r->err, QS_ERR_FORMAT, r->line,
                       "'transform' takes 2 fields, or 4 ending with 'average N'");
    }
    static const char *const transforms[] = { "none", "sigmoid", "softmax", "exp",
                                              "ova-sigmoid", "hinge", "argmax", "signed-square",
                                              "fmath-exp", "fmath-softmax", "log1p-exp",
                                              "unsupported" };
    int found = 0;
    for (size_t i = 0; i < sizeof transforms / sizeof *transforms; i++)
        if (tok_is(r, 1, transforms[i])) {
            strcpy(m->transform, transforms[i]);
            found = 1;
        }
    if (!found)
        return bad_tok(r, 1, "transform");
    if (get_num(r, 2, 0, &m->transform_param, "transform parameter"))
        return -1;
    for (uint32_t c = 0; c < m->num_classes; c++) {
        uint32_t ci;
        if (header(r, "base", 3) || get_u32(r, 1, QS_MAX_CLASSES, &ci, "class"))
            return -1;
        if (ci != c)
            return qs_fail(r->err, QS_ERR_FORMAT, r->line, "expected 'base %u VALUE'", c);
        if (get_num(r, 2, m->float_accumulate, &m->base[c], "base score"))
            return -1;
    }
    /* Version 3: the affine is there when the next line says out-scale. */
    int affine = ver == TEXT_VERSION_AFFINE;
    if (ver == TEXT_VERSION_LINEAR) {
        const char *save_p = r->p;
        long save_line = r->line;
        int nk = next_line(r);
        if (nk < 0)
            return -1;
        affine = nk > 0 && tok_is(r, 0, "out-scale");
        r->p = save_p;
        r->line = save_line;
    }
    if (affine) {
        m->out_affine = 1;
        if (header(r, "out-scale", -1) || get_num(r, 1, 0, &m->out_scale, "output scale"))
            return -1;
        int at = 2;
        if (r->ntok >= 4 && tok_is(r, 2, "divide")) {
            if (get_u32(r, 3, QS_MAX_TREES, &m->out_divide, "output divisor"))
                return -1;
            if (m->out_divide < 2)
                return qs_fail(r->err, QS_ERR_FORMAT, r->line,
                               "'divide' takes a count of 2 or more");
            at = 4;
        }
        if (r->ntok == at + 1 && tok_is(r, at, "float"))
            m->out_float = 1;
        else if (r->ntok != at)
            return qs_fail(r->err, QS_ERR_FORMAT, r->line,
                           "'out-scale' takes 1 field, then optionally 'divide N', then "
                           "optionally 'float'");
        for (uint32_t c = 0; c < m->num_classes; c++) {
            uint32_t ci;
            if (header(r, "out-bias", 3) || get_u32(r, 1, QS_MAX_CLASSES, &ci, "class"))
                return -1;
            if (ci != c)
                return qs_fail(r->err, QS_ERR_FORMAT, r->line, "expected 'out-bias %u VALUE'", c);
            if (get_num(r, 2, 0, &m->out_bias[c], "output bias"))
                return -1;
        }
    }
    uint64_t ntrees;
    if (header(r, "trees", -1) || get_u64(r, 1, QS_MAX_TREES, &ntrees, "tree count"))
        return -1;
    if (r->ntok == 4 && tok_is(r, 2, "per-iteration")) {
        if (get_u32(r, 3, QS_MAX_TREES, &m->iter_trees, "trees per iteration"))
            return -1;
        if (m->iter_trees == 0)
            return qs_fail(r->err, QS_ERR_FORMAT, r->line,
                           "'per-iteration' takes a count of 1 or more");
    } else if (r->ntok != 2) {
        return qs_fail(r->err, QS_ERR_FORMAT, r->line,
                       "'trees' takes 1 field, or 3 ending with 'per-iteration P'");
    }
    for (uint64_t t = 0; t < ntrees; t++) {
        uint64_t id;
        uint32_t cls, nn;
        double w;
        if (header(r, "tree", 8) || get_u64(r, 1, UINT64_MAX, &id, "tree id"))
            return -1;
        if (id != t)
            return qs_fail(r->err, QS_ERR_FORMAT, r->line, "expected tree %llu, found tree %s",
                           (unsigned long long)t, tok_show(r, 1, b, sizeof b));
        if (!tok_is(r, 2, "class") || get_u32(r, 3, m->num_classes - 1, &cls, "class") ||
            !tok_is(r, 4, "weight") || get_num(r, 5, 0, &w, "weight") || !tok_is(r, 6, "nodes") ||
            get_u32(r, 7, QS_MAX_TREE_NODES, &nn, "node count"))
            return r->err && r->err->code ? -1
                                          : qs_fail(r->err, QS_ERR_FORMAT, r->line,
                                                    "expected 'tree N class C weight W nodes K'");
        if (nn == 0)
            return qs_fail(r->err, QS_ERR_FORMAT, r->line, "tree %llu has no nodes",
                           (unsigned long long)t);
        if (qs_model_add_tree(m, cls, w, r->err) || qs_model_add_nodes(m, nn, r->err) < 0) {
            r->err->line = r->line;
            return -1;
        }
        for (uint32_t i = 0; i < nn; i++) {
            int rc = next_line(r);
            if (rc < 0)
                return -1;
            if (rc == 0)
                return qs_fail(r->err, QS_ERR_FORMAT, r->line,
                               "unexpected end of input in tree %llu", (unsigned long long)t);
            uint32_t idx;
            if (get_u32(r, 0, QS_MAX_TREE_NODES, &idx, "node index"))
                return -1;
            if (idx != i)
                return qs_fail(r->err, QS_ERR_FORMAT, r->line, "expected node %u, found %u", i, idx);
            qs_node *n = qs_model_cur_node(m, i);
            if (tok_is(r, 1, "leaf")) {
                if (r->ntok != 3)
                    return qs_fail(r->err, QS_ERR_FORMAT, r->line, "'leaf' takes one value");
                n->kind = QS_NODE_LEAF;
                if (get_num(r, 2, m->float_accumulate, &n->value, "leaf value"))
                    return -1;
            } else if (tok_is(r, 1, "linear") && ver == TEXT_VERSION_LINEAR) {
                if (r->ntok != 5)
                    return qs_fail(r->err, QS_ERR_FORMAT, r->line,
                                   "expected 'N linear VALUE CONSTANT TERMS'");
                n->kind = QS_NODE_LEAF;
                double konst;
                uint32_t nt;
                if (get_num(r, 2, m->float_accumulate, &n->value, "leaf value") ||
                    get_num(r, 3, 0, &konst, "linear constant") ||
                    get_u32(r, 4, QS_MAX_LINEAR_TERMS, &nt, "linear term count"))
                    return -1;
                uint64_t node = m->trees[t].node_off + i;
                if (read_terms(r, m, node, konst, nt))
                    return -1;
            } else if (tok_is(r, 1, "num")) {
                if (r->ntok != 8)
                    return qs_fail(r->err, QS_ERR_FORMAT, r->line,
                                   "expected 'N num FEATURE THRESHOLD MISSING DEFAULT LEFT RIGHT'");
                int dl;
                n->kind = QS_NODE_NUM;
                if (get_u32(r, 2, QS_MAX_FEATURES - 1, &n->feature, "feature id") ||
                    get_num(r, 3, m->float_precision, &n->value, "threshold") ||
                    get_miss(r, 4, &n->miss) ||
                    get_choice(r, 5, "right", "left", &dl, "default side") ||
                    get_child(r, 6, nn, &n->left) || get_child(r, 7, nn, &n->right))
                    return -1;
                n->default_left = (uint8_t)dl;
            } else if (tok_is(r, 1, "cat")) {
                if (r->ntok != 10)
                    return qs_fail(r->err, QS_ERR_FORMAT, r->line,
                                   "expected 'N cat FEATURE MEMBERS NEGATIVE MISSING DEFAULT LEFT RIGHT CATEGORIES'");
                int ml, strict, dl;
                n->kind = QS_NODE_CAT;
                if (get_u32(r, 2, QS_MAX_FEATURES - 1, &n->feature, "feature id") ||
                    get_choice(r, 3, "right", "left", &ml, "member side") ||
                    get_choice(r, 4, "trunc", "strict", &strict, "negative rule") ||
                    get_miss(r, 5, &n->miss) ||
                    get_choice(r, 6, "right", "left", &dl, "default side") ||
                    get_child(r, 7, nn, &n->left) || get_child(r, 8, nn, &n->right))
                    return -1;
                n->default_left = (uint8_t)dl;
                n->flags = (uint8_t)((ml ? QS_CAT_MEMBERS_LEFT : 0) | (strict ? QS_CAT_NEG_STRICT : 0));
                /* read_cats may grow cat_words but not nodes, so n stays valid. */
                if (read_cats(r, 9, m, n))
                    return -1;
            } else {
                return bad_tok(r, 1, ver == TEXT_VERSION_LINEAR
                                         ? "node kind (expected leaf, linear, num or cat)"
                                         : "node kind (expected leaf, num or cat)");
            }
        }
    }
    if (header(r, "end", 1))
        return -1;
    if (qs_model_link_linear(m, r->err) != 0)
        return -1;
    int rc = next_line(r);
    if (rc != 0)
        return rc < 0 ? -1 : qs_fail(r->err, QS_ERR_FORMAT, r->line, "text after 'end'");
    return 0;
}

qs_model *qs_model_from_text(const char *buf, size_t len, qs_error *err)
{
    qs_error local;
    if (!err)
        err = &local;
    qs_error_clear(err);
    qs_model *m = qs_model_new(QS_SRC_UNKNOWN, err);
    if (!m)
        return NULL;
    reader r = { buf, buf + len, 0, { 0 }, { 0 }, 0, err };
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
        r.p += 3; /* a UTF-8 byte order mark, as editors add */
    if (read_body(&r, m) != 0 || qs_model_validate(m, err) != 0) {
        if (err->code == QS_OK)
            qs_fail(err, QS_ERR_FORMAT, r.line, "malformed ensemble text");
        qs_model_free(m);
        return NULL;
    }
    return m;
}
