/* file.c: whole-file reads for the library's load-from-file calls. */
#include "common/common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int qs_read_file(const char *path, size_t limit, size_t head_len, qs_read_head_fn head,
                 void *ctx, unsigned char **out, size_t *len, int *cut, qs_error *err)
{
    *out = NULL;
    *len = 0;
    if (cut)
        *cut = 0;
    if (!path || !*path)
        return qs_fail(err, QS_ERR_ARG, 0, "no file name");
    FILE *f = fopen(path, "rb");
    if (!f)
        return qs_fail(err, QS_ERR_IO, 0, "%s: cannot open: %s", path, strerror(errno));
    /* read no more than `most` bytes, and one byte past it to tell a file
     * of exactly `most` bytes from a longer one */
    uint64_t most = limit;
    size_t cap = (size_t)1 << 16, n = 0;
    if (cap < head_len)
        cap = head_len;
    unsigned char *b = malloc(cap + 1);
    if (!b) {
        fclose(f);
        return qs_fail(err, QS_ERR_NOMEM, 0, "%s: out of memory", path);
    }
    int headed = head == NULL, over = 0;
    for (;;) {
        if (headed && n > most) {
            over = 1;
            break;
        }
        if (n == cap) {
            if (cap > limit)
                break;
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
        /* up to the head first, then up to the bound's next byte */
        size_t want = cap - n;
        if (!headed && want > head_len - (n < head_len ? n : head_len) && n < head_len)
            want = head_len - n;
        else if (headed && most < (uint64_t)n + want)
            want = (size_t)(most - n) + 1;
        size_t r = fread(b + n, 1, want, f);
        n += r;
        if (!headed && (n >= head_len || r == 0) && !ferror(f)) {
            headed = 1;
            if (head(ctx, b, n, &most, err) != 0) {
                free(b);
                fclose(f);
                return -1;
            }
            if (most > limit)
                most = limit;
            continue;
        }
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
    if (over) {
        n = (size_t)most;   /* the bound's bytes; more followed */
        if (cut)
            *cut = 1;
    }
    b[n] = 0;
    *out = b;
    *len = n;
    return 0;
}
