/* qsm_unpack.c: make_corpus.sh's helper: rewrites a .qsm with its zstd sections stored uncompressed (still a valid .qsm), so fuzzing seeds expose the records themselves to mutation. */
#include "qsm_pack.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: qsm_unpack IN.qsm OUT.qsm\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    static unsigned char in[1 << 22], out[1 << 23];
    size_t n = fread(in, 1, sizeof in, f);
    fclose(f);
    qsmp_section sec[QSMP_MAX_SECTIONS];
    int ns = qsmp_split(in, n, sec);
    size_t len = ns > 0 ? qsmp_join(sec, ns, out, sizeof out) : 0;
    if (ns > 0)
        qsmp_free(sec, ns);
    if (!len) {
        fprintf(stderr, "%s: not a .qsm this helper can unpack\n", argv[1]);
        return 1;
    }
    f = fopen(argv[2], "wb");
    if (!f || fwrite(out, 1, len, f) != len || fclose(f) != 0) {
        perror(argv[2]);
        return 1;
    }
    return 0;
}
