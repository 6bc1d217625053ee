/* scorer.c: loading a .qsm into a scorer, re-laying it out, preparing its
 * back ends, and dispatching a batch to one of them (the table is in
 * registry.c; the back ends in their own files). */
#include "layout/qsm.h"
#include "score/score.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ back ends */

int qs_backend_count(void) { return (int)qs_backend_table_len; }

static const qs_backend_def *def_of(qs_backend b)
{
    return b >= 0 && (unsigned)b < qs_backend_table_len ? qs_backend_table[b] : NULL;
}

static int probe(const qs_backend_def *d, char *why, size_t cap)
{
    if (cap)
        why[0] = '\0';
    return d->probe ? d->probe(d, why, cap) : 1;
}

qs_backend qs_backend_auto(void)
{
    qs_backend best = QS_BACKEND_UNKNOWN;
    unsigned rank = 0;
    char why[8];
    for (unsigned i = 0; i < qs_backend_table_len; i++) {
        const qs_backend_def *d = qs_backend_table[i];
        if (d->auto_rank > rank && probe(d, why, sizeof why)) {
            best = (qs_backend)i;
            rank = d->auto_rank;
        }
    }
    return best;
}

int qs_backend_get_info(qs_backend b, qs_backend_info *info)
{
    if (b == QS_BACKEND_AUTO)
        b = qs_backend_auto();
    const qs_backend_def *d = def_of(b);
    if (!d)
        return -1;
    memset(info, 0, sizeof *info);
    info->name = d->name;
    info->summary = d->summary;
    info->flags = d->flags;
    info->auto_rank = d->auto_rank;
    info->available = probe(d, info->why, sizeof info->why);
    return 0;
}

const char *qs_backend_name(qs_backend b)
{
    if (b == QS_BACKEND_AUTO)
        return "auto";
    const qs_backend_def *d = def_of(b);
    return d ? d->name : "?";
}

qs_backend qs_backend_find(const char *name)
{
    if (strcmp(name, "auto") == 0)
        return QS_BACKEND_AUTO;
    for (unsigned i = 0; i < qs_backend_table_len; i++)
        if (strcmp(name, qs_backend_table[i]->name) == 0)
            return (qs_backend)i;
    return QS_BACKEND_UNKNOWN;
}

void qs_build_get_info(qs_build_info *info)
{
    static const char *const levels[] = { "", "avx2", "avx512", "avx512,avx2" };
    info->version = QS_VERSION_STRING;
    info->openmp = QS_HAVE_OPENMP;
    info->numa = QS_HAVE_NUMA;
    info->cuda = QS_HAVE_CUDA;
    info->cpu_detected = levels[qs_cpu_simd_detected() & 3u];
    info->cpu_enabled = levels[qs_cpu_simd() & 3u];
}

int qs_env_check(qs_error *err)
{
    const char *v = getenv("QS_CPU_CLASS");
    if (v && *v && qs_cpu_class_find(v) < 0)
        return qs_fail(err, QS_ERR_ARG, 0, "unknown CPU class '%.64s' in QS_CPU_CLASS (expected "
                       "generic, zen4, zen5 or intel)", v);
    /* the back ends' own variables (the GPU's QS_CUDA_*), each family once */
    for (unsigned i = 0; i < qs_backend_table_len; i++) {
        const qs_backend_def *d = qs_backend_table[i];
        if (d->check_env && (i == 0 || qs_backend_table[i - 1]->check_env != d->check_env) &&
            d->check_env(d, err) != 0)
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ loading */

/* What auto runs for s: the back end of highest rank, or the one of its
 * family its auto_pick names for this model (when this machine runs it). */
static void auto_pick(qs_scorer *s)
{
    const qs_backend_def *d = def_of(s->auto_backend);
    snprintf(s->auto_why, sizeof s->auto_why, "the available back end of highest rank");
    if (!d->auto_pick)
        return;
    char why[sizeof s->auto_why] = "";
    const char *name = d->auto_pick(d, s, why, sizeof why);
    const qs_backend b = name ? qs_backend_find(name) : QS_BACKEND_UNKNOWN;
    char no[8];
    if (b >= 0 && probe(def_of(b), no, sizeof no))
        s->auto_backend = b;
    else if (name)
        return;
    if (why[0])
        memcpy(s->auto_why, why, sizeof why);
}

qs_backend qs_scorer_auto_backend(const qs_scorer *s, char *why, size_t cap)
{
    if (why && cap)
        snprintf(why, cap, "%s", s->auto_why);
    return s->auto_backend;
}

static void scorer_sizes(qs_scorer *s)
{
    s->max_block_trees = 0;
    s->max_words = 0;
    for (uint32_t b = 0; b < s->L->nblocks; b++) {
        const qs_block *B = &s->L->blocks[b];
        uint64_t n = B->tree_end - B->tree_begin;
        if (n > s->max_block_trees)
            s->max_block_trees = n;
        if (B->kind == QS_BLOCK_QS && B->width == 0 && B->words > s->max_words)
            s->max_words = B->words;
    }
    s->doc_block = s->L->doc_block ? s->L->doc_block : QS_DEFAULT_DOC_BLOCK;
}

/* τ when the .qsm stores none: blocks whose QuickScorer data (entries and
 * leaves) fill about half of the last-level cache (L3, else L2); 0 (one
 * block) when the whole model fits.  Sized by L2 before: one block was
 * faster for every bench model (1,000 and 5,000 trees of 64 leaves, 4 MB
 * of QuickScorer data: 1.3-1.6x, scalar and SIMD, two machines). */
static uint32_t auto_tree_block(const qs_layout *L)
{
    uint64_t llc = qs_cache_size(3);
    if (llc == 0)
        llc = qs_cache_size(2);
    if (llc == 0)
        llc = (uint64_t)1 << 20;
    /* Scan entries only: special-value lists are read for NaN inputs alone. */
    uint64_t scan = L->sketch_scan;
    for (uint32_t g = 0; g < L->ngroups; g++)
        scan += L->groups[g].end - L->groups[g].begin;
    uint64_t bytes = scan * (8 + 4 + 8) + L->nleafvals * 8;
    if (L->ntrees == 0 || bytes <= llc)
        return 0;
    uint64_t per_tree = bytes / L->ntrees + 1;
    uint64_t tau = (llc / 2) / per_tree;
    return (uint32_t)(tau < 1 ? 1 : tau > UINT32_MAX - 1 ? UINT32_MAX - 1 : tau);
}

static void release_all(qs_scorer *s)
{
    for (unsigned i = 0; i < qs_backend_table_len; i++) {
        if (s->state[i] && qs_backend_table[i]->release)
            qs_backend_table[i]->release(s->state[i]);
        s->state[i] = NULL;
    }
}

/* Build back end i's state for the current layout. */
static int prepare_one(qs_scorer *s, unsigned i, qs_error *err)
{
    const qs_backend_def *d = qs_backend_table[i];
    char why[160];
    if (!probe(d, why, sizeof why))
        return qs_fail(err, (d->flags & QS_BACKEND_F_DEVICE) ? QS_ERR_DEVICE : QS_ERR_UNSUPPORTED,
                       0, "back end '%s' is not available: %s", d->name, why);
    if (s->state[i] && d->release)
        d->release(s->state[i]);
    s->state[i] = NULL;
    s->prepared[i] = 0;
    if (d->prepare && d->prepare(d, s, &s->state[i], err) != 0)
        return -1;
    s->prepared[i] = 1;
    return 0;
}

int qs_scorer_prepare(qs_scorer *s, qs_backend b, qs_error *err)
{
    if (b == QS_BACKEND_AUTO)
        b = s->auto_backend;
    if (!def_of(b))
        return qs_fail(err, QS_ERR_ARG, 0, "no back end number %d", b);
    /* Prepared for the current layout already (relayout prepares again). */
    if (s->prepared[b])
        return 0;
    return prepare_one(s, (unsigned)b, err);
}

int qs_scorer_set_device(qs_scorer *s, int device, qs_error *err)
{
    if (device < 0)
        return qs_fail(err, QS_ERR_ARG, 0,
                       "device %d: an accelerator is named by its ordinal, 0 or more", device);
    if (device == s->device)
        return 0;
    s->device = device;
    /* The device back ends already prepared move to the new device. */
    for (unsigned i = 0; i < qs_backend_table_len; i++)
        if (s->prepared[i] && (qs_backend_table[i]->flags & QS_BACKEND_F_DEVICE) &&
            prepare_one(s, i, err) != 0)
            return -1;
    return 0;
}

int qs_scorer_set_device_option(qs_scorer *s, const char *name, const char *value,
                                qs_error *err)
{
    if (!name || !value)
        return qs_fail(err, QS_ERR_ARG, 0, "device option: a name and a value are needed");
    const qs_backend_def *chk = NULL;
    for (unsigned i = 0; i < qs_backend_table_len && !chk; i++)
        if (qs_backend_table[i]->check_option)
            chk = qs_backend_table[i];
    if (!chk)
        return qs_fail(err, QS_ERR_ARG, 0, "device option %s: no back end takes options", name);
    if (chk->check_option(chk, name, value, err) != 0)
        return -1;
    if (strlen(name) >= sizeof s->devopts[0].name || strlen(value) >= sizeof s->devopts[0].value)
        return qs_fail(err, QS_ERR_ARG, 0, "device option %s: value too long", name);
    uint32_t k = 0;
    while (k < s->ndevopts && strcmp(s->devopts[k].name, name) != 0)
        k++;
    if (k == QS_MAX_DEVOPTS)
        return qs_fail(err, QS_ERR_ARG, 0, "device option %s: too many options", name);
    strcpy(s->devopts[k].name, name);
    strcpy(s->devopts[k].value, value);
    if (k == s->ndevopts)
        s->ndevopts++;
    /* The back ends that read them, already prepared, take them now. */
    for (unsigned i = 0; i < qs_backend_table_len; i++)
        if (s->prepared[i] && qs_backend_table[i]->check_option && prepare_one(s, i, err) != 0)
            return -1;
    return 0;
}

int qs_scorer_backend_plan(const qs_scorer *s, qs_backend b, char *out, size_t cap,
                           qs_error *err)
{
    if (b == QS_BACKEND_AUTO)
        b = s->auto_backend;
    const qs_backend_def *d = def_of(b);
    if (!d)
        return qs_fail(err, QS_ERR_ARG, 0, "no back end number %d", b);
    if (cap)
        out[0] = '\0';
    return d->plan ? d->plan(d, s, out, cap, err) : 0;
}

void qs_backend_warm_up(qs_backend b, int device)
{
    const qs_backend_def *d = def_of(b);
    if (d && d->warm_up && device >= 0)
        d->warm_up(d, device);
}

int qs_scorer_prepared(const qs_scorer *s, qs_backend b)
{
    if (b == QS_BACKEND_AUTO)
        b = s->auto_backend;
    return def_of(b) && s->prepared[b];
}

qs_scorer *qs_scorer_load(const unsigned char *buf, size_t len, qs_error *err)
{
    return qs_scorer_load_threads(buf, len, 1, err);
}

/* The head of a .qsm file: a wrong header stops the read after its 64
 * bytes, a right one bounds it by the size it records. */
static int qsm_head(void *ctx, const unsigned char *buf, size_t n, uint64_t *most,
                    qs_error *err)
{
    (void)ctx;
    uint64_t fsize;
    if (qsm_check_head(buf, n, &fsize, err) != 0)
        return -1;
    if (fsize < *most)
        *most = fsize;
    return 0;
}

qs_sniff qs_sniff_model(const unsigned char *buf, size_t len, int eof, uint64_t *most)
{
    static const unsigned char qsm_magic[8] = { 0x89, 'Q', 'S', 'M', '\r', '\n', 0x1a, '\n' };
    static const unsigned char zstd_magic[4] = { 0x28, 0xB5, 0x2F, 0xFD };
    if (most)
        *most = UINT64_MAX;
    if (!buf)
        len = 0;
    /* a .qsm: its header decides (64 bytes, or the file is shorter) */
    if (len > 0 && buf[0] == qsm_magic[0] &&
        memcmp(buf, qsm_magic, len < 8 ? len : 8) == 0) {
        if (len < 64 && !eof)
            return QS_SNIFF_MORE;
        uint64_t fsize;
        qs_error e;
        if (qsm_check_head(buf, len, &fsize, &e) != 0)
            return QS_SNIFF_NOT;
        if (most)
            *most = fsize;
        return QS_SNIFF_MODEL;
    }
    if (len > 0 && buf[0] == zstd_magic[0] && memcmp(buf, zstd_magic, len < 4 ? len : 4) == 0)
        return len < 4 && !eof ? QS_SNIFF_MORE : QS_SNIFF_MODEL;
    /* a format's start: the readers' detection looks at the first bytes
     * past a byte-order mark and blank space (at most 11 of them) */
    size_t i = len >= 3 && buf[0] == 0xEF && buf[1] == 0xBB && buf[2] == 0xBF ? 3 : 0;
    while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' || buf[i] == '\n'))
        i++;
    if (!eof && (len - i < 16 || len < 3))
        return QS_SNIFF_MORE;
    /* XGBoost's binary format without "binf" shows itself by its first
     * names, past 136 bytes: a short read waits for more */
    if (!eof && len < 512 && qs_detect_format((const char *)buf, len) == QS_FMT_UNKNOWN)
        return QS_SNIFF_MORE;
    return qs_detect_format((const char *)buf, len) != QS_FMT_UNKNOWN ? QS_SNIFF_MODEL
                                                                      : QS_SNIFF_NOT;
}

qs_scorer *qs_scorer_load_file(const char *path, qs_error *err)
{
    unsigned char *buf;
    size_t len;
    int cut;
    qs_scorer *s = NULL;
    if (qs_read_file(path, QS_MAX_QSM_FILE, 64, qsm_head, NULL, &buf, &len, &cut, err) == 0) {
        if (cut)
            qs_fail_at(err, QS_ERR_FORMAT, 24, "the file is longer than the %zu bytes its "
                       "header records (padded)", len);
        else
            s = qs_scorer_load(buf, len, err);
        free(buf);
    }
    if (!s && err && path && err->code != QS_ERR_NOMEM &&
        strncmp(err->msg, path, strlen(path)) != 0) {
        /* name the file in the message: "PATH: what" */
        char m[sizeof err->msg];
        size_t k = strlen(path);
        if (k > sizeof m / 2)
            k = sizeof m / 2;
        memcpy(m, path, k);
        memcpy(m + k, ": ", 2);
        size_t rest = strlen(err->msg);
        if (rest > sizeof m - k - 3)
            rest = sizeof m - k - 3;
        memcpy(m + k + 2, err->msg, rest);
        m[k + 2 + rest] = '\0';
        memcpy(err->msg, m, sizeof m);
    }
    return s;
}

qs_scorer *qs_scorer_load_threads(const unsigned char *buf, size_t len, unsigned threads,
                                  qs_error *err)
{
    return qs_scorer_load_layout(buf, len, threads, QS_KEEP, QS_KEEP, err);
}

qs_scorer *qs_scorer_load_layout(const unsigned char *buf, size_t len, unsigned threads,
                                 uint32_t tree_block, uint32_t delta, qs_error *err)
{
    qs_scorer *s = calloc(1, sizeof *s);
    if (!s) {
        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        return NULL;
    }
    s->build_threads = threads ? threads : 1;
    if (qsm_read(buf, len, s->build_threads, &s->m, &s->L, err) != 0) {
        free(s);
        return NULL;
    }
    /* Either the layout is rebuilt from the trees for this machine's cache,
     * or the stored one must equal what the trees give: a forged QSLY can
     * then never make the back ends disagree. */
    s->stored_tree_block = s->L->tree_block;
    uint32_t tau = s->L->tree_block == 0 ? auto_tree_block(s->L) : 0;
    int rc;
    if (tree_block != QS_KEEP || delta != QS_KEEP)
        /* built once, for the values asked (the stored layout unused) */
        rc = qs_scorer_relayout(s, tree_block != QS_KEEP ? tree_block
                                   : s->L->tree_block == 0 ? tau
                                                           : s->L->tree_block,
                                QS_KEEP, delta, err);
    else
        rc = tau || s->L->sketch ? qs_scorer_relayout(s, tau, QS_KEEP, QS_KEEP, err)
                                 : qs_layout_verify(s->L, s->m, s->build_threads, err);
    if (rc != 0) {
        qs_scorer_free(s);
        return NULL;
    }
    scorer_sizes(s);
    s->auto_backend = qs_backend_auto();
    if (s->auto_backend < 0) {
        qs_fail(err, QS_ERR_UNSUPPORTED, 0, "no back end can run on this machine");
        qs_scorer_free(s);
        return NULL;
    }
    auto_pick(s);
    if (prepare_one(s, (unsigned)s->auto_backend, err) != 0) {
        qs_scorer_free(s);
        return NULL;
    }
    return s;
}

int qs_scorer_relayout(qs_scorer *s, uint32_t tree_block, uint32_t doc_block, uint32_t delta,
                       qs_error *err)
{
    if (doc_block != QS_KEEP && doc_block > QS_MAX_DOC_BLOCK)
        return qs_fail(err, QS_ERR_ARG, 0, "document block %u is out of range (1..%u)", doc_block,
                       QS_MAX_DOC_BLOCK);
    if (tree_block != QS_KEEP || delta != QS_KEEP) {
        qs_layout *L = qs_layout_build_mt(s->m, delta == QS_KEEP ? s->L->delta : delta,
                                          tree_block == QS_KEEP ? s->L->tree_block : tree_block,
                                          s->L->treeflags, s->build_threads, err);
        if (!L)
            return -1;
        L->doc_block = s->L->doc_block;
        qs_layout_free(s->L);
        s->L = L;
    }
    if (doc_block != QS_KEEP && doc_block != 0)
        s->L->doc_block = doc_block;
    scorer_sizes(s);
    /* Back-end state follows the layout. */
    for (unsigned i = 0; i < qs_backend_table_len; i++)
        if (s->prepared[i] && prepare_one(s, i, err) != 0)
            return -1;
    return 0;
}

/* Trees per iteration: the source's count (XGBoost's num_parallel_tree x
 * output groups), else one per class. */
static uint64_t iteration_trees(const qs_model *m)
{
    return m->iter_trees ? m->iter_trees : m->num_classes;
}

uint64_t qs_scorer_iterations(const qs_scorer *s)
{
    return s->m->num_trees / iteration_trees(s->m);
}

int qs_scorer_truncate(qs_scorer *s, uint64_t iterations, qs_error *err)
{
    qs_model *m = s->m;
    const uint32_t K = m->num_classes;
    const uint64_t per = iteration_trees(m);
    if (iterations == 0)
        return qs_fail(err, QS_ERR_ARG, 0, "0 iterations: keep at least one");
    uint64_t have = m->num_trees / per;
    uint64_t keep = iterations >= have ? m->num_trees : iterations * per;
    /* A source's own count (iter_trees) says how its iterations' trees
     * come; otherwise one per class, in class order. */
    for (uint64_t t = 0; K > 1 && !m->iter_trees && t < keep; t++)
        if (m->trees[t].class_id != t % K)
            return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                           "tree %llu is of class %u, not %llu: the trees do not come one per "
                           "class per iteration, so iterations cannot be counted",
                           (unsigned long long)t, m->trees[t].class_id,
                           (unsigned long long)(t % K));
    if (keep == m->num_trees)
        return 0;
    /* ONNX Runtime's AVERAGE divides by the count of ONNX trees: the model
     * cut to its first ONNX trees divides by those kept.  The reader
     * unfolds every ONNX tree into one tree, or every one into a tree per
     * class (lib/convert/onnx.c), so the trees kept tell how many. */
    /* ONNX Runtime writes a regressor's target as 0, not its base value,
     * when no leaf reached writes to it (the reader refuses a model where
     * that depends on the document, lib/convert/onnx.c).  Which leaves of
     * the first trees write to which target, the trees unfolded per target
     * do not record: with a base value on a target of several, the cut
     * model's output is not known exactly. */
    if (m->source == QS_SRC_ONNX && K > 1 && m->out_affine &&
        strcmp(m->objective, "TreeEnsembleClassifier") != 0)
        for (uint32_t k = 0; k < K; k++)
            if (m->out_bias[k] != 0.0)
                return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                               "an ONNX regressor of %u targets with base values: ONNX Runtime "
                               "adds target %u's only where a leaf reached writes to it, and "
                               "which leaves of the first trees do is not recorded, so the "
                               "first iterations alone cannot be scored exactly", K, k);
    const uint32_t divide = m->out_divide;
    uint64_t divide_kept = 0;
    if (divide > 1) {
        if (m->num_trees == divide)
            divide_kept = keep;
        else if (m->num_trees == (uint64_t)divide * K)
            divide_kept = keep / K;
        else
            return qs_fail(err, QS_ERR_UNSUPPORTED, 0,
                           "the sums are averaged over %u ONNX trees, which unfold unevenly into "
                           "these %llu trees: the first iterations cannot be counted in ONNX "
                           "trees (convert the model again with this version of qs)", divide,
                           (unsigned long long)m->num_trees);
    }
    /* The model keeps its first trees; the layout follows from them (the
     * reversal flags of the trees kept are a prefix of the current ones). */
    const uint64_t nt = m->num_trees, nn = m->num_nodes, nl = m->num_linear,
                   nlt = m->num_lin_terms;
    const uint32_t avg = m->transform_average;
    qs_model_truncate(m, keep);
    if (m->transform_average)
        m->transform_average = (uint32_t)iterations;
    if (divide > 1)
        m->out_divide = divide_kept > 1 ? (uint32_t)divide_kept : 0;
    qs_layout *L = qs_layout_build_mt(m, s->L->delta, s->L->tree_block, s->L->treeflags,
                                      s->build_threads, err);
    if (!L) {
        m->num_trees = nt;
        m->num_nodes = nn;
        m->num_linear = nl;
        m->num_lin_terms = nlt;
        m->transform_average = avg;
        m->out_divide = divide;
        return -1;
    }
    if (m->num_linear == 0) {
        free(m->node_linear);   /* no linear leaf left: the plain paths again */
        m->node_linear = NULL;
    }
    L->doc_block = s->L->doc_block;
    qs_layout_free(s->L);
    s->L = L;
    scorer_sizes(s);
    for (unsigned i = 0; i < qs_backend_table_len; i++)
        if (s->prepared[i] && prepare_one(s, i, err) != 0)
            return -1;
    return 0;
}

void qs_scorer_get_blocks(const qs_scorer *s, uint32_t *tree_block, uint32_t *doc_block,
                          uint32_t *delta, uint32_t *nblocks)
{
    if (tree_block)
        *tree_block = s->L->tree_block;
    if (doc_block)
        *doc_block = s->doc_block;
    if (delta)
        *delta = s->L->delta;
    if (nblocks)
        *nblocks = s->L->nblocks;
}

void qs_scorer_free(qs_scorer *s)
{
    if (!s)
        return;
    release_all(s);
    qs_model_free(s->m);
    qs_layout_free(s->L);
    free(s);
}

const qs_model *qs_scorer_model(const qs_scorer *s) { return s->m; }

int qs_score_digits(const qs_scorer *s)
{
    return s->m->float_accumulate || s->m->out_float ? 9 : 17;
}

/* ------------------------------------------------------------ scoring */

int qs_score_batch(const qs_scorer *s, qs_workspace *w, qs_backend b, uint32_t n, double *out,
                   qs_error *err)
{
    unsigned how = QS_HOW_NAMED;
    if (b == QS_BACKEND_AUTO) {
        b = s->auto_backend;
        how = 0;
    }
    const qs_backend_def *d = def_of(b);
    if (!d)
        return qs_fail(err, QS_ERR_ARG, 0, "no back end number %d", b);
    if (n == 0)
        return 0;
    if (n > w->nslots)
        return qs_fail(err, QS_ERR_ARG, 0, "batch of %u documents for a workspace of %u", n,
                       w->nslots);
    if (!s->prepared[b])
        return qs_fail(err, QS_ERR_ARG, 0,
                       "back end '%s' was not prepared for this scorer (qs_scorer_prepare)",
                       d->name);
    if (!w->ready[b])
        return qs_fail(err, QS_ERR_ARG, 0,
                       "the workspace was made before back end '%s' was prepared", d->name);
    /* The back ends compute the sum; the output affine (CatBoost's scale
     * and bias) is applied here, once, for all of them.  A back end with
     * only the whole-batch entry gets the slots as rows, on this thread. */
    int rc;
    if (d->score) {
        rc = d->score(d, s, s->state[b], w, w->scratch[b], n, out, how, err);
    } else {
        const qs_rows r = { NULL, 0, w->xs, n, 0 };
        rc = d->score_rows(d, s, s->state[b], &r, out, 1, how, err);
    }
    if (rc == 0)
        qs_model_finish_scores(s->m, out, n);
    return rc;
}

int qs_score_leaves(const qs_scorer *s, qs_workspace *w, qs_backend b, uint32_t n,
                    uint32_t *out, qs_error *err)
{
    if (b == QS_BACKEND_AUTO)
        b = s->auto_backend;
    const qs_backend_def *d = def_of(b);
    if (!d)
        return qs_fail(err, QS_ERR_ARG, 0, "no back end number %d", b);
    if (n > w->nslots)
        return qs_fail(err, QS_ERR_ARG, 0, "batch of %u documents for a workspace of %u", n,
                       w->nslots);
    const qs_model *m = s->m;
    const uint64_t T = m->num_trees;
    if (d->flags & QS_BACKEND_F_REFERENCE) {
        /* Tree by tree: its nodes' leaf numbers once, then every walk. */
        uint32_t most = 1;
        for (uint64_t t = 0; t < T; t++)
            most = m->trees[t].num_nodes > most ? m->trees[t].num_nodes : most;
        uint32_t *ids = malloc(sizeof *ids * most);
        if (!ids)
            return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        for (uint64_t t = 0; t < T; t++) {
            qs_model_leaf_ids(m, t, ids);
            for (uint32_t i = 0; i < n; i++)
                out[(size_t)i * T + t] = ids[qs_tree_walk(m, &m->trees[t], w->xs[i])];
        }
        free(ids);
        return 0;
    }
    return qs_bwqs_leaves(s, w, n, out, err);
}

int qs_score_doc(const qs_scorer *s, qs_workspace *w, qs_backend b, double *out, qs_error *err)
{
    /* The current slot alone: swap it into position 0 of the batch. */
    const double *save = w->xs[0];
    w->xs[0] = w->slot[w->cur].x;
    int rc = qs_score_batch(s, w, b, 1, out, err);
    w->xs[0] = save;
    return rc;
}
