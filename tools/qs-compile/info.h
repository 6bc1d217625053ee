/* info.h: qs-compile --info, the report of a model's facts (the library
 * supplies them; this only formats). */
#ifndef QS_COMPILE_INFO_H
#define QS_COMPILE_INFO_H

#include "tool.h"

typedef struct info_input {
    const char *name;              /* for the report */
    const char *kind;              /* "a compiled .qsm model", "a LightGBM text model", ... */
    size_t bytes;                  /* the file's size (after zstd decompression) */
    const char *source_version;    /* NULL: not recorded */
    const qs_qsm_file_info *qsm;   /* the container, for a .qsm; NULL otherwise */
    const qs_tuning *tuning;       /* its tuning record (TUNE); NULL: none */
    const char *src;               /* the model's own bytes (categories), or NULL */
    size_t src_len;
} info_input;

/* Write the report of scorer s (loaded from the .qsm, or from the image
 * qs-compile would write) to f: text, or one JSON object. */
void info_report(FILE *f, int json, const info_input *in, const qs_scorer *s);

#endif
