/* checkpoint-map-location: a tensor loaded from a checkpoint onto the device it was saved from (or named by
 * map_location), not the intended one. */
#include "rule.h"

#include <stdio.h>

/* checkpoint-map-location: loaded from a checkpoint onto the device it was saved from, not the intended one. */
static int match_case(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_step *a = &k->odd->chain[k->odd->arrived];
    char on[32];
    if (a->origin != DTP_ORIGIN_CHECKPOINT) return 0;
    rl_at(fx, a);
    fx->words.say = VW_SAY_CHECKPOINT_LOAD;
    vw_device_expr(m, k, k->want, &a->site, fx->words.expr, sizeof fx->words.expr);
    rl_evidence(fx, "loaded from checkpoint key \"%s\" onto %s", a->what, vw_device_name(a->dev, on, 32));
    rl_code_for_odd(m, k, fx, k->odd->name);
    const char *dot = strchr(k->odd->name, '.');
    char mod[128];
    if (!fx->code[0] && dot && (size_t)(dot - k->odd->name) < sizeof mod) { /* a whole model loaded: move it */
        snprintf(mod, sizeof mod, "%.*s", (int)(dot - k->odd->name), k->odd->name);
        rl_code_for(m, k, fx, a, mod);
    }
    return 1;
}

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) { return match_case(cx->m, cx->k, fx); }

const struct vw_rule vw_rule_checkpoint_map_location = {
    .id = "checkpoint-map-location",
    .summary = "loaded from a checkpoint onto the device it was saved from, not the one meant",
    .doc = "torch.load puts each tensor on the device it was saved from, or where map_location says; a "
           "checkpoint loaded on the CPU stays there unless the program moves what it loaded. The rule matches "
           "an odd operand whose chain reached its device at a checkpoint load (origin checkpoint). Example: "
           "model = torch.load(f, map_location=\"cpu\") after training on the GPU, then model(x.to(device)). Fix: "
           "a move of the loaded tensor (or the whole loaded model) to the intended device after the load, by "
           "the name the program binds it to; the advice also names map_location.",
    .example = "`model = torch.load(f, map_location=\"cpu\")` after training on the GPU (`bug_load_whole_model.py`)",
    .fixes = 1u << VW_FIX_ADVICE | 1u << VW_FIX_MOVE_AFTER,
    .langs = VW_LANGS_PY_C,
    .match = match,
};
