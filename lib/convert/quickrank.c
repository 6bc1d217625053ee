/* conv_quickrank.c: converts QuickRank XML models and RankLib LambdaMART/MART
 * XML models into the canonical ensemble, with libexpat as a streaming parser.
 *
 * Why a streaming parser with our own stack: a model may nest <split>
 * elements hundreds of thousands deep (a degenerate chain tree is legal up to
 * QS_MAX_TREE_NODES nodes).  Expat keeps its open-tag list on the heap, and
 * the handlers below keep one heap frame per open element, so nothing here
 * recurses; the nesting depth is still limited explicitly (QR_MAX_NESTING).
 *
 * ------------------------------------------------------------ QuickRank
 * Input:  <ranker><info><type>T</type>...</info>
 *           <ensemble><tree id="1" weight="W"><split> ... </split></tree>...
 * where an internal <split> holds <feature>, <threshold> and two child
 * <split pos="left"> / <split pos="right">, and a leaf <split> holds <output>.
 * Facts taken from QuickRank (hpclab/quickrank c569a59, the oracle's build):
 *  - score = sum over trees, in file order, of output * weight in double
 *    (Ensemble::score_instance); the canonical model says the same with tree
 *    weight = W and leaf value = output, both parsed with strtod, as
 *    pugixml's as_double() does;
 *  - a node goes left iff x <= threshold, both float32; QuickRank's feature
 *    values are float32 read with sscanf %f, so a NaN input fails `<=` and
 *    goes right (QS_MISS_NAN, default right);
 *  - thresholds are read by pugixml's as_float(), which at the pinned
 *    pugixml commit is (float)strtod(text): a double rounding.  We parse with
 *    strtof (correctly rounded, as every other float32 reader in qs) and
 *    refuse the rare text for which the two differ, so a model is never
 *    scored differently from QuickRank.  Text QuickRank writes itself
 *    (9 significant digits of a float) never differs;
 *  - <feature> ids are 1-based and equal the LETOR index (QuickRank's column
 *    id-1 holds LETOR feature id); they are kept as they are, so canonical
 *    feature 100 is LETOR `100:v`.  Feature 0 is refused (QuickRank would
 *    read column -1);
 *  - <type> picks the loader (LTR_Algorithm::load_model_from_xml); only the
 *    types whose score is that plain weighted sum are accepted.
 *
 * ------------------------------------------------------------ RankLib
 * Input: `## LambdaMART` (or `## MART`) header lines, then a bare <ensemble>
 * of the same <tree>/<split> shape.  Facts taken from RankLib's source
 * (codelibs/ranklib src/main/java/ciir/umass/edu/learning/tree/Ensemble.java,
 * Split.java, RegressionTree.java; learning/DataPoint.java,
 * DenseDataPoint.java, SparseDataPoint.java; parsing/ModelLineProducer.java;
 * the same code since the end of 2013, after RankLib 2.2: checked in the
 * jjfiv/ranklib-dev history, commit 8e6b786):
 *  - weight, threshold and output are all read with Float.parseFloat (float32,
 *    correctly rounded = strtof); the output is kept in a double field
 *    (Split.avgLabel) and Split.eval returns that double;
 *  - Ensemble.eval is `float s = 0; s += tree.eval(dp) * weights.get(i);`:
 *    the product is double * (double)float, which is exact (24 + 24 bits fit
 *    in 53), and `float += double` is s = (float)((double)s + product): a
 *    float32 accumulator whose every step is rounded twice (to double, then
 *    to float);
 *  - feature values are float32 (Float.parseFloat); an absent feature and a
 *    NaN value both read as 0 (DataPoint.UNKNOWN is NaN and getFeatureValue
 *    returns 0 for it), so NaN is compared as 0.0: QS_MISS_NONE;
 *  - Ensemble.create() reads a split's children by position (feature,
 *    threshold, left, right) and ignores pos=; we require that order.
 * The canonical model expresses this exactly: tree weight = the float
 * weight, leaf = the float output, accumulation QS_ACC_FLOAT_DOUBLE
 * (acc = (float)((double)acc + weight * output)).
 * (RankLib 2.2 and older multiplied float by float and summed in float; for
 * the models accepted here that gives the same sums, but those versions did
 * not read NaN as 0.)  A RankLib random forest (several <ensemble>
 * elements, averaged in double) is refused too.
 *
 * ------------------------------------------------------------ hostile input
 * The buffer is not NUL-terminated; it is fed to expat by length.  Document
 * type declarations are refused outright (no entity can be declared, so no
 * entity expansion bomb); text is collected with a fixed cap whatever its
 * length; every count is checked against the limits of model.h. */
#include "convert/convert.h"

#include <errno.h>
#include <expat.h>
#include <stdio.h>
#include <string.h>

_Static_assert(sizeof(XML_Char) == 1, "expat must be built with char (UTF-8) XML_Char");

/* Deepest element nesting accepted.  A chain tree of QS_MAX_TREE_NODES nodes
 * nests (QS_MAX_TREE_NODES - 1) / 2 splits, plus <ranker>, <ensemble>,
 * <tree> and a value element: anything deeper cannot be a valid model. */
#define QR_MAX_NESTING (QS_MAX_TREE_NODES / 2u + 8u)
/* Longest text (after trimming) of <feature>, <threshold>, <output>, <type>
 * or a weight attribute: far more than any number needs. */
#define QR_TEXT_CAP 128
/* Bytes per XML_Parse call: big, so that expat 2.5, which rescans an
 * unfinished token on every call, does not go quadratic on huge tokens. */
#define QR_CHUNK ((size_t)1 << 30)

enum qr_elem {
    EL_RANKER, EL_INFO, EL_TYPE, EL_ENSEMBLE, EL_TREE, EL_SPLIT,
    EL_FEATURE, EL_THRESHOLD, EL_OUTPUT
};

static const char *const elem_name[] = {
    "ranker", "info", "type", "ensemble", "tree", "split", "feature", "threshold", "output"
};

/* What a <split> (or <tree>) has seen so far. */
#define SF_FEATURE   0x01u
#define SF_THRESHOLD 0x02u
#define SF_OUTPUT    0x04u
#define SF_LEFT      0x08u
#define SF_RIGHT     0x10u
#define SF_INTERNAL  (SF_FEATURE | SF_THRESHOLD | SF_LEFT | SF_RIGHT)
#define TF_SPLIT     0x01u

typedef struct qr_frame {
    uint8_t kind;        /* enum qr_elem */
    uint8_t flags;       /* SF_* for a split, TF_* for a tree */
    uint32_t node;       /* EL_SPLIT: node index within the current tree */
    long line;           /* where the element opened, for messages */
} qr_frame;

typedef struct qr_ctx {
    XML_Parser p;
    qs_model *m;
    qs_error *err;
    int failed;
    int ranklib;            /* RankLib semantics (header lines or <ensemble> root) */
    int header;             /* `#` lines came before the XML */
    long line_base;         /* lines skipped before the XML was fed */
    qr_frame *st;
    size_t sp, cap;
    size_t skip;            /* depth inside an ignored element (under <ranker>/<info>) */
    int have_info, have_type, have_ensemble;
    char type[64];
    unsigned long long tree_no;  /* 1-based ordinal of the current tree */
    float rl_weight;        /* RankLib: the current tree's weight */
    uint32_t max_feature;
    /* text of the open value element: leading white space dropped, inner
     * white space kept (it makes a number invalid), trailing dropped */
    char text[QR_TEXT_CAP + 1];
    size_t tlen, pend_ws;
    int tover;
} qr_ctx;

/* ------------------------------------------------------------ helpers */

static long cur_line(const qr_ctx *c)
{
    return c->line_base + (long)XML_GetCurrentLineNumber(c->p);
}

/* Record the first error and stop expat; later handler calls see `failed`. */
__attribute__((format(printf, 4, 5)))
static void fail(qr_ctx *c, qs_status code, long line, const char *fmt, ...)
{
    if (c->failed)
        return;
    char msg[sizeof c->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    qs_fail(c->err, code, line, "%s", msg);
    c->failed = 1;
    XML_StopParser(c->p, XML_FALSE);
}

/* A construction helper of model.c failed and filled err (without a line). */
static void fail_from_helper(qr_ctx *c)
{
    if (c->failed)
        return;
    if (c->err)
        c->err->line = cur_line(c);
    c->failed = 1;
    XML_StopParser(c->p, XML_FALSE);
}

static int is_xml_ws(int ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* Copy at most `cap` bytes of s into out for a message, replacing control
 * characters so that hostile text cannot garble the message. */
static const char *quote(char *out, size_t cap, const char *s, size_t n)
{
    size_t k = 0, i = 0;
    for (; i < n && k + 4 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        out[k++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
    }
    if (i < n) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = '\0';
    return out;
}

static void text_reset(qr_ctx *c)
{
    c->tlen = 0;
    c->pend_ws = 0;
    c->tover = 0;
    c->text[0] = '\0';
}

/* Append character data, trimming as it goes and never holding more than
 * QR_TEXT_CAP bytes however long the text is. */
static void text_add(qr_ctx *c, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (is_xml_ws((unsigned char)ch)) {
            if (c->tlen > 0 && c->pend_ws <= QR_TEXT_CAP)
                c->pend_ws++;
            continue;
        }
        if (c->pend_ws) {
            if (c->tlen + c->pend_ws > QR_TEXT_CAP) {
                c->tover = 1;
            } else {
                memset(c->text + c->tlen, ' ', c->pend_ws);
                c->tlen += c->pend_ws;
            }
            c->pend_ws = 0;
        }
        if (c->tlen >= QR_TEXT_CAP)
            c->tover = 1;
        else
            c->text[c->tlen++] = ch;
    }
    c->text[c->tlen] = '\0';
}

/* Trimmed copy of an attribute value into c->text (same cap as element text). */
static void text_set(qr_ctx *c, const char *s)
{
    text_reset(c);
    text_add(c, s, strlen(s));
}

/* Whole-token parses of c->text (trimmed, NUL-terminated, no NUL inside). */
static int text_f64(const qr_ctx *c, double *out)
{
    if (c->tover || c->tlen == 0)
        return -1;
    char *end;
    errno = 0;
    *out = strtod(c->text, &end);
    /* ERANGE is accepted: overflow gives inf (refused by the callers) and
     * underflow the correctly rounded subnormal, as the trainers read it. */
    return end == c->text + c->tlen ? 0 : -1;
}

static int text_f32(const qr_ctx *c, float *out)
{
    if (c->tover || c->tlen == 0)
        return -1;
    char *end;
    errno = 0;
    *out = strtof(c->text, &end);
    return end == c->text + c->tlen ? 0 : -1;
}

/* "tree N: bad WHAT 'text'" about the collected text, saying so when it
 * was cut at QR_TEXT_CAP. */
static void fail_bad_text(qr_ctx *c, const char *what)
{
    char q[QR_TEXT_CAP + 8];
    if (c->tover)
        fail(c, QS_ERR_FORMAT, cur_line(c), "tree %llu: bad %s '%s' (longer than %d characters)",
             c->tree_no, what, quote(q, 48, c->text, c->tlen), QR_TEXT_CAP);
    else
        fail(c, QS_ERR_FORMAT, cur_line(c), "tree %llu: bad %s '%s'", c->tree_no, what,
             quote(q, sizeof q, c->text, c->tlen));
}

static const char *attr(const XML_Char **atts, const char *name)
{
    for (size_t i = 0; atts[i]; i += 2)
        if (strcmp(atts[i], name) == 0)
            return atts[i + 1];
    return NULL;
}

static int push(qr_ctx *c, enum qr_elem kind, uint32_t node)
{
    if (c->sp == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 64;
        qr_frame *s = realloc(c->st, nc * sizeof *s);
        if (!s) {
            fail(c, QS_ERR_NOMEM, 0, "out of memory");
            return -1;
        }
        c->st = s;
        c->cap = nc;
    }
    qr_frame *f = &c->st[c->sp++];
    f->kind = (uint8_t)kind;
    f->flags = 0;
    f->node = node;
    f->line = cur_line(c);
    return 0;
}

/* ------------------------------------------------------------ elements */

static const char *const quickrank_types[] = {
    /* QuickRank types scored by Mart::score_document / Dart::score_document,
     * i.e. Ensemble::score_instance: sum of output * weight in double. */
    "MART", "LAMBDAMART", "OBVMART", "OBVLAMBDAMART", "DART", "LAMBDAMART-SELECTIVE"
};

static void start_tree(qr_ctx *c, const XML_Char **atts)
{
    if (c->m->num_trees >= QS_MAX_TREES) {
        fail(c, QS_ERR_LIMIT, cur_line(c), "more than %u trees", QS_MAX_TREES);
        return;
    }
    c->tree_no = c->m->num_trees + 1;
    const char *w = attr(atts, "weight");
    char q[64];
    if (!w) {
        fail(c, QS_ERR_FORMAT, cur_line(c), "tree %llu: <tree> has no weight attribute",
             c->tree_no);
        return;
    }
    text_set(c, w);
    double weight = 1.0;
    if (c->ranklib) {
        float f;
        if (text_f32(c, &f) != 0) {
            fail_bad_text(c, "weight");
            return;
        }
        if (!isfinite(f)) {
            fail(c, QS_ERR_FORMAT, cur_line(c), "tree %llu: weight '%s' is not a finite float32",
                 c->tree_no, quote(q, sizeof q, w, strlen(w)));
            return;
        }
        /* The tree weight is RankLib's float weight; the sum is Java's
         * `float += double` (QS_ACC_FLOAT_DOUBLE). */
        c->rl_weight = f;
        weight = (double)f;
    } else {
        if (text_f64(c, &weight) != 0) {
            fail_bad_text(c, "weight");
            return;
        }
        if (!isfinite(weight)) {
            fail(c, QS_ERR_FORMAT, cur_line(c), "tree %llu: weight '%s' is not finite",
                 c->tree_no, quote(q, sizeof q, w, strlen(w)));
            return;
        }
    }
    if (qs_model_add_tree(c->m, 0, weight, c->err) != 0) {
        fail_from_helper(c);
        return;
    }
    push(c, EL_TREE, 0);
}

/* A <split> under <tree> (the root, parent_is_tree) or under a <split>. */
static void start_split(qr_ctx *c, const XML_Char **atts, int parent_is_tree)
{
    size_t pi = c->sp - 1;   /* index, not pointer: push() may move the stack */
    int right = 0;
    if (parent_is_tree) {
        if (c->st[pi].flags & TF_SPLIT) {
            fail(c, QS_ERR_FORMAT, cur_line(c), "tree %llu: <tree> has more than one root <split>",
                 c->tree_no);
            return;
        }
        c->st[pi].flags |= TF_SPLIT;
    } else {
        /* pos= says which child; QuickRank reads it, RankLib reads the order */
        const char *pos = attr(atts, "pos");
        if (pos && strcmp(pos, "left") == 0)
            right = 0;
        else if (pos && strcmp(pos, "right") == 0)
            right = 1;
        else {
            fail(c, QS_ERR_FORMAT, cur_line(c),
                 "tree %llu: child <split> needs pos=\"left\" or pos=\"right\"", c->tree_no);
            return;
        }
        uint8_t fl = c->st[pi].flags;
        if (fl & SF_OUTPUT) {
            fail(c, QS_ERR_FORMAT, cur_line(c),
                 "tree %llu: a leaf <split> (with <output>) has a child <split>", c->tree_no);
            return;
        }
        if (fl & (right ? SF_RIGHT : SF_LEFT)) {
            fail(c, QS_ERR_FORMAT, cur_line(c), "tree %llu: <split> has two %s children",
                 c->tree_no, right ? "right" : "left");
            return;
        }
        if (c->ranklib &&
            fl != (right ? (SF_FEATURE | SF_THRESHOLD | SF_LEFT) : (SF_FEATURE | SF_THRESHOLD))) {
            fail(c, QS_ERR_FORMAT, cur_line(c),
                 "tree %llu: ranklib reads a <split>'s children by position: expected "
                 "<feature>, <threshold>, then the left and the right <split>", c->tree_no);
            return;
        }
        c->st[pi].flags |= (uint8_t)(right ? SF_RIGHT : SF_LEFT);
    }
    qs_tree *t = &c->m->trees[c->m->num_trees - 1];
    if (t->num_nodes >= QS_MAX_TREE_NODES) {
        fail(c, QS_ERR_LIMIT, cur_line(c), "tree %llu has more than %u nodes", c->tree_no,
             QS_MAX_TREE_NODES);
        return;
    }
    int64_t idx = qs_model_add_nodes(c->m, 1, c->err);
    if (idx < 0) {
        fail_from_helper(c);
        return;
    }
    if (!parent_is_tree) {
        qs_node *parent = qs_model_cur_node(c->m, c->st[pi].node);
        if (right)
            parent->right = (int32_t)idx;
        else
            parent->left = (int32_t)idx;
    }
    push(c, EL_SPLIT, (uint32_t)idx);
}

/* <feature>, <threshold> or <output> under a <split>. */
static void start_value(qr_ctx *c, enum qr_elem kind)
{
    qr_frame *sf = &c->st[c->sp - 1];
    uint8_t bit = kind == EL_FEATURE ? SF_FEATURE : kind == EL_THRESHOLD ? SF_THRESHOLD : SF_OUTPUT;
    if (sf->flags & bit) {
        fail(c, QS_ERR_FORMAT, cur_line(c), "tree %llu: <split> has two <%s> elements",
             c->tree_no, elem_name[kind]);
        return;
    }
    if (kind == EL_OUTPUT ? (sf->flags & SF_INTERNAL) != 0 : (sf->flags & SF_OUTPUT) != 0) {
        fail(c, QS_ERR_FORMAT, cur_line(c),
             "tree %llu: <split> mixes a leaf <output> with <feature>/<threshold>/children",
             c->tree_no);
        return;
    }
    if (c->ranklib) {
        uint8_t want = kind == EL_THRESHOLD ? SF_FEATURE : 0;
        if (sf->flags != want) {
            fail(c, QS_ERR_FORMAT, cur_line(c),
                 "tree %llu: ranklib reads a <split>'s children by position: expected "
                 "<feature>, <threshold>, then the left and the right <split>", c->tree_no);
            return;
        }
    }
    sf->flags |= bit;
    text_reset(c);
    push(c, kind, sf->node);
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    qr_ctx *c = ud;
    if (c->failed)
        return;
    if (c->sp + c->skip >= QR_MAX_NESTING) {
        fail(c, QS_ERR_LIMIT, cur_line(c), "elements nested deeper than %u levels",
             QR_MAX_NESTING);
        return;
    }
    if (c->skip) {
        c->skip++;
        return;
    }
    char q[48];
    if (c->sp == 0) {
        if (strcmp(name, "ranker") == 0) {
            if (c->header) {
                fail(c, QS_ERR_FORMAT, cur_line(c),
                     "'#' header lines (ranklib) before a quickrank <ranker> element");
                return;
            }
            push(c, EL_RANKER, 0);
        } else if (strcmp(name, "ensemble") == 0) {
            c->ranklib = 1;
            c->have_ensemble = 1;
            push(c, EL_ENSEMBLE, 0);
        } else {
            fail(c, QS_ERR_FORMAT, cur_line(c),
                 "root element <%s>: expected <ranker> (quickrank) or <ensemble> (ranklib)",
                 quote(q, sizeof q, name, strlen(name)));
        }
        return;
    }
    qr_frame *top = &c->st[c->sp - 1];
    switch ((enum qr_elem)top->kind) {
    case EL_RANKER:
        if (strcmp(name, "info") == 0) {
            if (c->have_info) {
                fail(c, QS_ERR_FORMAT, cur_line(c), "<ranker> has two <info> elements");
                return;
            }
            c->have_info = 1;
            push(c, EL_INFO, 0);
        } else if (strcmp(name, "ensemble") == 0) {
            if (c->have_ensemble) {
                fail(c, QS_ERR_FORMAT, cur_line(c), "<ranker> has two <ensemble> elements");
                return;
            }
            c->have_ensemble = 1;
            push(c, EL_ENSEMBLE, 0);
        } else {
            c->skip = 1;   /* QuickRank ignores what it does not look up */
        }
        return;
    case EL_INFO:
        if (strcmp(name, "type") == 0) {
            if (c->have_type) {
                fail(c, QS_ERR_FORMAT, cur_line(c), "<info> has two <type> elements");
                return;
            }
            c->have_type = 1;
            text_reset(c);
            push(c, EL_TYPE, 0);
        } else {
            c->skip = 1;   /* training parameters: not needed to score */
        }
        return;
    case EL_ENSEMBLE:
        if (strcmp(name, "tree") != 0) {
            fail(c, QS_ERR_FORMAT, cur_line(c), "unexpected <%s> in <ensemble> (expected <tree>)",
                 quote(q, sizeof q, name, strlen(name)));
            return;
        }
        start_tree(c, atts);
        return;
    case EL_TREE:
        if (strcmp(name, "split") != 0) {
            fail(c, QS_ERR_FORMAT, cur_line(c), "tree %llu: unexpected <%s> in <tree> (expected <split>)",
                 c->tree_no, quote(q, sizeof q, name, strlen(name)));
            return;
        }
        start_split(c, atts, 1);
        return;
    case EL_SPLIT:
        if (strcmp(name, "split") == 0)
            start_split(c, atts, 0);
        else if (strcmp(name, "feature") == 0)
            start_value(c, EL_FEATURE);
        else if (strcmp(name, "threshold") == 0)
            start_value(c, EL_THRESHOLD);
        else if (strcmp(name, "output") == 0)
            start_value(c, EL_OUTPUT);
        else
            fail(c, QS_ERR_FORMAT, cur_line(c),
                 "tree %llu: unexpected <%s> in <split> (expected <feature>, <threshold>, "
                 "<output> or <split>)", c->tree_no, quote(q, sizeof q, name, strlen(name)));
        return;
    case EL_TYPE:
    case EL_FEATURE:
    case EL_THRESHOLD:
    case EL_OUTPUT:
        fail(c, QS_ERR_FORMAT, cur_line(c), "unexpected element <%s> inside <%s>",
             quote(q, sizeof q, name, strlen(name)), elem_name[top->kind]);
        return;
    }
}

static void end_feature(qr_ctx *c, uint32_t node)
{
    char q[QR_TEXT_CAP + 8];
    uint64_t v = 0;
    int ok = !c->tover && c->tlen > 0;
    for (size_t i = 0; ok && i < c->tlen; i++) {
        if (c->text[i] < '0' || c->text[i] > '9')
            ok = 0;
        else if (v < QS_MAX_FEATURES)   /* stop growing once out of range */
            v = v * 10 + (uint64_t)(c->text[i] - '0');
    }
    if (!ok) {
        fail_bad_text(c, "feature id");
        return;
    }
    if (v == 0) {
        fail(c, QS_ERR_FORMAT, cur_line(c), "tree %llu: feature id 0 (ids start at 1)", c->tree_no);
        return;
    }
    if (v >= QS_MAX_FEATURES) {
        fail(c, QS_ERR_LIMIT, cur_line(c), "tree %llu: feature id '%s' is beyond the limit (%u)",
             c->tree_no, quote(q, sizeof q, c->text, c->tlen), QS_MAX_FEATURES - 1);
        return;
    }
    qs_model_cur_node(c->m, node)->feature = (uint32_t)v;
    if (v > c->max_feature)
        c->max_feature = (uint32_t)v;
}

static void end_threshold(qr_ctx *c, uint32_t node)
{
    char q[QR_TEXT_CAP + 8];
    float t;
    if (text_f32(c, &t) != 0) {
        fail_bad_text(c, "threshold");
        return;
    }
    if (isnan(t)) {
        fail(c, QS_ERR_FORMAT, cur_line(c), "tree %llu: threshold '%s' is NaN", c->tree_no,
             quote(q, sizeof q, c->text, c->tlen));
        return;
    }
    if (!c->ranklib) {
        /* QuickRank reads thresholds with (float)strtod (see the top). */
        float qt = (float)strtod(c->text, NULL);
        if (qt != t) {
            fail(c, QS_ERR_UNSUPPORTED, cur_line(c),
                 "tree %llu: threshold '%s' is %.9g when correctly rounded to float32 but "
                 "quickrank reads it as %.9g (double rounding): refused",
                 c->tree_no, quote(q, sizeof q, c->text, c->tlen), (double)t, (double)qt);
            return;
        }
    }
    qs_model_cur_node(c->m, node)->value = (double)t;
}

static void end_output(qr_ctx *c, uint32_t node)
{
    char q[QR_TEXT_CAP + 8];
    double v;
    if (c->ranklib) {
        float o;
        if (text_f32(c, &o) != 0) {
            fail_bad_text(c, "output");
            return;
        }
        if (!isfinite(o)) {
            fail(c, QS_ERR_FORMAT, cur_line(c), "tree %llu: output '%s' is not a finite float32",
                 c->tree_no, quote(q, sizeof q, c->text, c->tlen));
            return;
        }
        /* The leaf keeps the float output; the scorer forms weight * output
         * in double (exact: two 24-bit significands fit in 53 bits). */
        v = (double)o;
    } else {
        if (text_f64(c, &v) != 0) {
            fail_bad_text(c, "output");
            return;
        }
        if (!isfinite(v)) {
            fail(c, QS_ERR_FORMAT, cur_line(c), "tree %llu: output '%s' is not finite",
                 c->tree_no, quote(q, sizeof q, c->text, c->tlen));
            return;
        }
    }
    qs_model_cur_node(c->m, node)->value = v;
}

static void end_split(qr_ctx *c, const qr_frame *f)
{
    qs_node *n = qs_model_cur_node(c->m, f->node);
    if (f->flags & SF_OUTPUT) {
        n->kind = QS_NODE_LEAF;   /* value set by </output> */
        return;
    }
    const char *what = NULL;
    if (!(f->flags & SF_FEATURE))
        what = (f->flags & SF_INTERNAL) ? "no <feature>" : "neither <output> nor <feature>";
    else if (!(f->flags & SF_THRESHOLD))
        what = "no <threshold>";
    else if (!(f->flags & SF_LEFT))
        what = "no left child <split>";
    else if (!(f->flags & SF_RIGHT))
        what = "no right child <split>";
    if (what) {
        fail(c, QS_ERR_FORMAT, f->line, "tree %llu: <split> has %s", c->tree_no, what);
        return;
    }
    n->kind = QS_NODE_NUM;
    /* QuickRank: NaN fails x <= t and goes right.  RankLib: NaN reads as 0. */
    n->miss = c->ranklib ? QS_MISS_NONE : QS_MISS_NAN;
    n->default_left = 0;
}

static void end_type(qr_ctx *c)
{
    char q[QR_TEXT_CAP + 8];
    int ok = 0;
    if (!c->tover && c->tlen < sizeof c->type) {
        for (size_t i = 0; i < sizeof quickrank_types / sizeof *quickrank_types; i++)
            if (strcmp(c->text, quickrank_types[i]) == 0)
                ok = 1;
    }
    if (!ok) {
        fail(c, QS_ERR_UNSUPPORTED, cur_line(c),
             "quickrank model type '%s' is not supported (supported: MART, LAMBDAMART, "
             "OBVMART, OBVLAMBDAMART, DART, LAMBDAMART-SELECTIVE)",
             quote(q, 48, c->text, c->tlen));
        return;
    }
    memcpy(c->type, c->text, c->tlen + 1);
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
    qr_ctx *c = ud;
    (void)name;   /* expat has already matched it with the start tag */
    if (c->failed)
        return;
    if (c->skip) {
        c->skip--;
        return;
    }
    if (c->sp == 0)
        return;
    qr_frame f = c->st[--c->sp];
    uint32_t parent_node = f.node;   /* value elements carry their split's node */
    switch ((enum qr_elem)f.kind) {
    case EL_TYPE:
        end_type(c);
        break;
    case EL_FEATURE:
        end_feature(c, parent_node);
        break;
    case EL_THRESHOLD:
        end_threshold(c, parent_node);
        break;
    case EL_OUTPUT:
        end_output(c, parent_node);
        break;
    case EL_SPLIT:
        end_split(c, &f);
        break;
    case EL_TREE:
        if (!(f.flags & TF_SPLIT))
            fail(c, QS_ERR_FORMAT, f.line, "tree %llu: <tree> has no <split>", c->tree_no);
        break;
    case EL_RANKER:
    case EL_INFO:
    case EL_ENSEMBLE:
        break;
    }
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
    qr_ctx *c = ud;
    if (c->failed || c->skip || c->sp == 0 || len <= 0)
        return;
    qr_frame *top = &c->st[c->sp - 1];
    switch ((enum qr_elem)top->kind) {
    case EL_TYPE:
    case EL_FEATURE:
    case EL_THRESHOLD:
    case EL_OUTPUT:
        text_add(c, s, (size_t)len);
        return;
    default:
        for (int i = 0; i < len; i++)
            if (!is_xml_ws((unsigned char)s[i])) {
                char q[40];
                fail(c, QS_ERR_FORMAT, cur_line(c), "unexpected text '%s' in <%s>",
                     quote(q, sizeof q, s + i, (size_t)(len - i)), elem_name[top->kind]);
                return;
            }
        return;
    }
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal_subset)
{
    qr_ctx *c = ud;
    (void)name; (void)sysid; (void)pubid; (void)has_internal_subset;
    fail(c, QS_ERR_UNSUPPORTED, cur_line(c),
         "document type declarations (<!DOCTYPE>) are refused in model files "
         "(no entity may be declared or expanded)");
}

static void XMLCALL on_entity_decl(void *ud, const XML_Char *name, int is_param,
                                   const XML_Char *value, int value_len, const XML_Char *base,
                                   const XML_Char *sysid, const XML_Char *pubid,
                                   const XML_Char *notation)
{
    qr_ctx *c = ud;
    (void)name; (void)is_param; (void)value; (void)value_len; (void)base;
    (void)sysid; (void)pubid; (void)notation;
    fail(c, QS_ERR_UNSUPPORTED, cur_line(c), "entity declarations are refused in model files");
}

/* ------------------------------------------------------------ header */

/* Consume one line break (\n, \r\n or a lone \r, as expat counts them). */
static size_t skip_eol(const char *buf, size_t len, size_t i, long *lines)
{
    if (i < len && buf[i] == '\r') {
        i++;
        if (i < len && buf[i] == '\n')
            i++;
        (*lines)++;
    } else if (i < len && buf[i] == '\n') {
        i++;
        (*lines)++;
    }
    return i;
}

/* Skip a UTF-8 BOM, blank lines and RankLib's `#` comment lines before the
 * XML.  Returns where the XML starts; *name gets the first comment line's
 * text (RankLib writes the ranker's name there). */
static size_t skip_header(const char *buf, size_t len, long *lines, int *header,
                          char *name, size_t name_cap)
{
    size_t i = 0;
    *lines = 0;
    *header = 0;
    name[0] = '\0';
    if (len >= 3 && (unsigned char)buf[0] == 0xEF && (unsigned char)buf[1] == 0xBB &&
        (unsigned char)buf[2] == 0xBF)
        i = 3;
    for (;;) {
        while (i < len && (buf[i] == ' ' || buf[i] == '\t'))
            i++;
        if (i < len && (buf[i] == '\n' || buf[i] == '\r')) {
            i = skip_eol(buf, len, i, lines);
            continue;
        }
        if (i < len && buf[i] == '#') {
            size_t s = i;
            while (i < len && buf[i] != '\n' && buf[i] != '\r')
                i++;
            if (!*header) {
                size_t a = s, b = i;
                while (a < b && (buf[a] == '#' || buf[a] == ' ' || buf[a] == '\t'))
                    a++;
                while (b > a && (buf[b - 1] == ' ' || buf[b - 1] == '\t'))
                    b--;
                quote(name, name_cap, buf + a, b - a);
            }
            *header = 1;
            i = skip_eol(buf, len, i, lines);
            continue;
        }
        return i;
    }
}

/* ------------------------------------------------------------ entry */

qs_model *qs_convert_quickrank(const char *buf, size_t len, qs_error *err)
{
    qs_error_clear(err);
    if (!buf && len > 0) {
        qs_fail(err, QS_ERR_ARG, 0, "null buffer");
        return NULL;
    }
    qr_ctx c;
    memset(&c, 0, sizeof c);
    c.err = err;
    char hname[48];
    size_t start = skip_header(buf, len, &c.line_base, &c.header, hname, sizeof hname);
    if (start >= len) {
        qs_fail(err, QS_ERR_FORMAT, c.line_base ? c.line_base : 1,
                "no xml element in the model (empty, or only '#' lines)");
        return NULL;
    }
    if (c.header) {
        /* RankLib writes `## <ranker name>` first.  Only LambdaMART and MART
         * are scored by Ensemble.eval; a random forest averages several
         * ensembles in double, and the other rankers are not trees. */
        c.ranklib = 1;
        if (strcmp(hname, "LambdaMART") != 0 && strcmp(hname, "MART") != 0) {
            qs_fail(err, QS_ERR_UNSUPPORTED, 1,
                    "ranklib model '%s' is not supported (only LambdaMART and MART "
                    "tree ensembles)", hname);
            return NULL;
        }
        if (buf[start] != '<') {
            qs_fail(err, QS_ERR_FORMAT, c.line_base + 1,
                    "expected an <ensemble> element after the '#' header lines");
            return NULL;
        }
    }

    c.m = qs_model_new(QS_SRC_QUICKRANK, err);
    if (!c.m)
        return NULL;
    c.p = XML_ParserCreate(NULL);
    if (!c.p) {
        qs_model_free(c.m);
        qs_fail(err, QS_ERR_NOMEM, 0, "out of memory");
        return NULL;
    }
    XML_SetUserData(c.p, &c);
    XML_SetElementHandler(c.p, on_start, on_end);
    XML_SetCharacterDataHandler(c.p, on_text);
    XML_SetStartDoctypeDeclHandler(c.p, on_doctype);
    XML_SetEntityDeclHandler(c.p, on_entity_decl);
    XML_SetParamEntityParsing(c.p, XML_PARAM_ENTITY_PARSING_NEVER);

    int ok = 1;
    for (size_t off = start; ok && off < len;) {
        size_t n = len - off < QR_CHUNK ? len - off : QR_CHUNK;
        int final = off + n == len;
        if (XML_Parse(c.p, buf + off, (int)n, final) != XML_STATUS_OK)
            ok = 0;
        off += n;
    }
    if (!ok && !c.failed) {
        enum XML_Error e = XML_GetErrorCode(c.p);
        long line = cur_line(&c);
        if (e == XML_ERROR_JUNK_AFTER_DOC_ELEMENT && c.ranklib)
            qs_fail(err, QS_ERR_UNSUPPORTED, line,
                    "more than one top-level element (a ranklib random forest, one "
                    "<ensemble> per bag, is not supported)");
        else if (e == XML_ERROR_NO_MEMORY)
            qs_fail(err, QS_ERR_NOMEM, line, "out of memory");
        else
            qs_fail(err, QS_ERR_FORMAT, line, "xml: %s", XML_ErrorString(e));
        c.failed = 1;
    }
    XML_ParserFree(c.p);
    free(c.st);
    if (!c.failed && !c.ranklib && !c.have_ensemble) {
        qs_fail(err, QS_ERR_FORMAT, 0, "quickrank model has no <ensemble>");
        c.failed = 1;
    } else if (!c.failed && !c.ranklib && !c.have_type) {
        /* QuickRank picks its loader by <type>: without one it loads nothing */
        qs_fail(err, QS_ERR_FORMAT, 0, "quickrank model has no <info><type> (the model kind)");
        c.failed = 1;
    }
    if (c.failed) {
        qs_model_free(c.m);
        return NULL;
    }

    qs_model *m = c.m;
    m->cmp = QS_CMP_LE;
    m->float_precision = 1;
    m->float_accumulate = c.ranklib ? QS_ACC_FLOAT_DOUBLE : QS_ACC_DOUBLE;
    m->absent_missing = 0;
    m->num_features = c.max_feature + 1;   /* ids are kept 1-based */
    snprintf(m->objective, sizeof m->objective, "%s", c.ranklib ? "ranklib" : c.type);
    snprintf(m->transform, sizeof m->transform, "none");
    if (qs_model_validate(m, err) != 0) {
        qs_model_free(m);
        return NULL;
    }
    return m;
}
