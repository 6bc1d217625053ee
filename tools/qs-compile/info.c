/* info.c: qs-compile --info [--json]: a model's facts as text or JSON.
 * Every fact comes from the library (qs_model_get_info, qs_model_get_stats,
 * qs_scorer_get_layout_info, qs_scorer_get_block, qs_qsm_get_file_info). */
#include "info.h"
#include "json.h"

#include <string.h>
#include <time.h>

static void release_stats(void *p) { qs_model_stats_free(p); }

static const char *accumulate_name(int a)
{
    return a == 0 ? "double" : a == 1 ? "float" : "float-double";
}

/* The categories of an XGBoost model's encoder (qs_source_list_categories),
 * one line per feature in text, an object of lists in JSON. */
typedef struct cat_print {
    tool_buf *t;         /* the text report, or */
    tool_json *j;        /* the JSON one */
    long long feature;   /* the feature being printed, -1 before the first */
} cat_print;

static void print_category(void *ctx, uint32_t feature, uint32_t code, const char *text,
                           size_t len)
{
    cat_print *p = ctx;
    if ((long long)feature != p->feature) {
        if (p->j) {
            char key[16];
            snprintf(key, sizeof key, "%u", feature);
            if (p->feature >= 0)
                tool_json_end(p->j);
            tool_json_key(p->j, key);
            tool_json_array(p->j);
        } else {
            tool_buf_printf(p->t, "%scategories of feature %u (code: value):",
                            p->feature < 0 ? "" : "\n", feature);
        }
        p->feature = feature;
    }
    if (p->j) {
        tool_json_str_n(p->j, text, len);
    } else {
        tool_buf_printf(p->t, " %u: ", code);
        tool_buf_quote(p->t, text, len);
    }
}

/* The categories, all or none: a malformed encoder (or no memory to check
 * it) is an error naming the file, before anything is written. */
static void categories(const info_input *in, cat_print *cp)
{
    qs_error err;
    qs_error_clear(&err);
    if (qs_source_list_categories(in->src, in->src_len, print_category, cp, &err) < 0)
        tool_die_err(in->name, &err);
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

/* What the GPU back end would run for the model (qs_scorer_backend_plan:
 * no device opened), or why not. */
static void gpu_plan(const qs_scorer *s, char *out, size_t cap)
{
    qs_error err;
    qs_error_clear(&err);
    const qs_backend b = qs_backend_find("cuda");
    if (b == QS_BACKEND_UNKNOWN) {
        snprintf(out, cap, "no GPU back end in this build");
        return;
    }
    char plan[400];
    if (qs_scorer_backend_plan(s, b, plan, sizeof plan, &err) != 0) {
        /* out of memory fails the report (exit 4, nothing written); the
         * back end's refusal is a fact of the model */
        if (err.code == QS_ERR_NOMEM)
            tool_die_err(NULL, &err);
        snprintf(out, cap, "the cuda back end cannot plan for this model: %s", err.msg);
    } else
        snprintf(out, cap, "the cuda back end would run %s", plan);
}

/* The back end `auto` runs for the model on this machine, and why; and
 * the one qs-score runs: a tuning record measured here that names one
 * this machine runs wins over auto. */
static qs_backend auto_choice(const qs_scorer *s, const info_input *in, char *why, size_t cap,
                              qs_backend *runs)
{
    const qs_backend a = qs_scorer_auto_backend(s, why, cap);
    const qs_backend t = qs_tuning_backend(in->tuning);
    *runs = t == QS_BACKEND_AUTO ? a : t;
    return a;
}

static void text_report(tool_buf *f, const info_input *in, const qs_scorer *s)
{
    const qs_model *m = qs_scorer_model(s);
    qs_model_info mi;
    qs_model_get_info(m, &mi);
    qs_model_stats st;
    qs_error err;
    qs_error_clear(&err);
    if (qs_model_get_stats(m, &st, &err) != 0)
        tool_die_err(NULL, &err);
    tool_hold(&st, release_stats);   /* (freed on every way out: a bad encoder dies) */
    qs_layout_info li;
    qs_scorer_get_layout_info(s, &li);

    tool_buf_printf(f, "file: %s: %s, %zu bytes\n", in->name, in->kind, in->bytes);
    tool_buf_printf(f, "source: %s, version %s\n", qs_source_name(mi.source),
            in->source_version ? in->source_version : "not recorded");
    tool_buf_printf(f, "objective: %s\n", *st.objective ? st.objective : "(none)");
    tool_buf_printf(f, "transform: %s\n", mi.transform);
    tool_buf_printf(f, "arithmetic: %s values and thresholds, %s sums, goes left when x %s t\n",
            mi.float_precision ? "float32" : "double", accumulate_name(mi.float_accumulate),
            strcmp(st.compare, "lt") == 0 ? "<" : "<=");
    tool_buf_printf(f, "absent features: %s\n", mi.absent_is_missing ? "missing" : "zero");
    tool_buf_printf(f, "features: %u (ids 0..%lld); used by splits: %u, largest id %lld\n",
            mi.num_features, (long long)mi.num_features - 1, st.features_used,
            (long long)st.max_feature_used);
    if (in->src) {
        cat_print cp = { f, NULL, -1 };
        categories(in, &cp);
        if (cp.feature >= 0)
            tool_buf_printf(f, "\n");
    }
    tool_buf_printf(f, "classes: %u\n", mi.num_classes);
    tool_buf_printf(f, "trees: %llu (%llu nodes, %llu leaves, %llu categorical splits)\n",
            (unsigned long long)mi.num_trees, (unsigned long long)st.nodes,
            (unsigned long long)st.leaves, (unsigned long long)st.cat_nodes);
    {
        /* a source whose iterations are not one tree per class (XGBoost's
         * boosted random forests): what --trees N counts */
        const uint64_t it = qs_scorer_iterations(s);
        if (it && it * mi.num_classes != mi.num_trees)
            tool_buf_printf(f, "iterations: %llu of %llu trees each (--trees N keeps N of them)\n",
                            (unsigned long long)it, (unsigned long long)(mi.num_trees / it));
    }
    tool_buf_printf(f, "leaves per tree:");
    for (size_t i = 0; i < st.n_leaves_hist; i++)
        tool_buf_printf(f, "%s %llu x%llu", i ? "," : "", (unsigned long long)st.leaves_hist[i].value,
                (unsigned long long)st.leaves_hist[i].count);
    tool_buf_printf(f, "%s\n", st.n_leaves_hist ? " (leaves x trees)" : " (no trees)");
    tool_buf_printf(f, "depth per tree:");
    for (size_t i = 0; i < st.n_depth_hist; i++)
        tool_buf_printf(f, "%s %llu x%llu", i ? "," : "", (unsigned long long)st.depth_hist[i].value,
                (unsigned long long)st.depth_hist[i].count);
    tool_buf_printf(f, "%s\n", st.n_depth_hist ? " (depth x trees)" : " (no trees)");
    tool_buf_printf(f, "oblivious: %s (%llu of %llu trees)\n", mi.oblivious ? "yes" : "no",
            (unsigned long long)st.oblivious_trees, (unsigned long long)mi.num_trees);

    char tau[96];
    if (li.stored_tree_block == 0 && li.tree_block != 0)
        snprintf(tau, sizeof tau, "%u (stored 0: chosen at load from this machine's last-level cache)",
                 li.tree_block);
    else if (li.tree_block == 0)
        snprintf(tau, sizeof tau, "0 (one block per run of trees of one kind)");
    else
        snprintf(tau, sizeof tau, "%u", li.tree_block);
    tool_buf_printf(f, "layout: τ %s, δ %u, Δ %u\n", tau, li.doc_block, li.delta);
    tool_buf_printf(f, "  blocks: %u; reversed trees: %llu; threshold entries: %llu; special-value "
               "entries: %llu; leaf values: %llu; categorical nodes: %u\n",
            li.nblocks, (unsigned long long)li.reversed_trees, (unsigned long long)li.entries,
            (unsigned long long)li.special_entries, (unsigned long long)li.leaf_values,
            li.cat_nodes);
    for (uint32_t b = 0; b < li.nblocks && b < TEXT_BLOCKS; b++) {
        qs_block_info bi;
        char kind[64];
        qs_scorer_get_block(s, b, &bi);
        block_text(kind, sizeof kind, &bi);
        tool_buf_printf(f, "  block %u: trees %llu..%llu (%llu), %s, %llu entries, %llu reversed\n", b,
                (unsigned long long)bi.first_tree,
                (unsigned long long)(bi.first_tree + bi.num_trees - (bi.num_trees > 0)),
                (unsigned long long)bi.num_trees, kind, (unsigned long long)bi.entries,
                (unsigned long long)bi.reversed_trees);
    }
    if (li.nblocks > TEXT_BLOCKS)
        tool_buf_printf(f, "  ... %u more blocks (--json lists every one)\n", li.nblocks - TEXT_BLOCKS);
    {
        char why[200];
        qs_backend runs;
        const qs_backend a = auto_choice(s, in, why, sizeof why, &runs);
        tool_buf_printf(f, "auto: runs %s on this machine (%s)", qs_backend_name(a), why);
        if (runs != a)
            tool_buf_printf(f, "; qs-score runs %s here, as the tuning record says",
                            qs_backend_name(runs));
        tool_buf_printf(f, "\n");
    }
    char gpu[640];
    gpu_plan(s, gpu, sizeof gpu);
    tool_buf_printf(f, "gpu: %s\n", gpu);
    if (in->tuning) {
        const qs_tuning *t = in->tuning;
        char date[32] = "?";
        time_t tt = (time_t)t->date;
        struct tm tmv;
        if (gmtime_r(&tt, &tmv))
            strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tmv);
        tool_buf_printf(f, "tuning: order %s, s %u, d %u, tree block %u, doc block %u, delta %u, "
                   "back end %s, threads %u%s\n",
                qs_order_name((qs_order)t->order) ? qs_order_name((qs_order)t->order) : "?",
                t->inner_s, t->inner_d, t->tree_block, t->doc_block, t->delta,
                t->backend[0] ? t->backend : "auto", t->threads,
                t->threads ? "" : " (not measured)");
        tool_buf_printf(f, "  measured: %.4f ns/doc/tree (defaults %.4f: %.3fx)\n", t->tuned_ns,
                t->default_ns, t->tuned_ns > 0 ? t->default_ns / t->tuned_ns : 0.0);
        tool_buf_printf(f, "  machine: %s, %u CPUs, L1d %llu, L2 %llu, L3 %llu bytes; qs %s, %s%s\n",
                t->cpu_model, t->cores, (unsigned long long)t->cache[0],
                (unsigned long long)t->cache[1], (unsigned long long)t->cache[2], t->version, date,
                qs_tuning_matches(t) ? " (this machine)" : " (another machine)");
    } else {
        tool_buf_printf(f, "tuning: none (no tuning record)\n");
    }
    if (in->qsm) {
        tool_buf_printf(f, "sections: %u (.qsm version %u.%u)\n", in->qsm->nsections, in->qsm->major,
                in->qsm->minor);
        for (uint32_t i = 0; i < in->qsm->nsections; i++) {
            const qs_qsm_section *q = &in->qsm->sections[i];
            char fl[32];
            flags_text(fl, sizeof fl, q->flags);
            tool_buf_printf(f, "  %-4s %-13s offset %llu, stored %llu bytes, raw %llu bytes, crc32c %08x\n",
                    q->id, fl, (unsigned long long)q->offset, (unsigned long long)q->stored_size,
                    (unsigned long long)q->raw_size, q->crc);
        }
    } else {
        tool_buf_printf(f, "sections: none (not a .qsm; the layout above is the one qs-compile "
                   "would write)\n");
    }
    tool_release(&st);
}

static void json_report(tool_json *j, const info_input *in, const qs_scorer *s)
{
    const qs_model *m = qs_scorer_model(s);
    qs_model_info mi;
    qs_model_get_info(m, &mi);
    qs_model_stats st;
    qs_error err;
    qs_error_clear(&err);
    if (qs_model_get_stats(m, &st, &err) != 0)
        tool_die_err(NULL, &err);
    tool_hold(&st, release_stats);   /* (freed on every way out: a bad encoder dies) */
    qs_layout_info li;
    qs_scorer_get_layout_info(s, &li);

    /* one member of the top-level object per line */
#define MEMBER(k) (tool_json_break(j, 2), tool_json_key(j, k))
    tool_json_object(j);
    MEMBER("file");
    tool_json_object(j);
    tool_json_key(j, "name");
    tool_json_str(j, in->name);
    tool_json_key(j, "kind");
    tool_json_str(j, in->kind);
    tool_json_key(j, "bytes");
    tool_json_u64(j, in->bytes);
    tool_json_end(j);
    MEMBER("source");
    tool_json_str(j, qs_source_name(mi.source));
    MEMBER("source_version");
    tool_json_str(j, in->source_version); /* NULL: null */
    MEMBER("objective");
    tool_json_str(j, st.objective);
    MEMBER("transform");
    tool_json_str(j, mi.transform);
    MEMBER("precision");
    tool_json_str(j, mi.float_precision ? "float" : "double");
    MEMBER("accumulate");
    tool_json_str(j, accumulate_name(mi.float_accumulate));
    MEMBER("compare");
    tool_json_str(j, st.compare);
    MEMBER("absent");
    tool_json_str(j, mi.absent_is_missing ? "missing" : "zero");
    MEMBER("features");
    tool_json_object(j);
    tool_json_key(j, "count");
    tool_json_u64(j, mi.num_features);
    tool_json_key(j, "used");
    tool_json_u64(j, st.features_used);
    tool_json_key(j, "max_used");
    tool_json_i64(j, (int64_t)st.max_feature_used);
    tool_json_end(j);
    if (in->src) {
        MEMBER("categories");
        tool_json_object(j);
        cat_print cp = { NULL, j, -1 };
        categories(in, &cp);
        if (cp.feature >= 0)
            tool_json_end(j);   /* the last feature's list */
        tool_json_end(j);
    }
    MEMBER("classes");
    tool_json_u64(j, mi.num_classes);
    MEMBER("trees");
    tool_json_u64(j, mi.num_trees);
    MEMBER("iterations");
    tool_json_u64(j, qs_scorer_iterations(s));
    MEMBER("nodes");
    tool_json_u64(j, st.nodes);
    MEMBER("leaves");
    tool_json_u64(j, st.leaves);
    MEMBER("categorical_splits");
    tool_json_u64(j, st.cat_nodes);
    MEMBER("max_leaves");
    tool_json_u64(j, mi.max_leaves);
    MEMBER("max_depth");
    tool_json_u64(j, mi.max_depth);
    MEMBER("leaves_histogram");
    tool_json_array(j);
    for (size_t i = 0; i < st.n_leaves_hist; i++) {
        tool_json_object(j);
        tool_json_key(j, "leaves");
        tool_json_u64(j, st.leaves_hist[i].value);
        tool_json_key(j, "trees");
        tool_json_u64(j, st.leaves_hist[i].count);
        tool_json_end(j);
    }
    tool_json_end(j);
    MEMBER("depth_histogram");
    tool_json_array(j);
    for (size_t i = 0; i < st.n_depth_hist; i++) {
        tool_json_object(j);
        tool_json_key(j, "depth");
        tool_json_u64(j, st.depth_hist[i].value);
        tool_json_key(j, "trees");
        tool_json_u64(j, st.depth_hist[i].count);
        tool_json_end(j);
    }
    tool_json_end(j);
    MEMBER("oblivious");
    tool_json_bool(j, mi.oblivious);
    MEMBER("oblivious_trees");
    tool_json_u64(j, st.oblivious_trees);
    MEMBER("layout");
    tool_json_object(j);
    tool_json_key(j, "tree_block");
    tool_json_u64(j, li.tree_block);
    tool_json_key(j, "stored_tree_block");
    tool_json_u64(j, li.stored_tree_block);
    tool_json_key(j, "doc_block");
    tool_json_u64(j, li.doc_block);
    tool_json_key(j, "delta");
    tool_json_u64(j, li.delta);
    tool_json_key(j, "reversed_trees");
    tool_json_u64(j, li.reversed_trees);
    tool_json_key(j, "entries");
    tool_json_u64(j, li.entries);
    tool_json_key(j, "special_entries");
    tool_json_u64(j, li.special_entries);
    tool_json_key(j, "leaf_values");
    tool_json_u64(j, li.leaf_values);
    tool_json_key(j, "categorical_nodes");
    tool_json_u64(j, li.cat_nodes);
    tool_json_break(j, 4);
    tool_json_key(j, "blocks");
    tool_json_array(j);
    for (uint32_t b = 0; b < li.nblocks; b++) {
        qs_block_info bi;
        qs_scorer_get_block(s, b, &bi);
        tool_json_break(j, 6);
        tool_json_object(j);
        tool_json_key(j, "first_tree");
        tool_json_u64(j, bi.first_tree);
        tool_json_key(j, "trees");
        tool_json_u64(j, bi.num_trees);
        tool_json_key(j, "kind");
        tool_json_str(j, bi.oblivious ? "qs-omega" : "qs");
        tool_json_key(j, "mask_bits");
        tool_json_u64(j, bi.width);
        tool_json_key(j, "mask_words");
        tool_json_u64(j, bi.words);
        tool_json_key(j, "entries");
        tool_json_u64(j, bi.entries);
        tool_json_key(j, "reversed");
        tool_json_u64(j, bi.reversed_trees);
        tool_json_end(j);
    }
    if (li.nblocks)
        tool_json_break(j, 4);
    tool_json_end(j);
    tool_json_end(j);
    MEMBER("auto");
    {
        char why[200];
        qs_backend runs;
        const qs_backend a = auto_choice(s, in, why, sizeof why, &runs);
        tool_json_object(j);
        tool_json_key(j, "backend");
        tool_json_str(j, qs_backend_name(a));
        tool_json_key(j, "why");
        tool_json_str(j, why);
        tool_json_key(j, "qs_score_runs");
        tool_json_str(j, qs_backend_name(runs));
        tool_json_end(j);
    }
    MEMBER("gpu");
    char gpu[640];
    gpu_plan(s, gpu, sizeof gpu);
    tool_json_str(j, gpu);
    MEMBER("tuning");
    if (in->tuning) {
        const qs_tuning *t = in->tuning;
        const char *on = qs_order_name((qs_order)t->order);
        tool_json_object(j);
        tool_json_key(j, "order");
        tool_json_str(j, on ? on : "?");
        tool_json_key(j, "s");
        tool_json_u64(j, t->inner_s);
        tool_json_key(j, "d");
        tool_json_u64(j, t->inner_d);
        tool_json_key(j, "tree_block");
        tool_json_u64(j, t->tree_block);
        tool_json_key(j, "doc_block");
        tool_json_u64(j, t->doc_block);
        tool_json_key(j, "delta");
        tool_json_u64(j, t->delta);
        tool_json_key(j, "threads");
        tool_json_u64(j, t->threads);
        tool_json_key(j, "backend");
        tool_json_str(j, t->backend[0] ? t->backend : "auto");
        tool_json_key(j, "default_ns");
        tool_json_num(j, t->default_ns);
        tool_json_key(j, "tuned_ns");
        tool_json_num(j, t->tuned_ns);
        tool_json_key(j, "cpu_model");
        tool_json_str(j, t->cpu_model);
        tool_json_key(j, "cores");
        tool_json_u64(j, t->cores);
        tool_json_key(j, "cache");
        tool_json_array(j);
        for (int i = 0; i < 3; i++)
            tool_json_u64(j, t->cache[i]);
        tool_json_end(j);
        tool_json_key(j, "version");
        tool_json_str(j, t->version);
        tool_json_key(j, "date");
        tool_json_i64(j, t->date);
        tool_json_key(j, "this_machine");
        tool_json_bool(j, qs_tuning_matches(t));
        tool_json_end(j);
    } else {
        tool_json_null(j);
    }
    MEMBER("qsm");
    if (in->qsm) {
        char ver[24];
        snprintf(ver, sizeof ver, "%u.%u", in->qsm->major, in->qsm->minor);
        tool_json_object(j);
        tool_json_key(j, "version");
        tool_json_str(j, ver);
        tool_json_key(j, "sections");
        tool_json_array(j);
        for (uint32_t i = 0; i < in->qsm->nsections; i++) {
            const qs_qsm_section *q = &in->qsm->sections[i];
            char crc[9];
            snprintf(crc, sizeof crc, "%08x", q->crc);
            tool_json_break(j, 4);
            tool_json_object(j);
            tool_json_key(j, "id");
            tool_json_str(j, q->id);
            tool_json_key(j, "required");
            tool_json_bool(j, q->flags & 1);
            tool_json_key(j, "zstd");
            tool_json_bool(j, (q->flags & 2) != 0);
            tool_json_key(j, "offset");
            tool_json_u64(j, q->offset);
            tool_json_key(j, "stored_bytes");
            tool_json_u64(j, q->stored_size);
            tool_json_key(j, "raw_bytes");
            tool_json_u64(j, q->raw_size);
            tool_json_key(j, "crc32c");
            tool_json_str(j, crc);
            tool_json_end(j);
        }
        tool_json_end(j);
        tool_json_end(j);
    } else {
        tool_json_null(j);
    }
#undef MEMBER
    tool_json_break(j, 0);
    tool_json_end(j);
    tool_release(&st);
}

/* The report is built in memory and written whole, so an error (a malformed
 * category encoder, no memory) leaves nothing written. */
static void release_buf(void *p) { tool_buf_free(p); }
static void release_json(void *p) { tool_json_free(p); }

void info_report(FILE *f, int json, const info_input *in, const qs_scorer *s)
{
    const char *text = NULL, *why = NULL;
    size_t len = 0;
    tool_buf b = { 0 };
    tool_json j;
    tool_json_init(&j);
    if (json) {
        tool_hold(&j, release_json);
        json_report(&j, in, s);
        if (tool_json_finish(&j, &text, &len, &why) != 0) {
            if (j.b.oom)
                tool_die(EXIT_SYSTEM, "%s: out of memory (writing the report)", in->name);
            tool_die(EXIT_DATA, "%s: the report is not valid JSON (%s)", in->name, why);
        }
    } else {
        tool_hold(&b, release_buf);
        text_report(&b, in, s);
        if (b.oom)
            tool_die(EXIT_SYSTEM, "%s: out of memory (writing the report)", in->name);
        text = b.p;
        len = b.len;
    }
    /* (a write error is found when the output is committed) */
    fwrite(text, 1, len, f);
    if (json)
        tool_release(&j);
    else
        tool_release(&b);
}
