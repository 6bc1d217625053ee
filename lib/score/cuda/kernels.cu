// kernels.cu: the GPU kernels (the phases of phases.h between barriers),
// one instantiation per kernel, class count, row type and (GPU-QS) vector
// memory, and the CUDA runtime behind the driver's device interface
// (device.h).
// Built with --fmad=false -ftz=false -prec-div=true -prec-sqrt=true and
// never fast-math: the sums and the linear leaves' products must round as
// the CPU's do.  Every function here has hidden visibility: libqs exports
// no CUDA symbol.
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

extern "C" {
#include "score/cuda/device.h"
}

// GPU-QS: a thread-block takes db documents at a time (a grid-stride loop
// over the batch) through every tree block of the model: init, barrier,
// mask, barrier, then per chunk of trees fetch, barrier, add, barrier.
// KR: the classes' accumulators (1: one class in registers, QS_CU_KREG:
// up to that many, 0: global); F32: float32 rows; GVEC: the leaf vectors
// in global memory.
template <uint32_t KR, int F32, int GVEC>
__global__ void __launch_bounds__(QS_CU_MAX_THREADS_QS, 1)
qs_cu_kernel_qs(const qs_cu_model M, const qs_cu_batch X)
{
    extern __shared__ __align__(16) unsigned char qs_cu_shared[];
    const uint32_t tid = threadIdx.x, nthreads = blockDim.x, db = X.db;
    const uint64_t vwords = (uint64_t)M.vec_words * db;
    uint32_t *vec = GVEC ? X.vec_global + (uint64_t)blockIdx.x * vwords : (uint32_t *)qs_cu_shared;
    double *vals = (double *)(qs_cu_shared + (GVEC ? 0 : vwords * 4u));
    uint16_t *ranks = M.pivots ? (uint16_t *)((unsigned char *)vals + (uint64_t)M.chunk * db * 8u)
                               : NULL;
    qs_cu_acc a;
    for (uint64_t g = blockIdx.x; g * db < X.n; g += gridDim.x) {
        const uint32_t doc0 = (uint32_t)(g * db);
        const uint32_t nd = X.n - doc0 < db ? X.n - doc0 : db;
        if (tid < nd)
            qs_cu_acc_start(&M, &X, &a, (uint64_t)doc0 + tid, KR);
        if (ranks) {
            qs_cu_qs_ranks(&M, &X, ranks, doc0, nd, tid, nthreads, F32);
            __syncthreads();
        }
        for (uint32_t b = 0; b < M.nblocks; b++) {
            const qs_cu_block *B = &M.blocks[b];
            qs_cu_qs_init(B, vec, db, tid, nthreads);
            __syncthreads();
            qs_cu_qs_mask(&M, B, &X, vec, ranks, doc0, nd, tid, nthreads, NULL, F32, GVEC);
            __syncthreads();
            for (uint32_t c0 = 0; c0 < B->ntrees; c0 += M.chunk) {
                const uint32_t nc = B->ntrees - c0 < M.chunk ? B->ntrees - c0 : M.chunk;
                qs_cu_qs_fetch(&M, B, &X, vec, vals, doc0, nd, c0, nc, tid, nthreads, F32);
                __syncthreads();
                qs_cu_qs_add(&M, B, &X, vals, &a, doc0, nd, c0, nc, tid, KR);
                __syncthreads();
            }
        }
        if (tid < nd)
            qs_cu_acc_finish(&M, &X, &a, (uint64_t)doc0 + tid, KR);
    }
}

// rank, lanes, walk: one document per thread (a grid-stride loop); each
// thread's ranks in its own column of shared memory, so no barrier.
template <uint32_t KIND, uint32_t KR, int F32>
__global__ void __launch_bounds__(QS_CU_MAX_THREADS)
qs_cu_kernel_walk(const qs_cu_model M, const qs_cu_batch X)
{
    extern __shared__ __align__(16) unsigned char qs_cu_shared[];
    uint16_t *ranks = (uint16_t *)qs_cu_shared;
    for (uint64_t g = blockIdx.x; g * blockDim.x < X.n; g += gridDim.x) {
        const uint64_t row = g * blockDim.x + threadIdx.x;
        if (row < X.n)
            qs_cu_walk_doc(&M, &X, ranks, row, threadIdx.x, blockDim.x, NULL, KIND, KR, F32);
    }
}

typedef void (*qs_cu_kfn)(const qs_cu_model, const qs_cu_batch);

// Every instantiation, [kernel][classes 1, <= QS_CU_KREG, more][f32][gvec].
#define QS_CU_QS_ROW(KR)                                                                          \
    { { qs_cu_kernel_qs<KR, 0, 0>, qs_cu_kernel_qs<KR, 0, 1> },                                    \
      { qs_cu_kernel_qs<KR, 1, 0>, qs_cu_kernel_qs<KR, 1, 1> } }
#define QS_CU_WALK_ROW(K, KR)                                                                     \
    { { qs_cu_kernel_walk<K, KR, 0>, qs_cu_kernel_walk<K, KR, 0> },                               \
      { qs_cu_kernel_walk<K, KR, 1>, qs_cu_kernel_walk<K, KR, 1> } }
#define QS_CU_WALK_ROWS(K) { QS_CU_WALK_ROW(K, 1), QS_CU_WALK_ROW(K, QS_CU_KREG), QS_CU_WALK_ROW(K, 0) }
static const qs_cu_kfn qs_cu_kernels[QS_CU_NKERNELS][3][2][2] = {
    { QS_CU_QS_ROW(1), QS_CU_QS_ROW(QS_CU_KREG), QS_CU_QS_ROW(0) },
    QS_CU_WALK_ROWS(QS_CU_K_RANK),
    QS_CU_WALK_ROWS(QS_CU_K_LANES),
    QS_CU_WALK_ROWS(QS_CU_K_WALK),
};

static int fail(cudaError_t e, char *msg, size_t cap)
{
    snprintf(msg, cap, "%s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
    return -1;
}

typedef struct cuda_ctx {
    int device;
    // the dynamic shared memory each kernel was allowed
    uint32_t shared_set[QS_CU_NKERNELS][3][2][2];
} cuda_ctx;

// qs_backend_warm_up: the device's primary context created on a thread of
// its own at process start; cu_open waits for it.
static pthread_mutex_t warm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t warm_thread;
static int warm_state; // 0: none, 1: running, 2: joined

static void *warm_main(void *arg)
{
    if (cudaSetDevice((int)(intptr_t)arg) == cudaSuccess)
        cudaFree(0);
    cudaGetLastError();
    return NULL;
}

static void cu_warm(int device)
{
    pthread_mutex_lock(&warm_lock);
    if (warm_state == 0 && pthread_create(&warm_thread, NULL, warm_main, (void *)(intptr_t)device) == 0)
        warm_state = 1;
    pthread_mutex_unlock(&warm_lock);
}

static void warm_join(void)
{
    pthread_mutex_lock(&warm_lock);
    if (warm_state == 1) {
        pthread_join(warm_thread, NULL);
        warm_state = 2;
    }
    pthread_mutex_unlock(&warm_lock);
}

static int cu_probe(int device, char *why, size_t cap)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, cap, "%s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
        cudaGetLastError();
        return 0;
    }
    if (n == 0) {
        snprintf(why, cap, "no CUDA device");
        return 0;
    }
    if (device >= n) {
        snprintf(why, cap, "no CUDA device %d (this machine has %d)", device, n);
        return 0;
    }
    return 1;
}

static int cu_open(int device, void **ctx, qs_cu_devinfo *info, char *msg, size_t cap)
{
    warm_join();
    if (!cu_probe(device, msg, cap))
        return -1;
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess)
        return fail(e, msg, cap);
    cudaDeviceProp p;
    e = cudaGetDeviceProperties(&p, device);
    if (e != cudaSuccess)
        return fail(e, msg, cap);
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->memory = p.totalGlobalMem;
    info->shared_optin = (uint32_t)p.sharedMemPerBlockOptin;
    info->sms = (uint32_t)p.multiProcessorCount;
    info->major = p.major;
    info->minor = p.minor;
    cuda_ctx *c = (cuda_ctx *)calloc(1, sizeof *c);
    if (!c) {
        snprintf(msg, cap, "out of memory");
        return -1;
    }
    c->device = device;
    *ctx = c;
    return 0;
}

static void cu_close(void *ctx) { free(ctx); }

// The runtime's current device is per host thread, and the scorer may be
// used from any thread: every call first makes the scorer's device current.
#define BIND(ctx)                                                                                 \
    do {                                                                                          \
        cudaError_t be_ = cudaSetDevice(((cuda_ctx *)(ctx))->device);                             \
        if (be_ != cudaSuccess)                                                                   \
            return fail(be_, msg, cap);                                                           \
    } while (0)

static int cu_dev_alloc(void *ctx, void **p, size_t n, char *msg, size_t cap)
{
    BIND(ctx);
    cudaError_t e = cudaMalloc(p, n ? n : 1);
    return e == cudaSuccess ? 0 : fail(e, msg, cap);
}

static void cu_dev_free(void *ctx, void *p)
{
    cudaSetDevice(((cuda_ctx *)ctx)->device);
    cudaFree(p);
}

static int cu_host_alloc(void *ctx, void **p, size_t n, char *msg, size_t cap)
{
    BIND(ctx);
    cudaError_t e = cudaMallocHost(p, n ? n : 1);
    return e == cudaSuccess ? 0 : fail(e, msg, cap);
}

static void cu_host_free(void *ctx, void *p) { cudaFreeHost(p); }

static int cu_stream_new(void *ctx, void **st, char *msg, size_t cap)
{
    BIND(ctx);
    cudaStream_t s;
    cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e != cudaSuccess)
        return fail(e, msg, cap);
    *st = (void *)s;
    return 0;
}

static void cu_stream_free(void *ctx, void *st)
{
    cudaSetDevice(((cuda_ctx *)ctx)->device);
    cudaStreamDestroy((cudaStream_t)st);
}

static int cu_put(void *ctx, void *dev, const void *host, size_t n, void *st, char *msg,
                  size_t cap)
{
    BIND(ctx);
    cudaError_t e = cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, (cudaStream_t)st);
    return e == cudaSuccess ? 0 : fail(e, msg, cap);
}

static int cu_get(void *ctx, void *host, const void *dev, size_t n, void *st, char *msg,
                  size_t cap)
{
    BIND(ctx);
    cudaError_t e = cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, (cudaStream_t)st);
    return e == cudaSuccess ? 0 : fail(e, msg, cap);
}

static int cu_launch(void *ctx, const qs_cu_model *M, const qs_cu_batch *X, uint32_t grid,
                     uint32_t threads, uint32_t shared, void *st, char *msg, size_t cap)
{
    BIND(ctx);
    cuda_ctx *c = (cuda_ctx *)ctx;
    const uint32_t k = M->kernel < QS_CU_NKERNELS ? M->kernel : QS_CU_K_WALK;
    const int kr = M->num_classes == 1 ? 0 : M->num_classes <= QS_CU_KREG ? 1 : 2;
    const int f32 = X->f32 != 0, gvec = k == QS_CU_K_QS && X->vec_global != NULL;
    const qs_cu_kfn fn = qs_cu_kernels[k][kr][f32][gvec];
    uint32_t *set = &c->shared_set[k][kr][f32][gvec];
    cudaError_t e;
    if (shared > (48u << 10) && shared > *set) {
        e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared);
        if (e != cudaSuccess)
            return fail(e, msg, cap);
        *set = shared;
    }
    fn<<<grid, threads, shared, (cudaStream_t)st>>>(*M, *X);
    e = cudaGetLastError();
    return e == cudaSuccess ? 0 : fail(e, msg, cap);
}

static int cu_wait(void *ctx, void *st, char *msg, size_t cap)
{
    BIND(ctx);
    cudaError_t e = cudaStreamSynchronize((cudaStream_t)st);
    return e == cudaSuccess ? 0 : fail(e, msg, cap);
}

extern "C" const qs_cu_ops qs_cu_cuda_ops = {
    "cuda",
    cu_probe,
    cu_open,
    cu_close,
    cu_dev_alloc,
    cu_dev_free,
    cu_host_alloc,
    cu_host_free,
    cu_stream_new,
    cu_stream_free,
    cu_put,
    cu_get,
    cu_launch,
    cu_wait,
    cu_warm,
};
