/* driver.c: the GPU back end's host driver and its two back ends, `cuda`
 * (the CUDA runtime, kernels.cu) and `cuda-emu` (the same driver over the
 * emulated device of emu.c).
 *
 * prepare: open the device (waiting for an early start of it,
 * qs_backend_warm_up), read the tunables (tables.c: the environment's, then
 * the scorer's device options), build the image of the scorer for the
 * kernel they or the model pick, upload it once.  score_rows (the
 * whole-batch entry): the rows go in sub-batches of up to `sub` documents,
 * round-robin over `streams` (1..4) lanes, each a stream with its own
 * page-locked input and output buffers and device buffers (and, for GPU-QS
 * vectors in global memory, its own: two lanes' kernels run at once):
 * while one lane's copy in, kernel and copy out run, the host packs the
 * next lane's rows and unpacks the scores of the lane before.  A row goes
 * as the features the model uses only, and for a float32 model as float32
 * when every value of its sub-batch is one (the readers round a float32
 * model's documents so): the kernels widen them to the same doubles.  The lanes are sized by the
 * first batch, a power of two of at least QS_CU_MIN_ROWS rows, and grow
 * (by powers of two, up to `sub`) when a larger one comes.  Calls from
 * several threads take the device one after another; the device context
 * and the model's image live as long as the scorer.  Any device error fails
 * the call with the device's message (QS_ERR_DEVICE): never a wrong score,
 * never a retry on another back end. */
#include "score/cuda/device.h"
#include "score/cuda/tables.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define QS_CU_SUB_BYTES ((uint64_t)256 << 20) /* most bytes of rows per transfer */
#define QS_CU_MAX_LANES 4u
#define QS_CU_MIN_ROWS 16u          /* the smallest lane */

typedef struct lane {
    void *st;
    unsigned char *pin_x;           /* page-locked rows (double or float32) */
    double *pin_out;
    unsigned char *dx;              /* device */
    double *dacc, *dout;
    float *daccf;
    uint32_t *dvec;                 /* GPU-QS vectors in global memory */
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
    uint32_t ncols;                 /* values per row on the device */
    uint32_t K;
    uint32_t sub;                   /* most documents per transfer */
    unsigned nlanes;
    lane lanes[QS_CU_MAX_LANES];
    uint32_t cap;                   /* rows each lane holds now (0: none allocated) */
    double *rowbuf;                 /* a row with the zero band applied */
    uint64_t f32_batches, batches;  /* sub-batches sent as float32, in all */
    pthread_mutex_t lock;
} cu_state;

static const char *ops_name(const qs_cu_ops *ops)
{
    return ops == &qs_cu_emu_ops ? "cuda-emu" : "cuda";
}

static int dev_fail(qs_error *err, const cu_state *c, const char *what, const char *msg)
{
    return qs_fail(err, QS_ERR_DEVICE, 0, "%s: %s: %s", ops_name(c->ops), what, msg);
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
    free(c->rowbuf);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static int cu_prepare_ops(const qs_cu_ops *ops, const qs_scorer *s, void **state, qs_error *err)
{
    char msg[256];
    qs_cu_params p;
    if (qs_cu_params_for(s, &p, err) != 0)
        return -1;
    if (s->device < 0)
        return qs_fail(err, QS_ERR_ARG, 0, "device %d: expected a device number >= 0", s->device);
    cu_state *c = calloc(1, sizeof *c);
    if (!c)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    c->ops = ops;
    pthread_mutex_init(&c->lock, NULL);
    if (ops->open(s->device, &c->ctx, &c->info, msg, sizeof msg) != 0) {
        c->ctx = NULL;
        cu_release(c);
        return qs_fail(err, QS_ERR_DEVICE, 0, "%s: device %d: %s", ops_name(ops), s->device, msg);
    }
    if (qs_cu_image_build(s, &p, c->info.shared_optin, &c->im, err) != 0) {
        cu_release(c);
        return -1;
    }
    const qs_model *m = s->m;
    c->ncols = c->im.model.ncols ? c->im.model.ncols : 1;
    c->K = m->num_classes;
    c->rowbuf = malloc(sizeof(double) * (m->num_features ? m->num_features : 1));
    if (!c->rowbuf) {
        cu_release(c);
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    }
    /* Rows of one transfer within QS_CU_SUB_BYTES. */
    const uint32_t sub = p.set >> QS_CU_OPT_SUB & 1u ? p.v[QS_CU_OPT_SUB] : QS_CU_DEFAULT_SUB;
    uint64_t most = QS_CU_SUB_BYTES / ((uint64_t)c->ncols * sizeof(double));
    if (most < 1)
        most = 1;
    c->sub = sub < most ? sub : (uint32_t)most;
    c->nlanes = p.set >> QS_CU_OPT_STREAMS & 1u ? p.v[QS_CU_OPT_STREAMS] : QS_CU_DEFAULT_STREAMS;
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
    const size_t xb = (size_t)rows * c->ncols * sizeof(double);
    const size_t ob = (size_t)rows * c->K * sizeof(double);
    /* accumulators in global memory: only for more classes than registers hold */
    const int gacc = c->K > QS_CU_KREG;
    const size_t ab = gacc ? ob : 8, fb = gacc ? (size_t)rows * c->K * sizeof(float) : 8;
    const size_t vb = c->im.vec_block ? (size_t)(c->im.vec_block * qs_cu_grid(&c->im, rows)) : 0;
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
            c->ops->dev_alloc(c->ctx, (void **)&l->dacc, ab, msg, sizeof msg) != 0 ||
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

/* Rows first .. first + n - 1 of r into the lane's page-locked buffer as
 * the device's columns: float32 when asked and every value is one (1),
 * else double (0). */
static int pack_rows(cu_state *c, const qs_scorer *s, const qs_rows *r, size_t first, uint32_t n,
                     lane *l)
{
    const uint32_t nfm = s->m->num_features, nc = c->ncols;
    const uint32_t *cf = c->im.col_feature;
    const uint32_t used = c->im.model.ncols;
    if (c->im.f32_ok && s->m->float_precision) {
        float *x = (float *)l->pin_x;
        int ok = 1;
        for (uint32_t i = 0; i < n && ok; i++) {
            const double *src = nfm ? qs_rows_read(r, first + i, nfm, c->rowbuf) : NULL;
            float *row = x + (size_t)i * nc;
            for (uint32_t k = 0; k < used; k++) {
                const double v = src[cf[k]];
                row[k] = (float)v;
                if ((double)row[k] != v && v == v) {
                    ok = 0;
                    break;
                }
            }
            if (!used)
                row[0] = 0.0f;
        }
        if (ok)
            return 1;
    }
    double *x = (double *)l->pin_x;
    for (uint32_t i = 0; i < n; i++) {
        const double *src = nfm ? qs_rows_read(r, first + i, nfm, c->rowbuf) : NULL;
        double *row = x + (size_t)i * nc;
        for (uint32_t k = 0; k < used; k++)
            row[k] = src[cf[k]];
        if (!used)
            row[0] = 0.0;
    }
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
        const int f32 = pack_rows(c, s, r, next, n, l);
        c->batches++;
        c->f32_batches += (uint64_t)f32;
        qs_cu_batch X = {
            .x = l->dx, .stride = c->ncols, .n = n, .f32 = (uint32_t)f32, .db = c->im.db,
            .acc = l->dacc, .accf = l->daccf, .out = l->dout, .vec_global = l->dvec,
        };
        const size_t xbytes = (size_t)n * c->ncols * (f32 ? sizeof(float) : sizeof(double));
        const char *what = "copying documents to the device";
        if (c->ops->put(c->ctx, l->dx, l->pin_x, xbytes, l->st, msg, sizeof msg) != 0)
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

/* ------------------------------------------------------------ plan, options */

static int cu_plan(const qs_backend_def *d, const qs_scorer *s, char *out, size_t cap,
                   qs_error *err)
{
    qs_cu_params p;
    qs_cu_image im;
    if (qs_cu_params_for(s, &p, err) != 0 || qs_cu_image_build(s, &p, 0, &im, err) != 0)
        return -1;
    const int qs = im.kernel == QS_CU_K_QS;
    size_t n = 0;
#define ADD(...)                                                                                \
    do {                                                                                        \
        if (n < cap)                                                                            \
            n += (size_t)snprintf(out + n, cap - n, __VA_ARGS__);                               \
    } while (0)
    ADD("kernel %s; %u threads and %u documents a thread-block, %u bytes of shared memory",
        im.why, im.threads, qs ? im.db : im.threads, im.shared);
    if (qs)
        ADD("; %u trees a block%s; pivots by %s", im.tau,
            im.vec_block ? ", vectors in global memory" : "", im.pivots);
    ADD("; rows of the %u features the model uses (of %u) %s", im.model.ncols,
        s->m->num_features,
        im.f32_ok && s->m->float_precision
            ? "as float32 (the model's precision; double for a transfer holding another value)"
            : "as double");
#undef ADD
    qs_cu_image_free(&im);
    return 0;
}

static int cu_check_option(const qs_backend_def *d, const char *name, const char *value,
                           qs_error *err)
{
    return qs_cu_check_option(name, value, err);
}

static int cu_check_env(const qs_backend_def *d, qs_error *err)
{
    qs_cu_params p = { { 0 }, 0 };
    return qs_cu_params_env(&p, err);
}

/* ------------------------------------------------------------ back ends */

static int emu_prepare(const qs_backend_def *d, const qs_scorer *s, void **state, qs_error *err)
{
    return cu_prepare_ops(&qs_cu_emu_ops, s, state, err);
}

const qs_backend_def qs_backend_cuda_emu = {
    .name = "cuda-emu",
    .summary = "the cuda back end's driver and kernels run on the CPU, thread by thread in "
               "shuffled order (checks the GPU back end without a GPU; slow)",
    .flags = QS_BACKEND_F_BATCH,
    .auto_rank = 0,
    .prepare = emu_prepare,
    .release = cu_release,
    .score_rows = cu_score_rows,
    .check_option = cu_check_option,
    .check_env = cu_check_env,
    .plan = cu_plan,
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

static void cuda_warm_up(const qs_backend_def *d, int device)
{
#if QS_HAVE_CUDA
    /* QS_CUDA_WARM=0 (or a malformed tunable, which prepare reports) */
    qs_cu_params p = { { 0 }, 0 };
    if (qs_cu_params_env(&p, NULL) != 0 || ((p.set >> QS_CU_OPT_WARM) & 1u && !p.v[QS_CU_OPT_WARM]))
        return;
    if (qs_cu_cuda_ops.warm)
        qs_cu_cuda_ops.warm(device);
#else
    (void)device;
#endif
}

const qs_backend_def qs_backend_cuda = {
    .name = "cuda",
    .summary = "exact scoring on an NVIDIA GPU, each document's trees summed in model order; "
               "the kernel by the model: rank (in-order walk over rank-encoded nodes), lanes "
               "(branch-free QS over ranks, trees of <= 16 leaves), walk (doubles: categorical "
               "nodes, many features), or qs (GPU-QS) when asked; the rule is an estimate, "
               "not yet measured on a device",
    .flags = QS_BACKEND_F_DEVICE | QS_BACKEND_F_BATCH,
    /* Not picked by auto until a measured rule says where it wins. */
    .auto_rank = 0,
    .probe = cuda_probe,
    .prepare = cuda_prepare,
    .release = cu_release,
    .score_rows = cu_score_rows,
    .check_option = cu_check_option,
    .check_env = cu_check_env,
    .plan = cu_plan,
    .warm_up = cuda_warm_up,
};
