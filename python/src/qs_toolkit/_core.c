/* _core.c: the CPython extension of qs_toolkit, on the CPython and NumPy C
 * APIs over libqs (include/qs.h).  It holds one loaded model per Model
 * object and scores NumPy matrices (dense, or CSR's three arrays) with
 * qs_score_matrix / qs_score_matrix_as_read, the GIL released.
 *
 * Concurrency: a Model's scorers are guarded by a read-write lock.  Scoring
 * holds it for reading (several Python threads score side by side); what
 * changes a scorer (preparing a back end, making the scorer of another
 * `trees=` or `transform=`, close) holds it for writing.  The lock is
 * always taken with the GIL released, so a thread waiting for it never
 * holds the GIL. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "qs.h"

#include "args.h"

/* ------------------------------------------------------------ errors */

static PyObject *Error, *FormatError, *UnsupportedError, *LimitError, *DeviceError;

/* Raise the exception of a library error: its message, and the status,
 * line and offset as attributes. */
static PyObject *raise_qs(const qs_error *err, const char *prefix)
{
    PyObject *type = Error;
    switch (err->code) {
    case QS_ERR_FORMAT: type = FormatError; break;
    case QS_ERR_UNSUPPORTED: type = UnsupportedError; break;
    case QS_ERR_LIMIT: type = LimitError; break;
    case QS_ERR_NOMEM: return PyErr_NoMemory();
    case QS_ERR_ARG: type = PyExc_ValueError; break;
    case QS_ERR_DEVICE: type = DeviceError; break;
    default: break;
    }
    char where[64] = "";
    if (err->line > 0)
        snprintf(where, sizeof where, " (line %ld)", err->line);
    else if (err->offset >= 0 && err->code == QS_ERR_FORMAT)
        snprintf(where, sizeof where, " (byte %lld)", err->offset);
    PyObject *msg = PyUnicode_FromFormat("%s%s%s", prefix ? prefix : "",
                                         err->msg[0] ? err->msg : "unknown error", where);
    if (!msg)
        return NULL;
    PyObject *exc = PyObject_CallOneArg(type, msg);
    Py_DECREF(msg);
    if (!exc)
        return NULL;
    if (type != PyExc_ValueError) {
        PyObject *v;
        if ((v = PyLong_FromLong((long)err->code))) {
            PyObject_SetAttrString(exc, "code", v);
            Py_DECREF(v);
        }
        if ((v = PyLong_FromLong(err->line))) {
            PyObject_SetAttrString(exc, "line", v);
            Py_DECREF(v);
        }
        if ((v = PyLong_FromLongLong(err->offset))) {
            PyObject_SetAttrString(exc, "offset", v);
            Py_DECREF(v);
        }
        PyErr_Clear();
    }
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return NULL;
}

/* ------------------------------------------------------------ models */

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
    unsigned char *qsm;    /* the .qsm image (derived scorers are loaded from it) */
    size_t qsm_len;
    int is_qsm;            /* loaded from a .qsm (else converted and compiled here) */
    qs_tuning tuning;
    int tuned;             /* 1: the tuning record was measured on this machine */
    int has_tuning;
    char source_version[64];
    char kind[64];         /* "a .qsm", or the reader's kind ("a LightGBM text model") */
    qs_model_info info;    /* of the whole model; info.transform points into base */
    char transform[32];
    char objective[128];
    uint32_t num_features, num_classes;
    uint64_t num_trees, iterations;
    int precision_float, zero_band;
    double fill[3];        /* an absent CSR entry's value, by qs_absent (read at load: no
                              check made before the lock touches a scorer) */
    size_t nd;
    derived d[MAX_DERIVED]; /* d[0]: the base scorer (trees 0, tname "") */
} ModelObject;

/* The bound on a model's bytes, as the tools have it: QS_MAX_INPUT (a byte
 * count, suffixes K, M, G; unset or empty: 1 GiB).  0 with *out, or -1
 * with ValueError for a value that is none. */
#define MAX_INPUT_DEFAULT ((size_t)1 << 30)
static int max_input(size_t *out)
{
    const char *v = getenv("QS_MAX_INPUT");
    uint64_t x;
    if (!v || !*v) {
        *out = MAX_INPUT_DEFAULT;
        return 0;
    }
    if (qs_parse_bytes(v, 1, SIZE_MAX >> 1, &x) != 0) {
        PyErr_Format(PyExc_ValueError, "bad QS_MAX_INPUT '%s' (expected a byte count such as "
                     "1000000, 64K, 512M or 2G)", v);
        return -1;
    }
    *out = (size_t)x;
    return 0;
}

/* Decompress a zstd frame, at most `cap` bytes out.  NULL with err. */
static unsigned char *unzstd(const unsigned char *buf, size_t len, size_t cap, size_t *out_len,
                             qs_error *err)
{
    ZSTD_DStream *z = ZSTD_createDStream();
    if (!z) {
        err->code = QS_ERR_NOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return NULL;
    }
    size_t have = 0, room = len < cap / 4 ? len * 4 + 4096 : cap;
    unsigned char *out = malloc(room);
    ZSTD_inBuffer in = { buf, len, 0 };
    size_t rc = ZSTD_initDStream(z);
    while (out && !ZSTD_isError(rc)) {
        if (have == room) {
            if (room >= cap) {
                err->code = QS_ERR_LIMIT;
                snprintf(err->msg, sizeof err->msg, "the decompressed model is larger than the "
                         "limit of %zu bytes (set QS_MAX_INPUT to raise it)", cap);
                goto fail;
            }
            room = room > cap / 2 ? cap : room * 2;
            unsigned char *n = realloc(out, room);
            if (!n)
                break;
            out = n;
        }
        ZSTD_outBuffer o = { out, room, have };
        rc = ZSTD_decompressStream(z, &o, &in);
        have = o.pos;
        if (ZSTD_isError(rc))
            break;
        if (rc == 0 && in.pos == in.size) {
            ZSTD_freeDStream(z);
            *out_len = have;
            return out;
        }
        if (in.pos == in.size && o.pos < o.size) {
            err->code = QS_ERR_FORMAT;
            snprintf(err->msg, sizeof err->msg, "truncated zstd frame");
            goto fail;
        }
    }
    if (!out) {
        err->code = QS_ERR_NOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory");
    } else {
        err->code = QS_ERR_FORMAT;
        snprintf(err->msg, sizeof err->msg, "bad zstd data: %s", ZSTD_getErrorName(rc));
    }
fail:
    free(out);
    ZSTD_freeDStream(z);
    return NULL;
}

static const unsigned char QSM_MAGIC[8] = { 0x89, 'Q', 'S', 'M', '\r', '\n', 0x1a, '\n' };

static unsigned cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    return 1;
}

/* Load a scorer from the model's image, with the tuning record applied
 * where it was measured here.  GIL released. */
static qs_scorer *load_scorer(ModelObject *self, qs_error *err)
{
    uint32_t tb = self->tuned ? self->tuning.tree_block : QS_KEEP;
    uint32_t delta = self->tuned && self->tuning.delta ? self->tuning.delta : QS_KEEP;
    qs_scorer *s = qs_scorer_load_layout(self->qsm, self->qsm_len, cpus(), tb, delta, err);
    if (s && self->tuned && qs_scorer_apply_tuning(s, &self->tuning, err) != 0) {
        qs_scorer_free(s);
        return NULL;
    }
    return s;
}

static int Model_init(ModelObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "data", "format", NULL };
    Py_buffer view;
    const char *fmt_name = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|z:Model", kwlist, &view, &fmt_name))
        return -1;
    if (self->lock_ok || self->qsm) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_RuntimeError, "Model.__init__ called twice");
        return -1;
    }
    qs_format fmt = QS_FMT_UNKNOWN;
    if (fmt_name) {
        const qs_reader_info *r = qs_reader_by_name(fmt_name);
        if (!r) {
            /* the names the readers' table gives (lib/convert/convert.c) */
            char names[256];
            size_t k = 0, total = 0, seen = 0;
            const qs_reader_info *ri;
            for (size_t i = 0; (ri = qs_reader_get(i)) != NULL; i++)
                total += (ri->name != NULL) + (ri->alias != NULL);
            names[0] = '\0';
            for (size_t i = 0; (ri = qs_reader_get(i)) != NULL; i++) {
                const char *nm[2] = { ri->name, ri->alias };
                for (int j = 0; j < 2; j++) {
                    if (!nm[j] || k >= sizeof names)
                        continue;
                    seen++;
                    int w = snprintf(names + k, sizeof names - k, "%s%s",
                                     seen == 1 ? "" : seen == total ? " or " : ", ", nm[j]);
                    k += w > 0 ? (size_t)w : 0;
                }
            }
            PyBuffer_Release(&view);
            PyErr_Format(PyExc_ValueError, "unknown model format '%s' (expected %s)", fmt_name,
                         names);
            return -1;
        }
        fmt = r->format;
    }
    qs_error err;
    qs_error_clear(&err);
    int failed = 0;
    const char *what = NULL;
    size_t limit;
    if (max_input(&limit) != 0) {
        PyBuffer_Release(&view);
        return -1;
    }
    Py_BEGIN_ALLOW_THREADS
    const unsigned char *buf = view.buf;
    size_t len = (size_t)view.len;
    unsigned char *plain = NULL;
    if (len >= 4 && buf[0] == 0x28 && buf[1] == 0xb5 && buf[2] == 0x2f && buf[3] == 0xfd) {
        plain = unzstd(buf, len, limit, &len, &err);
        buf = plain;
        if (!plain) {
            failed = 1;
            what = "zstd: ";
        }
    }
    if (!failed && len >= 8 && memcmp(buf, QSM_MAGIC, 8) == 0 && fmt == QS_FMT_UNKNOWN) {
        self->is_qsm = 1;
        snprintf(self->kind, sizeof self->kind, "a compiled .qsm model");
        self->qsm = malloc(len ? len : 1);
        if (!self->qsm) {
            err.code = QS_ERR_NOMEM;
            failed = 1;
        } else {
            memcpy(self->qsm, buf, len);
            self->qsm_len = len;
        }
    } else if (!failed) {
        if (fmt == QS_FMT_UNKNOWN)
            fmt = qs_detect_format((const char *)buf, len);
        const qs_reader_info *r = qs_reader_by_format(fmt);
        snprintf(self->kind, sizeof self->kind, "%s", r ? r->kind : "an unknown format");
        if (qs_source_version((const char *)buf, len, self->source_version,
                              sizeof self->source_version) != 0)
            self->source_version[0] = 0;
        qs_model *m = fmt == QS_FMT_CANONICAL ? qs_model_from_text((const char *)buf, len, &err)
                                              : qs_convert(fmt, (const char *)buf, len, &err);
        if (!m) {
            failed = 1;
        } else {
            qs_compile_options opt = { 0, 0, 0, NULL };
            if (qs_compile(m, &opt, &self->qsm, &self->qsm_len, &err) != 0)
                failed = 1;
            qs_model_free(m);
        }
    }
    free(plain);
    if (!failed && self->is_qsm) {
        qs_error terr;
        qs_error_clear(&terr);
        self->has_tuning = qs_qsm_get_tuning(self->qsm, self->qsm_len, &self->tuning, &terr) == 1;
        self->tuned = self->has_tuning && qs_tuning_matches(&self->tuning);
    }
    if (!failed) {
        qs_scorer *s = load_scorer(self, &err);
        if (!s) {
            failed = 1;
        } else {
            self->d[0].s = s;
            self->d[0].trees = 0;
            self->d[0].tname[0] = 0;
            self->nd = 1;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (failed) {
        free(self->qsm);
        self->qsm = NULL;
        if (err.code == QS_ERR_NOMEM && !err.msg[0]) {
            PyErr_NoMemory();
            return -1;
        }
        raise_qs(&err, what);
        return -1;
    }
    const qs_scorer *s = self->d[0].s;
    const qs_model *m = qs_scorer_model(s);
    qs_model_get_info(m, &self->info);
    snprintf(self->transform, sizeof self->transform, "%s", self->info.transform);
    qs_model_stats st;
    if (qs_model_get_stats(m, &st, &err) == 0) {
        snprintf(self->objective, sizeof self->objective, "%s", st.objective ? st.objective : "");
        qs_model_stats_free(&st);
    }
    self->num_features = self->info.num_features;
    self->num_classes = self->info.num_classes;
    self->num_trees = self->info.num_trees;
    self->iterations = qs_scorer_iterations(s);
    self->precision_float = self->info.float_precision;
    self->zero_band = qs_scorer_zero_band(s);
    static const qs_absent modes[3] = { QS_ABSENT_DEFAULT, QS_ABSENT_ZERO, QS_ABSENT_MISSING };
    for (int i = 0; i < 3; i++) {
        qs_row_format rf;
        qs_scorer_get_row_format(s, modes[i], &rf);
        self->fill[i] = rf.fill;
    }
    if (pthread_rwlock_init(&self->lock, NULL) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "cannot create the model's lock");
        return -1;
    }
    self->lock_ok = 1;
    return 0;
}

static void free_scorers(ModelObject *self)
{
    for (size_t i = 0; i < self->nd; i++)
        qs_scorer_free(self->d[i].s);
    self->nd = 0;
    free(self->qsm);
    self->qsm = NULL;
}

static void Model_dealloc(ModelObject *self)
{
    free_scorers(self);
    if (self->lock_ok)
        pthread_rwlock_destroy(&self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *closed_error(void)
{
    PyErr_SetString(PyExc_ValueError, "the model is closed");
    return NULL;
}

static int check_open(ModelObject *self)
{
    if (!self->lock_ok) {
        PyErr_SetString(PyExc_ValueError, "the model was not loaded");
        return -1;
    }
    if (self->closed) {
        closed_error();
        return -1;
    }
    return 0;
}

static PyObject *Model_close(ModelObject *self, PyObject *unused)
{
    if (!self->lock_ok || self->closed)
        Py_RETURN_NONE;
    Py_BEGIN_ALLOW_THREADS
    pthread_rwlock_wrlock(&self->lock);
    self->closed = 1;
    free_scorers(self);
    pthread_rwlock_unlock(&self->lock);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* What a call asks of the scorer. */
typedef struct want {
    qs_backend b;
    uint64_t trees;        /* 0: all */
    int transform;         /* 0: raw; 1: apply qs_transform */
    char tname[32];        /* with transform: "" the model's own, else a name */
} want;

/* Find (or make and prepare) the scorer for w, and return it with the read
 * lock held.  GIL released by the caller.  NULL with err (lock not held);
 * *closed set when the model was closed meanwhile. */
static derived *find(ModelObject *self, const want *w)
{
    for (size_t i = 0; i < self->nd; i++)
        if (self->d[i].trees == w->trees && strcmp(self->d[i].tname, w->tname) == 0)
            return &self->d[i];
    return NULL;
}

static qs_scorer *acquire(ModelObject *self, const want *w, int *closed, qs_error *err)
{
    pthread_rwlock_rdlock(&self->lock);
    if (self->closed) {
        pthread_rwlock_unlock(&self->lock);
        *closed = 1;
        return NULL;
    }
    derived *d = find(self, w);
    if (d && qs_scorer_prepared(d->s, w->b))
        return d->s;
    pthread_rwlock_unlock(&self->lock);
    pthread_rwlock_wrlock(&self->lock);
    if (self->closed) {
        pthread_rwlock_unlock(&self->lock);
        *closed = 1;
        return NULL;
    }
    d = find(self, w);
    if (!d) {
        if (self->nd == MAX_DERIVED) {
            /* keep the base, drop the oldest other (no one holds it: we
             * hold the write lock) */
            qs_scorer_free(self->d[1].s);
            memmove(&self->d[1], &self->d[2], (MAX_DERIVED - 2) * sizeof self->d[0]);
            self->nd--;
        }
        qs_scorer *s = load_scorer(self, err);
        if (s && w->trees && qs_scorer_truncate(s, w->trees, err) != 0) {
            qs_scorer_free(s);
            s = NULL;
        }
        if (s && w->tname[0] && qs_scorer_set_transform(s, w->tname, err) != 0) {
            qs_scorer_free(s);
            s = NULL;
        }
        if (!s) {
            pthread_rwlock_unlock(&self->lock);
            return NULL;
        }
        d = &self->d[self->nd++];
        d->s = s;
        d->trees = w->trees;
        snprintf(d->tname, sizeof d->tname, "%s", w->tname);
    }
    if (!qs_scorer_prepared(d->s, w->b) && qs_scorer_prepare(d->s, w->b, err) != 0) {
        pthread_rwlock_unlock(&self->lock);
        return NULL;
    }
    pthread_rwlock_unlock(&self->lock);
    /* again for reading; the scorer stays (only close frees scorers while
     * the model is open... and the eviction above, which a reader's lock
     * keeps away from the one it holds) */
    pthread_rwlock_rdlock(&self->lock);
    if (self->closed) {
        pthread_rwlock_unlock(&self->lock);
        *closed = 1;
        return NULL;
    }
    d = find(self, w);
    if (!d || !qs_scorer_prepared(d->s, w->b)) {
        /* evicted between the locks by another call: rare; ask again */
        pthread_rwlock_unlock(&self->lock);
        return acquire(self, w, closed, err);
    }
    return d->s;
}

/* Parse backend=, transform=, trees= into w.  -1 with an exception. */
static int parse_want(ModelObject *self, PyObject *backend, PyObject *transform, PyObject *trees,
                      want *w)
{
    memset(w, 0, sizeof *w);
    w->b = QS_BACKEND_AUTO;
    if (backend && backend != Py_None) {
        const char *name = PyUnicode_Check(backend) ? PyUnicode_AsUTF8(backend) : NULL;
        if (!name) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "backend must be a string (a name of "
                                                 "qs_toolkit.backends())");
            return -1;
        }
        w->b = qs_backend_find(name);
        if (w->b == QS_BACKEND_UNKNOWN) {
            PyErr_Format(PyExc_ValueError, "unknown back end '%s' (qs_toolkit.backends() "
                         "lists them)", name);
            return -1;
        }
    }
    if (transform && transform != Py_None && transform != Py_False) {
        if (transform == Py_True) {
            w->transform = 1;
        } else if (PyUnicode_Check(transform)) {
            const char *name = PyUnicode_AsUTF8(transform);
            if (!name)
                return -1;
            if (strlen(name) == 0 || strlen(name) >= sizeof w->tname) {
                PyErr_Format(PyExc_ValueError, "unknown transform '%s'", name);
                return -1;
            }
            w->transform = 1;
            snprintf(w->tname, sizeof w->tname, "%s", name);
        } else {
            PyErr_SetString(PyExc_TypeError, "transform must be True, False or a transform's name");
            return -1;
        }
        if (!w->tname[0] && strcmp(self->transform, "unsupported") == 0) {
            PyErr_SetString(UnsupportedError, "the model's output transform cannot be "
                                              "reproduced exactly; predict without transform");
            return -1;
        }
    }
    if (trees && trees != Py_None) {
        if (!PyIndex_Check(trees) || PyBool_Check(trees)) {
            PyErr_SetString(PyExc_TypeError, "trees must be an int (iterations) or None");
            return -1;
        }
        PyObject *ti = PyNumber_Index(trees);
        if (!ti)
            return -1;
        int over = 0;
        long long t = PyLong_AsLongLongAndOverflow(ti, &over);
        if (t == -1 && !over && PyErr_Occurred()) {
            Py_DECREF(ti);
            return -1;
        }
        if (over < 0 || (!over && t < 1)) {
            PyErr_Format(PyExc_ValueError, "trees must be at least 1, not %S", ti);
            Py_DECREF(ti);
            return -1;
        }
        Py_DECREF(ti);
        /* as qs-score: more iterations than the model has (any count, 2**64
         * too) score the whole model */
        if (!over && (uint64_t)t < self->iterations)
            w->trees = (uint64_t)t;
    }
    return 0;
}

static int parse_threads(PyObject *threads, unsigned *out)
{
    if (!threads || threads == Py_None) {
        *out = cpus();
        return 0;
    }
    if (!PyIndex_Check(threads) || PyBool_Check(threads)) {
        PyErr_SetString(PyExc_TypeError, "threads must be an int or None");
        return -1;
    }
    PyObject *ti = PyNumber_Index(threads);
    if (!ti)
        return -1;
    int over = 0;
    long long t = PyLong_AsLongLongAndOverflow(ti, &over);
    if (t == -1 && !over && PyErr_Occurred()) {
        Py_DECREF(ti);
        return -1;
    }
    if (over || t < 1 || t > 4096) {
        PyErr_Format(PyExc_ValueError, "threads must be 1 ... 4096, not %S", ti);
        Py_DECREF(ti);
        return -1;
    }
    Py_DECREF(ti);
    *out = (unsigned)t;
    return 0;
}

/* Rows per converted chunk: about 8 MiB of doubles, at least 256 rows
 * per thread. */
static size_t chunk_rows(uint32_t nf, unsigned threads)
{
    size_t r = ((size_t)8 << 20) / ((size_t)(nf ? nf : 1) * sizeof(double));
    size_t min = (size_t)256 * threads;
    return r < min ? min : r;
}

static void dense_fill(const void *src, size_t r0, size_t r1, double *buf)
{
    gather(src, r0, r1, buf);
}

/* Apply the output function to n rows of K raw scores in raw[], writing
 * tc columns per row to out[]. */
static void finish_rows(const qs_scorer *s, const want *w, double *raw, size_t n, uint32_t K,
                        uint32_t tc, double *out)
{
    for (size_t i = 0; i < n; i++) {
        double *r = raw + i * K;
        if (w->transform)
            qs_transform(s, r);
        if (out != raw)
            memcpy(out + i * tc, r, tc * sizeof(double));
    }
}

/* The output array: (n,) for one column, else (n, cols). */
static PyArrayObject *new_out(size_t n, uint32_t cols, int typenum)
{
    npy_intp dims[2] = { (npy_intp)n, (npy_intp)cols };
    return (PyArrayObject *)PyArray_SimpleNew(cols == 1 ? 1 : 2, dims, typenum);
}

/* Rows 0 .. n-1 of nf features, gathered a chunk at a time into float64
 * rows by fill(src, r0, r1, buf), scored (as_read: the values as given, no
 * zero band; else as qs_score_matrix reads a dense matrix) and finished
 * into out (tc columns per row).  Without the GIL.  The library's status
 * (err set), or 0; *oom when a chunk's buffers could not be had. */
typedef void (*fill_fn)(const void *src, size_t r0, size_t r1, double *buf);
static int score_chunked(qs_scorer *s, const want *w, uint32_t nf, size_t n, unsigned nth,
                         uint32_t K, uint32_t tc, double *out, int as_read, fill_fn fill,
                         const void *src, qs_error *err, int *oom)
{
    if (n == 0)
        return 0;
    const size_t cr = chunk_rows(nf, nth);
    const size_t rows = cr < n ? cr : n;
    const int finish = w->transform || tc != K;
    double *buf = malloc(rows * (nf ? nf : 1) * sizeof(double));
    double *raw = finish ? malloc(rows * K * sizeof(double)) : NULL;
    int rc = 0;
    if (!buf || (finish && !raw)) {
        *oom = 1;
    } else {
        for (size_t r0 = 0; r0 < n && rc == 0; r0 += rows) {
            const size_t r1 = r0 + rows < n ? r0 + rows : n;
            double *dst = raw ? raw : out + r0 * K;
            fill(src, r0, r1, buf);
            rc = as_read ? qs_score_matrix_as_read(s, w->b, buf, r1 - r0, nf, dst, nth, err)
                         : qs_score_matrix(s, w->b, buf, r1 - r0, nf, dst, nth, err);
            if (rc == 0 && raw)
                finish_rows(s, w, raw, r1 - r0, K, tc, out + r0 * tc);
        }
    }
    free(buf);
    free(raw);
    return rc;
}

static const char *dtype_name(PyArrayObject *a)
{
    static char buf[64];
    PyObject *s = PyObject_Str((PyObject *)PyArray_DESCR(a));
    const char *t = s ? PyUnicode_AsUTF8(s) : NULL;
    snprintf(buf, sizeof buf, "%s", t ? t : "?");
    Py_XDECREF(s);
    PyErr_Clear();
    return buf;
}

/* Check the column count of a dense matrix of `ncols` columns. */
static int check_columns(ModelObject *self, npy_intp ncols)
{
    if ((uint64_t)ncols < self->num_features) {
        PyErr_Format(PyExc_ValueError, "X has %zd columns, the model has %u features",
                     (Py_ssize_t)ncols, self->num_features);
        return -1;
    }
    if ((uint64_t)ncols > self->num_features &&
        qs_source_get(self->info.source) &&
        qs_source_get(self->info.source)->features == QS_FEATURES_DATA) {
        PyErr_Format(PyExc_ValueError,
                     "X has %zd columns, the model has %u features (its training data's "
                     "count; pass X[:, :%u] to ignore the others)",
                     (Py_ssize_t)ncols, self->num_features, self->num_features);
        return -1;
    }
    return 0;
}

/* The dense matrix's checks; fills src. */
static int dense_check(ModelObject *self, PyObject *X, dense_src *src, size_t *n)
{
    if (!PyArray_Check(X)) {
        PyErr_Format(PyExc_TypeError, "X must be a NumPy array or a SciPy CSR matrix, not %s",
                     Py_TYPE(X)->tp_name);
        return -1;
    }
    PyArrayObject *a = (PyArrayObject *)X;
    if (PyArray_NDIM(a) != 2) {
        PyErr_Format(PyExc_ValueError, "X must be 2-D (rows, features), not %d-D "
                     "(one row: X.reshape(1, -1))", PyArray_NDIM(a));
        return -1;
    }
    int t = PyArray_TYPE(a);
    if ((t != NPY_FLOAT64 && t != NPY_FLOAT32) || !PyArray_ISNOTSWAPPED(a)) {
        PyErr_Format(PyExc_TypeError, "X must hold float64 or float32 values in native byte "
                     "order, not %s (convert it: X.astype(numpy.float64))", dtype_name(a));
        return -1;
    }
    if (check_columns(self, PyArray_DIM(a, 1)) != 0)
        return -1;
    src->base = PyArray_BYTES(a);
    src->s0 = PyArray_STRIDE(a, 0);
    src->s1 = PyArray_STRIDE(a, 1);
    src->f32 = t == NPY_FLOAT32;
    src->nf = self->num_features;
    src->round_float = !src->f32 && self->precision_float;
    *n = (size_t)PyArray_DIM(a, 0);
    return 0;
}

static PyObject *Model_predict_dense(ModelObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "X", "threads", "backend", "transform", "trees", NULL };
    PyObject *X, *threads = NULL, *backend = NULL, *transform = NULL, *trees = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$OOOO:predict", kwlist, &X, &threads, &backend,
                                     &transform, &trees))
        return NULL;
    if (check_open(self) != 0)
        return NULL;
    want w;
    unsigned nth;
    dense_src src;
    size_t n;
    if (parse_want(self, backend, transform, trees, &w) != 0 || parse_threads(threads, &nth) != 0 ||
        dense_check(self, X, &src, &n) != 0)
        return NULL;
    Py_INCREF(X);
    qs_error err;
    qs_error_clear(&err);
    int closed = 0;
    qs_scorer *s;
    Py_BEGIN_ALLOW_THREADS
    s = acquire(self, &w, &closed, &err);
    Py_END_ALLOW_THREADS
    if (!s) {
        Py_DECREF(X);
        return closed ? closed_error() : raise_qs(&err, NULL);
    }
    const uint32_t K = self->num_classes;
    const uint32_t tc = w.transform ? qs_transform_columns(s) : K;
    PyArrayObject *out = new_out(n, tc, NPY_FLOAT64);
    if (!out) {
        pthread_rwlock_unlock(&self->lock);
        Py_DECREF(X);
        return NULL;
    }
    double *o = (double *)PyArray_DATA(out);
    int rc = 0, oom = 0;
    Py_BEGIN_ALLOW_THREADS
    /* straight from the caller's memory where the layout allows it */
    const int direct = dense_in_place(&src);
    if (n == 0) {
        rc = 0;
    } else if (direct && tc == K && !w.transform) {
        rc = qs_score_matrix(s, w.b, (const double *)src.base, n,
                             (size_t)src.s0 / sizeof(double), o, nth, &err);
    } else if (direct) {
        double *raw = malloc(n * K * sizeof(double));
        if (!raw) {
            oom = 1;
        } else {
            rc = qs_score_matrix(s, w.b, (const double *)src.base, n,
                                 (size_t)src.s0 / sizeof(double), raw, nth, &err);
            if (rc == 0)
                finish_rows(s, &w, raw, n, K, tc, o);
            free(raw);
        }
    } else {
        /* converted a chunk of rows at a time */
        rc = score_chunked(s, &w, src.nf, n, nth, K, tc, o, 0, dense_fill, &src, &err, &oom);
    }
    pthread_rwlock_unlock(&self->lock);
    Py_END_ALLOW_THREADS
    Py_DECREF(X);
    if (oom) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    if (rc != 0) {
        Py_DECREF(out);
        return raise_qs(&err, NULL);
    }
    return (PyObject *)out;
}

/* ----------------------------------------------------------- CSR input */

static void csr_fill(const void *src, size_t r0, size_t r1, double *buf)
{
    csr_gather(src, r0, r1, buf);
}

static int contiguous_1d(PyObject *o, const char *name, PyArrayObject **out)
{
    if (!PyArray_Check(o) || PyArray_NDIM((PyArrayObject *)o) != 1 ||
        !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)o) || !PyArray_ISNOTSWAPPED((PyArrayObject *)o) ||
        !PyArray_ISALIGNED((PyArrayObject *)o)) {
        PyErr_Format(PyExc_TypeError, "the CSR matrix's %s must be a contiguous 1-D array", name);
        return -1;
    }
    *out = (PyArrayObject *)o;
    return 0;
}

/* csr_check: the three arrays and the shape, every index checked. */
static int csr_check(ModelObject *self, PyObject *shape, PyObject *indptr, PyObject *indices,
                     PyObject *data, const char *absent, csr_src *c)
{
    Py_ssize_t nrows, ncols;
    if (!PyArg_ParseTuple(shape, "nn", &nrows, &ncols))
        return -1;
    PyArrayObject *ip, *ix, *dv;
    if (contiguous_1d(indptr, "indptr", &ip) || contiguous_1d(indices, "indices", &ix) ||
        contiguous_1d(data, "data", &dv))
        return -1;
    int tp = PyArray_TYPE(ip), tx = PyArray_TYPE(ix), td = PyArray_TYPE(dv);
    if ((tp != NPY_INT32 && tp != NPY_INT64) || (tx != NPY_INT32 && tx != NPY_INT64)) {
        PyErr_SetString(PyExc_TypeError, "the CSR matrix's indptr and indices must be int32 or "
                                         "int64");
        return -1;
    }
    if (td != NPY_FLOAT64 && td != NPY_FLOAT32) {
        PyErr_Format(PyExc_TypeError, "X must hold float64 or float32 values, not %s "
                     "(convert it: X.astype(numpy.float64))", dtype_name(dv));
        return -1;
    }
    if (nrows < 0 || ncols < 0) {
        PyErr_SetString(PyExc_ValueError, "malformed CSR matrix: a negative shape");
        return -1;
    }
    c->n = (size_t)nrows;
    c->ncols = (uint64_t)ncols;
    c->indptr = PyArray_DATA(ip);
    c->indices = PyArray_DATA(ix);
    c->data = PyArray_DATA(dv);
    c->ip64 = tp == NPY_INT64;
    c->ix64 = tx == NPY_INT64;
    c->f32 = td == NPY_FLOAT32;
    c->nf = self->num_features;
    c->round_float = !c->f32 && self->precision_float;
    c->nnz = PyArray_DIM(ix, 0);
    char msg[160];
    if (csr_structure(c, PyArray_DIM(ip, 0), PyArray_DIM(dv, 0), msg, sizeof msg)) {
        PyErr_SetString(PyExc_ValueError, msg);
        return -1;
    }
    /* the fill read at load: the scorers are the lock's, and another thread
     * may close the model while this one (holding the GIL) checks */
    if (!absent || strcmp(absent, "default") == 0)
        c->fill = self->fill[0];
    else if (strcmp(absent, "zero") == 0)
        c->fill = self->fill[1];
    else if (strcmp(absent, "missing") == 0)
        c->fill = self->fill[2];
    else {
        PyErr_Format(PyExc_ValueError, "absent must be 'default', 'zero' or 'missing', not '%s'",
                     absent);
        return -1;
    }
    return 0;
}

static PyObject *Model_predict_csr(ModelObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "shape", "indptr", "indices", "data", "threads", "backend",
                              "transform", "trees", "absent", NULL };
    PyObject *shape, *indptr, *indices, *data, *threads = NULL, *backend = NULL,
             *transform = NULL, *trees = NULL;
    const char *absent = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|$OOOOz:predict", kwlist, &shape, &indptr,
                                     &indices, &data, &threads, &backend, &transform, &trees,
                                     &absent))
        return NULL;
    if (check_open(self) != 0)
        return NULL;
    want w;
    unsigned nth;
    csr_src c;
    if (parse_want(self, backend, transform, trees, &w) != 0 || parse_threads(threads, &nth) != 0 ||
        csr_check(self, shape, indptr, indices, data, absent, &c) != 0)
        return NULL;
    PyObject *keep = PyTuple_Pack(3, indptr, indices, data);
    if (!keep)
        return NULL;
    qs_error err;
    qs_error_clear(&err);
    int closed = 0;
    qs_scorer *s;
    Py_BEGIN_ALLOW_THREADS
    s = acquire(self, &w, &closed, &err);
    Py_END_ALLOW_THREADS
    if (!s) {
        Py_DECREF(keep);
        return closed ? closed_error() : raise_qs(&err, NULL);
    }
    const uint32_t K = self->num_classes;
    const uint32_t tc = w.transform ? qs_transform_columns(s) : K;
    const size_t n = c.n;
    PyArrayObject *out = new_out(n, tc, NPY_FLOAT64);
    if (!out) {
        pthread_rwlock_unlock(&self->lock);
        Py_DECREF(keep);
        return NULL;
    }
    double *o = (double *)PyArray_DATA(out);
    int rc = 0, oom = 0;
    Py_BEGIN_ALLOW_THREADS
    /* CSR keeps every value as given (LightGBM's CSR input keeps the zero
     * band, as its LibSVM reader does): as read */
    rc = score_chunked(s, &w, c.nf, n, nth, K, tc, o, 1, csr_fill, &c, &err, &oom);
    pthread_rwlock_unlock(&self->lock);
    Py_END_ALLOW_THREADS
    Py_DECREF(keep);
    if (oom) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    if (rc != 0) {
        Py_DECREF(out);
        return raise_qs(&err, NULL);
    }
    return (PyObject *)out;
}

/* -------------------------------------------------------------- leaves */

/* Exit leaves of rows given by a row function (dense or CSR). */
static PyObject *leaves_common(ModelObject *self, const dense_src *ds, const csr_src *cs, size_t n,
                               PyObject *backend, PyObject *trees, PyObject *keep)
{
    want w;
    if (parse_want(self, backend, NULL, trees, &w) != 0)
        return NULL;
    qs_error err;
    qs_error_clear(&err);
    int closed = 0;
    qs_scorer *s;
    Py_BEGIN_ALLOW_THREADS
    s = acquire(self, &w, &closed, &err);
    Py_END_ALLOW_THREADS
    if (!s)
        return closed ? closed_error() : raise_qs(&err, NULL);
    qs_model_info mi;
    qs_model_get_info(qs_scorer_model(s), &mi);
    const uint64_t nt = mi.num_trees;
    npy_intp dims[2] = { (npy_intp)n, (npy_intp)nt };
    PyArrayObject *out = (PyArrayObject *)PyArray_SimpleNew(2, dims, NPY_INT32);
    if (!out) {
        pthread_rwlock_unlock(&self->lock);
        return NULL;
    }
    uint32_t *o = (uint32_t *)PyArray_DATA(out);
    int rc = 0, oom = 0;
    (void)keep;
    Py_BEGIN_ALLOW_THREADS
    qs_workspace *ws = n ? qs_workspace_new(s, &err) : NULL;
    const uint32_t nf = self->num_features;
    double *row = n ? malloc((nf ? nf : 1) * sizeof(double)) : NULL;
    if (n && (!ws || !row)) {
        if (!ws)
            rc = -1;
        else
            oom = 1;
    } else if (n) {
        const uint32_t slots = qs_workspace_slots(ws);
        for (size_t r0 = 0; r0 < n && rc == 0; r0 += slots) {
            uint32_t k = (uint32_t)(n - r0 < slots ? n - r0 : slots);
            for (uint32_t j = 0; j < k; j++) {
                if (ds)
                    gather(ds, r0 + j, r0 + j + 1, row);
                else
                    csr_gather(cs, r0 + j, r0 + j + 1, row);
                qs_workspace_select(ws, j);
                qs_doc_reset(ws, QS_ABSENT_DEFAULT);
                for (uint32_t f = 0; f < nf; f++)
                    qs_doc_set(ws, f, row[f]);
                if (ds && self->zero_band)
                    qs_doc_zero_band(ws); /* LightGBM's dense input */
            }
            rc = qs_score_leaves(s, ws, w.b, k, o + r0 * nt, &err);
        }
    }
    free(row);
    qs_workspace_free(ws);
    pthread_rwlock_unlock(&self->lock);
    Py_END_ALLOW_THREADS
    if (oom) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    if (rc != 0) {
        Py_DECREF(out);
        return raise_qs(&err, NULL);
    }
    return (PyObject *)out;
}

static PyObject *Model_leaves_dense(ModelObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "X", "backend", "trees", NULL };
    PyObject *X, *backend = NULL, *trees = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$OO:predict_leaves", kwlist, &X, &backend,
                                     &trees))
        return NULL;
    if (check_open(self) != 0)
        return NULL;
    dense_src src;
    size_t n;
    if (dense_check(self, X, &src, &n) != 0)
        return NULL;
    Py_INCREF(X);
    PyObject *r = leaves_common(self, &src, NULL, n, backend, trees, X);
    Py_DECREF(X);
    return r;
}

static PyObject *Model_leaves_csr(ModelObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "shape", "indptr", "indices", "data", "backend", "trees", "absent",
                              NULL };
    PyObject *shape, *indptr, *indices, *data, *backend = NULL, *trees = NULL;
    const char *absent = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|$OOz:predict_leaves", kwlist, &shape,
                                     &indptr, &indices, &data, &backend, &trees, &absent))
        return NULL;
    if (check_open(self) != 0)
        return NULL;
    csr_src c;
    if (csr_check(self, shape, indptr, indices, data, absent, &c) != 0)
        return NULL;
    PyObject *keep = PyTuple_Pack(3, indptr, indices, data);
    if (!keep)
        return NULL;
    PyObject *r = leaves_common(self, NULL, &c, c.n, backend, trees, keep);
    Py_DECREF(keep);
    return r;
}

/* ---------------------------------------------------------- model facts */

static int put(PyObject *d, const char *k, PyObject *v)
{
    if (!v)
        return -1;
    int rc = PyDict_SetItemString(d, k, v);
    Py_DECREF(v);
    return rc;
}

static PyObject *str_or_none(const char *s)
{
    if (s && *s)
        return PyUnicode_FromString(s);
    Py_RETURN_NONE;
}

static const char *accumulate_name(int a)
{
    return a == 0 ? "double" : a == 1 ? "float" : "float-double";
}

/* The facts of qs-compile --info --json, as a dict (the same keys, less
 * "file" and "categories"). */
static PyObject *build_info(ModelObject *self, const qs_scorer *s)
{
    const qs_model *m = qs_scorer_model(s);
    qs_model_info mi;
    qs_model_get_info(m, &mi);
    qs_model_stats st;
    qs_error err;
    qs_error_clear(&err);
    if (qs_model_get_stats(m, &st, &err) != 0)
        return raise_qs(&err, NULL);
    qs_layout_info li;
    qs_scorer_get_layout_info(s, &li);
    PyObject *d = PyDict_New(), *l = NULL;
    if (!d)
        goto fail;
    if (put(d, "kind", PyUnicode_FromString(self->kind)) ||
        put(d, "source", PyUnicode_FromString(qs_source_name(mi.source))) ||
        put(d, "source_version", str_or_none(self->source_version)) ||
        put(d, "objective", PyUnicode_FromString(st.objective ? st.objective : "")) ||
        put(d, "transform", PyUnicode_FromString(mi.transform)) ||
        put(d, "precision", PyUnicode_FromString(mi.float_precision ? "float" : "double")) ||
        put(d, "accumulate", PyUnicode_FromString(accumulate_name(mi.float_accumulate))) ||
        put(d, "compare", PyUnicode_FromString(st.compare)) ||
        put(d, "absent", PyUnicode_FromString(mi.absent_is_missing ? "missing" : "zero")) ||
        put(d, "features", Py_BuildValue("{s:I,s:I,s:L}", "count", mi.num_features, "used",
                                         st.features_used, "max_used",
                                         (long long)st.max_feature_used)) ||
        put(d, "classes", PyLong_FromUnsignedLong(mi.num_classes)) ||
        put(d, "trees", PyLong_FromUnsignedLongLong(mi.num_trees)) ||
        put(d, "nodes", PyLong_FromUnsignedLongLong(st.nodes)) ||
        put(d, "leaves", PyLong_FromUnsignedLongLong(st.leaves)) ||
        put(d, "categorical_splits", PyLong_FromUnsignedLongLong(st.cat_nodes)) ||
        put(d, "max_leaves", PyLong_FromUnsignedLong(mi.max_leaves)) ||
        put(d, "max_depth", PyLong_FromUnsignedLong(mi.max_depth)))
        goto fail;
    if (!(l = PyList_New(0)))
        goto fail;
    for (size_t i = 0; i < st.n_leaves_hist; i++) {
        PyObject *e = Py_BuildValue("{s:K,s:K}", "leaves", (unsigned long long)st.leaves_hist[i].value,
                                    "trees", (unsigned long long)st.leaves_hist[i].count);
        if (!e || PyList_Append(l, e)) {
            Py_XDECREF(e);
            goto fail;
        }
        Py_DECREF(e);
    }
    if (put(d, "leaves_histogram", l))
        goto fail_nol;
    if (!(l = PyList_New(0)))
        goto fail;
    for (size_t i = 0; i < st.n_depth_hist; i++) {
        PyObject *e = Py_BuildValue("{s:K,s:K}", "depth", (unsigned long long)st.depth_hist[i].value,
                                    "trees", (unsigned long long)st.depth_hist[i].count);
        if (!e || PyList_Append(l, e)) {
            Py_XDECREF(e);
            goto fail;
        }
        Py_DECREF(e);
    }
    if (put(d, "depth_histogram", l))
        goto fail_nol;
    if (put(d, "oblivious", PyBool_FromLong(mi.oblivious)) ||
        put(d, "oblivious_trees", PyLong_FromUnsignedLongLong(st.oblivious_trees)))
        goto fail;
    if (!(l = PyList_New(0)))
        goto fail;
    for (uint32_t b = 0; b < li.nblocks; b++) {
        qs_block_info bi;
        qs_scorer_get_block(s, b, &bi);
        PyObject *e = Py_BuildValue("{s:K,s:K,s:s,s:I,s:I,s:K,s:K}", "first_tree",
                                    (unsigned long long)bi.first_tree, "trees",
                                    (unsigned long long)bi.num_trees, "kind",
                                    bi.oblivious ? "qs-omega" : "qs", "mask_bits", bi.width,
                                    "mask_words", bi.words, "entries",
                                    (unsigned long long)bi.entries, "reversed",
                                    (unsigned long long)bi.reversed_trees);
        if (!e || PyList_Append(l, e)) {
            Py_XDECREF(e);
            goto fail;
        }
        Py_DECREF(e);
    }
    if (put(d, "layout",
            Py_BuildValue("{s:I,s:I,s:I,s:I,s:K,s:K,s:K,s:K,s:I,s:N}", "tree_block", li.tree_block,
                          "stored_tree_block", li.stored_tree_block, "doc_block", li.doc_block,
                          "delta", li.delta, "reversed_trees", (unsigned long long)li.reversed_trees,
                          "entries", (unsigned long long)li.entries, "special_entries",
                          (unsigned long long)li.special_entries, "leaf_values",
                          (unsigned long long)li.leaf_values, "categorical_nodes", li.cat_nodes,
                          "blocks", l)))
        goto fail_nol;
    if (self->has_tuning) {
        const qs_tuning *t = &self->tuning;
        const char *on = qs_order_name((qs_order)t->order);
        if (put(d, "tuning",
                Py_BuildValue("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:d,s:d,s:s,s:I,s:[KKK],s:s,"
                              "s:L,s:O}",
                              "order", on ? on : "?", "s", t->inner_s, "d", t->inner_d,
                              "tree_block", t->tree_block, "doc_block", t->doc_block, "delta",
                              t->delta, "threads", t->threads, "backend",
                              t->backend[0] ? t->backend : "auto", "default_ns", t->default_ns,
                              "tuned_ns", t->tuned_ns, "cpu_model", t->cpu_model, "cores",
                              t->cores, "cache", (unsigned long long)t->cache[0],
                              (unsigned long long)t->cache[1], (unsigned long long)t->cache[2],
                              "version", t->version, "date", (long long)t->date, "this_machine",
                              qs_tuning_matches(t) ? Py_True : Py_False)))
            goto fail;
    } else if (PyDict_SetItemString(d, "tuning", Py_None)) {
        goto fail;
    }
    if (self->is_qsm) {
        qs_qsm_file_info fi;
        if (qs_qsm_get_file_info(self->qsm, self->qsm_len, &fi, &err) != 0) {
            raise_qs(&err, NULL);
            goto fail;
        }
        if (!(l = PyList_New(0)))
            goto fail;
        for (uint32_t i = 0; i < fi.nsections; i++) {
            const qs_qsm_section *q = &fi.sections[i];
            char crc[9];
            snprintf(crc, sizeof crc, "%08x", q->crc);
            PyObject *e = Py_BuildValue("{s:s,s:O,s:O,s:K,s:K,s:K,s:s}", "id", q->id, "required",
                                        q->flags & 1 ? Py_True : Py_False, "zstd",
                                        q->flags & 2 ? Py_True : Py_False, "offset",
                                        (unsigned long long)q->offset, "stored_bytes",
                                        (unsigned long long)q->stored_size, "raw_bytes",
                                        (unsigned long long)q->raw_size, "crc32c", crc);
            if (!e || PyList_Append(l, e)) {
                Py_XDECREF(e);
                goto fail;
            }
            Py_DECREF(e);
        }
        char ver[32];
        snprintf(ver, sizeof ver, "%u.%u", fi.major, fi.minor);
        if (put(d, "qsm", Py_BuildValue("{s:s,s:N}", "version", ver, "sections", l)))
            goto fail_nol;
    } else if (PyDict_SetItemString(d, "qsm", Py_None)) {
        goto fail;
    }
    qs_model_stats_free(&st);
    return d;
fail:
    Py_XDECREF(l);
fail_nol:
    Py_XDECREF(d);
    qs_model_stats_free(&st);
    return NULL;
}

static PyObject *Model_info(ModelObject *self, PyObject *unused)
{
    if (check_open(self) != 0)
        return NULL;
    int closed = 0;
    qs_scorer *stored = NULL;
    qs_error err;
    qs_error_clear(&err);
    Py_BEGIN_ALLOW_THREADS
    pthread_rwlock_rdlock(&self->lock);
    closed = self->closed;
    if (closed)
        pthread_rwlock_unlock(&self->lock);
    else if (self->tuned)
        /* the facts of the file as qs-compile --info gives them: the stored
         * layout, not the one the tuning record makes for scoring */
        stored = qs_scorer_load_threads(self->qsm, self->qsm_len, cpus(), &err);
    Py_END_ALLOW_THREADS
    if (closed)
        return closed_error();
    if (self->tuned && !stored) {
        pthread_rwlock_unlock(&self->lock);
        return raise_qs(&err, NULL);
    }
    PyObject *r = build_info(self, stored ? stored : self->d[0].s);
    qs_scorer_free(stored);
    pthread_rwlock_unlock(&self->lock);
    return r;
}

static PyObject *Model_qsm_bytes(ModelObject *self, PyObject *unused)
{
    if (check_open(self) != 0)
        return NULL;
    int closed = 0;
    Py_BEGIN_ALLOW_THREADS
    pthread_rwlock_rdlock(&self->lock);
    closed = self->closed;
    if (closed)
        pthread_rwlock_unlock(&self->lock);
    Py_END_ALLOW_THREADS
    if (closed)
        return closed_error();
    PyObject *r = PyBytes_FromStringAndSize((const char *)self->qsm, (Py_ssize_t)self->qsm_len);
    pthread_rwlock_unlock(&self->lock);
    return r;
}

static PyObject *get_num_features(ModelObject *self, void *c) { return PyLong_FromUnsignedLong(self->num_features); }
static PyObject *get_num_classes(ModelObject *self, void *c) { return PyLong_FromUnsignedLong(self->num_classes); }
static PyObject *get_num_trees(ModelObject *self, void *c) { return PyLong_FromUnsignedLongLong(self->num_trees); }
static PyObject *get_iterations(ModelObject *self, void *c) { return PyLong_FromUnsignedLongLong(self->iterations); }
static PyObject *get_objective(ModelObject *self, void *c) { return PyUnicode_FromString(self->objective); }
static PyObject *get_transform(ModelObject *self, void *c) { return PyUnicode_FromString(self->transform); }
static PyObject *get_source(ModelObject *self, void *c) { return PyUnicode_FromString(qs_source_name(self->info.source)); }
static PyObject *get_closed(ModelObject *self, void *c) { return PyBool_FromLong(self->closed || !self->lock_ok); }
static PyObject *get_precision(ModelObject *self, void *c) { return PyUnicode_FromString(self->precision_float ? "float" : "double"); }
static PyObject *get_absent(ModelObject *self, void *c) { return PyUnicode_FromString(self->info.absent_is_missing ? "missing" : "zero"); }

static PyGetSetDef Model_getset[] = {
    { "num_features", (getter)get_num_features, NULL, "Features the model reads (columns of X).", NULL },
    { "num_classes", (getter)get_num_classes, NULL, "Raw output columns (classes).", NULL },
    { "num_trees", (getter)get_num_trees, NULL, "Trees in the model.", NULL },
    { "num_iterations", (getter)get_iterations, NULL, "Iterations: trees / classes.", NULL },
    { "objective", (getter)get_objective, NULL, "The objective as the source library wrote it.", NULL },
    { "transform", (getter)get_transform, NULL, "The model's output function (sigmoid, softmax, ...).", NULL },
    { "source", (getter)get_source, NULL, "The library that trained the model (lightgbm, xgboost, ...).", NULL },
    { "closed", (getter)get_closed, NULL, "True once close() was called.", NULL },
    { "precision", (getter)get_precision, NULL, "How the model reads values: 'double' or 'float' (float32).", NULL },
    { "absent", (getter)get_absent, NULL, "What an absent CSR entry means by default: 'zero' or 'missing'.", NULL },
    { NULL }
};

static PyMethodDef Model_methods[] = {
    { "_predict_dense", (PyCFunction)(void (*)(void))Model_predict_dense, METH_VARARGS | METH_KEYWORDS, NULL },
    { "_predict_csr", (PyCFunction)(void (*)(void))Model_predict_csr, METH_VARARGS | METH_KEYWORDS, NULL },
    { "_leaves_dense", (PyCFunction)(void (*)(void))Model_leaves_dense, METH_VARARGS | METH_KEYWORDS, NULL },
    { "_leaves_csr", (PyCFunction)(void (*)(void))Model_leaves_csr, METH_VARARGS | METH_KEYWORDS, NULL },
    { "_info", (PyCFunction)Model_info, METH_NOARGS, NULL },
    { "to_qsm", (PyCFunction)Model_qsm_bytes, METH_NOARGS,
      "The model's .qsm image (bytes): what qs-compile writes for it." },
    { "close", (PyCFunction)Model_close, METH_NOARGS,
      "Free the model's memory; every later call raises ValueError. Waits for running predictions." },
    { NULL }
};

static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "qs_toolkit._core.Model",
    .tp_basicsize = sizeof(ModelObject),
    .tp_dealloc = (destructor)Model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A loaded model (the C part of qs_toolkit.Model).",
    .tp_methods = Model_methods,
    .tp_getset = Model_getset,
    .tp_init = (initproc)Model_init,
    .tp_new = PyType_GenericNew,
};

/* --------------------------------------------------- module functions */

static PyObject *flag_list(unsigned flags, int is_auto)
{
    static const struct { unsigned f; const char *name; } names[] = {
        { QS_BACKEND_F_REFERENCE, "reference" }, { QS_BACKEND_F_BASELINE, "baseline" },
        { QS_BACKEND_F_OBLIVIOUS_ONLY, "oblivious-only" }, { QS_BACKEND_F_SIMD, "simd" },
        { QS_BACKEND_F_THREADS, "threads" }, { QS_BACKEND_F_DEVICE, "device" },
        { QS_BACKEND_F_ALIAS, "alias" }, { QS_BACKEND_F_BATCH, "batch" },
    };
    PyObject *l = PyList_New(0);
    for (size_t i = 0; l && i < sizeof names / sizeof names[0]; i++)
        if (flags & names[i].f) {
            PyObject *s = PyUnicode_FromString(names[i].name);
            if (!s || PyList_Append(l, s)) {
                Py_XDECREF(s);
                Py_CLEAR(l);
                break;
            }
            Py_DECREF(s);
        }
    /* predict(threads=) runs every back end on several threads, as
     * qs-score --threads does: "threads" for each, as --list-backends */
    if (l && !(flags & QS_BACKEND_F_THREADS)) {
        PyObject *s = PyUnicode_FromString("threads");
        if (!s || PyList_Append(l, s))
            Py_CLEAR(l);
        Py_XDECREF(s);
    }
    if (l && is_auto) {
        PyObject *s = PyUnicode_FromString("auto");
        if (!s || PyList_Append(l, s))
            Py_CLEAR(l);
        Py_XDECREF(s);
    }
    return l;
}

static PyObject *mod_backends(PyObject *mod, PyObject *unused)
{
    PyObject *l = PyList_New(0);
    if (!l)
        return NULL;
    const qs_backend a = qs_backend_auto();
    for (int b = 0; b < qs_backend_count(); b++) {
        qs_backend_info bi;
        if (qs_backend_get_info(b, &bi) != 0)
            continue;
        PyObject *e = Py_BuildValue("{s:s,s:O,s:s,s:N,s:s,s:s}", "name", bi.name, "available",
                                    bi.available ? Py_True : Py_False, "why",
                                    bi.available ? "" : bi.why, "flags",
                                    flag_list(bi.flags, b == a), "summary", bi.summary, "note",
                                    bi.available ? bi.why : "");
        if (!e || PyList_Append(l, e)) {
            Py_XDECREF(e);
            Py_DECREF(l);
            return NULL;
        }
        Py_DECREF(e);
    }
    return l;
}

static PyObject *mod_build_info(PyObject *mod, PyObject *unused)
{
    qs_build_info bi;
    qs_build_get_info(&bi);
    return Py_BuildValue("{s:s,s:O,s:O,s:O,s:s,s:s,s:s,s:I}", "version", bi.version, "openmp",
                         bi.openmp ? Py_True : Py_False, "numa", bi.numa ? Py_True : Py_False,
                         "cuda", bi.cuda ? Py_True : Py_False, "cpu_detected", bi.cpu_detected,
                         "cpu_enabled", bi.cpu_enabled, "auto", qs_backend_name(qs_backend_auto()),
                         "cpus", cpus());
}

/* ndcg: the metric over queries, as qs-eval computes it.
 * _eval(labels: list[str], qids: list[str] | None, scores: float64 array,
 *       metric, ks: list[int], conv: dict[str, str], preset: str | None)
 * -> (mean: list[float], per_query: list[(qid, [values], ndocs)]) */
static PyObject *mod_eval(PyObject *mod, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "labels", "qids", "scores", "metric", "ks", "preset", "knobs", NULL };
    PyObject *labels, *qids, *scores, *ks, *knobs;
    const char *metric, *preset;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!OO!sO!zO!:_eval", kwlist, &PyList_Type, &labels,
                                     &qids, &PyArray_Type, &scores, &metric, &PyList_Type, &ks,
                                     &preset, &PyDict_Type, &knobs))
        return NULL;
    PyArrayObject *sc = (PyArrayObject *)scores;
    const Py_ssize_t n = PyList_GET_SIZE(labels);
    if (PyArray_NDIM(sc) != 1 || PyArray_TYPE(sc) != NPY_FLOAT64 ||
        !PyArray_IS_C_CONTIGUOUS(sc) || PyArray_DIM(sc, 0) != n ||
        (qids != Py_None && (!PyList_Check(qids) || PyList_GET_SIZE(qids) != n))) {
        PyErr_SetString(PyExc_ValueError, "labels, scores and qids must have one entry per "
                                          "document");
        return NULL;
    }
    qs_eval_options opt;
    memset(&opt, 0, sizeof opt);
    qs_error err;
    qs_error_clear(&err);
    int m = qs_metric_from_name(metric);
    if (m < 0) {
        PyErr_Format(PyExc_ValueError, "unknown metric '%s' (expected ndcg, err, map or p)",
                     metric);
        return NULL;
    }
    opt.metric = (qs_metric)m;
    Py_ssize_t nk = PyList_GET_SIZE(ks);
    if (nk < 1 || nk > 1024) {
        PyErr_SetString(PyExc_ValueError, "k: give 1 to 1024 cutoffs");
        return NULL;
    }
    unsigned kv[1024];
    for (Py_ssize_t i = 0; i < nk; i++) {
        PyObject *ko = PyList_GET_ITEM(ks, i);
        int over = 0;
        long long k = PyLong_Check(ko) ? PyLong_AsLongLongAndOverflow(ko, &over) : -1;
        if (k == -1 && !over && PyErr_Occurred())
            return NULL;
        if (!PyLong_Check(ko) || over || k < 0 || k > 1000000000L) {
            PyErr_Format(PyExc_ValueError, "bad cutoff %R (0 means the whole list)", ko);
            return NULL;
        }
        kv[i] = (unsigned)k;
    }
    opt.ks = kv;
    opt.nk = (size_t)nk;
    qs_eval_conv_default(&opt.conv);
    if (preset && qs_eval_conv_preset(&opt.conv, preset, &err) != 0)
        return raise_qs(&err, NULL);
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(knobs, &pos, &key, &value)) {
        const char *k = PyUnicode_AsUTF8(key), *v = PyUnicode_AsUTF8(value);
        if (!k || !v)
            return NULL;
        if (qs_eval_conv_set(&opt.conv, k, v, &err) != 0)
            return raise_qs(&err, NULL);
    }
    if (qids == Py_None && opt.conv.group == QS_GROUP_QID) {
        /* one query: the same as block grouping */
    }
    qs_eval *e = qs_eval_new(&opt, &err);
    if (!e)
        return raise_qs(&err, NULL);
    const double *s = (const double *)PyArray_DATA(sc);
    for (Py_ssize_t i = 0; i < n; i++) {
        qs_eval_doc doc;
        Py_ssize_t ll = 0, ql = 0;
        doc.label = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(labels, i), &ll);
        doc.label_len = (size_t)ll;
        doc.qid = NULL;
        doc.qid_len = 0;
        if (qids != Py_None) {
            doc.qid = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(qids, i), &ql);
            doc.qid_len = (size_t)ql;
            if (!doc.qid) {
                qs_eval_free(e);
                return NULL;
            }
        }
        if (!doc.label) {
            qs_eval_free(e);
            return NULL;
        }
        doc.score = s[i];
        if (qs_eval_add(e, &doc, &err) < 0) {
            qs_eval_free(e);
            char pre[64];
            snprintf(pre, sizeof pre, "document %zd: ", i);
            return raise_qs(&err, pre);
        }
    }
    if (qs_eval_finish(e, &err) != 0) {
        qs_eval_free(e);
        return raise_qs(&err, NULL);
    }
    const double *mean = qs_eval_mean(e);
    PyObject *ml = PyList_New(nk), *ql = NULL;
    for (Py_ssize_t i = 0; ml && i < nk; i++)
        PyList_SET_ITEM(ml, i, PyFloat_FromDouble(mean[i]));
    const size_t nq = qs_eval_num_queries(e);
    ql = ml ? PyList_New((Py_ssize_t)nq) : NULL;
    for (size_t q = 0; ql && q < nq; q++) {
        size_t len;
        const char *qid = qs_eval_query_qid(e, q, &len);
        const double *v = qs_eval_query_values(e, q);
        PyObject *vl = PyList_New(nk);
        for (Py_ssize_t i = 0; vl && i < nk; i++)
            PyList_SET_ITEM(vl, i, PyFloat_FromDouble(v[i]));
        PyObject *t = vl ? Py_BuildValue("(s#Nn)", qid ? qid : "", (Py_ssize_t)(qid ? len : 0), vl,
                                         (Py_ssize_t)qs_eval_query_docs(e, q))
                         : NULL;
        if (!t) {
            Py_CLEAR(ql);
            break;
        }
        PyList_SET_ITEM(ql, (Py_ssize_t)q, t);
    }
    char desc[256];
    qs_eval_conv_describe(&opt.conv, desc, sizeof desc);
    qs_eval_free(e);
    if (!ml || !ql) {
        Py_XDECREF(ml);
        Py_XDECREF(ql);
        return NULL;
    }
    return Py_BuildValue("(NNs)", ml, ql, desc);
}

/* _read_model(path, sniff): a model file's bytes as the tools read them:
 * QS_MAX_INPUT bounds the read (LimitError beyond it); with sniff, the
 * read stops where the first bytes show that no model starts so, or a
 * .qsm header is wrong (qs_sniff_model: /dev/zero after 64 KiB), and what
 * was read is returned (Model() then refuses it as it would the whole
 * file), and a .qsm is read no further than one byte past the size its
 * header records (a longer one: FormatError).  OSError when the file cannot
 * be opened or read. */
static PyObject *mod_read_model(PyObject *mod, PyObject *args)
{
    PyObject *path;
    int sniff;
    if (!PyArg_ParseTuple(args, "O&p:_read_model", PyUnicode_FSConverter, &path, &sniff))
        return NULL;
    size_t limit;
    if (max_input(&limit) != 0) {
        Py_DECREF(path);
        return NULL;
    }
    const char *name = PyBytes_AS_STRING(path);
    unsigned char *b = NULL;
    size_t n = 0, cap = (size_t)1 << 16;
    int e = 0, oom = 0, over = 0, padded = 0;
    uint64_t most = limit;
    Py_BEGIN_ALLOW_THREADS
    FILE *f = fopen(name, "rb");
    if (!f) {
        e = errno;
    } else {
        int state = sniff ? QS_SNIFF_MORE : QS_SNIFF_MODEL;
        b = malloc(cap + 1);
        oom = !b;
        while (b) {
            if (n == cap) {
                if (cap > limit) {
                    over = 1;
                    break;
                }
                size_t nc = cap > limit / 2 ? limit + 1 : cap * 2;
                unsigned char *nb = realloc(b, nc + 1);
                if (!nb) {
                    oom = 1;
                    break;
                }
                b = nb;
                cap = nc;
            }
            size_t ask = cap - n;
            if (most < (uint64_t)n + ask)
                ask = (size_t)(most - n) + 1;
            size_t r = fread(b + n, 1, ask, f);
            n += r;
            if (state == QS_SNIFF_MORE && !ferror(f)) {
                uint64_t m;
                state = qs_sniff_model(b, n, r == 0, &m);
                if (state == QS_SNIFF_NOT)
                    break;
                if (state == QS_SNIFF_MODEL && m < most)
                    most = m;
            }
            if (r == 0 || n > most)
                break;
        }
        if (ferror(f))
            e = errno ? errno : EIO;
        fclose(f);
        over |= n > limit;
        padded = !over && n > most;
    }
    Py_END_ALLOW_THREADS
    PyObject *r = NULL;
    if (e) {
        errno = e;
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, PyTuple_GET_ITEM(args, 0));
    } else if (oom) {
        PyErr_NoMemory();
    } else if (over) {
        PyErr_Format(LimitError, "%s: larger than the limit of %zu bytes (set QS_MAX_INPUT to "
                     "raise it)", name, limit);
    } else if (padded) {
        PyErr_Format(FormatError, "%s: the file is longer than the %llu bytes its header "
                     "records (padded)", name, (unsigned long long)most);
    } else {
        r = PyBytes_FromStringAndSize((const char *)b, (Py_ssize_t)n);
    }
    free(b);
    Py_DECREF(path);
    return r;
}

static PyObject *mod_format_score(PyObject *mod, PyObject *args)
{
    double v;
    PyObject *dobj;
    if (!PyArg_ParseTuple(args, "dO:format_score", &v, &dobj))
        return NULL;
    if (!PyIndex_Check(dobj) || PyBool_Check(dobj)) {
        PyErr_SetString(PyExc_TypeError, "digits must be an int (17 or 9)");
        return NULL;
    }
    PyObject *di = PyNumber_Index(dobj);
    if (!di)
        return NULL;
    int over = 0;
    long long digits = PyLong_AsLongLongAndOverflow(di, &over);
    Py_DECREF(di);
    if (digits == -1 && !over && PyErr_Occurred())
        return NULL;
    if (over || digits < 1 || digits > 17) {
        PyErr_SetString(PyExc_ValueError, "digits must be 1 ... 17");
        return NULL;
    }
    char buf[QS_FORMAT_SCORE_MAX];
    size_t n = qs_format_score(buf, v, (int)digits);
    return PyUnicode_FromStringAndSize(buf, (Py_ssize_t)n);
}

static PyMethodDef module_methods[] = {
    { "backends", mod_backends, METH_NOARGS, NULL },
    { "build_info", mod_build_info, METH_NOARGS, NULL },
    { "_eval", (PyCFunction)(void (*)(void))mod_eval, METH_VARARGS | METH_KEYWORDS, NULL },
    { "format_score", mod_format_score, METH_VARARGS, NULL },
    { "_read_model", mod_read_model, METH_VARARGS, NULL },
    { NULL }
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_core", "libqs through the CPython and NumPy C APIs.", -1,
    module_methods,
};

static PyObject *new_exc(PyObject *m, const char *name, PyObject *base, const char *doc)
{
    char full[96];
    snprintf(full, sizeof full, "qs_toolkit.%s", name);
    PyObject *e = PyErr_NewExceptionWithDoc(full, doc, base, NULL);
    if (!e || PyModule_AddObjectRef(m, name, e) < 0) {
        Py_XDECREF(e);
        return NULL;
    }
    return e;
}

PyMODINIT_FUNC PyInit__core(void);
PyMODINIT_FUNC PyInit__core(void)
{
    import_array();
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    if (PyType_Ready(&ModelType) < 0 || PyModule_AddObjectRef(m, "Model", (PyObject *)&ModelType) < 0)
        goto fail;
    if (!(Error = new_exc(m, "Error", NULL, "A libqs error: the library's message; .code, .line, "
                                            ".offset as in qs_error.")))
        goto fail;
    PyObject *fb = PyTuple_Pack(2, Error, PyExc_ValueError);
    if (!fb)
        goto fail;
    FormatError = new_exc(m, "FormatError", fb, "Malformed input: a model, a .qsm, documents.");
    Py_DECREF(fb);
    if (!FormatError ||
        !(UnsupportedError = new_exc(m, "UnsupportedError", Error,
                                     "Well-formed, but cannot be scored exactly (refused), or "
                                     "this machine cannot run the back end.")) ||
        !(LimitError = new_exc(m, "LimitError", Error, "Beyond a documented limit.")) ||
        !(DeviceError = new_exc(m, "DeviceError", Error, "The accelerator failed or is absent.")))
        goto fail;
    if (PyModule_AddStringConstant(m, "LIBQS_VERSION", QS_VERSION_STRING) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
