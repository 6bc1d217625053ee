/* version.c: the version of the library that wrote a foreign model, read
 * from its bytes for inspection (qs_source_version). */
#include "convert/convert.h"

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
 * last; the last occurrence of the key is taken. */
int qs_version_xgboost(const char *buf, size_t len, char *out, size_t cap)
{
    static const char key[] = "\"version\"";
    const size_t kl = sizeof key - 1;
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
