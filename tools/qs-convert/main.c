/* qs-convert: translate a model in a format of the readers' table (LightGBM,
 * XGBoost, CatBoost, ONNX, QuickRank/RankLib) into the canonical ensemble text,
 * losslessly, or refuse it loudly. */
#include "tool.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    char names[256], bar[256], kinds[256];
    size_t k = 0;
    const qs_reader_info *r;
    bar[0] = '\0';
    for (size_t i = 0; (r = qs_reader_get(i)) != NULL; i++)
        if (r->name && k < sizeof bar) {
            int w = snprintf(bar + k, sizeof bar - k, "%s%s", k ? "|" : "", r->name);
            k += w > 0 ? (size_t)w : 0;
        }
    fprintf(f,
            "usage: qs-convert [--from %s] [-o FILE] [MODEL|-]\n"
            "\n"
            "Reads a trained model\n(%s;\n"
            "zstd-compressed input is read transparently; the format is detected unless\n"
            "--from is given) and writes the canonical ensemble text (format/ensemble-text.md)\n"
            "to standard output, or to FILE (written to a temporary name, then renamed).\n"
            "A model that cannot be scored exactly is refused (exit 3).\n"
            "\n"
            "  --from FMT     the input format: %s\n"
            "  -o, --output F write to F instead of standard output\n"
            "  -h, --help     this help\n"
            "  -V, --version  version\n"
            "\n"
            "exit: 0 ok, 1 malformed model, 2 usage, 3 unsupported model, 4 system error\n",
            bar, tool_reader_list(kinds, sizeof kinds, 0), tool_reader_list(names, sizeof names, 1));
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
        case 'f': {
            const qs_reader_info *r = qs_reader_by_name(optarg);
            if (!r) {
                char list[256];
                tool_die(EXIT_USAGE, "unknown format '%s' (expected %s)", optarg,
                         tool_reader_list(list, sizeof list, 1));
            }
            fmt = r->format;
            break;
        }
        case 'o': outpath = optarg; break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': printf("qs-convert %s\n", QS_VERSION_STRING); return EXIT_OK;
        default: tool_bad_option(c, argv, opts);
        }
    }
    if (argc - optind > 1)
        tool_die(EXIT_USAGE, "too many arguments: one model at a time");
    const char *in = optind < argc ? argv[optind] : "-";
    tool_no_terminal_input(in, "model");
    const char *name = strcmp(in, "-") == 0 ? "(stdin)" : in;
    size_t len;
    /* Every block is held (tool_hold) until freed, so that each exit frees it.
     * With --from, the reader takes what it is given: no early stop. */
    char *buf = tool_hold(fmt == QS_FMT_UNKNOWN ? tool_read_model(in, &len)
                                                : tool_read_all(in, &len), free);
    qs_error err;
    qs_error_clear(&err);
    if (tool_is_qsm(buf, len))
        tool_die(EXIT_DATA, "%s: this is a compiled .qsm model, which qs-convert does not read "
                            "(it is already compiled: score it with qs-score)", name);
    char list[256];
    if (fmt == QS_FMT_UNKNOWN && qs_detect_format(buf, len) == QS_FMT_UNKNOWN)
        tool_die(EXIT_DATA, "%s: unrecognised model format (expected %s; use --from to say which)",
                 name, tool_reader_list(list, sizeof list, 0));
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
