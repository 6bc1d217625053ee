/* buffers.c: the caller's arrays: dense matrices (any dtype float64 or
 * float32, order, strides, offset) and CSR matrices (their three arrays)
 * checked against the model, and rows gathered a chunk at a time and
 * scored (the plain-C checks and copies are args.h's). */
#include "core.h"

#include <stdlib.h>
#include <string.h>

/* Rows per converted chunk: about 8 MiB of doubles, at least 256 rows
 * per thread. */
static size_t chunk_rows(uint32_t nf, unsigned threads)
{
    size_t r = ((size_t)8 << 20) / ((size_t)(nf ? nf : 1) * sizeof(double));
    size_t min = (size_t)256 * threads;
    return r < min ? min : r;
}

void dense_fill(const void *src, size_t r0, size_t r1, double *buf)
{
    gather(src, r0, r1, buf);
}

/* Apply the output function to n rows of K raw scores in raw[], writing
 * tc columns per row to out[]. */
void finish_rows(const qs_scorer *s, const want *w, double *raw, size_t n, uint32_t K,
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
PyArrayObject *new_out(size_t n, uint32_t cols, int typenum)
{
    npy_intp dims[2] = { (npy_intp)n, (npy_intp)cols };
    return (PyArrayObject *)PyArray_SimpleNew(cols == 1 ? 1 : 2, dims, typenum);
}

/* Rows 0 .. n-1 of nf features, gathered a chunk at a time into float64
 * rows by fill(src, r0, r1, buf), scored (as_read: the values as given, no
 * zero band; else as qs_score_matrix reads a dense matrix) and finished
 * into out (tc columns per row).  Without the GIL.  The library's status
 * (err set), or 0; *oom when a chunk's buffers could not be had. */
int score_chunked(qs_scorer *s, const want *w, uint32_t nf, size_t n, unsigned nth,
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

/* Check the column count of a dense matrix of `ncols` columns (the
 * caller's numbering: num_features - lead of them). */
static int check_columns(ModelObject *self, npy_intp ncols)
{
    const uint32_t cols = self->num_features - self->lead;
    if ((uint64_t)ncols < cols) {
        PyErr_Format(PyExc_ValueError, "X has %zd columns, the model has %u features",
                     (Py_ssize_t)ncols, cols);
        return -1;
    }
    if ((uint64_t)ncols > cols && qs_source_get(self->info.source) &&
        qs_source_get(self->info.source)->features == QS_FEATURES_DATA) {
        PyErr_Format(PyExc_ValueError,
                     "X has %zd columns, the model has %u features (its training data's "
                     "count; pass X[:, :%u] to ignore the others)",
                     (Py_ssize_t)ncols, cols, cols);
        return -1;
    }
    return 0;
}

/* The dense matrix's checks; fills src. */
int dense_check(ModelObject *self, PyObject *X, dense_src *src, size_t *n)
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
    src->lead = self->lead;
    *n = (size_t)PyArray_DIM(a, 0);
    return 0;
}


void csr_fill(const void *src, size_t r0, size_t r1, double *buf)
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
int csr_check(ModelObject *self, PyObject *shape, PyObject *indptr, PyObject *indices,
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
    c->lead = self->lead;
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
