/* dense.c: delimited text (CSV, TSV) documents: the cell scanner (RFC 4180
 * quoting within one line) and the row parser that fills a workspace slot
 * with the same number parsing as the LETOR reader. */
#include "score/score.h"
#include "common/number.h"

#include <string.h>

static int is_space(char sep, char c) { return c == ' ' || (c == '\t' && sep != '\t'); }

/* The 1-based number of the cell that holds byte `at` (for messages): the
 * cells before it as qs_dsv_next_cell splits them (a quote inside an
 * unquoted cell is text), counting the one that starts at `at`. */
static long cell_number(char sep, const char *line, size_t at)
{
    long col = 0;
    size_t pos = 0;
    qs_dsv_cell c;
    while (qs_dsv_next_cell(sep, line, at, &pos, &c, NULL) == 1)
        col++;
    return col;
}

static int scan_fail(qs_error *err, char sep, const char *line, size_t at, const char *msg)
{
    qs_fail(err, QS_ERR_FORMAT, 0, "%s", msg);
    if (err)
        err->column = cell_number(sep, line, at);
    return -1;
}

int qs_dsv_next_cell(char sep, const char *line, size_t len, size_t *pos, qs_dsv_cell *cell,
                     qs_error *err)
{
    /* *pos == len + 1: the row is done (a row "a," has a last, empty cell
     * that starts at len). */
    size_t i = *pos;
    if (i > len)
        return 0;
    while (i < len && is_space(sep, line[i]))
        i++;
    if (i < len && line[i] == '"') {
        const size_t open = i, start = ++i;
        for (;;) {
            if (i >= len)
                return scan_fail(err, sep, line, open,
                                 "unterminated quoted cell (a quoted cell must end on its line)");
            if (line[i] == '"') {
                if (i + 1 < len && line[i + 1] == '"') {
                    i += 2;
                    continue;
                }
                break;
            }
            i++;
        }
        cell->text = line + start;
        cell->len = i - start;
        cell->quoted = 1;
        i++; /* the closing quote */
        while (i < len && is_space(sep, line[i]))
            i++;
        if (i < len && line[i] != sep)
            return scan_fail(err, sep, line, open, "text after the closing quote of a quoted cell");
    } else {
        size_t start = i;
        const char *e = memchr(line + i, sep, len - i);
        i = e ? (size_t)(e - line) : len;
        size_t end = i;
        while (end > start && is_space(sep, line[end - 1]))
            end--;
        cell->text = line + start;
        cell->len = end - start;
        cell->quoted = 0;
    }
    *pos = i < len ? i + 1 : len + 1;
    return 1;
}

long long qs_dsv_feature_id(const qs_dsv_format *f, uint32_t col)
{
    if ((long)col == f->label_col || (long)col == f->qid_col)
        return -1;
    if (f->label_col >= 0 && (long)col > f->label_col)
        return (long long)col - 1;
    return col;
}

/* Missing: an empty cell, NA, NaN, null (any case). */
static int is_missing(const char *t, size_t n)
{
    static const char *const words[] = { "na", "nan", "null" };
    if (n == 0)
        return 1;
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++) {
        size_t wl = strlen(words[k]);
        if (n != wl)
            continue;
        size_t i = 0;
        while (i < n && (t[i] | 0x20) == words[k][i])
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

static int cell_fail(qs_error *err, uint32_t col, const char *fmt, const char *what,
                     const qs_dsv_cell *c)
{
    char show[64];
    qs_quote(show, sizeof show, c->text, c->len);
    qs_fail(err, QS_ERR_FORMAT, 0, fmt, show, what);
    if (err)
        err->column = (long)col + 1;
    return -1;
}

/* One row into w's selected slot (reset with `absent`), or, with w NULL,
 * into row[0 .. nf) (filled with `fill` first); values with precision fp. */
static int dsv_parse_core(int fp, int zero_band, uint32_t nf, qs_workspace *w, qs_absent absent, double *row,
                          double fill, const qs_dsv_format *f, const char *line, size_t len,
                          qs_letor_line *out, int *is_doc, qs_error *err)
{
    memset(out, 0, sizeof *out);
    out->max_id = -1;
    *is_doc = 0;
    if (len && line[len - 1] == '\r')
        len--;
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i == len)
        return 0;
    if (w) {
        qs_doc_reset(w, absent);
    } else {
        for (uint32_t k = 0; k < nf; k++)
            row[k] = fill;
    }
    size_t pos = 0;
    uint32_t col = 0;
    qs_dsv_cell c;
    int r;
    while ((r = qs_dsv_next_cell(f->sep, line, len, &pos, &c, err)) == 1) {
        if (col >= f->ncols) {
            uint64_t n = (uint64_t)col + 1;
            while (qs_dsv_next_cell(f->sep, line, len, &pos, &c, NULL) == 1)
                n++;
            qs_fail(err, QS_ERR_FORMAT, 0, "%llu cells, expected %u (the columns of the header "
                    "or first row)", (unsigned long long)n, f->ncols);
            if (err)
                err->column = (long)f->ncols + 1;
            return -1;
        }
        if ((long)col == f->label_col) {
            double lab;
            if (c.len == 0)
                return cell_fail(err, col, "empty label%s%s", "", &c);
            if (qs_parse_number(0, c.text, c.len, &lab) != 0 || lab != lab)
                return cell_fail(err, col, "bad label '%s' (expected a number)%s", "", &c);
            out->label = c.text;
            out->label_len = c.len;
        } else if ((long)col == f->qid_col) {
            if (memchr(c.text, '\t', c.len) || memchr(c.text, '"', c.len))
                return cell_fail(err, col, "bad qid '%s' (%s)", "a qid may not hold a tab or a quote",
                                 &c);
            if (c.len) {
                out->qid = c.text;
                out->qid_len = c.len;
            }
        } else {
            long long id = qs_dsv_feature_id(f, col);
            double v;
            if (is_missing(c.text, c.len))
                v = NAN;
            else if (qs_parse_number(fp, c.text, c.len, &v) != 0)
                return cell_fail(err, col, "bad cell '%s' (expected a number%s)",
                                 ", or empty, NA, NaN or null for a missing value", &c);
            if (zero_band)
                v = qs_zero_band(v);   /* LightGBM's CSV/TSV parsers drop the band */
            if (w && id <= UINT32_MAX)
                qs_doc_set(w, (uint32_t)id, v);
            else if (!w && id < (long long)nf)
                row[id] = v;
            if (id > out->max_id)
                out->max_id = id;
        }
        col++;
    }
    if (r < 0)
        return -1;
    if (col < f->ncols) {
        qs_fail(err, QS_ERR_FORMAT, 0, "%u cell%s, expected %u (the columns of the header or "
                "first row)", col, col == 1 ? "" : "s", f->ncols);
        if (err)
            err->column = (long)col + 1;
        return -1;
    }
    *is_doc = 1;
    return 0;
}

int qs_dsv_parse(const qs_scorer *s, qs_workspace *w, qs_absent absent, const qs_dsv_format *f,
                 const char *line, size_t len, qs_letor_line *out, int *is_doc, qs_error *err)
{
    return dsv_parse_core(s->m->float_precision, qs_model_dense_zero_band(s->m),
                          s->m->num_features, w, absent, NULL, 0.0, f,
                          line, len, out, is_doc, err);
}

int qs_dsv_parse_row(const qs_row_format *rf, double *row, const qs_dsv_format *f,
                     const char *line, size_t len, qs_letor_line *out, int *is_doc, qs_error *err)
{
    /* values as written: the row format names no model (a caller reading
     * for a LightGBM model applies qs_row_zero_band, as qs_dsv_parse does) */
    return dsv_parse_core(rf->float_precision, 0, rf->num_features, NULL, QS_ABSENT_DEFAULT, row,
                          rf->fill, f, line, len, out, is_doc, err);
}
