/* qsm.c: the .qsm container (format/qsm.md): a small uncompressed header, a
 * section table, zstd-compressed sections, CRC-32C everywhere; every length
 * and count read from the file is checked before it is used. */
#include "layout/layout.h"
#include "layout/qsm.h"

#include <stddef.h>
#if QS_HAVE_OPENMP
#include <pthread.h>
#endif
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

static const unsigned char QSM_MAGIC[8] = { 0x89, 'Q', 'S', 'M', '\r', '\n', 0x1A, '\n' };
#define QSM_VERSION_MAJOR 1
#define QSM_VERSION_MINOR 0
#define QSM_VERSION_MINOR_AFFINE 1 /* written only for models with an output affine (AFFN) */
#define QSM_VERSION_MINOR_AVERAGE 2 /* written only for models with a transform average */
#define QSM_VERSION_MINOR_LINEAR 3 /* written only for models with linear leaves (LINR) */
#define QSM_VERSION_MINOR_TUNE 4 /* written only for files with a tuning record (TUNE) */
#define QSM_VERSION_MINOR_ITER 5 /* written only for models whose INFO has its extension
                                    (trees per iteration, output rounded to float32) */
#define QSM_HEADER_SIZE 64u
#define QSM_ENTRY_SIZE 48u
#define QSM_MAX_SECTIONS 64u
#define QSM_MAX_RAW ((uint64_t)1 << 36) /* 64 GiB: refuse absurd sizes up front */
#define SEC_REQUIRED 0x1u
#define SEC_ZSTD 0x2u

#define FOURCC(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define SEC_INFO FOURCC('I', 'N', 'F', 'O')
#define SEC_TREE FOURCC('T', 'R', 'E', 'E')
#define SEC_QSLY FOURCC('Q', 'S', 'L', 'Y')
#define SEC_AFFN FOURCC('A', 'F', 'F', 'N')
#define SEC_LINR FOURCC('L', 'I', 'N', 'R')
#define SEC_TUNE FOURCC('T', 'U', 'N', 'E')
#define TUNE_SIZE 200u

/* Whether a zstd result is its failure to allocate (out of memory, not a
 * bad frame). */
static int zstd_nomem(size_t r)
{
    return ZSTD_isError(r) && ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation;
}

/* ------------------------------------------------------------ writing */

typedef struct wbuf {
    unsigned char *p;
    size_t n, cap;
    int oom;
} wbuf;

static void w_bytes(wbuf *b, const void *src, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->n + n)
            nc *= 2;
        unsigned char *q = realloc(b->p, nc);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = nc;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void w_u8(wbuf *b, uint8_t v) { w_bytes(b, &v, 1); }
static void w_u32(wbuf *b, uint32_t v)
{
    unsigned char x[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                           (unsigned char)(v >> 24) };
    w_bytes(b, x, 4);
}
static void w_u64(wbuf *b, uint64_t v)
{
    w_u32(b, (uint32_t)v);
    w_u32(b, (uint32_t)(v >> 32));
}
static void w_f64(wbuf *b, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    w_u64(b, v);
}
static void w_str(wbuf *b, const char *s, size_t width)
{
    char tmp[128] = { 0 };
    for (size_t i = 0; i + 1 < width && i + 1 < sizeof tmp && s[i]; i++)
        tmp[i] = s[i];
    w_bytes(b, tmp, width);
}

static void put_u32_at(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}
static void put_u64_at(unsigned char *p, uint64_t v)
{
    put_u32_at(p, (uint32_t)v);
    put_u32_at(p + 4, (uint32_t)(v >> 32));
}

/* Whether INFO carries the extension of version 1.5: the trees of one
 * iteration (XGBoost's boosted random forests) or the output's rounding to
 * float32 (ONNX opset-1/3 ensembles with a double input). */
static int info_extended(const qs_model *m)
{
    return m->iter_trees != 0 || m->out_float;
}

static void write_info(wbuf *b, const qs_model *m)
{
    w_u32(b, (uint32_t)m->source);
    w_u32(b, (uint32_t)m->cmp);
    w_u32(b, (uint32_t)m->float_precision);
    w_u32(b, (uint32_t)m->float_accumulate);
    w_u32(b, (uint32_t)m->absent_missing);
    w_u32(b, m->num_features);
    w_u32(b, m->num_classes);
    w_u32(b, m->transform_average);
    w_f64(b, m->transform_param);
    w_str(b, m->transform, 16);
    w_str(b, m->objective, 64);
    for (uint32_t c = 0; c < m->num_classes; c++)
        w_f64(b, m->base[c]);
    if (info_extended(m)) {   /* version 1.5 */
        w_u32(b, m->iter_trees);
        w_u32(b, m->out_float ? 1u : 0u);
    }
}

/* AFFN (version 1.1): the output affine, for models that have one. */
static void write_affine(wbuf *b, const qs_model *m)
{
    w_f64(b, m->out_scale);
    for (uint32_t c = 0; c < m->num_classes; c++)
        w_f64(b, m->out_bias[c]);
    if (m->out_divide > 1)
        w_f64(b, (double)m->out_divide);   /* one more value: the divisor */
}

/* LINR (version 1.3): the linear leaves, for models that have them. */
static void write_linear(wbuf *b, const qs_model *m)
{
    w_u64(b, m->num_linear);
    w_u64(b, m->num_lin_terms);
    for (uint64_t i = 0; i < m->num_linear; i++) {
        w_u64(b, m->linear[i].node);
        w_f64(b, m->linear[i].konst);
        w_u32(b, m->linear[i].nterms);
        w_u32(b, 0);
    }
    for (uint64_t i = 0; i < m->num_lin_terms; i++)
        w_u32(b, m->lin_feature[i]);
    for (uint64_t i = 0; i < m->num_lin_terms; i++)
        w_f64(b, m->lin_coeff[i]);
}

static void write_trees(wbuf *b, const qs_model *m)
{
    w_u64(b, m->num_trees);
    w_u64(b, m->num_nodes);
    w_u64(b, m->num_cat_words);
    for (uint64_t t = 0; t < m->num_trees; t++) {
        w_u32(b, m->trees[t].class_id);
        w_u32(b, m->trees[t].num_nodes);
        w_f64(b, m->trees[t].weight);
    }
    for (uint64_t i = 0; i < m->num_nodes; i++) {
        const qs_node *n = &m->nodes[i];
        w_u8(b, n->kind);
        w_u8(b, n->miss);
        w_u8(b, n->default_left);
        w_u8(b, n->flags);
        w_u32(b, n->feature);
        w_u32(b, (uint32_t)n->left);
        w_u32(b, (uint32_t)n->right);
        w_u32(b, n->cat_off);
        w_u32(b, n->cat_nwords);
        w_f64(b, n->value);
    }
    for (uint64_t i = 0; i < m->num_cat_words; i++)
        w_u32(b, m->cat_words[i]);
}

static void write_layout(wbuf *b, const qs_layout *L)
{
    w_u32(b, L->delta);
    w_u32(b, L->tree_block);
    w_u32(b, L->nblocks);
    w_u32(b, L->ngroups);
    w_u32(b, L->ncat);
    w_u32(b, L->doc_block);
    w_u64(b, L->nentries);
    w_u64(b, L->ntrees);
    w_u64(b, L->nleafvals);
    for (uint32_t i = 0; i < L->nblocks; i++) {
        const qs_block *B = &L->blocks[i];
        w_u32(b, B->kind);
        w_u32(b, B->width);
        w_u32(b, B->words);
        w_u32(b, B->group_begin);
        w_u32(b, B->group_end);
        w_u32(b, B->cat_begin);
        w_u32(b, B->cat_end);
        w_u32(b, 0);
        w_u64(b, B->tree_begin);
        w_u64(b, B->tree_end);
    }
    for (uint32_t i = 0; i < L->ngroups; i++) {
        const qs_group *G = &L->groups[i];
        w_u32(b, G->feature);
        w_u32(b, G->rule);
        w_u32(b, G->begin);
        w_u32(b, G->end);
        w_u32(b, G->sp_begin);
        w_u32(b, G->sp_end);
    }
    for (uint64_t i = 0; i < L->nentries; i++)
        w_f64(b, L->thr[i]);
    for (uint64_t i = 0; i < L->nentries; i++)
        w_u32(b, L->etree[i]);
    for (uint64_t i = 0; i < L->nentries; i++)
        w_u64(b, L->emask[i]);
    for (uint32_t i = 0; i < L->ncat; i++) {
        w_u32(b, L->cats[i].tree);
        w_u32(b, L->cats[i].node);
        w_u64(b, L->cats[i].mask);
    }
    for (uint64_t t = 0; t < L->ntrees; t++)
        w_u32(b, L->nleaves[t]);
    for (uint64_t t = 0; t < L->ntrees; t++)
        w_u8(b, L->treeflags[t]);
    for (uint64_t i = 0; i < L->nleafvals; i++)
        w_f64(b, L->leaves[i]);
}

int qsm_write(const qs_model *m, const qs_layout *L, unsigned char **out, size_t *out_len,
              qs_error *err)
{
    /* A model with an output affine gets an AFFN section, listed first so
     * that a reader of version 1.0 refuses the file (unknown required
     * section: unsupported) before it looks at anything else; every other
     * model is written exactly as by version 1.0. */
    wbuf sec[5] = { { 0 }, { 0 }, { 0 }, { 0 }, { 0 } };
    uint32_t ids[5];
    int ns = 0;
    /* Linear leaves likewise: LINR first, so that older readers refuse the
     * file instead of scoring the leaves' plain values. */
    if (m->num_linear) {
        ids[ns] = SEC_LINR;
        write_linear(&sec[ns++], m);
    }
    if (m->out_affine) {
        ids[ns] = SEC_AFFN;
        write_affine(&sec[ns++], m);
    }
    ids[ns] = SEC_INFO;
    write_info(&sec[ns++], m);
    ids[ns] = SEC_TREE;
    write_trees(&sec[ns++], m);
    ids[ns] = SEC_QSLY;
    write_layout(&sec[ns++], L);
    wbuf f = { 0 };
    int rc = -1;
    for (int i = 0; i < ns; i++)
        if (sec[i].oom)
            goto nomem;
    unsigned char hdr[QSM_HEADER_SIZE + 5 * QSM_ENTRY_SIZE];
    const size_t hlen = QSM_HEADER_SIZE + (size_t)ns * QSM_ENTRY_SIZE;
    memset(hdr, 0, sizeof hdr);
    w_bytes(&f, hdr, hlen);
    for (int i = 0; i < ns; i++) {
        size_t bound = ZSTD_compressBound(sec[i].n);
        unsigned char *z = malloc(bound ? bound : 1);
        if (!z)
            goto nomem;
        size_t zn = ZSTD_compress(z, bound, sec[i].p, sec[i].n, 9);
        if (ZSTD_isError(zn)) {
            free(z);
            if (zstd_nomem(zn))
                goto nomem;
            qs_fail(err, QS_ERR_IO, 0, "zstd: %s", ZSTD_getErrorName(zn));
            goto done;
        }
        unsigned char *e = hdr + QSM_HEADER_SIZE + (size_t)i * QSM_ENTRY_SIZE;
        put_u32_at(e + 0, ids[i]);
        put_u32_at(e + 4, SEC_REQUIRED | SEC_ZSTD);
        put_u64_at(e + 8, f.n);
        put_u64_at(e + 16, zn);
        put_u64_at(e + 24, sec[i].n);
        put_u32_at(e + 32, qs_crc32c(0, z, zn));
        w_bytes(&f, z, zn);
        free(z);
    }
    if (f.oom)
        goto nomem;
    memcpy(hdr, QSM_MAGIC, 8);
    hdr[8] = QSM_VERSION_MAJOR;
    hdr[10] = info_extended(m)       ? QSM_VERSION_MINOR_ITER
              : m->num_linear        ? QSM_VERSION_MINOR_LINEAR
              : m->transform_average ? QSM_VERSION_MINOR_AVERAGE
              : m->out_affine      ? QSM_VERSION_MINOR_AFFINE
                                   : QSM_VERSION_MINOR;
    put_u32_at(hdr + 16, QSM_HEADER_SIZE);
    put_u32_at(hdr + 20, (uint32_t)ns);
    put_u64_at(hdr + 24, f.n);
    put_u32_at(hdr + 32, qs_crc32c(0, hdr + QSM_HEADER_SIZE, (size_t)ns * QSM_ENTRY_SIZE));
    put_u32_at(hdr + 60, qs_crc32c(0, hdr, 60));
    memcpy(f.p, hdr, hlen);
    *out = f.p;
    *out_len = f.n;
    f.p = NULL;
    rc = 0;
    goto done;
nomem:
    qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
done:
    for (int i = 0; i < ns; i++)
        free(sec[i].p);
    free(f.p);
    return rc;
}

int qs_compile(const qs_model *m, const qs_compile_options *opt, unsigned char **out,
               size_t *out_len, qs_error *err)
{
    if (qs_model_validate(m, err) != 0)
        return -1;
    qs_layout *L = qs_layout_build(m, opt ? opt->delta : 0, opt ? opt->tree_block : 0,
                                   opt ? opt->reverse : NULL, err);
    if (L && opt)
        L->doc_block = opt->doc_block;
    if (!L)
        return -1;
    int rc = qsm_write(m, L, out, out_len, err);
    qs_layout_free(L);
    return rc;
}

/* ------------------------------------------------------------ reading */

typedef struct rbuf {
    const unsigned char *p;
    size_t n, pos;
    int bad;
} rbuf;

/* r->bad: 1 the section is malformed, 2 out of memory; the first cause
 * stays. */
static int r_need(rbuf *r, uint64_t n)
{
    if (r->bad)
        return 0;
    if (n > r->n - r->pos) {
        r->bad = 1;
        return 0;
    }
    return 1;
}
static uint32_t get_u32_at(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64_at(const unsigned char *p)
{
    return (uint64_t)get_u32_at(p) | (uint64_t)get_u32_at(p + 4) << 32;
}
static uint8_t r_u8(rbuf *r) { return r_need(r, 1) ? r->p[r->pos++] : 0; }
static uint32_t r_u32(rbuf *r)
{
    if (!r_need(r, 4))
        return 0;
    uint32_t v = get_u32_at(r->p + r->pos);
    r->pos += 4;
    return v;
}
static uint64_t r_u64(rbuf *r)
{
    if (!r_need(r, 8))
        return 0;
    uint64_t v = get_u64_at(r->p + r->pos);
    r->pos += 8;
    return v;
}
static double r_f64(rbuf *r)
{
    uint64_t v = r_u64(r);
    double d;
    memcpy(&d, &v, 8);
    return d;
}
static void r_str(rbuf *r, char *dst, size_t width)
{
    if (!r_need(r, width))
        return;
    memcpy(dst, r->p + r->pos, width);
    dst[width - 1] = '\0';
    r->pos += width;
}
/* Allocate count*size bytes only if the section still holds that many
 * records of at least `size` bytes: a small file cannot ask for a huge buffer. */
static void *r_alloc(rbuf *r, uint64_t count, size_t disk_size, size_t mem_size)
{
    if (r->bad)
        return NULL;
    if (count > (r->n - r->pos) / disk_size) {
        r->bad = 1;
        return NULL;
    }
    void *p = calloc(count ? (size_t)count : 1, mem_size);
    if (!p)
        r->bad = 2;
    return p;
}

/* out_float: where the extension's output flag goes (set on the model once
 * AFFN is read: the model validates without it until then). */
static int read_info(rbuf *r, qs_model *m, int *out_float, qs_error *err)
{
    uint32_t src = r_u32(r), cmp = r_u32(r), fp = r_u32(r), fa = r_u32(r), am = r_u32(r);
    m->num_features = r_u32(r);
    uint32_t k = r_u32(r);
    m->transform_average = r_u32(r);
    m->transform_param = r_f64(r);
    r_str(r, m->transform, 16);
    r_str(r, m->objective, 64);
    if (r->bad)
        return qs_fail(err, QS_ERR_FORMAT, 0, "INFO section is truncated");
    if (src >= QS_SRC_COUNT || cmp > 1 || fp > 1 || fa > QS_ACC_FLOAT_DOUBLE || am > 1 ||
        !qs_transform_known(m->transform) || m->transform_average > QS_MAX_TREES)
        return qs_fail(err, QS_ERR_FORMAT, 0, "INFO section holds invalid values");
    m->source = (qs_source)src;
    m->cmp = (int)cmp;
    m->float_precision = (int)fp;
    m->float_accumulate = (int)fa;
    m->absent_missing = (int)am;
    if (qs_model_set_classes(m, k, err))
        return -1;
    for (uint32_t c = 0; c < k; c++)
        m->base[c] = r_f64(r);
    if (!r->bad && r->n - r->pos == 8) {
        /* version 1.5: trees per iteration, output flags (bit 0: rounded
         * to float32; checked with the model, after AFFN) */
        m->iter_trees = r_u32(r);
        uint32_t flags = r_u32(r);
        if (m->iter_trees > QS_MAX_TREES || flags > 1u)
            return qs_fail(err, QS_ERR_FORMAT, 0, "INFO section holds invalid values");
        if (out_float)
            *out_float = (int)flags;
    }
    if (r->bad || r->pos != r->n)
        return qs_fail(err, QS_ERR_FORMAT, 0, "INFO section has the wrong size");
    return 0;
}

/* AFFN: decoded after TREE and QSLY (it needs INFO's class count); the
 * model is validated again with it. */
static int read_affine(rbuf *r, qs_model *m, qs_error *err)
{
    m->out_affine = 1;
    m->out_scale = r_f64(r);
    for (uint32_t c = 0; c < m->num_classes; c++)
        m->out_bias[c] = r_f64(r);
    if (!r->bad && r->n - r->pos == 8) {
        /* the divisor (ONNX AVERAGE): a whole count of 2 .. QS_MAX_TREES */
        double dv = r_f64(r);
        if (!(dv >= 2.0 && dv <= (double)QS_MAX_TREES && dv == (double)(uint32_t)dv))
            return qs_fail(err, QS_ERR_FORMAT, 0, "AFFN section holds a bad divisor");
        m->out_divide = (uint32_t)dv;
    }
    if (r->bad || r->pos != r->n)
        return qs_fail(err, QS_ERR_FORMAT, 0, "AFFN section has the wrong size");
    return qs_model_validate(m, err);
}

/* LINR: decoded last; the model is linked and validated again with it. */
static int read_linear(rbuf *r, qs_model *m, qs_error *err)
{
    uint64_t nl = r_u64(r), nt = r_u64(r);
    if (r->bad || nl > m->num_nodes || nt > UINT32_MAX ||
        r->n != 16 + 24 * nl + 12 * nt)
        return qs_fail(err, QS_ERR_FORMAT, 0, "LINR section has the wrong size");
    m->linear = r_alloc(r, nl, 24, sizeof *m->linear);
    if (!r->bad)
        m->num_linear = m->cap_linear = nl;
    uint64_t off = 0;
    for (uint64_t i = 0; i < nl && !r->bad; i++) {
        m->linear[i].node = r_u64(r);
        m->linear[i].konst = r_f64(r);
        m->linear[i].nterms = r_u32(r);
        r_u32(r);
        m->linear[i].term_off = off;
        off += m->linear[i].nterms;
    }
    if (!r->bad && off != nt)
        return qs_fail(err, QS_ERR_FORMAT, 0, "LINR section: term counts do not add up");
    m->lin_feature = r_alloc(r, nt, 4, sizeof *m->lin_feature);
    for (uint64_t i = 0; i < nt && !r->bad; i++)
        m->lin_feature[i] = r_u32(r);
    m->lin_coeff = r_alloc(r, nt, 8, sizeof *m->lin_coeff);
    if (!r->bad)
        m->num_lin_terms = m->cap_lin_terms = nt;
    for (uint64_t i = 0; i < nt && !r->bad; i++)
        m->lin_coeff[i] = r_f64(r);
    if (r->bad == 2)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    if (r->bad || r->pos != r->n)
        return qs_fail(err, QS_ERR_FORMAT, 0, "LINR section has the wrong size");
    if (qs_model_link_linear(m, err) != 0)
        return -1;
    return qs_model_validate(m, err);
}

/* The in-memory node record is the file's (format/qsm.md, "Section TREE")
 * on a little-endian machine: the nodes can then stay where they were
 * decompressed, with no copy. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define QSM_NODES_IN_PLACE                                                              \
    (sizeof(qs_node) == 32 && offsetof(qs_node, kind) == 0 && offsetof(qs_node, miss) == 1 && \
     offsetof(qs_node, default_left) == 2 && offsetof(qs_node, flags) == 3 &&          \
     offsetof(qs_node, feature) == 4 && offsetof(qs_node, left) == 8 &&                \
     offsetof(qs_node, right) == 12 && offsetof(qs_node, cat_off) == 16 &&             \
     offsetof(qs_node, cat_nwords) == 20 && offsetof(qs_node, value) == 24)
#else
#define QSM_NODES_IN_PLACE 0
#endif

/* TREE from its raw bytes *rawp (r reads them).  Where the node records
 * can be used as they are, the buffer becomes the model's node array (its
 * nodes moved to its start and the rest given back) and *rawp is set to
 * NULL. */
static int read_trees(rbuf *r, unsigned char **rawp, qs_model *m, unsigned threads, qs_error *err)
{
    uint64_t nt = r_u64(r), nn = r_u64(r), nc = r_u64(r);
    if (r->bad)
        return qs_fail(err, QS_ERR_FORMAT, 0, "TREE section is truncated");
    if (nt > QS_MAX_TREES || nc > UINT32_MAX)
        return qs_fail(err, QS_ERR_LIMIT, 0, "TREE section: counts beyond the limits");
    m->trees = r_alloc(r, nt, 16, sizeof *m->trees);
    if (!r->bad)
        m->num_trees = m->cap_trees = nt;
    uint64_t off = 0;
    for (uint64_t t = 0; t < nt && !r->bad; t++) {
        m->trees[t].class_id = r_u32(r);
        m->trees[t].num_nodes = r_u32(r);
        m->trees[t].weight = r_f64(r);
        m->trees[t].node_off = off;
        off += m->trees[t].num_nodes;
    }
    if (!r->bad && off != nn)
        return qs_fail(err, QS_ERR_FORMAT, 0, "TREE section: node counts do not add up");
    const int in_place = QSM_NODES_IN_PLACE && nn > 0 && !r->bad &&
                         nn <= (r->n - r->pos) / 32 && *rawp == r->p;
    const size_t node_pos = r->pos;
    if (in_place) {
        r->pos += 32 * (size_t)nn;
    } else {
        m->nodes = r_alloc(r, nn, 32, sizeof *m->nodes);
        if (!r->bad)
            m->num_nodes = m->cap_nodes = nn;
        /* 32 bytes a node, checked once (r_alloc saw room for nn of them). */
        for (uint64_t i = 0; i < nn && !r->bad; i++) {
            qs_node *n = &m->nodes[i];
            const unsigned char *p = r->p + r->pos;
            n->kind = p[0];
            n->miss = p[1];
            n->default_left = p[2];
            n->flags = p[3];
            n->feature = get_u32_at(p + 4);
            n->left = (int32_t)get_u32_at(p + 8);
            n->right = (int32_t)get_u32_at(p + 12);
            n->cat_off = get_u32_at(p + 16);
            n->cat_nwords = get_u32_at(p + 20);
            uint64_t v = get_u64_at(p + 24);
            memcpy(&n->value, &v, sizeof v);
            r->pos += 32;
        }
    }
    m->cat_words = r_alloc(r, nc, 4, sizeof *m->cat_words);
    if (!r->bad)
        m->num_cat_words = m->cap_cat_words = nc;
    for (uint64_t i = 0; i < nc && !r->bad; i++)
        m->cat_words[i] = r_u32(r);
    if (r->bad == 2)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    if (r->bad || r->pos != r->n)
        return qs_fail(err, QS_ERR_FORMAT, 0, "TREE section has the wrong size");
    if (in_place) {
        unsigned char *raw = *rawp;
        const size_t bytes = 32 * (size_t)nn;
        memmove(raw, raw + node_pos, bytes);
        unsigned char *shrunk = realloc(raw, bytes);
        m->nodes = (qs_node *)(void *)(shrunk ? shrunk : raw);
        m->num_nodes = m->cap_nodes = nn;
        *rawp = NULL;
        r->p = NULL;
    }
    return qs_model_validate_shape(m, threads, err);
}

/* A stored τ of 0: the scorer rebuilds the layout from TREE for this
 * machine's cache, keeping only Δ, δ and the tree flags, and choosing τ from
 * the number of scan entries and leaf values (format/qsm.md, "Block sizes at
 * load").  So only those are decoded and checked, and the section's size
 * against its counts; the blocks, entries and leaf tables are skipped. */
static int read_layout_sketch(rbuf *r, qs_layout *L, qs_error *err)
{
    const uint64_t B = L->nblocks, G = L->ngroups, C = L->ncat, E = L->nentries, T = L->ntrees;
    if (L->delta < 1 || L->delta > QS_MAX_DELTA || L->doc_block > QS_MAX_DOC_BLOCK)
        return qs_fail(err, QS_ERR_FORMAT, 0, "layout: delta or document block out of range");
    /* E <= 2^32 - 1 and T <= QS_MAX_TREES were checked; L is bounded by
     * the section's size before it is multiplied. */
    if (L->nleafvals > r->n / 8 ||
        48 + 48 * B + 24 * G + 20 * E + 16 * C + 5 * T + 8 * L->nleafvals != r->n)
        return qs_fail(err, QS_ERR_FORMAT, 0, "QSLY section has the wrong size");
    const unsigned char *g = r->p + 48 + 48 * B;
    uint64_t scan = 0;
    for (uint64_t i = 0; i < G; i++, g += 24) {
        uint32_t begin = get_u32_at(g + 8), end = get_u32_at(g + 12);
        scan += end > begin ? end - begin : 0;
    }
    const unsigned char *f = r->p + 48 + 48 * B + 24 * G + 20 * E + 16 * C + 4 * T;
    L->treeflags = calloc(T + 1, 1);
    if (!L->treeflags)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    for (uint64_t t = 0; t < T; t++) {
        if (f[t] & ~QS_TREE_REVERSED)
            return qs_fail(err, QS_ERR_FORMAT, 0, "layout: tree %llu has unknown flags",
                           (unsigned long long)t);
        L->treeflags[t] = f[t];
    }
    L->nblocks = L->ngroups = L->ncat = 0;
    L->nentries = 0;
    L->sketch = 1;
    L->sketch_scan = scan;
    r->pos = r->n;
    return 0;
}

static int read_layout(rbuf *r, qs_layout *L, const qs_model *m, qs_error *err)
{
    L->delta = r_u32(r);
    L->tree_block = r_u32(r);
    L->nblocks = r_u32(r);
    L->ngroups = r_u32(r);
    L->ncat = r_u32(r);
    L->doc_block = r_u32(r);
    L->nentries = r_u64(r);
    L->ntrees = r_u64(r);
    L->nleafvals = r_u64(r);
    if (r->bad)
        return qs_fail(err, QS_ERR_FORMAT, 0, "QSLY section is truncated");
    if (L->ntrees != m->num_trees || L->nentries > UINT32_MAX)
        return qs_fail(err, QS_ERR_FORMAT, 0, "QSLY section does not match the model");
    if (L->tree_block == 0)
        return read_layout_sketch(r, L, err);
    L->blocks = r_alloc(r, L->nblocks, 48, sizeof *L->blocks);
    for (uint32_t i = 0; i < L->nblocks && !r->bad; i++) {
        qs_block *B = &L->blocks[i];
        B->kind = r_u32(r);
        B->width = r_u32(r);
        B->words = r_u32(r);
        B->group_begin = r_u32(r);
        B->group_end = r_u32(r);
        B->cat_begin = r_u32(r);
        B->cat_end = r_u32(r);
        r_u32(r);
        B->tree_begin = r_u64(r);
        B->tree_end = r_u64(r);
    }
    L->groups = r_alloc(r, L->ngroups, 24, sizeof *L->groups);
    for (uint32_t i = 0; i < L->ngroups && !r->bad; i++) {
        qs_group *G = &L->groups[i];
        G->feature = r_u32(r);
        G->rule = r_u32(r);
        G->begin = r_u32(r);
        G->end = r_u32(r);
        G->sp_begin = r_u32(r);
        G->sp_end = r_u32(r);
    }
    /* Fixed-size arrays: r_alloc has checked the section holds them. */
    L->thr = r_alloc(r, L->nentries, 8, sizeof *L->thr);
    for (uint64_t i = 0; i < L->nentries && !r->bad; i++, r->pos += 8) {
        uint64_t v = get_u64_at(r->p + r->pos);
        memcpy(&L->thr[i], &v, sizeof v);
    }
    L->etree = r_alloc(r, L->nentries, 4, sizeof *L->etree);
    for (uint64_t i = 0; i < L->nentries && !r->bad; i++, r->pos += 4)
        L->etree[i] = get_u32_at(r->p + r->pos);
    L->emask = r_alloc(r, L->nentries, 8, sizeof *L->emask);
    for (uint64_t i = 0; i < L->nentries && !r->bad; i++, r->pos += 8)
        L->emask[i] = get_u64_at(r->p + r->pos);
    L->cats = r_alloc(r, L->ncat, 16, sizeof *L->cats);
    for (uint32_t i = 0; i < L->ncat && !r->bad; i++) {
        L->cats[i].tree = r_u32(r);
        L->cats[i].node = r_u32(r);
        L->cats[i].mask = r_u64(r);
    }
    L->nleaves = r_alloc(r, L->ntrees, 4, sizeof *L->nleaves);
    L->leaf_off = r->bad ? NULL : calloc(L->ntrees + 1, sizeof *L->leaf_off);
    uint64_t off = 0;
    for (uint64_t t = 0; t < L->ntrees && !r->bad && L->leaf_off; t++) {
        L->nleaves[t] = r_u32(r);
        L->leaf_off[t] = off;
        off += L->nleaves[t];
    }
    L->treeflags = r_alloc(r, L->ntrees, 1, sizeof *L->treeflags);
    for (uint64_t t = 0; t < L->ntrees && !r->bad; t++)
        L->treeflags[t] = r_u8(r);
    L->leaves = r_alloc(r, L->nleafvals, 8, sizeof *L->leaves);
    for (uint64_t i = 0; i < L->nleafvals && !r->bad; i++, r->pos += 8) {
        uint64_t v = get_u64_at(r->p + r->pos);
        memcpy(&L->leaves[i], &v, sizeof v);
    }
    if (r->bad == 2 || (!r->bad && !L->leaf_off))
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    if (r->bad || r->pos != r->n)
        return qs_fail(err, QS_ERR_FORMAT, 0, "QSLY section has the wrong size");
    return qs_layout_check(L, m, err);
}

/* ------------------------------------------------------------ bounded sections
 *
 * A section's recorded raw size is believed only as far as the counts
 * already read allow (format/qsm.md, "Loading", step 10): INFO by its
 * largest form; TREE by the counts in its own first 24 bytes (read by
 * decompressing just those) and, while it is decompressed step by step, by
 * its tree and node records (a bomb of garbage stops at the first bad
 * record, not after the whole frame); QSLY by TREE's counts. */

/* zstd windows up to this size are accepted (qs-compile's level 9 uses at
 * most 2^22): a crafted frame header cannot make the decoder allocate more. */
#define QSM_WINDOW_LOG_MAX 24
#define QSM_STEP ((size_t)1 << 20)
#define QSM_ONESHOT ((uint64_t)8 << 20)

/* What the TREE records seen so far imply, checked as they arrive. */
typedef struct tree_check {
    uint64_t nt, nn, nc;
    uint64_t t_done, n_done, sum;
    uint64_t cur_tree, cur_left, cur_leaves, cur_nodes; /* the tree whose nodes are arriving */
} tree_check;

static const char *tree_progress(tree_check *c, const unsigned char *p, size_t have)
{
    for (; c->t_done < c->nt && 24 + 16 * (c->t_done + 1) <= have; c->t_done++) {
        uint32_t k = get_u32_at(p + 24 + 16 * c->t_done + 4);
        if (k == 0 || k > QS_MAX_TREE_NODES)
            return "TREE section: a tree with no nodes or beyond the node limit";
        c->sum += k;
        if (c->sum > c->nn)
            return "TREE section: node counts do not add up";
    }
    if (c->t_done < c->nt)
        return NULL;
    if (c->sum != c->nn)
        return "TREE section: node counts do not add up";
    const size_t base = 24 + 16 * (size_t)c->nt;
    /* The nodes that have arrived, a tree (or the part of it here) at a time. */
    const uint64_t arrived = have < base ? 0 : (have - base) / 32;
    const uint64_t upto = arrived < c->nn ? arrived : c->nn;
    while (c->n_done < upto) {
        if (c->cur_left == 0) {
            c->cur_left = get_u32_at(p + 24 + 16 * c->cur_tree + 4);
            c->cur_nodes = c->cur_left;
            c->cur_leaves = 0;
            c->cur_tree++;
        }
        const uint64_t k = upto - c->n_done < c->cur_left ? upto - c->n_done : c->cur_left;
        const unsigned char *q = p + base + 32 * (size_t)c->n_done;
        uint64_t leaves = 0;
        unsigned bad = 0;
        for (uint64_t i = 0; i < k; i++) {
            const unsigned char kind = q[32 * i];
            bad |= kind > 2;
            leaves += kind == 0;
        }
        if (bad)
            return "TREE section: a node of unknown kind";
        c->n_done += k;
        c->cur_leaves += leaves;
        c->cur_left -= k;
        /* A binary tree of n nodes has (n + 1) / 2 leaves. */
        if (c->cur_left == 0 && c->cur_leaves * 2 != c->cur_nodes + 1)
            return "TREE section: a tree whose leaves and splits do not match";
    }
    return NULL;
}

/* The raw bytes of a section into a new buffer of exactly rawsz bytes,
 * checking TREE's records (tc, when not NULL) as they arrive. */
static unsigned char *section_bytes_into(const unsigned char *src, uint64_t stored,
                                         uint64_t rawsz, int zstd, tree_check *tc, unsigned s,
                                         long long off, unsigned char *into, qs_error *err);

static unsigned char *section_bytes(const unsigned char *src, uint64_t stored, uint64_t rawsz,
                                    int zstd, tree_check *tc, unsigned s, long long off,
                                    qs_error *err)
{
    return section_bytes_into(src, stored, rawsz, zstd, tc, s, off, NULL, err);
}

/* Whether a compressed section is decoded in one call (below). */
static int section_oneshot(uint64_t stored, uint64_t rawsz)
{
    return rawsz <= QSM_ONESHOT || rawsz / 32 <= stored;
}

/* As section_bytes; `into`, when not NULL, is a buffer of rawsz bytes
 * (at least 1) for a compressed section decoded in one call, allocated by
 * the caller's thread (so that its memory is that thread's to reuse), and
 * taken over (returned, or freed on failure). */
static unsigned char *section_bytes_into(const unsigned char *src, uint64_t stored,
                                         uint64_t rawsz, int zstd, tree_check *tc, unsigned s,
                                         long long off, unsigned char *into, qs_error *err)
{
    if (into && (!zstd || !section_oneshot(stored, rawsz))) {
        free(into);
        into = NULL;
    }
    if (!zstd) {
        unsigned char *raw = malloc(rawsz ? (size_t)rawsz : 1);
        if (!raw) {
            qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (section %u: %llu bytes)", s,
                    (unsigned long long)rawsz);
            return NULL;
        }
        memcpy(raw, src, (size_t)rawsz);
        const char *why = tc ? tree_progress(tc, raw, (size_t)rawsz) : NULL;
        if (why) {
            free(raw);
            qs_fail(err, QS_ERR_FORMAT, 0, "%s", why);
            return NULL;
        }
        return raw;
    }
    /* A section no larger than a few times its stored bytes (or small) is
     * decoded in one call straight into its buffer; larger claims, which
     * only a crafted frame makes, step by step with checks as the bytes
     * arrive, so garbage stops before the buffer grows. */
    if (section_oneshot(stored, rawsz)) {
        unsigned char *raw = into ? into : malloc(rawsz ? (size_t)rawsz : 1);
        ZSTD_DCtx *dc = raw ? ZSTD_createDCtx() : NULL;
        if (!dc) {
            free(raw);
            qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (section %u: %llu bytes)", s,
                    (unsigned long long)rawsz);
            return NULL;
        }
        size_t got = ZSTD_decompressDCtx(dc, raw, (size_t)rawsz, src, (size_t)stored);
        ZSTD_freeDCtx(dc);
        if (zstd_nomem(got)) {
            free(raw);
            qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (section %u: decompressing)", s);
            return NULL;
        }
        const char *why = ZSTD_isError(got) || got != rawsz ? "does not decompress to its recorded size"
                                                            : NULL;
        if (why) {
            free(raw);
            qs_fail_at(err, QS_ERR_FORMAT, off, "section %u %s", s, why);
            return NULL;
        }
        if (tc && (why = tree_progress(tc, raw, (size_t)rawsz)) != NULL) {
            free(raw);
            qs_fail(err, QS_ERR_FORMAT, 0, "%s", why);
            return NULL;
        }
        return raw;
    }
    ZSTD_DStream *ds = ZSTD_createDStream();
    size_t cap = rawsz < QSM_STEP ? (size_t)rawsz : QSM_STEP, used = 0;
    unsigned char *raw = malloc(cap ? cap : 1);
    if (!ds || !raw) {
        ZSTD_freeDStream(ds);
        free(raw);
        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (section %u)", s);
        return NULL;
    }
    ZSTD_DCtx_setParameter(ds, ZSTD_d_windowLogMax, QSM_WINDOW_LOG_MAX);
    ZSTD_inBuffer in = { src, (size_t)stored, 0 };
    size_t ret = 1;
    const char *why = NULL;
    for (;;) {
        ZSTD_outBuffer out = { raw, cap, used };
        ret = ZSTD_decompressStream(ds, &out, &in);
        if (ZSTD_isError(ret)) {
            why = "does not decompress";
            break;
        }
        int progress = out.pos != used;
        used = out.pos;
        if (tc && (why = tree_progress(tc, raw, used)) != NULL)
            break;
        if (ret == 0 || (!progress && in.pos == in.size))
            break;
        if (used == cap) {
            if (cap == rawsz) {
                why = "decompresses to more than its recorded size";
                break;
            }
            size_t nc = cap > rawsz / 2 ? (size_t)rawsz : cap * 2;
            unsigned char *nr = realloc(raw, nc);
            if (!nr) {
                ZSTD_freeDStream(ds);
                free(raw);
                qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (section %u: %zu of %llu bytes)",
                        s, nc, (unsigned long long)rawsz);
                return NULL;
            }
            raw = nr;
            cap = nc;
        }
    }
    ZSTD_freeDStream(ds);
    if (zstd_nomem(ret)) {
        free(raw);
        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (section %u: decompressing)", s);
        return NULL;
    }
    if (!why && (ret != 0 || used != rawsz || in.pos != in.size))
        why = "does not decompress to its recorded size";
    if (why) {
        free(raw);
        if (tc && strncmp(why, "TREE", 4) == 0)
            qs_fail(err, QS_ERR_FORMAT, 0, "%s", why);
        else
            qs_fail_at(err, QS_ERR_FORMAT, off, "section %u %s", s, why);
        return NULL;
    }
    return raw;
}

/* TREE's counts, from the first 24 bytes of its raw content. */
static int tree_counts(const unsigned char *src, uint64_t stored, int zstd, tree_check *tc)
{
    unsigned char h[24];
    if (!zstd) {
        if (stored < 24)
            return -1;
        memcpy(h, src, 24);
    } else {
        ZSTD_DStream *ds = ZSTD_createDStream();
        if (!ds)
            return -2;
        ZSTD_DCtx_setParameter(ds, ZSTD_d_windowLogMax, QSM_WINDOW_LOG_MAX);
        ZSTD_inBuffer in = { src, (size_t)stored, 0 };
        ZSTD_outBuffer out = { h, sizeof h, 0 };
        int nomem = 0;
        while (out.pos < out.size) {
            size_t before = in.pos, got = out.pos;
            size_t ret = ZSTD_decompressStream(ds, &out, &in);
            nomem = zstd_nomem(ret);
            if (ZSTD_isError(ret) || ret == 0 || (in.pos == before && out.pos == got))
                break;
        }
        ZSTD_freeDStream(ds);
        if (out.pos < sizeof h)
            return nomem ? -2 : -1;
    }
    memset(tc, 0, sizeof *tc);
    tc->nt = get_u64_at(h);
    tc->nn = get_u64_at(h + 8);
    tc->nc = get_u64_at(h + 16);
    return 0;
}

/* The largest QSLY section T trees of M nodes in all can need: blocks <=
 * trees; groups, categorical entries <= nodes; entries <= 2 per node; leaf
 * values <= nodes + trees. */
static uint64_t qsly_most(uint64_t T, uint64_t M)
{
    return 48 + 48 * T + 24 * M + 20 * 2 * M + 16 * M + 5 * T + 8 * (M + T);
}

/* A QSLY section decompressed ahead, while TREE is (threads > 1): its
 * table entry, and its bytes or the error its decompression gave, which
 * is reported only when the section's turn comes, after TREE's. */
typedef struct qsly_ahead {
    uint32_t s;           /* table entry; UINT32_MAX: none */
    unsigned char *raw;
    qs_error err;
} qsly_ahead;

/* The first QSLY entry, if it passes the checks its turn would make
 * first (recorded size, bound from TREE's counts) and is compressed. */
static uint32_t qsly_to_read_ahead(const unsigned char *buf, const unsigned char *tab,
                                   uint32_t nsec, const tree_check *tc)
{
    for (uint32_t s = 0; s < nsec; s++) {
        const unsigned char *e = tab + (size_t)s * QSM_ENTRY_SIZE;
        if (get_u32_at(e) != SEC_QSLY)
            continue;
        uint32_t flags = get_u32_at(e + 4);
        uint64_t off = get_u64_at(e + 8), stored = get_u64_at(e + 16), rawsz = get_u64_at(e + 24);
        if (!(flags & SEC_ZSTD) || ZSTD_getFrameContentSize(buf + off, (size_t)stored) != rawsz ||
            rawsz > qsly_most(tc->nt, tc->nn))
            return UINT32_MAX;
        return s;
    }
    return UINT32_MAX;
}

/* QSLY decoded beside TREE (threads > 1). */
typedef struct qsly_job {
    const unsigned char *src;
    uint64_t stored, rawsz;
    uint32_t s;
    long long off;
    unsigned char *into;
    unsigned char *out;
    qs_error *err;
} qsly_job;

static void *qsly_job_run(void *arg)
{
    qsly_job *j = arg;
    j->out = section_bytes_into(j->src, j->stored, j->rawsz, 1, NULL, j->s, j->off, j->into,
                                j->err);
    return NULL;
}

int qsm_check_head(const unsigned char *buf, size_t len, uint64_t *file_size, qs_error *err)
{
    if (len < QSM_HEADER_SIZE || memcmp(buf, QSM_MAGIC, 8) != 0)
        return qs_fail_at(err, QS_ERR_FORMAT, 0, "not a .qsm file (bad magic number)");
    /* The version comes before the checksum: a later major version may lay
     * out its header differently, and should read as "unsupported", not
     * "corrupt". */
    unsigned major = buf[8] | buf[9] << 8;
    if (major != QSM_VERSION_MAJOR)
        return qs_fail_at(err, QS_ERR_UNSUPPORTED, 8,
                          ".qsm version %u is not supported (this build reads %u.x)", major,
                          QSM_VERSION_MAJOR);
    if (get_u32_at(buf + 60) != qs_crc32c(0, buf, 60))
        return qs_fail_at(err, QS_ERR_FORMAT, 60, "header checksum mismatch (corrupt file)");
    uint32_t hsize = get_u32_at(buf + 16);
    if (hsize != QSM_HEADER_SIZE)
        return qs_fail_at(err, QS_ERR_FORMAT, 16, "bad header size %u", hsize);
    *file_size = get_u64_at(buf + 24);
    return 0;
}

/* The header and the section table, checked (magic, version, checksums,
 * sizes): the header's and the table's size out. */
static int check_header(const unsigned char *buf, size_t len, uint32_t *hsize_out,
                        uint32_t *nsec_out, qs_error *err)
{
    uint64_t fsize;
    if (qsm_check_head(buf, len, &fsize, err) != 0)
        return -1;
    const uint32_t hsize = QSM_HEADER_SIZE, nsec = get_u32_at(buf + 20);
    if (fsize != len)
        return qs_fail_at(err, QS_ERR_FORMAT, 24,
                          "file size %zu differs from the recorded %llu (truncated or padded)",
                          len, (unsigned long long)fsize);
    if (nsec == 0 || nsec > QSM_MAX_SECTIONS || (uint64_t)nsec * QSM_ENTRY_SIZE > len - hsize)
        return qs_fail_at(err, QS_ERR_FORMAT, 20, "bad section count %u", nsec);
    if (get_u32_at(buf + 32) != qs_crc32c(0, buf + hsize, (size_t)nsec * QSM_ENTRY_SIZE))
        return qs_fail_at(err, QS_ERR_FORMAT, 32, "section table checksum mismatch (corrupt file)");
    *hsize_out = hsize;
    *nsec_out = nsec;
    return 0;
}

/* INFO's largest raw size (its fields, and a base score per class). */
#define QSM_INFO_MOST (120 + 8 * (uint64_t)QS_MAX_CLASSES + 8)   /* with 1.5's extension */

/* Section table entry s: known flags (unknown ones, or an unknown section
 * marked required, are unsupported), inside the file, its checksum. */
static int entry_check(const unsigned char *buf, size_t len, uint32_t hsize, uint32_t nsec,
                       uint32_t s, int known, qs_error *err)
{
    const unsigned char *e = buf + hsize + (size_t)s * QSM_ENTRY_SIZE;
    const uint32_t flags = get_u32_at(e + 4);
    const uint64_t off = get_u64_at(e + 8), stored = get_u64_at(e + 16), rawsz = get_u64_at(e + 24);
    const long long eoff = (long long)(hsize + (uint64_t)s * QSM_ENTRY_SIZE);
    const uint64_t data0 = hsize + (uint64_t)nsec * QSM_ENTRY_SIZE;
    if (flags & ~(SEC_REQUIRED | SEC_ZSTD))
        return qs_fail_at(err, QS_ERR_UNSUPPORTED, eoff, "section %u uses unknown flags", s);
    if (!known && (flags & SEC_REQUIRED))
        return qs_fail_at(err, QS_ERR_UNSUPPORTED, eoff,
                          "section %u is required but unknown to this build", s);
    if (off < data0 || off > len || stored > len - off || rawsz > QSM_MAX_RAW)
        return qs_fail_at(err, QS_ERR_FORMAT, eoff, "section %u lies outside the file", s);
    if (get_u32_at(e + 32) != qs_crc32c(0, buf + off, (size_t)stored))
        return qs_fail_at(err, QS_ERR_FORMAT, (long long)off,
                          "section %u checksum mismatch (corrupt file)", s);
    return 0;
}

/* Entry s (checked): its recorded raw size is believed only once the
 * stored bytes agree with it, so a small crafted file cannot demand a huge
 * buffer. */
static int entry_sized(const unsigned char *buf, uint32_t hsize, uint32_t s, qs_error *err)
{
    const unsigned char *e = buf + hsize + (size_t)s * QSM_ENTRY_SIZE;
    const uint64_t off = get_u64_at(e + 8), stored = get_u64_at(e + 16), rawsz = get_u64_at(e + 24);
    if ((get_u32_at(e + 4) & SEC_ZSTD)
            ? ZSTD_getFrameContentSize(buf + off, (size_t)stored) != rawsz
            : stored != rawsz)
        return qs_fail_at(err, QS_ERR_FORMAT, (long long)off,
                          "section %u does not match its recorded size", s);
    return 0;
}

int qsm_read(const unsigned char *buf, size_t len, unsigned threads, qs_model **mp,
             qs_layout **lp, qs_error *err)
{
    *mp = NULL;
    *lp = NULL;
    uint32_t hsize, nsec;
    if (check_header(buf, len, &hsize, &nsec, err) != 0)
        return -1;
    const unsigned char *tab = buf + hsize;

    qs_model *m = qs_model_new(QS_SRC_UNKNOWN, err);
    qs_layout *L = calloc(1, sizeof *L);
    int have[5] = { 0, 0, 0, 0, 0 };
    int out_float = 0;   /* INFO's output flag, set once AFFN is read */
    unsigned tune_seen = 0;
    unsigned char *raw = NULL;
    qsly_ahead qa = { UINT32_MAX, NULL, { 0 } };
#if !QS_HAVE_OPENMP
    (void)threads;
#endif
    if (!m || !L) {
        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        goto fail;
    }
    /* Sections are read in a fixed order (INFO, TREE, QSLY, then the
     * optional AFFN) whatever their order in the table, since each depends
     * on the one before. */
    for (int want = 0; want < 5; want++) {
        const uint32_t wid = want == 0 ? SEC_INFO : want == 1 ? SEC_TREE
                             : want == 2 ? SEC_QSLY : want == 3 ? SEC_AFFN : SEC_LINR;
        for (uint32_t s = 0; s < nsec; s++) {
            const unsigned char *e = tab + (size_t)s * QSM_ENTRY_SIZE;
            uint32_t id = get_u32_at(e), flags = get_u32_at(e + 4);
            uint64_t off = get_u64_at(e + 8), stored = get_u64_at(e + 16), rawsz = get_u64_at(e + 24);
            long long eoff = (long long)(hsize + (uint64_t)s * QSM_ENTRY_SIZE);
            int known = id == SEC_INFO || id == SEC_TREE || id == SEC_QSLY || id == SEC_AFFN ||
                        id == SEC_LINR || id == SEC_TUNE;
            /* First pass: check every entry; TUNE, read elsewhere
             * (qs_qsm_read_tuning), at most once too. */
            if (want == 0 && entry_check(buf, len, hsize, nsec, s, known, err) != 0)
                goto fail;
            if (want == 0 && id == SEC_TUNE && tune_seen++) {
                qs_fail_at(err, QS_ERR_FORMAT, eoff, "duplicate section %u (a second TUNE)", s);
                goto fail;
            }
            if (id != wid)
                continue;
            if (have[want]) {
                qs_fail_at(err, QS_ERR_FORMAT, eoff, "duplicate section %u", s);
                goto fail;
            }
            have[want] = 1;
            size_t rn = (size_t)rawsz;
            if (entry_sized(buf, hsize, s, err) != 0)
                goto fail;
            /* Then only as large as the counts read so far allow. */
            tree_check tc;
            uint64_t most;
            if (want == 0) {
                most = QSM_INFO_MOST;
            } else if (want == 1) {
                const int tcr = tree_counts(buf + off, stored, (flags & SEC_ZSTD) != 0, &tc);
                if (tcr != 0) {
                    if (tcr == -2)
                        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory (decompressing TREE)");
                    else
                        qs_fail(err, QS_ERR_FORMAT, 0, "TREE section is truncated");
                    goto fail;
                }
                if (tc.nt > QS_MAX_TREES || tc.nc > UINT32_MAX || tc.nn < tc.nt ||
                    tc.nn > tc.nt * QS_MAX_TREE_NODES) {
                    qs_fail(err, QS_ERR_LIMIT, 0, "TREE section: counts beyond the limits");
                    goto fail;
                }
                most = 24 + 16 * tc.nt + 32 * tc.nn + 4 * tc.nc;
                if (rawsz != most) {
                    qs_fail(err, QS_ERR_FORMAT, 0, "TREE section has the wrong size");
                    goto fail;
                }
            } else if (want == 3) {
                most = 16 + 8 * (uint64_t)m->num_classes; /* AFFN: scale, bias per class, [divisor] */
            } else if (want == 4) {
                /* LINR: linear leaves <= nodes, terms per leaf <= min(N, 2^20) */
                uint64_t M = m->num_nodes, per = m->num_features;
                if (per > QS_MAX_LINEAR_TERMS)
                    per = QS_MAX_LINEAR_TERMS;
                uint64_t terms = M * per > UINT32_MAX ? UINT32_MAX : M * per;
                most = 16 + 24 * M + 12 * terms;
            } else {
                most = qsly_most(m->num_trees, m->num_nodes);
            }
            if (rawsz > most) {
                qs_fail_at(err, QS_ERR_FORMAT, eoff,
                           "section %u: raw size %llu is more than its counts allow (%llu)", s,
                           (unsigned long long)rawsz, (unsigned long long)most);
                goto fail;
            }
            if (want == 2 && s == qa.s) {
                /* Read ahead with TREE: its bytes, or its error now. */
                raw = qa.raw;
                qa.raw = NULL;
                if (!raw) {
                    *err = qa.err;
                    goto fail;
                }
            } else if (want == 1 && (flags & SEC_ZSTD) && threads > 1 &&
                       (qa.s = qsly_to_read_ahead(buf, tab, nsec, &tc)) != UINT32_MAX) {
                /* The two large sections at once: TREE here, QSLY (which
                 * needs only TREE's counts to be bounded) beside it. */
                const unsigned char *qe = tab + (size_t)qa.s * QSM_ENTRY_SIZE;
                uint64_t qoff = get_u64_at(qe + 8), qstored = get_u64_at(qe + 16),
                         qraw = get_u64_at(qe + 24);
                /* QSLY's buffer from this thread's heap, where the layout
                 * built next can reuse it once it is freed. */
                unsigned char *qinto = section_oneshot(qstored, qraw)
                                           ? malloc(qraw ? (size_t)qraw : 1) : NULL;
                unsigned char *tinto = section_oneshot(stored, rawsz)
                                           ? malloc(rawsz ? (size_t)rawsz : 1) : NULL;
                qs_error_clear(&qa.err);
                qsly_job job = { buf + qoff, qstored, qraw, qa.s, (long long)qoff, qinto, NULL,
                                 &qa.err };
#if QS_HAVE_OPENMP
                /* A thread of its own, joined below: an OpenMP team's
                 * workers would spin-wait through the rest of the load,
                 * taking a core from it on a busy machine. */
                pthread_t th;
                const int started = pthread_create(&th, NULL, qsly_job_run, &job) == 0;
#else
                const int started = 0;
#endif
                raw = section_bytes_into(buf + off, stored, rawsz, 1, &tc, s, (long long)off, tinto,
                                         err);
#if QS_HAVE_OPENMP
                if (started)
                    pthread_join(th, NULL);
#endif
                if (!started)
                    qsly_job_run(&job);
                qa.raw = job.out;
                if (!raw)
                    goto fail;
            } else {
                raw = section_bytes(buf + off, stored, rawsz, (flags & SEC_ZSTD) != 0,
                                    want == 1 ? &tc : NULL, s, (long long)off, err);
                if (!raw)
                    goto fail;
            }
            rbuf r = { raw, rn, 0, 0 };
            int rc = want == 0 ? read_info(&r, m, &out_float, err)
                     : want == 1 ? read_trees(&r, &raw, m, threads, err)
                     : want == 2 ? read_layout(&r, L, m, err)
                     : want == 3 ? read_affine(&r, m, err)
                                 : read_linear(&r, m, err);
            free(raw);
            raw = NULL;
            if (rc)
                goto fail;
        }
        if (!have[want] && want < 3) {
            qs_fail_at(err, QS_ERR_FORMAT, hsize, "missing %s section",
                       want == 0 ? "INFO" : want == 1 ? "TREE" : "QSLY");
            goto fail;
        }
    }
    if (out_float) {
        if (!m->out_affine) {
            qs_fail_at(err, QS_ERR_FORMAT, hsize,
                       "INFO says the output is rounded to float32, but there is no AFFN section");
            goto fail;
        }
        m->out_float = 1;
        if (qs_model_validate(m, err) != 0)
            goto fail;
    }
    free(qa.raw); /* consumed unless QSLY was never reached */
    *mp = m;
    *lp = L;
    return 0;
fail:
    free(raw);
    free(qa.raw);
    qs_model_free(m);
    qs_layout_free(L);
    return -1;
}

/* ------------------------------------------------------------ INFO alone */

int qsm_peek_info(const unsigned char *buf, size_t len, uint32_t *num_features,
                  int *float_precision, int *absent_missing, qs_error *err)
{
    uint32_t hsize, nsec;
    if (check_header(buf, len, &hsize, &nsec, err) != 0)
        return -1;
    const unsigned char *tab = buf + hsize;
    for (uint32_t s = 0; s < nsec; s++) {
        const unsigned char *e = tab + (size_t)s * QSM_ENTRY_SIZE;
        if (get_u32_at(e) != SEC_INFO)
            continue;
        if (entry_check(buf, len, hsize, nsec, s, 1, err) != 0 ||
            entry_sized(buf, hsize, s, err) != 0)
            return -1;
        const int zstd = (get_u32_at(e + 4) & SEC_ZSTD) != 0;
        const uint64_t off = get_u64_at(e + 8), stored = get_u64_at(e + 16), rawsz = get_u64_at(e + 24);
        if (rawsz > QSM_INFO_MOST)
            return qs_fail_at(err, QS_ERR_FORMAT, (long long)off, "INFO section is too large");
        unsigned char *raw = section_bytes(buf + off, stored, rawsz, zstd, NULL, s,
                                           (long long)off, err);
        if (!raw)
            return -1;
        qs_model *m = qs_model_new(QS_SRC_UNKNOWN, err);
        int rc = -1;
        if (m) {
            rbuf r = { raw, (size_t)rawsz, 0, 0 };
            rc = read_info(&r, m, NULL, err);
            if (rc == 0) {
                *num_features = m->num_features;
                *float_precision = m->float_precision;
                *absent_missing = m->absent_missing;
            }
            qs_model_free(m);
        }
        free(raw);
        return rc;
    }
    return qs_fail_at(err, QS_ERR_FORMAT, hsize, "missing INFO section");
}

/* ------------------------------------------------------------ inspection */

int qs_qsm_get_file_info(const unsigned char *buf, size_t len, qs_qsm_file_info *info,
                         qs_error *err)
{
    memset(info, 0, sizeof *info);
    if (len >= QSM_HEADER_SIZE && memcmp(buf, QSM_MAGIC, 8) == 0) {
        info->major = buf[8] | buf[9] << 8;
        info->minor = buf[10] | buf[11] << 8;
        info->file_size = get_u64_at(buf + 24);
    }
    uint32_t hsize, nsec;
    if (check_header(buf, len, &hsize, &nsec, err) != 0)
        return -1;
    const unsigned char *tab = buf + hsize;
    for (uint32_t s = 0; s < nsec; s++) {
        const unsigned char *e = tab + (size_t)s * QSM_ENTRY_SIZE;
        qs_qsm_section *q = &info->sections[s];
        uint32_t id = get_u32_at(e);
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)(id >> (8 * k));
            q->id[k] = c >= 0x20 && c < 0x7f ? (char)c : '?';
        }
        q->id[4] = '\0';
        q->flags = get_u32_at(e + 4);
        q->offset = get_u64_at(e + 8);
        q->stored_size = get_u64_at(e + 16);
        q->raw_size = get_u64_at(e + 24);
        q->crc = get_u32_at(e + 32);
        if (q->offset > len || q->stored_size > len - q->offset)
            return qs_fail_at(err, QS_ERR_FORMAT, (long long)(hsize + (uint64_t)s * QSM_ENTRY_SIZE),
                              "section %u lies outside the file", s);
        if (q->crc != qs_crc32c(0, buf + q->offset, (size_t)q->stored_size))
            return qs_fail_at(err, QS_ERR_FORMAT, (long long)q->offset,
                              "section %u checksum mismatch (corrupt file)", s);
    }
    info->nsections = nsec;
    for (uint32_t s = 0; s < nsec; s++)
        if (memcmp(info->sections[s].id, "TUNE", 4) == 0)
            info->tuning = 1;
    return 0;
}

/* ------------------------------------------------------------ TUNE */

static void cstr_in(char *dst, const unsigned char *src, size_t width)
{
    memcpy(dst, src, width);
    dst[width - 1] = '\0';
    for (size_t i = 0; dst[i]; i++)
        if ((unsigned char)dst[i] < 0x20 || dst[i] == 0x7f)
            dst[i] = '?';
}

static double f64_at(const unsigned char *p)
{
    uint64_t u = get_u64_at(p);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

int qs_qsm_read_tuning(const unsigned char *buf, size_t len, qs_tuning *t, qs_error *err)
{
    qs_qsm_file_info fi;
    memset(t, 0, sizeof *t);
    if (qs_qsm_get_file_info(buf, len, &fi, err) != 0)
        return -1;
    uint32_t first = fi.nsections;
    for (uint32_t s = 0; s < fi.nsections; s++)
        if (memcmp(fi.sections[s].id, "TUNE", 4) == 0) {
            /* A duplicate known section is a format error (format/qsm.md). */
            if (first < fi.nsections)
                return qs_fail_at(err, QS_ERR_FORMAT, (long long)fi.sections[s].offset,
                                  "duplicate section %u (a second TUNE, after section %u)", s,
                                  first);
            first = s;
        }
    for (uint32_t s = first; s < fi.nsections; s++) {
        const qs_qsm_section *q = &fi.sections[s];
        if ((q->flags & SEC_ZSTD) || q->stored_size != TUNE_SIZE || q->raw_size != TUNE_SIZE)
            return qs_fail_at(err, QS_ERR_FORMAT, (long long)q->offset,
                              "TUNE section: %llu bytes stored, %u expected, uncompressed",
                              (unsigned long long)q->stored_size, TUNE_SIZE);
        const unsigned char *p = buf + q->offset;
        if (get_u32_at(p) != 1)
            return qs_fail_at(err, QS_ERR_UNSUPPORTED, (long long)q->offset,
                              "TUNE section: record version %u is unknown to this build",
                              get_u32_at(p));
        t->order = get_u32_at(p + 4);
        t->inner_s = get_u32_at(p + 8);
        t->inner_d = get_u32_at(p + 12);
        t->tree_block = get_u32_at(p + 16);
        t->doc_block = get_u32_at(p + 20);
        t->delta = get_u32_at(p + 24);
        t->threads = get_u32_at(p + 28);
        cstr_in(t->backend, p + 32, 32);
        cstr_in(t->cpu_model, p + 64, 64);
        for (int i = 0; i < 3; i++)
            t->cache[i] = get_u64_at(p + 128 + 8 * i);
        t->cores = get_u32_at(p + 152);
        cstr_in(t->version, p + 160, 16);
        t->date = (int64_t)get_u64_at(p + 176);
        t->default_ns = f64_at(p + 184);
        t->tuned_ns = f64_at(p + 192);
        if (t->order > 5 || t->doc_block > QS_MAX_DOC_BLOCK || t->delta > 64 ||
            t->inner_d > QS_MAX_DOC_BLOCK || t->threads > 4096)
            return qs_fail_at(err, QS_ERR_FORMAT, (long long)q->offset,
                              "TUNE section: a value is out of range");
        return 1;
    }
    return 0;
}

int qs_qsm_set_tuning(const unsigned char *buf, size_t len, const qs_tuning *t,
                      unsigned char **out, size_t *out_len, qs_error *err)
{
    qs_qsm_file_info fi;
    if (qs_qsm_get_file_info(buf, len, &fi, err) != 0)
        return -1;
    /* The sections other than an old TUNE, copied as they are, then the new
     * record, uncompressed and optional (flags 0): a reader that does not
     * know TUNE scores the file with its stored defaults. */
    uint32_t keep = 0;
    uint64_t data = 0;
    for (uint32_t s = 0; s < fi.nsections; s++)
        if (memcmp(fi.sections[s].id, "TUNE", 4) != 0) {
            keep++;
            data += fi.sections[s].stored_size;
        }
    if (keep + 1 > QSM_MAX_SECTIONS)
        return qs_fail(err, QS_ERR_LIMIT, 0, "too many sections for a tuning record");
    const uint64_t table = QSM_HEADER_SIZE + (uint64_t)(keep + 1) * QSM_ENTRY_SIZE;
    const uint64_t total = table + data + TUNE_SIZE;
    unsigned char *f = calloc(1, (size_t)total);
    if (!f)
        return qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    memcpy(f, buf, QSM_HEADER_SIZE);
    uint64_t off = table;
    uint32_t i = 0;
    const unsigned char *tab = buf + QSM_HEADER_SIZE;
    for (uint32_t s = 0; s < fi.nsections; s++) {
        const qs_qsm_section *q = &fi.sections[s];
        if (memcmp(q->id, "TUNE", 4) == 0)
            continue;
        unsigned char *e = f + QSM_HEADER_SIZE + (size_t)i * QSM_ENTRY_SIZE;
        memcpy(e, tab + (size_t)s * QSM_ENTRY_SIZE, QSM_ENTRY_SIZE);
        put_u64_at(e + 8, off);
        memcpy(f + off, buf + q->offset, (size_t)q->stored_size);
        off += q->stored_size;
        i++;
    }
    unsigned char *p = f + off;
    put_u32_at(p, 1);
    put_u32_at(p + 4, t->order);
    put_u32_at(p + 8, t->inner_s);
    put_u32_at(p + 12, t->inner_d);
    put_u32_at(p + 16, t->tree_block);
    put_u32_at(p + 20, t->doc_block);
    put_u32_at(p + 24, t->delta);
    put_u32_at(p + 28, t->threads);
    memcpy(p + 32, t->backend, strnlen(t->backend, 31));
    memcpy(p + 64, t->cpu_model, strnlen(t->cpu_model, 63));
    for (int k = 0; k < 3; k++)
        put_u64_at(p + 128 + 8 * k, t->cache[k]);
    put_u32_at(p + 152, t->cores);
    memcpy(p + 160, t->version, strnlen(t->version, 15));
    put_u64_at(p + 176, (uint64_t)t->date);
    uint64_t u;
    memcpy(&u, &t->default_ns, 8);
    put_u64_at(p + 184, u);
    memcpy(&u, &t->tuned_ns, 8);
    put_u64_at(p + 192, u);
    unsigned char *e = f + QSM_HEADER_SIZE + (size_t)keep * QSM_ENTRY_SIZE;
    put_u32_at(e + 0, SEC_TUNE);
    put_u32_at(e + 4, 0);
    put_u64_at(e + 8, off);
    put_u64_at(e + 16, TUNE_SIZE);
    put_u64_at(e + 24, TUNE_SIZE);
    put_u32_at(e + 32, qs_crc32c(0, p, TUNE_SIZE));
    if (fi.minor < QSM_VERSION_MINOR_TUNE) {
        f[10] = QSM_VERSION_MINOR_TUNE;
        f[11] = 0;
    }
    put_u32_at(f + 20, keep + 1);
    put_u64_at(f + 24, total);
    put_u32_at(f + 32, qs_crc32c(0, f + QSM_HEADER_SIZE, (size_t)(keep + 1) * QSM_ENTRY_SIZE));
    put_u32_at(f + 60, qs_crc32c(0, f, 60));
    *out = f;
    *out_len = (size_t)total;
    return 0;
}
