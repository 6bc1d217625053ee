/* tables.h: the GPU back end's tunables (one table: parsed and
 * range-checked in one place, from the environment and from the library),
 * the device image of a scorer for one of the kernels of phases.h (built
 * by one plain-C function that the `cuda` back end uploads and the
 * emulator reads in place), the choice of kernel, and the launch geometry. */
#ifndef QS_CUDA_TABLES_H
#define QS_CUDA_TABLES_H

#include "score/score.h"
#include "score/cuda/phases.h"

/* ------------------------------------------------------------ tunables */

enum {
    QS_CU_OPT_KERNEL,   /* auto, qs, rank, lanes, walk */
    QS_CU_OPT_THREADS,  /* threads per thread-block */
    QS_CU_OPT_DB,       /* qs: documents per thread-block */
    QS_CU_OPT_TAU,      /* qs: most trees per tree block */
    QS_CU_OPT_SHARED,   /* shared-memory budget per thread-block, bytes */
    QS_CU_OPT_SUB,      /* most documents per transfer */
    QS_CU_OPT_STREAMS,  /* streams (lanes of transfers and kernels) */
    QS_CU_OPT_F32,      /* 1: float32 transfers where exact; 0: double */
    QS_CU_OPT_PIVOTS,   /* qs: search, rank, auto */
    QS_CU_OPT_WARM,     /* 1: qs_backend_warm_up starts the device; 0: it does not */
    QS_CU_NOPT
};

typedef struct qs_cu_tunable {
    const char *name;     /* the library's name (qs_scorer_set_device_option) */
    const char *env;      /* the environment variable */
    uint32_t lo, hi;      /* range (numbers) */
    uint32_t multiple;    /* the value must be a multiple of this (1: any) */
    uint32_t def;         /* default (0: chosen per model) */
    const char *const *names; /* a name instead of a number (kernel): NULL-ended */
    const char *help;
} qs_cu_tunable;

extern const qs_cu_tunable qs_cu_tunables[QS_CU_NOPT];
/* The kernels' names, QS_CU_K_* order ("auto" is QS_CU_NKERNELS). */
extern const char *const qs_cu_kernel_names[QS_CU_NKERNELS + 2];

typedef struct qs_cu_params {
    uint32_t v[QS_CU_NOPT];
    uint32_t set;         /* bit i: v[i] was given */
} qs_cu_params;

/* The index of tunable `name` (the library's name), or -1. */
int qs_cu_tunable_find(const char *name);
/* Parse `value` for tunable i into p (what: how the message names it,
 * "QS_CUDA_DB" or "device option db").  0, or -1 with err (QS_ERR_ARG:
 * the rule and range). */
int qs_cu_param_parse(qs_cu_params *p, int i, const char *value, const char *what,
                      qs_error *err);
/* Every QS_CUDA_* variable that is set (non-empty) into p, and a check of
 * QS_CUDA_EMU_FAIL's form; 0, or -1 with err (QS_ERR_ARG). */
int qs_cu_params_env(qs_cu_params *p, qs_error *err);
/* The tunables in force for scorer s: the environment's, then the scorer's
 * device options (qs_scorer_set_device_option) over them. */
int qs_cu_params_for(const qs_scorer *s, qs_cu_params *p, qs_error *err);
/* QS_CUDA_EMU_FAIL=WHAT[:N] (WHAT one of alloc, put, launch, get, wait;
 * N >= 1, default 1): 0 with *what (1 + its index; 0 when unset) and *n,
 * or -1 with err. */
int qs_cu_emu_fail_parse(const char *v, int *what, uint64_t *n, qs_error *err);
/* The back ends' option check (qs_backend_def.check_option). */
int qs_cu_check_option(const char *name, const char *value, qs_error *err);

/* Defaults. */
#define QS_CU_DEFAULT_THREADS_QS 256u   /* qs: threads per thread-block */
#define QS_CU_DEFAULT_THREADS_WALK 128u /* rank, lanes, walk: documents per thread-block */
#define QS_CU_DEFAULT_DB 32u            /* qs: documents per thread-block */
#define QS_CU_DEFAULT_SHARED (48u << 10)
#define QS_CU_DEFAULT_SUB 16384u        /* documents per transfer */
#define QS_CU_DEFAULT_STREAMS 2u
#define QS_CU_MAX_SHARED (227u << 10)
#define QS_CU_CHUNK 32u                 /* qs: trees per exit-leaf chunk */
/* Leaf vectors that cannot fit the shared budget even for 32 documents
 * (trees of thousands of leaves) live in global memory, for at most this
 * many bytes in all. */
#define QS_CU_GLOBAL_VEC_BUDGET ((uint64_t)256 << 20)

/* ------------------------------------------------------------ the image */

/* Pointer fields of qs_cu_model. */
#define QS_CU_NPTR 18

typedef struct qs_cu_image {
    unsigned char *blob;  /* every table, each at a 16-byte aligned offset */
    size_t bytes;
    size_t off[QS_CU_NPTR]; /* offset of each pointer field (SIZE_MAX: NULL) */
    qs_cu_model model;    /* pointers into blob */
    qs_layout *L;         /* the layout the image was built from, when the
                             back end built its own (qs; else NULL) */
    uint32_t *col_feature; /* the model's feature of each device column (host only) */
    uint32_t kernel;      /* QS_CU_K_* */
    char why[200];        /* why this kernel (auto's rule, or forced) */
    uint32_t db, threads; /* launch geometry: documents and threads per thread-block */
    uint32_t tau;         /* qs: trees per block */
    uint32_t shared;      /* dynamic shared bytes per thread-block */
    uint64_t vec_block;   /* qs, vectors in global memory: bytes of one
                             thread-block's (0: in shared memory) */
    int f32_ok;           /* float32 transfers allowed (the tunable) */
    char pivots[8];       /* qs: "rank" or "search" */
} qs_cu_image;

/* The kernel `auto` picks for s's model (a pure function of the model and
 * the tunables: an estimate until measured on a device), with the reason in
 * why[cap]: lanes, rank or walk (qs never: not faster by the estimate). */
uint32_t qs_cu_pick_kernel(const qs_scorer *s, const qs_cu_params *p, char *why, size_t cap);
/* Whether kernel k can score s's model, and why not (why[cap]). */
int qs_cu_kernel_takes(const qs_scorer *s, uint32_t k, const qs_cu_params *p, char *why,
                       size_t cap);

/* Build the image of s for the kernel p asks for (auto: qs_cu_pick_kernel)
 * with the shared budget `shared_max` of the device (0: the default).  0,
 * or -1 with err (QS_ERR_UNSUPPORTED: the kernel asked for cannot score
 * the model, the reason named). */
int qs_cu_image_build(const qs_scorer *s, const qs_cu_params *p, uint32_t shared_max,
                      qs_cu_image *im, qs_error *err);
/* The model with its pointers rebased onto a copy of the blob at base. */
void qs_cu_image_model_at(const qs_cu_image *im, const void *base, qs_cu_model *out);
void qs_cu_image_free(qs_cu_image *im);

/* Thread-blocks of a launch of n documents (with vectors in global memory,
 * at most what QS_CU_GLOBAL_VEC_BUDGET holds: a grid-stride loop covers the
 * rest). */
uint32_t qs_cu_grid(const qs_cu_image *im, uint32_t n);

#endif
