/* info.c: the layout in force, block by block, for inspection
 * (qs_scorer_get_layout_info, qs_scorer_get_block). */
#include "score/score.h"

#include <string.h>

static uint64_t block_entries(const qs_layout *L, const qs_block *B)
{
    uint64_t n = 0;
    for (uint32_t g = B->group_begin; g < B->group_end; g++)
        n += L->groups[g].end - L->groups[g].begin;
    return n;
}

static uint64_t block_reversed(const qs_layout *L, const qs_block *B)
{
    uint64_t n = 0;
    for (uint64_t t = B->tree_begin; t < B->tree_end; t++)
        n += (L->treeflags[t] & QS_TREE_REVERSED) != 0;
    return n;
}

void qs_scorer_get_layout_info(const qs_scorer *s, qs_layout_info *info)
{
    const qs_layout *L = s->L;
    memset(info, 0, sizeof *info);
    info->tree_block = L->tree_block;
    info->stored_tree_block = s->stored_tree_block;
    info->doc_block = s->doc_block;
    info->delta = L->delta;
    info->nblocks = L->nblocks;
    for (uint32_t b = 0; b < L->nblocks; b++) {
        info->entries += block_entries(L, &L->blocks[b]);
        info->reversed_trees += block_reversed(L, &L->blocks[b]);
    }
    for (uint32_t g = 0; g < L->ngroups; g++)
        info->special_entries += L->groups[g].sp_end - L->groups[g].sp_begin;
    info->leaf_values = L->nleafvals;
    info->cat_nodes = L->ncat;
}

int qs_scorer_get_block(const qs_scorer *s, uint32_t i, qs_block_info *info)
{
    const qs_layout *L = s->L;
    memset(info, 0, sizeof *info);
    if (i >= L->nblocks)
        return -1;
    const qs_block *B = &L->blocks[i];
    info->first_tree = B->tree_begin;
    info->num_trees = B->tree_end - B->tree_begin;
    info->oblivious = B->kind == QS_BLOCK_OMEGA;
    info->width = info->oblivious ? 0 : B->width;
    info->words = info->oblivious || B->width ? 0 : B->words;
    info->entries = block_entries(L, B);
    info->reversed_trees = block_reversed(L, B);
    return 0;
}
