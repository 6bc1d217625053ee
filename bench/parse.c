/* parse.c: the LETOR reader alone.  Reads DOCS into memory (plain or zstd),
 * then parses every line through qs_letor_parse into a model's workspace,
 * the slots taken in turn as qs-score takes them, without scoring, and
 * reports documents, bytes and MB/s (1 MB = 10^6 bytes) of the best of REPS
 * passes on standard output, by wall-clock time and by the process's CPU
 * time (steadier on a shared machine: time spent waiting for a CPU is not
 * counted).
 *
 *   build/bench/parse [--reps N] MODEL.qsm DOCS
 *
 * The workspace is the model's: its feature count and precision (float32
 * or double) are what qs-score would parse with.  Exit 1 at the first bad
 * line, as qs-score would stop. */
#include "tool.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    tool_init("parse");
    int reps = 3, a = 1;
    if (a + 1 < argc && strcmp(argv[a], "--reps") == 0) {
        reps = atoi(argv[a + 1]);
        a += 2;
    }
    if (argc - a != 2 || reps < 1)
        tool_die(EXIT_USAGE, "usage: parse [--reps N] MODEL.qsm DOCS");
    size_t mlen, dlen;
    char *img = tool_read_all(argv[a], &mlen);
    qs_error err;
    qs_error_clear(&err);
    qs_scorer *s = qs_scorer_load((const unsigned char *)img, mlen, &err);
    free(img);
    if (!s)
        tool_die_err(argv[a], &err);
    qs_workspace *w = qs_workspace_new(s, &err);
    if (!w)
        tool_die_err(NULL, &err);
    uint32_t nslots = qs_workspace_slots(w);
    char *docs = tool_read_all(argv[a + 1], &dlen);
    double best = 0, best_cpu = 0;
    long ndocs = 0, nlines = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
        const char *p = docs, *end = docs + dlen;
        uint32_t slot = 0;
        ndocs = nlines = 0;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
            qs_letor_line lm;
            int is_doc;
            nlines++;
            qs_workspace_select(w, slot);
            if (qs_letor_parse(s, w, QS_ABSENT_DEFAULT, p, len, &lm, &is_doc, &err) != 0) {
                err.line = nlines;
                tool_die_err(argv[a + 1], &err);
            }
            if (is_doc) {
                ndocs++;
                if (++slot == nslots)
                    slot = 0;
            }
            p = nl ? nl + 1 : end;
        }
        double dt = now(CLOCK_MONOTONIC) - t0, dc = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (r == 0 || dt < best)
            best = dt;
        if (r == 0 || dc < best_cpu)
            best_cpu = dc;
    }
    printf("docs %ld bytes %zu best_s %.6f MB/s %.1f ns/doc %.1f cpu_s %.6f cpu_MB/s %.1f\n", ndocs,
           dlen, best, (double)dlen / best / 1e6, ndocs ? best * 1e9 / (double)ndocs : 0.0,
           best_cpu, (double)dlen / best_cpu / 1e6);
    free(docs);
    qs_workspace_free(w);
    qs_scorer_free(s);
    return 0;
}
