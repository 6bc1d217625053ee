/* fuzz_common.h: oracles shared by the fuzz targets: error-record checks, the text round trip, compile-and-load, and "every back end agrees with the walk" on fixed documents. */
#ifndef QS_FUZZ_COMMON_H
#define QS_FUZZ_COMMON_H

/* The targets look inside the model (node thresholds make the documents that
 * reach every branch), so they use the library's internal header. */
#include "model/model.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The libFuzzer entry point; the replay driver calls it too. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant is a bug in the library, not in the input: abort, so
 * libFuzzer keeps the input and the replay driver (and `make check`) fails. */
#define FUZZ_FAIL(...)                                                     \
    do {                                                                   \
        fprintf(stderr, "fuzz: invariant broken (%s:%d): ", __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                                      \
        fputc('\n', stderr);                                               \
        abort();                                                           \
    } while (0)

/* Scoring a model costs workspace slots x features doubles; beyond this the
 * check is skipped rather than asking for gigabytes a 100-byte input declared
 * (finding F4 is fixed by the cap in qs_workspace_new; a 2^24-feature vector is still too slow to fill per input while fuzzing). */
#define FUZZ_MAX_WS_DOUBLES ((uint64_t)1 << 22)
/* A model whose category sets take more than this many 32-bit words (4 MiB;
 * the library allows 2^26, 256 MiB: one category near 2^31 in a 7 KB text
 * model) is validated and round-tripped as text, but not compiled, loaded
 * and scored: copying and checking 2^26 words under ASan takes longer than
 * libFuzzer's timeout, which then reports a slow input, not a bug (the first
 * long campaign's one timeout, in the text target; the plain build loads
 * that model in 1 s and 400 MB, within the README's limits). */
#define FUZZ_MAX_CAT_WORDS ((uint64_t)1 << 20)
/* Only the first nodes of a model shape the fixed documents: enough to reach
 * every branch of a small model, bounded for a large one. */
#define FUZZ_MAX_DOC_NODES 4096u
/* 16 + 4 + 1: VPRED's interleaved block, then its remainders by 4 and by 1. */
#define FUZZ_NDOCS 21u

/* The libFuzzer build checks each input along one of a check's
 * alternatives (the default or the reversed layout; relaid out or not; one
 * absent rule), picked by a hash of the input's bytes, so the same input
 * always takes the same one and a campaign reaches every alternative over
 * many inputs at a fraction of the cost; the replay driver (`make check`,
 * a crash file) takes every alternative of every input.  fuzz_begin() at
 * the top of LLVMFuzzerTestOneInput. */
static uint32_t fuzz_hash;
static int fuzz_every = 1;

static inline void fuzz_begin(const uint8_t *data, size_t size)
{
#ifdef QS_LIBFUZZER
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    fuzz_hash = h;
    fuzz_every = 0;
#else
    (void)data;
    (void)size;
#endif
}

/* Whether this input takes alternative k of n of the check named by salt. */
static inline int fuzz_takes(uint32_t salt, uint32_t k, uint32_t n)
{
    if (fuzz_every)
        return 1;
    uint32_t h = fuzz_hash ^ (salt * 0x9E3779B9u);
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    return h % n == k;
}

/* A failing call must leave a usable error record: a status from the enum
 * and a NUL-terminated, non-empty message. */
static inline void fuzz_check_err(const qs_error *err, const char *what)
{
    if (err->code <= QS_OK || err->code > QS_ERR_ARG)
        FUZZ_FAIL("%s failed with status %d", what, (int)err->code);
    if (memchr(err->msg, '\0', sizeof err->msg) == NULL || err->msg[0] == '\0')
        FUZZ_FAIL("%s failed without a message", what);
}

/* Equal as the bits of a double, except that any NaN equals any NaN (the
 * format does not keep a NaN's sign or payload). */
static inline int fuzz_same(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Round a value to the model's precision, as a document reader would
 * (without a float conversion that overflows). */
static inline double fuzz_round(const qs_model *m, double v)
{
    if (!m->float_precision || !isfinite(v))
        return v;
    if (v > FLT_MAX)
        return FLT_MAX;
    if (v < -FLT_MAX)
        return -FLT_MAX;
    return (double)(float)v;
}

static inline double fuzz_next(const qs_model *m, double v, double dir)
{
    if (m->float_precision && fabs(v) <= FLT_MAX)
        return (double)nextafterf((float)v, (float)dir);
    return nextafter(v, dir);
}

#if defined(__clang__) && __clang_major__ >= 13
#define FUZZ_NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else
#define FUZZ_NO_COVERAGE
#endif

/* Fixed document d as a list of (feature, value) sets: the absent rule
 * cycles through default/zero/missing; documents 0-2 set nothing; the
 * others set, for each internal node, its feature to the threshold, just
 * above or below it, a category near a bitset edge, or a special value (±0,
 * the zero band, ±inf, NaN, huge), picked by a hash of (node, d).  Made
 * once per scorer check (fuzz_docs_make), replayed into a slot by
 * fuzz_fill_doc for every back end. */
typedef struct fuzz_docs {
    uint32_t n[FUZZ_NDOCS];
    uint32_t feat[FUZZ_NDOCS][FUZZ_MAX_DOC_NODES];
    double val[FUZZ_NDOCS][FUZZ_MAX_DOC_NODES];
} fuzz_docs;
static fuzz_docs fuzz_doc_sets;

FUZZ_NO_COVERAGE
static inline void fuzz_docs_make(const qs_model *m)
{
    static const double pat[] = { 0.0,   -0.0,   1e-36, -1e-36, 1e-35, 1.0,   -1.0,
                                  0.5,   -0.5,   -0.99, 2.0,    3.0,   31.0,  32.0,
                                  33.0,  63.0,   64.0,  4096.0, 1e10,  -1e10, 1e-45,
                                  -1e-45, 2.5,   1e300 };
    const size_t npat = sizeof pat / sizeof pat[0];
    uint64_t nn = m->num_nodes < FUZZ_MAX_DOC_NODES ? m->num_nodes : FUZZ_MAX_DOC_NODES;
    for (unsigned d = 0; d < FUZZ_NDOCS; d++) {
        uint32_t k = 0;
        for (uint64_t i = 0; d >= 3 && i < nn; i++) {
            const qs_node *n = &m->nodes[i];
            if (n->kind == QS_NODE_LEAF)
                continue;
            uint32_t h = (uint32_t)(i * 2654435761u) ^ (d * 0x9E3779B9u);
            h ^= h >> 15;
            h *= 0x85EBCA6Bu;
            h ^= h >> 13;
            double v;
            unsigned how = h % 8;
            if (n->kind == QS_NODE_CAT && how < 5) {
                /* Categories around the end of the bitset, and negatives. */
                uint64_t top = (uint64_t)n->cat_nwords * 32;
                double c = (double)(h / 8 % (top + 3)) - 1.0;
                v = how == 0 ? c + 0.75 : c;
            } else if (how == 7 || h % 97 == 0) {
                v = (h / 8 % 3) == 0 ? NAN : (h / 8 % 3) == 1 ? INFINITY : -INFINITY;
            } else if (how >= 5) {
                v = pat[h / 8 % npat];
            } else {
                v = n->value;
                if (how == 1)
                    v = fuzz_next(m, v, INFINITY);
                else if (how == 2)
                    v = fuzz_next(m, v, -INFINITY);
            }
            fuzz_doc_sets.feat[d][k] = n->feature;
            fuzz_doc_sets.val[d][k++] = fuzz_round(m, v);
        }
        fuzz_doc_sets.n[d] = k;
    }
}

/* Fill the selected slot with fixed document d (made by fuzz_docs_make). */
FUZZ_NO_COVERAGE
static inline void fuzz_fill_doc(qs_workspace *w, unsigned d)
{
    /* (document d is read with absent mode d % 3) */
    qs_doc_reset(w, (qs_absent)(d % 3));
    for (uint32_t k = 0; k < fuzz_doc_sets.n[d]; k++)
        qs_doc_set(w, fuzz_doc_sets.feat[d][k], fuzz_doc_sets.val[d][k]);
}

/* The documents one at a time in one slot: those of one absent mode (d %
 * 3) together, so that qs_doc_reset refills every feature only when the
 * mode changes, three times, not 21 (a model of 2^20 features spent two
 * thirds of a campaign's time in the refills). */
_Static_assert(FUZZ_NDOCS % 3 == 0, "FUZZ_NDOCS: a multiple of 3");
static inline unsigned fuzz_doc_at(unsigned i)
{
    return (i % (FUZZ_NDOCS / 3)) * 3 + i / (FUZZ_NDOCS / 3);
}

/* Score the fixed documents with every back end the scorer reports, one by
 * one and as a batch, and abort unless each agrees with the walk back end bit
 * for bit; then rebuild the layout with small blocks and another Δ and check
 * the back ends that use the layout (QS and vQS) again (in the libFuzzer
 * build, half the inputs: see fuzz_takes).  May leave the scorer relaid out. */
static inline void fuzz_check_scorer(qs_scorer *s)
{
    const qs_model *m = qs_scorer_model(s);
    qs_error err;
    uint32_t tb, db, delta, nb;
    qs_scorer_get_blocks(s, &tb, &db, &delta, &nb);
    if ((uint64_t)(m->num_features ? m->num_features : 1) * (db ? db : 1) > FUZZ_MAX_WS_DOUBLES)
        return;
    const uint32_t K = m->num_classes;
    fuzz_docs_make(m);
    double *ref = malloc(sizeof(double) * K * FUZZ_NDOCS);
    double *got = malloc(sizeof(double) * K * FUZZ_NDOCS);
    uint64_t *cnt = calloc(m->num_trees ? 2 * m->num_trees : 1, sizeof *cnt);
    if (!ref || !got || !cnt)
        goto done;
    /* Every back end that this machine runs and that takes the model. */
    const qs_backend walk = qs_backend_find("walk");
    for (qs_backend b = 0; b < qs_backend_count(); b++) {
        /* The emulated GPU, thread by thread, is the slowest back end: in
         * the libFuzzer build, one input in two. */
        if (strcmp(qs_backend_name(b), "cuda-emu") == 0 && !fuzz_takes(4, 0, 2))
            continue;
        qs_error_clear(&err);
        if (qs_scorer_prepare(s, b, &err) != 0 && err.code != QS_ERR_UNSUPPORTED &&
            err.code != QS_ERR_NOMEM && err.code != QS_ERR_DEVICE)
            FUZZ_FAIL("qs_scorer_prepare(%s): %s", qs_backend_name(b), err.msg);
    }
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && !fuzz_takes(1, 1, 2))
            break;
        if (pass == 1) {
            /* Blocks of 2 trees, 5 documents, Δ 3: other scan and block paths. */
            qs_error_clear(&err);
            if (qs_scorer_relayout(s, 2, 5, 3, &err) != 0) {
                fuzz_check_err(&err, "qs_scorer_relayout");
                if (err.code != QS_ERR_NOMEM)
                    FUZZ_FAIL("qs_scorer_relayout(2, 5, 3) refused a loaded model: %s", err.msg);
                goto done;
            }
        }
        qs_error_clear(&err);
        qs_workspace *w = qs_workspace_new(s, &err);
        if (!w) {
            fuzz_check_err(&err, "qs_workspace_new");
            goto done;
        }
        const uint32_t nslots = qs_workspace_slots(w);
        if (nslots == 0)
            FUZZ_FAIL("workspace with no slots");
        for (unsigned i = 0; i < FUZZ_NDOCS; i++) {
            const unsigned d = fuzz_doc_at(i);
            qs_workspace_select(w, 0);
            fuzz_fill_doc(w, d);
            if (pass == 0 && qs_score_doc(s, w, walk, ref + (size_t)d * K, &err) != 0)
                FUZZ_FAIL("walk back end refused to score");
            if (pass == 0 && i == FUZZ_NDOCS - 1 && m->num_trees) {
                qs_count_node_outcomes(s, w, cnt, cnt + m->num_trees);
                for (uint64_t t = 0; t < m->num_trees; t++)
                    if (cnt[t] + cnt[m->num_trees + t] >= m->trees[t].num_nodes &&
                        m->trees[t].num_nodes > 0)
                        FUZZ_FAIL("tree %llu: %llu node outcomes for %u nodes",
                                  (unsigned long long)t,
                                  (unsigned long long)(cnt[t] + cnt[m->num_trees + t]),
                                  m->trees[t].num_nodes);
            }
        }
        for (qs_backend b = 0; b < qs_backend_count(); b++) {
            qs_backend_info bi;
            qs_backend_get_info(b, &bi);
            /* The back ends that read the QuickScorer layout. */
            const int layout_bound = !(bi.flags & (QS_BACKEND_F_REFERENCE | QS_BACKEND_F_BASELINE));
            if ((pass == 1 && !layout_bound) || !qs_scorer_prepared(s, b))
                continue;
            for (unsigned i = 0; i < FUZZ_NDOCS; i++) {
                const unsigned d = fuzz_doc_at(i);
                qs_workspace_select(w, 0);
                fuzz_fill_doc(w, d);
                if (qs_score_doc(s, w, b, got, &err) != 0)
                    FUZZ_FAIL("back end %s is prepared but refused to score: %s",
                              qs_backend_name(b), err.msg);
                for (uint32_t c = 0; c < K; c++)
                    if (!fuzz_same(got[c], ref[(size_t)d * K + c]))
                        FUZZ_FAIL("back end %s, document %u, class %u: %a, walk says %a%s",
                                  qs_backend_name(b), d, c, got[c],
                                  ref[(size_t)d * K + c], pass ? " (relaid out 2/5/3)" : "");
            }
            /* The same documents side by side in the slots. */
            uint32_t n = nslots < FUZZ_NDOCS ? nslots : FUZZ_NDOCS;
            for (uint32_t d = 0; d < n; d++) {
                qs_workspace_select(w, d);
                fuzz_fill_doc(w, d);
            }
            if (qs_score_batch(s, w, b, n, got, &err) != 0)
                FUZZ_FAIL("back end %s refused a batch of %u: %s", qs_backend_name(b), n,
                          err.msg);
            for (uint32_t d = 0; d < n; d++)
                for (uint32_t c = 0; c < K; c++)
                    if (!fuzz_same(got[(size_t)d * K + c], ref[(size_t)d * K + c]))
                        FUZZ_FAIL("back end %s, batch of %u, document %u, class %u: %a, walk "
                                  "says %a%s",
                                  qs_backend_name(b), n, d, c, got[(size_t)d * K + c],
                                  ref[(size_t)d * K + c], pass ? " (relaid out 2/5/3)" : "");
        }
        {
            /* Exit leaves: the scalar QuickScorer's (this layout) equal the walk's. */
            uint32_t n = nslots < FUZZ_NDOCS ? nslots : FUZZ_NDOCS;
            uint64_t T = m->num_trees;
            if (T && T <= ((uint64_t)1 << 20) / n) {
                uint32_t *la = malloc(sizeof(uint32_t) * T * n), *lb = malloc(sizeof(uint32_t) * T * n);
                if (la && lb) {
                    for (uint32_t d = 0; d < n; d++) {
                        qs_workspace_select(w, d);
                        fuzz_fill_doc(w, d);
                    }
                    if (qs_score_leaves(s, w, walk, n, la, &err) != 0 ||
                        qs_score_leaves(s, w, qs_backend_find("qs"), n, lb, &err) != 0)
                        fuzz_check_err(&err, "qs_score_leaves");
                    else if (memcmp(la, lb, sizeof(uint32_t) * T * n) != 0)
                        FUZZ_FAIL("qs_score_leaves: qs and walk find other exit leaves%s",
                                  pass ? " (relaid out 2/5/3)" : "");
                }
                free(la);
                free(lb);
            }
        }
        if (pass == 0) {
            /* The transforms only need to be safe on any raw score. */
            memcpy(got, ref, sizeof(double) * K);
            qs_transform(s, got);
        }
        qs_workspace_free(w);
    }
done:
    free(ref);
    free(got);
    free(cnt);
}

/* Compile a validated model (with `opt`), load the image and check the
 * scorer; abort if either step refuses it, since both must accept every
 * model that passes qs_model_validate. */
static inline void fuzz_compile_load_score(const qs_model *m, const qs_compile_options *opt,
                                           const char *what)
{
    qs_error err;
    qs_error_clear(&err);
    unsigned char *img = NULL;
    size_t n = 0;
    if (qs_compile(m, opt, &img, &n, &err) != 0) {
        fuzz_check_err(&err, "qs_compile");
        if (err.code == QS_ERR_NOMEM)
            return;
        FUZZ_FAIL("qs_compile (%s) refused a validated model: %s", what, err.msg);
    }
    qs_error_clear(&err);
    qs_scorer *s = qs_scorer_load(img, n, &err);
    free(img);
    if (!s) {
        fuzz_check_err(&err, "qs_scorer_load");
        if (err.code == QS_ERR_NOMEM)
            return;
        FUZZ_FAIL("qs_scorer_load refused what qs_compile (%s) wrote: %s", what, err.msg);
    }
    fuzz_check_scorer(s);
    /* The first iteration alone: a smaller model, checked the same way. */
    qs_error_clear(&err);
    if (qs_scorer_iterations(s) > 1 && fuzz_takes(7, 0, 2)) { /* libFuzzer: one input in two */
        if (qs_scorer_truncate(s, 1, &err) == 0)
            fuzz_check_scorer(s);
        else
            fuzz_check_err(&err, "qs_scorer_truncate");
    }
    qs_scorer_free(s);
}

/* The canonical text of a model must parse back and write the same bytes. */
static inline void fuzz_text_round_trip(const qs_model *m)
{
    qs_error err;
    qs_error_clear(&err);
    char *t1 = NULL, *t2 = NULL;
    size_t n1 = 0, n2 = 0;
    if (qs_model_to_text(m, &t1, &n1, &err) != 0) {
        fuzz_check_err(&err, "qs_model_to_text");
        if (err.code == QS_ERR_NOMEM)
            return;
        FUZZ_FAIL("qs_model_to_text refused a valid model: %s", err.msg);
    }
    qs_error_clear(&err);
    qs_model *m2 = qs_model_from_text(t1, n1, &err);
    if (!m2) {
        fuzz_check_err(&err, "qs_model_from_text");
        if (err.code != QS_ERR_NOMEM)
            FUZZ_FAIL("written text does not parse back: line %ld: %s", err.line, err.msg);
        free(t1);
        return;
    }
    if (qs_model_to_text(m2, &t2, &n2, &err) != 0) {
        fuzz_check_err(&err, "qs_model_to_text");
        if (err.code != QS_ERR_NOMEM)
            FUZZ_FAIL("qs_model_to_text refused a model it wrote and read: %s", err.msg);
    } else if (n1 != n2 || memcmp(t1, t2, n1) != 0) {
        size_t i = 0;
        while (i < n1 && i < n2 && t1[i] == t2[i])
            i++;
        FUZZ_FAIL("text round trip changed the model at byte %zu of %zu/%zu", i, n1, n2);
    }
    free(t1);
    free(t2);
    qs_model_free(m2);
}

/* Everything a model from a converter or the text reader must survive:
 * validation, the text round trip, compiling (default layout, and every
 * tree reversed in small blocks; in the libFuzzer build, one of the two by
 * the input's hash) and loading, and exact scoring. */
static inline void fuzz_check_model(const qs_model *m)
{
    qs_error err;
    qs_error_clear(&err);
    if (qs_model_validate(m, &err) != 0)
        FUZZ_FAIL("a model the reader returned fails qs_model_validate: %s", err.msg);
    qs_model_info info;
    qs_model_get_info(m, &info);
    if (info.num_classes == 0 || info.transform == NULL)
        FUZZ_FAIL("qs_model_get_info: no classes or no transform");
    fuzz_text_round_trip(m);
    if (m->num_cat_words > FUZZ_MAX_CAT_WORDS)
        return;
    if (fuzz_takes(2, 0, 2))
        fuzz_compile_load_score(m, NULL, "default layout");
    if (!fuzz_takes(2, 1, 2))
        return;
    uint8_t *rev = malloc(m->num_trees ? (size_t)m->num_trees : 1);
    if (!rev)
        return;
    memset(rev, 1, m->num_trees ? (size_t)m->num_trees : 1);
    qs_compile_options o = { .delta = 3, .tree_block = 2, .doc_block = 5, .reverse = rev };
    fuzz_compile_load_score(m, &o, "reversed, blocks 2/5, delta 3");
    free(rev);
}

/* A converter's result: NULL with a proper error record, or a model that
 * passes fuzz_check_model. */
static inline void fuzz_converted(qs_model *m, const qs_error *err, const char *what)
{
    if (!m) {
        fuzz_check_err(err, what);
        return;
    }
    fuzz_check_model(m);
    qs_model_free(m);
}

#endif
