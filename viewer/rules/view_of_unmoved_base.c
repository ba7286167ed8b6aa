/* view-of-unmoved-base: a view of a tensor made off the device; the base is moved once, not the view in the loop
 * (never-moved family; the analysis is unmoved.c's). */
#include "rule.h"

#include <stdio.h>

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) { return rl_unmoved_match(cx, RL_UNMOVED_VIEW, fx); }

const struct vw_rule vw_rule_view_of_unmoved_base = {
    .id = "view-of-unmoved-base",
    .summary = "(never-moved) a view of a tensor made off the device: move the base once, not the view in the loop",
    .doc = "A view (expand, view, a slice, .T) is always on its base's device, so a view made in a loop from a "
           "constant made once on the CPU is on the CPU on every pass. The rule matches an odd operand that is a "
           "view of a tensor made off the device on another line, never moved. Example: gain = "
           "torch.tensor([...]) before the loop and gain.expand_as(x) in it. Fix: a move of the base right after "
           "it is made, once.",
    .example = "`gain = torch.tensor([...])`, expanded against each batch (`bug_broadcast_view.py`)",
    .fixes = 1u << VW_FIX_ADVICE | 1u << VW_FIX_MOVE_AFTER | 1u << VW_FIX_MOVE_BEFORE | 1u << VW_FIX_DEVICE_ARG,
    .langs = VW_LANGS_PY_C,
    .match = match,
};
