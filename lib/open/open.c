/* open.c: the one open path from a model's file or bytes to a scorer
 * (qs_open, qs_scorer_open): the read bounded and stopped at a wrong start
 * (qs_sniff_model), a zstd frame decompressed to the same bound, a .qsm
 * taken as it is (its tuning record read and, where it was measured on
 * this machine, applied), any other model converted by its reader and
 * compiled in memory, then loaded.  qs-score and the Python binding open
 * models through it. */
#include "common/common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#define MAX_INPUT_DEFAULT ((size_t)1 << 30)

static const unsigned char QSM_MAGIC[8] = { 0x89, 'Q', 'S', 'M', '\r', '\n', 0x1a, '\n' };

int qs_max_input(size_t *out, qs_error *err)
{
    const char *v = getenv("QS_MAX_INPUT");
    uint64_t x;
    if (!v || !*v) {
        *out = MAX_INPUT_DEFAULT;
        return 0;
    }
    if (qs_parse_bytes(v, 1, SIZE_MAX >> 1, &x) != 0) {
        char q[64];
        return qs_fail(err, QS_ERR_ARG, 0, "bad QS_MAX_INPUT '%s' (expected a byte count such "
                       "as 1000000, 64K, 512M or 2G)", qs_quote(q, sizeof q, v, strlen(v)));
    }
    *out = (size_t)x;
    return 0;
}

/* The stream f, read as a model is read: at most limit bytes (one more
 * tells "beyond"), stopped where the first bytes show that no model
 * starts so (what was read is returned: the steps after refuse it as they
 * would the whole file), a .qsm no further than one byte past the size its
 * header records.  0 with *out (malloc'd, NUL after *len), or -1 (the
 * messages do not name the input: qs_open names it). */
static int read_model_stream(FILE *f, size_t limit, unsigned char **out, size_t *len,
                             qs_error *err)
{
    size_t cap = (size_t)1 << 16, n = 0;
    unsigned char *b = malloc(cap + 1);
    int state = QS_SNIFF_MORE, over = 0, rerr = 0;
    uint64_t most = limit;
    if (!b)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    for (;;) {
        if (n == cap) {
            if (cap > limit) {
                over = 1;
                break;
            }
            /* one byte past the limit tells "at the limit" from "beyond" */
            size_t nc = cap > limit / 2 ? limit + 1 : cap * 2;
            unsigned char *nb = realloc(b, nc + 1);
            if (!nb) {
                free(b);
                return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (reading, %zu bytes so "
                               "far)", n);
            }
            b = nb;
            cap = nc;
        }
        size_t want = cap - n;
        if (most < (uint64_t)n + want)
            want = (size_t)(most - n) + 1;
        errno = 0;
        size_t r = fread(b + n, 1, want, f);
        n += r;
        if (ferror(f)) {
            rerr = errno ? errno : EIO;
            break;
        }
        if (state == QS_SNIFF_MORE) {
            uint64_t m;
            state = qs_sniff_model(b, n, r == 0, &m);
            if (state == QS_SNIFF_NOT)
                break;
            if (state == QS_SNIFF_MODEL && m < most)
                most = m;
        }
        if (r == 0 || n > most)
            break;
    }
    if (rerr) {
        free(b);
        qs_fail(err, QS_ERR_IO, 0, "read error: %s", strerror(rerr));
        errno = rerr;
        return -1;
    }
    if (over || n > limit) {
        free(b);
        return qs_fail(err, QS_ERR_LIMIT, 0, "input larger than the limit of %zu bytes (set "
                       "QS_MAX_INPUT to raise it)", limit);
    }
    if (n > most) {
        free(b);
        return qs_fail_at(err, QS_ERR_FORMAT, 24, "the file is longer than the %llu bytes its "
                          "header records (padded)", (unsigned long long)most);
    }
    b[n] = 0;
    *out = b;
    *len = n;
    return 0;
}

static int is_zstd(const unsigned char *b, size_t n)
{
    return n >= 4 && b[0] == 0x28 && b[1] == 0xB5 && b[2] == 0x2F && b[3] == 0xFD;
}

/* A zstd frame decompressed, at most cap bytes (NUL after them).  0 or -1. */
static int unzstd(const unsigned char *buf, size_t len, size_t cap, unsigned char **out,
                  size_t *out_len, qs_error *err)
{
    unsigned long long claim = ZSTD_getFrameContentSize(buf, len);
    if (claim != ZSTD_CONTENTSIZE_UNKNOWN && claim != ZSTD_CONTENTSIZE_ERROR && claim > cap)
        return qs_fail(err, QS_ERR_LIMIT, 0, "decompressed content larger than the limit of "
                       "%zu bytes (set QS_MAX_INPUT to raise it)", cap);
    ZSTD_DStream *z = ZSTD_createDStream();
    if (!z)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (starting to decompress)");
    size_t have = 0, room = len < cap / 4 ? len * 4 + 4096 : cap;
    if (claim != ZSTD_CONTENTSIZE_UNKNOWN && claim != ZSTD_CONTENTSIZE_ERROR)
        room = (size_t)claim + 1 < cap ? (size_t)claim + 1 : cap;
    unsigned char *o = malloc(room + 1);
    ZSTD_inBuffer in = { buf, len, 0 };
    size_t rc = ZSTD_initDStream(z);
    int status = -1;
    while (o && !ZSTD_isError(rc)) {
        if (have == room) {
            if (room >= cap) {
                qs_fail(err, QS_ERR_LIMIT, 0, "decompressed content larger than the limit of "
                        "%zu bytes (set QS_MAX_INPUT to raise it)", cap);
                goto done;
            }
            room = room > cap / 2 ? cap : room * 2;
            unsigned char *nb = realloc(o, room + 1);
            if (!nb) {
                qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (decompressing, %zu bytes so far)",
                        have);
                goto done;
            }
            o = nb;
        }
        ZSTD_outBuffer ob = { o, room, have };
        const size_t before = in.pos;
        rc = ZSTD_decompressStream(z, &ob, &in);
        const int progress = ob.pos != have || in.pos != before;
        have = ob.pos;
        if (ZSTD_isError(rc))
            break;
        if (rc == 0 && in.pos == in.size) {
            o[have] = 0;
            *out = o;
            *out_len = have;
            o = NULL;
            status = 0;
            goto done;
        }
        if (!progress && in.pos == in.size) {
            qs_fail(err, QS_ERR_FORMAT, 0, "truncated zstd stream");
            goto done;
        }
    }
    if (!o)
        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (decompressing)");
    else if (ZSTD_getErrorCode(rc) == ZSTD_error_memory_allocation)
        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (decompressing)");
    else
        qs_fail(err, QS_ERR_FORMAT, 0, "zstd: %s", ZSTD_getErrorName(rc));
done:
    free(o);
    ZSTD_freeDStream(z);
    return status;
}

void qs_opened_free(qs_opened *o)
{
    if (!o)
        return;
    qs_scorer_free(o->scorer);
    free(o->qsm);
    free(o->source);
    memset(o, 0, sizeof *o);
}

/* The image of plain (decompressed) bytes into o: a .qsm taken, another
 * model converted and compiled (with QS_OPEN_NO_CONVERT: its bytes kept,
 * recognised only).  *own, when not NULL, is plain itself, malloc'd with
 * room for a NUL after len: taken (and set to NULL) where o keeps the
 * bytes, instead of a copy. */
static int image_of(const unsigned char *plain, size_t len, qs_format fmt, qs_opened *o,
                    unsigned flags, unsigned char **own, qs_error *err)
{
    if (fmt == QS_FMT_UNKNOWN && len >= 8 && memcmp(plain, QSM_MAGIC, 8) == 0) {
        o->is_qsm = 1;
        snprintf(o->kind, sizeof o->kind, "a compiled .qsm model");
        if (own && *own) {
            o->qsm = *own;
            *own = NULL;
        } else {
            o->qsm = malloc(len ? len : 1);
            if (!o->qsm)
                return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (%zu bytes)", len);
            memcpy(o->qsm, plain, len);
        }
        o->qsm_len = len;
        qs_error terr;
        qs_error_clear(&terr);
        o->has_tuning = qs_qsm_get_tuning(o->qsm, o->qsm_len, &o->tuning, &terr) == 1;
        o->tuned = o->has_tuning && qs_tuning_matches(&o->tuning);
        return 0;
    }
    if (fmt == QS_FMT_UNKNOWN)
        fmt = qs_detect_format((const char *)plain, len);
    o->format = fmt;
    const qs_reader_info *r = qs_reader_by_format(fmt);
    if (r)
        snprintf(o->kind, sizeof o->kind, "%s", r->kind);
    const int keep = (flags & (QS_OPEN_KEEP_SOURCE | QS_OPEN_NO_CONVERT)) != 0;
    if (flags & QS_OPEN_NO_CONVERT)
        goto kept;
    if (!r && fmt == QS_FMT_UNKNOWN) {
        qs_error cerr;
        qs_error_clear(&cerr);
        (void)qs_convert(QS_FMT_UNKNOWN, (const char *)plain, len, &cerr);
        if (len >= 1 && plain[0] == QSM_MAGIC[0]) {
            /* a .qsm's first byte: what is wrong with its header */
            qs_scorer *s = qs_scorer_load(plain, len, err);
            if (!s)
                return -1;
            qs_scorer_free(s);
        }
        return qs_fail(err, QS_ERR_FORMAT, 0, "not a .qsm, and an %s", cerr.msg);
    }
    if (!r)
        snprintf(o->kind, sizeof o->kind, "a model");
    if (qs_source_version((const char *)plain, len, o->source_version,
                          sizeof o->source_version) != 0)
        o->source_version[0] = 0;
    qs_model *m = fmt == QS_FMT_CANONICAL ? qs_model_from_text((const char *)plain, len, err)
                                          : qs_convert(fmt, (const char *)plain, len, err);
    if (!m)
        return -1;
    qs_compile_options copt = { 0, 0, 0, NULL };
    int rc = qs_compile(m, &copt, &o->qsm, &o->qsm_len, err);
    qs_model_free(m);
    if (rc != 0)
        return -1;
kept:
    if (keep) {
        if (own && *own) {
            o->source = *own;
            *own = NULL;
        } else {
            o->source = malloc(len + 1);
            if (!o->source)
                return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (%zu bytes)", len);
            memcpy(o->source, plain, len);
        }
        o->source[len] = 0;
        o->source_len = len;
    }
    return 0;
}

/* An error about the input `name` (NULL: unnamed) named, as "NAME: what",
 * unless opt says QS_OPEN_UNNAMED (out of memory and a bad QS_MAX_INPUT
 * are not the input's). */
static void named(const char *name, const qs_open_options *opt, qs_error *err)
{
    if (!name || !err || (opt && (opt->flags & QS_OPEN_UNNAMED)) || err->code == QS_ERR_NOMEM ||
        err->code == QS_ERR_ARG)
        return;
    char m[sizeof err->msg];
    size_t k = strlen(name), rest = strlen(err->msg);
    if (k > sizeof m / 2)
        k = sizeof m / 2;
    if (rest > sizeof m - k - 3)
        rest = sizeof m - k - 3;
    memcpy(m, name, k);
    memcpy(m + k, ": ", 2);
    memcpy(m + k + 2, err->msg, rest);
    m[k + 2 + rest] = '\0';
    memcpy(err->msg, m, sizeof m);
}

/* qs_open and qs_open_file: the bytes from f (when not NULL) or buf, named
 * `name` (NULL: unnamed) in messages. */
static int open_common(FILE *f, const char *name, const unsigned char *buf, size_t len,
                       const qs_open_options *opt, qs_opened *out, qs_error *err)
{
    static const qs_open_options none = { QS_FMT_UNKNOWN, 0, 0, 0, 0, 0 };
    if (!opt)
        opt = &none;
    size_t limit = opt->max_input;
    if (!limit && qs_max_input(&limit, err) != 0)
        return -1;
    unsigned char *file = NULL, *plain = NULL;
    int rc = -1;
    int ioerr = 0;
    if (f) {
        if (read_model_stream(f, limit, &file, &len, err) != 0) {
            if (err && err->code == QS_ERR_IO)
                ioerr = errno;
            goto done;
        }
        buf = file;
    } else if (len > limit) {
        qs_fail(err, QS_ERR_LIMIT, 0, "the model's %zu bytes are beyond the limit of %zu "
                "(set QS_MAX_INPUT to raise it)", len, limit);
        goto done;
    }
    const unsigned char *p = buf;
    unsigned char **own = file ? &file : NULL;
    if (is_zstd(buf, len)) {
        if (unzstd(buf, len, limit, &plain, &len, err) != 0)
            goto done;
        free(file); /* (not needed any more: the peak is one copy less) */
        file = NULL;
        p = plain;
        own = &plain;
    }
    if (image_of(p, len, opt->format, out, opt->flags, own, err) != 0)
        goto done;
    if (opt->flags & QS_OPEN_IGNORE_TUNING)
        out->tuned = 0;
    if (!(opt->flags & (QS_OPEN_NO_SCORER | QS_OPEN_NO_CONVERT))) {
        out->scorer = qs_opened_load(out, opt->threads, opt->tree_block, opt->delta, err);
        if (!out->scorer)
            goto done;
    }
    rc = 0;
done:
    free(file);
    free(plain);
    if (rc != 0) {
        named(name, opt, err);
        qs_opened_free(out);
    }
    if (rc != 0 && ioerr)
        errno = ioerr; /* (the system's reason, as qs.h promises) */
    return rc;
}

int qs_open(const char *path, const unsigned char *buf, size_t len, const qs_open_options *opt,
            qs_opened *out, qs_error *err)
{
    if (!out)
        return qs_fail(err, QS_ERR_ARG, 0, "qs_open: no result to fill");
    memset(out, 0, sizeof *out);
    if (!path && !buf)
        return qs_fail(err, QS_ERR_ARG, 0, "qs_open: neither a path nor bytes");
    if (!path)
        return open_common(NULL, NULL, buf, len, opt, out, err);
    FILE *f = fopen(path, "rb");
    if (!f) {
        const int e = errno;
        qs_fail(err, QS_ERR_IO, 0, "cannot open: %s", strerror(e));
        named(path, opt, err);
        errno = e;
        return -1;
    }
    int rc = open_common(f, path, NULL, 0, opt, out, err);
    const int e = errno;
    fclose(f);
    errno = e;
    return rc;
}

int qs_open_file(FILE *f, const char *name, const qs_open_options *opt, qs_opened *out,
                 qs_error *err)
{
    if (!out)
        return qs_fail(err, QS_ERR_ARG, 0, "qs_open_file: no result to fill");
    memset(out, 0, sizeof *out);
    if (!f)
        return qs_fail(err, QS_ERR_ARG, 0, "qs_open_file: no stream");
    return open_common(f, name, NULL, 0, opt, out, err);
}

qs_scorer *qs_opened_load(const qs_opened *o, unsigned threads, uint32_t tree_block,
                          uint32_t delta, qs_error *err)
{
    if (!o || !o->qsm) {
        qs_fail(err, QS_ERR_ARG, 0, "qs_opened_load: no image");
        return NULL;
    }
    if (tree_block == 0)
        tree_block = QS_KEEP;
    if (delta == 0)
        delta = QS_KEEP;
    if (o->tuned) {
        if (tree_block == QS_KEEP)
            tree_block = o->tuning.tree_block;
        if (delta == QS_KEEP && o->tuning.delta)
            delta = o->tuning.delta;
    }
    qs_scorer *s = qs_scorer_load_layout(o->qsm, o->qsm_len, threads ? threads : 1, tree_block,
                                         delta, err);
    if (s && o->tuned && qs_scorer_apply_tuning(s, &o->tuning, err) != 0) {
        qs_scorer_free(s);
        return NULL;
    }
    return s;
}

qs_scorer *qs_scorer_open(const char *path, const unsigned char *buf, size_t len,
                          const qs_open_options *opt, qs_error *err)
{
    qs_open_options o = opt ? *opt : (qs_open_options){ QS_FMT_UNKNOWN, 0, 0, 0, 0, 0 };
    o.flags &= ~(unsigned)(QS_OPEN_NO_SCORER | QS_OPEN_KEEP_SOURCE);
    qs_opened r;
    if (qs_open(path, buf, len, &o, &r, err) != 0)
        return NULL;
    qs_scorer *s = r.scorer;
    r.scorer = NULL;
    qs_opened_free(&r);
    return s;
}
