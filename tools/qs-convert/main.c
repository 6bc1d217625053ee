/* qs-convert: translate a LightGBM, XGBoost, CatBoost or QuickRank/RankLib model into
 * the canonical ensemble text, losslessly, or refuse it loudly. */
#include "tool.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: qs-convert [--from lightgbm|xgboost|catboost|onnx|quickrank] [-o FILE] [MODEL|-]\n"
            "\n"
            "Reads a trained model (LightGBM text, XGBoost JSON, CatBoost JSON, ONNX, QuickRank or\n"
            "RankLib XML; zstd-compressed input is read transparently; the format is detected\n"
            "unless --from is given) and writes the canonical ensemble text (format/ensemble-text.md)\n"
            "to standard output, or to FILE (written to a temporary name, then renamed).\n"
            "A model that cannot be scored exactly is refused (exit 3).\n"
            "\n"
            "  --from FMT     the input format: lightgbm, xgboost, catboost, onnx or quickrank (ranklib)\n"
            "  -o, --output F write to F instead of standard output\n"
            "  -h, --help     this help\n"
            "  -V, --version  version\n"
            "\n"
            "exit: 0 ok, 1 malformed model, 2 usage, 3 unsupported model, 4 system error\n");
}

static void release_model(void *m) { qs_model_free(m); }

int main(int argc, char **argv)
{
    tool_init(argv[0]);
    static const struct option opts[] = {
        { "from", required_argument, 0, 'f' },
        { "output", required_argument, 0, 'o' },
        { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, 'V' },
        { 0, 0, 0, 0 },
    };
    qs_format fmt = QS_FMT_UNKNOWN;
    const char *outpath = NULL;
    int c;
    opterr = 0; /* our own one-line messages (tool_bad_option) */
    while ((c = getopt_long(argc, argv, ":f:o:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (strcmp(optarg, "lightgbm") == 0)
                fmt = QS_FMT_LIGHTGBM;
            else if (strcmp(optarg, "xgboost") == 0)
                fmt = QS_FMT_XGBOOST;
            else if (strcmp(optarg, "catboost") == 0)
                fmt = QS_FMT_CATBOOST;
            else if (strcmp(optarg, "onnx") == 0)
                fmt = QS_FMT_ONNX;
            else if (strcmp(optarg, "quickrank") == 0 || strcmp(optarg, "ranklib") == 0)
                fmt = QS_FMT_QUICKRANK;
            else {
                tool_die(EXIT_USAGE, "unknown format '%s' (expected lightgbm, xgboost, catboost, "
                                     "onnx or quickrank)", optarg);
            }
            break;
        case 'o': outpath = optarg; break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': printf("qs-convert %s\n", QS_VERSION_STRING); return EXIT_OK;
        default: tool_bad_option(c, argv);
        }
    }
    if (argc - optind > 1)
        tool_die(EXIT_USAGE, "too many arguments: one model at a time");
    const char *in = optind < argc ? argv[optind] : "-";
    const char *name = strcmp(in, "-") == 0 ? "(stdin)" : in;
    size_t len;
    /* Every block is held (tool_hold) until freed, so that each exit frees it. */
    char *buf = tool_hold(tool_read_all(in, &len), free);
    qs_error err;
    qs_error_clear(&err);
    if (tool_is_qsm(buf, len))
        tool_die(EXIT_DATA, "%s: this is a compiled .qsm model, which qs-convert does not read "
                            "(it is already compiled: score it with qs-score)", name);
    if (fmt == QS_FMT_UNKNOWN && qs_detect_format(buf, len) == QS_FMT_UNKNOWN)
        tool_die(EXIT_DATA, "%s: unrecognised model format (expected LightGBM text, XGBoost JSON, "
                            "CatBoost JSON or QuickRank/RankLib XML; use --from to say which)",
                 name);
    qs_model *m = tool_hold(qs_convert(fmt, buf, len, &err), release_model);
    tool_release(buf);
    if (!m)
        tool_die_err(name, &err);
    char *text;
    size_t tlen;
    if (qs_model_to_text(m, &text, &tlen, &err) != 0)
        tool_die_err(name, &err);
    tool_release(m);
    tool_hold(text, free);
    tool_out out;
    tool_out_open(&out, outpath, 0);
    tool_out_write(&out, text, tlen);
    tool_release(text);
    tool_out_commit(&out);
    return EXIT_OK;
}
