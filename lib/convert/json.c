/* json.c: the pull tokenizer declared in json.h, for JSON text (strict
 * RFC 8259 syntax, UTF-8 checked) and UBJSON, with an explicit nesting limit
 * and no recursion. */
#include "convert/json.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* What the reader expects next. */
enum {
    ST_VALUE = 0,   /* a value: at the start, after ':' or after ',' in an array */
    ST_ARR_FIRST,   /* a value or ']' (just after '[') */
    ST_OBJ_FIRST,   /* a member name or '}' (just after '{') */
    ST_KEY,         /* a member name (after ',' in an object) */
    ST_COLON,       /* ':' after a member name */
    ST_AFTER,       /* ',' or the closing bracket, or the end after the top-level value */
    ST_DONE,        /* QS_JSON_END was returned */
    ST_FAILED       /* an error was reported */
};

#define KIND_OBJECT 'o'
#define KIND_ARRAY  'a'

static int is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Characters that may follow a number or a literal. */
static int is_delim(unsigned char c)
{
    return is_ws(c) || c == ',' || c == ']' || c == '}' || c == ':';
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static int hex_val(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

void qs_json_init(qs_json_reader *r, const char *buf, size_t len, unsigned max_depth,
                  unsigned flags)
{
    memset(r, 0, sizeof *r);
    r->buf = buf;
    r->len = buf ? len : 0;
    r->flags = flags;
    r->max_depth = (max_depth == 0 || max_depth > QS_JSON_MAX_DEPTH) ? QS_JSON_MAX_DEPTH
                                                                     : max_depth;
    r->state = ST_VALUE;
    if (!(flags & QS_JSON_UBJSON) && r->len >= 3 && (unsigned char)buf[0] == 0xEF && (unsigned char)buf[1] == 0xBB &&
        (unsigned char)buf[2] == 0xBF)
        r->pos = 3;
}

/* Describe the byte at `pos` for an error message. */
static const char *describe(const qs_json_reader *r, size_t pos, char *tmp, size_t cap)
{
    if (pos >= r->len)
        return "the end of the input";
    unsigned char c = (unsigned char)r->buf[pos];
    if (c > 0x20 && c < 0x7F)
        snprintf(tmp, cap, "'%c'", c);
    else
        snprintf(tmp, cap, "byte 0x%02x", c);
    return tmp;
}

static int fail_at(qs_json_reader *r, qs_error *err, qs_status code, size_t off,
                   const char *what)
{
    r->state = ST_FAILED;
    return qs_fail_at(err, code, (long long)off, "json: %s at byte %zu", what, off);
}

/* "expected X, found Y" at the current position. */
static int unexpected(qs_json_reader *r, qs_error *err, size_t off, const char *expected)
{
    char tmp[32];
    r->state = ST_FAILED;
    return qs_fail_at(err, QS_ERR_FORMAT, (long long)off, "json: expected %s, found %s at byte %zu",
                      expected, describe(r, off, tmp, sizeof tmp), off);
}

/* Length of the well-formed UTF-8 sequence starting at p (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *p, size_t avail)
{
    unsigned char c = p[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;   /* range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (avail < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

size_t qs_json_utf8_len(const unsigned char *p, size_t avail)
{
    if (avail == 0)
        return 0;
    return p[0] < 0x80 ? 1 : utf8_len(p, avail);
}

/* Scan a string whose opening quote is at r->pos. */
static int scan_string(qs_json_reader *r, qs_json_token *t, qs_error *err)
{
    const unsigned char *b = (const unsigned char *)r->buf;
    size_t open = r->pos, i = open + 1, n = r->len;
    int escaped = 0;
    for (;;) {
        /* Plain ASCII runs are the common case: keep that loop tight. */
        while (i < n && b[i] >= 0x20 && b[i] < 0x80 && b[i] != '"' && b[i] != '\\')
            i++;
        if (i >= n) {
            r->state = ST_FAILED;
            return qs_fail_at(err, QS_ERR_FORMAT, (long long)open,
                              "json: unterminated string starting at byte %zu", open);
        }
        unsigned char c = b[i];
        if (c == '"')
            break;
        if (c == '\\') {
            escaped = 1;
            if (i + 1 >= n) {
                i = n;      /* reported as unterminated */
                continue;
            }
            unsigned char e = b[i + 1];
            if (e == 'u') {
                if (n - i < 6) {
                    i = n;
                    continue;
                }
                for (size_t k = 2; k < 6; k++)
                    if (hex_val(b[i + k]) < 0)
                        return fail_at(r, err, QS_ERR_FORMAT, i,
                                       "invalid \\u escape (4 hex digits expected)");
                /* A NUL inside a name or a number would cut it short in
                 * every C string it is compared or parsed as. */
                if (memcmp(b + i + 2, "0000", 4) == 0)
                    return fail_at(r, err, QS_ERR_FORMAT, i,
                                   "escaped NUL (\\u0000) in a string is not accepted");
                i += 6;
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                       e == 'r' || e == 't') {
                i += 2;
            } else {
                return fail_at(r, err, QS_ERR_FORMAT, i, "invalid escape in string");
            }
            continue;
        }
        if (c < 0x20)
            return fail_at(r, err, QS_ERR_FORMAT, i, "unescaped control character in string");
        size_t k = utf8_len(b + i, n - i);
        if (k == 0)
            return fail_at(r, err, QS_ERR_FORMAT, i, "invalid utf-8 in string");
        i += k;
    }
    t->text = r->buf + open + 1;
    t->len = i - open - 1;
    t->offset = open;
    t->escaped = escaped;
    r->pos = i + 1;
    return 0;
}

/* Match the literal `word` at r->pos; it must end at a delimiter. */
static int match_word(qs_json_reader *r, const char *word)
{
    size_t k = strlen(word);
    if (r->len - r->pos < k || memcmp(r->buf + r->pos, word, k) != 0)
        return 0;
    if (r->pos + k < r->len && !is_delim((unsigned char)r->buf[r->pos + k]))
        return 0;
    return 1;
}

/* Scan a number (or, with QS_JSON_NONFINITE, NaN / Infinity / -Infinity). */
static int scan_number(qs_json_reader *r, qs_json_token *t, qs_error *err)
{
    const unsigned char *b = (const unsigned char *)r->buf;
    size_t start = r->pos, i = start, n = r->len;
    if (i < n && b[i] == '-')
        i++;
    if ((r->flags & QS_JSON_NONFINITE) && i < n && b[i] == 'I') {
        size_t save = r->pos;
        r->pos = i;
        int ok = match_word(r, "Infinity");
        r->pos = save;
        if (!ok)
            return unexpected(r, err, start, "a value");
        i += 8;
    } else {
        if (i >= n || !is_digit(b[i]))
            return unexpected(r, err, i, "a digit");
        if (b[i] == '0')
            i++;
        else
            while (i < n && is_digit(b[i]))
                i++;
        if (i < n && b[i] == '.') {
            i++;
            if (i >= n || !is_digit(b[i]))
                return unexpected(r, err, i, "a digit after the decimal point");
            while (i < n && is_digit(b[i]))
                i++;
        }
        if (i < n && (b[i] == 'e' || b[i] == 'E')) {
            i++;
            if (i < n && (b[i] == '+' || b[i] == '-'))
                i++;
            if (i >= n || !is_digit(b[i]))
                return unexpected(r, err, i, "a digit in the exponent");
            while (i < n && is_digit(b[i]))
                i++;
        }
        if (i < n && !is_delim(b[i]))
            return fail_at(r, err, QS_ERR_FORMAT, start, "invalid number");
    }
    t->type = QS_JSON_NUMBER;
    t->text = r->buf + start;
    t->len = i - start;
    t->offset = start;
    t->escaped = 0;
    r->pos = i;
    return 0;
}

/* Scan the value starting at r->pos (whitespace already skipped). */
static int scan_value(qs_json_reader *r, qs_json_token *t, qs_error *err)
{
    size_t p = r->pos;
    if (p >= r->len)
        return unexpected(r, err, p, "a value");
    unsigned char c = (unsigned char)r->buf[p];
    t->text = r->buf + p;
    t->offset = p;
    t->len = 1;
    t->escaped = 0;
    switch (c) {
    case '{':
    case '[':
        if (r->depth >= r->max_depth) {
            r->state = ST_FAILED;
            return qs_fail_at(err, QS_ERR_LIMIT, (long long)p,
                              "json: nesting deeper than %u levels at byte %zu", r->max_depth, p);
        }
        r->stack[r->depth++] = c == '{' ? KIND_OBJECT : KIND_ARRAY;
        r->pos = p + 1;
        t->type = c == '{' ? QS_JSON_OBJECT : QS_JSON_ARRAY;
        r->state = c == '{' ? ST_OBJ_FIRST : ST_ARR_FIRST;
        return 0;
    case '"':
        if (scan_string(r, t, err) != 0)
            return -1;
        t->type = QS_JSON_STRING;
        r->state = ST_AFTER;
        return 0;
    case 't':
    case 'f':
    case 'n': {
        const char *w = c == 't' ? "true" : c == 'f' ? "false" : "null";
        if (!match_word(r, w))
            return unexpected(r, err, p, "a value");
        t->type = c == 't' ? QS_JSON_TRUE : c == 'f' ? QS_JSON_FALSE : QS_JSON_NULL;
        t->len = strlen(w);
        r->pos = p + t->len;
        r->state = ST_AFTER;
        return 0;
    }
    case 'N':
        if (!(r->flags & QS_JSON_NONFINITE) || !match_word(r, "NaN"))
            return unexpected(r, err, p, "a value");
        t->type = QS_JSON_NUMBER;
        t->len = 3;
        r->pos = p + 3;
        r->state = ST_AFTER;
        return 0;
    default:
        if (c == '-' || is_digit(c) || (c == 'I' && (r->flags & QS_JSON_NONFINITE))) {
            if (scan_number(r, t, err) != 0)
                return -1;
            r->state = ST_AFTER;
            return 0;
        }
        return unexpected(r, err, p, "a value");
    }
}

/* Close the innermost container with the bracket at r->pos. */
static int close_container(qs_json_reader *r, qs_json_token *t)
{
    size_t p = r->pos;
    unsigned char kind = r->stack[--r->depth];
    t->type = kind == KIND_OBJECT ? QS_JSON_OBJECT_END : QS_JSON_ARRAY_END;
    t->text = r->buf + p;
    t->len = 1;
    t->offset = p;
    t->escaped = 0;
    r->pos = p + 1;
    r->state = ST_AFTER;
    return 0;
}

static int ub_next(qs_json_reader *r, qs_json_token *t, qs_error *err);

int qs_json_next(qs_json_reader *r, qs_json_token *t, qs_error *err)
{
    t->num_kind = QS_JSON_NUM_TEXT;
    t->ival = 0;
    t->dval = 0.0;
    if (r->flags & QS_JSON_UBJSON)
        return ub_next(r, t, err);
    for (;;) {
        while (r->pos < r->len && is_ws((unsigned char)r->buf[r->pos]))
            r->pos++;
        size_t p = r->pos;
        int have = p < r->len;
        unsigned char c = have ? (unsigned char)r->buf[p] : 0;
        switch (r->state) {
        case ST_DONE:
            t->type = QS_JSON_END;
            t->text = r->buf + r->len;
            t->len = 0;
            t->offset = r->len;
            t->escaped = 0;
            return 0;
        case ST_FAILED:
            return qs_fail_at(err, QS_ERR_ARG, (long long)p,
                              "json: reader used after an error");
        case ST_OBJ_FIRST:
        case ST_KEY:
            /* Just after '{', a '}' closes the object; otherwise, and after
             * ',', a member name must come. */
            if (r->state == ST_OBJ_FIRST && have && c == '}')
                return close_container(r, t);
            if (!have || c != '"')
                return unexpected(r, err, p,
                                  r->state == ST_OBJ_FIRST ? "a member name or '}'"
                                                           : "a member name");
            if (scan_string(r, t, err) != 0)
                return -1;
            t->type = QS_JSON_KEY;
            r->state = ST_COLON;
            return 0;
        case ST_COLON:
            if (!have || c != ':')
                return unexpected(r, err, p, "':' after a member name");
            r->pos++;
            r->state = ST_VALUE;
            continue;
        case ST_ARR_FIRST:
            if (have && c == ']')
                return close_container(r, t);
            return scan_value(r, t, err);
        case ST_VALUE:
            return scan_value(r, t, err);
        case ST_AFTER: {
            if (r->depth == 0) {
                if (have)
                    return unexpected(r, err, p, "the end of the input after the top-level value");
                r->state = ST_DONE;
                continue;
            }
            unsigned char kind = r->stack[r->depth - 1];
            if (have && c == ',') {
                r->pos++;
                r->state = kind == KIND_OBJECT ? ST_KEY : ST_VALUE;
                continue;
            }
            if (have && ((c == '}' && kind == KIND_OBJECT) || (c == ']' && kind == KIND_ARRAY)))
                return close_container(r, t);
            return unexpected(r, err, p, kind == KIND_OBJECT ? "',' or '}'" : "',' or ']'");
        }
        default:
            return qs_fail_at(err, QS_ERR_ARG, (long long)p, "json: bad reader state");
        }
    }
}

/* ---------------------------------------------------------------- UBJSON */

static int ub_fail(qs_json_reader *r, qs_error *err, qs_status code, size_t off, const char *what)
{
    r->state = ST_FAILED;
    return qs_fail_at(err, code, (long long)off, "ubjson: %s at byte %zu", what, off);
}

/* Make sure n more bytes are there. */
static int ub_need(qs_json_reader *r, qs_error *err, size_t n)
{
    if (r->len - r->pos < n)
        return ub_fail(r, err, QS_ERR_FORMAT, r->len, "unexpected end of input");
    return 0;
}

/* Big-endian integer payload of type `m` (i U I l L) at r->pos. */
static int ub_int(qs_json_reader *r, qs_error *err, unsigned char m, int64_t *out)
{
    size_t n = m == 'i' || m == 'U' ? 1 : m == 'I' ? 2 : m == 'l' ? 4 : 8;
    if (ub_need(r, err, n) != 0)
        return -1;
    const unsigned char *b = (const unsigned char *)r->buf + r->pos;
    uint64_t u = 0;
    for (size_t k = 0; k < n; k++)
        u = u << 8 | b[k];
    r->pos += n;
    switch (m) {
    case 'i': *out = (int8_t)u; break;
    case 'U': *out = (int64_t)u; break;
    case 'I': *out = (int16_t)u; break;
    case 'l': *out = (int32_t)u; break;
    default:  *out = (int64_t)u; break;   /* two's complement, as written */
    }
    return 0;
}

static int ub_is_int_marker(unsigned char m)
{
    return m == 'i' || m == 'U' || m == 'I' || m == 'l' || m == 'L';
}

/* A length or count: an integer marker, then a non-negative value. */
static int ub_len(qs_json_reader *r, qs_error *err, int64_t *out)
{
    size_t off = r->pos;
    if (ub_need(r, err, 1) != 0)
        return -1;
    unsigned char m = (unsigned char)r->buf[r->pos++];
    if (!ub_is_int_marker(m))
        return ub_fail(r, err, QS_ERR_FORMAT, off, "expected an integer length");
    if (ub_int(r, err, m, out) != 0)
        return -1;
    if (*out < 0)
        return ub_fail(r, err, QS_ERR_FORMAT, off, "negative length");
    return 0;
}

/* Length-prefixed UTF-8 bytes (a key, or the payload of 'S' / 'H'). */
static int ub_bytes(qs_json_reader *r, qs_error *err, qs_json_token *t, int utf8)
{
    size_t off = r->pos;
    int64_t n;
    if (ub_len(r, err, &n) != 0)
        return -1;
    if ((uint64_t)n > r->len - r->pos)
        return ub_fail(r, err, QS_ERR_FORMAT, off, "string runs past the end of the input");
    const unsigned char *b = (const unsigned char *)r->buf + r->pos;
    if (utf8)
        for (size_t i = 0; i < (size_t)n;) {
            if (b[i] == 0)
                return ub_fail(r, err, QS_ERR_FORMAT, r->pos + i, "NUL byte in a string");
            if (b[i] < 0x80) {
                i++;
                continue;
            }
            size_t k = utf8_len(b + i, (size_t)n - i);
            if (k == 0)
                return ub_fail(r, err, QS_ERR_FORMAT, r->pos + i, "invalid utf-8 in string");
            i += k;
        }
    t->text = r->buf + r->pos;
    t->len = (size_t)n;
    t->escaped = 0;
    r->pos += (size_t)n;
    return 0;
}

/* Whether s[0..n) is exactly one JSON number (for 'H'). */
static int json_number_ok(const unsigned char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-')
        i++;
    if (i >= n || !is_digit(s[i]))
        return 0;
    if (s[i] == '0')
        i++;
    else
        while (i < n && is_digit(s[i]))
            i++;
    if (i < n && s[i] == '.') {
        if (++i >= n || !is_digit(s[i]))
            return 0;
        while (i < n && is_digit(s[i]))
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= n || !is_digit(s[i]))
            return 0;
        while (i < n && is_digit(s[i]))
            i++;
    }
    return i == n;
}

/* Element types allowed after '$': each element then takes at least one
 * byte, so a hostile count cannot make the reader loop without reading. */
static int ub_typed_ok(unsigned char m)
{
    return ub_is_int_marker(m) || m == 'd' || m == 'D' || m == 'C' || m == 'S' || m == 'H' ||
           m == '[' || m == '{';
}

/* The value of type `m` (its marker already read, or implied by '$'),
 * starting at byte `off`. */
static int ub_value(qs_json_reader *r, qs_json_token *t, qs_error *err, unsigned char m, size_t off)
{
    t->offset = off;
    t->text = r->buf + off;
    t->len = r->pos - off;
    t->escaped = 0;
    switch (m) {
    case '{':
    case '[': {
        if (r->depth >= r->max_depth) {
            r->state = ST_FAILED;
            return qs_fail_at(err, QS_ERR_LIMIT, (long long)off,
                              "ubjson: nesting deeper than %u levels at byte %zu", r->max_depth, off);
        }
        unsigned char type = 0;
        int64_t count = -1;
        if (r->pos < r->len && r->buf[r->pos] == '$') {
            r->pos++;
            if (ub_need(r, err, 1) != 0)
                return -1;
            type = (unsigned char)r->buf[r->pos++];
            if (!ub_typed_ok(type))
                return ub_fail(r, err, QS_ERR_FORMAT, r->pos - 1, "unsupported element type after '$'");
            if (r->pos >= r->len || r->buf[r->pos] != '#')
                return ub_fail(r, err, QS_ERR_FORMAT, r->pos, "expected '#' after a '$' type");
        }
        if (r->pos < r->len && r->buf[r->pos] == '#') {
            r->pos++;
            if (ub_len(r, err, &count) != 0)
                return -1;
        }
        unsigned d = r->depth++;
        r->stack[d] = m == '{' ? KIND_OBJECT : KIND_ARRAY;
        r->ub_type[d] = type;
        r->ub_left[d] = count;
        t->type = m == '{' ? QS_JSON_OBJECT : QS_JSON_ARRAY;
        t->len = 1;
        r->state = ST_AFTER;
        return 0;
    }
    case 'Z': t->type = QS_JSON_NULL; return 0;
    case 'T': t->type = QS_JSON_TRUE; return 0;
    case 'F': t->type = QS_JSON_FALSE; return 0;
    case 'i': case 'U': case 'I': case 'l': case 'L':
        t->type = QS_JSON_NUMBER;
        t->num_kind = QS_JSON_NUM_INT;
        if (ub_int(r, err, m, &t->ival) != 0)
            return -1;
        t->len = r->pos - off;
        return 0;
    case 'd':
    case 'D': {
        size_t n = m == 'd' ? 4 : 8;
        if (ub_need(r, err, n) != 0)
            return -1;
        const unsigned char *b = (const unsigned char *)r->buf + r->pos;
        uint64_t u = 0;
        for (size_t k = 0; k < n; k++)
            u = u << 8 | b[k];
        r->pos += n;
        t->type = QS_JSON_NUMBER;
        if (m == 'd') {
            uint32_t u32 = (uint32_t)u;
            float f;
            memcpy(&f, &u32, sizeof f);
            t->num_kind = QS_JSON_NUM_F32;
            t->dval = f;
        } else {
            double d;
            memcpy(&d, &u, sizeof d);
            t->num_kind = QS_JSON_NUM_F64;
            t->dval = d;
        }
        t->len = r->pos - off;
        return 0;
    }
    case 'C':
        if (ub_need(r, err, 1) != 0)
            return -1;
        if ((unsigned char)r->buf[r->pos] >= 0x80)
            return ub_fail(r, err, QS_ERR_FORMAT, r->pos, "char value is not ascii");
        t->type = QS_JSON_STRING;
        t->text = r->buf + r->pos++;
        t->len = 1;
        return 0;
    case 'S':
        t->type = QS_JSON_STRING;
        return ub_bytes(r, err, t, 1);
    case 'H':
        t->type = QS_JSON_NUMBER;
        if (ub_bytes(r, err, t, 0) != 0)
            return -1;
        if (!json_number_ok((const unsigned char *)t->text, t->len))
            return ub_fail(r, err, QS_ERR_FORMAT, off, "invalid high-precision number");
        return 0;
    default:
        return ub_fail(r, err, QS_ERR_FORMAT, off, "unknown type marker");
    }
}

/* Skip 'N' (no-op) markers where a marker may come. */
static void ub_skip_noop(qs_json_reader *r)
{
    while (r->pos < r->len && r->buf[r->pos] == 'N')
        r->pos++;
}

/* In UBJSON mode, r->state is ST_VALUE before the top-level value, ST_COLON
 * when an object member's value comes next, else ST_AFTER. */
static int ub_next(qs_json_reader *r, qs_json_token *t, qs_error *err)
{
    for (;;) {
        if (r->state == ST_DONE) {
            t->type = QS_JSON_END;
            t->text = r->buf + r->len;
            t->len = 0;
            t->offset = r->len;
            t->escaped = 0;
            return 0;
        }
        if (r->state == ST_FAILED)
            return qs_fail_at(err, QS_ERR_ARG, (long long)r->pos, "ubjson: reader used after an error");
        if (r->depth == 0) {
            if (r->state == ST_VALUE) {
                ub_skip_noop(r);
                size_t off = r->pos;
                if (ub_need(r, err, 1) != 0)
                    return -1;
                r->state = ST_AFTER;
                unsigned char m = (unsigned char)r->buf[r->pos++];
                return ub_value(r, t, err, m, off);
            }
            ub_skip_noop(r);
            if (r->pos < r->len)
                return ub_fail(r, err, QS_ERR_FORMAT, r->pos, "data after the top-level value");
            r->state = ST_DONE;
            continue;
        }
        unsigned lv = r->depth - 1;
        unsigned char kind = r->stack[lv];
        int counted = r->ub_left[lv] >= 0;
        int want_value = kind == KIND_ARRAY || r->state == ST_COLON;
        if (!want_value || kind == KIND_ARRAY) {
            /* The container may end here. */
            int end = 0;
            if (counted) {
                end = r->ub_left[lv] == 0;
            } else {
                ub_skip_noop(r);
                if (ub_need(r, err, 1) != 0)
                    return -1;
                unsigned char c = (unsigned char)r->buf[r->pos];
                end = c == (kind == KIND_OBJECT ? '}' : ']');
                if (end)
                    r->pos++;
            }
            if (end) {
                r->depth--;
                t->type = kind == KIND_OBJECT ? QS_JSON_OBJECT_END : QS_JSON_ARRAY_END;
                t->text = r->buf + r->pos;
                t->len = 0;
                t->offset = r->pos;
                t->escaped = 0;
                r->state = ST_AFTER;
                return 0;
            }
        }
        if (!want_value) {   /* a member name: length-prefixed, no marker */
            size_t off = r->pos;
            t->type = QS_JSON_KEY;
            t->offset = off;
            if (ub_bytes(r, err, t, 1) != 0)
                return -1;
            r->state = ST_COLON;
            return 0;
        }
        unsigned char m = r->ub_type[lv];
        size_t off = r->pos;
        if (!m) {
            ub_skip_noop(r);
            off = r->pos;
            if (ub_need(r, err, 1) != 0)
                return -1;
            m = (unsigned char)r->buf[r->pos++];
        }
        if (counted)
            r->ub_left[lv]--;
        r->state = ST_AFTER;
        return ub_value(r, t, err, m, off);
    }
}

int qs_json_skip(qs_json_reader *r, const qs_json_token *t, qs_error *err)
{
    qs_json_token tok;
    if (t->type == QS_JSON_KEY) {
        if (qs_json_next(r, &tok, err) != 0)
            return -1;
        t = &tok;
    }
    if (t->type != QS_JSON_OBJECT && t->type != QS_JSON_ARRAY)
        return 0;
    /* The container opened by t is the innermost one; read until it closes.
     * A loop over tokens, so the input's nesting never reaches the C stack. */
    unsigned outer = r->depth - 1;
    qs_json_token x;
    while (r->depth > outer)
        if (qs_json_next(r, &x, err) != 0)
            return -1;
    return 0;
}

/* Decode one unit of an escaped string starting at s[*i] into out (1-4
 * bytes); returns the byte count.  The text was validated by scan_string. */
static size_t decode_unit(const char *s, size_t len, size_t *i, unsigned char out[4])
{
    unsigned char c = (unsigned char)s[*i];
    if (c != '\\') {
        out[0] = c;
        (*i)++;
        return 1;
    }
    unsigned char e = (unsigned char)s[*i + 1];
    *i += 2;
    switch (e) {
    case 'b': out[0] = '\b'; return 1;
    case 'f': out[0] = '\f'; return 1;
    case 'n': out[0] = '\n'; return 1;
    case 'r': out[0] = '\r'; return 1;
    case 't': out[0] = '\t'; return 1;
    case 'u': break;
    default: out[0] = e; return 1;   /* " \ / */
    }
    uint32_t cp = 0;
    for (size_t k = 0; k < 4; k++)
        cp = cp * 16 + (uint32_t)hex_val((unsigned char)s[*i + k]);
    *i += 4;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        /* A high surrogate combines with a following \uDC00-\uDFFF. */
        if (*i + 6 <= len && s[*i] == '\\' && s[*i + 1] == 'u') {
            uint32_t lo = 0;
            for (size_t k = 2; k < 6; k++)
                lo = lo * 16 + (uint32_t)hex_val((unsigned char)s[*i + k]);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                *i += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else
                cp = 0xFFFD;
        } else
            cp = 0xFFFD;
    } else if (cp >= 0xDC00 && cp <= 0xDFFF)
        cp = 0xFFFD;   /* a lone low surrogate has no UTF-8 form */
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

int qs_json_str_eq(const qs_json_token *t, const char *s)
{
    if (t->type != QS_JSON_STRING && t->type != QS_JSON_KEY)
        return 0;
    size_t sl = strlen(s);
    if (!t->escaped)
        return t->len == sl && memcmp(t->text, s, sl) == 0;
    size_t i = 0, j = 0;
    unsigned char u[4];
    while (i < t->len) {
        size_t k = decode_unit(t->text, t->len, &i, u);
        if (sl - j < k || memcmp(s + j, u, k) != 0)
            return 0;
        j += k;
    }
    return j == sl;
}

long long qs_json_str_decode(const qs_json_token *t, char *out, size_t cap)
{
    if ((t->type != QS_JSON_STRING && t->type != QS_JSON_KEY) || cap == 0)
        return -1;
    if (!t->escaped) {   /* also every UBJSON string: bytes as they are */
        if (t->len > cap - 1)
            return -1;
        memcpy(out, t->text, t->len);
        out[t->len] = '\0';
        return (long long)t->len;
    }
    size_t i = 0, j = 0;
    unsigned char u[4];
    while (i < t->len) {
        size_t k = decode_unit(t->text, t->len, &i, u);
        if (cap - 1 - j < k)
            return -1;
        memcpy(out + j, u, k);
        j += k;
    }
    out[j] = '\0';
    return (long long)j;
}

int qs_json_get_i64(const qs_json_token *t, int64_t *out)
{
    if (t->type == QS_JSON_NUMBER && t->num_kind == QS_JSON_NUM_INT) {
        *out = t->ival;
        return 0;
    }
    if (t->type != QS_JSON_NUMBER || t->num_kind != QS_JSON_NUM_TEXT || t->len == 0)
        return -1;
    size_t i = 0;
    int neg = t->text[0] == '-';
    if (neg)
        i++;
    if (i >= t->len)
        return -1;
    /* Accumulate as a negative number so INT64_MIN fits. */
    int64_t v = 0;
    for (; i < t->len; i++) {
        unsigned char c = (unsigned char)t->text[i];
        if (!is_digit(c))
            return -1;   /* fraction, exponent, NaN, Infinity */
        int d = c - '0';
        if (v < (INT64_MIN + d) / 10)
            return -1;
        v = v * 10 - d;
    }
    if (!neg) {
        if (v == INT64_MIN)
            return -1;
        v = -v;
    }
    *out = v;
    return 0;
}

/* strtof / strtod need a NUL-terminated copy; short numbers use the stack.
 * (Like the rest of libqs, this assumes the C locale's decimal point.) */
static int parse_real(const qs_json_token *t, int single, double *out)
{
    if (t->type != QS_JSON_NUMBER)
        return -1;
    switch (t->num_kind) {
    case QS_JSON_NUM_INT:   /* one rounding, from the integer */
        *out = single ? (double)(float)t->ival : (double)t->ival;
        return 0;
    case QS_JSON_NUM_F32:
        *out = t->dval;
        return 0;
    case QS_JSON_NUM_F64:
        *out = single ? (double)(float)t->dval : t->dval;
        return 0;
    case QS_JSON_NUM_TEXT:
        break;
    }
    if (t->len == 0)
        return -1;
    char small[64];
    char *s = t->len < sizeof small ? small : malloc(t->len + 1);
    if (!s)
        return -1;
    memcpy(s, t->text, t->len);
    s[t->len] = '\0';
    char *end;
    errno = 0;
    /* ERANGE is not an error here: overflow gives inf and underflow the
     * correctly rounded subnormal or zero, as the training libraries read them. */
    if (single)
        *out = strtof(s, &end);
    else
        *out = strtod(s, &end);
    int ok = end == s + t->len;
    if (s != small)
        free(s);
    return ok ? 0 : -1;
}

int qs_json_get_f32(const qs_json_token *t, float *out)
{
    double d;
    if (parse_real(t, 1, &d) != 0)
        return -1;
    *out = (float)d;   /* exact: d holds a float */
    return 0;
}

int qs_json_get_f64(const qs_json_token *t, double *out)
{
    return parse_real(t, 0, out);
}

const char *qs_json_type_name(qs_json_type type)
{
    switch (type) {
    case QS_JSON_END: return "the end of the input";
    case QS_JSON_OBJECT: return "an object";
    case QS_JSON_OBJECT_END: return "'}'";
    case QS_JSON_ARRAY: return "an array";
    case QS_JSON_ARRAY_END: return "']'";
    case QS_JSON_KEY: return "a member name";
    case QS_JSON_STRING: return "a string";
    case QS_JSON_NUMBER: return "a number";
    case QS_JSON_TRUE: return "true";
    case QS_JSON_FALSE: return "false";
    case QS_JSON_NULL: return "null";
    }
    return "a token";
}

int qs_json_expect(qs_json_reader *r, qs_json_token *t, qs_json_type type, const char *what,
                   qs_error *err)
{
    if (qs_json_next(r, t, err) != 0)
        return -1;
    if (t->type != type)
        return qs_fail_at(err, QS_ERR_FORMAT, (long long)t->offset,
                          "%s should be %s, found %s at byte %zu", what, qs_json_type_name(type),
                          qs_json_type_name(t->type), t->offset);
    return 0;
}

int qs_json_duplicate(const qs_json_token *k, const char *what, qs_error *err)
{
    return qs_fail_at(err, QS_ERR_FORMAT, (long long)k->offset, "%s appears twice (byte %zu)",
                      what, k->offset);
}

int qs_json_read_name(qs_json_reader *r, const char *what, char *out, size_t cap, qs_error *err)
{
    qs_json_token t;
    if (qs_json_expect(r, &t, QS_JSON_STRING, what, err) != 0)
        return -1;
    if (qs_json_str_decode(&t, out, cap) < 0)
        return qs_fail_at(err, QS_ERR_FORMAT, (long long)t.offset, "%s is too long (byte %zu)",
                          what, t.offset);
    return 0;
}
