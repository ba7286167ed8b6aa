/* moved-with-others: never moved, while the program moved the tensors made with it (never-moved family; the analysis is
 * unmoved.c's). */
#include "rule.h"

#include <stdio.h>

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) {
    return rl_unmoved_match(cx, RL_UNMOVED_MOVED_WITH_OTHERS, fx);
}

const struct vw_rule vw_rule_moved_with_others = {
    .id = "moved-with-others",
    .summary = "(never-moved) the program moved the tensors made with it, not this one",
    .doc = "When the program moves, in one function, tensors made together with the odd one (a batch's data but "
           "not its targets, in a loop that makes the batch inline), the missing move belongs next to the ones "
           "it wrote. The rule matches a never-moved tensor made in a function other than the program's "
           "outermost, where the program's own copies to the intended device took tensors made in the same "
           "place, not made by the failing call itself and not in a loop that did not make it. Example: a C++ "
           "loop with data = batch.data.to(device) and batch.target used as it is. Fix: a move of the odd tensor "
           "next to the program's move of the others.",
    .example = "a C++ loop moving `batch.data` but not `batch.target`",
    .fixes = 1u << VW_FIX_ADVICE | 1u << VW_FIX_MOVE_AFTER | 1u << VW_FIX_MOVE_BEFORE | 1u << VW_FIX_DEVICE_ARG,
    .langs = VW_LANGS_PY,
    .match = match,
};
