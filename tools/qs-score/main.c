/* qs-score: stream LETOR/SVMLight documents through a .qsm model and print
 * one line of scores per document, in input order, in bounded memory. */
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

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
            "  --strict-features      a feature id the model does not have (>= its feature\n"
            "                         count) is an error; by default it is ignored, with one\n"
            "                         warning naming the first such line\n"
            "  --backend NAME         force a back end: auto, walk, qs, vqs, vqs-avx2,\n"
            "                         vqs-avx512, struct, vpred, oblivious (also the\n"
            "                         QS_BACKEND variable)\n"
            "  --tree-block N         trees per block (τ; 0: as large as possible)\n"
            "  --doc-block N          documents scored together (δ, 1..4096)\n"
            "  --delta N              threshold-scan skip distance (Δ, 1..64)\n"
            "                         (default for all three: what the .qsm stores)\n"
            "  -o, --output FILE      write to FILE, which appears only when complete\n"
            "  -h, --help             this help\n"
            "  -V, --version          version; with -v, the back ends compiled in\n"
            "\n"
            "exit: 0 ok, 1 bad model or document, 2 usage, 3 unsupported, 4 system error\n");
}

static void version(int verbose)
{
    printf("qs-score %s\n", QS_VERSION_STRING);
    if (!verbose)
        return;
    printf("back ends:\n");
    printf("  walk   plain tree walk (the internal reference)\n");
    printf("  qs     scalar QuickScorer, blockwise (BWQS), delta-skip; QS-Omega on\n"
           "         oblivious blocks; 8/16/32/64-bit and multi-word leaf masks\n");
    printf("  struct baseline: naive pointer walk over node structs (STRUCT+)\n");
    printf("  vpred  baseline: branch-free walk unrolled by depth, documents interleaved\n");
    printf("  oblivious  baseline for oblivious models: leaf index bit by bit\n");
    /* A SIMD back end this CPU cannot run is listed with the reason, in a
     * form the test suite's list of back ends skips. */
    const struct { qs_backend b; const char *what; } simd[] = {
        { QS_BACKEND_VQS, "vQS: QS over several documents per SIMD instruction, the widest\n"
                          "         this CPU runs (AVX-512: 64 documents, AVX2: 4)" },
        { QS_BACKEND_VQS_AVX2, "vQS forced to AVX2 (4 documents per instruction)" },
        { QS_BACKEND_VQS_AVX512, "vQS forced to AVX-512 (64 documents per instruction)" },
    };
    for (size_t i = 0; i < sizeof simd / sizeof simd[0]; i++) {
        if (qs_backend_available(NULL, simd[i].b))
            printf("  %-6s %s\n", qs_backend_name(simd[i].b), simd[i].what);
        else
            printf("  (%s: not available, this CPU or build lacks it)\n",
                   qs_backend_name(simd[i].b));
    }
    printf("default: auto = %s on this CPU\n", qs_backend_resolve(QS_BACKEND_AUTO));
    printf("build: openmp=%d numa=%d cuda=%d (not used by any back end yet)\n", QS_HAVE_OPENMP,
           QS_HAVE_NUMA, QS_HAVE_CUDA);
}

/* "%.17g" / "%.9g" with an optional leading tab; returns the length. */
static int format_score(char *dst, double v, int digits, int tab)
{
    return snprintf(dst, 64, "%s%.*g", tab ? "\t" : "", digits, v);
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

/* A document with a feature id the model does not have: LightGBM and
 * XGBoost refuse such a mismatch; sparse LETOR files often carry extra ids,
 * so by default one warning, and an error with --strict-features. */
static void extra_features(const char *dname, long ln, long long id, uint32_t nf, int strict,
                           int *warned)
{
    if (strict)
        tool_die(EXIT_DATA, "%s:%ld: feature id %lld is beyond the model's %u features "
                            "(ids 0..%lld; --strict-features)",
                 dname, ln, id, nf, (long long)nf - 1);
    tool_warn("%s:%ld: feature id %lld is beyond the model's %u features (ids "
              "0..%lld): ignored, here and on any later line (--strict-features refuses it)",
              dname, ln, id, nf, (long long)nf - 1);
    *warned = 1;
}

int main(int argc, char **argv)
{
    tool_init(argv[0]);
    static const struct option opts[] = {
        { "absent", required_argument, 0, 'a' },
        { "transform", no_argument, 0, 't' },
        { "annotate", no_argument, 0, 'n' },
        { "strict-features", no_argument, 0, 'S' },
        { "backend", required_argument, 0, 'b' },
        { "tree-block", required_argument, 0, 'T' },
        { "doc-block", required_argument, 0, 'D' },
        { "delta", required_argument, 0, 'd' },
        { "output", required_argument, 0, 'o' },
        { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, 'V' },
        { "verbose", no_argument, 0, 'v' },
        { 0, 0, 0, 0 },
    };
    qs_absent absent = QS_ABSENT_DEFAULT;
    int transform = 0, annotate = 0, show_version = 0, verbose = 0, strict_features = 0;
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
        case 'S': strict_features = 1; break;
        case 'b': bname = optarg; break;
        case 'T': tree_block = parse_u32(optarg, "--tree-block", 0, UINT32_MAX - 1); break;
        case 'D': doc_block = parse_u32(optarg, "--doc-block", 1, 4096); break;
        case 'd': delta = parse_u32(optarg, "--delta", 1, 64); break;
        case 'o': outpath = optarg; break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': show_version = 1; break;
        case 'v': verbose = 1; break;
        default: usage(stderr); return EXIT_USAGE;
        }
    }
    if (show_version) {
        version(verbose);
        return EXIT_OK;
    }
    qs_backend backend = QS_BACKEND_AUTO;
    if (bname && *bname) {
        backend = qs_backend_from_name(bname);
        if (backend == QS_BACKEND_COUNT_)
            tool_die(EXIT_USAGE, "unknown back end '%s' (see qs-score --version -v)", bname);
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
    if (!qs_backend_available(NULL, backend))
        tool_die(EXIT_UNSUPPORTED, "back end '%s' needs a CPU feature this machine lacks (see --version -v)",
                 qs_backend_name(backend));
    if (!qs_backend_available(s, backend))
        tool_die(EXIT_UNSUPPORTED, "back end '%s' cannot score this model", qs_backend_name(backend));
    const qs_model *m = qs_scorer_model(s);
    qs_model_info info;
    qs_model_get_info(m, &info);
    if (transform && strcmp(info.transform, "unsupported") == 0)
        tool_die(EXIT_UNSUPPORTED, "%s: the model's output transform cannot be reproduced exactly; "
                                   "score without --transform", mpath);
    qs_workspace *w = qs_workspace_new(s, &err);
    if (!w)
        tool_die_err(NULL, &err);

    tool_out out;
    tool_out_open(&out, outpath, 0);
    tool_reader L;
    tool_reader_open(&L, dpath);
    static char obuf[1 << 16];
    setvbuf(out.fp, NULL, _IOFBF, 1 << 20);

    const int digits = qs_score_digits(s);
    const uint32_t nslots = qs_workspace_slots(w);
    double *batch = malloc(sizeof(double) * info.num_classes * nslots);
    meta_copy *meta = calloc(nslots, sizeof *meta);
    if (!batch || !meta)
        tool_die(EXIT_SYSTEM, "out of memory");
    const char *line;
    size_t len;
    long ln = 0;
    int features_warned = 0;
    uint32_t n = 0;
    int rc;
    for (;;) {
        rc = tool_reader_line(&L, &line, &len);
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
            if (lm.max_id >= (long long)info.num_features && !features_warned)
                extra_features(dname, ln, lm.max_id, info.num_features, strict_features,
                               &features_warned);
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
            if (qs_score_batch(s, w, backend, n, batch) != 0)
                tool_die(EXIT_UNSUPPORTED, "back end '%s' cannot score this model",
                         qs_backend_name(backend));
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
    tool_reader_close(&L);
    tool_out_commit(&out);
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
