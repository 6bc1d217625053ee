/* qs.h: the one public header of libqs, the QuickScorer toolkit library.
 *
 * Conventions for every function here:
 *  - The library never prints and never exits.  A function that can fail takes
 *    a `qs_error *` (may be NULL) and fills it on failure: a status code, a
 *    message naming what was expected, and where in the input (line or byte
 *    offset) when that is known.
 *  - Objects returned by *_new / *_load / qs_convert_* are owned by the caller
 *    and released with the matching *_free, which accepts NULL.
 *  - Thread safety: a loaded qs_scorer is immutable; several threads may score
 *    with one scorer at once, each with its own qs_workspace.  Everything else
 *    is single-threaded per object.
 */
#ifndef QS_H
#define QS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QS_VERSION_STRING "0.1.0"

/* ---------------------------------------------------------------- errors */

typedef enum qs_status {
    QS_OK = 0,
    QS_ERR_FORMAT = 1,      /* malformed input (model, text, .qsm, documents) */
    QS_ERR_UNSUPPORTED = 2, /* well-formed, but cannot be scored exactly: refused */
    QS_ERR_LIMIT = 3,       /* beyond a documented limit */
    QS_ERR_NOMEM = 4,       /* allocation failed */
    QS_ERR_IO = 5,          /* read or write failed */
    QS_ERR_ARG = 6          /* invalid argument from the caller */
} qs_status;

typedef struct qs_error {
    qs_status code;
    long line;          /* 1-based line of text input, 0 when not applicable */
    long long offset;   /* byte offset into binary input, -1 when not applicable */
    char msg[480];      /* what went wrong, lower case, no trailing newline */
} qs_error;

/* Reset an error record to "no error". */
void qs_error_clear(qs_error *err);

/* ------------------------------------------------------ canonical models */

/* Source libraries (recorded in the model; they decide defaults such as what
 * an absent feature means). */
typedef enum qs_source {
    QS_SRC_UNKNOWN = 0,
    QS_SRC_LIGHTGBM = 1,
    QS_SRC_XGBOOST = 2,
    QS_SRC_QUICKRANK = 3
} qs_source;

typedef struct qs_model qs_model;   /* a canonical tree ensemble */

void qs_model_free(qs_model *m);

/* Format of a foreign model, as told by qs_detect_format(). */
typedef enum qs_format {
    QS_FMT_UNKNOWN = 0,
    QS_FMT_LIGHTGBM = 1,   /* LightGBM text model (v3/v4) */
    QS_FMT_XGBOOST = 2,    /* XGBoost JSON model */
    QS_FMT_QUICKRANK = 3,  /* QuickRank / RankLib XML */
    QS_FMT_CANONICAL = 4   /* qs canonical ensemble text */
} qs_format;

/* Guess a model's format from its first bytes. */
qs_format qs_detect_format(const char *buf, size_t len);

/* Convert a foreign model held in memory (not NUL-terminated necessarily).
 * Returns NULL and fills err on failure; QS_ERR_UNSUPPORTED for models that
 * cannot be scored exactly (refused, never approximated). */
qs_model *qs_convert_lightgbm(const char *buf, size_t len, qs_error *err);
qs_model *qs_convert_xgboost(const char *buf, size_t len, qs_error *err);
qs_model *qs_convert_quickrank(const char *buf, size_t len, qs_error *err);
/* Dispatch on `fmt` (QS_FMT_UNKNOWN: detect). */
qs_model *qs_convert(qs_format fmt, const char *buf, size_t len, qs_error *err);

/* Canonical ensemble text (format/ensemble-text.md).  qs_model_to_text
 * allocates *out (free() it); qs_model_from_text parses and validates. */
int qs_model_to_text(const qs_model *m, char **out, size_t *out_len, qs_error *err);
qs_model *qs_model_from_text(const char *buf, size_t len, qs_error *err);

/* Check a model's structure: children in range, every node reached exactly
 * once from the root, no cycles, leaf counts within limits, feature ids and
 * classes in range.  Converters and readers call it before returning. */
int qs_model_validate(const qs_model *m, qs_error *err);

/* A few facts about a model. */
typedef struct qs_model_info {
    qs_source source;
    uint32_t num_features;   /* feature ids are 0 .. num_features-1 */
    uint32_t num_classes;    /* output columns */
    uint64_t num_trees;
    uint32_t max_leaves;     /* of the largest tree */
    uint32_t max_depth;      /* edges from the root, deepest leaf */
    int float_precision;     /* 1: values parsed as float32, 0: as double */
    int float_accumulate;    /* 1: scores summed in float32, 0: in double */
    int absent_is_missing;   /* source default for absent features */
    int oblivious;           /* 1: every tree is oblivious */
    const char *transform;   /* "none", "sigmoid", "softmax", "exp", ... */
} qs_model_info;

void qs_model_get_info(const qs_model *m, qs_model_info *info);

/* --------------------------------------------------------- .qsm models */

typedef struct qs_compile_options {
    uint32_t delta;        /* Δ of the Δ-skip threshold scan; 0 = default */
    uint32_t tree_block;   /* trees per block (τ); 0 = default (whole model) */
} qs_compile_options;

/* Build the binary .qsm image of a model in memory (format/qsm.md).
 * *out is allocated (free() it). */
int qs_compile(const qs_model *m, const qs_compile_options *opt,
               unsigned char **out, size_t *out_len, qs_error *err);

/* ------------------------------------------------------------ scoring */

typedef struct qs_scorer qs_scorer;       /* a loaded .qsm, immutable */
typedef struct qs_workspace qs_workspace; /* per-thread scratch */

/* Load (and fully validate) a .qsm image.  The buffer may be freed after. */
qs_scorer *qs_scorer_load(const unsigned char *buf, size_t len, qs_error *err);
void qs_scorer_free(qs_scorer *s);

/* The canonical model embedded in a scorer (owned by the scorer). */
const qs_model *qs_scorer_model(const qs_scorer *s);

/* Back ends.  QS_BACKEND_AUTO picks the fastest exact one compiled in. */
typedef enum qs_backend {
    QS_BACKEND_AUTO = 0,
    QS_BACKEND_WALK = 1,   /* plain tree walk: the internal reference */
    QS_BACKEND_QS = 2,     /* scalar QuickScorer (with Δ-skip), QS-Ω on oblivious blocks */
    QS_BACKEND_COUNT_ = 3
} qs_backend;

const char *qs_backend_name(qs_backend b);
/* Returns QS_BACKEND_COUNT_ when `name` is unknown. */
qs_backend qs_backend_from_name(const char *name);
/* Whether back end `b` can score with this scorer's model. */
int qs_backend_available(const qs_scorer *s, qs_backend b);

typedef enum qs_absent {
    QS_ABSENT_DEFAULT = 0, /* what the source library does */
    QS_ABSENT_ZERO = 1,
    QS_ABSENT_MISSING = 2
} qs_absent;

qs_workspace *qs_workspace_new(const qs_scorer *s, qs_error *err);
void qs_workspace_free(qs_workspace *w);

/* A parsed document: a dense vector of num_features values (absent features
 * already filled), held in the workspace.  Use qs_doc_* to fill it. */
void qs_doc_reset(qs_workspace *w, qs_absent absent);
/* Set feature `id` to `value`; ids >= num_features are ignored (the model
 * never reads them).  The value must already be rounded to the model's
 * precision (qs_parse_value does it). */
void qs_doc_set(qs_workspace *w, uint32_t id, double value);

/* Score the document in the workspace: writes num_classes raw scores (the
 * margin; double or float32 values widened to double) into out[]. */
int qs_score_doc(const qs_scorer *s, qs_workspace *w, qs_backend b, double *out);

/* Apply the model's output transform (sigmoid, softmax, exp ...) in place. */
void qs_transform(const qs_scorer *s, double *scores);

/* Parse one feature value token with the model's precision: strtod for
 * double models, strtof for float32 models (never (float)strtod).
 * Accepts nan, inf, signs, exponents.  Returns 0 on success. */
int qs_parse_value(const qs_scorer *s, const char *tok, size_t len, double *out);

/* Digits needed to print a score so it round-trips: 17 or 9. */
int qs_score_digits(const qs_scorer *s);

/* ------------------------------------------------------- LETOR reader */

/* One line of LETOR/SVMLight text: `label [qid:Q] id:value ... [# comment]`.
 * The callbacks let the caller place values without copying. */
typedef struct qs_letor_line {
    const char *label; size_t label_len;   /* the label token, verbatim */
    const char *qid;   size_t qid_len;     /* qid value, or NULL when absent */
} qs_letor_line;

/* Parse `line` (without its newline; a trailing CR is ignored).  For every
 * id:value pair, the value is parsed with the scorer's precision and set in
 * the workspace (reset first with `absent`).  Blank and comment-only lines
 * yield QS_OK with *is_doc = 0.  On a malformed line, fills err (err->line is
 * left to the caller). */
int qs_letor_parse(const qs_scorer *s, qs_workspace *w, qs_absent absent,
                   const char *line, size_t len, qs_letor_line *out,
                   int *is_doc, qs_error *err);

/* ------------------------------------------------------- utilities */

/* CRC-32C (Castagnoli) of a buffer, continuing from `crc` (start with 0). */
uint32_t qs_crc32c(uint32_t crc, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* QS_H */
