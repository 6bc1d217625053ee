/* emu.c: the GPU-QS emulator: a device made of host memory whose kernel
 * runs the phases of phases.h for every thread of every thread-block in
 * turn (each phase's threads in a shuffled order), so the driver, the
 * tables and the kernel's logic are tested bit for bit on machines without
 * a GPU.  It cannot see races, launch limits or stream bugs of a real
 * device: those are for compute-sanitizer on one.
 *
 * QS_CUDA_EMU_FAIL=WHAT[:N] makes the N-th (default first) call of WHAT
 * (alloc, put, launch, get, wait) fail as a device error would, so the
 * error paths are tested too. */
#include "score/cuda/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct emu_ctx {
    int fail_what;            /* 0: none; else 1 + index into whats[] */
    unsigned long fail_at;
    unsigned long count[5];
    uint64_t seed;
} emu_ctx;

static const char *const whats[5] = { "alloc", "put", "launch", "get", "wait" };

static int injected(emu_ctx *c, int what, char *msg, size_t cap)
{
    c->count[what]++;
    if (c->fail_what == what + 1 && c->count[what] == c->fail_at) {
        snprintf(msg, cap, "emulated device error in %s call %lu (QS_CUDA_EMU_FAIL)", whats[what],
                 c->fail_at);
        return -1;
    }
    return 0;
}

static int emu_probe(int device, char *why, size_t cap)
{
    if (device != 0) {
        snprintf(why, cap, "the emulator has one device (0), not %d", device);
        return 0;
    }
    return 1;
}

static int emu_open(int device, void **ctx, qs_cu_devinfo *info, char *msg, size_t cap)
{
    if (!emu_probe(device, msg, cap))
        return -1;
    emu_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(msg, cap, "out of memory");
        return -1;
    }
    c->seed = 0x9E3779B97F4A7C15ull;
    const char *f = getenv("QS_CUDA_EMU_FAIL");
    if (f && *f) {
        for (int i = 0; i < 5; i++) {
            size_t n = strlen(whats[i]);
            if (strncmp(f, whats[i], n) == 0 && (f[n] == '\0' || f[n] == ':')) {
                c->fail_what = i + 1;
                c->fail_at = f[n] == ':' ? strtoul(f + n + 1, NULL, 10) : 1;
            }
        }
        if (!c->fail_what) {
            snprintf(msg, cap, "QS_CUDA_EMU_FAIL='%s': expected alloc, put, launch, get or wait, "
                               "with :N for the N-th call", f);
            free(c);
            return -1;
        }
    }
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "GPU-QS emulator (host memory)");
    info->memory = (uint64_t)1 << 34;
    info->shared_optin = 227u << 10;
    info->sms = 1;
    info->major = 9;
    *ctx = c;
    return 0;
}

static void emu_close(void *ctx) { free(ctx); }

static int emu_alloc(void *ctx, void **p, size_t n, char *msg, size_t cap)
{
    if (injected(ctx, 0, msg, cap))
        return -1;
    *p = aligned_alloc(64, (n + 63) & ~(size_t)63);
    if (!*p) {
        snprintf(msg, cap, "out of memory (%zu bytes)", n);
        return -1;
    }
    return 0;
}

static void emu_free(void *ctx, void *p) { free(p); }

static int emu_stream_new(void *ctx, void **st, char *msg, size_t cap)
{
    *st = malloc(1);
    if (!*st) {
        snprintf(msg, cap, "out of memory");
        return -1;
    }
    return 0;
}

static void emu_stream_free(void *ctx, void *st) { free(st); }

static int emu_put(void *ctx, void *dev, const void *host, size_t n, void *st, char *msg,
                   size_t cap)
{
    if (injected(ctx, 1, msg, cap))
        return -1;
    memcpy(dev, host, n);
    return 0;
}

static int emu_get(void *ctx, void *host, const void *dev, size_t n, void *st, char *msg,
                   size_t cap)
{
    if (injected(ctx, 3, msg, cap))
        return -1;
    memcpy(host, dev, n);
    return 0;
}

static int emu_wait(void *ctx, void *st, char *msg, size_t cap)
{
    return injected(ctx, 4, msg, cap);
}

static uint64_t next(uint64_t *s)
{
    /* xorshift64* */
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static void shuffle(uint32_t *perm, uint32_t n, uint64_t *s)
{
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = (uint32_t)(next(s) % i);
        uint32_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
}

void qs_cu_emulate(const qs_cu_model *M, const qs_cu_batch *X, uint32_t grid, uint32_t threads,
                   unsigned char *vec, uint64_t seed)
{
    uint32_t perm[QS_CU_MAX_THREADS_EMU];
    uint64_t s = seed | 1;
    const uint32_t db = X->db;
    const uint64_t vec_block = (uint64_t)M->vec_bytes * db;
    for (uint32_t blk = 0; blk < grid; blk++) {
        unsigned char *v = X->vec_global ? X->vec_global + (uint64_t)blk * vec_block : vec;
        for (uint64_t g = blk; g * db < X->n; g += grid) {
            const uint32_t doc0 = (uint32_t)(g * db);
            const uint32_t nd = X->n - doc0 < db ? X->n - doc0 : db;
            shuffle(perm, threads, &s);
            for (uint32_t i = 0; i < threads; i++)
                qs_cu_phase_start(M, X, doc0, nd, perm[i]);
            for (uint32_t b = 0; b < M->nblocks; b++) {
                const qs_cu_block *B = &M->blocks[b];
                shuffle(perm, threads, &s);
                for (uint32_t i = 0; i < threads; i++)
                    qs_cu_phase_init(B, v, db, perm[i], threads);
                shuffle(perm, threads, &s);
                for (uint32_t i = 0; i < threads; i++)
                    qs_cu_phase_mask(M, B, X, v, doc0, nd, perm[i], threads);
                shuffle(perm, threads, &s);
                for (uint32_t i = 0; i < threads; i++)
                    qs_cu_phase_sum(M, B, X, v, doc0, nd, perm[i]);
            }
            shuffle(perm, threads, &s);
            for (uint32_t i = 0; i < threads; i++)
                qs_cu_phase_finish(M, X, doc0, nd, perm[i]);
        }
    }
}

static int emu_launch(void *ctx, const qs_cu_model *M, const qs_cu_batch *X, uint32_t grid,
                      uint32_t threads, uint32_t shared, void *st, char *msg, size_t cap)
{
    emu_ctx *c = ctx;
    if (injected(c, 2, msg, cap))
        return -1;
    if (threads == 0 || threads > QS_CU_MAX_THREADS_EMU || threads % QS_CU_WARP) {
        snprintf(msg, cap, "invalid launch: %u threads per thread-block", threads);
        return -1;
    }
    unsigned char *vec = NULL;
    if (!X->vec_global) {
        vec = aligned_alloc(64, ((size_t)shared + 63) & ~(size_t)63);
        if (!vec) {
            snprintf(msg, cap, "out of memory (%u bytes of shared memory)", shared);
            return -1;
        }
    }
    qs_cu_emulate(M, X, grid, threads, vec, next(&c->seed));
    free(vec);
    return 0;
}

const qs_cu_ops qs_cu_emu_ops = {
    .name = "emulator",
    .probe = emu_probe,
    .open = emu_open,
    .close = emu_close,
    .dev_alloc = emu_alloc,
    .dev_free = emu_free,
    .host_alloc = emu_alloc,
    .host_free = emu_free,
    .stream_new = emu_stream_new,
    .stream_free = emu_stream_free,
    .put = emu_put,
    .get = emu_get,
    .launch = emu_launch,
    .wait = emu_wait,
};
