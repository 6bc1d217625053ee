/* convert.c: recognising a model's format from its first bytes, and the
 * table of readers that turn each format into the canonical model.  A new
 * reader is one file in this folder and one row of `readers` below. */
#include "convert/convert.h"
#include "convert/json.h"

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
static int looks_like_onnx(const unsigned char *p, size_t n)
{
    if (n < 3 || p[0] != 0x08 || p[1] == 0 || p[1] >= 0x80)
        return 0;
    switch (p[2]) {
    case 0x12: case 0x1a: case 0x22: case 0x28: case 0x32: case 0x3a: case 0x42: case 0x72:
        return 1;
    default:
        return 0;
    }
}

qs_format qs_detect_format(const char *buf, size_t len)
{
    size_t i = 0;
    if (buf && looks_like_onnx((const unsigned char *)buf, len))
        return QS_FMT_ONNX;
    if (len >= 3 && (unsigned char)buf[0] == 0xEF && (unsigned char)buf[1] == 0xBB &&
        (unsigned char)buf[2] == 0xBF)
        i = 3;
    while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' || buf[i] == '\n'))
        i++;
    if (i >= len)
        return QS_FMT_UNKNOWN;
    const char *p = buf + i;
    size_t n = len - i;
#define STARTS(s) (n >= sizeof(s) - 1 && memcmp(p, s, sizeof(s) - 1) == 0)
    if (STARTS("qs-ensemble"))
        return QS_FMT_CANONICAL;
    if (*p == '{')
        return looks_like_catboost(p, n) ? QS_FMT_CATBOOST : QS_FMT_XGBOOST;
    if (*p == '#') {
        /* Canonical text may open with comments; RankLib opens with `##` lines. */
        size_t k = 0;
        while (k < n && p[k] == '#') {
            const char *nl = memchr(p + k, '\n', n - k);
            if (!nl)
                return QS_FMT_QUICKRANK;
            k = (size_t)(nl - p) + 1;
            while (k < n && (p[k] == ' ' || p[k] == '\t' || p[k] == '\r' || p[k] == '\n'))
                k++;
        }
        if (n - k >= 11 && memcmp(p + k, "qs-ensemble", 11) == 0)
            return QS_FMT_CANONICAL;
        return QS_FMT_QUICKRANK;
    }
    if (*p == '<')
        return QS_FMT_QUICKRANK;
    if (STARTS("tree\n") || STARTS("tree\r\n") || STARTS("version=") || STARTS("num_class="))
        return QS_FMT_LIGHTGBM;
#undef STARTS
    return QS_FMT_UNKNOWN;
}

/* The readers, one file each in this folder (a build without them, make
 * READERS=0, keeps the canonical text's). */
static const qs_reader readers[] = {
#if QS_HAVE_READERS
    { QS_FMT_LIGHTGBM, "LightGBM text", qs_convert_lightgbm },
    { QS_FMT_XGBOOST, "XGBoost JSON or UBJSON", qs_convert_xgboost },
    { QS_FMT_QUICKRANK, "QuickRank/RankLib XML", qs_convert_quickrank },
    { QS_FMT_CATBOOST, "CatBoost JSON", qs_convert_catboost },
    { QS_FMT_ONNX, "ONNX", qs_convert_onnx },
#endif
    { QS_FMT_CANONICAL, "qs canonical ensemble text", qs_model_from_text },
};

qs_model *qs_convert(qs_format fmt, const char *buf, size_t len, qs_error *err)
{
    if (fmt == QS_FMT_UNKNOWN)
        fmt = qs_detect_format(buf, len);
    for (size_t i = 0; i < sizeof readers / sizeof readers[0]; i++)
        if (readers[i].format == fmt)
            return readers[i].read(buf, len, err);
#if !QS_HAVE_READERS
    if (fmt != QS_FMT_UNKNOWN) {
        qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                "this libqs is built without the model readers (make READERS=0): it reads "
                "canonical ensemble text and .qsm files only; convert the model where qs-convert "
                "reads it");
        return NULL;
    }
#endif
    qs_fail(err, QS_ERR_FORMAT, 0,
            "unrecognised model format (expected LightGBM text, XGBoost JSON, "
            "CatBoost JSON, ONNX or QuickRank/RankLib XML)");
    return NULL;
}
