/* source.c: the source libraries' table: one row per qs_source with the
 * facts of that library that the rest of qs reads (model/: names, the
 * readers' defaults, leaf numbers; layout/; score/: transforms, the dense
 * zero band; eval/: presets; the tools and the Python binding through
 * qs_source_get).  A library qs reads for the first time is one row here
 * and its values in qs.h (lib/README.md, "Adding a model reader"); every
 * field must be given (no field of a row is 0 or NULL: test_tables.c). */
#include "common/common.h"

#include <string.h>

static const qs_source_info sources[QS_SRC_COUNT] = {
    /* source, name, library, float bits, absent, feature count, dense input,
     * leaf numbers, qs-eval preset, transforms picked at predict time, qs's
     * feature number of the library's matrix column 0 */
    { QS_SRC_UNKNOWN, "unknown", "the source library", 64, QS_ABSENT_ZERO, QS_FEATURES_USED,
      QS_DENSE_AS_IS, QS_LEAVES_BY_RANK, "", "", 0 },
    { QS_SRC_LIGHTGBM, "lightgbm", "LightGBM", 64, QS_ABSENT_ZERO, QS_FEATURES_DATA,
      QS_DENSE_ZERO_BAND, QS_LEAVES_BY_RANK, "lightgbm", "", 0 },
    { QS_SRC_XGBOOST, "xgboost", "XGBoost", 32, QS_ABSENT_MISSING, QS_FEATURES_DATA,
      QS_DENSE_AS_IS, QS_LEAVES_BY_NODE, "xgboost", "", 0 },
    { QS_SRC_QUICKRANK, "quickrank", "QuickRank/RankLib", 32, QS_ABSENT_ZERO, QS_FEATURES_USED,
      QS_DENSE_AS_IS, QS_LEAVES_BY_RANK, "quickrank", "", 0 },
    /* CatBoost picks Probability (sigmoid), Exponent (its own exp on x86-64,
     * fmath-exp) or exp (the C library's, as its builds elsewhere compute it)
     * at predict time */
    { QS_SRC_CATBOOST, "catboost", "CatBoost", 32, QS_ABSENT_ZERO, QS_FEATURES_USED,
      QS_DENSE_AS_IS, QS_LEAVES_BY_RANK, "", "sigmoid exp fmath-exp", 1 },
    { QS_SRC_ONNX, "onnx", "ONNX Runtime", 32, QS_ABSENT_ZERO, QS_FEATURES_USED, QS_DENSE_AS_IS,
      QS_LEAVES_BY_RANK, "", "", 0 },
};

const qs_source_info *qs_source_get(qs_source s)
{
    return (unsigned)s < QS_SRC_COUNT && sources[s].source == s ? &sources[s] : NULL;
}

const char *qs_source_name(qs_source s)
{
    const qs_source_info *r = qs_source_get(s);
    return r ? r->name : "unknown";
}

int qs_source_from_name(const char *name, size_t len, qs_source *out)
{
    for (unsigned i = 0; i < QS_SRC_COUNT; i++)
        if (strlen(sources[i].name) == len && memcmp(sources[i].name, name, len) == 0) {
            *out = (qs_source)i;
            return 0;
        }
    return -1;
}

int qs_source_picks(const qs_source_info *r, const char *transform)
{
    const size_t n = strlen(transform);
    for (const char *p = r->picked_transforms; n && *p;) {
        const char *e = strchr(p, ' ');
        const size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == n && memcmp(p, transform, n) == 0)
            return 1;
        p += k + (e != NULL);
    }
    return 0;
}
