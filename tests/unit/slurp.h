/* slurp.h: the unit tests' whole-file reader, and the model-and-documents
 * loader of those that take both. */
#ifndef QS_TEST_SLURP_H
#define QS_TEST_SLURP_H

#include "qs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The file's bytes (one more allocated), or NULL. */
static inline unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = n >= 0 ? (size_t)n : 0;
    return b;
}

/* A test's two arguments, MODEL.qsm and DOCS: both read whole, the model
 * loaded; on any failure a message and exit 2. */
static inline qs_scorer *load_model_docs(int argc, char **argv, const char *name,
                                         unsigned char **img, size_t *mlen,
                                         unsigned char **docs, size_t *dlen)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODEL.qsm DOCS.letor\n", name);
        exit(2);
    }
    *img = slurp(argv[1], mlen);
    *docs = slurp(argv[2], dlen);
    if (!*img || !*docs) {
        fprintf(stderr, "cannot read the inputs\n");
        exit(2);
    }
    qs_error err;
    qs_scorer *s = qs_scorer_load(*img, *mlen, &err);
    if (!s) {
        fprintf(stderr, "load: %s\n", err.msg);
        exit(2);
    }
    return s;
}

/* The documents of the LETOR file at path as dense rows of nf values
 * (nf >= the model's features), read as qs_letor_parse_row reads them for
 * s's model; *n of them.  On any failure a message and exit 2. */
static inline double *slurp_rows(const qs_scorer *s, const char *path, uint32_t nf, uint64_t *n)
{
    size_t len;
    unsigned char *buf = slurp(path, &len);
    if (!buf) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    qs_row_format f;
    qs_scorer_get_row_format(s, QS_ABSENT_DEFAULT, &f);
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += buf[i] == '\n';
    double *x = malloc(sizeof(double) * lines * nf);
    if (!x) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    uint64_t k = 0;
    const char *p = (const char *)buf, *end = p + len;
    long line = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
        qs_letor_line lm;
        int is_doc;
        qs_error err;
        line++;
        if (qs_letor_parse_row(&f, x + k * nf, p, l, &lm, &is_doc, &err) != 0) {
            fprintf(stderr, "%s:%ld: %s\n", path, line, err.msg);
            exit(2);
        }
        k += is_doc != 0;
        p = nl ? nl + 1 : end;
    }
    free(buf);
    *n = k;
    return x;
}

#endif
