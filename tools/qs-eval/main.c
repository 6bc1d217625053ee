/* qs-eval: NDCG@k (every reference convention), ERR@k, MAP and P@k of scores against LETOR labels, from two files or a qs-score --annotate pipe. */
#include "tool.h"
#include "qs.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#define MAX_LINE ((size_t)256 << 20) /* the same limit on one line as qs-score */

static const char usage_line[] =
    "usage: qs-eval [options] LETOR SCORES\n"
    "       qs-score --annotate MODEL.qsm DOCS | qs-eval [options] [-]\n";

static void help(void)
{
    printf("%s", usage_line);
    printf(
        "\n"
        "Ranking quality of scores against the labels of a LETOR/SVMLight file.\n"
        "LETOR lines are `label [qid:Q] ... [# comment]`: only the label (first token)\n"
        "and the qid: token are read; blank and comment lines are skipped; a line\n"
        "without qid belongs to the query \"\" (so consecutive ones form one query).\n"
        "SCORES has one line per LETOR document, in the same order; with several\n"
        "tab-separated columns, --column picks one.  Scores are read with strtod\n"
        "(1e-3, -0, +2.50, inf are fine; NaN is refused).  With one file \"-\", or no\n"
        "file and a pipe on standard input, lines are label<TAB>qid<TAB>score (what\n"
        "qs-score --annotate writes; further tab-separated columns are more scores).\n"
        "Input compressed with zstd is read transparently.\n"
        "\n"
        "Metrics (computed per query, then the arithmetic mean over queries):\n"
        "  ndcg   NDCG@k = DCG@k / ideal DCG@k, DCG@k = sum over ranks r <= k of\n"
        "         gain(rel_r) * discount(r); the ideal order sorts all the query's\n"
        "         documents by label (default metric)\n"
        "  err    ERR@k = sum_{r<=k} R_r/r * prod_{i<r} (1-R_i), R = (2^rel-1)/16\n"
        "         (RankLib; integer labels 0..4)\n"
        "  map    AP@k = sum over relevant docs (rel > 0) at ranks r <= k of\n"
        "         (relevant docs in the first r)/r, divided by the number of relevant\n"
        "         docs in the whole query (RankLib's AP, XGBoost's map@k).  Without -k,\n"
        "         the whole list: header `map`\n"
        "  p      P@k = relevant docs (rel > 0) among the first k / k\n"
        "--gain and --discount apply to ndcg only; --ties, --norel, --beyond,\n"
        "--score-type and --group to every metric.  k larger than the list is\n"
        "clamped to the list length (--beyond=clamp), also in P@k's divisor.\n"
        "\n"
        "Options:\n"
        "  -k LIST            cutoffs, e.g. 1,3,5,10 (default 10; for map the whole\n"
        "                     list); 0 means the whole list (header without @k)\n"
        "  --metric M         ndcg, err, map or p (default ndcg)\n"
        "  --per-query        one row per query, in input order, before the mean\n"
        "  --column N         take the score from tab-separated column N (default 1)\n"
        "Conventions (default first; README.md, qs-eval, Conventions):\n"
        "  --gain=exp2|linear          2^rel-1 (integer labels 0..30), or rel\n"
        "  --ties=input|reverse|average|pessimistic|optimistic\n"
        "                              order of equal scores: input order (a stable\n"
        "                              sort), reverse input order, gain averaged over\n"
        "                              the tied group (ndcg and p only), lowest or\n"
        "                              highest label first\n"
        "  --norel=0|1|skip            value of a query without any relevant document\n"
        "                              (rel > 0); skip leaves it out of the mean and\n"
        "                              prints `excluded`\n"
        "  --beyond=clamp|zero         k past the list: clamp to its length, or 0\n"
        "  --discount=log2|letor       1/log2(r+1), or the LETOR scripts': 1 for\n"
        "                              ranks 1 and 2, then 1/log2(r)\n"
        "  --score-type=double|float   rank scores as read, or rounded to float32\n"
        "  --group=block|qid           a query is a run of consecutive lines with one\n"
        "                              qid (a qid that comes back is warned about and\n"
        "                              kept apart), or all the lines of a qid\n"
        "  --like TOOL                 set all of the above as TOOL does; options after\n"
        "                              it override it:\n"
        "      quickrank, ranklib  (the defaults)\n"
        "      lightgbm            --norel=1\n"
        "      xgboost             --norel=1 --score-type=float        (ndcg@k)\n"
        "      xgboost-minus       --score-type=float                  (ndcg@k-)\n"
        "      trec                --gain=linear --group=qid           (trec_eval ndcg_cut)\n"
        "      sklearn             --gain=linear --ties=average        (ndcg_score)\n"
        "      rankeval            --ties=reverse --norel=1\n"
        "      letor               --discount=letor --beyond=zero --group=qid\n"
        "  -h, --help         this help\n"
        "  -V, --version      version\n"
        "\n"
        "Output: tab-separated; a header `qid<TAB>ndcg@1<TAB>...`, the rows of\n"
        "--per-query, then a `mean` row; values with 12 decimals.\n"
        "\n"
        "exit: 0 ok, 1 malformed input (bad label or score, files of different\n"
        "lengths, no documents), 2 usage, 4 system error\n");
}

static _Noreturn void usage_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void usage_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", tool_name());
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n%sTry 'qs-eval --help' for more information.\n", usage_line);
    exit(EXIT_USAGE);
}

/* ------------------------------------------------------------ input */

/* Streaming line reader: plain text or a zstd stream (recognised by its
 * magic number), so memory follows the longest line, not the file. */
typedef struct reader {
    FILE *f;
    const char *name;        /* for messages */
    ZSTD_DStream *zs;        /* non-NULL: decompressing */
    unsigned char *raw;      /* bytes read but not yet used */
    size_t raw_len, raw_pos, raw_cap;
    int raw_eof;
    size_t zret;             /* last ZSTD_decompressStream result (0: frame complete) */
    char *buf;               /* text: lines are cut from buf[start .. end) */
    size_t cap, start, end;
    int eof;
    long line;               /* number of the last line returned */
} reader;

static size_t read_raw(reader *r, void *dst, size_t n)
{
    size_t got = fread(dst, 1, n, r->f);
    if (got == 0 && ferror(r->f))
        tool_die(EXIT_SYSTEM, "%s: read error: %s", r->name, strerror(errno));
    return got;
}

static void reader_open(reader *r, const char *path)
{
    memset(r, 0, sizeof *r);
    int use_stdin = strcmp(path, "-") == 0;
    r->name = use_stdin ? "(stdin)" : path;
    r->f = use_stdin ? stdin : fopen(path, "rb");
    if (!r->f)
        tool_die(EXIT_SYSTEM, "%s: cannot open: %s", path, strerror(errno));
    r->raw_cap = (size_t)1 << 16;
    r->cap = (size_t)1 << 16;
    r->raw = malloc(r->raw_cap);
    r->buf = malloc(r->cap);
    if (!r->raw || !r->buf)
        tool_die(EXIT_SYSTEM, "out of memory");
    r->raw_len = read_raw(r, r->raw, r->raw_cap);
    r->raw_eof = r->raw_len == 0;
    if (r->raw_len >= 4 && r->raw[0] == 0x28 && r->raw[1] == 0xB5 && r->raw[2] == 0x2F &&
        r->raw[3] == 0xFD) {
        r->zs = ZSTD_createDStream();
        if (!r->zs)
            tool_die(EXIT_SYSTEM, "out of memory");
        ZSTD_initDStream(r->zs);
        r->zret = 1;
    }
}

static void reader_close(reader *r)
{
    if (r->f != stdin)
        fclose(r->f);
    ZSTD_freeDStream(r->zs);
    free(r->raw);
    free(r->buf);
}

/* Append text to buf[end .. cap); returns the bytes added, 0 at the end. */
static size_t fill(reader *r)
{
    size_t room = r->cap - r->end;
    if (!r->zs) {
        if (r->raw_pos < r->raw_len) {
            size_t n = r->raw_len - r->raw_pos < room ? r->raw_len - r->raw_pos : room;
            memcpy(r->buf + r->end, r->raw + r->raw_pos, n);
            r->raw_pos += n;
            return n;
        }
        return read_raw(r, r->buf + r->end, room);
    }
    for (;;) {
        if (r->raw_pos == r->raw_len && !r->raw_eof) {
            r->raw_len = read_raw(r, r->raw, r->raw_cap);
            r->raw_pos = 0;
            r->raw_eof = r->raw_len == 0;
        }
        if (r->raw_pos == r->raw_len) {
            if (r->zret != 0)
                tool_die(EXIT_DATA, "%s: truncated zstd stream", r->name);
            return 0;
        }
        ZSTD_inBuffer in = { r->raw, r->raw_len, r->raw_pos };
        ZSTD_outBuffer out = { r->buf + r->end, room, 0 };
        r->zret = ZSTD_decompressStream(r->zs, &out, &in);
        if (ZSTD_isError(r->zret))
            tool_die(EXIT_DATA, "%s: zstd: %s", r->name, ZSTD_getErrorName(r->zret));
        r->raw_pos = in.pos;
        if (out.pos > 0)
            return out.pos;
    }
}

/* Next line without its '\n' (a missing final newline is fine).  Returns 1,
 * or 0 at the end of the input. */
static int next_line(reader *r, const char **line, size_t *len)
{
    for (;;) {
        char *nl = r->end > r->start ? memchr(r->buf + r->start, '\n', r->end - r->start) : NULL;
        if (nl || (r->eof && r->end > r->start)) {
            size_t stop = nl ? (size_t)(nl - r->buf) : r->end;
            *line = r->buf + r->start;
            *len = stop - r->start;
            r->start = nl ? stop + 1 : stop;
            r->line++;
            return 1;
        }
        if (r->eof)
            return 0;
        if (r->start > 0) {
            memmove(r->buf, r->buf + r->start, r->end - r->start);
            r->end -= r->start;
            r->start = 0;
        }
        if (r->end == r->cap) {
            if (r->cap >= MAX_LINE)
                tool_die(EXIT_DATA, "%s:%ld: line longer than %zu MiB", r->name, r->line + 1,
                         MAX_LINE >> 20);
            char *nb = realloc(r->buf, r->cap * 2);
            if (!nb)
                tool_die(EXIT_SYSTEM, "out of memory");
            r->buf = nb;
            r->cap *= 2;
        }
        size_t n = fill(r);
        r->end += n;
        if (n == 0)
            r->eof = 1;
    }
}

/* Die with a library error at the reader's current line. */
static _Noreturn void die_at(const reader *r, qs_error *err)
{
    if (err->code == QS_ERR_FORMAT)
        err->line = r->line;
    tool_die_err(r->name, err);
}

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
}

/* ------------------------------------------------------------ main */

/* Warn once about a qid that comes back after another one; count the rest. */
static long comebacks;

static void came_back(const reader *r, const qs_eval_doc *d)
{
    if (comebacks++ == 0)
        tool_warn("%s:%ld: qid '%.*s' comes back after another qid; --group=block keeps "
                  "the blocks apart as separate queries (--group=qid merges them)",
                  r->name, r->line, (int)(d->qid_len > 64 ? 64 : d->qid_len),
                  d->qid ? d->qid : "");
}

static unsigned *parse_ks(const char *s, size_t *nk)
{
    size_t n = 1;
    for (const char *p = s; *p; p++)
        n += *p == ',';
    unsigned *ks = malloc(n * sizeof *ks);
    if (!ks)
        tool_die(EXIT_SYSTEM, "out of memory");
    const char *p = s;
    for (size_t i = 0; i < n; i++) {
        if (*p < '0' || *p > '9')
            usage_die("bad -k '%s' (expected cutoffs such as 1,3,5,10; 0 = whole list)", s);
        char *e;
        errno = 0;
        unsigned long v = strtoul(p, &e, 10);
        if (errno || v > UINT_MAX || (*e != ',' && *e != '\0'))
            usage_die("bad -k '%s' (expected cutoffs such as 1,3,5,10; 0 = whole list)", s);
        ks[i] = (unsigned)v;
        p = *e ? e + 1 : e;
    }
    *nk = n;
    return ks;
}

static void print_value(double v)
{
    if (isnan(v))
        fputs("\texcluded", stdout);
    else
        printf("\t%.12f", v);
}

int main(int argc, char **argv)
{
    tool_init(argv[0]);
    enum { O_METRIC = 256, O_PERQ, O_COLUMN, O_LIKE, O_CONV };
    static const struct option opts[] = {
        { "metric", required_argument, 0, O_METRIC },
        { "per-query", no_argument, 0, O_PERQ },
        { "column", required_argument, 0, O_COLUMN },
        { "like", required_argument, 0, O_LIKE },
        { "gain", required_argument, 0, O_CONV },
        { "ties", required_argument, 0, O_CONV },
        { "norel", required_argument, 0, O_CONV },
        { "beyond", required_argument, 0, O_CONV },
        { "discount", required_argument, 0, O_CONV },
        { "score-type", required_argument, 0, O_CONV },
        { "group", required_argument, 0, O_CONV },
        { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, 'V' },
        { 0, 0, 0, 0 },
    };
    qs_eval_options o;
    memset(&o, 0, sizeof o);
    qs_eval_conv_default(&o.conv);
    o.metric = QS_METRIC_NDCG;
    unsigned *ks = NULL;
    size_t nk = 0;
    int per_query = 0;
    unsigned column = 1;
    qs_error err;
    qs_error_clear(&err);
    int c, idx;
    opterr = 0; /* our own messages, with the usage line */
    while ((c = getopt_long(argc, argv, ":k:hV", opts, &idx)) != -1) {
        switch (c) {
        case 'k':
            free(ks);
            ks = parse_ks(optarg, &nk);
            break;
        case O_METRIC: {
            int m = qs_metric_from_name(optarg);
            if (m < 0)
                usage_die("bad --metric '%s' (expected ndcg, err, map or p)", optarg);
            o.metric = (qs_metric)m;
            break;
        }
        case O_PERQ: per_query = 1; break;
        case O_COLUMN: {
            char *e;
            errno = 0;
            unsigned long v = strtoul(optarg, &e, 10);
            if (*optarg < '1' || *optarg > '9' || *e || errno || v > UINT_MAX - 2)
                usage_die("bad --column '%s' (expected a column number from 1)", optarg);
            column = (unsigned)v;
            break;
        }
        case O_LIKE:
            if (qs_eval_conv_preset(&o.conv, optarg, &err) != 0)
                usage_die("%s", err.msg);
            break;
        case O_CONV:
            if (qs_eval_conv_set(&o.conv, opts[idx].name, optarg, &err) != 0)
                usage_die("%s", err.msg);
            break;
        case 'h':
            help();
            tool_close_stdout();
            return EXIT_OK;
        case 'V':
            printf("qs-eval %s\n", QS_VERSION_STRING);
            tool_close_stdout();
            return EXIT_OK;
        case ':':
            usage_die("option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt && optopt < 256)
                usage_die("unknown option '-%c'", optopt);
            usage_die("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (!ks) {
        /* MAP is usually reported over the whole list (RankLib, XGBoost map). */
        static unsigned dflt_ndcg = 10, dflt_map = 0;
        ks = malloc(sizeof *ks);
        if (!ks)
            tool_die(EXIT_SYSTEM, "out of memory");
        ks[0] = o.metric == QS_METRIC_MAP ? dflt_map : dflt_ndcg;
        nk = 1;
    }
    o.ks = ks;
    o.nk = nk;

    int nfiles = argc - optind;
    const char *letor_path = NULL, *score_path = NULL, *ann_path = NULL;
    if (nfiles == 2) {
        letor_path = argv[optind];
        score_path = argv[optind + 1];
        if (strcmp(letor_path, "-") == 0 && strcmp(score_path, "-") == 0)
            usage_die("LETOR and SCORES cannot both be standard input");
    } else if (nfiles == 1) {
        ann_path = argv[optind];
    } else if (nfiles == 0) {
        if (isatty(STDIN_FILENO))
            usage_die("no input: give LETOR SCORES, or pipe label<TAB>qid<TAB>score lines "
                      "(qs-score --annotate)");
        ann_path = "-";
    } else {
        usage_die("too many arguments");
    }

    qs_eval *ev = qs_eval_new(&o, &err);
    if (!ev) {
        if (err.code == QS_ERR_ARG)
            usage_die("%s", err.msg);
        tool_die_err(NULL, &err);
    }

    const char *line;
    size_t len;
    qs_eval_doc doc;
    const char *where; /* the file named in a "no documents" error */
    if (ann_path) {
        reader A;
        reader_open(&A, ann_path);
        where = A.name;
        while (next_line(&A, &line, &len)) {
            if (len == 0 || (len == 1 && line[0] == '\r'))
                continue; /* an empty line carries no document and shifts nothing */
            if (qs_eval_parse_annotated(line, len, column, &doc, &err) != 0)
                die_at(&A, &err);
            int rc = qs_eval_add(ev, &doc, &err);
            if (rc < 0)
                die_at(&A, &err);
            if (rc > 0)
                came_back(&A, &doc);
        }
        reader_close(&A);
    } else {
        reader L, S;
        reader_open(&L, letor_path);
        reader_open(&S, score_path);
        where = L.name;
        size_t ndocs = 0;
        while (next_line(&L, &line, &len)) {
            int is_doc;
            if (qs_eval_parse_letor(line, len, &doc, &is_doc, &err) != 0)
                die_at(&L, &err);
            if (!is_doc)
                continue;
            ndocs++;
            const char *sl;
            size_t sn;
            if (!next_line(&S, &sl, &sn))
                tool_die(EXIT_DATA, "%s:%ld: no score for this document (%s has only %ld line%s)",
                         L.name, L.line, S.name, S.line, S.line == 1 ? "" : "s");
            if (qs_eval_parse_score(sl, sn, column, &doc.score, &err) != 0)
                die_at(&S, &err);
            int rc = qs_eval_add(ev, &doc, &err);
            if (rc < 0)
                die_at(&L, &err);
            if (rc > 0)
                came_back(&L, &doc);
        }
        /* Blank lines after the last score are harmless; anything else means
         * the files do not belong together. */
        while (next_line(&S, &line, &len))
            if (!blank(line, len))
                tool_die(EXIT_DATA, "%s:%ld: more scores than documents (%s has %zu)", S.name,
                         S.line, L.name, ndocs);
        reader_close(&L);
        reader_close(&S);
    }
    if (comebacks > 1)
        tool_warn("%ld blocks in all start with a qid seen before", comebacks);
    if (qs_eval_finish(ev, &err) != 0)
        tool_die_err(where, &err);

    const char *mname = qs_metric_name(o.metric);
    fputs("qid", stdout);
    for (size_t j = 0; j < nk; j++) {
        if (ks[j])
            printf("\t%s@%u", mname, ks[j]);
        else
            printf("\t%s", mname);
    }
    putchar('\n');
    if (per_query) {
        for (size_t q = 0; q < qs_eval_num_queries(ev); q++) {
            size_t ql;
            const char *qid = qs_eval_query_qid(ev, q, &ql);
            fwrite(qid, 1, ql, stdout);
            const double *v = qs_eval_query_values(ev, q);
            for (size_t j = 0; j < nk; j++)
                print_value(v[j]);
            putchar('\n');
        }
    }
    fputs("mean", stdout);
    const double *mean = qs_eval_mean(ev);
    for (size_t j = 0; j < nk; j++)
        print_value(mean[j]);
    putchar('\n');
    tool_close_stdout();
    qs_eval_free(ev);
    free(ks);
    return EXIT_OK;
}
