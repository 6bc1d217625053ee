/* test_rows.c: reading documents without the scorer, and scoring them from
 * the caller's rows.  qs_qsm_get_row_format equals qs_scorer_get_row_format
 * for every `absent`; qs_letor_parse_row fills the vector qs_letor_parse
 * fills (bit for bit), with the same result, metadata and message on every
 * line of the documents and on a list of bad and unusual lines;
 * qs_score_rows gives qs_score_doc's bits; a damaged image is refused, or,
 * damaged past INFO, accepted here and refused by the load.
 * Usage: test_rows MODEL.qsm DOCS.letor */
#include "qs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slurp.h"

static long checks, failures;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        checks++;                                                                              \
        if (!(cond)) {                                                                         \
            failures++;                                                                        \
            printf(__VA_ARGS__);                                                               \
            printf("\n");                                                                      \
        }                                                                                      \
    } while (0)

static int same_format(const qs_row_format *a, const qs_row_format *b)
{
    return a->num_features == b->num_features && a->float_precision == b->float_precision &&
           (isnan(a->fill) ? isnan(b->fill) : memcmp(&a->fill, &b->fill, sizeof a->fill) == 0);
}

/* One line through both readers: the same outcome, metadata, message and
 * (for a document) vector.  The readers get a copy of the line in a buffer
 * of exactly its length, so that a read past the line's end (the SIMD
 * window near the end) is an error under AddressSanitizer. */
static void compare_line_at(const qs_scorer *s, qs_workspace *w, const qs_row_format *f,
                            qs_absent absent, double *row, const char *line, size_t len);

static void compare_line(const qs_scorer *s, qs_workspace *w, const qs_row_format *f,
                         qs_absent absent, double *row, const char *line, size_t len)
{
    char *copy = malloc(len ? len : 1);
    memcpy(copy, line, len);
    compare_line_at(s, w, f, absent, row, copy, len);
    free(copy);
}

static void compare_line_at(const qs_scorer *s, qs_workspace *w, const qs_row_format *f,
                            qs_absent absent, double *row, const char *line, size_t len)
{
    qs_letor_line a, b;
    int da = -1, db = -1;
    qs_error ea, eb;
    qs_error_clear(&ea);
    qs_error_clear(&eb);
    qs_workspace_select(w, 0);
    int ra = qs_letor_parse(s, w, absent, line, len, &a, &da, &ea);
    int rb = qs_letor_parse_row(f, row, line, len, &b, &db, &eb);
    CHECK(ra == rb && da == db, "'%.*s': parse %d/%d, document %d/%d", (int)len, line, ra, rb, da,
          db);
    if (ra != rb)
        return;
    if (ra != 0) {
        CHECK(strcmp(ea.msg, eb.msg) == 0 && ea.code == eb.code, "'%.*s': '%s' against '%s'",
              (int)len, line, ea.msg, eb.msg);
        return;
    }
    if (!da)
        return;
    CHECK(a.label == b.label && a.label_len == b.label_len && a.qid == b.qid &&
              a.qid_len == b.qid_len && a.max_id == b.max_id,
          "'%.*s': the line's label, qid or largest id differ", (int)len, line);
    CHECK(memcmp(qs_doc_values(w), row, sizeof(double) * f->num_features) == 0,
          "'%.*s': the vectors differ", (int)len, line);
}

int main(int argc, char **argv)
{
    size_t mlen, dlen;
    unsigned char *img, *docs;
    qs_scorer *s = load_model_docs(argc, argv, "test_rows", &img, &mlen, &docs, &dlen);
    qs_error err;
    qs_workspace *w = qs_workspace_new(s, &err);
    const qs_absent absents[] = { QS_ABSENT_DEFAULT, QS_ABSENT_ZERO, QS_ABSENT_MISSING };
    qs_row_format f[3];
    for (int i = 0; i < 3; i++) {
        qs_row_format g;
        CHECK(qs_qsm_get_row_format(img, mlen, absents[i], &f[i], &err) == 0, "row format: %s",
              err.msg);
        qs_scorer_get_row_format(s, absents[i], &g);
        CHECK(same_format(&f[i], &g), "absent %d: the .qsm's row format is not the scorer's", i);
    }
    const size_t F = f[0].num_features ? f[0].num_features : 1;
    qs_model_info info;
    qs_model_get_info(qs_scorer_model(s), &info);
    const uint32_t C = info.num_classes;
    double *row = malloc(sizeof(double) * F);

    /* Every line of the documents, and lines the readers must treat alike. */
    static const char *odd[] = {
        "", "   ", "# only a comment", "1 qid:3 1:0.5 # a comment 2:7", "1 qid:1 abc:1", "x 1:1",
        "nan 1:1", "1 :5", "1 1:", "1 1:x", "1 4294967296:1", "1 4294967295:1",
        "1 99999999999:1", "1 1:1e999", "1 1:-1e-400 2:1e-310 3:-0 4:+.5 5:7.", "1 qid:1 qid:2",
        "2\t1:0.25\t\t3:0.125\r", "0 1:1 1:2 1:3", "0 1:0.1000000000000000055511151231257827",
        "0 1:3.4028235677973366e38 2:1.00000005960464477539 3:inf 4:-nan",
        "0 12345678:1 123456789:2 1234567890:3", "1 qid:", "1 1:1:1", "1 1:0x10",
    };
    for (int i = 0; i < 3; i++)
        for (size_t k = 0; k < sizeof odd / sizeof odd[0]; k++)
            compare_line(s, w, &f[i], absents[i], row, odd[k], strlen(odd[k]));

    size_t cap = 1024, n = 0;
    double *x = malloc(sizeof(double) * F * cap), *ref = malloc(sizeof(double) * C * cap);
    const char *p = (const char *)docs, *end = p + dlen;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        for (int i = 1; i < 3; i++)
            compare_line(s, w, &f[i], absents[i], row, p, len);
        compare_line(s, w, &f[0], absents[0], row, p, len);
        qs_letor_line meta;
        int is_doc;
        if (qs_letor_parse_row(&f[0], row, p, len, &meta, &is_doc, &err) != 0) {
            fprintf(stderr, "parse: %s\n", err.msg);
            return 2;
        }
        p = nl ? nl + 1 : end;
        if (!is_doc)
            continue;
        if (n == cap) {
            cap *= 2;
            x = realloc(x, sizeof(double) * F * cap);
            ref = realloc(ref, sizeof(double) * C * cap);
        }
        memcpy(x + n * F, row, sizeof(double) * f[0].num_features);
        /* the reference: the workspace filled by qs_letor_parse (checked
         * equal above), scored one document at a time */
        if (qs_score_doc(s, w, QS_BACKEND_AUTO, ref + n * C, &err) != 0) {
            fprintf(stderr, "score: %s\n", err.msg);
            return 2;
        }
        n++;
    }

    /* qs_score_rows, a workspace's worth of rows at a time (from the end,
     * so that every batch's rows are not the slots' order in memory). */
    const uint32_t slots = qs_workspace_slots(w);
    const double **ptr = malloc(sizeof *ptr * slots);
    double *got = malloc(sizeof(double) * C * (n ? n : 1));
    memset(got, 0xff, sizeof(double) * C * (n ? n : 1));
    int ok = 1;
    for (size_t d = 0; d < n;) {
        uint32_t b = n - d < slots ? (uint32_t)(n - d) : slots;
        for (uint32_t j = 0; j < b; j++)
            ptr[j] = x + (d + j) * F;
        if (qs_score_rows(s, w, QS_BACKEND_AUTO, b, ptr, got + d * C, &err) != 0) {
            printf("qs_score_rows: %s\n", err.msg);
            ok = 0;
            break;
        }
        d += b;
    }
    CHECK(ok && memcmp(got, ref, sizeof(double) * C * n) == 0,
          "qs_score_rows differs from qs_score_doc");
    /* the workspace still scores its own slots afterwards */
    if (n > 0) {
        double one[64];
        compare_line(s, w, &f[0], QS_ABSENT_DEFAULT, row, (const char *)docs,
                     strcspn((const char *)docs, "\n"));
        CHECK(C <= 64 && qs_score_doc(s, w, QS_BACKEND_AUTO, one, &err) == 0 &&
                  memcmp(one, ref, sizeof(double) * C) == 0,
              "after qs_score_rows, the workspace's own slot scores otherwise");
    }
    CHECK(qs_score_rows(s, w, QS_BACKEND_AUTO, slots + 1, ptr, got, &err) != 0 &&
              err.code == QS_ERR_ARG,
          "a batch larger than the workspace was not refused");
    CHECK(qs_score_rows(s, w, qs_backend_find("struct"), 1, ptr, got, &err) != 0 &&
              err.code == QS_ERR_ARG,
          "an unprepared back end was not refused");

    /* Damage: a short image is refused; a byte changed in the last
     * section (INFO comes first) passes here and fails the load. */
    qs_row_format g;
    CHECK(qs_qsm_get_row_format(img, 100, QS_ABSENT_DEFAULT, &g, &err) != 0,
          "a truncated .qsm was accepted");
    CHECK(qs_qsm_get_row_format((const unsigned char *)"not a model at all, not at all, no",
                                34, QS_ABSENT_DEFAULT, &g, &err) != 0,
          "text was accepted as a .qsm");
    img[mlen - 2] ^= 0x40;
    CHECK(qs_qsm_get_row_format(img, mlen, QS_ABSENT_DEFAULT, &g, &err) == 0 &&
              same_format(&g, &f[0]),
          "damage past INFO changed the row format: %s", err.msg);
    qs_scorer *bad = qs_scorer_load(img, mlen, &err);
    CHECK(bad == NULL, "the damaged .qsm loaded");
    qs_scorer_free(bad);

    printf("%zu documents, %ld checks, %ld failures\n", n, checks, failures);
    free(ptr);
    free(got);
    free(x);
    free(ref);
    free(row);
    free(img);
    free(docs);
    qs_workspace_free(w);
    qs_scorer_free(s);
    return failures != 0;
}
