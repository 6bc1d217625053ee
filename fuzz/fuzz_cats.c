/* fuzz_cats.c: libFuzzer target for what qs-compile --info --json writes
 * from an XGBoost model's category encoder: qs_source_list_categories (the
 * "cats" object, JSON and UBJSON) and the tools' JSON writer
 * (tools/common/json.c).  Oracles: the encoder's categories are reported
 * all or none (a failure reports nothing and leaves a proper qs_error), in
 * feature and code order, each at most 256 bytes of UTF-8, as many as the
 * count returned, the same count without the error record; written by the
 * writer as --info writes them, they make a document that an independent
 * strict JSON parser (RFC 8259, UTF-8 checked) accepts and that gives every
 * name back byte for byte.  Then the input again as a program of writer
 * calls (misuse, control bytes, malformed UTF-8, NaN included): the writer
 * either refuses it (and so does an independent model of JSON's grammar)
 * or writes a document the parser accepts, its strings the input's with
 * each malformed byte as U+FFFD. */
#include "fuzz_common.h"

#include "json.h"

/* ------------------------------------------------------------ UTF-8 */

/* An independent check (by code point): well-formed UTF-8, no overlong
 * form, no surrogate, nothing above U+10FFFF.  The length of the sequence
 * at s, or 0. */
static size_t u8_one(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (n == 0)
        return 0;
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    size_t k = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC0 ? 2 : 0;
    if (k == 0 || s[0] > 0xF7 || n < k)
        return 0;
    uint32_t c = s[0] & (0x7F >> k);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3F);
    }
    static const uint32_t least[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (c < least[k] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return k;
}

static int u8_valid(const unsigned char *s, size_t n)
{
    uint32_t cp;
    for (size_t i = 0, k; i < n; i += k)
        if ((k = u8_one(s + i, n - i, &cp)) == 0)
            return 0;
    return 1;
}

/* s[0 .. n) with every byte that does not start a well-formed sequence
 * replaced by U+FFFD (EF BF BD): what the writer must write.  out has room
 * for 3n bytes. */
static size_t u8_repair(const unsigned char *s, size_t n, unsigned char *out)
{
    size_t o = 0;
    uint32_t cp;
    for (size_t i = 0, k; i < n; i += k ? k : 1) {
        k = u8_one(s + i, n - i, &cp);
        if (k) {
            memcpy(out + o, s + i, k);
            o += k;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
        }
    }
    return o;
}

/* ------------------------------------------------------- JSON parser */

/* A strict RFC 8259 parser of the writer's output, apart from the writer:
 * each string decoded (escapes, surrogate pairs) into strs[] in document
 * order, keys included.  0, or -1 with where it failed. */
typedef struct jstr {
    unsigned char *p;
    size_t n;
    int key;
} jstr;

typedef struct jparse {
    const unsigned char *s;
    size_t n, i;
    jstr *strs;
    size_t ns, cap;
    int depth;
    int oom;
} jparse;

static void jp_ws(jparse *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' ||
                           p->s[p->i] == '\r'))
        p->i++;
}

static int hex4(jparse *p, uint32_t *v)
{
    if (p->n - p->i < 4)
        return -1;
    *v = 0;
    for (int k = 0; k < 4; k++) {
        unsigned char c = p->s[p->i++];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        *v = *v << 4 | (uint32_t)d;
    }
    return 0;
}

static size_t put_cp(unsigned char *o, uint32_t c)
{
    if (c < 0x80) {
        o[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (unsigned char)(0xC0 | c >> 6);
        o[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (unsigned char)(0xE0 | c >> 12);
        o[1] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
        o[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | c >> 18);
    o[1] = (unsigned char)(0x80 | (c >> 12 & 0x3F));
    o[2] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
    o[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

static int jp_string(jparse *p, int key)
{
    if (p->i >= p->n || p->s[p->i] != '"')
        return -1;
    p->i++;
    unsigned char *out = malloc(p->n - p->i + 1); /* decoded is never longer */
    if (!out) {
        p->oom = 1;
        return -1;
    }
    size_t o = 0;
    for (;;) {
        if (p->i >= p->n)
            goto bad;
        unsigned char c = p->s[p->i];
        if (c == '"') {
            p->i++;
            break;
        }
        if (c < 0x20)
            goto bad;
        if (c == '\\') {
            if (++p->i >= p->n)
                goto bad;
            unsigned char e = p->s[p->i++];
            uint32_t v, w;
            switch (e) {
            case '"': case '\\': case '/': out[o++] = e; break;
            case 'b': out[o++] = '\b'; break;
            case 'f': out[o++] = '\f'; break;
            case 'n': out[o++] = '\n'; break;
            case 'r': out[o++] = '\r'; break;
            case 't': out[o++] = '\t'; break;
            case 'u':
                if (hex4(p, &v) != 0)
                    goto bad;
                if (v >= 0xDC00 && v <= 0xDFFF)
                    goto bad;
                if (v >= 0xD800 && v <= 0xDBFF) {
                    if (p->n - p->i < 2 || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u')
                        goto bad;
                    p->i += 2;
                    if (hex4(p, &w) != 0 || w < 0xDC00 || w > 0xDFFF)
                        goto bad;
                    v = 0x10000 + ((v - 0xD800) << 10) + (w - 0xDC00);
                }
                o += put_cp(out + o, v);
                break;
            default:
                goto bad;
            }
            continue;
        }
        uint32_t cp;
        size_t k = u8_one(p->s + p->i, p->n - p->i, &cp);
        if (k == 0)
            goto bad;
        memcpy(out + o, p->s + p->i, k);
        o += k;
        p->i += k;
    }
    if (p->ns == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 32;
        jstr *g = realloc(p->strs, nc * sizeof *g);
        if (!g) {
            p->oom = 1;
            goto bad;
        }
        p->strs = g;
        p->cap = nc;
    }
    p->strs[p->ns++] = (jstr){ out, o, key };
    return 0;
bad:
    free(out);
    return -1;
}

static int jp_number(jparse *p)
{
    size_t i = p->i;
    if (i < p->n && p->s[i] == '-')
        i++;
    if (i >= p->n)
        return -1;
    if (p->s[i] == '0')
        i++;
    else if (p->s[i] >= '1' && p->s[i] <= '9')
        while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9')
            i++;
    else
        return -1;
    if (i < p->n && p->s[i] == '.') {
        i++;
        if (i >= p->n || p->s[i] < '0' || p->s[i] > '9')
            return -1;
        while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9')
            i++;
    }
    if (i < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
        i++;
        if (i < p->n && (p->s[i] == '+' || p->s[i] == '-'))
            i++;
        if (i >= p->n || p->s[i] < '0' || p->s[i] > '9')
            return -1;
        while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9')
            i++;
    }
    p->i = i;
    return 0;
}

static int jp_value(jparse *p)
{
    jp_ws(p);
    if (p->i >= p->n || ++p->depth > 64)
        return -1;
    int rc = 0;
    unsigned char c = p->s[p->i];
    if (c == '{' || c == '[') {
        const unsigned char close = c == '{' ? '}' : ']';
        p->i++;
        jp_ws(p);
        if (p->i < p->n && p->s[p->i] == close) {
            p->i++;
        } else {
            for (;;) {
                if (c == '{') {
                    jp_ws(p);
                    if (jp_string(p, 1) != 0)
                        return -1;
                    jp_ws(p);
                    if (p->i >= p->n || p->s[p->i++] != ':')
                        return -1;
                }
                if (jp_value(p) != 0)
                    return -1;
                jp_ws(p);
                if (p->i >= p->n)
                    return -1;
                if (p->s[p->i] == ',') {
                    p->i++;
                    continue;
                }
                if (p->s[p->i++] != close)
                    return -1;
                break;
            }
        }
    } else if (c == '"') {
        rc = jp_string(p, 0);
    } else if (c == 't' || c == 'f' || c == 'n') {
        const char *w = c == 't' ? "true" : c == 'f' ? "false" : "null";
        size_t l = strlen(w);
        if (p->n - p->i < l || memcmp(p->s + p->i, w, l) != 0)
            return -1;
        p->i += l;
    } else {
        rc = jp_number(p);
    }
    p->depth--;
    return rc;
}

/* The whole text: one value, blank space around it. */
static int jp_document(jparse *p, const char *text, size_t len)
{
    memset(p, 0, sizeof *p);
    p->s = (const unsigned char *)text;
    p->n = len;
    if (jp_value(p) != 0)
        return -1;
    jp_ws(p);
    return p->i == p->n ? 0 : -1;
}

static void jp_free(jparse *p)
{
    for (size_t i = 0; i < p->ns; i++)
        free(p->strs[i].p);
    free(p->strs);
}

/* ------------------------------------------------ the category encoder */

typedef struct cat {
    uint32_t feature, code;
    char text[256];
    size_t len;
} cat;

typedef struct cats {
    cat *c;
    size_t n, cap;
    int oom;
} cats;

static void on_category(void *ctx, uint32_t feature, uint32_t code, const char *text, size_t len)
{
    cats *C = ctx;
    if (len > 256)
        FUZZ_FAIL("category %u of feature %u: %zu bytes (at most 256)", code, feature, len);
    if (!u8_valid((const unsigned char *)text, len))
        FUZZ_FAIL("category %u of feature %u is not UTF-8", code, feature);
    if (C->n) {
        const cat *l = &C->c[C->n - 1];
        if (feature < l->feature || (feature == l->feature && code != l->code + 1) ||
            (feature != l->feature && code != 0))
            FUZZ_FAIL("category %u of feature %u after %u of %u", code, feature, l->code,
                      l->feature);
    } else if (code != 0) {
        FUZZ_FAIL("the first category has code %u", code);
    }
    if (C->n == C->cap) {
        size_t nc = C->cap ? C->cap * 2 : 64;
        cat *g = realloc(C->c, nc * sizeof *g);
        if (!g) {
            C->oom = 1;
            return;
        }
        C->c = g;
        C->cap = nc;
    }
    cat *x = &C->c[C->n++];
    x->feature = feature;
    x->code = code;
    memcpy(x->text, text, len);
    x->len = len;
}

static void count_only(void *ctx, uint32_t feature, uint32_t code, const char *text, size_t len)
{
    (void)feature, (void)code, (void)text, (void)len;
    ++*(long long *)ctx;
}

static void check_categories(const uint8_t *data, size_t size)
{
    cats C = { 0 };
    qs_error err;
    qs_error_clear(&err);
    long long r = qs_source_list_categories((const char *)data, size, on_category, &C, &err);
    if (C.oom)
        goto out;
    if (r < 0) {
        if (C.n)
            FUZZ_FAIL("%zu categories reported before a failure", C.n);
        fuzz_check_err(&err, "qs_source_list_categories");
    } else if ((size_t)r != C.n) {
        FUZZ_FAIL("returned %lld, reported %zu", r, C.n);
    }
    long long seen = 0;
    long long r2 = qs_source_categories((const char *)data, size, count_only, &seen);
    if (r2 != r || (r >= 0 && seen != r) || (r < 0 && seen != 0))
        FUZZ_FAIL("qs_source_categories: %lld (%lld reported), qs_source_list_categories %lld",
                  r2, seen, r);
    if (r <= 0)
        goto out;
    /* written as qs-compile --info --json writes them */
    tool_json j;
    tool_json_init(&j);
    tool_json_object(&j);
    tool_json_key(&j, "categories");
    tool_json_object(&j);
    for (size_t i = 0; i < C.n; i++) {
        if (i == 0 || C.c[i].feature != C.c[i - 1].feature) {
            char key[16];
            if (i)
                tool_json_end(&j);
            snprintf(key, sizeof key, "%u", C.c[i].feature);
            tool_json_key(&j, key);
            tool_json_array(&j);
        }
        tool_json_str_n(&j, C.c[i].text, C.c[i].len);
    }
    tool_json_end(&j);
    tool_json_end(&j);
    tool_json_end(&j);
    const char *text, *why;
    size_t len;
    if (tool_json_finish(&j, &text, &len, &why) != 0) {
        if (!j.b.oom)
            FUZZ_FAIL("the writer refused the categories: %s", why);
    } else {
        jparse p;
        if (jp_document(&p, text, len) != 0) {
            if (!p.oom)
                FUZZ_FAIL("invalid JSON at byte %zu: %.*s", p.i, (int)(len < 400 ? len : 400),
                          text);
        } else {
            /* "categories", then each feature's key and its names */
            size_t k = 1;
            for (size_t i = 0; i < C.n; i++) {
                if (i == 0 || C.c[i].feature != C.c[i - 1].feature)
                    k++;
                if (k >= p.ns || p.strs[k].key || p.strs[k].n != C.c[i].len ||
                    memcmp(p.strs[k].p, C.c[i].text, C.c[i].len) != 0)
                    FUZZ_FAIL("category %zu does not read back", i);
                k++;
            }
            if (k != p.ns)
                FUZZ_FAIL("%zu strings in the document, %zu expected", p.ns, k);
        }
        jp_free(&p);
    }
    tool_json_free(&j);
out:
    free(C.c);
}

/* ------------------------------------------------ the writer, misused */

/* The input as writer calls, one byte each (then its operands), against
 * an independent model of where JSON allows what. */
typedef struct model {
    char open[TOOL_JSON_DEPTH + 1];
    int depth, after_key, done, bad;
} model;

static int m_value(model *m)
{
    if (m->bad)
        return 0;
    if (m->depth == 0) {
        if (m->done)
            return m->bad = 1, 0;
        return 1;
    }
    if (m->open[m->depth - 1] == '{') {
        if (!m->after_key)
            return m->bad = 1, 0;
        m->after_key = 0;
    }
    return 1;
}

static void m_after(model *m)
{
    if (m->depth == 0)
        m->done = 1;
}

static void check_writer(const uint8_t *data, size_t size)
{
    tool_json j;
    tool_json_init(&j);
    model m = { .depth = 0 };
    /* the strings written, as the document must give them back */
    unsigned char *want = malloc(3 * size + 16);
    size_t *wlen = malloc((size + 1) * sizeof *wlen);
    int *wkey = malloc((size + 1) * sizeof *wkey);
    size_t nw = 0, wpos = 0;
    if (!want || !wlen || !wkey)
        goto out;
    for (size_t i = 0; i < size;) {
        const uint8_t op = data[i++];
        const size_t rest = size - i;
        switch (op % 12) {
        case 0: case 1:
            if (m_value(&m)) {
                if (m.depth == TOOL_JSON_DEPTH)
                    m.bad = 1;
                else
                    m.open[m.depth++] = op % 12 == 0 ? '{' : '[';
            }
            op % 12 == 0 ? tool_json_object(&j) : tool_json_array(&j);
            break;
        case 2:
            if (!m.bad) {
                if (m.depth == 0 || m.after_key)
                    m.bad = 1;
                else {
                    m.depth--;
                    m_after(&m);
                }
            }
            tool_json_end(&j);
            break;
        case 3: case 4: { /* a key, or a string: the next (op / 12) % 8 bytes */
            size_t n = (size_t)(op / 12) % 8;
            if (n > rest)
                n = rest;
            char key[8];
            memcpy(key, data + i, n);
            const int is_key = op % 12 == 3;
            if (is_key) {
                /* (keys are C strings: up to a NUL) */
                n = strnlen(key, n);
                char kz[9];
                memcpy(kz, key, n);
                kz[n] = '\0';
                if (!m.bad) {
                    if (m.depth == 0 || m.open[m.depth - 1] != '{' || m.after_key)
                        m.bad = 1;
                    else
                        m.after_key = 1;
                }
                tool_json_key(&j, kz);
            } else {
                if (m_value(&m))
                    m_after(&m);
                tool_json_str_n(&j, key, n);
            }
            if (!m.bad) {
                wlen[nw] = u8_repair((const unsigned char *)key, n, want + wpos);
                wkey[nw++] = is_key;
                wpos += wlen[nw - 1];
            }
            i += (size_t)(op / 12) % 8 < rest ? (size_t)(op / 12) % 8 : rest;
            break;
        }
        case 5: case 6: case 7: { /* numbers: 8 bytes */
            uint64_t v = 0;
            size_t n = rest < 8 ? rest : 8;
            memcpy(&v, data + i, n);
            i += n;
            if (m_value(&m))
                m_after(&m);
            if (op % 12 == 5)
                tool_json_u64(&j, v);
            else if (op % 12 == 6)
                tool_json_i64(&j, (int64_t)v);
            else {
                double d;
                memcpy(&d, &v, sizeof d);
                tool_json_num(&j, d);
            }
            break;
        }
        case 8: case 9: case 10:
            if (m_value(&m))
                m_after(&m);
            if (op % 12 == 10)
                tool_json_null(&j);
            else
                tool_json_bool(&j, op % 12 == 8);
            break;
        default:
            tool_json_break(&j, (unsigned)(op / 12) % 9);
            break;
        }
    }
    const char *text, *why;
    size_t len;
    const int ok = tool_json_finish(&j, &text, &len, &why) == 0;
    const int m_ok = !m.bad && m.depth == 0 && m.done;
    if (!ok && j.b.oom)
        goto out;
    if (ok != m_ok)
        FUZZ_FAIL("the writer %s a document the grammar %s (%s)", ok ? "finished" : "refused",
                  m_ok ? "allows" : "does not allow", ok ? "" : why);
    if (!ok)
        goto out;
    jparse p;
    if (jp_document(&p, text, len) != 0) {
        if (!p.oom)
            FUZZ_FAIL("invalid JSON at byte %zu: %.*s", p.i, (int)(len < 400 ? len : 400), text);
    } else {
        if (p.ns != nw)
            FUZZ_FAIL("%zu strings read back, %zu written", p.ns, nw);
        for (size_t k = 0, at = 0; k < nw; at += wlen[k], k++)
            if (p.strs[k].key != wkey[k] || p.strs[k].n != wlen[k] ||
                memcmp(p.strs[k].p, want + at, wlen[k]) != 0)
                FUZZ_FAIL("string %zu does not read back", k);
    }
    jp_free(&p);
out:
    free(want);
    free(wlen);
    free(wkey);
    tool_json_free(&j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_begin(data, size);
    check_categories(data, size);
    check_writer(data, size);
    return 0;
}
