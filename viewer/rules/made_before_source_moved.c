/* made-before-source-moved: a tensor made from another (a clone, an EMA's shadow) before a move in place took the other
 * to the device. */
#include "rule.h"

#include <stdio.h>

/* made-before-source-moved: a tensor made from another (a clone, an EMA's shadow) before a move in place
 * took the other to the device. */
static int match_case(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    struct vw_step move;
    int src;
    char d1[32], d2[32], *sname = fx->words.name;
    const struct vw_operand *o = k->odd;
    if (!vw_fact_made_before_source_moved(m, o, k->want, k->seq, &move, &src)) return 0;
    rl_at(fx, &move);
    if (!vw_tensor_name(m, move.tensor, k->seq, sname, sizeof fx->words.name)[0])
        snprintf(sname, sizeof fx->words.name, "its source");
    rl_evidence(fx, "made from a tensor while it was on %s", rl_dev_name(o->dev, d2));
    rl_evidence(fx, "that tensor was then moved in place to %s", rl_dev_name(k->want, d1));
    fx->words.at = o->chain[src - 1];
    fx->words.at2 = move;
    /* the code: the program's move, made before the statement that made the first tensor from its source */
    fx->words.say = rl_move_first(m, k, fx, &move, &o->chain[src - 1]) ? VW_SAY_SOURCE_MOVED_FIRST
                                                                        : VW_SAY_SOURCE_MOVED_AFTER;
    return 1;
}

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) { return match_case(cx->m, cx->k, fx); }

const struct vw_rule vw_rule_made_before_source_moved = {
    .id = "made-before-source-moved",
    .summary = "a tensor made from another (a copy, an EMA's shadow) before a move in place took the other to the "
               "device",
    .doc = "A tensor made from another one (a clone, an exponential moving average's shadow weights, a frozen "
           "copy) lives where its source was at that time; a later in-place move of the source (the model's .to) "
           "does not take the copy along. The rule matches a tensor of the odd operand's chain made from a "
           "tensor that a later in-place move took to the intended device. Example: shadow = {n: p.clone() for "
           "n, p in model.named_parameters()}, then model.to(device). Fix: the program's move of the model, made "
           "before the statement that made the copy, so the copy is made on the device; where that move cannot "
           "be written, advice to make the copy after the move.",
    .example = "an EMA shadow `clone()`d from each parameter, then the model moved (`bug_ema_shadow.c`)",
    .fixes = 1u << VW_FIX_ADVICE | 1u << VW_FIX_MOVE_MODEL_FIRST,
    .langs = VW_LANGS_PY_C,
    .match = match,
};
