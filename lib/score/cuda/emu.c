/* emu.c: the GPU back end's emulator: a device made of host memory whose
 * kernels run the phases of phases.h for every thread of every
 * thread-block in turn (each phase's threads in a shuffled order), so the
 * driver, the tables and the kernels' logic are tested bit for bit on
 * machines without a GPU.  It cannot see races, launch limits or stream
 * bugs of a real device: those are for compute-sanitizer on one.  It also
 * records, on request, the shared-memory words each warp step touches
 * (qs_cu_rec), to measure bank conflicts.
 *
 * QS_CUDA_EMU_FAIL=WHAT[:N] makes the N-th (default first) call of WHAT
 * (alloc, put, launch, get, wait) fail as a device error would, so the
 * error paths are tested too. */
#include "score/cuda/device.h"
#include "score/cuda/tables.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct emu_ctx {
    int fail_what;            /* 0: none; else 1 + index into whats[] */
    uint64_t fail_at;
    uint64_t count[5];
    uint64_t seed;
} emu_ctx;

static const char *const whats[5] = { "alloc", "put", "launch", "get", "wait" };

static int injected(emu_ctx *c, int what, char *msg, size_t cap)
{
    c->count[what]++;
    if (c->fail_what == what + 1 && c->count[what] == c->fail_at) {
        snprintf(msg, cap, "emulated device error in %s call %llu (QS_CUDA_EMU_FAIL)", whats[what],
                 (unsigned long long)c->fail_at);
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
    qs_error err;
    if (qs_cu_emu_fail_parse(getenv("QS_CUDA_EMU_FAIL"), &c->fail_what, &c->fail_at, &err) != 0) {
        snprintf(msg, cap, "%s", err.msg);
        free(c);
        return -1;
    }
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "GPU-QS emulator (host memory)");
    info->memory = (uint64_t)1 << 34;
    info->shared_optin = QS_CU_MAX_SHARED;
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

/* ------------------------------------------------------------ recorder */

typedef struct touch {
    uint64_t warp, step, word;
} touch;

struct qs_cu_rec {
    touch *t;
    size_t n, cap;
    int failed;               /* out of memory: stats are incomplete */
    uint32_t worst;
    uint64_t steps, loads, lanes;
};

qs_cu_rec *qs_cu_rec_new(void) { return calloc(1, sizeof(qs_cu_rec)); }

void qs_cu_rec_free(qs_cu_rec *rec)
{
    if (rec)
        free(rec->t);
    free(rec);
}

void qs_cu_rec_touch(qs_cu_rec *rec, uint32_t tid, uint64_t step, uint64_t word)
{
    if (rec->n == rec->cap) {
        size_t cap = rec->cap ? rec->cap * 2 : 4096;
        touch *t = realloc(rec->t, cap * sizeof *t);
        if (!t) {
            rec->failed = 1;
            return;
        }
        rec->t = t;
        rec->cap = cap;
    }
    rec->t[rec->n++] = (touch){ tid / QS_CU_WARP, step, word };
}

static int cmp_touch(const void *a, const void *b)
{
    const touch *x = a, *y = b;
    if (x->warp != y->warp)
        return x->warp < y->warp ? -1 : 1;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    return x->word < y->word ? -1 : x->word > y->word;
}

/* The end of a phase: every warp step's load. */
static void rec_phase_end(qs_cu_rec *rec)
{
    if (!rec || rec->n == 0)
        return;
    qsort(rec->t, rec->n, sizeof *rec->t, cmp_touch);
    uint32_t bank[32];
    for (size_t i = 0; i < rec->n;) {
        size_t j = i;
        memset(bank, 0, sizeof bank);
        uint32_t most = 0;
        for (; j < rec->n && rec->t[j].warp == rec->t[i].warp && rec->t[j].step == rec->t[i].step;
             j++) {
            rec->lanes++;
            if (j > i && rec->t[j].word == rec->t[j - 1].word)
                continue;
            uint32_t b = (uint32_t)(rec->t[j].word % 32u);
            if (++bank[b] > most)
                most = bank[b];
        }
        rec->steps++;
        rec->loads += most;
        if (most > rec->worst)
            rec->worst = most;
        i = j;
    }
    rec->n = 0;
}

void qs_cu_rec_stats(qs_cu_rec *rec, uint32_t *worst, uint64_t *steps, uint64_t *mean_milli,
                     uint64_t *lanes_milli)
{
    rec_phase_end(rec);
    *worst = rec->failed ? UINT32_MAX : rec->worst;
    *steps = rec->steps;
    *mean_milli = rec->steps ? rec->loads * 1000u / rec->steps : 0;
    if (lanes_milli)
        *lanes_milli = rec->steps ? rec->lanes * 1000u / rec->steps : 0;
}

/* ------------------------------------------------------------ kernels */

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

/* The classes' accumulators: registers (kr classes) or global (0). */
static uint32_t kr_of(const qs_cu_model *M)
{
    return M->num_classes == 1 ? 1u : M->num_classes <= QS_CU_KREG ? QS_CU_KREG : 0u;
}

/* GPU-QS: thread-block blk's documents, db at a time (a grid-stride loop). */
static void emu_qs(const qs_cu_model *M, const qs_cu_batch *X, uint32_t grid, uint32_t blk,
                   uint32_t threads, unsigned char *sh, uint32_t *perm, qs_cu_acc *acc,
                   uint64_t *s, qs_cu_rec *rec)
{
    const uint32_t db = X->db, kr = kr_of(M);
    const int f32 = X->f32 != 0;
    const uint64_t vwords = (uint64_t)M->vec_words * db;
    uint32_t *vec = X->vec_global ? X->vec_global + (uint64_t)blk * vwords : (uint32_t *)sh;
    double *vals = (double *)(sh + (X->vec_global ? 0 : vwords * 4u));
    uint16_t *ranks = M->pivots ? (uint16_t *)((unsigned char *)vals + (uint64_t)M->chunk * db * 8u)
                                : NULL;
    for (uint64_t g = blk; g * db < X->n; g += grid) {
        const uint32_t doc0 = (uint32_t)(g * db);
        const uint32_t nd = X->n - doc0 < db ? X->n - doc0 : db;
        shuffle(perm, threads, s);
        for (uint32_t i = 0; i < threads; i++)
            if (perm[i] < nd)
                qs_cu_acc_start(M, X, &acc[perm[i]], (uint64_t)doc0 + perm[i], kr);
        if (ranks) {
            shuffle(perm, threads, s);
            for (uint32_t i = 0; i < threads; i++)
                qs_cu_qs_ranks(M, X, ranks, doc0, nd, perm[i], threads, f32);
        }
        for (uint32_t b = 0; b < M->nblocks; b++) {
            const qs_cu_block *B = &M->blocks[b];
            shuffle(perm, threads, s);
            for (uint32_t i = 0; i < threads; i++)
                qs_cu_qs_init(B, vec, db, perm[i], threads);
            shuffle(perm, threads, s);
            for (uint32_t i = 0; i < threads; i++)
                qs_cu_qs_mask(M, B, X, vec, ranks, doc0, nd, perm[i], threads, rec, f32,
                              X->vec_global != NULL);
            rec_phase_end(rec);
            for (uint32_t c0 = 0; c0 < B->ntrees; c0 += M->chunk) {
                const uint32_t nc = B->ntrees - c0 < M->chunk ? B->ntrees - c0 : M->chunk;
                shuffle(perm, threads, s);
                for (uint32_t i = 0; i < threads; i++)
                    qs_cu_qs_fetch(M, B, X, vec, vals, doc0, nd, c0, nc, perm[i], threads, f32);
                shuffle(perm, threads, s);
                for (uint32_t i = 0; i < threads; i++)
                    qs_cu_qs_add(M, B, X, vals, &acc[perm[i]], doc0, nd, c0, nc, perm[i], kr);
            }
        }
        shuffle(perm, threads, s);
        for (uint32_t i = 0; i < threads; i++)
            if (perm[i] < nd)
                qs_cu_acc_finish(M, X, &acc[perm[i]], (uint64_t)doc0 + perm[i], kr);
    }
}

/* rank, lanes, walk: one document per thread. */
static void emu_walk(const qs_cu_model *M, const qs_cu_batch *X, uint32_t grid, uint32_t blk,
                     uint32_t threads, unsigned char *sh, uint32_t *perm, uint64_t *s,
                     qs_cu_rec *rec)
{
    const uint32_t kr = kr_of(M);
    const int f32 = X->f32 != 0;
    for (uint64_t g = blk; g * threads < X->n; g += grid) {
        shuffle(perm, threads, s);
        for (uint32_t i = 0; i < threads; i++) {
            const uint64_t row = g * threads + perm[i];
            if (row < X->n)
                qs_cu_walk_doc(M, X, (uint16_t *)sh, row, perm[i], threads, rec, M->kernel, kr,
                               f32);
        }
        rec_phase_end(rec);
    }
}

int qs_cu_emulate(const qs_cu_model *M, const qs_cu_batch *X, uint32_t grid, uint32_t threads,
                  uint32_t shared, uint64_t seed, qs_cu_rec *rec)
{
    uint64_t s = seed | 1;
    uint32_t *perm = malloc(sizeof(uint32_t) * threads);
    qs_cu_acc *acc = malloc(sizeof(qs_cu_acc) * threads);
    unsigned char *sh = aligned_alloc(64, ((size_t)shared + 64) & ~(size_t)63);
    if (!perm || !acc || !sh) {
        free(perm);
        free(acc);
        free(sh);
        return -1;
    }
    /* shared memory starts as garbage on a device */
    memset(sh, 0xA5, shared);
    for (uint32_t blk = 0; blk < grid; blk++) {
        if (M->kernel == QS_CU_K_QS)
            emu_qs(M, X, grid, blk, threads, sh, perm, acc, &s, rec);
        else
            emu_walk(M, X, grid, blk, threads, sh, perm, &s, rec);
    }
    free(perm);
    free(acc);
    free(sh);
    return 0;
}

static int emu_launch(void *ctx, const qs_cu_model *M, const qs_cu_batch *X, uint32_t grid,
                      uint32_t threads, uint32_t shared, void *st, char *msg, size_t cap)
{
    emu_ctx *c = ctx;
    if (injected(c, 2, msg, cap))
        return -1;
    if (threads == 0 || threads > QS_CU_MAX_THREADS || threads % QS_CU_WARP) {
        snprintf(msg, cap, "invalid launch: %u threads per thread-block", threads);
        return -1;
    }
    if (shared > QS_CU_MAX_SHARED) {
        snprintf(msg, cap, "invalid launch: %u bytes of shared memory", shared);
        return -1;
    }
    if (qs_cu_emulate(M, X, grid, threads, shared, next(&c->seed), NULL) != 0) {
        snprintf(msg, cap, "out of memory (emulating %u threads)", threads);
        return -1;
    }
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
    .warm = NULL,
};
