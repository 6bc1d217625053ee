/* noreaders.c: what a build without the model readers (make READERS=0)
 * has in their place.  The readers' table (convert.c) keeps every row, so
 * a foreign model is still recognised and named; reading it is refused
 * (QS_ERR_UNSUPPORTED), and no writer's version or category list is found
 * (the readers read them). */
#include "convert/convert.h"

static qs_model *refuse(const char *what, qs_error *err)
{
    qs_fail(err, QS_ERR_UNSUPPORTED, 0,
            "this libqs is built without the model readers (make READERS=0): it reads canonical "
            "ensemble text and .qsm files only, not %s; convert the model where qs-convert "
            "reads it", what);
    return NULL;
}

qs_model *qs_convert_lightgbm(const char *buf, size_t len, qs_error *err)
{
    return refuse("LightGBM text", err);
}

qs_model *qs_convert_xgboost(const char *buf, size_t len, qs_error *err)
{
    return refuse("XGBoost JSON, UBJSON or binary", err);
}

qs_model *qs_convert_quickrank(const char *buf, size_t len, qs_error *err)
{
    return refuse("QuickRank/RankLib XML", err);
}

qs_model *qs_convert_catboost(const char *buf, size_t len, qs_error *err)
{
    return refuse("CatBoost JSON", err);
}

qs_model *qs_convert_onnx(const char *buf, size_t len, qs_error *err)
{
    return refuse("ONNX", err);
}

int qs_version_lightgbm(const char *buf, size_t len, char *out, size_t cap) { return -1; }

int qs_version_xgboost(const char *buf, size_t len, char *out, size_t cap) { return -1; }

int qs_source_version(const char *buf, size_t len, char *out, size_t cap)
{
    if (out && cap)
        out[0] = '\0';
    return -1;
}

long long qs_source_categories(const char *buf, size_t len, qs_category_fn fn, void *ctx)
{
    return 0;
}

long long qs_source_list_categories(const char *buf, size_t len, qs_category_fn fn, void *ctx,
                                    qs_error *err)
{
    return 0;
}

long long qs_source_list_features(const char *buf, size_t len, qs_feature_fn fn, void *ctx,
                                  qs_error *err)
{
    return 0;
}
