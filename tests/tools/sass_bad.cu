// sass_bad.cu: the shape the first GPU-QS kernel had, for the test that the
// SASS gates (scripts/check-sass.sh) can fail: a 64-bit atomicAnd on a
// pointer that is shared or global by a run-time choice, which compiles to
// an address-space test (QSPC), a generic atomic and a compare-and-swap
// loop on shared memory (ATOMS.CAST.SPIN).  Never part of the library.
#include <stdint.h>

__global__ void sass_bad(unsigned long long *g, const unsigned long long *m, int use_global)
{
    extern __shared__ unsigned long long sh[];
    unsigned long long *v = use_global ? g : sh;
    sh[threadIdx.x] = ~0ull;
    __syncthreads();
    atomicAnd(&v[(threadIdx.x * 16u) % blockDim.x], m[threadIdx.x]);
    __syncthreads();
    g[blockIdx.x * blockDim.x + threadIdx.x] = sh[threadIdx.x];
}
