// kernels.cu: the GPU-QS kernel (the phases of phases.h between barriers)
// and the CUDA runtime behind the driver's device interface (device.h).
// Built with --fmad=false -ftz=false -prec-div=true -prec-sqrt=true and
// never fast-math: the sums and the linear leaves' products must round as
// the CPU's do.  Every function here has hidden visibility: libqs exports
// no CUDA symbol.
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

extern "C" {
#include "score/cuda/device.h"
}

// One thread-block: db documents at a time (a grid-stride loop over the
// batch), every tree block of the model in order.
__global__ void __launch_bounds__(QS_CU_MAX_THREADS_EMU)
qs_cu_kernel(const qs_cu_model M, const qs_cu_batch X)
{
    extern __shared__ __align__(16) unsigned char qs_cu_shared[];
    const uint32_t tid = threadIdx.x, nthreads = blockDim.x, db = X.db;
    unsigned char *v = X.vec_global
                           ? X.vec_global + (uint64_t)blockIdx.x * M.vec_bytes * db
                           : qs_cu_shared;
    for (uint64_t g = blockIdx.x; g * db < X.n; g += gridDim.x) {
        const uint32_t doc0 = (uint32_t)(g * db);
        const uint32_t nd = X.n - doc0 < db ? X.n - doc0 : db;
        qs_cu_phase_start(&M, &X, doc0, nd, tid);
        for (uint32_t b = 0; b < M.nblocks; b++) {
            const qs_cu_block *B = &M.blocks[b];
            qs_cu_phase_init(B, v, db, tid, nthreads);
            __syncthreads();
            qs_cu_phase_mask(&M, B, &X, v, doc0, nd, tid, nthreads);
            __syncthreads();
            qs_cu_phase_sum(&M, B, &X, v, doc0, nd, tid);
            __syncthreads();
        }
        qs_cu_phase_finish(&M, &X, doc0, nd, tid);
    }
}

static int fail(cudaError_t e, char *msg, size_t cap)
{
    snprintf(msg, cap, "%s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
    return -1;
}

typedef struct cuda_ctx {
    int device;
    uint32_t shared_set; // the dynamic shared memory the kernel was allowed
} cuda_ctx;

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
    cudaError_t e;
    if (shared > (48u << 10) && shared > c->shared_set) {
        e = cudaFuncSetAttribute(qs_cu_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)shared);
        if (e != cudaSuccess)
            return fail(e, msg, cap);
        c->shared_set = shared;
    }
    qs_cu_kernel<<<grid, threads, shared, (cudaStream_t)st>>>(*M, *X);
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
};
