/* slurp.h: the unit tests' whole-file reader, and the model-and-documents
 * loader of those that take both. */
#ifndef QS_TEST_SLURP_H
#define QS_TEST_SLURP_H

#include "qs.h"

#include <stdio.h>
#include <stdlib.h>

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

#endif
