/* bench/cuda-kernel: the GPU-QS kernel alone, timed on documents already in
 * device memory, and the copy of the documents in, for the breakdown of
 * an end-to-end run.  Checks every score against the reference walk.
 *
 *   cuda-kernel [--emu] [-n DOCS] [-r REPS] MODEL.qsm DOCS.letor
 *
 * The documents of DOCS.letor are repeated cyclically up to -n (default:
 * as many as the file has).  The launch geometry comes from the
 * QS_CUDA_DB, QS_CUDA_THREADS, QS_CUDA_TAU and QS_CUDA_SHARED overrides,
 * so a sweep is a loop in the shell.  --emu runs the emulator instead of
 * the GPU (to check this program on a machine without one).  Prints one
 * tab-separated line: model trees, documents, db, threads, tau, shared
 * bytes, kernel ms (min, median), documents per second (min), ns per
 * document per tree, copy-in ms, and "exact" or the count of differing
 * documents (exit 1). */
#include "score/cuda/device.h"
#include "score/cuda/tables.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../tests/unit/slurp.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "cuda-kernel: %s: %s\n", what, msg);
    exit(2);
}

int main(int argc, char **argv)
{
    const qs_cu_ops *ops = NULL;
#if QS_HAVE_CUDA
    ops = &qs_cu_cuda_ops;
#endif
    uint64_t want_n = 0;
    int reps = 5, i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--emu") == 0)
            ops = &qs_cu_emu_ops;
        else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
            want_n = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else
            break;
    }
    if (argc - i != 2 || reps < 1) {
        fprintf(stderr, "usage: cuda-kernel [--emu] [-n DOCS] [-r REPS] MODEL.qsm DOCS.letor\n");
        return 2;
    }
    if (!ops)
        die("cuda", "built without CUDA (use --emu)");
    size_t mlen;
    unsigned char *img = slurp(argv[i], &mlen);
    if (!img)
        die("read", "cannot read the model");
    qs_error err;
    qs_scorer *s = qs_scorer_load_threads(img, mlen, 4, &err);
    if (!s)
        die("load", err.msg);
    const qs_model *m = s->m;
    const uint32_t nf = m->num_features ? m->num_features : 1, K = m->num_classes;
    uint64_t nrows;
    double *rows = slurp_rows(s, argv[i + 1], nf, &nrows);
    if (nrows == 0)
        die("documents", "none");
    const uint64_t n = want_n ? want_n : nrows;
    if (n > UINT32_MAX)
        die("-n", "too many documents for one launch");
    double *want = malloc(sizeof(double) * nrows * K);
    double *x = malloc(sizeof(double) * n * nf);
    double *out = malloc(sizeof(double) * n * K);
    if (!want || !x || !out)
        die("documents", "out of memory");
    for (uint64_t d = 0; d < nrows; d++)
        qs_model_walk_sum(m, rows + d * nf, want + d * K);
    for (uint64_t d = 0; d < n; d++)
        memcpy(x + d * nf, rows + (d % nrows) * nf, sizeof(double) * nf);

    char msg[256];
    void *ctx;
    qs_cu_devinfo info;
    if (ops->open(0, &ctx, &info, msg, sizeof msg) != 0)
        die("device", msg);
    qs_cu_params prm = { 0 };
    if (qs_cu_params_env(&prm, &err) != 0)
        die("tunables", err.msg);
    if (prm.shared == 0)
        prm.shared = QS_CU_DEFAULT_SHARED;
    if (prm.shared > info.shared_optin)
        prm.shared = info.shared_optin;
    qs_cu_image im;
    if (qs_cu_image_build(s, &prm, &im, &err) != 0)
        die("tables", err.msg);
    void *dblob, *st, *dx, *dacc, *daccf, *dout, *dvec = NULL;
    const uint32_t grid = qs_cu_grid(&im, (uint32_t)n);
    if (ops->stream_new(ctx, &st, msg, sizeof msg) ||
        ops->dev_alloc(ctx, &dblob, im.bytes, msg, sizeof msg) ||
        ops->dev_alloc(ctx, &dx, sizeof(double) * n * nf, msg, sizeof msg) ||
        ops->dev_alloc(ctx, &dacc, sizeof(double) * n * K, msg, sizeof msg) ||
        ops->dev_alloc(ctx, &daccf, sizeof(float) * n * K, msg, sizeof msg) ||
        ops->dev_alloc(ctx, &dout, sizeof(double) * n * K, msg, sizeof msg) ||
        (!im.shared && ops->dev_alloc(ctx, &dvec, im.vec_block * grid, msg, sizeof msg)))
        die("device memory", msg);
    if (ops->put(ctx, dblob, im.blob, im.bytes, st, msg, sizeof msg) ||
        ops->wait(ctx, st, msg, sizeof msg))
        die("upload", msg);
    double t0 = now_ms();
    if (ops->put(ctx, dx, x, sizeof(double) * n * nf, st, msg, sizeof msg) ||
        ops->wait(ctx, st, msg, sizeof msg))
        die("copy in", msg);
    const double copy_ms = now_ms() - t0;
    qs_cu_model M;
    qs_cu_image_model_at(&im, dblob, &M);
    qs_cu_batch X = { .x = dx, .stride = nf, .n = (uint32_t)n, .db = im.db, .acc = dacc,
                      .accf = daccf, .out = dout, .vec_global = dvec };
    double *ms = malloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        t0 = now_ms();
        if (ops->launch(ctx, &M, &X, grid, im.threads, im.shared, st, msg, sizeof msg) ||
            ops->wait(ctx, st, msg, sizeof msg))
            die("kernel", msg);
        ms[r] = now_ms() - t0;
    }
    if (ops->get(ctx, out, dout, sizeof(double) * n * K, st, msg, sizeof msg) ||
        ops->wait(ctx, st, msg, sizeof msg))
        die("copy out", msg);
    uint64_t bad = 0;
    for (uint64_t d = 0; d < n; d++)
        bad += memcmp(out + d * K, want + (d % nrows) * K, sizeof(double) * K) != 0;
    qsort(ms, (size_t)reps, sizeof *ms, cmp_d);
    const double best = ms[0], med = ms[reps / 2];
    printf("%llu\t%llu\t%u\t%u\t%u\t%u\t%.3f\t%.3f\t%.0f\t%.3f\t%.3f\t",
           (unsigned long long)m->num_trees, (unsigned long long)n, im.db, im.threads, im.tau,
           im.shared, best, med, n / (best / 1e3), best * 1e6 / ((double)n * m->num_trees),
           copy_ms);
    if (bad)
        printf("%llu differ\n", (unsigned long long)bad);
    else
        printf("exact\n");
    fprintf(stderr, "cuda-kernel: %s, %u SMs, %llu MiB\n", info.name, info.sms,
            (unsigned long long)(info.memory >> 20));
    return bad ? 1 : 0;
}
