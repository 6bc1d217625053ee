/* features.c: the names and types a foreign model recorded for its
 * features (qs_source_list_features), for callers that match a data
 * frame's columns to them (the Python binding).  Read for inspection only:
 * the scores never depend on them. */
#include "convert/convert.h"
#include "convert/json.h"
#include "common/common.h"

#include <stdlib.h>
#include <string.h>

#define NAME_MAX_BYTES 256

/* A name cut at its last whole UTF-8 character within NAME_MAX_BYTES. */
static size_t cut_name(const char *s, size_t n)
{
    if (n <= NAME_MAX_BYTES)
        return n;
    size_t k = 0;
    for (size_t m; k < NAME_MAX_BYTES &&
                   (m = qs_json_utf8_len((const unsigned char *)s + k, NAME_MAX_BYTES - k)) > 0;)
        k += m;
    return k;
}

/* One line "key=..." of LightGBM's header (before the first tree): its
 * value's bytes, or NULL. */
static const char *lgb_line(const char *buf, size_t len, const char *key, size_t *vlen)
{
    const size_t kl = strlen(key);
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(buf + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (buf + i)) : len - i;
        if (n >= kl && memcmp(buf + i, key, kl) == 0) {
            size_t v = n - kl;
            while (v && buf[i + kl + v - 1] == '\r')
                v--;
            *vlen = v;
            return buf + i + kl;
        }
        if (n >= 5 && memcmp(buf + i, "Tree=", 5) == 0)
            return NULL;
        i += n + 1;
    }
    return NULL;
}

static long long lightgbm_features(const char *buf, size_t len, qs_feature_fn fn, void *ctx,
                                   qs_error *err)
{
    size_t nl, il = 0;
    const char *names = lgb_line(buf, len, "feature_names=", &nl);
    const char *infos = lgb_line(buf, len, "feature_infos=", &il);
    if (!names)
        return 0;
    long long count = 0;
    size_t i = 0, j = 0;
    while (i < nl) {
        size_t a = i;
        while (i < nl && names[i] != ' ')
            i++;
        if (i == a) {
            i++;
            continue;
        }
        /* the feature's info: a range "[lo:hi]", "none", or a categorical
         * feature's categories "1:0:3" */
        const char *type = "q";
        if (infos) {
            while (j < il && infos[j] == ' ')
                j++;
            size_t b = j;
            while (j < il && infos[j] != ' ')
                j++;
            if (j > b && infos[b] != '[' && !(j - b == 4 && memcmp(infos + b, "none", 4) == 0))
                type = "c";
        }
        for (size_t k = a; k < i; k++)
            if ((unsigned char)names[k] < 0x20)
                return qs_fail(err, QS_ERR_FORMAT, 0, "feature_names: a control byte in "
                               "feature %lld's name", count);
        if (fn)
            fn(ctx, (uint32_t)count, names + a, cut_name(names + a, i - a), type, 1);
        count++;
    }
    (void)len;
    return count;
}

static int looks_like_ubjson(const char *buf, size_t len)
{
    return len >= 2 && buf[0] == '{' && buf[1] != '\0' && strchr("iUIlLN$#", buf[1]) != NULL;
}

/* The strings of an array value into *list (decoded, NUL-terminated), all
 * or nothing. */
typedef struct strlist {
    char **s;
    size_t n, cap;
} strlist;

static void strlist_free(strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->s[i]);
    free(l->s);
    memset(l, 0, sizeof *l);
}

static int read_strings(qs_json_reader *r, const char *what, strlist *l, qs_error *err)
{
    qs_json_token t;
    if (qs_json_expect(r, &t, QS_JSON_ARRAY, what, err) != 0)
        return -1;
    for (;;) {
        if (qs_json_next(r, &t, err) != 0)
            return -1;
        if (t.type == QS_JSON_ARRAY_END)
            return 0;
        if (t.type != QS_JSON_STRING)
            return qs_fail_at(err, QS_ERR_FORMAT, (long long)t.offset, "%s: expected strings, "
                              "found %s", what, qs_json_type_name(t.type));
        if (l->n == l->cap && qs_vec_reserve((void **)&l->s, &l->cap, l->n, sizeof *l->s) != 0)
            return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        /* decoded, at most 4 bytes per escaped or raw byte */
        size_t cap = t.len * 4 + 1;
        char *s = malloc(cap);
        if (!s)
            return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        long long k = qs_json_str_decode(&t, s, cap);
        if (k < 0) {
            free(s);
            return qs_fail_at(err, QS_ERR_FORMAT, (long long)t.offset, "%s: a bad string", what);
        }
        l->s[l->n++] = s;
    }
}

/* XGBoost JSON or UBJSON: learner.feature_names and learner.feature_types. */
static long long xgboost_features(const char *buf, size_t len, qs_feature_fn fn, void *ctx,
                                  qs_error *err)
{
    qs_json_reader r;
    qs_json_token t;
    qs_json_init(&r, buf, len, 0,
                 QS_JSON_NONFINITE | (looks_like_ubjson(buf, len) ? QS_JSON_UBJSON : 0));
    strlist names = { 0 }, types = { 0 };
    long long count = -1;
    int in_learner = 0;
    for (;;) {
        if (qs_json_next(&r, &t, err) != 0)
            goto out;
        if (t.type == QS_JSON_END)
            break;
        const unsigned d = qs_json_depth(&r);
        if (in_learner && d < 2)
            break; /* the learner is over */
        if (t.type != QS_JSON_KEY)
            continue;
        if (d == 1 && qs_json_str_eq(&t, "learner")) {
            in_learner = 1;
            continue;
        }
        if (d == 1 && !in_learner) {
            if (qs_json_skip(&r, &t, err) != 0)
                goto out;
            continue;
        }
        if (!in_learner || d != 2)
            continue;
        if (qs_json_str_eq(&t, "feature_names")) {
            if (names.n || read_strings(&r, "learner.feature_names", &names, err) != 0)
                goto out;
        } else if (qs_json_str_eq(&t, "feature_types")) {
            if (types.n || read_strings(&r, "learner.feature_types", &types, err) != 0)
                goto out;
        } else if (qs_json_skip(&r, &t, err) != 0) {
            goto out;
        }
    }
    count = 0;
    {
        const size_t n = names.n ? names.n : types.n;
        if (names.n && types.n && names.n != types.n) {
            qs_fail(err, QS_ERR_FORMAT, 0, "learner: %zu feature_names but %zu feature_types",
                    names.n, types.n);
            count = -1;
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            const char *nm = names.n ? names.s[i] : "";
            const char *ty = types.n ? types.s[i] : "";
            if (fn)
                fn(ctx, (uint32_t)i, nm, cut_name(nm, strlen(nm)), ty, strlen(ty));
            count++;
        }
    }
out:
    strlist_free(&names);
    strlist_free(&types);
    return count;
}

/* CatBoost JSON: features_info.float_features[]: feature_id by
 * flat_feature_index (the caller's column; qs's feature is that + 1). */
typedef struct cb_feat {
    int64_t flat;
    char *name;
} cb_feat;

static long long catboost_features(const char *buf, size_t len, qs_feature_fn fn, void *ctx,
                                   qs_error *err)
{
    qs_json_reader r;
    qs_json_token t;
    qs_json_init(&r, buf, len, 0, QS_JSON_NONFINITE);
    cb_feat *fs = NULL;
    size_t n = 0, cap = 0;
    long long count = -1;
    int64_t flat = -1;
    char *name = NULL;
    unsigned obj_depth = 0;
    int in_info = 0, in_float = 0;
    for (;;) {
        if (qs_json_next(&r, &t, err) != 0)
            goto out;
        if (t.type == QS_JSON_END)
            break;
        const unsigned d = qs_json_depth(&r);
        if (in_float && t.type == QS_JSON_OBJECT && d == 4) {
            obj_depth = d;
            flat = -1;
            free(name);
            name = NULL;
            continue;
        }
        if (in_float && obj_depth && t.type == QS_JSON_OBJECT_END && d == 3) {
            if (flat >= 0) {
                if (n == cap && qs_vec_reserve((void **)&fs, &cap, n, sizeof *fs) != 0) {
                    qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
                    goto out;
                }
                fs[n].flat = flat;
                fs[n].name = name;
                name = NULL;
                n++;
            }
            obj_depth = 0;
            continue;
        }
        if (in_float && t.type == QS_JSON_ARRAY_END && d == 2) {
            in_float = 0;
            continue;
        }
        if (in_info && t.type == QS_JSON_OBJECT_END && d == 1) {
            in_info = 0;
            continue;
        }
        if (t.type != QS_JSON_KEY)
            continue;
        if (d == 1) {
            if (qs_json_str_eq(&t, "features_info"))
                in_info = 1;
            else if (qs_json_skip(&r, &t, err) != 0)
                goto out;
            continue;
        }
        if (in_info && d == 2) {
            if (qs_json_str_eq(&t, "float_features"))
                in_float = 1;
            else if (qs_json_skip(&r, &t, err) != 0)
                goto out;
            continue;
        }
        if (in_float && obj_depth && d == 4) {
            if (qs_json_str_eq(&t, "flat_feature_index")) {
                if (qs_json_next(&r, &t, err) != 0)
                    goto out;
                if (qs_json_get_i64(&t, &flat) != 0 || flat < 0 || flat >= (int64_t)1 << 30) {
                    qs_fail_at(err, QS_ERR_FORMAT, (long long)t.offset,
                               "features_info.float_features: a bad flat_feature_index");
                    goto out;
                }
            } else if (qs_json_str_eq(&t, "feature_id")) {
                if (qs_json_next(&r, &t, err) != 0)
                    goto out;
                if (t.type != QS_JSON_STRING) {
                    qs_fail_at(err, QS_ERR_FORMAT, (long long)t.offset,
                               "features_info.float_features: feature_id is no string");
                    goto out;
                }
                free(name);
                name = malloc(t.len * 4 + 1);
                if (!name) {
                    qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
                    goto out;
                }
                if (qs_json_str_decode(&t, name, t.len * 4 + 1) < 0) {
                    qs_fail_at(err, QS_ERR_FORMAT, (long long)t.offset,
                               "features_info.float_features: a bad feature_id");
                    goto out;
                }
            } else if (qs_json_skip(&r, &t, err) != 0) {
                goto out;
            }
        }
    }
    count = 0;
    {
        int64_t most = -1;
        for (size_t i = 0; i < n; i++)
            if (fs[i].flat > most)
                most = fs[i].flat;
        for (int64_t f = 0; f <= most; f++) {
            const char *nm = "";
            for (size_t i = 0; i < n; i++)
                if (fs[i].flat == f && fs[i].name)
                    nm = fs[i].name;
            if (fn)
                fn(ctx, (uint32_t)f, nm, cut_name(nm, strlen(nm)), "float", 5);
            count++;
        }
    }
out:
    free(name);
    for (size_t i = 0; i < n; i++)
        free(fs[i].name);
    free(fs);
    return count;
}

long long qs_source_list_features(const char *buf, size_t len, qs_feature_fn fn, void *ctx,
                                  qs_error *err)
{
    if (!buf)
        return 0;
    switch (qs_detect_format(buf, len)) {
    case QS_FMT_LIGHTGBM: return lightgbm_features(buf, len, fn, ctx, err);
    case QS_FMT_XGBOOST: return xgboost_features(buf, len, fn, ctx, err);
    case QS_FMT_CATBOOST: return catboost_features(buf, len, fn, ctx, err);
    default: return 0;
    }
}
