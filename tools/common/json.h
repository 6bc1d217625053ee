/* json.h: the tools' JSON writer (qs-compile --info --json), and the
 * growing text buffer under it.  A report is built in memory and written
 * only once all of it is right, so an error leaves nothing half-written:
 * strings are escaped and always valid UTF-8 (a byte that is not part of a
 * well-formed UTF-8 sequence is written as U+FFFD), objects and arrays are
 * balanced, a key comes only in an object and is followed by one value,
 * commas go between items; a failed allocation or a misuse is remembered
 * (nothing more is added) and reported by tool_json_finish.  Numbers that
 * JSON cannot hold (NaN, infinities) are written as null. */
#ifndef QS_TOOL_JSON_H
#define QS_TOOL_JSON_H

#include <stddef.h>
#include <stdint.h>

/* Text grown as needed; oom set (and nothing more added) once an
 * allocation failed.  Zero-initialised is empty. */
typedef struct tool_buf {
    char *p;        /* NUL-terminated when len > 0 */
    size_t len, cap;
    int oom;
} tool_buf;
void tool_buf_put(tool_buf *b, const char *s, size_t n);
void tool_buf_printf(tool_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s[0 .. n) as a JSON string literal, quotes included (escaped, UTF-8 kept
 * valid as above); also the text report's quoting of names. */
void tool_buf_quote(tool_buf *b, const char *s, size_t n);
void tool_buf_free(tool_buf *b);

#define TOOL_JSON_DEPTH 32

typedef struct tool_json {
    tool_buf b;
    const char *bad;                 /* the first misuse, or NULL */
    unsigned depth;
    char open[TOOL_JSON_DEPTH];      /* '{' or '[' at each depth */
    unsigned char some[TOOL_JSON_DEPTH]; /* an item was written at this depth */
    int after_key;                   /* a key was written: its value comes next */
    int done;                        /* the top-level value is complete */
    int brk;                         /* the next item (or end) starts a line ... */
    unsigned indent;                 /* ... indented this much */
} tool_json;

/* Zero-initialise, or: */
void tool_json_init(tool_json *j);
void tool_json_object(tool_json *j);   /* { */
void tool_json_array(tool_json *j);    /* [ */
void tool_json_end(tool_json *j);      /* } or ], whichever is open */
void tool_json_key(tool_json *j, const char *key);
void tool_json_str(tool_json *j, const char *s);          /* NULL: null */
void tool_json_str_n(tool_json *j, const char *s, size_t n);
void tool_json_u64(tool_json *j, uint64_t v);
void tool_json_i64(tool_json *j, int64_t v);
void tool_json_num(tool_json *j, double v);               /* %.6g */
void tool_json_bool(tool_json *j, int v);
void tool_json_null(tool_json *j);
/* Layout only: the next item (or the closing bracket) starts a new line,
 * indented by `indent` spaces. */
void tool_json_break(tool_json *j, unsigned indent);
/* The document, complete and valid: 0 with *text (NUL-terminated, a final
 * newline added; owned by j) and *len.  -1 with *why: "out of memory", or
 * the misuse ("a key outside an object", "unbalanced", ...). */
int tool_json_finish(tool_json *j, const char **text, size_t *len, const char **why);
void tool_json_free(tool_json *j);

#endif
