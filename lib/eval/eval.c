/* eval.c: ranking metrics for qs-eval: line parsers, query grouping, and NDCG/ERR/MAP/P under the reference tools' conventions. */
#include "qs.h"
#include "common/common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ conventions */

const char *const qs_eval_preset_names[] = {
    "quickrank", "ranklib", "lightgbm", "xgboost", "xgboost-minus",
    "trec", "sklearn", "rankeval", "letor", NULL,
};

void qs_eval_conv_default(qs_eval_conv *c)
{
    memset(c, 0, sizeof *c);
    c->gain = QS_GAIN_EXP2;
    c->ties = QS_TIES_INPUT;
    c->norel = QS_NOREL_ZERO;
    c->beyond = QS_BEYOND_CLAMP;
    c->discount = QS_DISCOUNT_LOG2;
    c->score_type = QS_SCORE_DOUBLE;
    c->group = QS_GROUP_BLOCK;
}

/* The --like table of the README (qs-eval): each preset is the default plus
 * the knobs that tool changes. */
int qs_eval_conv_preset(qs_eval_conv *c, const char *name, qs_error *err)
{
    qs_eval_conv_default(c);
    if (strcmp(name, "quickrank") == 0 || strcmp(name, "ranklib") == 0)
        return 0;
    if (strcmp(name, "lightgbm") == 0) {
        c->norel = QS_NOREL_ONE;
        return 0;
    }
    if (strcmp(name, "xgboost") == 0) {
        c->norel = QS_NOREL_ONE;
        c->score_type = QS_SCORE_FLOAT;
        return 0;
    }
    if (strcmp(name, "xgboost-minus") == 0) {
        c->score_type = QS_SCORE_FLOAT;
        return 0;
    }
    if (strcmp(name, "trec") == 0) {
        c->gain = QS_GAIN_LINEAR;
        c->group = QS_GROUP_QID;
        return 0;
    }
    if (strcmp(name, "sklearn") == 0) {
        c->gain = QS_GAIN_LINEAR;
        c->ties = QS_TIES_AVERAGE;
        return 0;
    }
    if (strcmp(name, "rankeval") == 0) {
        c->ties = QS_TIES_REVERSE;
        c->norel = QS_NOREL_ONE;
        return 0;
    }
    if (strcmp(name, "letor") == 0) {
        c->discount = QS_DISCOUNT_LETOR;
        c->beyond = QS_BEYOND_ZERO;
        c->group = QS_GROUP_QID;
        return 0;
    }
    return qs_fail(err, QS_ERR_ARG, 0,
                   "unknown preset '%.64s' (expected quickrank, ranklib, lightgbm, xgboost, "
                   "xgboost-minus, trec, sklearn, rankeval or letor)", name);
}

/* Index of `v` in the NULL-terminated `names`, or -1. */
static int pick(const char *v, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(v, names[i]) == 0)
            return i;
    return -1;
}

static const char *const conv_gain[] = { "exp2", "linear", NULL };
static const char *const conv_ties[] = { "input", "reverse", "average", "pessimistic",
                                         "optimistic", NULL };
static const char *const conv_norel[] = { "0", "1", "skip", NULL };
static const char *const conv_beyond[] = { "clamp", "zero", NULL };
static const char *const conv_discount[] = { "log2", "letor", NULL };
static const char *const conv_stype[] = { "double", "float", NULL };
static const char *const conv_group[] = { "block", "qid", NULL };

static const char *conv_name(const char *const *names, size_t n, unsigned v)
{
    return v < n - 1 ? names[v] : "?";
}

#define CONV_NAME(names, v) conv_name(names, sizeof names / sizeof names[0], (unsigned)(v))

const char *qs_eval_conv_describe(const qs_eval_conv *c, char *dst, size_t cap)
{
    snprintf(dst, cap, "gain=%s ties=%s norel=%s beyond=%s discount=%s score-type=%s group=%s",
             CONV_NAME(conv_gain, c->gain), CONV_NAME(conv_ties, c->ties),
             CONV_NAME(conv_norel, c->norel), CONV_NAME(conv_beyond, c->beyond),
             CONV_NAME(conv_discount, c->discount), CONV_NAME(conv_stype, c->score_type),
             CONV_NAME(conv_group, c->group));
    return dst;
}

const char *qs_eval_conv_preset_of(const qs_eval_conv *c)
{
    for (size_t i = 0; qs_eval_preset_names[i]; i++) {
        qs_eval_conv p;
        qs_eval_conv_default(&p);
        if (qs_eval_conv_preset(&p, qs_eval_preset_names[i], NULL) == 0 && p.gain == c->gain &&
            p.ties == c->ties && p.norel == c->norel && p.beyond == c->beyond &&
            p.discount == c->discount && p.score_type == c->score_type && p.group == c->group)
            return qs_eval_preset_names[i];
    }
    return NULL;
}

const char *qs_eval_preset_of_source(qs_source src)
{
    const qs_source_info *r = qs_source_get(src);   /* common/source.c */
    return r && r->eval_preset[0] ? r->eval_preset : NULL;
}

int qs_eval_conv_set(qs_eval_conv *c, const char *knob, const char *value, qs_error *err)
{
    const char *const *gain = conv_gain, *const *ties = conv_ties, *const *norel = conv_norel,
                      *const *beyond = conv_beyond, *const *discount = conv_discount,
                      *const *stype = conv_stype, *const *group = conv_group;
    const char *expect;
    int i;
    if (strcmp(knob, "gain") == 0) {
        if ((i = pick(value, gain)) >= 0) { c->gain = (qs_eval_gain)i; return 0; }
        expect = "exp2 or linear";
    } else if (strcmp(knob, "ties") == 0) {
        /* "stable" is the name the reference data uses for input order. */
        if (strcmp(value, "stable") == 0) { c->ties = QS_TIES_INPUT; return 0; }
        if ((i = pick(value, ties)) >= 0) { c->ties = (qs_eval_ties)i; return 0; }
        expect = "input, reverse, average, pessimistic or optimistic";
    } else if (strcmp(knob, "norel") == 0) {
        if ((i = pick(value, norel)) >= 0) { c->norel = (qs_eval_norel)i; return 0; }
        expect = "0, 1 or skip";
    } else if (strcmp(knob, "beyond") == 0) {
        if ((i = pick(value, beyond)) >= 0) { c->beyond = (qs_eval_beyond)i; return 0; }
        expect = "clamp or zero";
    } else if (strcmp(knob, "discount") == 0) {
        if ((i = pick(value, discount)) >= 0) { c->discount = (qs_eval_discount)i; return 0; }
        expect = "log2 or letor";
    } else if (strcmp(knob, "score-type") == 0) {
        if ((i = pick(value, stype)) >= 0) { c->score_type = (qs_eval_score_type)i; return 0; }
        expect = "double or float";
    } else if (strcmp(knob, "group") == 0) {
        if ((i = pick(value, group)) >= 0) { c->group = (qs_eval_group)i; return 0; }
        expect = "block or qid";
    } else {
        return qs_fail(err, QS_ERR_ARG, 0, "unknown convention option '%.64s'", knob);
    }
    return qs_fail(err, QS_ERR_ARG, 0, "bad --%s '%.64s' (expected %s)", knob, value, expect);
}

int qs_metric_from_name(const char *name)
{
    static const char *const names[] = { "ndcg", "err", "map", "p", NULL };
    return pick(name, names);
}

const char *qs_metric_name(qs_metric m)
{
    switch (m) {
    case QS_METRIC_NDCG: return "ndcg";
    case QS_METRIC_ERR: return "err";
    case QS_METRIC_MAP: return "map";
    case QS_METRIC_P: return "p";
    }
    return "?";
}

/* ------------------------------------------------------------ parsing */

/* strtod over a token that is not NUL-terminated.  The whole token must be
 * the number; the longest accepted spelling is bounded so that the copy
 * stays on the stack (no real score or label needs 500 characters). */
static int parse_double(const char *t, size_t n, double *out)
{
    char buf[512];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, t, n);
    buf[n] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (end != buf + n)
        return -1;
    *out = v;
    return 0;
}

static int has_nul(const char *line, size_t len)
{
    return len && memchr(line, '\0', len) != NULL;
}

static int is_blank(char ch) { return ch == ' ' || ch == '\t'; }

int qs_eval_parse_letor(const char *line, size_t len, qs_eval_doc *doc, int *is_doc,
                        qs_error *err)
{
    char sh[64];
    *is_doc = 0;
    if (has_nul(line, len))
        return qs_fail(err, QS_ERR_FORMAT, 0, "NUL byte in the line (binary input?)");
    const char *p = line, *end = line + len;
    const char *hash = memchr(line, '#', len);
    if (hash)
        end = hash;
    while (end > p && (end[-1] == '\r' || is_blank(end[-1])))
        end--;
    while (p < end && is_blank(*p))
        p++;
    if (p == end)
        return 0;
    const char *t = p;
    while (p < end && !is_blank(*p))
        p++;
    doc->label = t;
    doc->label_len = (size_t)(p - t);
    doc->qid = NULL;
    doc->qid_len = 0;
    /* Only the qid matters among the other tokens; features are not read. */
    while (p < end) {
        while (p < end && is_blank(*p))
            p++;
        t = p;
        while (p < end && !is_blank(*p))
            p++;
        size_t n = (size_t)(p - t);
        if (n >= 4 && memcmp(t, "qid:", 4) == 0) {
            if (n == 4)
                return qs_fail(err, QS_ERR_FORMAT, 0, "empty qid in 'qid:'");
            if (doc->qid)
                return qs_fail(err, QS_ERR_FORMAT, 0, "more than one qid on the line ('%s')",
                               qs_quote(sh, sizeof sh, t, n));
            doc->qid = t + 4;
            doc->qid_len = n - 4;
        }
    }
    *is_doc = 1;
    return 0;
}

/* Column `column` (1-based) of a tab-separated line, spaces trimmed. */
static int column_of(const char *line, size_t len, unsigned column, const char **tok,
                     size_t *n, unsigned *found)
{
    const char *p = line, *end = line + len;
    unsigned c = 1;
    for (;;) {
        const char *tab = memchr(p, '\t', (size_t)(end - p));
        const char *fe = tab ? tab : end;
        if (c == column) {
            while (p < fe && *p == ' ')
                p++;
            while (fe > p && fe[-1] == ' ')
                fe--;
            *tok = p;
            *n = (size_t)(fe - p);
            return 0;
        }
        if (!tab) {
            *found = c;
            return -1;
        }
        p = tab + 1;
        c++;
    }
}

static size_t strip_cr(const char *line, size_t len)
{
    return len && line[len - 1] == '\r' ? len - 1 : len;
}

static int score_token(const char *t, size_t n, double *score, qs_error *err)
{
    char sh[64];
    if (parse_double(t, n, score) != 0) {
        /* "2 qid:1 3:0.5": a LETOR line where a score should be, most
         * likely the two files given the other way round. */
        if (n > 2 && memchr(t, ' ', n) && memchr(t, ':', n))
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "bad score '%s' (a LETOR line, not a score: the labels file "
                           "comes first, then the scores: qs-eval LABELS SCORES)",
                           qs_quote(sh, sizeof sh, t, n));
        return qs_fail(err, QS_ERR_FORMAT, 0, "bad score '%s' (expected a number)",
                       qs_quote(sh, sizeof sh, t, n));
    }
    if (isnan(*score))
        return qs_fail(err, QS_ERR_FORMAT, 0, "bad score '%s' (NaN cannot be ranked)",
                       qs_quote(sh, sizeof sh, t, n));
    return 0;
}

int qs_eval_parse_score(const char *line, size_t len, unsigned column, double *score,
                        qs_error *err)
{
    if (has_nul(line, len))
        return qs_fail(err, QS_ERR_FORMAT, 0, "NUL byte in the line (binary input?)");
    len = strip_cr(line, len);
    const char *t;
    size_t n;
    unsigned found;
    if (column_of(line, len, column, &t, &n, &found) != 0)
        return qs_fail(err, QS_ERR_FORMAT, 0, "no score column %u (the line has %u)", column,
                       found);
    return score_token(t, n, score, err);
}

int qs_eval_parse_annotated(const char *line, size_t len, unsigned column, qs_eval_doc *doc,
                            qs_error *err)
{
    if (has_nul(line, len))
        return qs_fail(err, QS_ERR_FORMAT, 0, "NUL byte in the line (binary input?)");
    len = strip_cr(line, len);
    const char *t;
    size_t n;
    unsigned found;
    if (column_of(line, len, 1, &doc->label, &doc->label_len, &found) != 0 ||
        column_of(line, len, 2, &doc->qid, &doc->qid_len, &found) != 0 ||
        column_of(line, len, column + 2, &t, &n, &found) != 0) {
        if (found < 3)
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "expected label<TAB>qid<TAB>score (as qs-score --annotate writes), "
                           "found %u field%s", found, found == 1 ? "" : "s");
        return qs_fail(err, QS_ERR_FORMAT, 0, "no score column %u (the line has %u)", column,
                       found - 2);
    }
    return score_token(t, n, &doc->score, err);
}

/* ------------------------------------------------------------ one query */

/* A document while its query is ranked. */
typedef struct rdoc {
    double score;   /* as ranked: already rounded to float32 when asked */
    double label;
    double tiekey;  /* decides among equal scores before `pos`: 0, label or -label */
    size_t pos;     /* input position, or reversed input position */
} rdoc;

/* Score descending, then the tie rule.  The order is total (positions are
 * distinct), so qsort's instability cannot show. */
static int cmp_rdoc(const void *a, const void *b)
{
    const rdoc *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    if (x->tiekey != y->tiekey)
        return x->tiekey < y->tiekey ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

static double gain_of(const qs_eval_conv *c, double label)
{
    /* Labels were checked to be integers 0..30 for exp2: 2^l - 1 is exact. */
    return c->gain == QS_GAIN_EXP2 ? ldexp(1.0, (int)label) - 1.0 : label;
}

/* Discount of 1-based rank r. */
static double disc(const qs_eval_conv *c, size_t r)
{
    if (c->discount == QS_DISCOUNT_LETOR)
        return r <= 2 ? 1.0 : 1.0 / log2((double)r);
    return 1.0 / log2((double)r + 1.0);
}

static double norel_value(const qs_eval_conv *c)
{
    return c->norel == QS_NOREL_ONE ? 1.0 : c->norel == QS_NOREL_SKIP ? NAN : 0.0;
}

/* End (exclusive) of the group of equal scores that starts at `pos`. */
static size_t tie_end(const rdoc *d, size_t n, size_t pos)
{
    size_t end = pos + 1;
    while (end < n && d[end].score == d[pos].score)
        end++;
    return end;
}

static double ndcg_at(const qs_eval_conv *c, const rdoc *d, size_t n, const double *ideal,
                      size_t cut)
{
    /* Sums run in rank order, in double, as every reference does. */
    double idcg = 0.0;
    for (size_t r = 0; r < cut; r++)
        idcg += ideal[r] * disc(c, r + 1);
    if (idcg == 0.0)
        return norel_value(c);
    double dcg = 0.0;
    if (c->ties == QS_TIES_AVERAGE) {
        /* Each tied group contributes its mean gain times the discounts of
         * the ranks it covers within the cut (McSherry and Najork). */
        for (size_t pos = 0; pos < cut;) {
            size_t end = tie_end(d, n, pos);
            double gsum = 0.0, dsum = 0.0;
            for (size_t i = pos; i < end; i++)
                gsum += gain_of(c, d[i].label);
            for (size_t r = pos; r < end && r < cut; r++)
                dsum += disc(c, r + 1);
            dcg += gsum / (double)(end - pos) * dsum;
            pos = end;
        }
    } else {
        for (size_t r = 0; r < cut; r++)
            dcg += gain_of(c, d[r].label) * disc(c, r + 1);
    }
    return dcg / idcg;
}

static double err_at(const rdoc *d, size_t cut)
{
    /* RankLib's ERRScorer: R = (2^rel - 1) / 16 whatever the data's top label. */
    double s = 0.0, p = 1.0;
    for (size_t r = 0; r < cut; r++) {
        double R = (ldexp(1.0, (int)d[r].label) - 1.0) / 16.0;
        s += p * R / (double)(r + 1);
        p *= 1.0 - R;
    }
    return s;
}

static double ap_at(const rdoc *d, size_t cut, size_t nrel)
{
    /* Precision at each relevant rank within the cut, divided by all the
     * relevant documents of the query (RankLib's AP; XGBoost's map@k). */
    size_t hits = 0;
    double s = 0.0;
    for (size_t r = 0; r < cut; r++)
        if (d[r].label > 0.0) {
            hits++;
            s += (double)hits / (double)(r + 1);
        }
    return s / (double)nrel;
}

static double p_at(const qs_eval_conv *c, const rdoc *d, size_t n, size_t cut)
{
    double hits = 0.0;
    if (c->ties == QS_TIES_AVERAGE) {
        /* Expected precision over the orders of each tied group: its share
         * of relevant documents times the ranks it covers within the cut. */
        for (size_t pos = 0; pos < cut;) {
            size_t end = tie_end(d, n, pos), rel = 0;
            for (size_t i = pos; i < end; i++)
                rel += d[i].label > 0.0;
            size_t inside = (end < cut ? end : cut) - pos;
            hits += (double)rel / (double)(end - pos) * (double)inside;
            pos = end;
        }
    } else {
        for (size_t r = 0; r < cut; r++)
            hits += d[r].label > 0.0;
    }
    return hits / (double)cut;
}

/* Rank d[0..n) (n >= 1) and compute every cutoff into out[].  ideal has room
 * for n doubles. */
static void eval_docs(const qs_eval_options *o, rdoc *d, size_t n, double *ideal, double *out)
{
    const qs_eval_conv *c = &o->conv;
    size_t nrel = 0;
    for (size_t i = 0; i < n; i++) {
        nrel += d[i].label > 0.0;
        switch (c->ties) {
        case QS_TIES_REVERSE: d[i].tiekey = 0.0; d[i].pos = n - 1 - i; break;
        case QS_TIES_PESSIMISTIC: d[i].tiekey = d[i].label; d[i].pos = i; break;
        case QS_TIES_OPTIMISTIC: d[i].tiekey = -d[i].label; d[i].pos = i; break;
        default: d[i].tiekey = 0.0; d[i].pos = i; break;
        }
    }
    if (o->metric == QS_METRIC_NDCG) {
        for (size_t i = 0; i < n; i++)
            ideal[i] = gain_of(c, d[i].label);
        qsort(ideal, n, sizeof *ideal, cmp_desc);
    }
    qsort(d, n, sizeof *d, cmp_rdoc);
    for (size_t j = 0; j < o->nk; j++) {
        size_t k = o->ks[j];
        if (c->beyond == QS_BEYOND_ZERO && k > n) {
            /* The LETOR scripts never set NDCG@k past the list: it prints 0. */
            out[j] = 0.0;
            continue;
        }
        size_t cut = k == 0 || k > n ? n : k;
        if (o->metric == QS_METRIC_NDCG) {
            out[j] = ndcg_at(c, d, n, ideal, cut);
            continue;
        }
        if (nrel == 0) {
            out[j] = norel_value(c);
            continue;
        }
        switch (o->metric) {
        case QS_METRIC_ERR: out[j] = err_at(d, cut); break;
        case QS_METRIC_MAP: out[j] = ap_at(d, cut, nrel); break;
        default: out[j] = p_at(c, d, n, cut); break;
        }
    }
}

static double rank_score(const qs_eval_conv *c, double s)
{
    /* XGBoost ranks float32 predictions: values that differ only beyond
     * float precision become ties. */
    return c->score_type == QS_SCORE_FLOAT ? (double)(float)s : s;
}

/* Why `label` is not acceptable for the metric and gain, or NULL. */
static const char *label_problem(const qs_eval_options *o, double v)
{
    if (!isfinite(v))
        return "expected a number";
    if (v < 0.0)
        return "expected a number >= 0";
    if (o->metric == QS_METRIC_ERR) {
        if (v != floor(v) || v > QS_EVAL_MAX_ERR_LABEL)
            return "ERR needs an integer label 0..4: R=(2^rel-1)/16 is a probability only there";
    } else if (o->metric == QS_METRIC_NDCG && o->conv.gain == QS_GAIN_EXP2) {
        if (v != floor(v))
            return "gain exp2 needs an integer label 0..30; --gain=linear takes any number >= 0";
        if (v > QS_EVAL_MAX_EXP2_LABEL)
            return "gain exp2 needs an integer label 0..30";
    }
    return NULL;
}

static int check_options(const qs_eval_options *o, qs_error *err)
{
    if (!o || !o->ks || o->nk == 0)
        return qs_fail(err, QS_ERR_ARG, 0, "no cutoff given");
    if ((unsigned)o->metric > QS_METRIC_P)
        return qs_fail(err, QS_ERR_ARG, 0, "unknown metric");
    const qs_eval_conv *c = &o->conv;
    if ((unsigned)c->gain > QS_GAIN_LINEAR || (unsigned)c->ties > QS_TIES_OPTIMISTIC ||
        (unsigned)c->norel > QS_NOREL_SKIP || (unsigned)c->beyond > QS_BEYOND_ZERO ||
        (unsigned)c->discount > QS_DISCOUNT_LETOR || (unsigned)c->score_type > QS_SCORE_FLOAT ||
        (unsigned)c->group > QS_GROUP_QID)
        return qs_fail(err, QS_ERR_ARG, 0, "convention value out of range");
    /* Averaging over tie orders is linear only for NDCG and P@k; ERR and AP
     * would need the expectation of a product, which no reference defines. */
    if (c->ties == QS_TIES_AVERAGE && (o->metric == QS_METRIC_ERR || o->metric == QS_METRIC_MAP))
        return qs_fail(err, QS_ERR_ARG, 0, "--ties=average is defined for ndcg and p only");
    return 0;
}

int qs_eval_query(const qs_eval_options *opt, const double *labels, const double *scores,
                  size_t n, double *out, qs_error *err)
{
    if (check_options(opt, err) != 0)
        return -1;
    if (n == 0 || !labels || !scores || !out)
        return qs_fail(err, QS_ERR_ARG, 0, "empty query");
    for (size_t i = 0; i < n; i++) {
        const char *why = label_problem(opt, labels[i]);
        if (why)
            return qs_fail(err, QS_ERR_ARG, 0, "bad label %g at %zu (%s)", labels[i], i, why);
        if (isnan(scores[i]))
            return qs_fail(err, QS_ERR_ARG, 0, "NaN score at %zu", i);
    }
    if (n > SIZE_MAX / sizeof(rdoc))
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    rdoc *d = malloc(n * sizeof *d);
    double *ideal = malloc(n * sizeof *ideal);
    if (!d || !ideal) {
        free(d);
        free(ideal);
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        d[i].score = rank_score(&opt->conv, scores[i]);
        d[i].label = labels[i];
    }
    eval_docs(opt, d, n, ideal, out);
    free(d);
    free(ideal);
    return 0;
}

/* ------------------------------------------------------------ evaluator */

typedef struct query {
    size_t qid_off, qid_len; /* in the arena */
    size_t ndocs;
    double gain_sum;         /* NDCG: the sum of the documents' gains so far */
} query;

/* A set of qids (block grouping with on_query, to warn when a qid comes
 * back): open addressing over offsets into an arena. */
typedef struct qidset {
    char *arena;
    size_t len, cap;
    size_t *slot;             /* arena offset + 1, 0 = empty */
    size_t nslot, used;
} qidset;

/* Streaming remembers the qids of the last QIDSET_MAX to 2*QIDSET_MAX
 * queries (two generations), so memory stays bounded however many queries
 * there are: a qid that comes back after that many others is not noticed. */
#define QIDSET_MAX ((size_t)1 << 15)
#define QIDSET_BYTES ((size_t)1 << 20)

struct qs_eval {
    qs_eval_options opt;
    unsigned *ks;             /* own copy of opt.ks */
    rdoc *docs;               /* the open block, or every document (qid grouping) */
    size_t ndocs, cap_docs;
    size_t *group;            /* qid grouping: query of each document */
    size_t cap_group;
    double *ideal;            /* scratch for the ideal order */
    size_t cap_ideal;
    query *q;                 /* queries in input order */
    size_t nq, cap_q;
    char *arena;              /* qid strings */
    size_t arena_len, arena_cap;
    size_t *table;            /* open addressing over qids: query index + 1, 0 = empty */
    size_t table_cap, table_used;
    double *values;           /* nq * nk */
    size_t cap_values;
    double *mean;             /* nk */
    size_t cur;               /* the open block's query (block grouping) */
    int open;                 /* a block is open */
    int finished;
    int stream;               /* block grouping with on_query: queries not kept */
    size_t nqueries;          /* queries computed so far */
    double *sum;              /* nk: running sums of the values, in query order */
    size_t *cnt;              /* nk: queries in each sum */
    qidset seen[2];           /* stream: recent qids (current, previous generation) */
};

/* Make room for `need` elements of `size` bytes in *p (capacity *cap). */
static int grow(void **p, size_t *cap, size_t need, size_t size, qs_error *err)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > SIZE_MAX / 2)
            return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        nc *= 2;
    }
    if (nc > SIZE_MAX / size)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    void *np = realloc(*p, nc * size);
    if (!np)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    *p = np;
    *cap = nc;
    return 0;
}

qs_eval *qs_eval_new(const qs_eval_options *opt, qs_error *err)
{
    if (check_options(opt, err) != 0)
        return NULL;
    qs_eval *e = calloc(1, sizeof *e);
    if (!e || !(e->ks = malloc(opt->nk * sizeof *e->ks)) ||
        !(e->mean = malloc(opt->nk * sizeof *e->mean)) ||
        !(e->sum = calloc(opt->nk, sizeof *e->sum)) ||
        !(e->cnt = calloc(opt->nk, sizeof *e->cnt))) {
        qs_eval_free(e);
        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        return NULL;
    }
    memcpy(e->ks, opt->ks, opt->nk * sizeof *e->ks);
    e->opt = *opt;
    e->opt.ks = e->ks;
    e->stream = opt->on_query && opt->conv.group == QS_GROUP_BLOCK;
    return e;
}

void qs_eval_free(qs_eval *e)
{
    if (!e)
        return;
    free(e->ks);
    free(e->docs);
    free(e->group);
    free(e->ideal);
    free(e->q);
    free(e->arena);
    free(e->table);
    free(e->values);
    free(e->mean);
    free(e->sum);
    free(e->cnt);
    for (int g = 0; g < 2; g++) {
        free(e->seen[g].arena);
        free(e->seen[g].slot);
    }
    free(e);
}

static uint64_t hash_qid(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static int same_qid(const qs_eval *e, size_t qi, const char *qid, size_t n)
{
    const query *q = &e->q[qi];
    return q->qid_len == n && (n == 0 || memcmp(e->arena + q->qid_off, qid, n) == 0);
}

/* Slot of `qid` in the table: its entry, or the empty slot where it goes. */
static size_t table_slot(const qs_eval *e, const char *qid, size_t n)
{
    size_t mask = e->table_cap - 1, i = (size_t)hash_qid(qid, n) & mask;
    while (e->table[i] && !same_qid(e, e->table[i] - 1, qid, n))
        i = (i + 1) & mask;
    return i;
}

static int table_insert(qs_eval *e, size_t qi, qs_error *err)
{
    if ((e->table_used + 1) * 2 > e->table_cap) {
        size_t nc = e->table_cap ? e->table_cap * 2 : 64;
        if (nc > SIZE_MAX / sizeof(size_t))
            return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        size_t *old = e->table, oc = e->table_cap;
        e->table = calloc(nc, sizeof *e->table);
        if (!e->table) {
            e->table = old;
            return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        }
        e->table_cap = nc;
        for (size_t i = 0; i < oc; i++)
            if (old[i]) {
                const query *q = &e->q[old[i] - 1];
                e->table[table_slot(e, e->arena + q->qid_off, q->qid_len)] = old[i];
            }
        free(old);
    }
    const query *q = &e->q[qi];
    e->table[table_slot(e, e->arena + q->qid_off, q->qid_len)] = qi + 1;
    e->table_used++;
    return 0;
}

static int qidset_has(const qidset *t, const char *qid, size_t n)
{
    if (!t->nslot)
        return 0;
    size_t mask = t->nslot - 1;
    for (size_t i = (size_t)hash_qid(qid, n) & mask; t->slot[i]; i = (i + 1) & mask) {
        const char *q = t->arena + t->slot[i] - 1;
        if (strlen(q) == n && memcmp(q, qid, n) == 0)
            return 1;
    }
    return 0;
}

static int qidset_add(qidset *t, const char *qid, size_t n, qs_error *err)
{
    if ((t->used + 1) * 2 > t->nslot) {
        size_t nc = t->nslot ? t->nslot * 2 : 64;
        size_t *ns = calloc(nc, sizeof *ns);
        if (!ns)
            return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        for (size_t i = 0; i < t->nslot; i++)
            if (t->slot[i]) {
                const char *q = t->arena + t->slot[i] - 1;
                size_t j = (size_t)hash_qid(q, strlen(q)) & (nc - 1);
                while (ns[j])
                    j = (j + 1) & (nc - 1);
                ns[j] = t->slot[i];
            }
        free(t->slot);
        t->slot = ns;
        t->nslot = nc;
    }
    if (grow((void **)&t->arena, &t->cap, t->len + n + 1, 1, err) != 0)
        return -1;
    memcpy(t->arena + t->len, qid, n);
    t->arena[t->len + n] = '\0';
    size_t j = (size_t)hash_qid(qid, n) & (t->nslot - 1);
    while (t->slot[j])
        j = (j + 1) & (t->nslot - 1);
    t->slot[j] = t->len + 1;
    t->len += n + 1;
    t->used++;
    return 0;
}

/* Streaming: whether qid was seen recently; remember it if not. */
static int seen_before(qs_eval *e, const char *qid, size_t n, int *back, qs_error *err)
{
    /* A qid with a NUL byte cannot be held as a C string: compare what the
     * set can hold (such a qid is at worst reported as not coming back). */
    const char *z = memchr(qid, '\0', n);
    if (z)
        n = (size_t)(z - qid);
    *back = qidset_has(&e->seen[0], qid, n) || qidset_has(&e->seen[1], qid, n);
    if (*back)
        return 0;
    if (e->seen[0].used >= QIDSET_MAX || e->seen[0].len >= QIDSET_BYTES) {
        qidset old = e->seen[1];
        e->seen[1] = e->seen[0];
        e->seen[0] = old;
        e->seen[0].len = 0;
        e->seen[0].used = 0;
        if (e->seen[0].nslot)
            memset(e->seen[0].slot, 0, e->seen[0].nslot * sizeof *e->seen[0].slot);
    }
    return qidset_add(&e->seen[0], qid, n, err);
}

/* Index of the query with this qid, or (size_t)-1. */
static size_t table_find(const qs_eval *e, const char *qid, size_t n)
{
    if (!e->table_cap)
        return (size_t)-1;
    size_t i = table_slot(e, qid, n);
    return e->table[i] ? e->table[i] - 1 : (size_t)-1;
}

/* Append a query record (values NAN until computed). */
static int new_query(qs_eval *e, const char *qid, size_t n, int index_it, size_t *qi,
                     qs_error *err)
{
    size_t nk = e->opt.nk;
    if (grow((void **)&e->q, &e->cap_q, e->nq + 1, sizeof *e->q, err) ||
        grow((void **)&e->arena, &e->arena_cap, e->arena_len + n + 1, 1, err) ||
        grow((void **)&e->values, &e->cap_values, (e->nq + 1) * nk, sizeof *e->values, err))
        return -1;
    query *q = &e->q[e->nq];
    q->qid_off = e->arena_len;
    q->qid_len = n;
    q->ndocs = 0;
    q->gain_sum = 0.0;
    if (n)
        memcpy(e->arena + e->arena_len, qid, n);
    e->arena[e->arena_len + n] = '\0';
    e->arena_len += n + 1;
    for (size_t j = 0; j < nk; j++)
        e->values[e->nq * nk + j] = NAN;
    *qi = e->nq++;
    if (index_it && table_insert(e, *qi, err) != 0)
        return -1;
    return 0;
}

/* Compute query qi from its n documents d[] (reordered in place); add its
 * values to the running sums and hand them to on_query. */
static int compute(qs_eval *e, size_t qi, rdoc *d, size_t n, qs_error *err)
{
    if (e->opt.metric == QS_METRIC_NDCG &&
        grow((void **)&e->ideal, &e->cap_ideal, n, sizeof *e->ideal, err) != 0)
        return -1;
    double *v = e->values + qi * e->opt.nk;
    eval_docs(&e->opt, d, n, e->ideal, v);
    for (size_t j = 0; j < e->opt.nk; j++)
        if (!isnan(v[j])) {
            e->sum[j] += v[j];
            e->cnt[j]++;
        }
    e->nqueries++;
    if (e->opt.on_query)
        e->opt.on_query(e->opt.ctx, e->arena + e->q[qi].qid_off, e->q[qi].qid_len, v,
                        e->q[qi].ndocs);
    return 0;
}

static int close_block(qs_eval *e, qs_error *err)
{
    if (!e->open)
        return 0;
    e->open = 0;
    int rc = compute(e, e->cur, e->docs, e->ndocs, err);
    e->ndocs = 0;
    if (e->stream) {
        /* Nothing of a finished query is kept. */
        e->nq = 0;
        e->arena_len = 0;
    }
    return rc;
}

int qs_eval_add(qs_eval *e, const qs_eval_doc *doc, qs_error *err)
{
    char sh[64];
    double label;
    if (e->finished)
        return qs_fail(err, QS_ERR_ARG, 0, "qs_eval_add after qs_eval_finish");
    if (parse_double(doc->label, doc->label_len, &label) != 0)
        return qs_fail(err, QS_ERR_FORMAT, 0, "bad label '%s' (expected a number)",
                       qs_quote(sh, sizeof sh, doc->label, doc->label_len));
    const char *why = label_problem(&e->opt, label);
    if (why)
        return qs_fail(err, QS_ERR_FORMAT, 0, "bad label '%s' (%s)",
                       qs_quote(sh, sizeof sh, doc->label, doc->label_len), why);
    if (isnan(doc->score))
        return qs_fail(err, QS_ERR_FORMAT, 0, "NaN score cannot be ranked");
    const char *qid = doc->qid ? doc->qid : "";
    size_t qn = doc->qid ? doc->qid_len : 0;
    int back = 0;
    size_t qi;
    if (e->opt.conv.group == QS_GROUP_BLOCK) {
        if (!e->open || !same_qid(e, e->cur, qid, qn)) {
            if (close_block(e, err) != 0)
                return -1;
            /* Remember qids only to warn when one comes back. */
            if (e->stream) {
                if (seen_before(e, qid, qn, &back, err) != 0)
                    return -1;
            } else {
                back = table_find(e, qid, qn) != (size_t)-1;
            }
            if (new_query(e, qid, qn, !back && !e->stream, &e->cur, err) != 0)
                return -1;
            e->open = 1;
        }
        qi = e->cur;
    } else {
        if (e->nq && same_qid(e, e->cur, qid, qn))
            qi = e->cur; /* the common case: same qid as the previous line */
        else if ((qi = table_find(e, qid, qn)) == (size_t)-1 &&
                 new_query(e, qid, qn, 1, &qi, err) != 0)
            return -1;
        e->cur = qi;
        if (grow((void **)&e->group, &e->cap_group, e->ndocs + 1, sizeof *e->group, err) != 0)
            return -1;
        e->group[e->ndocs] = qi;
    }
    if (grow((void **)&e->docs, &e->cap_docs, e->ndocs + 1, sizeof *e->docs, err) != 0)
        return -1;
    if (e->opt.metric == QS_METRIC_NDCG) {
        /* Every DCG is at most the query's sum of gains (discounts are <= 1):
         * while that sum is finite, no NDCG of the query overflows. */
        query *q = &e->q[qi];
        double sum = q->gain_sum + gain_of(&e->opt.conv, label);
        if (isfinite(sum)) {
            q->gain_sum = sum;
        } else {
            char sq[64];
            return qs_fail(err, QS_ERR_FORMAT, 0,
                           "label '%s': the gains of query '%s' add up beyond the largest "
                           "double, so its DCG cannot be computed",
                           qs_quote(sh, sizeof sh, doc->label, doc->label_len),
                           qs_quote(sq, sizeof sq, qid, qn));
        }
    }
    rdoc *d = &e->docs[e->ndocs++];
    d->score = rank_score(&e->opt.conv, doc->score);
    d->label = label;
    e->q[qi].ndocs++;
    return back;
}

int qs_eval_finish(qs_eval *e, qs_error *err)
{
    if (e->finished)
        return 0;
    if (e->opt.conv.group == QS_GROUP_BLOCK) {
        if (close_block(e, err) != 0)
            return -1;
    } else if (e->ndocs) {
        /* Gather each qid's documents, keeping their input order (a counting
         * sort by query), then compute query by query. */
        size_t *start = malloc(e->nq * sizeof *start);
        rdoc *byq = malloc(e->ndocs * sizeof *byq);
        if (!start || !byq) {
            free(start);
            free(byq);
            return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        }
        size_t off = 0;
        for (size_t i = 0; i < e->nq; i++) {
            start[i] = off;
            off += e->q[i].ndocs;
        }
        for (size_t i = 0; i < e->ndocs; i++)
            byq[start[e->group[i]]++] = e->docs[i];
        free(e->docs);
        e->docs = byq;
        e->cap_docs = e->ndocs;
        off = 0;
        int rc = 0;
        for (size_t i = 0; i < e->nq && rc == 0; i++) {
            rc = compute(e, i, e->docs + off, e->q[i].ndocs, err);
            off += e->q[i].ndocs;
        }
        free(start);
        if (rc != 0)
            return -1;
    }
    if (e->nqueries == 0)
        return qs_fail(err, QS_ERR_FORMAT, 0, "no documents");
    for (size_t j = 0; j < e->opt.nk; j++)
        e->mean[j] = e->cnt[j] ? e->sum[j] / (double)e->cnt[j] : NAN;
    e->finished = 1;
    return 0;
}

size_t qs_eval_num_queries(const qs_eval *e) { return e->finished && !e->stream ? e->nq : 0; }

const char *qs_eval_query_qid(const qs_eval *e, size_t q, size_t *len)
{
    *len = e->q[q].qid_len;
    return e->arena + e->q[q].qid_off;
}

const double *qs_eval_query_values(const qs_eval *e, size_t q)
{
    return e->values + q * e->opt.nk;
}

size_t qs_eval_query_docs(const qs_eval *e, size_t q) { return e->q[q].ndocs; }

const double *qs_eval_mean(const qs_eval *e) { return e->mean; }
