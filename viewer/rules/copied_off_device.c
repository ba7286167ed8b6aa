/* copied-off-device: the odd operand reached its device by a copy (.cpu() for a metric, a copy to the wrong GPU), and
 * that copy is the mistake. */
#include "rule.h"
#include "validate.h"

#include <stdio.h>
#include <stdlib.h>

/* The copy `.cpu()` (no argument) that c is, taken out of its statement at a: the fix that holds on any device
 * (used where the program has no device expression for a move back: library and model code). */
static int drop_copy(const struct vw_case *k, struct vw_fix *fx, const struct vw_step *a, const struct vw_src_call *c,
                     const char *why) {
    size_t kept = c ? vw_src_call_method(c, DT_METHOD_COPY_CPU) : 0;
    if (k->want == 0 || !c || c->has_args || !kept || c->end_col < (int)strlen("." DT_METHOD_COPY_CPU "()") ||
        fx->nedits)
        return 0;
    struct vw_edit *e = &fx->edits[fx->nedits++];
    rl_at(fx, a);
    fx->before = 0;
    fx->replace = 1;
    e->line = c->end_line;
    e->del = (int)strlen("." DT_METHOD_COPY_CPU "()");
    e->col = c->end_col - e->del;
    fx->kind = VW_FIX_DROP_COPY;
    vw_code_drop_call(c->func, kept, fx->code, sizeof fx->code);
    rl_evidence(fx, "the copy %s() taken out: %s", c->func, why);
    return 1;
}

/* The copy's call in its statement: on the frame's line, or (a call that spans lines: x = f(\n...\n).cpu(),
 * whose frame names the line of its .cpu) on an earlier line of the statement, ending at or after the frame's
 * line; copied into *out. */
static const struct vw_src_call *copy_call(struct vw_model *m, const struct vw_step *a, struct vw_src_call *out) {
    struct vw_src src, ls;
    if (!rl_is_python(a) || !vw_src_at(m, a->site.file, a->site.line, &src)) return NULL;
    const struct vw_src_call *c = rl_making_call(&src, a);
    if (c) return *out = *c, out;
    for (int l = a->site.line - 1; l >= src.first && l > a->site.line - 64; l--) {
        if (!vw_src_at(m, a->site.file, l, &ls) || ls.first != src.first) break;
        c = rl_making_call(&ls, a);
        if (c && c->end_line >= a->site.line) return *out = *c, out;
    }
    return NULL;
}

/* A .cpu() of a tensor on the intended device, copied in a function (not at a file's top level, whose copy may
 * serve the rest of the script): taken out, where a move back right after it would be the alternative. */
static int drop_copy_in_function(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx,
                                 const struct vw_step *a, const char *why) {
    struct vw_src_call cc;
    return a->from_dev == k->want && strcmp(a->site.function, DT_PY_TOP_LEVEL) &&
           drop_copy(k, fx, a, copy_call(m, a, &cc), why);
}

#define NO_EXPR "no device expression of the program is in scope for a move back"

/* copied-off-device: it reached its device by a copy, and that copy is the mistake. */
static int match_case(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_step *a = &k->odd->chain[k->odd->arrived];
    char d1[32], d2[32];
    if (a->origin != DTP_ORIGIN_TRANSFER) return 0;
    rl_at(fx, a);
    rl_dev_name(k->want, d1);
    fx->words.say = k->odd->dev == 0 ? VW_SAY_COPIED_OFF_DEVICE : VW_SAY_COPIED_ELSEWHERE;
    fx->words.at = *a; /* the copy, cited where the fix is elsewhere */
    rl_evidence(fx, "copied to %s by %s, and used there", rl_dev_name(k->odd->dev, d2), a->what);
    struct vw_src src;
    struct vw_src_call cc;
    const struct vw_src_call *c;
    char expr[160];
    if (rl_is_python(a) && vw_src_at(m, a->site.file, a->site.line, &src) && (c = rl_making_call(&src, a)) &&
        c->temporary && c->end_col > 0) {
        /* the copy is a temporary inside an expression (loss(output.cpu(), target)): take the copy out there,
         * or bring it back at once */
        struct vw_edit *e = &fx->edits[fx->nedits++];
        size_t kept = vw_src_call_method(c, DT_METHOD_COPY_CPU);
        fx->replace = 1;
        e->line = c->end_line;
        if (k->want != 0 && !c->has_args && kept && c->end_col >= (int)strlen("." DT_METHOD_COPY_CPU "()")) {
            e->del = (int)strlen("." DT_METHOD_COPY_CPU "()");
            e->col = c->end_col - e->del;
            fx->kind = VW_FIX_DROP_COPY;
            vw_code_drop_call(c->func, kept, fx->code, sizeof fx->code);
        } else {
            vw_device_expr(m, k, k->want, &a->site, expr, sizeof expr);
            e->col = c->end_col;
            fx->kind = VW_FIX_MOVE_CALL;
            vw_code_call_to(c->func, expr, e->text, sizeof e->text, fx->code, sizeof fx->code);
        }
        rl_evidence(fx, "the copy %s() is a temporary inside the expression at line %d", c->func, a->site.line);
        return 1;
    }
    if (rl_ident(k->odd->name) && rl_is_python(a) && rl_is_python(&k->call) &&
        (strcmp(a->site.file, k->call.site.file) || !vw_same_function(a->site.function, k->call.site.function)) &&
        vw_src_at(m, a->site.file, a->site.line, &src) && src.binds[0] && !strchr(src.binds, ',')) {
        /* copied in a function that returned it (a batch helper called by training and evaluation, a module's
         * forward): a .cpu() of a tensor on the intended device is taken out there (what a move back right
         * after it would do, with no device expression); another copy, or one at a file's top level (which
         * returns nothing), is moved back right there, by the name it has there */
        if (drop_copy_in_function(m, k, fx, a, "the function returned the copy, which left the device")) return 1;
        vw_device_expr(m, k, k->want, &a->site, expr, sizeof expr);
        if (vw_shape_device_literal(expr) && drop_copy(k, fx, a, copy_call(m, a, &cc), NO_EXPR)) return 1;
        vw_code_move(m, &a->site, src.binds, expr, fx->code, sizeof fx->code);
        fx->kind = VW_FIX_MOVE_AFTER;
        rl_evidence(fx, "copied in %s, which returned it", a->site.function);
        return 1;
    }
    /* native code: copied in another function than the failing call's (a helper that sends a batch to a device
     * and returns it): brought back right where the copy is made, by the name its statement binds, so that the
     * helper's every caller gets it there; not in the caller, which has no copy to fix */
    enum vw_lang al = a->has_site ? vw_code_lang(m, &a->site) : VW_LANG_NONE;
    if ((al == VW_LANG_C || al == VW_LANG_CXX) && k->call.has_site &&
        (strcmp(a->site.file, k->call.site.file) || !vw_same_function(a->site.function, k->call.site.function)) &&
        vw_src_at(m, a->site.file, a->site.line, &src) && src.binds[0] && !strchr(src.binds, ',')) {
        struct vw_fix at = *fx;
        if (rl_code_for(m, k, &at, NULL, src.binds)) {
            *fx = at;
            rl_evidence(fx, "copied in %s, which binds it to \"%s\"", a->site.function, src.binds);
            return 1;
        }
    }
    /* the program's name for it at the failing call: a native call's argument, else the tensor's name */
    char nat[256];
    enum vw_lang cl = k->call.has_site ? vw_code_lang(m, &k->call.site) : VW_LANG_NONE;
    const char *oname =
        cl == VW_LANG_C || cl == VW_LANG_CXX ? vw_code_operand_name(m, k, k->odd, nat, sizeof nat) : k->odd->name;
    if (k->odd->dev == 0 && rl_ident(oname) && rl_has_code(m, &k->call) &&
        vw_src_at(m, k->call.site.file, k->call.site.line, &src)) {
        /* the copy off the device is kept for what it was made for (a metric, a log); the op that failed
         * gets the device's tensor back right before it */
        vw_device_expr(m, k, k->want, &k->call.site, expr, sizeof expr);
        /* a copy nothing used before the failing op served nothing else: it goes (as it goes where the
         * program has no device expression for a move back) */
        int64_t chain[VW_MAX_STEPS];
        for (int i = 0; i < k->odd->arrived && i < VW_MAX_STEPS; i++) chain[i] = k->odd->chain[i].tensor;
        int unused = !vw_fact_used_between(m, a->tensor, a->seq, k->seq, k->op, chain, k->odd->arrived,
                                              k->call.has_site ? &k->call.site : NULL);
        if ((vw_shape_device_literal(expr) || unused) &&
            drop_copy(k, fx, a, copy_call(m, a, &cc), unused ? "nothing used it before the failing op" : NO_EXPR))
            return 1;
        rl_at(fx, &k->call);
        fx->before = 1;
        vw_code_move(m, &k->call.site, oname, expr, fx->code, sizeof fx->code);
        fx->kind = VW_FIX_MOVE_BEFORE;
        rl_evidence(fx, "\"%s\" is used on %s right after", oname, d1);
        return 1;
    }
    /* else a move back right after the copy: in a function, a .cpu() of a tensor on the intended device is taken
     * out instead (the same, with no device expression) */
    if (drop_copy_in_function(m, k, fx, a, "a move back right after it would undo it")) return 1;
    vw_device_expr(m, k, k->want, &a->site, expr, sizeof expr);
    if (vw_shape_device_literal(expr) && drop_copy(k, fx, a, copy_call(m, a, &cc), NO_EXPR))
        return 1;
    rl_code_for_odd(m, k, fx, k->odd->name);
    return 1;
}

/* The odd operand (or what it was computed from) was made by a factory given a device (device=device), which was
 * the odd one: that expression follows a tensor (device=h.device, or a parameter its caller handed h.device) the
 * program copied off the device. The copy is the mistake: fixed there, as that tensor's (a move of the factory's
 * result with the same expression would move it nowhere). */
static int device_followed_copy(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_operand *o = k->odd;
    /* the oldest step of the chain made by a factory given a device, only: what the rest was computed from */
    for (int i = o->nsteps - 1; i >= 0; i--) {
        const struct vw_step *s = &o->chain[i];
        struct vw_src src, def, cs;
        const struct vw_src_call *c;
        if (s->origin != DTP_ORIGIN_FACTORY || s->dev != o->dev || !rl_is_python(s) ||
            !vw_src_at(m, s->site.file, s->site.line, &src) || !(c = rl_making_call(&src, s)) || !c->device[0])
            continue;
        /* the name whose .device it is: on the factory's line, or on its caller's that handed the parameter */
        char name[64] = "";
        struct vw_frame caller;
        if (src.ndevice_of == 1)
            snprintf(name, sizeof name, "%s", src.device_of[0]);
        else if (rl_ident(c->device) && src.function_line > 0 && vw_src_at(m, s->site.file, src.function_line, &def) &&
                 vw_list_has(def.params, c->device) && vw_fact_caller_of(m, s, &caller) &&
                 vw_src_at(m, caller.file, caller.line, &cs) && cs.ndevice_of == 1)
            snprintf(name, sizeof name, "%s", cs.device_of[0]);
        int64_t t = rl_ident(name) ? vw_tensor_named(m, name, k->seq + 1) : 0;
        struct vw_operand *f = t ? calloc(1, sizeof *f) : NULL;
        if (!f) return 0;
        int found = 0;
        if (vw_operand_of(m, f, t, name, k->seq + 1) && f->dev == o->dev &&
            f->chain[f->arrived].origin == DTP_ORIGIN_TRANSFER && f->chain[f->arrived].from_dev == k->want) {
            struct vw_case k2 = *k;
            f->odd = 1;
            k2.odd = f;
            found = match_case(m, &k2, fx);
            if (found) {
                fx->words.say = VW_SAY_DEVICE_FOLLOWED_COPY;
                snprintf(fx->words.name, sizeof fx->words.name, "%s", name);
                snprintf(fx->words.expr, sizeof fx->words.expr, "%s", c->device);
                fx->words.at = f->chain[f->arrived];
                fx->words.at2 = *s;
                rl_evidence(fx, "made by %s with device=%s, which follows \"%s\"", c->func, c->device, name);
            }
        }
        free(f);
        return found;
    }
    return 0;
}

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) {
    return match_case(cx->m, cx->k, fx) || device_followed_copy(cx->m, cx->k, fx);
}

const struct vw_rule vw_rule_copied_off_device = {
    .id = "copied-off-device",
    .summary = "copied to another device (`.cpu()` for a metric, the wrong GPU) and used there",
    .doc = "A copy off the device made for logging or a metric (.cpu(), .numpy() round trips) or to the wrong "
           "GPU is fine until the copy, not the original, is used in the computation. The rule matches an odd "
           "operand whose chain reached its device by a transfer. Example: pred = model(x).cpu() to log it, then "
           "mse_loss(pred, target) with target on the GPU. Fix, by where the copy is: inside the failing "
           "expression, the .cpu() taken out (or .to(device) on the copy); in a function that returned it (a "
           "batch helper, a module's forward), the .cpu() of a tensor on the intended device taken out there, "
           "another copy moved back where the function binds it; kept for what it was made for, the device's tensor moved back right "
           "before the failing statement; else a move after the copy. Where nothing used the copy before the failing "
           "op (a call that returned the copy itself, x.float() of a float tensor, took it for its shape only, "
           "y.expand_as(copy), or copied it into another tensor, state.copy_(copy), is no use), or the program has no device expression in scope for the move back "
           "(model and library code that must run on any device), the .cpu() is taken out instead. A tensor made by "
           "a factory given a device that was the odd one (device=h.device, or a device parameter its caller "
           "handed h.device) follows a tensor the program copied off the device: that copy is fixed the same way.",
    .example = "`pred = model(x).cpu()` for a metric, then `mse_loss(pred, target)` (`bug_cpu_roundtrip.py`)",
    .fixes = 1u << VW_FIX_ADVICE | 1u << VW_FIX_MOVE_AFTER | 1u << VW_FIX_MOVE_BEFORE | 1u << VW_FIX_MOVE_CALL |
             1u << VW_FIX_DROP_COPY,
    .langs = VW_LANGS_PY_C,
    .match = match,
};
