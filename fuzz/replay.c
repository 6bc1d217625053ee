/* replay.c: runs a fuzz target's LLVMFuzzerTestOneInput on every file named on the command line (directories: every regular file in them, sorted), without libFuzzer, so the corpora are regression tests of the normal and sanitizer builds. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf */
#endif
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs larger than this are not fuzz inputs (libFuzzer's own -max_len is
 * far smaller): refuse rather than read a stray huge file. */
#define REPLAY_MAX_INPUT ((size_t)64 << 20)

static int verbose;

/* Read a file into a buffer of exactly its size (not NUL-terminated), so an
 * address sanitizer build catches any read past the end of the input. */
static int replay_file(const char *path, long *count)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            if (cap >= REPLAY_MAX_INPUT) {
                fprintf(stderr, "replay: %s: larger than %zu bytes\n", path, REPLAY_MAX_INPUT);
                free(buf);
                fclose(f);
                return -1;
            }
            unsigned char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        fprintf(stderr, "replay: %s: %s\n", path, buf ? "read error" : "out of memory");
        free(buf);
        return -1;
    }
    unsigned char *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        fprintf(stderr, "replay: %s: out of memory\n", path);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    if (verbose)
        fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    (*count)++;
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_dir(const char *dir, long *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *names);
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
        }
        if (!(names[n] = strdup(e->d_name))) {
            rc = -1;
            break;
        }
        n++;
    }
    closedir(d);
    /* Sorted, so a failure names the same input on every machine. */
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        char *path = NULL;
        struct stat st;
        if (rc == 0) {
            if (asprintf(&path, "%s/%s", dir, names[i]) < 0) {
                path = NULL;
                rc = -1;
            } else if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && replay_file(path, count) != 0) {
                rc = -1;
            }
        }
        free(path);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    long count = 0;
    int rc = 0, any = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0) {
            verbose = 1;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            /* libFuzzer-style flags (-runs=, -max_len=) mean nothing here. */
            continue;
        }
        any = 1;
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            rc = 1;
        } else if (S_ISDIR(st.st_mode) ? replay_dir(argv[i], &count) != 0
                                       : replay_file(argv[i], &count) != 0) {
            rc = 1;
        }
    }
    if (!any) {
        fprintf(stderr, "usage: %s [-v] FILE|DIR...\n"
                        "Runs the fuzz target on every file (directories: every file in them).\n",
                argv[0]);
        return 2;
    }
    printf("%s: %ld input%s replayed\n", argv[0], count, count == 1 ? "" : "s");
    return rc;
}
