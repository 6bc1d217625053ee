/* qs-score: stream LETOR/SVMLight documents through a .qsm model and print
 * one line of scores per document, in input order, in bounded memory. */
#include "pipeline.h"

#include <errno.h>
#if QS_HAVE_NUMA
#include <numa.h>
#endif
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


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
            "MODEL may also be any model qs-compile reads (LightGBM, XGBoost, CatBoost, ONNX,\n"
            "QuickRank/RankLib, canonical text; zstd-compressed or not): it is converted and\n"
            "compiled in memory at every run, as qs-compile compiles it (the same scores);\n"
            "compile it once (qs-compile -o MODEL.qsm) to score it often.\n"
            "\n"
            "  --input FORMAT         letor (default), csv, tsv (one document per row, the\n"
            "                         cells features 0, 1, ... less the label column; empty,\n"
            "                         NA, NaN and null cells are missing) or f32 (rows of\n"
            "                         --features little-endian float32 values; NaN missing)\n"
            "  --header               csv, tsv: the first row names the columns\n"
            "  --label-col COL        csv, tsv: the label's column, 1-based, or a name from\n"
            "                         the header (name:COL for a name made of digits); the\n"
            "                         columns after it are features one lower\n"
            "  --qid-col COL          csv, tsv: the query id's column (keeps its feature\n"
            "                         number, never set, as LightGBM's group_column)\n"
            "  --features N           f32: values per row (1..67108864)\n"
            "  --absent zero|missing  what an absent feature means (default: the source\n"
            "                         library's: LightGBM, QuickRank zero; XGBoost missing)\n"
            "  --transform [NAME]     apply the objective's output function (sigmoid,\n"
            "                         softmax...); NAME picks another one exact for the model:\n"
            "                         none (raw), or for CatBoost sigmoid or exp (its\n"
            "                         Probability, Exponent); others are refused (exit 3)\n"
            "  --annotate             write `label<TAB>qid<TAB>score` lines (for qs-eval)\n"
            "  --trees N              score the first N iterations only (N trees per class:\n"
            "                         LightGBM's num_iteration, XGBoost's iteration_range\n"
            "                         (0, N)); N beyond the model's iterations: all of them\n"
            "  --leaves               instead of scores, each tree's exit leaf, one\n"
            "                         tab-separated column per tree (with --trees: the trees\n"
            "                         kept), numbered as the library's pred_leaf does\n"
            "                         (LightGBM: leaf index; XGBoost: node id); not with\n"
            "                         --annotate or --transform\n"
            "  --lightgbm-dense       letor: read a value with |x| <= 1e-35 as 0, as LightGBM's\n"
            "                         dense readers do (its CSV reader, predict() on a numpy\n"
            "                         or pandas matrix), not as its LibSVM reader (which keeps\n"
            "                         it; the default); LightGBM models only (csv, tsv and\n"
            "                         f32 input is read so for them always)\n"
            "  --strict-features      a feature id the model does not have (>= its feature\n"
            "                         count) is an error; by default it is ignored, with one\n"
            "                         warning naming the first such line\n"
            "  --backend NAME         force a back end (auto: the fastest exact one this\n"
            "                         machine runs); --list-backends names them (also\n"
            "                         the QS_BACKEND variable)\n"
            "  --tree-block N         trees per block (τ; 0: as large as possible)\n"
            "  --doc-block N          documents scored together (δ, 1..4096)\n"
            "  --delta N              threshold-scan skip distance (Δ, 1..64)\n"
            "                         (default for all three: what the .qsm stores)\n"
            "  --order NAME           traversal order of the blocks and documents in a\n"
            "                         batch: SD (default), DS, DSD, SDS, DSDS, SDSD; each\n"
            "                         gives the same scores\n"
            "  --order-s N            scorers (blocks of trees) per inner block (1..2^32-2)\n"
            "  --order-d N            documents per inner block (1..4096)\n"
            "  --ignore-tuning        keep the defaults even where the .qsm holds a tuning\n"
            "                         record (qs-blocktune) measured on this machine\n"
            "  --threads N            score with N threads (default: the CPUs this process\n"
            "                         may run on; also QS_THREADS); every N writes the same\n"
            "                         bytes\n"
            "  --numa auto|on|off     one copy of the model per NUMA node, each thread using\n"
            "                         its node's (auto: with threads on a machine of\n"
            "                         several nodes)\n"
            "  --gpu-batch N          documents per call of a back end that takes whole\n"
            "                         batches (flag batch in --list-backends), 1..16777216\n"
            "                         (default 65536, fewer where one batch of values and\n"
            "                         scores as doubles would pass 256 MiB); each thread\n"
            "                         parses a chunk of input into such a batch (the\n"
            "                         chunks grow to hold one); other back ends ignore it\n"
            "  --device N             the accelerator device back ends use (its ordinal,\n"
            "                         default 0); other back ends ignore it\n"
            "  --progress             show progress on standard error (documents, MB, rate)\n"
            "  --no-progress          do not (default: shown when standard error is a\n"
            "                         terminal and standard output is not); SIGUSR1 prints\n"
            "                         one progress line whatever the mode\n"
            "  -o, --output FILE      write to FILE, which appears only when complete\n"
            "  -h, --help             this help\n"
            "  --list-backends        one line per back end, tab-separated: name, available\n"
            "                         (yes, or no: and the reason), flags, summary\n"
            "  -V, --version          version; with -v, the back ends and this build\n"
            "  -v, --verbose          with a model: which back end auto runs for it, and why\n"
            "                         (on standard error)\n"
            "\n"
            "exit: 0 ok, 1 bad model or document, 2 usage, 3 unsupported, 4 system error,\n"
            "      5 the GPU (--backend cuda: no driver or device, out of device memory, a\n"
            "      failed copy or launch)\n");
}

/* NUMA nodes with memory: >= 1 with libnuma (1 on a one-node machine),
 * 0 where the kernel has no NUMA support, -1 without libnuma. */
static int numa_nodes(void)
{
#if QS_HAVE_NUMA
    if (numa_available() < 0)
        return 0;
    return numa_num_configured_nodes();
#else
    return -1;
#endif
}

/* Run (and allocate) on NUMA node `node` from now on; -1: anywhere again. */
static void numa_enter(int node)
{
#if QS_HAVE_NUMA
    if (numa_available() < 0)
        return;
    if (node >= 0) {
        numa_run_on_node(node);
        numa_set_preferred(node);
    } else {
        numa_run_on_node(-1);
        numa_set_localalloc();
    }
#else
    (void)node;
#endif
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
    { QS_BACKEND_F_BATCH, "batch" },
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
#ifdef _OPENMP
        /* qs-score runs every back end on several threads (--threads). */
        if (!(bi.flags & QS_BACKEND_F_THREADS))
            k += (size_t)snprintf(flags + k, sizeof flags - k, "%sthreads", k ? "," : "");
#endif
        if (b == a)
            k += (size_t)snprintf(flags + k, sizeof flags - k, "%sauto", k ? "," : "");
        printf("%s\t%s%s\t%s\t%s%s%s\n", bi.name, bi.available ? "yes" : "no: ",
               bi.available ? "" : bi.why, k ? flags : "-", bi.summary,
               bi.available && bi.why[0] ? "; " : "", bi.available ? bi.why : "");
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
    qs_backend_info ai;
    if (qs_backend_get_info(QS_BACKEND_AUTO, &ai) == 0 && ai.available && ai.why[0])
        printf("%s (qs-score -v MODEL: the one it runs for MODEL)\n", ai.why);
    printf("cpu: %s%s%s\n", *bi.cpu_detected ? bi.cpu_detected : "no SIMD level qs uses",
           strcmp(bi.cpu_detected, bi.cpu_enabled) ? "; enabled: " : "",
           strcmp(bi.cpu_detected, bi.cpu_enabled) ? (*bi.cpu_enabled ? bi.cpu_enabled : "none")
                                                   : "");
    printf("build: library %s, openmp=%d numa=%d cuda=%d\n", bi.version, bi.openmp, bi.numa,
           bi.cuda);
#ifdef _OPENMP
    printf("threads: default %u (the CPUs this process may run on)\n", pipe_cpus());
#else
    printf("threads: 1 (built without OpenMP)\n");
#endif
    int nodes = numa_nodes();
    if (nodes < 0)
        printf("numa: built without libnuma (one model copy)\n");
    else if (nodes == 0)
        printf("numa: no NUMA support in this kernel (one model copy)\n");
    else
        printf("numa: %d node%s%s\n", nodes, nodes == 1 ? "" : "s",
               nodes > 1 ? " (one model copy per node with threads)" : " (one model copy)");
}

/* Whether back end b (auto: what it runs as) takes whole batches. */
static int takes_batches(qs_backend b)
{
    qs_backend_info bi;
    return qs_backend_get_info(b, &bi) == 0 && (bi.flags & QS_BACKEND_F_BATCH);
}

/* What loading the model needs, and what it gives (load_model). */
typedef struct load_ctx {
    qs_opened *mo;              /* the opened .qsm (held): released by load_model */
    const char *mpath, *dname;
    uint32_t tree_block, doc_block, delta;
    uint64_t iterations;
    int order;
    uint32_t order_s, order_d;
    qs_backend backend;
    int device;                 /* --device */
    int transform;
    const char *transform_name; /* --transform NAME (NULL: the model's own) */
    unsigned nrep;              /* scorers: one per NUMA node, or forced */
    int by_node;
    int input;
    uint32_t f32_features;
    int strict_features;
    int lightgbm_dense;         /* --lightgbm-dense */
    int verbose;                /* -v: say which back end auto runs, and why */
    qs_model_info info;         /* out: the model's facts */
    qs_scorer **rep;            /* out: nrep scorers */
} load_ctx;

/* Load, lay out and prepare the scorer (and its NUMA replicas) as the
 * command line asks, building with `threads` threads; fill in job's model
 * fields.  Dies on an error.  A pipe_loader: pipe_run may call it on one
 * thread while the others read ahead. */
static void load_model(void *ctx, unsigned threads, pipe_job *job)
{
    load_ctx *c = ctx;
    qs_error err;
    qs_error_clear(&err);
    const char *mpath = c->mpath;
    const uint32_t tree_block = c->tree_block, doc_block = c->doc_block, delta = c->delta;
    /* τ and Δ from the command line or the tuning record: the layout is
     * built once, at load. */
    c->rep = calloc(c->nrep, sizeof *c->rep);
    if (!c->rep)
        tool_die(EXIT_SYSTEM, "out of memory");
    for (unsigned r = 0; r < c->nrep; r++) {
        if (r)
            numa_enter(c->by_node ? (int)r : -1);
        /* (the tuning record is applied here, as the command line leaves it:
         * the image was opened with QS_OPEN_IGNORE_TUNING) */
        qs_scorer *s = qs_opened_load(c->mo, threads, tree_block, delta, &err);
        if (!s)
            tool_die_err(mpath, &err);
        c->rep[r] = s; /* freed by any exit from now on (release_replicas) */
        if (c->iterations && qs_scorer_truncate(s, c->iterations, &err) != 0)
            tool_die_err(mpath, &err);
        if (c->transform_name && qs_scorer_set_transform(s, c->transform_name, &err) != 0)
            tool_die_err(mpath, &err);
        if (doc_block != QS_KEEP && qs_scorer_relayout(s, QS_KEEP, doc_block, QS_KEEP, &err) != 0)
            tool_die_err(NULL, &err);
        if (c->order >= 0 &&
            qs_scorer_set_order(s, (qs_order)c->order, c->order_s, c->order_d, &err) != 0)
            tool_die_err(NULL, &err);
        if (qs_scorer_set_device(s, c->device, &err) != 0)
            tool_die_err(NULL, &err);
        if (qs_scorer_prepare(s, c->backend, &err) != 0)
            tool_die_err(mpath, &err);
        if (r) {
            numa_enter(-1);
            continue;
        }
        if (c->verbose && c->backend == QS_BACKEND_AUTO) {
            char why[160];
            const qs_backend a = qs_scorer_auto_backend(s, why, sizeof why);
            fprintf(stderr, "qs-score: %s: auto runs %s (%s)\n", mpath, qs_backend_name(a), why);
        }
        if (c->verbose) {
            /* what the back end does with this model (a GPU back end: its kernel and why) */
            char plan[512];
            if (qs_scorer_backend_plan(s, c->backend, plan, sizeof plan, &err) != 0)
                tool_die_err(mpath, &err);
            if (plan[0])
                fprintf(stderr, "qs-score: %s: %s runs %s\n", mpath, qs_backend_name(c->backend),
                        plan);
        }
        qs_model_get_info(qs_scorer_model(s), &c->info);
        if (c->transform && strcmp(c->info.transform, "unsupported") == 0)
            tool_die(EXIT_UNSUPPORTED, "%s: the model's output transform cannot be reproduced "
                                       "exactly; score without --transform", mpath);
    }
    tool_release(c->mo);
    c->mo = NULL;

    const qs_model_info *info = &c->info;
    const char *dname = c->dname;
    if (c->input == PIPE_F32 && c->f32_features > info->num_features &&
        qs_source_get(info->source) && qs_source_get(info->source)->features == QS_FEATURES_DATA) {
        if (c->strict_features)
            tool_die(EXIT_DATA, "%s: --features %u is beyond the model's %u features "
                                "(--strict-features)", dname, c->f32_features, info->num_features);
        tool_warn("%s: --features %u is beyond the model's %u features: values %u.. of each "
                  "row are ignored (--strict-features refuses them)",
                  dname, c->f32_features, info->num_features, info->num_features);
    } else if (c->input == PIPE_F32 && c->f32_features > info->num_features && c->strict_features) {
        tool_die(EXIT_DATA, "%s: --features %u is beyond the model's %u features "
                            "(--strict-features)", dname, c->f32_features, info->num_features);
    }
    if (c->lightgbm_dense &&
        !(qs_source_get(info->source) && qs_source_get(info->source)->dense == QS_DENSE_ZERO_BAND))
        tool_die(EXIT_USAGE, "--lightgbm-dense is LightGBM's rule, and %s is a %s model",
                 c->mpath, qs_source_name(info->source));
    job->info = &c->info;
    job->replicas = c->rep;
    job->nreplicas = c->nrep;
    job->replica_by_node = c->by_node;
}

static int is_transform_name(const char *s)
{
    static const char *const names[] = { "none", "sigmoid", "softmax", "exp", "ova-sigmoid",
                                         "hinge", "argmax", "signed-square", "log1p-exp",
                                         "fmath-exp", "fmath-softmax" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i]) == 0)
            return 1;
    return 0;
}

/* The scorers load_model made (tool_hold: freed on every exit). */
static void release_replicas(void *ctx)
{
    load_ctx *c = ctx;
    for (unsigned r = 0; c->rep && r < c->nrep; r++)
        qs_scorer_free(c->rep[r]);
    free(c->rep);
    c->rep = NULL;
}

int main(int argc, char **argv)
{
    tool_init(argv[0]);
    static const struct option opts[] = {
        { "absent", required_argument, 0, 'a' },
        { "transform", optional_argument, 0, 't' },
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
        { "list-backends", no_argument, 0, 'L' },
        { "threads", required_argument, 0, 'j' },
        { "numa", required_argument, 0, 'N' },
        { "input", required_argument, 0, 'I' },
        { "header", no_argument, 0, 'H' },
        { "label-col", required_argument, 0, 'l' },
        { "qid-col", required_argument, 0, 'q' },
        { "features", required_argument, 0, 'F' },
        { "trees", required_argument, 0, 'W' },
        { "leaves", no_argument, 0, 'Y' },
        { "order", required_argument, 0, 'O' },
        { "order-s", required_argument, 0, 'P' },
        { "order-d", required_argument, 0, 'Q' },
        { "ignore-tuning", no_argument, 0, 'G' },
        { "gpu-batch", required_argument, 0, 'B' },
        { "device", required_argument, 0, 'U' },
        { "lightgbm-dense", no_argument, 0, 'Z' },
        { "progress", no_argument, 0, 'p' },
        { "no-progress", no_argument, 0, 'X' },
        { 0, 0, 0, 0 },
    };
    qs_absent absent = QS_ABSENT_DEFAULT;
    int transform = 0, annotate = 0, show_version = 0, verbose = 0, show_list = 0;
    int strict_features = 0, leaves = 0, lightgbm_dense = 0;
    int input = PIPE_LETOR, header = 0;
    const char *label_col = NULL, *qid_col = NULL;
    uint32_t f32_features = 0;
    uint64_t iterations = 0; /* --trees: 0 = every iteration */
    const char *outpath = NULL, *bname = getenv("QS_BACKEND");
    /* --threads N, else QS_THREADS (set to "": unset, as every variable) */
    const char *threads_arg = getenv("QS_THREADS"), *numa_arg = "auto";
    const char *threads_what = "QS_THREADS";
    if (threads_arg && !*threads_arg)
        threads_arg = NULL;
    uint32_t tree_block = QS_KEEP, doc_block = QS_KEEP, delta = QS_KEEP;
    int order = -1, ignore_tuning = 0, progress = TOOL_PROGRESS_AUTO;
    const char *transform_name = NULL;
    uint32_t order_s = 0, order_d = 0;
    uint32_t gpu_batch = PIPE_GPU_BATCH;
    int device = 0;
    int c;
    opterr = 0; /* our own one-line messages (tool_bad_option) */
    while ((c = getopt_long(argc, argv, ":o:hVv", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            if (strcmp(optarg, "zero") == 0)
                absent = QS_ABSENT_ZERO;
            else if (strcmp(optarg, "missing") == 0)
                absent = QS_ABSENT_MISSING;
            else
                tool_die(EXIT_USAGE, "bad --absent '%s' (expected zero or missing)", optarg);
            break;
        case 't':
            /* --transform, --transform=NAME, or --transform NAME when NAME
             * is a transform's name and more arguments follow */
            transform = 1;
            transform_name = optarg;
            if (!optarg && optind + 1 < argc && is_transform_name(argv[optind]))
                transform_name = argv[optind++];
            if (transform_name && !is_transform_name(transform_name))
                tool_die(EXIT_USAGE, "bad --transform '%s' (expected none, sigmoid, softmax, exp, "
                                     "ova-sigmoid, hinge, argmax, signed-square, log1p-exp, fmath-exp or "
                                     "fmath-softmax)", transform_name);
            break;
        case 'n': annotate = 1; break;
        case 'S': strict_features = 1; break;
        case 'b': bname = optarg; break;
        case 'T': tree_block = tool_parse_u32(optarg, "--tree-block", 0, UINT32_MAX - 1); break;
        case 'D': doc_block = tool_parse_u32(optarg, "--doc-block", 1, 4096); break;
        case 'd': delta = tool_parse_u32(optarg, "--delta", 1, 64); break;
        case 'o': outpath = optarg; break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': show_version = 1; break;
        case 'v': verbose = 1; break;
        case 'L': show_list = 1; break;
        case 'j': threads_arg = optarg; threads_what = "--threads"; break;
        case 'N': numa_arg = optarg; break;
        case 'I':
            if (strcmp(optarg, "letor") == 0)
                input = PIPE_LETOR;
            else if (strcmp(optarg, "csv") == 0)
                input = PIPE_CSV;
            else if (strcmp(optarg, "tsv") == 0)
                input = PIPE_TSV;
            else if (strcmp(optarg, "f32") == 0)
                input = PIPE_F32;
            else
                tool_die(EXIT_USAGE, "bad --input '%s' (expected letor, csv, tsv or f32)", optarg);
            break;
        case 'H': header = 1; break;
        case 'l': label_col = optarg; break;
        case 'q': qid_col = optarg; break;
        case 'F': f32_features = tool_parse_u32(optarg, "--features", 1, 1u << 26); break;
        case 'W':
            /* any count: one beyond the model's iterations scores them all */
            if (qs_parse_count(optarg, 1, UINT64_MAX, &iterations) != 0)
                tool_die(EXIT_USAGE, "bad --trees '%s' (expected a number of iterations >= 1)",
                         optarg);
            break;
        case 'Y': leaves = 1; break;
        case 'Z': lightgbm_dense = 1; break;
        case 'O':
            order = qs_order_find(optarg);
            if (order < 0)
                tool_die(EXIT_USAGE, "bad --order '%s' (expected SD, DS, DSD, SDS, DSDS or SDSD)",
                         optarg);
            break;
        case 'P': order_s = tool_parse_u32(optarg, "--order-s", 1, UINT32_MAX - 1); break;
        case 'Q': order_d = tool_parse_u32(optarg, "--order-d", 1, 4096); break;
        case 'G': ignore_tuning = 1; break;
        case 'B': gpu_batch = tool_parse_u32(optarg, "--gpu-batch", 1, PIPE_GPU_BATCH_MAX); break;
        case 'U': {
            uint64_t v;
            if (qs_parse_count(optarg, 0, INT_MAX, &v) != 0)
                tool_die(EXIT_USAGE, "bad --device '%s' (expected a device ordinal, 0 or more)",
                         optarg);
            device = (int)v;
            break;
        }
        case 'p': progress = TOOL_PROGRESS_ON; break;
        case 'X': progress = TOOL_PROGRESS_OFF; break;
        default: tool_bad_option(c, argv, opts);
        }
    }
    if ((order_s || order_d) && order < 0)
        tool_die(EXIT_USAGE, "--order-%s needs --order", order_s ? "s" : "d");
    if (leaves && (annotate || transform))
        tool_die(EXIT_USAGE, "--leaves prints exit leaves, not scores: it takes neither %s",
                 annotate ? "--annotate" : "--transform");
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
    tool_check_env();
    if (argc - optind < 1)
        tool_die(EXIT_USAGE, "missing MODEL.qsm (qs-score MODEL.qsm [DOCS|-])");
    if (argc - optind > 2)
        tool_die(EXIT_USAGE, "too many arguments: one model and at most one documents file "
                             "(for several, concatenate them: cat A B | qs-score MODEL.qsm)");
    const int dsv = input == PIPE_CSV || input == PIPE_TSV;
    if (!dsv && (header || label_col || qid_col))
        tool_die(EXIT_USAGE, "--%s needs --input csv or tsv",
                 header ? "header" : label_col ? "label-col" : "qid-col");
    if (input != PIPE_F32 && f32_features)
        tool_die(EXIT_USAGE, "--features needs --input f32");
    if (input == PIPE_F32 && !f32_features)
        tool_die(EXIT_USAGE, "--input f32 needs --features N (the values per row)");
    if (lightgbm_dense && input != PIPE_LETOR)
        tool_die(EXIT_USAGE, "--lightgbm-dense is for LETOR input (csv, tsv and f32 are read "
                             "so for LightGBM models already)");
    const char *specs[2] = { label_col, qid_col };
    for (int i = 0; i < 2; i++) {
        const char *v = specs[i];
        if (!v)
            continue;
        if (!*v || strcmp(v, "name:") == 0)
            tool_die(EXIT_USAGE, "empty --%s", i ? "qid-col" : "label-col");
        if (strspn(v, "0123456789") == strlen(v)) {
            uint64_t n;
            if (qs_parse_count(v, 1, UINT32_MAX, &n) != 0)
                tool_die(EXIT_USAGE, "bad --%s '%s' (columns are numbered from 1)",
                         i ? "qid-col" : "label-col", v);
        } else if (!header) {
            tool_die(EXIT_USAGE, "--%s '%s' is a name: it needs --header",
                     i ? "qid-col" : "label-col", v);
        }
    }
    if (annotate && input == PIPE_F32)
        tool_die(EXIT_USAGE, "--annotate needs labels: --input f32 has none");
    if (annotate && dsv && !label_col)
        tool_die(EXIT_USAGE, "--annotate needs --label-col with --input %s",
                 input == PIPE_CSV ? "csv" : "tsv");
    const char *mpath = argv[optind];
    const char *dpath = optind + 1 < argc ? argv[optind + 1] : "-";
    const char *dname = strcmp(dpath, "-") == 0 ? "(stdin)" : dpath;

    unsigned threads = pipe_cpus();
    if (threads_arg)
        threads = tool_parse_u32(threads_arg, threads_what, 1, 4096);
#ifndef _OPENMP
    if (threads_arg && threads > 1)
        tool_die(EXIT_USAGE, "--threads %u: this qs-score is built without OpenMP (one thread only)",
                 threads);
    threads = 1;
#endif
    if (strcmp(numa_arg, "auto") != 0 && strcmp(numa_arg, "on") != 0 &&
        strcmp(numa_arg, "off") != 0)
        tool_die(EXIT_USAGE, "bad --numa '%s' (expected auto, on or off)", numa_arg);
    /* QS_CHUNK_BYTES: input per chunk (default 1 MiB; small values put chunk
     * boundaries everywhere, for tests). */
    size_t chunk_bytes = (size_t)1 << 20;
    const char *cb = getenv("QS_CHUNK_BYTES");
    if (cb && *cb)
        chunk_bytes = tool_parse_u32(cb, "QS_CHUNK_BYTES", 1, 1u << 30);

    /* From here on SIGUSR1 prints a progress line (and on a terminal one is
     * redrawn as the documents are scored). */
    tool_progress_start(progress, "documents");
    /* Documents typed at a terminal are almost never what was meant. */
    if (strcmp(dpath, "-") == 0 && isatty(STDIN_FILENO))
        tool_die(EXIT_USAGE, "refusing to read documents from a terminal: give DOCS, or pipe "
                             "them in (qs-score %s DOCS, or ... | qs-score %s)", mpath, mpath);
    /* A device back end named: its device starts now, on a thread of its
     * own, while the model loads and the documents are read (the CUDA
     * context takes about a second; the back end's prepare waits for it). */
    {
        qs_backend_info bi;
        if (backend != QS_BACKEND_AUTO && qs_backend_get_info(backend, &bi) == 0 &&
            (bi.flags & QS_BACKEND_F_DEVICE) && bi.available)
            qs_backend_warm_up(backend, device);
    }
    /* The library's open path (as the Python binding's): the file read
     * within QS_MAX_INPUT, stopped at a wrong start, a zstd frame
     * decompressed, recognised; a foreign model or canonical text is then
     * converted and compiled in memory with qs-compile's defaults (the
     * image `qs-compile MODEL` writes), a .qsm taken as it is.  The tuning
     * record is applied below, as the command line leaves it. */
    qs_opened mo;
    const qs_open_options oo = { QS_FMT_UNKNOWN, QS_OPEN_NO_CONVERT | QS_OPEN_IGNORE_TUNING,
                                 0, 0, 0, 0 };
    tool_open_model(mpath, &oo, &mo);
    const int is_qsm = mo.is_qsm;
    const int is_model = is_qsm || mo.kind[0];
    if (!is_model && strcmp(dpath, "-") != 0 && tool_file_is_qsm(dpath))
        tool_die(EXIT_USAGE, "%s is not a model but %s is: the model comes first (qs-score %s %s)",
                 mpath, dpath, dpath, mpath);
    tool_compile_opened(mpath, &mo);
    qs_error err;
    qs_error_clear(&err);
    const unsigned char *mbuf = mo.qsm;
    const size_t mlen = mo.qsm_len;
    /* A tuning record (qs-blocktune) fills in what the command line leaves
     * open, when it was measured on a machine like this one. */
    qs_tuning tune;
    int tuned = ignore_tuning ? 0 : qs_qsm_get_tuning(mbuf, mlen, &tune, &err);
    if (tuned < 0) {
        tool_warn("%s: the tuning record is unreadable (%s): using the stored defaults", mpath,
                  err.msg);
        tuned = 0;
        qs_error_clear(&err);
    }
    if (tuned && !qs_tuning_matches(&tune)) {
        tool_warn("%s: the tuning record was measured on another machine (%s, %u CPUs): using "
                  "the stored defaults (qs-blocktune measures this one; --ignore-tuning "
                  "silences this)", mpath, tune.cpu_model, tune.cores);
        tuned = 0;
    }
    if (tuned) {
        if (tree_block == QS_KEEP)
            tree_block = tune.tree_block;
        if (doc_block == QS_KEEP && tune.doc_block)
            doc_block = tune.doc_block;
        if (delta == QS_KEEP && tune.delta)
            delta = tune.delta;
        if (order < 0) {
            order = (int)tune.order;
            order_s = tune.inner_s;
            order_d = tune.inner_d;
        }
        if (!(bname && *bname) && qs_tuning_backend(&tune) != QS_BACKEND_AUTO)
            backend = qs_tuning_backend(&tune);
#ifdef _OPENMP
        if (!threads_arg && tune.threads)
            threads = tune.threads < pipe_cpus() ? tune.threads : pipe_cpus();
#endif
    }
    /* As many threads as can start (--threads 4096 under ulimit -v). */
    threads = tool_threads(threads);
    /* NUMA: one replica of the scorer per node, loaded while running on
     * that node so its memory is the node's; QS_NUMA_REPLICAS=N forces N
     * replicas (thread i uses replica i % N) on any machine. */
    unsigned nrep = 1;
    int by_node = 0;
    const char *force = getenv("QS_NUMA_REPLICAS");
    if (force && *force && strcmp(numa_arg, "off") != 0) {
        nrep = tool_parse_u32(force, "QS_NUMA_REPLICAS", 1, 64);
    } else if (strcmp(numa_arg, "off") != 0 && threads > 1) {
        int nodes = numa_nodes();
        if (nodes > 1) {
            nrep = (unsigned)nodes;
            by_node = 1;
        } else if (strcmp(numa_arg, "on") == 0 && nodes < 1) {
            tool_die(EXIT_UNSUPPORTED, "--numa on: %s", nodes == 0 ? "libnuma finds no NUMA support here"
                                                                    : "this qs-score is built without libnuma");
        }
    }
    load_ctx lc = {
        .mo = &mo, .mpath = mpath, .dname = dname,
        .tree_block = tree_block, .doc_block = doc_block, .delta = delta,
        .iterations = iterations, .order = order, .order_s = order_s, .order_d = order_d,
        .backend = backend, .device = device, .transform = transform,
        .transform_name = transform_name, .nrep = nrep, .by_node = by_node,
        .input = input, .f32_features = f32_features, .strict_features = strict_features,
        .lightgbm_dense = lightgbm_dense, .verbose = verbose,
    };
    tool_hold(&lc, release_replicas);
    /* With threads, LETOR text is read and parsed while the model loads
     * (QS_PARSE_AHEAD=0 turns that off; =wait, for tests, loads only once
     * the reading ahead has stopped): the documents need only the model's
     * INFO section. */
    qs_row_format rowf;
    const char *pa = getenv("QS_PARSE_AHEAD");
    if (pa && *pa && strcmp(pa, "0") != 0 && strcmp(pa, "wait") != 0)
        tool_die(EXIT_USAGE, "bad QS_PARSE_AHEAD '%s' (expected 0 or wait)", pa);
    int ahead = threads > 1 && threads <= PIPE_AHEAD_MAX_THREADS && input == PIPE_LETOR &&
                !leaves && nrep == 1 &&
                !(pa && strcmp(pa, "0") == 0) &&
                qs_qsm_get_row_format(mbuf, mlen, absent, &rowf, &err) == 0;
    qs_error_clear(&err);
    /* QS_READ_STREAM=1: a regular file through one reader, as a pipe is
     * read (for comparisons; the threads read ranges of it otherwise). */
    const char *rs = getenv("QS_READ_STREAM");
    if (rs && *rs && strcmp(rs, "0") != 0 && strcmp(rs, "1") != 0)
        tool_die(EXIT_USAGE, "bad QS_READ_STREAM '%s' (expected 0 or 1)", rs);
    pipe_job job = {
        .info = &lc.info,
        .backend = backend,
        .absent = absent,
        .annotate = annotate,
        .leaves = leaves,
        .transform = transform,
        .strict_features = strict_features,
        .threads = threads,
        .pin = threads > 1 && !getenv("OMP_PROC_BIND") && threads <= pipe_cpus(),
        .chunk_bytes = chunk_bytes,
        .gpu_batch = takes_batches(backend) && !leaves ? gpu_batch : 0,
        .input = input,
        .header = header,
        .label_col = label_col,
        .qid_col = qid_col,
        .f32_features = f32_features,
        .lightgbm_dense = lightgbm_dense,
        .dname = dname,
        .load = ahead ? load_model : NULL,
        .load_ctx = &lc,
        .ahead = ahead ? &rowf : NULL,
        .ahead_wait = pa && strcmp(pa, "wait") == 0,
        .read_stream = rs && strcmp(rs, "1") == 0,
    };
    if (!ahead)
        load_model(&lc, threads, &job);

    tool_out out;
    tool_out_open(&out, outpath, 0);
    /* Plain or zstd-compressed text, streamed. */
    FILE *in = tool_open_input(dpath, &dname);
    tool_progress_total(tool_input_size(in));
    if (tool_input_is_qsm(in) && input != PIPE_F32)
        tool_die(EXIT_DATA, "%s: this is a compiled .qsm model, not documents (qs-score MODEL.qsm "
                            "DOCS)", dname);
    setvbuf(out.fp, NULL, _IOFBF, 1 << 20);
    job.in = in;
    job.out = &out;
    pipe_run(&job);
    fclose(in);
    tool_progress_done();
    tool_out_commit(&out);
    tool_release(&lc);
    return EXIT_OK;
}
