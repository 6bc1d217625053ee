/* bench/cuda-kernel: one GPU kernel alone, timed on documents already in
 * device memory, and the copy of the documents in, for the breakdown of an
 * end-to-end run.  Checks every score against the reference walk.
 *
 *   cuda-kernel [--emu] [-k KERNEL] [-n DOCS] [-r REPS] [--double] MODEL.qsm DOCS.letor
 *
 * The documents of DOCS.letor are repeated cyclically up to -n (default:
 * as many as the file has).  The kernel (-k: qs, rank, lanes, walk; default
 * the back end's choice for the model) and the launch geometry come from
 * the QS_CUDA_* tunables, as for qs-score (libqs(3)), so a sweep is a loop
 * in the shell.  Rows go as the back end sends them: the features the model
 * uses, float32 for a float32 model (--double: always double).  --emu runs
 * the emulator instead of the GPU (to check this program on a machine
 * without one).  Prints one tab-separated line: kernel, model trees,
 * documents, threads, documents per thread-block, trees per block (qs),
 * shared bytes, kernel ms (min, median), documents per second (min), ns per
 * document per tree, copy-in ms, MB copied in, and "exact" or the count of
 * differing documents (exit 1). */
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

static _Noreturn void die(const char *what, const char *msg)
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
    uint64_t reps = 5;
    const char *kernel = NULL;
    int dbl = 0, i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--emu") == 0)
            ops = &qs_cu_emu_ops;
        else if (strcmp(argv[i], "--double") == 0)
            dbl = 1;
        else if (strcmp(argv[i], "-k") == 0 && i + 1 < argc)
            kernel = argv[++i];
        else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            if (qs_parse_count(argv[++i], 1, UINT32_MAX, &want_n) != 0)
                die("-n", "expected a document count (1..4294967295)");
        } else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) {
            if (qs_parse_count(argv[++i], 1, 1000, &reps) != 0)
                die("-r", "expected 1..1000");
        } else
            break;
    }
    if (argc - i != 2) {
        fprintf(stderr, "usage: cuda-kernel [--emu] [-k KERNEL] [-n DOCS] [-r REPS] [--double] "
                        "MODEL.qsm DOCS.letor\n");
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
    double *want = malloc(sizeof(double) * nrows * K);
    double *out = malloc(sizeof(double) * n * K);
    if (!want || !out)
        die("documents", "out of memory");
    for (uint64_t d = 0; d < nrows; d++)
        qs_model_walk_sum(m, rows + d * nf, want + d * K);

    char msg[256];
    void *ctx;
    qs_cu_devinfo info;
    double t0 = now_ms();
    if (ops->open(0, &ctx, &info, msg, sizeof msg) != 0)
        die("device", msg);
    const double open_ms = now_ms() - t0;
    qs_cu_params prm;
    if (qs_cu_params_for(s, &prm, &err) != 0)
        die("tunables", err.msg);
    if (kernel && qs_cu_param_parse(&prm, QS_CU_OPT_KERNEL, kernel, "-k", &err) != 0)
        die("tunables", err.msg);
    qs_cu_image im;
    if (qs_cu_image_build(s, &prm, info.shared_optin, &im, &err) != 0)
        die("tables", err.msg);
    /* the rows as the back end sends them */
    const uint32_t nc = im.model.ncols ? im.model.ncols : 1;
    const int f32 = !dbl && im.f32_ok && m->float_precision;
    const size_t vsz = f32 ? sizeof(float) : sizeof(double);
    unsigned char *x = malloc(vsz * n * nc);
    if (!x)
        die("documents", "out of memory");
    for (uint64_t d = 0; d < n; d++)
        for (uint32_t c = 0; c < nc; c++) {
            const double v = im.model.ncols ? rows[(d % nrows) * nf + im.col_feature[c]] : 0.0;
            if (f32)
                ((float *)x)[d * nc + c] = (float)v;
            else
                ((double *)x)[d * nc + c] = v;
        }
    void *dblob, *st, *dx, *dacc, *daccf, *dout, *dvec = NULL;
    const uint32_t grid = qs_cu_grid(&im, (uint32_t)n);
    const int gacc = K > QS_CU_KREG;
    if (ops->stream_new(ctx, &st, msg, sizeof msg) ||
        ops->dev_alloc(ctx, &dblob, im.bytes, msg, sizeof msg) ||
        ops->dev_alloc(ctx, &dx, vsz * n * nc, msg, sizeof msg) ||
        ops->dev_alloc(ctx, &dacc, gacc ? sizeof(double) * n * K : 8, msg, sizeof msg) ||
        ops->dev_alloc(ctx, &daccf, gacc ? sizeof(float) * n * K : 8, msg, sizeof msg) ||
        ops->dev_alloc(ctx, &dout, sizeof(double) * n * K, msg, sizeof msg) ||
        (im.vec_block && ops->dev_alloc(ctx, &dvec, im.vec_block * grid, msg, sizeof msg)))
        die("device memory", msg);
    if (ops->put(ctx, dblob, im.blob, im.bytes, st, msg, sizeof msg) ||
        ops->wait(ctx, st, msg, sizeof msg))
        die("upload", msg);
    t0 = now_ms();
    if (ops->put(ctx, dx, x, vsz * n * nc, st, msg, sizeof msg) ||
        ops->wait(ctx, st, msg, sizeof msg))
        die("copy in", msg);
    const double copy_ms = now_ms() - t0;
    qs_cu_model M;
    qs_cu_image_model_at(&im, dblob, &M);
    qs_cu_batch X = { .x = dx, .stride = nc, .n = (uint32_t)n, .f32 = (uint32_t)f32, .db = im.db,
                      .acc = dacc, .accf = daccf, .out = dout, .vec_global = dvec };
    double *ms = malloc(sizeof(double) * (size_t)reps);
    for (uint64_t r = 0; r < reps; r++) {
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
    printf("%s\t%llu\t%llu\t%u\t%u\t%u\t%u\t%.3f\t%.3f\t%.0f\t%.4f\t%.3f\t%.1f\t",
           qs_cu_kernel_names[im.kernel], (unsigned long long)m->num_trees, (unsigned long long)n,
           im.threads, im.kernel == QS_CU_K_QS ? im.db : im.threads, im.tau, im.shared, best, med,
           n / (best / 1e3), best * 1e6 / ((double)n * (m->num_trees ? m->num_trees : 1)),
           copy_ms, vsz * n * nc / 1e6);
    if (bad)
        printf("%llu differ\n", (unsigned long long)bad);
    else
        printf("exact\n");
    fprintf(stderr, "cuda-kernel: %s, %u SMs, %llu MiB; open %.1f ms; %s\n", info.name,
            info.sms, (unsigned long long)(info.memory >> 20), open_ms, im.why);
    return bad ? 1 : 0;
}
