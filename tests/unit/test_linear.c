/* test_linear.c: unit tests of linear leaves (LightGBM linear trees) and of
 * qs_scorer_truncate / qs_score_leaves.  A small model is built in memory,
 * compiled and loaded; every back end must give the values worked out here
 * from the rule (constant + sum of coefficient * feature, in order, each
 * product and sum rounded to double; the plain leaf value when a feature is
 * NaN).  Then .qsm files with damaged linear records (written by the
 * internal writer, which does not validate) must be refused. */
#include "layout/layout.h"
#include "layout/qsm.h"

#include <math.h>
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

static int same(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

/* Two trees, features 0..2.  Tree 0: x0 <= 0.5 ? L1 : L2, where L1 is
 * linear: -1 + c * x1 (c = 1 + 2^-30: with x1 = c the exact product is
 * 1 + 2^-29 + 2^-60, so a fused multiply-add would keep 2^-60) and L2 is
 * linear with no terms (its constant 7).  Tree 1: one plain leaf 0.25. */
static const double C = 1.0 + 0x1p-30;

static qs_model *build(void)
{
    qs_model *m = qs_model_new(QS_SRC_LIGHTGBM, NULL);
    m->num_features = 3;
    qs_model_add_tree(m, 0, 1.0, NULL);
    qs_model_add_nodes(m, 3, NULL);
    qs_node *n = qs_model_cur_node(m, 0);
    n->kind = QS_NODE_NUM;
    n->feature = 0;
    n->value = 0.5;
    n->left = 1;
    n->right = 2;
    qs_model_cur_node(m, 1)->value = 100.0; /* the plain values: NaN fallback */
    qs_model_cur_node(m, 2)->value = 200.0;
    uint32_t f[2] = { 1, 2 };
    double c[2] = { C, 3.0 };
    qs_model_add_linear(m, 1, -1.0, 1, f, c, NULL);
    qs_model_add_linear(m, 2, 7.0, 0, NULL, NULL, NULL);
    qs_model_add_tree(m, 0, 1.0, NULL);
    qs_model_add_nodes(m, 1, NULL);
    qs_model_cur_node(m, 0)->value = 0.25;
    return m;
}

static qs_scorer *load(const qs_model *m, qs_error *err)
{
    unsigned char *img = NULL;
    size_t n = 0;
    qs_layout *L = qs_layout_build(m, 0, 0, NULL, err);
    if (!L)
        return NULL;
    int rc = qsm_write(m, L, &img, &n, err);
    qs_layout_free(L);
    if (rc)
        return NULL;
    qs_scorer *s = qs_scorer_load(img, n, err);
    free(img);
    return s;
}

/* Score one document on every back end that takes the model. */
static void expect(qs_scorer *s, double x0, double x1, double x2, double want, const char *what)
{
    for (qs_backend b = 0; b < qs_backend_count(); b++) {
        qs_error err;
        qs_error_clear(&err);
        if (qs_scorer_prepare(s, b, &err) != 0)
            continue;
        qs_workspace *w = qs_workspace_new(s, &err);
        CHECK(w != NULL, "workspace: %s", err.msg);
        if (!w)
            return;
        qs_doc_reset(w, QS_ABSENT_ZERO);
        qs_doc_set(w, 0, x0);
        qs_doc_set(w, 1, x1);
        qs_doc_set(w, 2, x2);
        double got = NAN;
        CHECK(qs_score_doc(s, w, b, &got, &err) == 0, "%s: %s", qs_backend_name(b), err.msg);
        CHECK(same(got, want), "%s, back end %s: %a, expected %a", what, qs_backend_name(b), got,
              want);
        qs_workspace_free(w);
    }
}

static void refused(qs_model *m, const char *part, const char *what)
{
    qs_error err;
    qs_error_clear(&err);
    qs_scorer *s = load(m, &err);
    CHECK(s == NULL && err.code == QS_ERR_FORMAT && strstr(err.msg, part),
          "%s: loaded, or refused with '%s' (want '%s')", what, err.msg, part);
    qs_scorer_free(s);
    qs_model_free(m);
}

int main(void)
{
    qs_error err;
    qs_model *m = build();
    qs_error_clear(&err);
    CHECK(qs_model_link_linear(m, &err) == 0 && qs_model_validate(m, &err) == 0, "valid: %s",
          err.msg);
    qs_scorer *s = load(m, &err);
    CHECK(s != NULL, "load: %s", err.msg);
    if (s) {
        /* -1 + C * C, the product rounded first: exactly 2^-29; + 0.25 */
        expect(s, 0.0, C, 5.0, 0x1p-29 + 0.25, "linear leaf, no fused multiply-add");
        expect(s, 0.0, NAN, 5.0, 100.25, "NaN feature: the plain value");
        expect(s, 1.0, NAN, NAN, 7.25, "no terms: the constant, NaN elsewhere ignored");
        /* leaves: LightGBM numbering, the rank among the tree's leaves */
        qs_workspace *w = qs_workspace_new(s, &err);
        uint32_t lv[4];
        for (int d = 0; d < 2 && w; d++) {
            qs_workspace_select(w, (uint32_t)d);
            qs_doc_reset(w, QS_ABSENT_ZERO);
            qs_doc_set(w, 0, d ? 1.0 : 0.0);
        }
        for (qs_backend b = 0; w && b < qs_backend_count(); b++) {
            memset(lv, 0xFF, sizeof lv);
            CHECK(qs_score_leaves(s, w, b, 2, lv, &err) == 0, "leaves: %s", err.msg);
            CHECK(lv[0] == 0 && lv[1] == 0 && lv[2] == 1 && lv[3] == 0,
                  "leaves (%s): %u %u %u %u", qs_backend_name(b), lv[0], lv[1], lv[2], lv[3]);
        }
        CHECK(w && qs_score_leaves(s, w, QS_BACKEND_AUTO, qs_workspace_slots(w) + 1, lv, &err) != 0 &&
                  err.code == QS_ERR_ARG,
              "leaves: a batch beyond the slots is refused");
        qs_workspace_free(w);
        /* truncation: 0 refused; 1 iteration keeps tree 0 only; 5 keeps all */
        CHECK(qs_scorer_iterations(s) == 2, "iterations %llu",
              (unsigned long long)qs_scorer_iterations(s));
        CHECK(qs_scorer_truncate(s, 0, &err) != 0 && err.code == QS_ERR_ARG, "0 iterations");
        CHECK(qs_scorer_truncate(s, 5, &err) == 0 && qs_scorer_iterations(s) == 2, "5 iterations");
        CHECK(qs_scorer_truncate(s, 1, &err) == 0 && qs_scorer_iterations(s) == 1, "1 iteration");
        expect(s, 0.0, C, 5.0, 0x1p-29, "truncated to tree 0");
        qs_scorer_free(s);
    }
    qs_model_free(m);

    /* Damaged linear records, as a .qsm: each refused on load. */
    m = build();
    qs_model_link_linear(m, NULL);
    m->linear[0].node = 0; /* the root: not a leaf */
    refused(m, "not a leaf", "linear model on an internal node");
    m = build();
    qs_model_link_linear(m, NULL);
    m->linear[0].node = 2;
    m->linear[1].node = 1; /* out of order */
    refused(m, "out of order", "linear models out of node order");
    m = build();
    qs_model_link_linear(m, NULL);
    m->linear[0].nterms = 2; /* the counts no longer add up to the terms */
    refused(m, "term counts do not add up", "term counts");
    m = build();
    qs_model_link_linear(m, NULL);
    m->lin_feature[0] = 3;
    refused(m, "out of range", "feature beyond the model");
    m = build();
    qs_model_link_linear(m, NULL);
    m->trees[0].weight = 0.5;
    refused(m, "must have weight 1", "weight other than 1");

    printf("test_linear: %d checks, %d failures\n", checks, failures);
    return failures != 0;
}
