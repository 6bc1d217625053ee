/* tool.c: shared helpers of the qs-* programs (messages, exit codes, input
 * reading with transparent zstd, atomic output files, checked stdout). */
#include "tool.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <zstd.h>
#include <zstd_errors.h>

static const char *progname = "qs";
static tool_out *pending_out; /* removed on a dying exit */
static int std_closed;         /* bit i: fd i was closed when we started */

void tool_init(const char *name)
{
    const char *s = strrchr(name, '/');
    progname = s ? s + 1 : name;
    /* With fd 0, 1 or 2 closed, the next file opened would take its place
     * and be read or written as standard input, output or error: hold them
     * open on /dev/null, and remember, so that using them is an error. */
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        std_closed |= 1 << fd;
        int nfd = open("/dev/null", O_RDWR);
        if (nfd < 0)
            _exit(EXIT_SYSTEM);
        if (nfd != fd) {
            dup2(nfd, fd);
            close(nfd);
        }
    }
    /* A closed pipe downstream is a quiet stop, like other Unix filters. */
    signal(SIGPIPE, SIG_DFL);
}

const char *tool_name(void) { return progname; }

void tool_check_stdin(void)
{
    if (std_closed & 1)
        tool_die(EXIT_SYSTEM, "(stdin): cannot read: standard input is closed");
}

static void progress_clear(void);

static void vwarn(const char *fmt, va_list ap)
{
    progress_clear();
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

static int threads_running;

void tool_threads_running(int on) { __atomic_store_n(&threads_running, on, __ATOMIC_SEQ_CST); }

/* ------------------------------------------------------------ held blocks */

/* A fixed table: the tools hold a handful of blocks at a time. */
#define TOOL_MAX_HELD 64
static struct {
    void *p;
    tool_release_fn release;
} held[TOOL_MAX_HELD];
static size_t nheld;
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;

void *tool_hold(void *p, tool_release_fn release)
{
    if (!p)
        return NULL;
    pthread_mutex_lock(&held_lock);
    size_t n = nheld;
    if (n < TOOL_MAX_HELD) {
        held[n].p = p;
        held[n].release = release ? release : free;
        nheld = n + 1;
    }
    pthread_mutex_unlock(&held_lock);
    if (n == TOOL_MAX_HELD) {
        (release ? release : free)(p);
        tool_die(EXIT_SYSTEM, "internal error: more than %d blocks held", TOOL_MAX_HELD);
    }
    return p;
}

/* Forget p; its release function, or NULL when p is not held. */
static tool_release_fn forget(void *p)
{
    tool_release_fn fn = NULL;
    pthread_mutex_lock(&held_lock);
    for (size_t i = nheld; i-- > 0;)
        if (held[i].p == p) {
            fn = held[i].release;
            memmove(&held[i], &held[i + 1], (nheld - i - 1) * sizeof held[0]);
            nheld--;
            break;
        }
    pthread_mutex_unlock(&held_lock);
    return fn;
}

void tool_unhold(void *p)
{
    if (p)
        forget(p);
}

void tool_release(void *p)
{
    if (!p)
        return;
    tool_release_fn fn = forget(p);
    if (fn)
        fn(p);
}

_Noreturn void tool_exit(int code)
{
    if (pending_out)
        tool_out_abort(pending_out);
    if (__atomic_load_n(&threads_running, __ATOMIC_SEQ_CST))
        _exit(code);
    while (nheld > 0) {
        nheld--;
        held[nheld].release(held[nheld].p);
    }
    exit(code);
}

_Noreturn void tool_die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vwarn(fmt, ap);
    va_end(ap);
    if (code == EXIT_USAGE)
        fprintf(stderr, "Try '%s --help' for more information.\n", progname);
    tool_exit(code);
}

/* Edit distance of A (length na) and B, at most 3 (3 meaning "3 or more"). */
static int near(const char *a, size_t na, const char *b)
{
    size_t nb = strlen(b);
    if (na > nb + 2 || nb > na + 2 || na > 62 || nb > 62)
        return 3;
    int d[64][64];
    for (size_t i = 0; i <= na; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= nb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            int v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < v)
                v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            d[i][j] = v;
        }
    return d[na][nb] < 3 ? d[na][nb] : 3;
}

/* "--a' or '--b" into BUF: the options nearest NAME (N bytes; one or two
 * edits), or else those it is a prefix of; empty when none. */
static void suggest(const char *name, size_t n, const struct option *opts, char *buf, size_t cap)
{
    buf[0] = 0;
    if (!opts || n == 0)
        return;
    int best = 3;
    for (const struct option *o = opts; o->name; o++) {
        int d = near(name, n, o->name);
        if (d < best)
            best = d;
    }
    size_t len = 0;
    for (const struct option *o = opts; o->name; o++) {
        int hit = best < 3 ? near(name, n, o->name) == best : strncmp(o->name, name, n) == 0;
        if (!hit)
            continue;
        int w = snprintf(buf + len, cap - len, "%s--%s", len ? "' or '" : "", o->name);
        if (w < 0 || (size_t)w >= cap - len) {
            buf[0] = 0;
            return;
        }
        len += (size_t)w;
    }
}

void tool_no_terminal_input(const char *in, const char *what)
{
    if (strcmp(in, "-") == 0 && isatty(STDIN_FILENO))
        tool_die(EXIT_USAGE, "no %s given, and standard input is a terminal: type %s FILE, "
                             "or pipe one in (%s < FILE)", what, progname, progname);
}

_Noreturn void tool_bad_option(int c, char **argv, const struct option *opts)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    /* A long option is named as given (up to its '='), a short one alone
     * (it may sit in a cluster such as -vq). */
    int is_long = strncmp(arg, "--", 2) == 0;
    int n = is_long ? (int)strcspn(arg, "=") : 0;
    if (c == ':') {
        if (is_long)
            tool_die(EXIT_USAGE, "option '%.*s' needs a value", n, arg);
        tool_die(EXIT_USAGE, "option '-%c' needs a value", optopt);
    }
    if (!is_long && optopt > 0 && optopt < 256)
        tool_die(EXIT_USAGE, "unknown option '-%c'", optopt);
    if (is_long) {
        char alt[256];
        suggest(arg + 2, (size_t)n - 2, opts, alt, sizeof alt);
        if (alt[0])
            tool_die(EXIT_USAGE, "unknown option '%.*s' (did you mean '%s'?)", n, arg, alt);
    }
    tool_die(EXIT_USAGE, "unknown option '%.*s'", is_long ? n : (int)strlen(arg), arg);
}

int tool_exit_code(qs_status st)
{
    switch (st) {
    case QS_OK: return EXIT_OK;
    case QS_ERR_UNSUPPORTED: return EXIT_UNSUPPORTED;
    case QS_ERR_NOMEM:
    case QS_ERR_IO: return EXIT_SYSTEM;
    case QS_ERR_ARG: return EXIT_USAGE;
    case QS_ERR_DEVICE: return EXIT_DEVICE;
    default: return EXIT_DATA;
    }
}

_Noreturn void tool_die_err(const char *where, const qs_error *err)
{
    int code = tool_exit_code(err->code);
    if (!where)
        tool_die(code, "%s", err->msg);
    if (err->line > 0 && err->column > 0)
        tool_die(code, "%s:%ld:%ld: %s", where, err->line, err->column, err->msg);
    if (err->line > 0)
        tool_die(code, "%s:%ld: %s", where, err->line, err->msg);
    if (err->offset >= 0)
        tool_die(code, "%s: byte %lld: %s", where, err->offset, err->msg);
    tool_die(code, "%s: %s", where, err->msg);
}

/* ------------------------------------------------------------ input */

unsigned tool_threads(unsigned want)
{
    static int warned;
    int why = 0;
    const unsigned got = want > 1 ? qs_threads_startable(want, &why) : 1;
    if (got >= want)
        return want;
    /* The limit that stopped the threads' stacks would stop their work
     * next (buffers, workspaces): half of them, the rest left as room. */
    const unsigned use = got > 1 ? got / 2 : 1;
    if (!warned) {
        warned = 1;
        tool_warn("only %u of %u threads could start (%s): running with %u", got, want,
                  strerror(why), use);
    }
    return use;
}

uint32_t tool_parse_u32(const char *s, const char *what, uint32_t lo, uint32_t hi)
{
    uint64_t v;
    if (qs_parse_count(s, lo, hi, &v) != 0)
        tool_die(EXIT_USAGE, "bad %s '%s' (expected %u..%u)", what, s, lo, hi);
    return (uint32_t)v;
}

void tool_check_env(void)
{
    qs_error err;
    qs_error_clear(&err);
    if (qs_env_check(&err) != 0)
        tool_die(EXIT_USAGE, "%s", err.msg);
}

/* A zstd failure while reading: out of memory (exit 4) or a bad frame
 * (exit 1). */
static _Noreturn void zstd_die(const char *name, size_t ret)
{
    if (ZSTD_getErrorCode(ret) == ZSTD_error_memory_allocation)
        tool_die(EXIT_SYSTEM, "%s: out of memory (decompressing)", name);
    tool_die(EXIT_DATA, "%s: zstd: %s", name, ZSTD_getErrorName(ret));
}

size_t tool_max_input(void)
{
    static size_t cached;
    if (cached)
        return cached;
    /* the library's rule, as qs_open applies it to models */
    qs_error err;
    qs_error_clear(&err);
    size_t lim;
    if (qs_max_input(&lim, &err) != 0)
        tool_die(EXIT_USAGE, "%s", err.msg);
    return cached = lim;
}

static _Noreturn void too_big(const char *name, const char *what)
{
    tool_die(EXIT_DATA, "%s: %s larger than the limit of %zu bytes (set QS_MAX_INPUT to "
                        "raise it)", name, what, tool_max_input());
}

static void free_dstream(void *p) { ZSTD_freeDStream(p); }

static char *decompress(const char *name, char *src, size_t n, size_t *len)
{
    const size_t limit = tool_max_input();
    unsigned long long claim = ZSTD_getFrameContentSize(src, n);
    if (claim != ZSTD_CONTENTSIZE_UNKNOWN && claim != ZSTD_CONTENTSIZE_ERROR && claim > limit)
        too_big(name, "decompressed content");
    ZSTD_DStream *ds = tool_hold(ZSTD_createDStream(), free_dstream);
    if (!ds)
        tool_die(EXIT_SYSTEM, "%s: out of memory (starting to decompress)", name);
    size_t cap = n < limit / 4 ? n * 4 + 1024 : limit, used = 0;
    if (claim != ZSTD_CONTENTSIZE_UNKNOWN && claim != ZSTD_CONTENTSIZE_ERROR)
        cap = (size_t)claim + 1;
    char *dst = tool_hold(malloc(cap + 1), free);
    if (!dst)
        tool_die(EXIT_SYSTEM, "%s: out of memory (decompressing to %zu bytes)", name, cap);
    ZSTD_inBuffer in = { src, n, 0 };
    size_t ret = 1;
    while (in.pos < in.size || ret != 0) {
        if (used == cap) {
            if (cap > limit)
                too_big(name, "decompressed content");
            cap = cap > limit / 2 ? limit + 1 : cap * 2;
            tool_unhold(dst);
            char *nd = realloc(dst, cap + 1);
            if (!nd) {
                free(dst);
                tool_die(EXIT_SYSTEM, "%s: out of memory (decompressing, %zu bytes so far)",
                         name, used);
            }
            dst = tool_hold(nd, free);
        }
        ZSTD_outBuffer out = { dst, cap, used };
        size_t before_in = in.pos;
        ret = ZSTD_decompressStream(ds, &out, &in);
        if (ZSTD_isError(ret))
            zstd_die(name, ret);
        int progress = out.pos != used || in.pos != before_in;
        used = out.pos;
        if (!progress && in.pos == in.size && ret != 0)
            tool_die(EXIT_DATA, "%s: truncated zstd stream", name);
    }
    if (used > limit)
        too_big(name, "decompressed content");
    tool_release(ds);
    tool_release(src);
    tool_unhold(dst); /* the caller's now */
    dst[used] = '\0';
    *len = used;
    return dst;
}

/* A whole file (a model is read by the library: tool_open_model). */
char *tool_read_all(const char *path, size_t *len)
{
    int use_stdin = !path || strcmp(path, "-") == 0;
    const char *name = use_stdin ? "(stdin)" : path;
    if (use_stdin)
        tool_check_stdin();
    FILE *f = use_stdin ? stdin : fopen(path, "rb");
    if (!f)
        tool_die(EXIT_SYSTEM, "%s: cannot open: %s", path, strerror(errno));
    const size_t limit = tool_max_input();
    size_t cap = 1 << 16, n = 0;
    char *b = tool_hold(malloc(cap + 1), free);
    if (!b)
        tool_die(EXIT_SYSTEM, "%s: out of memory", name);
    for (;;) {
        if (n == cap) {
            if (cap > limit)
                too_big(name, "input");
            /* One byte past the limit tells "at the limit" from "beyond". */
            size_t nc = cap > limit / 2 ? limit + 1 : cap * 2;
            tool_unhold(b);
            char *nb = realloc(b, nc + 1);
            if (!nb) {
                free(b);
                tool_die(EXIT_SYSTEM, "%s: out of memory (reading, %zu bytes so far)", name, n);
            }
            b = tool_hold(nb, free);
            cap = nc;
        }
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(f))
        tool_die(EXIT_SYSTEM, "%s: read error: %s", name, strerror(errno));
    if (n > limit)
        too_big(name, "input");
    if (!use_stdin)
        fclose(f);
    b[n] = '\0';
    if (n >= 4 && (unsigned char)b[0] == 0x28 && (unsigned char)b[1] == 0xB5 &&
        (unsigned char)b[2] == 0x2F && (unsigned char)b[3] == 0xFD)
        return decompress(name, b, n, len);
    tool_unhold(b); /* the caller's now */
    *len = n;
    return b;
}

static void release_opened(void *p) { qs_opened_free(p); }

void tool_open_model(const char *path, const qs_open_options *opt, qs_opened *o)
{
    qs_open_options oo = opt ? *opt : (qs_open_options){ QS_FMT_UNKNOWN, 0, 0, 0, 0, 0 };
    oo.flags |= QS_OPEN_UNNAMED;
    const int use_stdin = !path || strcmp(path, "-") == 0;
    const char *name = use_stdin ? "(stdin)" : path;
    if (use_stdin)
        tool_check_stdin();
    qs_error err;
    qs_error_clear(&err);
    int rc = use_stdin ? qs_open_file(stdin, name, &oo, o, &err)
                       : qs_open(path, NULL, 0, &oo, o, &err);
    if (rc != 0)
        tool_die_err(name, &err);
    tool_hold(o, release_opened);
}

void tool_compile_opened(const char *name, qs_opened *mo)
{
    if (mo->is_qsm)
        return;
    qs_error err;
    qs_error_clear(&err);
    if (!mo->kind[0]) {
        /* neither a .qsm nor a model a reader takes: what the .qsm loader
         * says of its first bytes (the bad magic number) */
        qs_scorer *bad = qs_scorer_load(mo->source, mo->source_len, &err);
        qs_scorer_free(bad);
        if (bad)
            tool_die(EXIT_DATA, "%s: not a .qsm file", name);
        tool_die_err(name, &err);
    }
    const qs_open_options co = { mo->format, QS_OPEN_NO_SCORER | QS_OPEN_IGNORE_TUNING |
                                             QS_OPEN_UNNAMED, 0, 0, 0, 0 };
    qs_opened conv;
    if (qs_open(NULL, mo->source, mo->source_len, &co, &conv, &err) != 0)
        tool_die_err(name, &err);
    qs_opened_free(mo); /* (still held: it now holds the image) */
    *mo = conv;
}

char *tool_read_model(const char *path, size_t *len)
{
    qs_open_options oo = { QS_FMT_UNKNOWN, QS_OPEN_NO_CONVERT | QS_OPEN_IGNORE_TUNING, 0, 0, 0, 0 };
    qs_opened o;
    tool_open_model(path, &oo, &o);
    char *b = (char *)(o.is_qsm ? o.qsm : o.source);
    *len = o.is_qsm ? o.qsm_len : o.source_len;
    o.qsm = o.source = NULL; /* the caller's now */
    tool_release(&o);
    return b;
}
/* ------------------------------------------------------------ lines */

static size_t read_raw(tool_reader *r, void *dst, size_t n)
{
    size_t got = fread(dst, 1, n, r->f);
    if (got == 0 && ferror(r->f))
        tool_die(EXIT_SYSTEM, "%s: read error: %s", r->name, strerror(errno));
    r->bytes_in += got;
    return got;
}

static void reader_release(void *p)
{
    tool_reader *r = p;
    if (r->f && r->f != stdin)
        fclose(r->f);
    ZSTD_freeDStream(r->zs);
    free(r->raw);
    free(r->buf);
    r->f = NULL;
    r->zs = NULL;
    r->raw = NULL;
    r->buf = NULL;
}

void tool_reader_open(tool_reader *r, const char *path)
{
    memset(r, 0, sizeof *r);
    int use_stdin = strcmp(path, "-") == 0;
    r->name = use_stdin ? "(stdin)" : path;
    if (use_stdin)
        tool_check_stdin();
    r->f = use_stdin ? stdin : fopen(path, "rb");
    if (!r->f)
        tool_die(EXIT_SYSTEM, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    r->size = fstat(fileno(r->f), &st) == 0 && S_ISREG(st.st_mode) ? (long long)st.st_size : -1;
    r->raw_cap = (size_t)1 << 16;
    r->cap = (size_t)1 << 16;
    /* held until tool_reader_close */
    tool_hold(r, reader_release);
    r->raw = malloc(r->raw_cap);
    r->buf = malloc(r->cap);
    if (!r->raw || !r->buf)
        tool_die(EXIT_SYSTEM, "%s: out of memory (line buffer)", r->name);
    r->raw_len = read_raw(r, r->raw, r->raw_cap);
    r->raw_eof = r->raw_len == 0;
    if (r->raw_len >= 4 && r->raw[0] == 0x28 && r->raw[1] == 0xB5 && r->raw[2] == 0x2F &&
        r->raw[3] == 0xFD) {
        r->zs = ZSTD_createDStream();
        if (!r->zs)
            tool_die(EXIT_SYSTEM, "%s: out of memory (line buffer)", r->name);
        ZSTD_initDStream(r->zs);
        r->zret = 1;
    }
}

void tool_reader_close(tool_reader *r)
{
    tool_unhold(r);
    reader_release(r);
}

/* Append text to buf[end .. cap); returns the bytes added, 0 at the end. */
static size_t fill(tool_reader *r)
{
    size_t room = r->cap - r->end;
    if (!r->zs) {
        if (r->raw_pos < r->raw_len) {
            size_t n = r->raw_len - r->raw_pos < room ? r->raw_len - r->raw_pos : room;
            memcpy(r->buf + r->end, r->raw + r->raw_pos, n);
            r->raw_pos += n;
            return n;
        }
        return read_raw(r, r->buf + r->end, room);
    }
    for (;;) {
        if (r->raw_pos == r->raw_len && !r->raw_eof) {
            r->raw_len = read_raw(r, r->raw, r->raw_cap);
            r->raw_pos = 0;
            r->raw_eof = r->raw_len == 0;
        }
        if (r->raw_pos == r->raw_len) {
            if (r->zret != 0)
                tool_die(EXIT_DATA, "%s: truncated zstd stream", r->name);
            return 0;
        }
        ZSTD_inBuffer in = { r->raw, r->raw_len, r->raw_pos };
        ZSTD_outBuffer out = { r->buf + r->end, room, 0 };
        r->zret = ZSTD_decompressStream(r->zs, &out, &in);
        if (ZSTD_isError(r->zret))
            zstd_die(r->name, r->zret);
        r->raw_pos = in.pos;
        if (out.pos > 0)
            return out.pos;
    }
}

/* Next line without its '\n' (a missing final newline is fine).  Returns 1,
 * or 0 at the end of the input. */
int tool_reader_line(tool_reader *r, const char **line, size_t *len)
{
    for (;;) {
        char *nl = r->end > r->start ? memchr(r->buf + r->start, '\n', r->end - r->start) : NULL;
        if (nl || (r->eof && r->end > r->start)) {
            size_t stop = nl ? (size_t)(nl - r->buf) : r->end;
            *line = r->buf + r->start;
            *len = stop - r->start;
            r->start = nl ? stop + 1 : stop;
            r->line++;
            return 1;
        }
        if (r->eof)
            return 0;
        if (r->start > 0) {
            memmove(r->buf, r->buf + r->start, r->end - r->start);
            r->end -= r->start;
            r->start = 0;
        }
        if (r->end == r->cap) {
            if (r->cap >= TOOL_MAX_LINE)
                tool_die(EXIT_DATA, "%s:%ld: line longer than %zu MiB", r->name, r->line + 1,
                         TOOL_MAX_LINE >> 20);
            char *nb = realloc(r->buf, r->cap * 2);
            if (!nb)
                tool_die(EXIT_SYSTEM, "%s: out of memory (line buffer)", r->name);
            r->buf = nb;
            r->cap *= 2;
        }
        size_t n = fill(r);
        r->end += n;
        if (n == 0)
            r->eof = 1;
    }
}

/* ------------------------------------------------------------ models */

static const unsigned char qsm_magic[8];

int tool_is_qsm(const char *buf, size_t len)
{
    return len >= 8 && memcmp(buf, qsm_magic, 8) == 0;
}

const char *tool_reader_list(char *buf, size_t cap, int names)
{
    return qs_reader_list(buf, cap, names ? QS_READERS_NAMES : QS_READERS_DESCRIPTIONS);
}

/* ------------------------------------------------------------ streams */

/* A FILE whose reads give the input's text: the bytes as they are, or, when
 * the input begins with a zstd frame, the decompressed stream (fopencookie;
 * memory: the two zstd buffers, whatever the input's size). */
typedef struct zin {
    FILE *f;
    const char *name;
    ZSTD_DStream *zs;          /* NULL: plain */
    unsigned char *raw;        /* read ahead, not used yet */
    size_t raw_len, raw_pos, raw_cap;
    int raw_eof;
    size_t zret;               /* 0: between frames */
    int bad;                   /* a zstd error was reported */
    FILE *r;                   /* the stream handed out */
    char *rbuf;                /* its buffer */
    long long size;            /* plain text from a regular file: its bytes from
                                  where reading began; else -1 */
    long long base;            /* then the file offset where reading began */
} zin;

/* The streams open now (so that an exit with one open is not a leak). */
static zin *open_zin[16];

#define TOOL_INPUT_BUFFER ((size_t)1 << 20)



static size_t zin_raw(zin *z)
{
    z->raw_len = fread(z->raw, 1, z->raw_cap, z->f);
    z->raw_pos = 0;
    if (z->raw_len == 0) {
        z->raw_eof = 1;
        if (ferror(z->f))
            return (size_t)-1;
    }
    return z->raw_len;
}

static ssize_t zin_read(void *cookie, char *buf, size_t size)
{
    zin *z = cookie;
    if (z->bad)
        return -1;
    if (!z->zs) {
        if (z->raw_pos < z->raw_len) {
            size_t n = z->raw_len - z->raw_pos < size ? z->raw_len - z->raw_pos : size;
            memcpy(buf, z->raw + z->raw_pos, n);
            z->raw_pos += n;
            return (ssize_t)n;
        }
        size_t n = fread(buf, 1, size, z->f);
        if (n == 0 && ferror(z->f))
            return -1;
        return (ssize_t)n;
    }
    for (;;) {
        if (z->raw_pos == z->raw_len && !z->raw_eof && zin_raw(z) == (size_t)-1)
            return -1;
        if (z->raw_pos == z->raw_len) {
            if (z->zret != 0) {
                z->bad = 1;
                errno = EBADMSG;
                tool_input_failed(z->name, "truncated zstd stream");
                return -1;
            }
            return 0;
        }
        ZSTD_inBuffer in = { z->raw, z->raw_len, z->raw_pos };
        ZSTD_outBuffer out = { buf, size, 0 };
        z->zret = ZSTD_decompressStream(z->zs, &out, &in);
        z->raw_pos = in.pos;
        if (ZSTD_isError(z->zret)) {
            z->bad = 1;
            /* out of memory is a system error (exit 4), a bad frame the
             * input's (exit 1) */
            if (ZSTD_getErrorCode(z->zret) == ZSTD_error_memory_allocation) {
                errno = ENOMEM;
            } else {
                errno = EBADMSG;
                tool_input_failed(z->name, ZSTD_getErrorName(z->zret));
            }
            return -1;
        }
        if (out.pos > 0)
            return (ssize_t)out.pos;
    }
}

static int zin_close(void *cookie)
{
    zin *z = cookie;
    for (size_t i = 0; i < sizeof open_zin / sizeof open_zin[0]; i++)
        if (open_zin[i] == z)
            open_zin[i] = NULL;
    int rc = z->f != stdin ? fclose(z->f) : 0;
    ZSTD_freeDStream(z->zs);
    free(z->raw);
    free(z->rbuf);
    free(z);
    return rc;
}

/* The first zstd error of an input, reported where the caller reports a
 * read error (tool_input_error). */
static char zin_msg[256];

void tool_input_failed(const char *name, const char *what)
{
    if (!zin_msg[0])
        snprintf(zin_msg, sizeof zin_msg, "%s: zstd: %s", name, what);
}

FILE *tool_open_input(const char *path, const char **name)
{
    int use_stdin = !path || strcmp(path, "-") == 0;
    *name = use_stdin ? "(stdin)" : path;
    if (use_stdin)
        tool_check_stdin();
    FILE *f = use_stdin ? stdin : fopen(path, "rb");
    if (!f)
        tool_die(EXIT_SYSTEM, "%s: cannot open: %s", path, strerror(errno));
    zin *z = calloc(1, sizeof *z);
    if (!z)
        tool_die(EXIT_SYSTEM, "%s: out of memory (input buffer)", *name);
    /* Listed at once, so that a dying exit from here on (a read error
     * below) leaves it reachable, not leaked. */
    for (size_t i = 0; i < sizeof open_zin / sizeof open_zin[0]; i++)
        if (!open_zin[i]) {
            open_zin[i] = z;
            break;
        }
    if (!(z->raw = malloc(z->raw_cap = (size_t)1 << 16)))
        tool_die(EXIT_SYSTEM, "%s: out of memory (input buffer)", *name);
    z->f = f;
    z->name = *name;
    z->size = -1;
    struct stat st;
    off_t pos0 = ftello(f);
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && pos0 >= 0 && st.st_size >= pos0)
        z->size = (long long)(st.st_size - pos0);
    z->base = pos0 >= 0 ? (long long)pos0 : 0;
    /* The first four bytes say whether it is zstd: read them whole (a
     * pipe may deliver fewer at a time). */
    while (z->raw_len < 4) {
        size_t n = fread(z->raw + z->raw_len, 1, 4 - z->raw_len, f);
        if (n == 0) {
            if (ferror(f))
                tool_die(EXIT_SYSTEM, "%s: read error: %s", *name, strerror(errno));
            z->raw_eof = 1;
            break;
        }
        z->raw_len += n;
    }
    if (z->raw_len == 4 && z->raw[0] == 0x28 && z->raw[1] == 0xB5 && z->raw[2] == 0x2F &&
        z->raw[3] == 0xFD) {
        z->zs = ZSTD_createDStream();
        if (!z->zs)
            tool_die(EXIT_SYSTEM, "%s: out of memory (zstd stream)", *name);
        ZSTD_initDStream(z->zs);
        z->zret = 1;
        z->size = -1;
    }
    cookie_io_functions_t io = { zin_read, NULL, NULL, zin_close };
    FILE *r = fopencookie(z, "r", io);
    if (!r)
        tool_die(EXIT_SYSTEM, "%s: out of memory (input stream)", *name);
    /* Large reads pass through in large pieces (the default buffer would
     * cut them into 8 KiB calls, each a read(2)). */
    z->rbuf = malloc(TOOL_INPUT_BUFFER);
    if (z->rbuf)
        setvbuf(r, z->rbuf, _IOFBF, TOOL_INPUT_BUFFER);
    z->r = r;
    return r;
}

long long tool_input_size(FILE *in)
{
    for (size_t i = 0; i < sizeof open_zin / sizeof open_zin[0]; i++)
        if (open_zin[i] && open_zin[i]->r == in)
            return open_zin[i]->size;
    return -1;
}

int tool_input_file(FILE *in, int *fd, long long *base)
{
    for (size_t i = 0; i < sizeof open_zin / sizeof open_zin[0]; i++) {
        const zin *z = open_zin[i];
        if (!z || z->r != in)
            continue;
        /* plain, a regular file, and nothing handed out yet (the first
         * read hands out the bytes read ahead first) */
        if (z->zs || z->size < 0 || z->raw_pos != 0 || z->bad)
            return 0;
        *fd = fileno(z->f);
        *base = z->base;
        return *fd >= 0;
    }
    return 0;
}

void tool_input_file_read(FILE *in, long long n)
{
    for (size_t i = 0; i < sizeof open_zin / sizeof open_zin[0]; i++) {
        zin *z = open_zin[i];
        if (z && z->r == in && !z->zs && z->size >= 0) {
            z->raw_pos = z->raw_len;
            (void)fseeko(z->f, (off_t)(z->base + n), SEEK_SET);
        }
    }
}

static const unsigned char qsm_magic[8] = { 0x89, 'Q', 'S', 'M', '\r', '\n', 0x1A, '\n' };

int tool_input_is_qsm(FILE *in)
{
    for (size_t i = 0; i < sizeof open_zin / sizeof open_zin[0]; i++)
        if (open_zin[i] && open_zin[i]->r == in)
            return !open_zin[i]->zs && open_zin[i]->raw_len >= 4 &&
                   memcmp(open_zin[i]->raw, qsm_magic, 4) == 0;
    return 0;
}

int tool_file_is_qsm(const char *path)
{
    unsigned char b[8];
    FILE *f = strcmp(path, "-") == 0 ? NULL : fopen(path, "rb");
    if (!f)
        return 0;
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    return n == sizeof b && memcmp(b, qsm_magic, sizeof b) == 0;
}

_Noreturn void tool_input_error(const char *name, int err)
{
    if (zin_msg[0])
        tool_die(EXIT_DATA, "%s", zin_msg);
    if (err == ENOMEM)
        tool_die(EXIT_SYSTEM, "%s: out of memory (reading)", name);
    tool_die(EXIT_SYSTEM, "%s: read error: %s", name, strerror(err));
}

/* ------------------------------------------------------------ progress */

static int prog_started;
static int prog_show;                 /* 1: redrawn on a terminal; 2: a line a second; 0: none */
static const char *prog_what = "items";
static long long prog_total = -1;
static double prog_t0, prog_last;
static char prog_line[2][256];        /* the current line is prog_line[prog_cur] */
static volatile sig_atomic_t prog_cur = -1;
static volatile sig_atomic_t prog_drawn; /* a redrawn line is on the terminal */
static int prog_shown;                /* the current line has been shown */

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* SIGUSR1: the current line, on a line of its own (write(2) only). */
static void on_usr1(int sig)
{
    (void)sig;
    int e = errno;
    int i = prog_cur;
    if (i >= 0) {
        const char *l = prog_line[i];
        size_t n = 0;
        while (l[n])
            n++;
        ssize_t w = 0;
        if (prog_drawn)
            w += write(STDERR_FILENO, "\r", 1);
        w += write(STDERR_FILENO, l, n);
        w += write(STDERR_FILENO, prog_drawn ? "\033[K\n" : "\n", prog_drawn ? 4 : 1);
        (void)w;
    }
    errno = e;
}

static void progress_clear(void)
{
    if (prog_drawn) {
        fputs("\r\033[K", stderr);
        prog_drawn = 0;
    }
}

/* Make line `text` the current one, and show it as the mode says. */
static void progress_set(const char *text, int force)
{
    int next = prog_cur == 0 ? 1 : 0;
    snprintf(prog_line[next], sizeof prog_line[next], "%s", text);
    prog_cur = next;
    prog_shown = 0;
    if (!prog_show)
        return;
    double now = mono_s();
    if (!force && prog_last > 0 && now - prog_last < (prog_show == 1 ? 0.2 : 1.0))
        return;
    prog_last = now;
    prog_shown = 1;
    if (prog_show == 1) {
        fprintf(stderr, "\r%s\033[K", prog_line[next]);
        prog_drawn = 1;
    } else {
        fprintf(stderr, "%s\n", prog_line[next]);
    }
    fflush(stderr);
}

void tool_progress_start(int mode, const char *what)
{
    prog_what = what;
    prog_t0 = mono_s();
    if (mode == TOOL_PROGRESS_AUTO)
        prog_show = isatty(STDERR_FILENO) && !isatty(STDOUT_FILENO) ? 1 : 0;
    else if (mode == TOOL_PROGRESS_ON)
        prog_show = isatty(STDERR_FILENO) ? 1 : 2;
    else
        prog_show = 0;
    char l[128];
    snprintf(l, sizeof l, "%s: 0 %s, starting", progname, what);
    int next = prog_cur == 0 ? 1 : 0;
    snprintf(prog_line[next], sizeof prog_line[next], "%s", l);
    prog_cur = next;
    /* (a SIGUSR1 ignored by whoever started us stays ignored) */
    struct sigaction old, sa;
    if (sigaction(SIGUSR1, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    prog_started = 1;
}

void tool_progress_total(long long bytes) { prog_total = bytes; }

/* "456.7 MB" (decimal units, as dd and df -H). */
static void human(char *dst, size_t cap, double b)
{
    static const char *const unit[] = { "B", "kB", "MB", "GB", "TB" };
    int u = 0;
    while (b >= 1000 && u < 4) {
        b /= 1000;
        u++;
    }
    snprintf(dst, cap, u == 0 ? "%.0f %s" : "%.1f %s", b, unit[u]);
}

void tool_progress_count(unsigned long long items, unsigned long long bytes)
{
    if (!prog_started && !prog_show)
        return;
    double t = mono_s() - prog_t0;
    char done[32], total[48] = "", rate[32], l[256];
    human(done, sizeof done, (double)bytes);
    if (prog_total > 0) {
        char tb[32];
        human(tb, sizeof tb, (double)prog_total);
        snprintf(total, sizeof total, " of %s (%.0f%%)", tb,
                 100.0 * (double)bytes / (double)prog_total);
    }
    human(rate, sizeof rate, t > 0 ? (double)bytes / t : 0);
    snprintf(l, sizeof l, "%s: %llu %s, %s%s, %s/s, %.1f s", progname, items, prog_what, done,
             total, rate, t);
    progress_set(l, 0);
}

void tool_progress_add(const char *out, size_t out_len, size_t in_bytes)
{
    static unsigned long long items, bytes;
    if (!prog_started && !prog_show)
        return;
    for (const char *p = out, *end = out + out_len; p < end; p++) {
        p = memchr(p, '\n', (size_t)(end - p));
        if (!p)
            break;
        items++;
    }
    bytes += in_bytes;
    tool_progress_count(items, bytes);
}

void tool_progress_phase(const char *fmt, ...)
{
    if (!prog_started && !prog_show)
        return;
    char what[160], l[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(l, sizeof l, "%s: %s (at %.1f s)", progname, what, mono_s() - prog_t0);
    progress_set(l, 1);
}

void tool_progress_done(void)
{
    if (prog_show == 2 && prog_cur >= 0 && !prog_shown)
        fprintf(stderr, "%s\n", prog_line[prog_cur]);
    prog_shown = 1;
    progress_clear();
}

/* ------------------------------------------------------------ output */

/* The temporary file to remove when the program dies, kept in a static
 * buffer so that the signal handler needs nothing but unlink(). */
static char sig_tmp[4096 + 32];
static volatile sig_atomic_t sig_tmp_set;
static const int cleanup_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE,
                                       SIGXFSZ, SIGALRM, SIGUSR1, SIGUSR2 };

static void cleanup_pending(void)
{
    if (pending_out)
        tool_out_abort(pending_out);
}

static void on_signal(int sig)
{
    if (sig_tmp_set)
        unlink(sig_tmp);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void catch_signals(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    atexit(cleanup_pending);
    for (size_t i = 0; i < sizeof cleanup_signals / sizeof cleanup_signals[0]; i++) {
        struct sigaction old, sa;
        /* SIGUSR1 asks for a progress line where the tool gives one. */
        if (cleanup_signals[i] == SIGUSR1 && prog_started)
            continue;
        /* A signal ignored by whoever started us stays ignored (nohup,
         * `trap '' XFSZ`): then the failing write is reported instead. */
        if (sigaction(cleanup_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(cleanup_signals[i], &sa, NULL);
    }
}

/* Longest file name component (NAME_MAX on Linux file systems). */
#define NAME_LIMIT 255

void tool_out_open(tool_out *o, const char *path, int binary)
{
    memset(o, 0, sizeof *o);
    if (!path || strcmp(path, "-") == 0) {
        if (std_closed & 2)
            tool_die(EXIT_SYSTEM, "(stdout): cannot write: standard output is closed");
        if (binary && isatty(STDOUT_FILENO))
            tool_die(EXIT_USAGE, "refusing to write binary output to a terminal (use -o FILE)");
        o->fp = stdout;
        return;
    }
    if (!*path)
        tool_die(EXIT_SYSTEM, "'': cannot create: %s", strerror(ENOENT));
    o->path = strdup(path);
    if (!o->path)
        tool_die(EXIT_SYSTEM, "%s: out of memory", path);
    /* From here on a dying exit frees what o holds (tool_out_abort). */
    pending_out = o;
    struct stat st, lst;
    int exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
        tool_die(EXIT_SYSTEM, "%s: cannot write: %s", path, strerror(EISDIR));
    int is_link = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode);
    char *real = is_link ? realpath(path, NULL) : NULL;
    o->dest = real; /* (the rename's target, when path is a link) */
    /* A device, a named pipe, or a name under /dev or /proc (/dev/stdout is
     * a link to /proc/self/fd/1, which may name a regular file): a rename
     * would replace the node, or the link, so write to it in place. */
    if ((exists && !S_ISREG(st.st_mode)) || strncmp(path, "/dev/", 5) == 0 ||
        strncmp(path, "/proc/", 6) == 0 || (is_link && !real)) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (fd < 0)
            tool_die(EXIT_SYSTEM, "%s: cannot open: %s", path, strerror(errno));
        if (binary && isatty(fd))
            tool_die(EXIT_USAGE, "refusing to write binary output to a terminal (%s)", path);
        o->fp = fdopen(fd, binary ? "wb" : "w");
        if (!o->fp)
            tool_die(EXIT_SYSTEM, "%s: %s", path, strerror(errno));
        o->direct = 1;
        free(real);
        o->dest = NULL;
        return;
    }
    /* A link to a regular file: replace the file, keep the link. */
    if (real)
        path = real;
    /* The temporary file lives beside the destination (rename stays within
     * one file system); its name is the destination's, cut short enough that
     * it stays within NAME_LIMIT bytes. */
    size_t n = strlen(path);
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    size_t base = n - dirlen;
    const char suffix[] = ".tmpXXXXXX";
    if (base > NAME_LIMIT - (sizeof suffix - 1))
        base = NAME_LIMIT - (sizeof suffix - 1);
    if (dirlen + base + sizeof suffix > sizeof sig_tmp)
        tool_die(EXIT_SYSTEM, "%s: cannot create: %s", path, strerror(ENAMETOOLONG));
    o->tmp = malloc(dirlen + base + sizeof suffix);
    if (!o->tmp)
        tool_die(EXIT_SYSTEM, "%s: out of memory", path);
    memcpy(o->tmp, path, dirlen + base);
    memcpy(o->tmp + dirlen + base, suffix, sizeof suffix);
    /* (with a link, the rename goes to its target, o->dest; messages keep
     * the name given) */
    catch_signals();
    /* No signal between creating the file and recording its name. */
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    int fd = mkstemp(o->tmp);
    int e = errno;
    if (fd >= 0) {
        memcpy(sig_tmp, o->tmp, strlen(o->tmp) + 1);
        sig_tmp_set = 1;
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) {
        free(o->tmp);
        o->tmp = NULL;
        tool_die(EXIT_SYSTEM, "%s: cannot create: %s", path, strerror(e));
    }
    o->fp = fdopen(fd, binary ? "wb" : "w");
    if (!o->fp) {
        close(fd);
        tool_die(EXIT_SYSTEM, "%s: %s", path, strerror(errno));
    }
}

void tool_out_write(tool_out *o, const void *buf, size_t n)
{
    if (n && fwrite(buf, 1, n, o->fp) != n) {
        if (errno == EPIPE && o->fp == stdout)
            tool_exit(EXIT_OK);
        tool_die(EXIT_SYSTEM, "%s: write error: %s", o->path ? o->path : "(stdout)",
                 strerror(errno));
    }
}

/* Close o->fp once, whatever happens; 0 or an errno value. */
static int close_out(tool_out *o, int sync)
{
    FILE *fp = o->fp;
    o->fp = NULL;
    int e = 0;
    if (fflush(fp) != 0 || ferror(fp))
        e = errno ? errno : EIO;
    else if (sync && fsync(fileno(fp)) != 0)
        e = errno;
    if (fclose(fp) != 0 && !e)
        e = errno;
    return e;
}

void tool_out_commit(tool_out *o)
{
    if (o->fp == stdout) {
        tool_close_stdout();
        return;
    }
    errno = 0;
    int e = close_out(o, !o->direct);
    if (e)
        tool_die(EXIT_SYSTEM, "%s: write error: %s", o->path, strerror(e));
    if (!o->direct) {
        /* mkstemp creates 0600; give the file the usual permissions. */
        mode_t um = umask(0);
        umask(um);
        chmod(o->tmp, 0666 & ~um);
        if (rename(o->tmp, o->dest ? o->dest : o->path) != 0)
            tool_die(EXIT_SYSTEM, "%s: cannot rename the temporary file to it: %s", o->path,
                     strerror(errno));
        sig_tmp_set = 0;
        free(o->tmp);
        o->tmp = NULL;
    }
    if (pending_out == o)
        pending_out = NULL;
    free(o->path);
    free(o->dest);
    o->path = o->dest = NULL;
}

void tool_out_abort(tool_out *o)
{
    if (o->fp && o->fp != stdout)
        fclose(o->fp);
    o->fp = NULL;
    if (o->tmp) {
        unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
        sig_tmp_set = 0;
    }
    free(o->path);
    free(o->dest);
    o->path = o->dest = NULL;
    if (pending_out == o)
        pending_out = NULL;
}

void tool_close_stdout(void)
{
    if (std_closed & 2)
        tool_die(EXIT_SYSTEM, "(stdout): cannot write: standard output is closed");
    if (fflush(stdout) != 0 || ferror(stdout)) {
        if (errno == EPIPE)
            tool_exit(EXIT_OK);
        tool_die(EXIT_SYSTEM, "write error on standard output: %s", strerror(errno));
    }
    if (fclose(stdout) != 0 && errno != EPIPE)
        tool_die(EXIT_SYSTEM, "write error on standard output: %s", strerror(errno));
}
