/* conv_lightgbm.c: converts a LightGBM text model (format v2/v3/v4, as written by
 * LightGBM 4.x save_model or the CLI) into the canonical ensemble of model.h.
 *
 * The conversion is exact: thresholds and leaf values are parsed as doubles
 * (correctly rounded, as LightGBM reads them) and every decision rule maps to
 * a canonical node that decides identically (see the scoring rules in
 * data/lightgbm/README.md).  Models that cannot be scored exactly are refused.
 *
 * The input is treated as hostile: it need not be NUL-terminated, may hold
 * any bytes, lines of any length and arbitrary counts.  Every count is checked
 * against the text actually present before anything is allocated for it, so
 * memory stays proportional to the input, and nothing recurses on the input.
 *
 * Layout read here (everything else is informational and skipped):
 *
 *   tree                          header: key=value lines, a few bare words
 *   version=v4
 *   num_class=K
 *   num_tree_per_iteration=K
 *   max_feature_idx=F
 *   objective=binary sigmoid:1
 *   [average_output]
 *   Tree=0                        one block per tree, in order
 *   num_leaves=L
 *   num_cat=C
 *   split_feature= threshold= decision_type= left_child= right_child=  (L-1)
 *   leaf_value=                                                       (L)
 *   cat_boundaries= (C+1)  cat_threshold= (cat_boundaries[C])   when C > 0
 *   is_linear=0|1
 *   leaf_const= num_features= (L)  leaf_features= leaf_coeff= (sum of
 *   num_features)                 when is_linear=1: each leaf's linear model
 *   ...
 *   end of trees                  the rest (importances, parameters) is ignored
 */
#include "convert/convert.h"

#include <stdio.h>
#include <string.h>

/* A piece of the input buffer: never NUL-terminated. */
typedef struct span {
    const char *p;
    size_t n;
} span;

/* Longest number token parsed.  LightGBM writes at most ~25 characters; the
 * cap keeps strtod's work bounded and lets the copy live on the stack. */
#define NUM_TOKEN_MAX 1000

/* --------------------------------------------------------------- lexing */

static int is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* Drop surrounding blanks and a trailing CR (CRLF line ends). */
static span trim(span s)
{
    while (s.n && is_blank(s.p[0])) {
        s.p++;
        s.n--;
    }
    while (s.n && (is_blank(s.p[s.n - 1]) || s.p[s.n - 1] == '\r'))
        s.n--;
    return s;
}

static int span_eq(span s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

static int span_starts(span s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n >= n && memcmp(s.p, lit, n) == 0;
}

/* Next blank-separated token of *rest; 0 when none is left.  Any byte other
 * than space and tab belongs to a token (and later fails to parse). */
static int next_token(span *rest, span *tok)
{
    size_t i = 0;
    while (i < rest->n && is_blank(rest->p[i]))
        i++;
    if (i == rest->n) {
        rest->p += i;
        rest->n = 0;
        return 0;
    }
    size_t j = i;
    while (j < rest->n && !is_blank(rest->p[j]))
        j++;
    tok->p = rest->p + i;
    tok->n = j - i;
    rest->p += j;
    rest->n -= j;
    return 1;
}

static size_t count_tokens(span s)
{
    size_t k = 0;
    span t;
    while (next_token(&s, &t))
        k++;
    return k;
}

/* Printable, bounded rendering of a token for messages: the token may hold
 * NUL or control bytes and be megabytes long. */
#define QUOTE_MAX 40
typedef struct qtext {
    char s[QUOTE_MAX + 4];
} qtext;

static const char *quote(qtext *q, span t)
{
    size_t k = 0;
    for (size_t i = 0; i < t.n && k < QUOTE_MAX; i++) {
        unsigned char ch = (unsigned char)t.p[i];
        q->s[k++] = (ch < 0x20 || ch > 0x7e || ch == '"') ? '?' : (char)ch;
    }
    if (t.n > QUOTE_MAX) {
        memcpy(q->s + k, "...", 3);
        k += 3;
    }
    q->s[k] = '\0';
    return q->s;
}

/* ------------------------------------------------------------- numbers */

enum { NUM_OK = 0, NUM_SYNTAX = -1, NUM_RANGE = -2 };

/* Decimal integer with an optional sign; NUM_RANGE beyond +-INT64_MAX. */
static int parse_i64(span t, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (t.n && (t.p[0] == '+' || t.p[0] == '-')) {
        neg = t.p[0] == '-';
        i = 1;
    }
    if (i == t.n)
        return NUM_SYNTAX;
    int64_t v = 0;
    int range = 0;
    for (; i < t.n; i++) {
        unsigned d = (unsigned)((unsigned char)t.p[i] - '0');
        if (d > 9)
            return NUM_SYNTAX;
        /* Keep scanning after an overflow so that "123abc..." still reads
         * as a syntax error rather than a range error. */
        if (range || v > (INT64_MAX - (int64_t)d) / 10)
            range = 1;
        else
            v = v * 10 + (int64_t)d;
    }
    if (range)
        return NUM_RANGE;
    *out = neg ? -v : v;
    return NUM_OK;
}

/* A double, correctly rounded by strtod, as LightGBM reads its text.  Hex
 * floats are refused: LightGBM's parser does not read them, so accepting one
 * would give it a meaning the model never had. */
static int parse_f64(span t, double *out)
{
    char buf[NUM_TOKEN_MAX + 1];
    if (t.n == 0)
        return NUM_SYNTAX;
    if (t.n > NUM_TOKEN_MAX)
        return NUM_RANGE;
    /* strtod would skip leading white space of any kind; a token starts with
     * a sign, a digit, a dot, or the letters of inf/nan. */
    unsigned char c0 = (unsigned char)t.p[0];
    if (!(c0 == '+' || c0 == '-' || c0 == '.' || (c0 >= '0' && c0 <= '9') || c0 == 'i' ||
          c0 == 'I' || c0 == 'n' || c0 == 'N'))
        return NUM_SYNTAX;
    for (size_t i = 0; i < t.n; i++)
        if (t.p[i] == 'x' || t.p[i] == 'X' || t.p[i] == '\0')
            return NUM_SYNTAX;
    memcpy(buf, t.p, t.n);
    buf[t.n] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (end != buf + t.n)
        return NUM_SYNTAX;
    /* ERANGE is fine: overflow gives inf, underflow a correctly rounded
     * subnormal or zero, which is what LightGBM holds as well. */
    *out = v;
    return NUM_OK;
}

/* ---------------------------------------------------------------- state */

/* A key=value line kept for later: where its value is and on which line. */
typedef struct field {
    span v;
    long line;
    int set;
} field;

enum hdr_field { H_VERSION, H_NUM_CLASS, H_NUM_TPI, H_MAX_FEATURE, H_OBJECTIVE, H_COUNT };
static const char *const hdr_names[H_COUNT] = {
    "version", "num_class", "num_tree_per_iteration", "max_feature_idx", "objective"
};

enum tree_field {
    F_NUM_LEAVES, F_NUM_CAT, F_SPLIT_FEATURE, F_THRESHOLD, F_DECISION_TYPE, F_LEFT_CHILD,
    F_RIGHT_CHILD, F_LEAF_VALUE, F_CAT_BOUNDARIES, F_CAT_THRESHOLD, F_IS_LINEAR, F_LEAF_CONST,
    F_NUM_FEATURES, F_LEAF_FEATURES, F_LEAF_COEFF, F_COUNT
};
static const char *const tree_names[F_COUNT] = {
    "num_leaves", "num_cat", "split_feature", "threshold", "decision_type", "left_child",
    "right_child", "leaf_value", "cat_boundaries", "cat_threshold", "is_linear", "leaf_const",
    "num_features", "leaf_features", "leaf_coeff"
};

typedef struct conv {
    const char *buf;
    size_t len, pos;
    long line;              /* 1-based number of the line last read */
    qs_error *err;
    qs_model *m;

    field hdr[H_COUNT];
    int average_output;     /* random-forest model: output = convert(sum / iterations) */
    int header_done;
    int v2;              /* version=v2: the trees may end without "end of trees" */
    uint32_t per_iter;      /* trees per iteration = output columns */

    uint64_t ntrees;        /* trees finished so far */
    int in_tree;
    long tree_line;         /* line of the current "Tree=" */
    field tf[F_COUNT];
} conv;

static int next_line(conv *c, span *out)
{
    if (c->pos >= c->len)
        return 0;
    const char *s = c->buf + c->pos;
    size_t rest = c->len - c->pos;
    const char *nl = memchr(s, '\n', rest);
    size_t n = nl ? (size_t)(nl - s) : rest;
    c->pos += n + (nl != NULL);
    c->line++;
    out->p = s;
    out->n = n;
    return 1;
}

/* The construction helpers of model.c report no line; add ours. */
static int at_line(conv *c, long line)
{
    if (c->err)
        c->err->line = line;
    return -1;
}

/* Remember `key=value` in `tab` if the key is one of `names`; other keys are
 * informational and ignored, as LightGBM itself ignores them. */
static int store_field(conv *c, field *tab, const char *const *names, int count, span key,
                       span val, const char *where)
{
    for (int i = 0; i < count; i++) {
        if (!span_eq(key, names[i]))
            continue;
        if (tab[i].set)
            return qs_fail(c->err, QS_ERR_FORMAT, c->line,
                           "%s: field %s appears twice (first on line %ld)", where, names[i],
                           tab[i].line);
        tab[i].v = trim(val);
        tab[i].line = c->line;
        tab[i].set = 1;
        return 0;
    }
    return 0;
}

/* A field whose value must be one integer in [lo, hi].  Values above hi are
 * QS_ERR_LIMIT when `hi_is_limit` (a documented limit), else malformed. */
static int field_int(conv *c, const field *f, const char *where, const char *name, int64_t lo,
                     int64_t hi, int hi_is_limit, int64_t *out)
{
    span rest = f->v, tok, extra;
    qtext q;
    if (!next_token(&rest, &tok))
        return qs_fail(c->err, QS_ERR_FORMAT, f->line, "%s: %s is empty", where, name);
    if (next_token(&rest, &extra))
        return qs_fail(c->err, QS_ERR_FORMAT, f->line, "%s: %s must be one integer, got \"%s\"",
                       where, name, quote(&q, f->v));
    int64_t v = 0;
    int rc = parse_i64(tok, &v);
    if (rc == NUM_SYNTAX)
        return qs_fail(c->err, QS_ERR_FORMAT, f->line, "%s: %s \"%s\" is not an integer", where,
                       name, quote(&q, tok));
    /* Too large for int64 counts as above hi unless it is negative. */
    int above = rc == NUM_RANGE ? tok.p[0] != '-' : v > hi;
    if (rc == NUM_RANGE || v < lo || v > hi)
        return qs_fail(c->err, (above && hi_is_limit) ? QS_ERR_LIMIT : QS_ERR_FORMAT, f->line,
                       "%s: %s \"%s\" is out of range (%lld..%lld)", where, name,
                       quote(&q, tok), (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

/* ------------------------------------------------------------ objective */

/* LightGBM's objective aliases (config.h ParseObjectiveAlias), so that a
 * model written with an alias still gets its output function. */
static const char *objective_canonical(span name)
{
    static const char *const alias[][2] = {
        { "regression_l2", "regression" }, { "mean_squared_error", "regression" },
        { "mse", "regression" }, { "l2", "regression" }, { "l2_root", "regression" },
        { "root_mean_squared_error", "regression" }, { "rmse", "regression" },
        { "mean_absolute_error", "regression_l1" }, { "l1", "regression_l1" },
        { "mae", "regression_l1" }, { "softmax", "multiclass" },
        { "multiclass_ova", "multiclassova" }, { "ova", "multiclassova" },
        { "ovr", "multiclassova" }, { "xentropy", "cross_entropy" },
        { "xentlambda", "cross_entropy_lambda" }, { "mean_absolute_percentage_error", "mape" },
        { "xendcg", "rank_xendcg" }, { "xe_ndcg", "rank_xendcg" },
        { "xe_ndcg_mart", "rank_xendcg" }, { "xendcg_mart", "rank_xendcg" },
        { "none", "custom" }, { "null", "custom" }, { "na", "custom" },
    };
    static const char *const names[] = {
        "regression", "regression_l1", "quantile", "huber", "fair", "poisson", "binary",
        "lambdarank", "rank_xendcg", "multiclass", "multiclassova", "cross_entropy",
        "cross_entropy_lambda", "mape", "gamma", "tweedie", "custom",
    };
    for (size_t i = 0; i < sizeof alias / sizeof *alias; i++)
        if (span_eq(name, alias[i][0]))
            return alias[i][1];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (span_eq(name, names[i]))
            return names[i];
    return NULL;
}

/* Set m->objective (informational copy) and the output transform.  The raw
 * scores never depend on it; only qs_transform does. */
static int set_objective(conv *c)
{
    qs_model *m = c->m;
    const field *f = &c->hdr[H_OBJECTIVE];
    qtext q;

    strcpy(m->transform, "none");
    m->transform_param = 1.0;
    if (!f->set) {
        /* No objective line: LightGBM has no output conversion (custom
         * objective), the raw score is the output. */
        m->objective[0] = '\0';
        return 0;
    }
    /* Keep it on one printable line; truncated to the field's size. */
    size_t k = 0;
    for (size_t i = 0; i < f->v.n && k + 1 < sizeof m->objective; i++) {
        unsigned char ch = (unsigned char)f->v.p[i];
        m->objective[k++] = (ch < 0x20 || ch > 0x7e) ? '?' : (char)ch;
    }
    m->objective[k] = '\0';

    span rest = f->v, name, tok;
    const char *obj = next_token(&rest, &name) ? objective_canonical(name) : NULL;
    int sqrt_flag = 0, have_sigmoid = 0, have_nc = 0;
    double sigmoid = 0.0;
    int64_t nc = 0;
    while (next_token(&rest, &tok)) {
        if (span_eq(tok, "sqrt")) {
            sqrt_flag = 1;
        } else if (span_starts(tok, "sigmoid:")) {
            span v = { tok.p + 8, tok.n - 8 };
            if (parse_f64(v, &sigmoid) != NUM_OK)
                return qs_fail(c->err, QS_ERR_FORMAT, f->line,
                               "objective: sigmoid parameter \"%s\" is not a number",
                               quote(&q, v));
            have_sigmoid = 1;
        } else if (span_starts(tok, "num_class:")) {
            span v = { tok.p + 10, tok.n - 10 };
            if (parse_i64(v, &nc) != NUM_OK)
                return qs_fail(c->err, QS_ERR_FORMAT, f->line,
                               "objective: num_class parameter \"%s\" is not an integer",
                               quote(&q, v));
            have_nc = 1;
        }
        /* Other parameters do not change the output function. */
    }

    const char *tr = "unsupported";
    int needs_sigmoid = 0, needs_nc = 0;
    if (!obj) {
        tr = "unsupported";   /* unknown to us: raw scores still exact */
    } else if (!strcmp(obj, "custom") || !strcmp(obj, "lambdarank") ||
               !strcmp(obj, "rank_xendcg")) {
        tr = "none";
    } else if (!strcmp(obj, "regression") || !strcmp(obj, "regression_l1") ||
               !strcmp(obj, "quantile") || !strcmp(obj, "huber") || !strcmp(obj, "fair") ||
               !strcmp(obj, "mape")) {
        /* reg_sqrt: the output is sign(x)*x*x of the raw score. */
        tr = sqrt_flag ? "signed-square" : "none";
    } else if (!strcmp(obj, "poisson") || !strcmp(obj, "gamma") || !strcmp(obj, "tweedie")) {
        tr = "exp";   /* their ConvertOutput is exp whatever else is set */
    } else if (!strcmp(obj, "binary")) {
        tr = "sigmoid";
        needs_sigmoid = 1;
    } else if (!strcmp(obj, "cross_entropy")) {
        tr = "sigmoid";   /* 1/(1+exp(-x)): a sigmoid of scale 1 */
    } else if (!strcmp(obj, "multiclass")) {
        tr = "softmax";
        needs_nc = 1;
    } else if (!strcmp(obj, "multiclassova")) {
        tr = "ova-sigmoid";
        needs_sigmoid = needs_nc = 1;
    } else if (!strcmp(obj, "cross_entropy_lambda")) {
        tr = "log1p-exp";   /* CrossEntropyLambda::ConvertOutput: log1p(exp(x)) */
    } else {
        tr = "unsupported";
    }
    if (needs_sigmoid) {
        /* LightGBM refuses to load these without a positive sigmoid. */
        if (!have_sigmoid || !(sigmoid > 0.0) || !isfinite(sigmoid))
            return qs_fail(c->err, QS_ERR_FORMAT, f->line,
                           "objective \"%s\" needs a parameter sigmoid:X with X > 0",
                           quote(&q, f->v));
        m->transform_param = sigmoid;
    }
    if (needs_nc) {
        if (!have_nc)
            return qs_fail(c->err, QS_ERR_FORMAT, f->line,
                           "objective \"%s\" needs a parameter num_class:K", quote(&q, f->v));
        if (nc != (int64_t)c->per_iter)
            return qs_fail(c->err, QS_ERR_FORMAT, f->line,
                           "objective says num_class:%lld but the model has %u trees per iteration",
                           (long long)nc, c->per_iter);
    }
    /* Random forests: the raw score (predict_raw_score) is the plain sum;
     * the output is the objective's function of sum / iterations, as
     * GBDT::Predict divides by num_iteration_for_pred_ (set at the end of
     * conversion, when the trees are counted). */
    if (!strcmp(tr, "unsupported"))
        m->transform_param = 1.0;
    strcpy(m->transform, tr);
    return 0;
}

/* --------------------------------------------------------------- header */

static int finish_header(conv *c)
{
    qs_model *m = c->m;
    field *h = c->hdr;
    int64_t v;
    qtext q;

    c->header_done = 1;
    if (h[H_VERSION].set && !span_eq(h[H_VERSION].v, "v2") && !span_eq(h[H_VERSION].v, "v3") &&
        !span_eq(h[H_VERSION].v, "v4"))
        return qs_fail(c->err, QS_ERR_UNSUPPORTED, h[H_VERSION].line,
                       "model version \"%s\" is not supported (expected v2, v3 or v4)",
                       quote(&q, h[H_VERSION].v));
    c->v2 = h[H_VERSION].set && span_eq(h[H_VERSION].v, "v2");
    if (!h[H_NUM_CLASS].set)
        return qs_fail(c->err, QS_ERR_FORMAT, c->line,
                       "header: missing num_class (not a lightgbm text model?)");
    if (field_int(c, &h[H_NUM_CLASS], "header", "num_class", 1, QS_MAX_CLASSES, 1, &v))
        return -1;
    uint32_t num_class = (uint32_t)v;
    c->per_iter = num_class;   /* LightGBM's default when the line is absent */
    if (h[H_NUM_TPI].set) {
        if (field_int(c, &h[H_NUM_TPI], "header", "num_tree_per_iteration", 1, QS_MAX_CLASSES,
                      1, &v))
            return -1;
        c->per_iter = (uint32_t)v;
        /* LightGBM writes them equal for every objective; a file where they
         * differ has output columns we cannot name safely. */
        if (c->per_iter != num_class)
            return qs_fail(c->err, QS_ERR_UNSUPPORTED, h[H_NUM_TPI].line,
                           "header: num_tree_per_iteration %u differs from num_class %u",
                           c->per_iter, num_class);
    }
    if (!h[H_MAX_FEATURE].set)
        return qs_fail(c->err, QS_ERR_FORMAT, c->line, "header: missing max_feature_idx");
    if (field_int(c, &h[H_MAX_FEATURE], "header", "max_feature_idx", 0,
                  (int64_t)QS_MAX_FEATURES - 1, 1, &v))
        return -1;
    m->num_features = (uint32_t)v + 1;
    if (qs_model_set_classes(m, c->per_iter, c->err))
        return at_line(c, h[H_NUM_TPI].set ? h[H_NUM_TPI].line : h[H_NUM_CLASS].line);
    return set_objective(c);
}

/* Header line that is not key=value. */
static int header_word(conv *c, span s)
{
    qtext q;
    if (span_eq(s, "tree"))   /* the sub-model name on the first line */
        return 0;
    if (span_eq(s, "average_output")) {
        c->average_output = 1;
        return 0;
    }
    return qs_fail(c->err, QS_ERR_FORMAT, c->line,
                   "header: expected key=value, got \"%s\" (not a lightgbm text model?)",
                   quote(&q, s));
}

/* ----------------------------------------------------------------- trees */

/* "leaf 3" / "node 3": a canonical index in LightGBM's own numbering. */
static const char *lgb_kind(uint32_t idx, uint32_t leaves)
{
    return idx >= leaves - 1 ? "leaf" : "node";
}
static uint32_t lgb_num(uint32_t idx, uint32_t leaves)
{
    return idx >= leaves - 1 ? idx - (leaves - 1) : idx;
}

/* Check that the child links form one tree rooted at node 0: no node is the
 * child of two nodes or of none, and no cycle.  An explicit stack, bounded by
 * the node count, replaces recursion. */
static int check_shape(conv *c, const qs_node *nd, uint32_t leaves, long line)
{
    unsigned long long t = (unsigned long long)c->ntrees;
    uint32_t n = 2 * leaves - 1;
    uint8_t *mark = calloc(n, 1);
    uint32_t *stack = malloc((size_t)n * sizeof *stack);
    int rc = 0;
    if (!mark || !stack) {
        rc = qs_fail(c->err, QS_ERR_NOMEM, line, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i + 1 < leaves && rc == 0; i++) {
        for (int side = 0; side < 2; side++) {
            uint32_t ch = (uint32_t)(side ? nd[i].right : nd[i].left);
            if (ch == 0) {
                rc = qs_fail(c->err, QS_ERR_FORMAT, line,
                             "tree %llu: node %u has the root as its %s child", t, i,
                             side ? "right" : "left");
                break;
            }
            if (mark[ch]) {
                rc = qs_fail(c->err, QS_ERR_FORMAT, line,
                             "tree %llu: %s %u is the child of more than one node", t,
                             lgb_kind(ch, leaves), lgb_num(ch, leaves));
                break;
            }
            mark[ch] = 1;
        }
    }
    if (rc)
        goto out;
    /* Now 2(L-1) links reach the 2L-2 non-root nodes once each; what is left
     * to rule out is a cycle cut off from the root. */
    memset(mark, 0, n);
    uint32_t sp = 0, seen = 0;
    stack[sp++] = 0;
    mark[0] = 1;
    while (sp) {
        uint32_t i = stack[--sp];
        seen++;
        if (nd[i].kind == QS_NODE_LEAF)
            continue;
        uint32_t ch[2] = { (uint32_t)nd[i].left, (uint32_t)nd[i].right };
        for (int k = 0; k < 2; k++) {
            if (mark[ch[k]] || sp >= n) {   /* cannot happen after the count above */
                rc = qs_fail(c->err, QS_ERR_FORMAT, line, "tree %llu: node %u is reached twice",
                             t, ch[k]);
                goto out;
            }
            mark[ch[k]] = 1;
            stack[sp++] = ch[k];
        }
    }
    if (seen != n) {
        uint32_t u = 0;
        while (u < n && mark[u])
            u++;
        rc = qs_fail(c->err, QS_ERR_FORMAT, line,
                     "tree %llu: %s %u is not reachable from the root (the child links form a "
                     "cycle)",
                     t, lgb_kind(u, leaves), lgb_num(u, leaves));
    }
out:
    free(mark);
    free(stack);
    return rc;
}

/* The array field `id` must hold exactly `want` values. */
static int check_count(conv *c, int id, uint64_t want)
{
    const field *f = &c->tf[id];
    size_t have = count_tokens(f->v);
    if (have != want)
        return qs_fail(c->err, QS_ERR_FORMAT, f->line, "tree %llu: %s has %zu values, expected %llu",
                       (unsigned long long)c->ntrees, tree_names[id], have,
                       (unsigned long long)want);
    return 0;
}

static int missing_field(conv *c, int id)
{
    return qs_fail(c->err, QS_ERR_FORMAT, c->tree_line, "tree %llu: missing field %s",
                   (unsigned long long)c->ntrees, tree_names[id]);
}

/* Messages about value i of an array field. */
static int bad_value(conv *c, int id, size_t i, span tok, const char *why)
{
    qtext q;
    return qs_fail(c->err, QS_ERR_FORMAT, c->tf[id].line, "tree %llu: %s[%zu] = \"%s\" %s",
                   (unsigned long long)c->ntrees, tree_names[id], i, quote(&q, tok), why);
}

/* Value i of array field `id` as a double. */
static int value_f64(conv *c, int id, size_t i, span tok, double *out)
{
    int rc = parse_f64(tok, out);
    if (rc == NUM_RANGE)
        return bad_value(c, id, i, tok, "is too long for a number");
    if (rc != NUM_OK)
        return bad_value(c, id, i, tok, "is not a number");
    return 0;
}

/* Read one array of integers in [lo, hi] (counts already checked). */
static int read_ints(conv *c, int id, int64_t lo, int64_t hi, const char *why,
                     void (*put)(void *ctx, size_t i, int64_t v), void *ctx)
{
    span rest = c->tf[id].v, tok;
    for (size_t i = 0; next_token(&rest, &tok); i++) {
        int64_t v = 0;
        int rc = parse_i64(tok, &v);
        if (rc == NUM_SYNTAX)
            return bad_value(c, id, i, tok, "is not an integer");
        if (rc == NUM_RANGE || v < lo || v > hi)
            return bad_value(c, id, i, tok, why);
        put(ctx, i, v);
    }
    return 0;
}

/* What the per-value callbacks need. */
typedef struct tree_ctx {
    conv *c;
    qs_node *nd;
    uint32_t leaves;
    int64_t *bounds;     /* cat_boundaries, num_cat + 1 */
    uint32_t *words;     /* cat_threshold */
} tree_ctx;

static void put_feature(void *ctx, size_t i, int64_t v)
{
    tree_ctx *x = ctx;
    x->nd[i].feature = (uint32_t)v;
}

static void put_decision(void *ctx, size_t i, int64_t v)
{
    tree_ctx *x = ctx;
    qs_node *n = &x->nd[i];
    if (v & 1) {
        /* LightGBM's categorical rule: the bitset lists the categories that
         * go left; NaN goes right; the value is truncated to int and a
         * negative int goes right.  Its default-left bit and missing type are
         * not consulted for categorical nodes. */
        n->kind = QS_NODE_CAT;
        n->flags = QS_CAT_MEMBERS_LEFT;
        n->miss = QS_MISS_NAN;
        n->default_left = 0;
        return;
    }
    int mt = (int)((v >> 2) & 3);
    n->kind = QS_NODE_NUM;
    n->default_left = (uint8_t)((v >> 1) & 1);
    n->miss = mt == 0 ? QS_MISS_NONE : mt == 1 ? QS_MISS_ZERO : QS_MISS_NAN;
}

static void put_child(void *ctx, size_t i, int64_t v, int right)
{
    tree_ctx *x = ctx;
    /* v >= 0: internal node v (canonical v); v < 0: leaf ~v, which follows
     * the L-1 internal nodes. */
    int32_t idx = v >= 0 ? (int32_t)v : (int32_t)(x->leaves - 1) + (int32_t)(-v - 1);
    if (right)
        x->nd[i].right = idx;
    else
        x->nd[i].left = idx;
}
static void put_left(void *ctx, size_t i, int64_t v)
{
    put_child(ctx, i, v, 0);
}
static void put_right(void *ctx, size_t i, int64_t v)
{
    put_child(ctx, i, v, 1);
}

static void put_bound(void *ctx, size_t i, int64_t v)
{
    tree_ctx *x = ctx;
    x->bounds[i] = v;
}

/* The linear models of a tree's leaves (is_linear=1), whose L leaves are
 * the tree's last nodes: leaf k gets leaf_const[k] and the next
 * num_features[k] pairs of leaf_features and leaf_coeff, in order
 * (LightGBM's Tree::Predict sums them in that order). */
static int read_linear(conv *c, uint32_t leaves)
{
    qs_model *m = c->m;
    field *f = c->tf;
    static const int need[] = { F_LEAF_CONST, F_NUM_FEATURES, F_LEAF_FEATURES, F_LEAF_COEFF };
    for (size_t k = 0; k < sizeof need / sizeof *need; k++)
        if (!f[need[k]].set)
            return missing_field(c, need[k]);
    if (check_count(c, F_LEAF_CONST, leaves) || check_count(c, F_NUM_FEATURES, leaves))
        return -1;
    size_t nterms = count_tokens(f[F_LEAF_FEATURES].v);
    if (check_count(c, F_LEAF_COEFF, nterms))
        return -1;
    uint32_t *cnt = malloc(sizeof *cnt * leaves);
    uint32_t *feat = malloc(sizeof *feat * (nterms ? nterms : 1));
    double *coef = malloc(sizeof *coef * (nterms ? nterms : 1));
    int rc = -1;
    if (!cnt || !feat || !coef) {
        qs_fail(c->err, QS_ERR_NOMEM, c->tree_line, "out of memory");
        goto out;
    }
    {
        span rest = f[F_NUM_FEATURES].v, tok;
        uint64_t sum = 0;
        for (size_t i = 0; next_token(&rest, &tok); i++) {
            int64_t k = 0;
            int r = parse_i64(tok, &k);
            if (r == NUM_SYNTAX) {
                bad_value(c, F_NUM_FEATURES, i, tok, "is not an integer");
                goto out;
            }
            if (r == NUM_RANGE || k < 0 || k > (int64_t)QS_MAX_LINEAR_TERMS) {
                bad_value(c, F_NUM_FEATURES, i, tok, "is out of range");
                goto out;
            }
            cnt[i] = (uint32_t)k;
            sum += (uint64_t)k;
        }
        if (sum != nterms) {
            qs_fail(c->err, QS_ERR_FORMAT, f[F_LEAF_FEATURES].line,
                    "tree %llu: leaf_features has %zu values, expected %llu (the sum of "
                    "num_features)",
                    (unsigned long long)c->ntrees, nterms, (unsigned long long)sum);
            goto out;
        }
    }
    {
        char why[96];
        snprintf(why, sizeof why, "is out of range (the model has %u features)", m->num_features);
        span rest = f[F_LEAF_FEATURES].v, tok;
        for (size_t i = 0; next_token(&rest, &tok); i++) {
            int64_t k = 0;
            int r = parse_i64(tok, &k);
            if (r == NUM_SYNTAX) {
                bad_value(c, F_LEAF_FEATURES, i, tok, "is not an integer");
                goto out;
            }
            if (r == NUM_RANGE || k < 0 || k >= (int64_t)m->num_features) {
                bad_value(c, F_LEAF_FEATURES, i, tok, why);
                goto out;
            }
            feat[i] = (uint32_t)k;
        }
        rest = f[F_LEAF_COEFF].v;
        for (size_t i = 0; next_token(&rest, &tok); i++)
            if (value_f64(c, F_LEAF_COEFF, i, tok, &coef[i]))
                goto out;
    }
    {
        span rest = f[F_LEAF_CONST].v, tok;
        uint64_t base = m->trees[m->num_trees - 1].node_off + leaves - 1;
        size_t at = 0;
        for (size_t k = 0; next_token(&rest, &tok); k++) {
            double konst;
            if (value_f64(c, F_LEAF_CONST, k, tok, &konst))
                goto out;
            if (qs_model_add_linear(m, base + k, konst, cnt[k], feat + at, coef + at, c->err)) {
                at_line(c, f[F_LEAF_CONST].line);
                goto out;
            }
            at += cnt[k];
        }
    }
    rc = 0;
out:
    free(cnt);
    free(feat);
    free(coef);
    return rc;
}

/* Convert the tree whose fields were gathered in c->tf. */
static int finish_tree(conv *c)
{
    qs_model *m = c->m;
    field *f = c->tf;
    unsigned long long t = (unsigned long long)c->ntrees;
    char where[48];
    int64_t v;
    int rc = -1;
    tree_ctx x = { c, NULL, 0, NULL, NULL };
    int64_t *cat_off = NULL;

    snprintf(where, sizeof where, "tree %llu", t);
    /* Linear trees (linear_tree=true): each leaf also holds a linear model
     * (leaf_const, num_features, leaf_features, leaf_coeff), read after the
     * tree's nodes. */
    int linear = 0;
    if (f[F_IS_LINEAR].set) {
        if (field_int(c, &f[F_IS_LINEAR], where, "is_linear", INT64_MIN + 1, INT64_MAX, 0, &v))
            return -1;
        linear = v != 0;   /* LightGBM reads it as a bool */
    }
    if (!f[F_NUM_LEAVES].set)
        return missing_field(c, F_NUM_LEAVES);
    if (field_int(c, &f[F_NUM_LEAVES], where, "num_leaves", 1, QS_MAX_LEAVES, 1, &v))
        return -1;
    uint32_t leaves = (uint32_t)v;
    x.leaves = leaves;
    if (!f[F_NUM_CAT].set)
        return missing_field(c, F_NUM_CAT);
    /* Each categorical split owns one set, so there are at most L-1. */
    if (field_int(c, &f[F_NUM_CAT], where, "num_cat", 0, (int64_t)leaves - 1, 0, &v))
        return -1;
    uint32_t num_cat = (uint32_t)v;
    if (!f[F_LEAF_VALUE].set)
        return missing_field(c, F_LEAF_VALUE);
    if (check_count(c, F_LEAF_VALUE, leaves))
        return -1;
    /* Required by LightGBM for a tree with splits; when present on a single
     * leaf they must be empty. */
    static const int node_fields[] = { F_SPLIT_FEATURE, F_THRESHOLD, F_DECISION_TYPE,
                                       F_LEFT_CHILD, F_RIGHT_CHILD };
    for (size_t k = 0; k < sizeof node_fields / sizeof *node_fields; k++) {
        int id = node_fields[k];
        if (f[id].set) {
            if (check_count(c, id, leaves - 1))
                return -1;
        } else if (leaves > 1 && id != F_DECISION_TYPE) {
            return missing_field(c, id);
        }
    }

    /* Category sets: cat_boundaries (C+1 offsets) into cat_threshold. */
    size_t nwords = 0;
    if (num_cat > 0) {
        if (!f[F_CAT_BOUNDARIES].set)
            return missing_field(c, F_CAT_BOUNDARIES);
        if (!f[F_CAT_THRESHOLD].set)
            return missing_field(c, F_CAT_THRESHOLD);
        if (check_count(c, F_CAT_BOUNDARIES, (uint64_t)num_cat + 1))
            return -1;
        nwords = count_tokens(f[F_CAT_THRESHOLD].v);
        x.bounds = malloc(((size_t)num_cat + 1) * sizeof *x.bounds);
        x.words = malloc((nwords ? nwords : 1) * sizeof *x.words);
        cat_off = malloc((size_t)num_cat * sizeof *cat_off);
        if (!x.bounds || !x.words || !cat_off) {
            qs_fail(c->err, QS_ERR_NOMEM, c->tree_line, "out of memory");
            goto out;
        }
        if (read_ints(c, F_CAT_BOUNDARIES, 0, (int64_t)nwords,
                      "is out of range (cat_threshold has fewer words)", put_bound, &x))
            goto out;
        for (uint32_t i = 0; i < num_cat; i++) {
            if (x.bounds[i + 1] < x.bounds[i]) {
                qs_fail(c->err, QS_ERR_FORMAT, f[F_CAT_BOUNDARIES].line,
                        "tree %llu: cat_boundaries decrease at %u (%lld then %lld)", t, i + 1,
                        (long long)x.bounds[i], (long long)x.bounds[i + 1]);
                goto out;
            }
            if (x.bounds[i + 1] - x.bounds[i] > (int64_t)QS_MAX_CAT_WORDS) {
                qs_fail(c->err, QS_ERR_LIMIT, f[F_CAT_BOUNDARIES].line,
                        "tree %llu: category set %u has %lld words (limit %u)", t, i,
                        (long long)(x.bounds[i + 1] - x.bounds[i]), QS_MAX_CAT_WORDS);
                goto out;
            }
        }
        if ((uint64_t)x.bounds[num_cat] != nwords) {
            qs_fail(c->err, QS_ERR_FORMAT, f[F_CAT_THRESHOLD].line,
                    "tree %llu: cat_threshold has %zu values, expected %lld (the last "
                    "cat_boundaries value)",
                    t, nwords, (long long)x.bounds[num_cat]);
            goto out;
        }
        span rest = f[F_CAT_THRESHOLD].v, tok;
        for (size_t i = 0; next_token(&rest, &tok); i++) {
            int64_t w = 0;
            int r = parse_i64(tok, &w);
            if (r == NUM_SYNTAX) {
                bad_value(c, F_CAT_THRESHOLD, i, tok, "is not an integer");
                goto out;
            }
            if (r == NUM_RANGE || w < 0 || w > (int64_t)UINT32_MAX) {
                bad_value(c, F_CAT_THRESHOLD, i, tok, "is not a 32-bit word");
                goto out;
            }
            x.words[i] = (uint32_t)w;
        }
        for (uint32_t i = 0; i < num_cat; i++)
            cat_off[i] = -1;
    }

    /* All counts agree with the text: build the nodes. */
    if (qs_model_add_tree(m, (uint32_t)(c->ntrees % c->per_iter), 1.0, c->err)) {
        at_line(c, c->tree_line);
        goto out;
    }
    if (qs_model_add_nodes(m, 2 * leaves - 1, c->err) < 0) {
        at_line(c, c->tree_line);
        goto out;
    }
    x.nd = qs_model_cur_node(m, 0);   /* stays valid: no nodes are added below */

    {
        span rest = f[F_LEAF_VALUE].v, tok;
        for (size_t j = 0; next_token(&rest, &tok); j++) {
            qs_node *n = &x.nd[leaves - 1 + j];
            n->kind = QS_NODE_LEAF;
            if (value_f64(c, F_LEAF_VALUE, j, tok, &n->value))
                goto out;
        }
    }
    if (linear && read_linear(c, leaves))
        goto out;
    if (leaves == 1) {
        rc = 0;
        goto out;
    }

    /* Bits 0 (categorical), 1 (default left), 2-3 (missing type 0..2);
     * LightGBM writes nothing else, so other values are refused. */
    if (f[F_DECISION_TYPE].set) {
        span rest = f[F_DECISION_TYPE].v, tok;
        for (size_t i = 0; next_token(&rest, &tok); i++) {
            int64_t d = 0;
            int r = parse_i64(tok, &d);
            if (r != NUM_OK || d < 0 || d > 15 || ((d >> 2) & 3) == 3) {
                bad_value(c, F_DECISION_TYPE, i, tok, "is not a valid decision type");
                goto out;
            }
            put_decision(&x, i, d);
        }
    } else {
        /* LightGBM's default: numerical, missing type None, default right. */
        for (uint32_t i = 0; i + 1 < leaves; i++)
            put_decision(&x, i, 0);
    }
    {
        char why[96];
        snprintf(why, sizeof why, "is out of range (the model has %u features)", m->num_features);
        if (read_ints(c, F_SPLIT_FEATURE, 0, (int64_t)m->num_features - 1, why, put_feature, &x))
            goto out;
        snprintf(why, sizeof why, "is out of range (the tree has %u leaves)", leaves);
        if (read_ints(c, F_LEFT_CHILD, -(int64_t)leaves, (int64_t)leaves - 2, why, put_left, &x) ||
            read_ints(c, F_RIGHT_CHILD, -(int64_t)leaves, (int64_t)leaves - 2, why, put_right, &x))
            goto out;
    }
    {
        span rest = f[F_THRESHOLD].v, tok;
        for (size_t i = 0; next_token(&rest, &tok); i++) {
            qs_node *n = &x.nd[i];
            double th;
            if (value_f64(c, F_THRESHOLD, i, tok, &th))
                goto out;
            if (n->kind == QS_NODE_NUM) {
                if (isnan(th)) {
                    bad_value(c, F_THRESHOLD, i, tok, "is nan, not a usable threshold");
                    goto out;
                }
                n->value = th;
                continue;
            }
            /* Categorical: the threshold is the index of the node's set. */
            if (!(th >= 0.0 && th < (double)num_cat && th == floor(th))) {
                char why[96];
                snprintf(why, sizeof why, "is not a category set index (the tree has %u sets)",
                         num_cat);
                bad_value(c, F_THRESHOLD, i, tok, why);
                goto out;
            }
            uint32_t s = (uint32_t)th;
            if (cat_off[s] < 0) {
                int64_t off = qs_model_add_cat_words(m, x.words + x.bounds[s],
                                                     (uint32_t)(x.bounds[s + 1] - x.bounds[s]),
                                                     c->err);
                if (off < 0) {
                    at_line(c, f[F_CAT_THRESHOLD].line);
                    goto out;
                }
                cat_off[s] = off;
            }
            n->cat_off = (uint32_t)cat_off[s];
            n->cat_nwords = (uint32_t)(x.bounds[s + 1] - x.bounds[s]);
            n->value = 0.0;
        }
    }
    rc = check_shape(c, x.nd, leaves, f[F_LEFT_CHILD].line);
out:
    free(x.bounds);
    free(x.words);
    free(cat_off);
    return rc;
}

/* Close the tree being gathered, if any. */
static int flush_tree(conv *c)
{
    if (!c->in_tree)
        return 0;
    c->in_tree = 0;
    if (finish_tree(c))
        return -1;
    c->ntrees++;
    return 0;
}

/* "Tree=N": trees must come numbered 0, 1, 2 ... */
static int start_tree(conv *c, span val)
{
    int64_t idx = -1;
    qtext q;
    val = trim(val);
    if (parse_i64(val, &idx) != NUM_OK || idx < 0 || (uint64_t)idx != c->ntrees)
        return qs_fail(c->err, QS_ERR_FORMAT, c->line, "expected Tree=%llu, got Tree=%s",
                       (unsigned long long)c->ntrees, quote(&q, val));
    if (c->ntrees >= QS_MAX_TREES)
        return qs_fail(c->err, QS_ERR_LIMIT, c->line, "more than %u trees", QS_MAX_TREES);
    memset(c->tf, 0, sizeof c->tf);
    c->in_tree = 1;
    c->tree_line = c->line;
    return 0;
}

/* ------------------------------------------------------------ the whole */

static int convert(conv *c)
{
    span line;
    int ended = 0, any = 0;
    qtext q;

    /* A UTF-8 byte order mark, as some editors add. */
    if (c->len >= 3 && memcmp(c->buf, "\xEF\xBB\xBF", 3) == 0)
        c->pos = 3;
    while (next_line(c, &line)) {
        span s = trim(line);
        if (s.n == 0)
            continue;
        any = 1;
        /* Format v2 (older LightGBM; no tree_sizes) may have no "end of
         * trees" line: LightGBM's loader (GBDT::LoadModelFromString) reads
         * trees while lines start with "Tree=", so the first line after a
         * tree that is neither a tree field nor "Tree=" (a line without
         * '=': "feature_importances:", "parameters:", ...) ends them, as
         * does the end of the input. */
        if (span_eq(s, "end of trees") ||
            (c->v2 && c->in_tree && !memchr(s.p, '=', s.n) && !span_eq(s, "tree"))) {
            if ((!c->header_done && finish_header(c)) || flush_tree(c))
                return -1;
            ended = 1;
            break;
        }
        const char *eq = memchr(s.p, '=', s.n);
        span key = { s.p, eq ? (size_t)(eq - s.p) : s.n };
        span val = { eq ? eq + 1 : s.p + s.n, eq ? s.n - (size_t)(eq - s.p) - 1 : 0 };
        if (eq && span_eq(key, "Tree")) {
            if ((!c->header_done && finish_header(c)) || flush_tree(c) || start_tree(c, val))
                return -1;
        } else if (c->in_tree) {
            char where[48];
            snprintf(where, sizeof where, "tree %llu", (unsigned long long)c->ntrees);
            if (!eq)
                return qs_fail(c->err, QS_ERR_FORMAT, c->line, "%s: expected key=value, got \"%s\"",
                               where, quote(&q, s));
            if (store_field(c, c->tf, tree_names, F_COUNT, key, val, where))
                return -1;
        } else if (!eq) {
            if (header_word(c, s))
                return -1;
        } else {
            if (span_eq(key, "average_output")) {
                c->average_output = 1;
                continue;
            }
            /* A tree field here means its "Tree=" line is damaged; skipping
             * it as an unknown header key would silently lose trees. */
            for (int i = 0; i < F_COUNT; i++)
                if (span_eq(key, tree_names[i]))
                    return qs_fail(c->err, QS_ERR_FORMAT, c->line,
                                   "tree field %s before any \"Tree=\" line", tree_names[i]);
            if (store_field(c, c->hdr, hdr_names, H_COUNT, key, val, "header"))
                return -1;
        }
    }
    if (!any)
        return qs_fail(c->err, QS_ERR_FORMAT, c->line, "empty model (no lightgbm header)");
    if (!ended) {
        /* Report what is wrong with the last tree first: a truncation inside
         * a tree shows as a short array, which says more. */
        if ((!c->header_done && finish_header(c)) || flush_tree(c))
            return -1;
        if (c->v2 && c->ntrees > 0)
            ended = 1;   /* v2: the input may end after the last tree */
    }
    if (!ended) {
        return qs_fail(c->err, QS_ERR_FORMAT, c->line,
                       "unexpected end of input after %llu tree%s: no \"end of trees\" line "
                       "(truncated model?)",
                       (unsigned long long)c->ntrees, c->ntrees == 1 ? "" : "s");
    }
    /* LightGBM predicts with trees / per_iter whole iterations and silently
     * drops a partial one; such a file is damaged, so say so. */
    if (c->ntrees % c->per_iter != 0)
        return qs_fail(c->err, QS_ERR_FORMAT, c->line,
                       "the model has %llu trees, not a multiple of num_tree_per_iteration %u",
                       (unsigned long long)c->ntrees, c->per_iter);
    return 0;
}

qs_model *qs_convert_lightgbm(const char *buf, size_t len, qs_error *err)
{
    if (!buf && len) {
        qs_fail(err, QS_ERR_ARG, 0, "no input buffer");
        return NULL;
    }
    conv c;
    memset(&c, 0, sizeof c);
    c.buf = buf ? buf : "";
    c.len = len;
    c.err = err;
    c.m = qs_model_new(QS_SRC_LIGHTGBM, err);
    if (!c.m)
        return NULL;
    c.m->cmp = QS_CMP_LE;         /* goes left iff x <= threshold */
    c.m->float_precision = 0;     /* doubles everywhere */
    c.m->float_accumulate = 0;    /* summed in double, tree order */
    c.m->absent_missing = 0;      /* an absent feature is 0.0 */
    c.per_iter = 1;
    if (convert(&c) != 0 || qs_model_link_linear(c.m, err) != 0 ||
        qs_model_validate(c.m, err) != 0) {
        qs_model_free(c.m);
        return NULL;
    }
    if (c.average_output && strcmp(c.m->transform, "unsupported") != 0) {
        /* GBDT::Predict divides each sum by the iterations (trees / trees
         * per iteration) before the output function. */
        uint64_t it = c.per_iter ? c.m->num_trees / c.per_iter : 0;
        if (it == 0 || it * c.per_iter != c.m->num_trees || it > QS_MAX_TREES)
            strcpy(c.m->transform, "unsupported");
        else
            c.m->transform_average = (uint32_t)it;
    }
    return c.m;
}
