/* convert.h: the model readers (internal to libqs).  Each reader turns one
 * foreign format into a validated canonical model; convert.c holds the
 * table that qs_convert dispatches on.  Depends on model/ and common/. */
#ifndef QS_CONVERT_H
#define QS_CONVERT_H

#include "model/model.h"

typedef struct qs_reader {
    qs_format format;
    const char *name;   /* for messages: "LightGBM text" */
    qs_model *(*read)(const char *buf, size_t len, qs_error *err);
} qs_reader;

#endif
