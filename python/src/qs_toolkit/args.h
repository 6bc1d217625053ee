/* args.h: the binding's checks of a caller's arrays and its copies of
 * their rows, in plain C (no Python or NumPy API): the extension (c-ext/) takes the
 * arrays' addresses, strides and lengths from NumPy and hands them here,
 * and the fuzz target fuzz/fuzz_binding.c runs the same code on arbitrary
 * ones.  Every read is inside the arrays as described; a value is loaded
 * from any address (an array may sit at any byte offset). */
#ifndef QS_TOOLKIT_ARGS_H
#define QS_TOOLKIT_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ dense */

typedef struct dense_src {
    const char *base;
    ptrdiff_t s0, s1;       /* byte strides */
    int f32;               /* float32 elements (else float64) */
    uint32_t nf;           /* the model's features: values per gathered row */
    int round_float;       /* float64 into a float32 model: round */
    uint32_t lead;         /* features before the caller's column 0, 0.0 (CatBoost's
                              numbering: column j is feature j + 1); columns used nf - lead */
} dense_src;

/* Loads at any address: NumPy arrays may sit at any byte offset
 * (np.frombuffer(buf, offset=1), a field of a structured array). */
static inline double load_f64(const char *p)
{
    double v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline double load_f32(const char *p)
{
    float v;
    memcpy(&v, p, sizeof v);
    return (double)v;
}

/* Rows [r0, r1) of src into buf (rows of nf doubles). */
static inline void gather(const dense_src *src, size_t r0, size_t r1, double *buf)
{
    const uint32_t stride = src->nf, lead = src->lead < src->nf ? src->lead : src->nf;
    const uint32_t nf = stride - lead;
    if (lead) {
        for (size_t i = r0; i < r1; i++)
            for (uint32_t j = 0; j < lead; j++)
                buf[(i - r0) * stride + j] = 0.0;
        buf += lead;
    }
    const ptrdiff_t s0 = src->s0, s1 = src->s1;
    const int by_column = (s1 < 0 ? -s1 : s1) > (s0 < 0 ? -s0 : s0);
    if (src->f32) {
        if (by_column) {
            for (uint32_t j = 0; j < nf; j++)
                for (size_t i = r0; i < r1; i++)
                    buf[(i - r0) * stride + j] =
                        load_f32(src->base + (ptrdiff_t)i * s0 + (ptrdiff_t)j * s1);
        } else {
            for (size_t i = r0; i < r1; i++)
                for (uint32_t j = 0; j < nf; j++)
                    buf[(i - r0) * stride + j] =
                        load_f32(src->base + (ptrdiff_t)i * s0 + (ptrdiff_t)j * s1);
        }
    } else {
        if (by_column) {
            for (uint32_t j = 0; j < nf; j++)
                for (size_t i = r0; i < r1; i++)
                    buf[(i - r0) * stride + j] =
                        load_f64(src->base + (ptrdiff_t)i * s0 + (ptrdiff_t)j * s1);
        } else {
            for (size_t i = r0; i < r1; i++) {
                const char *row = src->base + (ptrdiff_t)i * s0;
                double *dst = buf + (i - r0) * stride;
                if (s1 == (ptrdiff_t)sizeof(double))
                    memcpy(dst, row, (size_t)nf * sizeof(double));
                else
                    for (uint32_t j = 0; j < nf; j++)
                        dst[j] = load_f64(row + (ptrdiff_t)j * s1);
            }
        }
        if (src->round_float)
            for (size_t i = 0; i < r1 - r0; i++)
                for (uint32_t j = 0; j < nf; j++)
                    buf[i * stride + j] = (double)(float)buf[i * stride + j];
    }
}

/* Whether the rows can be scored where they are, as rows of doubles (no
 * copy): float64 values read as they are, each row's nf values contiguous,
 * rows a whole number of aligned doubles apart. */
static inline int dense_in_place(const dense_src *src)
{
    return !src->f32 && !src->round_float && !src->lead && src->s1 == (ptrdiff_t)sizeof(double) &&
           src->s0 > 0 && src->s0 % (ptrdiff_t)sizeof(double) == 0 &&
           (size_t)src->s0 / sizeof(double) >= src->nf &&
           ((uintptr_t)src->base % sizeof(double)) == 0;
}

/* ------------------------------------------------------------ CSR */

typedef struct csr_src {
    size_t n;
    const void *indptr, *indices, *data;
    int ip64, ix64, f32;
    uint64_t ncols;
    double fill;
    int round_float;
    uint32_t nf;
    int64_t nnz;
    uint32_t lead;         /* column j is feature j + lead (CatBoost's numbering) */
} csr_src;

static inline int64_t ip_at(const csr_src *c, size_t i)
{
    return c->ip64 ? ((const int64_t *)c->indptr)[i] : ((const int32_t *)c->indptr)[i];
}
static inline int64_t ix_at(const csr_src *c, size_t k)
{
    return c->ix64 ? ((const int64_t *)c->indices)[k] : ((const int32_t *)c->indices)[k];
}
static inline double val_at(const csr_src *c, size_t k)
{
    if (c->f32)
        return (double)((const float *)c->data)[k];
    double v = ((const double *)c->data)[k];
    return c->round_float ? (double)(float)v : v;
}

/* Rows [r0, r1) of the CSR matrix into buf, absent entries `fill`. */
static inline void csr_gather(const csr_src *c, size_t r0, size_t r1, double *buf)
{
    const uint32_t nf = c->nf;
    for (size_t i = r0; i < r1; i++) {
        double *row = buf + (i - r0) * nf;
        for (uint32_t j = 0; j < nf; j++)
            row[j] = c->fill;
        /* checked in csr_check; clamped again, as another Python thread
         * may change the arrays while the GIL is released */
        int64_t k = ip_at(c, i), e = ip_at(c, i + 1);
        if (k < 0)
            k = 0;
        if (e > c->nnz)
            e = c->nnz;
        for (; k < e; k++) {
            int64_t j = ix_at(c, (size_t)k);
            if (j >= 0 && (uint64_t)j + c->lead < nf)
                row[j + c->lead] = val_at(c, (size_t)k);
        }
    }
}

/* The CSR structure of c (n, ncols, the arrays and nnz, the indices'
 * length, set), with the lengths of indptr (n_indptr) and data (n_data):
 * NULL when it holds, else what is wrong, in msg[cap]. */
static inline const char *csr_structure(const csr_src *c, int64_t n_indptr, int64_t n_data,
                                        char *msg, size_t cap)
{
    /* (no n + 1: a shape of 2^63 - 1 rows would overflow it) */
    if (n_indptr < 1 || (uint64_t)(n_indptr - 1) != c->n) {
        snprintf(msg, cap, "malformed CSR matrix: indptr must have rows + 1 entries");
        return msg;
    }
    if (n_data != c->nnz || ip_at(c, 0) != 0 || ip_at(c, c->n) != c->nnz) {
        snprintf(msg, cap, "malformed CSR matrix: indptr, indices and data disagree");
        return msg;
    }
    for (size_t i = 0; i < c->n; i++)
        if (ip_at(c, i + 1) < ip_at(c, i)) {
            snprintf(msg, cap, "malformed CSR matrix: indptr decreases at row %zu", i);
            return msg;
        }
    for (int64_t k = 0; k < c->nnz; k++) {
        int64_t j = ix_at(c, (size_t)k);
        if (j < 0 || (uint64_t)j >= c->ncols) {
            snprintf(msg, cap, "malformed CSR matrix: column index %lld out of range [0, %llu)",
                     (long long)j, (unsigned long long)c->ncols);
            return msg;
        }
    }
    return NULL;
}

#endif
