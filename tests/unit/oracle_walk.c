/* oracle_walk.c: converts a model, scores a LETOR file with the reference
 * tree walk and compares every value with an oracle file (bit for bit).
 * Independent of qs-compile/qs-score, so a converter can be checked alone.
 *
 *   oracle_walk MODEL DOCS ORACLE [zero|missing]
 * exit 0: all equal; 1: mismatches (first few printed); 2: usage or error. */
#include "model/model.h"

#include <stdio.h>
#include <string.h>
#include <zstd.h>

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    char *b = malloc(cap);
    size_t r;
    while (b && (r = fread(b + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            cap *= 2;
            b = realloc(b, cap);
        }
    }
    fclose(f);
    if (!b)
        return NULL;
    if (n >= 4 && (unsigned char)b[0] == 0x28 && (unsigned char)b[1] == 0xB5 &&
        (unsigned char)b[2] == 0x2F && (unsigned char)b[3] == 0xFD) {
        unsigned long long sz = ZSTD_getFrameContentSize(b, n);
        if (sz == ZSTD_CONTENTSIZE_ERROR || sz == ZSTD_CONTENTSIZE_UNKNOWN)
            return NULL;
        char *d = malloc(sz + 1);
        size_t got = ZSTD_decompress(d, sz, b, n);
        free(b);
        if (ZSTD_isError(got))
            return NULL;
        *len = got;
        d[got] = 0;
        return d;
    }
    *len = n;
    b = realloc(b, n + 1);
    b[n] = 0;
    return b;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: oracle_walk MODEL DOCS ORACLE [zero|missing]\n");
        return 2;
    }
    size_t mlen;
    char *mb = slurp(argv[1], &mlen);
    if (!mb) {
        fprintf(stderr, "oracle_walk: cannot read %s\n", argv[1]);
        return 2;
    }
    qs_error err;
    qs_error_clear(&err);
    qs_model *m = qs_convert(QS_FMT_UNKNOWN, mb, mlen, &err);
    free(mb);
    if (!m) {
        fprintf(stderr, "oracle_walk: %s:%ld: %s\n", argv[1], err.line, err.msg);
        return 2;
    }
    if (qs_model_validate(m, &err) != 0) {
        fprintf(stderr, "oracle_walk: invalid model: %s\n", err.msg);
        return 2;
    }
    int missing = m->absent_missing;
    if (argc > 4)
        missing = strcmp(argv[4], "missing") == 0;
    FILE *df = fopen(argv[2], "r"), *of = fopen(argv[3], "r");
    if (!df || !of) {
        fprintf(stderr, "oracle_walk: cannot open docs or oracle\n");
        return 2;
    }
    double *x = malloc(sizeof(double) * (m->num_features + 1));
    double *sc = malloc(sizeof(double) * m->num_classes);
    char *line = NULL, *oline = NULL;
    size_t cap = 0, ocap = 0;
    long ln = 0, bad = 0;
    while (getline(&line, &cap, df) > 0) {
        ln++;
        for (uint32_t f = 0; f < m->num_features; f++)
            x[f] = missing ? NAN : 0.0;
        char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
        tok = strtok_r(NULL, " \t\r\n", &save); /* skip the label */
        for (; tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
            if (tok[0] == '#')
                break;
            char *c = strchr(tok, ':');
            if (!c || strncmp(tok, "qid:", 4) == 0)
                continue;
            unsigned long id = strtoul(tok, NULL, 10);
            double v;
            if (qs_parse_number(m->float_precision, c + 1, strlen(c + 1), &v) != 0) {
                fprintf(stderr, "oracle_walk: %s:%ld: bad value %s\n", argv[2], ln, c + 1);
                return 2;
            }
            if (id < m->num_features)
                x[id] = v;
        }
        qs_model_walk_score(m, x, sc);
        if (getline(&oline, &ocap, of) <= 0) {
            fprintf(stderr, "oracle_walk: oracle shorter than docs\n");
            return 2;
        }
        char *p = oline;
        for (uint32_t c = 0; c < m->num_classes; c++) {
            char *e;
            double want = m->float_accumulate ? (double)strtof(p, &e) : strtod(p, &e);
            p = e;
            if (want != sc[c] && !(isnan(want) && isnan(sc[c]))) {
                if (bad < 5)
                    fprintf(stderr, "line %ld class %u: got %.17g want %.17g\n", ln, c, sc[c],
                            want);
                bad++;
            }
        }
    }
    printf("%ld docs, %ld mismatches\n", ln, bad);
    qs_model_free(m);
    return bad ? 1 : 0;
}
