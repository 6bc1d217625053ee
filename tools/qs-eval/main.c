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
        "  --group-file FILE  query groups from FILE (one group size per line, documents\n"
        "                     in order; LightGBM's .query, XGBoost's .group) instead of\n"
        "                     qid: tokens; LETOR.query or LETOR.group beside a LETOR file\n"
        "                     is read without this option\n"
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
        "  --like-model MODEL          as --like the library that trained MODEL (a .qsm\n"
        "                              or any model qs-compile reads: LightGBM, XGBoost,\n"
        "                              QuickRank); CatBoost and ONNX models have no\n"
        "                              preset (exit 2)\n"
        "  --progress         show progress on standard error (lines, MB, rate)\n"
        "  --no-progress      do not (default: shown when standard error is a terminal\n"
        "                     and standard output is not); SIGUSR1 prints one line\n"
        "  -h, --help         this help\n"
        "  -V, --version      version\n"
        "\n"
        "Output: tab-separated; first a line `# METRIC: gain=... group=... (as --like\n"
        "TOOL)` naming the convention used, then a header `qid<TAB>ndcg@1<TAB>...`, the\n"
        "rows of --per-query, then a `mean` row; values with 12 decimals.\n"
        "\n"
        "exit: 0 ok, 1 malformed input (bad label or score, files of different\n"
        "lengths, no documents), 2 usage, 4 system error\n");
}

static _Noreturn void usage_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void usage_die(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tool_die(EXIT_USAGE, "%s", msg);
}

/* ------------------------------------------------------------ input */

/* Die with a library error at the reader's current line. */
static _Noreturn void die_at(const tool_reader *r, qs_error *err)
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

static void came_back(const tool_reader *r, const qs_eval_doc *d)
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
    unsigned *ks = tool_hold(malloc(n * sizeof *ks), free); /* (freed on any exit) */
    if (!ks)
        tool_die(EXIT_SYSTEM, "out of memory");
    const char *p = s;
    for (size_t i = 0; i < n; i++) {
        /* each cutoff by the one rule of numbers (qs_parse_count) */
        char one[32];
        size_t len = strcspn(p, ",");
        uint64_t v;
        if (len >= sizeof one)
            len = sizeof one - 1; /* too long for any cutoff: refused below */
        memcpy(one, p, len);
        one[len] = '\0';
        if (strcspn(p, ",") >= sizeof one || qs_parse_count(one, 0, UINT_MAX, &v) != 0)
            usage_die("bad -k '%s' (expected cutoffs such as 1,3,5,10; 0 = whole list)", s);
        ks[i] = (unsigned)v;
        p += strcspn(p, ",");
        p += *p == ',';
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

/* The header, printed once: before the first --per-query row, or with the
 * mean (so an error before any result leaves standard output empty). */
static const unsigned *ks_print;
static size_t nk_print;
static const char *metric_print;
static const qs_eval_conv *conv_print;

static void print_header(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    /* The convention first, on a '#' line (README.md, qs-eval, Output). */
    char d[256];
    const char *like = qs_eval_conv_preset_of(conv_print);
    printf("# %s: %s", metric_print, qs_eval_conv_describe(conv_print, d, sizeof d));
    if (like)
        printf(" (as --like %s%s)", like, strcmp(like, "quickrank") == 0 ? ", the default" : "");
    if (conv_print->norel == QS_NOREL_ZERO)
        fputs("; a query without relevant documents scores 0 (1 with --norel=1, --like "
              "lightgbm or xgboost)", stdout);
    putchar('\n');
    fputs("qid", stdout);
    for (size_t j = 0; j < nk_print; j++) {
        if (ks_print[j])
            printf("\t%s@%u", metric_print, ks_print[j]);
        else
            printf("\t%s", metric_print);
    }
    putchar('\n');
}

/* --per-query rows, printed as each query's values are known. */
static void print_query(void *ctx, const char *qid, size_t qid_len, const double *v, size_t ndocs)
{
    if (!ctx)
        return;
    print_header();
    fwrite(qid, 1, qid_len, stdout);
    for (size_t j = 0; j < nk_print; j++)
        print_value(v[j]);
    putchar('\n');
}

/* Query groups from a sidecar file (LightGBM's DOCS.query, XGBoost's
 * DOCS.group): one group size per line, the documents in order. */
typedef struct groups {
    tool_reader r;
    int on;
    unsigned long long left;  /* documents left in the current group */
    unsigned long long n;     /* groups started */
    unsigned long long total; /* documents the groups started so far hold */
    char qid[24];
} groups;

/* Read the next group size; 0 at the end of the file. */
static int next_group(groups *g)
{
    const char *line;
    size_t len;
    while (tool_reader_line(&g->r, &line, &len)) {
        while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
            len--;
        if (len == 0)
            continue;
        /* the one rule of whole numbers (qs_parse_count): digits only */
        char num[32];
        uint64_t v = 0;
        if (len < sizeof num) {
            memcpy(num, line, len);
            num[len] = '\0';
        }
        if (len >= sizeof num || qs_parse_count(num, 1, UINT64_MAX, &v) != 0)
            tool_die(EXIT_DATA, "%s:%ld: bad group size '%.*s' (expected a whole number >= 1)",
                     g->r.name, g->r.line, (int)(len > 40 ? 40 : len), line);
        /* a checked sum: sizes that wrap past 2^64 would otherwise come
         * back to the document count */
        if (v > UINT64_MAX - g->total)
            tool_die(EXIT_DATA, "%s:%ld: the group sizes add up to more than %llu documents",
                     g->r.name, g->r.line, (unsigned long long)UINT64_MAX);
        g->left = v;
        g->total += v;
        g->n++;
        snprintf(g->qid, sizeof g->qid, "%llu", g->n);
        return 1;
    }
    return 0;
}

/* Put the document of line r->line into its group (its qid: the group's
 * number, from 1). */
static void group_doc(groups *g, const tool_reader *r, qs_eval_doc *doc)
{
    if (g->left == 0 && !next_group(g))
        tool_die(EXIT_DATA, "%s:%ld: more documents than the group file %s holds (%llu in %llu "
                            "groups)", r->name, r->line, g->r.name, g->total, g->n);
    g->left--;
    doc->qid = g->qid;
    doc->qid_len = strlen(g->qid);
}

/* The group file must hold exactly the documents. */
static void groups_end(groups *g, const char *docs, unsigned long long ndocs)
{
    if (!g->on)
        return;
    while (next_group(g))
        ;
    if (g->total != ndocs)
        tool_die(EXIT_DATA, "%s: the group sizes add up to %llu documents, but %s has %llu",
                 g->r.name, g->total, docs, ndocs);
    tool_reader_close(&g->r);
}

/* Without qids and groups, a long file is one query: most likely a mistake. */
#define ONE_QUERY_WARN 1000

static void release_eval(void *ev) { qs_eval_free(ev); }

int main(int argc, char **argv)
{
    tool_init(argv[0]);
    enum { O_METRIC = 256, O_PERQ, O_COLUMN, O_LIKE, O_CONV, O_GROUPFILE, O_PROGRESS,
           O_NOPROGRESS, O_LIKEMODEL };
    static const struct option opts[] = {
        { "metric", required_argument, 0, O_METRIC },
        { "per-query", no_argument, 0, O_PERQ },
        { "column", required_argument, 0, O_COLUMN },
        { "like", required_argument, 0, O_LIKE },
        { "like-model", required_argument, 0, O_LIKEMODEL },
        { "gain", required_argument, 0, O_CONV },
        { "ties", required_argument, 0, O_CONV },
        { "norel", required_argument, 0, O_CONV },
        { "beyond", required_argument, 0, O_CONV },
        { "discount", required_argument, 0, O_CONV },
        { "score-type", required_argument, 0, O_CONV },
        { "group", required_argument, 0, O_CONV },
        { "group-file", required_argument, 0, O_GROUPFILE },
        { "progress", no_argument, 0, O_PROGRESS },
        { "no-progress", no_argument, 0, O_NOPROGRESS },
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
    int per_query = 0, progress = TOOL_PROGRESS_AUTO;
    const char *group_file = NULL;
    unsigned column = 1;
    qs_error err;
    qs_error_clear(&err);
    int c, idx;
    opterr = 0; /* our own messages, with the usage line */
    while ((c = getopt_long(argc, argv, ":k:hV", opts, &idx)) != -1) {
        switch (c) {
        case 'k':
            tool_release(ks);
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
        case O_PROGRESS: progress = TOOL_PROGRESS_ON; break;
        case O_NOPROGRESS: progress = TOOL_PROGRESS_OFF; break;
        case O_GROUPFILE: group_file = optarg; break;
        case O_COLUMN: {
            uint64_t v;
            if (qs_parse_count(optarg, 1, UINT_MAX - 2, &v) != 0)
                usage_die("bad --column '%s' (expected a column number from 1)", optarg);
            column = (unsigned)v;
            break;
        }
        case O_LIKE:
            if (qs_eval_conv_preset(&o.conv, optarg, &err) != 0)
                usage_die("%s", err.msg);
            break;
        case O_LIKEMODEL: {
            /* --like the library that trained the model (a .qsm's source,
             * or any model's): opened by the library's one open path, as
             * qs-score and the Python binding open one (QS_MAX_INPUT,
             * zstd, a wrong start stops the read; converted and compiled
             * when it is not a .qsm) */
            qs_opened mo;
            const qs_open_options oo = { QS_FMT_UNKNOWN,
                                         QS_OPEN_NO_CONVERT | QS_OPEN_IGNORE_TUNING, 0, 0, 0, 0 };
            tool_open_model(optarg, &oo, &mo);
            tool_compile_opened(optarg, &mo);
            qs_scorer *s = qs_opened_load(&mo, 1, 0, 0, &err);
            if (!s)
                tool_die_err(optarg, &err);
            qs_model_info mi;
            qs_model_get_info(qs_scorer_model(s), &mi);
            qs_scorer_free(s);
            tool_release(&mo);
            const char *like = qs_eval_preset_of_source(mi.source);
            if (!like)
                usage_die("--like-model %s: qs-eval has no convention for the library of this "
                          "model (%s); give --like TOOL", optarg,
                          qs_source_get(mi.source) ? qs_source_get(mi.source)->library
                                                   : "unknown");
            if (qs_eval_conv_preset(&o.conv, like, &err) != 0)
                tool_die_err(NULL, &err);
            break;
        }
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
        default: tool_bad_option(c, argv, opts);
        }
    }
    /* From here on SIGUSR1 prints a progress line (lines and bytes read). */
    tool_progress_start(progress, "lines");
    if (!ks) {
        /* MAP is usually reported over the whole list (RankLib, XGBoost map). */
        static unsigned dflt_ndcg = 10, dflt_map = 0;
        ks = tool_hold(malloc(sizeof *ks), free);
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

    /* LightGBM reads DOCS.query, XGBoost DOCS.group, beside the LETOR file. */
    char *auto_group = NULL;
    if (!group_file && letor_path && strcmp(letor_path, "-") != 0) {
        static const char *const ext[] = { ".query", ".group" };
        for (size_t i = 0; i < 2 && !group_file; i++) {
            size_t n = strlen(letor_path) + strlen(ext[i]) + 1;
            auto_group = tool_hold(malloc(n), free);
            if (!auto_group)
                tool_die(EXIT_SYSTEM, "out of memory");
            snprintf(auto_group, n, "%s%s", letor_path, ext[i]);
            if (access(auto_group, F_OK) == 0)
                group_file = auto_group;
            else {
                tool_release(auto_group);
                auto_group = NULL;
            }
        }
    }
    groups G;
    memset(&G, 0, sizeof G);
    if (group_file) {
        tool_reader_open(&G.r, group_file);
        G.on = 1;
    }

    o.on_query = print_query;
    o.ctx = per_query ? &o : NULL;
    nk_print = nk;
    ks_print = ks;
    metric_print = qs_metric_name(o.metric);
    conv_print = &o.conv;
    qs_eval *ev = tool_hold(qs_eval_new(&o, &err), release_eval);
    if (!ev) {
        if (err.code == QS_ERR_ARG)
            usage_die("%s", err.msg);
        tool_die_err(NULL, &err);
    }

    const char *line;
    size_t len;
    qs_eval_doc doc;
    const char *where; /* the file named in a "no documents" error */
    unsigned long long ndocs_all = 0, with_qid = 0;
    if (ann_path) {
        tool_reader A;
        tool_reader_open(&A, ann_path);
        tool_progress_total(A.size);
        where = A.name;
        while (tool_reader_line(&A, &line, &len)) {
            if ((A.line & 1023) == 0)
                tool_progress_count((unsigned long long)A.line, A.bytes_in);
            if (len == 0 || (len == 1 && line[0] == '\r'))
                continue; /* an empty line carries no document and shifts nothing */
            if (qs_eval_parse_annotated(line, len, column, &doc, &err) != 0)
                die_at(&A, &err);
            ndocs_all++;
            with_qid += doc.qid_len > 0;
            if (G.on)
                group_doc(&G, &A, &doc);
            int rc = qs_eval_add(ev, &doc, &err);
            if (rc < 0)
                die_at(&A, &err);
            if (rc > 0)
                came_back(&A, &doc);
        }
        tool_progress_count((unsigned long long)A.line, A.bytes_in);
        tool_reader_close(&A);
    } else {
        tool_reader L, S;
        tool_reader_open(&L, letor_path);
        tool_reader_open(&S, score_path);
        tool_progress_total(L.size);
        where = L.name;
        size_t ndocs = 0;
        while (tool_reader_line(&L, &line, &len)) {
            if ((L.line & 1023) == 0)
                tool_progress_count((unsigned long long)L.line, L.bytes_in);
            int is_doc;
            if (qs_eval_parse_letor(line, len, &doc, &is_doc, &err) != 0)
                die_at(&L, &err);
            if (!is_doc)
                continue;
            ndocs++;
            const char *sl;
            size_t sn;
            if (!tool_reader_line(&S, &sl, &sn))
                tool_die(EXIT_DATA, "%s:%ld: no score for this document (%s has only %ld line%s)",
                         L.name, L.line, S.name, S.line, S.line == 1 ? "" : "s");
            if (qs_eval_parse_score(sl, sn, column, &doc.score, &err) != 0)
                die_at(&S, &err);
            ndocs_all++;
            with_qid += doc.qid != NULL;
            if (G.on)
                group_doc(&G, &L, &doc);
            int rc = qs_eval_add(ev, &doc, &err);
            if (rc < 0)
                die_at(&L, &err);
            if (rc > 0)
                came_back(&L, &doc);
        }
        /* Blank lines after the last score are harmless; anything else means
         * the files do not belong together. */
        while (tool_reader_line(&S, &line, &len))
            if (!blank(line, len))
                tool_die(EXIT_DATA, "%s:%ld: more scores than documents (%s has %zu)", S.name,
                         S.line, L.name, ndocs);
        tool_progress_count((unsigned long long)L.line, L.bytes_in);
        tool_reader_close(&L);
        tool_reader_close(&S);
    }
    tool_progress_done();
    groups_end(&G, where, ndocs_all);
    tool_release(auto_group);
    if (!G.on && with_qid == 0 && ndocs_all > ONE_QUERY_WARN)
        tool_warn("%s: %llu documents without qid: and no group file: they are evaluated as one "
                  "query (give --group-file FILE, or put the group sizes in %s.query)",
                  where, ndocs_all, strcmp(where, "(stdin)") == 0 ? "DOCS" : where);
    if (comebacks > 1)
        tool_warn("%ld blocks in all start with a qid seen before", comebacks);
    if (qs_eval_finish(ev, &err) != 0)
        tool_die_err(where, &err);

    print_header();
    fputs("mean", stdout);
    const double *mean = qs_eval_mean(ev);
    for (size_t j = 0; j < nk; j++)
        print_value(mean[j]);
    putchar('\n');
    tool_close_stdout();
    tool_release(ev);
    tool_release(ks);
    return EXIT_OK;
}
