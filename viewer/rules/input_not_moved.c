/* input-not-moved: a tensor made where the program holds no name for it (an element of a list made at the top)
 * reached the failing op through a function of the program that moves what it uses there, without its move. */
#include "rule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The latest of the program's copies (copies[], newest first) made in g's function before g's statement: the
 * function moves what it uses there itself. Its index, or -1. */
static int copied_in(const struct vw_frame *copies, int n, const struct vw_frame *g) {
    for (int i = 0; i < n; i++)
        if (copies[i].python && !copies[i].hidden && !copies[i].library && !strcmp(copies[i].file, g->file) &&
            vw_same_function(copies[i].function, g->function) && copies[i].line < g->line)
            return i;
    return -1;
}

/* A name of the odd tensor that g's function binds before g's statement (a parameter, a loop's target). */
static const char *name_in(struct vw_model *m, const struct vw_frame *g, char (*names)[256], int n) {
    for (int i = 0; i < n; i++)
        if (rl_ident(names[i]) && vw_code_bound_before(m, g, names[i])) return names[i];
    return NULL;
}

static int frame_fix(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const struct vw_step *a,
                     const struct vw_src_call *c, const struct vw_frame *fr, int nf);

static int match_case(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_operand *o = k->odd;
    int view;
    if (!o->nsteps || o->missing || !o->tensor || !k->pystack) return 0;
    int own = rl_made_at(o, &view);
    if (view >= 0) return 0;
    const struct vw_step *a = &o->chain[own];
    struct vw_src src;
    /* made by a factory as a temporary (a list's element, a batch made inline: no line where it is made can
     * move it), or where the program has no device to move it with (a data helper given only sizes) */
    if (a->origin != DTP_ORIGIN_FACTORY || !rl_is_python(a) || !rl_has_code(m, a) ||
        !vw_src_at(m, a->site.file, a->site.line, &src))
        return 0;
    const struct vw_src_call *c = rl_making_call(&src, a);
    struct vw_frame cb;
    char here[160];
    if (!c || (!c->temporary && vw_device_expr_bound(m, k, k->want, &a->site, here, sizeof here)[0])) return 0;
    /* made in a function a library called back (a DataLoader's collate_fn): the program's loop receives it
     * (library-callback, loader-batch) */
    if (vw_fact_callback_caller(m, a, k->pystack, &cb)) return 0;
    /* the program's frames at the mismatch, innermost first, up to the one that made it (a list comprehension
     * of the top level, since Python 3.12 the top level itself): it came into them from outside */
    struct vw_frame *fr = calloc(VW_PY_FRAMES, sizeof *fr);
    int nall = fr ? vw_py_frames(m, k->pystack, fr, VW_PY_FRAMES) : 0, nf = 0;
    for (int i = 0; i < nall; i++) {
        if (!strcmp(fr[i].file, a->site.file) && vw_same_function(fr[i].function, a->site.function)) break;
        if (!fr[i].hidden && !fr[i].library && fr[i].python) fr[nf++] = fr[i];
    }
    int found = nf ? frame_fix(m, k, fx, a, c, fr, nf) : 0;
    free(fr);
    return found;
}

/* The fix in the first of the program's frames fr[] (innermost first, up to the one that made it) that holds
 * it by a name and has a device: see the rule's doc. */
static int frame_fix(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const struct vw_step *a,
                     const struct vw_src_call *c, const struct vw_frame *fr, int nf) {
    const struct vw_operand *o = k->odd;
    char names[9][256];
    int nn = vw_tensor_names(m, o->tensor, k->seq + 1, names, 8);
    if (o->name[0]) snprintf(names[nn++], sizeof names[0], "%s", o->name);
    struct vw_frame copies[64];
    int ncopies = vw_fact_copies_to(m, o->dev, k->want, k->seq, copies, 64);
    /* or tensors made where it was made, which the program moved on another way to this op (the training
     * step moves the batch, the evaluation loop that failed does not) */
    struct vw_step sm;
    char sib[256] = "";
    struct vw_src ss;
    int sibling = vw_fact_sibling_moved_near(m, a, (int)(a->seq < 0x7fffffff ? a->seq : 0x7fffffff), o->dev,
                                             k->want, k->seq, &sm, sib, sizeof sib) &&
                  rl_is_python(&sm) && vw_src_at(m, sm.site.file, sm.site.line, &ss) && ss.device_expr[0] &&
                  ss.device_expr[0] != '"' && ss.device_expr[0] != '\'';
    /* a tensor made with it moved on the failing way: its move goes beside that one (sibling-moved) */
    if (sibling && vw_py_on_stack(m, k->pystack, sm.site.file, sm.site.function)) return 0;
    if (!ncopies && !sibling) return 0;
    /* the function the one that made it returned it to binds it there (y = make(3)): moved at that binding
     * (made-in-callee), not further on in that function */
    struct vw_frame maker_caller;
    const int returned = vw_fact_caller_of(m, a, &maker_caller);
    for (int i = 0; i < nf; i++) {
        const struct vw_frame *g = &fr[i];
        struct vw_src gs;
        char expr[160];
        if ((g->function[0] == '<' && strcmp(g->function, DT_PY_TOP_LEVEL)) ||
            !vw_src_at(m, g->file, g->line, &gs) || gs.opens ||
            (returned && !c->temporary && !strcmp(maker_caller.file, g->file) &&
             vw_same_function(maker_caller.function, g->function)))
            continue;
        const char *name = name_in(m, g, names, nn);
        if (!name || !vw_device_expr_bound(m, k, k->want, g, expr, sizeof expr)[0]) continue;
        int at = copied_in(copies, ncopies, g);
        int other = at < 0 && sibling && !strcmp(expr, ss.device_expr);
        if (at < 0 && !other) continue;
        char d1[32];
        rl_dev_name(k->want, d1);
        rl_at_frame(fx, g, k->seq);
        fx->before = 1;
        if (!vw_code_move(m, g, name, expr, fx->code, sizeof fx->code)) return 0;
        fx->kind = VW_FIX_MOVE_BEFORE;
        fx->words.say = VW_SAY_INPUT_NOT_MOVED;
        snprintf(fx->words.name, sizeof fx->words.name, "%.255s", name);
        fx->words.frame = *g;
        fx->words.count = other;
        if (other) {
            fx->words.at = sm;
        } else {
            memset(&fx->words.at, 0, sizeof fx->words.at);
            fx->words.at.has_site = 1;
            fx->words.at.origin = -1;
            fx->words.at.site = copies[at];
        }
        rl_evidence(fx, "made by %s %s at %s:%d, outside %s", c->func,
                    c->temporary ? "as a temporary" : "where no device is bound", a->site.file, a->site.line,
                    g->function);
        if (other)
            rl_evidence(fx, "the program moved %s, made with it, to %s with %s at %s:%d", sib[0] ? sib : "a tensor", d1,
                        ss.device_expr, sm.site.file, sm.site.line);
        else
            rl_evidence(fx, "%s copies what it uses to %s (line %d)", g->function, d1, copies[at].line);
        rl_evidence(fx, "\"%s\" is bound in %s before line %d", name, g->function, g->line);
        return 1;
    }
    return 0;
}

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) { return match_case(cx->m, cx->k, fx); }

const struct vw_rule vw_rule_input_not_moved = {
    .id = "input-not-moved",
    .summary = "a tensor made where it cannot be moved (a list's element, a helper with no device) reached the op "
               "through a function that moves its inputs, without its move",
    .doc = "Programs often make their data on the CPU on purpose (a list of examples, a dataset's tensors) and move "
           "each piece where they use it; a piece that reaches a model or an op without that move fails there. The "
           "rule matches an odd operand made by a factory as a temporary (an element of a list: no line can move "
           "it where it is made) or where no device expression or peer is bound (a data helper given only sizes), "
           "outside the functions of the failing stack that it reached; one of those functions holds it by a name "
           "bound before its statement and has a device expression or peer, and either copies other tensors from "
           "the odd one's device to the intended one before that statement, or the program moved tensors made "
           "with it on another way to the op with the same device expression. It leaves the case to loader-batch "
           "when a library called back the function that made it, to sibling-moved when a tensor made with it was "
           "moved on the failing way, and to made-in-callee in the function a helper returned it to. Example: for "
           "x, y in zip(xs, ys): x = x.to(device); loss = loss_fn(model(x), y). Fix: a move of the odd tensor by "
           "that name right before the statement, in that function, with its device expression or a peer's "
           "device.",
    .example = "`for x, y in zip(xs, ys):` `x = x.to(device)`, and `y` used as it is",
    .fixes = 1u << VW_FIX_ADVICE | 1u << VW_FIX_MOVE_BEFORE,
    .langs = VW_LANGS_PY,
    .match = match,
};
