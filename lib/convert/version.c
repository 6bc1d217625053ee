/* version.c: the version of the library that wrote a foreign model, read
 * from its bytes for inspection (qs_source_version). */
#include "convert/convert.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* LightGBM text: the "version=v4" line of the header (before the trees). */
int qs_version_lightgbm(const char *buf, size_t len, char *out, size_t cap)
{
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(buf + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (buf + i)) : len - i;
        if (n >= 8 && memcmp(buf + i, "version=", 8) == 0) {
            size_t v = n - 8;
            while (v && (buf[i + 8 + v - 1] == '\r' || buf[i + 8 + v - 1] == ' '))
                v--;
            if (v == 0 || v >= cap || v > 32)
                return -1;
            for (size_t k = 0; k < v; k++) {
                char c = buf[i + 8 + k];
                out[k] = c > 0x20 && c < 0x7f ? c : '?';
            }
            out[v] = '\0';
            return 0;
        }
        if (n >= 5 && memcmp(buf + i, "Tree=", 5) == 0)
            return -1; /* the header is over */
        i += n + 1;
    }
    return -1;
}

/* XGBoost JSON: the top-level "version": [major, minor, patch], written
 * last; the last occurrence of the key is taken.  XGBoost's binary format:
 * major_version and minor_version of the learner's parameters (u32 at 20
 * and 24 of them, little-endian). */
int qs_version_xgboost(const char *buf, size_t len, char *out, size_t cap)
{
    static const char key[] = "\"version\"";
    const size_t kl = sizeof key - 1;
    long at = qs_xgboost_binary_at(buf, len);
    if (at >= 0) {
        if (len < (size_t)at + 28 || memcmp(buf, "bs64", 4) == 0)
            return -1;
        const unsigned char *p = (const unsigned char *)buf + at;
        uint32_t v[2];
        for (int i = 0; i < 2; i++)
            v[i] = (uint32_t)p[20 + 4 * i] | (uint32_t)p[21 + 4 * i] << 8 |
                   (uint32_t)p[22 + 4 * i] << 16 | (uint32_t)p[23 + 4 * i] << 24;
        if (v[0] > 999 || v[1] > 999)
            return -1;
        int w = snprintf(out, cap, "%u.%u", v[0], v[1]);
        return w > 0 && (size_t)w < cap ? 0 : -1;
    }
    if (len < kl)
        return -1;
    for (size_t i = len - kl + 1; i-- > 0;) {
        if (memcmp(buf + i, key, kl) != 0)
            continue;
        size_t p = i + kl;
        while (p < len && (buf[p] == ' ' || buf[p] == '\n' || buf[p] == '\r' || buf[p] == '\t'))
            p++;
        if (p >= len || buf[p++] != ':')
            return -1;
        while (p < len && (buf[p] == ' ' || buf[p] == '\n' || buf[p] == '\r' || buf[p] == '\t'))
            p++;
        if (p >= len || buf[p++] != '[')
            return -1;
        size_t k = 0;
        int parts = 0;
        for (;;) {
            while (p < len && (buf[p] == ' ' || buf[p] == '\n' || buf[p] == '\r' || buf[p] == '\t'))
                p++;
            size_t d = 0;
            while (p < len && buf[p] >= '0' && buf[p] <= '9' && d < 6) {
                if (k + 2 >= cap)
                    return -1;
                out[k++] = buf[p++];
                d++;
            }
            if (d == 0 || ++parts > 4)
                return -1;
            while (p < len && (buf[p] == ' ' || buf[p] == '\n' || buf[p] == '\r' || buf[p] == '\t'))
                p++;
            if (p < len && buf[p] == ']') {
                out[k] = '\0';
                return 0;
            }
            if (p >= len || buf[p++] != ',')
                return -1;
            out[k++] = '.';
        }
    }
    return -1;
}
