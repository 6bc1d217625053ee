/* cmpscores.c: compare two score files value by value, bit for bit.
 *
 *   cmpscores [--float] GOT WANT
 *
 * Both files hold one line per document, values separated by tabs or spaces
 * (CRLF is fine).  Every value is parsed with strtod (strtof with --float, for
 * float32 scores printed with another number of digits) and the two must have
 * the same bits: NaN equals only NaN, -0 differs from 0, one ulp is a
 * difference.  A token that is not wholly a number is a difference too.
 * Exit 0: same line and column counts and every value equal; 1: differences
 * (the first few printed, then a count); 2: usage error or unreadable file. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOW 5

static int use_float;
static long differences;

static void report(long line, int col, const char *got, const char *want, const char *why)
{
    if (++differences <= SHOW)
        printf("line %ld col %d: got '%s' want '%s'%s%s\n", line, col, got, want, why ? ": " : "",
               why ? why : "");
}

/* Parses the whole token; returns 0 when it is not a number. */
static int parse(const char *tok, double *d, float *f)
{
    char *end;
    errno = 0;
    if (!*tok)
        return 0;
    if (use_float)
        *f = strtof(tok, &end);
    else
        *d = strtod(tok, &end);
    return *end == '\0';
}

static int same(const char *a, const char *b, const char **why)
{
    double da = 0, db = 0;
    float fa = 0, fb = 0;
    if (!parse(a, &da, &fa) || !parse(b, &db, &fb)) {
        *why = "not a number";
        return 0;
    }
    *why = NULL;
    if (use_float) {
        if (isnan(fa) || isnan(fb))
            return isnan(fa) && isnan(fb);
        return memcmp(&fa, &fb, sizeof fa) == 0;
    }
    if (isnan(da) || isnan(db))
        return isnan(da) && isnan(db);
    return memcmp(&da, &db, sizeof da) == 0;
}

/* Splits LINE in place into at most MAX tokens; returns the count. */
static int split(char *line, char **tok, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
        if (n == max)
            return max + 1;
        tok[n++] = t;
    }
    return n;
}

int main(int argc, char **argv)
{
    int a = 1;
    if (a < argc && strcmp(argv[a], "--float") == 0) {
        use_float = 1;
        a++;
    }
    if (argc - a != 2) {
        fprintf(stderr, "usage: cmpscores [--float] GOT WANT\n");
        return 2;
    }
    FILE *g = fopen(argv[a], "r"), *w = fopen(argv[a + 1], "r");
    if (!g || !w) {
        fprintf(stderr, "cmpscores: cannot open %s\n", !g ? argv[a] : argv[a + 1]);
        return 2;
    }
    enum { MAXCOL = 65536 };
    static char *tg[MAXCOL + 1], *tw[MAXCOL + 1];
    char *lg = NULL, *lw = NULL;
    size_t cg = 0, cw = 0;
    long line = 0;
    for (;;) {
        ssize_t rg = getline(&lg, &cg, g), rw = getline(&lw, &cw, w);
        if (rg < 0 || rw < 0) {
            if (rg >= 0 || rw >= 0) {
                long more = 1;
                FILE *rest = rg >= 0 ? g : w;
                while (getline(rg >= 0 ? &lg : &lw, rg >= 0 ? &cg : &cw, rest) >= 0)
                    more++;
                printf("line counts differ: got %ld, want %ld\n", rg >= 0 ? line + more : line,
                       rw >= 0 ? line + more : line);
                differences++;
            }
            break;
        }
        line++;
        int ng = split(lg, tg, MAXCOL), nw = split(lw, tw, MAXCOL);
        if (ng != nw) {
            if (++differences <= SHOW)
                printf("line %ld: got %d values, want %d\n", line, ng, nw);
            continue;
        }
        for (int i = 0; i < ng && i < MAXCOL; i++) {
            const char *why;
            if (!same(tg[i], tw[i], &why))
                report(line, i + 1, tg[i], tw[i], why);
        }
    }
    if (ferror(g) || ferror(w)) {
        fprintf(stderr, "cmpscores: read error\n");
        return 2;
    }
    free(lg);
    free(lw);
    fclose(g);
    fclose(w);
    if (differences) {
        printf("%ld difference%s\n", differences, differences == 1 ? "" : "s");
        return 1;
    }
    return 0;
}
