/* info.c: qs-compile --info [--json]: a model's facts as text or JSON.
 * Every fact comes from the library (qs_model_get_info, qs_model_get_stats,
 * qs_scorer_get_layout_info, qs_scorer_get_block, qs_qsm_get_file_info). */
#include "info.h"

#include <string.h>
#include <time.h>

static const char *accumulate_name(int a)
{
    return a == 0 ? "double" : a == 1 ? "float" : "float-double";
}

/* A JSON string (UTF-8 passed through; control bytes escaped). */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* The same for n bytes that may hold any byte. */
static void json_str_n(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* The categories of an XGBoost model's encoder (qs_source_categories), one
 * line per feature in text, an object of lists in JSON. */
typedef struct cat_print {
    FILE *f;
    int json;
    long long feature;   /* the feature being printed, -1 before the first */
} cat_print;


static void print_category(void *ctx, uint32_t feature, uint32_t code, const char *text,
                           size_t len)
{
    cat_print *p = ctx;
    if ((long long)feature != p->feature) {
        if (p->json)
            fprintf(p->f, "%s\"%u\": [", p->feature < 0 ? "" : "], ", feature);
        else
            fprintf(p->f, "%scategories of feature %u (code: value):", p->feature < 0 ? "" : "\n",
                    feature);
        p->feature = feature;
    } else if (p->json) {
        fprintf(p->f, ", ");
    }
    if (p->json) {
        json_str_n(p->f, text, len);
    } else {
        fprintf(p->f, " %u: ", code);
        json_str_n(p->f, text, len);
    }
}


static void flags_text(char *dst, size_t cap, uint32_t flags)
{
    snprintf(dst, cap, "%s%s%s", flags & 1 ? "required" : "", (flags & 3) == 3 ? "," : "",
             flags & 2 ? "zstd" : "");
    if (!*dst)
        snprintf(dst, cap, "-");
}

static void block_text(char *dst, size_t cap, const qs_block_info *b)
{
    if (b->oblivious)
        snprintf(dst, cap, "QS-Omega (oblivious)");
    else if (b->width)
        snprintf(dst, cap, "QS, %u-bit masks", b->width);
    else
        snprintf(dst, cap, "QS, masks of %u 64-bit words", b->words);
}

/* Blocks printed one per line in the text report; beyond this, a summary
 * (--json lists every block). */
#define TEXT_BLOCKS 32u

static void text_report(FILE *f, const info_input *in, const qs_scorer *s)
{
    const qs_model *m = qs_scorer_model(s);
    qs_model_info mi;
    qs_model_get_info(m, &mi);
    qs_model_stats st;
    qs_error err;
    qs_error_clear(&err);
    if (qs_model_get_stats(m, &st, &err) != 0)
        tool_die_err(NULL, &err);
    qs_layout_info li;
    qs_scorer_get_layout_info(s, &li);

    fprintf(f, "file: %s: %s, %zu bytes\n", in->name, in->kind, in->bytes);
    fprintf(f, "source: %s, version %s\n", qs_source_name(mi.source),
            in->source_version ? in->source_version : "not recorded");
    fprintf(f, "objective: %s\n", *st.objective ? st.objective : "(none)");
    fprintf(f, "transform: %s\n", mi.transform);
    fprintf(f, "arithmetic: %s values and thresholds, %s sums, goes left when x %s t\n",
            mi.float_precision ? "float32" : "double", accumulate_name(mi.float_accumulate),
            strcmp(st.compare, "lt") == 0 ? "<" : "<=");
    fprintf(f, "absent features: %s\n", mi.absent_is_missing ? "missing" : "zero");
    fprintf(f, "features: %u (ids 0..%lld); used by splits: %u, largest id %lld\n",
            mi.num_features, (long long)mi.num_features - 1, st.features_used,
            (long long)st.max_feature_used);
    if (in->src) {
        cat_print cp = { f, 0, -1 };
        if (qs_source_categories(in->src, in->src_len, print_category, &cp) > 0)
            fprintf(f, "\n");
    }
    fprintf(f, "classes: %u\n", mi.num_classes);
    fprintf(f, "trees: %llu (%llu nodes, %llu leaves, %llu categorical splits)\n",
            (unsigned long long)mi.num_trees, (unsigned long long)st.nodes,
            (unsigned long long)st.leaves, (unsigned long long)st.cat_nodes);
    fprintf(f, "leaves per tree:");
    for (size_t i = 0; i < st.n_leaves_hist; i++)
        fprintf(f, "%s %llu x%llu", i ? "," : "", (unsigned long long)st.leaves_hist[i].value,
                (unsigned long long)st.leaves_hist[i].count);
    fprintf(f, "%s\n", st.n_leaves_hist ? " (leaves x trees)" : " (no trees)");
    fprintf(f, "depth per tree:");
    for (size_t i = 0; i < st.n_depth_hist; i++)
        fprintf(f, "%s %llu x%llu", i ? "," : "", (unsigned long long)st.depth_hist[i].value,
                (unsigned long long)st.depth_hist[i].count);
    fprintf(f, "%s\n", st.n_depth_hist ? " (depth x trees)" : " (no trees)");
    fprintf(f, "oblivious: %s (%llu of %llu trees)\n", mi.oblivious ? "yes" : "no",
            (unsigned long long)st.oblivious_trees, (unsigned long long)mi.num_trees);

    char tau[96];
    if (li.stored_tree_block == 0 && li.tree_block != 0)
        snprintf(tau, sizeof tau, "%u (stored 0: chosen at load from this machine's last-level cache)",
                 li.tree_block);
    else if (li.tree_block == 0)
        snprintf(tau, sizeof tau, "0 (one block per run of trees of one kind)");
    else
        snprintf(tau, sizeof tau, "%u", li.tree_block);
    fprintf(f, "layout: τ %s, δ %u, Δ %u\n", tau, li.doc_block, li.delta);
    fprintf(f, "  blocks: %u; reversed trees: %llu; threshold entries: %llu; special-value "
               "entries: %llu; leaf values: %llu; categorical nodes: %u\n",
            li.nblocks, (unsigned long long)li.reversed_trees, (unsigned long long)li.entries,
            (unsigned long long)li.special_entries, (unsigned long long)li.leaf_values,
            li.cat_nodes);
    for (uint32_t b = 0; b < li.nblocks && b < TEXT_BLOCKS; b++) {
        qs_block_info bi;
        char kind[64];
        qs_scorer_get_block(s, b, &bi);
        block_text(kind, sizeof kind, &bi);
        fprintf(f, "  block %u: trees %llu..%llu (%llu), %s, %llu entries, %llu reversed\n", b,
                (unsigned long long)bi.first_tree,
                (unsigned long long)(bi.first_tree + bi.num_trees - (bi.num_trees > 0)),
                (unsigned long long)bi.num_trees, kind, (unsigned long long)bi.entries,
                (unsigned long long)bi.reversed_trees);
    }
    if (li.nblocks > TEXT_BLOCKS)
        fprintf(f, "  ... %u more blocks (--json lists every one)\n", li.nblocks - TEXT_BLOCKS);
    if (in->tuning) {
        const qs_tuning *t = in->tuning;
        char date[32] = "?";
        time_t tt = (time_t)t->date;
        struct tm tmv;
        if (gmtime_r(&tt, &tmv))
            strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tmv);
        fprintf(f, "tuning: order %s, s %u, d %u, tree block %u, doc block %u, delta %u, "
                   "back end %s, threads %u%s\n",
                qs_order_name((qs_order)t->order) ? qs_order_name((qs_order)t->order) : "?",
                t->inner_s, t->inner_d, t->tree_block, t->doc_block, t->delta,
                t->backend[0] ? t->backend : "auto", t->threads,
                t->threads ? "" : " (not measured)");
        fprintf(f, "  measured: %.4f ns/doc/tree (defaults %.4f: %.3fx)\n", t->tuned_ns,
                t->default_ns, t->tuned_ns > 0 ? t->default_ns / t->tuned_ns : 0.0);
        fprintf(f, "  machine: %s, %u CPUs, L1d %llu, L2 %llu, L3 %llu bytes; qs %s, %s%s\n",
                t->cpu_model, t->cores, (unsigned long long)t->cache[0],
                (unsigned long long)t->cache[1], (unsigned long long)t->cache[2], t->version, date,
                qs_tuning_matches(t) ? " (this machine)" : " (another machine)");
    } else {
        fprintf(f, "tuning: none (no tuning record)\n");
    }
    if (in->qsm) {
        fprintf(f, "sections: %u (.qsm version %u.%u)\n", in->qsm->nsections, in->qsm->major,
                in->qsm->minor);
        for (uint32_t i = 0; i < in->qsm->nsections; i++) {
            const qs_qsm_section *q = &in->qsm->sections[i];
            char fl[32];
            flags_text(fl, sizeof fl, q->flags);
            fprintf(f, "  %-4s %-13s offset %llu, stored %llu bytes, raw %llu bytes, crc32c %08x\n",
                    q->id, fl, (unsigned long long)q->offset, (unsigned long long)q->stored_size,
                    (unsigned long long)q->raw_size, q->crc);
        }
    } else {
        fprintf(f, "sections: none (not a .qsm; the layout above is the one qs-compile "
                   "would write)\n");
    }
    qs_model_stats_free(&st);
}

static void json_report(FILE *f, const info_input *in, const qs_scorer *s)
{
    const qs_model *m = qs_scorer_model(s);
    qs_model_info mi;
    qs_model_get_info(m, &mi);
    qs_model_stats st;
    qs_error err;
    qs_error_clear(&err);
    if (qs_model_get_stats(m, &st, &err) != 0)
        tool_die_err(NULL, &err);
    qs_layout_info li;
    qs_scorer_get_layout_info(s, &li);

    fprintf(f, "{\n  \"file\": {\"name\": ");
    json_str(f, in->name);
    fprintf(f, ", \"kind\": ");
    json_str(f, in->kind);
    fprintf(f, ", \"bytes\": %zu},\n", in->bytes);
    fprintf(f, "  \"source\": \"%s\",\n  \"source_version\": ", qs_source_name(mi.source));
    if (in->source_version)
        json_str(f, in->source_version);
    else
        fprintf(f, "null");
    fprintf(f, ",\n  \"objective\": ");
    json_str(f, st.objective);
    fprintf(f, ",\n  \"transform\": ");
    json_str(f, mi.transform);
    fprintf(f, ",\n  \"precision\": \"%s\",\n  \"accumulate\": \"%s\",\n  \"compare\": \"%s\",\n"
               "  \"absent\": \"%s\",\n",
            mi.float_precision ? "float" : "double", accumulate_name(mi.float_accumulate),
            st.compare, mi.absent_is_missing ? "missing" : "zero");
    fprintf(f, "  \"features\": {\"count\": %u, \"used\": %u, \"max_used\": %lld},\n",
            mi.num_features, st.features_used, (long long)st.max_feature_used);
    if (in->src) {
        cat_print cp = { f, 1, -1 };
        fprintf(f, "  \"categories\": {");
        if (qs_source_categories(in->src, in->src_len, print_category, &cp) > 0)
            fprintf(f, "]");
        fprintf(f, "},\n");
    }
    fprintf(f, "  \"classes\": %u,\n  \"trees\": %llu,\n  \"nodes\": %llu,\n  \"leaves\": %llu,\n"
               "  \"categorical_splits\": %llu,\n  \"max_leaves\": %u,\n  \"max_depth\": %u,\n",
            mi.num_classes, (unsigned long long)mi.num_trees, (unsigned long long)st.nodes,
            (unsigned long long)st.leaves, (unsigned long long)st.cat_nodes, mi.max_leaves,
            mi.max_depth);
    fprintf(f, "  \"leaves_histogram\": [");
    for (size_t i = 0; i < st.n_leaves_hist; i++)
        fprintf(f, "%s{\"leaves\": %llu, \"trees\": %llu}", i ? ", " : "",
                (unsigned long long)st.leaves_hist[i].value,
                (unsigned long long)st.leaves_hist[i].count);
    fprintf(f, "],\n  \"depth_histogram\": [");
    for (size_t i = 0; i < st.n_depth_hist; i++)
        fprintf(f, "%s{\"depth\": %llu, \"trees\": %llu}", i ? ", " : "",
                (unsigned long long)st.depth_hist[i].value,
                (unsigned long long)st.depth_hist[i].count);
    fprintf(f, "],\n  \"oblivious\": %s,\n  \"oblivious_trees\": %llu,\n",
            mi.oblivious ? "true" : "false", (unsigned long long)st.oblivious_trees);
    fprintf(f, "  \"layout\": {\"tree_block\": %u, \"stored_tree_block\": %u, \"doc_block\": %u, "
               "\"delta\": %u, \"reversed_trees\": %llu, \"entries\": %llu, "
               "\"special_entries\": %llu, \"leaf_values\": %llu, \"categorical_nodes\": %u,\n"
               "    \"blocks\": [",
            li.tree_block, li.stored_tree_block, li.doc_block, li.delta,
            (unsigned long long)li.reversed_trees, (unsigned long long)li.entries,
            (unsigned long long)li.special_entries, (unsigned long long)li.leaf_values,
            li.cat_nodes);
    for (uint32_t b = 0; b < li.nblocks; b++) {
        qs_block_info bi;
        qs_scorer_get_block(s, b, &bi);
        fprintf(f, "%s\n      {\"first_tree\": %llu, \"trees\": %llu, \"kind\": \"%s\", "
                   "\"mask_bits\": %u, \"mask_words\": %u, \"entries\": %llu, \"reversed\": %llu}",
                b ? "," : "", (unsigned long long)bi.first_tree, (unsigned long long)bi.num_trees,
                bi.oblivious ? "qs-omega" : "qs", bi.width, bi.words,
                (unsigned long long)bi.entries, (unsigned long long)bi.reversed_trees);
    }
    fprintf(f, "%s]},\n", li.nblocks ? "\n    " : "");
    if (in->tuning) {
        const qs_tuning *t = in->tuning;
        fprintf(f, "  \"tuning\": {\"order\": ");
        json_str(f, qs_order_name((qs_order)t->order) ? qs_order_name((qs_order)t->order) : "?");
        fprintf(f, ", \"s\": %u, \"d\": %u, \"tree_block\": %u, \"doc_block\": %u, "
                   "\"delta\": %u, \"threads\": %u, \"backend\": ",
                t->inner_s, t->inner_d, t->tree_block, t->doc_block, t->delta, t->threads);
        json_str(f, t->backend[0] ? t->backend : "auto");
        fprintf(f, ", \"default_ns\": %.6g, \"tuned_ns\": %.6g, \"cpu_model\": ",
                t->default_ns, t->tuned_ns);
        json_str(f, t->cpu_model);
        fprintf(f, ", \"cores\": %u, \"cache\": [%llu, %llu, %llu], \"version\": ", t->cores,
                (unsigned long long)t->cache[0], (unsigned long long)t->cache[1],
                (unsigned long long)t->cache[2]);
        json_str(f, t->version);
        fprintf(f, ", \"date\": %lld, \"this_machine\": %s},\n  \"qsm\": ", (long long)t->date,
                qs_tuning_matches(t) ? "true" : "false");
    } else {
        fprintf(f, "  \"tuning\": null,\n  \"qsm\": ");
    }
    if (in->qsm) {
        fprintf(f, "{\"version\": \"%u.%u\", \"sections\": [", in->qsm->major, in->qsm->minor);
        for (uint32_t i = 0; i < in->qsm->nsections; i++) {
            const qs_qsm_section *q = &in->qsm->sections[i];
            fprintf(f, "%s\n    {\"id\": ", i ? "," : "");
            json_str(f, q->id);
            fprintf(f, ", \"required\": %s, \"zstd\": %s, \"offset\": %llu, \"stored_bytes\": %llu, "
                       "\"raw_bytes\": %llu, \"crc32c\": \"%08x\"}",
                    q->flags & 1 ? "true" : "false", q->flags & 2 ? "true" : "false",
                    (unsigned long long)q->offset, (unsigned long long)q->stored_size,
                    (unsigned long long)q->raw_size, q->crc);
        }
        fprintf(f, "]}\n");
    } else {
        fprintf(f, "null\n");
    }
    fprintf(f, "}\n");
    qs_model_stats_free(&st);
}

void info_report(FILE *f, int json, const info_input *in, const qs_scorer *s)
{
    if (json)
        json_report(f, in, s);
    else
        text_report(f, in, s);
}
