/* json.c: the tools' JSON writer and its text buffer (json.h). */
#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ buffer */

static int buf_room(tool_buf *b, size_t n)
{
    if (b->oom)
        return 0;
    if (n < b->cap - b->len)
        return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (n >= cap - b->len) {
        if (cap > SIZE_MAX / 2) {
            b->oom = 1;
            return 0;
        }
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->p = p;
    b->cap = cap;
    return 1;
}

void tool_buf_put(tool_buf *b, const char *s, size_t n)
{
    if (!buf_room(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void tool_buf_printf(tool_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = 1;   /* (no other failure of vsnprintf here) */
        return;
    }
    if ((size_t)n < sizeof small) {
        tool_buf_put(b, small, (size_t)n);
        return;
    }
    if (!buf_room(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* The length of the well-formed UTF-8 sequence at s[0 .. n) (RFC 3629: no
 * overlong forms, no surrogates, at most U+10FFFF), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    const unsigned c = s[0];
    size_t k;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        k = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        k = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (n < k || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < k; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return k;
}

void tool_buf_quote(tool_buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    tool_buf_put(b, "\"", 1);
    size_t run = 0; /* bytes copied as they are, pending */
    for (size_t i = 0; i < n;) {
        const unsigned char c = p[i];
        size_t k = utf8_seq(p + i, n - i);
        if (k > 0 && c >= 0x20 && c != '"' && c != '\\' && c != 0x7f) {
            run += k;
            i += k;
            continue;
        }
        tool_buf_put(b, (const char *)p + i - run, run);
        run = 0;
        if (k == 0)
            tool_buf_put(b, "\\ufffd", 6);
        else if (c == '"' || c == '\\')
            tool_buf_printf(b, "\\%c", c);
        else
            tool_buf_printf(b, "\\u%04x", c);
        i += k ? k : 1;
    }
    tool_buf_put(b, (const char *)p + n - run, run);
    tool_buf_put(b, "\"", 1);
}

void tool_buf_free(tool_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------ JSON */

void tool_json_init(tool_json *j)
{
    memset(j, 0, sizeof *j);
}

static void misuse(tool_json *j, const char *why)
{
    if (!j->bad)
        j->bad = why;
}

static int usable(const tool_json *j)
{
    return !j->bad && !j->b.oom;
}

static void newline(tool_json *j)
{
    tool_buf_put(&j->b, "\n", 1);
    for (unsigned i = 0; i < j->indent; i++)
        tool_buf_put(&j->b, " ", 1);
    j->brk = 0;
}

/* Before a value: where one may go, and the comma or line before it. */
static int value_starts(tool_json *j)
{
    if (!usable(j))
        return 0;
    if (j->depth == 0) {
        if (j->done) {
            misuse(j, "a second value after the document");
            return 0;
        }
        return 1;
    }
    if (j->open[j->depth - 1] == '{') {
        if (!j->after_key) {
            misuse(j, "a value without a key in an object");
            return 0;
        }
        j->after_key = 0;
        return 1;   /* the key wrote the separator */
    }
    if (j->some[j->depth - 1])
        tool_buf_put(&j->b, ",", 1);
    if (j->brk)
        newline(j);
    else if (j->some[j->depth - 1])
        tool_buf_put(&j->b, " ", 1);
    j->some[j->depth - 1] = 1;
    return 1;
}

/* After a complete value. */
static void value_ends(tool_json *j)
{
    if (j->depth == 0)
        j->done = 1;
}

static void open_(tool_json *j, char c)
{
    if (!value_starts(j))
        return;
    if (j->depth == TOOL_JSON_DEPTH) {
        misuse(j, "nested too deep");
        return;
    }
    tool_buf_put(&j->b, &c, 1);
    j->open[j->depth] = c;
    j->some[j->depth] = 0;
    j->depth++;
}

void tool_json_object(tool_json *j) { open_(j, '{'); }
void tool_json_array(tool_json *j) { open_(j, '['); }

void tool_json_end(tool_json *j)
{
    if (!usable(j))
        return;
    if (j->depth == 0) {
        misuse(j, "a close without an open");
        return;
    }
    if (j->after_key) {
        misuse(j, "a key without a value");
        return;
    }
    if (j->brk)
        newline(j);
    j->depth--;
    tool_buf_put(&j->b, j->open[j->depth] == '{' ? "}" : "]", 1);
    value_ends(j);
}

void tool_json_key(tool_json *j, const char *key)
{
    if (!usable(j))
        return;
    if (j->depth == 0 || j->open[j->depth - 1] != '{') {
        misuse(j, "a key outside an object");
        return;
    }
    if (j->after_key) {
        misuse(j, "two keys in a row");
        return;
    }
    if (j->some[j->depth - 1])
        tool_buf_put(&j->b, ",", 1);
    if (j->brk)
        newline(j);
    else if (j->some[j->depth - 1])
        tool_buf_put(&j->b, " ", 1);
    j->some[j->depth - 1] = 1;
    tool_buf_quote(&j->b, key, strlen(key));
    tool_buf_put(&j->b, ": ", 2);
    j->after_key = 1;
}

void tool_json_str_n(tool_json *j, const char *s, size_t n)
{
    if (!value_starts(j))
        return;
    tool_buf_quote(&j->b, s, n);
    value_ends(j);
}

void tool_json_str(tool_json *j, const char *s)
{
    if (!s)
        tool_json_null(j);
    else
        tool_json_str_n(j, s, strlen(s));
}

void tool_json_u64(tool_json *j, uint64_t v)
{
    if (!value_starts(j))
        return;
    tool_buf_printf(&j->b, "%llu", (unsigned long long)v);
    value_ends(j);
}

void tool_json_i64(tool_json *j, int64_t v)
{
    if (!value_starts(j))
        return;
    tool_buf_printf(&j->b, "%lld", (long long)v);
    value_ends(j);
}

void tool_json_num(tool_json *j, double v)
{
    if (!isfinite(v)) {
        tool_json_null(j);
        return;
    }
    if (!value_starts(j))
        return;
    tool_buf_printf(&j->b, "%.6g", v);
    value_ends(j);
}

static void literal(tool_json *j, const char *s)
{
    if (!value_starts(j))
        return;
    tool_buf_put(&j->b, s, strlen(s));
    value_ends(j);
}

void tool_json_bool(tool_json *j, int v) { literal(j, v ? "true" : "false"); }
void tool_json_null(tool_json *j) { literal(j, "null"); }

void tool_json_break(tool_json *j, unsigned indent)
{
    j->brk = 1;
    j->indent = indent;
}

int tool_json_finish(tool_json *j, const char **text, size_t *len, const char **why)
{
    if (usable(j) && (j->depth != 0 || !j->done))
        misuse(j, j->depth ? "an object or array left open" : "no value");
    if (usable(j))
        tool_buf_put(&j->b, "\n", 1);
    if (j->b.oom) {
        *why = "out of memory";
        return -1;
    }
    if (j->bad) {
        *why = j->bad;
        return -1;
    }
    *text = j->b.p;
    *len = j->b.len;
    return 0;
}

void tool_json_free(tool_json *j)
{
    tool_buf_free(&j->b);
    tool_json_init(j);
}
