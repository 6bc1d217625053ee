/* tool.h: the helpers every qs-* program shares: program-name messages,
 * exit codes, "-" = stdin/stdout, whole-file reads (with transparent zstd),
 * checked writes and atomic output files (temporary name, then rename). */
#ifndef QS_TOOL_H
#define QS_TOOL_H

#include "qs.h"
#include <stdio.h>
#include <zstd.h>

/* Exit codes, documented in the README. */
enum {
    EXIT_OK = 0,
    EXIT_DATA = 1,        /* malformed or out-of-limit input (model, documents, scores) */
    EXIT_USAGE = 2,       /* bad command line */
    EXIT_UNSUPPORTED = 3, /* a model that cannot be scored exactly: refused */
    EXIT_SYSTEM = 4,      /* cannot open/read/write a file, out of memory */
    EXIT_DEVICE = 5       /* the accelerator: no device or driver, out of device memory,
                             a failed launch or copy */
};

/* What a tool holds while it runs (the model's bytes, scorers, workspaces,
 * buffers) is registered here, so that every way out frees it: tool_die,
 * tool_exit and the quiet exit on a closed pipe release the held blocks,
 * newest first, before exit().  A leak checker's verdict on an error path
 * then follows from the code, not from what the stack happens to hold when
 * the process ends (the sanitizer pass of `make check` does not scan stacks
 * and registers: a block still held at exit is always a leak there).
 * tool_hold(p, release) returns p (NULL: nothing held); tool_release(p)
 * releases p now and forgets it; tool_unhold(p) forgets it (freed or handed
 * on by the caller).  Nothing is released while other threads run (the exit
 * is then _exit, which checks nothing). */
typedef void (*tool_release_fn)(void *);
void *tool_hold(void *p, tool_release_fn release);
void tool_release(void *p);
void tool_unhold(void *p);
/* Release what is held, then exit(code) (_exit while threads run). */
_Noreturn void tool_exit(int code);

/* Set the program name used as the message prefix (call first in main). */
void tool_init(const char *progname);
const char *tool_name(void);

/* "prog: message\n" on stderr. */
void tool_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* tool_warn, then exit(code) (or, while threads run, _exit(code): see
 * tool_threads_running).  A usage error (EXIT_USAGE) is followed by the
 * line "Try 'PROG --help' for more information." */
_Noreturn void tool_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* After getopt_long returned '?' or ':' (with opterr = 0 and an optstring
 * that begins with ':'): "unknown option 'X'" or "option 'X' needs a value",
 * and the Try line; exit 2.  An unknown long option close to one of OPTS
 * (a prefix of several, or one or two letters off) gets "(did you mean
 * '--Y'?)". */
struct option;
_Noreturn void tool_bad_option(int c, char **argv, const struct option *opts);
/* Dies with a usage error when IN is "-" and standard input is a terminal:
 * a model is read whole, so a tool would wait silently for one typed in. */
void tool_no_terminal_input(const char *in, const char *what);
/* on = 1 while other threads may be inside stdio (reading the input):
 * a dying exit then skips exit()'s stdio teardown, which would pull the
 * streams from under them (a crash), with _exit.  qs-score dies there only
 * when its model fails to load (before any score is written) or when
 * writing fails (the output is lost then anyway); a bad line ends the
 * process after the threads. */
void tool_threads_running(int on);
/* "prog: WHERE:LINE: msg" (or "WHERE:LINE:COLUMN: msg" when err->column is set, or "WHERE: byte N: msg", or "WHERE: msg") from a
 * library error, then exit with the code that matches err->code. */
_Noreturn void tool_die_err(const char *where, const qs_error *err);
/* A number given to an option or an environment variable: decimal digits
 * only, lo..hi; anything else (an empty value, a sign, a space, a suffix)
 * dies with "bad WHAT 'S' (expected LO..HI)", a usage error (exit 2).  The
 * one rule of every tool: an option's empty value is never a default (an
 * environment variable set to "" counts as unset: the caller skips it). */
uint32_t tool_parse_u32(const char *s, const char *what, uint32_t lo, uint32_t hi);
/* The library's environment variables (qs_env_check: QS_CPU_CLASS): a bad
 * value dies as a usage error (exit 2), as QS_BACKEND's does. */
void tool_check_env(void);
/* The threads a team of `want` started from this thread can have
 * (qs_threads_startable): want, or, when the system refuses to start that
 * many (an address-space or process limit), half of those that could, with
 * the warning "only K of N threads could start (REASON): running with K/2"
 * (once per process).
 * The OpenMP runtime would end the process (exit 1) instead. */
unsigned tool_threads(unsigned want);
/* Exit code for a library status. */
int tool_exit_code(qs_status st);

/* Die (exit 4) if standard input was closed when the program started (it is
 * then held open on /dev/null); call before reading "-". */
void tool_check_stdin(void);

/* Read a whole file ("-" = stdin) into memory, NUL-terminated; a zstd frame
 * is decompressed transparently.  Dies with a message on failure: exit 1
 * when the input, or its decompressed content, is larger than
 * tool_max_input() bytes.  (Documents and samples: a model is opened by
 * the library, tool_open_model.) */
char *tool_read_all(const char *path, size_t *len);
/* Open the model file at path ("-" = stdin) through the library's one open
 * path, as the Python binding opens one (qs_open, qs_open_file; opt as
 * there, NULL: the defaults): read within QS_MAX_INPUT and stopped where
 * the first bytes show that no model starts so (/dev/zero is refused after
 * its first 64 KiB), a .qsm no further than one byte past the size its
 * header records, a zstd frame decompressed to the same bound, then (as
 * opt's flags say) recognised only (QS_OPEN_NO_CONVERT), or converted,
 * compiled and loaded.  Dies with the library's message, the file named
 * ("PATH:LINE: what"), and the exit code of its status.  *o is held
 * (tool_hold): tool_release(o) frees it, and so does every exit. */
void tool_open_model(const char *path, const qs_open_options *opt, qs_opened *o);
/* A model opened with QS_OPEN_NO_CONVERT (by tool_open_model) made a .qsm
 * image in place: a .qsm left as it is, any other model converted and
 * compiled in memory with qs-compile's defaults (the image `qs-compile
 * MODEL` writes: the same scores), no scorer loaded.  Dies, naming the
 * input `name`, where it is no model (the .qsm loader's message: "byte 0:
 * not a .qsm file (bad magic number)") or its reader refuses it. */
void tool_compile_opened(const char *name, qs_opened *mo);
/* The bytes of the model file at path, as tool_open_model reads them with
 * QS_OPEN_NO_CONVERT (a .qsm's, or the plain bytes of anything else),
 * NUL-terminated; the caller frees them. */
char *tool_read_model(const char *path, size_t *len);

/* The limit on whole-file inputs (models, .qsm files, reversal samples):
 * the environment variable QS_MAX_INPUT (bytes; suffixes K, M, G), 1 GiB
 * when unset (qs_max_input, the limit qs_open applies).  A bad value is a
 * usage error. */
size_t tool_max_input(void);

/* Streaming line reader over a file or "-" (stdin): plain text or a zstd
 * stream (recognised by its magic number), so memory follows the longest
 * line, not the file.  Read and decompression errors die naming the file. */
#define TOOL_MAX_LINE ((size_t)256 << 20) /* documented limit on one line */
typedef struct tool_reader {
    FILE *f;
    const char *name;        /* for messages */
    ZSTD_DStream *zs;        /* non-NULL: decompressing */
    unsigned char *raw;      /* bytes read but not yet used */
    size_t raw_len, raw_pos, raw_cap;
    int raw_eof;
    size_t zret;             /* last ZSTD_decompressStream result (0: frame complete) */
    char *buf;               /* text: lines are cut from buf[start .. end) */
    size_t cap, start, end;
    int eof;
    long line;               /* number of the last line returned */
    unsigned long long bytes_in; /* bytes read from the file (compressed or not) */
    long long size;          /* the file's size when it is a regular file, else -1 */
} tool_reader;
void tool_reader_open(tool_reader *r, const char *path);
/* Next line without its '\n' (a missing final newline is fine): 1, or 0 at
 * the end.  A line longer than TOOL_MAX_LINE is an error (exit 1). */
int tool_reader_line(tool_reader *r, const char **line, size_t *len);
void tool_reader_close(tool_reader *r);

/* Open a file ("-": standard input, which must not have been closed) for
 * reading as a stream of text: when it begins with a zstd frame, reads give
 * the decompressed bytes (streamed: memory does not grow with the input).
 * *name is set to the name for messages ("(stdin)" for "-").  Dies on
 * failure to open.  Close with fclose (standard input itself stays open).
 * A read that fails sets the stream's error flag; report it with
 * tool_input_error. */
FILE *tool_open_input(const char *path, const char **name);
/* For a stream from tool_open_input: the bytes it will give in all when it
 * is plain text from a regular file (counted from where reading began),
 * else -1 (zstd, a pipe, a terminal). */
long long tool_input_size(FILE *in);
/* Whether `in` (tool_open_input) is the plain text of a regular file of
 * which nothing has been read yet: 1 with its descriptor and the file
 * offset where the input begins (a caller may then read it with pread(2),
 * ranges at a time, from several threads), else 0. */
int tool_input_file(FILE *in, int *fd, long long *base);
/* After such reads: the input's first n bytes were read (a standard input
 * shared with others is left where reading ended, as stdio leaves it). */
void tool_input_file_read(FILE *in, long long n);
/* For a stream from tool_open_input: whether its first bytes are a .qsm's
 * magic number (a model given where documents belong). */
int tool_input_is_qsm(FILE *in);
/* Whether the file at path (not "-") begins with a .qsm's magic number. */
int tool_file_is_qsm(const char *path);
/* Die for a failed read of an input opened by tool_open_input: a corrupt or
 * truncated zstd stream (exit 1, what zstd said), else the system error
 * `err` (exit 4). */
_Noreturn void tool_input_error(const char *name, int err);
/* (Internal: record a decompression failure for tool_input_error.) */
void tool_input_failed(const char *name, const char *what);

/* Whether buf holds a .qsm (its magic number).  (What kind of model a file
 * is: qs_opened's kind, tool_open_model.) */
int tool_is_qsm(const char *buf, size_t len);
/* The foreign formats of the readers' table, for messages, into buf[cap]:
 * their command-line names ("lightgbm, ..., or quickrank (ranklib)") when
 * names is nonzero, else their descriptions ("LightGBM text, ..."). */
const char *tool_reader_list(char *buf, size_t cap, int names);

/* Output that appears only when complete: writes go to a temporary file in
 * the destination's directory, renamed over `path` by tool_out_commit().
 * path "-" (or NULL) means stdout, written directly; so are a character or
 * block device, a FIFO and anything named under /dev/ or /proc/ (a rename
 * would replace them); a link to a regular file has its target replaced; a
 * directory or "" is refused (exit 4).  The temporary name is the destination's, cut to fit
 * 255 bytes, + ".tmpXXXXXX"; it is removed on any exit through tool_die and
 * on SIGINT, TERM, HUP, PIPE, XFSZ, ALRM, USR1 and USR2 (unless ignored). */
typedef struct tool_out {
    FILE *fp;
    char *path, *tmp;
    char *dest; /* where the rename goes when path is a link (else NULL) */
    int direct; /* a device or FIFO, written in place (no temporary file) */
} tool_out;
void tool_out_open(tool_out *o, const char *path, int binary);
void tool_out_write(tool_out *o, const void *buf, size_t n);
void tool_out_commit(tool_out *o);
/* Remove the temporary file (registered for exit paths automatically). */
void tool_out_abort(tool_out *o);

/* Progress on standard error, as zstd and dd give it.  mode: TOOL_PROGRESS_AUTO
 * (shown when standard error is a terminal and standard output is not),
 * _ON (--progress: on a terminal, one line redrawn; elsewhere one line a
 * second) or _OFF (--no-progress).  Whatever the mode, SIGUSR1 prints the
 * current line once, on a line of its own, and the work goes on (the
 * handler is installed by tool_progress_start: call it early).  `what`
 * names the items counted ("documents", "lines").  A warning clears a
 * line being redrawn first. */
enum { TOOL_PROGRESS_OFF = 0, TOOL_PROGRESS_ON = 1, TOOL_PROGRESS_AUTO = 2 };
void tool_progress_start(int mode, const char *what);
/* The input's size in bytes, when known (-1: unknown). */
void tool_progress_total(long long bytes);
/* Counts so far (cumulative): items and input bytes. */
void tool_progress_count(unsigned long long items, unsigned long long bytes);
/* Add to the counts: one item per line of out[0 .. out_len) (qs-score: a
 * document per line written), and in_bytes bytes of input. */
void tool_progress_add(const char *out, size_t out_len, size_t in_bytes);
/* For work without counts: what is being done now ("converting m.txt"). */
void tool_progress_phase(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The work is over: clear a redrawn line (forced elsewhere: a last line). */
void tool_progress_done(void);

/* Flush and close stdout, dying on a write error (EPIPE exits quietly). */
void tool_close_stdout(void);

#endif
