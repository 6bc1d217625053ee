/* workspace.c: per-thread workspaces (document slots, accumulators, each
 * prepared back end's scratch), filling documents, the LETOR reader, and
 * node outcome counts for tree reversal. */
#include "score/score.h"
#include "common/number.h"
#include "layout/qsm.h"

#include <string.h>

qs_workspace *qs_workspace_new(const qs_scorer *s, qs_error *err)
{
    qs_workspace *w = calloc(1, sizeof *w);
    if (!w)
        goto nomem;
    w->s = s;
    const qs_model *m = s->m;
    /* Document slots are dense vectors: keep slots x features within
     * QS_WORKSPACE_VALUES doubles (32 MiB), down to one slot for models with
     * millions of features, so neither can make a workspace huge. */
    uint64_t nf = m->num_features ? m->num_features : 1;
    w->nslots = s->doc_block;
    if ((uint64_t)w->nslots * nf > QS_WORKSPACE_VALUES)
        w->nslots = (uint32_t)(QS_WORKSPACE_VALUES / nf > 0 ? QS_WORKSPACE_VALUES / nf : 1);
    w->slot = calloc(w->nslots, sizeof *w->slot);
    w->xs = calloc(w->nslots, sizeof *w->xs);
    w->acc = malloc(sizeof(double) * m->num_classes * w->nslots);
    w->accf = malloc(sizeof(float) * m->num_classes * w->nslots);
    if (!w->slot || !w->xs || !w->acc || !w->accf)
        goto nomem;
    for (uint32_t i = 0; i < w->nslots; i++) {
        qs_slot *sl = &w->slot[i];
        sl->x = malloc(sizeof(double) * (m->num_features ? m->num_features : 1));
        sl->cap_touched = 256;
        sl->touched = malloc(sizeof(uint32_t) * sl->cap_touched);
        if (!sl->x || !sl->touched)
            goto nomem;
        sl->all_dirty = 1;
        w->xs[i] = sl->x;
    }
    /* Scratch for every back end prepared for the scorer. */
    for (unsigned b = 0; b < qs_backend_table_len; b++) {
        const qs_backend_def *d = qs_backend_table[b];
        if (!s->prepared[b])
            continue;
        if (d->ws_init && d->ws_init(d, s, s->state[b], &w->scratch[b], err) != 0) {
            qs_workspace_free(w);
            return NULL;
        }
        w->ready[b] = 1;
    }
    return w;
nomem:
    qs_workspace_free(w);
    qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
    return NULL;
}

void qs_workspace_free(qs_workspace *w)
{
    if (!w)
        return;
    for (uint32_t i = 0; w->slot && i < w->nslots; i++) {
        free(w->slot[i].x);
        free(w->slot[i].touched);
    }
    free(w->slot);
    free(w->xs);
    for (unsigned b = 0; b < qs_backend_table_len; b++)
        if (w->ready[b] && qs_backend_table[b]->ws_free)
            qs_backend_table[b]->ws_free(w->scratch[b]);
    free(w->acc);
    free(w->accf);
    free(w);
}

uint32_t qs_workspace_slots(const qs_workspace *w) { return w->nslots; }

const double *qs_doc_values(const qs_workspace *w) { return w->slot[w->cur].x; }

void qs_workspace_select(qs_workspace *w, uint32_t slot)
{
    w->cur = slot < w->nslots ? slot : w->nslots - 1;
}

/* The value of an absent feature: NaN where absent means missing (asked,
 * or by default for a model whose library reads it so), else 0. */
static double absent_fill(qs_absent absent, int absent_missing)
{
    return absent == QS_ABSENT_MISSING || (absent == QS_ABSENT_DEFAULT && absent_missing) ? NAN
                                                                                          : 0.0;
}

void qs_doc_reset(qs_workspace *w, qs_absent absent)
{
    const qs_model *m = w->s->m;
    qs_slot *sl = &w->slot[w->cur];
    double fill = absent_fill(absent, m->absent_missing);
    /* Refill only what the last document touched, unless the fill changed. */
    if (sl->all_dirty || !sl->filled || (isnan(fill) != isnan(sl->fill))) {
        /* +0.0 is all zero bytes; NaN by doubling copies (a model may have
         * 2^20 features, mostly absent) */
        const size_t n = m->num_features;
        if (!isnan(fill)) {
            memset(sl->x, 0, n * sizeof *sl->x);
        } else if (n) {
            sl->x[0] = fill;
            for (size_t have = 1; have < n; have *= 2)
                memcpy(sl->x + have, sl->x, (have < n - have ? have : n - have) * sizeof *sl->x);
        }
    } else {
        for (uint32_t i = 0; i < sl->ntouched; i++)
            sl->x[sl->touched[i]] = fill;
    }
    sl->fill = fill;
    sl->filled = 1;
    sl->all_dirty = 0;
    sl->ntouched = 0;
}

/* qs_doc_set on a slot of a model of nf features. */
static void slot_set(qs_slot *sl, uint32_t nf, uint32_t id, double value)
{
    if (id >= nf)
        return;
    sl->x[id] = value;
    if (sl->all_dirty)
        return;
    if (sl->ntouched == sl->cap_touched) {
        /* Past this many ids a full refill is as cheap as the list. */
        if (sl->cap_touched >= nf) {
            sl->all_dirty = 1;
            return;
        }
        uint32_t nc = sl->cap_touched * 2;
        uint32_t *q = realloc(sl->touched, sizeof *q * nc);
        if (!q) {
            sl->all_dirty = 1;
            return;
        }
        sl->touched = q;
        sl->cap_touched = nc;
    }
    sl->touched[sl->ntouched++] = id;
}

void qs_doc_set(qs_workspace *w, uint32_t id, double value)
{
    slot_set(&w->slot[w->cur], w->s->m->num_features, id, value);
}

int qs_scorer_zero_band(const qs_scorer *s)
{
    return qs_model_dense_zero_band(s->m);
}

void qs_row_zero_band(double *row, size_t n)
{
    for (size_t f = 0; f < n; f++)
        row[f] = qs_zero_band(row[f]);
}

/* The values that change are values set since the last reset (a fill is
 * 0.0 or NaN), so the slot's record of them stays right. */
void qs_doc_zero_band(qs_workspace *w)
{
    qs_row_zero_band(w->slot[w->cur].x, w->s->m->num_features);
}

void qs_count_node_outcomes(const qs_scorer *s, const qs_workspace *w, uint64_t *false_nodes,
                            uint64_t *true_nodes)
{
    const qs_model *m = s->m;
    const double *x = w->slot[w->cur].x;
    for (uint64_t t = 0; t < m->num_trees; t++) {
        const qs_tree *tr = &m->trees[t];
        for (uint32_t i = 0; i < tr->num_nodes; i++) {
            const qs_node *n = &m->nodes[tr->node_off + i];
            if (n->kind == QS_NODE_LEAF)
                continue;
            if (qs_node_goes_left(m, n, x[n->feature]))
                true_nodes[t]++;
            else
                false_nodes[t]++;
        }
    }
}

/* ------------------------------------------------------------ parsing */

int qs_parse_value(const qs_scorer *s, const char *tok, size_t len, double *out)
{
    return qs_parse_number(s->m->float_precision, tok, len, out);
}

static inline int is_blank(char c) { return c == ' ' || c == '\t'; }

/* One token that the fast path of qs_letor_parse did not finish, t .. t+n:
 * a qid, or an id:value pair, with every check and message of the format
 * (format/letor.md, "Tokens"); its value, for a model of nf features and
 * precision fp, goes into slot sl, or into row x when sl is NULL. */
static int letor_token(int fp, uint32_t nf, qs_slot *sl, double *x, const char *t, size_t n,
                       qs_letor_line *out, qs_error *err)
{
    char show[64];
    if (n > 4 && memcmp(t, "qid:", 4) == 0) {
        if (out->qid)
            return qs_fail(err, QS_ERR_FORMAT, 0, "more than one qid on a line");
        out->qid = t + 4;
        out->qid_len = n - 4;
        return 0;
    }
    const char *colon = memchr(t, ':', n);
    uint64_t id = 0;
    const char *d = t;
    while (d < t + n && *d >= '0' && *d <= '9') {
        if (id <= UINT32_MAX) /* saturates: any longer id is out of range */
            id = id * 10 + (uint64_t)(*d - '0');
        d++;
    }
    if (!colon || d != colon || colon == t) {
        qs_quote(show, sizeof show, t, n);
        return qs_fail(err, QS_ERR_FORMAT, 0, "bad feature token '%s' (expected INDEX:VALUE)",
                       show);
    }
    if (id > UINT32_MAX) {
        qs_quote(show, sizeof show, t, n);
        return qs_fail(err, QS_ERR_FORMAT, 0, "feature id in '%s' is out of range", show);
    }
    double v;
    if (qs_parse_number(fp, colon + 1, (size_t)(t + n - colon - 1), &v) != 0) {
        qs_quote(show, sizeof show, t, n);
        return qs_fail(err, QS_ERR_FORMAT, 0, "bad feature value in '%s' (expected a number)",
                       show);
    }
    if (sl)
        slot_set(sl, nf, (uint32_t)id, v);
    else if (id < nf)
        x[id] = v;
    if ((long long)id > out->max_id)
        out->max_id = (long long)id;
    return 0;
}

#if defined(__SSE2__) && FLT_EVAL_METHOD == 0 && !defined(QS_NO_LETOR_SIMD)
#include <emmintrin.h>
#define QS_LETOR_SIMD 1

/* The number spelt by the first `n` (0 .. 8) ASCII digits of the eight
 * bytes w (the first in the lowest byte; the bytes after them may be
 * anything).  '0' is taken from every byte first: a byte after the digits
 * may borrow from the ones above it, never from a digit below.  The digits
 * are then moved to the top of the word (the empty places become leading
 * zeros) and combined in neighbours, 16-bit and 32-bit lanes by multiplies
 * (99 and 9999 fit their lanes). */
static inline uint64_t digits8(uint64_t w, unsigned n)
{
    w -= 0x3030303030303030ull;
    w = (w << 4 * (8 - n)) << 4 * (8 - n); /* two shifts: n = 0 moves it all out */
    w = (w * 10 + (w >> 8)) & 0x00FF00FF00FF00FFull;
    w = (w * 100 + (w >> 16)) & 0x0000FFFF0000FFFFull;
    return (w & 0xFFFFFFFFu) * 10000 + (w >> 32);
}

static inline uint64_t load8(const char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

static const uint64_t pow10_u64[9] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                       100000000 };

/* Bit i set where byte i of c is an ASCII digit: c - '0' <= 9, unsigned,
 * as min(c - '0', 9) == c - '0'. */
static inline unsigned digit_mask16(__m128i c)
{
    __m128i d = _mm_sub_epi8(c, _mm_set1_epi8('0'));
    return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d));
}

/* Bit i set where byte i of c is a blank. */
static inline unsigned blank_mask16(__m128i c)
{
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(c, _mm_set1_epi8(' ')),
                                                    _mm_cmpeq_epi8(c, _mm_set1_epi8('\t'))));
}

/* How many bytes at t letor_pair_simd may read. */
#define LETOR_SIMD_WINDOW 32

/* The commonest token, `ID:[+-]DIGITS[.DIGITS]` then a blank, ID 1 to 8
 * digits, at most 8 digits before and 8 after the dot, read from the
 * LETOR_SIMD_WINDOW bytes at t (which must be readable; the token's blank
 * is among them) without a branch per byte: where the digits are in the 32
 * bytes at t is one bit mask (SSE2, baseline x86-64), the runs of digits
 * and the bytes between them are found with count-trailing-zeros, each run
 * converted at once (digits8).  Returns the token's length (1 .. 27: its
 * blank is at t + length) with the id and the value, or 0 when the token is
 * not of that form (then the scalar path reads it).  The value is m / 10^f
 * with f <= 8 and m <= 2^53 (else 0): both operands exact, one rounding
 * (common/number.h); for float32 with m < 2^24, both are exact floats and
 * one float division is strtof's result, else the double quotient is
 * rounded to float (unless it lies halfway between two floats: then 0).
 * That is qs_dec_value's rule for k = -f, written out here: calling it
 * made this loop about 8% slower on the machine it was measured on. */
static inline __attribute__((always_inline)) unsigned
letor_pair_simd(int fp, const char *t, uint64_t *id_out, double *v_out)
{
    __m128i c0 = _mm_loadu_si128((const __m128i *)t);
    __m128i c1 = _mm_loadu_si128((const __m128i *)(t + 16));
    uint64_t stops = ~(uint64_t)(digit_mask16(c0) | digit_mask16(c1) << 16);
    /* The token's length from the blanks alone (checked against the
     * digits' below), so that where the next token starts does not wait
     * for this one's digits: that wait, not the instruction count, bounds
     * this loop. */
    unsigned len = (unsigned)__builtin_ctzll(
        (uint64_t)(blank_mask16(c0) | blank_mask16(c1) << 16) | 1ull << 32);
    unsigned i = (unsigned)__builtin_ctzll(stops); /* the id's digits */
    if (i - 1 >= 8 || t[i] != ':')
        return 0;
    unsigned v = i + 1;
    int neg = 0;
    if (t[v] == '-' || t[v] == '+') { /* v <= 9: inside the window */
        neg = t[v] == '-';
        v++;
    }
    unsigned j = v + (unsigned)__builtin_ctzll(stops >> v); /* after the integer digits */
    unsigned a = j - v;
    if (a > 8)
        return 0;
    /* The fraction, if t[j] is a dot (without a branch: "0" and "0.25"
     * alternate unpredictably); j <= 18. */
    unsigned has_dot = t[j] == '.';
    unsigned f = (unsigned)__builtin_ctzll(stops >> (j + 1)) & -has_dot;
    unsigned k = j + has_dot + f;
    /* k <= 27 when f <= 8: inside the window, and so are the loads below
     * (up to t + 26). */
    if (a + f == 0 || f > 8 || k != len)
        return 0;
    /* len, not k: the compiler may not take one for the other. */
    __asm__("" : "+r"(len));
    uint64_t m;
    if (a + f <= 8) {
        /* both runs in one word: a bytes of the first, then the second */
        uint64_t w1 = load8(t + v) & (((1ull << 4 * a) << 4 * a) - 1);
        uint64_t w2 = (load8(t + j + 1) << 4 * a) << 4 * a;
        m = digits8(w1 | w2, a + f);
    } else {
        m = digits8(load8(t + v), a) * pow10_u64[f] + digits8(load8(t + j + 1), f);
        if (m > (1ull << 53)) /* 16 digits: not exact as a double */
            return 0;
    }
    double val;
    if (fp && m < (1u << 24)) {
        val = (double)((float)(int32_t)m / qs_pow10f_exact[f]);
    } else {
        val = (double)(int64_t)m / qs_pow10_exact[f];
        if (fp) {
            uint64_t bits;
            memcpy(&bits, &val, sizeof bits);
            if ((bits & 0x1FFFFFFFu) == 0x10000000u) /* a float midpoint: rare */
                return 0;
            val = (double)(float)val;
        }
    }
    unsigned d0 = (unsigned char)t[0] - '0', d1 = (unsigned char)t[1] - '0';
    *id_out = i == 1 ? d0 : i == 2 ? d0 * 10 + d1 : digits8(load8(t), i);
    *v_out = neg ? -val : val;
    return len;
}
#endif

/* x[id] = v for a model of nf features, in the line's slot sl (with its
 * touched list kept in the caller's registers: *touched, *nt, *room) or,
 * with sl NULL, in a row. */
static inline __attribute__((always_inline)) void
letor_store(uint32_t nf, qs_slot *sl, double *x, uint32_t **touched, uint32_t *nt,
            uint32_t *room, uint64_t id, double v)
{
    if (id >= nf)
        return;
    x[id] = v;
    if (*room) {
        (*touched)[(*nt)++] = (uint32_t)id;
        (*room)--;
    } else if (sl) {
        sl->ntouched = *nt;
        slot_set(sl, nf, (uint32_t)id, v);
        *touched = sl->touched;
        *nt = sl->ntouched;
        *room = sl->all_dirty ? 0 : sl->cap_touched - *nt;
    }
}

/* The common token, `digits:decimal` followed by a blank or the end, is read
 * in one pass over its bytes: the id, the ':', the value by the exact fast
 * path (letor_pair_simd, else common/number.h), its store into the slot.
 * Anything else (a qid, a long or unusual number, an error) is cut at its
 * end and handed to letor_token, which reads it as the format says; the
 * fast path reads only what letor_token would read the same way.  The
 * values go into w's selected slot (reset with `absent`, its touched list
 * kept), or, with w NULL, into row[0 .. nf) (filled with `fill` first);
 * each caller passes a constant w or NULL, so each gets its own copy of
 * this loop.
 *
 * letor_pair_simd reads LETOR_SIMD_WINDOW bytes at a token's start.  The
 * tokens that start in the line's last LETOR_SIMD_WINDOW - 1 bytes are
 * read from a copy of that tail padded with blanks (on the stack), so
 * every token gets the fast path without reading past the caller's line;
 * a token the fast path declines there goes to letor_token at its place in
 * the line. */
static inline __attribute__((always_inline)) int
letor_parse_core(int fp, uint32_t nf, qs_workspace *w, qs_absent absent, double *row,
                 double fill, const char *line, size_t len, qs_letor_line *out, int *is_doc,
                 qs_error *err)
{
    const char *p = line, *end = line + len;
    char show[64];
    memset(out, 0, sizeof *out);
    out->max_id = -1;
    *is_doc = 0;
    /* A comment runs to the end of the line. */
    const char *hash = memchr(line, '#', len);
    if (hash)
        end = hash;
    while (end > p && (end[-1] == '\r' || is_blank(end[-1])))
        end--;
    while (p < end && is_blank(*p))
        p++;
    if (p == end)
        return 0;
    if (w) {
        qs_doc_reset(w, absent);
    } else {
        for (uint32_t f = 0; f < nf; f++)
            row[f] = fill;
    }
    const char *t = p;
    while (p < end && !is_blank(*p))
        p++;
    double lab;
    if (qs_parse_number(0, t, (size_t)(p - t), &lab) != 0 || isnan(lab)) {
        qs_quote(show, sizeof show, t, (size_t)(p - t));
        return qs_fail(err, QS_ERR_FORMAT, 0, "bad label '%s' (expected a number)", show);
    }
    out->label = t;
    out->label_len = (size_t)(p - t);

    qs_slot *sl = w ? &w->slot[w->cur] : NULL;
    double *x = w ? sl->x : row;
    /* qs_doc_set's common case, inline: the touched list in registers,
     * written back before anything else sees the slot. */
    uint32_t *touched = w ? sl->touched : NULL, nt = w ? sl->ntouched : 0;
    uint32_t room = !w || sl->all_dirty ? 0 : sl->cap_touched - nt;
    long long max_id = -1;
#ifdef QS_LETOR_SIMD
    /* Tokens that start before simd_end are read in place, the rest of
     * the line from the padded copy (tail_from: where it came from, NULL
     * before the copy; past the copy's end, blanks). */
    const char *simd_end = end - (end - p >= LETOR_SIMD_WINDOW ? LETOR_SIMD_WINDOW - 1 : end - p);
    char tail[2 * LETOR_SIMD_WINDOW];
    const char *tail_from = NULL;
#endif
    for (;;) {
        uint64_t id;
        double v;
#ifdef QS_LETOR_SIMD
        if (p < simd_end) {
            uint64_t pid;
            unsigned k = letor_pair_simd(fp, p, &pid, &v);
            if (k) {
                letor_store(nf, sl, x, &touched, &nt, &room, pid, v);
                max_id = (long long)pid > max_id ? (long long)pid : max_id;
                p += k + 1; /* and its blank */
                continue;
            }
        } else if (!tail_from && p < end) {
            size_t n = (size_t)(end - p); /* < LETOR_SIMD_WINDOW */
            memset(tail, ' ', sizeof tail);
            memcpy(tail, p, n);
            tail_from = p;
            p = tail;
            end = tail + n;
            simd_end = end;
            continue;
        }
#endif
        if (p >= end) /* (in the copy, the blank after a token may be past end) */
            break;
        if (is_blank(*p)) {
            p++;
            continue;
        }
        /* The scalar path: the id, at most 10 digits here (up to
         * 9,999,999,999: the range check below), and the value by
         * qs_dec_fast; anything else to letor_token. */
        const char *q = p, *stop;
        t = p;
        id = 0;
        while (q < end && (unsigned char)(*q - '0') < 10 && q - t < 10)
            id = id * 10 + (uint64_t)(*q++ - '0');
        if (q > t && q < end && *q == ':' && id <= UINT32_MAX &&
            qs_dec_fast(fp, q + 1, end, &stop, &v) && (stop == end || is_blank(*stop)) &&
            stop - (q + 1) < QS_NUMBER_SHORT) {
            letor_store(nf, sl, x, &touched, &nt, &room, id, v);
            max_id = (long long)id > max_id ? (long long)id : max_id;
            p = stop;
            continue;
        }
        /* anything else: the whole token to letor_token, at its place in
         * the line */
        while (q < end && !is_blank(*q))
            q++;
        const char *at = t;
#ifdef QS_LETOR_SIMD
        if (tail_from)
            at = tail_from + (t - tail);
#endif
        if (w)
            sl->ntouched = nt;
        out->max_id = max_id;
        if (letor_token(fp, nf, sl, x, at, (size_t)(q - t), out, err) != 0)
            return -1;
        max_id = out->max_id;
        if (w) {
            touched = sl->touched;
            nt = sl->ntouched;
            room = sl->all_dirty ? 0 : sl->cap_touched - nt;
        }
        p = q;
    }
    if (w)
        sl->ntouched = nt;
    out->max_id = max_id;
    *is_doc = 1;
    return 0;
}

int qs_letor_parse(const qs_scorer *s, qs_workspace *w, qs_absent absent, const char *line,
                   size_t len, qs_letor_line *out, int *is_doc, qs_error *err)
{
    return letor_parse_core(s->m->float_precision, s->m->num_features, w, absent, NULL, 0.0, line,
                            len, out, is_doc, err);
}

int qs_letor_parse_row(const qs_row_format *f, double *row, const char *line, size_t len,
                       qs_letor_line *out, int *is_doc, qs_error *err)
{
    return letor_parse_core(f->float_precision, f->num_features, NULL, QS_ABSENT_DEFAULT, row,
                            f->fill, line, len, out, is_doc, err);
}

static void row_format(uint32_t nf, int fp, int absent_missing, qs_absent absent,
                       qs_row_format *f)
{
    f->num_features = nf;
    f->float_precision = fp;
    f->fill = absent_fill(absent, absent_missing);
}

void qs_scorer_get_row_format(const qs_scorer *s, qs_absent absent, qs_row_format *f)
{
    row_format(s->m->num_features, s->m->float_precision, s->m->absent_missing, absent, f);
}

int qs_qsm_get_row_format(const unsigned char *buf, size_t len, qs_absent absent,
                          qs_row_format *f, qs_error *err)
{
    uint32_t nf;
    int fp, am;
    if (qsm_peek_info(buf, len, &nf, &fp, &am, err) != 0)
        return -1;
    row_format(nf, fp, am, absent, f);
    return 0;
}
