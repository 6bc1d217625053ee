// bench/cuda-atomics: shared-memory atomics, one warp's 32 lanes at a time,
// in SM cycles per operation (clock64 around a loop of dependent-free
// operations), for the GPU back end's diagnosis (scripts/gpu-run.sh, step
// diag): 64-bit atomicAnd (no native shared instruction before sm_90 on
// many parts: a compare-and-swap loop) against 32-bit, every lane on one
// bank (the first GPU-QS kernel's (t * 16 + d) layout: 128-byte stride)
// against 32 banks, and the no-return reduction (red.shared) the kernels
// use now.  Prints tab-separated lines: variant, cycles per warp operation,
// blocks, result check.
//
//   cuda-atomics [ITERATIONS]
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { AND64_SAME, AND64_SPREAD, AND32_SAME, AND32_SPREAD, RED32_SAME, RED32_SPREAD, NVAR };
static const char *const names[NVAR] = {
    "atomicAnd 64-bit, 32 lanes on one bank (stride 128 B)",
    "atomicAnd 64-bit, 32 lanes spread (stride 8 B)",
    "atomicAnd 32-bit, 32 lanes on one bank (stride 128 B)",
    "atomicAnd 32-bit, 32 lanes on 32 banks (stride 4 B)",
    "red.shared.and 32-bit, 32 lanes on one bank",
    "red.shared.and 32-bit, 32 lanes on 32 banks (the kernels' now)",
};

__global__ void bench(int variant, int iters, unsigned long long *cycles, unsigned *sink)
{
    __shared__ __align__(16) unsigned long long sh[32 * 16];
    const unsigned lane = threadIdx.x % 32;
    for (unsigned i = threadIdx.x; i < 32 * 16; i += blockDim.x)
        sh[i] = ~0ull;
    __syncthreads();
    unsigned *sh32 = (unsigned *)sh;
    const long long t0 = clock64();
    for (int k = 0; k < iters; k++) {
        const unsigned m = ~(1u << ((k + lane) & 31));
        switch (variant) {
        case AND64_SAME: atomicAnd(&sh[lane * 16], (unsigned long long)m | 0xFFFFFFFF00000000ull); break;
        case AND64_SPREAD: atomicAnd(&sh[lane], (unsigned long long)m | 0xFFFFFFFF00000000ull); break;
        case AND32_SAME: atomicAnd(&sh32[lane * 32], m); break;
        case AND32_SPREAD: atomicAnd(&sh32[lane], m); break;
        case RED32_SAME:
            asm volatile("red.shared.and.b32 [%0], %1;" ::"r"((unsigned)__cvta_generic_to_shared(&sh32[lane * 32])), "r"(m) : "memory");
            break;
        default:
            asm volatile("red.shared.and.b32 [%0], %1;" ::"r"((unsigned)__cvta_generic_to_shared(&sh32[lane])), "r"(m) : "memory");
            break;
        }
    }
    __syncthreads();
    const long long t1 = clock64();
    if (threadIdx.x == 0)
        cycles[blockIdx.x] = (unsigned long long)(t1 - t0);
    sink[blockIdx.x * blockDim.x + threadIdx.x] = sh32[threadIdx.x % 1024];
}

int main(int argc, char **argv)
{
    const int iters = argc > 1 ? atoi(argv[1]) : 4096;
    if (iters < 1) {
        fprintf(stderr, "usage: cuda-atomics [ITERATIONS]\n");
        return 2;
    }
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
        fprintf(stderr, "cuda-atomics: no CUDA device: %s\n", cudaGetErrorString(cudaGetLastError()));
        return 1;
    }
    unsigned long long *dc;
    unsigned *ds;
    const int blocks = p.multiProcessorCount;
    if (cudaMalloc(&dc, sizeof *dc * blocks) != cudaSuccess || cudaMalloc(&ds, sizeof *ds * blocks * 32) != cudaSuccess) {
        fprintf(stderr, "cuda-atomics: cudaMalloc failed\n");
        return 1;
    }
    unsigned long long *hc = (unsigned long long *)malloc(sizeof *hc * blocks);
    int khz = 0;
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
    printf("variant\tcycles per warp operation\tblocks (one warp each)\tSM clock kHz\n");
    for (int v = 0; v < NVAR; v++) {
        bench<<<blocks, 32>>>(v, iters, dc, ds);
        if (cudaDeviceSynchronize() != cudaSuccess ||
            cudaMemcpy(hc, dc, sizeof *hc * blocks, cudaMemcpyDeviceToHost) != cudaSuccess) {
            fprintf(stderr, "cuda-atomics: %s\n", cudaGetErrorString(cudaGetLastError()));
            return 1;
        }
        unsigned long long best = hc[0];
        for (int b = 1; b < blocks; b++)
            best = hc[b] < best ? hc[b] : best;
        printf("%s\t%.2f\t%d\t%d\n", names[v], (double)best / iters, blocks, khz);
    }
    return 0;
}
