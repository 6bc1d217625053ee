/* qsm_setversion.c: rewrite the version of a .qsm header in place and
 * recompute the header CRC, so that tests can check how qs-score treats a
 * file from a newer writer (format/qsm.md: major at byte 8, minor at byte 10,
 * both u16 little-endian; header CRC-32C of bytes 0..59 at byte 60).
 * The CRC-32C here is written from the format document, independently of
 * lib/common/crc32c.c.
 *
 *   qsm_setversion FILE MAJOR MINOR
 * exit 0: rewritten; 2: usage error, unreadable or too short file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t crc32c(const unsigned char *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

static void put16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v & 0xFF);
    p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static int parse_u16(const char *s, unsigned *v)
{
    char *end;
    unsigned long x = strtoul(s, &end, 10);
    if (!*s || *end || x > 0xFFFF)
        return 0;
    *v = (unsigned)x;
    return 1;
}

int main(int argc, char **argv)
{
    unsigned major, minor;
    if (argc != 4 || !parse_u16(argv[2], &major) || !parse_u16(argv[3], &minor)) {
        fprintf(stderr, "usage: qsm_setversion FILE MAJOR MINOR (0..65535)\n");
        return 2;
    }
    /* The check value of format/qsm.md. */
    if (crc32c((const unsigned char *)"123456789", 9) != 0xE3069283u) {
        fprintf(stderr, "qsm_setversion: CRC-32C self-check failed\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r+b");
    unsigned char h[64];
    if (!f || fread(h, 1, sizeof h, f) != sizeof h) {
        fprintf(stderr, "qsm_setversion: cannot read a 64-byte header from %s\n", argv[1]);
        return 2;
    }
    put16(h + 8, major);
    put16(h + 10, minor);
    put32(h + 60, crc32c(h, 60));
    if (fseek(f, 0, SEEK_SET) != 0 || fwrite(h, 1, sizeof h, f) != sizeof h || fclose(f) != 0) {
        fprintf(stderr, "qsm_setversion: cannot write %s\n", argv[1]);
        return 2;
    }
    return 0;
}
