/* temporary-in-expression: a factory's result made inside a larger expression and never moved; no line after it can
 * reach it, device= at the call can. */
#include "rule.h"
#include "validate.h"

#include <stdio.h>
#include <string.h>

/* Whether step t (its statement src) is in the statement of the failing call: what that statement binds is the
 * failing op's result or something made from it, not a view t made on the way (mask = torch.arange(n)[None, :]
 * < lengths[:, None]). */
static int in_failing_statement(struct vw_model *m, const struct vw_case *k, const struct vw_step *t,
                                const struct vw_src *src) {
    struct vw_src at;
    return k->call.has_site && t->has_site && !strcmp(k->call.site.file, t->site.file) &&
           vw_same_function(k->call.site.function, t->site.function) &&
           vw_src_at(m, k->call.site.file, k->call.site.line, &at) && at.first == src->first;
}

/* temporary-in-expression: a factory's result made inside a larger expression (an index made with
 * torch.arange inside an embedding call) and never moved: no line after it can reach it; device= at the
 * call can. */
static int match_case(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_operand *o = k->odd;
    int view;
    if (!o->nsteps || o->missing) return 0;
    /* back through views, in-place moves and ops of one tensor each (a detach, a repackaging) to where it was
     * made */
    int own = rl_made_at(o, &view);
    struct vw_src src;
    while (own < o->nsteps - 1 &&
           (o->chain[own].origin == DTP_ORIGIN_VIEW || o->chain[own].origin == -1 ||
            (o->chain[own].origin == DTP_ORIGIN_OP_OUTPUT && vw_fact_combined(m, &o->chain[own]) < 2))) {
        /* where the program holds it by a name (MEAN = torch.tensor(...).view(...)), the move goes after that
         * statement (never-moved): only temporaries all the way back */
        const struct vw_step *t = &o->chain[own];
        if (!rl_has_code(m, t) || !vw_src_at(m, t->site.file, t->site.line, &src)) return 0;
        if ((src.binds[0] || src.binds_attr[0]) &&
            (t->origin != DTP_ORIGIN_VIEW || !in_failing_statement(m, k, t, &src)))
            return 0;
        own++;
    }
    const struct vw_step *s = &o->chain[own];
    if (s->origin != DTP_ORIGIN_FACTORY || !rl_has_code(m, s) || !vw_src_at(m, s->site.file, s->site.line, &src))
        return 0;
    const struct vw_src_call *c = rl_making_call(&src, s);
    struct vw_frame cb;
    if (!c || !c->temporary || c->device[0]) return 0;
    /* made in a function a library called back (a DataLoader's collate_fn): the batch goes to the device in
     * the program's loop, not in the loader (library-callback) */
    if (vw_fact_callback_caller(m, s, k->pystack, &cb)) return 0;
    /* made in a function that has no device of its own to follow and returned it: .to() on its call, in the
     * caller, where one is bound */
    if (rl_move_at_call_site(m, k, fx, s)) return 1;
    char expr[160], arg[200];
    vw_device_expr(m, k, k->want, &s->site, expr, sizeof expr);
    /* a factory that takes no device (torch.from_numpy, the legacy torch.Tensor): .to(EXPR) on its call */
    if (dt_op_takes_no_device(s->what) && rl_is_python(s) && c->end_col > 0 &&
        vw_shape_device_code(expr)) {
        struct vw_edit *e = &fx->edits[fx->nedits++];
        rl_at(fx, s);
        fx->replace = 1;
        fx->kind = VW_FIX_MOVE_CALL;
        e->line = c->end_line;
        e->col = c->end_col;
        vw_code_call_to(c->func, expr, e->text, sizeof e->text, fx->code, sizeof fx->code);
        fx->words.say = VW_SAY_TEMPORARY_MOVE;
        fx->words.at = *s;
        snprintf(fx->words.func, sizeof fx->words.func, "%s", c->func);
        snprintf(fx->words.text, sizeof fx->words.text, ".to(%s)", expr);
        rl_evidence(fx, "made by %s, a temporary inside a larger expression, which takes no device", c->func);
        rl_evidence(fx, "never moved");
        return 1;
    }
    /* the argument as the language writes it (C++: the device as the factory's options, none already there) */
    if (!vw_code_device_arg(m, &s->site, s->site.line, c->func, c->has_args, c->trailing_comma, expr, arg, sizeof arg))
        return 0;
    const char *shown = arg + (arg[0] == ',' ? 2 : 0);
    rl_at(fx, s);
    fx->words.say = VW_SAY_TEMPORARY_DEVICE;
    fx->words.at = *s;
    snprintf(fx->words.func, sizeof fx->words.func, "%s", c->func);
    snprintf(fx->words.text, sizeof fx->words.text, "%s", shown);
    fx->replace = 1;
    fx->kind = VW_FIX_DEVICE_ARG;
    vw_code_call_arg_shown(c->func, shown, fx->code, sizeof fx->code);
    rl_evidence(fx, "made by %s, a temporary inside a larger expression", c->func);
    if (own) rl_evidence(fx, "then %s", o->chain[0].what);
    rl_evidence(fx, "never moved");
    /* that call, and the calls of the same factory in the same statement without a device (an LSTM's (h0, c0)
     * made inline): each gets device= before its closing parenthesis */
    int more = 0;
    for (int l = src.first; l <= src.last && fx->nedits < (int)(sizeof fx->edits / sizeof fx->edits[0]); l++) {
        struct vw_src ls;
        if (!vw_src_at(m, s->site.file, l, &ls)) continue;
        for (int i = 0; i < ls.ncalls && fx->nedits < (int)(sizeof fx->edits / sizeof fx->edits[0]); i++) {
            const struct vw_src_call *d = &ls.calls[i];
            if (strcmp(d->func, c->func) || !d->temporary || d->device[0] || d->end_col < 1) continue;
            struct vw_edit *e = &fx->edits[fx->nedits];
            if (!vw_code_device_arg(m, &s->site, l, d->func, d->has_args, d->trailing_comma, expr, e->text,
                                    sizeof e->text))
                continue;
            fx->nedits++;
            e->line = d->end_line;
            e->col = d->end_col - 1; /* before the closing parenthesis */
            more += !(d->end_line == c->end_line && d->end_col == c->end_col);
        }
    }
    if (!fx->nedits) return 0;
    if (more) {
        fx->words.count = more;
        rl_evidence(fx, "%d more %s call%s in the statement without device=", more, c->func, more == 1 ? "" : "s");
    }
    return 1;
}

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) {
    /* a tensor a module's constructor keeps (self.mask = mask) goes with the module as its buffer: device= at
     * its factory would pin one device into code that must run on any (plain-attribute) */
    struct vw_fix probe;
    memset(&probe, 0, sizeof probe);
    if (rl_unmoved_match(cx, RL_UNMOVED_PLAIN_ATTRIBUTE, &probe) && probe.kind == VW_FIX_REGISTER_BUFFER) return 0;
    /* a module's parameter made by a factory inside the registration (register_parameter("w", torch::zeros(n))
     * in a C++ module's constructor): the module is moved where the program makes it, not the factory given a
     * device inside model code (module-never-moved) */
    memset(&probe, 0, sizeof probe);
    if (rl_unmoved_match(cx, RL_UNMOVED_MODULE, &probe) && probe.code[0]) return 0;
    return match_case(cx->m, cx->k, fx);
}

const struct vw_rule vw_rule_temporary_in_expression = {
    .id = "temporary-in-expression",
    .summary = "a factory's result made inside a larger expression (or returned by a helper as it is), never moved: "
               "only `device=` at the call can fix it",
    .doc = "A tensor made by a factory inside a larger expression (an index made with torch.arange inside an "
           "embedding call, an LSTM's h0 and c0 made inline) has no name a later line could move; factories make "
           "on the CPU unless given a device. The rule matches an odd operand made by a factory call that the "
           "source facts record as a temporary without a device= argument, back through views, in-place moves "
           "and ops of one tensor each that the program holds by no name either, and not made in a function a "
           "library called back. Example: self.pos(torch.arange(x.size(1))) in a forward on the GPU. Fix: "
           "device= added to that call, and to every call of the same factory in the statement without one; "
           "where the call is in a helper's return statement and the helper has no device of its own to follow "
           "(no device expression or peer tensor bound there) while its caller has, .to() on the helper's call "
           "in the caller instead (scores + causal_mask(n).to(scores.device)).",
    .example = "`emb(torch.arange(n))` inside a forward on the GPU; `return torch.log(torch.tril(torch.ones(sz, "
               "sz)))` (`bug_mask_helper.py`); a causal mask helper given only a length "
               "(`tests/rules/temporary-in-expression.in-callee.py`)",
    .fixes = 1u << VW_FIX_DEVICE_ARG | 1u << VW_FIX_MOVE_CALL,
    .langs = VW_LANGS_PY,
    .match = match,
};
