/* score.h: the scorer, the workspace and the back-end interface (internal
 * to libqs).  Depends on layout/, model/ and common/.
 *
 * A back end is one const qs_backend_def: facts (name, summary, flags, what
 * `auto` prefers) and functions.  Its state is built by `prepare` when a
 * scorer is loaded or re-laid out, never inside a scoring call, and its
 * per-workspace scratch by `ws_init` when a workspace is made; after that a
 * scorer is immutable and any number of threads may score with it, each
 * with its own workspace.  registry.c lists every back end: adding one is
 * its own file (or folder), one line there and one line in lib/lib.mk. */
#ifndef QS_SCORE_H
#define QS_SCORE_H

#include "layout/layout.h"

typedef struct qs_backend_def qs_backend_def;

/* A batch of dense rows handed to a back end's whole-batch entry: row i is
 * ptr[i] when ptr is set (a workspace's slots), else x + i * stride.  With
 * zero_band set the rows are read as LightGBM reads a dense matrix: a value
 * with |x| <= QS_ZERO_BAND counts as +0.0 (qs_zero_band; the rows are not
 * changed): a back end applies it as it reads them. */
typedef struct qs_rows {
    const double *x;
    size_t stride;
    const double *const *ptr;
    size_t n;
    int zero_band;
} qs_rows;

static inline const double *qs_rows_at(const qs_rows *r, size_t i)
{
    return r->ptr ? r->ptr[i] : r->x + i * r->stride;
}

/* Row i of r as a back end must read it: the row, or with r->zero_band and
 * a value of the band in its first nf values, a copy in buf[0 .. nf) with
 * those values +0.0 (qs_zero_band). */
static inline const double *qs_rows_read(const qs_rows *r, size_t i, uint32_t nf, double *buf)
{
    const double *row = qs_rows_at(r, i);
    if (!r->zero_band)
        return row;
    uint32_t f = 0;
    while (f < nf && !(row[f] >= -QS_ZERO_BAND && row[f] <= QS_ZERO_BAND &&
                       (row[f] != 0.0 || signbit(row[f]))))
        f++;
    if (f == nf)
        return row;
    for (uint32_t j = 0; j < nf; j++)
        buf[j] = qs_zero_band(row[j]);
    return buf;
}

struct qs_backend_def {
    const char *name;
    const char *summary;      /* one line */
    unsigned flags;           /* QS_BACKEND_F_* (qs.h) */
    unsigned auto_rank;       /* auto runs the available back end of highest rank; 0: never */
    unsigned param;           /* for the functions below (a SIMD level, say) */
    /* Whether this machine and build can run it: 1, or 0 with the reason
     * in why[cap] ("this CPU lacks AVX2").  NULL: always. */
    int (*probe)(const qs_backend_def *d, char *why, size_t cap);
    /* Build the back end's state for a loaded scorer (*state may stay
     * NULL).  QS_ERR_UNSUPPORTED for a model it cannot score.  NULL: no
     * state. */
    int (*prepare)(const qs_backend_def *d, const qs_scorer *s, void **state, qs_error *err);
    void (*release)(void *state);
    /* Per-workspace scratch; NULL: none. */
    int (*ws_init)(const qs_backend_def *d, const qs_scorer *s, const void *state,
                   void **scratch, qs_error *err);
    void (*ws_free)(void *scratch);
    /* Score slots 0 .. n-1 of w (1 <= n <= w->nslots) into out[d * K + c].
     * how: QS_HOW_NAMED when the caller named this back end (use its own
     * kernels throughout), 0 when it runs for `auto` (it may take a faster
     * exact path for a small batch).  0, or -1 with err. */
    int (*score)(const qs_backend_def *d, const qs_scorer *s, const void *state,
                 qs_workspace *w, void *scratch, uint32_t n, double *out, unsigned how,
                 qs_error *err);
    /* Optional whole-batch entry (QS_BACKEND_F_BATCH): score every row of
     * r (any n >= 1) into out[i * K + c], the back end owning its
     * parallelism and buffers (a device back end: its streams, pinned
     * and device memory).  threads: how many CPU threads the caller
     * allows for host-side work (0: all).  May be called from several
     * threads at once with the same state (the back end serialises what
     * it must).  The sums only: the caller applies the output affine.
     * A back end with this entry needs no `score`, `ws_init` or `ws_free`
     * (qs_score_batch hands it the workspace's slots as rows, threads 1);
     * callers reach it through qs_backend_score_rows. */
    int (*score_rows)(const qs_backend_def *d, const qs_scorer *s, void *state, const qs_rows *r,
                      double *out, unsigned threads, unsigned how, qs_error *err);
    /* Optional, where this back end wins auto's ranks: the name of the
     * back end of its family auto runs instead for scorer s (its model and
     * layout, this CPU), with the reason in why[cap]; NULL: itself.  A
     * pure function of the CPU and the layout (no timing), so a model
     * always gets the same kernel here; called when s is loaded. */
    const char *(*auto_pick)(const qs_backend_def *d, const qs_scorer *s, char *why, size_t cap);
    /* Optional, for a device back end: whether device option name=value
     * is valid (qs_scorer_set_device_option): 0, or -1 with err
     * (QS_ERR_ARG: the rule). */
    int (*check_option)(const qs_backend_def *d, const char *name, const char *value,
                        qs_error *err);
    /* Optional: what this back end does with scorer s, in out[cap] (its
     * kernel and why; qs_scorer_backend_plan).  A pure function of the
     * model and the options (no device is opened).  0, or -1 with err. */
    int (*plan)(const qs_backend_def *d, const qs_scorer *s, char *out, size_t cap,
                qs_error *err);
    /* Optional: start the device's initialisation on a thread of its own
     * (qs_backend_warm_up), so that it overlaps loading and parsing. */
    void (*warm_up)(const qs_backend_def *d, int device);
    /* Optional: check this back end's environment variables
     * (qs_env_check): 0, or -1 with err (QS_ERR_ARG: the rule). */
    int (*check_env)(const qs_backend_def *d, qs_error *err);
};

#define QS_HOW_NAMED 1u
#define QS_MAX_DEVOPTS 16u

/* matrix.c: the one place that decides how rows reach back end b (prepared
 * for s; QS_BACKEND_AUTO: what auto runs as): a back end with score_rows
 * gets every row of r in one call, the others r split into contiguous
 * shares over `threads` OpenMP threads (0: OpenMP's default), each share a
 * workspace's slots at a time.  out[i * K + c], the output affine applied.
 * The same bits for every thread count.  0, or -1 with err. */
int qs_backend_score_rows(const qs_scorer *s, qs_backend b, const qs_rows *r, double *out,
                          unsigned threads, qs_error *err);

/* registry.c */
extern const qs_backend_def *const qs_backend_table[];
extern const unsigned qs_backend_table_len;
#define QS_MAX_BACKENDS 32u

struct qs_scorer {
    qs_model *m;
    qs_layout *L;
    uint64_t max_block_trees; /* largest block, for the workspace's vectors */
    uint32_t max_words;       /* widest multi-word block */
    uint32_t doc_block;       /* δ: documents scored together */
    int auto_backend;         /* what auto runs as (for this model: auto_pick) */
    char auto_why[160];       /* why (qs_scorer_auto_backend) */
    unsigned build_threads;   /* threads that build a layout (load, relayout) */
    uint32_t stored_tree_block; /* τ as the .qsm stores it (qs_scorer_get_layout_info) */
    uint32_t order;           /* qs_order within a batch (QS_ORDER_SD: plain BWQS) */
    uint32_t order_s, order_d; /* scorers, documents per inner block (0: default) */
    int device;               /* the accelerator device back ends use (qs_scorer_set_device) */
    /* Device options (qs_scorer_set_device_option), in the order set; a
     * device back end reads them over its environment's at prepare. */
    struct qs_devopt {
        char name[16];
        char value[32];
    } devopts[QS_MAX_DEVOPTS];
    uint32_t ndevopts;
    uint8_t prepared[QS_MAX_BACKENDS];
    void *state[QS_MAX_BACKENDS];
};

/* One document slot: a dense vector and what was set since its reset. */
typedef struct qs_slot {
    double *x;                /* num_features values */
    uint32_t *touched;        /* ids set since the last reset */
    uint32_t ntouched, cap_touched;
    int all_dirty;            /* x must be refilled entirely */
    int filled;
    double fill;              /* the absent value x was last filled with */
} qs_slot;

struct qs_workspace {
    const qs_scorer *s;
    uint32_t nslots, cur;
    qs_slot *slot;
    const double **xs;        /* slot vectors, for the back ends */
    double *acc;              /* nslots * num_classes */
    float *accf;
    uint8_t ready[QS_MAX_BACKENDS];  /* scratch made for back end b */
    void *scratch[QS_MAX_BACKENDS];
};

/* ---- the BWQS driver (qs.c), shared by the scalar and SIMD back ends.
 * A SIMD kernel set scores `lanes` documents of a batch through one block;
 * the driver gives it the blocks it takes and scores the others scalar. */
typedef struct qs_simd_kernel {
    unsigned level;
    const void *data;         /* the back end's state */
    int (*takes)(unsigned level, const qs_block *B);
    unsigned (*lanes)(unsigned level, const qs_block *B, uint32_t n);
    void (*block)(const struct qs_simd_kernel *k, unsigned lanes, const qs_model *m,
                  const qs_layout *L, const qs_block *B, uint64_t *v,
                  const double *const *xs, unsigned nreal, double *acc, float *accf);
} qs_simd_kernel;
#define QS_SIMD_MAX_LANES 64u

/* Score slots 0 .. n-1 blockwise.  vec: scratch of qs_bwqs_vec_bytes(s,
 * tree_bytes) bytes, 64-byte aligned.  k NULL: scalar only; forced: give
 * k every block it takes, even for batches that fill under half of its
 * lanes. */
void qs_bwqs_score(const qs_scorer *s, qs_workspace *w, void *vec, uint32_t n, double *out,
                   const qs_simd_kernel *k, int forced);
/* The inner block sizes the order of s uses for a batch of n documents
 * whose SIMD unit is `unit` documents: *ps scorers, *pd documents. */
void qs_order_params(const qs_scorer *s, uint32_t n, unsigned unit, uint32_t *ps, uint32_t *pd);
/* The exit leaf of every tree for slots 0 .. n-1, as the scalar kernels
 * find them: out[d * T + t] = the leaf's source number (layout leaf_id). */
int qs_bwqs_leaves(const qs_scorer *s, qs_workspace *w, uint32_t n, uint32_t *out,
                   qs_error *err);
/* Scratch bytes of a BWQS back end whose SIMD kernel needs tree_bytes per
 * tree of a block (0: scalar). */
size_t qs_bwqs_vec_bytes(const qs_scorer *s, size_t tree_bytes);
/* Allocate / free that scratch (for a back end's ws_init / ws_free). */
int qs_bwqs_ws_alloc(const qs_scorer *s, size_t tree_bytes, void **scratch, qs_error *err);
void qs_bwqs_ws_free(void *scratch);

#endif
