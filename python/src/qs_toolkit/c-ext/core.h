/* core.h: what the files of qs_toolkit's C extension share.  The extension
 * is split by type, as python-zstandard's c-ext/ is:
 *   errors.c   the exceptions and raising a libqs error as one
 *   buffers.c  the caller's arrays: dense and CSR checks, chunked scoring
 *   model.c    the Model type: opening (qs_open), scorers and their lock,
 *              facts, info, the .qsm image, close
 *   predict.c  predict and predict_leaves on dense and CSR input
 *   module.c   the module: back ends, build facts, eval, format_score
 * args.h (beside this folder) holds the plain-C array checks and copies
 * that the fuzz target runs too.
 *
 * Concurrency: a Model's scorers are guarded by a read-write lock.  Scoring
 * holds it for reading (several Python threads score side by side); what
 * changes a scorer (preparing a back end, making the scorer of another
 * `trees=` or `transform=`, close) holds it for writing.  The lock is
 * always taken with the GIL released, so a thread waiting for it never
 * holds the GIL. */
#ifndef QS_TOOLKIT_CORE_H
#define QS_TOOLKIT_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL qs_toolkit_ARRAY_API
#ifndef QS_TOOLKIT_MODULE_C
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <pthread.h>
#include <stdint.h>

#include "qs.h"

#include "../args.h"

/* ------------------------------------------------------------ errors.c */

extern PyObject *qs_Error, *qs_FormatError, *qs_UnsupportedError, *qs_LimitError,
    *qs_DeviceError;
/* Raise the exception of a library error (its message after prefix; code,
 * line, offset as attributes); returns NULL. */
PyObject *raise_qs(const qs_error *err, const char *prefix);
/* Create the exceptions in module m.  0, or -1 with an exception. */
int errors_init(PyObject *m);

/* ------------------------------------------------------------- model.c */

/* A scorer of the model: the base one, or one with other iterations
 * (trees=) or another output function (transform="name"). */
typedef struct derived {
    uint64_t trees;        /* 0: every tree */
    char tname[32];        /* "" : the model's own output function */
    qs_scorer *s;
} derived;

#define MAX_DERIVED 16

typedef struct {
    PyObject_HEAD
    pthread_rwlock_t lock;
    int lock_ok;
    int closed;
    qs_opened o;           /* the image (derived scorers are loaded from it), its kind,
                              version and tuning record; o.scorer is d[0].s */
    qs_model_info info;    /* of the whole model; info.transform points into base */
    char transform[32];
    char objective[128];
    uint32_t num_features; /* the model's features (qs's numbering) */
    uint32_t lead;         /* features before the caller's column 0 (CatBoost: 1) */
    uint32_t num_classes;
    uint64_t num_trees, iterations;
    int precision_float, zero_band;
    double fill[3];        /* an absent CSR entry's value, by qs_absent (read at load: no
                              check made before the lock touches a scorer) */
    PyObject *features;    /* [(name, type)] the model recorded, or [] */
    PyObject *categories;  /* {feature: [category, ...]} (XGBoost's encoder), or {} */
    PyObject *pandas_categorical; /* LightGBM's pandas_categorical JSON text, or None */
    size_t nd;
    derived d[MAX_DERIVED]; /* d[0]: the base scorer (trees 0, tname "") */
} ModelObject;

extern PyTypeObject ModelType;

/* What a call asks of the scorer. */
typedef struct want {
    qs_backend b;
    uint64_t trees;        /* 0: all */
    int transform;         /* 0: raw; 1: apply qs_transform */
    char tname[32];        /* with transform: "" the model's own, else a name */
} want;

unsigned qs_cpus(void);
int check_open(ModelObject *self);
PyObject *closed_error(void);
/* The scorer for w with the read lock held (GIL released by the caller),
 * or NULL with err (*closed when the model was closed meanwhile). */
qs_scorer *acquire(ModelObject *self, const want *w, int *closed, qs_error *err);
int parse_want(ModelObject *self, PyObject *backend, PyObject *transform, PyObject *trees,
               want *w);
int parse_threads(PyObject *threads, unsigned *out);

/* ----------------------------------------------------------- buffers.c */

int dense_check(ModelObject *self, PyObject *X, dense_src *src, size_t *n);
int csr_check(ModelObject *self, PyObject *shape, PyObject *indptr, PyObject *indices,
              PyObject *data, const char *absent, csr_src *c);
PyArrayObject *new_out(size_t n, uint32_t cols, int typenum);
void finish_rows(const qs_scorer *s, const want *w, double *raw, size_t n, uint32_t K,
                 uint32_t tc, double *out);
typedef void (*fill_fn)(const void *src, size_t r0, size_t r1, double *buf);
void dense_fill(const void *src, size_t r0, size_t r1, double *buf);
void csr_fill(const void *src, size_t r0, size_t r1, double *buf);
int score_chunked(qs_scorer *s, const want *w, uint32_t nf, size_t n, unsigned nth, uint32_t K,
                  uint32_t tc, double *out, int as_read, fill_fn fill, const void *src,
                  qs_error *err, int *oom);

/* ----------------------------------------------------------- predict.c */

PyObject *Model_predict_dense(ModelObject *self, PyObject *args, PyObject *kw);
PyObject *Model_predict_csr(ModelObject *self, PyObject *args, PyObject *kw);
PyObject *Model_leaves_dense(ModelObject *self, PyObject *args, PyObject *kw);
PyObject *Model_leaves_csr(ModelObject *self, PyObject *args, PyObject *kw);

#endif
