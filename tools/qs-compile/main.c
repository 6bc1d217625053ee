/* qs-compile: build the binary QuickScorer model (.qsm) from canonical
 * ensemble text (or any model qs-convert reads). */
#include "info.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: qs-compile [-o OUT.qsm] [--delta N] [--tree-block N] [--doc-block N]\n"
            "                  [--reverse-sample DOCS] [-v] [ENSEMBLE|-]\n"
            "       qs-compile --info [--json] [-o FILE] [options] [MODEL|-]\n"
            "\n"
            "Reads canonical ensemble text (from qs-convert; a LightGBM, XGBoost or\n"
            "QuickRank model is converted on the fly) and writes the .qsm model\n"
            "(format/qsm.md): per feature, thresholds sorted ascending with tree ids and\n"
            "leaf masks; leaf tables; blocks of trees with the narrowest mask width that\n"
            "fits (8/16/32/64 bits, multi-word above 64 leaves); oblivious trees laid out\n"
            "for QS-Omega.  The output appears only when complete (temporary name, then\n"
            "rename); binary output is refused on a terminal.\n"
            "\n"
            "  -o, --output F    write to F (default: standard output)\n"
            "  --delta N         threshold-scan skip distance stored in the model (1..64, default 8)\n"
            "  --tree-block N    at most N trees per block (τ; default 0: chosen when the\n"
            "                    model is loaded, from that machine's last-level cache)\n"
            "  --doc-block N     documents scored together (δ, 1..4096; default 64)\n"
            "  --reverse-sample DOCS\n"
            "                    tree reversal: score the LETOR documents in DOCS and lay out\n"
            "                    reversed every tree with more false than true nodes on them\n"
            "                    (fewer entries to scan; scores stay bit-identical)\n"
            "  --reverse-all     lay out every tree reversed (for tests and measurements)\n"
            "  -v, --verbose     say how many trees were reversed\n"
            "  --info            describe MODEL (a .qsm, canonical text or any model\n"
            "                    qs-convert reads) instead of compiling it: source and\n"
            "                    version, objective, transform, features used, classes,\n"
            "                    trees, leaves and depth histograms, oblivious or not, the\n"
            "                    layout (blocks, mask widths, τ, δ, Δ; for a model that is\n"
            "                    not a .qsm, the one qs-compile would write with these\n"
            "                    options), the tuning record, and a .qsm's sections\n"
            "  --json            with --info: one JSON object\n"
            "  --progress        show what is being done on standard error (reading,\n"
            "                    laying out, writing)\n"
            "  --no-progress     do not (default: shown when standard error is a terminal\n"
            "                    and standard output is not); SIGUSR1 prints the phase\n"
            "  -h, --help        this help\n"
            "  -V, --version     version\n"
            "\n"
            "exit: 0 ok, 1 malformed input, 2 usage, 3 unsupported model, 4 system error\n");
}

/* Release functions for tool_hold (every block is held until freed, so
 * that each exit frees it). */
static void release_scorer(void *s) { qs_scorer_free(s); }
static void release_workspace(void *w) { qs_workspace_free(w); }
static void release_model(void *m) { qs_model_free(m); }

/* Tree reversal: count each tree's false and true nodes over the sample
 * documents and reverse the trees with more false than true ones. */
static uint8_t *decide_reversal(const unsigned char *img, size_t ilen, const char *path,
                                int verbose)
{
    qs_error err;
    qs_error_clear(&err);
    qs_scorer *s = tool_hold(qs_scorer_load(img, ilen, &err), release_scorer);
    if (!s)
        tool_die_err(NULL, &err);
    qs_workspace *w = tool_hold(qs_workspace_new(s, &err), release_workspace);
    if (!w)
        tool_die_err(NULL, &err);
    qs_model_info info;
    qs_model_get_info(qs_scorer_model(s), &info);
    uint64_t nt = info.num_trees;
    uint64_t *fals = tool_hold(calloc(nt ? nt : 1, sizeof *fals), free);
    uint64_t *tru = tool_hold(calloc(nt ? nt : 1, sizeof *tru), free);
    uint8_t *rev = tool_hold(calloc(nt ? nt : 1, 1), free);
    if (!fals || !tru || !rev)
        tool_die(EXIT_SYSTEM, "out of memory");
    size_t len;
    char *buf = tool_hold(tool_read_all(path, &len), free);
    const char *name = strcmp(path, "-") == 0 ? "(stdin)" : path;
    long ln = 0, docs = 0;
    for (size_t i = 0; i < len;) {
        const char *e = memchr(buf + i, '\n', len - i);
        size_t n = e ? (size_t)(e - (buf + i)) : len - i;
        ln++;
        qs_letor_line meta;
        int is_doc;
        if (qs_letor_parse(s, w, QS_ABSENT_DEFAULT, buf + i, n, &meta, &is_doc, &err) != 0) {
            err.line = ln;
            tool_die_err(name, &err);
        }
        if (is_doc) {
            qs_count_node_outcomes(s, w, fals, tru);
            docs++;
        }
        i += n + 1;
    }
    if (docs == 0)
        tool_die(EXIT_DATA, "%s: no documents in the reversal sample", name);
    uint64_t nrev = 0;
    for (uint64_t t = 0; t < nt; t++)
        nrev += rev[t] = fals[t] > tru[t];
    if (verbose)
        tool_warn("reversal chosen for %llu of %llu trees (sample of %ld documents; "
                  "oblivious and one-leaf trees are never reversed)",
                  (unsigned long long)nrev, (unsigned long long)nt, docs);
    tool_release(buf);
    tool_release(fals);
    tool_release(tru);
    tool_release(w);
    tool_release(s);
    return rev; /* still held: the caller releases it */
}

int main(int argc, char **argv)
{
    tool_init(argv[0]);
    static const struct option opts[] = {
        { "output", required_argument, 0, 'o' },
        { "delta", required_argument, 0, 'd' },
        { "tree-block", required_argument, 0, 't' },
        { "doc-block", required_argument, 0, 'b' },
        { "reverse-sample", required_argument, 0, 'r' },
        { "verbose", no_argument, 0, 'v' },
        { "reverse-all", no_argument, 0, 'R' },
        { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, 'V' },
        { "info", no_argument, 0, 'i' },
        { "json", no_argument, 0, 'j' },
        { "progress", no_argument, 0, 'p' },
        { "no-progress", no_argument, 0, 'X' },
        { 0, 0, 0, 0 },
    };
    const char *outpath = NULL;
    qs_compile_options opt = { 0, 0, 0, NULL };
    const char *sample = NULL;
    int verbose = 0, reverse_all = 0, show_info = 0, json = 0, progress = TOOL_PROGRESS_AUTO;
    int c;
    opterr = 0; /* our own one-line messages (tool_bad_option) */
    while ((c = getopt_long(argc, argv, ":o:hVv", opts, NULL)) != -1) {
        switch (c) {
        case 'o': outpath = optarg; break;
        case 'd':
            opt.delta = tool_parse_u32(optarg, "delta", 1, 64);
            break;
        case 't': opt.tree_block = tool_parse_u32(optarg, "tree block", 0, UINT32_MAX - 1); break;
        case 'b':
            opt.doc_block = tool_parse_u32(optarg, "document block", 1, 4096);
            break;
        case 'r': sample = optarg; break;
        case 'v': verbose = 1; break;
        case 'R': reverse_all = 1; break;
        case 'i': show_info = 1; break;
        case 'j': json = 1; break;
        case 'p': progress = TOOL_PROGRESS_ON; break;
        case 'X': progress = TOOL_PROGRESS_OFF; break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': printf("qs-compile %s\n", QS_VERSION_STRING); return EXIT_OK;
        default: tool_bad_option(c, argv, opts);
        }
    }
    if (argc - optind > 1)
        tool_die(EXIT_USAGE, "too many arguments: one model at a time");
    if (json && !show_info)
        tool_die(EXIT_USAGE, "--json needs --info");
    if (sample && reverse_all)
        tool_die(EXIT_USAGE, "--reverse-sample and --reverse-all exclude each other");
    const char *in = optind < argc ? argv[optind] : "-";
    tool_no_terminal_input(in, "model");
    const char *name = strcmp(in, "-") == 0 ? "(stdin)" : in;
    /* The phases, on a terminal; SIGUSR1 prints the current one. */
    tool_progress_start(progress, "phases");
    tool_progress_phase("reading %s", name);
    tool_out out;
    /* Refuse a terminal before reading anything (the report is text). */
    tool_out_open(&out, outpath, !show_info);
    /* The library's open path (as qs-score's and the Python binding's):
     * read within QS_MAX_INPUT, stopped at a wrong start, a zstd frame
     * decompressed, recognised; converted here, with this command line's
     * options.  (held: freed on any exit) */
    qs_opened mo;
    const qs_open_options oo = { QS_FMT_UNKNOWN, QS_OPEN_NO_CONVERT | QS_OPEN_IGNORE_TUNING,
                                 0, 0, 0, 0 };
    tool_open_model(in, &oo, &mo);
    const int is_qsm = mo.is_qsm;
    const char *buf = (const char *)(is_qsm ? mo.qsm : mo.source);
    const size_t len = is_qsm ? mo.qsm_len : mo.source_len;
    qs_error err;
    qs_error_clear(&err);
    info_input ii = { name, mo.kind[0] ? mo.kind : NULL, len, NULL, NULL, NULL, NULL, 0 };
    qs_tuning tune;
    char version[64];
    qs_qsm_file_info fi;
    if (show_info && is_qsm) {
        if (qs_qsm_get_file_info((const unsigned char *)buf, len, &fi, &err) != 0)
            tool_die_err(name, &err);
        qs_scorer *s = tool_hold(qs_scorer_load((const unsigned char *)buf, len, &err),
                                 release_scorer);
        if (!s)
            tool_die_err(name, &err);
        ii.qsm = &fi;
        int have = qs_qsm_get_tuning((const unsigned char *)buf, len, &tune, &err);
        if (have < 0)
            tool_die_err(name, &err);
        ii.tuning = have ? &tune : NULL;
        tool_progress_done();
        info_report(out.fp, json, &ii, s);
        tool_release(s);
        tool_release(&mo);
        tool_out_commit(&out);
        return EXIT_OK;
    }
    if (show_info && qs_source_version(buf, len, version, sizeof version) == 0)
        ii.source_version = version;
    if (show_info && !ii.kind) {
        char list[256];
        tool_die(EXIT_DATA, "%s: not a model qs reads (expected a .qsm, canonical ensemble "
                            "text, or a model in %s)", name, tool_reader_list(list, sizeof list, 0));
    }
    if (is_qsm)
        tool_die(EXIT_DATA, "%s: this is a compiled .qsm model already (score it with qs-score)",
                 name);
    if (mo.format == QS_FMT_UNKNOWN)
        tool_die(EXIT_DATA, "%s: not canonical ensemble text (expected 'qs-ensemble 1' on the "
                            "first line; convert models with qs-convert)", name);
    tool_progress_phase("reading the trees of %s (%zu bytes)", name, len);
    qs_model *m = tool_hold(qs_convert(QS_FMT_UNKNOWN, buf, len, &err), release_model);
    if (show_info) {
        ii.src = buf;   /* kept for the report (an XGBoost model's categories) */
        ii.src_len = len;
    } else {
        tool_release(&mo);
    }
    if (!m)
        tool_die_err(name, &err);
    qs_model_info minfo;
    qs_model_get_info(m, &minfo);
    tool_progress_phase("laying out %llu trees", (unsigned long long)minfo.num_trees);
    unsigned char *img;
    size_t ilen;
    if (qs_compile(m, &opt, &img, &ilen, &err) != 0)
        tool_die_err(name, &err);
    tool_hold(img, free);
    uint8_t *rev = NULL;
    if (reverse_all) {
        qs_model_info info;
        qs_model_get_info(m, &info);
        rev = tool_hold(malloc(info.num_trees ? info.num_trees : 1), free);
        if (!rev)
            tool_die(EXIT_SYSTEM, "out of memory");
        memset(rev, 1, info.num_trees);
        if (verbose)
            tool_warn("reversal chosen for every tree (oblivious and one-leaf trees are never "
                      "reversed)");
    }
    if (sample) {
        tool_progress_phase("choosing the trees to reverse on %s", sample);
        rev = decide_reversal(img, ilen, sample, verbose);
    }
    if (rev) {
        tool_progress_phase("laying out %llu trees, reversed as chosen",
                            (unsigned long long)minfo.num_trees);
        tool_release(img);
        opt.reverse = rev;
        if (qs_compile(m, &opt, &img, &ilen, &err) != 0)
            tool_die_err(name, &err);
        tool_hold(img, free);
    }
    tool_release(rev);
    tool_release(m);
    if (show_info) {
        /* The layout qs-compile would write, as qs-score would load it. */
        qs_scorer *s = tool_hold(qs_scorer_load(img, ilen, &err), release_scorer);
        if (!s)
            tool_die_err(name, &err);
        tool_release(img);
        tool_progress_done();
        info_report(out.fp, json, &ii, s);
        tool_release(&mo);
        tool_release(s);
        tool_out_commit(&out);
        return EXIT_OK;
    }
    tool_progress_phase("writing %s (%zu bytes)", outpath && strcmp(outpath, "-") ? outpath
                                                                                  : "(stdout)", ilen);
    tool_out_write(&out, img, ilen);
    tool_release(img);
    tool_out_commit(&out);
    tool_progress_done();
    return EXIT_OK;
}
