/* derived-from-unmoved: computed from a tensor the program has no name for, made off the device; the move goes where
 * that was made (never-moved family; the analysis is unmoved.c's). */
#include "rule.h"

#include <stdio.h>

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) { return rl_unmoved_match(cx, RL_UNMOVED_DERIVED, fx); }

const struct vw_rule vw_rule_derived_from_unmoved = {
    .id = "derived-from-unmoved",
    .summary = "(never-moved) computed from a tensor the program has no name for, made off the device: the move goes "
               "where that was made",
    .doc = "A tensor computed by ops of one operand each (a mask sliced and compared from a causal buffer, a "
           "detached copy) is on the device of what it was computed from; moving the result in a loop treats the "
           "symptom. The rule matches an odd operand made by an op from a single tensor the program has no name "
           "for, back to the first tensor of the chain it does hold by a name; or one it names, recomputed in a "
           "loop from a tensor made once before that loop (keep = 1.0 - masks[t] in a returns loop, masks "
           "allocated on the CPU before it), back to that tensor; a root that is a view of the whole of a tensor a "
           "factory made (b_obs = obs.reshape(-1, n) of a rollout buffer) is that tensor. Example: mask = "
           "(self.causal[:t, :t] == 0), the causal tensor made on the CPU. Fix: a move where that root tensor is made, by its name, or device= at "
           "its factory's call.",
    .example = "a mask computed from a causal buffer; a loop's factor computed from a buffer made before the loop "
               "(`tests/rules/derived-from-unmoved.loop-source.py`)",
    .fixes = 1u << VW_FIX_ADVICE | 1u << VW_FIX_MOVE_AFTER | 1u << VW_FIX_MOVE_BEFORE | 1u << VW_FIX_DEVICE_ARG,
    .langs = VW_LANGS_PY_CXX,
    .match = match,
};
