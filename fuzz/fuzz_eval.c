/* fuzz_eval.c: libFuzzer target for the qs-eval line parsers (qs_eval_parse_letor, _score, _annotated) and the evaluator (qs_eval_new/add/finish); every query's values must equal qs_eval_query on the same documents, and the means their mean. */

/* Input: a control line, then the body.  Each control character c selects a
 * knob as (c - '0') mod n, so "0000000000" is the defaults: metric, gain,
 * ties, norel, beyond, discount, score type, group, mode (0: LETOR lines, a
 * line "%%", score lines; 1: annotated label<TAB>qid<TAB>score lines), score
 * column - 1, then up to 8 cutoffs (0 = whole list; none given: 10). */
#include "fuzz_common.h"

#define MAX_KS 8

typedef struct rdoc {
    double label, score;
    char *qid; /* own copy, "" when the line had none */
    size_t qid_len;
} rdoc;

typedef struct docs {
    rdoc *d;
    size_t n, cap;
} docs;

static unsigned knob(const char *ctl, size_t n, size_t i, unsigned mod)
{
    return i < n ? (unsigned)(unsigned char)(ctl[i] - '0') % mod : 0;
}

/* A line in a buffer of its own exact size, so a read past it is reported. */
static char *line_copy(const char *p, size_t n)
{
    char *l = malloc(n ? n : 1);
    if (l)
        memcpy(l, p, n);
    return l;
}

static int label_value(const char *t, size_t n, double *out)
{
    char buf[512];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, t, n);
    buf[n] = '\0';
    char *end;
    *out = strtod(buf, &end);
    return end == buf + n ? 0 : -1;
}

static int same_qid(const rdoc *a, const char *q, size_t n)
{
    return a->qid_len == n && memcmp(a->qid, q, n) == 0;
}

/* Add one document to the evaluator and, when it is accepted, to the
 * reference list; checks the "qid came back" return of block grouping. */
static void add_doc(qs_eval *e, const qs_eval_options *o, const qs_eval_doc *doc, docs *D)
{
    qs_error err;
    qs_error_clear(&err);
    int rc = qs_eval_add(e, doc, &err);
    if (rc < 0) {
        fuzz_check_err(&err, "qs_eval_add");
        return;
    }
    const char *q = doc->qid ? doc->qid : "";
    size_t qn = doc->qid ? doc->qid_len : 0;
    if (o->conv.group == QS_GROUP_BLOCK) {
        int starts = D->n == 0 || !same_qid(&D->d[D->n - 1], q, qn);
        int seen = 0;
        for (size_t i = 0; starts && i < D->n && !seen; i++)
            seen = same_qid(&D->d[i], q, qn);
        if (rc != (starts && seen))
            FUZZ_FAIL("qs_eval_add returned %d for a document that %s a block%s", rc,
                      starts ? "starts" : "continues", seen ? " of a qid seen before" : "");
    } else if (rc != 0) {
        FUZZ_FAIL("qs_eval_add returned %d with qid grouping", rc);
    }
    double label;
    if (label_value(doc->label, doc->label_len, &label) != 0)
        FUZZ_FAIL("qs_eval_add accepted label '%.*s' that strtod refuses",
                  (int)(doc->label_len > 64 ? 64 : doc->label_len), doc->label);
    if (D->n == D->cap) {
        size_t nc = D->cap ? D->cap * 2 : 16;
        rdoc *nd = realloc(D->d, nc * sizeof *nd);
        if (!nd)
            abort();
        D->d = nd;
        D->cap = nc;
    }
    rdoc *r = &D->d[D->n++];
    r->label = label;
    r->score = doc->score;
    r->qid_len = qn;
    if (!(r->qid = malloc(qn + 1)))
        abort();
    memcpy(r->qid, q, qn);
    r->qid[qn] = '\0';
}

/* Recompute every query with qs_eval_query and compare. */
static void check_results(const qs_eval *e, const qs_eval_options *o, const docs *D)
{
    const size_t nk = o->nk, nq = qs_eval_num_queries(e);
    size_t *qof = malloc((D->n ? D->n : 1) * sizeof *qof);
    double *lab = malloc((D->n ? D->n : 1) * sizeof *lab);
    double *sco = malloc((D->n ? D->n : 1) * sizeof *sco);
    double *out = malloc(nk * sizeof *out), *sum = calloc(nk, sizeof *sum);
    size_t *cnt = calloc(nk, sizeof *cnt);
    if (!qof || !lab || !sco || !out || !sum || !cnt)
        abort();
    /* Query of each document: blocks of one qid, or first appearance. */
    size_t nref = 0;
    for (size_t i = 0; i < D->n; i++) {
        if (o->conv.group == QS_GROUP_BLOCK) {
            if (i == 0 || !same_qid(&D->d[i - 1], D->d[i].qid, D->d[i].qid_len))
                nref++;
            qof[i] = nref - 1;
        } else {
            size_t j = 0;
            while (j < i && !same_qid(&D->d[j], D->d[i].qid, D->d[i].qid_len))
                j++;
            qof[i] = j < i ? qof[j] : nref++;
        }
    }
    if (nq != nref)
        FUZZ_FAIL("%zu queries, the reference grouping has %zu", nq, nref);
    for (size_t q = 0; q < nq; q++) {
        size_t n = 0, ql = 0;
        const char *qid = qs_eval_query_qid(e, q, &ql);
        for (size_t i = 0; i < D->n; i++)
            if (qof[i] == q) {
                if (!same_qid(&D->d[i], qid, ql))
                    FUZZ_FAIL("query %zu: qid differs from its documents'", q);
                lab[n] = D->d[i].label;
                sco[n++] = D->d[i].score;
            }
        if (qs_eval_query_docs(e, q) != n)
            FUZZ_FAIL("query %zu: %zu documents, the reference has %zu", q,
                      qs_eval_query_docs(e, q), n);
        qs_error err;
        qs_error_clear(&err);
        if (qs_eval_query(o, lab, sco, n, out, &err) != 0)
            FUZZ_FAIL("qs_eval_query refused documents qs_eval_add took: %s", err.msg);
        const double *v = qs_eval_query_values(e, q);
        for (size_t j = 0; j < nk; j++) {
            if (!fuzz_same(v[j], out[j]))
                FUZZ_FAIL("query %zu cutoff %u: evaluator %a, qs_eval_query %a", q, o->ks[j],
                          v[j], out[j]);
            if (isnan(v[j]) ? o->conv.norel != QS_NOREL_SKIP : !(v[j] >= 0.0 && v[j] <= 1.0 + 1e-9))
                FUZZ_FAIL("query %zu cutoff %u: %s %a out of range (metric %s)", q, o->ks[j],
                          isnan(v[j]) ? "NaN without --norel=skip:" : "value", v[j],
                          qs_metric_name(o->metric));
            if (!isnan(v[j])) {
                sum[j] += v[j];
                cnt[j]++;
            }
        }
    }
    const double *mean = qs_eval_mean(e);
    for (size_t j = 0; j < nk; j++) {
        double want = cnt[j] ? sum[j] / (double)cnt[j] : NAN;
        if (!fuzz_same(mean[j], want))
            FUZZ_FAIL("mean at cutoff %u: %a, recomputed %a", o->ks[j], mean[j], want);
    }
    free(qof);
    free(lab);
    free(sco);
    free(out);
    free(sum);
    free(cnt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    const char *nl = memchr(p, '\n', size);
    const char *ctl = p;
    size_t nctl = nl ? (size_t)(nl - p) : size;
    p = nl ? nl + 1 : end;

    unsigned ks[MAX_KS];
    qs_eval_options o;
    memset(&o, 0, sizeof o);
    qs_eval_conv_default(&o.conv);
    o.metric = (qs_metric)knob(ctl, nctl, 0, 4);
    o.conv.gain = (qs_eval_gain)knob(ctl, nctl, 1, 2);
    o.conv.ties = (qs_eval_ties)knob(ctl, nctl, 2, 5);
    o.conv.norel = (qs_eval_norel)knob(ctl, nctl, 3, 3);
    o.conv.beyond = (qs_eval_beyond)knob(ctl, nctl, 4, 2);
    o.conv.discount = (qs_eval_discount)knob(ctl, nctl, 5, 2);
    o.conv.score_type = (qs_eval_score_type)knob(ctl, nctl, 6, 2);
    o.conv.group = (qs_eval_group)knob(ctl, nctl, 7, 2);
    const unsigned mode = knob(ctl, nctl, 8, 2), column = 1 + knob(ctl, nctl, 9, 4);
    o.nk = 0;
    for (size_t i = 10; i < nctl && o.nk < MAX_KS; i++)
        ks[o.nk++] = knob(ctl, nctl, i, 21);
    if (o.nk == 0)
        ks[o.nk++] = 10;
    o.ks = ks;

    qs_error err;
    qs_error_clear(&err);
    qs_eval *e = qs_eval_new(&o, &err);
    if (!e) {
        fuzz_check_err(&err, "qs_eval_new");
        if (!(o.conv.ties == QS_TIES_AVERAGE &&
              (o.metric == QS_METRIC_ERR || o.metric == QS_METRIC_MAP)))
            FUZZ_FAIL("qs_eval_new refused valid options: %s", err.msg);
        return 0;
    }
    docs D = { 0 };
    /* Split the body into lines; mode 0 puts the score lines after "%%". */
    const char *scores = NULL, *body_end = end;
    if (mode == 0) {
        for (const char *q = p; q < end;) {
            const char *e2 = memchr(q, '\n', (size_t)(end - q));
            size_t n = e2 ? (size_t)(e2 - q) : (size_t)(end - q);
            if (n == 2 && q[0] == '%' && q[1] == '%') {
                body_end = q;
                scores = e2 ? e2 + 1 : end;
                break;
            }
            q = e2 ? e2 + 1 : end;
        }
    }
    const char *sp = scores;
    for (const char *q = p; q < body_end;) {
        const char *e2 = memchr(q, '\n', (size_t)(body_end - q));
        size_t n = e2 ? (size_t)(e2 - q) : (size_t)(body_end - q);
        char *line = line_copy(q, n);
        q = e2 ? e2 + 1 : body_end;
        if (!line)
            break;
        qs_eval_doc doc;
        int is_doc = 0;
        double score;
        /* Every parser must be safe on every line, whatever it holds. */
        qs_error_clear(&err);
        int ra = qs_eval_parse_annotated(line, n, column, &doc, &err);
        if (ra != 0)
            fuzz_check_err(&err, "qs_eval_parse_annotated");
        if (mode == 1) {
            if (ra == 0)
                add_doc(e, &o, &doc, &D);
            free(line);
            continue;
        }
        qs_error_clear(&err);
        if (qs_eval_parse_score(line, n, column, &score, &err) != 0)
            fuzz_check_err(&err, "qs_eval_parse_score");
        qs_error_clear(&err);
        if (qs_eval_parse_letor(line, n, &doc, &is_doc, &err) != 0) {
            fuzz_check_err(&err, "qs_eval_parse_letor");
            free(line);
            continue;
        }
        if (is_doc && (doc.label < line || doc.label_len == 0 ||
                       doc.label_len > (size_t)(line + n - doc.label) ||
                       (doc.qid && (doc.qid < line || doc.qid_len > (size_t)(line + n - doc.qid)))))
            FUZZ_FAIL("qs_eval_parse_letor: token outside the line");
        if (!is_doc || !sp || sp >= end) {
            free(line);
            continue;
        }
        const char *se = memchr(sp, '\n', (size_t)(end - sp));
        size_t sn = se ? (size_t)(se - sp) : (size_t)(end - sp);
        char *sline = line_copy(sp, sn);
        sp = se ? se + 1 : end;
        qs_error_clear(&err);
        if (sline && qs_eval_parse_score(sline, sn, column, &doc.score, &err) == 0)
            add_doc(e, &o, &doc, &D);
        else if (sline)
            fuzz_check_err(&err, "qs_eval_parse_score");
        free(sline);
        free(line);
    }
    qs_error_clear(&err);
    if (qs_eval_finish(e, &err) != 0) {
        fuzz_check_err(&err, "qs_eval_finish");
        if (D.n)
            FUZZ_FAIL("qs_eval_finish failed after %zu documents: %s", D.n, err.msg);
    } else {
        if (D.n == 0)
            FUZZ_FAIL("qs_eval_finish succeeded without documents");
        check_results(e, &o, &D);
        qs_eval_doc again = { "1", 1, NULL, 0, 0.5 };
        if (qs_eval_add(e, &again, &err) != -1 || qs_eval_finish(e, &err) != 0)
            FUZZ_FAIL("qs_eval_add after qs_eval_finish must fail; finish again must not");
    }
    qs_eval_free(e);
    for (size_t i = 0; i < D.n; i++)
        free(D.d[i].qid);
    free(D.d);
    return 0;
}
