/* vec.c: growing arrays, for the readers that build vectors of unknown
 * length. */
#include "common/common.h"

#include <stdlib.h>

int qs_vec_reserve(void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap : 64;
    while (nc <= n) {
        if (nc > SIZE_MAX / 2 / size)
            return -1;
        nc *= 2;
    }
    void *q = realloc(*v, nc * size);
    if (!q)
        return -1;
    *v = q;
    *cap = nc;
    return 0;
}
