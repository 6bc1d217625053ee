/* tool.c: shared helpers of the qs-* programs (messages, exit codes, input
 * reading with transparent zstd, atomic output files, checked stdout). */
#include "tool.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <zstd.h>

static const char *progname = "qs";
static tool_out *pending_out; /* removed on a dying exit */

void tool_init(const char *name)
{
    const char *s = strrchr(name, '/');
    progname = s ? s + 1 : name;
    /* A closed pipe downstream is a quiet stop, like other Unix filters. */
    signal(SIGPIPE, SIG_DFL);
}

const char *tool_name(void) { return progname; }

static void vwarn(const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: ", progname);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void tool_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vwarn(fmt, ap);
    va_end(ap);
}

_Noreturn void tool_die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vwarn(fmt, ap);
    va_end(ap);
    if (pending_out)
        tool_out_abort(pending_out);
    exit(code);
}

int tool_exit_code(qs_status st)
{
    switch (st) {
    case QS_OK: return EXIT_OK;
    case QS_ERR_UNSUPPORTED: return EXIT_UNSUPPORTED;
    case QS_ERR_NOMEM:
    case QS_ERR_IO: return EXIT_SYSTEM;
    case QS_ERR_ARG: return EXIT_USAGE;
    default: return EXIT_DATA;
    }
}

_Noreturn void tool_die_err(const char *where, const qs_error *err)
{
    int code = tool_exit_code(err->code);
    if (!where)
        tool_die(code, "%s", err->msg);
    if (err->line > 0)
        tool_die(code, "%s:%ld: %s", where, err->line, err->msg);
    if (err->offset >= 0)
        tool_die(code, "%s: byte %lld: %s", where, err->offset, err->msg);
    tool_die(code, "%s: %s", where, err->msg);
}

/* ------------------------------------------------------------ input */

static char *decompress(const char *name, char *src, size_t n, size_t *len)
{
    ZSTD_DStream *ds = ZSTD_createDStream();
    if (!ds)
        tool_die(EXIT_SYSTEM, "out of memory");
    size_t cap = n * 4 + 1024, used = 0;
    char *dst = malloc(cap + 1);
    if (!dst)
        tool_die(EXIT_SYSTEM, "out of memory");
    ZSTD_inBuffer in = { src, n, 0 };
    size_t ret = 1;
    while (in.pos < in.size || ret != 0) {
        if (used == cap) {
            if (cap > ((size_t)1 << 40))
                tool_die(EXIT_DATA, "%s: decompressed size is too large", name);
            cap *= 2;
            dst = realloc(dst, cap + 1);
            if (!dst)
                tool_die(EXIT_SYSTEM, "out of memory");
        }
        ZSTD_outBuffer out = { dst, cap, used };
        size_t before_in = in.pos;
        ret = ZSTD_decompressStream(ds, &out, &in);
        if (ZSTD_isError(ret))
            tool_die(EXIT_DATA, "%s: zstd: %s", name, ZSTD_getErrorName(ret));
        int progress = out.pos != used || in.pos != before_in;
        used = out.pos;
        if (!progress && in.pos == in.size && ret != 0)
            tool_die(EXIT_DATA, "%s: truncated zstd stream", name);
    }
    ZSTD_freeDStream(ds);
    free(src);
    dst[used] = '\0';
    *len = used;
    return dst;
}

char *tool_read_all(const char *path, size_t *len)
{
    int use_stdin = !path || strcmp(path, "-") == 0;
    const char *name = use_stdin ? "(stdin)" : path;
    FILE *f = use_stdin ? stdin : fopen(path, "rb");
    if (!f)
        tool_die(EXIT_SYSTEM, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    if (!b)
        tool_die(EXIT_SYSTEM, "out of memory");
    for (;;) {
        if (n == cap) {
            cap *= 2;
            char *nb = realloc(b, cap + 1);
            if (!nb)
                tool_die(EXIT_SYSTEM, "out of memory");
            b = nb;
        }
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(f))
        tool_die(EXIT_SYSTEM, "%s: read error: %s", name, strerror(errno));
    if (!use_stdin)
        fclose(f);
    b[n] = '\0';
    if (n >= 4 && (unsigned char)b[0] == 0x28 && (unsigned char)b[1] == 0xB5 &&
        (unsigned char)b[2] == 0x2F && (unsigned char)b[3] == 0xFD)
        return decompress(name, b, n, len);
    *len = n;
    return b;
}

/* ------------------------------------------------------------ output */

static void cleanup_pending(void)
{
    if (pending_out && pending_out->tmp) {
        unlink(pending_out->tmp);
        free(pending_out->tmp);
        pending_out->tmp = NULL;
    }
}

static void on_signal(int sig)
{
    if (pending_out && pending_out->tmp)
        unlink(pending_out->tmp);
    signal(sig, SIG_DFL);
    raise(sig);
}

void tool_out_open(tool_out *o, const char *path, int binary)
{
    memset(o, 0, sizeof *o);
    if (!path || strcmp(path, "-") == 0) {
        if (binary && isatty(STDOUT_FILENO))
            tool_die(EXIT_USAGE, "refusing to write binary output to a terminal (use -o FILE)");
        o->fp = stdout;
        return;
    }
    size_t n = strlen(path);
    o->path = strdup(path);
    o->tmp = malloc(n + 16);
    if (!o->path || !o->tmp)
        tool_die(EXIT_SYSTEM, "out of memory");
    snprintf(o->tmp, n + 16, "%s.tmpXXXXXX", path);
    int fd = mkstemp(o->tmp);
    if (fd < 0)
        tool_die(EXIT_SYSTEM, "%s: cannot create: %s", path, strerror(errno));
    o->fp = fdopen(fd, binary ? "wb" : "w");
    if (!o->fp)
        tool_die(EXIT_SYSTEM, "%s: %s", path, strerror(errno));
    pending_out = o;
    atexit(cleanup_pending);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
}

void tool_out_write(tool_out *o, const void *buf, size_t n)
{
    if (n && fwrite(buf, 1, n, o->fp) != n) {
        if (errno == EPIPE)
            exit(EXIT_OK);
        tool_die(EXIT_SYSTEM, "%s: write error: %s", o->path ? o->path : "(stdout)",
                 strerror(errno));
    }
}

void tool_out_commit(tool_out *o)
{
    if (o->fp == stdout) {
        tool_close_stdout();
        return;
    }
    if (fflush(o->fp) != 0 || ferror(o->fp) || fsync(fileno(o->fp)) != 0) {
        int e = errno;
        fclose(o->fp);
        tool_die(EXIT_SYSTEM, "%s: write error: %s", o->path, strerror(e));
    }
    if (fclose(o->fp) != 0)
        tool_die(EXIT_SYSTEM, "%s: write error: %s", o->path, strerror(errno));
    /* mkstemp creates 0600; give the file the usual permissions. */
    mode_t um = umask(0);
    umask(um);
    chmod(o->tmp, 0666 & ~um);
    if (rename(o->tmp, o->path) != 0)
        tool_die(EXIT_SYSTEM, "%s: cannot rename: %s", o->path, strerror(errno));
    free(o->tmp);
    o->tmp = NULL;
    pending_out = NULL;
    free(o->path);
    o->path = NULL;
}

void tool_out_abort(tool_out *o)
{
    if (o->tmp) {
        if (o->fp)
            fclose(o->fp);
        unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
    }
    if (pending_out == o)
        pending_out = NULL;
}

void tool_close_stdout(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        if (errno == EPIPE)
            exit(EXIT_OK);
        tool_die(EXIT_SYSTEM, "write error on standard output: %s", strerror(errno));
    }
    if (fclose(stdout) != 0 && errno != EPIPE)
        tool_die(EXIT_SYSTEM, "write error on standard output: %s", strerror(errno));
}
