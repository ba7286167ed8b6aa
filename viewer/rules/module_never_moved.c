/* module-never-moved: the odd operand is a parameter of a module the program never moved (never-moved family; the
 * analysis is unmoved.c's). */
#include "rule.h"

#include <stdio.h>

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) { return rl_unmoved_match(cx, RL_UNMOVED_MODULE, fx); }

const struct vw_rule vw_rule_module_never_moved = {
    .id = "module-never-moved",
    .summary = "(never-moved) a module's parameter: the module was never moved",
    .doc = "A module's parameters are made on the CPU when the module is constructed; a model built and never "
           "moved fails at its first layer on the GPU's inputs. The rule matches an odd operand that is a "
           "module's parameter (nn.Parameter, named by the program's variable: model.fc.weight; or made while a "
           "C++ or libdtrt module the program declares was constructed) still where it was made. Example: model "
           "= nn.Linear(20, 4) and no model.to(device). Fix: the module moved once it is made (model = "
           "model.to(device), fc->to(device), dt_module_to); a module constructed inside an expression gets "
           ".to(device) on that call, unless no device is bound there and a class of the program calls it as its "
           "attribute and keeps the program's device (Trainer(Net(), lr)): then, as for a Python module made where "
           "no device is bound that such a class (a trainer's self.model and self.device) calls, the move goes where "
           "that class binds the attribute, after it binds the device (self.model.to(self.device)); a module whose "
           "tensor is named from inside its own methods (self.weight of a loss module's registered buffer) is "
           "moved where the statement that constructed it binds it, with the device bound there "
           "(self.criterion.to(self.device)); a script in the .cuda() idiom gets the move it makes elsewhere, under "
           "the same condition (if use_cuda: model = model.cuda()).",
    .example = "`model = nn.Linear(20, 4)` and no `model.to(device)` (`bug_fresh_model.py`)",
    .fixes = 1u << VW_FIX_ADVICE | 1u << VW_FIX_MOVE_AFTER | 1u << VW_FIX_MOVE_BEFORE | 1u << VW_FIX_MOVE_MODULE |
             1u << VW_FIX_MOVE_CALL,
    .langs = VW_LANGS_ALL,
    .match = match,
};
