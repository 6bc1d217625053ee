/* The two tables every part of qs reads its facts from: the source
 * libraries' (lib/common/source.c, qs_source_get) and the readers'
 * (lib/convert/convert.c, qs_reader_get).  Every row must give every field:
 * a source row has no field 0 or NULL ("" where the library has none), a
 * reader row names its format, source, words for messages, detection and
 * reader; every qs_source and qs_format value has its row; names are
 * unique and found back.  The checks are first run on rows with a field
 * left out, which they must refuse (so this test can fail).
 *
 * Prints "N checks, 0 failures" and exits 0, or the failures and 1. */
#include "qs.h"
#include "convert/convert.h"

#include <stdio.h>
#include <string.h>

static unsigned checks, fails;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        checks++;                                                                             \
        if (!(cond)) {                                                                        \
            fails++;                                                                          \
            if (!quiet) {                                                                     \
                printf("FAIL: ");                                                             \
                printf(__VA_ARGS__);                                                          \
                printf("\n");                                                                 \
            }                                                                                 \
        }                                                                                     \
    } while (0)

static int quiet;

/* Every field of a source row; returns the failures it found. */
static unsigned check_source(const qs_source_info *r, qs_source s)
{
    const unsigned before = fails;
    CHECK(r != NULL, "source %d has no row", (int)s);
    if (!r)
        return fails - before;
    CHECK(r->source == s, "source row %d says source %d", (int)s, (int)r->source);
    CHECK(r->name && r->name[0], "source %d: no name", (int)s);
    CHECK(r->library && r->library[0], "source %d: no library name", (int)s);
    CHECK(r->float_bits == 32 || r->float_bits == 64, "source %d: float_bits %d", (int)s,
          r->float_bits);
    CHECK(r->absent == QS_ABSENT_ZERO || r->absent == QS_ABSENT_MISSING,
          "source %d: no absent rule (%d)", (int)s, r->absent);
    CHECK(r->features == QS_FEATURES_DATA || r->features == QS_FEATURES_USED,
          "source %d: no feature count rule (%d)", (int)s, (int)r->features);
    CHECK(r->dense == QS_DENSE_AS_IS || r->dense == QS_DENSE_ZERO_BAND,
          "source %d: no dense input rule (%d)", (int)s, (int)r->dense);
    CHECK(r->leaves == QS_LEAVES_BY_RANK || r->leaves == QS_LEAVES_BY_NODE,
          "source %d: no leaf numbers (%d)", (int)s, (int)r->leaves);
    CHECK(r->eval_preset != NULL, "source %d: no qs-eval preset (\"\" for none)", (int)s);
    CHECK(r->picked_transforms != NULL, "source %d: no picked transforms (\"\" for none)",
          (int)s);
    CHECK(r->first_column <= 1, "source %d: first_column %u (0 or 1)", (int)s, r->first_column);
    if (r->eval_preset && r->eval_preset[0]) {
        qs_eval_conv c;
        qs_error err;
        qs_eval_conv_default(&c);
        CHECK(qs_eval_conv_preset(&c, r->eval_preset, &err) == 0,
              "source %d: qs-eval has no preset '%s'", (int)s, r->eval_preset);
    }
    for (const char *p = r->picked_transforms; p && *p;) {
        char w[32];
        size_t k = strcspn(p, " ");
        snprintf(w, sizeof w, "%.*s", (int)(k < sizeof w ? k : sizeof w - 1), p);
        CHECK(k < sizeof w && qs_transform_known(w), "source %d: picks unknown transform '%s'",
              (int)s, w);
        p += k + (p[k] == ' ');
    }
    if (r->name) {
        qs_source back;
        CHECK(qs_source_from_name(r->name, strlen(r->name), &back) == 0 && back == s,
              "source %d: its name '%s' does not name it back", (int)s, r->name);
        CHECK(strcmp(qs_source_name(s), r->name) == 0, "source %d: qs_source_name", (int)s);
    }
    return fails - before;
}

/* Every field of a reader row. */
static unsigned check_reader(const qs_reader *r, int with_readers)
{
    const unsigned before = fails;
    const qs_reader_info *i = &r->info;
    CHECK(i->format > QS_FMT_UNKNOWN, "a reader row without its format");
    CHECK(qs_source_get(i->source) != NULL, "format %d: source %d has no row", (int)i->format,
          (int)i->source);
    CHECK(i->description && i->description[0], "format %d: no description", (int)i->format);
    CHECK(i->kind && i->kind[0], "format %d: no kind", (int)i->format);
    CHECK(i->name || i->format == QS_FMT_CANONICAL, "format %d: no command-line name",
          (int)i->format);
    CHECK(r->detect != NULL, "format %d: no detection", (int)i->format);
    CHECK(r->read != NULL || (!with_readers && i->format != QS_FMT_CANONICAL),
          "format %d: no reader", (int)i->format);
    return fails - before;
}

static int dummy_detect(const char *raw, size_t len, const char *p, size_t n)
{
    (void)raw, (void)len, (void)p, (void)n;
    return 0;
}

int main(void)
{
    /* the checks refuse rows with a field left out */
    quiet = 1;
    const qs_source_info good = { QS_SRC_XGBOOST, "xgboost", "XGBoost", 32, QS_ABSENT_MISSING,
                                  QS_FEATURES_DATA, QS_DENSE_AS_IS, QS_LEAVES_BY_NODE, "xgboost",
                                  "", 0 };
    const unsigned base = fails;
    unsigned missed = check_source(&good, QS_SRC_XGBOOST);
    fails = base;
    qs_source_info holes[10];
    for (int k = 0; k < 10; k++)
        holes[k] = good;
    holes[0].name = NULL;
    holes[1].library = NULL;
    holes[2].float_bits = 0;
    holes[3].absent = 0;
    holes[4].features = 0;
    holes[5].dense = 0;
    holes[6].leaves = 0;
    holes[7].eval_preset = NULL;
    holes[8].picked_transforms = NULL;
    holes[9].first_column = 2;
    unsigned caught = 0;
    for (int k = 0; k < 10; k++) {
        caught += check_source(&holes[k], QS_SRC_XGBOOST) > 0;
        fails = base;
    }
    /* (the compiler warns of it too: -Wmissing-field-initializers) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
    const qs_source_info short_row = { QS_SRC_XGBOOST, "xgboost", "XGBoost", 32,
                                       QS_ABSENT_MISSING, QS_FEATURES_DATA, QS_DENSE_AS_IS,
                                       QS_LEAVES_BY_NODE, "xgboost" };   /* one field short */
#pragma GCC diagnostic pop
    caught += check_source(&short_row, QS_SRC_XGBOOST) > 0;
    fails = base;
    const qs_reader rgood = { { QS_FMT_LIGHTGBM, QS_SRC_LIGHTGBM, "x", NULL, "X", "an X" },
                              dummy_detect, 0, qs_model_from_text, NULL };
    qs_reader rholes[4] = { rgood, rgood, rgood, rgood };
    rholes[0].info.description = NULL;
    rholes[1].info.kind = NULL;
    rholes[2].detect = NULL;
    rholes[3].read = NULL;
    missed += check_reader(&rgood, 1);
    fails = base;
    for (int k = 0; k < 4; k++) {
        caught += check_reader(&rholes[k], 1) > 0;
        fails = base;
    }
    quiet = 0;
    CHECK(missed == 0, "the checks refuse complete rows");
    CHECK(caught == 15, "the checks caught %u of 15 rows with a field left out", caught);

    /* the source table: a row per qs_source, and none past them */
    for (unsigned s = 0; s < QS_SRC_COUNT; s++)
        check_source(qs_source_get((qs_source)s), (qs_source)s);
    CHECK(qs_source_get((qs_source)QS_SRC_COUNT) == NULL, "a row past the sources");
    CHECK(qs_source_get((qs_source)-1) == NULL, "a row for source -1");
    for (unsigned a = 0; a < QS_SRC_COUNT; a++)
        for (unsigned b = a + 1; b < QS_SRC_COUNT; b++)
            CHECK(strcmp(qs_source_get((qs_source)a)->name, qs_source_get((qs_source)b)->name),
                  "sources %u and %u share a name", a, b);

    /* the readers' table */
    const qs_reader_info *ri;
    int maxfmt = 0, nrows = 0;
    for (size_t i = 0; (ri = qs_reader_get(i)) != NULL; i++, nrows++) {
        const qs_reader *row = qs_reader_row(ri->format);
        CHECK(row && &row->info == ri, "format %d: qs_reader_row finds another row",
              (int)ri->format);
        if (row)
            check_reader(row, QS_HAVE_READERS);
        CHECK(qs_reader_by_format(ri->format) == ri, "format %d: qs_reader_by_format",
              (int)ri->format);
        if (ri->name)
            CHECK(qs_reader_by_name(ri->name) == ri, "'%s' names another row", ri->name);
        if (ri->alias)
            CHECK(qs_reader_by_name(ri->alias) == ri, "'%s' names another row", ri->alias);
        if ((int)ri->format > maxfmt)
            maxfmt = (int)ri->format;
        for (size_t j = 0; j < i; j++) {
            const qs_reader_info *rj = qs_reader_get(j);
            CHECK(rj->format != ri->format, "two rows of format %d", (int)ri->format);
        }
    }
    /* every format value from 1 to the largest has its row */
    for (int f = 1; f <= maxfmt; f++)
        CHECK(qs_reader_by_format((qs_format)f) != NULL, "format %d has no row", f);
    CHECK(nrows == maxfmt, "%d rows for %d formats", nrows, maxfmt);
    CHECK(qs_reader_by_format(QS_FMT_CATBOOST_CBM) != NULL, "no .cbm row");

    /* qs_reader_list: every foreign row in each style, "a, b or c", cut
     * to fit whatever the buffer */
    char list[3][512];
    for (int st = 0; st < 3; st++)
        qs_reader_list(list[st], sizeof list[st], st);
    const char *last_desc = NULL, *last_name = NULL;
    for (size_t i = 0; (ri = qs_reader_get(i)) != NULL; i++) {
        if (!ri->name)
            continue;
        CHECK(strstr(list[QS_READERS_DESCRIPTIONS], ri->description) != NULL,
              "descriptions lack '%s'", ri->description);
        char want[128];
        if (ri->alias)
            snprintf(want, sizeof want, "%s (%s)", ri->name, ri->alias);
        else
            snprintf(want, sizeof want, "%s", ri->name);
        CHECK(strstr(list[QS_READERS_NAMES], want) != NULL, "names lack '%s'", want);
        CHECK(strstr(list[QS_READERS_EVERY_NAME], ri->name) != NULL, "every name lacks '%s'",
              ri->name);
        CHECK(!ri->alias || strstr(list[QS_READERS_EVERY_NAME], ri->alias) != NULL,
              "every name lacks '%s'", ri->alias ? ri->alias : "");
        last_desc = ri->description;
        last_name = ri->alias ? ri->alias : ri->name;
    }
    if (last_desc && last_name) {
        char tail[160];
        snprintf(tail, sizeof tail, " or %s", last_desc);
        const size_t n = strlen(list[0]), k = strlen(tail);
        CHECK(n > k && strcmp(list[0] + n - k, tail) == 0, "descriptions end '%s'", list[0]);
        snprintf(tail, sizeof tail, " or %s", last_name);
        const size_t n2 = strlen(list[2]), k2 = strlen(tail);
        CHECK(n2 > k2 && strcmp(list[2] + n2 - k2, tail) == 0, "every name ends '%s'", list[2]);
    }
    for (size_t cap = 1; cap < 40; cap++) {
        char small[48];
        memset(small, 'x', sizeof small);
        qs_reader_list(small, cap, QS_READERS_NAMES);
        CHECK(memchr(small, '\0', cap) != NULL && small[cap] == 'x',
              "qs_reader_list in %zu bytes: not terminated, or past them", cap);
    }
    char none = 'x';
    CHECK(qs_reader_list(&none, 0, QS_READERS_NAMES) == &none && none == 'x',
          "qs_reader_list in 0 bytes wrote");

    printf("%u checks, %u failures\n", checks, fails);
    return fails ? 1 : 0;
}
