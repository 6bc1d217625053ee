/* bench/qs_matrix.c: time qs scoring a dense float64 matrix already in
 * memory, through the library API (qs_score_matrix), for bench/peers.py.
 *
 *   qs-matrix [--backend NAME] [--threads N] [--reps N] MODEL.qsm X.f64 NDOCS NCOLS OUT.f64
 *
 * X.f64 holds NDOCS x NCOLS float64 values, row-major, native byte order;
 * column j is feature id j; absent features already filled (0.0 or NaN, as
 * the model's source library means them) and values rounded to the model's
 * precision (float32 models: done here, before timing).  The model is loaded and the matrix read before any timing;
 * one untimed call (warm-up), then N timed calls of qs_score_matrix (one
 * thread by default).  Writes the scores of the last call to OUT.f64
 * (NDOCS x classes float64) and one line of JSON to standard output:
 * {"backend": ..., "load_s": ..., "times_s": [...], "cpu_times_s": [...], ...}
 * (cpu_times_s: the process's CPU time of each call, which, unlike the wall
 * time, does not count the time spent waiting for a CPU on a shared
 * machine; with one thread, the time the call ran).
 * Exit 0, 1 on a scoring error, 2 on bad usage, 4 on a file error. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qs.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int usage(void)
{
    fprintf(stderr, "usage: qs-matrix [--backend NAME] [--threads N] [--reps N] "
                    "MODEL.qsm X.f64 NDOCS NCOLS OUT.f64\n");
    return 2;
}

static unsigned char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "qs-matrix: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 20, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        unsigned char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    if (!buf || ferror(f)) {
        fprintf(stderr, "qs-matrix: %s: %s\n", path, buf ? "read error" : "out of memory");
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len = n;
    return buf;
}

static int parse_count(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || v == 0 || s[0] == '-')
        return -1;
    *out = (size_t)v;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *backend_name = "auto";
    size_t threads = 1, reps = 5;
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i += 2) {
        if (i + 1 >= argc)
            return usage();
        if (!strcmp(argv[i], "--backend"))
            backend_name = argv[i + 1];
        else if (!strcmp(argv[i], "--threads")) {
            if (parse_count(argv[i + 1], &threads))
                return usage();
        } else if (!strcmp(argv[i], "--reps")) {
            if (parse_count(argv[i + 1], &reps))
                return usage();
        } else
            return usage();
    }
    if (argc - i != 5)
        return usage();
    const char *model_path = argv[i], *x_path = argv[i + 1], *out_path = argv[i + 4];
    size_t ndocs, ncols;
    if (parse_count(argv[i + 2], &ndocs) || parse_count(argv[i + 3], &ncols))
        return usage();
    qs_backend b = qs_backend_find(backend_name);
    if (b == QS_BACKEND_UNKNOWN) {
        fprintf(stderr, "qs-matrix: unknown back end '%s'\n", backend_name);
        return 2;
    }

    size_t mlen, xlen;
    unsigned char *mbuf = read_all(model_path, &mlen);
    if (!mbuf)
        return 4;
    qs_error err;
    double t0 = now_s();
    qs_scorer *s = qs_scorer_load(mbuf, mlen, &err);
    free(mbuf);
    if (!s) {
        fprintf(stderr, "qs-matrix: %s: %s\n", model_path, err.msg);
        return 4;
    }
    if (b != QS_BACKEND_AUTO && qs_scorer_prepare(s, b, &err) != 0) {
        fprintf(stderr, "qs-matrix: back end %s: %s\n", backend_name, err.msg);
        qs_scorer_free(s);
        return err.code == QS_ERR_UNSUPPORTED ? 3 : err.code == QS_ERR_DEVICE ? 5 : 1;
    }
    double load_s = now_s() - t0;
    qs_model_info info;
    qs_model_get_info(qs_scorer_model(s), &info);

    unsigned char *xbuf = read_all(x_path, &xlen);
    if (!xbuf) {
        qs_scorer_free(s);
        return 4;
    }
    if (xlen / sizeof(double) / ncols != ndocs || xlen != ndocs * ncols * sizeof(double)) {
        fprintf(stderr, "qs-matrix: %s: %zu bytes, expected %zu x %zu float64 values\n", x_path,
                xlen, ndocs, ncols);
        free(xbuf);
        qs_scorer_free(s);
        return 4;
    }
    double *x = (double *)(void *)xbuf;
    size_t stride = ncols;
    if (info.num_features > ncols) {
        /* The model has more features than the matrix has columns: pad the
         * missing columns with the absent value (done before timing). */
        stride = info.num_features;
        double fill = info.absent_is_missing ? NAN : 0.0;
        double *px = malloc(ndocs * stride * sizeof(double));
        if (!px) {
            fprintf(stderr, "qs-matrix: out of memory\n");
            free(xbuf);
            qs_scorer_free(s);
            return 4;
        }
        for (size_t d = 0; d < ndocs; d++) {
            memcpy(px + d * stride, x + d * ncols, ncols * sizeof(double));
            for (size_t j = ncols; j < stride; j++)
                px[d * stride + j] = fill;
        }
        free(xbuf);
        x = px;
    }
    if (info.float_precision) {
        /* qs_score_matrix wants values rounded to the model's precision (as
         * qs_parse_value would parse them): float32 models (XGBoost,
         * CatBoost) get them rounded here, before timing. */
        for (size_t k = 0; k < ndocs * stride; k++)
            x[k] = (double)(float)x[k];
    }
    size_t nout = ndocs * info.num_classes;
    double *out = malloc(nout * sizeof(double));
    double *times = malloc(reps * sizeof(double)), *cpu = malloc(reps * sizeof(double));
    if (!out || !times || !cpu) {
        fprintf(stderr, "qs-matrix: out of memory\n");
        free(out);
        free(times);
        free(cpu);
        free(x);
        qs_scorer_free(s);
        return 4;
    }
    int rc = 0;
    if (qs_score_matrix(s, b, x, ndocs, stride, out, (unsigned)threads, &err) != 0) {
        fprintf(stderr, "qs-matrix: scoring failed: %s\n", err.msg);
        rc = 1;
    }
    for (size_t r = 0; r < reps && rc == 0; r++) {
        double t = now_s(), c = cpu_s();
        if (qs_score_matrix(s, b, x, ndocs, stride, out, (unsigned)threads, &err) != 0) {
            fprintf(stderr, "qs-matrix: scoring failed: %s\n", err.msg);
            rc = 1;
        }
        times[r] = now_s() - t;
        cpu[r] = cpu_s() - c;
    }
    if (rc == 0) {
        FILE *f = fopen(out_path, "wb");
        if (!f || fwrite(out, sizeof(double), nout, f) != nout || fclose(f) != 0) {
            fprintf(stderr, "qs-matrix: %s: cannot write the scores\n", out_path);
            rc = 4;
        }
    }
    if (rc == 0) {
        qs_backend ran = b == QS_BACKEND_AUTO ? qs_scorer_auto_backend(s, NULL, 0) : b;
        printf("{\"backend\": \"%s\", \"ran_as\": \"%s\", \"threads\": %zu, \"docs\": %zu, "
               "\"trees\": %llu, \"load_s\": %.9g, \"times_s\": [",
               backend_name, qs_backend_name(ran), threads, ndocs,
               (unsigned long long)info.num_trees, load_s);
        for (size_t r = 0; r < reps; r++)
            printf("%s%.9g", r ? ", " : "", times[r]);
        printf("], \"cpu_times_s\": [");
        for (size_t r = 0; r < reps; r++)
            printf("%s%.9g", r ? ", " : "", cpu[r]);
        qsort(times, reps, sizeof(double), cmp_double);
        printf("], \"median_s\": %.9g, \"version\": \"%s\"}\n",
               reps % 2 ? times[reps / 2] : (times[reps / 2 - 1] + times[reps / 2]) / 2,
               QS_VERSION_STRING);
    }
    free(out);
    free(times);
    free(cpu);
    free(x);
    qs_scorer_free(s);
    return rc;
}
