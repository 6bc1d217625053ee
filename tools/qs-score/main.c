/* qs-score: stream LETOR/SVMLight documents through a .qsm model and print
 * one line of scores per document, in input order, in bounded memory. */
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINE ((size_t)256 << 20) /* documented limit on one input line */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: qs-score [options] MODEL.qsm [DOCS|-] > SCORES\n"
            "\n"
            "Reads documents as LETOR/SVMLight text (`label [qid:Q] id:value ... [# comment]`;\n"
            "ids in any order, a repeated id: the last one wins; nan/inf accepted; CRLF and a\n"
            "missing final newline are fine) from DOCS or standard input, and writes one line\n"
            "per document: the raw score (the model's margin), printed with 17 significant\n"
            "digits for double-accumulated models and 9 for float32 ones; one tab-separated\n"
            "column per class for multiclass models.  Blank and comment-only lines are skipped.\n"
            "\n"
            "  --absent zero|missing  what an absent feature means (default: the source\n"
            "                         library's: LightGBM, QuickRank zero; XGBoost missing)\n"
            "  --transform            apply the objective's output function (sigmoid, softmax...)\n"
            "  --annotate             write `label<TAB>qid<TAB>score` lines (for qs-eval)\n"
            "  --backend NAME         force a back end (auto: the fastest exact one this\n"
            "                         machine runs); --list-backends names them (also\n"
            "                         the QS_BACKEND variable)\n"
            "  --tree-block N         trees per block (τ; 0: as large as possible)\n"
            "  --doc-block N          documents scored together (δ, 1..4096)\n"
            "  --delta N              threshold-scan skip distance (Δ, 1..64)\n"
            "                         (default for all three: what the .qsm stores)\n"
            "  -o, --output FILE      write to FILE, which appears only when complete\n"
            "  -h, --help             this help\n"
            "  --list-backends        one line per back end, tab-separated: name, available\n"
            "                         (yes, or no: and the reason), flags, summary\n"
            "  -V, --version          version; with -v, the back ends and this build\n"
            "\n"
            "exit: 0 ok, 1 bad model or document, 2 usage, 3 unsupported, 4 system error\n");
}

/* Flag names for --list-backends, in the order printed. */
static const struct { unsigned flag; const char *name; } flag_names[] = {
    { QS_BACKEND_F_REFERENCE, "reference" },
    { QS_BACKEND_F_BASELINE, "baseline" },
    { QS_BACKEND_F_OBLIVIOUS_ONLY, "oblivious-only" },
    { QS_BACKEND_F_SIMD, "simd" },
    { QS_BACKEND_F_THREADS, "threads" },
    { QS_BACKEND_F_DEVICE, "device" },
    { QS_BACKEND_F_ALIAS, "alias" },
};

/* name<TAB>yes|no: why<TAB>flags (comma-separated; "auto" on the one auto
 * runs as; "-" for none)<TAB>summary */
static void list_backends(void)
{
    const qs_backend a = qs_backend_auto();
    for (qs_backend b = 0; b < qs_backend_count(); b++) {
        qs_backend_info bi;
        if (qs_backend_get_info(b, &bi) != 0)
            continue;
        char flags[160] = "";
        size_t k = 0;
        for (size_t i = 0; i < sizeof flag_names / sizeof flag_names[0]; i++)
            if (bi.flags & flag_names[i].flag)
                k += (size_t)snprintf(flags + k, sizeof flags - k, "%s%s", k ? "," : "",
                                      flag_names[i].name);
        if (b == a)
            k += (size_t)snprintf(flags + k, sizeof flags - k, "%sauto", k ? "," : "");
        printf("%s\t%s%s\t%s\t%s\n", bi.name, bi.available ? "yes" : "no: ",
               bi.available ? "" : bi.why, k ? flags : "-", bi.summary);
    }
}

static void version(int verbose)
{
    printf("qs-score %s\n", QS_VERSION_STRING);
    if (!verbose)
        return;
    qs_build_info bi;
    qs_build_get_info(&bi);
    printf("back ends:\n");
    for (qs_backend b = 0; b < qs_backend_count(); b++) {
        qs_backend_info in;
        if (qs_backend_get_info(b, &in) != 0)
            continue;
        if (in.available)
            printf("  %-10s %s\n", in.name, in.summary);
        else
            printf("  (%s: not available: %s)\n", in.name, in.why);
    }
    printf("default: auto = %s on this machine\n", qs_backend_name(qs_backend_auto()));
    printf("cpu: %s%s%s\n", *bi.cpu_detected ? bi.cpu_detected : "no SIMD level qs uses",
           strcmp(bi.cpu_detected, bi.cpu_enabled) ? "; enabled: " : "",
           strcmp(bi.cpu_detected, bi.cpu_enabled) ? (*bi.cpu_enabled ? bi.cpu_enabled : "none")
                                                   : "");
    printf("build: library %s, openmp=%d numa=%d cuda=%d\n", bi.version, bi.openmp, bi.numa,
           bi.cuda);
}

/* "%.17g" / "%.9g" with an optional leading tab; returns the length. */
static int format_score(char *dst, double v, int digits, int tab)
{
    return snprintf(dst, 64, "%s%.*g", tab ? "\t" : "", digits, v);
}

/* Buffered line reader with a hard limit on the line length. */
typedef struct lines {
    FILE *f;
    char *buf;
    size_t cap, start, end;
    int eof;
} lines;

/* Returns 1 with line and len set, 0 at end of input, -1 if a line is too long. */
static int next_line(lines *L, const char **line, size_t *len)
{
    for (;;) {
        char *nl = L->end > L->start ? memchr(L->buf + L->start, '\n', L->end - L->start) : NULL;
        if (nl) {
            *line = L->buf + L->start;
            *len = (size_t)(nl - (L->buf + L->start));
            L->start = (size_t)(nl - L->buf) + 1;
            return 1;
        }
        if (L->eof) {
            if (L->end > L->start) {
                *line = L->buf + L->start;
                *len = L->end - L->start;
                L->start = L->end;
                return 1;
            }
            return 0;
        }
        if (L->start > 0) {
            memmove(L->buf, L->buf + L->start, L->end - L->start);
            L->end -= L->start;
            L->start = 0;
        }
        if (L->end == L->cap) {
            if (L->cap >= MAX_LINE)
                return -1;
            size_t nc = L->cap * 2;
            char *q = realloc(L->buf, nc);
            if (!q)
                tool_die(EXIT_SYSTEM, "out of memory");
            L->buf = q;
            L->cap = nc;
        }
        size_t r = fread(L->buf + L->end, 1, L->cap - L->end, L->f);
        L->end += r;
        if (r == 0) {
            if (ferror(L->f))
                tool_die(EXIT_SYSTEM, "read error: %s", strerror(errno));
            L->eof = 1;
        }
    }
}

static uint32_t parse_u32(const char *s, const char *what, uint32_t lo, uint32_t hi)
{
    char *e;
    errno = 0;
    unsigned long v = strtoul(s, &e, 10);
    if (!*s || *e || errno || s[0] == '-' || v < lo || v > hi)
        tool_die(EXIT_USAGE, "bad %s '%s' (expected %u..%u)", what, s, lo, hi);
    return (uint32_t)v;
}

/* What --annotate needs of a document until its batch is written. */
typedef struct meta_copy {
    char *label, *qid;
    size_t label_len, qid_len, cap_label, cap_qid;
    int has_qid;
} meta_copy;

static void keep(char **dst, size_t *cap, size_t *len, const char *src, size_t n)
{
    if (n > *cap) {
        char *q = realloc(*dst, n);
        if (!q)
            tool_die(EXIT_SYSTEM, "out of memory");
        *dst = q;
        *cap = n;
    }
    if (n)
        memcpy(*dst, src, n);
    *len = n;
}

int main(int argc, char **argv)
{
    tool_init(argv[0]);
    static const struct option opts[] = {
        { "absent", required_argument, 0, 'a' },
        { "transform", no_argument, 0, 't' },
        { "annotate", no_argument, 0, 'n' },
        { "backend", required_argument, 0, 'b' },
        { "tree-block", required_argument, 0, 'T' },
        { "doc-block", required_argument, 0, 'D' },
        { "delta", required_argument, 0, 'd' },
        { "output", required_argument, 0, 'o' },
        { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, 'V' },
        { "verbose", no_argument, 0, 'v' },
        { "list-backends", no_argument, 0, 'L' },
        { 0, 0, 0, 0 },
    };
    qs_absent absent = QS_ABSENT_DEFAULT;
    int transform = 0, annotate = 0, show_version = 0, verbose = 0, show_list = 0;
    const char *outpath = NULL, *bname = getenv("QS_BACKEND");
    uint32_t tree_block = QS_KEEP, doc_block = QS_KEEP, delta = QS_KEEP;
    int c;
    while ((c = getopt_long(argc, argv, "o:hVv", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            if (strcmp(optarg, "zero") == 0)
                absent = QS_ABSENT_ZERO;
            else if (strcmp(optarg, "missing") == 0)
                absent = QS_ABSENT_MISSING;
            else
                tool_die(EXIT_USAGE, "bad --absent '%s' (expected zero or missing)", optarg);
            break;
        case 't': transform = 1; break;
        case 'n': annotate = 1; break;
        case 'b': bname = optarg; break;
        case 'T': tree_block = parse_u32(optarg, "--tree-block", 0, UINT32_MAX - 1); break;
        case 'D': doc_block = parse_u32(optarg, "--doc-block", 1, 4096); break;
        case 'd': delta = parse_u32(optarg, "--delta", 1, 64); break;
        case 'o': outpath = optarg; break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': show_version = 1; break;
        case 'v': verbose = 1; break;
        case 'L': show_list = 1; break;
        default: usage(stderr); return EXIT_USAGE;
        }
    }
    if (show_version) {
        version(verbose);
        return EXIT_OK;
    }
    if (show_list) {
        list_backends();
        tool_close_stdout();
        return EXIT_OK;
    }
    qs_backend backend = QS_BACKEND_AUTO;
    if (bname && *bname) {
        backend = qs_backend_find(bname);
        if (backend == QS_BACKEND_UNKNOWN)
            tool_die(EXIT_USAGE, "unknown back end '%s' (see qs-score --list-backends)", bname);
    }
    if (argc - optind < 1 || argc - optind > 2) {
        tool_warn(argc - optind < 1 ? "missing MODEL.qsm" : "too many arguments");
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *mpath = argv[optind];
    const char *dpath = optind + 1 < argc ? argv[optind + 1] : "-";
    const char *dname = strcmp(dpath, "-") == 0 ? "(stdin)" : dpath;

    size_t mlen;
    char *mbuf = tool_read_all(mpath, &mlen);
    qs_error err;
    qs_error_clear(&err);
    qs_scorer *s = qs_scorer_load((const unsigned char *)mbuf, mlen, &err);
    free(mbuf);
    if (!s)
        tool_die_err(mpath, &err);
    if ((tree_block != QS_KEEP || doc_block != QS_KEEP || delta != QS_KEEP) &&
        qs_scorer_relayout(s, tree_block, doc_block, delta, &err) != 0)
        tool_die_err(NULL, &err);
    if (qs_scorer_prepare(s, backend, &err) != 0)
        tool_die_err(mpath, &err);
    const qs_model *m = qs_scorer_model(s);
    qs_model_info info;
    qs_model_get_info(m, &info);
    if (transform && strcmp(info.transform, "unsupported") == 0)
        tool_die(EXIT_UNSUPPORTED, "%s: the model's output transform cannot be reproduced exactly; "
                                   "score without --transform", mpath);
    qs_workspace *w = qs_workspace_new(s, &err);
    if (!w)
        tool_die_err(NULL, &err);

    FILE *in = stdin;
    if (strcmp(dpath, "-") != 0 && !(in = fopen(dpath, "rb")))
        tool_die(EXIT_SYSTEM, "%s: cannot open: %s", dpath, strerror(errno));
    tool_out out;
    tool_out_open(&out, outpath, 0);
    static char obuf[1 << 16];
    setvbuf(out.fp, NULL, _IOFBF, 1 << 20);

    lines L = { in, malloc(1 << 20), 1 << 20, 0, 0, 0 };
    if (!L.buf)
        tool_die(EXIT_SYSTEM, "out of memory");
    const int digits = qs_score_digits(s);
    const uint32_t nslots = qs_workspace_slots(w);
    double *batch = malloc(sizeof(double) * info.num_classes * nslots);
    meta_copy *meta = calloc(nslots, sizeof *meta);
    if (!batch || !meta)
        tool_die(EXIT_SYSTEM, "out of memory");
    const char *line;
    size_t len;
    long ln = 0;
    uint32_t n = 0;
    int rc;
    for (;;) {
        rc = next_line(&L, &line, &len);
        if (rc == 1) {
            ln++;
            qs_letor_line lm;
            int is_doc;
            qs_workspace_select(w, n);
            if (qs_letor_parse(s, w, absent, line, len, &lm, &is_doc, &err) != 0) {
                err.line = ln;
                tool_die_err(dname, &err);
            }
            if (!is_doc)
                continue;
            if (annotate) {
                /* The line buffer moves as more lines are read: keep copies. */
                keep(&meta[n].label, &meta[n].cap_label, &meta[n].label_len, lm.label, lm.label_len);
                meta[n].has_qid = lm.qid != NULL;
                keep(&meta[n].qid, &meta[n].cap_qid, &meta[n].qid_len, lm.qid ? lm.qid : "",
                     lm.qid_len);
            }
            if (++n < nslots)
                continue;
        }
        if (n > 0) {
            if (qs_score_batch(s, w, backend, n, batch, &err) != 0)
                tool_die_err(NULL, &err);
            for (uint32_t d = 0; d < n; d++) {
                double *sc = batch + (size_t)d * info.num_classes;
                if (transform)
                    qs_transform(s, sc);
                size_t k = 0;
                if (annotate) {
                    tool_out_write(&out, meta[d].label, meta[d].label_len);
                    tool_out_write(&out, "\t", 1);
                    if (meta[d].has_qid)
                        tool_out_write(&out, meta[d].qid, meta[d].qid_len);
                    tool_out_write(&out, "\t", 1);
                }
                for (uint32_t cl = 0; cl < info.num_classes; cl++) {
                    if (k > sizeof obuf - 64) {
                        tool_out_write(&out, obuf, k);
                        k = 0;
                    }
                    k += (size_t)format_score(obuf + k, sc[cl], digits, cl > 0);
                }
                obuf[k++] = '\n';
                tool_out_write(&out, obuf, k);
            }
            n = 0;
        }
        if (rc != 1)
            break;
    }
    if (rc < 0)
        tool_die(EXIT_DATA, "%s:%ld: line longer than %zu MiB", dname, ln + 1, MAX_LINE >> 20);
    if (in != stdin)
        fclose(in);
    tool_out_commit(&out);
    free(L.buf);
    for (uint32_t d = 0; d < nslots; d++) {
        free(meta[d].label);
        free(meta[d].qid);
    }
    free(meta);
    free(batch);
    qs_workspace_free(w);
    qs_scorer_free(s);
    return EXIT_OK;
}
