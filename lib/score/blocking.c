/* blocking.c: the traversal orders of BWQS (Jin, Yang, Tang, SIGIR 2016:
 * DSD, SDS, DSDS, SDSD and the special cases DS and SD), the footprints of
 * one scorer and one document and the range case of an (order, s, d), the
 * machine fingerprint of a tuning record and applying a record to a
 * scorer.  The loops themselves are in qs.c (qs_bwqs_score). */
#include "score/score.h"
#include "score/vqs_plan.h"
#include "layout/qsm.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>
#include <time.h>

static const char *const order_names[QS_ORDER_COUNT] = { "SD", "DS", "DSD", "SDS", "DSDS", "SDSD" };

const char *qs_order_name(qs_order o)
{
    return (unsigned)o < QS_ORDER_COUNT ? order_names[o] : NULL;
}

int qs_order_find(const char *name)
{
    for (int i = 0; i < QS_ORDER_COUNT; i++)
        if (strcasecmp(name, order_names[i]) == 0)
            return i;
    return -1;
}

int qs_scorer_set_order(qs_scorer *s, qs_order order, uint32_t inner_s, uint32_t inner_d,
                        qs_error *err)
{
    if ((unsigned)order >= QS_ORDER_COUNT)
        return qs_fail(err, QS_ERR_ARG, 0, "no traversal order number %d", (int)order);
    if (inner_d > QS_MAX_DOC_BLOCK)
        return qs_fail(err, QS_ERR_ARG, 0, "inner document block %u is beyond the batch limit %u",
                       inner_d, QS_MAX_DOC_BLOCK);
    s->order = (uint32_t)order;
    s->order_s = inner_s;
    s->order_d = inner_d;
    return 0;
}

void qs_scorer_get_order(const qs_scorer *s, qs_order *order, uint32_t *inner_s,
                         uint32_t *inner_d)
{
    if (order)
        *order = (qs_order)s->order;
    if (inner_s)
        *inner_s = s->order_s;
    if (inner_d)
        *inner_d = s->order_d;
}

uint64_t qs_cache_bytes(int level) { return qs_cache_size(level); }

/* ------------------------------------------------------------ footprints */

static uint64_t block_bytes(const qs_layout *L, const qs_block *B, unsigned lanes)
{
    uint64_t entries = 0, leaves = 0;
    for (uint32_t g = B->group_begin; g < B->group_end; g++)
        entries += L->groups[g].end - L->groups[g].begin;
    for (uint64_t t = B->tree_begin; t < B->tree_end; t++)
        leaves += L->nleaves[t];
    const uint64_t nt = B->tree_end - B->tree_begin;
    const uint64_t vec = B->kind == QS_BLOCK_OMEGA ? 4 : B->width ? B->width / 8 : 8ull * B->words;
    /* a threshold (8), a tree id (4) and a mask (8) per entry; a leaf value
     * (8) per leaf; the leaf vectors of one SIMD call's documents */
    return entries * 20 + leaves * 8 + nt * vec * (lanes ? lanes : 1);
}

void qs_scorer_get_footprint(const qs_scorer *s, qs_backend b, qs_footprint *fp)
{
    const qs_layout *L = s->L;
    memset(fp, 0, sizeof *fp);
    qs_backend_info bi;
    unsigned lanes = 1;
    /* the vQS kernels: 64 documents a call on byte planes with every ISA
     * (batches of QS_VQS_NARROW_BELOW or more; vqs_plan.h) */
    if (qs_backend_get_info(b, &bi) == 0 && (bi.flags & QS_BACKEND_F_SIMD))
        lanes = QS_VQS_LANES;
    fp->lanes = lanes;
    fp->nscorers = L->nblocks;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < L->nblocks; i++) {
        uint64_t v = block_bytes(L, &L->blocks[i], lanes);
        sum += v;
        if (v > fp->max_scorer_bytes)
            fp->max_scorer_bytes = v;
    }
    fp->scorer_bytes = L->nblocks ? sum / L->nblocks : 0;
    fp->doc_bytes = (uint64_t)s->m->num_features * 8 + (uint64_t)s->m->num_classes * 12 + 8;
}

/* The level (1..3; 4: memory) where `bytes` fits in half a cache level. */
static int level_of(uint64_t bytes, const uint64_t cache[3])
{
    for (int i = 0; i < 3; i++)
        if (cache[i] && bytes <= cache[i] / 2)
            return i + 1;
    return 4;
}

void qs_range_case(const qs_footprint *fp, const uint64_t cache[3], qs_order o,
                   uint32_t inner_s, uint32_t inner_d, int *ls, int *ld)
{
    *ls = level_of((uint64_t)inner_s * fp->scorer_bytes, cache);
    *ld = level_of((uint64_t)inner_d * fp->doc_bytes, cache);
    switch (o) {
    case QS_ORDER_DSD:
    case QS_ORDER_DS:
        *ls = 0;
        break;
    case QS_ORDER_SDS:
    case QS_ORDER_SD:
        *ld = 0;
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------ tuning */

void qs_tuning_fingerprint(qs_tuning *t)
{
    qs_cpu_model(t->cpu_model, sizeof t->cpu_model);
    const char *sim = getenv("QS_TUNE_FINGERPRINT");
    if (sim && *sim)
        snprintf(t->cpu_model, sizeof t->cpu_model, "%s", sim);
    for (int i = 0; i < 3; i++)
        t->cache[i] = qs_cache_size(i + 1);
    t->cores = qs_cpu_cores();
    snprintf(t->version, sizeof t->version, "%s", QS_VERSION_STRING);
    t->date = (int64_t)time(NULL);
}

int qs_tuning_matches(const qs_tuning *t)
{
    qs_tuning me;
    memset(&me, 0, sizeof me);
    qs_tuning_fingerprint(&me);
    return strcmp(me.cpu_model, t->cpu_model) == 0 && me.cores == t->cores &&
           memcmp(me.cache, t->cache, sizeof me.cache) == 0;
}

qs_backend qs_tuning_backend(const qs_tuning *t)
{
    if (!t || !t->backend[0] || !qs_tuning_matches(t))
        return QS_BACKEND_AUTO;
    const qs_backend b = qs_backend_find(t->backend);
    qs_backend_info bi;
    return b >= 0 && qs_backend_get_info(b, &bi) == 0 && bi.available ? b : QS_BACKEND_AUTO;
}

int qs_qsm_get_tuning(const unsigned char *buf, size_t len, qs_tuning *t, qs_error *err)
{
    const int r = qs_qsm_read_tuning(buf, len, t, err);
    /* A record out of range is reported (format/qsm.md): so is a back end
     * this library does not know (empty: auto). */
    if (r == 1 && t->backend[0] && strcmp(t->backend, "auto") != 0 &&
        qs_backend_find(t->backend) == QS_BACKEND_UNKNOWN)
        return qs_fail(err, QS_ERR_FORMAT, 0,
                       "TUNE section: back end '%s' is unknown to this build", t->backend);
    return r;
}

int qs_scorer_apply_tuning(qs_scorer *s, const qs_tuning *t, qs_error *err)
{
    if (t->order >= QS_ORDER_COUNT)
        return qs_fail(err, QS_ERR_FORMAT, 0, "tuning record: unknown order %u", t->order);
    uint32_t tau;
    qs_scorer_get_blocks(s, &tau, NULL, NULL, NULL);
    if (qs_scorer_relayout(s, t->tree_block == tau ? QS_KEEP : t->tree_block,
                           t->doc_block ? t->doc_block : QS_KEEP,
                           t->delta && t->delta != s->L->delta ? t->delta : QS_KEEP, err) != 0)
        return -1;
    return qs_scorer_set_order(s, (qs_order)t->order, t->inner_s, t->inner_d, err);
}
