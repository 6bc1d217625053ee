/* qsm_pack.h: .qsm container surgery for fuzzing (format/qsm.md): recompute every size and checksum, and unpack zstd sections into stored ones, so that mutations reach the section readers instead of dying at a CRC or inside compressed bytes. */
#ifndef QS_FUZZ_QSM_PACK_H
#define QS_FUZZ_QSM_PACK_H

#include "qs.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define QSMP_HEADER 64u
#define QSMP_ENTRY 48u
#define QSMP_MAX_SECTIONS 64u
#define QSMP_FLAG_ZSTD 0x2u
/* A section unpacked for mutation is kept small: fuzz inputs are kilobytes. */
#define QSMP_MAX_RAW ((uint64_t)1 << 22)

static const unsigned char qsmp_magic[8] = { 0x89, 'Q', 'S', 'M', '\r', '\n', 0x1A, '\n' };

static inline uint32_t qsmp_get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t qsmp_get64(const unsigned char *p)
{
    return (uint64_t)qsmp_get32(p) | (uint64_t)qsmp_get32(p + 4) << 32;
}
static inline void qsmp_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static inline void qsmp_put64(unsigned char *p, uint64_t v)
{
    qsmp_put32(p, (uint32_t)v);
    qsmp_put32(p + 4, (uint32_t)(v >> 32));
}

/* Rewrite the recorded file size, every section checksum whose section lies
 * inside the file, the section table checksum and the header checksum.
 * Returns 0 when b is not a .qsm at all (too short, wrong magic). */
static inline int qsmp_fix(unsigned char *b, size_t len)
{
    if (len < QSMP_HEADER || memcmp(b, qsmp_magic, 8) != 0)
        return 0;
    qsmp_put64(b + 24, len);
    uint32_t hsize = qsmp_get32(b + 16), nsec = qsmp_get32(b + 20);
    if (hsize == QSMP_HEADER && nsec >= 1 && nsec <= QSMP_MAX_SECTIONS &&
        (uint64_t)nsec * QSMP_ENTRY <= len - QSMP_HEADER) {
        unsigned char *tab = b + QSMP_HEADER;
        for (uint32_t s = 0; s < nsec; s++) {
            unsigned char *e = tab + (size_t)s * QSMP_ENTRY;
            uint64_t off = qsmp_get64(e + 8), stored = qsmp_get64(e + 16);
            if (off <= len && stored <= len - off)
                qsmp_put32(e + 32, qs_crc32c(0, b + off, (size_t)stored));
        }
        qsmp_put32(b + 32, qs_crc32c(0, tab, (size_t)nsec * QSMP_ENTRY));
    }
    qsmp_put32(b + 60, qs_crc32c(0, b, 60));
    return 1;
}

typedef struct qsmp_section {
    uint32_t id, flags;       /* flags as recorded, less the zstd bit */
    const unsigned char *p;   /* the raw (uncompressed) bytes */
    size_t n;
    unsigned char *own;       /* p when decompressed here: free() it */
} qsmp_section;

static inline void qsmp_free(qsmp_section *sec, int n)
{
    for (int i = 0; i < n; i++) {
        free(sec[i].own);
        sec[i].own = NULL;
    }
}

/* Split a well-formed container into its sections, decompressing zstd ones
 * (sec has room for QSMP_MAX_SECTIONS).  Returns the count, or -1. */
static inline int qsmp_split(const unsigned char *b, size_t len, qsmp_section *sec)
{
    if (len < QSMP_HEADER || memcmp(b, qsmp_magic, 8) != 0)
        return -1;
    uint32_t hsize = qsmp_get32(b + 16), nsec = qsmp_get32(b + 20);
    if (hsize != QSMP_HEADER || nsec < 1 || nsec > QSMP_MAX_SECTIONS ||
        (uint64_t)nsec * QSMP_ENTRY > len - QSMP_HEADER)
        return -1;
    const unsigned char *tab = b + QSMP_HEADER;
    for (uint32_t s = 0; s < nsec; s++) {
        const unsigned char *e = tab + (size_t)s * QSMP_ENTRY;
        uint64_t off = qsmp_get64(e + 8), stored = qsmp_get64(e + 16);
        sec[s].id = qsmp_get32(e);
        sec[s].flags = qsmp_get32(e + 4) & ~QSMP_FLAG_ZSTD;
        sec[s].own = NULL;
        if (off > len || stored > len - off) {
            qsmp_free(sec, (int)s);
            return -1;
        }
        if (qsmp_get32(e + 4) & QSMP_FLAG_ZSTD) {
            unsigned long long raw = ZSTD_getFrameContentSize(b + off, (size_t)stored);
            if (raw == ZSTD_CONTENTSIZE_ERROR || raw == ZSTD_CONTENTSIZE_UNKNOWN ||
                raw > QSMP_MAX_RAW || !(sec[s].own = malloc(raw ? (size_t)raw : 1))) {
                qsmp_free(sec, (int)s);
                return -1;
            }
            size_t got = ZSTD_decompress(sec[s].own, (size_t)raw, b + off, (size_t)stored);
            if (ZSTD_isError(got) || got != raw) {
                qsmp_free(sec, (int)s + 1);
                return -1;
            }
            sec[s].p = sec[s].own;
            sec[s].n = (size_t)raw;
        } else {
            sec[s].p = b + off;
            sec[s].n = (size_t)stored;
        }
    }
    return (int)nsec;
}

/* Write a version 1.0 container of stored (uncompressed) sections, with
 * every size and checksum right, into out[0..cap).  Returns its length, or
 * 0 when it does not fit. */
static inline size_t qsmp_join(const qsmp_section *sec, int n, unsigned char *out, size_t cap)
{
    size_t total = QSMP_HEADER + (size_t)n * QSMP_ENTRY;
    for (int i = 0; i < n; i++)
        total += sec[i].n;
    if (n < 1 || n > (int)QSMP_MAX_SECTIONS || total > cap)
        return 0;
    memset(out, 0, QSMP_HEADER + (size_t)n * QSMP_ENTRY);
    memcpy(out, qsmp_magic, 8);
    out[8] = 1; /* major version 1, minor 0 */
    qsmp_put32(out + 16, QSMP_HEADER);
    qsmp_put32(out + 20, (uint32_t)n);
    qsmp_put64(out + 24, total);
    size_t off = QSMP_HEADER + (size_t)n * QSMP_ENTRY;
    for (int i = 0; i < n; i++) {
        unsigned char *e = out + QSMP_HEADER + (size_t)i * QSMP_ENTRY;
        qsmp_put32(e, sec[i].id);
        qsmp_put32(e + 4, sec[i].flags);
        qsmp_put64(e + 8, off);
        qsmp_put64(e + 16, sec[i].n);
        qsmp_put64(e + 24, sec[i].n);
        if (sec[i].n)
            memcpy(out + off, sec[i].p, sec[i].n);
        qsmp_put32(e + 32, qs_crc32c(0, out + off, sec[i].n));
        off += sec[i].n;
    }
    qsmp_put32(out + 32, qs_crc32c(0, out + QSMP_HEADER, (size_t)n * QSMP_ENTRY));
    qsmp_put32(out + 60, qs_crc32c(0, out, 60));
    return total;
}

#endif
