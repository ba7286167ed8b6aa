/* sibling-moved: made on one line with a tensor the program then moved itself (x, y = batch; x = x.to(device)), where
 * the program has no name for the odd one at its making. */
#include "rule.h"

#include <stdio.h>

/* sibling-moved: made on one line with a tensor the program then moved itself (x, y = batch; x =
 * x.to(device)), where the program has no name for the odd one at its making. */
static int match_case(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_step *a = &k->odd->chain[k->odd->arrived];
    struct vw_step move;
    struct vw_frame cb;
    char sib[256] = "", d1[32];
    if (a->origin == DTP_ORIGIN_TRANSFER || a->origin == DTP_ORIGIN_VIEW || !rl_is_python(a)) return 0;
    /* a view of a base made off the device, made on one line with a tensor the program then moved: a batch
     * sliced from a dataset kept on the cpu (yield x[i:j], y[i:j]; data, target = data, target.cuda()), whose
     * elements the program moves itself: the forgotten one goes with them, not its base */
    int view;
    rl_made_at(k->odd, &view);
    if (view >= 0 && rl_is_python(&k->odd->chain[view]) &&
        !vw_fact_callback_caller(m, &k->odd->chain[view], k->pystack, &cb) &&
        vw_fact_sibling_moved(m, &k->odd->chain[view], k->odd->dev, k->want, k->seq, &move, sib, sizeof sib))
        a = &k->odd->chain[view];
    else {
        /* where the program holds it by a name where it was made, the move goes right there */
        struct vw_fix probe = {.site = *a, .has_site = 1};
        rl_code_for_odd(m, k, &probe, k->odd->name);
        if (probe.code[0] || vw_fact_callback_caller(m, a, k->pystack, &cb)) return 0;
        if (!vw_fact_sibling_moved(m, a, k->odd->dev, k->want, k->seq, &move, sib, sizeof sib)) return 0;
    }
    rl_at(fx, &move);
    fx->words.say = VW_SAY_SIBLING_MOVED;
    snprintf(fx->words.name2, sizeof fx->words.name2, "%s", sib);
    fx->words.at = *a;
    rl_dev_name(k->want, d1);
    rl_evidence(fx, "made on one line with %s, which the program moved to %s", sib[0] ? sib : "a tensor", d1);
    rl_code_for_odd(m, k, fx, k->odd->name);
    /* made in a function that returned it with its sibling (x, y = make_batch()): the name its caller binds
     * it to, where that is the function of the sibling's move and before it */
    struct vw_frame held;
    if (!fx->code[0] && rl_ident(k->odd->name) && vw_fact_bound_in_caller(m, a, k->odd->name, &held)) {
        struct vw_step h;
        memset(&h, 0, sizeof h);
        h.site = held;
        h.has_site = 1;
        h.origin = -1;
        rl_code_for(m, k, fx, &h, k->odd->name);
    }
    return 1;
}

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) { return match_case(cx->m, cx->k, fx); }

const struct vw_rule vw_rule_sibling_moved = {
    .id = "sibling-moved",
    .summary = "made on one line with a tensor the program moved itself, where it has no name of its own",
    .doc = "When the statement that made the odd tensor gives it no name of its own (an element of a tuple, a "
           "batch indexed later), the place to move it is where the program moved the tensor made with it. The "
           "rule matches an odd operand made (not copied) on one line with a tensor the program itself later "
           "moved to the intended device, where no move can be written at its making and no library called back "
           "the function that made it; or a view of a base made off the device, made on one line with a tensor "
           "the program moved (a batch sliced from a dataset kept on the cpu: the program moves each batch, so "
           "the base is not where the move goes). Example: x, y = batch; x = x.to(device); loss(model(x), "
           "batch[1]). Fix: a move of the odd tensor next to its sibling's move, by the name the program binds "
           "it to there (or in the caller that received both).",
    .example = "`x, y = batch; x = x.to(device)`, then `batch[1]` used as it is",
    .fixes = 1u << VW_FIX_ADVICE | 1u << VW_FIX_MOVE_AFTER,
    .langs = VW_LANGS_PY,
    .match = match,
};
