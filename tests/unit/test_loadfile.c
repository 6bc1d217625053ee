/* The library's load-from-file call and its version macros, through the
 * public header only.
 *
 *   test_loadfile MODEL.qsm NOT-A-QSM MISSING DIRECTORY [FILE=TEXT...]
 *
 * MODEL.qsm loaded from its file scores a document as the same image loaded
 * from memory does; NOT-A-QSM is refused as malformed (QS_ERR_FORMAT) with
 * its name in the message, MISSING (QS_ERR_IO, "cannot open") and
 * DIRECTORY (QS_ERR_IO, "read error") with theirs; each FILE=TEXT is
 * refused as malformed with TEXT in the message (a padded .qsm, /dev/zero).
 * QS_VERSION_NUMBER and its parts spell QS_VERSION_STRING. */
#include <qs.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurp.h"

#if !defined(QS_VERSION_NUMBER) || QS_VERSION_NUMBER < 200
#error "QS_VERSION_NUMBER missing or below 0.2.0"
#endif

static int fails;

#define CHECK(c, ...)                                                                   \
    do {                                                                                \
        if (!(c)) {                                                                     \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                 \
            printf(__VA_ARGS__);                                                        \
            putchar('\n');                                                              \
            fails++;                                                                    \
        }                                                                               \
    } while (0)

static void refused(const char *path, qs_status want, const char *what)
{
    qs_error err;
    qs_error_clear(&err);
    qs_scorer *s = qs_scorer_load_file(path, &err);
    CHECK(!s, "%s loaded", path);
    CHECK(err.code == want, "%s: code %d, want %d (%s)", path, (int)err.code, (int)want, err.msg);
    CHECK(strncmp(err.msg, path, strlen(path)) == 0 && err.msg[strlen(path)] == ':',
          "%s: the message does not begin with the file's name: %s", path, err.msg);
    CHECK(strstr(err.msg, what) != NULL, "%s: '%s' not in: %s", path, what, err.msg);
    qs_scorer_free(s);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: test_loadfile MODEL.qsm NOT-A-QSM MISSING DIRECTORY "
                        "[FILE=TEXT...]\n");
        return 2;
    }
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", QS_VERSION_MAJOR, QS_VERSION_MINOR, QS_VERSION_PATCH);
    CHECK(strcmp(v, QS_VERSION_STRING) == 0, "version %s, string %s", v, QS_VERSION_STRING);
    CHECK(QS_VERSION_NUMBER == QS_VERSION_MAJOR * 10000 + QS_VERSION_MINOR * 100 + QS_VERSION_PATCH,
          "QS_VERSION_NUMBER %d", QS_VERSION_NUMBER);

    qs_error err;
    qs_error_clear(&err);
    qs_scorer *a = qs_scorer_load_file(argv[1], &err);
    CHECK(a != NULL, "%s: %s", argv[1], err.msg);
    size_t len;
    unsigned char *img = slurp(argv[1], &len);
    qs_scorer *b = img ? qs_scorer_load(img, len, &err) : NULL;
    free(img);
    CHECK(b != NULL, "%s from memory: %s", argv[1], err.msg);
    if (a && b) {
        qs_workspace *wa = qs_workspace_new(a, &err), *wb = qs_workspace_new(b, &err);
        const char *doc = "1 qid:1 1:0.5 3:-2 7:1e3 20:0.25";
        qs_letor_line meta;
        int is_doc;
        double sa = 0, sb = 1;
        CHECK(wa && wb, "workspaces");
        if (wa && wb && qs_letor_parse(a, wa, QS_ABSENT_DEFAULT, doc, strlen(doc), &meta, &is_doc, &err) == 0 &&
            qs_letor_parse(b, wb, QS_ABSENT_DEFAULT, doc, strlen(doc), &meta, &is_doc, &err) == 0) {
            CHECK(qs_score_doc(a, wa, QS_BACKEND_AUTO, &sa, &err) == 0, "score: %s", err.msg);
            CHECK(qs_score_doc(b, wb, QS_BACKEND_AUTO, &sb, &err) == 0, "score: %s", err.msg);
            CHECK(memcmp(&sa, &sb, sizeof sa) == 0, "file %.17g, memory %.17g", sa, sb);
        } else {
            CHECK(0, "parse: %s", err.msg);
        }
        qs_workspace_free(wa);
        qs_workspace_free(wb);
    }
    qs_scorer_free(a);
    qs_scorer_free(b);
    refused(argv[2], QS_ERR_FORMAT, "not a .qsm file");
    refused(argv[3], QS_ERR_IO, "cannot open");
    refused(argv[4], QS_ERR_IO, "read error");
    for (int i = 5; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        CHECK(eq != NULL, "%s: expected FILE=TEXT", argv[i]);
        if (eq) {
            *eq = '\0';
            refused(argv[i], QS_ERR_FORMAT, eq + 1);
        }
    }
    qs_error_clear(&err);
    CHECK(qs_scorer_load_file(NULL, &err) == NULL && err.code == QS_ERR_ARG, "NULL path");
    printf("%s\n", fails ? "FAILED" : "ok");
    return fails != 0;
}
