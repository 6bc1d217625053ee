/* slurp.h: the unit tests' whole-file reader. */
#ifndef QS_TEST_SLURP_H
#define QS_TEST_SLURP_H

#include <stdio.h>
#include <stdlib.h>

/* The file's bytes (one more allocated), or NULL. */
static unsigned char *slurp(const char *path, size_t *len)
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

#endif
