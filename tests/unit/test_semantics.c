/* test_semantics.c: unit tests of the exact comparison rules.  Each case
 * builds a small model in memory, compiles it to a .qsm image, loads it, and
 * checks every back end against the expected branch, written out here from
 * the rules in the source libraries' documentation (not from the code). */
#include "layout/layout.h"
#include "layout/qsm.h"

#include <float.h>
#include <stdio.h>
#include <string.h>

static int failures, checks;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        checks++;                                                              \
        if (!(cond)) {                                                         \
            failures++;                                                        \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);               \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
        }                                                                      \
    } while (0)

static qs_model *new_model(qs_source src, uint32_t nfeat)
{
    qs_model *m = qs_model_new(src, NULL);
    m->num_features = nfeat;
    switch (src) {
    case QS_SRC_XGBOOST:
        m->cmp = QS_CMP_LT;
        m->float_precision = m->float_accumulate = m->absent_missing = 1;
        break;
    case QS_SRC_QUICKRANK:
        m->cmp = QS_CMP_LE;
        m->float_precision = 1;
        break;
    default:
        m->cmp = QS_CMP_LE;
        break;
    }
    return m;
}

/* One split on feature 1: left leaf 1.0, right leaf 2.0. */
static qs_model *stump(qs_source src, double t, int miss, int default_left)
{
    qs_model *m = new_model(src, 2);
    qs_model_add_tree(m, 0, 1.0, NULL);
    qs_model_add_nodes(m, 3, NULL);
    qs_node *n = qs_model_cur_node(m, 0);
    n->kind = QS_NODE_NUM;
    n->feature = 1;
    n->value = t;
    n->miss = (uint8_t)miss;
    n->default_left = (uint8_t)default_left;
    n->left = 1;
    n->right = 2;
    qs_model_cur_node(m, 1)->value = 1.0;
    qs_model_cur_node(m, 2)->value = 2.0;
    return m;
}

static qs_scorer *compile_load(const qs_model *m)
{
    unsigned char *img;
    size_t n;
    qs_error err;
    if (qs_compile(m, NULL, &img, &n, &err) != 0) {
        fprintf(stderr, "compile: %s\n", err.msg);
        exit(2);
    }
    qs_scorer *s = qs_scorer_load(img, n, &err);
    free(img);
    if (!s) {
        fprintf(stderr, "load: %s\n", err.msg);
        exit(2);
    }
    /* Every back end this machine runs that takes the model. */
    for (qs_backend b = 0; b < qs_backend_count(); b++)
        if (qs_scorer_prepare(s, b, &err) != 0 && err.code != QS_ERR_UNSUPPORTED &&
            err.code != QS_ERR_DEVICE) {
            fprintf(stderr, "prepare %s: %s\n", qs_backend_name(b), err.msg);
            exit(2);
        }
    return s;
}

/* Score a LETOR line with every back end; all must agree.  Returns the score. */
static double score_line(qs_scorer *s, const char *line, qs_absent absent)
{
    qs_workspace *w = qs_workspace_new(s, NULL);
    qs_letor_line meta;
    int is_doc;
    qs_error err;
    if (qs_letor_parse(s, w, absent, line, strlen(line), &meta, &is_doc, &err) != 0 || !is_doc) {
        fprintf(stderr, "parse '%s': %s\n", line, err.msg);
        exit(2);
    }
    double ref[8], got[8];
    const qs_backend walk = qs_backend_find("walk");
    CHECK(qs_score_doc(s, w, walk, ref, &err) == 0, "walk failed: %s", err.msg);
    for (qs_backend b = 0; b < qs_backend_count(); b++) {
        if (b == walk || !qs_scorer_prepared(s, b))
            continue;
        CHECK(qs_score_doc(s, w, b, got, &err) == 0, "back end %s failed: %s", qs_backend_name(b),
              err.msg);
        CHECK(memcmp(ref, got, sizeof(double) * qs_scorer_model(s)->num_classes) == 0,
              "back end %s differs from walk on '%s': %.17g vs %.17g", qs_backend_name(b), line,
              got[0], ref[0]);
    }
    qs_workspace_free(w);
    return ref[0];
}

/* Expect the stump to send `value` left (1) or right (0). */
static void expect(qs_source src, double t, int miss, int dl, const char *value, int left,
                   const char *why)
{
    qs_model *m = stump(src, t, miss, dl);
    qs_scorer *s = compile_load(m);
    char line[128];
    snprintf(line, sizeof line, "0 qid:1 1:%s", value);
    double got = score_line(s, line, QS_ABSENT_DEFAULT);
    CHECK(got == (left ? 1.0 : 2.0), "%s: t=%a value %s went %s", why, t, value,
          got == 1.0 ? "left" : "right");
    qs_scorer_free(s);
    qs_model_free(m);
}

static void fmt_hex(char *b, size_t n, double v) { snprintf(b, n, "%a", v); }

static void test_threshold_boundaries(void)
{
    char up[64], dn[64];
    /* LightGBM: x <= t in double. */
    double t = 0.8600000000000001;
    fmt_hex(up, sizeof up, nextafter(t, INFINITY));
    fmt_hex(dn, sizeof dn, nextafter(t, -INFINITY));
    expect(QS_SRC_LIGHTGBM, t, QS_MISS_NONE, 0, "0x1.b851eb851eb86p-1", 1, "lgb equal");
    expect(QS_SRC_LIGHTGBM, t, QS_MISS_NONE, 0, up, 0, "lgb one ulp above");
    expect(QS_SRC_LIGHTGBM, t, QS_MISS_NONE, 0, dn, 1, "lgb one ulp below");
    expect(QS_SRC_LIGHTGBM, t, QS_MISS_NONE, 0, "0.86", 1, "lgb 0.86 < 0.8600000000000001");
    /* XGBoost: x < t in float32. */
    float tf = 0.503165f;
    fmt_hex(up, sizeof up, (double)nextafterf(tf, INFINITY));
    fmt_hex(dn, sizeof dn, (double)nextafterf(tf, -INFINITY));
    expect(QS_SRC_XGBOOST, tf, QS_MISS_NAN, 1, "0.503165", 0, "xgb equal goes right");
    expect(QS_SRC_XGBOOST, tf, QS_MISS_NAN, 1, up, 0, "xgb ulp above");
    expect(QS_SRC_XGBOOST, tf, QS_MISS_NAN, 1, dn, 1, "xgb ulp below");
    /* QuickRank: x <= t in float32; the text is rounded to float32 first. */
    float tq = 0.779999971f;
    fmt_hex(up, sizeof up, (double)nextafterf(tq, INFINITY));
    fmt_hex(dn, sizeof dn, (double)nextafterf(tq, -INFINITY));
    expect(QS_SRC_QUICKRANK, tq, QS_MISS_NAN, 0, "0.78", 1, "qr 0.78 parsed as float equals t");
    expect(QS_SRC_QUICKRANK, tq, QS_MISS_NAN, 0, up, 0, "qr ulp above");
    expect(QS_SRC_QUICKRANK, tq, QS_MISS_NAN, 0, dn, 1, "qr ulp below");
}

static void test_signed_zero_inf_nan(void)
{
    /* <= 0: both zeros go left; < 0: both zeros go right. */
    expect(QS_SRC_LIGHTGBM, 0.0, QS_MISS_NONE, 0, "-0", 1, "lgb -0 <= 0");
    expect(QS_SRC_LIGHTGBM, -0.0, QS_MISS_NONE, 0, "0", 1, "lgb 0 <= -0");
    expect(QS_SRC_XGBOOST, 0.0, QS_MISS_NAN, 1, "-0.0", 0, "xgb -0 < 0 is false");
    expect(QS_SRC_XGBOOST, -0.0, QS_MISS_NAN, 1, "0", 0, "xgb 0 < -0 is false");
    expect(QS_SRC_LIGHTGBM, 1e300, QS_MISS_NONE, 0, "inf", 0, "lgb +inf right");
    expect(QS_SRC_LIGHTGBM, -1e300, QS_MISS_NONE, 0, "-inf", 1, "lgb -inf left");
    expect(QS_SRC_XGBOOST, 1e30f, QS_MISS_NAN, 1, "inf", 0, "xgb +inf right");
    expect(QS_SRC_XGBOOST, -1e30f, QS_MISS_NAN, 0, "-inf", 1, "xgb -inf left");
    expect(QS_SRC_QUICKRANK, 3.0f, QS_MISS_NAN, 0, "Infinity", 0, "qr +inf right");
    /* NaN: None -> 0.0 then compare; Zero -> default; NaN -> default. */
    expect(QS_SRC_LIGHTGBM, 0.5, QS_MISS_NONE, 0, "nan", 1, "lgb None: NaN acts as 0 (left)");
    expect(QS_SRC_LIGHTGBM, -0.5, QS_MISS_NONE, 1, "nan", 0, "lgb None: NaN acts as 0 (right)");
    expect(QS_SRC_LIGHTGBM, -0.5, QS_MISS_ZERO, 1, "nan", 1, "lgb Zero: NaN to default left");
    expect(QS_SRC_LIGHTGBM, 0.5, QS_MISS_ZERO, 0, "NaN", 0, "lgb Zero: NaN to default right");
    expect(QS_SRC_LIGHTGBM, -0.5, QS_MISS_NAN, 1, "nan", 1, "lgb NaN: default left");
    expect(QS_SRC_LIGHTGBM, 0.5, QS_MISS_NAN, 0, "nan", 0, "lgb NaN: default right");
    expect(QS_SRC_XGBOOST, 0.5f, QS_MISS_NAN, 0, "nan", 0, "xgb NaN default right");
    expect(QS_SRC_XGBOOST, 0.5f, QS_MISS_NAN, 1, "-nan", 1, "xgb NaN default left");
    expect(QS_SRC_QUICKRANK, 0.5f, QS_MISS_NAN, 0, "nan", 0, "qr NaN compares false: right");
}

static void test_zero_band(void)
{
    /* The band is |x| <= (double)1e-35f = 1.0000000180025095e-35. */
    const char *in_band[] = { "1e-35", "-1e-35", "0", "-0", "1.0000000180025095e-35", "1e-300" };
    const char *out_band[] = { "1.00000002e-35", "-2e-35", "1e-34" };
    for (size_t i = 0; i < sizeof in_band / sizeof *in_band; i++) {
        /* Zero type: default side; threshold -1 would send it right otherwise. */
        expect(QS_SRC_LIGHTGBM, -1.0, QS_MISS_ZERO, 1, in_band[i], 1, "Zero type: band -> default");
        expect(QS_SRC_LIGHTGBM, 1.0, QS_MISS_ZERO, 0, in_band[i], 0, "Zero type: band -> default R");
        /* None and NaN types compare tiny values normally. */
        expect(QS_SRC_LIGHTGBM, -1.0, QS_MISS_NONE, 1, in_band[i], 0, "None type: compare");
        expect(QS_SRC_LIGHTGBM, -1.0, QS_MISS_NAN, 1, in_band[i], 0, "NaN type: compare");
    }
    for (size_t i = 0; i < sizeof out_band / sizeof *out_band; i++)
        expect(QS_SRC_LIGHTGBM, -1.0, QS_MISS_ZERO, 1, out_band[i], 0, "Zero type: outside band");
    /* A threshold at the band edge (LightGBM writes 1.0000000180025095e-35). */
    double edge = (double)1e-35f;
    expect(QS_SRC_LIGHTGBM, edge, QS_MISS_NONE, 0, "1e-35", 1, "None: 1e-35 <= edge");
    expect(QS_SRC_LIGHTGBM, edge, QS_MISS_NONE, 0, "1.1e-35", 0, "None: 1.1e-35 > edge");
    expect(QS_SRC_LIGHTGBM, edge, QS_MISS_NAN, 0, "-1e-35", 1, "NaN type: -1e-35 <= edge");
}

/* Absent vs explicit 0 vs NaN, with each source's default for absent. */
static void test_absent(void)
{
    struct { qs_source src; int miss, dl; double t; int absent_left, zero_left, nan_left; } c[] = {
        /* LightGBM absent = 0.0: with Zero type 0 goes to the default side. */
        { QS_SRC_LIGHTGBM, QS_MISS_ZERO, 0, -1.0, 0, 0, 0 },
        { QS_SRC_LIGHTGBM, QS_MISS_NAN, 1, -1.0, 0, 0, 1 },
        { QS_SRC_LIGHTGBM, QS_MISS_NONE, 1, 0.5, 1, 1, 1 },
        /* XGBoost absent = missing: default side; explicit 0 compares. */
        { QS_SRC_XGBOOST, QS_MISS_NAN, 1, -1.0f, 1, 0, 1 },
        { QS_SRC_XGBOOST, QS_MISS_NAN, 0, 1.0f, 0, 1, 0 },
        /* QuickRank absent = 0; NaN compares false and goes right. */
        { QS_SRC_QUICKRANK, QS_MISS_NAN, 0, 0.5f, 1, 1, 0 },
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        qs_model *m = stump(c[i].src, c[i].t, c[i].miss, c[i].dl);
        qs_scorer *s = compile_load(m);
        double a = score_line(s, "1 qid:7", QS_ABSENT_DEFAULT);
        double z = score_line(s, "1 qid:7 1:0", QS_ABSENT_DEFAULT);
        double n = score_line(s, "1 qid:7 1:nan", QS_ABSENT_DEFAULT);
        CHECK(a == (c[i].absent_left ? 1.0 : 2.0), "case %zu: absent", i);
        CHECK(z == (c[i].zero_left ? 1.0 : 2.0), "case %zu: explicit 0", i);
        CHECK(n == (c[i].nan_left ? 1.0 : 2.0), "case %zu: NaN", i);
        /* The override flips absent to the other meaning. */
        double zo = score_line(s, "1 qid:7", QS_ABSENT_ZERO);
        double mo = score_line(s, "1 qid:7", QS_ABSENT_MISSING);
        CHECK(zo == z, "case %zu: --absent zero equals explicit 0", i);
        CHECK(mo == n, "case %zu: --absent missing equals NaN", i);
        /* A repeated id: the last one wins. */
        CHECK(score_line(s, "1 1:nan 1:0", QS_ABSENT_DEFAULT) == z, "case %zu: last id wins", i);
        qs_scorer_free(s);
        qs_model_free(m);
    }
}

/* Categorical nodes: LightGBM (members left, trunc) and XGBoost (members
 * right, negative invalid). Set {1, 33}. */
static void test_categorical(void)
{
    for (int xgb = 0; xgb < 2; xgb++) {
        qs_model *m = new_model(xgb ? QS_SRC_XGBOOST : QS_SRC_LIGHTGBM, 2);
        qs_model_add_tree(m, 0, 1.0, NULL);
        qs_model_add_nodes(m, 3, NULL);
        uint32_t words[2] = { 1u << 1, 1u << 1 };
        int64_t off = qs_model_add_cat_words(m, words, 2, NULL);
        qs_node *n = qs_model_cur_node(m, 0);
        n->kind = QS_NODE_CAT;
        n->feature = 1;
        n->miss = QS_MISS_NAN;
        n->default_left = xgb ? 1 : 0;
        n->flags = xgb ? QS_CAT_NEG_STRICT : QS_CAT_MEMBERS_LEFT;
        n->cat_off = (uint32_t)off;
        n->cat_nwords = 2;
        n->left = 1;
        n->right = 2;
        qs_model_cur_node(m, 1)->value = 1.0;
        qs_model_cur_node(m, 2)->value = 2.0;
        qs_scorer *s = compile_load(m);
        double mem = xgb ? 2.0 : 1.0, non = xgb ? 1.0 : 2.0;
        CHECK(score_line(s, "0 1:1", QS_ABSENT_DEFAULT) == mem, "cat %d: 1 is a member", xgb);
        CHECK(score_line(s, "0 1:1.9", QS_ABSENT_DEFAULT) == mem, "cat %d: 1.9 truncates to 1", xgb);
        CHECK(score_line(s, "0 1:33", QS_ABSENT_DEFAULT) == mem, "cat %d: 33 (second word)", xgb);
        CHECK(score_line(s, "0 1:2", QS_ABSENT_DEFAULT) == non, "cat %d: 2 not a member", xgb);
        CHECK(score_line(s, "0 1:64", QS_ABSENT_DEFAULT) == non, "cat %d: beyond the set", xgb);
        CHECK(score_line(s, "0 1:1e10", QS_ABSENT_DEFAULT) == non, "cat %d: huge", xgb);
        CHECK(score_line(s, "0 1:-1", QS_ABSENT_DEFAULT) == non, "cat %d: negative", xgb);
        /* -0.5 truncates to 0 for LightGBM (category 0, not a member), and is
         * invalid for XGBoost: both non-member here. */
        CHECK(score_line(s, "0 1:-0.5", QS_ABSENT_DEFAULT) == non, "cat %d: -0.5", xgb);
        CHECK(score_line(s, "0 1:nan", QS_ABSENT_DEFAULT) == (xgb ? 1.0 : 2.0),
              "cat %d: NaN goes to the default side", xgb);
        qs_scorer_free(s);
        qs_model_free(m);
    }
}

/* A tiny deterministic generator, so failures reproduce. */
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}
static double rnd_value(void) { return (double)(rnd() % 1000) / 1000.0; }

/* Random tree with `leaves` leaves built by splitting random leaves. */
static void random_tree(qs_model *m, uint32_t leaves, uint32_t nfeat, int miss_mix)
{
    uint32_t nn = 2 * leaves - 1;
    qs_model_add_tree(m, 0, 1.0, NULL);
    qs_model_add_nodes(m, nn, NULL);
    uint32_t *leafs = malloc(sizeof *leafs * leaves), nl = 1, used = 1;
    leafs[0] = 0;
    qs_model_cur_node(m, 0)->kind = QS_NODE_LEAF;
    while (nl < leaves) {
        uint32_t k = rnd() % nl, id = leafs[k];
        qs_node *n = qs_model_cur_node(m, id);
        n->kind = QS_NODE_NUM;
        n->feature = 1 + rnd() % (nfeat - 1);
        n->value = rnd_value();
        n->miss = (uint8_t)(miss_mix ? rnd() % 3 : QS_MISS_NONE);
        n->default_left = (uint8_t)(rnd() & 1);
        n->left = (int32_t)used++;
        n->right = (int32_t)used++;
        leafs[k] = (uint32_t)n->left;
        leafs[nl++] = (uint32_t)n->right;
    }
    for (uint32_t i = 0; i < nl; i++) {
        qs_node *n = qs_model_cur_node(m, leafs[i]);
        n->kind = QS_NODE_LEAF;
        n->value = (double)(rnd() % 100000) / 997.0;
    }
    free(leafs);
}

static void random_docs_agree(qs_scorer *s, uint32_t nfeat, int ndocs, const char *what)
{
    char line[4096];
    for (int d = 0; d < ndocs; d++) {
        int k = snprintf(line, sizeof line, "0 qid:1");
        for (uint32_t f = 1; f < nfeat; f++) {
            uint32_t r = rnd() % 10;
            if (r == 0)
                continue; /* absent */
            if (r == 1)
                k += snprintf(line + k, sizeof line - (size_t)k, " %u:nan", f);
            else if (r == 2)
                k += snprintf(line + k, sizeof line - (size_t)k, " %u:0", f);
            else
                k += snprintf(line + k, sizeof line - (size_t)k, " %u:%.3f", f, rnd_value());
        }
        score_line(s, line, (d & 1) ? QS_ABSENT_MISSING : QS_ABSENT_DEFAULT);
    }
    (void)what;
}

static void test_big_tree(void)
{
    qs_model *m = new_model(QS_SRC_LIGHTGBM, 12);
    random_tree(m, 200, 12, 1);
    random_tree(m, 70, 12, 1);
    random_tree(m, 7, 12, 0);
    qs_scorer *s = compile_load(m);
    qs_layout *L = qs_layout_build(m, 0, 0, NULL, NULL);
    CHECK(L->nblocks >= 1 && L->blocks[0].width == 0 && L->blocks[0].words == 4,
          "200-leaf tree uses 4-word masks");
    qs_layout_free(L);
    int before = failures;
    random_docs_agree(s, 12, 2000, "200-leaf tree");
    CHECK(failures == before, "200-leaf tree: QS equals walk on 2000 documents");
    qs_scorer_free(s);
    qs_model_free(m);
}

/* An oblivious model whose trees have depths 1, 2 and 3. */
static void add_oblivious(qs_model *m, uint32_t depth, uint32_t nfeat)
{
    uint32_t nn = (2u << depth) - 1;
    qs_model_add_tree(m, 0, 0.1, NULL);
    qs_model_add_nodes(m, nn, NULL);
    for (uint32_t lev = 0, first = 0; lev <= depth; lev++, first = 2 * first + 1) {
        uint32_t f = 1 + rnd() % (nfeat - 1);
        double t = rnd_value();
        for (uint32_t i = first; i < 2 * first + 1; i++) {
            qs_node *n = qs_model_cur_node(m, i);
            if (lev == depth) {
                n->kind = QS_NODE_LEAF;
                n->value = (double)(rnd() % 1000) / 7.0;
            } else {
                n->kind = QS_NODE_NUM;
                n->feature = f;
                n->value = (float)t;
                n->miss = QS_MISS_NAN;
                n->left = (int32_t)(2 * i + 1);
                n->right = (int32_t)(2 * i + 2);
            }
        }
    }
}

static void test_oblivious(void)
{
    qs_model *m = new_model(QS_SRC_QUICKRANK, 9);
    for (int i = 0; i < 30; i++)
        add_oblivious(m, 1 + (uint32_t)(i % 3), 9);
    qs_model_info info;
    qs_model_get_info(m, &info);
    CHECK(info.oblivious == 1, "model is detected as oblivious");
    qs_layout *L = qs_layout_build(m, 0, 0, NULL, NULL);
    CHECK(L->nblocks == 1 && L->blocks[0].kind == QS_BLOCK_OMEGA, "one QS-Omega block");
    qs_layout_free(L);
    qs_scorer *s = compile_load(m);
    int before = failures;
    random_docs_agree(s, 9, 2000, "oblivious");
    CHECK(failures == before, "QS-Omega equals walk on 2000 documents");
    qs_scorer_free(s);
    qs_model_free(m);
}

/* Float32 accumulation in tree order from the base margin. */
static void test_float_accumulation(void)
{
    qs_model *m = new_model(QS_SRC_XGBOOST, 2);
    m->base[0] = 0.5f;
    float leaves[] = { 1e8f, 1.0f, -1e8f, 0.25f };
    for (int i = 0; i < 4; i++) {
        qs_model_add_tree(m, 0, 1.0, NULL);
        qs_model_add_nodes(m, 1, NULL);
        qs_model_cur_node(m, 0)->value = leaves[i];
    }
    qs_scorer *s = compile_load(m);
    float want = 0.5f;
    for (int i = 0; i < 4; i++)
        want = want + leaves[i];
    CHECK(score_line(s, "0", QS_ABSENT_DEFAULT) == (double)want, "float32 sum in tree order");
    CHECK(qs_score_digits(s) == 9, "float models print 9 digits");
    qs_scorer_free(s);
    qs_model_free(m);
}

/* The number parser's fast path must equal strtod/strtof on every input. */
static void test_parse_numbers(void)
{
    char buf[64];
    const char *fixed[] = { "0.974510", "1.000000", "-0", "+2.50", "1e-3", "0.1", "16777217",
                            "9007199254740993", "1e22", "1e23", "0.86", "3.4028235e38",
                            "1.5e-45", "123456789012345678901", "7.038531e-26", "1E5",
                            ".5", "5.", "0.000001", "4.9406564584124654e-324" };
    int bad = 0;
    for (int k = 0; k < 2000000; k++) {
        const char *t;
        if (k < (int)(sizeof fixed / sizeof *fixed)) {
            t = fixed[k];
        } else {
            /* random digits, a dot somewhere, sometimes an exponent */
            int nd = 1 + (int)(rnd() % 20), dotpos = (int)(rnd() % (unsigned)(nd + 1)), j = 0;
            if (rnd() % 4 == 0)
                buf[j++] = '-';
            for (int i = 0; i < nd; i++) {
                if (i == dotpos)
                    buf[j++] = '.';
                buf[j++] = (char)('0' + rnd() % 10);
            }
            if (rnd() % 3 == 0)
                j += snprintf(buf + j, sizeof buf - (size_t)j, "e%d", (int)(rnd() % 60) - 30);
            buf[j] = '\0';
            t = buf;
        }
        for (int fp = 0; fp < 2; fp++) {
            double got, want = fp ? (double)strtof(t, NULL) : strtod(t, NULL);
            if (qs_parse_number(fp, t, strlen(t), &got) != 0 ||
                memcmp(&got, &want, sizeof got) != 0) {
                if (bad++ < 5)
                    fprintf(stderr, "parse '%s' (%s): got %a want %a\n", t, fp ? "float" : "double",
                            got, want);
            }
        }
    }
    CHECK(bad == 0, "number parser equals strtod/strtof on 4,000,000 inputs (%d differ)", bad);
}

int main(void)
{
    test_parse_numbers();
    test_threshold_boundaries();
    test_signed_zero_inf_nan();
    test_zero_band();
    test_absent();
    test_categorical();
    test_big_tree();
    test_oblivious();
    test_float_accumulation();
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
