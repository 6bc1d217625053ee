/* tables.c: the device image of a scorer for GPU-QS (tables.h). */
#include "score/cuda/tables.h"

#include <errno.h>
#include <string.h>

int qs_cu_env_u32(const char *name, uint32_t lo, uint32_t hi, uint32_t *out, qs_error *err)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end || v[0] == '-' || x < lo || x > hi)
        return qs_fail(err, QS_ERR_ARG, 0, "%s='%s': expected a whole number in %u..%u", name,
                       v, lo, hi);
    *out = (uint32_t)x;
    return 0;
}

int qs_cu_params_env(qs_cu_params *p, qs_error *err)
{
    if (qs_cu_env_u32("QS_CUDA_DB", 1, QS_CU_MAX_DB, &p->db, err) ||
        qs_cu_env_u32("QS_CUDA_THREADS", QS_CU_WARP, QS_CU_MAX_THREADS, &p->threads, err) ||
        qs_cu_env_u32("QS_CUDA_TAU", 1, UINT32_MAX - 1, &p->tau, err) ||
        qs_cu_env_u32("QS_CUDA_SHARED", 1024, 227u << 10, &p->shared, err))
        return -1;
    if (p->threads % QS_CU_WARP)
        return qs_fail(err, QS_ERR_ARG, 0, "QS_CUDA_THREADS=%u: expected a multiple of %u",
                       p->threads, QS_CU_WARP);
    return 0;
}

/* Bytes of one tree's leaf vector in block B. */
static uint32_t slot_of(const qs_block *B)
{
    if (B->kind == QS_BLOCK_OMEGA)
        return 4;
    if (B->width == 0)
        return 8u * B->words;
#if QS_CU_MUTATION == 3
    if (B->width == 16)
        return 1;
#endif
    return B->width / 8u;
}

static uint32_t kind_of(const qs_block *B)
{
    return B->kind == QS_BLOCK_OMEGA ? QS_CU_OMEGA : B->width == 0 ? QS_CU_WIDE : QS_CU_NARROW;
}

enum {
    P_BLOCKS, P_GROUPS, P_THR, P_ETREE, P_EMASK, P_CATS, P_CATWORDS, P_LEAFOFF, P_NLEAVES,
    P_TCLASS, P_LEAVES, P_LEAFLIN, P_LINEAR, P_LINFEAT, P_LINCOEFF, P_BASE
};
_Static_assert(P_BASE + 1 == QS_CU_NPTR, "QS_CU_NPTR");

static const void **field(qs_cu_model *M, int i)
{
    switch (i) {
    case P_BLOCKS: return (const void **)&M->blocks;
    case P_GROUPS: return (const void **)&M->groups;
    case P_THR: return (const void **)&M->thr;
    case P_ETREE: return (const void **)&M->etree;
    case P_EMASK: return (const void **)&M->emask;
    case P_CATS: return (const void **)&M->cats;
    case P_CATWORDS: return (const void **)&M->cat_words;
    case P_LEAFOFF: return (const void **)&M->leaf_off;
    case P_NLEAVES: return (const void **)&M->nleaves;
    case P_TCLASS: return (const void **)&M->tclass;
    case P_LEAVES: return (const void **)&M->leaves;
    case P_LEAFLIN: return (const void **)&M->leaf_lin;
    case P_LINEAR: return (const void **)&M->linear;
    case P_LINFEAT: return (const void **)&M->lin_feature;
    case P_LINCOEFF: return (const void **)&M->lin_coeff;
    default: return (const void **)&M->base;
    }
}

void qs_cu_image_model_at(const qs_cu_image *im, const void *base, qs_cu_model *out)
{
    *out = im->model;
    for (int i = 0; i < QS_CU_NPTR; i++)
        *field(out, i) = im->off[i] == SIZE_MAX ? NULL : (const unsigned char *)base + im->off[i];
}

void qs_cu_image_free(qs_cu_image *im)
{
    if (!im)
        return;
    free(im->blob);
    qs_layout_free(im->L);
    memset(im, 0, sizeof *im);
}

uint32_t qs_cu_grid(const qs_cu_image *im, uint32_t n)
{
    uint64_t g = ((uint64_t)n + im->db - 1) / im->db;
    if (im->shared == 0) {
        uint64_t most = QS_CU_GLOBAL_VEC_BUDGET / (im->vec_block ? im->vec_block : 1);
        if (most < 1)
            most = 1;
        if (g > most)
            g = most;
    }
    return (uint32_t)(g ? g : 1);
}

/* The widest leaf vector of one tree in layout L. */
static uint32_t max_slot(const qs_layout *L)
{
    uint32_t most = 1;
    for (uint32_t b = 0; b < L->nblocks; b++) {
        uint32_t sl = slot_of(&L->blocks[b]);
        most = sl > most ? sl : most;
    }
    return most;
}

int qs_cu_image_build(const qs_scorer *s, const qs_cu_params *p, qs_cu_image *im, qs_error *err)
{
    memset(im, 0, sizeof *im);
    const qs_model *m = s->m;
    uint32_t db = p->db ? p->db : QS_CU_DEFAULT_DB;
    uint32_t threads = p->threads ? p->threads : QS_CU_DEFAULT_THREADS;
    const uint32_t shared = p->shared ? p->shared : QS_CU_DEFAULT_SHARED;
    if (threads % QS_CU_WARP || threads > QS_CU_MAX_THREADS || db > QS_CU_MAX_DB || db == 0)
        return qs_fail(err, QS_ERR_ARG, 0,
                       "GPU geometry: %u documents and %u threads per thread-block (threads: a "
                       "multiple of %u up to %u; documents 1..%u)",
                       db, threads, QS_CU_WARP, QS_CU_MAX_THREADS, QS_CU_MAX_DB);
    if (threads < db)
        threads = (db + QS_CU_WARP - 1) / QS_CU_WARP * QS_CU_WARP;
    /* τ against the shared budget: db documents x τ trees x the widest
     * vector.  The slot widths depend on the trees alone, so the scorer's
     * layout gives them; fewer documents per thread-block when even one
     * tree each would not fit; global memory when one document's would
     * not. */
    const uint32_t slot = max_slot(s->L);
    uint64_t tau;
    uint32_t use_shared = 1;
    if ((uint64_t)db * slot > shared) {
        db = shared / slot;
        if (db == 0) {
            db = 1;
            use_shared = 0;
        }
    }
    if (use_shared)
        tau = shared / ((uint64_t)db * slot);
    else
        tau = 1;
    if (p->tau && p->tau < tau)
        tau = p->tau;
    if (!use_shared && p->tau)
        tau = p->tau;
    if (tau > m->num_trees)
        tau = m->num_trees ? m->num_trees : 1;
    if (tau > UINT32_MAX - 1)
        tau = UINT32_MAX - 1;
    /* Tree order and reversal are the scorer's; only the blocks differ. */
    const qs_layout *L = s->L;
    if (L->tree_block == 0 || L->tree_block != tau) {
        im->L = qs_layout_build_mt(m, L->delta, (uint32_t)tau, L->treeflags, s->build_threads,
                                   err);
        if (!im->L)
            return -1;
        L = im->L;
    }
    im->db = db;
    im->threads = threads;
    im->tau = (uint32_t)tau;

    /* Sizes of the tables. */
    uint64_t vec = 4;
    for (uint32_t b = 0; b < L->nblocks; b++) {
        const qs_block *B = &L->blocks[b];
        uint64_t bytes = (B->tree_end - B->tree_begin) * slot_of(B);
        vec = bytes > vec ? bytes : vec;
    }
    vec = (vec + 7) & ~(uint64_t)7;
    if (vec > UINT32_MAX / 2) {
        qs_cu_image_free(im);
        return qs_fail(err, QS_ERR_LIMIT, 0, "a block's leaf vectors (%llu bytes a document) are "
                       "beyond the GPU back end's limit", (unsigned long long)vec);
    }
    im->vec_block = vec * db;
    im->shared = use_shared ? (uint32_t)im->vec_block : 0;
    uint64_t nleafvals = L->nleafvals;
    const int linear = m->node_linear && L->leaf_node && m->num_linear;
    uint64_t size[QS_CU_NPTR] = {
        [P_BLOCKS] = sizeof(qs_cu_block) * (uint64_t)L->nblocks,
        [P_GROUPS] = sizeof(qs_cu_group) * (uint64_t)L->ngroups,
        [P_THR] = sizeof(double) * L->nentries,
        [P_ETREE] = sizeof(uint32_t) * L->nentries,
        [P_EMASK] = sizeof(uint64_t) * L->nentries,
        [P_CATS] = sizeof(qs_cu_cat) * (uint64_t)L->ncat,
        [P_CATWORDS] = sizeof(uint32_t) * m->num_cat_words,
        [P_LEAFOFF] = sizeof(uint64_t) * L->ntrees,
        [P_NLEAVES] = sizeof(uint32_t) * L->ntrees,
        [P_TCLASS] = sizeof(uint32_t) * L->ntrees,
        [P_LEAVES] = sizeof(double) * nleafvals,
        [P_LEAFLIN] = linear ? sizeof(uint32_t) * nleafvals : 0,
        [P_LINEAR] = linear ? sizeof(qs_cu_linear) * m->num_linear : 0,
        [P_LINFEAT] = linear ? sizeof(uint32_t) * m->num_lin_terms : 0,
        [P_LINCOEFF] = linear ? sizeof(double) * m->num_lin_terms : 0,
        [P_BASE] = sizeof(double) * m->num_classes,
    };
    uint64_t total = 0;
    for (int i = 0; i < QS_CU_NPTR; i++) {
        if (size[i] == 0 && (i == P_LEAFLIN || i == P_LINEAR || i == P_LINFEAT || i == P_LINCOEFF)) {
            im->off[i] = SIZE_MAX;
            continue;
        }
        im->off[i] = (size_t)total;
        total += (size[i] + 15) & ~(uint64_t)15;
    }
    if (total > SIZE_MAX / 2 || !(im->blob = calloc(1, (size_t)(total ? total : 16)))) {
        qs_cu_image_free(im);
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (GPU tables of %llu bytes)",
                       (unsigned long long)total);
    }
    im->bytes = (size_t)total;
    qs_cu_model *M = &im->model;
    qs_cu_image_model_at(im, im->blob, M);
    M->nblocks = L->nblocks;
    M->num_classes = m->num_classes;
    M->cmp_lt = m->cmp == QS_CMP_LT;
    M->acc_mode = m->float_accumulate == QS_ACC_FLOAT          ? QS_CU_ACC_FLOAT
                  : m->float_accumulate == QS_ACC_FLOAT_DOUBLE ? QS_CU_ACC_FLOAT_DOUBLE
                                                               : QS_CU_ACC_DOUBLE;
    M->vec_bytes = (uint32_t)vec;

    qs_cu_block *blocks = (qs_cu_block *)(im->blob + im->off[P_BLOCKS]);
    for (uint32_t b = 0; b < L->nblocks; b++) {
        const qs_block *B = &L->blocks[b];
        blocks[b] = (qs_cu_block){
            .kind = kind_of(B), .slot = slot_of(B), .words = B->width == 0 ? B->words : 0,
            .ntrees = (uint32_t)(B->tree_end - B->tree_begin), .tree0 = B->tree_begin,
            .group_begin = B->group_begin, .group_end = B->group_end,
            .cat_begin = B->cat_begin, .cat_end = B->cat_end,
        };
    }
    qs_cu_group *groups = (qs_cu_group *)(im->blob + im->off[P_GROUPS]);
    for (uint32_t g = 0; g < L->ngroups; g++) {
        const qs_group *G = &L->groups[g];
        groups[g] = (qs_cu_group){ G->feature, G->rule, G->begin, G->end, G->sp_begin, G->sp_end };
    }
    if (L->nentries) {
        memcpy(im->blob + im->off[P_THR], L->thr, size[P_THR]);
        memcpy(im->blob + im->off[P_ETREE], L->etree, size[P_ETREE]);
        memcpy(im->blob + im->off[P_EMASK], L->emask, size[P_EMASK]);
    }
    qs_cu_cat *cats = (qs_cu_cat *)(im->blob + im->off[P_CATS]);
    for (uint32_t c = 0; c < L->ncat; c++) {
        const qs_catnode *C = &L->cats[c];
        const qs_node *n = &m->nodes[C->node];
        cats[c] = (qs_cu_cat){
            .mask = C->mask, .tree = C->tree, .feature = n->feature, .cat_off = n->cat_off,
            .cat_nwords = n->cat_nwords, .miss = n->miss, .default_left = n->default_left,
            .flags = n->flags,
        };
    }
    if (m->num_cat_words)
        memcpy(im->blob + im->off[P_CATWORDS], m->cat_words, size[P_CATWORDS]);
    uint64_t *leaf_off = (uint64_t *)(im->blob + im->off[P_LEAFOFF]);
    uint32_t *nleaves = (uint32_t *)(im->blob + im->off[P_NLEAVES]);
    uint32_t *tclass = (uint32_t *)(im->blob + im->off[P_TCLASS]);
    for (uint64_t t = 0; t < L->ntrees; t++) {
        leaf_off[t] = L->leaf_off[t];
        nleaves[t] = L->nleaves[t];
        tclass[t] = m->trees[t].class_id;
    }
    if (nleafvals)
        memcpy(im->blob + im->off[P_LEAVES], L->leaves, size[P_LEAVES]);
    if (linear) {
        uint32_t *leaf_lin = (uint32_t *)(im->blob + im->off[P_LEAFLIN]);
        for (uint64_t t = 0; t < L->ntrees; t++)
            for (uint32_t k = 0; k < L->nleaves[t]; k++) {
                const uint64_t li = L->leaf_off[t] + k;
                const uint64_t g = m->trees[t].node_off + L->leaf_node[li];
                leaf_lin[li] = m->node_linear[g];
            }
        qs_cu_linear *lin = (qs_cu_linear *)(im->blob + im->off[P_LINEAR]);
        for (uint64_t i = 0; i < m->num_linear; i++) {
            const qs_linear *l = &m->linear[i];
            lin[i] = (qs_cu_linear){ .konst = l->konst, .plain = m->nodes[l->node].value,
                                     .term_off = l->term_off, .nterms = l->nterms };
        }
        if (m->num_lin_terms) {
            memcpy(im->blob + im->off[P_LINFEAT], m->lin_feature, size[P_LINFEAT]);
            memcpy(im->blob + im->off[P_LINCOEFF], m->lin_coeff, size[P_LINCOEFF]);
        }
    }
    memcpy(im->blob + im->off[P_BASE], m->base, size[P_BASE]);
    return 0;
}
