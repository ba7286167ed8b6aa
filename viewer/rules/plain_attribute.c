/* plain-attribute: a module's plain attribute or field, which the module's move left behind; registered as a buffer
 * (never-moved family; the analysis is unmoved.c's). */
#include "rule.h"

#include <stdio.h>

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) {
    return rl_unmoved_match(cx, RL_UNMOVED_PLAIN_ATTRIBUTE, fx);
}

const struct vw_rule vw_rule_plain_attribute = {
    .id = "plain-attribute",
    .summary = "(never-moved) a module's plain attribute, which the module's move left behind: register it as a "
               "buffer",
    .doc = "A module's move (model.to(device)) takes its parameters and registered buffers, not tensors kept in "
           "plain attributes, lists or dicts. The rule matches a never-moved tensor made in a module's "
           "constructor (a class whose bases name nn.Module) and stored as self.NAME (or returned by a helper "
           "the constructor called and stored as self.NAME), or made next to tensors "
           "that a later in-place move of the module took to the device while it stayed. Example: "
           "self.temperature = torch.full((classes,), 0.5) in __init__. Fix: self.register_buffer(\"NAME\", None) "
           "before the assignment (a plain attribute set earlier is deleted first); in C on libdtrt, "
           "dt_module_register_buffer for the program's own struct field; else the advice to register it.",
    .example = "`self.temperature = torch.full((classes,), 0.5)` (`bug_plain_attribute.py`)",
    .fixes = 1u << VW_FIX_ADVICE | 1u << VW_FIX_REGISTER_BUFFER,
    .langs = VW_LANGS_PY_C,
    .match = match,
};
