/* driver.c: the GPU-QS host driver and its two back ends, `cuda` (the CUDA
 * runtime, kernels.cu) and `cuda-emu` (the same driver over the emulated
 * device of emu.c).
 *
 * prepare: open the device, build the image of the scorer (tables.c) for
 * the device's shared memory, upload it once.  score_rows (the whole-batch
 * entry): the rows go in sub-batches of up to `sub` documents, round-robin
 * over 2 (QS_CUDA_STREAMS: 1..4) lanes, each a stream with its own
 * page-locked input and output buffers and device buffers (and, when a
 * tree block's leaf vectors do not fit in shared memory, its own global
 * ones: two lanes' kernels run at once): while one lane's copy in, kernel
 * and copy out run, the host packs the next lane's rows and unpacks the
 * scores of the lane before.  The lanes are sized by the first batch, a
 * power of two of at least QS_CU_MIN_ROWS rows, and grow (by powers of two,
 * up to `sub`) when a larger one comes: a batch of 21 documents does not
 * allocate buffers for 16,384.  Calls from several
 * threads take the device one after another.  Any device error fails the
 * call with the device's message (QS_ERR_DEVICE): never a wrong score,
 * never a retry on another back end. */
#include "score/cuda/device.h"
#include "score/cuda/tables.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define QS_CU_DEFAULT_SUB 16384u   /* documents per transfer: a --gpu-batch of 65,536 goes
                                      as 4, so copies overlap kernels */
#define QS_CU_SUB_BYTES ((uint64_t)256 << 20) /* most bytes of rows per transfer */
#define QS_CU_MAX_LANES 4u
#define QS_CU_MIN_ROWS 16u          /* the smallest lane */

typedef struct lane {
    void *st;
    double *pin_x, *pin_out;        /* page-locked */
    double *dx, *dacc, *dout;       /* device */
    float *daccf;
    unsigned char *dvec;            /* global leaf vectors (image shared == 0) */
    int busy;
    size_t first;                   /* the batch's first row */
    uint32_t n;
} lane;

typedef struct cu_state {
    const qs_cu_ops *ops;
    void *ctx;
    qs_cu_devinfo info;
    qs_cu_image im;
    void *dblob;                    /* the image on the device */
    qs_cu_model dmodel;             /* its pointers rebased there */
    uint32_t nf;                    /* values per row on the device */
    uint32_t K;
    uint32_t sub;                   /* most documents per transfer */
    unsigned nlanes;
    lane lanes[QS_CU_MAX_LANES];
    uint32_t cap;                   /* rows each lane holds now (0: none allocated) */
    pthread_mutex_t lock;
} cu_state;

static int dev_fail(qs_error *err, const cu_state *c, const char *what, const char *msg)
{
    return qs_fail(err, QS_ERR_DEVICE, 0, "%s: %s: %s", c->ops == &qs_cu_emu_ops ? "cuda-emu" : "cuda",
                   what, msg);
}

static void lanes_free(cu_state *c)
{
    for (unsigned i = 0; i < c->nlanes; i++) {
        lane *l = &c->lanes[i];
        if (l->st)
            c->ops->stream_free(c->ctx, l->st);
        if (l->pin_x)
            c->ops->host_free(c->ctx, l->pin_x);
        if (l->pin_out)
            c->ops->host_free(c->ctx, l->pin_out);
        void *dev[5] = { l->dx, l->dacc, l->dout, l->daccf, l->dvec };
        for (int k = 0; k < 5; k++)
            if (dev[k])
                c->ops->dev_free(c->ctx, dev[k]);
        memset(l, 0, sizeof *l);
    }
    c->cap = 0;
}

static void cu_release(void *state)
{
    cu_state *c = state;
    if (!c)
        return;
    lanes_free(c);
    if (c->dblob)
        c->ops->dev_free(c->ctx, c->dblob);
    if (c->ctx)
        c->ops->close(c->ctx);
    qs_cu_image_free(&c->im);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static int cu_prepare_ops(const qs_cu_ops *ops, const qs_scorer *s, void **state, qs_error *err)
{
    char msg[256];
    cu_state *c = calloc(1, sizeof *c);
    if (!c)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    c->ops = ops;
    pthread_mutex_init(&c->lock, NULL);
    if (s->device < 0) {
        cu_release(c);
        return qs_fail(err, QS_ERR_ARG, 0, "device %d: expected a device number >= 0", s->device);
    }
    if (ops->open(s->device, &c->ctx, &c->info, msg, sizeof msg) != 0) {
        c->ctx = NULL;
        cu_release(c);
        return qs_fail(err, QS_ERR_DEVICE, 0, "%s: device %d: %s",
                       ops == &qs_cu_emu_ops ? "cuda-emu" : "cuda", s->device, msg);
    }
    qs_cu_params p = { 0 };
    uint32_t streams = 2, sub = QS_CU_DEFAULT_SUB;
    if (qs_cu_params_env(&p, err) != 0 ||
        qs_cu_env_u32("QS_CUDA_STREAMS", 1, QS_CU_MAX_LANES, &streams, err) ||
        qs_cu_env_u32("QS_CUDA_SUB", 1, 1u << 24, &sub, err)) {
        cu_release(c);
        return -1;
    }
    if (p.shared == 0 || p.shared > c->info.shared_optin)
        p.shared = p.shared ? c->info.shared_optin : QS_CU_DEFAULT_SHARED;
    if (p.shared > c->info.shared_optin && c->info.shared_optin)
        p.shared = c->info.shared_optin;
    if (qs_cu_image_build(s, &p, &c->im, err) != 0) {
        cu_release(c);
        return -1;
    }
    const qs_model *m = s->m;
    c->nf = m->num_features ? m->num_features : 1;
    c->K = m->num_classes;
    /* Rows of one transfer within QS_CU_SUB_BYTES. */
    uint64_t most = QS_CU_SUB_BYTES / ((uint64_t)c->nf * sizeof(double));
    if (most < 1)
        most = 1;
    c->sub = sub < most ? sub : (uint32_t)most;
    c->nlanes = streams;
    /* The model, uploaded once. */
    if (ops->dev_alloc(c->ctx, &c->dblob, c->im.bytes ? c->im.bytes : 16, msg, sizeof msg) != 0) {
        c->dblob = NULL;
        int rc = dev_fail(err, c, "allocating the model's tables", msg);
        cu_release(c);
        return rc;
    }
    void *st = NULL;
    if (ops->stream_new(c->ctx, &st, msg, sizeof msg) != 0 ||
        ops->put(c->ctx, c->dblob, c->im.blob, c->im.bytes, st, msg, sizeof msg) != 0 ||
        ops->wait(c->ctx, st, msg, sizeof msg) != 0) {
        if (st)
            ops->stream_free(c->ctx, st);
        int rc = dev_fail(err, c, "uploading the model", msg);
        cu_release(c);
        return rc;
    }
    ops->stream_free(c->ctx, st);
    qs_cu_image_model_at(&c->im, c->dblob, &c->dmodel);
    /* The host copy of the tables is not needed any more (the emulator too
     * reads the device's copy), nor the layout it was built from. */
    free(c->im.blob);
    c->im.blob = NULL;
    qs_layout_free(c->im.L);
    c->im.L = NULL;
    *state = c;
    return 0;
}

/* Every lane's buffers for `rows` documents (any smaller ones freed first). */
static int lanes_alloc(cu_state *c, uint32_t rows, qs_error *err)
{
    char msg[256];
    lanes_free(c);
    const size_t xb = (size_t)rows * c->nf * sizeof(double);
    const size_t ob = (size_t)rows * c->K * sizeof(double);
    const size_t fb = (size_t)rows * c->K * sizeof(float);
    const size_t vb = c->im.shared == 0 ? (size_t)(c->im.vec_block * qs_cu_grid(&c->im, rows)) : 0;
    for (unsigned i = 0; i < c->nlanes; i++) {
        lane *l = &c->lanes[i];
        const char *what = "creating a stream";
        if (c->ops->stream_new(c->ctx, &l->st, msg, sizeof msg) != 0)
            goto fail;
        what = "allocating page-locked buffers";
        if (c->ops->host_alloc(c->ctx, (void **)&l->pin_x, xb, msg, sizeof msg) != 0 ||
            c->ops->host_alloc(c->ctx, (void **)&l->pin_out, ob, msg, sizeof msg) != 0)
            goto fail;
        what = "allocating device buffers";
        if (c->ops->dev_alloc(c->ctx, (void **)&l->dx, xb, msg, sizeof msg) != 0 ||
            c->ops->dev_alloc(c->ctx, (void **)&l->dacc, ob, msg, sizeof msg) != 0 ||
            c->ops->dev_alloc(c->ctx, (void **)&l->dout, ob, msg, sizeof msg) != 0 ||
            c->ops->dev_alloc(c->ctx, (void **)&l->daccf, fb, msg, sizeof msg) != 0)
            goto fail;
        what = "allocating leaf vectors";
        if (vb && c->ops->dev_alloc(c->ctx, (void **)&l->dvec, vb, msg, sizeof msg) != 0)
            goto fail;
        continue;
    fail:
        lanes_free(c);
        return dev_fail(err, c, what, msg);
    }
    c->cap = rows;
    return 0;
}

/* The scores of lane l's finished batch into out. */
static int lane_finish(cu_state *c, lane *l, double *out, qs_error *err)
{
    char msg[256];
    l->busy = 0;
    if (c->ops->wait(c->ctx, l->st, msg, sizeof msg) != 0)
        return dev_fail(err, c, "scoring a batch", msg);
    memcpy(out + l->first * c->K, l->pin_out, sizeof(double) * c->K * l->n);
    return 0;
}

static int cu_score_rows(const qs_backend_def *d, const qs_scorer *s, void *state,
                         const qs_rows *r, double *out, unsigned threads, unsigned how,
                         qs_error *err)
{
    cu_state *c = state;
    char msg[256];
    int rc = 0;
    if (r->n == 0)
        return 0;
    pthread_mutex_lock(&c->lock);
    if (c->cap < c->sub && c->cap < r->n) {
        /* Too small for this batch (or none yet): the next power of two. */
        uint32_t want = c->cap ? c->cap : QS_CU_MIN_ROWS;
        while (want < r->n && want < c->sub)
            want *= 2;
        if (want > c->sub)
            want = c->sub;
        if (lanes_alloc(c, want, err) != 0) {
            pthread_mutex_unlock(&c->lock);
            return -1;
        }
    }
    const uint32_t sub = c->cap;
    const uint32_t nfm = s->m->num_features;
    size_t next = 0;
    unsigned li = 0;
    while (next < r->n) {
        lane *l = &c->lanes[li];
        li = (li + 1) % c->nlanes;
        if (l->busy && lane_finish(c, l, out, err) != 0) {
            rc = -1;
            break;
        }
        const uint32_t n = r->n - next < sub ? (uint32_t)(r->n - next) : sub;
        for (uint32_t i = 0; i < n; i++) {
            double *row = l->pin_x + (size_t)i * c->nf;
            if (nfm) {
                const double *src = qs_rows_read(r, next + i, nfm, row);
                if (src != row)
                    memcpy(row, src, sizeof(double) * nfm);
            } else {
                row[0] = 0.0;
            }
        }
        qs_cu_batch X = {
            .x = l->dx, .stride = c->nf, .n = n, .db = c->im.db, .acc = l->dacc,
            .accf = l->daccf, .out = l->dout, .vec_global = l->dvec,
        };
        const char *what = "copying documents to the device";
        if (c->ops->put(c->ctx, l->dx, l->pin_x, sizeof(double) * c->nf * n, l->st, msg,
                        sizeof msg) != 0)
            goto fail;
        what = "launching the kernel";
        if (c->ops->launch(c->ctx, &c->dmodel, &X, qs_cu_grid(&c->im, n), c->im.threads,
                           c->im.shared, l->st, msg, sizeof msg) != 0)
            goto fail;
        what = "copying scores from the device";
        if (c->ops->get(c->ctx, l->pin_out, l->dout, sizeof(double) * c->K * n, l->st, msg,
                        sizeof msg) != 0)
            goto fail;
        l->busy = 1;
        l->first = next;
        l->n = n;
        next += n;
        continue;
    fail:
        rc = dev_fail(err, c, what, msg);
        break;
    }
    /* Every lane's batch finished (after a failure, waited for and
     * dropped: the call fails whole). */
    for (unsigned i = 0; i < c->nlanes; i++) {
        lane *l = &c->lanes[i];
        if (!l->busy)
            continue;
        if (rc == 0) {
            if (lane_finish(c, l, out, err) != 0)
                rc = -1;
        } else {
            l->busy = 0;
            c->ops->wait(c->ctx, l->st, msg, sizeof msg);
        }
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* ------------------------------------------------------------ back ends */

static int emu_prepare(const qs_backend_def *d, const qs_scorer *s, void **state, qs_error *err)
{
    return cu_prepare_ops(&qs_cu_emu_ops, s, state, err);
}

const qs_backend_def qs_backend_cuda_emu = {
    .name = "cuda-emu",
    .summary = "the cuda back end's driver and kernel run on the CPU, thread by thread in "
               "shuffled order (checks GPU-QS without a GPU; slow)",
    .flags = QS_BACKEND_F_BATCH,
    .auto_rank = 0,
    .prepare = emu_prepare,
    .release = cu_release,
    .score_rows = cu_score_rows,
};

static int cuda_probe(const qs_backend_def *d, char *why, size_t cap)
{
#if QS_HAVE_CUDA
    return qs_cu_cuda_ops.probe(0, why, cap);
#else
    snprintf(why, cap, "built without CUDA (nvcc was not found when libqs was built)");
    return 0;
#endif
}

static int cuda_prepare(const qs_backend_def *d, const qs_scorer *s, void **state, qs_error *err)
{
#if QS_HAVE_CUDA
    return cu_prepare_ops(&qs_cu_cuda_ops, s, state, err);
#else
    return qs_fail(err, QS_ERR_DEVICE, 0, "cuda: built without CUDA");
#endif
}

const qs_backend_def qs_backend_cuda = {
    .name = "cuda",
    .summary = "GPU-QS on an NVIDIA GPU: leaf vectors of tree blocks in shared memory, integer "
               "atomics, each document's trees summed in order (exact)",
    .flags = QS_BACKEND_F_DEVICE | QS_BACKEND_F_BATCH,
    /* Not picked by auto until a crossover batch size is measured on a GPU. */
    .auto_rank = 0,
    .probe = cuda_probe,
    .prepare = cuda_prepare,
    .release = cu_release,
    .score_rows = cu_score_rows,
};
