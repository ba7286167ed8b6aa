/* The pieces every rule writes its fix with: the advice and its evidence, where the fix goes, what the advice
 * calls a tensor, and the moves of a named tensor where the program binds that name (the code itself is
 * code.c's). No rule lives here; the rules are the other files of viewer/rules/, listed by registry.c. */
#include "rule.h"
#include "trace_schema.h"
#include "validate.h"

#include <stdarg.h>
#include <stdio.h>

void rl_say(struct vw_fix *fx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fx->text, sizeof fx->text, fmt, ap);
    va_end(ap);
}

void rl_also(struct vw_fix *fx, const char *fmt, ...) {
    size_t k = strlen(fx->text);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fx->text + k, sizeof fx->text - k, fmt, ap);
    va_end(ap);
}

/* A fact the rule used, as evidence in the report. */
void rl_evidence(struct vw_fix *fx, const char *fmt, ...) {
    if (fx->nevidence >= VW_MAX_EVIDENCE) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fx->evidence[fx->nevidence++], sizeof fx->evidence[0], fmt, ap);
    va_end(ap);
}

void rl_at(struct vw_fix *fx, const struct vw_step *s) {
    fx->site = *s;
    fx->has_site = s->has_site;
}

void rl_at_frame(struct vw_fix *fx, const struct vw_frame *f, int64_t seq) {
    memset(&fx->site, 0, sizeof fx->site);
    fx->site.site = *f;
    fx->site.seq = seq;
    fx->site.origin = -1;
    fx->has_site = fx->site.has_site = 1;
}

const char *rl_dev_name(int64_t dev, char *buf) { return vw_device_name(dev, buf, 32); }

const char *rl_site_str(const struct vw_step *s, char *buf, size_t size) {
    return s->has_site ? vw_site_str(&s->site, buf, size) : "?";
}

int rl_ident(const char *s) {
    if (!s || !*s || (*s >= '0' && *s <= '9')) return 0;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9'))) return 0;
    return 1;
}

int rl_is_python(const struct vw_step *s) { return s->has_site && s->site.python; }

/* A site whose language's code the fix can write (code.c): Python, or native code with source facts. */
int rl_has_code(struct vw_model *m, const struct vw_step *s) {
    return s->has_site && vw_code_lang(m, &s->site) != VW_LANG_NONE;
}

/* The name a tensor of the chain went by in the program, or "". */
const char *rl_step_name(struct vw_model *m, const struct vw_case *k, const struct vw_step *s, char *buf, size_t size) {
    return vw_tensor_name(m, s->tensor, k->seq, buf, size);
}

/* The call on the line that made s that made it (a factory the producer saw, its name the step's), from the
 * source facts; NULL when none is known. */
const struct vw_src_call *rl_making_call(const struct vw_src *src, const struct vw_step *s) {
    return vw_src_making_call(src, s);
}

/* The last statement from line `from` up to (not including) line `to` of at's function in `file` that binds
 * `name` again, `base` + 400 lines at most; with `blocks`, one inside a branch or loop that closes before `to`
 * (a later statement less indented) does not count. Its first line and indentation, or 0. */
static int last_rebinding(struct vw_model *m, const char *file, const struct vw_src *at, int from, int to, int base,
                          const char *name, int blocks, size_t *indent) {
    struct vw_src src;
    int again = 0;
    for (int l = from; l < to && l - base < 400; l++) {
        if (!vw_src_at(m, file, l, &src) || src.first != l || strcmp(src.function, at->function)) continue;
        if (blocks && again && strlen(src.indent) < *indent) again = 0; /* out of its block before `to` */
        if (vw_src_binds(&src, name)) again = l, *indent = strlen(src.indent);
    }
    return again;
}

/* Native code: a statement of site's function after site and before k's failing call (in that function) binds
 * `name` again: what the name holds at site is not what reaches the failing op. */
static int rebound_before_call(struct vw_model *m, const struct vw_case *k, const struct vw_frame *site,
                               const char *name) {
    if (!k->call.has_site || strcmp(k->call.site.file, site->file) ||
        !vw_same_function(k->call.site.function, site->function) || k->call.site.line <= site->line)
        return 0;
    struct vw_src at;
    size_t indent = 0;
    return vw_src_at(m, site->file, site->line, &at) &&
           last_rebinding(m, site->file, &at, at.last + 1, k->call.site.line, site->line, name, 0, &indent);
}

/* Python: the last statement after the fix's site (from the site's own statement when the code goes before
 * it), up to the failing call's statement in the fix's function (the frame of its stack there), that binds
 * `name` again and reaches that call (no statement between them is less indented: not in a branch or a loop
 * that ends before it), when it is no step of the odd operand's chain, there or in a function it called (a view
 * or an op of it computes from the moved value): what the name holds at the site is not what it holds at the
 * failing call. Its first line, or 0. */
static int py_rebound_after(struct vw_model *m, const struct vw_case *k, const struct vw_fix *fx, const char *name) {
    const struct vw_frame *site = &fx->site.site;
    struct vw_frame f;
    int64_t id = k->pystack, next;
    int call = 0;
    for (int depth = 0; id && depth < 256 && !call && vw_sym_py_frame(m->sym, id, &f, &next); depth++, id = next)
        if (!f.hidden && !strcmp(f.file, site->file) && !strcmp(f.function, site->function)) call = f.line;
    struct vw_src at, src, c;
    if (!call || !vw_src_at(m, site->file, site->line, &at) || !vw_src_at(m, site->file, call, &c) ||
        c.first <= at.first)
        return 0;
    size_t indent = 0;
    int again = last_rebinding(m, site->file, &at, fx->before ? at.first : at.last + 1, c.first, at.first, name, 1,
                               &indent);
    if (!again || strlen(c.indent) < indent || !vw_src_at(m, site->file, again, &src)) return 0;
    const struct vw_operand *o = k->odd;
    for (int i = 0; i < o->nsteps; i++) {
        if (o->chain[i].has_site && !strcmp(o->chain[i].site.file, site->file) && o->chain[i].site.line >= src.first &&
            o->chain[i].site.line <= src.last)
            return 0;
        /* or made in a function that statement called (a padding helper returning the padded value) */
        id = o->chain[i].pystack;
        for (int depth = 0; id && depth < 256 && vw_sym_py_frame(m->sym, id, &f, &next); depth++, id = next)
            if (!f.hidden && !strcmp(f.file, site->file) && !strcmp(f.function, site->function) &&
                f.line >= src.first && f.line <= src.last)
                return 0;
    }
    return again;
}

/* The line of Python that moves `name` to the intended device, added after the fix's statement: written only
 * where the program binds that name at the fix (its statement, or one from where the tensor was made down to
 * the fix, in the same function), as the source facts say. 1 when written. */
int rl_code_for(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const struct vw_step *own,
                const char *name) {
    if (!rl_ident(name) || !rl_has_code(m, &fx->site)) return 0;
    struct vw_src src;
    int bound = vw_src_at(m, fx->site.site.file, fx->site.site.line, &src) && vw_src_binds(&src, name);
    if (!bound && own && rl_has_code(m, own) && !strcmp(own->site.file, fx->site.site.file) &&
        vw_same_function(own->site.function, fx->site.site.function) && own->site.line <= fx->site.site.line &&
        fx->site.site.line - own->site.line < 64)
        for (int l = own->site.line; l < fx->site.site.line && !bound; l++)
            bound = vw_src_at(m, own->site.file, l, &src) && vw_src_binds(&src, name);
    /* C and C++: declared earlier, still in scope, and not bound again before the failing call (a variable
     * declared first and assigned the tensor later holds something else at the site: the move goes after that
     * assignment, rl_code_at_binding's) */
    if (!bound && vw_code_in_scope(m, &fx->site.site, name) && !rebound_before_call(m, k, &fx->site.site, name))
        bound = vw_src_at(m, fx->site.site.file, fx->site.site.line, &src);
    if (!bound) return 0;
    /* Python: bound again before the failing call (model = make_model() after it): the move goes after the last
     * binding that reaches the call, or it moves what the name held before */
    int again = rl_is_python(&fx->site) ? py_rebound_after(m, k, fx, name) : 0;
    if (again) {
        fx->site.site.line = again;
        fx->before = 0;
        rl_evidence(fx, "\"%s\" is bound again at line %d before the failing call", name, again);
        rl_also(fx, "; \"%s\" is bound again at line %d before the failing call: the move goes after that", name,
                again);
        if (!vw_src_at(m, fx->site.site.file, again, &src)) return 0;
    }
    /* the program's own terms: its device expression, or its .cuda() under its own condition */
    char expr[160], guard[208];
    int idiom = vw_code_cuda_idiom(m, k, k->want, &fx->site.site, guard, sizeof guard);
    if (idiom)
        vw_code_cuda_move(name, guard, 0, fx->code, sizeof fx->code);
    else {
        vw_device_expr(m, k, k->want, &fx->site.site, expr, sizeof expr);
        vw_code_move(m, &fx->site.site, name, expr, fx->code, sizeof fx->code);
    }
    if (idiom) rl_evidence(fx, "the program moves with .cuda()%s%s and names no device", guard[0] ? " under " : "",
                           guard);
    fx->kind = VW_FIX_MOVE_AFTER;
    /* the statement unpacked a batch (x, y = batch; for x, y in loader:): the other names it binds that hold
     * tensors on the same device, never moved, go too, or the program fails at the next one */
    if (strchr(src.binds, ',')) {
        char names[256];
        snprintf(names, sizeof names, "%s", src.binds);
        for (char *save = NULL, *n = strtok_r(names, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
            size_t at = strlen(fx->code);
            char line[512];
            if (!strcmp(n, name) || !rl_ident(n) || !vw_fact_unmoved_name(m, n, k->odd->dev, k->seq)) continue;
            if (idiom)
                vw_code_cuda_move(n, guard, 0, line, sizeof line);
            else if (!vw_code_move(m, &fx->site.site, n, expr, line, sizeof line))
                line[0] = 0;
            if (line[0]) snprintf(fx->code + at, sizeof fx->code - at, "\n%s", line);
        }
    }
    return 1;
}

/* code_for at the first statement after the fix's site, in its function and before the failing call when
 * that is in the same function, that binds `name` (real_cpu = data[0] after "for i, data in loader:": the
 * program takes the batch apart with plain Python, which the trace does not see); the fix's site moves there. */
int rl_code_at_binding(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const char *name) {
    if (!rl_ident(name) || !rl_has_code(m, &fx->site)) return 0;
    const struct vw_frame *at = &fx->site.site;
    int stop = at->line + 40;
    if (k->call.has_site && !strcmp(k->call.site.file, at->file) &&
        vw_same_function(k->call.site.function, at->function) && k->call.site.line > at->line)
        stop = k->call.site.line - 1;
    for (int l = at->line + 1; l <= stop; l++) {
        struct vw_src src;
        if (!vw_src_at(m, at->file, l, &src) || src.first != l) continue;
        if (strcmp(src.function, at->function) && !vw_same_function(src.function, at->function)) break;
        if (!vw_src_binds(&src, name)) continue;
        struct vw_fix moved = *fx;
        moved.site.site.line = l;
        if (!rl_code_for(m, k, &moved, NULL, name)) return 0;
        *fx = moved;
        rl_evidence(fx, "\"%s\" is bound at line %d", name, l);
        return 1;
    }
    return 0;
}

/* code_for with the names the odd operand went by: its own, then its chain's up to where it reached its
 * device, then the fix's tensor's, each tried with the line that made it and the one it arrived at. */
void rl_code_for_odd(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const char *first) {
    const struct vw_operand *o = k->odd;
    const struct vw_step *own = o->nsteps ? &o->chain[0] : NULL, *arr = o->nsteps ? &o->chain[o->arrived] : NULL;
    const struct vw_step *owns[2] = {own, arr != own ? arr : NULL};
    /* native code: first the name the failing call passed it by (its argument's text), where the fix binds it
     * or in the first statement after the fix that does; a name of a tensor it was computed from may be bound
     * there after it was computed */
    char arg[256];
    if (!fx->code[0] && vw_code_operand_name(m, k, o, arg, sizeof arg)[0]) {
        for (int w = 0; w < 2 && !fx->code[0]; w++)
            if (owns[w] || !w) rl_code_for(m, k, fx, owns[w], arg);
        if (!fx->code[0]) rl_code_at_binding(m, k, fx, arg);
    }
    for (int w = 0; w < 2 && !fx->code[0]; w++)
        if ((owns[w] || !w) && first && first[0]) rl_code_for(m, k, fx, owns[w], first);
    /* the one name the statement that made it binds to it (h0 = torch.zeros(...)) */
    struct vw_src src;
    for (int w = 0; w < 2 && !fx->code[0]; w++) {
        const struct vw_step *s = owns[w];
        const struct vw_src_call *c;
        if (s && rl_has_code(m, s) && vw_src_at(m, s->site.file, s->site.line, &src) && src.binds[0] &&
            !strchr(src.binds, ',') && src.binds_kind == DT_BINDS_CALL && (c = rl_making_call(&src, s)) &&
            !c->temporary)
            rl_code_for(m, k, fx, s, src.binds);
    }
    int64_t ids[VW_MAX_STEPS + 2];
    int nids = 0;
    ids[nids++] = o->tensor;
    for (int s = 0; s < o->nsteps && s <= o->arrived && nids < VW_MAX_STEPS + 1; s++) ids[nids++] = o->chain[s].tensor;
    if (fx->site.tensor) ids[nids++] = fx->site.tensor;
    for (int i = 0; i < nids && !fx->code[0]; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = ids[j] == ids[i];
        if (seen || !ids[i]) continue;
        char names[8][256];
        int nn = vw_tensor_names(m, ids[i], k->seq, names, 8);
        for (int j = 0; j < nn && !fx->code[0]; j++)
            for (int w = 0; w < 2 && !fx->code[0]; w++)
                if (owns[w] || !w) rl_code_for(m, k, fx, owns[w], names[j]);
    }
    /* native code, last: the failing call reached it through a module's forward (dt_module_forward(model,
     * inputs)); the call's argument that holds it, where the program binds that */
    struct vw_frame bf;
    struct vw_fix moved = *fx;
    if (!fx->code[0] && vw_code_operand_binding(m, k, o, &bf, arg, sizeof arg)[0]) {
        rl_at_frame(&moved, &bf, fx->site.seq);
        if (rl_code_for(m, k, &moved, NULL, arg)) {
            *fx = moved;
            enum vw_say was = fx->words.say;
            fx->words.say = VW_SAY_THROUGH_ARGUMENT;
            snprintf(fx->words.name, sizeof fx->words.name, "%s", arg);
            /* a rule that still writes its own text (the never-moved family) may add to this sentence later:
             * it is written now, and the rule's text goes on from it */
            if (was == VW_SAY_RULE) {
                vw_fix_words(k, fx);
                fx->words.say = VW_SAY_RULE;
            }
            rl_evidence(fx, "the failing call passed it as \"%s\", bound at line %d", arg, bf.line);
        }
    }
}

/* The program's own move of a module or tensor on the line of a move in place (`model.to(device)`,
 * `model.cuda()`), written before the statement that made `made` from what that move took to the device:
 * moved first, what is made from it is made on the device. 1 when written (fx's site, placement and code
 * set). */
int rl_move_first(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const struct vw_step *move,
                  const struct vw_step *made) {
    struct vw_src src;
    struct vw_frame cat;
    if (vw_code_move_first(m, move, made, &cat, fx->code, sizeof fx->code)) { /* C: dt_module_to(model, dev); */
        rl_at_frame(fx, &cat, made->seq);
        fx->before = 1;
        fx->kind = VW_FIX_MOVE_MODEL_FIRST;
        rl_evidence(fx, "the program moves the module at %s:%d", move->site.file, move->site.line);
        return 1;
    }
    if (!rl_is_python(move) || !rl_is_python(made) || !vw_src_at(m, move->site.file, move->site.line, &src)) return 0;
    for (int i = 0; i < src.ncalls; i++) {
        const char *fn = src.calls[i].func;
        size_t rl = vw_src_call_method(&src.calls[i], DT_METHOD_MOVE_TO);
        char obj[128];
        if (!rl) rl = vw_src_call_method(&src.calls[i], DT_METHOD_MOVE_CUDA);
        if (!rl || rl >= sizeof obj) continue;
        snprintf(obj, sizeof obj, "%.*s", (int)rl, fn);
        int plain = 1;
        for (const char *p = obj; *p && plain; p++)
            plain = *p == '.' || *p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9');
        if (!plain || !obj[0] || (obj[0] >= '0' && obj[0] <= '9')) continue;
        /* the statement that made it binds the name itself (model = make_model()): a move before it would move
         * what the name held before, and after it is too late for what it made */
        struct vw_src ms;
        if (rl_ident(obj) && vw_src_at(m, made->site.file, made->site.line, &ms) && vw_src_binds(&ms, obj)) return 0;
        char expr[160] = "";
        /* `model.cuda()`, a move that names no device (an expression found for it would name the module's own
         * parameters, still where they were made before it): the program's move as written, under its condition
         * when it has one, which must be written where the module is made */
        int cuda = !src.calls[i].has_args && vw_src_call_method(&src.calls[i], DT_METHOD_MOVE_CUDA);
        if (cuda && src.guard[0] && !vw_code_guard_usable(m, &made->site, &move->site, src.guard)) return 0;
        if (!cuda) vw_device_expr(m, k, k->want, &move->site, expr, sizeof expr);
        rl_at(fx, made);
        fx->before = 1;
        fx->kind = VW_FIX_MOVE_MODEL_FIRST;
        if (cuda)
            vw_code_cuda_move(obj, src.guard, 1, fx->code, sizeof fx->code);
        else
            vw_code_object_to(obj, expr, fx->code, sizeof fx->code);
        rl_evidence(fx, "the program moves \"%s\" at %s:%d", obj, move->site.file, move->site.line);
        return 1;
    }
    return 0;
}

/* device= added to the call of the factory that made `made` without one (torch.zeros(n) in a list, an
 * accumulator's start): made on the device in the first place, whatever is computed from it follows, and no
 * name is needed to move it. 1 when the edit is written (fx's site and code set). */
int rl_device_at_factory(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const struct vw_step *made) {
    struct vw_src src;
    const struct vw_src_call *c;
    if (made->origin != DTP_ORIGIN_FACTORY || dt_op_takes_no_device(made->what) || !rl_has_code(m, made) ||
        !vw_src_at(m, made->site.file, made->site.line, &src) || !(c = rl_making_call(&src, made)) || c->device[0] ||
        c->end_col < 1)
        return 0; /* (torch.from_numpy takes no device=: refused, the patched program would die of a TypeError) */
    char expr[160], arg[200];
    vw_device_expr(m, k, k->want, &made->site, expr, sizeof expr);
    /* the argument as the language writes it (C++: the device as the factory's options, none already there) */
    if (!vw_code_device_arg(m, &made->site, made->site.line, c->func, c->has_args, c->trailing_comma, expr, arg,
                            sizeof arg))
        return 0;
    rl_at(fx, made);
    fx->replace = 1;
    fx->kind = VW_FIX_DEVICE_ARG;
    struct vw_edit *e = &fx->edits[fx->nedits++];
    e->line = c->end_line;
    e->col = c->end_col - 1; /* before the closing parenthesis */
    snprintf(e->text, sizeof e->text, "%s", arg);
    vw_code_call_arg_shown(c->func, arg, fx->code, sizeof fx->code);
    rl_evidence(fx, "made by %s without device=, at %s:%d", c->func, made->site.file, made->site.line);
    return 1;
}
/* The step where a never-moved operand was made, past in-place moves and (once) views of its base; *view the
 * index of the view when a view's base is where the move goes, else -1. */
int rl_made_at(const struct vw_operand *o, int *view) {
    int own = 0;
    *view = -1;
    for (; own < o->nsteps - 1 && (o->chain[own].origin == -1 || o->chain[own].origin == DTP_ORIGIN_VIEW); own++)
        if (o->chain[own].origin == DTP_ORIGIN_VIEW && *view < 0) *view = own;
    if (*view >= 0 && vw_same_site(&o->chain[*view], &o->chain[own])) { /* made and viewed on one line */
        for (own = 0; own < o->nsteps - 1 && o->chain[own].origin == -1; own++) {
        }
        *view = -1;
    }
    return own;
}

/* The last component of a dotted name ("self._make_mask", "Net._make_mask" -> "_make_mask"). */
static const char *last_part(const char *s) {
    const char *dot = strrchr(s, '.');
    return dot ? dot + 1 : s;
}

/* Python: the odd operand made in a function F that has no device of its own to follow where it made it (no
 * device expression of the program's, no peer bound: a mask helper given only a length) and returned it as the
 * whole value of its return statement (a call or an operator there made it, or the statement binding the one
 * name returned next: not a tuple, and not unpacked by the caller), the program computing nothing from
 * it with other tensors after: .to(EXPR) on the call of F in its caller, where a device expression of the
 * program's or a peer is bound (mask = self._make_mask(n).to(src.device)). `made` is the step of the odd
 * operand's chain where it was made (F's); 1 when written (fx's site, edits, code and words set). */
int rl_move_at_call_site(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const struct vw_step *made) {
    const struct vw_operand *o = k->odd;
    char expr[160];
    /* a helper several places call (training and evaluation) is fixed in it, or the next caller fails */
    if (!rl_is_python(made) || !made->pystack ||
        vw_device_expr_bound(m, k, k->want, &made->site, expr, sizeof expr)[0] || vw_fact_callers(m, made) >= 2)
        return 0;
    /* the newest step of the chain made in F: what F returned, made by the whole value of a return statement */
    int j = 0;
    while (j < o->nsteps && !(o->chain[j].has_site && !strcmp(o->chain[j].site.file, made->site.file) &&
                              !strcmp(o->chain[j].site.function, made->site.function)))
        j++;
    if (j >= o->nsteps) return 0;
    for (int i = 0; i < j; i++) /* after it, views and ops of one tensor each, none combined with another */
        if (o->chain[i].origin != DTP_ORIGIN_VIEW && o->chain[i].origin != -1 &&
            !(o->chain[i].origin == DTP_ORIGIN_OP_OUTPUT && vw_fact_combined(m, &o->chain[i]) < 2))
            return 0;
    const struct vw_step *ret = &o->chain[j];
    struct vw_src rs, cs;
    const struct vw_src_call *rc;
    /* (by a call, or by an operator: rel = (mem - ctx).clamp(-15, 16) + 15) */
    if (!vw_src_at(m, ret->site.file, ret->site.line, &rs) || ((rc = rl_making_call(&rs, ret)) && rc->temporary))
        return 0;
    /* the helper places it by a device expression of its own (.to(device=timesteps.device)): it had a device to
     * follow, which was the wrong one; that is what goes wrong, not the call */
    struct vw_src ms;
    if (rs.device_expr[0] || !vw_src_at(m, made->site.file, made->site.line, &ms) || ms.device_expr[0]) return 0;
    if (!rs.returns) {
        /* bound to one name by the call that made it (mask = torch.ones(...).triu(1)), and the function's next
         * return statement returns that name, not bound again before it */
        if (!rs.binds[0] || strchr(rs.binds, ',') ||
            (rs.binds_kind != DT_BINDS_CALL && rs.binds_kind != DT_BINDS_OTHER))
            return 0;
        int returned = 0;
        for (int l = rs.last + 1; l - rs.last < 200 && !returned; l++) {
            struct vw_src ls;
            char rv[256];
            if (!vw_src_at(m, ret->site.file, l, &ls) || ls.first != l) continue;
            if (strcmp(ls.function, rs.function)) {
                if (vw_src_nested_in(m, ret->site.file, &ls, rs.function)) continue; /* a nested function's */
                return 0;                                                                /* out of the function */
            }
            if (vw_src_binds(&ls, rs.binds) || (ls.returns && (!vw_fact_value(m, ret->site.file, l,
                                                                                DT_FACT_RETURN_VALUE, rv, sizeof rv) ||
                                                                 strcmp(rv, rs.binds))))
                return 0;
            returned = ls.returns;
        }
        if (!returned) return 0;
    }
    /* F's frame on the stack that made it, and the program's frame that called F, right outside it */
    struct vw_frame f, callee, caller;
    int64_t id = made->pystack, next;
    int state = 0;
    for (int depth = 0; id && depth < 64 && state < 2 && vw_sym_py_frame(m->sym, id, &f, &next); depth++, id = next) {
        if (state == 0 && !f.hidden && !f.library) {
            if (strcmp(f.file, made->site.file) || strcmp(f.function, made->site.function)) return 0;
            callee = f, state = 1;
        } else if (state == 1) {
            if (f.hidden || f.library) return 0; /* a library called it back: its result comes back there */
            caller = f, state = 2;
        }
    }
    if (state != 2) return 0;
    /* F returned before the failing call: not on its stack */
    for (id = k->pystack; id && vw_sym_py_frame(m->sym, id, &f, &next); id = next)
        if (!f.hidden && !strcmp(f.file, callee.file) && !strcmp(f.function, callee.function)) return 0;
    if (!vw_device_expr_bound(m, k, k->want, &caller, expr, sizeof expr)[0] || !vw_shape_device_code(expr) ||
        !vw_src_at(m, caller.file, caller.line, &cs))
        return 0;
    /* an operator's result returned as it is: one value, not a tuple the caller unpacks */
    if (!rc && rs.returns && (cs.binds_kind == DT_BINDS_UNPACK || cs.binds_kind == DT_BINDS_TUPLE)) return 0;
    /* the calls of F in the caller's statement: each gets .to(EXPR) after its closing parenthesis */
    const char *fname = last_part(callee.function);
    char first[256] = ""; /* the first call's callee, as written */
    struct vw_edit edits[sizeof fx->edits / sizeof fx->edits[0]];
    char code[sizeof fx->code];
    int n = 0;
    for (int l = cs.first; l <= cs.last && l - cs.first < 64; l++) {
        struct vw_src ls;
        if (!vw_src_at(m, caller.file, l, &ls) || ls.first != cs.first) continue;
        for (int i = 0; i < ls.ncalls; i++) {
            const struct vw_src_call *c = &ls.calls[i];
            if (strcmp(last_part(c->func), fname) || c->end_col < 1) continue;
            if (n >= (int)(sizeof edits / sizeof edits[0])) return 0;
            struct vw_edit *e = &edits[n];
            char shown[sizeof fx->code];
            memset(e, 0, sizeof *e);
            e->line = c->end_line;
            e->col = c->end_col;
            vw_code_call_to(c->func, expr, e->text, sizeof e->text, shown, sizeof shown);
            if (!n++) {
                snprintf(first, sizeof first, "%s", c->func);
                snprintf(code, sizeof code, "%s", shown);
            }
        }
    }
    if (!n || fx->nedits) return 0;
    memcpy(fx->edits, edits, (size_t)n * sizeof edits[0]);
    fx->nedits = n;
    snprintf(fx->code, sizeof fx->code, "%s", code);
    rl_at_frame(fx, &caller, made->seq);
    fx->site.tensor = made->tensor;
    fx->replace = 1;
    fx->kind = VW_FIX_MOVE_CALL;
    fx->words.say = VW_SAY_MOVE_AT_CALL;
    fx->words.at = *made;
    fx->words.frame = caller;
    fx->words.count = n - 1;
    snprintf(fx->words.func, sizeof fx->words.func, "%s", first);
    snprintf(fx->words.expr, sizeof fx->words.expr, "%s", expr);
    rl_evidence(fx, "made in %s, which has no device expression or peer tensor bound there", callee.function);
    rl_evidence(fx, "%s returns it at line %d, to %s (%s:%d)", callee.function, ret->site.line, caller.function,
                caller.file, caller.line);
    rl_evidence(fx, "%s is bound where %s calls it", expr, caller.function);
    return 1;
}
