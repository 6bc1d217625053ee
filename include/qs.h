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
#include <stdio.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QS_VERSION_STRING "0.2.0"
/* The same as numbers, for #if: QS_VERSION_NUMBER is
 * MAJOR * 10000 + MINOR * 100 + PATCH (0.2.0: 200), e.g.
 * #if defined(QS_VERSION_NUMBER) && QS_VERSION_NUMBER >= 200.  The ABI policy
 * (what libqs.so.0 keeps, what may change) is in libqs(3). */
#define QS_VERSION_MAJOR 0
#define QS_VERSION_MINOR 2
#define QS_VERSION_PATCH 0
#define QS_VERSION_NUMBER (QS_VERSION_MAJOR * 10000 + QS_VERSION_MINOR * 100 + QS_VERSION_PATCH)

/* Every public function and object carries QS_API: exported from the
 * shared library, which hides everything else. */
#if defined(__GNUC__) || defined(__clang__)
#define QS_API __attribute__((visibility("default")))
#else
#define QS_API
#endif

/* ---------------------------------------------------------------- errors */

typedef enum qs_status {
    QS_OK = 0,
    QS_ERR_FORMAT = 1,      /* malformed input (model, text, .qsm, documents) */
    QS_ERR_UNSUPPORTED = 2, /* well-formed, but cannot be scored exactly: refused */
    QS_ERR_LIMIT = 3,       /* beyond a documented limit */
    QS_ERR_NOMEM = 4,       /* allocation failed */
    QS_ERR_IO = 5,          /* read or write failed */
    QS_ERR_ARG = 6,         /* invalid argument from the caller */
    QS_ERR_DEVICE = 7       /* the accelerator: no device or driver, out of device memory, a
                               failed launch or copy (the message names the device's error) */
} qs_status;

typedef struct qs_error {
    qs_status code;
    long line;          /* 1-based line of text input, 0 when not applicable */
    long long offset;   /* byte offset into binary input, -1 when not applicable */
    char msg[480];      /* what went wrong, lower case, no trailing newline */
    long column;        /* 1-based column (cell) of delimited text, 0 when not applicable */
} qs_error;

/* Reset an error record to "no error". */
QS_API void qs_error_clear(qs_error *err);

/* ------------------------------------------------------ canonical models */

/* Source libraries (recorded in the model; they decide defaults such as what
 * an absent feature means). */
typedef enum qs_source {
    QS_SRC_UNKNOWN = 0,
    QS_SRC_LIGHTGBM = 1,
    QS_SRC_XGBOOST = 2,
    QS_SRC_QUICKRANK = 3,
    QS_SRC_CATBOOST = 4,
    QS_SRC_ONNX = 5        /* an ONNX-ML tree ensemble, as ONNX Runtime scores it */
} qs_source;

typedef struct qs_model qs_model;   /* a canonical tree ensemble */

QS_API void qs_model_free(qs_model *m);

/* Format of a foreign model, as told by qs_detect_format(). */
typedef enum qs_format {
    QS_FMT_UNKNOWN = 0,
    QS_FMT_LIGHTGBM = 1,   /* LightGBM text model (v2, v3, v4) */
    QS_FMT_XGBOOST = 2,    /* XGBoost JSON, UBJSON or binary (1.0 to 1.7) model */
    QS_FMT_QUICKRANK = 3,  /* QuickRank / RankLib XML */
    QS_FMT_CANONICAL = 4,  /* qs canonical ensemble text */
    QS_FMT_CATBOOST = 5,   /* CatBoost JSON model (save_model(format="json")) */
    QS_FMT_ONNX = 6,       /* ONNX model (protobuf) holding one ai.onnx.ml tree ensemble */
    QS_FMT_CATBOOST_CBM = 7 /* CatBoost binary model (.cbm, save_model's default) */
} qs_format;

/* Guess a model's format from its first bytes (each reader's detection, in
 * the readers' table's order). */
QS_API qs_format qs_detect_format(const char *buf, size_t len);

/* What the first bytes of a model file say, so that a reader can stop at a
 * wrong start instead of reading on to its limit (the tools and the Python
 * binding read model files so).  buf[0 .. len) is what has been read so
 * far, eof whether that is all of it.
 *   QS_SNIFF_MORE   blank space, or too few bytes to tell: read on
 *   QS_SNIFF_MODEL  a .qsm whose header checks out (*most, when not NULL:
 *                   the file size it records), a zstd frame, or the start
 *                   of a model a reader takes (*most: UINT64_MAX): read on
 *   QS_SNIFF_NOT    no model starts so, or a .qsm header that is wrong:
 *                   every reader refuses the file for what these bytes
 *                   already show (the bad magic number, the header, the
 *                   format), so a reader may stop and report on them */
typedef enum qs_sniff { QS_SNIFF_MORE = 0, QS_SNIFF_MODEL = 1, QS_SNIFF_NOT = 2 } qs_sniff;
QS_API qs_sniff qs_sniff_model(const unsigned char *buf, size_t len, int eof, uint64_t *most);

/* The readers' table (lib/convert/convert.c): one row per format, with the
 * source library whose rules the reader keeps, the names a command line
 * gives it, and words for messages.  Every list of formats (qs-convert
 * --from, the tools' messages, qs-compile --info) reads this table. */
typedef struct qs_reader_info {
    qs_format format;
    qs_source source;         /* QS_SRC_UNKNOWN: canonical text, which records its own */
    const char *name;         /* command-line name ("lightgbm"); NULL: chosen by detection only */
    const char *alias;        /* another command-line name ("ranklib"), or NULL */
    const char *description;  /* "LightGBM text" */
    const char *kind;         /* "a LightGBM text model" */
} qs_reader_info;

/* Row i of the table, NULL past the last. */
QS_API const qs_reader_info *qs_reader_get(size_t i);
/* The row a command-line name (or alias) names, or the row of a format;
 * NULL when none. */
QS_API const qs_reader_info *qs_reader_by_name(const char *name);
QS_API const qs_reader_info *qs_reader_by_format(qs_format fmt);
/* The foreign formats of the table (those with a command-line name), as
 * one list for messages, into buf[cap] (cut to fit; returns buf):
 * QS_READERS_DESCRIPTIONS "LightGBM text, XGBoost JSON, ... or ONNX";
 * QS_READERS_NAMES "lightgbm, xgboost, ... or quickrank (ranklib)";
 * QS_READERS_EVERY_NAME the names and aliases alike, "... quickrank or
 * ranklib". */
enum { QS_READERS_DESCRIPTIONS = 0, QS_READERS_NAMES = 1, QS_READERS_EVERY_NAME = 2 };
QS_API const char *qs_reader_list(char *buf, size_t cap, int style);
/* A source's name as canonical text and qs-compile --info write it
 * ("lightgbm", ..., "unknown"), and back (0, or -1 for a name none has). */
QS_API const char *qs_source_name(qs_source s);
QS_API int qs_source_from_name(const char *name, size_t len, qs_source *out);

/* The source libraries' table (lib/common/source.c): one row per qs_source,
 * the facts of the library that every part of qs reads from it (the model
 * code, the layout, transforms, qs-eval's presets, the tools, the Python
 * binding).  No field of a row is 0 or NULL ("" where a library has none),
 * so a row that misses a field shows (tests/unit/test_tables.c). */
typedef enum qs_feature_count {
    QS_FEATURES_DATA = 1,    /* num_features is the training data's count: a larger id is a mismatch */
    QS_FEATURES_USED = 2     /* the model counts only the features its trees use */
} qs_feature_count;
typedef enum qs_dense_rule {
    QS_DENSE_AS_IS = 1,      /* dense input (CSV, TSV, matrices) is read as written */
    QS_DENSE_ZERO_BAND = 2   /* |v| <= (double)1e-35f read densely is 0.0 (LightGBM) */
} qs_dense_rule;
typedef enum qs_leaf_numbers {
    QS_LEAVES_BY_RANK = 1,   /* --leaves: a leaf's rank among its tree's leaves */
    QS_LEAVES_BY_NODE = 2    /* --leaves: the leaf's node index (XGBoost's pred_leaf) */
} qs_leaf_numbers;
typedef struct qs_source_info {
    qs_source source;
    const char *name;             /* "lightgbm" (qs_source_name) */
    const char *library;          /* "LightGBM": the library's name in messages */
    int float_bits;               /* 32: a reader's values and thresholds are float32 unless the
                                     model says otherwise; 64: double */
    int absent;                   /* the library's rule for an absent feature: QS_ABSENT_ZERO
                                     or QS_ABSENT_MISSING (qs_absent, below) */
    qs_feature_count features;
    qs_dense_rule dense;
    qs_leaf_numbers leaves;
    const char *eval_preset;      /* qs-eval --like-model's convention; "": none */
    const char *picked_transforms; /* transforms the library computes at predict time for a
                                     one-output model whatever its loss ("sigmoid exp"); "" none */
    unsigned first_column;        /* qs's feature number of the library's own column 0 in a
                                     matrix (1 for CatBoost, whose column j its LETOR reader
                                     and qs number j + 1; 0 for the others) */
} qs_source_info;
/* The row of a source, NULL for a value no source has. */
QS_API const qs_source_info *qs_source_get(qs_source s);

/* Convert a foreign model held in memory (not NUL-terminated necessarily).
 * Returns NULL and fills err on failure; QS_ERR_UNSUPPORTED for models that
 * cannot be scored exactly (refused, never approximated). */
QS_API qs_model *qs_convert_lightgbm(const char *buf, size_t len, qs_error *err);
QS_API qs_model *qs_convert_xgboost(const char *buf, size_t len, qs_error *err);
QS_API qs_model *qs_convert_quickrank(const char *buf, size_t len, qs_error *err);
QS_API qs_model *qs_convert_catboost(const char *buf, size_t len, qs_error *err);
QS_API qs_model *qs_convert_onnx(const char *buf, size_t len, qs_error *err);
/* Dispatch on `fmt` (QS_FMT_UNKNOWN: detect). */
QS_API qs_model *qs_convert(qs_format fmt, const char *buf, size_t len, qs_error *err);

/* Canonical ensemble text (format/ensemble-text.md).  qs_model_to_text
 * allocates *out (free() it); qs_model_from_text parses and validates. */
QS_API int qs_model_to_text(const qs_model *m, char **out, size_t *out_len, qs_error *err);
QS_API qs_model *qs_model_from_text(const char *buf, size_t len, qs_error *err);

/* Check a model's structure: children in range, every node reached exactly
 * once from the root, no cycles, leaf counts within limits, feature ids and
 * classes in range.  Converters and readers call it before returning. */
QS_API int qs_model_validate(const qs_model *m, qs_error *err);

/* A few facts about a model. */
typedef struct qs_model_info {
    qs_source source;
    uint32_t num_features;   /* feature ids are 0 .. num_features-1 */
    uint32_t num_classes;    /* output columns */
    uint64_t num_trees;
    uint32_t max_leaves;     /* of the largest tree */
    uint32_t max_depth;      /* edges from the root, deepest leaf */
    int float_precision;     /* 1: values parsed as float32, 0: as double */
    int float_accumulate;    /* 0: scores summed in double; 1: in float32 (XGBoost);
                                2: float32 via double steps (RankLib) */
    int absent_is_missing;   /* source default for absent features */
    int oblivious;           /* 1: every tree is oblivious */
    const char *transform;   /* "none", "sigmoid", "softmax", "exp", ... */
} qs_model_info;

QS_API void qs_model_get_info(const qs_model *m, qs_model_info *info);

/* More facts, for inspection (qs-compile --info): counts over every tree,
 * and how many trees have each leaf count and each depth. */
typedef struct qs_hist_bin {
    uint64_t value;  /* a leaf count, or a depth (edges from the root) */
    uint64_t count;  /* trees with it */
} qs_hist_bin;

typedef struct qs_model_stats {
    const char *objective;     /* as the source wrote it (informational); owned by the model */
    const char *compare;       /* "le": x <= t goes left; "lt": x < t */
    uint64_t nodes, leaves;    /* over every tree */
    uint64_t cat_nodes;        /* categorical splits */
    uint32_t features_used;    /* distinct features some split tests */
    int64_t max_feature_used;  /* the largest of them, -1 when none */
    uint64_t oblivious_trees;  /* trees whose levels each test one feature and threshold */
    qs_hist_bin *leaves_hist;  /* trees by leaf count, ascending; n_leaves_hist bins */
    size_t n_leaves_hist;
    qs_hist_bin *depth_hist;   /* trees by depth, ascending */
    size_t n_depth_hist;
} qs_model_stats;

/* Fill st (release with qs_model_stats_free).  Returns 0, or -1 with err
 * (QS_ERR_NOMEM). */
QS_API int qs_model_get_stats(const qs_model *m, qs_model_stats *st, qs_error *err);
QS_API void qs_model_stats_free(qs_model_stats *st);

/* The version of the library that wrote a foreign model, from its bytes:
 * LightGBM text ("v4", its version= line), XGBoost JSON ("1.7.4", its
 * "version" array).  Returns 0 and a NUL-terminated string in out[cap], or
 * -1 when the format records none that this reads (canonical text and .qsm
 * files do not keep it). */
QS_API int qs_source_version(const char *buf, size_t len, char *out, size_t cap);

/* The categories an XGBoost 3.1+ model recorded for its categorical features
 * (its "cats" encoder, made when it was trained on a data frame): for each,
 * fn(ctx, feature, code, text, len) in code order; text is a string
 * category's UTF-8 bytes (at most 256) or a numeric category's number.  A
 * document value for such a feature is the category's code, its index in
 * this list: XGBoost takes numeric input (numpy, DMatrix) as the codes, and
 * re-codes only a data frame's categories.  Returns how many categories
 * were reported: 0 for none (and for other formats), -1 for a malformed
 * encoder. */
typedef void (*qs_category_fn)(void *ctx, uint32_t feature, uint32_t code, const char *text,
                               size_t len);
QS_API long long qs_source_categories(const char *buf, size_t len, qs_category_fn fn, void *ctx);
/* The same, all or nothing, with the reason of a failure: the whole
 * encoder is read and checked (offsets from 0 to the bytes' count, never
 * decreasing; bytes; every string category UTF-8) before fn is first
 * called, so a malformed encoder, or an allocation that fails, reports no
 * category.  A string longer than 256 bytes is cut at its last whole
 * character within them.  Returns the count, or -1 with err: QS_ERR_FORMAT
 * (what is wrong, and where), QS_ERR_NOMEM.  fn may be NULL (a check). */
QS_API long long qs_source_list_categories(const char *buf, size_t len, qs_category_fn fn,
                                           void *ctx, qs_error *err);

/* The names and types a foreign model recorded for its features, for
 * matching a data frame's columns to them (never read for scoring): for
 * each, fn(ctx, feature, name, name_len, type, type_len) in feature order,
 * the name's UTF-8 bytes (at most 256, cut at a character's end; "" where
 * the model names none) and its type as the library wrote it.  LightGBM
 * text: feature_names, and "c" for a categorical feature (its
 * feature_infos lists categories), else "q".  XGBoost JSON and UBJSON:
 * learner.feature_names and feature_types ("float", "int", "q", "c", ...).
 * CatBoost JSON: features_info.float_features' feature_id by flat index,
 * type "float" (feature f here is the caller's column f, qs's feature
 * f + 1).  Returns the count: 0 where none is recorded (and for other
 * formats), -1 with err for a malformed list (QS_ERR_FORMAT, QS_ERR_NOMEM).
 * fn may be NULL. */
typedef void (*qs_feature_fn)(void *ctx, uint32_t feature, const char *name, size_t name_len,
                              const char *type, size_t type_len);
QS_API long long qs_source_list_features(const char *buf, size_t len, qs_feature_fn fn,
                                         void *ctx, qs_error *err);

/* --------------------------------------------------------- .qsm models */

typedef struct qs_compile_options {
    uint32_t delta;        /* Δ of the Δ-skip threshold scan; 0 = default */
    uint32_t tree_block;   /* trees per block (τ); 0 = decided at load from the last-level cache size */
    uint32_t doc_block;    /* documents per batch (δ); 0 = default */
    const uint8_t *reverse; /* per tree: nonzero = lay out reversed (NULL: none) */
} qs_compile_options;



/* Build the binary .qsm image of a model in memory (format/qsm.md).
 * *out is allocated (free() it). */
QS_API int qs_compile(const qs_model *m, const qs_compile_options *opt,
               unsigned char **out, size_t *out_len, qs_error *err);

/* ------------------------------------------------------------ scoring */

typedef struct qs_scorer qs_scorer;       /* a loaded .qsm, immutable */
typedef struct qs_workspace qs_workspace; /* per-thread scratch */

/* Load (and fully validate) a .qsm image, and prepare the back end that
 * QS_BACKEND_AUTO runs as.  The buffer may be freed after. */
QS_API qs_scorer *qs_scorer_load(const unsigned char *buf, size_t len, qs_error *err);
/* The same from a file: the whole .qsm at `path` is read, loaded and let go
 * (QS_ERR_IO, with the system's reason, when it cannot be opened or read;
 * QS_ERR_LIMIT beyond QS_MAX_QSM_FILE bytes).  The read stops after the
 * 64-byte header when that is wrong (the error qs_scorer_load gives for
 * it), and reads no further than one byte past the file size a right one
 * records (a longer file: QS_ERR_FORMAT, padded). */
#define QS_MAX_QSM_FILE ((size_t)1 << 34)
QS_API qs_scorer *qs_scorer_load_file(const char *path, qs_error *err);
/* The same, the layout's blocks built by up to `threads` threads (OpenMP;
 * 1 as qs_scorer_load), here and at every qs_scorer_relayout: the scorer is
 * the same whatever the count, only its load is faster. */
QS_API qs_scorer *qs_scorer_load_threads(const unsigned char *buf, size_t len, unsigned threads,
                                         qs_error *err);
/* qs_scorer_load_threads with the layout's tree block τ and threshold step
 * Δ given (QS_KEEP: the file's, a stored τ = 0 sized by this machine's
 * cache), the scorer the same as qs_scorer_load_threads followed by
 * qs_scorer_relayout(s, tree_block, QS_KEEP, delta, err), but the layout
 * and the back end's state built once. */
QS_API qs_scorer *qs_scorer_load_layout(const unsigned char *buf, size_t len, unsigned threads,
                                        uint32_t tree_block, uint32_t delta, qs_error *err);
QS_API void qs_scorer_free(qs_scorer *s);

/* The canonical model embedded in a scorer (owned by the scorer). */
QS_API const qs_model *qs_scorer_model(const qs_scorer *s);

/* Back ends.  A back end is an index into the library's table of back
 * ends, 0 .. qs_backend_count()-1, or QS_BACKEND_AUTO: the fastest exact
 * one this machine runs (qs_backend_auto() says which).  The table and
 * each back end's facts are asked from the library. */
typedef int qs_backend;
#define QS_BACKEND_AUTO (-1)
#define QS_BACKEND_UNKNOWN (-2)

/* Facts about a back end (qs_backend_info.flags). */
#define QS_BACKEND_F_REFERENCE      0x01u /* the reference walk every back end is checked against */
#define QS_BACKEND_F_BASELINE       0x02u /* a comparison method of the papers (STRUCT+, VPRED, ...) */
#define QS_BACKEND_F_OBLIVIOUS_ONLY 0x04u /* scores only models whose trees are all oblivious */
#define QS_BACKEND_F_SIMD           0x08u /* uses SIMD instructions picked at run time */
#define QS_BACKEND_F_DEVICE         0x10u /* runs on an accelerator */
#define QS_BACKEND_F_THREADS        0x20u /* uses several threads */
#define QS_BACKEND_F_ALIAS          0x40u /* runs as the best of a family on this machine */
#define QS_BACKEND_F_BATCH          0x80u /* takes whole batches of any size: qs_score_matrix
                                             hands it every row in one call (qs-score
                                             --gpu-batch sizes the batches) */

typedef struct qs_backend_info {
    const char *name;      /* "qs", "vqs-avx512", ... */
    const char *summary;   /* one line */
    unsigned flags;        /* QS_BACKEND_F_* */
    unsigned auto_rank;    /* auto runs the available back end of highest rank; 0: never */
    int available;         /* 1: this machine and build can run it */
    char why[160];         /* when not available: the reason; when available, a note
                              or "" (vqs: how auto picks among its kernels) */
} qs_backend_info;

/* Number of back ends in this build. */
QS_API int qs_backend_count(void);
/* Facts about back end b (QS_BACKEND_AUTO: the one auto runs as).  0, or
 * -1 when b is out of range. */
QS_API int qs_backend_get_info(qs_backend b, qs_backend_info *info);
/* "auto" for QS_BACKEND_AUTO, "?" when out of range. */
QS_API const char *qs_backend_name(qs_backend b);
/* By name ("auto" gives QS_BACKEND_AUTO); QS_BACKEND_UNKNOWN when unknown. */
QS_API qs_backend qs_backend_find(const char *name);
/* The back end auto runs as on this machine: the available one of highest
 * rank.  A scorer may run another of its family for its model
 * (qs_scorer_auto_backend). */
QS_API qs_backend qs_backend_auto(void);

/* Prepare back end b (QS_BACKEND_AUTO is prepared by qs_scorer_load) for
 * this scorer: builds its data from the model, so scoring never does.  Call
 * before sharing the scorer between threads and before creating the
 * workspaces that will use b (not thread-safe).  Returns 0, or -1 with err:
 * QS_ERR_UNSUPPORTED when this machine cannot run b or b cannot score this
 * model exactly (the message says which), QS_ERR_DEVICE when b runs on an
 * accelerator that is absent or failed (no driver, no device, out of device
 * memory: the message names the device's error), QS_ERR_NOMEM, QS_ERR_ARG. */
QS_API int qs_scorer_prepare(qs_scorer *s, qs_backend b, qs_error *err);
/* Whether b is prepared for s. */
QS_API int qs_scorer_prepared(const qs_scorer *s, qs_backend b);
/* The back end QS_BACKEND_AUTO runs for s (chosen when s was loaded, for
 * its model on this CPU: vqs-avx2 or vqs-avx512 by the CPU class's rule,
 * say), and why, in why[cap] (may be NULL). */
QS_API qs_backend qs_scorer_auto_backend(const qs_scorer *s, char *why, size_t cap);

/* The accelerator that device back ends (QS_BACKEND_F_DEVICE) of s use:
 * its ordinal, 0 (the default) or more, as the device's own runtime
 * numbers them.  Call before qs_scorer_prepare of a device back end; the
 * device back ends already prepared for s are prepared again on the new
 * device.  The other back ends ignore it.  Not thread-safe: call before
 * creating workspaces.  Returns 0, or -1 with err: QS_ERR_ARG for a
 * negative device, or the failure of preparing a device back end again. */
QS_API int qs_scorer_set_device(qs_scorer *s, int device, qs_error *err);

/* A tunable of the GPU back ends (`cuda`, and `cuda-emu`, its emulator),
 * for scorer s, over the environment's QS_CUDA_* variables: "kernel"
 * (auto, qs, rank, lanes, walk), "threads", "db", "tau", "shared", "sub",
 * "streams", "f32" (libqs(3) ENVIRONMENT gives each one's range; the value
 * is written as in the environment, decimal digits only).  The back ends
 * already prepared for s take it at once.  Not thread-safe: call before
 * sharing the scorer.  0, or -1 with err (QS_ERR_ARG: an unknown name or a
 * value out of its rule; a failure of preparing again). */
QS_API int qs_scorer_set_device_option(qs_scorer *s, const char *name, const char *value,
                                       qs_error *err);

/* What back end b does with scorer s, in one line into out[cap]: for the
 * GPU back ends, the kernel they run for this model and why ("rank: trees
 * of up to 64 leaves (auto's rule, estimated ...)"), with the launch
 * geometry.  No device is opened.  "" for a back end with nothing to say.
 * 0, or -1 with err. */
QS_API int qs_scorer_backend_plan(const qs_scorer *s, qs_backend b, char *out, size_t cap,
                                  qs_error *err);

/* Start initialising device back end b's device on a thread of its own
 * (the CUDA context: about a second), so that it overlaps loading the
 * model and reading documents; the back end's prepare then waits for it.
 * Nothing for other back ends; never fails (an error shows at prepare). */
QS_API void qs_backend_warm_up(qs_backend b, int device);

/* Facts about this build of the library. */
typedef struct qs_build_info {
    const char *version;    /* QS_VERSION_STRING of the library */
    int openmp, numa, cuda; /* compiled in (1) or not (0) */
    const char *cpu_detected; /* SIMD levels of this CPU: "avx512,avx2", "avx2", "" */
    const char *cpu_enabled;  /* the same less QS_DISABLE_CPU_FEATURES */
} qs_build_info;
QS_API void qs_build_get_info(qs_build_info *info);

/* The library's own environment variables checked (QS_CPU_CLASS: generic,
 * zen4, zen5, intel, amd-zen4 or amd-zen5, in lower case; the GPU back
 * ends' QS_CUDA_*, by their rule (libqs(3)); empty counts as unset).  The library ignores a value it cannot use (CPUID then decides);
 * a program that wants it refused asks here first, as the tools do (a usage
 * error).  Returns 0, or -1 with err: QS_ERR_ARG naming the variable, its
 * value and the values it takes. */
QS_API int qs_env_check(qs_error *err);

/* How many threads a threaded call made from this thread with `threads`
 * threads can have now: `threads`, or fewer (at least 1) when the system
 * refuses to start more (an address-space or process limit; *why, when not
 * NULL: the error of the thread that failed, 0 when all started).  The
 * OpenMP runtime ends the process when a thread of a team fails to start,
 * so the library asks this before each of its threaded steps and runs with
 * the threads it gets (the same results with any number); a program asks
 * it to say so, or to size its own OpenMP team.  1 without OpenMP. */
QS_API unsigned qs_threads_startable(unsigned threads, int *why);

typedef enum qs_absent {
    QS_ABSENT_DEFAULT = 0, /* what the source library does */
    QS_ABSENT_ZERO = 1,
    QS_ABSENT_MISSING = 2
} qs_absent;

/* Blocking (BWQS): trees are scored in blocks of τ trees, documents in
 * batches of δ, so a block's QuickScorer data stays in cache while a batch
 * goes through it.  The .qsm stores τ, δ and Δ (0 = default); this rebuilds
 * the layout with other values (QS_KEEP keeps the current one).  Not
 * thread-safe: call before creating workspaces; the back ends prepared for
 * the scorer are prepared again for the new layout. */
#define QS_KEEP 0xFFFFFFFFu
QS_API int qs_scorer_relayout(qs_scorer *s, uint32_t tree_block, uint32_t doc_block, uint32_t delta,
                       qs_error *err);
/* The values in force (tree_block 0: one block per homogeneous run of trees). */
QS_API void qs_scorer_get_blocks(const qs_scorer *s, uint32_t *tree_block, uint32_t *doc_block,
                          uint32_t *delta, uint32_t *nblocks);

/* The layout in force, for inspection (qs-compile --info). */
typedef struct qs_layout_info {
    uint32_t tree_block;        /* τ in force (0: one block per homogeneous run of trees) */
    uint32_t stored_tree_block; /* τ the .qsm stores (0: chosen at load from the last-level cache size) */
    uint32_t doc_block;         /* δ in force */
    uint32_t delta;             /* Δ */
    uint32_t nblocks;
    uint64_t reversed_trees;    /* laid out mirrored (tree reversal) */
    uint64_t entries;           /* sorted threshold entries, every block */
    uint64_t special_entries;   /* special-value (NaN, zero band) entries */
    uint64_t leaf_values;       /* leaf table entries */
    uint32_t cat_nodes;         /* categorical nodes, evaluated directly */
} qs_layout_info;

typedef struct qs_block_info {
    uint64_t first_tree, num_trees;
    int oblivious;              /* a QS-Ω block (leaf index built bit by bit) */
    uint32_t width;             /* QS: bits per tree's leaf mask, 8, 16, 32 or 64; 0: multi-word */
    uint32_t words;             /* QS with width 0: 64-bit words per mask */
    uint64_t entries;           /* sorted threshold entries */
    uint64_t reversed_trees;
} qs_block_info;

QS_API void qs_scorer_get_layout_info(const qs_scorer *s, qs_layout_info *info);
/* Block i (0 .. nblocks-1): 0, or -1 when out of range. */
QS_API int qs_scorer_get_block(const qs_scorer *s, uint32_t i, qs_block_info *info);

/* The container of a .qsm image (format/qsm.md): header and section table,
 * checked (magic, version, checksums of the header, the table and every
 * section), without decompressing anything. */
#define QS_QSM_MAX_SECTIONS 64
typedef struct qs_qsm_section {
    char id[5];                 /* "INFO", "TREE", "QSLY", "AFFN", ... */
    uint32_t flags;             /* 0x1 required, 0x2 zstd */
    uint64_t offset, stored_size, raw_size;
    uint32_t crc;               /* CRC-32C of the stored bytes (checked) */
} qs_qsm_section;

typedef struct qs_qsm_file_info {
    unsigned major, minor;      /* format version */
    uint64_t file_size;
    uint32_t nsections;
    qs_qsm_section sections[QS_QSM_MAX_SECTIONS];
    int tuning;                 /* 1 when the file holds a tuning record (TUNE section:
                                   qs_qsm_get_tuning) */
} qs_qsm_file_info;

QS_API int qs_qsm_get_file_info(const unsigned char *buf, size_t len, qs_qsm_file_info *info,
                                qs_error *err);

/* ------------------------------------------- blocking orders and tuning
 *
 * Within a batch of δ documents, BWQS applies its "scorers" (blocks of τ
 * trees) to the documents in one of the traversal orders of Jin, Yang and
 * Tang (SIGIR 2016), s scorers and d documents per inner block:
 *   SD    every scorer in turn over the whole batch (the default: plain BWQS)
 *   DS    every document in turn through every scorer
 *   DSD   d documents at a time, every scorer over them
 *   SDS   s scorers at a time, every document through them
 *   DSDS  d documents at a time, s scorers at a time, each document through them
 *   SDSD  s scorers at a time, d documents at a time, each scorer over them
 * Every order applies the scorers to each document in ascending order, so
 * each document's sum keeps tree order and the scores are the same bits in
 * every order, for every accumulation mode and for linear leaves. */
typedef enum qs_order {
    QS_ORDER_SD = 0, QS_ORDER_DS = 1, QS_ORDER_DSD = 2, QS_ORDER_SDS = 3,
    QS_ORDER_DSDS = 4, QS_ORDER_SDSD = 5
} qs_order;
#define QS_ORDER_COUNT 6
/* "SD", "DS", ...; NULL when out of range. */
QS_API const char *qs_order_name(qs_order o);
/* By name, case-insensitive; -1 when unknown. */
QS_API int qs_order_find(const char *name);
/* Set the order (s: scorers per inner block, d: documents per inner block;
 * 0 = the default for that order; values beyond the blocks or the batch are
 * clamped when scoring).  Not thread-safe: call before creating workspaces.
 * 0, or -1 with err (QS_ERR_ARG). */
QS_API int qs_scorer_set_order(qs_scorer *s, qs_order order, uint32_t inner_s, uint32_t inner_d,
                               qs_error *err);
QS_API void qs_scorer_get_order(const qs_scorer *s, qs_order *order, uint32_t *inner_s,
                                uint32_t *inner_d);

/* This machine's data cache sizes in bytes (sysfs, else CPUID leaf 4; 0 when
 * unknown), for level 1, 2, 3. */
QS_API uint64_t qs_cache_bytes(int level);

/* Footprints (bytes) of the layout in force, for the cost model: one scorer
 * (the average block: its threshold entries, tree ids, masks, leaf values
 * and leaf vectors) and one document (its feature vector and accumulators). */
typedef struct qs_footprint {
    uint64_t scorer_bytes;      /* average over blocks */
    uint64_t max_scorer_bytes;  /* the largest block */
    uint64_t doc_bytes;
    uint32_t nscorers;          /* blocks */
    uint32_t lanes;             /* documents per SIMD call of the back end (1: scalar) */
} qs_footprint;
QS_API void qs_scorer_get_footprint(const qs_scorer *s, qs_backend b, qs_footprint *fp);

/* The range case of (order, s, d) (Jin et al. §4): the cache level (1..3,
 * 4 = memory) that s scorers (*ls) and d documents (*ld) fill, each allowed
 * half of a level.  For DSD, DS only *ld counts, for SDS, SD only *ls. */
QS_API void qs_range_case(const qs_footprint *fp, const uint64_t cache[3], qs_order o,
                          uint32_t inner_s, uint32_t inner_d, int *ls, int *ld);

/* A tuning record (the .qsm TUNE section, format/qsm.md): what qs-blocktune
 * measured best on one machine, and that machine. */
typedef struct qs_tuning {
    uint32_t order;             /* qs_order */
    uint32_t inner_s, inner_d;
    uint32_t tree_block;        /* τ (0: one block per homogeneous run of trees) */
    uint32_t doc_block;         /* δ (the batch) */
    uint32_t delta;             /* Δ */
    uint32_t threads;           /* 0: not measured, keep the caller's */
    char backend[32];           /* a back end name, "" for auto */
    /* the machine */
    char cpu_model[64];
    uint64_t cache[3];          /* L1d, L2, L3 bytes */
    uint32_t cores;
    char version[16];           /* qs version that measured */
    int64_t date;               /* seconds since 1970 (UTC) */
    /* measured on the sample: ns per document per tree */
    double default_ns, tuned_ns;
} qs_tuning;

/* This machine's fingerprint into t (cpu_model, cache, cores, version,
 * date).  QS_TUNE_FINGERPRINT=TEXT replaces the CPU model (tests simulate
 * another machine with it). */
QS_API void qs_tuning_fingerprint(qs_tuning *t);
/* 1 when t was measured on a machine like this one (same CPU model, caches
 * and cores), else 0. */
QS_API int qs_tuning_matches(const qs_tuning *t);
/* The back end tuning record t names, where it was measured on a machine
 * like this one and this machine runs that back end (what qs-score runs
 * unless told otherwise); QS_BACKEND_AUTO otherwise, and for NULL. */
QS_API qs_backend qs_tuning_backend(const qs_tuning *t);
/* The tuning record of a .qsm image: 1 and *t, 0 when it has none, -1 with
 * err when the record is malformed. */
QS_API int qs_qsm_get_tuning(const unsigned char *buf, size_t len, qs_tuning *t, qs_error *err);
/* A copy of the .qsm image with tuning record t (replacing any), *out
 * allocated (free() it); the format's minor version becomes at least 4. */
QS_API int qs_qsm_set_tuning(const unsigned char *buf, size_t len, const qs_tuning *t,
                             unsigned char **out, size_t *out_len, qs_error *err);
/* Apply τ, δ, Δ and the order of t to s (not the back end and threads,
 * which are the caller's).  0, or -1 with err. */
QS_API int qs_scorer_apply_tuning(qs_scorer *s, const qs_tuning *t, qs_error *err);

/* ------------------------------------------------------- opening a model */

/* One open path from a model's file or bytes to a scorer, the tools' and
 * the Python binding's: the file read as a model is read (at most the
 * bound, and no further than its first bytes when they show that no model
 * starts so, or, for a .qsm, than the size its header records:
 * qs_sniff_model), a zstd frame decompressed to the same bound, a .qsm
 * taken as it is (its tuning record read, and applied where it was
 * measured on a machine like this one: qs_tuning_matches), any other model
 * converted by its reader (detected, or the one `format` names) and
 * compiled in memory (the .qsm image qs-compile writes for it), then
 * loaded. */
#define QS_OPEN_IGNORE_TUNING 0x1u  /* a .qsm's tuning record is read, not applied */
#define QS_OPEN_NO_SCORER     0x2u  /* the image only (qs_opened_load loads it) */
#define QS_OPEN_KEEP_SOURCE   0x4u  /* keep a foreign model's bytes (decompressed) */
/* The bytes only, for a caller that converts with options of its own or
 * takes nothing but a .qsm (the tools): read and decompressed as above; a
 * .qsm in qsm (is_qsm, its tuning record read), anything else in source
 * with the format its reader detects and that reader's kind (QS_FMT_UNKNOWN
 * and "" where no reader takes it: no failure here); nothing converted,
 * compiled or loaded. */
#define QS_OPEN_NO_CONVERT    0x8u
/* Messages leave the input unnamed (the caller names it, with err's line
 * and offset, as the tools do: "PATH:LINE: what", "PATH: byte N: what"). */
#define QS_OPEN_UNNAMED       0x10u
typedef struct qs_open_options {
    qs_format format;      /* QS_FMT_UNKNOWN: detected (a .qsm, or a reader's format) */
    unsigned flags;        /* QS_OPEN_* */
    unsigned threads;      /* threads building the layout (0: 1) */
    uint32_t tree_block;   /* τ (0 or QS_KEEP: the file's, or the applied tuning record's) */
    uint32_t delta;        /* Δ (0 or QS_KEEP: likewise) */
    size_t max_input;      /* bound on the bytes read and decompressed (0: QS_MAX_INPUT, a
                              byte count with K, M or G, or 1 GiB when it is unset) */
} qs_open_options;

typedef struct qs_opened {
    qs_scorer *scorer;      /* NULL with QS_OPEN_NO_SCORER */
    unsigned char *qsm;     /* the .qsm image: the file's, or compiled here */
    size_t qsm_len;
    unsigned char *source;  /* QS_OPEN_KEEP_SOURCE or _NO_CONVERT, and not a .qsm: its
                               plain bytes (NUL after them) */
    size_t source_len;
    int is_qsm;             /* the input was a .qsm */
    qs_format format;       /* the reader that read it (QS_FMT_UNKNOWN for a .qsm) */
    char kind[64];          /* "a compiled .qsm model", "a LightGBM text model", ... ("":
                               unknown, with QS_OPEN_NO_CONVERT) */
    char source_version[64]; /* the writer's version (qs_source_version), or "" */
    int has_tuning;         /* a .qsm with a readable tuning record: tuning */
    int tuned;              /* ... measured here and applied (not with IGNORE_TUNING) */
    qs_tuning tuning;
} qs_opened;

/* Open the model file at path (when path is not NULL) or the len bytes at
 * buf (the caller's: they may be freed after) into *out (opt may be NULL:
 * the defaults).  0, or -1 with err and *out empty: QS_ERR_IO (the file,
 * with the system's reason; errno holds it on return), QS_ERR_LIMIT (beyond the bound), QS_ERR_FORMAT
 * (a malformed model, .qsm or zstd frame; neither a .qsm nor a format a
 * reader takes), QS_ERR_UNSUPPORTED (refused: no exact score), QS_ERR_ARG
 * (a bad QS_MAX_INPUT), QS_ERR_NOMEM.  A message about a file starts with
 * its path (unless QS_OPEN_UNNAMED). */
QS_API int qs_open(const char *path, const unsigned char *buf, size_t len,
                   const qs_open_options *opt, qs_opened *out, qs_error *err);
/* The same for a model read from the stream f (standard input, a pipe),
 * from where it stands, as a path's file is read; f is not closed.  name
 * (NULL: none) names it in messages as a path would be. */
QS_API int qs_open_file(FILE *f, const char *name, const qs_open_options *opt,
                        qs_opened *out, qs_error *err);
/* A scorer of an opened model's image (another copy, for another thread or
 * NUMA node, or after QS_OPEN_NO_SCORER), with its applied tuning record:
 * τ and Δ as qs_open_options has them (0: the file's or the record's), the
 * record's order and δ. */
QS_API qs_scorer *qs_opened_load(const qs_opened *o, unsigned threads, uint32_t tree_block,
                                 uint32_t delta, qs_error *err);
/* Free what qs_open gave (the scorer too, unless the caller took it and
 * set o->scorer to NULL); *o empty after. */
QS_API void qs_opened_free(qs_opened *o);
/* qs_open's scorer alone. */
QS_API qs_scorer *qs_scorer_open(const char *path, const unsigned char *buf, size_t len,
                                 const qs_open_options *opt, qs_error *err);
/* The bound on a model's bytes that qs_open applies by default: QS_MAX_INPUT
 * (a byte count: 1000000, 64K, 512M, 2G), or 1 GiB when it is unset or
 * empty.  0, or -1 with err (QS_ERR_ARG) for a value that is none. */
QS_API int qs_max_input(size_t *out, qs_error *err);

/* The selected slot's dense feature vector (num_features values). */
QS_API const double *qs_doc_values(const qs_workspace *w);

/* Iterations of the scorer's model: its trees / the trees of one iteration
 * (one tree per class, as LightGBM, CatBoost and XGBoost grow them;
 * XGBoost's boosted random forests num_parallel_tree per class). */
QS_API uint64_t qs_scorer_iterations(const qs_scorer *s);

/* Keep only the first `iterations` iterations of the scorer's model: its
 * first iterations × K trees (K classes; XGBoost's boosted random forests
 * iterations × num_parallel_tree × K, as the model records), what
 * LightGBM's predict(num_iteration=N), XGBoost's iteration_range=(0, N) and
 * CatBoost's ntree_end=N score.  More iterations than the model has keep
 * the whole model, as LightGBM does.  A transform average (LightGBM random
 * forests) becomes the iterations kept.  The layout is rebuilt with the
 * same τ, δ, Δ and tree reversal, and the back ends prepared for the
 * scorer are prepared again.  Not thread-safe: call before creating
 * workspaces.  Returns 0, or -1 with err: QS_ERR_ARG for 0 iterations,
 * QS_ERR_UNSUPPORTED when the model records no count of its own and its
 * trees do not come one per class per iteration (tree i of class i mod K). */
QS_API int qs_scorer_truncate(qs_scorer *s, uint64_t iterations, qs_error *err);

/* A workspace holds δ document slots (qs_workspace_slots); the qs_doc_*
 * functions and qs_letor_parse fill the selected slot (slot 0 at first). */
QS_API qs_workspace *qs_workspace_new(const qs_scorer *s, qs_error *err);
QS_API void qs_workspace_free(qs_workspace *w);
QS_API uint32_t qs_workspace_slots(const qs_workspace *w);
QS_API void qs_workspace_select(qs_workspace *w, uint32_t slot);

/* A parsed document: a dense vector of num_features values (absent features
 * already filled), held in the workspace.  Use qs_doc_* to fill it. */
QS_API void qs_doc_reset(qs_workspace *w, qs_absent absent);
/* Set feature `id` to `value`; ids >= num_features are ignored (the model
 * never reads them).  The value must already be rounded to the model's
 * precision (qs_parse_value does it). */
QS_API void qs_doc_set(qs_workspace *w, uint32_t id, double value);

/* LightGBM's zero threshold.  LightGBM does not read a document value the
 * same way on every input: its CSV and TSV readers and its dense-matrix
 * input (numpy, pandas) drop a value with |x| <= kZeroThreshold
 * ((double)1e-35f), so it counts as 0.0, while its LibSVM reader and CSR
 * input keep it.  A model split at -kZeroThreshold (common where the
 * training data has zeros) sends such a value the other way.  For a
 * LightGBM model the library reads each input as LightGBM's reader of that
 * form does: qs_dsv_parse and qs_score_matrix drop the band; qs_letor_parse,
 * qs_letor_parse_row and qs_doc_set keep every value.
 *
 * qs_scorer_zero_band: 1 when the scorer's model reads dense input so (its
 * source is LightGBM), else 0 (every other library keeps the values; so
 * does ONNX Runtime for a LightGBM model exported to ONNX).
 * qs_doc_zero_band: in the selected slot, every value with |x| <=
 * (double)1e-35f (-0.0, denormals and the threshold itself included)
 * becomes +0.0, as LightGBM's dense readers read it; qs_row_zero_band the
 * same over row[0 .. n).  For a caller whose rows are dense (a float32
 * matrix read with qs_doc_set, say) or a LETOR user whose reference is
 * LightGBM's dense predict(). */
QS_API int qs_scorer_zero_band(const qs_scorer *s);
QS_API void qs_doc_zero_band(qs_workspace *w);
QS_API void qs_row_zero_band(double *row, size_t n);

/* Score the selected slot of the workspace: writes num_classes raw scores
 * (the margin; double or float32 values widened to double) into out[].
 * Returns 0, or -1 with err (may be NULL). */
QS_API int qs_score_doc(const qs_scorer *s, qs_workspace *w, qs_backend b, double *out, qs_error *err);
/* Score slots 0 .. n-1 (n <= qs_workspace_slots) together: out[d *
 * num_classes + c].  Returns 0, or -1 with err: QS_ERR_ARG when n is too
 * large, or b was not prepared for this scorer before the workspace was
 * made; a back end may report other failures (a device error, say). */
QS_API int qs_score_batch(const qs_scorer *s, qs_workspace *w, qs_backend b, uint32_t n, double *out,
                   qs_error *err);

/* The exit leaf of every tree for slots 0 .. n-1 (n <= qs_workspace_slots):
 * out[d * T + t] for T = the model's trees, in the source library's own
 * numbering, what its pred_leaf gives: LightGBM's leaf index, XGBoost's
 * node id (the canonical node index: equal to XGBoost's when the converter
 * dropped no unreachable node); for other sources the leaf's rank among
 * its tree's leaves in node order.  The `walk` back end walks the trees;
 * every other back end, auto included, takes the exit leaves the scalar
 * QuickScorer (`qs`) finds (the same numbers).  Returns 0, or -1 with err
 * (QS_ERR_ARG, QS_ERR_NOMEM). */
QS_API int qs_score_leaves(const qs_scorer *s, qs_workspace *w, qs_backend b, uint32_t n,
                           uint32_t *out, qs_error *err);

/* Score ndocs documents held as a dense row-major matrix: document d's
 * features are x[d * stride .. d * stride + num_features), with absent
 * features already filled (0.0 or NaN, as qs_doc_reset would) and values
 * rounded to the model's precision; out[d * num_classes + c] receives the
 * raw scores.  threads: 1 scores on the calling thread, 0 uses OpenMP's
 * default (every CPU), N uses N; the threads claim the rows in chunks of
 * whole workspace batches (about eight a thread) as each becomes free, each
 * with its own workspace.  A back end that takes whole batches
 * (QS_BACKEND_F_BATCH) gets every row in one call instead, and uses at
 * most `threads` CPU threads its own way; it may be called from several
 * threads at once.  The scores are the same bits for every thread count.
 * The rows are read as a dense matrix: for a LightGBM model, a value with
 * |x| <= (double)1e-35f counts as 0.0 (qs_scorer_zero_band; the matrix
 * itself is not changed).  Back end b must be prepared (QS_BACKEND_AUTO
 * always is).
 * Returns 0, or -1 with err (QS_ERR_UNSUPPORTED for threads > 1 in a build
 * without OpenMP). */
QS_API int qs_score_matrix(const qs_scorer *s, qs_backend b, const double *x, size_t ndocs,
                           size_t stride, double *out, unsigned threads, qs_error *err);
/* qs_score_matrix with the rows scored as they are, without the dense
 * matrix's reading: for rows that hold each value as its own input form
 * reads it (qs_letor_parse_row's rows keep the zero band, as LightGBM's
 * LibSVM reader does; qs-score's whole batches). */
QS_API int qs_score_matrix_as_read(const qs_scorer *s, qs_backend b, const double *x,
                                   size_t ndocs, size_t stride, double *out, unsigned threads,
                                   qs_error *err);

/* Tree reversal: for each tree, add to false_nodes[t] / true_nodes[t] how
 * many of its internal nodes send the workspace's selected document right
 * (false) or left (true).  A tree with more false than true nodes over a
 * sample scans fewer entries reversed (qs_compile_options.reverse). */
QS_API void qs_count_node_outcomes(const qs_scorer *s, const qs_workspace *w, uint64_t *false_nodes,
                            uint64_t *true_nodes);

/* Apply the model's output transform (sigmoid, softmax, exp ...) in place:
 * scores[0 .. qs_transform_columns(s)) are then the output (`argmax`, XGBoost
 * multi:softmax, leaves one column: the class index). */
QS_API void qs_transform(const qs_scorer *s, double *scores);
QS_API uint32_t qs_transform_columns(const qs_scorer *s);

/* Choose the output function qs_transform applies, by name: "none" (the raw
 * sums; a LightGBM random forest's divided by its iterations, as LightGBM's
 * raw_score), the model's own (qs_model_info.transform), or another one that
 * the source library computes for the model with arithmetic qs reproduces:
 * for a one-output CatBoost model, which picks its prediction type at
 * predict time, "sigmoid" (Probability) and "exp" (Exponent).  Anything
 * else is refused, the scorer unchanged: QS_ERR_UNSUPPORTED for a function
 * that would not be exact for this model (and for a model whose own is
 * "unsupported"), QS_ERR_ARG for an unknown name.  Call before the scorer is
 * shared between threads and before its workspaces are made (the output
 * columns may change: qs_transform_columns). */
QS_API int qs_scorer_set_transform(qs_scorer *s, const char *name, qs_error *err);

/* Parse one feature value token with the model's precision: strtod for
 * double models, strtof for float32 models (never (float)strtod).
 * Accepts nan, inf, signs, exponents.  Returns 0 on success. */
QS_API int qs_parse_value(const qs_scorer *s, const char *tok, size_t len, double *out);

/* The one rule for whole numbers given to options and environment variables:
 * decimal digits only (at least one; no sign, space, suffix or other byte),
 * a value in lo..hi.  0 with *out, or -1 (*out unchanged) for anything else,
 * however many digits (no overflow). */
QS_API int qs_parse_count(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
/* The same rule for a byte count, which may end with one binary suffix K, M
 * or G (or k, m, g: times 2^10, 2^20, 2^30) right after its digits ("64K",
 * "2G"): the bytes in lo..hi.  0 with *out, or -1 (*out unchanged). */
QS_API int qs_parse_bytes(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

/* Digits needed to print a score so it round-trips: 17 or 9. */
QS_API int qs_score_digits(const qs_scorer *s);

/* Room qs_format_score needs at out (the text and its NUL). */
#define QS_FORMAT_SCORE_MAX 32
/* Write v as printf's "%.*g" with precision `digits` writes it (glibc, in
 * the default rounding mode: the shortest of fixed and exponent form,
 * round-half-even on v's exact value, "-0", "inf", "nan"), byte for byte,
 * NUL-terminated; digits is 17 or 9 (qs_score_digits), any 1 .. 17 works.
 * Faster than snprintf for the magnitudes scores have.  Returns the length
 * without the NUL. */
QS_API size_t qs_format_score(char *out, double v, int digits);

/* ------------------------------------------------------- LETOR reader */

/* One line of LETOR/SVMLight text: `label [qid:Q] id:value ... [# comment]`.
 * The callbacks let the caller place values without copying. */
typedef struct qs_letor_line {
    const char *label; size_t label_len;   /* the label token, verbatim */
    const char *qid;   size_t qid_len;     /* qid value, or NULL when absent */
    long long max_id;  /* the largest feature id on the line, -1 when none (ids at
                          or beyond the model's feature count are ignored) */
} qs_letor_line;

/* Parse `line` (without its newline; a trailing CR is ignored).  For every
 * id:value pair, the value is parsed with the scorer's precision and set in
 * the workspace (reset first with `absent`).  Blank and comment-only lines
 * yield QS_OK with *is_doc = 0.  On a malformed line, fills err (err->line is
 * left to the caller). */
QS_API int qs_letor_parse(const qs_scorer *s, qs_workspace *w, qs_absent absent,
                   const char *line, size_t len, qs_letor_line *out,
                   int *is_doc, qs_error *err);

/* What reading a document needs from the model, and nothing else: its
 * feature count, its precision and the value of an absent feature.  With
 * it a program can read documents before the scorer is loaded (from the
 * .qsm's small INFO section) and score them later (qs_score_rows). */
typedef struct qs_row_format {
    uint32_t num_features;
    int float_precision;   /* 1: values rounded to float32 (qs_parse_value) */
    double fill;           /* an absent feature: 0.0, or NaN where absent means missing */
} qs_row_format;

/* The row format of the model in a .qsm image, for `absent`, from its INFO
 * section alone (the header, the section table and INFO are checked; the
 * rest is not read, so a file this accepts may still fail to load).
 * Returns 0, or -1 with err. */
QS_API int qs_qsm_get_row_format(const unsigned char *buf, size_t len, qs_absent absent,
                                 qs_row_format *f, qs_error *err);
/* The row format of a loaded scorer's model (the same as the .qsm's). */
QS_API void qs_scorer_get_row_format(const qs_scorer *s, qs_absent absent, qs_row_format *f);

/* qs_letor_parse into a caller's row of f->num_features values: for a
 * document line the whole row is first filled with f->fill, then every
 * id:value pair set; blank and comment lines leave it alone.  The same
 * values, checks and messages as qs_letor_parse. */
QS_API int qs_letor_parse_row(const qs_row_format *f, double *row, const char *line, size_t len,
                              qs_letor_line *out, int *is_doc, qs_error *err);

/* Score n documents (n <= qs_workspace_slots) held in the caller's rows
 * (rows[d]: num_features values, as qs_letor_parse_row fills them), with
 * w's scratch: out[d * num_classes + c], the bits qs_score_batch gives for
 * the same vectors.  Returns 0, or -1 with err as qs_score_batch. */
QS_API int qs_score_rows(const qs_scorer *s, qs_workspace *w, qs_backend b, uint32_t n,
                         const double *const *rows, double *out, qs_error *err);

/* ------------------------------------------- delimited text (CSV, TSV)
 *
 * One document per row of cells separated by `sep` (',' or '\t').  A cell
 * may be quoted as in RFC 4180 ("a, b", "say ""hi"""), within one line;
 * spaces around a cell (and tabs, when sep is not a tab) are ignored.  A
 * trailing CR is ignored; blank lines are no documents. */

/* One cell: text[0 .. len), quotes removed; a quoted cell's text may still
 * hold doubled quotes ("") that stand for one. */
typedef struct qs_dsv_cell {
    const char *text;
    size_t len;
    int quoted;
} qs_dsv_cell;

/* Cells one at a time: start with *pos = 0; returns 1 and the next cell,
 * 0 when the row has no more, -1 with err (QS_ERR_FORMAT, err->column set)
 * on an unterminated quote or text after a closing quote.  A row of n
 * separators has n + 1 cells. */
QS_API int qs_dsv_next_cell(char sep, const char *line, size_t len, size_t *pos,
                            qs_dsv_cell *cell, qs_error *err);

/* The layout of the rows (columns are 0-based here). */
typedef struct qs_dsv_format {
    char sep;          /* ',' or '\t' */
    uint32_t ncols;    /* cells in every row: another count is an error */
    long label_col;    /* the label's column, -1: none */
    long qid_col;      /* the query id's column, -1: none */
} qs_dsv_format;

/* The feature id of column `col`, or -1 for the label and qid columns.
 * Columns are numbered as LightGBM's and XGBoost's CSV readers do: the
 * label column is taken out and the columns after it move down by one; the
 * qid column keeps its number (as LightGBM's group_column: that feature is
 * simply never set). */
QS_API long long qs_dsv_feature_id(const qs_dsv_format *f, uint32_t col);

/* Parse one row (without its newline) into the workspace's selected slot
 * (reset first with `absent`): every feature cell is parsed with the
 * scorer's precision (qs_parse_value); an empty cell and NA, NaN, null (any
 * case) are missing (NaN).  out->label and out->qid point into the line
 * (NULL without such a column; qid NULL for an empty cell); out->max_id is
 * the largest feature id of the row.  Blank lines give QS_OK with *is_doc =
 * 0.  On a malformed row (a cell that is not a number, a label that is not
 * a number, another number of cells than f->ncols, a qid holding a tab or a
 * quote), fills err with err->column (1-based) set; err->line is left to
 * the caller. */
QS_API int qs_dsv_parse(const qs_scorer *s, qs_workspace *w, qs_absent absent,
                        const qs_dsv_format *f, const char *line, size_t len,
                        qs_letor_line *out, int *is_doc, qs_error *err);

/* qs_dsv_parse into a caller's row of rf->num_features values (as
 * qs_letor_parse_row): for a document row the whole row is first filled
 * with rf->fill, then every feature cell set; blank lines leave it alone.
 * The same checks and messages as qs_dsv_parse, and its values as written:
 * the row format names no model, so for a model whose library drops the
 * zero band from CSV (qs_scorer_zero_band) the caller applies
 * qs_row_zero_band to the row, which gives qs_dsv_parse's values. */
QS_API int qs_dsv_parse_row(const qs_row_format *rf, double *row, const qs_dsv_format *f,
                            const char *line, size_t len, qs_letor_line *out, int *is_doc,
                            qs_error *err);

/* ------------------------------------------------------- ranking metrics
 * (qs-eval): NDCG@k under every reference convention, ERR@k, MAP, P@k. */

/* The metric computed for every cutoff in the k list. */
typedef enum qs_metric {
    QS_METRIC_NDCG = 0,  /* sum gain(rel_r)*disc(r) / the same over the ideal order */
    QS_METRIC_ERR = 1,   /* RankLib's ERR@k: R = (2^rel-1)/16, sum_r R_r/r * prod_{i<r}(1-R_i) */
    QS_METRIC_MAP = 2,   /* average precision: rel > 0 is relevant, divided by all relevant docs */
    QS_METRIC_P = 3      /* precision: relevant docs among the first k */
} qs_metric;

/* The convention knobs of the README's qs-eval section; each enum's first
 * value is the default (QuickRank's and RankLib's NDCG). */
typedef enum { QS_GAIN_EXP2 = 0, QS_GAIN_LINEAR } qs_eval_gain;
typedef enum {
    QS_TIES_INPUT = 0,     /* tied scores keep the input order (stable sort) */
    QS_TIES_REVERSE,       /* reverse input order (numpy argsort()[::-1] on small lists) */
    QS_TIES_AVERAGE,       /* gain averaged over each tied group (McSherry-Najork) */
    QS_TIES_PESSIMISTIC,   /* lowest label first inside a tied group */
    QS_TIES_OPTIMISTIC     /* highest label first */
} qs_eval_ties;
typedef enum { QS_NOREL_ZERO = 0, QS_NOREL_ONE, QS_NOREL_SKIP } qs_eval_norel;
typedef enum { QS_BEYOND_CLAMP = 0, QS_BEYOND_ZERO } qs_eval_beyond;
typedef enum { QS_DISCOUNT_LOG2 = 0, QS_DISCOUNT_LETOR } qs_eval_discount;
typedef enum { QS_SCORE_DOUBLE = 0, QS_SCORE_FLOAT } qs_eval_score_type;
typedef enum { QS_GROUP_BLOCK = 0, QS_GROUP_QID } qs_eval_group;

typedef struct qs_eval_conv {
    qs_eval_gain gain;
    qs_eval_ties ties;
    qs_eval_norel norel;
    qs_eval_beyond beyond;
    qs_eval_discount discount;
    qs_eval_score_type score_type;
    qs_eval_group group;
} qs_eval_conv;

/* The defaults: exp2, input, 0, clamp, log2, double, block. */
QS_API void qs_eval_conv_default(qs_eval_conv *c);

/* Set every knob from a preset name (quickrank ranklib lightgbm xgboost
 * xgboost-minus trec sklearn rankeval letor).  Returns 0, or -1 with err
 * (QS_ERR_ARG) for an unknown name. */
QS_API int qs_eval_conv_preset(qs_eval_conv *c, const char *name, qs_error *err);

/* Set one knob by its option name without dashes ("gain", "ties", "norel",
 * "beyond", "discount", "score-type", "group") and value.  Returns 0, or -1
 * with err (QS_ERR_ARG) naming the accepted values. */
QS_API int qs_eval_conv_set(qs_eval_conv *c, const char *knob, const char *value, qs_error *err);

/* Names of the presets, NULL-terminated (for --help). */
extern QS_API const char *const qs_eval_preset_names[];

/* The knobs of c as text, "gain=exp2 ties=input norel=0 beyond=clamp
 * discount=log2 score-type=double group=block", into dst (cap >= 1,
 * truncated to fit); returns dst. */
QS_API const char *qs_eval_conv_describe(const qs_eval_conv *c, char *dst, size_t cap);
/* The first preset (qs_eval_preset_names) that sets every knob as c has
 * them, or NULL. */
QS_API const char *qs_eval_conv_preset_of(const qs_eval_conv *c);

/* The preset of the library a model comes from (QS_SRC_LIGHTGBM:
 * "lightgbm", QS_SRC_XGBOOST: "xgboost", QS_SRC_QUICKRANK: "quickrank"), or
 * NULL for a source whose library has no preset here (CatBoost, ONNX). */
QS_API const char *qs_eval_preset_of_source(qs_source src);

/* Metric by name ("ndcg", "err", "map", "p"); -1 when unknown. */
QS_API int qs_metric_from_name(const char *name);
QS_API const char *qs_metric_name(qs_metric m);

/* Largest label that gain exp2 accepts: 2^30-1 is still exact in a double
 * and far beyond any real grading scale. */
#define QS_EVAL_MAX_EXP2_LABEL 30
/* ERR's R=(2^rel-1)/16 is a probability only for labels 0..4. */
#define QS_EVAL_MAX_ERR_LABEL 4

typedef struct qs_eval_options {
    qs_metric metric;
    const unsigned *ks;   /* cutoffs; 0 means the whole list */
    size_t nk;            /* at least 1 */
    qs_eval_conv conv;
    /* Optional: called with each query's results as soon as they are known,
     * in query order (block grouping: when its block ends; qid grouping: in
     * qs_eval_finish); values[nk] as qs_eval_query_values.  With block
     * grouping and on_query set, nothing of a finished query is kept
     * (qs_eval_num_queries is 0; memory follows the largest query, plus the
     * qids of recent queries for the comeback check of qs_eval_add). */
    void (*on_query)(void *ctx, const char *qid, size_t qid_len, const double *values,
                     size_t ndocs);
    void *ctx;
} qs_eval_options;

/* One document, as read from a line: the label token verbatim (validated by
 * qs_eval_add), the qid (NULL or empty: the line had none; such lines form
 * one query per block, like a qid ""), and the score. */
typedef struct qs_eval_doc {
    const char *label;
    size_t label_len;
    const char *qid;
    size_t qid_len;
    double score;
} qs_eval_doc;

/* ---- line parsers.  Each takes one line without its '\n' (a trailing CR is
 * ignored), never reads past len, and on failure fills err with
 * QS_ERR_FORMAT and a message, leaving err->line to the caller. */

/* LETOR/SVMLight: `label [qid:Q] [anything ...] [# comment]`.  Only the label
 * (first token) and the qid: token matter; other tokens are not looked at.
 * Blank and comment-only lines give *is_doc = 0.  doc->score is untouched. */
QS_API int qs_eval_parse_letor(const char *line, size_t len, qs_eval_doc *doc, int *is_doc,
                        qs_error *err);

/* A score line: tab-separated columns, `column` (1-based) is parsed with
 * strtod; spaces around a column are ignored.  NaN is refused. */
QS_API int qs_eval_parse_score(const char *line, size_t len, unsigned column, double *score,
                        qs_error *err);

/* An annotated line from `qs-score --annotate`: label<TAB>qid<TAB>score
 * [<TAB>score ...]; `column` picks among the scores (1-based). */
QS_API int qs_eval_parse_annotated(const char *line, size_t len, unsigned column, qs_eval_doc *doc,
                            qs_error *err);

/* ---- the evaluator: documents go in one at a time, in input order. */
typedef struct qs_eval qs_eval;

/* Checks the options (QS_ERR_ARG for a combination that has no definition,
 * e.g. --ties=average with ERR or MAP). */
QS_API qs_eval *qs_eval_new(const qs_eval_options *opt, qs_error *err);
QS_API void qs_eval_free(qs_eval *e);

/* Add a document.  Returns 0; 1 when, with block grouping, this document
 * starts a block whose qid was already seen in an earlier block (the caller
 * may warn; the block is still a separate query); -1 with err on a bad label
 * (QS_ERR_FORMAT), on NDCG gains whose sum over the query is not a finite
 * double (QS_ERR_FORMAT), or no memory.  With block grouping a query is
 * computed as soon as its block ends; with qid grouping every document is held
 * until qs_eval_finish.  With on_query and block grouping, a qid is noticed
 * coming back only within the last 32768 to 65536 queries. */
QS_API int qs_eval_add(qs_eval *e, const qs_eval_doc *doc, qs_error *err);

/* Compute what is left.  Returns 0, or -1 with err (QS_ERR_FORMAT "no
 * documents" when nothing was added). */
QS_API int qs_eval_finish(qs_eval *e, qs_error *err);

/* Results, valid after qs_eval_finish: queries in input order (block order,
 * or first appearance with qid grouping); values[i] per cutoff, NAN when the
 * query is left out of the mean (--norel=skip). */
QS_API size_t qs_eval_num_queries(const qs_eval *e);
QS_API const char *qs_eval_query_qid(const qs_eval *e, size_t q, size_t *len);
QS_API const double *qs_eval_query_values(const qs_eval *e, size_t q);
QS_API size_t qs_eval_query_docs(const qs_eval *e, size_t q);
/* Arithmetic mean per cutoff over the queries not left out, summed in query
 * order; NAN where every query was left out. */
QS_API const double *qs_eval_mean(const qs_eval *e);

/* The metric of one query of n >= 1 documents, for every cutoff (out[nk]);
 * NAN = left out of the mean.  Labels must be valid for the options (see
 * qs_eval_add); scores are rounded to float32 here for QS_SCORE_FLOAT.
 * Returns 0, or -1 with err (no memory, bad arguments).  For library users
 * and tests that have the arrays at hand. */
QS_API int qs_eval_query(const qs_eval_options *opt, const double *labels, const double *scores,
                  size_t n, double *out, qs_error *err);

/* ------------------------------------------------------- utilities */

/* CRC-32C (Castagnoli) of a buffer, continuing from `crc` (start with 0). */
QS_API uint32_t qs_crc32c(uint32_t crc, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* QS_H */
