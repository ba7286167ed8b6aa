/* made-in-callee: never moved, made in a function that returned it; the move goes where the caller binds it
 * (never-moved family; the analysis is unmoved.c's). */
#include "rule.h"

#include <stdio.h>

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) {
    return rl_unmoved_match(cx, RL_UNMOVED_MADE_IN_CALLEE, fx);
}

const struct vw_rule vw_rule_made_in_callee = {
    .id = "made-in-callee",
    .summary = "(never-moved) made in a function that returned it: the move goes where the caller binds it",
    .doc = "A helper that computes a tensor and returns it (class weights, a mask) has no name for it that "
           "outlives the call, and moving it inside the helper would change every caller. The rule matches a "
           "never-moved tensor made in a function whose caller binds the returned value to the name the program "
           "uses, when the helper did not make it for several callers. Example: weight = "
           "inverse_frequency(train_labels, 4), the helper computing it on the CPU. Fix: a move right after the "
           "caller's statement that binds it; where the helper has no device of its own to follow (no device "
           "expression or peer tensor bound where it made the tensor: a mask helper given only a length) and "
           "returned the tensor as its return statement's value, .to() on the helper's call in the caller, with "
           "the device or the peer bound there (mask = self._make_mask(n).to(src.device)), never a literal "
           "device inside the helper. A factory in a method of a module whose caller is outside the module's "
           "class (hidden = model.init_hidden(bsz) in the training loop) is model code that every caller uses: "
           "it makes the tensor on the module's device there (device=next(self.parameters()).device, or the "
           "program's device expression bound there), not a move in one caller. A factory in a function its caller "
           "handed, by a plain name, a tensor on the intended device (dec = shift_tokens_right(labels, 0, 1), the "
           "function making its result with torch.zeros and no device) makes it on that tensor's device there "
           "(device=input_ids.device, its parameter's name), for every caller and on any device, when the op that "
           "failed is not in that function (where it is, its peers are in scope and the other rules follow them).",
    .example = "`weight = inverse_frequency(train_labels, 4)`, the helper computing it on the CPU "
               "(`tests/rules/made-in-callee.py`); `mask = self._make_mask(n)`, made on the CPU from a length "
               "(`tests/rules/made-in-callee.call-site.py`); `memory = cell.initial_memory(b)`, made on the CPU in "
               "the model's method (`tests/rules/made-in-callee.module-method.py`); `pos = position_ids(ids)`, made by "
               "torch.arange in a helper handed the batch (`tests/rules/made-in-callee.tensor-param.py`)",
    .fixes = 1u << VW_FIX_ADVICE | 1u << VW_FIX_MOVE_AFTER | 1u << VW_FIX_MOVE_BEFORE | 1u << VW_FIX_DEVICE_ARG |
             1u << VW_FIX_MOVE_CALL,
    .langs = VW_LANGS_PY_C,
    .match = match,
};
