/* json.h: a small pull tokenizer for JSON text held in memory (internal to
 * libqs), used by the model converters.
 *
 * Why a pull tokenizer rather than a document tree: models can be hundreds of
 * megabytes, and converters need each number's raw text (a threshold must be
 * parsed once, with strtof for float32 models, never through a double).  The
 * reader hands out tokens that point into the caller's buffer; it allocates
 * nothing, runs in linear time, never reads past `len` (the buffer need not be
 * NUL-terminated) and limits nesting with an explicit depth instead of
 * recursion.  Every error carries the byte offset where it was found.
 *
 * Usage: qs_json_init(), then qs_json_next() until it returns a token of type
 * QS_JSON_END.  Inside an object, each member arrives as a QS_JSON_KEY token
 * followed by the tokens of its value.  qs_json_skip() passes over a value the
 * caller does not need (still checking its syntax).
 *
 * With QS_JSON_UBJSON the same reader reads UBJSON (Universal Binary JSON,
 * draft 12, as XGBoost writes it: big-endian numbers, optimised containers
 * with '$' type and '#' count) and hands out the same token stream; its
 * numbers are binary and carried in the token (num_kind), which the
 * qs_json_get_* functions read exactly. */
#ifndef QS_JSON_H
#define QS_JSON_H

#include "model/model.h"

#include <stddef.h>
#include <stdint.h>

/* Deepest nesting the reader can track; qs_json_init() may ask for less. */
#define QS_JSON_MAX_DEPTH 64u

/* Flags for qs_json_init(). */
#define QS_JSON_NONFINITE 0x1u /* accept NaN, Infinity, -Infinity as numbers (XGBoost writes them) */
#define QS_JSON_UBJSON    0x2u /* the buffer holds UBJSON, not JSON text */

/* How a NUMBER token holds its value. */
typedef enum qs_json_num_kind {
    QS_JSON_NUM_TEXT = 0,  /* decimal text (JSON; UBJSON 'H') */
    QS_JSON_NUM_INT,       /* UBJSON integer: ival */
    QS_JSON_NUM_F32,       /* UBJSON float32: dval (exactly a float) */
    QS_JSON_NUM_F64        /* UBJSON float64: dval */
} qs_json_num_kind;

typedef enum qs_json_type {
    QS_JSON_END = 0,     /* the top-level value is complete and only whitespace follows */
    QS_JSON_OBJECT,      /* '{' */
    QS_JSON_OBJECT_END,  /* '}' */
    QS_JSON_ARRAY,       /* '[' */
    QS_JSON_ARRAY_END,   /* ']' */
    QS_JSON_KEY,         /* a member name; its value follows */
    QS_JSON_STRING,
    QS_JSON_NUMBER,
    QS_JSON_TRUE,
    QS_JSON_FALSE,
    QS_JSON_NULL
} qs_json_type;

typedef struct qs_json_token {
    qs_json_type type;
    /* NUMBER: the number's text as written.  STRING, KEY: the characters
     * between the quotes, escapes not decoded.  Others: the punctuation or
     * literal. */
    const char *text;
    size_t len;
    size_t offset;   /* byte offset of the token's first character in the buffer */
    int escaped;     /* STRING, KEY: the text contains backslash escapes */
    qs_json_num_kind num_kind;   /* NUMBER: where its value is */
    int64_t ival;    /* NUMBER of kind INT */
    double dval;     /* NUMBER of kind F32 / F64 */
} qs_json_token;

typedef struct qs_json_reader {
    const char *buf;
    size_t len;
    size_t pos;
    unsigned flags;
    unsigned max_depth;
    unsigned depth;                            /* open containers */
    int state;                                 /* what may come next (json.c) */
    unsigned char stack[QS_JSON_MAX_DEPTH];    /* kind of each open container */
    /* UBJSON only: per open container, the element type of a '$' container
     * (0: each element has its marker) and the elements left of a '#'
     * container (-1: ended by a closing marker). */
    unsigned char ub_type[QS_JSON_MAX_DEPTH];
    int64_t ub_left[QS_JSON_MAX_DEPTH];
} qs_json_reader;

/* Start reading `buf[0..len)`.  `max_depth` of 0, or above QS_JSON_MAX_DEPTH,
 * means QS_JSON_MAX_DEPTH.  A UTF-8 byte order mark is skipped. */
void qs_json_init(qs_json_reader *r, const char *buf, size_t len, unsigned max_depth,
                  unsigned flags);

/* Read the next token.  Returns 0, or -1 with err filled (QS_ERR_FORMAT for
 * malformed text, QS_ERR_LIMIT for nesting deeper than the limit; the offset
 * says where).  After an error the reader must not be used again. */
int qs_json_next(qs_json_reader *r, qs_json_token *t, qs_error *err);

/* `t` is the token that began a value (or a KEY, whose value is then read
 * and skipped).  Consume the rest of that value.  Returns 0 or -1. */
int qs_json_skip(qs_json_reader *r, const qs_json_token *t, qs_error *err);

/* Depth of the reader: number of containers currently open. */
static inline unsigned qs_json_depth(const qs_json_reader *r) { return r->depth; }

/* Whether a STRING or KEY token, once its escapes are decoded, equals the
 * NUL-terminated `s`. */
int qs_json_str_eq(const qs_json_token *t, const char *s);

/* Decode a STRING or KEY token into out[0..cap) as UTF-8 and NUL-terminate it.
 * Returns the decoded length, or -1 when it does not fit (cap includes the
 * NUL) or the token is not a string.  (The reader refuses \u0000, and a NUL
 * byte in a UBJSON string, so the result holds no NUL.) */
long long qs_json_str_decode(const qs_json_token *t, char *out, size_t cap);

/* Numbers.  Each returns 0, or -1 when the token is not a number of the
 * requested kind.
 *  - i64: an integer written without fraction or exponent, within int64_t
 *         (UBJSON: an integer type).
 *  - f32: strtof of the token's text (correctly rounded, never via double);
 *         NaN/Infinity tokens give NaN/inf.  UBJSON: the float32 itself, a
 *         float64 or an integer rounded once to float32.
 *  - f64: strtod of the token's text (UBJSON: the value as a double). */
int qs_json_get_i64(const qs_json_token *t, int64_t *out);
int qs_json_get_f32(const qs_json_token *t, float *out);
int qs_json_get_f64(const qs_json_token *t, double *out);

/* The length of the well-formed UTF-8 sequence at p[0 .. avail) (RFC 3629:
 * no overlong forms, no surrogates, nothing above U+10FFFF; an ASCII byte
 * is one), or 0. */
size_t qs_json_utf8_len(const unsigned char *p, size_t avail);

/* A short name for a token type, for error messages ("a string", "'['"). */
const char *qs_json_type_name(qs_json_type type);

/* Read the next token and require `type`; `what` names the value in the
 * message ("'nodes' should be an array, found a string at byte 812").
 * Returns 0, or -1 with err filled. */
int qs_json_expect(qs_json_reader *r, qs_json_token *t, qs_json_type type, const char *what,
                   qs_error *err);

/* Read a string value and decode it into out[cap] (NUL-terminated);
 * `what` names it in messages.  0, or -1 with err (not a string, too long). */
int qs_json_read_name(qs_json_reader *r, const char *what, char *out, size_t cap, qs_error *err);

/* A member that appears twice: fills err (offset of the second) and
 * returns -1. */
int qs_json_duplicate(const qs_json_token *k, const char *what, qs_error *err);

#endif
