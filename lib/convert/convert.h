/* convert.h: the model readers (internal to libqs).  Each reader turns one
 * foreign format into a validated canonical model; convert.c holds the
 * table that qs_convert dispatches on.  Depends on model/ and common/. */
#ifndef QS_CONVERT_H
#define QS_CONVERT_H

#include "model/model.h"

/* A row of the readers' table (convert.c).  Its source's facts are the
 * source table's row (common/source.c, qs_source_get(info.source)). */
typedef struct qs_reader {
    qs_reader_info info;   /* format, source, names (public: qs_reader_get) */
    /* whether the input is this format: raw is the whole input, p the same
     * past a byte-order mark and leading white space (n > 0 unless
     * binary); no two rows say yes to the same input */
    int (*detect)(const char *raw, size_t len, const char *p, size_t n);
    int binary;            /* 1: a binary format, detected from raw bytes alone */
    /* the reader; NULL in a build without the readers (make READERS=0),
     * where qs_convert refuses the format by its description */
    qs_model *(*read)(const char *buf, size_t len, qs_error *err);
    /* the writer's version, into out[cap] (0), or -1; NULL: not recorded */
    int (*version)(const char *buf, size_t len, char *out, size_t cap);
} qs_reader;

/* Where an XGBoost binary model's learner parameters start: 4 past the
 * "binf" that XGBoost 1.3 and later write (or the "bs64" of its old base64
 * form, which the reader refuses), 0 for one without it (XGBoost 1.0 to
 * 1.2, and before 1.0) whose objective's and booster's names stand where
 * the format puts them; -1: not one. */
long qs_xgboost_binary_at(const char *buf, size_t len);

/* The row of a format, NULL when none. */
const qs_reader *qs_reader_row(qs_format fmt);

/* cbm.c: CatBoost's binary model (.cbm), and the CatBoost version it
 * records. */
qs_model *qs_read_catboost_cbm(const char *buf, size_t len, qs_error *err);
int qs_version_catboost_cbm(const char *buf, size_t len, char *out, size_t cap);

/* catboost.c: the transform CatBoost's prediction for a loss function is
 * ("sigmoid", "fmath-exp", ...; "unsupported" for an unknown or NULL loss);
 * the JSON and .cbm readers share it. */
const char *qs_catboost_loss_transform(const char *loss);

/* version.c: the writers' versions, as each row's `version`. */
int qs_version_lightgbm(const char *buf, size_t len, char *out, size_t cap);
int qs_version_xgboost(const char *buf, size_t len, char *out, size_t cap);

#endif
