/* convert.c: the readers' table: per format, its source library (whose
 * facts are the source table's, common/source.c), its command-line names,
 * how it is recognised from its first bytes, its reader (into the canonical
 * model) and where its writer's version is read.  A new reader is one file
 * in this folder, one row of `readers` below and its sources in lib/lib.mk
 * (lib/README.md); a build without the readers (make READERS=0) is this
 * file with every reader NULL. */
#include "convert/convert.h"
#include "convert/json.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Whether a JSON object is a CatBoost model rather than an XGBoost one:
 * among its first top-level keys (at most 8, the values in between skipped)
 * one that only CatBoost writes comes before XGBoost's "learner" or
 * "version".  CatBoost writes its keys sorted, "features_info" first. */
static int looks_like_catboost(const char *p, size_t n)
{
    static const char *const cb[] = { "features_info", "oblivious_trees", "scale_and_bias",
                                      "model_info", "ctr_data", "trees" };
    qs_json_reader r;
    qs_json_token t;
    qs_error e;
    qs_json_init(&r, p, n, 0, QS_JSON_NONFINITE);
    if (qs_json_next(&r, &t, &e) != 0 || t.type != QS_JSON_OBJECT)
        return 0;   /* UBJSON and malformed JSON go to the XGBoost reader */
    for (int i = 0; i < 8; i++) {
        if (qs_json_next(&r, &t, &e) != 0 || t.type != QS_JSON_KEY)
            return 0;
        for (size_t j = 0; j < sizeof cb / sizeof cb[0]; j++)
            if (qs_json_str_eq(&t, cb[j]))
                return 1;
        if (qs_json_str_eq(&t, "learner") || qs_json_str_eq(&t, "version"))
            return 0;
        if (qs_json_skip(&r, &t, &e) != 0)
            return 0;
    }
    return 0;
}

/* Whether the bytes start like an ONNX ModelProto: field 1 (ir_version,
 * a small varint) first, as every ONNX writer puts it, then another field of
 * ModelProto (opset_import, producer_name, graph, ...). */
static int looks_like_onnx(const char *raw, size_t n)
{
    const unsigned char *p = (const unsigned char *)raw;
    if (n < 3 || p[0] != 0x08 || p[1] == 0 || p[1] >= 0x80)
        return 0;
    switch (p[2]) {
    case 0x12: case 0x1a: case 0x22: case 0x28: case 0x32: case 0x3a: case 0x42: case 0x72:
        return 1;
    default:
        return 0;
    }
}

/* XGBoost's binary format: "binf" (1.3 and later), or without it (1.0 to
 * 1.2, and before 1.0), the learner's 136-byte parameters followed by two
 * names of printable ASCII (the objective's, 1 to 63 bytes, e.g.
 * "reg:squarederror"; the booster's, 1 to 15, "gbtree"), each after its
 * 64-bit little-endian length. */
static int xgb_name_at(const unsigned char *p, size_t len, size_t *at, uint64_t most)
{
    if (len < 8 || *at > len - 8)
        return 0;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | p[*at + (size_t)i];
    if (n == 0 || n > most || n > len - *at - 8)
        return 0;
    for (uint64_t i = 0; i < n; i++)
        if (p[*at + 8 + i] <= 0x20 || p[*at + 8 + i] >= 0x7f)
            return 0;
    *at += 8 + (size_t)n;
    return 1;
}

long qs_xgboost_binary_at(const char *buf, size_t len)
{
    const unsigned char *p = (const unsigned char *)buf;
    if (!buf || (len >= 4 && memcmp(buf, "CBM1", 4) == 0))
        return -1;   /* CatBoost's .cbm (its own row) */
    if (len >= 4 && (memcmp(buf, "binf", 4) == 0 || memcmp(buf, "bs64", 4) == 0))
        return 4;   /* "bs64": the base64 form of XGBoost before 1.0, refused by the reader */
    size_t at = 136;
    return xgb_name_at(p, len, &at, 63) && xgb_name_at(p, len, &at, 15) ? 0 : -1;
}

/* Detection, one function per row, no two true for the same bytes (so the
 * rows' order is free): `raw` is the whole input, `p` the same past a UTF-8
 * byte-order mark and leading white space (n > 0; ONNX reads raw, whose
 * first byte 0x08 no text format starts with). */
#define STARTS(s) (n >= sizeof(s) - 1 && memcmp(p, s, sizeof(s) - 1) == 0)

static int detect_onnx(const char *raw, size_t len, const char *p, size_t n)
{
    (void)p, (void)n;
    return looks_like_onnx(raw, len) && qs_xgboost_binary_at(raw, len) < 0;
}

/* CatBoost's binary model: "CBM1", then the size of its core. */
static int detect_catboost_cbm(const char *raw, size_t len, const char *p, size_t n)
{
    (void)p, (void)n;
    return len >= 4 && memcmp(raw, "CBM1", 4) == 0;
}

/* Canonical text may open with comments (`#` lines), then "qs-ensemble". */
static int detect_canonical(const char *raw, size_t len, const char *p, size_t n)
{
    size_t k = 0;
    if (qs_xgboost_binary_at(raw, len) >= 0)
        return 0;
    while (k < n && p[k] == '#') {
        const char *nl = memchr(p + k, '\n', n - k);
        if (!nl)
            return 0;
        k = (size_t)(nl - p) + 1;
        while (k < n && (p[k] == ' ' || p[k] == '\t' || p[k] == '\r' || p[k] == '\n'))
            k++;
    }
    return n - k >= 11 && memcmp(p + k, "qs-ensemble", 11) == 0;
}

static int detect_catboost(const char *raw, size_t len, const char *p, size_t n)
{
    return *p == '{' && looks_like_catboost(p, n) && qs_xgboost_binary_at(raw, len) < 0;
}

/* Any other object, JSON or UBJSON; XGBoost's binary format (1.0 to 1.7,
 * and before). */
static int detect_xgboost(const char *raw, size_t len, const char *p, size_t n)
{
    if (qs_xgboost_binary_at(raw, len) >= 0)
        return 1;
    return n > 0 && *p == '{' && !looks_like_catboost(p, n);
}

/* RankLib opens with `##` lines, QuickRank with `<`. */
static int detect_quickrank(const char *raw, size_t len, const char *p, size_t n)
{
    return (*p == '<' || (*p == '#' && !detect_canonical(raw, len, p, n))) &&
           qs_xgboost_binary_at(raw, len) < 0;
}

static int detect_lightgbm(const char *raw, size_t len, const char *p, size_t n)
{
    return (STARTS("tree\n") || STARTS("tree\r\n") || STARTS("version=") || STARTS("num_class=")) &&
           qs_xgboost_binary_at(raw, len) < 0;
}
#undef STARTS

/* The readers, one file each in this folder; without them (make
 * READERS=0) each row keeps its detection and names, and its reader and
 * version are NULL. */
#if QS_HAVE_READERS
#define R(f) f
#else
#define R(f) NULL
#endif
static const qs_reader readers[] = {
    /* { format, source, name, alias, description, kind }, detect, binary, read, version */
    { { QS_FMT_LIGHTGBM, QS_SRC_LIGHTGBM, "lightgbm", NULL, "LightGBM text", "a LightGBM text model" },
      detect_lightgbm, 0, R(qs_convert_lightgbm), R(qs_version_lightgbm) },
    { { QS_FMT_XGBOOST, QS_SRC_XGBOOST, "xgboost", NULL, "XGBoost JSON, UBJSON or binary",
        "an XGBoost model" },
      detect_xgboost, 1, R(qs_convert_xgboost), R(qs_version_xgboost) },
    { { QS_FMT_CATBOOST, QS_SRC_CATBOOST, "catboost", NULL, "CatBoost JSON", "a CatBoost JSON model" },
      detect_catboost, 0, R(qs_convert_catboost), NULL },
    { { QS_FMT_ONNX, QS_SRC_ONNX, "onnx", NULL, "ONNX", "an ONNX model" },
      detect_onnx, 1, R(qs_convert_onnx), NULL },
    { { QS_FMT_CATBOOST_CBM, QS_SRC_CATBOOST, "catboost-cbm", "cbm", "CatBoost binary (.cbm)",
        "a CatBoost .cbm model" },
      detect_catboost_cbm, 1, R(qs_read_catboost_cbm), R(qs_version_catboost_cbm) },
    { { QS_FMT_QUICKRANK, QS_SRC_QUICKRANK, "quickrank", "ranklib", "QuickRank/RankLib XML",
        "a QuickRank or RankLib XML model" },
      detect_quickrank, 0, R(qs_convert_quickrank), NULL },
    { { QS_FMT_CANONICAL, QS_SRC_UNKNOWN, NULL, NULL, "qs canonical ensemble text",
        "canonical ensemble text (qs-convert's output)" },
      detect_canonical, 0, qs_model_from_text, NULL },
};
#undef R
#define N_READERS (sizeof readers / sizeof readers[0])

const qs_reader *qs_reader_row(qs_format fmt)
{
    for (size_t i = 0; i < N_READERS; i++)
        if (readers[i].info.format == fmt)
            return &readers[i];
    return NULL;
}

const qs_reader_info *qs_reader_get(size_t i)
{
    return i < N_READERS ? &readers[i].info : NULL;
}

const qs_reader_info *qs_reader_by_format(qs_format fmt)
{
    const qs_reader *r = qs_reader_row(fmt);
    return r ? &r->info : NULL;
}

const qs_reader_info *qs_reader_by_name(const char *name)
{
    for (size_t i = 0; name && i < N_READERS; i++) {
        const qs_reader_info *r = &readers[i].info;
        if ((r->name && strcmp(r->name, name) == 0) || (r->alias && strcmp(r->alias, name) == 0))
            return r;
    }
    return NULL;
}

qs_format qs_detect_format(const char *buf, size_t len)
{
    size_t i = 0;
    if (!buf)
        return QS_FMT_UNKNOWN;
    if (len >= 3 && (unsigned char)buf[0] == 0xEF && (unsigned char)buf[1] == 0xBB &&
        (unsigned char)buf[2] == 0xBF)
        i = 3;
    while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' || buf[i] == '\n'))
        i++;
    for (size_t k = 0; k < N_READERS; k++)
        if ((i < len || readers[k].binary) && readers[k].detect(buf, len, buf + i, len - i))
            return readers[k].info.format;
    return QS_FMT_UNKNOWN;
}

qs_model *qs_convert(qs_format fmt, const char *buf, size_t len, qs_error *err)
{
    if (fmt == QS_FMT_UNKNOWN)
        fmt = qs_detect_format(buf, len);
    const qs_reader *r = qs_reader_row(fmt);
    if (r && r->read)
        return r->read(buf, len, err);
    if (r) {
        qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                "this libqs is built without the model readers (make READERS=0): it reads "
                "canonical ensemble text and .qsm files only, not %s; convert the model where "
                "qs-convert reads it", r->info.description);
        return NULL;
    }
    /* "expected LightGBM text, XGBoost JSON, UBJSON or binary, ... or ONNX" */
    char list[256];
    qs_fail(err, QS_ERR_FORMAT, 0, "unrecognised model format (expected %s)",
            qs_reader_list(list, sizeof list, QS_READERS_DESCRIPTIONS));
    return NULL;
}

const char *qs_reader_list(char *buf, size_t cap, int style)
{
    if (!cap)
        return buf;
    size_t k = 0, total = 0, seen = 0;
    for (size_t i = 0; i < N_READERS; i++)
        if (readers[i].info.name)
            total += 1 + (style == QS_READERS_EVERY_NAME && readers[i].info.alias);
    buf[0] = '\0';
    for (size_t i = 0; i < N_READERS && k < cap; i++) {
        const qs_reader_info *r = &readers[i].info;
        if (!r->name)
            continue;
        const char *item[2] = { style == QS_READERS_DESCRIPTIONS ? r->description : r->name,
                                style == QS_READERS_EVERY_NAME ? r->alias : NULL };
        for (int j = 0; j < 2 && k < cap; j++) {
            if (!item[j])
                continue;
            seen++;
            const char *sep = seen == 1 ? "" : seen == total ? " or " : ", ";
            int w = style == QS_READERS_NAMES && r->alias
                        ? snprintf(buf + k, cap - k, "%s%s (%s)", sep, item[j], r->alias)
                        : snprintf(buf + k, cap - k, "%s%s", sep, item[j]);
            k += w > 0 ? (size_t)w : 0;
        }
    }
    return buf;
}

int qs_source_version(const char *buf, size_t len, char *out, size_t cap)
{
    if (!out || cap == 0)
        return -1;
    out[0] = '\0';
    int r = -1;
    const qs_reader *row = qs_reader_row(qs_detect_format(buf, len));
    if (row && row->version)
        r = row->version(buf, len, out, cap); /* XGBoost's UBJSON: no quoted key, none found */
    if (r != 0)
        out[0] = '\0';
    return r;
}

#if !QS_HAVE_READERS
/* A build without the readers: the entry points of the five formats that
 * have one of their own (a format added since has none: qs_convert reads
 * it) go through the table, which refuses them; no source's categories. */
qs_model *qs_convert_lightgbm(const char *buf, size_t len, qs_error *err)
{
    return qs_convert(QS_FMT_LIGHTGBM, buf, len, err);
}

qs_model *qs_convert_xgboost(const char *buf, size_t len, qs_error *err)
{
    return qs_convert(QS_FMT_XGBOOST, buf, len, err);
}

qs_model *qs_convert_quickrank(const char *buf, size_t len, qs_error *err)
{
    return qs_convert(QS_FMT_QUICKRANK, buf, len, err);
}

qs_model *qs_convert_catboost(const char *buf, size_t len, qs_error *err)
{
    return qs_convert(QS_FMT_CATBOOST, buf, len, err);
}

qs_model *qs_convert_onnx(const char *buf, size_t len, qs_error *err)
{
    return qs_convert(QS_FMT_ONNX, buf, len, err);
}

long long qs_source_categories(const char *buf, size_t len, qs_category_fn fn, void *ctx)
{
    (void)buf, (void)len, (void)fn, (void)ctx;
    return 0;
}

long long qs_source_list_categories(const char *buf, size_t len, qs_category_fn fn, void *ctx,
                                    qs_error *err)
{
    (void)buf, (void)len, (void)fn, (void)ctx, (void)err;
    return 0;
}

long long qs_source_list_features(const char *buf, size_t len, qs_feature_fn fn, void *ctx,
                                  qs_error *err)
{
    (void)buf, (void)len, (void)fn, (void)ctx, (void)err;
    return 0;
}
#endif
