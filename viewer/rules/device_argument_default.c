/* device-argument-default: the program moved the tensor itself and the move did nothing, because its device expression
 * is a parameter, with a default (the cpu), that the call left in place. */
#include "rule.h"

#include <stdio.h>

/* device-argument-default: the program moved the tensor itself (x.to(device)) and the move did nothing: its
 * device expression is a parameter of the function it is in, with a default (device="cpu"), and the call of
 * that function passed none; the call passes the program's device. */
static int match_case(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_operand *o = k->odd;
    struct vw_frame at, caller;
    struct vw_src src, def, cs;
    if (!o->nsteps || !vw_fact_idle_move(m, o, k->seq, &at, &caller) || !vw_src_at(m, at.file, at.line, &src) ||
        !rl_ident(src.device_expr) || !src.function_line || !vw_src_at(m, at.file, src.function_line, &def))
        return 0;
    /* the parameter's default: "NAME=DEFAULT" among the def line's, tab-separated */
    char dflt[128] = "";
    size_t pl = strlen(src.device_expr);
    for (const char *p = def.defaults; p && *p; p = strchr(p, '\t') ? strchr(p, '\t') + 1 : NULL)
        if (!strncmp(p, src.device_expr, pl) && p[pl] == '=') {
            snprintf(dflt, sizeof dflt, "%.*s", (int)strcspn(p + pl + 1, "\t"), p + pl + 1);
            break;
        }
    if (!dflt[0] || !vw_src_at(m, caller.file, caller.line, &cs)) return 0;
    /* the caller's call of that function ("load_cora" for "load_cora", "Net.load" for "self.load") */
    const char *fn = strrchr(at.function, '.') ? strrchr(at.function, '.') + 1 : at.function;
    const struct vw_src_call *c = NULL;
    for (int i = 0; i < cs.ncalls && !c; i++) {
        const char *f = cs.calls[i].func, *last = strrchr(f, '.') ? strrchr(f, '.') + 1 : f;
        if (!strcmp(last, fn) && !cs.calls[i].device[0] && cs.calls[i].end_col > 0) c = &cs.calls[i];
    }
    if (!c) return 0;
    char d1[32], d2[32], expr[160];
    vw_device_expr(m, k, k->want, &caller, expr, sizeof expr);
    rl_at_frame(fx, &caller, k->seq);
    fx->replace = 1;
    fx->kind = VW_FIX_PASS_DEVICE;
    struct vw_edit *e = &fx->edits[fx->nedits++];
    e->line = c->end_line;
    e->col = c->end_col - 1; /* before the closing parenthesis */
    vw_code_keyword_arg(c->func, src.device_expr, expr, c->has_args, c->trailing_comma, e->text, sizeof e->text,
                        fx->code, sizeof fx->code);
    fx->words.say = VW_SAY_PASS_DEVICE;
    snprintf(fx->words.func, sizeof fx->words.func, "%s", c->func);
    snprintf(fx->words.expr, sizeof fx->words.expr, "%s", src.device_expr);
    snprintf(fx->words.text, sizeof fx->words.text, "%s", dflt);
    fx->words.frame = caller;
    fx->words.frame2 = at;
    rl_dev_name(o->dev, d2);
    rl_evidence(fx, "moved with .to(%s) at line %d, which left it on %s", src.device_expr, at.line, d2);
    rl_evidence(fx, "%s's parameter %s defaults to %s", at.function, src.device_expr, dflt);
    rl_evidence(fx, "the call at line %d passes no %s; the program's device is %s", caller.line, src.device_expr,
                rl_dev_name(k->want, d1));
    return 1;
}

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) { return match_case(cx->m, cx->k, fx); }

const struct vw_rule vw_rule_device_argument_default = {
    .id = "device-argument-default",
    .summary = "moved by the program with a function's device parameter, whose default (the cpu) the call left in "
               "place: pass the device at the call",
    .doc = "A helper that takes a device parameter with a default (def load(path, device=\"cpu\")) and moves its "
           "tensors with it does nothing when the caller passes no device. The rule matches a move the program "
           "wrote that moved nothing (x.to(device) where device held the tensor's own device), whose device "
           "expression is a parameter of its function with a default, and a call of that function that passes no "
           "such argument. Example: load_cora(device=\"cpu\") called as load_cora(). Fix: the program's device "
           "passed at that call (load_cora(..., device=device)).",
    .example = "`load_cora(device='cpu')` called as `load_cora()` (`tests/rules/device-argument-default.py`)",
    .fixes = 1u << VW_FIX_PASS_DEVICE,
    .langs = VW_LANGS_PY,
    .match = match,
};
