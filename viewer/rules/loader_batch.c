/* loader-batch: never moved, made while a loader produced the batch; the move goes in the loop that receives it
 * (never-moved family; the analysis is unmoved.c's). */
#include "rule.h"

#include <stdio.h>

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) {
    return rl_unmoved_match(cx, RL_UNMOVED_LOADER_BATCH, fx);
}

const struct vw_rule vw_rule_loader_batch = {
    .id = "loader-batch",
    .summary = "(never-moved) made while a DataLoader collated the batch: the move goes in the loop that receives it",
    .doc = "Batches are made on the CPU by the loader (a Dataset's __getitem__, a collate function, an iterator "
           "class of the program's own), and the program is expected to move each batch where it receives it. "
           "The rule matches a never-moved tensor made in a function other than the loop's, and bound by the "
           "header of a loop of the program (for x, y in loader:). Example: torch.tensor(ids) in collate, "
           "received by for ids, y in loader:. Fix: a move of each name the loop binds to a tensor on the CPU, "
           "first thing in the loop's body.",
    .example = "`torch.tensor(ids)` in `collate`, received by `for ids, y in loader:` (`bug_token_ids.py`)",
    .fixes = 1u << VW_FIX_ADVICE | 1u << VW_FIX_MOVE_AFTER | 1u << VW_FIX_MOVE_BEFORE | 1u << VW_FIX_DEVICE_ARG,
    .langs = VW_LANGS_PY,
    .match = match,
};
