/* device.h: what the GPU back end's host driver (driver.c) asks of a device:
 * memory, streams, copies and launches.  Two implementations: the CUDA
 * runtime (kernels.cu, built when nvcc is found) and the emulator (emu.c:
 * host memory, the kernels' phases run thread by thread), so that
 * everything but the device itself — tables, batching, packing, stream
 * order, error paths — runs and is tested on every machine.
 *
 * Every call returns 0, or -1 with a message in msg[cap] that names the
 * device's error ("cudaErrorMemoryAllocation: out of memory"). */
#ifndef QS_CUDA_DEVICE_H
#define QS_CUDA_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "score/cuda/phases.h"

typedef struct qs_cu_devinfo {
    char name[96];
    uint64_t memory;          /* bytes of device memory */
    uint32_t shared_optin;    /* most shared bytes a thread-block may ask for */
    uint32_t sms;             /* multiprocessors */
    int major, minor;         /* compute capability */
} qs_cu_devinfo;

typedef struct qs_cu_ops {
    const char *name;
    /* Whether device `device` can be used: 1, or 0 with the reason. */
    int (*probe)(int device, char *why, size_t cap);
    int (*open)(int device, void **ctx, qs_cu_devinfo *info, char *msg, size_t cap);
    void (*close)(void *ctx);
    int (*dev_alloc)(void *ctx, void **p, size_t n, char *msg, size_t cap);
    void (*dev_free)(void *ctx, void *p);
    /* page-locked host memory, for copies that overlap kernels */
    int (*host_alloc)(void *ctx, void **p, size_t n, char *msg, size_t cap);
    void (*host_free)(void *ctx, void *p);
    int (*stream_new)(void *ctx, void **st, char *msg, size_t cap);
    void (*stream_free)(void *ctx, void *st);
    /* queued on stream st, in order with its other work */
    int (*put)(void *ctx, void *dev, const void *host, size_t n, void *st, char *msg, size_t cap);
    int (*get)(void *ctx, void *host, const void *dev, size_t n, void *st, char *msg, size_t cap);
    /* the kernel M->kernel over X's rows */
    int (*launch)(void *ctx, const qs_cu_model *M, const qs_cu_batch *X, uint32_t grid,
                  uint32_t threads, uint32_t shared, void *st, char *msg, size_t cap);
    /* until everything queued on st is done (and report its error) */
    int (*wait)(void *ctx, void *st, char *msg, size_t cap);
    /* start initialising `device` on a thread of its own (open waits for
     * it); NULL: nothing to start */
    void (*warm)(int device);
} qs_cu_ops;

extern const qs_cu_ops qs_cu_emu_ops;
#if QS_HAVE_CUDA
extern const qs_cu_ops qs_cu_cuda_ops;
#endif

/* The emulator's kernels: every thread-block of a launch of `grid`
 * thread-blocks in turn, each phase's threads in an order shuffled by
 * `seed` (the result must not depend on it), `shared` bytes of shared
 * memory for each.  rec: a bank recorder (qs_cu_rec_new) or NULL.  0, or
 * -1 when out of memory. */
int qs_cu_emulate(const qs_cu_model *M, const qs_cu_batch *X, uint32_t grid, uint32_t threads,
                  uint32_t shared, uint64_t seed, qs_cu_rec *rec);

/* The bank recorder: for every phase, every warp and every step of the
 * warp's instruction stream, the 32-bit words of shared memory its lanes
 * touch; a step's load is the most distinct words of one of the 32 banks
 * (a broadcast of one word counts once). */
qs_cu_rec *qs_cu_rec_new(void);
void qs_cu_rec_free(qs_cu_rec *rec);
/* The worst load seen, the steps seen, their mean load and the mean number
 * of the warp's lanes that touched shared memory in a step (x 1000; over
 * 32: the SIMT efficiency of the recorded phases).  lanes_milli may be
 * NULL. */
void qs_cu_rec_stats(qs_cu_rec *rec, uint32_t *worst, uint64_t *steps, uint64_t *mean_milli,
                     uint64_t *lanes_milli);

#endif
