/* qs-compile: build the binary QuickScorer model (.qsm) from canonical
 * ensemble text (or any model qs-convert reads). */
#include "tool.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: qs-compile [-o OUT.qsm] [--delta N] [--tree-block N] [ENSEMBLE|-]\n"
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
            "  --delta N         threshold-scan skip distance stored in the model (1..64, default 4)\n"
            "  --tree-block N    at most N trees per block (default 0: as large as possible)\n"
            "  -h, --help        this help\n"
            "  -V, --version     version\n"
            "\n"
            "exit: 0 ok, 1 malformed input, 2 usage, 3 unsupported model, 4 system error\n");
}

static uint32_t parse_u32(const char *s, const char *what, uint32_t max)
{
    char *e;
    unsigned long v = strtoul(s, &e, 10);
    if (!*s || *e || v > max || s[0] == '-')
        tool_die(EXIT_USAGE, "bad %s '%s' (expected 0..%u)", what, s, max);
    return (uint32_t)v;
}

int main(int argc, char **argv)
{
    tool_init(argv[0]);
    static const struct option opts[] = {
        { "output", required_argument, 0, 'o' },
        { "delta", required_argument, 0, 'd' },
        { "tree-block", required_argument, 0, 't' },
        { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, 'V' },
        { 0, 0, 0, 0 },
    };
    const char *outpath = NULL;
    qs_compile_options opt = { 0, 0 };
    int c;
    while ((c = getopt_long(argc, argv, "o:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'o': outpath = optarg; break;
        case 'd':
            opt.delta = parse_u32(optarg, "delta", 64);
            if (opt.delta == 0)
                tool_die(EXIT_USAGE, "bad delta '0' (expected 1..64)");
            break;
        case 't': opt.tree_block = parse_u32(optarg, "tree block", UINT32_MAX); break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': printf("qs-compile %s\n", QS_VERSION_STRING); return EXIT_OK;
        default: usage(stderr); return EXIT_USAGE;
        }
    }
    if (argc - optind > 1) {
        tool_warn("too many arguments");
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *in = optind < argc ? argv[optind] : "-";
    const char *name = strcmp(in, "-") == 0 ? "(stdin)" : in;
    tool_out out;
    /* Refuse a terminal before reading anything. */
    tool_out_open(&out, outpath, 1);
    size_t len;
    char *buf = tool_read_all(in, &len);
    qs_error err;
    qs_error_clear(&err);
    if (qs_detect_format(buf, len) == QS_FMT_UNKNOWN)
        tool_die(EXIT_DATA, "%s: not canonical ensemble text (expected 'qs-ensemble 1' on the "
                            "first line; convert models with qs-convert)", name);
    qs_model *m = qs_convert(QS_FMT_UNKNOWN, buf, len, &err);
    free(buf);
    if (!m)
        tool_die_err(name, &err);
    unsigned char *img;
    size_t ilen;
    if (qs_compile(m, &opt, &img, &ilen, &err) != 0)
        tool_die_err(name, &err);
    qs_model_free(m);
    tool_out_write(&out, img, ilen);
    free(img);
    tool_out_commit(&out);
    return EXIT_OK;
}
