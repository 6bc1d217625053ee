/* predict.c: Model._predict_dense, _predict_csr (scores) and
 * _leaves_dense, _leaves_csr (exit leaves): the arguments parsed and the
 * arrays checked with the GIL held, the scorer acquired and the rows scored
 * without it. */
#include "core.h"

#include <stdlib.h>
#include <string.h>

PyObject *Model_predict_dense(ModelObject *self, PyObject *args, PyObject *kw)
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

PyObject *Model_predict_csr(ModelObject *self, PyObject *args, PyObject *kw)
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

PyObject *Model_leaves_dense(ModelObject *self, PyObject *args, PyObject *kw)
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

PyObject *Model_leaves_csr(ModelObject *self, PyObject *args, PyObject *kw)
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
