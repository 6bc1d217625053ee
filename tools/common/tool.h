/* tool.h: the helpers every qs-* program shares: program-name messages,
 * exit codes, "-" = stdin/stdout, whole-file reads (with transparent zstd),
 * checked writes and atomic output files (temporary name, then rename). */
#ifndef QS_TOOL_H
#define QS_TOOL_H

#include "qs.h"
#include <stdio.h>

/* Exit codes, documented in the README. */
enum {
    EXIT_OK = 0,
    EXIT_DATA = 1,        /* malformed or out-of-limit input (model, documents, scores) */
    EXIT_USAGE = 2,       /* bad command line */
    EXIT_UNSUPPORTED = 3, /* a model that cannot be scored exactly: refused */
    EXIT_SYSTEM = 4       /* cannot open/read/write a file, out of memory */
};

/* Set the program name used as the message prefix (call first in main). */
void tool_init(const char *progname);
const char *tool_name(void);

/* "prog: message\n" on stderr. */
void tool_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* tool_warn, then exit(code). */
_Noreturn void tool_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "prog: WHERE:LINE: msg" (or "WHERE: byte N: msg", or "WHERE: msg") from a
 * library error, then exit with the code that matches err->code. */
_Noreturn void tool_die_err(const char *where, const qs_error *err);
/* Exit code for a library status. */
int tool_exit_code(qs_status st);

/* Read a whole file ("-" = stdin) into memory, NUL-terminated; a zstd frame
 * is decompressed transparently.  Dies with a message on failure. */
char *tool_read_all(const char *path, size_t *len);

/* Output that appears only when complete: writes go to a temporary file in
 * the destination's directory, renamed over `path` by tool_out_commit().
 * path "-" (or NULL) means stdout, written directly. */
typedef struct tool_out {
    FILE *fp;
    char *path, *tmp;
} tool_out;
void tool_out_open(tool_out *o, const char *path, int binary);
void tool_out_write(tool_out *o, const void *buf, size_t n);
void tool_out_commit(tool_out *o);
/* Remove the temporary file (registered for exit paths automatically). */
void tool_out_abort(tool_out *o);

/* Flush and close stdout, dying on a write error (EPIPE exits quietly). */
void tool_close_stdout(void);

#endif
