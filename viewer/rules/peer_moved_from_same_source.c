/* peer-moved-from-same-source: a peer operand was copied to the device from a tensor made where the odd one was made
 * (the other half of a batch); the odd one's move belongs beside it. */
#include "rule.h"

#include <stdio.h>

/* The odd operand never moved, but computed (in a helper, by a layer) from a tensor made on one line with
 * another that the program then moved itself (x_te, y_te = next(iter(loader)); x_te, y_te = x_te,
 * y_te.to(device)): that tensor's move belongs beside its peer's, where the program holds it by name. */
static int peer_of_root(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_operand *odd = k->odd;
    if (odd->nsteps < 2 || odd->missing) return 0; /* computed from the root, not the root itself */
    for (int s = 0; s < odd->nsteps; s++)
        if (odd->chain[s].origin == DTP_ORIGIN_TRANSFER || odd->chain[s].origin == DTP_ORIGIN_CHECKPOINT) return 0;
    const struct vw_step *root = &odd->chain[odd->nsteps - 1];
    struct vw_step move;
    char sib[256] = "", names[8][256], d1[32];
    /* the two halves of one batch are made within a few events of each other, in either order */
    if (!rl_is_python(root) ||
        !vw_fact_sibling_moved_near(m, root, 64, odd->dev, k->want, k->seq, &move, sib, sizeof sib) ||
        !rl_is_python(&move))
        return 0;
    int nn = vw_tensor_names(m, root->tensor, k->seq, names, 8), j = 0;
    rl_at(fx, &move);
    for (; j < nn && !fx->code[0]; j++) rl_code_for(m, k, fx, root, names[j]);
    if (!fx->code[0]) return 0;
    fx->words.say = VW_SAY_ROOT_PEER_MOVED;
    snprintf(fx->words.name, sizeof fx->words.name, "%s", names[j - 1]);
    snprintf(fx->words.name2, sizeof fx->words.name2, "%s", sib);
    fx->words.at = *root;
    rl_dev_name(k->want, d1);
    rl_evidence(fx, "computed from \"%s\", made on one line with %s", names[j - 1], sib);
    rl_evidence(fx, "the program moved %s to %s, not \"%s\"", sib, d1, names[j - 1]);
    return 1;
}

/* peer-moved-from-same-source: a peer was copied to the device from something made where the odd one was
 * made (the other half of a batch): the odd one's move belongs beside it. */
static int match_case(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_operand *odd = k->odd;
    char d1[32];
    for (int i = 0; i < k->n; i++) {
        const struct vw_operand *p = &k->ops[i];
        if (p->odd || p->scalar || !p->nsteps) continue;
        const struct vw_step *pa = &p->chain[p->arrived];
        if (pa->origin != DTP_ORIGIN_TRANSFER || p->arrived + 1 >= p->nsteps) continue;
        int shared = 0;
        for (int s = odd->arrived; s >= 0 && !shared; s--)
            shared = vw_same_site(&p->chain[p->arrived + 1], &odd->chain[s]);
        if (!shared) continue;
        rl_at(fx, pa);
        fx->site.tensor = odd->tensor; /* the fix moves the odd one: never a name of the peer's tensor */
        fx->words.say = VW_SAY_PEER_MOVED;
        snprintf(fx->words.name, sizeof fx->words.name, "%s",
                 p->name[0]       ? p->name
                 : p->src_name[0] ? p->src_name
                                  : p->arg);
        rl_dev_name(k->want, d1);
        rl_evidence(fx, "the peer '%s' was copied to %s from a tensor made on the same line", p->arg, d1);
        rl_code_for_odd(m, k, fx, odd->name);
        /* no name of it bound where the peer is moved: the statement after that one which binds it, in the same
         * function (inp = batch["input"].to(device), then tgt = batch["target"]: the move goes after tgt's) */
        for (int s = 0; !fx->code[0] && s <= odd->arrived && s < odd->nsteps; s++) {
            char names[8][256];
            int nn = vw_tensor_names(m, odd->chain[s].tensor, k->seq, names, 8);
            for (int j = 0; j < nn && !fx->code[0]; j++) rl_code_at_binding(m, k, fx, names[j]);
        }
        return 1;
    }
    return peer_of_root(m, k, fx);
}

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) { return match_case(cx->m, cx->k, fx); }

const struct vw_rule vw_rule_peer_moved_from_same_source = {
    .id = "peer-moved-from-same-source",
    .summary = "the other half of a batch was moved, this one not",
    .doc = "A batch comes in halves made together (inputs and labels from one loader, one collate call); a "
           "program that moves one half and forgets the other fails at the first op that uses both. The rule "
           "matches a peer operand that reached the device by a copy from a tensor made on the same line as the "
           "odd operand (or, for an operand computed from an unnamed tensor, a root made within a few events of "
           "a tensor the program moved). Example: for inputs, labels in loader: inputs = inputs.to(device), and "
           "labels used as they are. Fix: a move of the odd tensor beside its peer's move, by the name the "
           "program has for it there; where it has none yet, after the statement of that function that binds it "
           "(inp = batch[\"input\"].to(device); tgt = batch[\"target\"]: tgt = tgt.to(device) after it), never by "
           "the peer's name.",
    .example = "`for inputs, labels in loader:` `inputs = inputs.to(device)`, `labels` not "
               "(`bug_labels_not_moved.py`)",
    .fixes = 1u << VW_FIX_ADVICE | 1u << VW_FIX_MOVE_AFTER,
    .langs = VW_LANGS_ALL,
    .match = match,
};
