/* fuzz_dsv.c: libFuzzer target for the delimited-text (CSV, TSV) document
 * reader: qs_dsv_next_cell against an independent splitter, and qs_dsv_parse
 * against qs_letor_parse of the LETOR line that says the same (every feature
 * cell as id:value, missing cells as nan; for a LightGBM model read with
 * the zero band as LightGBM reads CSV), scored on two fixed models.
 *
 * Input: a control line, then rows.  Control byte 0: the separator (even:
 * ',', odd: tab); byte 1: the label column ('0': none, else (c - '1') mod 8);
 * byte 2: the qid column (likewise); the number of columns is the first
 * row's, as the first row or a header would set it in qs-score. */
#include "fuzz_common.h"

#define NMODELS 2

static qs_scorer *S[NMODELS];
static qs_workspace *W[NMODELS][2]; /* [dsv slot reused row after row, letor] */
static int ready;

static char *model_text(int which, size_t *len)
{
    static const char *const thr[] = { "0x1p-1", "-0x1p-1", "0x0p+0", "0x1p+0", "0x1.4p+1",
                                       "0x1.99999ap-4", "0x1p+4", "-0x1p+0" };
    const unsigned nf = 12, ntrees = 24;
    size_t cap = 65536, n = 0;
    char *b = malloc(cap);
    if (!b)
        abort();
    n += (size_t)snprintf(b + n, cap - n,
                          "qs-ensemble 1\nsource %s\nobjective fuzz\ncompare %s\nprecision %s\n"
                          "accumulate %s\nabsent %s\nfeatures %u\nclasses 1\ntransform none 0x1p+0\n"
                          "base 0 0x1p-1\ntrees %u\n",
                          which ? "lightgbm" : "xgboost", which ? "le" : "lt",
                          which ? "double" : "float", which ? "double" : "float",
                          which ? "zero" : "missing", nf, ntrees);
    for (unsigned t = 0; t < ntrees; t++) {
        n += (size_t)snprintf(b + n, cap - n, "tree %u class 0 weight 0x1p+0 nodes 7\n", t);
        for (unsigned i = 0; i < 3; i++)
            n += (size_t)snprintf(b + n, cap - n, "%u num %u %s %s %s %u %u\n", i,
                                  (t * 5 + i * 7) % nf, thr[(t + i) % 8],
                                  which ? ((t + i) % 3 == 0 ? "zero" : (t + i) % 3 == 1 ? "none" : "nan")
                                        : "nan",
                                  (t + i) % 2 ? "left" : "right", 2 * i + 1, 2 * i + 2);
        for (unsigned i = 3; i < 7; i++)
            n += (size_t)snprintf(b + n, cap - n, "%u leaf 0x1.%xp-%u\n", i, t % 16, i);
    }
    n += (size_t)snprintf(b + n, cap - n, "end\n");
    *len = n;
    return b;
}

static void setup(void)
{
    qs_error err;
    for (int k = 0; k < NMODELS; k++) {
        size_t len;
        char *text = model_text(k, &len);
        qs_error_clear(&err);
        qs_model *m = qs_model_from_text(text, len, &err);
        free(text);
        if (!m)
            FUZZ_FAIL("fixed model %d: line %ld: %s", k, err.line, err.msg);
        qs_compile_options o = { .delta = 0, .tree_block = 0, .doc_block = 2, .reverse = NULL };
        unsigned char *img;
        size_t n;
        if (qs_compile(m, &o, &img, &n, &err) != 0)
            FUZZ_FAIL("fixed model %d: %s", k, err.msg);
        qs_model_free(m);
        S[k] = qs_scorer_load(img, n, &err);
        free(img);
        if (!S[k])
            FUZZ_FAIL("fixed model %d: %s", k, err.msg);
        for (int i = 0; i < 2; i++)
            if (!(W[k][i] = qs_workspace_new(S[k], &err)))
                FUZZ_FAIL("fixed model %d: %s", k, err.msg);
    }
    ready = 1;
}

/* The reference splitter: a small state machine, written apart from
 * qs_dsv_next_cell.  Fills up to cap cells; returns the count, or -1 for a
 * row the format refuses. */
typedef struct ref_cell {
    size_t start, len;
    int quoted;
} ref_cell;

static int white(char sep, char c) { return c == ' ' || (c == '\t' && sep != '\t'); }

static long ref_split(char sep, const char *s, size_t n, ref_cell *cells, size_t cap)
{
    long count = 0;
    size_t i = 0;
    for (;;) {
        ref_cell c = { 0, 0, 0 };
        size_t j = i;
        while (j < n && white(sep, s[j]))
            j++;
        if (j < n && s[j] == '"') {
            size_t k = j + 1;
            int closed = 0;
            while (k < n) {
                if (s[k] == '"' && k + 1 < n && s[k + 1] == '"')
                    k += 2;
                else if (s[k] == '"') {
                    closed = 1;
                    break;
                } else
                    k++;
            }
            if (!closed)
                return -1;
            c.start = j + 1;
            c.len = k - j - 1;
            c.quoted = 1;
            k++;
            while (k < n && white(sep, s[k]))
                k++;
            if (k < n && s[k] != sep)
                return -1;
            i = k;
        } else {
            size_t k = j;
            while (k < n && s[k] != sep)
                k++;
            size_t e = k;
            while (e > j && white(sep, s[e - 1]))
                e--;
            c.start = j;
            c.len = e - j;
            i = k;
        }
        if ((size_t)count < cap)
            cells[count] = c;
        count++;
        if (i >= n)
            return count;
        i++; /* the separator: another cell follows, maybe empty */
    }
}

static int missing_word(const char *t, size_t n)
{
    if (n == 0)
        return 1;
    char w[5] = { 0 };
    if (n > 4)
        return 0;
    for (size_t i = 0; i < n; i++)
        w[i] = (char)(t[i] | 0x20);
    return strcmp(w, "na") == 0 || strcmp(w, "nan") == 0 || strcmp(w, "null") == 0;
}

#define MAXC 64

/* Whether cell i is acceptable on its own: a label is a number (not NaN);
 * a qid holds no tab and no quote; a feature is missing or a number. */
static int cell_ok(const qs_scorer *s, long label, long qid, const char *line, const ref_cell *c,
                   long i)
{
    const char *t = line + c->start;
    double v;
    if (i == label)
        return c->len > 0 && qs_parse_value(S[1], t, c->len, &v) == 0 && !isnan(v);
    if (i == qid)
        return !memchr(t, '\t', c->len) && !memchr(t, '"', c->len);
    return missing_word(t, c->len) || qs_parse_value(s, t, c->len, &v) == 0;
}

static void one_row(char sep, long label, long qid, uint32_t ncols, const char *line, size_t len,
                    unsigned rowno)
{
    size_t n = len && line[len - 1] == '\r' ? len - 1 : len;
    ref_cell rc[MAXC];
    long rn = ref_split(sep, line, n, rc, MAXC);
    /* qs_dsv_next_cell gives the same cells. */
    size_t pos = 0;
    qs_dsv_cell c;
    qs_error err;
    qs_error_clear(&err);
    long got = 0;
    int r;
    while ((r = qs_dsv_next_cell(sep, line, n, &pos, &c, &err)) == 1) {
        if (rn >= 0 && got < MAXC && got < rn &&
            (c.text != line + rc[got].start || c.len != rc[got].len || c.quoted != rc[got].quoted))
            FUZZ_FAIL("row %u cell %ld: [%zu, +%zu) quoted %d, the reference says [%zu, +%zu) %d",
                      rowno, got, (size_t)(c.text - line), c.len, c.quoted, rc[got].start,
                      rc[got].len, rc[got].quoted);
        if (c.text < line || c.len > (size_t)(line + n - c.text))
            FUZZ_FAIL("a cell outside the line");
        got++;
    }
    if (r < 0) {
        fuzz_check_err(&err, "qs_dsv_next_cell");
        if (err.column < 1 || err.column > got + 1)
            FUZZ_FAIL("error in column %ld after %ld cells", err.column, got);
        if (rn >= 0)
            FUZZ_FAIL("qs_dsv_next_cell refuses a row the reference splits (%s)", err.msg);
    } else if (rn != got) {
        FUZZ_FAIL("qs_dsv_next_cell: %ld cells, the reference %ld", got, rn);
    }

    const qs_dsv_format f = { sep, ncols, label, qid };
    for (int k = 0; k < NMODELS; k++) {
        qs_letor_line o;
        int is_doc = -1;
        qs_error_clear(&err);
        qs_workspace_select(W[k][0], rowno % 2);
        int pr = qs_dsv_parse(S[k], W[k][0], QS_ABSENT_DEFAULT, &f, line, len, &o, &is_doc, &err);
        if (pr != 0) {
            fuzz_check_err(&err, "qs_dsv_parse");
            if (err.column < 1)
                FUZZ_FAIL("qs_dsv_parse failed without a column: %s", err.msg);
            if (rn >= 0 && rn == (long)ncols && rn <= MAXC) {
                /* The cells split: the failure must be that cell's. */
                if (err.column > rn || cell_ok(S[k], label, qid, line, &rc[err.column - 1],
                                               err.column - 1))
                    FUZZ_FAIL("row refused at column %ld of %ld cells, a good cell: %s",
                              err.column, rn, err.msg);
            }
            continue;
        }
        if (!is_doc)
            continue;
        if (rn != (long)ncols)
            FUZZ_FAIL("qs_dsv_parse accepted %ld cells for %u columns", rn, ncols);
        if (rn > MAXC)
            continue;
        if ((label >= 0) != (o.label != NULL) ||
            (o.label && (o.label != line + rc[label].start || o.label_len != rc[label].len)))
            FUZZ_FAIL("label pointer");
        if (o.qid && (qid < 0 || o.qid != line + rc[qid].start || o.qid_len != rc[qid].len))
            FUZZ_FAIL("qid pointer");
        /* The LETOR line that says the same. */
        size_t cap = 16 + n * 2 + (size_t)rn * 24, m = 0;
        char *lt = malloc(cap);
        if (!lt)
            return;
        m += (size_t)snprintf(lt + m, cap - m, "0");
        long long max_id = -1;
        for (long i = 0; i < rn; i++) {
            /* the numbering, independently: the label column out, the
             * columns after it one lower; the qid column keeps its number */
            if (i == label || i == qid)
                continue;
            long long id = label >= 0 && i > label ? i - 1 : i;
            if (qs_dsv_feature_id(&f, (uint32_t)i) != id)
                FUZZ_FAIL("qs_dsv_feature_id(%ld) = %lld, expected %lld", i,
                          qs_dsv_feature_id(&f, (uint32_t)i), id);
            const char *t = line + rc[i].start;
            size_t tl = rc[i].len;
            /* strtod skips leading white space (a quoted cell keeps it);
             * LETOR would split there */
            while (tl && (*t == ' ' || (*t >= '\t' && *t <= '\r'))) {
                t++;
                tl--;
            }
            if (missing_word(line + rc[i].start, rc[i].len)) {
                t = "nan";
                tl = 3;
            }
            m += (size_t)snprintf(lt + m, cap - m, " %lld:%.*s", id, (int)tl, t);
            if (id > max_id)
                max_id = id;
        }
        if (o.max_id != max_id)
            FUZZ_FAIL("max_id %lld, expected %lld", o.max_id, max_id);
        qs_letor_line lo;
        int ld = -1;
        qs_error le;
        qs_error_clear(&le);
        qs_workspace_select(W[k][1], 0);
        if (qs_letor_parse(S[k], W[k][1], QS_ABSENT_DEFAULT, lt, m, &lo, &ld, &le) != 0 || !ld)
            FUZZ_FAIL("the LETOR twin '%s' of an accepted row is refused: %s", lt, le.msg);
        /* LightGBM reads CSV as a dense matrix, LETOR as LibSVM: the twin
         * read the dense way (|x| <= 1e-35f is 0) */
        if (qs_scorer_zero_band(S[k]))
            qs_doc_zero_band(W[k][1]);
        double a, b;
        if (qs_score_doc(S[k], W[k][0], QS_BACKEND_AUTO, &a, NULL) != 0 ||
            qs_score_doc(S[k], W[k][1], QS_BACKEND_AUTO, &b, NULL) != 0)
            FUZZ_FAIL("scoring refused");
        if (!fuzz_same(a, b))
            FUZZ_FAIL("model %d: row scores %a, its LETOR twin '%s' %a", k, a, lt, b);
        free(lt);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ready)
        setup();
    const char *p = (const char *)data, *end = p + size;
    const char *nl = memchr(p, '\n', size);
    if (!nl)
        return 0;
    const size_t cl = (size_t)(nl - p);
    const char sep = cl > 0 && (p[0] & 1) ? '\t' : ',';
    const long label = cl > 1 && p[1] != '0' ? (long)((unsigned char)(p[1] - '1') % 8u) : -1;
    long qid = cl > 2 && p[2] != '0' ? (long)((unsigned char)(p[2] - '1') % 8u) : -1;
    if (qid == label)
        qid = -1;
    p = nl + 1;
    uint32_t ncols = 0;
    unsigned rowno = 0;
    while (p < end) {
        nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char *line = malloc(n ? n : 1);
        if (!line)
            return 0;
        memcpy(line, p, n);
        if (rowno == 0) {
            /* The first row sets the columns (a refused row: its separators). */
            size_t pos = 0;
            qs_dsv_cell c;
            long k = 0;
            while (qs_dsv_next_cell(sep, line, n, &pos, &c, NULL) == 1)
                k++;
            ncols = (uint32_t)(k > 0 ? k : 1);
        }
        one_row(sep, label < (long)ncols ? label : -1, qid < (long)ncols ? qid : -1, ncols, line,
                n, rowno++);
        free(line);
        if (!nl)
            break;
        p = nl + 1;
    }
    return 0;
}
