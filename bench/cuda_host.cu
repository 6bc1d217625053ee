// bench/cuda-host: what a process pays before and around the GPU kernels,
// in milliseconds, for scripts/gpu-run.sh (step host): the driver's
// initialisation (cudaGetDeviceCount), the primary context
// (cudaSetDevice + cudaFree(0)), the first allocation, the first launch
// (module load) and a second one, and copies of MB megabytes host to device
// from pageable and from page-locked memory (and back, page-locked).
// Prints tab-separated lines: what, ms, GB/s where a copy.
//
//   cuda-host [MB]
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__global__ void empty(int *p)
{
    if (p && threadIdx.x == 1024)
        *p = 1;
}

#define STEP(what, call)                                                                          \
    do {                                                                                          \
        const double t0_ = now_ms();                                                              \
        cudaError_t e_ = (call);                                                                  \
        const double t_ = now_ms() - t0_;                                                         \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "cuda-host: %s: %s\n", what, cudaGetErrorString(e_));                 \
            return 1;                                                                             \
        }                                                                                         \
        printf("%s\t%.3f\t\n", what, t_);                                                         \
    } while (0)

int main(int argc, char **argv)
{
    const size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
    if (mb < 1 || mb > 65536) {
        fprintf(stderr, "usage: cuda-host [MB]\n");
        return 2;
    }
    const size_t n = mb << 20;
    int count = 0;
    printf("what\tms\tGB/s\n");
    STEP("driver initialisation (cudaGetDeviceCount)", cudaGetDeviceCount(&count));
    STEP("primary context (cudaSetDevice, cudaFree(0))", (cudaSetDevice(0), cudaFree(0)));
    void *d = NULL, *pin = NULL;
    STEP("first cudaMalloc (1 MB)", cudaMalloc(&d, 1 << 20));
    cudaFree(d);
    STEP("first launch (module load) and sync", (empty<<<1, 32>>>(NULL), cudaDeviceSynchronize()));
    STEP("second launch and sync", (empty<<<1, 32>>>(NULL), cudaDeviceSynchronize()));
    STEP("cudaMalloc of the copy buffer", cudaMalloc(&d, n));
    char *page = (char *)malloc(n);
    if (!page)
        return 1;
    memset(page, 1, n);
    STEP("cudaMallocHost (page-locked)", cudaMallocHost(&pin, n));
    memset(pin, 1, n);
    for (int rep = 0; rep < 2; rep++) {
        double t0 = now_ms();
        cudaMemcpy(d, page, n, cudaMemcpyHostToDevice);
        double t = now_ms() - t0;
        printf("copy %zu MB host to device, pageable (rep %d)\t%.3f\t%.1f\n", mb, rep, t, n / t / 1e6);
        t0 = now_ms();
        cudaMemcpy(d, pin, n, cudaMemcpyHostToDevice);
        t = now_ms() - t0;
        printf("copy %zu MB host to device, page-locked (rep %d)\t%.3f\t%.1f\n", mb, rep, t, n / t / 1e6);
        t0 = now_ms();
        cudaMemcpy(pin, d, n, cudaMemcpyDeviceToHost);
        t = now_ms() - t0;
        printf("copy %zu MB device to host, page-locked (rep %d)\t%.3f\t%.1f\n", mb, rep, t, n / t / 1e6);
    }
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        fprintf(stderr, "cuda-host: %s\n", cudaGetErrorString(e));
        return 1;
    }
    return 0;
}
