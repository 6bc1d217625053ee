/* The library's one open path through the public header: qs_open on a path
 * or bytes, qs_open_file on a stream, the flags the tools use.
 *
 *   test_open MODEL MODEL.qsm MISSING
 *
 * MODEL is a foreign model (not a .qsm), MODEL.qsm what `qs-compile MODEL`
 * writes of it, MISSING a path that does not exist.  Checked: a stream
 * gives what the path gives (the same image, byte for byte, and the image
 * qs-compile wrote); QS_OPEN_NO_CONVERT recognises without converting (the
 * kind, the plain bytes NUL-terminated, no image, no scorer; bytes no
 * reader takes are no failure there, and are one without it);
 * QS_OPEN_UNNAMED leaves the name out of a message, which otherwise starts
 * "NAME: "; a missing file is QS_ERR_IO with errno ENOENT; bad arguments
 * are QS_ERR_ARG.  Prints "ok", or each failure. */
#include <qs.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurp.h"

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

static int starts(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: test_open MODEL MODEL.qsm MISSING\n");
        return 2;
    }
    const char *mpath = argv[1], *qpath = argv[2], *missing = argv[3];
    size_t mlen = 0, qlen = 0;
    unsigned char *mbytes = (unsigned char *)slurp(mpath, &mlen);
    unsigned char *qbytes = (unsigned char *)slurp(qpath, &qlen);
    if (!mbytes || !qbytes) {
        fprintf(stderr, "test_open: cannot read %s or %s\n", mpath, qpath);
        return 2;
    }
    qs_error err;
    qs_opened a, b, c;

    /* the path: converted, compiled, loaded; the image qs-compile wrote */
    qs_error_clear(&err);
    CHECK(qs_open(mpath, NULL, 0, NULL, &a, &err) == 0, "%s: %s", mpath, err.msg);
    CHECK(!a.is_qsm && a.format != QS_FMT_UNKNOWN && a.scorer && a.qsm, "%s: not opened", mpath);
    CHECK(a.qsm_len == qlen && a.qsm && memcmp(a.qsm, qbytes, qlen) == 0,
          "%s: the image (%zu bytes) is not qs-compile's (%zu)", mpath, a.qsm_len, qlen);

    /* the same from a stream */
    FILE *f = fopen(mpath, "rb");
    CHECK(f != NULL, "%s: fopen", mpath);
    qs_error_clear(&err);
    CHECK(f && qs_open_file(f, "S", NULL, &b, &err) == 0, "stream: %s", err.msg);
    if (f)
        fclose(f);
    CHECK(b.qsm_len == a.qsm_len && b.qsm && a.qsm && memcmp(a.qsm, b.qsm, a.qsm_len) == 0,
          "stream: another image");
    CHECK(b.scorer && b.format == a.format && strcmp(a.kind, b.kind) == 0, "stream: %s vs %s",
          b.kind, a.kind);
    qs_opened_free(&b);

    /* recognised only: its kind and plain bytes, nothing converted */
    const qs_open_options nc = { QS_FMT_UNKNOWN, QS_OPEN_NO_CONVERT, 0, 0, 0, 0 };
    f = fopen(mpath, "rb");
    qs_error_clear(&err);
    CHECK(f && qs_open_file(f, "S", &nc, &b, &err) == 0, "NO_CONVERT: %s", err.msg);
    if (f)
        fclose(f);
    CHECK(!b.is_qsm && !b.qsm && !b.scorer, "NO_CONVERT: converted");
    CHECK(b.format == a.format && strcmp(b.kind, a.kind) == 0 && b.kind[0],
          "NO_CONVERT: kind '%s', want '%s'", b.kind, a.kind);
    CHECK(b.source && b.source_len == mlen && memcmp(b.source, mbytes, mlen) == 0 &&
          b.source[mlen] == 0, "NO_CONVERT: not the file's bytes");
    qs_opened_free(&b);
    /* a .qsm with NO_CONVERT: the image, no scorer */
    qs_error_clear(&err);
    CHECK(qs_open(qpath, NULL, 0, &nc, &b, &err) == 0, "%s: %s", qpath, err.msg);
    CHECK(b.is_qsm && b.qsm_len == qlen && !b.scorer && !b.source, "%s: NO_CONVERT", qpath);
    qs_opened_free(&b);

    /* bytes no reader takes: no failure with NO_CONVERT (kind ""), a named
     * QS_ERR_FORMAT without it */
    static unsigned char zeros[4096];
    f = fmemopen(zeros, sizeof zeros, "rb");
    qs_error_clear(&err);
    CHECK(f && qs_open_file(f, "Z", &nc, &c, &err) == 0, "zeros, NO_CONVERT: %s", err.msg);
    if (f)
        fclose(f);
    CHECK(!c.is_qsm && c.kind[0] == 0 && c.format == QS_FMT_UNKNOWN && c.source,
          "zeros, NO_CONVERT: kind '%s'", c.kind);
    qs_opened_free(&c);
    f = fmemopen(zeros, sizeof zeros, "rb");
    qs_error_clear(&err);
    CHECK(f && qs_open_file(f, "Z", NULL, &c, &err) != 0, "zeros opened");
    if (f)
        fclose(f);
    CHECK(err.code == QS_ERR_FORMAT && starts(err.msg, "Z: "), "zeros: %d %s", (int)err.code,
          err.msg);
    CHECK(!c.qsm && !c.source && !c.scorer, "zeros: *out not emptied");
    const qs_open_options un = { QS_FMT_UNKNOWN, QS_OPEN_UNNAMED, 0, 0, 0, 0 };
    f = fmemopen(zeros, sizeof zeros, "rb");
    qs_error_clear(&err);
    CHECK(f && qs_open_file(f, "Z", &un, &c, &err) != 0, "zeros opened (UNNAMED)");
    if (f)
        fclose(f);
    CHECK(err.code == QS_ERR_FORMAT && !starts(err.msg, "Z: "), "UNNAMED: %s", err.msg);

    /* a missing file: QS_ERR_IO, named (or not), errno ENOENT */
    errno = 0;
    qs_error_clear(&err);
    CHECK(qs_open(missing, NULL, 0, NULL, &c, &err) != 0, "%s opened", missing);
    CHECK(errno == ENOENT, "%s: errno %d", missing, errno);
    CHECK(err.code == QS_ERR_IO && starts(err.msg, missing) &&
          starts(err.msg + strlen(missing), ": cannot open: "), "%s: %s", missing, err.msg);
    errno = 0;
    qs_error_clear(&err);
    CHECK(qs_open(missing, NULL, 0, &un, &c, &err) != 0, "%s opened", missing);
    CHECK(errno == ENOENT && err.code == QS_ERR_IO && starts(err.msg, "cannot open: "),
          "%s (UNNAMED): errno %d, %s", missing, errno, err.msg);
    /* a directory: a read error, errno EISDIR */
    errno = 0;
    qs_error_clear(&err);
    CHECK(qs_open("/", NULL, 0, NULL, &c, &err) != 0, "/ opened");
    CHECK(errno == EISDIR && err.code == QS_ERR_IO && strstr(err.msg, "read error"),
          "/: errno %d, %s", errno, err.msg);

    /* bad arguments */
    qs_error_clear(&err);
    CHECK(qs_open_file(NULL, "x", NULL, &c, &err) != 0 && err.code == QS_ERR_ARG,
          "no stream: %s", err.msg);
    qs_error_clear(&err);
    CHECK(qs_open_file(stdin, "x", NULL, NULL, &err) != 0 && err.code == QS_ERR_ARG,
          "no result: %s", err.msg);

    qs_opened_free(&a);
    free(mbytes);
    free(qbytes);
    if (fails)
        return 1;
    puts("ok");
    return 0;
}
