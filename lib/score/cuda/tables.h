/* tables.h: the device image of a scorer for GPU-QS (phases.h), built by
 * one plain-C function that the `cuda` back end uploads and the emulator
 * reads in place, and the launch geometry both use. */
#ifndef QS_CUDA_TABLES_H
#define QS_CUDA_TABLES_H

#include "score/score.h"
#include "score/cuda/phases.h"

/* Tunables (environment overrides QS_CUDA_DB, QS_CUDA_THREADS,
 * QS_CUDA_TAU, QS_CUDA_SHARED, so that one device run can sweep them). */
#define QS_CU_DEFAULT_DB 16u          /* documents per thread-block */
#define QS_CU_DEFAULT_THREADS 256u    /* threads per thread-block */
#define QS_CU_DEFAULT_SHARED (48u << 10) /* leaf-vector bytes per thread-block */
#define QS_CU_MAX_THREADS 1024u
#define QS_CU_MAX_DB 1024u
/* Leaf vectors that cannot fit the shared budget even for one document
 * (trees of hundreds of thousands of leaves) live in global memory, for at
 * most this many bytes in all. */
#define QS_CU_GLOBAL_VEC_BUDGET ((uint64_t)256 << 20)

typedef struct qs_cu_params {
    uint32_t db;          /* documents per thread-block (0: default) */
    uint32_t threads;     /* threads per thread-block, a multiple of 32 (0: default) */
    uint32_t tau;         /* most trees per block (0: as many as the budget holds) */
    uint32_t shared;      /* leaf-vector bytes per thread-block (0: default) */
} qs_cu_params;

/* The environment variable `name`, when set, as a whole number in lo..hi
 * into *out (left alone when unset); 0, or -1 with err (QS_ERR_ARG). */
int qs_cu_env_u32(const char *name, uint32_t lo, uint32_t hi, uint32_t *out, qs_error *err);

/* Read the QS_CUDA_* overrides into p (fields left 0 where unset); 0, or
 * -1 with err (QS_ERR_ARG) for a malformed value. */
int qs_cu_params_env(qs_cu_params *p, qs_error *err);

/* Fields of qs_cu_model that point into the image. */
#define QS_CU_NPTR 16

typedef struct qs_cu_image {
    unsigned char *blob;  /* every table, each at a 16-byte aligned offset */
    size_t bytes;
    size_t off[QS_CU_NPTR]; /* offset of each pointer field (SIZE_MAX: NULL) */
    qs_cu_model model;    /* pointers into blob */
    qs_layout *L;         /* the layout the image was built from, when the
                             back end built its own (else NULL) */
    uint32_t db, threads; /* launch geometry */
    uint32_t tau;         /* trees per block of that layout */
    uint32_t shared;      /* shared bytes per thread-block (0: vectors in global memory) */
    uint64_t vec_block;   /* leaf-vector bytes of one thread-block */
} qs_cu_image;

/* Build the image of s: its own layout with τ chosen so that one
 * thread-block's leaf vectors fit the shared budget (the trees' order and
 * reversal are those of s), and the geometry.  0, or -1 with err. */
int qs_cu_image_build(const qs_scorer *s, const qs_cu_params *p, qs_cu_image *im, qs_error *err);
/* The model with its pointers rebased onto a copy of the blob at base. */
void qs_cu_image_model_at(const qs_cu_image *im, const void *base, qs_cu_model *out);
void qs_cu_image_free(qs_cu_image *im);

/* Thread-blocks of a launch of n documents, and of a launch whose
 * vectors live in global memory (a grid-stride loop then covers the
 * rest). */
uint32_t qs_cu_grid(const qs_cu_image *im, uint32_t n);

#endif
