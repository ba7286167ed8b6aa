/* never-moved: made off the intended device and never moved; the move goes right after it is made. The analysis is
 * unmoved.c's, shared with the rest of the family. */
#include "rule.h"

#include <stdio.h>

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) { return rl_unmoved_match(cx, RL_UNMOVED_NEVER_MOVED, fx); }

const struct vw_rule vw_rule_never_moved = {
    .id = "never-moved",
    .summary = "made off the device and never moved: the move goes right after it is made",
    .doc = "The plainest placement bug: a tensor made on the CPU (a loss weight, a constant, a mask) that the "
           "program never moves to the device where the op runs. The rule matches an odd operand made off the "
           "intended device with no move in its chain, when none of the more specific members of the family (a "
           "module's parameter, a callee's result, a loader's batch, a library callback, a plain attribute, a "
           "derived tensor, a view) explains it better. Example: pos_weight = torch.tensor([4.0]) passed to "
           "BCEWithLogitsLoss on the GPU. Fix: a move right after the statement that makes it, by the name it "
           "binds (with the tensors made the same way next to it, never moved either), or after the last "
           "statement that binds that name again and reaches the failing call (weight = normalise_(weight): "
           "never before a rebinding, which would move what the name held before); a factory that takes "
           "device= is named in the advice, and gets it when the program holds the tensor by no name the trace "
           "knows (an attribute of an object that is no module: a trainer's self.class_weight). A program in "
           "the .cuda() idiom, which names no device, gets its own move under its own condition (if args.cuda: "
           "weights = weights.cuda()), not a device literal.",
    .example = "`pos_weight = torch.tensor([4.0])` (`bug_pos_weight.py`); bound again by a helper "
               "(`tests/rules/never-moved.rebound.py`)",
    .fixes = 1u << VW_FIX_ADVICE | 1u << VW_FIX_MOVE_AFTER | 1u << VW_FIX_MOVE_BEFORE,
    .langs = VW_LANGS_ALL,
    .match = match,
};
