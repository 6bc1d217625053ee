/* error.c: filling qs_error records, and quoting hostile tokens for
 * messages. */
#include "common/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void qs_error_clear(qs_error *err)
{
    if (!err)
        return;
    err->code = QS_OK;
    err->line = 0;
    err->offset = -1;
    err->msg[0] = '\0';
    err->column = 0;
}

static void vfail(qs_error *err, qs_status code, long line, long long off,
                  const char *fmt, va_list ap)
{
    if (!err)
        return;
    err->code = code;
    err->line = line;
    err->offset = off;
    err->column = 0;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
}

int qs_fail(qs_error *err, qs_status code, long line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(err, code, line, -1, fmt, ap);
    va_end(ap);
    return -1;
}

int qs_fail_at(qs_error *err, qs_status code, long long offset, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(err, code, 0, offset, fmt, ap);
    va_end(ap);
    return -1;
}

/* A printable, bounded copy of a token for messages (input may be hostile):
 * control and non-ASCII bytes become '?', a long token is cut with "...".
 * cap must be at least 5.  Returns dst. */
const char *qs_quote(char *dst, size_t cap, const char *t, size_t n)
{
    size_t k = 0, lim = n < cap - 4 ? n : cap - 4;
    for (size_t i = 0; i < lim; i++) {
        unsigned char c = (unsigned char)t[i];
        dst[k++] = (c < 0x20 || c > 0x7e) ? '?' : (char)c;
    }
    if (lim < n) {
        memcpy(dst + k, "...", 3);
        k += 3;
    }
    dst[k] = '\0';
    return dst;
}
