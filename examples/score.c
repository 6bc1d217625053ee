/* score.c: embedding qs.  Loads a .qsm model, reads LETOR/SVMLight lines
 * from standard input and prints one raw score per document (the first
 * class), exactly as `qs-score` does, using only the public API.
 *
 *   cc score.c $(pkg-config --cflags --libs qs) -o score
 *   ./score model.qsm < docs.letor
 */
#include <qs.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL.qsm < DOCS\n", argv[0]);
        return 2;
    }
    qs_error err;
    qs_error_clear(&err);
    /* reads the file, validates it, prepares the `auto` back end */
    qs_scorer *s = qs_scorer_load_file(argv[1], &err);
    if (!s) {
        fprintf(stderr, "%s\n", err.msg); /* names the file */
        return err.code == QS_ERR_IO ? 4 : err.code == QS_ERR_UNSUPPORTED ? 3 : 1;
    }
    /* One workspace per thread; this program has one. */
    qs_workspace *w = qs_workspace_new(s, &err);
    qs_model_info info;
    qs_model_get_info(qs_scorer_model(s), &info);
    double *out = malloc(sizeof(double) * info.num_classes);
    if (!w || !out) {
        fprintf(stderr, "out of memory\n");
        return 4;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long ln = 0;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        ln++;
        if (n > 0 && line[n - 1] == '\n')
            n--;
        qs_letor_line meta;
        int is_doc;
        qs_workspace_select(w, 0);
        if (qs_letor_parse(s, w, QS_ABSENT_DEFAULT, line, (size_t)n, &meta, &is_doc, &err) != 0) {
            fprintf(stderr, "stdin:%ld: %s\n", ln, err.msg);
            return 1;
        }
        if (!is_doc)
            continue;
        if (qs_score_doc(s, w, QS_BACKEND_AUTO, out, &err) != 0) {
            fprintf(stderr, "stdin:%ld: %s\n", ln, err.msg);
            return 1;
        }
        printf("%.*g\n", qs_score_digits(s), out[0]);
    }
    free(line);
    free(out);
    qs_workspace_free(w);
    qs_scorer_free(s);
    return 0;
}
