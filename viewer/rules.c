/* The rules of the diagnosis: one table in priority order (vw_rules), each
 * rule an id, the mechanism it explains, and a match on the model's facts
 * (diag.h) that proposes a fix: where the change goes and, for a Python
 * program whose producer recorded source facts, the code to write there, in
 * the program's own names and device expression. A rule decides on data
 * (origins, devices, sites, names, source facts), never on a message text or
 * on what the report prints. Rendering is report.c's; the patch is
 * source.c's. */
#include "diag.h"
#include "validate.h"

#include <devtrace/probe.h>
#include <stdarg.h>
#include <string.h>

/* ---------------------------------------------------------------- shared pieces */

static void say(struct vw_fix *fx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct vw_fix *fx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fx->text, sizeof fx->text, fmt, ap);
    va_end(ap);
}

static void also(struct vw_fix *fx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void also(struct vw_fix *fx, const char *fmt, ...) {
    size_t k = strlen(fx->text);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fx->text + k, sizeof fx->text - k, fmt, ap);
    va_end(ap);
}

/* A fact the rule used, as evidence in the report. */
static void evidence(struct vw_fix *fx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void evidence(struct vw_fix *fx, const char *fmt, ...) {
    if (fx->nevidence >= VW_MAX_EVIDENCE) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fx->evidence[fx->nevidence++], sizeof fx->evidence[0], fmt, ap);
    va_end(ap);
}

static void at(struct vw_fix *fx, const struct vw_step *s) {
    fx->site = *s;
    fx->has_site = s->has_site;
}

static void at_frame(struct vw_fix *fx, const struct vw_frame *f, int64_t seq) {
    memset(&fx->site, 0, sizeof fx->site);
    fx->site.site = *f;
    fx->site.seq = seq;
    fx->site.origin = -1;
    fx->has_site = fx->site.has_site = 1;
}

static const char *dev_name(int64_t dev, char *buf) { return vw_device_name(dev, buf, 32); }

static const char *site_str(const struct vw_step *s, char *buf, size_t size) {
    return s->has_site ? vw_site_str(&s->site, buf, size) : "?";
}

static int ident(const char *s) {
    if (!s || !*s || (*s >= '0' && *s <= '9')) return 0;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9'))) return 0;
    return 1;
}

static int is_python(const struct vw_step *s) { return s->has_site && !strcmp(s->site.module, "python"); }

/* A site whose language's code the fix can write (code.c): Python, or native code with source facts. */
static int has_code(struct vw_model *m, const struct vw_step *s) {
    return s->has_site && vw_code_lang(m, &s->site) != VW_LANG_NONE;
}

/* What the advice calls the odd operand: its name in the program, else the argument it was passed as
 * ("the tensor passed as 'input'"); never a trace's internal id. */
static const char *called(const struct vw_operand *o, char *buf, size_t size) {
    if (o->name[0])
        snprintf(buf, size, "\"%s\"", o->name);
    else if (o->src_name[0])
        snprintf(buf, size, "\"%.200s\" (passed as '%.60s')", o->src_name, o->arg);
    else
        snprintf(buf, size, "the tensor passed as '%s'", o->arg);
    return buf;
}

/* The name a tensor of the chain went by in the program, or "". */
static const char *step_name(struct vw_model *m, const struct vw_case *k, const struct vw_step *s, char *buf,
                             size_t size) {
    return vw_tensor_name(m, s->tensor, k->seq, buf, size);
}

/* The call on the line that made s that made it (a factory the producer saw, its name the step's), from the
 * source facts; NULL when none is known. */
static const struct vw_src_call *making_call(const struct vw_src *src, const struct vw_step *s) {
    size_t wl = strlen(s->what);
    for (int i = 0; i < src->ncalls; i++) {
        const char *f = src->calls[i].func;
        size_t fl = strlen(f);
        if (wl && fl >= wl && !strcmp(f + fl - wl, s->what) &&
            (fl == wl || f[fl - wl - 1] == '.' || f[fl - wl - 1] == ':'))
            return &src->calls[i];
    }
    return NULL;
}

/* The line of Python that moves `name` to the intended device, added after the fix's statement: written only
 * where the program binds that name at the fix (its statement, or one from where the tensor was made down to
 * the fix, in the same function), as the source facts say. 1 when written. */
static int code_for(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const struct vw_step *own,
                    const char *name) {
    if (!ident(name) || !has_code(m, &fx->site)) return 0;
    struct vw_src src;
    int bound = vw_src_at(m, fx->site.site.file, fx->site.site.line, &src) && vw_src_binds(&src, name);
    if (!bound && own && has_code(m, own) && !strcmp(own->site.file, fx->site.site.file) &&
        vw_same_function(own->site.function, fx->site.site.function) && own->site.line <= fx->site.site.line &&
        fx->site.site.line - own->site.line < 64)
        for (int l = own->site.line; l < fx->site.site.line && !bound; l++)
            bound = vw_src_at(m, own->site.file, l, &src) && vw_src_binds(&src, name);
    if (!bound && vw_code_in_scope(m, &fx->site.site, name)) /* C and C++: declared earlier, still in scope */
        bound = vw_src_at(m, fx->site.site.file, fx->site.site.line, &src);
    if (!bound) return 0;
    char expr[160];
    vw_device_expr(m, k, k->want, &fx->site.site, expr, sizeof expr);
    vw_code_move(m, &fx->site.site, name, expr, fx->code, sizeof fx->code);
    /* the statement unpacked a batch (x, y = batch; for x, y in loader:): the other names it binds that hold
     * tensors on the same device, never moved, go too, or the program fails at the next one */
    if (strchr(src.binds, ',')) {
        char names[256];
        snprintf(names, sizeof names, "%s", src.binds);
        for (char *save = NULL, *n = strtok_r(names, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
            size_t at = strlen(fx->code);
            char line[512];
            if (strcmp(n, name) && ident(n) && vw_fact_unmoved_name(m, n, k->odd->dev, k->seq) &&
                vw_code_move(m, &fx->site.site, n, expr, line, sizeof line))
                snprintf(fx->code + at, sizeof fx->code - at, "\n%s", line);
        }
    }
    return 1;
}

/* code_for at the first statement after the fix's site, in its function and before the failing call when
 * that is in the same function, that binds `name` (real_cpu = data[0] after "for i, data in loader:": the
 * program takes the batch apart with plain Python, which the trace does not see); the fix's site moves there. */
static int code_at_binding(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const char *name) {
    if (!ident(name) || !has_code(m, &fx->site)) return 0;
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
        if (!code_for(m, k, &moved, NULL, name)) return 0;
        *fx = moved;
        evidence(fx, "\"%s\" is bound at line %d", name, l);
        return 1;
    }
    return 0;
}

/* code_for with the names the odd operand went by: its own, then its chain's up to where it reached its
 * device, then the fix's tensor's, each tried with the line that made it and the one it arrived at. */
static void code_for_odd(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const char *first) {
    const struct vw_operand *o = k->odd;
    const struct vw_step *own = o->nsteps ? &o->chain[0] : NULL, *arr = o->nsteps ? &o->chain[o->arrived] : NULL;
    const struct vw_step *owns[2] = {own, arr != own ? arr : NULL};
    /* native code: first the name the failing call passed it by (its argument's text), where the fix binds it
     * or in the first statement after the fix that does; a name of a tensor it was computed from may be bound
     * there after it was computed */
    char arg[256];
    if (!fx->code[0] && vw_code_operand_name(m, k, o, arg, sizeof arg)[0]) {
        for (int w = 0; w < 2 && !fx->code[0]; w++)
            if (owns[w] || !w) code_for(m, k, fx, owns[w], arg);
        if (!fx->code[0]) code_at_binding(m, k, fx, arg);
    }
    for (int w = 0; w < 2 && !fx->code[0]; w++)
        if ((owns[w] || !w) && first && first[0]) code_for(m, k, fx, owns[w], first);
    /* the one name the statement that made it binds to it (h0 = torch.zeros(...)) */
    struct vw_src src;
    for (int w = 0; w < 2 && !fx->code[0]; w++) {
        const struct vw_step *s = owns[w];
        const struct vw_src_call *c;
        if (s && has_code(m, s) && vw_src_at(m, s->site.file, s->site.line, &src) && src.binds[0] &&
            !strchr(src.binds, ',') && !strcmp(src.binds_kind, "call") && (c = making_call(&src, s)) && !c->temporary)
            code_for(m, k, fx, s, src.binds);
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
                if (owns[w] || !w) code_for(m, k, fx, owns[w], names[j]);
    }
    /* native code, last: the failing call reached it through a module's forward (dt_module_forward(model,
     * inputs)); the call's argument that holds it, where the program binds that */
    struct vw_frame bf;
    struct vw_fix moved = *fx;
    if (!fx->code[0] && vw_code_operand_binding(m, k, o, &bf, arg, sizeof arg)[0]) {
        at_frame(&moved, &bf, fx->site.seq);
        if (code_for(m, k, &moved, NULL, arg)) {
            char d1[32], on[300];
            *fx = moved;
            say(fx,
                "move \"%s\" to %s where the program binds it: %s reaches the failing op through the failing "
                "call's argument \"%s\"",
                arg, dev_name(k->want, d1), called(o, on, sizeof on), arg);
            evidence(fx, "the failing call passed it as \"%s\", bound at line %d", arg, bf.line);
        }
    }
}

/* The program's own move of a module or tensor on the line of a move in place (`model.to(device)`,
 * `model.cuda()`), written before the statement that made `made` from what that move took to the device:
 * moved first, what is made from it is made on the device. 1 when written (fx's site, placement and code
 * set). */
static int move_first(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const struct vw_step *move,
                      const struct vw_step *made) {
    struct vw_src src;
    struct vw_frame cat;
    if (vw_code_move_first(m, move, made, &cat, fx->code, sizeof fx->code)) { /* C: dt_module_to(model, dev); */
        at_frame(fx, &cat, made->seq);
        fx->before = 1;
        evidence(fx, "the program moves the module at %s:%d", move->site.file, move->site.line);
        return 1;
    }
    if (!is_python(move) || !is_python(made) || !vw_src_at(m, move->site.file, move->site.line, &src)) return 0;
    for (int i = 0; i < src.ncalls; i++) {
        const char *fn = src.calls[i].func, *dot = strrchr(fn, '.');
        char obj[128];
        if (!dot || (strcmp(dot, ".to") && strcmp(dot, ".cuda")) || (size_t)(dot - fn) >= sizeof obj) continue;
        snprintf(obj, sizeof obj, "%.*s", (int)(dot - fn), fn);
        int plain = 1;
        for (const char *p = obj; *p && plain; p++)
            plain = *p == '.' || *p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9');
        if (!plain || !obj[0] || (obj[0] >= '0' && obj[0] <= '9')) continue;
        char expr[160];
        vw_device_expr(m, k, k->want, &move->site, expr, sizeof expr);
        at(fx, made);
        fx->before = 1;
        snprintf(fx->code, sizeof fx->code, "%s.to(%s)", obj, expr);
        evidence(fx, "the program moves \"%s\" at %s:%d", obj, move->site.file, move->site.line);
        return 1;
    }
    return 0;
}

/* device= added to the call of the factory that made `made` without one (torch.zeros(n) in a list, an
 * accumulator's start): made on the device in the first place, whatever is computed from it follows, and no
 * name is needed to move it. 1 when the edit is written (fx's site and code set). */
static int device_at_factory(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx,
                             const struct vw_step *made) {
    struct vw_src src;
    const struct vw_src_call *c;
    if (made->origin != DTP_ORIGIN_FACTORY || !has_code(m, made) ||
        !vw_src_at(m, made->site.file, made->site.line, &src) || !(c = making_call(&src, made)) || c->device[0] ||
        c->end_col < 1)
        return 0;
    char expr[160], arg[200];
    vw_device_expr(m, k, k->want, &made->site, expr, sizeof expr);
    /* the argument as the language writes it (C++: the device as the factory's options, none already there) */
    if (!vw_code_device_arg(m, &made->site, made->site.line, c->func, c->has_args, c->trailing_comma, expr, arg,
                            sizeof arg))
        return 0;
    at(fx, made);
    fx->replace = 1;
    struct vw_edit *e = &fx->edits[fx->nedits++];
    e->line = c->end_line;
    e->col = c->end_col - 1; /* before the closing parenthesis */
    snprintf(e->text, sizeof e->text, "%s", arg);
    snprintf(fx->code, sizeof fx->code, "%s(..., %s)", c->func, arg + (arg[0] == ',' ? 2 : 0));
    evidence(fx, "made by %s without device=, at %s:%d", c->func, made->site.file, made->site.line);
    return 1;
}

/* A parameter (nn.Parameter in the chain, through views: self.weight.T) of a module the program constructs
 * inside an expression and never moves (self.layers = self.layers + [Layer(a, b)]): .to(device) on that
 * constructor call, the one place the module is held before it is used. 1 when written (fx's rule, site,
 * text and edit set). */
static int module_made_inline(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, int own) {
    const struct vw_operand *o = k->odd;
    int p = -1;
    for (int s = 0; s <= own && s < o->nsteps && p < 0; s++)
        if (!strcmp(o->chain[s].what, "nn.Parameter"))
            p = s;
        else if (o->chain[s].origin != DTP_ORIGIN_VIEW && o->chain[s].origin != -1)
            break;
    struct vw_frame ctor, caller;
    struct vw_src src;
    if (p < 0 || !is_python(&o->chain[p]) || !vw_fact_constructed_at(m, &o->chain[p], &ctor, &caller) ||
        !vw_src_at(m, caller.file, caller.line, &src))
        return 0;
    /* the class whose constructor made it: "Net.<locals>.Layer.__init__" -> "Layer" */
    char cls[256];
    snprintf(cls, sizeof cls, "%.*s", (int)(strlen(ctor.function) - 9), ctor.function);
    const char *short_cls = strrchr(cls, '.') ? strrchr(cls, '.') + 1 : cls;
    const struct vw_src_call *c = NULL;
    for (int i = 0; i < src.ncalls && !c; i++) {
        const char *fn = src.calls[i].func, *last = strrchr(fn, '.') ? strrchr(fn, '.') + 1 : fn;
        if (!strcmp(last, short_cls) && src.calls[i].temporary && src.calls[i].end_col > 0) c = &src.calls[i];
    }
    if (!c) return 0;
    char d1[32], d2[32], expr[160], on[300];
    vw_device_expr(m, k, k->want, &caller, expr, sizeof expr);
    at_frame(fx, &caller, o->chain[p].seq);
    fx->rule = "module-never-moved";
    fx->replace = 1;
    struct vw_edit *e = &fx->edits[fx->nedits++];
    e->line = c->end_line;
    e->col = c->end_col;
    snprintf(e->text, sizeof e->text, ".to(%.150s)", expr);
    snprintf(fx->code, sizeof fx->code, "%.300s(...).to(%.150s)", c->func, expr);
    say(fx,
        "move the %s made inside the expression at %s:%d to %s: %s is its parameter%s, still where it was made, on %s",
        c->func, caller.file, caller.line, dev_name(k->want, d1), called(o, on, sizeof on),
        p ? " (through a view)" : "", dev_name(o->dev, d2));
    evidence(fx, "a parameter (nn.Parameter) made by %s", ctor.function);
    evidence(fx, "%s(...) is called inside an expression at line %d and never moved", c->func, caller.line);
    return 1;
}

/* 1 when bases (a class's bases as written) name torch's module class: "nn.Module", "torch.nn.Module", "Module". */
static int module_base(const char *bases) {
    for (const char *p = bases; (p = strstr(p, "Module")) != NULL; p += 6)
        if ((p == bases || p[-1] == ',' || p[-1] == '.' || p[-1] == ' ') && (p[6] == ',' || !p[6])) return 1;
    return 0;
}

/* The odd operand (or the base it is a view of) was made in the constructor of a class of torch's modules and
 * stored by a later statement of that constructor as a plain attribute (pe = torch.zeros(...); ...; self.pe =
 * pe): a module with no parameter made there has nothing its move takes along to show it, yet the attribute is
 * the module's. It is registered as a buffer right before that statement, so that the module's move moves it.
 * 1 when written (fx's rule, site, text and code set). */
static int attribute_in_init(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, int own) {
    const struct vw_operand *o = k->odd;
    const struct vw_step *made = &o->chain[own];
    struct vw_src src, def;
    size_t fl = strlen(made->site.function);
    if (!is_python(made) || fl <= 9 || strcmp(made->site.function + fl - 9, ".__init__") ||
        !vw_src_at(m, made->site.file, made->site.line, &src) || !src.function_line ||
        !vw_src_at(m, made->site.file, src.function_line, &def) || !module_base(def.class_bases))
        return 0;
    char names[16][256];
    int nn = 0;
    for (int s = 0; s <= own && nn < 12; s++)
        nn += vw_tensor_names(m, o->chain[s].tensor, k->seq, names + nn, 16 - nn > 4 ? 4 : 16 - nn);
    for (int l = src.last + 1; l <= made->site.line + 80; l++) {
        struct vw_src a;
        if (!vw_src_at(m, made->site.file, l, &a) || a.first != l) continue;
        if (strcmp(a.function, made->site.function)) break;
        if (!a.attr_from[0] || strncmp(a.binds_attr, "self.", 5) || strchr(a.binds_attr, ',') ||
            !ident(a.binds_attr + 5))
            continue;
        /* the name it is set from, or the module's attribute by that name ("pos.pe": the recorder names a
         * module's tensors by their path from the program's variable) */
        int held = 0;
        size_t al = strlen(a.binds_attr + 5);
        for (int i = 0; i < nn && !held; i++) {
            size_t nl = strlen(names[i]);
            held = !strcmp(names[i], a.attr_from) ||
                   (nl > al && names[i][nl - al - 1] == '.' && !strcmp(names[i] + nl - al, a.binds_attr + 5));
        }
        if (!held) continue;
        char d1[32], d2[32], on[300];
        struct vw_step site = *made;
        site.site.line = l;
        at(fx, &site);
        fx->rule = "plain-attribute";
        fx->before = 1;
        int again = !strcmp(a.attr_set_before, a.binds_attr);
        snprintf(fx->code, sizeof fx->code, "%s%.250s%sself.register_buffer(\"%.250s\", None)", again ? "del " : "",
                 again ? a.binds_attr : "", again ? "\n" : "", a.binds_attr + 5);
        say(fx,
            "register %s as a buffer of its module, so that moving the module moves it: %s is a plain attribute, "
            "set from \"%s\" at line %d of %s, and %s %s on %s where it was made",
            a.binds_attr, a.binds_attr, a.attr_from, l, made->site.function, called(o, on, sizeof on),
            own ? "is a view of what stayed" : "stayed", dev_name(o->dev, d2));
        evidence(fx, "made in %s, a constructor of a class of %s", made->site.function, def.class_bases);
        evidence(fx, "\"%s\" is stored as %s at line %d", a.attr_from, a.binds_attr, l);
        evidence(fx, "never moved to %s", dev_name(k->want, d1));
        return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- the rules */

/* optimizer-state-left-behind: an optimizer's state made next to its parameter, then the parameter moved. */
static int r_state_left_behind(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    struct vw_step move;
    char param[256], d1[32], d2[32], d3[32], on[300];
    if (!vw_fact_state_left_behind(m, k->odd, k->seq, &move, param, sizeof param)) return 0;
    at(fx, &move);
    say(fx,
        "the optimizer state %s was made on %s next to its parameter \"%s\", which was then moved to %s here and "
        "left the state behind: move the model to %s before the optimizer's state is created or loaded (or move "
        "the state too)",
        called(k->odd, on, sizeof on), dev_name(k->odd->dev, d2), param, dev_name(move.dev, d3), dev_name(k->want, d1));
    evidence(fx, "\"%s\" is optimizer state of parameter \"%s\"", k->odd->name, param);
    evidence(fx, "\"%s\" moved %s -> %s after the state was made", param, d2, d3);
    /* made by a step the program ran before its move (no checkpoint in its chain: a warm-up on the cpu),
     * moving the model earlier would break that step: the state is put where the parameters went, after the
     * move (C: the runtime's state-dict round trip) */
    int loaded = 0;
    for (int i = 0; i < k->odd->nsteps; i++) loaded |= k->odd->chain[i].origin == DTP_ORIGIN_CHECKPOINT;
    if (!loaded && vw_code_state_replace(m, &move, fx->code, sizeof fx->code)) {
        say(fx,
            "the optimizer state %s was made on %s by a step the program ran before moving its parameter \"%s\" "
            "to %s here, which left the state behind: after this move, load the optimizer's own state dict back "
            "into it, which puts each state where its parameter now is",
            on, dev_name(k->odd->dev, d2), param, dev_name(move.dev, d3));
        evidence(fx, "made by the optimizer's step, not loaded from a checkpoint");
        return 1;
    }
    /* the code: the program's own move of the model, made before the statement that made the state (a
     * load_state_dict, a first step) */
    move_first(m, k, fx, &move, &k->odd->chain[k->odd->arrived]);
    return 1;
}

/* made-before-source-moved: a tensor made from another (a clone, an EMA's shadow) before a move in place
 * took the other to the device. */
static int r_made_before_source_moved(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    struct vw_step move;
    int src;
    char d1[32], d2[32], sname[256], on[300], buf[1024], mbuf[1024];
    const struct vw_operand *o = k->odd;
    if (!vw_fact_made_before_source_moved(m, o, k->want, k->seq, &move, &src)) return 0;
    at(fx, &move);
    if (!vw_tensor_name(m, move.tensor, k->seq, sname, sizeof sname)[0]) snprintf(sname, sizeof sname, "its source");
    evidence(fx, "made from a tensor while it was on %s", dev_name(o->dev, d2));
    evidence(fx, "that tensor was then moved in place to %s", dev_name(k->want, d1));
    called(o, on, sizeof on);
    site_str(&o->chain[src - 1], buf, sizeof buf);
    /* the code: the program's move, made before the statement that made the first tensor from its source */
    if (move_first(m, k, fx, &move, &o->chain[src - 1]))
        say(fx,
            "%s was made from \"%.120s\" while that was on %s (%.300s); the move at %.300s took \"%.120s\" to %s "
            "and left %s behind: make that move before the statement that made it (or move it to %s too)",
            on, sname, d2, buf, site_str(&move, mbuf, sizeof mbuf), sname, d1, on, d1);
    else
        say(fx,
            "%s was made from \"%.120s\" while that was on %s (%.300s); this move took \"%.120s\" to %s and left %s "
            "behind: make it after this move (or move it to %s too)",
            on, sname, d2, buf, sname, d1, on, d1);
    return 1;
}

/* checkpoint-map-location: loaded from a checkpoint onto the device it was saved from, not the intended one. */
static int r_checkpoint(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_step *a = &k->odd->chain[k->odd->arrived];
    char d1[32], on[300], expr[160];
    if (a->origin != DTP_ORIGIN_CHECKPOINT) return 0;
    at(fx, a);
    vw_device_expr(m, k, k->want, &a->site, expr, sizeof expr);
    say(fx, "load the checkpoint with map_location=%s (or move %s to %s after loading)", expr,
        called(k->odd, on, sizeof on), dev_name(k->want, d1));
    evidence(fx, "loaded from checkpoint key \"%s\" onto %s", a->what, vw_device_name(a->dev, on, 32));
    code_for_odd(m, k, fx, k->odd->name);
    const char *dot = strchr(k->odd->name, '.');
    char mod[128];
    if (!fx->code[0] && dot && (size_t)(dot - k->odd->name) < sizeof mod) { /* a whole model loaded: move it */
        snprintf(mod, sizeof mod, "%.*s", (int)(dot - k->odd->name), k->odd->name);
        code_for(m, k, fx, a, mod);
    }
    return 1;
}

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
    char sib[256] = "", names[8][256], d1[32], on[300], buf[1024];
    /* the two halves of one batch are made within a few events of each other, in either order */
    if (!is_python(root) ||
        !vw_fact_sibling_moved_near(m, root, 64, odd->dev, k->want, k->seq, &move, sib, sizeof sib) ||
        !is_python(&move))
        return 0;
    int nn = vw_tensor_names(m, root->tensor, k->seq, names, 8), j = 0;
    at(fx, &move);
    for (; j < nn && !fx->code[0]; j++) code_for(m, k, fx, root, names[j]);
    if (!fx->code[0]) return 0;
    say(fx, "move \"%s\" to %s where %s%s made with it is moved: %s is computed from it (made at %s)", names[j - 1],
        dev_name(k->want, d1), sib, sib[0] == '"' ? ", the tensor" : "", called(odd, on, sizeof on),
        site_str(root, buf, sizeof buf));
    evidence(fx, "computed from \"%s\", made on one line with %s", names[j - 1], sib);
    evidence(fx, "the program moved %s to %s, not \"%s\"", sib, d1, names[j - 1]);
    return 1;
}

/* peer-moved-from-same-source: a peer was copied to the device from something made where the odd one was
 * made (the other half of a batch): the odd one's move belongs beside it. */
static int r_peer_same_source(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_operand *odd = k->odd;
    char d1[32], on[300];
    for (int i = 0; i < k->n; i++) {
        const struct vw_operand *p = &k->ops[i];
        if (p->odd || p->scalar || !p->nsteps) continue;
        const struct vw_step *pa = &p->chain[p->arrived];
        if (pa->origin != DTP_ORIGIN_TRANSFER || p->arrived + 1 >= p->nsteps) continue;
        int shared = 0;
        for (int s = odd->arrived; s >= 0 && !shared; s--)
            shared = vw_same_site(&p->chain[p->arrived + 1], &odd->chain[s]);
        if (!shared) continue;
        at(fx, pa);
        say(fx, "move %s to %s where its peer \"%s\" is moved", called(odd, on, sizeof on), dev_name(k->want, d1),
            p->name[0]       ? p->name
            : p->src_name[0] ? p->src_name
                             : p->arg);
        evidence(fx, "the peer '%s' was copied to %s from a tensor made on the same line", p->arg, d1);
        code_for_odd(m, k, fx, odd->name);
        return 1;
    }
    return peer_of_root(m, k, fx);
}

/* sibling-moved: made on one line with a tensor the program then moved itself (x, y = batch; x =
 * x.to(device)), where the program has no name for the odd one at its making. */
static int r_sibling_moved(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_step *a = &k->odd->chain[k->odd->arrived];
    struct vw_step move;
    struct vw_frame cb;
    char sib[256] = "", d1[32], on[300], buf[1024];
    if (a->origin == DTP_ORIGIN_TRANSFER || a->origin == DTP_ORIGIN_VIEW || !is_python(a)) return 0;
    /* where the program holds it by a name where it was made, the move goes right there */
    struct vw_fix probe = {.site = *a, .has_site = 1};
    code_for_odd(m, k, &probe, k->odd->name);
    if (probe.code[0] || vw_fact_callback_caller(m, a, k->pystack, &cb)) return 0;
    if (!vw_fact_sibling_moved(m, a, k->odd->dev, k->want, k->seq, &move, sib, sizeof sib)) return 0;
    at(fx, &move);
    say(fx, "move %s to %s where %s, made with it at %s, is moved", called(k->odd, on, sizeof on),
        dev_name(k->want, d1), sib[0] ? sib : "the tensor", site_str(a, buf, sizeof buf));
    evidence(fx, "made on one line with %s, which the program moved to %s", sib[0] ? sib : "a tensor", d1);
    code_for_odd(m, k, fx, k->odd->name);
    /* made in a function that returned it with its sibling (x, y = make_batch()): the name its caller binds
     * it to, where that is the function of the sibling's move and before it */
    struct vw_frame held;
    if (!fx->code[0] && ident(k->odd->name) && vw_fact_bound_in_caller(m, a, k->odd->name, &held)) {
        struct vw_step h;
        memset(&h, 0, sizeof h);
        h.site = held;
        h.has_site = 1;
        h.origin = -1;
        code_for(m, k, fx, &h, k->odd->name);
    }
    return 1;
}

/* copied-off-device: it reached its device by a copy, and that copy is the mistake. */
static int r_copied(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_step *a = &k->odd->chain[k->odd->arrived];
    char d1[32], d2[32], on[300];
    if (a->origin != DTP_ORIGIN_TRANSFER) return 0;
    at(fx, a);
    if (k->odd->dev == 0)
        say(fx, "keep %s on %s: it was copied off the device here; use the device tensor, or move the copy back to %s",
            called(k->odd, on, sizeof on), dev_name(k->want, d1), d1);
    else
        say(fx, "%s was copied to %s here, but the op runs on %s: copy it to %s", called(k->odd, on, sizeof on),
            dev_name(k->odd->dev, d2), dev_name(k->want, d1), d1);
    evidence(fx, "copied to %s by %s, and used there", dev_name(k->odd->dev, d2), a->what);
    struct vw_src src;
    const struct vw_src_call *c;
    char expr[160];
    if (is_python(a) && vw_src_at(m, a->site.file, a->site.line, &src) && (c = making_call(&src, a)) && c->temporary &&
        c->end_col > 0) {
        /* the copy is a temporary inside an expression (loss(output.cpu(), target)): take the copy out there,
         * or bring it back at once */
        struct vw_edit *e = &fx->edits[fx->nedits++];
        size_t fl = strlen(c->func);
        fx->replace = 1;
        e->line = c->end_line;
        if (k->want != 0 && !c->has_args && fl > 4 && !strcmp(c->func + fl - 4, ".cpu") && c->end_col >= 6) {
            e->col = c->end_col - 6, e->del = 6; /* ".cpu()" */
            snprintf(fx->code, sizeof fx->code, "%.300s() -> %.*s", c->func, (int)(fl - 4), c->func);
        } else {
            vw_device_expr(m, k, k->want, &a->site, expr, sizeof expr);
            e->col = c->end_col;
            snprintf(e->text, sizeof e->text, ".to(%.150s)", expr);
            snprintf(fx->code, sizeof fx->code, "%.300s(...).to(%.150s)", c->func, expr);
        }
        evidence(fx, "the copy %s() is a temporary inside the expression at line %d", c->func, a->site.line);
        return 1;
    }
    if (ident(k->odd->name) && is_python(a) && is_python(&k->call) &&
        (strcmp(a->site.file, k->call.site.file) || !vw_same_function(a->site.function, k->call.site.function)) &&
        vw_src_at(m, a->site.file, a->site.line, &src) && src.binds[0] && !strchr(src.binds, ',')) {
        /* copied in a function that returned it (a batch helper called by training and evaluation): moved
         * back right there, by the name it has there */
        vw_device_expr(m, k, k->want, &a->site, expr, sizeof expr);
        snprintf(fx->code, sizeof fx->code, "%.200s = %.200s.to(%.150s)", src.binds, src.binds, expr);
        evidence(fx, "copied in %s, which returned it", a->site.function);
        return 1;
    }
    /* the program's name for it at the failing call: a native call's argument, else the tensor's name */
    char nat[256];
    enum vw_lang cl = k->call.has_site ? vw_code_lang(m, &k->call.site) : VW_LANG_NONE;
    const char *oname =
        cl == VW_LANG_C || cl == VW_LANG_CXX ? vw_code_operand_name(m, k, k->odd, nat, sizeof nat) : k->odd->name;
    if (k->odd->dev == 0 && ident(oname) && has_code(m, &k->call) &&
        vw_src_at(m, k->call.site.file, k->call.site.line, &src)) {
        /* the copy off the device is kept for what it was made for (a metric, a log); the op that failed
         * gets the device's tensor back right before it */
        at(fx, &k->call);
        fx->before = 1;
        vw_device_expr(m, k, k->want, &k->call.site, expr, sizeof expr);
        vw_code_move(m, &k->call.site, oname, expr, fx->code, sizeof fx->code);
        evidence(fx, "\"%s\" is used on %s right after", oname, d1);
        return 1;
    }
    code_for_odd(m, k, fx, k->odd->name);
    return 1;
}

/* The step where a never-moved operand was made, past in-place moves and (once) views of its base; *view the
 * index of the view when a view's base is where the move goes, else -1. */
static int made_at(const struct vw_operand *o, int *view) {
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

/* temporary-in-expression: a factory's result made inside a larger expression (an index made with
 * torch.arange inside an embedding call) and never moved: no line after it can reach it; device= at the
 * call can. */
static int r_temporary(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_operand *o = k->odd;
    int view;
    if (!o->nsteps || o->missing) return 0;
    /* back through views, in-place moves and ops of one tensor each (a detach, a repackaging) to where it was
     * made */
    int own = made_at(o, &view);
    struct vw_src src;
    while (own < o->nsteps - 1 &&
           (o->chain[own].origin == DTP_ORIGIN_VIEW || o->chain[own].origin == -1 ||
            (o->chain[own].origin == DTP_ORIGIN_OP_OUTPUT && vw_fact_combined(m, &o->chain[own]) < 2))) {
        /* where the program holds it by a name (MEAN = torch.tensor(...).view(...)), the move goes after that
         * statement (never-moved): only temporaries all the way back */
        const struct vw_step *t = &o->chain[own];
        if (!has_code(m, t) || !vw_src_at(m, t->site.file, t->site.line, &src) || src.binds[0] || src.binds_attr[0])
            return 0;
        own++;
    }
    const struct vw_step *s = &o->chain[own];
    if (s->origin != DTP_ORIGIN_FACTORY || !has_code(m, s) || !vw_src_at(m, s->site.file, s->site.line, &src)) return 0;
    const struct vw_src_call *c = making_call(&src, s);
    struct vw_frame cb;
    if (!c || !c->temporary || c->device[0]) return 0;
    /* made in a function a library called back (a DataLoader's collate_fn): the batch goes to the device in
     * the program's loop, not in the loader (library-callback) */
    if (vw_fact_callback_caller(m, s, k->pystack, &cb)) return 0;
    char d1[32], on[300], expr[160], arg[200];
    vw_device_expr(m, k, k->want, &s->site, expr, sizeof expr);
    /* the argument as the language writes it (C++: the device as the factory's options, none already there) */
    if (!vw_code_device_arg(m, &s->site, s->site.line, c->func, c->has_args, c->trailing_comma, expr, arg, sizeof arg))
        return 0;
    const char *shown = arg + (arg[0] == ',' ? 2 : 0);
    at(fx, s);
    say(fx, "make %s on %s where it is made, inside the expression at %s:%d: %s(..., %s)", called(o, on, sizeof on),
        dev_name(k->want, d1), s->site.file, s->site.line, c->func, shown);
    fx->replace = 1;
    snprintf(fx->code, sizeof fx->code, "%s(..., %s)", c->func, shown);
    evidence(fx, "made by %s, a temporary inside a larger expression", c->func);
    if (own) evidence(fx, "then %s", o->chain[0].what);
    evidence(fx, "never moved");
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
        also(fx, " (and the %d other %s call%s of that statement)", more, c->func, more == 1 ? "" : "s");
        evidence(fx, "%d more %s call%s in the statement without device=", more, c->func, more == 1 ? "" : "s");
    }
    return 1;
}

/* vw_fact_module_move, less a move made by the failing call itself (DistributedDataParallel moving its
 * forward's inputs to device_ids[0]): the fix cannot go after the line that fails. */
static int module_move_before(struct vw_model *m, const struct vw_case *k, const struct vw_step *made,
                              struct vw_step *move) {
    int lm = vw_fact_module_move(m, made, k->odd->dev, k->want, k->seq, move);
    if (lm == 2 && vw_same_site(move, &k->call)) return 0;
    /* the program's own move runs in a loop that did not make it (x = x.to(device) for each batch, a constant
     * made once before the loop): not made with what the loop moves, its move belongs where it is made */
    struct vw_src ms, mv;
    if (lm == 2 && is_python(made) && is_python(move) && !strcmp(made->site.file, move->site.file) &&
        vw_src_at(m, move->site.file, move->site.line, &mv) && mv.loop_first &&
        vw_src_at(m, made->site.file, made->site.line, &ms) &&
        (made->site.line < mv.loop_first || made->site.line > mv.loop_last) && ms.loop_first != mv.loop_first)
        return 0;
    return lm;
}

/* never-moved: made off the intended device and never moved; the move goes right after it is made (a view:
 * after its base is made, once; computed from an unnamed tensor: where that came from). Variants, each
 * with its own id: module-never-moved (a module's parameter), made-in-callee (made in a function that
 * returned it: where the caller binds it), library-callback (made in a function a library called back),
 * moved-with-others (the program moved what was made with it), plain-attribute (a module's plain field,
 * left by the module's move); a factory that takes device= is said in the text. */
static int r_never_moved(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_operand *odd = k->odd;
    if (!odd->nsteps) return 0;
    char d1[32], d2[32], on[300], buf[1024];
    dev_name(k->want, d1);
    dev_name(odd->dev, d2);
    called(odd, on, sizeof on);
    int view, own = made_at(odd, &view);
    /* computed by ops of one tensor each from a tensor the program has no name for (a mask from a causal
     * buffer): the fix is where those came from, the first the program holds by a name; not where library
     * code made it (a loader's collation): the program's move of its batch decides */
    int derived = -1;
    char rootname[256] = "", fixname[256] = "";
    if (odd->chain[own].origin == DTP_ORIGIN_OP_OUTPUT && own < odd->nsteps - 1 && !odd->chain[own].site.library &&
        !step_name(m, k, &odd->chain[own], rootname, sizeof rootname)[0] && vw_fact_combined(m, &odd->chain[own]) < 2) {
        derived = own;
        while (own < odd->nsteps - 1 &&
               (odd->chain[own].origin == DTP_ORIGIN_VIEW || odd->chain[own].origin == -1 ||
                (odd->chain[own].origin == DTP_ORIGIN_OP_OUTPUT && vw_fact_combined(m, &odd->chain[own]) < 2)))
            if (step_name(m, k, &odd->chain[++own], rootname, sizeof rootname)[0]) break;
        view = -1;
    }
    if (derived < 0 && (module_made_inline(m, k, fx, own) || attribute_in_init(m, k, fx, own))) return 1;
    const struct vw_step *made = &odd->chain[own];
    at(fx, made);
    fx->rule = "never-moved";
    /* C++: made while constructing a module the program declares (its parameter): that module is moved */
    struct vw_frame mat;
    char mname[160];
    if (derived < 0 && view < 0 && !is_python(made) &&
        vw_code_module_move(m, k, made, &mat, mname, sizeof mname, fx->code, sizeof fx->code)) {
        fx->rule = "module-never-moved";
        at_frame(fx, &mat, made->seq);
        say(fx, "move the module \"%s\" to %s once it is made: %s, made on %s when it was constructed, is still there",
            mname, d1, on, d2);
        evidence(fx, "made on %s by %s while the module \"%s\" was constructed, never moved", d2, made->what, mname);
        return 1;
    }
    const char *codename = odd->name;
    if (derived >= 0) {
        fx->rule = "derived-from-unmoved";
        codename = rootname;
        say(fx, "move %s%s%s to %s right after it is made: %s is computed from it (at %s), on %s too",
            rootname[0] ? "\"" : "", rootname[0] ? rootname : "the tensor it is computed from", rootname[0] ? "\"" : "",
            d1, on, site_str(&odd->chain[derived], buf, sizeof buf), d2);
        evidence(fx, "computed from a tensor made on %s by %s", d2, made->what);
    } else if (view >= 0) {
        fx->rule = "view-of-unmoved-base";
        codename = step_name(m, k, made, fixname, sizeof fixname);
        say(fx,
            "move %s%s%s to %s right after it is made, once: %s is a view of it (made at %s), and a view is on its "
            "base's device",
            fixname[0] ? "\"" : "", fixname[0] ? fixname : "its base", fixname[0] ? "\"" : "", d1, on,
            site_str(&odd->chain[view], buf, sizeof buf));
        evidence(fx, "a view (%s) of a tensor made on %s", odd->chain[view].what, d2);
    } else
        say(fx, "move %s to %s right after it is made", on, d1);
    /* the other odd operands made there too (a module's weight and bias) */
    int more = 0;
    for (int i = 0; i < k->n; i++) {
        const struct vw_operand *o = &k->ops[i];
        if (!o->odd || o == odd || !o->nsteps || !vw_same_site(&o->chain[o->arrived], &odd->chain[odd->arrived]))
            continue;
        also(fx, "%s\"%s\"", more++ ? ", " : " (and ", o->name[0] ? o->name : o->arg);
    }
    if (more) also(fx, ", made there too)");
    evidence(fx, "made on %s by %s and never moved", d2, made->what);
    /* a module's parameter (PyTorch names them "model.fc.weight" by the program's variable): the module was
     * never moved */
    char modname[128] = "";
    const char *dot = strchr(odd->name, '.');
    if (view < 0 && derived < 0 && dot && dot > odd->name && !strcmp(made->what, "nn.Parameter") &&
        (size_t)(dot - odd->name) < sizeof modname) {
        fx->rule = "module-never-moved";
        snprintf(modname, sizeof modname, "%.*s", (int)(dot - odd->name), odd->name);
        say(fx,
            "move the module \"%s\" to %s once it is made: its parameter \"%s\"%s is still where it was made, on %s",
            modname, d1, odd->name, more ? " (and the others listed)" : "", d2);
        codename = modname;
        evidence(fx, "a parameter (nn.Parameter) of \"%s\"", modname);
    } else if (view < 0 && derived < 0 && vw_code_module_var(m, &made->site, modname, sizeof modname)[0]) {
        /* C on libdtrt: made inside the call whose value the statement binds to a module (dt_module *) */
        fx->rule = "module-never-moved";
        say(fx, "move the module \"%s\" to %s once it is made: its parameter %s%s is still where it was made, on %s",
            modname, d1, on, more ? " (and the others listed)" : "", d2);
        codename = modname;
        evidence(fx, "made by the statement that declares the module \"%s\"", modname);
    }
    const char *bind = codename && codename[0] ? codename : NULL;
    struct vw_frame caller;
    struct vw_step move;
    struct vw_src src;
    int lm;
    int binds_here = bind && vw_src_at(m, made->site.file, made->site.line, &src) && vw_src_binds(&src, bind);
    struct vw_src csrc;
    int in_caller = bind && vw_fact_bound_in_caller(m, made, bind, &caller) &&
                    (caller.line != made->site.line || strcmp(caller.file, made->site.file));
    /* received by a loop of the program's (for x in loader:, an iterator class of its own): the move goes in
     * the loop, where the program first holds it, not in the code that made it */
    int by_loop = in_caller && vw_src_at(m, caller.file, caller.line, &csrc) && csrc.opens &&
                  csrc.loop_first == csrc.first && !vw_same_function(caller.function, made->site.function);
    /* a helper that made it for several callers (training and evaluation): the move goes in the helper,
     * where it binds it, or each caller would need its own */
    int callers = in_caller && binds_here && !by_loop ? 0 : in_caller ? vw_fact_callers(m, made) : 0;
    if (in_caller && !by_loop && callers >= 2) {
        struct vw_src hs;
        if (vw_src_at(m, made->site.file, made->site.line, &hs) && hs.binds[0] && !strchr(hs.binds, ',')) {
            in_caller = 0;
            evidence(fx, "%s made it for %d callers: the move goes in it", made->site.function, callers);
        }
    }
    if (in_caller && (!binds_here || by_loop)) {
        /* made inside a function that returned it (the module's own __init__, a helper making a mask): the
         * fix goes where the caller binds it (model = Net(), mask = self.make_mask(n), for x, y in loader:) */
        at_frame(fx, &caller, made->seq);
        fx->site.tensor = made->tensor;
        if (by_loop) {
            fx->rule = "loader-batch";
            say(fx, "move %s to %s in the loop that receives it (%s:%d), where the program first holds it", on, d1,
                caller.file, caller.line);
            evidence(fx, "made by %s in %s, which the loop at line %d iterates", made->what, made->site.function,
                     caller.line);
        } else if (strcmp(fx->rule, "module-never-moved")) {
            fx->rule = "made-in-callee";
            evidence(fx, "made in %s, which returned it to %s", made->site.function, caller.function);
        }
    } else if (vw_fact_callback_caller(m, made, k->pystack, &caller)) {
        fx->rule = "library-callback";
        say(fx, "move %s to %s where it comes back from the library that called %s (%s:%d), which made it", on, d1,
            made->site.function, made->site.file, made->site.line);
        at_frame(fx, &caller, made->seq);
        evidence(fx, "made in %s, called back by library code", made->site.function);
    } else if ((lm = module_move_before(m, k, made, &move)) == 2) {
        fx->rule = "moved-with-others";
        at(fx, &move);
        say(fx, "move %s to %s where the tensors made with it are moved", on, d1);
        evidence(fx, "the program moved tensors made in %s to %s, not this one", made->site.function, d1);
    } else if (lm) {
        fx->rule = "plain-attribute";
        say(fx,
            "if a module keeps %s (or the module it belongs to) in a plain attribute, list or dict, register it "
            "there instead (register_buffer; nn.ModuleList or nn.ModuleDict for modules), so that moving the module "
            "moves it; it was made in %s, next to tensors that moving the module%s%s took to %s while it stayed on %s "
            "(or move it to %s right after it is made)",
            on, made->site.function, move.has_site ? " at " : "", move.has_site ? site_str(&move, buf, sizeof buf) : "",
            d1, d2, d1);
        evidence(fx, "the module's move at %s left it on %s", site_str(&move, buf, sizeof buf), d2);
        struct vw_src msrc;
        struct vw_frame reg;
        if (vw_code_register_field(m, &made->site, &reg, fx->code, sizeof fx->code)) { /* C: the runtime's own */
            at_frame(fx, &reg, made->seq);
            evidence(fx, "kept in a field of the program's own struct, made in %s", made->site.function);
            say(fx,
                "register it as a buffer of its module, so that moving the module moves it: %s is kept in a plain "
                "field, made in %s, and moving the module%s%s took its parameters to %s while %s stayed on %s",
                on, made->site.function, move.has_site ? " at " : "",
                move.has_site ? site_str(&move, buf, sizeof buf) : "", d1, on, d2);
        } else if (vw_src_at(m, made->site.file, made->site.line, &msrc) && msrc.binds_attr[0]) {
            const char *attr = msrc.binds_attr, *comma = strchr(attr, ',');
            char a[128];
            snprintf(a, sizeof a, "%.*s", (int)(comma ? (size_t)(comma - attr) : strlen(attr)), attr);
            if (!strncmp(a, "self.", 5) && ident(a + 5)) {
                /* registered first, the assignment that follows fills the buffer */
                /* a plain attribute the function set before (self.bias = None) is removed first: a buffer
                 * cannot be registered under a name the module already has */
                int again = 0;
                for (const char *q = msrc.attr_set_before; (q = strstr(q, a)) != NULL && !again; q++)
                    again = (q == msrc.attr_set_before || q[-1] == ',') && (q[strlen(a)] == ',' || !q[strlen(a)]);
                snprintf(fx->code, sizeof fx->code, "%s%s%sself.register_buffer(\"%s\", None)", again ? "del " : "",
                         again ? a : "", again ? "\n" : "", a + 5);
                if (again) evidence(fx, "%s was set earlier in %s", a, made->site.function);
                fx->before = 1;
                evidence(fx, "bound to the plain attribute %s", a);
                /* the attribute is known: the advice says it first, plainly */
                say(fx,
                    "register %s as a buffer of its module, so that moving the module moves it: %s is a plain "
                    "attribute, made in %s, and moving the module%s%s took its parameters to %s while %s stayed on %s",
                    a, a, made->site.function, move.has_site ? " at " : "",
                    move.has_site ? site_str(&move, buf, sizeof buf) : "", d1, a, d2);
            }
        }
        return 1;
    } else if (!modname[0] && made->origin == DTP_ORIGIN_FACTORY && is_python(made) &&
               vw_src_at(m, made->site.file, made->site.line, &src)) {
        const struct vw_src_call *c = making_call(&src, made);
        if (c && !c->device[0]) { /* a factory that takes a device: made there in the first place */
            char expr[160];
            vw_device_expr(m, k, k->want, &made->site, expr, sizeof expr);
            also(fx, " (or make it there: %s(..., device=%s))", c->func, expr);
            evidence(fx, "made by %s, which takes device=", c->func);
        }
    }
    if (!fx->code[0]) {
        if (modname[0] || derived >= 0 || view >= 0)
            code_for(m, k, fx, made, codename);
        else
            code_for_odd(m, k, fx, codename);
        if (!fx->code[0] && modname[0]) code_for(m, k, fx, made, modname);
        if (!fx->code[0] && (derived >= 0 || view >= 0)) { /* the other names the program had for it */
            char names[8][256];
            int nn = vw_tensor_names(m, made->tensor, k->seq, names, 8);
            for (int i = 0; i < nn && !fx->code[0]; i++) code_for(m, k, fx, made, names[i]);
            /* or the one name its statement binds (data = data.view(...).contiguous() in a helper) */
            struct vw_src ms;
            const struct vw_src_call *mc;
            if (!fx->code[0] && has_code(m, made) && vw_src_at(m, made->site.file, made->site.line, &ms) &&
                ms.binds[0] && !strchr(ms.binds, ',') && (mc = making_call(&ms, made)) && !mc->temporary)
                code_for(m, k, fx, made, ms.binds);
        }
    }
    if (!fx->code[0] && (derived >= 0 || view >= 0) && device_at_factory(m, k, fx, made)) return 1;
    if (!fx->code[0] && !fx->before) { /* bound by a later statement of the same function */
        char names[8][256];
        int nn = vw_tensor_names(m, made->tensor, k->seq, names, 8);
        if (odd->name[0]) code_at_binding(m, k, fx, odd->name);
        for (int i = 0; i < nn && !fx->code[0]; i++) code_at_binding(m, k, fx, names[i]);
    }
    /* made right where it is made, with others made the same way next to it and never moved either (MEAN and
     * STD): those go too, or the program fails again at the next one */
    struct vw_sibling sib[4];
    int nsib =
        fx->code[0] && !fx->before && vw_same_site(&fx->site, made) ? vw_fact_siblings(m, made, k->seq, sib, 4) : 0;
    if (nsib) {
        char expr[160];
        int last = fx->site.site.line;
        vw_device_expr(m, k, k->want, &made->site, expr, sizeof expr);
        also(fx, "; and with it");
        for (int i = 0; i < nsib; i++) {
            size_t at = strlen(fx->code);
            char line[512];
            if (vw_code_move(m, &fx->site.site, sib[i].name, expr, line, sizeof line))
                snprintf(fx->code + at, sizeof fx->code - at, "\n%s", line);
            also(fx, "%s\"%s\" (line %d)", i ? ", " : " ", sib[i].name, sib[i].line);
            if (sib[i].line > last) last = sib[i].line;
        }
        also(fx, ", made the same way next to it and never moved");
        evidence(fx, "%d more made the same way next to it, never moved", nsib);
        fx->site.site.line = last; /* after the last of them */
    }
    return 1;
}

/* device-argument-default: the program moved the tensor itself (x.to(device)) and the move did nothing: its
 * device expression is a parameter of the function it is in, with a default (device="cpu"), and the call of
 * that function passed none; the call passes the program's device. */
static int r_device_default(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx) {
    const struct vw_operand *o = k->odd;
    struct vw_frame at, caller;
    struct vw_src src, def, cs;
    if (!o->nsteps || !vw_fact_idle_move(m, o, k->seq, &at, &caller) || !vw_src_at(m, at.file, at.line, &src) ||
        !ident(src.device_expr) || !src.function_line || !vw_src_at(m, at.file, src.function_line, &def))
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
    char d1[32], d2[32], on[300], expr[160];
    vw_device_expr(m, k, k->want, &caller, expr, sizeof expr);
    at_frame(fx, &caller, k->seq);
    fx->replace = 1;
    struct vw_edit *e = &fx->edits[fx->nedits++];
    e->line = c->end_line;
    e->col = c->end_col - 1; /* before the closing parenthesis */
    snprintf(e->text, sizeof e->text, "%s%.60s=%.120s", c->has_args && !c->trailing_comma ? ", " : "", src.device_expr,
             expr);
    snprintf(fx->code, sizeof fx->code, "%.200s(..., %.60s=%.150s)", c->func, src.device_expr, expr);
    say(fx,
        "pass the device to %s at %s:%d: %s was moved with .to(%s) in %s (line %d), but %s is a parameter that "
        "defaults to %s and the call gave none, so it stayed on %s",
        c->func, caller.file, caller.line, called(o, on, sizeof on), src.device_expr, at.function, at.line,
        src.device_expr, dflt, dev_name(o->dev, d2));
    evidence(fx, "moved with .to(%s) at line %d, which left it on %s", src.device_expr, at.line, d2);
    evidence(fx, "%s's parameter %s defaults to %s", at.function, src.device_expr, dflt);
    evidence(fx, "the call at line %d passes no %s; the program's device is %s", caller.line, src.device_expr,
             dev_name(k->want, d1));
    return 1;
}

/* ---------------------------------------------------------------- the table */

/* Each rule with its id and what it explains, tried in this order; the first that fits decides. */
const struct vw_rule vw_rules[] = {
    {"optimizer-state-left-behind",
     "an optimizer's state made next to its parameter (a step, a loaded state dict) before the model was moved",
     r_state_left_behind},
    {"made-before-source-moved",
     "a tensor made from another (a copy, an EMA's shadow) before a move in place took the other to the device",
     r_made_before_source_moved},
    {"checkpoint-map-location", "loaded from a checkpoint onto the device it was saved from", r_checkpoint},
    {"peer-moved-from-same-source", "the other half of a batch was moved, this one not", r_peer_same_source},
    {"sibling-moved", "made on one line with a tensor the program moved itself, where it has no name of its own",
     r_sibling_moved},
    {"copied-off-device", "copied to another device (.cpu() for a metric, the wrong GPU) and used there", r_copied},
    {"temporary-in-expression", "a factory's result made inside the failing expression, never moved", r_temporary},
    {"device-argument-default",
     "moved by the program with a function's device parameter, whose default (the cpu) the call left in place",
     r_device_default},
    {"never-moved",
     "made off the device and never moved (and its variants: module-never-moved, made-in-callee, loader-batch, "
     "library-callback, moved-with-others, plain-attribute, derived-from-unmoved, view-of-unmoved-base)",
     r_never_moved},
};
const int vw_nrules = (int)(sizeof vw_rules / sizeof vw_rules[0]);

/* The last word on a rule's fix before anyone prints it: made of facts that all had a producer's shape, and
 * code of the shapes the rules write (validate.c). Otherwise the trace is inconsistent (edited, or written by
 * no producer of ours): the fix keeps no code, no edit, and no text taken from the facts. */
static void refuse_inconsistent(struct vw_model *m, struct vw_fix *f) {
    const char *why = NULL;
    const char *texts[sizeof f->edits / sizeof f->edits[0]];
    int dels[sizeof f->edits / sizeof f->edits[0]];
    for (int i = 0; i < f->nedits; i++) texts[i] = f->edits[i].text, dels[i] = f->edits[i].del;
    if (!m->inconsistent[0] && (f->code[0] || f->nedits) &&
        (!f->code[0] || !vw_fix_code_shape(f->code, f->replace, is_python(&f->site), texts, dels, f->nedits, &why)))
        snprintf(m->inconsistent, sizeof m->inconsistent, "the code made of its source facts is %s",
                 why ? why : "an edit without code");
    if (!m->inconsistent[0]) return;
    f->code[0] = 0;
    f->replace = f->before = 0;
    f->nedits = 0;
    f->nevidence = 0;
    f->inconsistent = 1;
    f->has_site = 0; /* no place to change either: the facts that placed it are not to be trusted */
    say(f, "no fix: the trace is inconsistent (%.1900s)", m->inconsistent);
}

int vw_diagnose(struct vw_model *m, const struct vw_case *k, struct vw_fix *fix) {
    memset(fix, 0, sizeof *fix);
    if (!k->odd) return 0;
    for (int i = 0; i < vw_nrules; i++) {
        struct vw_fix f;
        memset(&f, 0, sizeof f);
        if (!vw_rules[i].match(m, k, &f)) continue;
        if (!f.rule) f.rule = vw_rules[i].id;
        /* a line after a return never runs: the code goes before it, and what it returns is then moved */
        struct vw_src src;
        if (f.code[0] && !f.before && !f.replace && !f.nedits && is_python(&f.site) &&
            vw_src_at(m, f.site.site.file, f.site.site.line, &src) && src.returns) {
            f.before = 1;
            evidence(&f, "line %d returns: code after it would never run", f.site.site.line);
        }
        refuse_inconsistent(m, &f);
        *fix = f;
        return 1;
    }
    return 0;
}
