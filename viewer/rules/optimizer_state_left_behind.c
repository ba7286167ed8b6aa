/* optimizer-state-left-behind: an optimizer's state made next to its parameter (a step, a loaded state dict), then the
 * parameter moved in place and left the state behind. */
#include "rule.h"

#include <stdio.h>

/* optimizer-state-left-behind: an optimizer's state made next to its parameter, then the parameter moved. */
static int match_case(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    struct vw_step move;
    char *param = fx->words.name, d2[32], d3[32];
    if (!vw_fact_state_left_behind(m, k->odd, k->seq, &move, param, sizeof fx->words.name)) return 0;
    rl_at(fx, &move);
    fx->words.say = VW_SAY_STATE_MOVE_MODEL;
    fx->words.dev = move.dev;
    rl_dev_name(k->odd->dev, d2);
    rl_dev_name(move.dev, d3);
    rl_evidence(fx, "\"%s\" is optimizer state of parameter \"%s\"", k->odd->name, param);
    rl_evidence(fx, "\"%s\" moved %s -> %s after the state was made", param, d2, d3);
    /* made by a step the program ran before its move (no checkpoint in its chain: a warm-up on the cpu),
     * moving the model earlier would break that step: the state is put where the parameters went, after the
     * move (C: the runtime's state-dict round trip) */
    int loaded = 0;
    for (int i = 0; i < k->odd->nsteps; i++) loaded |= k->odd->chain[i].origin == DTP_ORIGIN_CHECKPOINT;
    if (!loaded && vw_code_state_replace(m, &move, fx->code, sizeof fx->code)) {
        fx->kind = VW_FIX_RELOAD_STATE;
        fx->words.say = VW_SAY_STATE_RELOAD;
        rl_evidence(fx, "made by the optimizer's step, not loaded from a checkpoint");
        return 1;
    }
    /* the code: the program's own move of the model, made before the statement that made the state (a
     * load_state_dict, a first step) */
    rl_move_first(m, k, fx, &move, &k->odd->chain[k->odd->arrived]);
    return 1;
}

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) { return match_case(cx->m, cx->k, fx); }

const struct vw_rule vw_rule_optimizer_state_left_behind = {
    .id = "optimizer-state-left-behind",
    .summary = "an optimizer's state made next to its parameter (a step, a loaded state dict) before the model was "
               "moved",
    .doc = "An optimizer keeps its state (Adam's exp_avg, a step count) on the device of each parameter at the "
           "time the state is made: by the first step, or by load_state_dict when resuming from a checkpoint. "
           "When the program moves the model after that, the parameters go to the device and the state stays "
           "where it was, and the next step mixes them. The rule matches an odd operand that the producer "
           "recorded as optimizer state of a parameter, and a later in-place move of that parameter away from "
           "the state's device. Example: opt.load_state_dict(ckpt[\"opt\"]) followed by model.to(device). Fix: the "
           "program's own move of the model, written before the statement that made the state (move the model "
           "first); where the state was made by a step the program ran on purpose before the move (C on "
           "libdtrt), the optimizer's state dict loaded back after the move, which puts each state where its "
           "parameter now is.",
    .example = "`opt.load_state_dict(ckpt[\"opt\"])`, then `model.to(device)`: Adam's `exp_avg` stays on the CPU "
               "(`bug_resume_optimizer.py`)",
    .fixes = 1u << VW_FIX_ADVICE | 1u << VW_FIX_MOVE_MODEL_FIRST | 1u << VW_FIX_RELOAD_STATE,
    .langs = VW_LANGS_PY_C,
    .match = match,
};
