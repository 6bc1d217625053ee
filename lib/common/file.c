/* file.c: whole-file reads for the library's load-from-file calls. */
#include "common/common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int qs_read_file(const char *path, size_t limit, unsigned char **out, size_t *len,
                 qs_error *err)
{
    *out = NULL;
    *len = 0;
    if (!path || !*path)
        return qs_fail(err, QS_ERR_ARG, 0, "no file name");
    FILE *f = fopen(path, "rb");
    if (!f)
        return qs_fail(err, QS_ERR_IO, 0, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = (size_t)1 << 16, n = 0;
    unsigned char *b = malloc(cap + 1);
    if (!b) {
        fclose(f);
        return qs_fail(err, QS_ERR_NOMEM, 0, "%s: out of memory", path);
    }
    for (;;) {
        if (n == cap) {
            if (cap > limit) {
                free(b);
                fclose(f);
                return qs_fail(err, QS_ERR_LIMIT, 0, "%s: larger than the limit of %zu bytes",
                               path, limit);
            }
            /* one byte past the limit tells "at the limit" from "beyond" */
            size_t nc = cap > limit / 2 ? limit + 1 : cap * 2;
            unsigned char *nb = realloc(b, nc + 1);
            if (!nb) {
                free(b);
                fclose(f);
                return qs_fail(err, QS_ERR_NOMEM, 0, "%s: out of memory (%zu bytes read)", path,
                               n);
            }
            b = nb;
            cap = nc;
        }
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    int bad = ferror(f);
    int e = errno;
    fclose(f);
    if (bad) {
        free(b);
        return qs_fail(err, QS_ERR_IO, 0, "%s: read error: %s", path, strerror(e));
    }
    if (n > limit) {
        free(b);
        return qs_fail(err, QS_ERR_LIMIT, 0, "%s: larger than the limit of %zu bytes", path, limit);
    }
    b[n] = 0;
    *out = b;
    *len = n;
    return 0;
}
